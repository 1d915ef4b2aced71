#!/usr/bin/env bash
# caliber batch --scheduler slurm --parallel-warmup 2 against a real controller (tests/slurm/cluster):
# the sweep over the batch's ops runs as an array of two shard tasks, one dependent job merges their
# caches into the shared tune cache after both ended, the op array starts only after the merge and
# finds every key cached (measurement tunes nothing), and the result is reported as a local warmup
# reports it. SIGINT while the jobs wait cancels all three and leaves nothing queued. A record-mode
# warmup across nodes, and a sharded warmup in a local batch, are refused before anything is written.
source "$(dirname "$0")/lib.sh"
cli_init "$@"
slurm_init
OPS=(mm add)

"$CAL" batch "${OPS[@]}" --scheduler slurm --parallel-warmup 2 --level comprehensive "${FAST[@]}" \
  --out "$T/slurm" > "$T/out.txt" 2>&1
rc=$?
cat "$T/out.txt"
[ "$rc" -eq 0 ] || fatal "exit $rc, expected 0"
B=$(only_run_dir "$T/slurm")
S=$B/ops_status.csv
for op in "${OPS[@]}"; do [ "$(status_of "$S" "$op")" = ok ] || check_fail "$op: $(status_of "$S" "$op")"; done
W=$B/warmup-1
# Three jobs, in order: the shards, the merge after them, the ops after the merge.
read -r SHARDS MERGE OPSJOB < <(py 'import json,sys; print(*json.load(open(sys.argv[1]+"/batch.json"))["slurm_jobs"])' "$B")
[ -n "$OPSJOB" ] || fatal "batch.json records $SHARDS $MERGE $OPSJOB, not three jobs"
grep -q '^#SBATCH --array=0-1$' "$B/slurm/warmup-1.sbatch" || check_fail "the warmup is not one array of 2 tasks"
grep -q -- '--tune-shard "$i/2"' "$B/slurm/warmup-1.sbatch" || check_fail "the shard tasks do not tune shard i/2"
grep -q "^#SBATCH --dependency=afterany:$SHARDS\$" "$B/slurm/merge-1.sbatch" || check_fail "the merge does not wait for job $SHARDS"
grep -q "^#SBATCH --dependency=afterany:$MERGE\$" "$B/slurm/array-1.sbatch" || check_fail "the ops do not wait for job $MERGE"
! grep -q -- '--parallel-warmup' "$B/slurm/array-1.sbatch" || check_fail "an op task would start a warmup of its own"
# The order really held: the merge began after both shards ended, every op after the merge ended.
py '
import sys
def rec(f):
    return dict(kv.split("=", 1) for kv in open(f).read().split())
w, s = sys.argv[1], sys.argv[2]
shards = [rec("%s/shard-%d.exit" % (w, i)) for i in (0, 1)]
merge = rec(w + "/merge.exit")
ops = [rec("%s/%s.exit" % (s, op)) for op in sys.argv[3:]]
assert all(r["rc"] == "0" for r in shards + [merge] + ops), (shards, merge, ops)
assert int(merge["start_ns"]) >= max(int(r["end_ns"]) for r in shards), (merge, shards)
assert min(int(r["start_ns"]) for r in ops) >= int(merge["end_ns"]), (ops, merge)
' "$W" "$B/slurm" "${OPS[@]}" || check_fail "the jobs did not run shards, then merge, then ops"
# Both shards tuned part of the sweep, on distinct array tasks.
for i in 0 1; do
  grep -q "^tune shard $i/2: " "$W/shard-$i.log" || check_fail "shard $i did not run: $(cat "$W/shard-$i.log")"
  [ "$(grep -c 'tuned (1 keys swept' "$W/shard-$i.log")" -gt 0 ] || check_fail "shard $i swept nothing"
done
# The result, as batch.json keeps it and as the parent printed it.
res=$(py 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]+"/batch.json"))["parallel_warmup"][-1]))' "$B")
keys=$(py 'import json,sys; r=json.loads(sys.argv[1]); assert r["shards"]==2 and r["failed_shards"]==0, r; print(r["keys"])' "$res") ||
  check_fail "batch.json parallel_warmup: $res"
