# Shared helpers of the CLI tests (sourced, not run). A test is run by ctest as
#   bash tests/cli/test_X.sh <caliber binary> <source dir>
# and exits 0 (pass), 1 (fail) or 77 (skip, with a message saying why). A skip is only for missing
# hardware (two cores for the cpu backend's two device groups) or a missing Slurm test cluster; a
# missing subcommand, op or tool that scripts/quickstart installs is a failure.
#
# After `cli_init "$@"`: CAL (the binary), SRC (the source tree), T (a fresh temp dir, removed on
# exit), FAST (flags that keep a cpu run short), and the helpers below.

cli_init() {
  CAL=${1:?usage: test_X.sh <caliber binary> <source dir>}
  SRC=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
  [ -x "$CAL" ] || { echo "FAIL: $CAL is not an executable"; exit 1; }
  command -v python3 > /dev/null 2>&1 || { echo "FAIL: python3 is needed to read JSON"; exit 1; }
  T=$(mktemp -d)
  trap 'rm -rf "$T"' EXIT
  # The run's knobs come from the environment too: a caller's BENCH_LEVEL or OP must not leak in.
  unset ZL_BACKEND BENCH_LEVEL SHAPE_MODE OP OP_FILE TEST_NODE ZL_DIRECT_REPEAT REPLAY_FROM \
    PARALLEL_WARMUP_GPUS CALIBER_SEED CALIBER_OPS_LIB CALIBER_SAMPLE_METHOD
  # Keep --tune live off the user's shared cache in ~/.cache.
  export CALIBER_TUNE_CACHE="$T/tune-cache.db"
  # Stopping rule loose enough that a cpu case takes milliseconds: these tests check files and
  # exit codes, not latencies.
  # STOP without --backend, for tests that choose the backend themselves (CLI11 refuses a flag
  # given twice).
  STOP=(--min-samples 3 --min-time 0 --warmup 0 --max-noise 1 --timeout 0.2)
  FAST=(--backend cpu "${STOP[@]}")
  FAILS=0
}

# test_ops_lib: prints the path of the test op library (tests/ops_lib: test_abort, test_hang,
# test_fail, test_switch, test_cuda_guard), which a test loads with --ops-lib "$(test_ops_lib)" or
# use_test_ops. ctest passes it as CALIBER_TEST_OPS_LIB (tests/CMakeLists.txt); by hand it is
# found in the build tree beside the binary. Exits 1 when it is missing: these ops are never in
# the shipped binary, so without the library the tests that need them cannot run.
test_ops_lib() {
  local lib=${CALIBER_TEST_OPS_LIB:-$(dirname "${CAL:?}")/tests/libcaliber_test_ops.so}
  if [ ! -f "$lib" ]; then
    echo "FAIL: the test op library $lib is not built (cmake --build builds caliber_test_ops)" >&2
    exit 1
  fi
  printf '%s\n' "$lib"
}

