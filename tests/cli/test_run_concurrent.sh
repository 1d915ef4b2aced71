#!/usr/bin/env bash
# Ten runs started at once into one --out get ten run directories: the claim is an atomic mkdir
# that retreats to -2, -3, ... on collision, so no two runs ever share (and overwrite) a directory.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init "$@"

N=10
# Start all ten on a second boundary so that they really collide on the timestamp (on a loaded
# machine some may still spill into the next second; each second's group is checked on its own).
python3 -c 'import time; time.sleep(1.02 - time.time() % 1)'
pids=()
for i in $(seq 1 $N); do
  "$CAL" run --node 'add[f32-65536]' "${FAST[@]}" --out "$T/out" --name same > "$T/run$i.log" 2>&1 &
  pids+=($!)
done
rc_all=0
for i in $(seq 1 $N); do
  wait "${pids[$((i - 1))]}" || {
    rc_all=1
    check_fail "run $i exited non-zero: $(tail -3 "$T/run$i.log")"
  }
done

mapfile -t dirs < <(run_dirs "$T/out")
[ "${#dirs[@]}" -eq $N ] || fatal "$N concurrent runs made ${#dirs[@]} directories: ${dirs[*]##*/}"

# Each directory is whole: its own header, one case row, a footer.
for d in "${dirs[@]}"; do
  n=$(grep -c . "$d/run.log" 2> /dev/null || echo 0)
  [ "$n" -eq 3 ] || check_fail "${d##*/}/run.log has $n lines, expected 3 (header, case, footer)"
  [ -s "$d/run_identity.json" ] || check_fail "${d##*/} has no run_identity.json"
done
# Each run announced a directory of its own, and that directory is one of the ten.
announced=$(for i in $(seq 1 $N); do grep -o "$T/out/[^ ]*" "$T/run$i.log" | head -1; done | sort -u | wc -l)
[ "$announced" -eq $N ] || check_fail "the runs announced $announced distinct directories, expected $N"

# Per timestamp: the plain name, then -2, -3, ... without a gap.
python3 - "$T/out" << 'PY' || check_fail "suffixes (above)"
import os, re, sys
groups = {}
for name in os.listdir(sys.argv[1]):
    m = re.fullmatch(r"same-(\d{8}-\d{6})(?:-(\d+))?", name)
    assert m, "unexpected directory name " + name
    groups.setdefault(m.group(1), []).append(int(m.group(2) or 1))
for stamp, ns in groups.items():
    ns.sort()
    assert ns == list(range(1, len(ns) + 1)), "%s: suffixes %s, expected none then -2..-%d" % (
        stamp, ns, len(ns))
print("timestamps:", {k: len(v) for k, v in groups.items()})
PY

cli_done
