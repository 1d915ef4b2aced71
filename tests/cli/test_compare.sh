#!/usr/bin/env bash
# caliber compare (and summary --ab, identity): pairing two runs, a caliber mismatch refused with
# exit 2 unless --allow-mismatch.
set -u
CAL=$1
fail() { echo "FAIL: $*"; exit 1; }
# A missing subcommand or an empty op list is a failure here, never a skip.
"$CAL" compare --help > /dev/null 2>&1 || fail "caliber compare --help fails: no compare subcommand"
"$CAL" list --names --backend cpu 2>/dev/null | grep -qx add || fail "caliber list shows no host add"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
FAST=(--backend cpu --min-samples 20 --min-time 0 --warmup 0)

"$CAL" run add --out "$T" --name a "${FAST[@]}" > /dev/null 2>&1 || fail "run a"
"$CAL" run add --out "$T" --name b "${FAST[@]}" > /dev/null 2>&1 || fail "run b"
"$CAL" run add --out "$T" --name c --level comprehensive "${FAST[@]}" > /dev/null 2>&1 || fail "run c"
A=$(ls -d "$T"/a-*); Bd=$(ls -d "$T"/b-*); C=$(ls -d "$T"/c-*)

"$CAL" compare "$A" "$Bd" > "$T/ab.txt" 2> "$T/ab.err"; rc=$?
cat "$T/ab.txt"
[ "$rc" -eq 0 ] || fail "compare of two like runs exit $rc"
grep -q 'ratio' "$T/ab.txt" || fail "no ratio column"
grep -Eq 'SAME|UNSURE|FASTER|SLOWER' "$T/ab.txt" || fail "no verdicts"
grep -q 'only in A' "$T/ab.txt" || fail "no unpaired counts"
grep -q 'CALIBER MISMATCH' "$T/ab.txt" && fail "like runs reported as a mismatch"

"$CAL" summary --ab "$A" "$Bd" > "$T/ab2.txt" 2>/dev/null; rc=$?
[ "$rc" -eq 0 ] || fail "summary --ab exit $rc"
grep -q 'ratio' "$T/ab2.txt" || fail "summary --ab prints no compare"

"$CAL" compare "$A" "$C" > "$T/ac.txt" 2> "$T/ac.err"; rc=$?
cat "$T/ac.err"
[ "$rc" -eq 2 ] || fail "a level mismatch must exit 2, got $rc"
grep -q 'CALIBER MISMATCH: level: core vs comprehensive' "$T/ac.err" || fail "mismatch not printed"
grep -q 'CALIBER MISMATCH: level: core vs comprehensive' "$T/ac.txt" || fail "mismatch not in the report"
"$CAL" compare "$A" "$C" --allow-mismatch > "$T/ac2.txt" 2>/dev/null; rc=$?
[ "$rc" -eq 0 ] || fail "--allow-mismatch exit $rc"
grep -q 'CALIBER MISMATCH' "$T/ac2.txt" || fail "the mismatch must still be shown"

"$CAL" compare "$A" "$Bd" --format json > "$T/ab.json" 2>/dev/null || fail "json"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["pairs"]["rows"], j' "$T/ab.json" \
  || fail "json pairs"

"$CAL" identity "$A" > "$T/id.txt" || fail "identity exit $?"
grep -q 'level' "$T/id.txt" && grep -q 'core' "$T/id.txt" || fail "identity shows no level"
"$CAL" identity "$A" --diff "$C" > "$T/idd.txt"; rc=$?
[ "$rc" -eq 0 ] || fail "identity --diff exit $rc"
grep -q 'CALIBER MISMATCH: level: core vs comprehensive' "$T/idd.txt" || fail "identity --diff"
echo PASS
