#!/usr/bin/env bash
# caliber batch --resume DIR of a Slurm batch: one new array of only the ops that were not ok, into
# the same directory, with the batch's Slurm settings.
source "$(dirname "$0")/lib.sh"
cli_init "$@"
slurm_init
use_test_ops test_fail test_abort

"$CAL" batch add test_fail test_abort --scheduler slurm --sbatch-arg=--comment=caliber-test \
  "${FAST[@]}" --out "$T/runs" > "$T/out1.txt" 2>&1
rc=$?
[ "$rc" -eq 1 ] || { cat "$T/out1.txt"; fatal "first batch exit $rc, expected 1"; }
B=$(only_run_dir "$T/runs")
S=$B/ops_status.csv
JOB1=$(slurm_job_of "$B")
sleep 1.1  # a rerun in the same second would get a -2 directory; keep the names plain
"$CAL" batch --resume "$B" > "$T/out2.txt" 2>&1
rc=$?
cat "$T/out2.txt"
[ "$rc" -eq 1 ] || check_fail "resumed batch exit $rc, expected 1 (test_fail still fails)"
JOB2=$(slurm_job_of "$B")
[ "$JOB2" != "$JOB1" ] || check_fail "no second array was submitted"
grep -q '^#SBATCH --array=0-1$' "$B/slurm/array-2.sbatch" || check_fail "the second array is not of 2 tasks"
grep -q "^ops=('test_fail' 'test_abort')$" "$B/slurm/array-2.sbatch" || check_fail "the second array's ops"
scontrol show job -o "$JOB2" | grep -q 'Comment=caliber-test' || check_fail "--sbatch-arg was not kept for the resume"
[ "$(ls -d "$B"/add-* | wc -l)" -eq 1 ] || check_fail "add was ok and must not rerun"
[ "$(ls -d "$B"/test_fail-* | wc -l)" -eq 2 ] || check_fail "test_fail must rerun once"
[ "$(run_dirs "$T/runs" | wc -l)" -eq 1 ] || check_fail "resume must not claim a new batch directory"
[ "$(status_of "$S" add)" = ok ] || check_fail "add: $(status_of "$S" add)"
[ "$(status_of "$S" test_fail)" = failed ] || check_fail "test_fail: $(status_of "$S" test_fail)"
[ "$(status_of "$S" test_abort)" = crashed ] || check_fail "test_abort: $(status_of "$S" test_abort)"
cli_done
