#!/usr/bin/env bash
# SIGINT to a Slurm batch: the array is cancelled (scancel), nothing of it stays queued or
# running, the op that finished keeps ok and its rows, the rest are interrupted, exit 130.
source "$(dirname "$0")/lib.sh"
cli_init "$@"
slurm_init
use_test_ops test_hang

"$CAL" batch add test_hang --scheduler slurm "${FAST[@]}" --out "$T/runs" > "$T/out.txt" 2>&1 &
pid=$!
B=""
for _ in $(seq 1 300); do
  B=$(run_dirs "$T/runs" | head -1)
  if [ -n "$B" ] && grep -q '^add,ok' "$B/ops_status.csv" 2> /dev/null &&
    grep -q '^test_hang,running' "$B/ops_status.csv" 2> /dev/null; then break; fi
  sleep 0.1
done
grep -q '^test_hang,running' "$B/ops_status.csv" || { kill "$pid"; wait "$pid"; cat "$T/out.txt"; fatal "test_hang never ran"; }
JOB=$(slurm_job_of "$B")
kill -INT "$pid"
wait "$pid"
rc=$?
cat "$T/out.txt"
[ "$rc" -eq 130 ] || check_fail "exit $rc, expected 130 (SIGINT)"
S=$B/ops_status.csv
[ "$(status_of "$S" add)" = ok ] || check_fail "add (finished before the interrupt): $(status_of "$S" add)"
[ "$(status_of "$S" test_hang)" = interrupted ] || check_fail "test_hang: $(status_of "$S" test_hang)"
case "$(reason_of "$S" test_hang)" in *scancel*) ;; *) check_fail "reason: $(reason_of "$S" test_hang)" ;; esac
[ "$(grep -c '"type":"case"' "$(ls -d "$B"/add-* | head -1)/run.log")" -gt 0 ] || check_fail "add's rows were lost"
grep -q "cancelling Slurm job array $JOB" "$T/out.txt" || check_fail "no word of the cancel"
[ -z "$(squeue -h -j "$JOB" 2> /dev/null)" ] || check_fail "job $JOB still queued: $(squeue -j "$JOB")"
if pgrep -f "$T/runs" > /dev/null; then check_fail "left running: $(pgrep -af "$T/runs")"; fi
cli_done
