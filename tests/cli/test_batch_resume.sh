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
echo PASS
