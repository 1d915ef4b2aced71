#!/usr/bin/env bash
# caliber run --help is grouped by purpose (Selection, Timing, Autotune, Output), in that order,
# names every knob's flag and the old runner's environment spellings, and exits 0.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init "$@"

"$CAL" run --help > "$T/help.txt" 2>&1
rc=$?
[ "$rc" -eq 0 ] || check_fail "run --help exit $rc"

prev=0
for g in Selection Timing Autotune Output; do
  line=$(grep -n "^$g:" "$T/help.txt" | head -1 | cut -d: -f1)
  if [ -z "$line" ]; then
    check_fail "no '$g:' group in run --help"
    continue
  fi
  [ "$line" -gt "$prev" ] || check_fail "group $g is out of order (line $line after $prev)"
  prev=$line
done

# group_of FLAG: the group heading above FLAG's line.
group_of() {
  awk -v f="$1" '/^[A-Z][A-Za-z]*:$/ { g = substr($0, 1, length($0) - 1) }
    index($0, "  " f " ") || index($0, "  " f ",") { print g; exit }' "$T/help.txt"
}
for pair in --backend:Selection --devices:Selection --level:Selection --node:Selection \
  --op-file:Selection --dtypes:Selection --shapes:Selection --shape-mode:Selection \
  --timer:Timing --repeat:Timing --quantiles:Timing --return-mode:Timing --l2:Timing \
  --tune:Autotune --replay-from:Autotune --parallel-warmup:Autotune \
  --out:Output; do
  flag=${pair%%:*}
  want=${pair#*:}
  got=$(group_of "$flag")
  [ "$got" = "$want" ] || check_fail "$flag is under '${got:-nothing}', expected $want"
done
grep -Eq -- '--gpus' "$T/help.txt" || check_fail "the --gpus alias is not shown"

for env in ZL_BACKEND BENCH_LEVEL SHAPE_MODE OP OP_FILE TEST_NODE ZL_DIRECT_REPEAT REPLAY_FROM \
  PARALLEL_WARMUP_GPUS; do
  grep -Eq "(^|[^A-Z_])$env([^A-Z_]|$)" "$T/help.txt" || check_fail "run --help does not name $env"
done
# The footer pairs each variable with its flag (FlagGems users know the variables), and what it
# says of precedence holds: a variable gives the value, the flag given beside it wins.
for pair in BENCH_LEVEL:--level TEST_NODE:--node SHAPE_MODE:--shape-mode REPLAY_FROM:--replay-from \
  PARALLEL_WARMUP_GPUS:--parallel-warmup ZL_DIRECT_REPEAT:--repeat ZL_BACKEND:--backend; do
  grep -Eq "^  ${pair%%:*} +${pair#*:}\$" "$T/help.txt" ||
    check_fail "run --help's Environment footer does not pair ${pair%%:*} with ${pair#*:}"
done
"$CAL" batch --help 2>&1 | grep -Eq "^  BENCH_LEVEL +--level\$" ||
  check_fail "batch --help has no Environment footer"
lvl() { ZL_BACKEND=cpu BENCH_LEVEL=comprehensive "$CAL" run add --dry-run "$@" 2>&1 | head -1; }
lvl | grep -q "level comprehensive;" || check_fail "BENCH_LEVEL did not give the level: $(lvl)"
lvl --level core | grep -q "level core;" || check_fail "--level did not win over BENCH_LEVEL"

# The allowed values are in the help, so a refused value is never a surprise.
grep -q "core, comprehensive" "$T/help.txt" || check_fail "--level's allowed values are not in the help"
grep -q "off, live, record, replay" "$T/help.txt" || check_fail "--tune's allowed values are not in the help"

cli_done
