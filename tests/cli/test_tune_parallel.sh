#!/usr/bin/env bash
# Parallel warmup end to end on the cpu backend (two core groups as two devices): the sweep is
# sharded over child processes pinned to the physical groups behind the caller's indices, merged
# into the cache, and the serial measurement (and a later live run) finds every key cached.
# Too many shards is refused before anything is written; an empty PARALLEL_WARMUP_GPUS is a no-op.
set -u
CAL=$1
if ! "$CAL" list --names --backend cpu 2>/dev/null | grep -qx mm; then
  echo "FAIL: caliber list shows no host mm"; exit 1  # a broken list fails, it does not skip
fi
if [ "$(nproc)" -lt 2 ]; then echo "skip: two device groups need two cores"; exit 77; fi
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
unset CALIBER_CPU_VISIBLE_DEVICES PARALLEL_WARMUP_GPUS CALIBER_TUNE_CACHE OP OP_FILE TEST_NODE \
  REPLAY_FROM BENCH_LEVEL CALIBER_SEED
export CALIBER_CPU_DEVICES=2
export XDG_CACHE_HOME="$T/xdg"  # the default cache too stays private to this test
FAST=(--backend cpu --min-samples 3 --min-time 0 --warmup 0)
one_dir() { ls -d "$1"/*/ 2>/dev/null | head -1; }
footer() { grep '"type":"footer"' "$1/run.log"; }
# Without the sqlite3 shell the key counts are taken on trust from the run's own files.
db_count() {
  if command -v sqlite3 > /dev/null; then sqlite3 "$1" "select count(*) from tune_configs"; else echo "$2"; fi
}

# (a) Two shards over devices 0,1, fresh cache.
"$CAL" run mm --level comprehensive --parallel-warmup 2 --devices 0,1 --tune-cache "$T/cache.db" \
  --out "$T/a" "${FAST[@]}" > "$T/a.txt" 2>&1
rc=$?
cat "$T/a.txt"
[ "$rc" -eq 0 ] || fail "parallel warmup run exited $rc"
R=$(one_dir "$T/a")
[ -n "$R" ] || fail "no run directory"
res=$(jq -c .parallel_warmup_result "$R/run_identity.json")
[ "$(jq .shards <<< "$res")" = 2 ] || fail "identity parallel_warmup_result: $res"
[ "$(jq .failed_shards <<< "$res")" = 0 ] || fail "a shard failed: $res"
keys=$(jq .keys <<< "$res")
[ "$keys" -gt 0 ] || fail "the shards tuned no key: $res"
for i in 0 1; do
  [ -s "$R/warmup/shard-$i.log" ] || fail "no log for shard $i"
  grep -q "^tune shard $i/2: .* cases, .* keys swept" "$R/warmup/shard-$i.log" ||
    fail "shard $i did not finish: $(cat "$R/warmup/shard-$i.log")"
done
# Both shards really tuned (not one doing everything).
for i in 0 1; do
  n=$(grep -c 'tuned (1 keys swept' "$R/warmup/shard-$i.log")
  [ "$n" -gt 0 ] || fail "shard $i swept nothing"
done
[ -s "$T/cache.db" ] || fail "no merged cache"
[ "$(db_count "$T/cache.db" "$keys")" -eq "$keys" ] || fail "merged cache holds $(db_count "$T/cache.db") keys, not $keys"
grep -q "parallel warmup: 2 shards, $keys keys, [0-9]* disagreements" "$T/a.txt" ||
  fail "no summary line"
[ "$(footer "$R" | jq .tune.keys_tuned)" = 0 ] || fail "the measurement after warmup tuned again"
[ "$(footer "$R" | jq .parallel_warmup.shards)" = 2 ] || fail "footer lacks the warmup result"
[ "$(grep -c '"type":"case"' "$R/run.log")" -eq 16 ] || fail "expected 16 case rows"
grep '"type":"case"' "$R/run.log" | jq -e -s 'all(.status == "ok")' > /dev/null ||
  fail "a case failed after warmup"

# A second live run, no warmup: everything is cached.
"$CAL" run mm --level comprehensive --tune-cache "$T/cache.db" --out "$T/a2" "${FAST[@]}" \
  > "$T/a2.txt" 2>&1 || fail "second live run exited $?"
R2=$(one_dir "$T/a2")
[ "$(footer "$R2" | jq .tune.keys_tuned)" = 0 ] || fail "second run tuned $(footer "$R2" | jq .tune)"
grep '"type":"case"' "$R2/run.log" |
  jq -e -s '[.[].providers[] | select(.role == "candidate") | .tune.source] | all(. == "cache")' \
    > /dev/null || fail "second run's candidates were not all from the cache"

# (b) Pinning: each shard runs on the physical group behind the caller's index.
grep -q 'CALIBER_CPU_VISIBLE_DEVICES=0;' "$R/warmup/shard-0.log" || fail "shard 0 not pinned to group 0"
grep -q 'physical 0)' "$R/warmup/shard-0.log" || fail "shard 0 not on physical 0"
grep -q 'CALIBER_CPU_VISIBLE_DEVICES=1;' "$R/warmup/shard-1.log" || fail "shard 1 not pinned to group 1"
grep -q 'physical 1)' "$R/warmup/shard-1.log" || fail "shard 1 not on physical 1"
# Reversed visibility: the caller's device 0 is group 1, never the bare index 0.
CALIBER_CPU_VISIBLE_DEVICES=1,0 "$CAL" run mm --parallel-warmup 2 --devices 0,1 \
  --tune-cache "$T/rev.db" --out "$T/b" "${FAST[@]}" > "$T/b.txt" 2>&1 || fail "reversed run exited $?"
R=$(one_dir "$T/b")
grep -q 'CALIBER_CPU_VISIBLE_DEVICES=1;' "$R/warmup/shard-0.log" ||
  fail "under 1,0 shard 0 must run on group 1: $(head -1 "$R/warmup/shard-0.log")"
grep -q 'physical 1)' "$R/warmup/shard-0.log" || fail "shard 0 not on physical 1"
grep -q 'CALIBER_CPU_VISIBLE_DEVICES=0;' "$R/warmup/shard-1.log" ||
  fail "under 1,0 shard 1 must run on group 0: $(head -1 "$R/warmup/shard-1.log")"
# One shard on the caller's device 1 alone: group 0 under the reversed list.
CALIBER_CPU_VISIBLE_DEVICES=1,0 "$CAL" run mm --parallel-warmup 1 --devices 1 \
  --tune-cache "$T/rev1.db" --out "$T/b1" "${FAST[@]}" > "$T/b1.txt" 2>&1 || fail "one-shard run exited $?"
R=$(one_dir "$T/b1")
grep -q 'CALIBER_CPU_VISIBLE_DEVICES=0;' "$R/warmup/shard-0.log" ||
  fail "device 1 under 1,0 is group 0: $(head -1 "$R/warmup/shard-0.log")"

# Record mode: the shards stay isolated from the shared cache, the merge goes to the run's tune.db.
"$CAL" run mm --tune record --parallel-warmup 2 --devices 0,1 --tune-cache "$T/untouched.db" \
  --out "$T/rec" "${FAST[@]}" > "$T/rec.txt" 2>&1 || fail "record run exited $?"
R=$(one_dir "$T/rec")
k=$(jq .parallel_warmup_result.keys "$R/run_identity.json")
[ "$k" -gt 0 ] || fail "record warmup tuned nothing"
[ -s "$R/tune.db" ] || fail "no tune.db in the record run"
[ "$(db_count "$R/tune.db" "$k")" -eq "$k" ] || fail "record tune.db holds $(db_count "$R/tune.db"), not $k"
[ ! -e "$T/untouched.db" ] || fail "record mode wrote the shared cache"
[ "$(footer "$R" | jq .tune.keys_tuned)" = 0 ] || fail "record measurement tuned again"

# (d) More shards than devices: refused, exit 2, nothing written.
"$CAL" run mm --parallel-warmup 3 --devices 0,1 --tune-cache "$T/d.db" --out "$T/d" "${FAST[@]}" \
  > "$T/d.txt" 2>&1
rc=$?
cat "$T/d.txt"
[ "$rc" -eq 2 ] || fail "--parallel-warmup 3 with 2 devices exited $rc, expected 2"
grep -q 'parallel-warmup' "$T/d.txt" || fail "the refusal does not name the knob"
[ -z "$(ls -A "$T/d" 2>/dev/null)" ] || fail "a refused run wrote $(ls "$T/d")"
PARALLEL_WARMUP_GPUS=3 "$CAL" run mm --devices 0,1 --tune-cache "$T/d.db" --out "$T/d" "${FAST[@]}" \
  > "$T/d2.txt" 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "PARALLEL_WARMUP_GPUS=3 with 2 devices exited $rc, expected 2"
[ -z "$(ls -A "$T/d" 2>/dev/null)" ] || fail "a refused run wrote $(ls "$T/d")"
# A shard device that does not exist: refused up front too, not after claiming a directory.
"$CAL" run mm --parallel-warmup 2 --devices 0,5 --tune-cache "$T/d.db" --out "$T/d" "${FAST[@]}" \
  > "$T/d3.txt" 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "--devices 0,5 with 2 device groups exited $rc, expected 2"
[ -z "$(ls -A "$T/d" 2>/dev/null)" ] || fail "a refused run wrote $(ls "$T/d")"
# Empty: a silent no-op.
PARALLEL_WARMUP_GPUS= "$CAL" run mm --devices 0,1 --tune-cache "$T/e.db" --out "$T/e" "${FAST[@]}" \
  > "$T/e.txt" 2>&1 || fail "PARALLEL_WARMUP_GPUS= run exited $?"
R=$(one_dir "$T/e")
! grep -qi 'parallel warmup' "$T/e.txt" || fail "an empty PARALLEL_WARMUP_GPUS said something"
[ ! -e "$R/warmup" ] || fail "an empty PARALLEL_WARMUP_GPUS spawned shards"
[ "$(jq .parallel_warmup_result "$R/run_identity.json")" = null ] || fail "no-op run has a warmup result"
echo PASS
