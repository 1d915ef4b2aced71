#!/usr/bin/env bash
# caliber export and the machine formats of summary and compare, each parsed back by the tools
# people feed them to: python3's json and csv modules, pandas (dtypes: an int column stays int)
# and Google Benchmark's compare.py. scripts/quickstart test installs python3-pandas,
# python3-scipy and libbenchmark-tools (compare.py); a missing one fails here, it does not skip.
set -u
. "$(dirname "$0")/lib.sh"
cli_init "$@"
# Debian's python3 carries the Debian modules (a python3 earlier on PATH may not).
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
$PY -c 'import pandas' 2> /dev/null || fatal "pandas is missing: scripts/quickstart test installs python3-pandas"
GB=/usr/share/benchmark/compare.py
[ -f "$GB" ] || fatal "$GB is missing: scripts/quickstart test installs libbenchmark-tools"

"$CAL" run add sum --out "$T/runs" --name a "${FAST[@]}" --quantiles 0.1,0.5,0.9 > /dev/null 2>&1 \
  || fatal "run a"
"$CAL" run add sum --out "$T/runs" --name b "${FAST[@]}" --quantiles 0.1,0.5,0.9 > /dev/null 2>&1 \
  || fatal "run b"
A=$(ls -d "$T"/runs/a-*)
B=$(ls -d "$T"/runs/b-*)
cases=$($PY -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if json.loads(l)["type"]=="case"))' "$A/run.log")
provs=$($PY -c '
import json,sys
n=0
for l in open(sys.argv[1]):
    r=json.loads(l)
    if r["type"]=="case": n+=max(1,len(r.get("providers",[])))
print(n)' "$A/run.log")
[ "$cases" -gt 0 ] || fatal "run a has no cases"

# --- export csv: one table, read by the csv module and by pandas
"$CAL" export "$A" --format csv --out "$T/a.csv" 2> "$T/a.csv.err" || check_fail "export csv exit $?"
$PY - "$T/a.csv" "$provs" <<'PY' || check_fail "export csv via the csv module"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
assert len(rows) == int(sys.argv[2]), (len(rows), sys.argv[2])
for r in rows:
    assert r["op"] in ("add", "sum"), r
    assert r["provider"], r
    # --min-samples 3, unless the 0.2 s timeout came first (a loaded host), which the row says
    assert int(r["samples"]) >= 3 or (int(r["samples"]) >= 1 and
                                      "STOP_NOT_CONVERGED" in r["markers"]), r
    assert float(r["latency_ms"]) > 0, r
    assert float(r["p10_ms"]) <= float(r["p50_ms"]) <= float(r["p90_ms"]), r
    assert r["status"] == "ok", r
PY
$PY - "$T/a.csv" "$provs" <<'PY' || check_fail "export csv via pandas"
import sys
import pandas as pd
df = pd.read_csv(sys.argv[1])
assert df.shape[0] == int(sys.argv[2]), df.shape
for c in ("samples", "repeat", "launches_per_sample", "throttled_discarded", "power_capped_samples"):
    assert pd.api.types.is_integer_dtype(df[c]), (c, df[c].dtype)
for c in ("latency_ms", "p50_ms", "noise", "min_ms", "max_ms"):
    assert pd.api.types.is_float_dtype(df[c]), (c, df[c].dtype)
assert set(df["role"]) <= {"candidate", "baseline"}, set(df["role"])
assert (df["min_ms"] <= df["max_ms"]).all()
PY
grep -q '^#' "$T/a.csv" && check_fail "a comment line in the csv"

# --- export json: an array of row objects, read by json and by pandas
"$CAL" export "$A" "$B" --format json > "$T/ab.json" 2> /dev/null || check_fail "export json exit $?"
$PY - "$T/ab.json" "$provs" <<'PY' || check_fail "export json"
import json, sys
import pandas as pd
rows = json.load(open(sys.argv[1]))
assert isinstance(rows, list) and len(rows) == 2 * int(sys.argv[2]), len(rows)
assert {r["run"][:2] for r in rows} == {"a-", "b-"}, {r["run"] for r in rows}
assert all(isinstance(r["samples"], int) for r in rows)
df = pd.read_json(sys.argv[1], orient="records")
assert pd.api.types.is_integer_dtype(df["samples"]), df["samples"].dtype
PY

# --- export gbench: Google Benchmark's schema, compared by its own compare.py
"$CAL" export "$A" --format gbench --out "$T/a.gb.json" 2> /dev/null || check_fail "export gbench a"
"$CAL" export "$B" --format gbench --out "$T/b.gb.json" 2> /dev/null || check_fail "export gbench b"
$PY "$GB" --no-color benchmarks "$T/a.gb.json" "$T/b.gb.json" > "$T/gb.txt" 2>&1 \
  || check_fail "compare.py exit $?: $(tail -5 "$T/gb.txt")"
grep -q 'add\[f32-' "$T/gb.txt" || check_fail "compare.py shows no add row: $(head -5 "$T/gb.txt")"
grep -q '_median' "$T/gb.txt" || check_fail "compare.py shows no median aggregate"
grep -q 'OVERALL_GEOMEAN' "$T/gb.txt" || check_fail "compare.py computed no geomean"
$PY - "$T/a.gb.json" "$provs" <<'PY' || check_fail "gbench through gbench.report"
import json, sys
sys.path.insert(0, "/usr/share/benchmark")
from gbench import report
a = json.load(open(sys.argv[1]))
diff = report.get_difference_report(a, a, utest=True)
names = {d["name"] for d in diff if d["run_type"] == "iteration"}
assert len(names) == int(sys.argv[2]), (len(names), sys.argv[2])
# Every sample is a repetition, so the U test runs wherever gbench has its two repetitions; a
# provider stopped at one sample by --timeout on a loaded host (its row says STOP_NOT_CONVERGED)
# has too few for it, which is gbench's rule, not an export fault.
reps = {}
for b in a["benchmarks"]:
    if b.get("run_type") == "iteration":
        reps[b["run_name"]] = reps.get(b["run_name"], 0) + 1
tested = 0
for d in diff:
    if d["run_type"] == "iteration" and reps.get(d["name"], 0) >= report.UTEST_MIN_REPETITIONS:
        assert d["utest"], (d["name"], reps.get(d["name"]))
        tested += 1
assert tested > 0, reps
PY

# --- export gbench of many samples is written as it goes: one object per sample held at once
# took about 160 times the run.log in memory (47 MB of run.log: 7.6 GB, docs/limits.md).
mkdir -p "$T/bigsamples"
cp -r "$A" "$T/bigsamples/"
BIG=$(ls -d "$T"/bigsamples/a-*)
many_samples "$BIG/run.log" 1
$PY - "$CAL" "$BIG" "$T/big.gb.json" <<'PY' || check_fail "export gbench of 100000 samples a provider"
import os, resource, subprocess, sys
cal, run, out = sys.argv[1:4]
log_mb = os.path.getsize(os.path.join(run, "run.log")) / 2**20
with open(out, "wb") as f:
    rc = subprocess.call([cal, "export", run, "--format", "gbench"], stdout=f, stderr=subprocess.DEVNULL)
assert rc == 0, rc
peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
# 20 times the run.log and 200 MB for the program (a sanitizer build's own): the document held
# whole needed 160 times.
assert peak_mb < 20 * log_mb + 200, "%.0f MB of memory for a run.log of %.1f MB" % (peak_mb, log_mb)
PY
$PY -c '
import json, sys
d = json.load(open(sys.argv[1]))
n = sum(1 for b in d["benchmarks"] if b["run_type"] == "iteration")
assert n == 100000 * int(sys.argv[2]), (n, sys.argv[2])' "$T/big.gb.json" "$provs" ||
  check_fail "export gbench of 100000 samples a provider lost entries"
rm -rf "$T/bigsamples" "$T/big.gb.json"

# --- refused: a bad format, a missing directory (nothing written)
expect_refused "export --format xlsx" "--format xlsx csv json gbench" -- \
  "$CAL" export "$A" --format xlsx --out "$T/refused-out"
expect_refused "export of nothing" "export nothing-here" -- \
  "$CAL" export "$T/nothing-here" --out "$T/refused-out"

# --- summary --format csv: one table; its notes on stderr
"$CAL" summary "$A" --format csv > "$T/s.csv" 2> "$T/s.err" || check_fail "summary csv exit $?"
grep -q '^#' "$T/s.csv" && check_fail "summary csv carries a comment line: $(grep '^#' "$T/s.csv")"
grep -q '^note: geomean' "$T/s.err" || check_fail "summary csv: the note is not on stderr"
$PY - "$T/s.csv" <<'PY' || check_fail "summary csv via pandas"
import sys
import pandas as pd
df = pd.read_csv(sys.argv[1])
for c in ("rows", "speedup_rows", "fallback", "poisoned", "failed", "skipped"):
    assert pd.api.types.is_integer_dtype(df[c]), (c, df[c].dtype)
assert "(all)" in set(df["op"]), set(df["op"])
PY

# --- compare --format csv: the per-pair table alone; the other tables on stderr
"$CAL" compare "$A" "$B" --format csv > "$T/c.csv" 2> "$T/c.err" || check_fail "compare csv exit $?"
$PY - "$T/c.csv" "$provs" <<'PY' || check_fail "compare csv via pandas"
import sys
import pandas as pd
df = pd.read_csv(sys.argv[1])
assert list(df.columns)[:3] == ["op", "dtype", "shape"], list(df.columns)
assert df.shape[0] == int(sys.argv[2]), df.shape
assert pd.api.types.is_integer_dtype(df["n_a"]), df["n_a"].dtype
assert pd.api.types.is_float_dtype(df["ratio"]), df["ratio"].dtype
assert set(df["verdict"]) <= {"FASTER", "SLOWER", "SAME", "UNSURE"}
PY
grep -q 'Per op: range of the pairs' "$T/c.err" || check_fail "compare csv: the per-op table is not on stderr"
grep -q 'Pairing by' "$T/c.err" || check_fail "compare csv: the pairing table is not on stderr"

# --- schema (docs/run-log.md, Compatibility): the run driver writes it; a run without it is
# read as schema 0; a newer one is refused by every reader with exit 2
$PY - "$A" <<'PY' || check_fail "the run driver writes schema 1"
import json, sys
head = json.loads(open(sys.argv[1] + "/run.log").readline())
assert head["type"] == "header" and head["schema"] == 1, head
assert json.load(open(sys.argv[1] + "/run_identity.json"))["schema"] == 1
PY
mkdir -p "$T/old" "$T/new"
cp -r "$A" "$T/old/"
cp -r "$A" "$T/new/"
O=$(ls -d "$T"/old/a-*)
N=$(ls -d "$T"/new/a-*)
$PY - "$O" "$N" <<'PY' || fatal "rewriting the schema"
import json, sys
def rewrite(d, schema):
    lines = open(d + "/run.log").read().splitlines()
    head = json.loads(lines[0])
    if schema is None:
        head.pop("schema")
    else:
        head["schema"] = schema
    lines[0] = json.dumps(head)
    open(d + "/run.log", "w").write("\n".join(lines) + "\n")
    ident = json.load(open(d + "/run_identity.json"))
    if schema is None:
        ident.pop("schema")
    json.dump(ident, open(d + "/run_identity.json", "w"))
rewrite(sys.argv[1], None)
rewrite(sys.argv[2], 99)
PY
"$CAL" export "$O" --format csv > "$T/old.csv" 2> /dev/null || check_fail "a run without schema (0) is not read"
[ "$(grep -c . "$T/old.csv")" -eq $((provs + 1)) ] || check_fail "a run without schema lost rows"
expect_refused "export of schema 99" "schema 99 newer run.log" -- \
  "$CAL" export "$N" --out "$T/refused-out"
expect_refused "summary of schema 99" "schema 99 newer" -- "$CAL" summary "$N"
expect_refused "compare with schema 99" "schema 99 newer" -- "$CAL" compare "$A" "$N"
expect_refused "report of schema 99" "schema 99 newer" -- "$CAL" report "$N" --html "$T/refused-out/r.html"
$PY - "$N" <<'PY' || fatal "rewriting the identity schema"
import json, sys
d = sys.argv[1]
lines = open(d + "/run.log").read().splitlines()
head = json.loads(lines[0]); head["schema"] = 1; lines[0] = json.dumps(head)
open(d + "/run.log", "w").write("\n".join(lines) + "\n")
ident = json.load(open(d + "/run_identity.json")); ident["schema"] = 7
json.dump(ident, open(d + "/run_identity.json", "w"))
PY
expect_refused "export of an identity of schema 7" "schema 7 newer run_identity.json" -- \
  "$CAL" export "$N" --out "$T/refused-out"
cli_done
