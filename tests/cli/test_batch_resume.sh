#!/usr/bin/env bash
# caliber batch --resume DIR reruns only the ops whose status is not ok, in the same directory.
set -u
CAL=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
use_test_ops  # the crashing/hanging/failing test ops (tests/ops_lib)
"$CAL" list --names --backend cpu 2>&1 | grep -qx test_fail || {
  echo "FAIL: caliber list --names does not show test_fail with CALIBER_OPS_LIB=$CALIBER_OPS_LIB"; exit 1
}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; [ -n "${B:-}" ] && cat "$B/ops_status.csv"; exit 1; }

"$CAL" batch add test_fail test_abort --backend cpu --devices 0 --out "$T/runs" \
  --min-samples 3 --min-time 0 --warmup 0 > "$T/out1.txt" 2>&1
rc=$?
[ "$rc" -eq 1 ] || { cat "$T/out1.txt"; fail "first batch exit $rc, expected 1"; }
B=$(ls -d "$T"/runs/batch-* | head -1)
status() { awk -F, -v op="$1" '$1 == op { print $2 }' "$B/ops_status.csv"; }
[ "$(status add)" = ok ] || fail "add: $(status add)"
[ "$(status test_fail)" = failed ] || fail "test_fail: $(status test_fail)"
[ "$(status test_abort)" = crashed ] || fail "test_abort: $(status test_abort)"
sleep 1.1  # a rerun in the same second would still get its own directory (-2), but be plain
"$CAL" batch --resume "$B" > "$T/out2.txt" 2>&1
rc=$?
cat "$T/out2.txt"
[ "$rc" -eq 1 ] || fail "resumed batch exit $rc, expected 1 (test_fail still fails)"
[ "$(ls -d "$B"/add-* | wc -l)" -eq 1 ] || fail "add was ok and must not rerun"
[ "$(ls -d "$B"/test_fail-* | wc -l)" -eq 2 ] || fail "test_fail must rerun once"
[ "$(ls -d "$T"/runs/batch-* | wc -l)" -eq 1 ] || fail "resume must not claim a new batch directory"
[ "$(status add)" = ok ] || fail "add's ok row was not kept"
[ "$(status test_fail)" = failed ] || fail "test_fail after resume: $(status test_fail)"
[ "$(status test_abort)" = crashed ] || fail "test_abort after resume: $(status test_abort)"

# A batch.json that is garbled or missing is refused (exit 2, nothing run): the ops left would
# otherwise run without the batch's own flags, under another caliber than the ops done.
cp "$B/batch.json" "$T/batch.json.good"
for damage in garbled missing; do
  if [ "$damage" = garbled ]; then echo garbage > "$B/batch.json"; else rm -f "$B/batch.json"; fi
  runs_before=$(ls -d "$B"/*/ | wc -l)
  "$CAL" batch --resume "$B" > "$T/out3.txt" 2>&1
  rc=$?
  [ "$rc" -eq 2 ] || fail "resume with a $damage batch.json exit $rc, expected 2: $(tail -3 "$T/out3.txt")"
  grep -q "batch.json' is" "$T/out3.txt" || fail "the $damage batch.json is not named: $(cat "$T/out3.txt")"
  [ "$(ls -d "$B"/*/ | wc -l)" -eq "$runs_before" ] || fail "a resume with a $damage batch.json ran an op"
done
cp "$T/batch.json.good" "$B/batch.json"

# A batch.json that is a fifo (it hung the resume) or larger than 16 MiB is refused the same way,
# through the check ops_status.csv gets.
for damage in fifo huge; do
  rm -f "$B/batch.json"
  if [ "$damage" = fifo ]; then mkfifo "$B/batch.json"; else truncate -s 17M "$B/batch.json"; fi
  runs_before=$(ls -d "$B"/*/ | wc -l)
  timeout -k 10 60 "$CAL" batch --resume "$B" > "$T/out3.txt" 2>&1
  rc=$?
  [ "$rc" -eq 2 ] || fail "resume with a $damage batch.json exit $rc, expected 2: $(tail -3 "$T/out3.txt")"
  case $damage in fifo) why="not a regular file" ;; huge) why="larger than 16777216 bytes" ;; esac
  grep -q "batch.json' is unreadable: $why" "$T/out3.txt" || fail "the $damage batch.json is not named: $(cat "$T/out3.txt")"
  [ "$(ls -d "$B"/*/ | wc -l)" -eq "$runs_before" ] || fail "a resume with a $damage batch.json ran an op"
done
rm -f "$B/batch.json"
cp "$T/batch.json.good" "$B/batch.json"

# An ops_per_child past int is named as written (it wrapped to 0 and was refused as '0').
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); j["ops_per_child"]=2**40; json.dump(j,open(sys.argv[1],"w"))' "$B/batch.json"
"$CAL" batch --resume "$B" > "$T/out3.txt" 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "resume with ops_per_child 2^40 exit $rc: $(tail -3 "$T/out3.txt")"
grep -q "'1099511627776' is not allowed" "$T/out3.txt" || fail "ops_per_child 2^40 not named as written: $(cat "$T/out3.txt")"
cp "$T/batch.json.good" "$B/batch.json"

