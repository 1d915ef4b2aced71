#!/usr/bin/env bash
# caliber history: (1) three synthetic points (copies of one real cpu run with seeded samples)
# with one planted +20% step on one row and provider: found there, by the step verdict and the
# change-point, and nothing else flagged; --fail-on-regression, every format, the page;
# (2) no false step over 20 same-code runs recorded on the cpu backend
# (tests/cli/data/history-cpu20.tar.gz, made by `caliber run add sum` 20 times on the cpu backend
# of a shared, busy 2-core machine); (3) fresh runs read end to end (structure only: a verdict
# there would depend on the machine's load); (4) bad input.
set -u
. "$(dirname "$0")/lib.sh"
cli_init "$@"
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
LIB="$SRC/tests/cli/history_lib.py"

"$CAL" run add sum --out "$T/seed" --name seed "${FAST[@]}" > "$T/seed.log" 2>&1 || fatal "seed run: $(tail -3 "$T/seed.log")"
SEED=$(ls -d "$T"/seed/seed-*)
NODE=$($PY -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["type"] == "case" and r["op"] == "add": print(r["node"]); break' "$SEED/run.log")
[ -n "$NODE" ] || fatal "no add row in the seed run"
CAND=$($PY -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["type"] == "case" and r["node"] == sys.argv[2]:
        print([p["name"] for p in r["providers"] if p["role"] == "candidate"][0]); break' "$SEED/run.log" "$NODE")

# (1) Three points, a 3x step planted at point 3 on one row's candidate: large against the cpu
# backend's calibrated run-to-run terms (share/caliber/calibration/cpu.yaml: 26% a side on a busy
# 2-core host), which compare applies to these cpu runs.
$PY "$LIB" "$SEED" "$T/three" 3 --plant "$NODE:$CAND:3:3.0" || fatal "synthetic points"
"$CAL" history "$T/three" --format json > "$T/three.json" 2> "$T/three.err"
rc=$?
[ "$rc" -eq 0 ] || check_fail "history exit $rc: $(cat "$T/three.err")"
$PY - "$T/three.json" "$NODE" "$CAND" << 'PY' || check_fail "the planted step (above)"
import json, sys
j = json.load(open(sys.argv[1]))
node, cand = sys.argv[2], sys.argv[3]
rows = j["history"]["rows"]
assert len(j["points"]["rows"]) == 3, j["points"]
moved = [r for r in rows if r["change_point"] and r["change_point"]["reported"]]
stepped = [r for r in rows if any(s["flagged"] for s in r["steps"])]
assert len(rows) >= 4, "expected every row and provider of add and sum, got %d" % len(rows)
op, rest = node.split("[", 1)
print("rows %d, moved %s, stepped %s" % (len(rows), [(r["op"], r["shape"], r["provider"]) for r in moved],
                                        [(r["op"], r["shape"], r["provider"]) for r in stepped]))
assert len(moved) == 1 and len(stepped) == 1, "exactly the planted row must move"
m = moved[0]
assert m["op"] == op and m["provider"] == cand, m
cp = m["change_point"]
assert cp["at"] == 3 and cp["verdict"] == "SLOWER" and 2.8 < cp["ratio"] < 3.2, cp
st = [s for s in m["steps"] if s["flagged"]]
assert len(st) == 1 and st[0]["at"] == 3 and 2.8 < st[0]["ratio"] < 3.2, m["steps"]
assert 2.8 < m["last/first"] < 3.2, m
PY
"$CAL" history "$T/three" --fail-on-regression 10 > "$T/gate.out" 2>&1
[ $? -eq 1 ] || check_fail "--fail-on-regression 10 must exit 1 on the planted 3x: $(tail -5 "$T/gate.out")"
grep -q "REGRESSION" "$T/gate.out" || check_fail "no REGRESSION line: $(tail -5 "$T/gate.out")"
"$CAL" history "$T/three" --fail-on-regression 250 > /dev/null 2>&1 || check_fail "--fail-on-regression 250 must pass a +200% step"
"$CAL" history "$T/three" > "$T/three.txt" 2>&1 || check_fail "history table"
grep -q "1 of [0-9]* rows moved" "$T/three.txt" || check_fail "the table does not say one row moved: $(cat "$T/three.txt")"
grep -q "SLOWER" "$T/three.txt" || check_fail "the table shows no SLOWER"
"$CAL" history "$T/three" --format md > "$T/three.md" 2> /dev/null || check_fail "history --format md"
grep -q '^| op |' "$T/three.md" || check_fail "no Markdown table"
"$CAL" history "$T/three" --format csv > "$T/three.csv" 2> /dev/null || check_fail "history --format csv"
head -1 "$T/three.csv" | grep -q '^op,dtype,shape,role,provider,point,label' || check_fail "csv header: $(head -1 "$T/three.csv")"
n=$(grep -c ',yes$' "$T/three.csv")
[ "$n" -eq 1 ] || check_fail "csv: $n change-point lines, expected 1"
"$CAL" history "$T/three" --html "$T/three.html" > /dev/null 2>&1 || check_fail "history --html"
charts=$(grep -o '<svg class="chart"' "$T/three.html" | wc -l)
[ "$charts" -eq 1 ] || check_fail "the page has $charts charts, expected one (the row that moved)"
grep -q '<script' "$T/three.html" && check_fail "the page must not carry scripts"
# Order by commit: all three points share one commit, so they pool into one point: nothing to find.
"$CAL" history "$T/three" --order commit --format json > "$T/commit.json" 2> /dev/null || check_fail "--order commit"
$PY -c 'import json,sys; j=json.load(open(sys.argv[1])); assert len(j["points"]["rows"]) == 1, j["points"]' "$T/commit.json" ||
  check_fail "--order commit: one commit must be one point"

# A point of another caliber is left out, and said so.
$PY - "$T/three" << 'PY'
import json, os, sys, shutil
d = sorted(os.listdir(sys.argv[1]))[0]
src = os.path.join(sys.argv[1], d)
dst = os.path.join(sys.argv[1], "hist-20261201-090000")
shutil.copytree(src, dst)
p = os.path.join(dst, "run_identity.json")
j = json.load(open(p)); j["level"] = "comprehensive"; j["start_time"] = "2026-12-01T09:00:00Z"
json.dump(j, open(p, "w"))
PY
"$CAL" history "$T/three" > "$T/mixed.txt" 2>&1 || check_fail "history with a foreign point"
grep -q "left out: hist-20261201-090000: not comparable" "$T/mixed.txt" || check_fail "the foreign point is not named: $(grep -i left "$T/mixed.txt")"
# By commit the foreign run shares its point (one commit) with the others: that run alone is
# left out (it once took the whole point, and the history failed with no point).
"$CAL" history "$T/three" --order commit > "$T/mixed-commit.txt" 2>&1 || check_fail "history --order commit with a foreign run: $(tail -2 "$T/mixed-commit.txt")"
grep -q "left out: .*: 1 of its 4 runs not comparable with the newest point (level: comprehensive" "$T/mixed-commit.txt" ||
  check_fail "the foreign run of the commit's point is not named: $(grep -i left "$T/mixed-commit.txt")"

# (2) 20 same-code runs on the cpu backend: no change-point, no flagged step.
mkdir -p "$T/cpu20"
tar -xzf "$SRC/tests/cli/data/history-cpu20.tar.gz" -C "$T/cpu20" || fatal "unpack the 20-run fixture"
# Bounded in CPU seconds, not wall time: a wall bound would depend on this machine's load.
read -r rc cpu < <($PY - "$T/cpu20.json" "$CAL" history "$T/cpu20" --format json << 'PY'
import resource, subprocess, sys
with open(sys.argv[1], "w") as out:
    rc = subprocess.call(sys.argv[2:], stdout=out, stderr=subprocess.DEVNULL)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(rc, "%.1f" % (u.ru_utime + u.ru_stime))
PY
)
[ "$rc" = 0 ] || check_fail "history of 20 runs: exit $rc"
$PY -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= 60 else 1)' "$cpu" || check_fail "history of 20 runs took ${cpu} CPU s (bound 60)"
echo "history of 20 runs: ${cpu} CPU s"
$PY - "$T/cpu20.json" << 'PY' || check_fail "false steps over 20 same-code runs (above)"
import json, sys
j = json.load(open(sys.argv[1]))
rows = j["history"]["rows"]
assert len(j["points"]["rows"]) == 20, len(j["points"]["rows"])
moved = [(r["op"], r["shape"], r["provider"], r["change_point"]) for r in rows
         if r["change_point"] and r["change_point"]["reported"]]
steps = [(r["op"], r["shape"], r["provider"], s) for r in rows for s in r["steps"] if s["flagged"]]
raw = sum(1 for r in rows for s in r["steps"] if s["verdict"] in ("FASTER", "SLOWER"))
print("20 runs: %d rows, %d change-points, %d flagged steps (compare alone: %d FASTER/SLOWER)"
      % (len(rows), len(moved), len(steps), raw))
assert not moved, moved
assert not steps, steps
PY

# (3) Fresh runs, end to end (no verdict asserted: it would depend on this machine's load).
for i in 1 2 3; do
  "$CAL" run sum --out "$T/fresh" --name fresh "${FAST[@]}" > /dev/null 2>&1 || check_fail "fresh run $i"
done
"$CAL" history "$T/fresh" --format json > "$T/fresh.json" 2> "$T/fresh.err" || check_fail "history of fresh runs: $(cat "$T/fresh.err")"
$PY -c 'import json,sys; j=json.load(open(sys.argv[1])); assert len(j["points"]["rows"]) == 3 and j["history"]["rows"], j' "$T/fresh.json" ||
  check_fail "fresh runs: 3 points with rows"

# (4) Bad input: exit 2, the knob named.
expect2() {
  local what=$1 needle=$2
  shift 2
  "$@" > "$T/bad.out" 2>&1
  local rc=$?
  [ "$rc" -eq 2 ] || check_fail "$what: exit $rc, expected 2"
  grep -q -- "$needle" "$T/bad.out" || check_fail "$what: the message does not name $needle: $(cat "$T/bad.out")"
}
expect2 "--order" "--order" "$CAL" history "$T/three" --order random
expect2 "--min-step" "--min-step" "$CAL" history "$T/three" --min-step 120
mkdir -p "$T/empty"
expect2 "an empty directory" "holds none" "$CAL" history "$T/empty"
expect2 "a missing directory" "not a directory" "$CAL" history "$T/missing"
cli_done
