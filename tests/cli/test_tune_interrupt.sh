#!/usr/bin/env bash
# SIGINT (and SIGTERM) to a run in the middle of its parallel warmup: every shard child is
# terminated and reaped before the parent exits, and the exit code is non-zero. Checked in the
# process table, not only through the parent's word. Then a shard killed from outside: the run
# goes on and tunes that shard's keys live.
set -u
CAL=$1
if ! "$CAL" list --names --backend cpu 2>/dev/null | grep -qx mm; then
  echo "FAIL: caliber list shows no host mm"; exit 1  # a broken list fails, it does not skip
fi
if [ "$(nproc)" -lt 2 ]; then echo "skip: two device groups need two cores"; exit 77; fi
T=$(mktemp -d)
cleanup() {
  # Never leave a stray shard of this test behind, even when an assertion failed.
  for p in $(pgrep -f -- "--shard-cache $T/" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
unset CALIBER_CPU_VISIBLE_DEVICES PARALLEL_WARMUP_GPUS CALIBER_TUNE_CACHE OP OP_FILE TEST_NODE \
  REPLAY_FROM BENCH_LEVEL CALIBER_SEED
export CALIBER_CPU_DEVICES=2
export XDG_CACHE_HOME="$T/xdg"
shards() { pgrep -f -- "--tune-shard .* --shard-cache $T/" 2>/dev/null; }

for sig in INT TERM; do
  out="$T/runs-$sig"
  # A fresh cache and the comprehensive level: the sweep lasts long enough to be interrupted.
  "$CAL" run mm --backend cpu --level comprehensive --parallel-warmup 2 --devices 0,1 \
    --tune-cache "$T/cache-$sig.db" --out "$out" > "$T/out-$sig.txt" 2>&1 &
  pid=$!
  log=""
  for _ in $(seq 1 400); do
    log=$(ls "$out"/*/warmup/shard-1.log 2>/dev/null | head -1)
    # The shard's first line is written once it holds its device and starts sweeping.
    [ -n "$log" ] && grep -q '^tune shard 1/2' "$log" && [ -n "$(shards)" ] && break
    sleep 0.025
  done
  [ -n "$log" ] || fail "SIG$sig: no shard log appeared"
  before=$(shards | wc -l)
  [ "$before" -ge 1 ] || fail "SIG$sig: no shard child was running before the signal"
  kill -"$sig" "$pid"
  wait "$pid"
  rc=$?
  cat "$T/out-$sig.txt"
  [ "$rc" -ne 0 ] || fail "SIG$sig: an interrupted warmup exited 0"
  grep -q 'terminated and reaped' "$T/out-$sig.txt" || fail "SIG$sig: the parent did not say it reaped"
  left=$(shards)
  [ -z "$left" ] || fail "SIG$sig: shard children survived: $(pgrep -af -- "--shard-cache $T/")"
  # The process table itself, in case pgrep missed a process that changed its title.
  for p in /proc/[0-9]*; do
    if grep -qs -- "--shard-cache" "$p/cmdline" 2>/dev/null &&
      tr '\0' ' ' < "$p/cmdline" 2>/dev/null | grep -q -- "$T/"; then
      fail "SIG$sig: a shard process is still in /proc: $p"
    fi
  done
  # The interrupted run measured nothing.
  R=$(ls -d "$out"/*/ | head -1)
  [ "$(grep -c '"type":"case"' "$R/run.log")" -eq 0 ] || fail "SIG$sig: rows measured after the interrupt"
  echo "SIG$sig: $before shard(s) running, none left, exit $rc"
done
# A shard that dies (killed from outside) does not kill the run: the parent counts it, says so,
# and the keys it did not tune are tuned live during the serial measurement.
out="$T/runs-kill"
"$CAL" run mm --backend cpu --level comprehensive --parallel-warmup 2 --devices 0,1 \
  --tune-cache "$T/cache-kill.db" --out "$out" --min-samples 3 --min-time 0 --warmup 0 \
  > "$T/out-kill.txt" 2>&1 &
pid=$!
victim=""
for _ in $(seq 1 400); do
  log=$(ls "$out"/*/warmup/shard-1.log 2>/dev/null | head -1)
  if [ -n "$log" ] && grep -q '^tune shard 1/2' "$log"; then
    victim=$(pgrep -f -- "--tune-shard 1/2 --shard-cache $T/" | head -1)
    [ -n "$victim" ] && break
  fi
  sleep 0.025
done
[ -n "$victim" ] || fail "shard 1 never ran"
kill -KILL "$victim"
wait "$pid"
rc=$?
cat "$T/out-kill.txt"
[ "$rc" -eq 0 ] || fail "a run whose shard was killed exited $rc; the measurement should go on"
R=$(ls -d "$out"/*/ | head -1)
res=$(jq -c .parallel_warmup_result "$R/run_identity.json")
[ "$(jq .failed_shards <<< "$res")" = 1 ] || fail "the killed shard was not counted: $res"
grep -q 'shard 1 (device 1) failed: SIGKILL' "$T/out-kill.txt" || fail "no note names the failed shard"
grep -q 'tuned live during measurement' "$T/out-kill.txt" || fail "no note says the keys are tuned live"
[ "$(grep -c '"type":"case"' "$R/run.log")" -eq 16 ] || fail "the measurement did not run every case"
[ "$(grep '"type":"footer"' "$R/run.log" | jq .tune.keys_tuned)" -gt 0 ] ||
  fail "the killed shard's keys were not tuned live"
[ -z "$(shards)" ] || fail "a shard survived the killed-shard run"
echo PASS
