#!/usr/bin/env bash
# caliber plan derives the stages from the backend's capabilities: graph capture (and cluster fix)
# only where the backend has them, timer=direct elsewhere, compat stages first and only on their
# own backend, parallel warmup only when asked. No device is needed to plan.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init "$@"

# stages B [FLAGS...]: "timer stage1 stage2 ..." from plan --json.
stages() {
  "$CAL" plan --backend "$@" --json 2> "$T/plan.err" | python3 -c '
import json, sys
j = json.load(sys.stdin)
print(j["timer"], " ".join(s["name"] for s in j["stages"]))' || echo "ERROR $(cat "$T/plan.err")"
}
has() { [[ " $1 " == *" $2 "* ]]; }

cuda=$(stages cuda)
echo "cuda: $cuda"
[ "${cuda%% *}" = graph ] || check_fail "plan --backend cuda: timer ${cuda%% *}, expected graph"
has "$cuda" graph_capture || check_fail "plan --backend cuda has no graph_capture stage: $cuda"
has "$cuda" cluster_fix || check_fail "plan --backend cuda has no cluster_fix stage: $cuda"
has "$cuda" compat && check_fail "plan --backend cuda has a compat stage (compat rules are musa's): $cuda"
has "$cuda" parallel_warmup && check_fail "plan --backend cuda has parallel warmup without being asked: $cuda"

cpu=$(stages cpu)
echo "cpu: $cpu"
[ "${cpu%% *}" = direct ] || check_fail "plan --backend cpu: timer ${cpu%% *}, expected direct"
has "$cpu" graph_capture && check_fail "plan --backend cpu has a graph_capture stage: $cpu"
has "$cpu" cluster_fix && check_fail "plan --backend cpu has a cluster_fix stage: $cpu"
has "$cpu" compat && check_fail "plan --backend cpu has a compat stage: $cpu"
"$CAL" plan --backend cpu > "$T/cpu.txt" 2>&1 || check_fail "plan --backend cpu (text) exit $?"
grep -q "timer=direct" "$T/cpu.txt" || check_fail "the cpu plan does not say its rows record timer=direct"

musa=$(stages musa)
echo "musa: $musa"
read -r -a m <<< "$musa"
[ "${m[1]:-}" = compat ] || check_fail "plan --backend musa: the first stage is '${m[1]:-}', expected compat: $musa"
has "$musa" graph_capture && check_fail "plan --backend musa captures graphs by default: $musa"
[ "${m[0]}" = direct ] || check_fail "plan --backend musa: timer ${m[0]}, expected direct"
# Aliases plan the same.
[ "$(stages mthreads)" = "$musa" ] || check_fail "plan --backend mthreads differs from musa"
[ "$(stages host)" = "$cpu" ] || check_fail "plan --backend host differs from cpu"

for b in rocm ascend; do
  s=$(stages $b)
  has "$s" compat && check_fail "plan --backend $b has a compat stage: $s"
  has "$s" cluster_fix && check_fail "plan --backend $b has a cluster_fix stage: $s"
done

# Knobs change the plan: the direct timer on cuda drops capture; parallel warmup appears when asked.
d=$(stages cuda --timer direct)
[ "${d%% *}" = direct ] || check_fail "plan --backend cuda --timer direct: timer ${d%% *}"
has "$d" graph_capture && check_fail "plan --backend cuda --timer direct still captures: $d"
p=$(stages cuda --parallel-warmup 2 --devices 0,1)
has "$p" parallel_warmup || check_fail "plan --backend cuda --parallel-warmup 2 has no parallel_warmup stage: $p"
p=$(PARALLEL_WARMUP_GPUS=2 stages cuda --devices 0,1)
has "$p" parallel_warmup || check_fail "PARALLEL_WARMUP_GPUS=2 plans no parallel_warmup stage: $p"
# As a run, a warmup over more devices than --devices selects is refused.
"$CAL" plan --backend cuda --parallel-warmup 2 > /dev/null 2>&1
[ $? -eq 2 ] || check_fail "plan --parallel-warmup 2 with one device selected must exit 2"
p=$(PARALLEL_WARMUP_GPUS= stages cuda)
has "$p" parallel_warmup && check_fail "PARALLEL_WARMUP_GPUS= (empty) plans parallel warmup: $p"
o=$(stages cpu --tune off)
has "$o" tune && check_fail "plan --tune off still has a tune stage: $o"

# Refusals: exit 2 with the reason.
"$CAL" plan --backend cpu --timer graph > /dev/null 2> "$T/err"
[ $? -eq 2 ] || check_fail "plan --backend cpu --timer graph does not exit 2"
"$CAL" plan --backend bogus > /dev/null 2> "$T/err"
[ $? -eq 2 ] || check_fail "plan --backend bogus does not exit 2"
grep -q "cpu" "$T/err" || check_fail "plan --backend bogus does not list the valid names: $(cat "$T/err")"
# A device the backend does not have is refused as a run refuses it (naming the devices it has);
# a backend with no device here (cuda on a machine without a GPU) still plans.
"$CAL" plan --backend cpu --devices 0,5 > /dev/null 2> "$T/err"
[ $? -eq 2 ] || check_fail "plan --backend cpu --devices 0,5 does not exit 2"
grep -q "'5' is not a cpu device; devices: 0:" "$T/err" ||
  check_fail "plan --devices 5 does not say which devices there are: $(cat "$T/err")"
"$CAL" plan --backend cpu --devices 0 > /dev/null 2>&1 || check_fail "plan --backend cpu --devices 0 refused"
if [ -z "$("$CAL" devices --backend cuda 2>/dev/null | grep -E '^ *[0-9]+:')" ]; then
  "$CAL" plan --backend cuda --devices 3 > /dev/null 2>&1 ||
    check_fail "plan --backend cuda --devices 3 refused on a machine without a cuda device"
fi

cli_done
