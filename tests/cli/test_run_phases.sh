#!/usr/bin/env bash
# Where a run's time goes (docs/run-log.md): every case row carries its phase times, which add up
# to its wall_s; the footer sums them and the closing line says so; a planted slow set-up and a
# slow check land in inputs_s and check_s; the settle field, the check's method and coverage;
# the peaks are measured once per device and cached (--peaks refresh measures again).
set -u
. "$(dirname "$0")/lib.sh"
cli_init "$@"
export XDG_CACHE_HOME="$T/cache"
LIB=$(test_ops_lib)

"$CAL" run test_phases add --shape 4096 --ops-lib "$LIB" "${FAST[@]}" --out "$T/r" --name a \
  > "$T/a.txt" 2>&1 || fatal "run: $(tail -3 "$T/a.txt")"
A=$(only_run_dir "$T/r")
python3 - "$A" <<'PY' || check_fail "the phase times of the first run"
import json, sys
d = sys.argv[1]
rows = [json.loads(l) for l in open(d + "/run.log")]
cases = [r for r in rows if r["type"] == "case"]
footer = [r for r in rows if r["type"] == "footer"][0]
keys = ["inputs_s", "prepare_s", "check_s", "settle_s", "timing_s", "other_s"]
for r in cases:
    assert r["status"] == "ok", r
    for k in keys + ["wall_s"]:
        assert isinstance(r.get(k), float) and r[k] >= 0, (k, r)
    total = sum(r[k] for k in keys)
    assert abs(total - r["wall_s"]) < 1e-6, (total, r["wall_s"])
    for p in r["providers"]:
        assert p.get("settle") in (None, "settled", "carried"), p
    cands = [p for p in r["providers"] if p["role"] == "candidate"]
    if r["op"] == "test_phases":
        # Planted: a 0.3 s set-up and a 0.2 s check (sleeps only take longer).
        assert r["inputs_s"] >= 0.3, r["inputs_s"]
        assert r["check_s"] >= 0.2, r["check_s"]
        assert cands[0]["check_method"] == "host-float64", cands
        assert cands[0]["check_coverage"] == 1.0 and cands[0]["check_elements"] == 4096, cands
for k in keys:
    assert abs(footer[k] - sum(r[k] for r in cases)) < 1e-6, (k, footer)
assert abs(footer["cases_wall_s"] - sum(r["wall_s"] for r in cases)) < 1e-6, footer
ident = json.load(open(d + "/run_identity.json"))
pc = ident["peaks_cache"]
assert pc["source"] == "measured", pc
assert pc["path"].startswith(d.rsplit("/r/", 1)[0] + "/cache/caliber/peaks/"), pc
PY
grep -Eq '^time: cases [0-9.]+ s \(of which inputs [0-9.]+ prepare [0-9.]+ check [0-9.]+ settle [0-9.]+ timing [0-9.]+ other [0-9.]+\), outside the cases [0-9.]+ s' "$T/a.txt" \
  || check_fail "the closing line does not say where the time went: $(tail -2 "$T/a.txt")"

# summary totals the phases per op.
"$CAL" summary "$A" --format json > "$T/sum.json" 2> /dev/null || check_fail "summary"
python3 - "$T/sum.json" "$A" <<'PY' || check_fail "summary's phases table"
import json, sys
data = json.load(open(sys.argv[1]))
cases = [json.loads(l) for l in open(sys.argv[2] + "/run.log") if json.loads(l)["type"] == "case"]
rows = {r["op"]: r for r in data["phases"]["rows"]}
for op in ("test_phases", "add", "(all)"):
    assert op in rows, rows.keys()
