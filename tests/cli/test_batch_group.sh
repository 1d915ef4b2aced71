#!/usr/bin/env bash
# caliber batch --ops-per-child N: up to N ops share one child (one run directory, group-FIRST-N),
# so a child's start-up is paid once a group. A group vouches only for the ops its finished run
# shows ok or skipped; an op with a failed case runs again alone, and after a crash every op of the
# group does, so each not-ok status comes from the op's own child. ops_status.csv's `run` column
# says where each op's rows are, and summary/export count every row once. batch.json keeps N for
# --resume. Bad values, and N > 1 under Slurm, are refused (exit 2, nothing written).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init "$@"
use_test_ops test_fail test_abort

col() {  # col BATCH OP COLUMN: a column of ops_status.csv by its header name
  py 'import csv, sys
rows = {r["op"]: r for r in csv.DictReader(open(sys.argv[1] + "/ops_status.csv"))}
print(rows.get(sys.argv[2], {}).get(sys.argv[3], ""))' "$1" "$2" "$3"
}
children() { grep -c '^\[batch\]' "$1"; }

# 1. Three ok ops, one child: one group run holding all three, each op's rows its own.
"$CAL" batch add sum softmax --devices 0 --ops-per-child 3 --out "$T/g1" "${FAST[@]}" \
  > "$T/g1.txt" 2>&1
rc=$?
[ "$rc" -eq 0 ] || check_fail "1: exit $rc, expected 0: $(tail -c 400 "$T/g1.txt")"
B=$(only_run_dir "$T/g1")
n=$(find "$B" -maxdepth 1 -type d -name 'group-*' | wc -l)
[ "$n" -eq 1 ] || check_fail "1: $n group run directories, expected 1: $(ls "$B")"
G=$(find "$B" -maxdepth 1 -type d -name 'group-add-3-*' | head -1)
[ -n "$G" ] && [ -f "$G/run.log" ] || check_fail "1: no group-add-3 run: $(ls "$B")"
[ -f "$B/logs/$(basename "$G" | sed 's/-[0-9]\{8\}-[0-9]\{6\}.*//').log" ] ||
  check_fail "1: no log of the group: $(ls "$B/logs")"
for op in add sum softmax; do
  [ "$(col "$B" $op status)" = ok ] || check_fail "1: $op: $(col "$B" $op status)"
  [ "$(col "$B" $op run)" = "$(basename "$G")" ] || check_fail "1: $op's run: $(col "$B" $op run)"
  want=$(grep -c "\"op\":\"$op\"" "$G/run.log")
  [ "$(col "$B" $op rows)" = "$want" ] && [ "$want" -gt 0 ] ||
    check_fail "1: $op: ops_status says $(col "$B" $op rows) rows, the group's run.log has $want"
done
py 'import json, sys
sys.exit(0 if json.load(open(sys.argv[1])).get("ops_per_child") == 3 else 1)' "$B/batch.json" ||
  check_fail "1: batch.json does not keep ops_per_child: $(cat "$B/batch.json")"

# 2. A failed check in a group: the group vouches for add and sum; test_fail runs again alone, and
# its rows count from its own run only.
"$CAL" batch add test_fail sum --devices 0 --ops-per-child 3 --out "$T/g2" "${FAST[@]}" \
  > "$T/g2.txt" 2>&1
rc=$?
[ "$rc" -eq 1 ] || check_fail "2: exit $rc, expected 1: $(tail -c 400 "$T/g2.txt")"
B2=$(only_run_dir "$T/g2")
[ "$(col "$B2" add status)" = ok ] && [ "$(col "$B2" sum status)" = ok ] ||
  check_fail "2: add $(col "$B2" add status), sum $(col "$B2" sum status)"
[ "$(col "$B2" test_fail status)" = failed ] || check_fail "2: test_fail: $(col "$B2" test_fail status)"
case "$(col "$B2" test_fail run)" in
  test_fail-*) ;;
  *) check_fail "2: test_fail's rows should be its own run's, not $(col "$B2" test_fail run)" ;;
