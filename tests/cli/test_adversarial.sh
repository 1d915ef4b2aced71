#!/usr/bin/env bash
# The adversarial sweep of issue #29 as a test: at least one attack per defect it found, replayed on
# the cpu backend. Each attack asserts its exit code, that nothing was written where it must not
# be, and that nothing it could have clobbered changed (every file of the fixtures keeps its bytes,
# its mode and its kind). docs/limits.md lists what is refused; the count of attacks is printed.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init "$@"
LIB2=${CALIBER_TEST_SECOND_LIB:-$(dirname "$CAL")/tests/libcaliber_test_second.so}
[ -f "$LIB2" ] || fatal "the second test op library $LIB2 is not built"
ATTACKS=0

# snapshot: kind, mode, size and checksum of every entry under the fixtures ($T/fx), so an
# attack that clobbers, chmods, replaces or adds anything there shows up.
snapshot() {
  (cd "$T/fx" && find . -printf '%y %m %s %p -> %l\n' | sort &&
    find . -type f -print0 | sort -z | xargs -0 -r sha256sum)
}

# attack LABEL RC WORDS -- COMMAND...: COMMAND exits RC, its stderr holds every word of WORDS,
# the fixtures are unchanged and nothing appeared at $T/out (commands that would write point
# there).
attack() {
  local label=$1 want=$2 words=$3
  shift 4
  ATTACKS=$((ATTACKS + 1))
  rm -rf "$T/out"
  local before
  before=$(snapshot)
  "$@" > "$T/attack.stdout" 2> "$T/attack.stderr" < /dev/null
  local rc=$?
  [ "$rc" -eq "$want" ] || check_fail "$label: exit $rc, expected $want; stderr: $(head -c 600 "$T/attack.stderr")"
  local w
  for w in $words; do
    grep -qF -- "$w" "$T/attack.stderr" || check_fail "$label: stderr does not name '$w': $(head -c 600 "$T/attack.stderr")"
  done
  [ "$(snapshot)" = "$before" ] || check_fail "$label: the fixtures changed: $(diff <(printf '%s\n' "$before") <(snapshot) | head -5)"
  [ ! -e "$T/out" ] || check_fail "$label: wrote $(find "$T/out" | head -3 | tr '\n' ' ')"
}

# --- Fixtures: a finished run R, a second run R2, a batch B with one failed op, other files.
mkdir -p "$T/fx"
"$CAL" run add "${FAST[@]}" --out "$T/fx/runs" --name r > /dev/null 2>&1 || fatal "a cpu run failed"
R=$(only_run_dir "$T/fx/runs")
use_test_ops test_fail
"$CAL" batch add test_fail "${FAST[@]}" --devices 0 --out "$T/fx" --name b > /dev/null 2>&1
B=$(find "$T/fx" -maxdepth 1 -type d -name 'b-*' | head -1)
[ -n "$B" ] && [ -f "$B/ops_status.csv" ] || fatal "the batch fixture was not made"
unset CALIBER_OPS_LIB
echo "my notes" > "$T/fx/notes.txt"
echo "x,y" > "$T/fx/ro.csv"
chmod 444 "$T/fx/ro.csv"
ln "$R/run.log" "$T/fx/hardlink.csv"
mkfifo "$T/fx/fifo"
head -c 1000 "$LIB2" > "$T/fx/truncated.so"
echo "not a library" > "$T/fx/notelf.so"
mkdir "$T/fx/dir"

