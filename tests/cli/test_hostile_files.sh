#!/usr/bin/env bash
# Hostile files (docs/limits.md): output paths that are not regular files, sizes that overflow 64 bits,
# run.logs with bad bytes and non-JSON numbers, a huge op name, include fan-outs, many shapes and
# many samples. Nothing is replaced that is not a regular file, nothing crashes, nothing is lost
# silently, and nothing takes long.
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_init "$@"

"$CAL" run add sum "${FAST[@]}" --out "$T/runs" --name r > /dev/null 2>&1 || fatal "a cpu run failed"
R=$(only_run_dir "$T/runs")

# --- report --html never replaces a device, a fifo, a directory or a symbolic link.
mknod "$T/null" c 1 3 2> /dev/null || mkfifo "$T/null"
kind_before=$(stat -c %F "$T/null")
expect_refused "report --html a device" "regular" -- "$CAL" report "$R" --html "$T/null"
[ "$(stat -c %F "$T/null")" = "$kind_before" ] || check_fail "report --html replaced $T/null ($kind_before)"
echo keep > "$T/target.html"
ln -s "$T/target.html" "$T/link.html"
expect_refused "report --html a symlink" "symbolic" -- "$CAL" report "$R" --html "$T/link.html"
[ -L "$T/link.html" ] || check_fail "report --html replaced the symlink"
[ "$(cat "$T/target.html")" = keep ] || check_fail "report --html wrote through the symlink"
"$CAL" report "$R" --html "$T/page.html" > /dev/null || check_fail "report --html a new file: exit $?"

