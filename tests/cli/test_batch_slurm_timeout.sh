#!/usr/bin/env bash
# --time-limit with --scheduler slurm: a task past Slurm's time limit is `timeout` (Slurm TIMEOUT),
# the op that finished in time is ok. Slurm counts limits in whole minutes and looks at them about
# every 30 s, so this test takes one to two minutes.
source "$(dirname "$0")/lib.sh"
cli_init "$@"
slurm_init
use_test_ops test_hang

start=$(date +%s)
"$CAL" batch add test_hang --scheduler slurm --time-limit 0:30 "${FAST[@]}" --out "$T/runs" \
  > "$T/out.txt" 2>&1
rc=$?
cat "$T/out.txt"
echo "took $(($(date +%s) - start)) s"
[ "$rc" -eq 1 ] || check_fail "exit $rc, expected 1"
B=$(only_run_dir "$T/runs")
S=$B/ops_status.csv
[ "$(status_of "$S" add)" = ok ] || check_fail "add: $(status_of "$S" add)"
[ "$(status_of "$S" test_hang)" = timeout ] || check_fail "test_hang: $(status_of "$S" test_hang)"
case "$(reason_of "$S" test_hang)" in *"TIMEOUT"*"00:01:00 as Slurm applied --time-limit 0:30"*) ;; *) check_fail "reason: $(reason_of "$S" test_hang)" ;; esac
grep -q '^#SBATCH --time=0:30$' "$B/slurm/array-1.sbatch" || check_fail "no time limit in the script"
JOB=$(slurm_job_of "$B")
[ -z "$(squeue -h -j "$JOB" 2> /dev/null)" ] || check_fail "job $JOB still queued"
if pgrep -f "$T/runs" > /dev/null; then check_fail "left running: $(pgrep -af "$T/runs")"; fi
cli_done
