#!/usr/bin/env bash
# A batch killed with SIGKILL while its child is still loading, where something in the loading
# unblocks SIGTERM before caliber's main (seen on a GPU host, 2026-12-05: the child died of the
# batch's parent-death SIGTERM before it could record anything, and its row stayed `running`).
# A preloaded library stands in for that loader: in a batch's child, its constructor waits for
# the batch to die, then unblocks SIGTERM. The row must still end `interrupted`, no process of the
# batch may run on, and the batch's lease is free.
set -u
CAL=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
use_test_ops test_hang
T=$(mktemp -d)
trap 'pkill -KILL -f "$T/runs" 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; [ -n "${B:-}" ] && cat "$B/ops_status.csv" "$B/logs/"*.log; exit 1; }

cat > "$T/unblock.c" <<'C'
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
/* In a batch's child only (the batch itself has no CALIBER_BATCH_PARENT): wait (at most 20 s)
   for the batch to die, then unblock SIGTERM, as a library that resets the signal mask while the
   program loads would. */
__attribute__((constructor)) static void unblock_once_the_batch_died(void) {
  const char* parent = getenv("CALIBER_BATCH_PARENT");
  if (parent == NULL) return;
  for (int i = 0; i < 2000 && getppid() == atoi(parent); ++i) usleep(10000);
  usleep(200000); /* the kernel's parent-death signal is pending by now */
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigprocmask(SIG_UNBLOCK, &term, NULL);
}
C
cc -shared -fPIC -o "$T/unblock.so" "$T/unblock.c" || fail "cannot build the preload library"

# An instrumented build wants its sanitizer runtime first among the preloads.
LD_PRELOAD="$T/unblock.so" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
  "$CAL" batch test_hang --backend cpu --devices 0 --out "$T/runs" --timeout-per-op 120 \
  --min-samples 3 --min-time 0 --warmup 0 > "$T/out.txt" 2>&1 &
pid=$!
B=""
for _ in $(seq 1 600); do
  B=$(ls -d "$T"/runs/batch-* 2>/dev/null | head -1)
  [ -n "$B" ] && grep -q '^test_hang,running' "$B/ops_status.csv" 2>/dev/null && break
  sleep 0.05
done
grep -q '^test_hang,running' "$B/ops_status.csv" || fail "test_hang never started: $(cat "$T/out.txt")"
kill -KILL "$pid"
wait "$pid" 2>/dev/null
status() { awk -F, -v op="$1" '$1 == op { print $2 }' "$B/ops_status.csv"; }
for _ in $(seq 1 300); do
  [ "$(status test_hang)" != running ] && ! pgrep -f "$T/runs" > /dev/null && break
  sleep 0.1
done
[ "$(status test_hang)" = interrupted ] || fail "test_hang's row ended '$(status test_hang)', not interrupted"
grep -q '^test_hang,interrupted,.*the batch process ended while this op ran' "$B/ops_status.csv" ||
  fail "the row does not say the batch ended"
left=$(pgrep -f "$T/runs")
[ -z "$left" ] || fail "processes of the killed batch ran on: $left"
flock -n "$B/.batch.lease" true || fail "the killed batch's lease is still held"
echo PASS
