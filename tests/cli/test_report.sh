#!/usr/bin/env bash
# caliber report: a cpu run becomes one self-contained HTML page; a path with no run is refused.
set -u
CAL=$1
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$CAL" run add --backend cpu --out "$T/runs" --min-samples 3 --min-time 0 --warmup 0 --timeout 0.2 \
  --peaks off --tune off > /dev/null 2>&1 || fail "run"
R=$(ls -d "$T"/runs/add-*)
"$CAL" report "$R" > "$T/out.txt" 2>&1 || fail "report exit $?: $(cat "$T/out.txt")"
[ -s "$R/report.html" ] || fail "no report.html"
grep -q '<h2>Every case</h2>' "$R/report.html" || fail "no cases table"
[ "$(grep -c '<td>add</td>' "$R/report.html")" -ge 4 ] || fail "not every case row is there"
grep -q '<script' "$R/report.html" && fail "the page must not carry scripts"
"$CAL" report "$R" --html "$T/x.html" > /dev/null 2>&1 && [ -s "$T/x.html" ] || fail "--html FILE"
# The page is titled after the run even when the path ends in a slash.
"$CAL" report "$R/" --html "$T/slash.html" > /dev/null 2>&1 || fail "report DIR/"
grep -q "<title>caliber report: $(basename "$R")</title>" "$T/slash.html" ||
  fail "title: $(grep -o '<title>[^<]*</title>' "$T/slash.html")"
"$CAL" report "$T/nothing-here" > /dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "a path with no run must exit 2, got $rc"
echo PASS
