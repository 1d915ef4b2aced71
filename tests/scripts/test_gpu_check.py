#!/usr/bin/env python3
"""Tests of scripts/gpu-check without a GPU: its --help (every environment knob it reads is
there), bad arguments (exit 2), --dry-run, step selection, and whole runs against a fake caliber
and a fake nvidia-smi, where a failing command or check makes the exit non-zero."""
import json
import os
import re
import signal
import stat
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "gpu-check")

# A caliber that logs its arguments to $FAKE_LOG, answers devices/plan like a CUDA build on one
# GPU, and fails the subcommand named in $FAKE_FAIL.
FAKE_CALIBER = r"""#!/usr/bin/env bash
echo "caliber $*" >> "$FAKE_LOG"
[ "${1:-}" = "${FAKE_FAIL:-none}" ] && { echo "fake failure of $1" >&2; exit 1; }
case "$1 ${2:-}" in
  "devices --json")
    if [ -n "${FAKE_NO_CUDA:-}" ]; then
      echo '{"backends": [{"name": "cuda", "devices": [], "why_none": "no driver"}]}'
    else
      echo '{"backends": [{"name": "cuda", "devices": [{"index": 0}]}]}'
    fi ;;
  "devices "*) echo "cuda: 1 device" ;;
  "batch "*) sleep "${FAKE_BATCH_SLEEP:-0}" ;;
  "run add")  # a run directory whose one row says what the device showed ($FAKE_APPS: a load)
    out=""; prev=""; for a in "$@"; do [ "$prev" = --out ] && out="$a"; prev="$a"; done
    mkdir -p "$out/add-20261206-000000"
    if [ -n "${FAKE_BLIND:-}" ]; then seen=''; elif [ -e "${FAKE_APPS:-/none}" ]; then
      seen='"other_processes": 1, "markers": ["DEVICE_SHARED"], '; else
      seen='"other_processes": 0, "markers": [], '; fi
    row='{"type": "case", "op": "add", "dtype": "f16", "shape": "64", "status": "ok", '
    echo "$row\"providers\": [{${seen}\"name\": \"torch\"}]}" > "$out/add-20261206-000000/run.log" ;;
  "run mm") [ -n "${FAKE_APPS:-}" ] && touch "$FAKE_APPS"; exec sleep "${FAKE_LOAD_SLEEP:-0}" ;;
  "plan "*) [ "${4:-}" = cpu ] && echo "timer: direct" || echo "timer: graph" ;;
esac
exit 0
"""
FAKE_SMI = r"""#!/usr/bin/env bash
if [ "${1:-}" = --query-compute-apps=pid ] && [ -e "${FAKE_APPS:-/none}" ]; then echo 4242; fi
if [ "${1:-}" = -L ]; then
  for i in $(seq 0 $(( ${FAKE_GPUS:-1} - 1 ))); do echo "GPU $i: NVIDIA H200 (UUID: GPU-$i)"; done
fi
exit 0
"""


