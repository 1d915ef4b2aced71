#!/usr/bin/env bash
# Issue #28, "resolve once": batch and ab turn the whole request into typed settings before
# anything is written (docs/architecture.md, "What is resolved where"). Each refusal below was
# once made late: by the first round's `caliber run` after the A/B directory and ab.json were
# written and "ab: DIR: ..." was printed, or by every op's child of a resumed batch after
# ops_status.csv was rewritten. Each must now be exit 2 with one line naming the knob, the value
# and what is allowed, and nothing written.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init "$@"
LIB=$(test_ops_lib) || exit 1
LIB2=${CALIBER_TEST_SECOND_LIB:-$(dirname "$CAL")/tests/libcaliber_test_second.so}
[ -f "$LIB2" ] || fatal "the second test op library $LIB2 is not built"
cp "$LIB2" "$T/second-copy.so"  # another file of the same ops: side B of a paired A/B
echo "not a directory" > "$T/file"

# --- ab: each side's run is resolved (its flags over its --env) and dry-run before any round.
AB=(ab "${FAST[@]}" --rounds 1 --out "$T/refused-out")
expect_refused "ab: an unknown op" "side nosuchop ops: add" -- \
  "$CAL" "${AB[@]}" nosuchop --env X=1 --env X=2
expect_refused "ab: --arg a flag caliber run does not take" "--arg --nosuch=1 allowed: --FLAG=VALUE" -- \
  "$CAL" "${AB[@]}" add --arg=--nosuch=1
expect_refused "ab: --arg a flag without its value" "--arg '--timer' allowed: --timer=VALUE" -- \
  "$CAL" "${AB[@]}" add --arg=--timer
expect_refused "ab: --arg sets a run flag again" "--arg --timer=graph --timer=direct allowed:" -- \
  "$CAL" "${AB[@]}" add --timer direct --arg=--timer=graph
expect_refused "ab: --env a knob's bad value" "side --level BENCH_LEVEL 'nosuch' allowed: core" -- \
  "$CAL" "${AB[@]}" add --env BENCH_LEVEL=nosuch --env BENCH_LEVEL=core
expect_refused "ab: --devices not a device" "side --devices '4000' devices:" -- \
  "$CAL" "${AB[@]}" add --env X=1 --env X=2 --devices 4000
expect_refused "ab: an op side B's library lacks" "side B test_fail ops:" -- \
  "$CAL" "${AB[@]}" test_fail --arg=--ops-lib="$LIB"
expect_refused "ab: paired with --parallel-warmup" "--ops-lib-a --parallel-warmup allowed: --isolate" -- \
  "$CAL" "${AB[@]}" add --ops-lib-a "$LIB2" --ops-lib-b "$T/second-copy.so" --parallel-warmup 1
# --out a regular file: exit 1 ("cannot create") once, bad input like run's and batch's now.
"$CAL" ab "${FAST[@]}" --rounds 1 add --env X=1 --env X=2 --out "$T/file/sub" \
  > "$T/out.txt" 2> "$T/err.txt"
rc=$?
[ "$rc" -eq 2 ] || check_fail "ab --out under a file: exit $rc, expected 2: $(cat "$T/err.txt")"
grep -q -- "--out: '$T/file/sub'" "$T/err.txt" || check_fail "ab --out: no '--out' in: $(cat "$T/err.txt")"

# --- batch --resume: the stored run flags are resolved, and the ops checked under them.
"$CAL" batch add "${FAST[@]}" --devices 0 --out "$T/b" --name b > /dev/null 2>&1 ||
  fatal "a cpu batch failed"
B=$(only_run_dir "$T/b")
# The op failed, so that --resume would run it again.
sed -i 's/^add,ok,/add,failed,/' "$B/ops_status.csv"
# resumed_with ARG: a copy of the batch whose batch.json holds one more run flag, ARG.
resumed_with() {
  rm -rf "$T/r"
  cp -r "$B" "$T/r"
  py 'import json, sys
f = sys.argv[1]
j = json.load(open(f))
j["run_args"].append(sys.argv[2])
json.dump(j, open(f, "w"))' "$T/r/batch.json" "$1" || fatal "cannot edit batch.json"
  (cd "$T/r" && find . -printf '%p %s\n' | sort && sha256sum ops_status.csv) > "$T/r.before"
}
unchanged() {
  [ "$(cd "$T/r" && find . -printf '%p %s\n' | sort && sha256sum ops_status.csv)" = "$(cat "$T/r.before")" ] ||
    check_fail "$1: the batch directory changed"
}
resumed_with --nosuch=1
expect_refused "batch --resume: a stored flag caliber run does not take" \
  "--resume batch.json --nosuch=1 allowed: --FLAG=VALUE" -- "$CAL" batch --resume "$T/r"
unchanged "batch --resume --nosuch=1"
resumed_with --level
expect_refused "batch --resume: a stored flag without its value" \
  "--resume batch.json '--level' allowed: --level=VALUE" -- "$CAL" batch --resume "$T/r"
unchanged "batch --resume --level"

# A batch of an --ops-lib library's ops resumes: its ops are checked under its stored flags, not
# under the command line's (which named no library: 'unknown op').
"$CAL" batch test_scale "${FAST[@]}" --ops-lib "$LIB2" --devices 0 --out "$T/lb" --name lb \
  > /dev/null 2>&1 || fatal "a batch of the second library's op failed"
LB=$(only_run_dir "$T/lb")
sed -i 's/^test_scale,ok,/test_scale,failed,/' "$LB/ops_status.csv"
"$CAL" batch --resume "$LB" > "$T/lb.out" 2> "$T/lb.err"
rc=$?
[ "$rc" -eq 0 ] || check_fail "batch --resume of an --ops-lib batch: exit $rc: $(head -c 400 "$T/lb.err")"

# A paired run's --dry-run plans both sides and runs nothing (it once ran the A/B for real).
rm -rf "$T/pd"
"$CAL" run test_scale "${FAST[@]}" --ops-lib "$LIB2" --paired-lib "$T/second-copy.so" \
  --paired-name pb --dry-run --out "$T/pd" > "$T/pd.out" 2> "$T/pd.err"
rc=$?
[ "$rc" -eq 0 ] || check_fail "run --paired-lib --dry-run: exit $rc: $(head -c 400 "$T/pd.err")"
grep -q "caliber run --dry-run (paired A/B with side B's .*second-copy.so, 8 blocks a side" "$T/pd.out" ||
  check_fail "run --paired-lib --dry-run does not say it plans a paired A/B: $(head -c 400 "$T/pd.out")"
[ -e "$T/pd" ] && check_fail "run --paired-lib --dry-run wrote $T/pd"
cli_done