# 1. export and report never write over their own inputs (by path or by inode).
attack "1 export over run.log" 2 "--out input" -- "$CAL" export "$R" --format csv --out "$R/run.log"
attack "1 report over run_identity.json" 2 "--html input" -- "$CAL" report "$R" --html "$R/run_identity.json"
attack "1 export over a hard link of run.log" 2 "input" -- "$CAL" export "$R" --out "$T/fx/hardlink.csv"
attack "1 export over the batch's ops_status.csv" 2 "input" -- "$CAL" export "$B" --out "$B/ops_status.csv"
attack "1 history --html over run.log" 2 "--html input" -- "$CAL" history "$R" --html "$R/run.log"
# 2. --tune-cache sets aside only SQLite files; a text file is refused, not moved.
attack "2 tune cache a run.log" 2 "--tune-cache SQLite" -- "$CAL" run add "${FAST[@]}" --tune live --tune-cache "$R/run.log" --out "$T/out"
attack "2 tune cache a text file" 2 "--tune-cache" -- "$CAL" run add "${FAST[@]}" --tune live --tune-cache "$T/fx/notes.txt" --out "$T/out"
ls "$R"/run.log.corrupt-* > /dev/null 2>&1 && check_fail "2: run.log was set aside"
# 3. A batch log planted as a symbolic link is not written through (a copy of B: resuming it
# rightly rewrites its ops_status.csv).
cp -r "$B" "$T/b3"
rm -f "$T/b3/logs/test_fail.log"
ln -s "$T/fx/notes.txt" "$T/b3/logs/test_fail.log"
CALIBER_OPS_LIB=$(test_ops_lib) attack "3 batch log a symlink" 1 "" -- "$CAL" batch --resume "$T/b3"
case "$(reason_of "$T/b3/ops_status.csv" test_fail)" in
  *symbolic*) ;;
  *) check_fail "3: the op's reason does not name the link: $(reason_of "$T/b3/ops_status.csv" test_fail)" ;;
esac
# 4. A read-only file is refused, not replaced (its mode is kept).
attack "4 export over a 0444 file" 2 "--out read-only" -- "$CAL" export "$R" --out "$T/fx/ro.csv"
attack "4 report over a 0444 file" 2 "read-only" -- "$CAL" report "$R" --html "$T/fx/ro.csv"
# 5. A write error on standard output is exit 1, never a silent 0.
if [ -w /dev/full ]; then
  for cmd in "export $R --format json" "summary $R" "compare $R $R" "identity $R" "list --backend cpu" "devices" "plan --backend cpu"; do
    # shellcheck disable=SC2086
    attack "5 $cmd > /dev/full" 1 "standard output" -- bash -c "\"\$0\" $cmd > /dev/full" "$CAL"
  done
fi
# 6. ab refuses its switch before the A/B directory exists.
attack "6 ab --arg=--out twice" 2 "--arg --out" -- "$CAL" ab add "${FAST[@]}" --env X=1 --env X=2 --arg=--out=/a --arg=--out=/b --out "$T/out"
attack "6 ab --ops-lib-a not ELF" 2 "--ops-lib-a" -- "$CAL" ab add "${FAST[@]}" --ops-lib-a "$T/fx/notelf.so" --ops-lib-b "$LIB2" --out "$T/out"
# 8. A gate is never silently off.
for v in NaN -1 inf; do
  attack "8 --fail-on-regression $v" 2 "--fail-on-regression" -- "$CAL" compare "$R" "$R" --fail-on-regression "$v"
