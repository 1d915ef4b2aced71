#!/usr/bin/env bash
# caliber batch on the cpu backend: a crashing op and a hanging op do not stop the others, their
# statuses say crashed and timeout, and no row of a finished op is lost.
set -u
CAL=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
use_test_ops  # the crashing/hanging/failing test ops (tests/ops_lib)
"$CAL" list --names --backend cpu 2>&1 | grep -qx test_abort || {
  echo "FAIL: caliber list --names does not show test_abort with CALIBER_OPS_LIB=$CALIBER_OPS_LIB"; exit 1
}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; [ -n "${B:-}" ] && cat "$B/ops_status.csv"; exit 1; }
FAST=(--min-samples 3 --min-time 0 --warmup 0 --max-noise 1 --timeout 0.2)

"$CAL" batch add sum test_abort test_hang --backend cpu --devices 0 --timeout-per-op 15 \
  --out "$T/runs" "${FAST[@]}" > "$T/out.txt" 2>&1
rc=$?
cat "$T/out.txt"
[ "$rc" -eq 1 ] || fail "exit code $rc, expected 1 (some ops not ok)"
B=$(ls -d "$T"/runs/batch-* | head -1)
[ -f "$B/ops_status.csv" ] || fail "no ops_status.csv"
head -1 "$B/ops_status.csv" | grep -q '^op,status,backend,device,timer,rows,duration_s,reason,run$' \
  || fail "ops_status.csv header"
status() { awk -F, -v op="$1" '$1 == op { print $2 }' "$B/ops_status.csv"; }
rows() { awk -F, -v op="$1" '$1 == op { print $6 }' "$B/ops_status.csv"; }
[ "$(status add)" = ok ] || fail "add: $(status add)"
[ "$(status sum)" = ok ] || fail "sum: $(status sum)"
[ "$(status test_abort)" = crashed ] || fail "test_abort: $(status test_abort)"
[ "$(status test_hang)" = timeout ] || fail "test_hang: $(status test_hang)"
grep '^test_abort,' "$B/ops_status.csv" | grep -q SIGABRT || fail "crash reason names no SIGABRT"
for op in add sum; do
  d=$(ls -d "$B/$op"-* | head -1)
  n=$(grep -c '"type":"case"' "$d/run.log")
  [ "$n" -gt 0 ] || fail "$op wrote no rows"
  [ "$(rows $op)" = "$n" ] || fail "$op: ops_status says $(rows $op) rows, run.log has $n"
  awk -F, -v op="$op" '$1 == op && $5 == "" { exit 1 }' "$B/ops_status.csv" || fail "$op: no timer"
done
# --gpus is the alias of --devices (the old runner's name): the batch spreads its ops over the
# devices it names, each op's row saying its device.
CALIBER_CPU_DEVICES=2 "$CAL" batch add sum --backend cpu --gpus 0,1 --out "$T/gpus" "${FAST[@]}" \
  > "$T/gpus.txt" 2>&1 || fail "batch --gpus 0,1: exit $?: $(tail -3 "$T/gpus.txt")"
G=$(ls -d "$T"/gpus/batch-* | head -1)
devs=$(awk -F, 'NR > 1 { print $4 }' "$G/ops_status.csv" | sort -u | tr '\n' ' ')
[ "$devs" = "0 1 " ] || fail "batch --gpus 0,1 ran on devices '$devs', expected 0 and 1"
# Nothing of the batch may be left running.
if pgrep -f "$T/runs" > /dev/null; then fail "a child is still running: $(pgrep -af "$T/runs")"; fi
echo PASS
