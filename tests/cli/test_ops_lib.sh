#!/usr/bin/env bash
# Several op libraries: --ops-lib repeated or as a comma list, CALIBER_OPS_LIB, each op's source in
# caliber list, and a name registered twice (by a library and the built-in corpus, or by two
# libraries) refused with exit 2 and both sources named, never dropped silently.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init "$@"
A=$(test_ops_lib) || exit 1
B=${CALIBER_TEST_SECOND_LIB:-$(dirname "$CAL")/tests/libcaliber_test_second.so}
[ -f "$B" ] || fatal "the second test op library $B is not built"
unset CALIBER_TEST_SECOND_NAME

# has_ops LABEL FILE OP...: FILE (list --names output) names every OP.
has_ops() {
  local label=$1 file=$2 op
  shift 2
  for op in "$@"; do
    grep -qx "$op" "$file" || check_fail "$label: $op not listed: $(tr '\n' ' ' < "$file")"
  done
}

# Repeated flag, comma list and environment all load both libraries, in order.
"$CAL" list --backend cpu --names --ops-lib "$A" --ops-lib "$B" > "$T/rep.txt" 2>&1 ||
  check_fail "--ops-lib A --ops-lib B: exit $?: $(cat "$T/rep.txt")"
has_ops "--ops-lib A --ops-lib B" "$T/rep.txt" add mm test_fail test_hang test_scale
"$CAL" list --backend cpu --names --ops-lib "$A,$B" > "$T/comma.txt" 2>&1 ||
  check_fail "--ops-lib A,B: exit $?: $(cat "$T/comma.txt")"
cmp -s "$T/rep.txt" "$T/comma.txt" || check_fail "--ops-lib A,B lists other ops than the flag repeated"
CALIBER_OPS_LIB="$A,$B" "$CAL" list --backend cpu --names > "$T/env.txt" 2>&1 ||
  check_fail "CALIBER_OPS_LIB=A,B: exit $?: $(cat "$T/env.txt")"
cmp -s "$T/rep.txt" "$T/env.txt" || check_fail "CALIBER_OPS_LIB=A,B lists other ops than --ops-lib"
# The flag wins over the environment (only B loaded: no test_fail).
CALIBER_OPS_LIB="$A" "$CAL" list --backend cpu --names --ops-lib "$B" > "$T/prec.txt" 2>&1 ||
  check_fail "flag over env: exit $?"
has_ops "flag over env" "$T/prec.txt" test_scale
grep -qx test_fail "$T/prec.txt" && check_fail "--ops-lib B with CALIBER_OPS_LIB=A loaded A too"
# A positional op after the flag stays an op, not a second library.
"$CAL" list --backend cpu --names --ops-lib "$B" test_scale > "$T/pos.txt" 2>&1 ||
  check_fail "--ops-lib B test_scale: exit $?: $(cat "$T/pos.txt")"
[ "$(cat "$T/pos.txt")" = test_scale ] || check_fail "--ops-lib B test_scale lists: $(cat "$T/pos.txt")"
# The same library twice is loaded once.
"$CAL" list --backend cpu --names --ops-lib "$A" --ops-lib "$A" > /dev/null 2>&1 ||
  check_fail "the same library twice: exit $?"

# Each op's source: built-in or the library's path, in the table and in JSON.
"$CAL" list --backend cpu --ops-lib "$A" --ops-lib "$B" > "$T/table.txt" 2>&1 || check_fail "list table exit $?"
grep -Eq "^add +pointwise .* built-in$" "$T/table.txt" || check_fail "add's source is not built-in: $(grep '^add ' "$T/table.txt")"
grep -Eq "^test_fail +test .* $A$" "$T/table.txt" || check_fail "test_fail's source is not $A: $(grep '^test_fail ' "$T/table.txt")"
grep -Eq "^test_scale +pointwise .* $B$" "$T/table.txt" || check_fail "test_scale's source is not $B"
"$CAL" list --backend cpu --json --ops-lib "$A,$B" > "$T/list.json" 2>&1 || check_fail "list --json exit $?"
py 'import json, sys
j = json.load(open(sys.argv[1]))
src = {o["op"]: o["source"] for o in j["ops"]}
assert src["mm"] == "built-in", src["mm"]
assert src["test_abort"] == sys.argv[2], src["test_abort"]
assert src["test_scale"] == sys.argv[3], src["test_scale"]' "$T/list.json" "$A" "$B" || check_fail "list --json sources (above)"

# Collisions: with the built-in corpus, and between two libraries.
CALIBER_TEST_SECOND_NAME=add expect_refused "a library op named add" \
  "add built-in $B already" -- "$CAL" run --ops-lib "$B" "${FAST[@]}" --out "$T/refused-out"
CALIBER_TEST_SECOND_NAME=test_fail expect_refused "two libraries registering test_fail" \
  "test_fail $A $B already" -- "$CAL" run --ops-lib "$A" --ops-lib "$B" "${FAST[@]}" --out "$T/refused-out"
cp "$A" "$T/copy-of-test-ops.so"
expect_refused "a copy of a library beside it" "test_abort $A $T/copy-of-test-ops.so" -- \
  "$CAL" list --backend cpu --ops-lib "$A,$T/copy-of-test-ops.so"
# Bad paths.
expect_refused "a missing library" "--ops-lib $T/nope.so exist" -- \
  "$CAL" run --ops-lib "$T/nope.so" "${FAST[@]}" --out "$T/refused-out"
expect_refused "an empty entry" "--ops-lib CALIBER_OPS_LIB empty" -- \
  "$CAL" run --ops-lib "$A,,$B" "${FAST[@]}" --out "$T/refused-out"
echo "not a shared object" > "$T/bad.so"
expect_refused "a file that is no library" "--ops-lib $T/bad.so loaded" -- \
  "$CAL" run --ops-lib "$T/bad.so" "${FAST[@]}" --out "$T/refused-out"

# A shared object that registers nothing is a mistake, not an empty library (the GNU C library's
# libm stands in for a user's library built without CALIBER_REGISTER_OP).
libm_path=$(ldd "$CAL" | awk '$1 ~ /^libm\.so/ { print $3; exit }')
if [ -f "$libm_path" ]; then
  expect_refused "a library that registers no op" "--ops-lib $libm_path registers no op" -- \
    "$CAL" run --ops-lib "$libm_path" "${FAST[@]}" --out "$T/refused-out"
else
  check_fail "ldd $CAL names no libm to load as a library without ops"
fi

# A run over ops of both libraries and the built-in corpus: every row ok.
"$CAL" run add test_scale test_switch --ops-lib "$A" --ops-lib "$B" "${FAST[@]}" \
  --out "$T/runs" > "$T/run.out" 2>&1 || check_fail "run over two libraries: exit $?: $(tail -5 "$T/run.out")"
r=$(only_run_dir "$T/runs")
py 'import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
cases = [r for r in rows if r["type"] == "case"]
assert {c["op"] for c in cases} == {"add", "test_scale", "test_switch"}, {c["op"] for c in cases}
bad = [c["node"] + " " + c["status"] for c in cases if c["status"] != "ok"]
assert not bad, bad' "$r/run.log" || check_fail "run.log of the run over two libraries (above)"
# The run's identity names the libraries its ops came from (test_switch: A, test_scale: B).
py 'import json, sys
j = json.load(open(sys.argv[1]))
assert sorted(j["ops_libs"]) == sorted(sys.argv[2:]), j.get("ops_libs")' "$r/run_identity.json" "$A" "$B" ||
  check_fail "run_identity.json ops_libs (above)"

cli_done
