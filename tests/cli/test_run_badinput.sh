#!/usr/bin/env bash
# Every bad value given to caliber run is refused before anything is written: exit 2, one line on
# stderr naming the knob and the value (and what is allowed), and the --out directory never created.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init "$@"

O=(--out "$T/refused-out")

expect_refused "--level bogus" "--level bogus core comprehensive" -- \
  "$CAL" run add "${FAST[@]}" "${O[@]}" --level bogus
expect_refused "BENCH_LEVEL=bogus" "BENCH_LEVEL bogus core comprehensive" -- \
  env BENCH_LEVEL=bogus "$CAL" run add "${FAST[@]}" "${O[@]}"
expect_refused "unknown op" "no_such_op add" -- \
  "$CAL" run no_such_op "${FAST[@]}" "${O[@]}"
expect_refused "OP=unknown" "no_such_op" -- \
  env OP=no_such_op "$CAL" run "${FAST[@]}" "${O[@]}"
expect_refused "--dtypes f8" "--dtypes f8" -- \
  "$CAL" run add "${FAST[@]}" "${O[@]}" --dtypes f8
expect_refused "--dtypes that no selected op has" "--dtypes c64" -- \
  "$CAL" run add "${FAST[@]}" "${O[@]}" --dtypes c64
expect_refused "--shapes /nonexistent" "/nonexistent shape" -- \
  "$CAL" run add "${FAST[@]}" "${O[@]}" --shapes /nonexistent
printf 'families:\n  pointwise: [[1, 2\nops:\n  add: {family: pointwise}\n' > "$T/malformed.yaml"
expect_refused "malformed shape YAML" "malformed.yaml" -- \
  "$CAL" run add "${FAST[@]}" "${O[@]}" --shapes "$T/malformed.yaml"
printf 'families:\n  pointwise: [[-5]]\nops:\n  add: {family: pointwise}\n' > "$T/negative.yaml"
expect_refused "a negative dimension in the shape file" "negative.yaml" -- \
  "$CAL" run add "${FAST[@]}" "${O[@]}" --shapes "$T/negative.yaml"
# ab's internal switch takes on or off exactly: "of" was once read as on.
expect_refused "--paired-crossover of" "--paired-crossover of on off" -- \
  "$CAL" run add "${FAST[@]}" "${O[@]}" --paired-crossover of
expect_refused "--repeat 0" "--repeat 0" -- \
  "$CAL" run add "${FAST[@]}" "${O[@]}" --repeat 0
expect_refused "ZL_DIRECT_REPEAT=abc" "ZL_DIRECT_REPEAT abc" -- \
  env ZL_DIRECT_REPEAT=abc "$CAL" run add "${FAST[@]}" "${O[@]}"
expect_refused "CALIBER_CHECK_THREADS=0" "CALIBER_CHECK_THREADS 0 256" -- \
  env CALIBER_CHECK_THREADS=0 "$CAL" run add "${FAST[@]}" "${O[@]}"
# The message lists the valid names and aliases, so the caller can correct the spelling.
expect_refused "--backend bogus" "--backend bogus cpu cuda rocm musa ascend host nvidia" -- \
  "$CAL" run add "${STOP[@]}" "${O[@]}" --backend bogus
expect_refused "ZL_BACKEND=bogus" "ZL_BACKEND bogus cpu" -- \
  env ZL_BACKEND=bogus "$CAL" run add "${STOP[@]}" "${O[@]}"
