"""scripts/flaggems-check (docs/flaggems.md, "Side by side with FlagGems' own runs") on the
stand-in tree, cpu backend: caliber's run and FlagGems' own pytest of the same files, their rows
joined per (op, dtype, shape) and their wall times, a file a side or (--group) every file in one
process a side; a missing file is a named failure."""

import csv
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CALIBER_BIN, tmpdir  # noqa: E402
from test_flaggems import PYTHON, ROOT, QUICK, env  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "scripts", "flaggems-check")


def sqlalchemy_standin(where):
    """The check imports sqlalchemy beside flag_gems (FlagGems' LibTuner needs it): a package
    of that name is enough here."""
    pkg = os.path.join(where, "lib", "sqlalchemy")
    os.makedirs(pkg, exist_ok=True)  # a second call into the same RESULTS
    with open(os.path.join(pkg, "__init__.py"), "w") as f:
        f.write('__version__ = "0.0+standin"\n')
    return where


def check(results, *extra, extra_env=None):
    """scripts/flaggems-check on the stand-in; an extra_env value of None unsets that variable."""
    environ = env(dict({"STANDIN_OWN_DO_BENCH": "1"}, **(extra_env or {})))
    for k in [k for k, v in environ.items() if v is None]:
        del environ[k]
    p = subprocess.run(
        [sys.executable, SCRIPT, "--caliber", CALIBER_BIN, "--results", results, "--flaggems",
         ROOT, "--sqlalchemy", sqlalchemy_standin(os.path.join(results + "-sqla")), "--python",
         PYTHON, "--modes", "kernel", "--native-warmup", "1", "--backend", "cpu", "--run-flags",
         " ".join(QUICK[2:]), *extra], capture_output=True, text=True,
        env=environ, timeout=900)
    return p.returncode, p.stdout + p.stderr


def commands_of(results):
    """The processes whose command line names RESULTS (the check's own caliber and pytest runs
    write there), the check itself left out."""
    pids = []
    for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if any(results in x for x in argv) and not any(x.endswith("flaggems-check")
                                                       for x in argv):
            pids.append(int(pid))
    return pids


def kill_commands(results):
    """A check killed by SIGKILL (as a hard limit kills it) cannot end its commands, each in a
    session of its own: the test ends them, so that none waits out its hold after the test."""
    for pid in commands_of(results):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def table(results, name):
    with open(os.path.join(results, name), newline="") as f:
        return list(csv.DictReader(f))