[ "${keys:-0}" -gt 0 ] || check_fail "the warmup tuned no key: $res"
grep -q "^parallel warmup: 2 shards, $keys keys, [0-9]* disagreements" "$T/out.txt" || check_fail "no summary line"
grep -q "merged into $CALIBER_TUNE_CACHE" "$T/out.txt" || check_fail "not merged into the shared cache $CALIBER_TUNE_CACHE"
if command -v sqlite3 > /dev/null; then
  [ "$(sqlite3 "$CALIBER_TUNE_CACHE" 'select count(*) from tune_configs')" -eq "$keys" ] ||
    check_fail "the cache holds $(sqlite3 "$CALIBER_TUNE_CACHE" 'select count(*) from tune_configs') keys, not $keys"
fi
# Measurement after the warmup tuned nothing: every key came from the merged cache.
for op in "${OPS[@]}"; do
  d=$(ls -d "$B/$op"-* | head -1)
  py 'import json,sys
f=[json.loads(l) for l in open(sys.argv[1]+"/run.log") if "\"footer\"" in l][-1]
assert f["tune"]["keys_tuned"] == 0, f["tune"]' "$d" || check_fail "$op's measurement tuned again"
done
[ "$(grep -c '"type":"case"' "$(ls -d "$B"/mm-* | head -1)/run.log")" -eq 16 ] || check_fail "mm: expected 16 case rows"
for j in "$SHARDS" "$MERGE" "$OPSJOB"; do
  [ -z "$(squeue -h -j "$j" 2> /dev/null)" ] || check_fail "job $j still queued"
done

# SIGINT while all three jobs wait (held by --begin): each is cancelled, nothing stays queued, the
# ops are interrupted before they started, exit 130.
"$CAL" batch add --scheduler slurm --parallel-warmup 2 "${FAST[@]}" --sbatch-arg=--begin=now+300 \
  --out "$T/int" > "$T/int.txt" 2>&1 &
pid=$!
for _ in $(seq 1 300); do grep -q '^batch: Slurm job array' "$T/int.txt" 2> /dev/null && break; sleep 0.1; done
grep -q '^batch: Slurm job array' "$T/int.txt" || { kill "$pid"; wait "$pid"; cat "$T/int.txt"; fatal "never submitted"; }
kill -INT "$pid"
wait "$pid"
rc=$?
cat "$T/int.txt"
[ "$rc" -eq 130 ] || check_fail "interrupted: exit $rc, expected 130"
I=$(only_run_dir "$T/int")
[ "$(status_of "$I/ops_status.csv" add)" = interrupted ] || check_fail "add: $(status_of "$I/ops_status.csv" add)"
case "$(reason_of "$I/ops_status.csv" add)" in *"before the task started"*) ;; *) check_fail "reason: $(reason_of "$I/ops_status.csv" add)" ;; esac
for j in $(py 'import json,sys; print(*json.load(open(sys.argv[1]+"/batch.json"))["slurm_jobs"])' "$I"); do
  [ -z "$(squeue -h -j "$j" 2> /dev/null)" ] || check_fail "job $j still queued after the interrupt"
done
[ "$(py 'import json,sys; print(len(json.load(open(sys.argv[1]+"/batch.json"))["slurm_jobs"]))' "$I")" -eq 3 ] ||
  check_fail "the interrupted batch did not record three jobs"

# Refused before anything is written.
expect_refused "record warmup across nodes" "--parallel-warmup record live" -- \
  "$CAL" batch add --scheduler slurm --parallel-warmup 2 --tune record "${FAST[@]}" --out "$T/refused-out"
expect_refused "sharded warmup in a local batch" "--parallel-warmup local slurm" -- \
  "$CAL" batch add --parallel-warmup 2 "${FAST[@]}" --out "$T/refused-out"
cli_done