done
# 9. The Python hand-off: an exit at import is exit 2; an interpreter that is not python is exit 2.
# The sanitize tree builds no Python package: the hand-off attacks need one beside the binary.
if [ -d "$(dirname "$CAL")/python/caliber" ] || [ -d "$(dirname "$CAL")/../lib/caliber/python" ]; then
  printf 'import sys\nsys.exit(0)\n' > "$T/exit0.py"
  printf 'import os\nos._exit(0)\n' > "$T/osexit.py"
  attack "9 suite sys.exit(0) at import" 2 "import" -- "$CAL" run --py-ops "$T/exit0.py" "${FAST[@]}" --out "$T/out"
  attack "9 suite os._exit(0) at import" 2 "import" -- "$CAL" run --py-ops "$T/osexit.py" "${FAST[@]}" --out "$T/out"
  # the interpreter's fault, named as such (not the suite's)
  attack "9 CALIBER_PYTHON=/bin/true" 2 "CALIBER_PYTHON: import" -- env CALIBER_PYTHON=/bin/true "$CAL" run --py-ops "$T/exit0.py" "${FAST[@]}" --out "$T/out"
  attack "9 CALIBER_PYTHON=/bin/false" 2 "CALIBER_PYTHON: import" -- env CALIBER_PYTHON=/bin/false "$CAL" run --py-ops "$T/exit0.py" "${FAST[@]}" --out "$T/out"
  printf 'import time\ntime.sleep(60)\n' > "$T/sleep.py"
  attack "15 suite that sleeps at import" 2 "CALIBER_PY_IMPORT_TIMEOUT" -- env CALIBER_PY_IMPORT_TIMEOUT=1 "$CAL" run --py-ops "$T/sleep.py" "${FAST[@]}" --out "$T/out"
else
  echo "skip: 9 and 15 (the Python hand-off): no Python package beside $CAL"
fi
# 10. An op library may not register a name that is a flag or holds shell characters.
attack "10 op named --help" 2 "--help" -- env CALIBER_TEST_SECOND_NAME=--help "$CAL" list --backend cpu --ops-lib "$LIB2"
attack "10 op named x;touch" 2 "character" -- env "CALIBER_TEST_SECOND_NAME=x;touch pwned;#" "$CAL" list --backend cpu --ops-lib "$LIB2"
# 11. Bad input is exit 2 everywhere, with caliber's words.
attack "11 export --out /dev/null" 2 "--out" -- "$CAL" export "$R" --out /dev/null
attack "11 export --out a fifo" 2 "--out" -- "$CAL" export "$R" --out "$T/fx/fifo"
attack "11 export --out a directory" 2 "--out directory" -- "$CAL" export "$R" --out "$T/fx/dir"
attack "11 export --out a missing folder" 2 "--out" -- "$CAL" export "$R" --out "$T/out/x/y.csv"
cp -r "$B" "$T/fx/bad-devices"
py 'import json,sys; f=sys.argv[1]+"/batch.json"; j=json.load(open(f)); j["devices"]="x"; json.dump(j,open(f,"w"))' "$T/fx/bad-devices"
attack "11 batch.json devices x" 2 "batch.json" -- "$CAL" batch --resume "$T/fx/bad-devices"
grep -q "json.exception" "$T/attack.stderr" && check_fail "11: a raw JSON exception reached the user"
attack "11 CALIBER_EXE missing" 2 "CALIBER_EXE" -- env CALIBER_EXE=/nonexist PYTHONPATH="$SRC/python" python3 -m caliber batch add
grep -q Traceback "$T/attack.stderr" && check_fail "11: CALIBER_EXE=/nonexist printed a traceback"
# 12. A resumed batch keeps its caliber.
attack "12 resume with another --level" 2 "--resume caliber" -- "$CAL" batch --resume "$B" --level comprehensive
# 13. (unit test: timing.Truth.TheTimeoutDoesNotCutTheWarmup)
# 14. An op library is checked before dlopen: truncated, not ELF, a constructor that aborts.
attack "14 truncated library" 2 "--ops-lib cut" -- "$CAL" run add "${FAST[@]}" --ops-lib "$T/fx/truncated.so" --out "$T/out"
attack "14 not an ELF file" 2 "--ops-lib" -- "$CAL" list --ops-lib "$T/fx/notelf.so"
attack "14 constructor aborts" 2 "probe" -- env CALIBER_TEST_SECOND_ABORT=1 "$CAL" list --backend cpu --ops-lib "$LIB2"
attack "14 constructor aborts (env)" 2 "probe" -- env CALIBER_TEST_SECOND_ABORT=1 CALIBER_OPS_LIB="$LIB2" "$CAL" list --backend cpu
# 15. Fifos are refused, never waited on.
attack "15 --op-file fifo" 2 "--op-file regular" -- timeout 20 "$CAL" run "${FAST[@]}" --op-file "$T/fx/fifo" --out "$T/out"
attack "15 OP_FILE fifo" 2 "OP_FILE" -- env OP_FILE="$T/fx/fifo" timeout 20 "$CAL" list --backend cpu
attack "15 --ops-lib fifo" 2 "--ops-lib regular" -- timeout 20 "$CAL" list --ops-lib "$T/fx/fifo"
# 17. Shape includes stay in the including file's folder and never echo another file.
printf 'root:$y$SECRET-HASH:19000:0:99999:7:::\n' > "$T/fx/secret"
mkdir -p "$T/fx/shapes"
printf 'comprehensive:\n  include: [../secret]\n' > "$T/fx/shapes/up.yaml"
printf 'comprehensive:\n  include: [%s]\n' "$T/fx/secret" > "$T/fx/shapes/abs.yaml"
printf 'comprehensive:\n  include: [s]\n' > "$T/fx/shapes/link.yaml"
ln -s "$T/fx/secret" "$T/fx/shapes/s"
for f in up abs link; do
  attack "17 include $f" 2 "include" -- "$CAL" list --backend cpu --shapes "$T/fx/shapes/$f.yaml"
  grep -q SECRET "$T/attack.stderr" && check_fail "17 include $f: echoed the included file"
