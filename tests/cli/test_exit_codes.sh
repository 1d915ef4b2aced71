#!/usr/bin/env bash
# The exit-code contract over every subcommand, as one table (README, docs/limits.md): 0 all ok;
# 1 the work ran and something failed, or its output could not be completed (standard output on
# /dev/full); 2 bad input, nothing written. Every subcommand caliber has must appear in the table.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init "$@"
use_test_ops test_fail

"$CAL" run add "${FAST[@]}" --out "$T/runs" --name r > /dev/null 2>&1 || fatal "a cpu run failed"
R=$(only_run_dir "$T/runs")
mkdir "$T/empty"

# subcommand | expected exit | arguments (word-split; $R, $T expanded) | does it print on stdout
TABLE=$(cat << EOF
run|0|add ${FAST[*]} --out $T/o --name ok|yes
run|1|test_fail ${FAST[*]} --out $T/o --name failing|yes
run|2|add ${FAST[*]} --level nosuch --out $T/refused-out|no
list|0|--backend cpu|yes
list|2|--backend cpu --level nosuch|no
list|2|--backend nosuch|no
batch|0|add ${FAST[*]} --devices 0 --out $T/o --name bok|yes
batch|1|test_fail ${FAST[*]} --devices 0 --out $T/o --name bfail|yes
batch|2|nosuchop ${FAST[*]} --devices 0 --out $T/refused-out|no
summary|0|$R|yes
summary|2|$T/empty|no
export|0|$R --format json|yes
export|2|$R --format nosuch|no
compare|0|$R $R|yes
compare|2|$R $T/empty|no
compare|2|$R $R --fail-on-regression NaN|no
summary|2|$R --fail-on-regression 0|no
devices|0||yes
devices|2|--backend nosuch|no
plan|0|--backend cpu|yes
plan|2|--backend nosuch|no
plan|2|nosuchop --backend cpu|no
plan|2|--backend cpu --parallel-warmup 64|no
ab|0|add ${FAST[*]} --env X=1 --env X=2 --rounds 1 --out $T/o --name abok|yes
ab|0|${FAST[*]} --rounds 1 --out $T/o --name abenvlast --env X=1 --env X=2 add|yes
ab|2|add ${FAST[*]} --out $T/refused-out|no
ab|2|add ${FAST[*]} --env X=1 --env X=2 --timeout-per-run nan --out $T/refused-out|no
identity|0|$R|yes
identity|2|$T/empty|no
list|2|--backend cpu --names --json|no
report|0|$R --html $T/page.html|yes
report|2|$T/empty --html $T/refused-out|no
history|0|$R|yes
history|2|$T/empty|no
nosuchcmd|2||no
EOF
)

covered=" "
while IFS='|' read -r sub want args prints; do
  covered+="$sub "
  rm -rf "$T/refused-out"
  # shellcheck disable=SC2086
  "$CAL" $sub $args > "$T/stdout" 2> "$T/stderr" < /dev/null
  rc=$?
  [ "$rc" -eq "$want" ] || check_fail "$sub $args: exit $rc, expected $want: $(head -c 400 "$T/stderr")"
  if [ "$want" -eq 2 ]; then
    [ -e "$T/refused-out" ] && check_fail "$sub $args: exit 2 but wrote $T/refused-out"
    grep -q . "$T/stderr" || check_fail "$sub $args: exit 2 without a message"
  fi
  # Output that cannot be written is never exit 0.
  if [ "$prints" = yes ] && [ "$want" -eq 0 ] && [ -w /dev/full ]; then
    # shellcheck disable=SC2086
    "$CAL" $sub $args > /dev/full 2> "$T/stderr" < /dev/null
    rc=$?
    [ "$rc" -eq 1 ] || check_fail "$sub $args > /dev/full: exit $rc, expected 1"
    grep -q "standard output" "$T/stderr" || check_fail "$sub > /dev/full: no message: $(head -c 300 "$T/stderr")"
  fi
done <<< "$TABLE"

# A bad backend is refused naming the flag, the value and the names allowed, wherever it is given.
for sub in run list plan devices; do
  msg=$("$CAL" $sub --backend nosuch 2>&1 > /dev/null)
  for want in "--backend" "'nosuch'" "cpu"; do
    case "$msg" in
      *"$want"*) ;;
      *) check_fail "$sub --backend nosuch: the message does not say $want: $msg" ;;
    esac
  done
done

# Every subcommand caliber has (as its refusal of an unknown one lists them) is in the table.
subs=$("$CAL" nosuchcmd 2>&1 | sed -n 's/.*allowed: //p' | tr ',' ' ')
[ -n "$subs" ] || fatal "caliber does not list its subcommands"
for sub in $subs; do
  case "$covered" in
    *" $sub "*) ;;
    *) check_fail "subcommand $sub is not in the exit-code table" ;;
  esac
done
cli_done