# An ops_status.csv whose quote is never closed is refused (exit 2) and kept as it is: it was read
# as the one row before the quote, and the rewrite lost every op after it.
cp "$B/ops_status.csv" "$T/ops_status.good"
python3 - "$B/ops_status.csv" <<'PY'
import sys
p = sys.argv[1]
lines = open(p).read().split("\n")
lines[1] = lines[1].split(",")[0] + ',ok,cpu,0,direct,1,0.100,"a reason never closed,'
open(p, "w").write("\n".join(lines))
PY
sum_before=$(md5sum < "$B/ops_status.csv")
runs_before=$(ls -d "$B"/*/ | wc -l)
"$CAL" batch --resume "$B" > "$T/out4.txt" 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "resume with an unclosed quote in ops_status.csv exit $rc, expected 2: $(tail -3 "$T/out4.txt")"
grep -q "ops_status.csv cannot be parsed: the quoted field opened on line [0-9]* is never closed" "$T/out4.txt" ||
  fail "the unclosed quote is not named: $(cat "$T/out4.txt")"
[ "$(md5sum < "$B/ops_status.csv")" = "$sum_before" ] || fail "an ops_status.csv that does not parse was rewritten"
[ "$(ls -d "$B"/*/ | wc -l)" -eq "$runs_before" ] || fail "a resume of an unparseable ops_status.csv ran an op"
cp "$T/ops_status.good" "$B/ops_status.csv"

# An ops_status.csv that is a symbolic link is refused before any op runs (the batch never writes
# through a link, so the rewrite after the first op failed only then, exit 1).
mv "$B/ops_status.csv" "$T/ops_status.elsewhere"
ln -s "$T/ops_status.elsewhere" "$B/ops_status.csv"
runs_before=$(ls -d "$B"/*/ | wc -l)
"$CAL" batch --resume "$B" > "$T/out5.txt" 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "resume with a linked ops_status.csv exit $rc, expected 2: $(tail -3 "$T/out5.txt")"
grep -q "ops_status.csv: it is a symbolic link" "$T/out5.txt" || fail "the link is not named: $(cat "$T/out5.txt")"
[ "$(ls -d "$B"/*/ | wc -l)" -eq "$runs_before" ] || fail "a resume of a linked ops_status.csv ran an op"
[ -L "$B/ops_status.csv" ] && cmp -s "$T/ops_status.elsewhere" "$T/ops_status.good" ||
  fail "the linked ops_status.csv or its target was changed"
rm "$B/ops_status.csv"
cp "$T/ops_status.good" "$B/ops_status.csv"
# A directory a batch still runs in (its lease held) is not resumed: a second batch would run its
# ops again beside the first. Exit 2, the holder named, nothing run. flock(1) holds the lease here
# as a live batch does (tests/unit/batch holds it with a real one); once it lets go, the resume
# runs, and a row the dead batch left at `running` is named and runs again.
grep -q "^pid [0-9]* on " "$B/.batch.lease" || fail "the lease does not name its last holder"
holder=$(head -1 "$B/.batch.lease")
flock -o "$B/.batch.lease" sleep 60 &  # -o: the lock is flock's own, gone when it is killed
locker=$!
for _ in $(seq 100); do flock -n "$B/.batch.lease" true || break; sleep 0.05; done
runs_before=$(ls -d "$B"/*/ | wc -l)
"$CAL" batch --resume "$B" > "$T/out6.txt" 2>&1
rc=$?
kill $(pgrep -P "$locker") "$locker"; wait "$locker" 2>/dev/null
[ "$rc" -eq 2 ] || fail "resume of a directory in use exit $rc, expected 2: $(cat "$T/out6.txt")"
grep -qF "is in use by a batch that still runs ($holder); let it end, or stop it, first" \
  "$T/out6.txt" || fail "the holder is not named: $(cat "$T/out6.txt")"
[ "$(ls -d "$B"/*/ | wc -l)" -eq "$runs_before" ] || fail "a resume of a directory in use ran an op"
# what a batch killed with its child leaves (both SIGKILLed: no one recorded the end)
sed -i 's/^test_fail,failed,/test_fail,running,/' "$B/ops_status.csv"
grep -q '^test_fail,running,' "$B/ops_status.csv" || fail "the planted running row is not there"
"$CAL" batch --resume "$B" > "$T/out7.txt" 2>&1
grep -q "batch: test_fail: left at running by a batch that ended without recording their end" \
  "$T/out7.txt" || fail "the stale running row is not named: $(cat "$T/out7.txt")"
[ "$(status test_fail)" = failed ] || fail "test_fail after the stale resume: $(status test_fail)"
echo PASS
