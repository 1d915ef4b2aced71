#!/usr/bin/env bash
# caliber list: the corpus of a backend and its case counts per level, as names, node ids, a
# table or JSON; and the GPU corpus is listable on a machine without a GPU.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init "$@"

"$CAL" list --backend cpu --names > "$T/names.txt" 2>&1 || fatal "list --names exit $?: $(cat "$T/names.txt")"
for op in add sum softmax mm sort; do
  grep -qx "$op" "$T/names.txt" || check_fail "list --names does not show $op"
done
# Test ops are for tests: they live in a test op library, never in the binary.
grep -q '^test_' "$T/names.txt" && check_fail "list --names shows test ops without their library"

# Case counts: comprehensive adds shapes (and BLAS variants), so mm has more cases than at core.
mm_cases() { "$CAL" list --backend cpu --cases mm "$@" | grep -c '^mm\['; }
core_mm=$(mm_cases)
comp_mm=$(mm_cases --level comprehensive)
env_mm=$(BENCH_LEVEL=comprehensive mm_cases)
[ "$core_mm" -gt 0 ] || check_fail "mm has no core case"
[ "$comp_mm" -gt "$core_mm" ] || check_fail "mm: comprehensive $comp_mm cases, core $core_mm: expected more"
[ "$env_mm" = "$comp_mm" ] || check_fail "BENCH_LEVEL=comprehensive lists $env_mm mm cases, --level comprehensive $comp_mm"
# Every core case is also a comprehensive case (comprehensive is core plus additions).
"$CAL" list --backend cpu --cases > "$T/core.txt"
"$CAL" list --backend cpu --cases --level comprehensive > "$T/comp.txt"
missing=$(comm -23 <(sort "$T/core.txt") <(sort "$T/comp.txt") | head -3)
[ -z "$missing" ] || check_fail "core cases missing at comprehensive: $missing"
# Node ids are op[dtype-size] and unique.
grep -Ev '^[a-z_0-9]+\[(f32|f16|bf16|f64|i32|i64|c64)-[A-Za-z0-9x-]+\]$' "$T/comp.txt" | head -3 > "$T/badids.txt"
[ -s "$T/badids.txt" ] && check_fail "malformed node ids: $(cat "$T/badids.txt")"
[ "$(sort "$T/comp.txt" | uniq -d | wc -l)" -eq 0 ] || check_fail "duplicate node ids at comprehensive"

# The table and JSON agree with --cases.
"$CAL" list --backend cpu > "$T/table.txt" || check_fail "list (table) exit $?"
total=$(grep -c . "$T/core.txt")
grep -Eq "^[0-9]+ ops, $total cases$" "$T/table.txt" || check_fail "the table's total is not $total cases: $(tail -1 "$T/table.txt")"
grep -Eq '^mm +blas ' "$T/table.txt" || check_fail "no mm line in the table"
"$CAL" list --backend cpu --json --level comprehensive > "$T/list.json" || check_fail "list --json exit $?"
python3 - "$T/list.json" "$(grep -c . "$T/comp.txt")" "$comp_mm" << 'PY' || check_fail "list --json (above)"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["backend"] == "cpu" and j["level"] == "comprehensive", (j["backend"], j["level"])
assert j["total_cases"] == int(sys.argv[2]), j["total_cases"]
by = {o["op"]: o for o in j["ops"]}
assert by["mm"]["cases"] == int(sys.argv[3]), by["mm"]
assert sum(o["cases"] for o in j["ops"]) == j["total_cases"]
assert all(o["dtypes"] for o in j["ops"]), "an op without dtypes"
PY

# Bad input to list is refused like it is to run.
"$CAL" list --backend cpu --level bogus > /dev/null 2>&1
[ $? -eq 2 ] || check_fail "list --level bogus does not exit 2"
"$CAL" list --backend cpu no_such_op > /dev/null 2>&1
[ $? -eq 2 ] || check_fail "list no_such_op does not exit 2"

# The GPU corpus is listed without a GPU, in a build that has it.
"$CAL" devices --json > "$T/devices.json" 2>&1 || check_fail "devices --json exit $?"
gpu_corpus_built=$(python3 - "$T/devices.json" << 'PY'
import json, sys
j = json.load(open(sys.argv[1]))
b = [b for b in j["backends"] if b["name"] == "cuda"]
# A build without the GPU toolkit says so in the backend's detail; anything else is a GPU build.
print("no" if b and "CALIBER_CUDA=OFF" in (b[0].get("detail") or "") else "yes")
PY
)
if [ "$gpu_corpus_built" = yes ]; then
  "$CAL" list --backend cuda --names > "$T/gpu-names.txt" 2> "$T/gpu.err" ||
    check_fail "list --backend cuda exit $? without a device: $(cat "$T/gpu.err")"
  n=$(grep -c . "$T/gpu-names.txt")
  [ "$n" -ge 22 ] || check_fail "the cuda corpus lists $n ops, expected at least 22"
  for op in mm softmax sort; do
    grep -qx "$op" "$T/gpu-names.txt" || check_fail "the cuda corpus has no $op"
  done
  # The alias selects the same corpus.
  "$CAL" list --backend nvidia --names 2> /dev/null | cmp -s - "$T/gpu-names.txt" ||
    check_fail "list --backend nvidia differs from --backend cuda"
  c=$("$CAL" list --backend cuda --cases mm | grep -c '^mm\[')
  cc=$("$CAL" list --backend cuda --cases mm --level comprehensive | grep -c '^mm\[')
  [ "$cc" -gt "$c" ] || check_fail "cuda mm: comprehensive $cc cases, core $c"
else
  echo "note: this build has no GPU corpus (-DCALIBER_CUDA=OFF): list --backend cuda not checked"
fi

cli_done
