#!/usr/bin/env bash
# Outputs that say one thing once: ab --help under 80 lines with its own flags first and the run
# knobs it takes named after them; --rounds without CLI11's "INT:an integer ..."; `--ops` says ops
# are positional; the timer floor of a cpu run never reads "0.00 us"; a summary of one row has no
# interval; the A/B table prints its warning once; a missing directory argument names the
# subcommand, the argument and its --help in one line (CLI11 alone said "dirs is required").
set -u
. "$(dirname "$0")/lib.sh"
cli_init "$@"

COLUMNS=100 "$CAL" ab --help > "$T/ab-help.txt" 2>&1 || check_fail "ab --help exit $?"
n=$(wc -l < "$T/ab-help.txt")
[ "$n" -lt 80 ] || check_fail "ab --help is $n lines (under 80 wanted)"
own=$(grep -n -- '--ops-lib-a' "$T/ab-help.txt" | head -1 | cut -d: -f1)
run=$(grep -n '^Run knobs:' "$T/ab-help.txt" | head -1 | cut -d: -f1)
[ -n "$own" ] && [ -n "$run" ] && [ "$own" -lt "$run" ] || check_fail "ab's own flags must come before the run knobs (own $own, run $run)"
grep -q -- '--min-samples' "$T/ab-help.txt" || check_fail "the run knobs paragraph does not name --min-samples"
grep -q 'INT:an integer' "$T/ab-help.txt" && check_fail "ab --help still says INT:an integer"
grep -q 'derived 2026' "$T/ab-help.txt" && check_fail "ab --help still prints a derivation (docs/ab.md holds it)"

"$CAL" run --ops add,sum --backend cpu > "$T/ops.txt" 2>&1
rc=$?
[ "$rc" -eq 2 ] || check_fail "run --ops: exit $rc, expected 2"
grep -q 'ops are positional' "$T/ops.txt" || check_fail "run --ops does not say ops are positional: $(cat "$T/ops.txt")"

expect_refused "compare without A" "caliber compare: A is required --help" -- "$CAL" compare
expect_refused "identity without RUN" "caliber identity: RUN is required --help" -- "$CAL" identity
expect_refused "export without DIR" "caliber export: DIR is required --help" -- "$CAL" export
expect_refused "history without DIR" "caliber history: DIR is required --help" -- "$CAL" history

"$CAL" run sum --out "$T/runs" --name one "${FAST[@]}" --shape 4096 --dtypes f32 > "$T/run.txt" 2>&1 || check_fail "run sum: $(tail -3 "$T/run.txt")"
grep -q 'timer floor (an empty kernel): 0.00 us' "$T/run.txt" && check_fail "the timer floor reads 0.00 us"
grep -q 'timer floor (an empty kernel): ' "$T/run.txt" || check_fail "no timer floor line"
"$CAL" summary "$T"/runs/one-* --format json > "$T/sum.json" 2> /dev/null || check_fail "summary"
python3 - "$T/sum.json" << 'PY' || check_fail "a one-row summary must have no interval (above)"
import json, sys
rows = json.load(open(sys.argv[1]))["summary"]["rows"]
one = [r for r in rows if r["speedup_rows"] == 1]
assert one, rows
for r in one:
    assert r["ci95_lo"] is None and r["ci95_hi"] is None, r
PY
cli_done
