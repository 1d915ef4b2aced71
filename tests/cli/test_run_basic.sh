#!/usr/bin/env bash
# caliber run on the cpu backend leaves one complete run directory: run.log (header, one row per
# case, footer), run_identity.json and shapes.yaml with the level in it; it prints the table.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init "$@"

"$CAL" list --backend cpu --cases add mm > "$T/cases.txt" || fatal "caliber list --cases failed"
want_cases=$(grep -c . "$T/cases.txt")
[ "$want_cases" -ge 2 ] || fatal "caliber list --cases add mm lists $want_cases cases"

before=$(date -u +%s)
"$CAL" run add mm "${FAST[@]}" --out "$T/out" --name basic > "$T/stdout" 2> "$T/stderr"
rc=$?
after=$(date -u +%s)
cat "$T/stdout" "$T/stderr"
[ "$rc" -eq 0 ] || fatal "caliber run exit $rc, expected 0"

R=$(only_run_dir "$T/out")
name=$(basename "$R")
[[ "$name" =~ ^basic-([0-9]{8}-[0-9]{6})$ ]] || check_fail "run directory name '$name' is not basic-YYYYmmdd-HHMMSS"
stamp=${BASH_REMATCH[1]:-}
if [ -n "$stamp" ]; then
  # The timestamp is the start of this run (UTC or local: allow either), not some other time.
  ok=0
  for tz in UTC ""; do
    t=$(TZ=$tz date -d "${stamp:0:4}-${stamp:4:2}-${stamp:6:2} ${stamp:9:2}:${stamp:11:2}:${stamp:13:2}" +%s 2> /dev/null) || continue
    [ "$t" -ge $((before - 1)) ] && [ "$t" -le $((after + 1)) ] && ok=1
  done
  [ "$ok" -eq 1 ] || check_fail "timestamp $stamp is not the time of the run"
fi
for f in run.log run_identity.json shapes.yaml; do
  [ -s "$R/$f" ] || check_fail "$f missing or empty in $R"
done