def write_exe(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


class GpuCheck(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        t = self.tmp.name
        self.prefix = os.path.join(t, "prefix")
        os.makedirs(os.path.join(self.prefix, "bin"))
        write_exe(os.path.join(self.prefix, "bin", "caliber"), FAKE_CALIBER)
        self.fakebin = os.path.join(t, "fakebin")
        os.makedirs(self.fakebin)
        write_exe(os.path.join(self.fakebin, "nvidia-smi"), FAKE_SMI)
        self.log = os.path.join(t, "calls.log")
        self.results = os.path.join(t, "results")

    def tearDown(self):
        self.tmp.cleanup()

    def run_check(self, *args, **env):
        e = dict(os.environ, PATH=self.fakebin + os.pathsep + os.environ["PATH"],
                 FAKE_LOG=self.log)
        for k in ("STEP_TIMEOUT", "COMPARE_FP_MAX", "GTEST_FILTER"):
            e.pop(k, None)
        e.update(env)
        return subprocess.run([sys.executable, SCRIPT, "--prefix", self.prefix, "--results",
                               self.results, *args], capture_output=True, text=True, env=e,
                              timeout=120)

    def calls(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log, encoding="utf-8") as f:
            return f.read().splitlines()

    def test_help_lists_every_step_and_every_environment_knob(self):
        r = subprocess.run([sys.executable, SCRIPT, "--help"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(SCRIPT, encoding="utf-8") as f:
            source = f.read()
        read = set(re.findall(r'(?:knob|knob_number)\("([A-Z_0-9]+)"\)', source))
        read |= set(re.findall(r'os\.environ(?:\.get\(|\[)"([A-Z_0-9]+)"', source))
        read |= set(re.findall(r'script_step\("\w+", "[\w-]+", "([A-Z_0-9]+)"\)', source))
        self.assertIn("STEP_TIMEOUT", read)  # the scan finds the knobs at all
        env_section = r.stdout.split("environment (name, default: meaning):", 1)[-1]
        for name in sorted(read):
            self.assertRegex(env_section, rf"(?m)^  {name} \(|\b{name}\b.*\(PREFIX",
                             f"{name} is read by gpu-check but not in its --help's environment")
        for step in ("env", "tests", "core", "compare", "pin", "bscale", "intr", "py", "power",
                     "abcal"):
            self.assertRegex(r.stdout, rf"(?m)^  {step}\s", step)
        for flag in ("--prefix", "--results", "--steps", "--ops", "--ops2", "--prev",
                     "--tune-cache", "--budget", "--dry-run"):
            self.assertIn(flag, r.stdout)

    def test_bad_arguments_exit_2_naming_the_value_and_what_is_allowed(self):
        r = self.run_check("--steps", "env,nosuch")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--steps", r.stderr)
        self.assertIn("nosuch", r.stderr)
        self.assertIn("allowed: env,devices", r.stderr)
        r = self.run_check("--budget", "soon")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--budget 'soon'", r.stderr)
        r = self.run_check("--steps", "env", STEP_TIMEOUT="long")
        self.assertEqual(r.returncode, 2)
        self.assertIn("STEP_TIMEOUT='long'", r.stderr)
        r = subprocess.run([sys.executable, SCRIPT, "--prefix", os.path.join(self.tmp.name, "no"),
                            "--results", self.results, "--steps", "env"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("no caliber binary", r.stderr)
        self.assertEqual(self.calls(), [])
        self.assertFalse(os.path.exists(self.results))

    def test_dry_run_lists_the_selected_steps_in_order_and_runs_nothing(self):
        r = self.run_check("--dry-run", "--steps", "intr,devices,env")
        self.assertEqual(r.returncode, 0, r.stderr)
        steps = re.findall(r"(?m)^step (\w+):", r.stdout)
        self.assertEqual(steps, ["env", "devices", "intr"])  # the table's order, not the list's
        self.assertEqual(self.calls(), [])
        self.assertFalse(os.path.exists(self.results))
        r = self.run_check("--dry-run")
        default = re.findall(r"(?m)^step (\w+):", r.stdout)
        self.assertIn("tests", default)
        self.assertNotIn("fp", default)  # on request only

    def test_abcal_deals_the_ops_over_the_gpus_as_same_code_paired_ab(self):
        lib_dir = os.path.join(self.prefix, "lib", "caliber-tests")
        os.makedirs(lib_dir)
        with open(os.path.join(lib_dir, "libcaliber_test_power.so"), "wb") as f:
            f.write(b"not a real library")
        r = self.run_check("--steps", "abcal", "--ops", "mm,add,sort", FAKE_GPUS="2")
        ab = [c for c in self.calls() if c.startswith("caliber ab ")]
        self.assertEqual(len(ab), 3, "\n".join(self.calls()))
        for c in ab:
            self.assertRegex(c, r"--ops-lib-a \S+libcaliber_test_power\.so --ops-lib-b \S+"
                                r"abcal-same\.so --rounds 1 --tune off")
        self.assertTrue(any(c.endswith(" mm sort") for c in ab), ab)  # GPU 0's share
        self.assertTrue(any(c.endswith(" add") for c in ab), ab)      # GPU 1's
        self.assertTrue(any("--level comprehensive --dtypes bf16 mm" in c for c in ab), ab)
        # The fake writes no A/B directory: nothing to fit, and the step says so.
        self.assertNotEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"abcal-dirs\s+FAIL")

    def test_passing_steps_exit_0_and_run_only_what_was_selected(self):
        r = self.run_check("--steps", "devices,plan")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"devices\s+devices-json\s+PASS")
        self.assertRegex(r.stdout, r"plan\s+plan-cuda\s+PASS")
        self.assertEqual(self.calls(), [
            "caliber devices", "caliber devices --json", "caliber plan --backend cuda",
            "caliber plan --backend cuda --parallel-warmup 1", "caliber plan --backend cpu"])
        self.assertTrue(os.path.exists(os.path.join(self.results, "devices-json.log")))
        self.assertTrue(os.path.exists(self.results + ".tar.gz"))

    def test_a_cut_command_keeps_the_tarball_of_the_steps_it_finished(self):
        """The device's time limit kills a command with everything in it: the tarball is
        written after every step, so the finished steps' results survive a kill during the
        next one; unpacked sources (an .unpacked stamp) stay out of it."""
        e = dict(os.environ, PATH=self.fakebin + os.pathsep + os.environ["PATH"],
                 FAKE_LOG=self.log, FAKE_BATCH_SLEEP="60")
        src = os.path.join(self.results, "flaggems", "src", "flaggems")
        os.makedirs(src)
        open(os.path.join(src, ".unpacked"), "w").close()
        p = subprocess.Popen([sys.executable, SCRIPT, "--prefix", self.prefix, "--results",
                              self.results, "--steps", "devices,comp", "--ops", "mm"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=e,
                             start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while not os.path.exists(self.results + ".tar.gz") and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        with tarfile.open(self.results + ".tar.gz") as tar:
            names = tar.getnames()
        self.assertIn("results/devices-json.log", names)
        self.assertFalse([n for n in names if "/src/" in n], names)

    def test_a_terminated_check_ends_its_running_command_and_says_so(self):
        """SIGTERM to gpu-check (as `timeout` sends it, to gpu-check's group: the step's command
        has a session of its own and does not get it): the command is stopped, not left running
        on the GPU into the next call; the step is a FAIL that says why, the summary and the
        tarball are written, exit 130."""
        e = dict(os.environ, PATH=self.fakebin + os.pathsep + os.environ["PATH"],
                 FAKE_LOG=self.log, FAKE_BATCH_SLEEP="60")
        p = subprocess.Popen([sys.executable, SCRIPT, "--prefix", self.prefix, "--results",
                              self.results, "--steps", "devices,comp", "--ops", "mm"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=e,
                             start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while not any(c.startswith("caliber batch") for c in self.calls()) and \
                    time.monotonic() < deadline:
                time.sleep(0.1)
            self.assertTrue(self.commands(), "the batch is not running")
            os.killpg(p.pid, signal.SIGTERM)
            out = p.communicate(timeout=60)[0]
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.communicate()
        self.assertEqual(p.returncode, 130, out)
        self.assertRegex(out, r"comp\s+\S+\s+FAIL\s+\d+\s+interrupted: gpu-check was cut")
        self.assertRegex(out, r"devices\s+devices-json\s+PASS")
        self.assertTrue(os.path.exists(self.results + ".tar.gz"))
        self.assertEqual(self.commands(), [], "the step's command outlived gpu-check")

    def commands(self):
        """The fake caliber's processes still running (their command lines name the prefix)."""
        pids = []
        for pid in [x for x in os.listdir("/proc") if x.isdigit()]:
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    if self.prefix.encode() in f.read():
                        pids.append(int(pid))
            except OSError:
                continue
        return pids

    def test_shared_checks_the_marker_alone_and_beside_a_load(self):
        """The `shared` step: alone, every provider must read other_processes 0 unmarked; beside
        a second caliber process on the GPU, every provider must carry DEVICE_SHARED. A build
        whose rows cannot tell (no other_processes) fails alone, and says what it saw."""
        apps = os.path.join(self.tmp.name, "apps")
        r = self.run_check("--steps", "shared", FAKE_APPS=apps, FAKE_LOAD_SLEEP="30")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"shared\s+shared-alone\s+PASS")
        self.assertRegex(r.stdout, r"shared\s+shared-beside\s+PASS")
        self.assertIn("beside mm: 1 providers, other_processes ['1'], 1 marked; the load still "
                      "ran", r.stdout)
        self.assertIn("caliber run mm --backend cuda --level comprehensive", "\n".join(self.calls()))
        os.remove(apps)
        r = self.run_check("--steps", "shared", FAKE_APPS=apps, FAKE_LOAD_SLEEP="30",
                           FAKE_BLIND="1")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"shared-alone\s+FAIL\s+\d+\s+1 providers, other_processes "
                         r"\['absent'\] \(must be 0 on each\)")
        self.assertRegex(r.stdout, r"shared-beside\s+FAIL\s+\d+\s+0 of 1 providers marked")

    def test_a_failing_command_makes_the_exit_non_zero(self):
        r = self.run_check("--steps", "devices,plan", FAKE_FAIL="plan")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"plan\s+plan-cuda\s+FAIL\s+\d+\s+rc=1")
        self.assertRegex(r.stdout, r"devices\s+devices-json\s+PASS")
        self.assertIn("gpu-check: FAILED: plan-cuda", r.stdout)

    def test_the_comprehensive_batch_is_bounded_by_the_budget_not_the_step_timeout(self):
        # One comprehensive op may need most of a call (mm: about 520 s on an H200); the batch's
        # per-op timeout bounds it. The core batch keeps STEP_TIMEOUT. (The fake writes no
        # ops_status.csv, so both fail their check; only the core one may say "timed out".)
        comp = self.run_check("--steps", "comp", "--ops", "mm", STEP_TIMEOUT="1",
                              FAKE_BATCH_SLEEP="3")
        self.assertRegex(comp.stdout, r"comp\s+comp\s+FAIL")
        self.assertNotIn("timed out", comp.stdout)
        core = self.run_check("--steps", "core", "--ops", "mm", STEP_TIMEOUT="1",
                              FAKE_BATCH_SLEEP="3")
        self.assertRegex(core.stdout, r"core\s+core\s+FAIL\s+\d+\s+timed out")

    def test_a_failing_output_check_makes_the_exit_non_zero(self):
        # devices exits 0 but lists no cuda device: the check, not the exit, fails the step.
        r = self.run_check("--steps", "devices", FAKE_NO_CUDA="1")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"devices-json\s+FAIL.*no cuda device: no driver")

    def test_a_missing_test_binary_fails_the_tests_step(self):
        r = self.run_check("--steps", "tests")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"tests\s+tests-binary\s+FAIL")

    def test_gpu_test_suites_run_one_process_each_and_their_reports_count(self):
        write_exe(os.path.join(self.prefix, "bin", "caliber_gpu_tests"), textwrap.dedent(r"""
            #!/usr/bin/env python3
            import sys
            args = sys.argv[1:]
            if "--gtest_list_tests" in args:
                print("Timing.\n  Floor\n  Cold\nCorpus/Ops.\n  Gate/0  # GetParam() = mm")
                sys.exit(0)
            xml = [a.split("xml:", 1)[1] for a in args if a.startswith("--gtest_output=")][0]
            filt = [a.split("=", 1)[1] for a in args if a.startswith("--gtest_filter=")][0]
            n = len(filt.split(":"))
            fail = 1 if filt.startswith("Corpus/") else 0
            open(xml, "w").write(f'<testsuites tests="{n}" failures="{fail}" errors="0"/>')
            sys.exit(fail)
            """).lstrip())
        r = self.run_check("--steps", "tests")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"tests\s+tests-Timing\s+PASS")
        self.assertRegex(r.stdout, r"tests\s+tests-Corpus_Ops\s+FAIL")
        self.assertRegex(r.stdout, r"tests-found\s+PASS.*3 tests in 2 suites")

    def test_steps_that_need_several_gpus_skip_on_one_without_failing(self):
        r = self.run_check("--steps", "env,pin,bscale,pwarm", FAKE_GPUS="1")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for step in ("pin", "bscale", "pwarm"):
            self.assertRegex(r.stdout, rf"{step}\s+{step}\s+SKIP\s+0\s+needs 2 GPUs, this machine has 1")
        self.assertRegex(r.stdout, r"env\s+env\s+PASS")
        r = self.run_check("--steps", "env", FAKE_GPUS="0")
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("nvidia-smi -L lists no GPU", r.stdout)

    def test_a_spent_budget_is_not_a_pass(self):
        r = self.run_check("--steps", "devices,plan", "--budget", "0.001")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"plan-cuda\s+NOT RUN")

    def test_a_script_step_skips_where_its_script_is_missing(self):
        for step, script in (("py", "py-check"), ("power", "ab-power")):
            if os.path.exists(os.path.join(ROOT, "scripts", script)):
                continue  # the step's own helper added it: nothing to skip
            r = self.run_check("--steps", step)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn(f"scripts/{script} is not in this tree", r.stdout)

    def test_same_code_check_counts_the_verdicts_of_compares_json_rows(self):
        # compare --format json writes each pair as an object; the 2026-12-02 H200 run of the fp
        # and speed steps failed with KeyError where the check indexed them as lists.
        import importlib.machinery
        gc = importlib.machinery.SourceFileLoader("gpu_check", SCRIPT).load_module()
        rows = [{"op": "add", "verdict": "SAME"}, {"op": "sum", "verdict": "UNSURE"},
                {"op": "nonzero", "verdict": "FASTER"}]
        text = 'note: before\n' + json.dumps(
            {"pairs": {"columns": ["op", "verdict"], "rows": rows, "title": "Pairs"}})

        class Stub:
            def __init__(self):
                self.expects = []
                self.caliber = "caliber"

            def run(self, name, argv, check=None):
                r = gc.Result(0, 0.0, text)
                return r if check is None or check(r) is None else None

            def expect(self, name, ok, detail):
                self.expects.append((name, ok, detail))
                return ok

        st = Stub()
        self.assertEqual(gc.verdict_counts(st, "fp", "A", "B"),
                         {"SAME": 1, "UNSURE": 1, "FASTER": 1})
        os.environ.pop("COMPARE_FP_MAX", None)
        gc.same_code_check(st, "fp", "A", "B")
        self.assertEqual(st.expects[-1][0], "fp-false-positives")
        self.assertFalse(st.expects[-1][1], st.expects)  # 1 of 3 is over the 1% allowed
        self.assertIn("1 FASTER/SLOWER of 3 pairs", st.expects[-1][2])


if __name__ == "__main__":
    unittest.main()