# The device list in the message is how the caller finds a valid id.
cpu_name=$("$CAL" devices --backend cpu --json | python3 -c '
import json, sys
print(json.load(sys.stdin)["backends"][0]["devices"][0]["name"])') || fatal "caliber devices --backend cpu --json"
expect_refused "--devices 7 on cpu" "--devices 7 0" -- \
  "$CAL" run add "${FAST[@]}" "${O[@]}" --devices 7
grep -qF "$cpu_name" "$T/refused.stderr" || check_fail "--devices 7: the message does not list the cpu device '$cpu_name'"
expect_refused "--tune replay without a source" "--tune replay --replay-from" -- \
  "$CAL" run add "${FAST[@]}" "${O[@]}" --tune replay
expect_refused "--node that matches no case" "--node add[f32-999]" -- \
  "$CAL" run "${FAST[@]}" "${O[@]}" --node 'add[f32-999]'
expect_refused "TEST_NODE of an unknown op" "no_such_op" -- \
  env TEST_NODE='no_such_op[f32-8]' "$CAL" run "${FAST[@]}" "${O[@]}"
expect_refused "--node with ops" "--node" -- \
  "$CAL" run sum "${FAST[@]}" "${O[@]}" --node 'add[f32-65536]'
expect_refused "--op-file that does not exist" "--op-file $T/no-ops.txt" -- \
  "$CAL" run "${FAST[@]}" "${O[@]}" --op-file "$T/no-ops.txt"
# cpu has no graph capture: asking for the graph timer there is a contradiction, not a preference.
expect_refused "--timer graph on cpu" "--timer graph cpu" -- \
  "$CAL" run add "${FAST[@]}" "${O[@]}" --timer graph
# The knob says what it wants: a run directory that holds a tune.db.
expect_refused "--replay-from a directory that does not exist" "--replay-from $T/no-such-run" -- \
  "$CAL" run add "${FAST[@]}" "${O[@]}" --replay-from "$T/no-such-run"
REFUSED_LINES=any expect_refused "an unknown flag" "--no-such-flag" -- \
  "$CAL" run add "${FAST[@]}" "${O[@]}" --no-such-flag
# `--out=$UNSET` is an empty value, never a flag that takes the next argument for its value.
( cd "$T" && expect_refused "--out= before another flag" "--out empty" -- \
  "$CAL" run add "${FAST[@]}" --out= --quiet )
[ -e "$T/--quiet" ] && check_fail "--out= --quiet wrote into ./--quiet"
expect_refused "--name= before another flag" "--name empty" -- \
  "$CAL" run add "${FAST[@]}" "${O[@]}" --name= --quiet
expect_refused "export --format=" "--format empty" -- "$CAL" export "$T" --format= --out "$T/x.csv"

long_name=$(printf 'a%.0s' $(seq 1 200))
expect_refused "--capture-deny with a 200-character name" "--capture-deny 128" -- \
  "$CAL" run add "${FAST[@]}" "${O[@]}" --capture-deny "add,$long_name"
# A misspelt op in --capture-deny would leave the op it meant to be captured.
expect_refused "--capture-deny of no op" "--capture-deny softmx add softmax" -- \
  "$CAL" run add "${FAST[@]}" "${O[@]}" --capture-deny "add,softmx"
"$CAL" run add "${FAST[@]}" --out "$T/deny-ok" --capture-deny softmax > /dev/null 2>&1 ||
  check_fail "--capture-deny of an op of the corpus (not among the run's ops) refused"

# A shape file's shapes for an op by name must have the op's dimensions, as --shape must.
printf 'ops:\n  mm: [[1, 2]]\n' > "$T/bad-arity.yaml"
expect_refused "a shape file's mm shape of 2 dims" "--shapes mm MxNxK" -- \
  "$CAL" run mm "${FAST[@]}" "${O[@]}" --shapes "$T/bad-arity.yaml"

# `--profile 5`: its value is optional, so 5 is read as an op; the refusal says how to write it.
REFUSED_LINES=any expect_refused "--profile 5 (a separate count)" "--profile=5" -- \
  "$CAL" run --profile 5 add "${FAST[@]}" "${O[@]}"

# An empty value given as its own argument is refused, never read as "no value".
REFUSED_LINES=any expect_refused "identity --diff ''" "--diff empty" -- "$CAL" identity "$T" --diff ''
REFUSED_LINES=any expect_refused "history --html ''" "--html empty" -- "$CAL" history "$T" --html ''

# --out on a symbolic link to nothing: a refusal naming it, not "cannot create: File exists".
ln -s "$T/nowhere" "$T/dangling"
expect_refused "--out a dangling link" "--out dangling" -- "$CAL" run add "${FAST[@]}" --out "$T/dangling"

# The hand-off's status variable names only the file a caliber that handed off made: any other
# path (a stale or hostile environment) is never appended to.
echo keep > "$T/victim.txt"
CALIBER_PY_HANDOFF_STATUS="$T/victim.txt" "$CAL" list --backend cpu > /dev/null 2>&1
[ "$(cat "$T/victim.txt")" = keep ] || check_fail "CALIBER_PY_HANDOFF_STATUS appended to $T/victim.txt"

cli_done
