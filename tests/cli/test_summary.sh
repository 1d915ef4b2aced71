#!/usr/bin/env bash
# caliber summary of a run and of a batch, in the four formats.
set -u
CAL=$1
fail() { echo "FAIL: $*"; exit 1; }
# A missing subcommand or an empty op list is a failure here, never a skip.
"$CAL" summary --help > /dev/null 2>&1 || fail "caliber summary --help fails: no summary subcommand"
"$CAL" list --names --backend cpu 2>/dev/null | grep -qx add || fail "caliber list shows no host add"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
FAST=(--backend cpu --min-samples 3 --min-time 0 --warmup 0)

"$CAL" batch add sum --devices 0 --out "$T/runs" "${FAST[@]}" > /dev/null 2>&1 || fail "batch failed"
B=$(ls -d "$T"/runs/batch-* | head -1)
"$CAL" summary "$B" > "$T/s.txt" || fail "summary exit $?"
cat "$T/s.txt"
grep -q geomean "$T/s.txt" || fail "no geomean column"
grep -q '(all)' "$T/s.txt" || fail "no overall line"
for op in add sum; do grep -q " $op " "$T/s.txt" || fail "no line for $op"; done
"$CAL" summary "$B" --format json > "$T/s.json" || fail "json exit $?"
python3 - "$T/s.json" <<'PY' || fail "json"
import json, sys
j = json.load(open(sys.argv[1]))
rows = j["summary"]["rows"]
assert any(r["op"] == "add" for r in rows), rows
assert any(r["op"] == "(all)" for r in rows), rows
for r in rows:
    if r["geomean"] is not None:
        assert r["ci95_lo"] <= r["geomean"] <= r["ci95_hi"], r
PY
"$CAL" summary "$B" --format csv | head -1 | grep -q '^source,op,dtype,rows,' || fail "csv header"
"$CAL" summary "$B" --format md | grep -q '^| source | op |' || fail "markdown header"
R=$(ls -d "$B"/add-* | head -1)
"$CAL" summary "$R" | grep -q ' add ' || fail "summary of one run"
"$CAL" summary "$T/nothing-here" > /dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "a missing directory must exit 2, got $rc"
"$CAL" summary "$B" --format xml > /dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "a bad format must exit 2, got $rc"
echo PASS
