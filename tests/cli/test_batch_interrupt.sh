#!/usr/bin/env bash
# SIGINT to a running batch: every child is terminated and reaped, the running and pending ops are
# marked interrupted, finished rows are kept, and the batch exits non-zero.
set -u
CAL=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
use_test_ops  # the crashing/hanging/failing test ops (tests/ops_lib)
"$CAL" list --names --backend cpu 2>&1 | grep -qx test_hang || {
  echo "FAIL: caliber list --names does not show test_hang with CALIBER_OPS_LIB=$CALIBER_OPS_LIB"; exit 1
}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; [ -n "${B:-}" ] && cat "$B/ops_status.csv"; exit 1; }

"$CAL" batch add test_hang sum softmax --backend cpu --devices 0 --out "$T/runs" \
  --min-samples 3 --min-time 0 --warmup 0 > "$T/out.txt" 2>&1 &
pid=$!
B=""
for _ in $(seq 1 600); do
  B=$(ls -d "$T"/runs/batch-* 2>/dev/null | head -1)
  if [ -n "$B" ] && grep -q '^test_hang,running' "$B/ops_status.csv" 2>/dev/null; then break; fi
  sleep 0.1
done
grep -q '^test_hang,running' "$B/ops_status.csv" || fail "test_hang never started"
sleep 0.5
kill -INT "$pid"
wait "$pid"
rc=$?
cat "$T/out.txt"
[ "$rc" -ne 0 ] || fail "an interrupted batch exited 0"
status() { awk -F, -v op="$1" '$1 == op { print $2 }' "$B/ops_status.csv"; }
[ "$(status add)" = ok ] || fail "add (finished before the interrupt): $(status add)"
[ "$(status test_hang)" = interrupted ] || fail "test_hang: $(status test_hang)"
[ "$(status sum)" = interrupted ] || fail "sum: $(status sum)"
[ "$(status softmax)" = interrupted ] || fail "softmax: $(status softmax)"
d=$(ls -d "$B"/add-* | head -1)
[ "$(grep -c '"type":"case"' "$d/run.log")" -gt 0 ] || fail "add's rows were lost"
sleep 0.2
if pgrep -f "$T/runs" > /dev/null; then fail "a child survived: $(pgrep -af "$T/runs")"; fi
echo PASS
