#!/usr/bin/env bash
# The terminal: --help wrapped to the width (COLUMNS, else the terminal, else 100), --columns on
# the closing table (quantiles, % of peak, noise...), a missed stopping rule visible in the row
# (STOP_NOT_CONVERGED), and an unknown column refused.
set -u
. "$(dirname "$0")/lib.sh"
cli_init "$@"

# widest FILE: the longest line's length.
widest() { awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$1"; }
for cols in 80 120; do
  for cmd in "" run compare summary export report batch; do
    # shellcheck disable=SC2086
    COLUMNS=$cols "$CAL" $cmd --help > "$T/help.txt" 2>&1 || check_fail "caliber $cmd --help exit $?"
    w=$(widest "$T/help.txt")
    [ "$w" -le "$cols" ] || check_fail "caliber $cmd --help at COLUMNS=$cols has a line of $w: $(awk -v c="$cols" 'length($0) > c' "$T/help.txt" | head -2)"
  done
done
env -u COLUMNS "$CAL" run --help > "$T/help100.txt" 2>&1
[ "$(widest "$T/help100.txt")" -le 100 ] || check_fail "--help without COLUMNS or a terminal is wider than 100"
grep -q 'H200' "$T/help100.txt" && check_fail "run --help carries measurement anecdotes: $(grep H200 "$T/help100.txt" | head -2)"

# --columns, and a stopping rule that cannot be met (a noise target of 1e-9 in 0.05 s).
"$CAL" run add --backend cpu --min-samples 3 --min-time 0 --warmup 0 --timeout 0.05 --max-noise 1e-9 \
  --quantiles 0.5,0.9 --columns op,shape,cand_ms,quantiles,pct_peak_bw,noise,samples,stop,status \
  --out "$T/r" > "$T/run.txt" 2>&1 || fatal "run: $(tail -3 "$T/run.txt")"
cat "$T/run.txt"
header=$(grep -E '^op +shape' "$T/run.txt" | tail -1)
[ -n "$header" ] || fatal "no table header with the chosen columns"
for c in 'cand ms' 'p50 ms' 'p90 ms' '% bw' 'noise %' samples stop status; do
  case "$header" in *"$c"*) ;; *) check_fail "the table has no '$c' column: $header" ;; esac
done
case "$header" in *'base ms'*|*speedup*) check_fail "a column that was not asked for: $header" ;; esac
rows=$(grep -cE '^add +[0-9]' "$T/run.txt")
[ "$rows" -ge 2 ] || check_fail "expected table rows for add, found $rows"
miss=$(grep -E '^add +[0-9]' "$T/run.txt" | grep -c 'STOP_NOT_CONVERGED')
[ "$miss" -eq "$rows" ] || check_fail "every row missed its stopping rule but $miss of $rows show STOP_NOT_CONVERGED"
grep -E '^\[[0-9]+/[0-9]+\] add' "$T/run.txt" | grep -q 'STOP_NOT_CONVERGED (' \
  || check_fail "the progress line does not say the stopping rule was missed"

# The default table, with an easy stopping rule: no STOP marker. Its timeout is generous: under
# ctest -j2 on a loaded 2-core host a case once missed 3 samples in FAST's 0.2 s.
"$CAL" run add --backend cpu --min-samples 3 --min-time 0 --warmup 0 --max-noise 1 --timeout 5 \
  --out "$T/d" > "$T/d.txt" 2>&1 || fatal "run default"
grep -q 'STOP_NOT_CONVERGED' "$T/d.txt" && check_fail "a converged run shows STOP_NOT_CONVERGED"
grep -qE '^op +dtype +shape +base ms +cand ms +speedup +speedup 95%' "$T/d.txt" ||
  check_fail "the default columns changed (each speedup with its interval)"

expect_refused "--columns bogus" "--columns bogus" -- "$CAL" run add --columns op,bogus --out "$T/refused-out" "${FAST[@]}"
cli_done