# use_test_ops [OP...]: every caliber command of this test loads the test op library
# (CALIBER_OPS_LIB, which batch and ab children and Slurm tasks inherit); fails when one of the
# named ops is not listed with it.
use_test_ops() {
  CALIBER_OPS_LIB=$(test_ops_lib) || exit 1
  export CALIBER_OPS_LIB
  local names op
  [ $# -gt 0 ] && names=$("$CAL" list --names --backend cpu 2> /dev/null)
  for op in "$@"; do
    printf '%s\n' "$names" | grep -qx "$op" || {
      echo "FAIL: test op $op is not listed with $CALIBER_OPS_LIB" >&2
      exit 1
    }
  done
}

# A failed assertion: say what and where, keep going, and fail at the end (cli_done).
check_fail() {
  echo "FAIL: $*"
  FAILS=$((FAILS + 1))
}

# An assertion after which nothing else makes sense.
fatal() {
  echo "FAIL: $*"
  exit 1
}

cli_done() {
  if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS assertion(s) failed"
    exit 1
  fi
  echo PASS
  exit 0
}

# The run directories directly under $1 (one per line, sorted).
run_dirs() {
  find "$1" -mindepth 1 -maxdepth 1 -type d 2> /dev/null | sort
}

# The only run directory under $1; fatal when there is not exactly one.
only_run_dir() {
  local dirs n
  dirs=$(run_dirs "$1")
  n=$(printf '%s' "$dirs" | grep -c .)
  [ "$n" -eq 1 ] || fatal "expected exactly one run directory under $1, found $n: $dirs"
  printf '%s\n' "$dirs"
}

# py SCRIPT ARGS...: run a python3 snippet; its failure (an AssertionError names the check) is
# returned, not fatal.
py() {
  local code=$1
  shift
  python3 -c "$code" "$@"
}

# many_samples RUN_LOG SEED: gives every provider of the run.log's case rows 100000 samples
# (1.0 to 1.01 ms, random from SEED), for the checks that a reader stays fast and small on them.
many_samples() {
  python3 - "$1" "$2" << 'PY'
import json, random, sys
random.seed(int(sys.argv[2]))
out = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("type") == "case":
        for prov in r.get("providers", []):
            prov["samples_ms"] = [1.0 + random.random() * 0.01 for _ in range(100000)]
    out.append(json.dumps(r))
open(sys.argv[1], "w").write("\n".join(out) + "\n")
PY
}

# expect_refused LABEL WORDS -- COMMAND...: COMMAND must exit 2 with a one-line message on stderr
# that contains every word of WORDS (space separated), print nothing on stdout, and leave no
# $T/refused-out behind (pass --out "$T/refused-out" in COMMAND). REFUSED_LINES=any allows a
# message of several lines (CLI11's own parse errors add a "Run with --help" line).
expect_refused() {
  local label=$1 words=$2
  shift 3  # label, words, --
  rm -rf "$T/refused-out"
  "$@" > "$T/refused.stdout" 2> "$T/refused.stderr"
  local rc=$?
  local err
  err=$(cat "$T/refused.stderr")
  if [ "$rc" -ne 2 ]; then
    local wrote=nothing
    [ -e "$T/refused-out" ] && wrote=$(find "$T/refused-out" -type f | wc -l)" file(s)"
    check_fail "$label: exit $rc, expected 2; stderr: '$err'; wrote $wrote"
    rm -rf "$T/refused-out"
    return
  fi
  local lines
  lines=$(grep -c . "$T/refused.stderr")
  if [ "$lines" -ne 1 ] && [ "${REFUSED_LINES:-1}" != any ]; then
    check_fail "$label: expected a one-line message, got $lines lines: $err"
  fi
  local w
  for w in $words; do
    case "$err" in
      *"$w"*) ;;
      *) check_fail "$label: the message does not name '$w': $err" ;;
    esac
  done
  if [ -e "$T/refused-out" ]; then
    check_fail "$label: wrote $(find "$T/refused-out" | head -5 | tr '\n' ' ')"
    rm -rf "$T/refused-out"
  fi
  if [ -s "$T/refused.stdout" ]; then
    check_fail "$label: printed on stdout: $(head -3 "$T/refused.stdout")"
  fi
}

# slurm_init: the Slurm tests need a controller to talk to. SLURM_CONF, else the cluster that
# tests/slurm/cluster starts (scripts/quickstart test starts one); without a reachable controller
# they skip (77) and say how to start one. Sets SQUEUE_OK when squeue answers.
slurm_init() {
  local conf=${CALIBER_SLURM_DIR:-/tmp/caliber-slurm}/slurm.conf
  if [ -z "${SLURM_CONF:-}" ] && [ -f "$conf" ]; then export SLURM_CONF=$conf; fi
  if ! command -v sbatch > /dev/null 2>&1 || ! command -v scontrol > /dev/null 2>&1; then
    echo "skip: no Slurm client commands (start a test cluster: tests/slurm/cluster up)"
    exit 77
  fi
  if ! timeout 15 scontrol ping 2> /dev/null | grep -q 'is UP'; then
    echo "skip: no Slurm controller reachable (SLURM_CONF=${SLURM_CONF:-unset}; start a test" \
      "cluster: tests/slurm/cluster up)"
    exit 77
  fi
}

# slurm_job_of BATCH_DIR: the last array job id the batch recorded in batch.json.
slurm_job_of() {
  py 'import json,sys; print(json.load(open(sys.argv[1] + "/batch.json"))["slurm_jobs"][-1])' "$1"
}

# status_of CSV OP / rows_of CSV OP: a column of ops_status.csv for one op.
status_of() { py 'import csv,sys; print([r["status"] for r in csv.DictReader(open(sys.argv[1])) if r["op"] == sys.argv[2]][0])' "$1" "$2"; }
rows_of() { py 'import csv,sys; print([r["rows"] for r in csv.DictReader(open(sys.argv[1])) if r["op"] == sys.argv[2]][0])' "$1" "$2"; }
reason_of() { py 'import csv,sys; print([r["reason"] for r in csv.DictReader(open(sys.argv[1])) if r["op"] == sys.argv[2]][0])' "$1" "$2"; }

# elapsed COMMAND...: runs it and sets ELAPSED_MS to the CPU time (user + system, in ms) it and
# its children used. Speed bounds in tests are CPU time, not wall time: they catch a quadratic path
# (minutes of CPU), and a verdict must not depend on what else the machine is doing.
elapsed() {
  python3 -c '
import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
r = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write("%d\n" % int((r.ru_utime + r.ru_stime) * 1000))
sys.exit(rc)' "$T/.cpu_ms" "$@"
  local rc=$?
  ELAPSED_MS=$(cat "$T/.cpu_ms")
  return $rc
}