esac
grep -q 'run again in a child each: test_fail' "$T/g2.txt" ||
  check_fail "2: the batch does not say test_fail runs again alone: $(cat "$T/g2.txt")"
"$CAL" export "$B2" --format csv > "$T/g2.csv" 2> "$T/g2.err" || check_fail "2: export: $(cat "$T/g2.err")"
for op in add sum test_fail; do
  got=$(py 'import csv, sys
print(sum(1 for r in csv.DictReader(open(sys.argv[1])) if r["op"] == sys.argv[2]))' "$T/g2.csv" $op)
  # export has a line per provider; ops_status a row per case: compare with the op's own run.log
  run=$(col "$B2" $op run)
  want=$(py 'import json, sys
n = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("type") == "case" and r.get("op") == sys.argv[2]:
        n += max(1, len(r.get("providers") or []))
print(n)' "$B2/$run/run.log" $op)
  [ "$got" = "$want" ] || check_fail "2: export has $got line(s) of $op, its run holds $want"
done

# 3. A crash in a group: none of its ops can be vouched for; each runs alone, and only the
# crashing op is crashed.
"$CAL" batch add test_abort sum --devices 0 --ops-per-child 3 --timeout-per-op 60 --out "$T/g3" \
  "${FAST[@]}" > "$T/g3.txt" 2>&1
rc=$?
[ "$rc" -eq 1 ] || check_fail "3: exit $rc, expected 1: $(tail -c 400 "$T/g3.txt")"
B3=$(only_run_dir "$T/g3")
[ "$(col "$B3" test_abort status)" = crashed ] || check_fail "3: test_abort: $(col "$B3" test_abort status)"
col "$B3" test_abort reason | grep -q SIGABRT || check_fail "3: reason: $(col "$B3" test_abort reason)"
for op in add sum; do
  [ "$(col "$B3" $op status)" = ok ] || check_fail "3: $op: $(col "$B3" $op status)"
  case "$(col "$B3" $op run)" in
    "$op"-*) ;;
    *) check_fail "3: $op ran in $(col "$B3" $op run), expected a run of its own" ;;
  esac
done
c=$(children "$T/g3.txt")
[ "$c" -eq 4 ] || check_fail "3: $c [batch] lines, expected 4 (the group's, then one per op): $(cat "$T/g3.txt")"
if pgrep -f "$T/g3" > /dev/null; then check_fail "3: a child is still running"; fi

# 4. --resume keeps N: the stored ops_per_child groups what runs again.
"$CAL" batch --resume "$B2" > "$T/g4.txt" 2>&1
[ "$(col "$B2" test_fail status)" = failed ] || check_fail "4: resumed test_fail: $(col "$B2" test_fail status)"
[ "$(col "$B2" add status)" = ok ] || check_fail "4: add changed on resume: $(col "$B2" add status)"

# Bad input: exit 2, one line naming the flag, nothing written.
BT=(batch add sum --devices 0 "${FAST[@]}" --out "$T/refused-out")
for bad in 0 -1 1001 abc 2.5; do
  expect_refused "--ops-per-child $bad" "--ops-per-child '$bad' allowed: whole number from 1 to 1000" -- \
    "$CAL" "${BT[@]}" "--ops-per-child=$bad"
done
expect_refused "--ops-per-child empty" "--ops-per-child allowed: whole number" -- \
  "$CAL" "${BT[@]}" --ops-per-child ""
expect_refused "--ops-per-child under Slurm" "--ops-per-child '2' --scheduler slurm" -- \
  "$CAL" batch add sum --backend cpu --scheduler slurm --ops-per-child 2 --out "$T/refused-out"
# A node selects cases across ops; each op's child would refuse it with its op (every op failed).
expect_refused "batch --node" "--node TEST_NODE add[f32-*] caliber run --node" -- \
  "$CAL" batch "${FAST[@]}" --node 'add[f32-*]' --out "$T/refused-out"
cli_done
