#!/usr/bin/env bash
# caliber history --html renders in a real browser: three synthetic points (tests/cli/
# history_lib.py) with two rows planted (one +20% slower, one 15% faster from point 3), so the page
# must hold exactly two charts, each with one mark per point, no console error, and a screenshot
# kept under the build directory (test-artifacts/history.png).
set -u
. "$(dirname "$0")/lib.sh"
cli_init "$@"
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
. "$(dirname "$0")/browser_lib.sh"

"$CAL" run add --out "$T/seed" --name seed "${FAST[@]}" > "$T/seed.log" 2>&1 || fatal "seed run: $(tail -3 "$T/seed.log")"
SEED=$(ls -d "$T"/seed/seed-*)
read -r N1 N2 < <($PY -c 'import json,sys
nodes = [json.loads(l)["node"] for l in open(sys.argv[1]) if json.loads(l)["type"] == "case"]
print(nodes[0], nodes[1])' "$SEED/run.log")
$PY "$SRC/tests/cli/history_lib.py" "$SEED" "$T/h" 3 --plant "$N1:unrolled:3:1.2" || fatal "points"
# The second plant: the same points again with another row made faster (a second pass over point 3).
$PY - "$T/h" "$N2" << 'PY' || fatal "second plant"
import json, os, sys
d = sorted(os.listdir(sys.argv[1]))[-1]
p = os.path.join(sys.argv[1], d, "run.log")
rows = [json.loads(l) for l in open(p) if l.strip()]
for r in rows:
    if r.get("type") == "case" and r["node"] == sys.argv[2]:
        for q in r["providers"]:
            if q["name"] == "unrolled":
                q["samples_ms"] = [v * 0.85 for v in q["samples_ms"]]
                q["latency_ms"] *= 0.85
open(p, "w").write("\n".join(json.dumps(r) for r in rows) + "\n")
PY
"$CAL" history "$T/h" --html "$T/history.html" > "$T/history.txt" 2>&1 || check_fail "history --html: $(tail -5 "$T/history.txt")"
grep -q '<script' "$T/history.html" && check_fail "the page must not carry scripts"
grep -Eq '(src|href)="(https?:)?//' "$T/history.html" && check_fail "the page loads something from outside"
check_page history "$T/history.html" 2
marks=$(grep -o 'class="mark"' "$T/history.html" | wc -l)
[ "$marks" -eq 6 ] || check_fail "the two charts have $marks marks, expected 3 points each"
grep -q 'SLOWER' "$T/history.html" && grep -q 'FASTER' "$T/history.html" || check_fail "the page does not name both moves"
echo "screenshot: $ART/history.png"
cli_done
