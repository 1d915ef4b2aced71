#!/usr/bin/env bash
# caliber report renders its charts in a real browser: headless Chromium loads the page offline,
# the DOM it built holds the expected number of <svg class="chart"> charts (computed here from
# run.log, independently of the C++), each with marks drawn, no console error is logged, and a
# screenshot is kept under the build directory (test-artifacts/). The same for the A/B page.
# scripts/quickstart test installs chromium; a missing one fails here, it does not skip.
set -u
. "$(dirname "$0")/lib.sh"
cli_init "$@"
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
. "$(dirname "$0")/browser_lib.sh"

# Two ops with a candidate and a baseline each, the peaks measured (the % of peak chart).
"$CAL" run add mm --out "$T/runs" --name a "${FAST[@]}" > "$T/run-a.log" 2>&1 || fatal "run a: $(tail -3 "$T/run-a.log")"
"$CAL" run add mm --out "$T/runs" --name b "${FAST[@]}" > /dev/null 2>&1 || fatal "run b"
A=$(ls -d "$T"/runs/a-*)
B=$(ls -d "$T"/runs/b-*)

# The charts the page must have, from run.log: per op a speedup chart (rows with a speedup) and a
# latency chart (rows with stored samples); one % of peak chart when a row has a percent of peak.
want=$($PY - "$A/run.log" <<'PY'
import json, sys
speed, lat, peak = set(), set(), False
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["type"] != "case":
        continue
    if r.get("status") == "ok" and isinstance(r.get("speedup"), (int, float)) and r["speedup"] > 0:
        speed.add(r["op"])
    if any(p.get("samples_ms") for p in r.get("providers", [])):
        lat.add(r["op"])
    peak = peak or "pct_peak_bw" in r or "pct_peak_flops" in r
print(len(speed) + len(lat) + (1 if peak else 0))
PY
)
[ "$want" -ge 5 ] || fatal "the run should give 5 charts (2 ops x 2, and % of peak), got $want"
"$CAL" report "$A" --html "$T/run.html" > /dev/null || check_fail "report exit $?"
grep -q '<script' "$T/run.html" && check_fail "the page must not carry scripts"
grep -Eq '(src|href)="(https?:)?//' "$T/run.html" && check_fail "the page loads something from outside"
check_page report "$T/run.html" "$want"

# The A/B page: one ratio chart, one mark per pair, coloured by verdict.
"$CAL" report --ab "$A" "$B" --html "$T/ab.html" > /dev/null || check_fail "report --ab exit $?"
check_page report-ab "$T/ab.html" 1
pairs=$("$CAL" compare "$A" "$B" --format json 2> /dev/null | $PY -c 'import json,sys; print(len(json.load(sys.stdin)["pairs"]["rows"]))')
marks=$(grep -o 'class="mark"' "$T/ab.html" | wc -l)
[ "$marks" -eq "$pairs" ] || check_fail "the ratio chart has $marks marks for $pairs pairs"
grep -q 'FASTER' "$T/ab.html" && grep -q 'UNSURE' "$T/ab.html" || check_fail "no verdict legend"

expect_refused "report --ab and directories" "--ab" -- "$CAL" report "$A" --ab "$A" "$B" --html "$T/refused-out/x.html"
echo "screenshots: $ART/report.png $ART/report-ab.png"
cli_done
