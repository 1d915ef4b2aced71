#!/usr/bin/env bash
# What runs: one case by node id (--node, TEST_NODE), one op by name as a node, ops from OP (comma
# or space list), from --op-file / OP_FILE, and dtypes through their torch spellings.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init "$@"

# nodes_of OUT: the node ids of the case rows of the only run under OUT, sorted.
nodes_of() {
  local r
  r=$(only_run_dir "$1") || exit 1
  python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("\n".join(sorted(r["node"] for r in rows if r["type"] == "case")))' "$r/run.log"
}
ops_of() { nodes_of "$1" | sed 's/\[.*//' | sort -u | tr '\n' ' ' | sed 's/ $//'; }
# selection LABEL OUT COMMAND...: run COMMAND (with --out OUT appended) and require exit 0.
selection() {
  local label=$1 out=$2
  shift 2
  "$@" "${FAST[@]}" --out "$out" > "$T/last.out" 2>&1 || {
    check_fail "$label: exit $?: $(tail -3 "$T/last.out")"
    return 1
  }
}

node=$("$CAL" list --backend cpu --cases sum | tail -1)
[ -n "$node" ] || fatal "caliber list --cases sum lists nothing"

selection "--node" "$T/node" "$CAL" run --node "$node" &&
  { [ "$(nodes_of "$T/node")" = "$node" ] || check_fail "--node $node ran: $(nodes_of "$T/node" | tr '\n' ' ')"; }
selection "TEST_NODE" "$T/test-node" env TEST_NODE="$node" "$CAL" run &&
  { [ "$(nodes_of "$T/test-node")" = "$node" ] || check_fail "TEST_NODE=$node ran: $(nodes_of "$T/test-node" | tr '\n' ' ')"; }
# A bare op name as the node runs that op's cases, and only those.
selection "--node sum" "$T/node-op" "$CAL" run --node sum &&
  { [ "$(nodes_of "$T/node-op")" = "$("$CAL" list --backend cpu --cases sum | sort)" ] || check_fail "--node sum ran: $(nodes_of "$T/node-op" | tr '\n' ' ')"; }

selection "OP=add,sum" "$T/op-env" env OP=add,sum "$CAL" run &&
  { [ "$(ops_of "$T/op-env")" = "add sum" ] || check_fail "OP=add,sum ran ops: $(ops_of "$T/op-env")"; }
selection "OP='add sum'" "$T/op-env-space" env OP='add sum' "$CAL" run &&
  { [ "$(ops_of "$T/op-env-space")" = "add sum" ] || check_fail "OP='add sum' ran ops: $(ops_of "$T/op-env-space")"; }
selection "positional ops" "$T/op-pos" "$CAL" run softmax add &&
  { [ "$(ops_of "$T/op-pos")" = "add softmax" ] || check_fail "run softmax add ran ops: $(ops_of "$T/op-pos")"; }
# The positional list beats OP from the environment.
selection "positional over OP" "$T/op-pos-env" env OP=add "$CAL" run sum &&
  { [ "$(ops_of "$T/op-pos-env")" = "sum" ] || check_fail "run sum under OP=add ran ops: $(ops_of "$T/op-pos-env")"; }

printf '# ops for this test\nsoftmax\n\n  sum  # trailing comment\n' > "$T/ops.txt"
selection "--op-file" "$T/op-file" "$CAL" run --op-file "$T/ops.txt" &&
  { [ "$(ops_of "$T/op-file")" = "softmax sum" ] || check_fail "--op-file ran ops: $(ops_of "$T/op-file")"; }
selection "OP_FILE" "$T/op-file-env" env OP_FILE="$T/ops.txt" "$CAL" run &&
  { [ "$(ops_of "$T/op-file-env")" = "softmax sum" ] || check_fail "OP_FILE ran ops: $(ops_of "$T/op-file-env")"; }

# dtypes: a torch spelling selects ours, and only that one runs.
selection "--dtypes float64" "$T/dt" "$CAL" run add --dtypes float64 && {
  got=$(nodes_of "$T/dt" | sed 's/^add\[\([a-z0-9]*\)-.*/\1/' | sort -u | tr '\n' ' ')
  [ "$got" = "f64 " ] || check_fail "--dtypes float64 ran dtypes: $got"
  r=$(only_run_dir "$T/dt")
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["dtypes"] == ["f64"], j["dtypes"]' \
    "$r/run_identity.json" || check_fail "identity does not record dtypes [f64]"
}

# Every node id a run writes is one caliber list --cases shows, so it can be fed back to --node.
"$CAL" list --backend cpu --cases > "$T/all-cases.txt"
for d in node test-node node-op op-env op-file dt; do
  nodes_of "$T/$d" 2> /dev/null | while read -r n; do
    grep -qxF "$n" "$T/all-cases.txt" || echo "$n"
  done
done > "$T/unknown-nodes.txt"
[ -s "$T/unknown-nodes.txt" ] && check_fail "rows with node ids that list --cases does not show: $(head -3 "$T/unknown-nodes.txt")"

cli_done