# The table and the header are on stdout, naming the caliber of the run.
grep -q "backend cpu" "$T/stdout" || check_fail "the header does not name backend cpu"
grep -q "timer direct" "$T/stdout" || check_fail "the header does not name timer direct"
grep -q "level core" "$T/stdout" || check_fail "the header does not name level core"
grep -Eq "^op +dtype +shape" "$T/stdout" || check_fail "no table header line (op dtype shape ...)"
while read -r node; do
  op=${node%%[*}
  grep -Eq "^$op +[a-z0-9]+ +" "$T/stdout" || check_fail "no table line for $op"
done < "$T/cases.txt"

py '
import json, sys
run_dir, cases_file = sys.argv[1], sys.argv[2]
want = [l.strip() for l in open(cases_file) if l.strip()]
lines = open(run_dir + "/run.log").read().splitlines()
rows = [json.loads(l) for l in lines]
assert rows[0]["type"] == "header", "first line is not the header: %r" % rows[0].get("type")
assert rows[-1]["type"] == "footer", "last line is not the footer: %r" % rows[-1].get("type")
cases = [r for r in rows if r["type"] == "case"]
assert len(cases) + 2 == len(rows), "lines other than header, cases, footer"
nodes = [c["node"] for c in cases]
assert sorted(nodes) == sorted(want), "case rows %s differ from caliber list --cases %s" % (nodes, want)
for c in cases:
    for key in ("op", "dtype", "shape", "node", "status", "timer", "markers", "latency_ms",
                "latency_base_ms", "speedup", "accuracy", "repeat", "providers"):
        assert key in c, "%s: no %s" % (c.get("node"), key)
    assert "tflops" in c or "gbps" in c, c["node"] + ": neither tflops nor gbps"
    assert c["status"] == "ok", c["node"] + ": " + c["status"]
    assert c["node"].startswith(c["op"] + "[" + c["dtype"] + "-"), c["node"]
    assert c["node"].endswith(c["shape"] + "]"), c["node"] + " vs shape " + c["shape"]
    assert c["timer"] == "direct", c["node"] + ": timer " + c["timer"]
    assert "timer=direct" in c["markers"], c["node"] + ": markers " + str(c["markers"])
    assert c["accuracy"] is True, c["node"]
    assert c["repeat"] == 1, c["node"]
    base, cand = c["latency_base_ms"], c["latency_ms"]
    assert base > 0 and cand > 0, c["node"]
    assert abs(c["speedup"] - base / cand) <= 1e-6 * c["speedup"], "%s: speedup %r != %r / %r" % (
        c["node"], c["speedup"], base, cand)
    roles = sorted(p["role"] for p in c["providers"])
    assert "baseline" in roles and "candidate" in roles, c["node"] + ": roles " + str(roles)
    for p in c["providers"]:
        s = p["samples_ms"]
        # --min-samples 3, unless the timeout stopped it first (a slow naive kernel on a loaded
        # machine); then the row must say so.
        need = 1 if p.get("stop_reason", "").startswith("timeout") else 3
        assert len(s) >= need and all(x > 0 for x in s), c["node"] + "/" + p["name"] + ": samples " + str(s[:5]) + " " + p.get("stop_reason", "")
        if p["role"] == "baseline":
            assert p["latency_ms"] == base, c["node"] + ": baseline latency not latency_base_ms"
        # The latency is a statistic of the samples (median by default): inside their range.
        assert min(s) <= p["latency_ms"] <= max(s), c["node"] + "/" + p["name"]
foot = rows[-1]
assert foot.get("ok") == len(cases), "footer ok %r, %d rows" % (foot.get("ok"), len(cases))
assert foot.get("failed") == 0, foot
' "$R" "$T/cases.txt" || check_fail "run.log (above)"

py '
import json, sys, socket
run_dir = sys.argv[1]
j = json.load(open(run_dir + "/run_identity.json"))
for key in ("backend", "device", "timer", "level", "tune", "repeat", "l2", "caliber_version",
            "git_commit", "start_time", "host"):
    assert key in j, "run_identity.json has no " + key
assert j["backend"] == "cpu", j["backend"]
assert isinstance(j["device"], dict) and j["device"].get("name"), "no device name: %r" % j["device"]
assert j["timer"] == "direct", j["timer"]
assert j["level"] == "core", j["level"]
assert j["tune"] == "live", j["tune"]
assert j["repeat"] == 1, j["repeat"]
assert j["l2"] == "cold", j["l2"]
assert j["caliber_version"], "empty caliber_version"
assert j["start_time"][:4].isdigit(), j["start_time"]
assert j["host"], "empty host"
' "$R" || check_fail "run_identity.json (above)"

# shapes.yaml: the level is written in it, and it holds the shapes of both ops.
grep -Eq '^level: *core *$' "$R/shapes.yaml" || check_fail "shapes.yaml does not say level: core"
for op in add mm; do
  grep -Eq "^ *$op:" "$R/shapes.yaml" || check_fail "shapes.yaml has no entry for $op"
done
grep -Eq "^ *(sort|softmax|sum):" "$R/shapes.yaml" && check_fail "shapes.yaml holds ops that did not run"

# The archived shapes.yaml is itself a shape file: run again from it and get the same cases.
"$CAL" list --backend cpu --cases add mm --shapes "$R/shapes.yaml" > "$T/cases2.txt" 2>&1 ||
  check_fail "shapes.yaml cannot be read back with --shapes: $(cat "$T/cases2.txt")"
cmp -s <(sort "$T/cases.txt") <(sort "$T/cases2.txt") ||
  check_fail "cases from the archived shapes.yaml differ: $(diff <(sort "$T/cases.txt") <(sort "$T/cases2.txt") | head)"

cli_done
