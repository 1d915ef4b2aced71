#!/usr/bin/env bash
# caliber batch --scheduler slurm against a real controller (tests/slurm/cluster): several ops as
# one job array, each task's identity naming its node and job ids, a crash and a failure isolated
# to their ops, the same content as a local batch of the same ops, and bad requests refused before
# anything is written.
source "$(dirname "$0")/lib.sh"
cli_init "$@"
slurm_init
use_test_ops test_abort test_fail
OPS=(add sum test_abort test_fail)

"$CAL" batch "${OPS[@]}" --scheduler slurm "${FAST[@]}" --out "$T/slurm" > "$T/out.txt" 2>&1
rc=$?
cat "$T/out.txt"
[ "$rc" -eq 1 ] || fatal "exit $rc, expected 1 (test_abort and test_fail are not ok)"
B=$(only_run_dir "$T/slurm")
S=$B/ops_status.csv
JOB=$(slurm_job_of "$B")
[ -n "$JOB" ] || fatal "batch.json records no Slurm job"
grep -q "Slurm job array $JOB (4 task(s)" "$T/out.txt" || check_fail "no submission line for job $JOB"
grep -q '^#SBATCH --array=0-3$' "$B/slurm/array-1.sbatch" || check_fail "not one array of 4 tasks"
[ "$(status_of "$S" add)" = ok ] || check_fail "add: $(status_of "$S" add)"
[ "$(status_of "$S" sum)" = ok ] || check_fail "sum: $(status_of "$S" sum)"
[ "$(status_of "$S" test_abort)" = crashed ] || check_fail "test_abort: $(status_of "$S" test_abort)"
[ "$(status_of "$S" test_fail)" = failed ] || check_fail "test_fail: $(status_of "$S" test_fail)"
case "$(reason_of "$S" test_abort)" in *SIGABRT*) ;; *) check_fail "crash reason: $(reason_of "$S" test_abort)" ;; esac

# Every task ran as a task of this array and says where (node, job, array job, task id).
NODE=$(scontrol show job -o "$JOB" | sed -n 's/.* NodeList=\([^ ]*\).*/\1/p' | head -1)
for op in "${OPS[@]}"; do
  d=$(ls -d "$B/$op"-* | head -1)
  py '
import json, sys
d, job, node = sys.argv[1], sys.argv[2], sys.argv[3]
s = json.load(open(d + "/run_identity.json"))["slurm"]
assert s["array_job_id"] == job, s
assert s["node"] == node, (s, node)
assert s["job_id"] and s["array_task_id"] in ("0", "1", "2", "3"), s
' "$d" "$JOB" "$NODE" || check_fail "$op: run_identity.json slurm block"
done
tasks=$(for op in "${OPS[@]}"; do d=$(ls -d "$B/$op"-* | head -1)
  py 'import json,sys; print(json.load(open(sys.argv[1]+"/run_identity.json"))["slurm"]["array_task_id"])' "$d"; done | sort -u | wc -l)
[ "$tasks" -eq 4 ] || check_fail "4 ops ran in $tasks distinct array tasks"
grep -q "^add,ok,cpu,$NODE:" "$S" || check_fail "add's device does not name node $NODE"

# The same ops as a local batch: the same ops, statuses and row counts.
"$CAL" batch "${OPS[@]}" "${FAST[@]}" --devices 0 --out "$T/local" > "$T/local.txt" 2>&1
rc=$?
[ "$rc" -eq 1 ] || { cat "$T/local.txt"; check_fail "local batch exit $rc, expected 1"; }
L=$(only_run_dir "$T/local")/ops_status.csv
py '
import csv, sys
def content(f):
    return sorted((r["op"], r["status"], r["rows"], r["backend"], r["timer"]) for r in csv.DictReader(open(f)))
a, b = content(sys.argv[1]), content(sys.argv[2])
assert a == b, "slurm %s\nlocal %s" % (a, b)
' "$S" "$L" || check_fail "the Slurm batch and the local batch differ in content"

# Nothing left in the queue.
[ -z "$(squeue -h -j "$JOB" 2> /dev/null)" ] || check_fail "job $JOB still queued: $(squeue -j "$JOB")"

# Bad requests: exit 2, one line naming the flag, nothing written.
expect_refused "unknown partition" "--scheduler slurm partition" -- \
  "$CAL" batch add --scheduler slurm --partition no_such_partition "${FAST[@]}" --out "$T/refused-out"
expect_refused "time limit" "--time-limit 1h HH:MM:SS" -- \
  "$CAL" batch add --scheduler slurm --time-limit 1h "${FAST[@]}" --out "$T/refused-out"
expect_refused "devices" "--devices --gpus-per-task" -- \
  "$CAL" batch add --scheduler slurm --devices 0 "${FAST[@]}" --out "$T/refused-out"
expect_refused "no backend" "--backend auto" -- \
  "$CAL" batch add --scheduler slurm "${STOP[@]}" --out "$T/refused-out"
expect_refused "slurm flag, local scheduler" "--partition local" -- \
  "$CAL" batch add --partition debug "${FAST[@]}" --out "$T/refused-out"
expect_refused "unknown scheduler" "--scheduler pbs allowed local slurm" -- \
  "$CAL" batch add --scheduler pbs "${FAST[@]}" --out "$T/refused-out"
expect_refused "our own sbatch arg" "--sbatch-arg --array" -- \
  "$CAL" batch add --scheduler slurm --sbatch-arg=--array=0-9 "${FAST[@]}" --out "$T/refused-out"
cli_done
