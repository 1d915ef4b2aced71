#!/usr/bin/env bash
# Flag beats environment beats default, end to end: what the run records in run_identity.json,
# shapes.yaml and the rows is the value in force, under the old runner's environment names.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init "$@"

# identity_of OUT KEY: KEY of run_identity.json in the only run directory under OUT.
identity_of() {
  local r
  r=$(only_run_dir "$1") || exit 1
  python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print(v if not isinstance(v, dict) else json.dumps(v))' \
    "$r/run_identity.json" "$2"
}
case_rows() {
  local r
  r=$(only_run_dir "$1") || exit 1
  grep -c '"type": *"case"' "$r/run.log"
}
run_ok() {
  local label=$1
  shift
  "$@" > "$T/last.out" 2>&1 || {
    check_fail "$label: exit $?: $(tail -3 "$T/last.out")"
    return 1
  }
}

# Default: core.
run_ok "default level" "$CAL" run mm "${FAST[@]}" --out "$T/default" &&
  { [ "$(identity_of "$T/default" level)" = core ] || check_fail "default level is $(identity_of "$T/default" level), not core"; }
grep -q "level core" "$T/last.out" || check_fail "the header of a default run does not say level core"

# Environment over default: BENCH_LEVEL=comprehensive reaches the identity, shapes.yaml, the header
# and the case count.
run_ok "BENCH_LEVEL=comprehensive" env BENCH_LEVEL=comprehensive "$CAL" run mm "${FAST[@]}" --out "$T/env" && {
  [ "$(identity_of "$T/env" level)" = comprehensive ] || check_fail "BENCH_LEVEL=comprehensive: identity says $(identity_of "$T/env" level)"
  grep -Eq '^level: *comprehensive' "$(only_run_dir "$T/env")/shapes.yaml" || check_fail "BENCH_LEVEL=comprehensive: shapes.yaml level"
  grep -q "level comprehensive" "$T/last.out" || check_fail "BENCH_LEVEL=comprehensive: the header does not say it"
  core_n=$(case_rows "$T/default")
  comp_n=$(case_rows "$T/env")
  [ "$comp_n" -gt "$core_n" ] || check_fail "comprehensive mm ran $comp_n cases, core $core_n: expected more"
}

# Flag over environment.
run_ok "--level core over BENCH_LEVEL" env BENCH_LEVEL=comprehensive "$CAL" run mm "${FAST[@]}" --level core --out "$T/flag" && {
  [ "$(identity_of "$T/flag" level)" = core ] || check_fail "--level core with BENCH_LEVEL=comprehensive: identity says $(identity_of "$T/flag" level)"
  grep -Eq '^level: *core' "$(only_run_dir "$T/flag")/shapes.yaml" || check_fail "--level core over env: shapes.yaml level"
  [ "$(case_rows "$T/flag")" = "$(case_rows "$T/default")" ] || check_fail "--level core over env ran $(case_rows "$T/flag") cases, default $(case_rows "$T/default")"
}

# ZL_DIRECT_REPEAT: environment, then flag over it; each row records the repeat in force.
run_ok "ZL_DIRECT_REPEAT=3" env ZL_DIRECT_REPEAT=3 "$CAL" run --node 'add[f32-65536]' "${FAST[@]}" --out "$T/rep-env" && {
  [ "$(identity_of "$T/rep-env" repeat)" = 3 ] || check_fail "ZL_DIRECT_REPEAT=3: identity repeat $(identity_of "$T/rep-env" repeat)"
  grep -q '"repeat": *3' "$(only_run_dir "$T/rep-env")/run.log" || check_fail "ZL_DIRECT_REPEAT=3: no row with repeat 3"
}
run_ok "--repeat 2 over ZL_DIRECT_REPEAT=3" env ZL_DIRECT_REPEAT=3 "$CAL" run --node 'add[f32-65536]' "${FAST[@]}" --repeat 2 --out "$T/rep-flag" && {
  [ "$(identity_of "$T/rep-flag" repeat)" = 2 ] || check_fail "--repeat 2 over env: identity repeat $(identity_of "$T/rep-flag" repeat)"
  grep -q '"repeat": *3' "$(only_run_dir "$T/rep-flag")/run.log" && check_fail "--repeat 2 over env: a row says repeat 3"
}

# ZL_BACKEND and its aliases: host is cpu; the flag beats the environment (a bogus environment
# value is never read when the flag is given).
run_ok "ZL_BACKEND=host" env ZL_BACKEND=host "$CAL" run --node 'add[f32-65536]' "${STOP[@]}" --out "$T/be-env" &&
  { [ "$(identity_of "$T/be-env" backend)" = cpu ] || check_fail "ZL_BACKEND=host: identity backend $(identity_of "$T/be-env" backend)"; }
run_ok "--backend cpu over ZL_BACKEND=bogus" env ZL_BACKEND=bogus "$CAL" run --node 'add[f32-65536]' "${FAST[@]}" --out "$T/be-flag" &&
  { [ "$(identity_of "$T/be-flag" backend)" = cpu ] || check_fail "--backend cpu over env: identity backend $(identity_of "$T/be-flag" backend)"; }

# TEST_NODE from the environment selects the one case; the identity records the node.
run_ok "TEST_NODE" env TEST_NODE='sum[f64-4096]' "$CAL" run "${FAST[@]}" --out "$T/node-env" && {
  [ "$(case_rows "$T/node-env")" = 1 ] || check_fail "TEST_NODE ran $(case_rows "$T/node-env") cases"
  [ "$(identity_of "$T/node-env" node)" = 'sum[f64-4096]' ] || check_fail "TEST_NODE: identity node '$(identity_of "$T/node-env" node)'"
}

cli_done
