#!/usr/bin/env bash
# A Slurm array task whose caliber is killed mid-run (SIGKILL, as the OOM killer would): its op is
# crashed and names the signal, every other task's op is ok with its rows, nothing stays queued.
source "$(dirname "$0")/lib.sh"
cli_init "$@"
slurm_init
use_test_ops test_hang

"$CAL" batch add test_hang sum --scheduler slurm "${FAST[@]}" --out "$T/runs" > "$T/out.txt" 2>&1 &
pid=$!
pat="run test_hang --out $T/runs/"
victim=""
for _ in $(seq 1 300); do
  victim=$(pgrep -f "$pat" | head -1)
  [ -n "$victim" ] && break
  sleep 0.1
done
[ -n "$victim" ] || { kill "$pid"; wait "$pid"; cat "$T/out.txt"; fatal "test_hang's task never started"; }
sleep 1
kill -KILL "$victim"
wait "$pid"
rc=$?
cat "$T/out.txt"
[ "$rc" -eq 1 ] || check_fail "exit $rc, expected 1"
B=$(only_run_dir "$T/runs")
S=$B/ops_status.csv
[ "$(status_of "$S" test_hang)" = crashed ] || check_fail "test_hang: $(status_of "$S" test_hang)"
case "$(reason_of "$S" test_hang)" in *SIGKILL*) ;; *) check_fail "reason names no SIGKILL: $(reason_of "$S" test_hang)" ;; esac
for op in add sum; do
  [ "$(status_of "$S" "$op")" = ok ] || check_fail "$op: $(status_of "$S" "$op")"
  d=$(ls -d "$B/$op"-* | head -1)
  n=$(grep -c '"type":"case"' "$d/run.log")
  [ "$n" -gt 0 ] && [ "$(rows_of "$S" "$op")" = "$n" ] || check_fail "$op: $(rows_of "$S" "$op") rows in ops_status, $n in run.log"
done
JOB=$(slurm_job_of "$B")
[ -z "$(squeue -h -j "$JOB" 2> /dev/null)" ] || check_fail "job $JOB still queued"
if pgrep -f "$T/runs" > /dev/null; then check_fail "left running: $(pgrep -af "$T/runs")"; fi
cli_done
