#!/usr/bin/env bash
# caliber batch --timeout-for OP=SECONDS: one op's own limit beside --timeout-per-op (a FlagGems
# GEMM file's minutes beside pointwise files' seconds). The hanging op is ended at its own limit
# while the batch's is none, the limit is kept in batch.json and applies again on --resume, and a
# bad value, an op not in the batch, one given twice or one under Slurm is refused (exit 2,
# nothing written).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init "$@"
use_test_ops test_hang

# No batch-wide limit: only test_hang's own 2 s can end it (the outer timeout keeps a broken
# build from hanging the suite).
timeout 120 "$CAL" batch add test_hang --devices 0 --timeout-for test_hang=2 \
  --out "$T/runs" --name tf "${FAST[@]}" > "$T/out.txt" 2>&1
rc=$?
[ "$rc" -eq 1 ] || check_fail "batch with --timeout-for: exit $rc, expected 1: $(tail -c 400 "$T/out.txt")"
B=$(only_run_dir "$T/runs")
status() { awk -F, -v op="$1" '$1 == op { print $2 }' "$B/ops_status.csv"; }
[ "$(status add)" = ok ] || check_fail "add: $(status add)"
[ "$(status test_hang)" = timeout ] || check_fail "test_hang: $(status test_hang), expected timeout"
grep '^test_hang,' "$B/ops_status.csv" | grep -q "no exit within the 2 s timeout" ||
  check_fail "test_hang's reason does not name its own limit: $(grep '^test_hang,' "$B/ops_status.csv")"
d=$(awk -F, '$1 == "test_hang" { print $7 }' "$B/ops_status.csv")
awk -v d="$d" 'BEGIN { exit !(d >= 1.9 && d < 30) }' || check_fail "test_hang ran $d s, expected about 2"
py 'import json, sys
j = json.load(open(sys.argv[1]))
sys.exit(0 if j.get("timeout_for") == {"test_hang": 2.0} else 1)' "$B/batch.json" ||
  check_fail "batch.json does not keep the limit: $(cat "$B/batch.json")"

# --resume reruns test_hang under the stored limit (without it, it would hang).
timeout 120 "$CAL" batch --resume "$B" > "$T/resume.txt" 2>&1
rc=$?
[ "$rc" -eq 1 ] || check_fail "resume: exit $rc, expected 1: $(tail -c 400 "$T/resume.txt")"
[ "$(status test_hang)" = timeout ] || check_fail "resumed test_hang: $(status test_hang)"

# Bad input: exit 2, one line naming the flag, nothing written.
BT=(batch add test_hang --devices 0 "${FAST[@]}" --out "$T/refused-out")
expect_refused "--timeout-for: an op not in the batch" "--timeout-for 'sum=3' 'sum' is not an op of this batch" -- \
  "$CAL" "${BT[@]}" --timeout-for sum=3
expect_refused "--timeout-for: no seconds" "--timeout-for 'add' allowed: OP=SECONDS" -- \
  "$CAL" "${BT[@]}" --timeout-for add
expect_refused "--timeout-for: NaN seconds" "--timeout-for 'add=NaN' allowed: OP=SECONDS" -- \
  "$CAL" "${BT[@]}" --timeout-for add=NaN
expect_refused "--timeout-for: negative" "--timeout-for 'add=-1' allowed: OP=SECONDS" -- \
  "$CAL" "${BT[@]}" --timeout-for add=-1
expect_refused "--timeout-for: an op twice" "--timeout-for 'add' is given twice" -- \
  "$CAL" "${BT[@]}" --timeout-for add=1 --timeout-for add=2
expect_refused "--timeout-for: under Slurm" "--timeout-for not with --scheduler slurm" -- \
  "$CAL" batch add --backend cpu --scheduler slurm --timeout-for add=5 --out "$T/refused-out"
cli_done
