#!/usr/bin/env bash
# Sweeps from the command line: --shape (repeatable, or a comma list) replaces the shape file's
# shapes for the selected ops, and --node takes * and ? (mm[f64-*], *[f32-*]). A shape that does
# not fit an op, a malformed shape and a glob that matches nothing are refused (exit 2, nothing
# written).
set -u
. "$(dirname "$0")/lib.sh"
cli_init "$@"

nodes() {
  python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(" ".join(r["node"] for r in rows if r["type"] == "case"))' "$1/run.log"
}

# A comma list and a repeated flag give the same shapes.
"$CAL" run add --shape 64x32,7 --shape 64x32 --dtypes f32 --out "$T/s1" "${FAST[@]}" \
  > "$T/s1.log" 2>&1 || fatal "run with --shape: $(tail -3 "$T/s1.log")"
got=$(nodes "$(only_run_dir "$T/s1")")
[ "$got" = "add[f32-64x32] add[f32-7]" ] || check_fail "--shape 64x32,7 --shape 64x32 ran '$got'"

expect_refused "--shape that does not fit mm" "--shape 64x32 mm MxNxK" -- \
  "$CAL" run add mm --shape 64x32 --out "$T/refused-out" "${FAST[@]}"
"$CAL" run add mm --shape 1x48x40x24 --shape 16x8x4 --dtypes f32 --out "$T/s2" "${FAST[@]}" \
  > "$T/s2.log" 2>&1 || fatal "run with --shape x2: $(tail -3 "$T/s2.log")"
R=$(only_run_dir "$T/s2")
got=$(nodes "$R")
want="add[f32-1x48x40x24] add[f32-16x8x4] mm[f32-M48-N40-K24] mm[f32-M16-N8-K4]"
[ "$got" = "$want" ] || check_fail "--shape ran '$got', expected '$want'"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["shapes"] == [[1,48,40,24],[16,8,4]], j["shapes"]' \
  "$R/run_identity.json" || check_fail "run_identity.json does not record the shapes"
grep -q '48' "$R/shapes.yaml" || check_fail "shapes.yaml does not archive the --shape shapes"

"$CAL" run --node 'mm[f64-*]' --out "$T/g" "${FAST[@]}" > "$T/g.log" 2>&1 || fatal "glob run: $(tail -3 "$T/g.log")"
got=$(nodes "$(only_run_dir "$T/g")")
want=$("$CAL" list --backend cpu --cases mm | grep -F 'mm[f64-' | tr '\n' ' ' | sed 's/ $//')
[ -n "$want" ] && [ "$got" = "$want" ] || check_fail "--node 'mm[f64-*]' ran '$got', expected '$want'"
got=$("$CAL" list --backend cpu --cases --node '*[f32-*]' | sed 's/\[.*//' | sort -u | tr '\n' ' ')
all=$("$CAL" list --backend cpu --names | sort | tr '\n' ' ')
[ "$got" = "$all" ] || check_fail "--node '*[f32-*]' lists ops '$got', expected '$all'"
"$CAL" list --backend cpu --cases --node '*[f32-*]' | grep -vq 'f32' && check_fail "--node '*[f32-*]' lists another dtype"

expect_refused "malformed --shape" "--shape 4096xa" -- \
  "$CAL" run add --shape 4096xa --out "$T/refused-out" "${FAST[@]}"
expect_refused "a glob that matches no case" "--node mm[bf16-*]" -- \
  "$CAL" run --node 'mm[bf16-*]' --out "$T/refused-out" "${FAST[@]}"
expect_refused "a glob that matches no op" "--node zz*" -- \
  "$CAL" run --node 'zz*' --out "$T/refused-out" "${FAST[@]}"
cli_done