done
CALIBER_SHAPES_INCLUDE_ANY=1 attack "17 include allowed, not echoed" 2 "not shown" -- "$CAL" list --backend cpu --shapes "$T/fx/shapes/up.yaml"
grep -q SECRET "$T/attack.stderr" && check_fail "17: echoed a non-shape file's content"
# 18. Terminal escapes in op names are neutralised; CSV formulas are text.
cp -r "$R" "$T/fx/esc"
py 'import json,sys
f = sys.argv[1] + "/run.log"
out = []
for l in open(f):
    j = json.loads(l)
    if j.get("type") == "case":
        j["op"] = "=HYPERLINK(\"http://x\")\x1b]0;pwned\x07"
    out.append(json.dumps(j))
open(f, "w").write("\n".join(out) + "\n")' "$T/fx/esc"
attack "18 summary of escapes" 0 "" -- "$CAL" summary "$T/fx/esc"
grep -q $'\x1b' "$T/attack.stdout" && check_fail "18: summary printed a raw escape"
attack "18 export csv of a formula" 0 "" -- "$CAL" export "$T/fx/esc" --format csv
grep -q '^"\?=\|,"\?=' "$T/attack.stdout" && check_fail "18: export wrote a formula cell: $(grep -m1 '=HYP' "$T/attack.stdout")"
# 19. Newlines are refused, refused values cut at 200 bytes.
attack "19 --out with a newline" 2 "--out" -- "$CAL" run add "${FAST[@]}" --out "$T/out"$'\n'"line"
[ -e "$T/out,line" ] && check_fail "19: created $T/out,line"
head -c 1000000 /dev/zero | tr '\0' 'x' > "$T/long.txt"
attack "19 op-file line of 1 MB" 2 "bytes" -- "$CAL" run "${FAST[@]}" --op-file "$T/long.txt" --out "$T/out"
[ "$(wc -c < "$T/attack.stderr")" -lt 2000 ] || check_fail "19: op-file message of $(wc -c < "$T/attack.stderr") bytes"
attack "19 devices --backend 100 KB" 2 "bytes" -- "$CAL" devices --backend "$(head -c 100000 "$T/long.txt")"
[ "$(wc -c < "$T/attack.stderr")" -lt 2000 ] || check_fail "19: devices message of $(wc -c < "$T/attack.stderr") bytes"
attack "19 --min-effect 1e308" 2 "--min-effect" -- "$CAL" compare "$R" "$R" --min-effect 1e308
[ "$(wc -c < "$T/attack.stderr")" -lt 400 ] || check_fail "19: --min-effect message of $(wc -c < "$T/attack.stderr") bytes"
# 20. The right words.
attack "20 identity of a non-run" 2 "not exist" -- "$CAL" identity "$T/fx/dir"
grep -q "larger than" "$T/attack.stderr" && check_fail "20: identity says 'larger than'"
attack "20 --op-file a directory" 2 "directory" -- "$CAL" run "${FAST[@]}" --op-file "$T/fx/dir" --out "$T/out"
attack "20 nosuchcmd" 2 "not a subcommand" -- "$CAL" nosuchcmd
attack "20 --node [" 2 "names no op" -- "$CAL" run "${FAST[@]}" --node '[' --out "$T/out"
printf 'import caliber\n' > "$T/with space.py"
attack "20 a suite named 'with space.py'" 2 "" -- "$CAL" run --py-ops "$T/with space.py" "${FAST[@]}" --out "$T/out"
grep -q -- "--name" "$T/attack.stderr" && check_fail "20: a suite's file name became a refused --name"
# 21. Nothing accepted silently.
attack "21 --devices 0,7 on the cpu backend" 2 "--devices 7" -- env CALIBER_CPU_DEVICES=1 "$CAL" run add "${FAST[@]}" --devices 0,7 --out "$T/out"
attack "21 --timeout-per-op NaN" 2 "--timeout-per-op" -- "$CAL" batch add "${FAST[@]}" --timeout-per-op NaN --out "$T/out"
attack "21 --profile twice" 2 "profile" -- "$CAL" run add "${FAST[@]}" --profile --profile --out "$T/out"
attack "21 --min-effect empty" 2 "min-effect" -- "$CAL" compare "$R" "$R" --min-effect ""
attack "21 export --out empty" 2 "--out empty" -- "$CAL" export "$R" --out ""
# 1000 copies of a case row: summary and compare both keep each case's first row and say how many
# they set aside (one rule, one note).
cp -r "$R" "$T/fx/dup"
py 'import sys
f = sys.argv[1] + "/run.log"
lines = open(f).read().splitlines(True)
first = next(l for l in lines if "\"type\":\"case\"" in l or "\"type\": \"case\"" in l)
at = lines.index(first) + 1
open(f, "w").writelines(lines[:at] + [first] * 1000 + lines[at:])' "$T/fx/dup"
cases=$(grep -c '"type":"case"' "$R/run.log")
attack "21 summary of 1000 duplicate rows" 0 "" -- "$CAL" summary "$T/fx/dup" --format csv
grep -q "1000 duplicate case row" "$T/attack.stderr" || check_fail "21: summary does not count the duplicates: $(cat "$T/attack.stderr")"
rows=$(py 'import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    if r["op"] == "(all)": print(r["rows"])' "$T/attack.stdout")
[ "$rows" = "$cases" ] || check_fail "21: summary counts $rows rows of $cases cases"
attack "21 compare of 1000 duplicate rows" 0 "" -- "$CAL" compare "$T/fx/dup" "$R"
grep -q "side A: 1000 duplicate case row" "$T/attack.stdout" || check_fail "21: compare does not count the duplicates: $(grep -i dup "$T/attack.stdout")"
grep -q "paired $cases case(s)" "$T/attack.stdout" || check_fail "21: compare paired $(grep -o 'paired [0-9]* case' "$T/attack.stdout")"
# 21. A run.log whose header says "schema": null is refused naming the file and the key.
cp -r "$R" "$T/fx/schema-null"
py 'import json, sys
f = sys.argv[1] + "/run.log"
lines = open(f).read().splitlines()
h = json.loads(lines[0])
h["schema"] = None
open(f, "w").write("\n".join([json.dumps(h)] + lines[1:]) + "\n")' "$T/fx/schema-null"
attack "21 schema null" 2 "schema run.log" -- "$CAL" summary "$T/fx/schema-null"
# 20. A library of another architecture says so (not "No such file or directory").
cp "$LIB2" "$T/fx/arm.so"
py 'import sys
f = open(sys.argv[1], "r+b")
f.seek(18)
f.write(bytes([0xB7, 0]))' "$T/fx/arm.so"
attack "20 --ops-lib of another architecture" 2 "architecture" -- "$CAL" list --backend cpu --ops-lib "$T/fx/arm.so"
grep -q "No such file" "$T/attack.stderr" && check_fail "20: a wrong-architecture library reads as missing"
# 20/21. A replayed tune record that does not parse, that names a parameter the op does not
# declare, or whose values are none of the op's configs (tm=2^62 wrapped mm's tile budget and
# corrupted the heap) is not replayed: the default runs, the row says so, a warning names the key.
NODE='mm[f64-M128-N128-K128]'
"$CAL" run "${FAST[@]}" --node "$NODE" --tune record --out "$T/rec" > /dev/null 2>&1 || fatal "the record run failed"
REC=$(only_run_dir "$T/rec")
for spoil in 'tm=??' 'tm=64,tn=64,tk=64,bogus=3' 'tm=4611686018427387904,tn=64,tk=64' \
  'tm=4611686018427387904,tn=4,tk=4'; do
  rm -rf "$T/spoil" "$T/replayed"
  mkdir -p "$T/spoil"
  cp "$REC/tune.db" "$T/spoil/tune.db"
  py 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("update tune_configs set config = ?", (sys.argv[2],))