class SideBySide(unittest.TestCase):
    def test_a_file_a_side_then_grouped(self):
        one = os.path.join(tmpdir(), "one")
        rc, out = check(one, "--ops", "add,softmax")
        self.assertEqual(rc, 0, out)
        walls = table(one, "walls.csv")
        self.assertEqual([w["op"] for w in walls], ["add", "softmax"], walls)
        rows = table(one, "side_by_side.csv")
        self.assertEqual({r["op"] for r in rows}, {"add", "softmax", "softmax_backward"})
        for r in rows:
            for k in ("fg_kernel_torch_ms", "fg_kernel_gems_ms", "cal_kernel_torch_ms",
                      "cal_kernel_gems_ms", "host_gems_ms"):
                self.assertGreater(float(r[k]), 0, (k, r))
        # each caliber run read by the tree's own summary_for_plot.py, from its flaggems-log
        with open(os.path.join(one, "caliber-softmax-kernel.summary.txt")) as f:
            summary = f.read()
        self.assertIn("softmax_backward", summary)
        self.assertTrue(summary.startswith("op_name"), summary)
        # FlagGems' own record as log lines, keyed as caliber's: every input matched, and the
        # summary is --compare of the two: comp_* columns of FlagGems' gems figure over caliber's
        self.assertEqual({w["keys_matched"] for w in walls}, {"9/9", "4/4"}, walls)
        with open(os.path.join(one, "caliber-add-kernel.summary.txt")) as f:
            lines = f.read().splitlines()
        head = lines[0].split()
        compared = {x.split()[0]: dict(zip(head, x.split())) for x in lines[1:]}
        self.assertGreater(float(compared["add"]["comp_float16"]), 0, lines)  # keys found
        self.assertGreater(float(compared["add"]["float16"]), 0, lines)
        grouped = os.path.join(tmpdir(), "grouped")
        rc, out = check(grouped, "--ops", "add,softmax", "--group")
        self.assertEqual(rc, 0, out)
        (w,) = table(grouped, "walls.csv")
        self.assertEqual(w["op"], "add+softmax")
        for k in ("caliber_s", "flaggems_s", "ratio"):
            self.assertGreater(float(w[k]), 0, w)
        # one process a side read every row the two single-file runs read
        self.assertEqual(int(w["caliber_rows"]), sum(int(x["caliber_rows"]) for x in walls))
        self.assertEqual(int(w["flaggems_rows"]), sum(int(x["flaggems_rows"]) for x in walls))
        self.assertEqual(len(table(grouped, "side_by_side.csv")), len(rows))

    def test_rounds_give_each_side_a_spread(self):
        """--rounds 2: each side runs twice (alternating), every joined figure gains its spread
        over the rounds and the report a summary of the spreads; the walls list each round."""
        results = os.path.join(tmpdir(), "rounds")
        rc, out = check(results, "--ops", "add", "--rounds", "2")
        self.assertEqual(rc, 0, out)
        walls = table(results, "walls.csv")
        self.assertEqual([(w["op"], w["round"]) for w in walls], [("add", "0"), ("add", "1")])
        rows = table(results, "side_by_side.csv")
        self.assertTrue(rows)
        for r in rows:
            for k in ("fg_kernel_gems_spread", "cal_kernel_gems_spread", "cal_kernel_torch_spread"):
                self.assertGreaterEqual(float(r[k]), 0, (k, r))
        with open(os.path.join(results, "side_by_side.md")) as f:
            md = f.read()
        self.assertIn("## Spread over rounds", md)
        self.assertIn("| cal_kernel_gems_spread | %d |" % len(rows), md)
        rc, out = check(os.path.join(tmpdir(), "r0"), "--ops", "add", "--rounds", "0")
        self.assertEqual(rc, 2, out)
        self.assertIn("--rounds '0'", out)

    def test_native_iter_reaches_flaggems(self):
        """--native-iter MS is FlagGems' own --iter (do_bench's rep, do_bench_cudagraph's graph
        length): the stand-in's do_bench raises on any other rep; the walls say which was used.
        A fraction of a ms or 0 is refused (FlagGems reads it with int())."""
        results = os.path.join(tmpdir(), "iter")
        rc, out = check(results, "--ops", "add", "--native-iter", "7",
                        extra_env={"STANDIN_EXPECT_REP": "7"})
        self.assertEqual(rc, 0, out)
        (w,) = table(results, "walls.csv")
        self.assertEqual(w["flaggems_iter_ms"], "7", w)
        self.assertGreater(int(w["flaggems_rows"]), 0, w)
        with open(os.path.join(results, "side_by_side.md")) as f:
            self.assertIn("| 1 / 7 |", f.read())
        for bad in ("0", "2.5"):
            rc, out = check(os.path.join(tmpdir(), "iter" + bad), "--ops", "add",
                            "--native-iter", bad)
            self.assertEqual(rc, 2, out)
            self.assertIn("--native-iter", out)

    def test_devices_spread_the_ops_and_pin_both_sides(self):
        """--devices 0,1 over two cpu devices (mm left out by --except): one worker a device takes
        the next op; both sides of an op run pinned to the worker's device (caliber's run says
        which physical device it saw); the table is the one a single device builds, with a table
        per op above it. With --group each device runs its share of the ops in one process a
        side."""
        two = {"CALIBER_CPU_DEVICES": "2"}
        results = os.path.join(tmpdir(), "devices")
        rc, out = check(results, "--ops", "add,softmax,custom,mm,fft", "--except", "fft",
                        "--devices", "0,1", extra_env=dict(two, FLAGGEMS_DB_URL=None,
                                                           HOME=tmpdir()))
        self.assertEqual(rc, 0, out)
        walls = table(results, "walls.csv")
        self.assertEqual([w["op"] for w in walls], ["add", "softmax", "custom", "mm"], walls)
        # No FLAGGEMS_DB_URL given: each device's processes tune into a LibTuner database of
        # their own; mm's LibTuner sweeps landed in its device's.
        # their own, a side each (--caches per-side); mm's LibTuner sweeps landed in both.
        (mm_device,) = [w["device"] for w in walls if w["op"] == "mm"]
        for side in ("caliber", "flaggems"):
            with sqlite3.connect(os.path.join(results, "libtuner-device-%s-%s.db" % (
                    mm_device, side))) as con:
                tables = [t for (t,) in con.execute("SELECT name FROM sqlite_master")]
            self.assertTrue(tables, "no LibTuner table in device %s's %s database" % (
                mm_device, side))
        walls = [w for w in walls if w["op"] != "mm"]
        self.assertEqual({w["device"] for w in walls}, {"0", "1"}, walls)
        for w in walls:
            with open(os.path.join(w["run_dir"], "run_identity.json")) as f:
                seen = json.load(f)["device"]["physical_id"]
            self.assertEqual(seen, w["device"], (w, seen))
        rows = table(results, "side_by_side.csv")
        self.assertEqual({r["op"] for r in rows} >= {"add", "softmax", "softmax_backward"}, True)
        with open(os.path.join(results, "side_by_side.md")) as f:
            md = f.read()
        per_op = md.split("## Per op", 1)[1].split("## Every row", 1)[0]
        for op in ("add", "softmax", "softmax_backward"):
            n = sum(1 for r in rows if r["op"] == op)
            self.assertIn("| %s | %d | " % (op, n), per_op)
        self.assertIn("gems FlagGems/caliber, kernel", per_op)
        self.assertNotIn("cudagraph", per_op)  # a mode not run has no column
        grouped = os.path.join(tmpdir(), "devgroup")
        rc, out = check(grouped, "--ops", "add,softmax,custom,mm", "--devices", "0,1", "--group",
                        extra_env=two)
        self.assertEqual(rc, 0, out)
        walls = table(grouped, "walls.csv")
        self.assertEqual(sorted((w["op"], w["device"]) for w in walls),
                         [("add+custom", "0"), ("softmax+mm", "1")], walls)
        self.assertEqual(len(table(grouped, "side_by_side.csv")), len(rows))
        for bad in ("0,0", "a"):
            rc, out = check(os.path.join(tmpdir(), "bad"), "--ops", "add", "--devices", bad)
            self.assertEqual(rc, 2, out)
            self.assertIn("--devices '%s'" % bad, out)

    def test_each_side_compiles_and_tunes_in_caches_of_its_own(self):
        """--caches per-side (the default): caliber's processes and FlagGems' own pytest see
        TRITON_CACHE_DIR and FLAGGEMS_CACHE_DIR of their side's own under RESULTS/caches, the
        same over both modes; --caches shared leaves the machine's; walls say which."""
        for caches in ("per-side", "shared"):
            results = os.path.join(tmpdir(), caches)
            log = os.path.join(tmpdir(), "cache.log")
            rc, out = check(results, "--ops", "add", "--modes", "kernel,cudagraph", "--caches",
                            caches, extra_env={"STANDIN_CACHE_LOG": log, "TRITON_CACHE_DIR": None,
                                               "FLAGGEMS_CACHE_DIR": None})
            self.assertEqual(rc, 0, out)
            with open(log) as f:
                seen = [json.loads(x) for x in f if '"argv0": "-c"' not in x]  # not the probe
            self.assertEqual(sorted(x["side"] for x in seen), ["caliber"] * 2 + ["flaggems"] * 2,
                             seen)
            for x in seen:
                base = os.path.join(os.path.abspath(results), "caches", x["side"])
                want = (os.path.join(base, "triton"), os.path.join(base, "flaggems"))
                if caches == "shared":
                    want = (None, None)
                self.assertEqual((x["TRITON_CACHE_DIR"], x["FLAGGEMS_CACHE_DIR"]), want, x)
            self.assertEqual({w["caches"] for w in table(results, "walls.csv")}, {caches})
            with open(os.path.join(results, "side_by_side.md")) as f:
                self.assertIn(" | %s | " % caches, f.read())

    def test_a_call_cut_short_keeps_the_groups_it_finished(self):
        """--group-size 1: the tables are written after each file, so a device call cut by its
        limit inside softmax (held at collection here, then SIGINT to the check's process group,
        as gpu-check sends it, or SIGTERM, as `timeout` does) keeps add's rows, says what is left
        and what to merge, exits 130, and leaves no command of its own running (each runs in a
        session of its own, which the signal does not reach)."""
        for sig in (signal.SIGINT, signal.SIGTERM):
            with self.subTest(signal=sig.name):
                self.cut_short_by(sig)

    def cut_short_by(self, sig):
        results = os.path.join(tmpdir(), "cut")
        release = results + "-release"
        environ = env({"STANDIN_OWN_DO_BENCH": "1", "STANDIN_HOLD_SOFTMAX": release})
        p = subprocess.Popen(
            [sys.executable, SCRIPT, "--caliber", CALIBER_BIN, "--results", results,
             "--flaggems", ROOT, "--sqlalchemy", sqlalchemy_standin(results + "-sqla"),
             "--python", PYTHON, "--modes", "kernel", "--native-warmup", "1", "--backend", "cpu",
             "--run-flags", " ".join(QUICK[2:]), "--ops", "add,softmax", "--group-size", "1"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environ,
            start_new_session=True)
        try:
            # softmax's caliber run, held at its collection, which says so in release.seen:
            # add is then finished on both sides (before, this waited for add's first table
            # and one second more, and on a loaded host FlagGems' own run of add was still
            # going when the signal came)
            seen = release + ".seen"
            deadline = time.monotonic() + 300
            while not (os.path.isfile(seen) and open(seen).read().split()) and \
                    p.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            self.assertIsNone(p.poll(), "the check ended before softmax was cut")
            self.assertTrue(commands_of(results), "no command of the check under way")
            os.killpg(p.pid, sig)
            out = p.communicate(timeout=60)[0]
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.communicate()
        self.assertEqual(p.returncode, 130, out)
        self.assertIn("cut short: %s keeps every group finished" % results, out)
        self.assertIn("give the next call --merge %s" % results, out)
        self.assertIn("complete (both sides, modes kernel): 1 of 2 files; settled (FlagGems' own "
                      "run failed there): none; not yet: softmax", out)
        self.assertEqual(commands_of(results), [], "commands left running after the cut")
        self.assertEqual([w["op"] for w in table(results, "walls.csv")], ["add"])
        rows = table(results, "side_by_side.csv")
        self.assertEqual(({r["op"] for r in rows}, len(rows)), ({"add"}, 9))
        with open(os.path.join(results, "side_by_side.md")) as f:
            self.assertIn("| add | 9 |", f.read())

    def cut_softmax_at(self, collection):
        """softmax in kernel then cudagraph mode, held at its Nth collection (1 caliber's kernel
        run, 2 FlagGems' own, 3 caliber's cudagraph run, 4 FlagGems' own) and then killed: the
        table and the walls as the check left them."""
        results = os.path.join(tmpdir(), "cut%d" % collection)
        release = results + "-release"
        environ = env({"STANDIN_OWN_DO_BENCH": "1", "STANDIN_HOLD_SOFTMAX": release,
                       "STANDIN_HOLD_SOFTMAX_AFTER": str(collection - 1)})
        p = subprocess.Popen(
            [sys.executable, SCRIPT, "--caliber", CALIBER_BIN, "--results", results,
             "--flaggems", ROOT, "--sqlalchemy", sqlalchemy_standin(results + "-sqla"),
             "--python", PYTHON, "--modes", "kernel,cudagraph", "--native-warmup", "1",
             "--backend", "cpu", "--run-flags", " ".join(QUICK[2:]), "--ops", "softmax"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environ,
            start_new_session=True)
        try:
            seen = release + ".seen"
            deadline = time.monotonic() + 300
            while p.poll() is None and time.monotonic() < deadline:
                if os.path.isfile(seen) and len(open(seen).read().split()) >= collection:
                    time.sleep(0.5)  # past the hold's start: nothing more is written
                    break
                time.sleep(0.1)
            self.assertIsNone(p.poll(), "the check ended before collection %d" % collection)
        finally:
            os.killpg(p.pid, signal.SIGKILL)
            out = p.communicate()[0]
            kill_commands(results)
        rows = table(results, "side_by_side.csv")
        self.assertTrue(rows, out)
        for r in rows:
            self.assertIn(r["op"], ("softmax", "softmax_backward"))
        return rows, table(results, "walls.csv"), out

    def test_a_group_cut_in_its_second_mode_keeps_the_first_modes_columns(self):
        """Cut in caliber's cudagraph run: the kernel mode's four columns, no cudagraph one."""
        rows, walls, out = self.cut_softmax_at(3)
        self.assertEqual([(w["op"], w["mode"]) for w in walls], [("softmax", "kernel")], out)
        for r in rows:
            for col in ("fg_kernel_torch_ms", "fg_kernel_gems_ms", "cal_kernel_torch_ms",
                        "cal_kernel_gems_ms"):
                self.assertGreater(float(r[col] or 0), 0, (col, r))
            self.assertFalse(any(k.startswith(("fg_cudagraph", "cal_cudagraph")) and v
                                 for k, v in r.items()), r)

    def test_a_group_cut_in_flaggems_own_cudagraph_run_keeps_calibers(self):
        """Cut in FlagGems' own cudagraph run (the slowest part on a GPU): caliber's cudagraph
        columns are in, FlagGems' are empty, and its wall is not given."""
        rows, walls, out = self.cut_softmax_at(4)
        self.assertEqual([(w["op"], w["mode"], bool(w["flaggems_s"])) for w in walls],
                         [("softmax", "kernel", True), ("softmax", "cudagraph", False)], out)
        for r in rows:
            for col in ("fg_kernel_gems_ms", "cal_kernel_gems_ms", "cal_cudagraph_torch_ms",
                        "cal_cudagraph_gems_ms"):
                self.assertGreater(float(r[col] or 0), 0, (col, r))
            self.assertFalse(r.get("fg_cudagraph_torch_ms") or r.get("fg_cudagraph_gems_ms"), r)

    def test_a_call_cut_in_the_retries_keeps_flaggems_run_as_not_yet_retried(self):
        """Cut while FlagGems' failed tests run again alone (softmax_backward's lone run held at
        collection, then killed): FlagGems' run of the group is in the table (softmax's rows),
        and its wall is pending as not yet retried, so the next --pending call takes it again."""
        results = os.path.join(tmpdir(), "cut-retry")
        release = results + "-release"
        environ = env({"STANDIN_OWN_DO_BENCH": "1", "STANDIN_HOLD_SOFTMAX": release,
                       "STANDIN_HOLD_SOFTMAX_AFTER": "2",  # caliber's run, FlagGems' own
                       "STANDIN_BREAKS_CAPTURE": "softmax_backward"})
        p = subprocess.Popen(
            [sys.executable, SCRIPT, "--caliber", CALIBER_BIN, "--results", results,
             "--flaggems", ROOT, "--sqlalchemy", sqlalchemy_standin(results + "-sqla"),
             "--python", PYTHON, "--modes", "cudagraph", "--native-warmup", "1",
             "--backend", "cpu", "--run-flags", " ".join(QUICK[2:]), "--ops", "softmax,add",
             "--group"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=environ, start_new_session=True)
        try:
            seen = release + ".seen"
            deadline = time.monotonic() + 300
            while p.poll() is None and time.monotonic() < deadline:
                if os.path.isfile(seen) and len(open(seen).read().split()) >= 3:
                    time.sleep(0.5)
                    break
                time.sleep(0.1)
            self.assertIsNone(p.poll(), "the check ended before the retry")
        finally:
            os.killpg(p.pid, signal.SIGKILL)
            out = p.communicate()[0]
            kill_commands(results)
        with open(os.path.join(results, "side_by_side.json")) as f:
            (w,) = json.load(f)["walls"]
        self.assertEqual((w["flaggems_result"], w["flaggems_rows"]), ("2 failed, 1 passed", 2),
                         out)
        self.assertNotIn("flaggems_retry_alone", w)
        softmax = [r for r in table(results, "side_by_side.csv") if r["op"] == "softmax"]
        self.assertTrue(softmax and all(float(r["fg_cudagraph_gems_ms"]) > 0 for r in softmax))
        with open(os.path.join(results, "side_by_side.md")) as f:
            self.assertIn("| add | FlagGems' own: 2 failed, 1 passed (not yet retried alone) |",
                          f.read())

    def test_flaggems_own_outcome_is_in_the_walls(self):
        """FlagGems' own pytest's summary ("2 failed, 2 passed, 2 errors") is on each file's wall
        row and in the markdown, so a row without FlagGems' figures says why."""
        results = os.path.join(tmpdir(), "outcome")
        rc, out = check(results, "--ops", "add,failures", "--group-size", "1")
        self.assertEqual(rc, 1, out)  # caliber's failures file fails its broken cases
        got = {w["op"]: w["flaggems_result"] for w in table(results, "walls.csv")}
        self.assertEqual(got, {"add": "1 passed", "failures": "2 failed, 2 passed, 2 errors"},
                         out)
        self.assertIn("FlagGems' own pytest: 2 failed, 2 passed, 2 errors", out)
        with open(os.path.join(results, "side_by_side.md")) as f:
            text = f.read()
        self.assertIn("| FlagGems' pytest |", text)
        # each failed test again alone (retry_alone): the four fail alone too
        self.assertIn("| 2 failed, 2 passed, 2 errors; alone: 4 failed |", text)
        # the files pytest's FAILED and ERROR lines name: in a group, the others passed
        with open(os.path.join(results, "side_by_side.json")) as f:
            named = {w["op"]: w["flaggems_failed_files"] for w in json.load(f)["walls"]}
        self.assertEqual(named, {"add": [], "failures": ["failures"]})

    def test_a_groups_failure_is_booked_to_the_file_that_failed(self):
        """A group whose FlagGems' own run failed in one file: that file is settled, the others
        done (on 2026-12-06 embedding_backward's failure had kept index_select from done); a
        state without the failed files books the group's outcome to every file, as before."""
        results = os.path.join(tmpdir(), "booked")
        rc, out = check(results, "--ops", "add,softmax", "--group")
        self.assertEqual(rc, 0, out)
        with open(os.path.join(results, "side_by_side.json")) as f:
            state = json.load(f)
        (w,) = state["walls"]
        self.assertEqual((w["op"], w["flaggems_failed_files"]), ("add+softmax", []))
        w.update(flaggems_result="1 failed, 3 passed", flaggems_failed_files=["softmax"])
        for name, drop in (("named", False), ("old", True)):
            if drop:
                del w["flaggems_failed_files"]
            saved = os.path.join(tmpdir(), name + ".json")
            with open(saved, "w") as f:
                json.dump(state, f)
            merged = os.path.join(tmpdir(), name)
            p = subprocess.run([sys.executable, SCRIPT, "--results", merged, "--merge", saved,
                                "--merge-only", "--modes", "kernel"], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(os.path.join(merged, "side_by_side.md")) as f:
                text = f.read()
            self.assertIn("| softmax | FlagGems' own: 1 failed, 3 passed | ", text)
            self.assertIn("| add | done | " if not drop else
                          "| add | FlagGems' own: 1 failed, 3 passed | ", text)

    def test_tests_that_failed_after_a_broken_capture_run_again_alone(self):
        """FlagGems' own cudagraph run where one test's capture fails: on a GPU that fails every
        later capture of the process (2026-12-06: sigmoid_backward took tanh and rsqrt with it).
        Each failed test runs again alone: add passes, its rows join the table and its file is
        done; softmax_backward fails alone and stays its file's failure. With --retry-alone 1 add
        is past the N: pending, not settled. With --retry-alone 0 add's FlagGems' figures are
        missing and its file is booked a failure."""
        for retries in ("8", "1", "0"):
            results = os.path.join(tmpdir(), "alone" + retries)
            rc, out = check(results, "--ops", "softmax,add", "--group", "--modes", "cudagraph",
                            "--retry-alone", retries,
                            extra_env={"STANDIN_BREAKS_CAPTURE": "softmax_backward"})
            self.assertEqual(rc, 0, out)  # caliber's run is not FlagGems' capture
            with open(os.path.join(results, "side_by_side.json")) as f:
                (w,) = json.load(f)["walls"]
            self.assertEqual(w["flaggems_result"], "2 failed, 1 passed", out)
            add = [r for r in table(results, "side_by_side.csv") if r["op"] == "add"]
            self.assertEqual(len(add), 9, add)
            with open(os.path.join(results, "side_by_side.md")) as f:
                text = f.read()
            if retries == "1":  # softmax_backward alone; add past the N: pending, not settled
                self.assertEqual(w["flaggems_retried"], {
                    "benchmark/test_softmax.py::test_softmax_backward": "1 failed"}, out)
                self.assertEqual(w["flaggems_unretried"], ["benchmark/test_add.py::test_add"])
                self.assertIn("| add | FlagGems' own: 2 failed, 1 passed (some failed tests not "
                              "retried) |", text)
                self.assertIn("settled (FlagGems' own run failed there): softmax; not yet: add",
                              out)
                continue
            if retries == "0":
                self.assertNotIn("flaggems_retried", w)
                self.assertEqual(w["flaggems_failed_files"], ["add", "softmax"])
                self.assertTrue(all(r["fg_cudagraph_gems_ms"] == "" for r in add), add)
                self.assertIn("| add | FlagGems' own: 2 failed, 1 passed |", text)
                continue
            self.assertEqual(w["flaggems_retried"], {
                "benchmark/test_softmax.py::test_softmax_backward": "1 failed",
                "benchmark/test_add.py::test_add": "1 passed"}, out)
            self.assertEqual(w["flaggems_failed_files"], ["softmax"])
            self.assertGreater(w["flaggems_retry_s"], 0)
            for r in add:
                self.assertGreater(float(r["fg_cudagraph_gems_ms"]), 0, r)
            self.assertIn("| add | done; alone: 1 passed |", text)
            self.assertIn("| softmax | FlagGems' own: 2 failed, 1 passed; alone: 1 failed |", text)
            self.assertIn("2 failed, 1 passed; alone: 1 passed, 1 failed", out)
            self.assertTrue(os.path.isfile(os.path.join(
                results, "native-softmax-add-cudagraph.alone.json")))

    def test_failed_tests_run_again_in_one_process_up_to_the_first_failure(self):
        """Two broken captures in one group (softmax_backward, then linear_backward three tests
        later): the retries run in one pytest that stops at its first failure, each failure
        confirmed as the first test of its process. 4 processes for the 6 failed tests:
        softmax_backward first (failed), add, custom_run and index_fill passed before
        linear_backward failed, linear_backward first (failed), convert alone (passed). On an
        H100 (2026-12-06) a retry process cost about 8 s beyond its test."""
        results = os.path.join(tmpdir(), "batched")
        rc, out = check(results, "--ops", "softmax,add,custom", "--group", "--modes", "cudagraph",
                        extra_env={"STANDIN_BREAKS_CAPTURE": "softmax_backward,linear_backward"})
        self.assertEqual(rc, 0, out)
        with open(os.path.join(results, "side_by_side.json")) as f:
            (w,) = json.load(f)["walls"]
        self.assertEqual(w["flaggems_result"], "6 failed, 1 passed", out)
        before = "passed (before the first failure of a run of 5)"
        self.assertEqual(w["flaggems_retried"], {
            "benchmark/test_softmax.py::test_softmax_backward": "1 failed",
            "benchmark/test_add.py::test_add": before,
            "benchmark/test_custom.py::test_custom_run": before,
            "benchmark/test_custom.py::test_index_fill": before,
            "benchmark/test_custom.py::test_linear_backward": "1 failed",
            "benchmark/test_custom.py::test_convert_weight_to_int4pack": "1 passed"}, out)
        self.assertEqual((w["flaggems_retry_runs"], w["flaggems_failed_files"]),
                         (4, ["custom", "softmax"]))
        got = {}
        for r in table(results, "side_by_side.csv"):
            got.setdefault(r["op"], set()).add(bool(r["fg_cudagraph_gems_ms"]))
        # the passed tests' rows from the runs' records; none of the failed tests'
        for op in ("add", "index_fill", "convert_weight_to_int4pack"):
            self.assertEqual(got[op], {True}, (op, got))
        for op in ("softmax_backward", "linear_backward"):
            self.assertEqual(got[op], {False}, (op, got))
        self.assertIn("6 failed, 1 passed; alone: 4 passed, 2 failed", out)
        # the group's line says where its wall went, the retries' runs and seconds included
        self.assertRegex(out, r"\[1/1\] softmax\+add\+custom: \d+ rows in \d+ s \(cudagraph: "
                         r"caliber \d+ s, FlagGems \d+ s \+ 4 retry runs %.0f s\)" %
                         w["flaggems_retry_s"])
        # --retry-runs 2: two processes settle softmax_backward and take add, custom_run and
        # index_fill; linear_backward and convert are not reached: pending, not settled
        results = os.path.join(tmpdir(), "batched2")
        rc, out = check(results, "--ops", "softmax,add,custom", "--group", "--modes", "cudagraph",
                        "--retry-runs", "2",
                        extra_env={"STANDIN_BREAKS_CAPTURE": "softmax_backward,linear_backward"})
        self.assertEqual(rc, 0, out)
        with open(os.path.join(results, "side_by_side.json")) as f:
            (w,) = json.load(f)["walls"]
        self.assertEqual(w["flaggems_retry_runs"], 2)
        self.assertEqual(w["flaggems_unretried"], [
            "benchmark/test_custom.py::test_linear_backward",
            "benchmark/test_custom.py::test_convert_weight_to_int4pack"])
        with open(os.path.join(results, "side_by_side.md")) as f:
            self.assertIn("| custom | FlagGems' own: 6 failed, 1 passed (some failed tests not "
                          "retried)", f.read())
        self.assertIn("settled (FlagGems' own run failed there): softmax; not yet: custom", out)

    def test_a_file_run_again_in_one_mode_keeps_the_other_modes_figures(self):
        """A second call into the same RESULTS that runs a file in cudagraph mode only (a
        settled file taken again for its retries) replaces that mode's figures and wall and
        keeps the kernel mode's: before, the file's rows were replaced whole and lost them."""
        results = os.path.join(tmpdir(), "again")
        rc, out = check(results, "--ops", "add")
        self.assertEqual(rc, 0, out)
        first = {(r["dtype"], r["shape"]): r for r in table(results, "side_by_side.csv")}
        rc, out = check(results, "--ops", "add", "--modes", "cudagraph")
        self.assertEqual(rc, 0, out)
        rows = table(results, "side_by_side.csv")
        self.assertEqual(len(rows), 9)
        for r in rows:
            was = first[(r["dtype"], r["shape"])]
            for k in ("fg_kernel_gems_ms", "cal_kernel_gems_ms"):
                self.assertEqual(r[k], was[k], r)
            for k in ("fg_cudagraph_gems_ms", "cal_cudagraph_gems_ms"):
                self.assertGreater(float(r[k]), 0, r)
        self.assertEqual(sorted(w["mode"] for w in table(results, "walls.csv")),
                         ["cudagraph", "kernel"])
        with open(os.path.join(results, "side_by_side.md")) as f:
            self.assertIn("| add | done | done |", f.read())

    def test_each_file_names_its_card_and_a_table_of_two_cards_says_so(self):
        """walls.csv's card is the run identity's device; a later call into the same RESULTS that
        got another card (faked here by editing the first call's state) makes the markdown say
        the table mixes cards."""
        results = os.path.join(tmpdir(), "cards")
        rc, out = check(results, "--ops", "add")
        self.assertEqual(rc, 0, out)
        (w,) = table(results, "walls.csv")
        with open(os.path.join(w["run_dir"], "run_identity.json")) as f:
            name = json.load(f)["device"]["name"]
        self.assertTrue(name and w["card"].startswith(name), (name, w["card"]))
        state = os.path.join(results, "side_by_side.json")
        with open(state) as f:
            saved = json.load(f)
        for x in saved["walls"]:
            x["op"], x["card"] = "mul", "Another card GPU-0"
        with open(state, "w") as f:
            json.dump(saved, f)
        with open(os.path.join(results, "side_by_side.md")) as f:
            self.assertNotIn("cards**", f.read())
        rc, out = check(results, "--ops", "add")
        self.assertEqual(rc, 0, out)
        with open(os.path.join(results, "side_by_side.md")) as f:
            text = f.read()
        (line,) = [x for x in text.splitlines() if x.startswith("**These rows come from")]
        self.assertTrue(line.startswith("**These rows come from 2 cards** ("), line)
        self.assertIn("Another card GPU-0", line)
        self.assertIn(name, line)

    def test_flaggems_own_run_past_its_limit_is_named_cut(self):
        """FlagGems' own run held at collection past --timeout: its wall row says `cut`."""
        results = os.path.join(tmpdir(), "limit")
        rc, out = check(results, "--ops", "softmax", "--timeout", "20", extra_env={
            "STANDIN_HOLD_SOFTMAX": results + "-never", "STANDIN_HOLD_SOFTMAX_AFTER": "1"})
        (w,) = table(results, "walls.csv")
        self.assertEqual((w["flaggems_result"], w["flaggems_rows"]), ("cut", "0"), out)
        self.assertIn("FlagGems' own pytest: cut", out)

    def test_pending_runs_the_files_not_yet_complete(self):
        """--pending 1 over the same --ops: each call runs the next file the table lacks, and a
        call with none left runs nothing; the coverage line names what is left."""
        results = os.path.join(tmpdir(), "pending")
        rc, out = check(results, "--ops", "add,softmax", "--pending", "1")
        self.assertEqual(rc, 0, out)
        self.assertIn("2 of the 2 --ops files left (neither complete nor settled); this call: add",
                      out)
        self.assertEqual([w["op"] for w in table(results, "walls.csv")], ["add"])
        self.assertIn("complete (both sides, modes kernel): 1 of 2 files; settled (FlagGems' own "
                      "run failed there): none; not yet: softmax", out)
        rc, out = check(results, "--ops", "add,softmax", "--pending", "1")
        self.assertEqual(rc, 0, out)
        self.assertIn("this call: softmax", out)
        self.assertEqual([w["op"] for w in table(results, "walls.csv")], ["add", "softmax"])
        self.assertEqual({w["caliber_ok"] for w in table(results, "walls.csv")}, {"True"})
        rc, out = check(results, "--ops", "add,softmax", "--pending", "1")
        self.assertEqual(rc, 0, out)
        self.assertIn("0 of the 2 --ops files left (neither complete nor settled); this call: none",
                      out)
        self.assertEqual(len(table(results, "walls.csv")), 2)
        # merging only: one table of two calls' RESULTS, with the coverage of every file
        one = os.path.join(tmpdir(), "pending-one")
        rc, out = check(one, "--ops", "add")
        self.assertEqual(rc, 0, out)
        with open(os.path.join(results, "side_by_side.json")) as f:
            state = json.load(f)
        state["walls"] = [w for w in state["walls"] if w["op"] == "softmax"]
        state["walls"][0]["flaggems_result"] = "1 failed, 2 passed"
        state["table"] = [r for r in state["table"] if r["op"] != "add"]
        saved = tmpdir()  # a folder of saved states, merged in name order
        softmax_state = os.path.join(saved, "2-softmax.json")
        with open(softmax_state, "w") as f:
            json.dump(state, f)
        both = os.path.join(tmpdir(), "pending-both")
        with open(os.path.join(one, "side_by_side.json")) as f:
            add_state = json.load(f)
        with open(os.path.join(saved, "1-add.json"), "w") as f:
            json.dump(add_state, f)
        add_state["walls"][0]["flaggems_result"] = "cut"  # an older add, merged first
        with open(os.path.join(saved, "0-add.json"), "w") as f:
            json.dump(add_state, f)
        p = subprocess.run([sys.executable, SCRIPT, "--results", both, "--merge", saved,
                            "--merge-only",
                            "--modes", "kernel"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # oldest run first: softmax's state (the first call's) before add's (a later call's;
        # the two add states hold the same run, so their names order them)
        self.assertEqual([w["op"] for w in table(both, "walls.csv")], ["softmax", "add"])
        self.assertEqual({r["op"] for r in table(both, "side_by_side.csv")},
                         {r["op"] for r in table(results, "side_by_side.csv")})
        with open(os.path.join(both, "side_by_side.md")) as f:
            text = f.read()
        self.assertIn("| add | done | ", text)
        self.assertIn("| softmax | FlagGems' own: 1 failed, 2 passed | ", text)
        self.assertIn("| mul | not run | ", text)
        self.assertIn("1 of 44 files done in every mode", text)
        # FlagGems' own run of softmax ended with a failure: settled, not taken again; one cut
        # by the limit is taken again
        rc, out = check(both, "--ops", "add,softmax", "--pending", "1")
        self.assertEqual(rc, 0, out)
        self.assertIn("0 of the 2 --ops files left (neither complete nor settled); this call: none",
                      out)
        state["walls"][0]["flaggems_result"] = "cut"
        with open(softmax_state, "w") as f:
            json.dump(state, f)
        cut = os.path.join(tmpdir(), "pending-cut")
        rc, out = check(cut, "--ops", "add,softmax", "--pending", "1", "--merge", saved)
        self.assertEqual(rc, 0, out)
        self.assertIn("1 of the 2 --ops files left (neither complete nor settled); this call: "
                      "softmax", out)
        self.assertIn("complete (both sides, modes kernel): 2 of 2 files", out)
        for bad, says in (((), "--merge-only: give the earlier calls"),
                          (("--merge", one + "-none"), "no side_by_side.json there"),
                          (("--pending", "0"), "--pending '0'")):
            p = subprocess.run([sys.executable, SCRIPT, "--results", both, "--merge-only", *bad],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
            self.assertIn(says, p.stderr)

    def test_a_failure_never_retried_alone_is_taken_again_in_its_mode_only(self):
        """A saved state from before the retries whose FlagGems' own cudagraph run failed: the
        failure may have been another test's broken capture, so --pending takes the file again,
        in cudagraph mode only, and keeps its kernel mode's figures and wall."""
        results = os.path.join(tmpdir(), "unretried")
        rc, out = check(results, "--ops", "add", "--modes", "kernel,cudagraph")
        self.assertEqual(rc, 0, out)
        with open(os.path.join(results, "side_by_side.json")) as f:
            state = json.load(f)
        for w in state["walls"]:
            self.assertEqual(w["flaggems_retry_alone"], 64)
            if w["mode"] == "cudagraph":
                w.update(flaggems_result="1 failed", flaggems_failed_files=["add"])
                del w["flaggems_retry_alone"]
        kernel = {(r["dtype"], r["shape"]): r["fg_kernel_gems_ms"] for r in state["table"]}
        saved = os.path.join(tmpdir(), "unretried.json")
        with open(saved, "w") as f:
            json.dump(state, f)
        again = os.path.join(tmpdir(), "unretried-again")
        rc, out = check(again, "--ops", "mm,add", "--modes", "kernel,cudagraph", "--pending", "2",
                        "--merge", saved)
        self.assertEqual(rc, 0, out)
        # files of the same pending modes side by side: add's one mode first, then mm's two
        self.assertIn("2 of the 2 --ops files left (neither complete nor settled); this call: "
                      "add (cudagraph),mm", out)
        walls = table(again, "walls.csv")
        self.assertEqual([(w["op"], w["mode"], w["flaggems_result"]) for w in walls],
                         [("add", "kernel", "1 passed"), ("add", "cudagraph", "1 passed"),
                          ("mm", "kernel", "1 passed"), ("mm", "cudagraph", "1 passed")], out)
        for r in [r for r in table(again, "side_by_side.csv") if r["op"] == "add"]:
            self.assertEqual(r["fg_kernel_gems_ms"], str(kernel[(r["dtype"], r["shape"])]))
            self.assertGreater(float(r["fg_cudagraph_gems_ms"]), 0, r)
        # the files of the same modes left go first together, before the call takes its N: mm
        # comes first in --ops but lacks both modes, add only cudagraph
        first = os.path.join(tmpdir(), "unretried-first")
        rc, out = check(first, "--ops", "mm,add", "--modes", "kernel,cudagraph", "--pending", "1",
                        "--merge", saved)
        self.assertEqual(rc, 0, out)
        self.assertIn("2 of the 2 --ops files left (neither complete nor settled); this call: "
                      "add (cudagraph)\n", out)
        self.assertEqual([(w["op"], w["mode"]) for w in table(first, "walls.csv")],
                         [("add", "kernel"), ("add", "cudagraph")], out)
        # merged alone, the unretried failure says so and is not settled
        merged = os.path.join(tmpdir(), "unretried-merged")
        p = subprocess.run([sys.executable, SCRIPT, "--results", merged, "--merge", saved,
                            "--merge-only", "--modes", "kernel,cudagraph"], capture_output=True,
                           text=True, timeout=60)
        with open(os.path.join(merged, "side_by_side.md")) as f:
            self.assertIn("| add | done | FlagGems' own: 1 failed (not yet retried alone) |",
                          f.read())
        self.assertIn("settled (FlagGems' own run failed there): none; not yet: add", p.stdout)

    def test_saved_states_merge_oldest_run_first_whatever_their_names(self):
        """A folder of saved states merges by the newest run each holds, then by name: a newer
        state whose name sorts first still gives the file's coverage."""
        results = os.path.join(tmpdir(), "order")
        rc, out = check(results, "--ops", "add")
        self.assertEqual(rc, 0, out)
        with open(os.path.join(results, "side_by_side.json")) as f:
            state = json.load(f)
        (w,) = state["walls"]
        self.assertRegex(w["run_dir"], r"-\d{8}-\d{6}$")
        saved = tmpdir()
        with open(os.path.join(saved, "a-newer.json"), "w") as f:
            json.dump(state, f)
        w.update(run_dir=w["run_dir"][:-len("20260101-000000")] + "20000101-000000",
                 flaggems_result="cut")
        with open(os.path.join(saved, "b-older.json"), "w") as f:
            json.dump(state, f)
        merged = os.path.join(tmpdir(), "order-merged")
        p = subprocess.run([sys.executable, SCRIPT, "--results", merged, "--merge", saved,
                            "--merge-only", "--modes", "kernel"], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(os.path.join(merged, "side_by_side.md")) as f:
            self.assertIn("| add | done | ", f.read())

    def test_group_size_is_checked(self):
        for bad in (("--group-size", "0"), ("--group-size", "2", "--group")):
            rc, out = check(os.path.join(tmpdir(), "bad"), "--ops", "add", *bad)
            self.assertEqual(rc, 2, out)
            self.assertIn("--group-size", out)

    def test_a_missing_file(self):
        results = os.path.join(tmpdir(), "missing")
        rc, out = check(results, "--ops", "add,nosuchop", "--group")
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL: add+nosuchop: no benchmark/test_nosuchop.py", out)


def script_module():
    """scripts/flaggems-check as a module, for its functions."""
    import importlib.machinery
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "scripts", "flaggems-check")
    loader = importlib.machinery.SourceFileLoader("flaggems_check", path)
    spec = importlib.util.spec_from_loader("flaggems_check", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


class RetryRuns(unittest.TestCase):
    def settle(self, tests, lines, rc, summary):
        log = os.path.join(tmpdir(), "retry.log")
        with open(log, "w") as f:
            f.write("\n".join(lines + ["= %s in 1.0s =" % summary]) + "\n")
        outcomes = {}
        return script_module().run_of_several(tests, log, rc, summary, outcomes), outcomes

    def test_a_run_of_several_books_only_a_failure_that_ran_first(self):
        """pytest -x -rA over retried tests a, b, c: what its lines settle, in any order."""
        a, b, c = ("benchmark/test_%s.py::test_%s" % (x, x) for x in "abc")
        # b passed, then c failed: c leads the next run (it did not run first), a left
        got, out = self.settle([a, b, c], ["PASSED " + b, "FAILED %s - boom" % c], 1,
                               "1 failed, 1 passed")
        self.assertEqual(got, ([b], [c, a]))
        self.assertEqual(set(out), {b})
        # a skipped test ran before b's failure: b was not alone either
        got, out = self.settle([b, c], ["FAILED %s - boom" % b], 1, "1 failed, 1 skipped")
        self.assertEqual((got, out), (([], [b, c]), {}))
        # the first test failed: booked, the rest left
        got, out = self.settle([a, b], ["FAILED %s - boom" % a], 1, "1 failed, 2 warnings")
        self.assertEqual((got, out), (([], [b]), {a: "1 failed, 2 warnings"}))
        # all ran: passed, and the one without a PASSED line (skipped) not passed
        got, out = self.settle([a, b], ["PASSED " + a], 0, "1 passed, 1 skipped")
        self.assertEqual(got, ([a], []))
        self.assertEqual(out[b], "not passed: 1 passed, 1 skipped")
        # lines that do not add up to the summary, a cut, a failure of no retried test: unknown
        self.assertIsNone(self.settle([a, b], [], 0, "2 passed")[0])
        self.assertIsNone(self.settle([a, b], ["PASSED " + a], 124, "cut")[0])
        self.assertIsNone(self.settle([a, b], ["ERROR benchmark/test_z.py"], 1, "1 error")[0])


class RecordReading(unittest.TestCase):
    def test_records_written_as_json_text_are_read(self):
        """FlagGems' int4pack benchmarks call conftest's update_result themselves with
        to_json(): their records in flaggems_result.json are JSON text, not objects."""
        mod = script_module()
        obj = {"op_name": "add", "dtype": "torch.float16", "result": [{"latency": 1.0}]}
        text = json.dumps({"op_name": "int4pack", "dtype": "torch.bfloat16",
                           "result": [{"latency": 2.0}]})
        data = {"add": {"details": [obj]}, "int4pack": {"details": [text, "not json"]},
                "skipped": {"result": "skipped"}}
        self.assertEqual([d["op_name"] for d in mod.record_details(data)], ["add", "int4pack"])
        f = os.path.join(tmpdir(), "record.json")
        with open(f, "w") as fh:
            json.dump(data, fh)
        rows = mod.native_rows(f)
        self.assertEqual(rows[("int4pack", "bf16", 1, 0)], {"latency": 2.0})

    def test_tests_that_share_an_op_name_get_their_own_records(self):
        """FlagGems' test_div_tensor_mode runs with rounding modes None, trunc (float32 alone)
        and floor under one op name; its record keeps the three float32 records in the order
        they ran and no test name. Each of caliber's rows gets the record of its own test (the
        k-th of its op and dtype); before, the last record (floor's) stood for all three. Where
        FlagGems has fewer records than caliber has tests, the order says nothing: no figure."""
        mod = script_module()
        modes = ["None", "trunc", "floor"]

        def det(dtype, base):
            return {"op_name": "div_tensor_mode", "dtype": "torch." + dtype,
                    "result": [{"latency": base + i, "latency_base": 1.0} for i in range(2)]}

        def record(dets):
            f = os.path.join(tmpdir(), "record.json")
            with open(f, "w") as fh:
                json.dump({"div_tensor_mode": {"details": dets}}, fh)
            return mod.native_rows(f)

        def row(dtype, k, mode, i):
            return {"op": "div_tensor_mode", "dtype": dtype, "status": "ok", "latency_ms": 1.0,
                    "shape": "%dx%d%s" % (i, i, "#%d" % (k + 1) if k else ""),
                    "params": {"ordinal": str(i), "test": "benchmark/test_div.py::"
                               "test_div_tensor_mode[%s]" % mode}}

        rows = [row(dtype, k, m, i) for dtype, ms in (("f16", ["None", "floor"]), ("f32", modes))
                for k, m in enumerate(ms) for i in range(2)]
        # the order FlagGems ran them: None (f16, f32), trunc (f32), floor (f16, f32)
        native = record([det("float16", 10), det("float32", 20), det("float32", 30),
                         det("float16", 40), det("float32", 50)])
        table = mod.join_rows("div", {"kernel": [(rows, native)]})
        self.assertEqual([(r["dtype"], r["shape"], r["fg_kernel_gems_ms"]) for r in table], [
            ("f16", "0x0", 10), ("f16", "1x1", 11), ("f16", "0x0#2", 40), ("f16", "1x1#2", 41),
            ("f32", "0x0", 20), ("f32", "1x1", 21), ("f32", "0x0#2", 30), ("f32", "1x1#2", 31),
            ("f32", "0x0#3", 50), ("f32", "1x1#3", 51)])
        # FlagGems' run lost trunc: float32's two records are not said to be None's and floor's
        native = record([det("float16", 10), det("float32", 20), det("float16", 40),
                         det("float32", 50)])
        table = mod.join_rows("div", {"kernel": [(rows, native)]})
        self.assertEqual([r["fg_kernel_gems_ms"] for r in table if r["dtype"] == "f32"],
                         [None] * 6)
        self.assertEqual([r["fg_kernel_gems_ms"] for r in table if r["dtype"] == "f16"],
                         [10, 11, 40, 41])
        # a test whose rows caliber skipped (FlagGems' own guard) left FlagGems no record:
        # the others still meet theirs
        skipped = [dict(r, status="skipped") for r in rows if r["dtype"] == "f32" and
                   "trunc" in r["params"]["test"]]
        rows = [r for r in rows if r["dtype"] != "f32" or "trunc" not in r["params"]["test"]]
        table = mod.join_rows("div", {"kernel": [(rows[:6] + skipped + rows[6:], native)]})
        self.assertEqual([r["fg_kernel_gems_ms"] for r in table if r["dtype"] == "f32"],
                         [20, 21, 50, 51])


class Interrupt(unittest.TestCase):
    def test_a_sigint_while_a_command_runs_ends_the_command_and_starts_no_other(self):
        """timed() runs each command in a session of its own (a hung run is killed whole), out
        of the reach of the caller's SIGINT: interrupted while it waits, it ends the command
        (SIGINT, then SIGKILL) before passing the interrupt on, and starts nothing after it.
        flaggems-check2 times its runs with it too. Before this, a device call cut by its limit
        left its caliber run going on the GPU into the next call (2026-12-06: the next call's
        first minute of cases read up to 41% slow; docs/measurements.md)."""
        fc = script_module()
        where = tmpdir()
        marker = os.path.join(where, "held")
        timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        try:
            with self.assertRaises(KeyboardInterrupt):
                fc.timed([sys.executable, "-c", "import time, sys; time.sleep(60)", marker],
                         os.path.join(where, "held.log"), dict(os.environ), timeout=120)
        finally:
            timer.cancel()
        self.assertEqual(commands_of(marker), [], "the command outlived the interrupt")
        self.assertTrue(fc.STOP.is_set())
        rc, took = fc.timed([sys.executable, "-c", "pass"], os.path.join(where, "after.log"),
                            dict(os.environ))
        self.assertEqual((rc, took), (-2, 0.0), "a command started after the interrupt")


class SharedDevice(unittest.TestCase):
    def test_rows_timed_beside_another_process_are_flagged_in_the_table(self):
        """caliber's DEVICE_SHARED on a row (docs/timing.md, "Another process on the device")
        becomes the table's cal_MODE_shared, in any round, and the markdown says how many rows."""
        mod = script_module()

        def row(shape, *markers):
            return {"op": "gelu", "dtype": "f32", "shape": shape, "status": "ok",
                    "params": {"ordinal": "0"}, "latency_ms": 3.2, "latency_base_ms": 3.1,
                    "markers": list(markers)}

        kernel = [([row("1024"), row("64")], {})]
        graph = [([row("1024"), row("64")], {}), ([row("1024", "DEVICE_SHARED"), row("64")], {})]
        table = mod.join_rows("gelu", {"kernel": kernel, "cudagraph": graph})
        self.assertEqual([(r["shape"], r.get("cal_kernel_shared"), r.get("cal_cudagraph_shared"))
                          for r in table], [("1024", None, 1), ("64", None, None)])
        results = tmpdir()
        mod.write_tables(results, table, [])
        with open(os.path.join(results, "side_by_side.md")) as f:
            self.assertIn("**1 rows were timed while another process had work on the GPU**",
                          f.read())
        mod.write_tables(results, mod.join_rows("gelu", {"kernel": kernel}), [])
        with open(os.path.join(results, "side_by_side.md")) as f:
            self.assertNotIn("another process", f.read())


if __name__ == "__main__":
    unittest.main()
