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

# --- A regression gate that judged nothing is no pass: no common case, or every case of B
# failed, exits 1 under --fail-on-regression (and 0 without it); one case ok in A and failed in
# B fails the gate by itself and is named.
"$CAL" run sum --out "$T" --name s "${FAST[@]}" > /dev/null 2>&1 || fail "run s"
S=$(ls -d "$T"/s-*)
"$CAL" compare "$A" "$S" > /dev/null 2>&1 || fail "compare without a gate of disjoint runs must exit 0"
"$CAL" compare "$A" "$S" --fail-on-regression 0 > "$T/g1.txt" 2>&1; rc=$?
[ "$rc" -eq 1 ] || fail "a gate over no common case exit $rc, expected 1: $(tail -3 "$T/g1.txt")"
grep -q 'nothing was compared, so --fail-on-regression fails' "$T/g1.txt" || fail "no gate note: $(cat "$T/g1.txt")"
cp -r "$Bd" "$T/broken"
python3 - "$T/broken/run.log" << 'PY'
import json, sys
rows = [json.loads(x) for x in open(sys.argv[1])]
cases = [r for r in rows if r.get("type") == "case"]
for r in cases[:1]:  # the first case only
    r["status"] = "failed"
    r["error"] = "planted"
with open(sys.argv[1], "w") as f:
    f.writelines(json.dumps(r) + "\n" for r in rows)
PY
"$CAL" compare "$A" "$T/broken" --fail-on-regression 1000 > "$T/g2.txt" 2>&1; rc=$?
[ "$rc" -eq 1 ] || fail "a case failed in B under a gate exit $rc, expected 1: $(tail -3 "$T/g2.txt")"
grep -q 'REGRESSION: add .*: ok in A, failed in B' "$T/g2.txt" || fail "the failed case is not named: $(cat "$T/g2.txt")"
"$CAL" compare "$A" "$T/broken" > "$T/g3.txt" 2>&1 || fail "without a gate a failed case must not fail compare"
grep -q ': ok in A, failed in B' "$T/g3.txt" || fail "without a gate the failed case is not shown"
"$CAL" history "$A" "$T/broken" --fail-on-regression 1000 > "$T/g4.txt" 2>&1; rc=$?
[ "$rc" -eq 1 ] || fail "history: a case failed in the newest point under a gate exit $rc: $(tail -3 "$T/g4.txt")"
grep -q 'failed in the newest' "$T/g4.txt" || fail "history does not name the failed case: $(cat "$T/g4.txt")"
"$CAL" history "$A" "$S" --fail-on-regression 1000 > "$T/g5.txt" 2>&1; rc=$?
[ "$rc" -eq 1 ] || fail "history: a newest point with nothing to judge under a gate exit $rc"
echo PASS