db.commit()' "$T/spoil/tune.db" "$spoil"
  case $spoil in
    *bogus*) why="does not declare" ;;
    *4611686018427387904*) why="is not one of the op's" ;;
    *) why=unparseable ;;
  esac
  attack "20 replay of '$spoil'" 0 "M=128,N=128,K=128 $why" -- "$CAL" run "${FAST[@]}" --node "$NODE" --replay-from "$T/spoil" --out "$T/replayed"
  src=$(py 'import glob, json, sys
for l in open(glob.glob(sys.argv[1] + "/*/run.log")[0]):
    j = json.loads(l)
    if j.get("type") == "case":
        print([p for p in j["providers"] if p["role"] == "candidate"][0]["tune"]["source"])' "$T/replayed")
  [ "$src" = replay-missing ] || check_fail "20: a replayed '$spoil' is recorded as '$src'"
done
# 20/21. The Python package: a NaN keyword is refused by name, min_samples=10**12 by its range.
if [ -d "$(dirname "$CAL")/python/caliber" ]; then
  for kw in 'min_time_s=float("nan")' 'min_samples=10**12'; do
    attack "21 caliber.measure($kw)" 1 "min_" -- env PYTHONPATH="$(dirname "$CAL")/python" CALIBER_NO_TORCH=1 python3 -c "import caliber; caliber.measure(lambda: None, backend='cpu', $kw)"
    grep -q "json.exception" "$T/attack.stderr" && check_fail "21: caliber.measure($kw) gave a raw JSON error"
  done
  printf 'import caliber
OPS = [caliber.Op(name="py_nan", family="pointwise", dtypes=["f64"], shapes=[[16]], inputs=lambda c: ([1.0] * c.numel,), baseline=("b", lambda xs: list(xs)), flops=lambda c: float("nan"))]
' > "$T/nan_suite.py"
  attack "20 a suite whose flops give NaN" 1 "" -- "$CAL" run --py-ops "$T/nan_suite.py" "${FAST[@]}" --out "$T/pynan"
  grep -rq "field 'flops' gave nan" "$T/pynan" || check_fail "20: the NaN flops row does not say so: $(grep -rho '"error":"[^"]*' "$T/pynan" | head -1)"
else
  echo "skip: the caliber.measure and suite NaN attacks: no Python package beside $CAL"
fi

echo "$ATTACKS attacks replayed"
cli_done
