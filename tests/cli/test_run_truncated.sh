#!/usr/bin/env bash
# A run killed while writing leaves a run.log whose last line is cut: it is still read, the complete
# rows count and the cut one is ignored (and said so), never a parse failure.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init "$@"

"$CAL" run add sum "${FAST[@]}" --out "$T/out" > "$T/run.out" 2>&1 || fatal "run exit $?: $(tail -3 "$T/run.out")"
R=$(only_run_dir "$T/out")
L="$R/run.log"
total=$(grep -c '"type": *"case"' "$L")
[ "$total" -ge 3 ] || fatal "only $total case rows to cut from"

# Drop the footer and cut the last case row in half, as a kill in the middle of a write would.
python3 - "$L" << 'PY' || fatal "could not cut run.log"
import sys
path = sys.argv[1]
lines = open(path).read().splitlines()
assert '"footer"' in lines[-1]
lines.pop()
last = lines.pop()
with open(path, "w") as f:
    f.write("\n".join(lines) + "\n" + last[: len(last) // 2])
PY
complete=$((total - 1))

# The intact rows still read as JSON lines one by one (the file is JSON Lines, not one document).
head -n -1 "$L" | python3 -c '
import json, sys
n = sum(1 for l in sys.stdin if json.loads(l)["type"] == "case")
assert n == int(sys.argv[1]), n' "$complete" || check_fail "the complete lines are not JSON"

"$CAL" summary "$R" > "$T/s.txt" 2>&1
rc=$?
cat "$T/s.txt"
[ "$rc" -eq 0 ] || check_fail "summary of a truncated run exits $rc"
grep -qi "cut" "$T/s.txt" || check_fail "summary does not say that the last line was cut"

"$CAL" summary "$R" --format json > "$T/s.json" 2> "$T/s.err" || check_fail "summary --format json exit $?: $(cat "$T/s.err")"
python3 - "$T/s.json" "$complete" << 'PY' || check_fail "summary json (above)"
import json, sys
j = json.load(open(sys.argv[1]))
want = int(sys.argv[2])
rows = j["summary"]["rows"]
overall = [r for r in rows if r["op"] == "(all)"]
assert len(overall) == 1, overall
assert overall[0]["rows"] == want, "summary counts %r rows, the log holds %d complete ones" % (
    overall[0]["rows"], want)
per_op = sum(r["rows"] for r in rows if r["op"] != "(all)")
assert per_op == want, "per-op rows add up to %d, expected %d" % (per_op, want)
PY

cli_done
