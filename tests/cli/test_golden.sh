#!/usr/bin/env bash
# Golden outputs: what compare (and so ab) prints for two synthetic A/B directories, and what
# summary prints for one of their runs, compared exactly with tests/cli/data/golden/expected/.
# The fixtures (tests/cli/data/golden/{paired,isolate}, written by make_fixtures.py there) fix
# every number and the noise terms are given, so nothing depends on timing, the host or the
# shipped calibration files.
#
# A change of wording or layout fails here with the diff. To accept it, re-bless and review:
#   CALIBER_BLESS=1 ctest --test-dir build-cpu -R cli.test_golden
#   git diff tests/cli/data/golden/expected
set -u
CAL=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")  # the test runs from the fixtures
SRC=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
G=$SRC/tests/cli/data/golden
fail() { echo "FAIL: $*"; exit 1; }
[ -d "$G/paired/ab-20261201-120000" ] || fail "no fixture under $G (run make_fixtures.py there)"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
TERMS=(--run-noise 2 --paired-noise 1)

# name, then the command line; stdout and stderr are kept apart (csv puts its notes on stderr).
golden() {
  local name=$1; shift
  (cd "$G" && "$CAL" "$@" > "$T/$name.out" 2> "$T/$name.err"; echo "exit $?" >> "$T/$name.err")
  for s in out err; do
    local want=$G/expected/$name.$s
    if [ "${CALIBER_BLESS:-}" = 1 ]; then
      mkdir -p "$G/expected"; cp "$T/$name.$s" "$want"; echo "blessed $want"
    elif ! diff -u "$want" "$T/$name.$s"; then
      fail "$name.$s differs from $want (CALIBER_BLESS=1 rewrites it; review the diff)"
    fi
  done
}

golden paired_table compare paired/ab-20261201-120000 "${TERMS[@]}"
golden paired_md compare paired/ab-20261201-120000 "${TERMS[@]}" --format md
golden isolate_table compare isolate/ab-20261201-120000 "${TERMS[@]}"
golden isolate_csv compare isolate/ab-20261201-120000 "${TERMS[@]}" --format csv
golden two_sides_table compare paired/ab-20261201-120000/A-1-20261201-120001 \
  paired/ab-20261201-120000/B-1-20261201-120001 "${TERMS[@]}"
golden summary_one_run summary paired/ab-20261201-120000/A-1-20261201-120001

# compare with one argument takes only a directory caliber ab wrote: anything else exits 2,
# naming it, and prints no table.
"$CAL" compare "$G/paired/ab-20261201-120000/A-1-20261201-120001" > "$T/one.out" 2> "$T/one.err"
rc=$?
[ "$rc" -eq 2 ] && [ ! -s "$T/one.out" ] && grep -q "A-1-20261201-120001' holds no ab.json" "$T/one.err" ||
  fail "compare RUN (no B, not an ab directory): exit $rc, $(cat "$T/one.err")"

# What the goldens hold, said once more so that a careless re-bless cannot bless it away.
grep -q 'ratio_of' "$G/expected/paired_table.out" || fail "the pairs table has no ratio_of column"
n=$(grep -c '^WARNING: the host was loaded' "$G/expected/paired_table.out")
[ "$n" -eq 1 ] || fail "the loaded-host warning is printed $n times, want once"
! grep -Eq 'pairs on|quantile|UTC|GPU-[0-9a-f]' "$G"/expected/*.out ||
  fail "a derivation (pairs, quantile, UTC time, serial) is in the output"
awk '/^note: / && !/docs\// { bad = 1; print "no docs link: " $0 } END { exit bad }' \
  "$G"/expected/*table.out || fail "a note names no docs page"
if [ "${CALIBER_BLESS:-}" = 1 ]; then echo "PASS (blessed)"; else echo PASS; fi
