#!/usr/bin/env bash
# A candidate that computes a wrong answer is a failed case, never a measurement: the run exits 1,
# the row says status failed, accuracy false, carries the error, and reports no speedup.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init "$@"
use_test_ops  # test_fail comes from the test op library (tests/ops_lib)

# check_failed_run OUT LABEL: the only run under OUT holds failed test_fail rows and nothing else.
check_failed_run() {
  local r
  r=$(only_run_dir "$1") || return
  python3 - "$r/run.log" << 'PY' || check_fail "$2: run.log (above)"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
cases = [r for r in rows if r["type"] == "case"]
assert cases, "no case row"
for c in cases:
    assert c["op"] == "test_fail", c["op"]
    assert c["status"] == "failed", c["node"] + ": status " + c["status"]
    assert c["accuracy"] is False, c["node"] + ": accuracy %r" % c["accuracy"]
    assert c.get("error"), c["node"] + ": no error text"
    assert c.get("speedup") is None, c["node"] + ": speedup %r on a failed case" % c.get("speedup")
    assert c.get("latency_ms") is None, c["node"] + ": a candidate latency on a failed case"
    cand = [p for p in c.get("providers", []) if p.get("role") == "candidate"]
    assert all(p.get("latency_ms") is None for p in cand), c["node"] + ": candidate timed"
foot = rows[-1]
assert foot["type"] == "footer", "no footer"
assert foot["failed"] == len(cases) and foot["ok"] == 0, foot
PY
}

# With a shape file of its own, so the failure path is tested whatever the default shapes hold.
printf 'families:\n  test: [[4096]]\n  pointwise: [[4096]]\nops:\n  test_fail: {family: test}\n  add: {family: pointwise}\n' \
  > "$T/test-shapes.yaml"
"$CAL" run test_fail "${FAST[@]}" --shapes "$T/test-shapes.yaml" --out "$T/own" > "$T/own.out" 2>&1
rc=$?
cat "$T/own.out"
[ "$rc" -eq 1 ] || check_fail "test_fail with its own shapes: exit $rc, expected 1"
grep -Eq '^test_fail +f32 .*failed' "$T/own.out" || check_fail "the table shows no failed test_fail line"
check_failed_run "$T/own" "test_fail with its own shapes"

# As a user types it: the default shapes.
"$CAL" run test_fail "${FAST[@]}" --out "$T/default" > "$T/default.out" 2>&1
rc=$?
cat "$T/default.out"
[ "$rc" -eq 1 ] || check_fail "caliber run test_fail (test op library): exit $rc, expected 1"
check_failed_run "$T/default" "test_fail with the default shapes"

# A failed case among good ones: the good ones are still measured, the exit code is still 1.
"$CAL" run add test_fail "${FAST[@]}" --shapes "$T/test-shapes.yaml" --out "$T/mixed" > "$T/mixed.out" 2>&1
rc=$?
[ "$rc" -eq 1 ] || check_fail "add + test_fail: exit $rc, expected 1"
r=$(only_run_dir "$T/mixed")
python3 - "$r/run.log" << 'PY' || check_fail "add + test_fail: run.log (above)"
import json, sys
cases = [json.loads(l) for l in open(sys.argv[1]) if '"case"' in l]
by_op = {}
for c in cases:
    by_op.setdefault(c["op"], set()).add(c["status"])
assert by_op == {"add": {"ok"}, "test_fail": {"failed"}}, by_op
PY

cli_done