# --- No output lands on a data file of caliber's results, another run's or batch's included
# (summary and identity of that run would read HTML or CSV afterwards).
"$CAL" run sum "${FAST[@]}" --out "$T/runs2" --name other > /dev/null 2>&1 || fatal "a cpu run failed"
O=$(only_run_dir "$T/runs2")
sums_before=$(md5sum "$O"/* | md5sum)
expect_refused "export --out another run's run.log" "data file of caliber's results" -- \
  "$CAL" export "$R" --out "$O/run.log"
expect_refused "report --html another run's identity" "data file of caliber's results" -- \
  "$CAL" report "$R" --html "$O/run_identity.json"
expect_refused "history --html another run's run.log" "data file of caliber's results" -- \
  "$CAL" history "$R" --html "$O/run.log"
[ "$(md5sum "$O"/* | md5sum)" = "$sums_before" ] || check_fail "another run's files were changed"

# --- A run.log of which no line reads is no run of nothing: summary, export and report refuse
# it by name (exit 2), as compare and history do.
cp -r "$R" "$T/garbage"
head -c 65536 /dev/urandom > "$T/garbage/run.log"
expect_refused "summary of a garbage run.log" "not a caliber run.log" -- "$CAL" summary "$T/garbage"
expect_refused "export of a garbage run.log" "not a caliber run.log" -- "$CAL" export "$T/garbage"
expect_refused "report of a garbage run.log" "not a caliber run.log" -- \
  "$CAL" report "$T/garbage" --html "$T/garbage.html"

# --- An identity whose fields have the wrong types is read leniently: the readers say what
# differs, never a JSON library's type error.
cp -r "$R" "$T/typed"
python3 - "$T/typed/run_identity.json" << 'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d.update(backend=5, profile=5, device={"uuid": 7, "name": []})
json.dump(d, open(sys.argv[1], "w"))
PY
for cmd in "compare $R $T/typed" "history $R $T/typed" "report --ab $R $T/typed --html $T/typed.html"; do
  # shellcheck disable=SC2086
  "$CAL" $cmd > "$T/typed.out" 2>&1
  rc=$?
  [ "$rc" -le 2 ] || check_fail "$cmd: exit $rc"
  grep -q "json.exception" "$T/typed.out" && check_fail "$cmd: a raw JSON error: $(grep json.exception "$T/typed.out")"
done

# --- Sizes past 64 bits are skipped with their real size: no crash, no wrap, no "empty shape".
cat > "$T/huge.yaml" << 'YAML'
families:
  pointwise: [[4294967297, 4294967297], [4294967296, 4294967296]]
  reduction: [[4294967297, 4294967297], [4294967296, 4294967296]]
ops:
  mm: [[1, 4294967296, 4294967296, 4294967296]]
  add: {family: pointwise}
  sum: {family: reduction}
YAML
# The wall limits only stop a hang: the verdicts are CPU time, and a loaded host may stretch a run
# allowed 30 s of CPU well past 60 s of wall (each limit is 5x or more of its CPU bound).
elapsed timeout 300 "$CAL" run mm sum add "${FAST[@]}" --out "$T/huge" --shapes "$T/huge.yaml" \
  > "$T/huge.out" 2>&1
rc=$?
[ "$rc" -le 1 ] || check_fail "huge shapes: exit $rc: $(tail -3 "$T/huge.out")"
[ "$ELAPSED_MS" -lt 30000 ] || check_fail "huge shapes took $ELAPSED_MS ms of CPU"
H=$(only_run_dir "$T/huge")
py 'import json,sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
cases = [r for r in rows if r.get("type") == "case"]
assert len(cases) >= 5, len(cases)  # every dtype of mm, sum, add
for c in cases:
    assert c["status"] == "skipped", (c["node"], c["status"], c.get("reason"))
    assert "too large" in c["reason"] and "empty" not in c["reason"], (c["node"], c["reason"])
big = [c for c in cases if c["op"] == "sum" and c["dims"] == [4294967297, 4294967297]][0]
assert "1.84e+19" in big["reason"], big["reason"]' "$H/run.log" || check_fail "huge shapes rows"

# --- run.log rows with invalid UTF-8, NaN, Infinity or 1e999999 are kept (repaired) and counted.
n_rows=$(grep -c '"type":"case"' "$R/run.log")
cp -r "$R" "$T/bad"
python3 - "$T/bad/run.log" << 'PY'
import sys
p = sys.argv[1]
lines = open(p, "rb").read().split(b"\n")
case = [i for i, l in enumerate(lines) if b'"type":"case"' in l]
l0 = lines[case[0]]
lines[case[0]] = l0.replace(b'"dtype":"', b'"dtype":"\xff\xfe', 1)
lines[case[1]] = lines[case[1]].replace(b'"repeat":1', b'"repeat":NaN', 1)
lines[case[2]] = lines[case[2]].replace(b'"repeat":1', b'"repeat":1e999999', 1)
lines[case[3]] = lines[case[3]].replace(b'"repeat":1', b'"repeat":-Infinity', 1)
lines.insert(case[3] + 1, b'{"type":"case", broken')
open(p, "wb").write(b"\n".join(lines))
PY
"$CAL" summary "$T/bad" --format json > "$T/bad.json" 2> "$T/bad.err" || check_fail "summary of a repaired log: exit $?"
py 'import json,sys
j = json.load(open(sys.argv[1]))
rows = sum(r["rows"] for r in j["summary"]["rows"] if r["op"] == "(all)")
assert rows == int(sys.argv[2]), (rows, sys.argv[2])
notes = " ".join(j["summary"]["notes"])
assert "4 run.log line(s) were read after a repair" in notes, notes
assert "1 run.log line(s) could not be read" in notes, notes' "$T/bad.json" "$n_rows" ||
  check_fail "summary lost or did not count repaired rows"

# --- A 1 MB op name is cut in what is printed.
cp -r "$R" "$T/longname"
python3 - "$T/longname/run.log" << 'PY'
import sys
p = sys.argv[1]
t = open(p).read().replace('"op":"add"', '"op":"' + "a" * 1000000 + '"', 1)
open(p, "w").write(t)
PY
"$CAL" summary "$T/longname" > "$T/longname.txt" 2>&1 || check_fail "summary of a long op name: exit $?"
size=$(wc -c < "$T/longname.txt")
[ "$size" -lt 20000 ] || check_fail "summary printed $size bytes for a 1 MB op name"
grep -q "more bytes" "$T/longname.txt" || check_fail "the cut op name does not say it was cut"

# --- compare and summary --ab: a side with no readable case row is bad input (exit 2).
cp -r "$R" "$T/empty"
: > "$T/empty/run.log"
expect_refused "compare with an empty side" "side B holds no readable case row" -- \
  "$CAL" compare "$R" "$T/empty"
expect_refused "compare --fail-on-regression with an empty side" "side A" -- \
  "$CAL" compare "$T/empty" "$R" --fail-on-regression 5
expect_refused "summary --ab with an empty side" "side B" -- "$CAL" summary --ab "$R" "$T/empty"

# --- A directory in place of run_identity.json is named as such.
cp -r "$R" "$T/iddir"
rm "$T/iddir/run_identity.json"
mkdir "$T/iddir/run_identity.json"
"$CAL" identity "$T/iddir" > /dev/null 2> "$T/iddir.err"
grep -q "not a regular file" "$T/iddir.err" || check_fail "identity of a directory: $(cat "$T/iddir.err")"
grep -q "underflow" "$T/iddir.err" && check_fail "identity of a directory: $(cat "$T/iddir.err")"

# --- Include fan-out: each file includes the next one twice, 24 deep (2^24 reads unmemoized).
mkdir "$T/inc"
for i in $(seq 1 24); do
  printf 'include: [f%d.yaml, f%d.yaml]\nfamilies:\n  pointwise: [[%d]]\n' $((i + 1)) $((i + 1)) "$i" > "$T/inc/f$i.yaml"
done
printf 'families:\n  pointwise: [[25]]\n' > "$T/inc/f25.yaml"
printf 'families:\n  pointwise: [[8]]\nops:\n  add: {family: pointwise}\ncomprehensive:\n  include: [f1.yaml]\n' > "$T/inc/top.yaml"
elapsed timeout 60 "$CAL" list add --backend cpu --level comprehensive --shapes "$T/inc/top.yaml" \
  --json > "$T/inc.json" 2>&1 || check_fail "include fan-out: exit $?: $(tail -2 "$T/inc.json")"
[ "$ELAPSED_MS" -lt 5000 ] || check_fail "include fan-out took $ELAPSED_MS ms of CPU"
py 'import json,sys; j=json.load(open(sys.argv[1])); assert j["total_cases"] >= 26, j' "$T/inc.json" ||
  check_fail "include fan-out: cases"

# --- 40k shapes: list is not quadratic.
python3 -c '
import sys
print("families:\n  pointwise: [" + ", ".join("[%d]" % (i + 1) for i in range(40000)) + "]")
print("ops:\n  add: {family: pointwise}")' > "$T/many.yaml"
elapsed timeout 60 "$CAL" list add --backend cpu --shapes "$T/many.yaml" > /dev/null 2>&1 ||
  check_fail "40k shapes: exit $?"
[ "$ELAPSED_MS" -lt 8000 ] || check_fail "list of 40k shapes took $ELAPSED_MS ms of CPU"

# --- compare of a row with 100k samples a side.
for side in A B; do
  cp -r "$R" "$T/big$side"
  many_samples "$T/big$side/run.log" "$([ "$side" = A ] && echo 1 || echo 2)"
done
elapsed timeout 300 "$CAL" compare "$T/bigA" "$T/bigB" > "$T/big.txt" 2>&1
rc=$?
[ "$rc" -le 1 ] || check_fail "compare of 100k samples: exit $rc: $(tail -3 "$T/big.txt")"
# CPU on the 2-core CI host, 2026-12-03: 3.3 s release, 15.2 s under ASan + UBSan; the quadratic
# pairing this guards against would take hours.
[ "$ELAPSED_MS" -lt 60000 ] || check_fail "compare of 100k samples a side took $ELAPSED_MS ms of CPU"

cli_done