mine = [c for c in cases if c["op"] == "test_phases"]
assert rows["test_phases"]["cases"] == len(mine), rows["test_phases"]
assert abs(rows["test_phases"]["inputs_s"] - sum(c["inputs_s"] for c in mine)) < 1e-3, rows
assert abs(rows["(all)"]["wall_s"] - sum(c["wall_s"] for c in cases)) < 1e-3, rows["(all)"]
PY
# The second run takes the peaks from the cache; --peaks refresh measures them again.
"$CAL" run add --shape 4096 "${FAST[@]}" --out "$T/r2" --name b > "$T/b.txt" 2>&1 || fatal "run b"
"$CAL" run add --shape 4096 "${FAST[@]}" --peaks refresh --out "$T/r3" --name c > "$T/c.txt" 2>&1 || fatal "run c"
python3 - "$(only_run_dir "$T/r2")" "$(only_run_dir "$T/r3")" "$A" <<'PY' || check_fail "the peaks cache"
import json, sys
b, c, a = (json.load(open(d + "/run_identity.json")) for d in sys.argv[1:])
assert b["peaks_cache"]["source"] == "cache", b["peaks_cache"]
assert b["peaks"] == a["peaks"], (b["peaks"], a["peaks"])
assert c["peaks_cache"]["source"] == "measured", c["peaks_cache"]
assert b["peaks_cache"]["path"] == a["peaks_cache"]["path"] == c["peaks_cache"]["path"]
PY
grep -q "peaks (cached" "$T/b.txt" || check_fail "the second run does not say its peaks were cached"
# A damaged cache is ignored with one warning and measured again: a fifo (it hung the run), a link
# to /dev/zero (memory without bound), absurd figures (1e-300 GB/s printed a % bw of 1e300).
PC=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1] + "/run_identity.json"))["peaks_cache"]["path"])' "$(only_run_dir "$T/r2")")
POLICY=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1] + "/run_identity.json"))["peaks_cache"]["policy"])' "$(only_run_dir "$T/r2")")
cp "$PC" "$T/peaks.good"
for damage in fifo zero absurd; do
  rm -f "$PC"
  case $damage in
    fifo) mkfifo "$PC"; why="not a regular file" ;;
    zero) ln -s /dev/zero "$PC"; why="not a regular file" ;;
    absurd) python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
j[sys.argv[3]]["copy_gbps"] = 1e-300
j[sys.argv[3]]["gemm_tflops"] = -5
json.dump(j, open(sys.argv[2], "w"))' "$T/peaks.good" "$PC" "$POLICY"; why="copy_gbps=1e-300 is out of range" ;;
  esac
  rm -rf "$T/rd"
  timeout -k 10 120 "$CAL" run add --shape 4096 "${FAST[@]}" --out "$T/rd" > "$T/d.txt" 2>&1 ||
    check_fail "a run beside a $damage peaks cache: exit $?: $(tail -3 "$T/d.txt")"
  [ "$(grep -c "WARNING: the peaks cache .* was ignored ($why" "$T/d.txt")" -eq 1 ] ||
    check_fail "no one-line warning for a $damage peaks cache: $(grep -i peaks "$T/d.txt")"
  python3 - "$(only_run_dir "$T/rd")" <<'PY' || check_fail "the peaks beside a $damage cache"
import json, sys
d = json.load(open(sys.argv[1] + "/run_identity.json"))
assert d["peaks_cache"]["source"].startswith("measured"), d["peaks_cache"]
assert 1e-3 < d["peaks"]["copy_gbps"] < 1e6, d["peaks"]
PY
done
rm -f "$PC"
cp "$T/peaks.good" "$PC"
"$CAL" run add --peaks sometimes "${FAST[@]}" --out "$T/bad" > "$T/bad.txt" 2>&1
[ $? -eq 2 ] || check_fail "--peaks sometimes is not refused with exit 2"
grep -q "refresh" "$T/bad.txt" || check_fail "the refusal does not list refresh: $(cat "$T/bad.txt")"
[ ! -e "$T/bad" ] || [ -z "$(ls -A "$T/bad")" ] || check_fail "a refused run wrote a directory"
# --dry-run: the estimate per op and in all, exit 0, nothing written.
"$CAL" run add sum --backend cpu --dry-run --out "$T/dry" > "$T/dry.txt" 2>&1 || check_fail "--dry-run: $(tail -2 "$T/dry.txt")"
grep -Eq '^estimate: [0-9]+ cases, [0-9.]+ s in cases' "$T/dry.txt" || check_fail "--dry-run says no estimate: $(cat "$T/dry.txt")"
grep -Eq '^add +[0-9]+ +[0-9.]+ +[0-9.]+$' "$T/dry.txt" || check_fail "--dry-run has no per-op row for add: $(cat "$T/dry.txt")"
[ ! -e "$T/dry" ] || check_fail "--dry-run wrote $T/dry"
grep -q "estimate ~" "$T/a.txt" || check_fail "the run's banner has no estimate"
grep -q "eta ~" "$T/a.txt" || check_fail "the progress lines have no eta"
cli_done
