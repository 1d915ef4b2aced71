#!/usr/bin/env bash
# The op authors' kit as a user gets it: `cmake --install` into a temporary prefix, then the
# examples configured and built against that prefix alone (find_package(caliber), and caliber.pc
# for a build without CMake), and the cpu example run with --ops-lib against its baseline. The
# CUDA example is compiled where nvcc exists (scripts/gpu-check runs it on a GPU).
#   bash tests/package/test_examples.sh <build dir> <source dir>
set -u
BUILD=${1:?usage: test_examples.sh <build dir> <source dir>}
SRC=${2:?usage: test_examples.sh <build dir> <source dir>}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
FAILS=0
check_fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
fatal() { echo "FAIL: $*"; exit 1; }
gen=()
command -v ninja > /dev/null && gen=(-G Ninja)
export CALIBER_TUNE_CACHE="$T/tune.db"
unset CALIBER_OPS_LIB ZL_BACKEND BENCH_LEVEL OP OP_FILE TEST_NODE REPLAY_FROM PARALLEL_WARMUP_GPUS

P="$T/prefix"
cmake --install "$BUILD" --prefix "$P" > "$T/install.log" 2>&1 || fatal "cmake --install: $(tail -5 "$T/install.log")"
for f in bin/caliber include/caliber/caliber.hpp include/caliber/op.hpp include/caliber/check.hpp \
  include/caliber/reference.hpp lib/cmake/caliber/caliberConfig.cmake \
  lib/cmake/caliber/caliberConfigVersion.cmake lib/cmake/caliber/caliberTargets.cmake \
  lib/cmake/caliber/CaliberOpLibrary.cmake lib/pkgconfig/caliber.pc share/caliber/shapes/core.yaml \
  share/caliber/shapes/host/core.yaml; do
  [ -f "$P/$f" ] || check_fail "not installed: $f"
done
find "$P" -name '*test_ops*' | grep -q . && check_fail "the test op library was installed: $(find "$P" -name '*test_ops*')"
"$P/bin/caliber" list --backend cpu --names | grep -q '^test_' && check_fail "the installed caliber lists test ops"

# The cpu example, with CMake, against the installed prefix only.
cmake -S "$SRC/examples/cpu_op" -B "$T/cpu" "${gen[@]}" -DCMAKE_PREFIX_PATH="$P" \
  -DCMAKE_BUILD_TYPE=Release > "$T/cpu-config.log" 2>&1 || fatal "cpu example configure: $(tail -20 "$T/cpu-config.log")"
cmake --build "$T/cpu" > "$T/cpu-build.log" 2>&1 || fatal "cpu example build: $(tail -20 "$T/cpu-build.log")"
LIB="$T/cpu/libmy_cpu_ops.so"
[ -f "$LIB" ] || fatal "the cpu example built no $LIB"
"$P/bin/caliber" list --backend cpu --ops-lib "$LIB" > "$T/list.txt" 2>&1 || check_fail "list with the example: $(cat "$T/list.txt")"
grep -Eq "^my_axpy +pointwise .* $LIB$" "$T/list.txt" || check_fail "list does not show my_axpy from $LIB: $(cat "$T/list.txt")"

# Run it as the tutorial does: its own shapes, live tuning, compared against its baseline.
"$P/bin/caliber" run my_axpy --backend cpu --ops-lib "$LIB" --shapes "$SRC/examples/cpu_op/shapes.yaml" \
  --min-samples 5 --min-time 0 --warmup 0 --max-noise 1 --timeout 0.5 --out "$T/runs" > "$T/run.out" 2>&1 ||
  check_fail "caliber run my_axpy: exit $?: $(tail -20 "$T/run.out")"
cat "$T/run.out"
run=$(find "$T/runs" -mindepth 1 -maxdepth 1 -type d | head -1)
python3 - "$run/run.log" << 'PY' || check_fail "run.log of my_axpy (above)"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
cases = [r for r in rows if r["type"] == "case"]
assert len(cases) == 2, "expected 2 cases (the example's shapes.yaml), got %d" % len(cases)
for c in cases:
    assert c["op"] == "my_axpy" and c["status"] == "ok", (c["node"], c["status"], c.get("error"))
    assert c["accuracy"] is True, c["node"]
    assert isinstance(c.get("speedup"), (int, float)) and c["speedup"] > 0, (c["node"], c.get("speedup"))
    roles = {p["name"]: p["role"] for p in c["providers"]}
    assert roles == {"loop": "baseline", "unrolled": "candidate"}, roles
    assert all(p.get("latency_ms") for p in c["providers"]), "an untimed provider"
    cand = [p for p in c["providers"] if p["role"] == "candidate"][0]
    assert "unroll=" in (cand.get("config") or ""), "the candidate was not tuned: %r" % cand.get("config")
PY
"$P/bin/caliber" summary "$run" > "$T/summary.txt" 2>&1 || check_fail "summary of the example run: $(cat "$T/summary.txt")"

# The same source without CMake, through caliber.pc.
if command -v pkg-config > /dev/null; then
  flags=$(PKG_CONFIG_PATH="$P/lib/pkgconfig" pkg-config --cflags caliber) || check_fail "pkg-config --cflags caliber"
  c++ -O2 -shared -fPIC $flags "$SRC/examples/cpu_op/axpy.cpp" -o "$T/libaxpy_pc.so" 2> "$T/pc.log" ||
    check_fail "c++ \$(pkg-config --cflags caliber): $(tail -5 "$T/pc.log")"
  "$P/bin/caliber" list --backend cpu --names --ops-lib "$T/libaxpy_pc.so" 2>&1 | grep -qx my_axpy ||
    check_fail "the pkg-config build does not register my_axpy"
else
  check_fail "pkg-config is not installed (scripts/quickstart installs it)"
fi

# The CUDA example: compiled where nvcc exists; run by scripts/gpu-check on a GPU.
if [ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc > /dev/null; then
  cmake -S "$SRC/examples/cuda_op" -B "$T/cuda" "${gen[@]}" -DCMAKE_PREFIX_PATH="$P" \
    -DCMAKE_BUILD_TYPE=Release > "$T/cuda-config.log" 2>&1 || check_fail "cuda example configure: $(tail -20 "$T/cuda-config.log")"
  cmake --build "$T/cuda" > "$T/cuda-build.log" 2>&1 || check_fail "cuda example build: $(tail -30 "$T/cuda-build.log")"
  [ -f "$T/cuda/libmy_cuda_ops.so" ] || check_fail "the cuda example built no library"
  echo "cuda example compiled (run on a GPU by scripts/gpu-check --steps example)"
else
  echo "note: no nvcc here: the cuda example was not compiled (scripts/gpu-check builds and runs it)"
fi

[ "$FAILS" -eq 0 ] || { echo "$FAILS assertion(s) failed"; exit 1; }
echo PASS
