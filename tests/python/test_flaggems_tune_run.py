"""--tune, REPLAY_FROM and --parallel-warmup through `caliber run --flaggems` (docs/flaggems.md,
"Tuning") on the stand-in tree, whose gems mm goes through a sqlite3 LibTuner shaped like
FlagGems' (tests/python/flaggems_standin/src/flag_gems/utils/libentry.py): record -> replay with
zero sweeps -> replay-missing; eviction live; compile_tune_no_evict under replay; a bad replay
source; a parallel warmup over two cpu devices. STANDIN_TUNE_LOG counts every config LibTuner
benchmarks, so "zero sweeps" is counted, not inferred."""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CALIBER_BIN, rows, run_dirs, tmpdir  # noqa: E402
from test_flaggems import PYTHON, ROOT, QUICK, env  # noqa: E402


def run(*args, extra_env=None):
    cmd = [CALIBER_BIN, "run", "--flaggems", ROOT, "mm"] + list(args) + QUICK
    e = env(extra_env)
    for k in ("REPLAY_FROM", "PARALLEL_WARMUP_GPUS"):
        e.pop(k, None)
    for k in list(e):
        if k.startswith("STANDIN_TUNE"):
            del e[k]
    e.update(extra_env or {})
    p = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=900)
    return p.returncode, p.stdout, p.stderr


def the_run(out):
    (d,) = run_dirs(out)
    return d, rows(d)[0]


def footer(d):
    return rows(d)[2]


def gems(cases):
    return [p for c in cases for p in c["providers"] if p["role"] == "candidate"]


def benched(log):
    if not os.path.exists(log):
        return 0
    with open(log) as f:
        return sum(1 for x in f if x.startswith("bench "))


def config_rows(db):
    out = []
    with sqlite3.connect(db) as con:
        for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'"):
            cols = [r[1] for r in con.execute('PRAGMA table_info("%s")' % t)]
            if "p50" not in cols:
                out += [dict(zip(cols, r)) for r in con.execute('SELECT * FROM "%s"' % t)]
    return out


class TuneThroughFlagGems(unittest.TestCase):
    def setUp(self):
        self.tmp = tmpdir()
        self.log = os.path.join(self.tmp, "standin-tune.log")
        self.shared = os.path.join(self.tmp, "shared.db")
        self.base_env = {"FLAGGEMS_DB_URL": "sqlite:///" + self.shared,
                         "STANDIN_TUNE_LOG": self.log}

    def out(self, name):
        return os.path.join(self.tmp, name)

    def record(self, *extra):
        rc, so, se = run("--tune", "record", "--out", self.out("rec"), *extra,
                         extra_env=self.base_env)
        self.assertEqual(rc, 0, se)
        return the_run(self.out("rec"))

    def test_record_replay_and_replay_missing(self):
        d, cases = self.record("--dtypes", "f16")
        self.assertTrue(os.path.isfile(os.path.join(d, "flaggems_tune.db")))
        self.assertFalse(os.path.exists(self.shared), "record must not touch the shared db")
        self.assertEqual(benched(self.log), 8)  # two (M, N, K, dtype) keys, four configs each
        t = footer(d)["tune"]
        self.assertEqual((t["mode"], t["keys_tuned"], t["benchmarked"], t["swept_by"]),
                         ("record", 2, 8, "libtuner"), t)
        self.assertEqual(t["cache"], os.path.join(d, "flaggems_tune.db"))
        tuned = gems(cases)
        self.assertEqual(len(tuned), 2)
        for p in tuned:
            self.assertEqual((p["tune"]["source"], p["tune"]["tried"]), ("tuned", 4))
            self.assertEqual(p["tune"]["swept_by"], "libtuner")
            self.assertTrue(p["config"].startswith("BLOCK=64,"), p)
        for c in cases:  # torch tunes nothing
            (base,) = [p for p in c["providers"] if p["role"] == "baseline"]
            self.assertNotIn("tune", base)

        os.remove(self.log)
        rc, so, se = run("--tune", "replay", "--replay-from", d, "--dtypes", "f16", "--out",
                         self.out("rep"), extra_env=dict(self.base_env, STANDIN_TUNE_BEST="16"))
        self.assertEqual(rc, 0, se)
        rd, rcases = the_run(self.out("rep"))
        with open(os.path.join(rd, "run_identity.json")) as f:
            ident = json.load(f)
        self.assertEqual(ident["flaggems_tune"]["mode"], "replay")
        self.assertEqual(ident["flaggems_tune"]["replay_from"], d)
        self.assertEqual(benched(self.log), 0, "a replay sweeps nothing")
        self.assertEqual([(p["tune"]["source"], p["tune"]["tried"]) for p in gems(rcases)],
                         [("replay", 0)] * 2)
        # The recorded winner, although the planted fastest moved: a replay does not retune.
        self.assertEqual({p["config"][:9] for p in gems(rcases)}, {"BLOCK=64,"})
        self.assertTrue(os.path.isfile(os.path.join(rd, "flaggems_tune.db")))

        # f32's keys were never recorded: replay-missing, the first config, never swept.
        rc, so, se = run("--tune", "replay", "--replay-from", d, "--out", self.out("miss"),
                         extra_env=self.base_env)
        self.assertEqual(rc, 0, se)
        _, mcases = the_run(self.out("miss"))
        by_dtype = {}
        for c in mcases:
            for p in c["providers"]:
                if p["role"] == "candidate":
                    by_dtype.setdefault(c["dtype"], []).append(p)
        self.assertEqual({p["tune"]["source"] for p in by_dtype["f16"]}, {"replay"})
        self.assertEqual({p["tune"]["source"] for p in by_dtype["f32"]}, {"replay-missing"})
        self.assertTrue(all(p["config"].startswith("BLOCK=16,") for p in by_dtype["f32"]))
        self.assertIn("not in the replayed LibTuner database", by_dtype["f32"][0]["tune"]["note"])
        t = footer(the_run(self.out("miss"))[0])["tune"]
        self.assertEqual((t["mode"], t["keys_tuned"], t["replay_missing"], t["cache_hits"],
                          t["benchmarked"]), ("replay", 0, 2, 2, 0), t)
        self.assertEqual(benched(self.log), 0, "replay-missing is never swept")

    def test_live_evicts_a_config_that_cannot_launch(self):
        for _ in range(2):
            rc, so, se = run("--out", self.out("live"), extra_env=self.base_env)
            self.assertEqual(rc, 0, se)
        self.assertTrue(all(r["BLOCK"] == 64 for r in config_rows(self.shared)))
        rc, so, se = run("--out", self.out("evict"),
                         extra_env=dict(self.base_env, STANDIN_TUNE_FAIL="BLOCK=64"))
        self.assertEqual(rc, 0, se)
        _, cases = the_run(self.out("evict"))
        evicted = [p for p in gems(cases) if p["tune"].get("evicted")]
        self.assertEqual(len(evicted), 4)  # one per (M, N, K, dtype) key
        for p in evicted:
            self.assertTrue(p["tune"]["evicted"].startswith("BLOCK=64,"))
            self.assertFalse(p["config"].startswith("BLOCK=64,"))
            self.assertIn("deleted from the LibTuner database", p["tune"]["note"])
        self.assertTrue(all(c["status"] == "ok" for c in cases), [c["status"] for c in cases])
        self.assertTrue(config_rows(self.shared))
        self.assertTrue(all(r["BLOCK"] != 64 for r in config_rows(self.shared)))

    def test_replay_cannot_evict(self):
        d, _ = self.record()
        rc, so, se = run("--tune", "replay", "--replay-from", d, "--out", self.out("rep"),
                         extra_env=dict(self.base_env, STANDIN_TUNE_FAIL="BLOCK=64"))
        self.assertEqual(rc, 1, se)
        rd, cases = the_run(self.out("rep"))
        failed = [c for c in cases if c["status"] == "failed"]
        self.assertTrue(failed)
        for c in failed:
            (p,) = [p for p in c["providers"] if p["role"] == "candidate"]
            self.assertIn("compile_tune_no_evict", p["tune_markers"])
            self.assertIn("compile_tune_no_evict", c["markers"])
            self.assertIn("out of resources", p["error"])
        self.assertEqual(len(config_rows(os.path.join(rd, "flaggems_tune.db"))), 4,
                         "replay deletes nothing")

    def test_bad_replay_source_writes_nothing(self):
        empty = self.out("empty")
        os.makedirs(empty)
        rc, so, se = run("--tune", "replay", "--replay-from", empty, "--out", self.out("x"),
                         extra_env=self.base_env)
        self.assertEqual(rc, 2, se)
        self.assertIn("--replay-from (REPLAY_FROM): '%s' holds no flaggems_tune.db" % empty, se)
        self.assertFalse(os.path.exists(self.out("x")) and os.listdir(self.out("x")))
        gone = os.path.join(empty, "gone")
        rc, so, se = run("--tune", "replay", "--replay-from", gone, "--out", self.out("x"),
                         extra_env=self.base_env)
        self.assertEqual(rc, 2, se)
        self.assertIn("--replay-from (REPLAY_FROM): '%s' does not exist" % gone, se)
        rc, so, se = run("--parallel-warmup", "2", "--out", self.out("y"), extra_env=self.base_env)
        self.assertEqual(rc, 2, se)
        self.assertIn("--parallel-warmup (PARALLEL_WARMUP_GPUS): '2'", se)
        self.assertFalse(os.path.exists(self.out("y")) and os.listdir(self.out("y")))

    def test_record_resumed_sweeps_only_what_the_earlier_record_lacks(self):
        """`--tune record --replay-from RUN`: a record too long for one sitting (mm at
        comprehensive level on one GPU) continues where RUN stopped: RUN's keys are taken from
        the run's database, only the rest are swept, and the resumed run's database then holds
        every key, so a replay from it sweeps nothing and misses nothing."""
        first, _ = self.record("--dtypes", "f16")  # two of the four keys
        os.remove(self.log)
        rc, so, se = run("--tune", "record", "--replay-from", first, "--out", self.out("res"),
                         extra_env=self.base_env)
        self.assertEqual(rc, 0, se)
        self.assertIn("resuming the LibTuner record of %s: 2 keys already tuned"
                      % os.path.join(first, "flaggems_tune.db"), se)
        d, cases = the_run(self.out("res"))
        self.assertEqual(benched(self.log), 8, "only f32's two keys are swept")
        by = {}
        for c in cases:
            for p in c["providers"]:
                if p["role"] == "candidate":
                    by.setdefault(c["dtype"], set()).add((p["tune"]["source"], p["tune"]["tried"]))
        self.assertEqual(by, {"f16": {("cache", 0)}, "f32": {("tuned", 4)}}, by)
        t = footer(d)["tune"]
        self.assertEqual((t["mode"], t["keys_tuned"], t["cache_hits"]), ("record", 2, 2), t)
        with open(os.path.join(d, "run_identity.json")) as f:
            ident = json.load(f)["flaggems_tune"]
        self.assertEqual((ident["mode"], ident["replay_from"]), ("record", first), ident)
        self.assertIn("resumed from", ident["database"])
        self.assertEqual(len(config_rows(os.path.join(d, "flaggems_tune.db"))), 4)
        self.assertEqual(len(config_rows(os.path.join(first, "flaggems_tune.db"))), 2,
                         "the earlier record is only read")
        self.assertFalse(os.path.exists(self.shared), "a record never touches the shared db")

        os.remove(self.log)
        rc, so, se = run("--tune", "replay", "--replay-from", d, "--out", self.out("rep"),
                         extra_env=self.base_env)
        self.assertEqual(rc, 0, se)
        _, rcases = the_run(self.out("rep"))
        self.assertEqual({p["tune"]["source"] for p in gems(rcases)}, {"replay"})
        self.assertEqual(benched(self.log), 0)

        # A source that is no record, and a source with a mode that cannot use one: exit 2,
        # nothing written.
        empty = self.out("empty")
        os.makedirs(empty)
        for mode, words in (("record", "holds no flaggems_tune.db"),
                            ("live", "allowed with --tune replay")):
            rc, so, se = run("--tune", mode, "--replay-from", empty, "--out", self.out("bad"),
                             extra_env=self.base_env)
            self.assertEqual(rc, 2, (mode, se))
            self.assertIn(words, se)
            self.assertFalse(os.path.exists(self.out("bad")) and os.listdir(self.out("bad")))

    def test_live_and_record_with_flaggems_default_database(self):
        """No FLAGGEMS_DB_URL: live mode tunes into FlagGems' own default database
        (~/.flaggems/config_cache/TunedConfig_*.db, as FlagGems finds it at import), and a second
        live run sweeps nothing; a record leaves that database as it was."""
        home = self.out("home")
        os.makedirs(home)
        e = dict(self.base_env, HOME=home)
        cmd = [CALIBER_BIN, "run", "--flaggems", ROOT, "mm"] + QUICK

        def go(*args):
            environ = env(e)
            environ.pop("FLAGGEMS_DB_URL", None)
            p = subprocess.run(cmd + list(args), capture_output=True, text=True, env=environ,
                               timeout=900)
            self.assertEqual(p.returncode, 0, p.stderr)

        go("--tune", "live", "--out", self.out("l1"))
        (db,) = [os.path.join(r, f) for r, _, fs in os.walk(home) for f in fs
                 if f.endswith(".db")]
        self.assertIn(os.path.join(".flaggems", "config_cache", "TunedConfig_"), db)
        self.assertEqual(len(config_rows(db)), 4)
        self.assertEqual(benched(self.log), 16)
        d, _ = the_run(self.out("l1"))
        with open(os.path.join(d, "run_identity.json")) as f:
            self.assertIn("FlagGems' default", json.load(f)["flaggems_tune"]["database"])
        os.remove(self.log)
        go("--tune", "live", "--out", self.out("l2"))
        self.assertEqual(benched(self.log), 0, "the second live run read FlagGems' default db")
        before = os.path.getmtime(db), len(config_rows(db))
        go("--tune", "record", "--dtypes", "f16", "--out", self.out("r1"))
        self.assertEqual((os.path.getmtime(db), len(config_rows(db))), before)

    def test_parallel_warmup_shards_then_measures_without_sweeping(self):
        e = dict(self.base_env, CALIBER_CPU_DEVICES="2")
        rc, so, se = run("--tune", "record", "--parallel-warmup", "2", "--devices", "0,1",
                         "--out", self.out("pw"), extra_env=e)
        self.assertEqual(rc, 0, se)
        d, cases = the_run(self.out("pw"))
        with open(os.path.join(d, "warmup", "result.json")) as f:
            res = json.load(f)
        self.assertEqual((res["shards"], res["failed_shards"]), (2, 0), res)
        self.assertEqual(res["keys"], 4)  # (M, N, K, dtype): each shard tuned two
        self.assertEqual(res["disagreements"], 0)
        self.assertIn("parallel warmup: 2 shards, 4 keys, 0 disagreements", so)
        self.assertEqual(footer(d)["parallel_warmup"]["shards"], 2)
        self.assertEqual(footer(d)["tune"]["keys_tuned"], 0)  # the measurement swept nothing
        # The shards swept every key; the serial measurement found them all.
        self.assertEqual(benched(self.log), 16)
        self.assertEqual([p["tune"]["source"] for p in gems(cases)], ["cache"] * 4)
        self.assertEqual({p["tune"]["tried"] for p in gems(cases)}, {0})
        self.assertEqual(len(config_rows(os.path.join(d, "flaggems_tune.db"))), 4)
        for i in range(2):  # each shard ran pinned to its own device
            self.assertTrue(os.path.isfile(os.path.join(d, "warmup", "shard-%d.db" % i)))
        # Each dtype's loop (two inputs, one block) on one shard: f16 on the first, f32 on the
        # second, so each compiles one dtype's configs (docs/flaggems.md, "Parallel warmup").
        for i, dtype in enumerate(("torch.float16", "torch.float32")):
            got = config_rows(os.path.join(d, "warmup", "shard-%d.db" % i))
            self.assertEqual({r["key_3"] for r in got}, {dtype}, got)
            self.assertEqual(len(got), 2)

    def test_parallel_warmup_with_devices_given_as_gpus(self):
        """--gpus, --devices' alias, in either spelling: each shard gets its own device in
        place of the caller's list (given twice, a shard was refused before it ran)."""
        for i, spelling in enumerate((["--gpus", "0,1"], ["--gpus=0,1"])):
            out = self.out("pg%d" % i)
            rc, so, se = run("--tune", "record", "--parallel-warmup", "2", *spelling,
                             "--out", out, extra_env=dict(self.base_env, CALIBER_CPU_DEVICES="2"))
            self.assertEqual(rc, 0, se)
            d, cases = the_run(out)
            with open(os.path.join(d, "warmup", "result.json")) as f:
                res = json.load(f)
            self.assertEqual((res["shards"], res["failed_shards"]), (2, 0), res)
            self.assertEqual(res["keys"], 4, res)
            self.assertEqual([p["tune"]["source"] for p in gems(cases)], ["cache"] * 4)

    def processes_under(self, path):
        """Pids of the processes whose command line names `path` (the shards name their
        database in the run directory; the run its --out)."""
        out = []
        for pid in os.listdir("/proc"):
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    if path.encode() in f.read() and int(pid) != os.getpid():
                        out.append(int(pid))
            except (OSError, ValueError):
                pass
        return out

    def interrupt_warmup(self, name, kill):
        """Starts a parallel warmup whose shards sit in FlagGems' (slow) import, calls
        kill(caliber's Popen) once both shards exist, and returns the shards still alive 10 s
        later."""
        out = self.out(name)
        e = env(dict(self.base_env, CALIBER_CPU_DEVICES="2", STANDIN_SHARD_IMPORT_S="60"))
        for k in ("REPLAY_FROM", "PARALLEL_WARMUP_GPUS"):
            e.pop(k, None)
        p = subprocess.Popen([CALIBER_BIN, "run", "--flaggems", ROOT, "mm", "--tune", "record",
                              "--parallel-warmup", "2", "--devices", "0,1", "--out", out] + QUICK,
                             env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 120
            while len([x for x in self.processes_under(out) if x != p.pid]) < 3:  # python + 2
                self.assertLess(time.monotonic(), deadline, "the shards never started")
                self.assertIsNone(p.poll(), "caliber ended before its shards started")
                time.sleep(0.2)
            time.sleep(0.5)
            kill(p)
            p.wait(timeout=60)
            deadline = time.monotonic() + 10
            while self.processes_under(out) and time.monotonic() < deadline:
                time.sleep(0.2)
            return self.processes_under(out)
        finally:
            for pid in self.processes_under(out) + ([p.pid] if p.poll() is None else []):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass

    def test_parallel_warmup_shards_end_with_the_run(self):
        # SIGTERM to caliber: the interpreter it handed the run to gets SIGTERM from the kernel
        # (its parent died) and must end its shards before it ends.
        left = self.interrupt_warmup("term", lambda p: p.send_signal(signal.SIGTERM))
        self.assertEqual(left, [], "shards outlived a SIGTERM of caliber")
        # SIGKILL of that interpreter: nothing of it runs, the shards end with it by themselves.
        def kill_interpreter(p):
            (py,) = [x for x in self.processes_under(self.out("kill"))
                     if x != p.pid and os.path.exists("/proc/%d" % x)
                     and b"--tune-shard" not in open("/proc/%d/cmdline" % x, "rb").read()]
            os.kill(py, signal.SIGKILL)
        left = self.interrupt_warmup("kill", kill_interpreter)
        self.assertEqual(left, [], "shards outlived a SIGKILL of their parent")

    def assert_passed_but_for_host_noise(self, rc, out):
        """The script passed, or failed only on compare's verdicts between the record and the
        replay: on the cpu backend those are the host's noise (a loaded CI machine moved 2 of 16
        pairs), not what these tests check; every other failure still fails."""
        fails = [x for x in out.splitlines() if x.startswith("flaggems-check2: FAIL:")]
        others = [x for x in fails if not x.startswith("flaggems-check2: FAIL: compare record/replay:")
                  or "no JSON" in x]
        self.assertIn(rc, (0, 1) if fails else (0,), out)
        self.assertEqual(others, [], out)

    def device_script(self):
        """scripts/flaggems-check2, a SQLAlchemy stand-in folder and the environment it runs in."""
        script = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))), "scripts", "flaggems-check2")
        sqla = self.out("sqla")
        os.makedirs(os.path.join(sqla, "lib"))
        e = env(self.base_env)
        for k in ("REPLAY_FROM", "PARALLEL_WARMUP_GPUS"):
            e.pop(k, None)
        return script, sqla, e

    def test_device_script_edges(self):
        """scripts/flaggems-check2 --parts edges: the overlay's one shape for add, and a batch
        killed (SIGKILL) as soon as its child's row says running, while the child still loads
        (the stand-in's import takes 3 s here, as FlagGems' takes seconds): the row ends
        interrupted, not left at running (the held SIGTERM)."""
        script, sqla, e = self.device_script()
        e["STANDIN_IMPORT_S"] = "3"
        p = subprocess.run(
            [sys.executable, script, "--caliber", CALIBER_BIN, "--results", self.out("edges"),
             "--flaggems", ROOT, "--sqlalchemy", sqla, "--python", PYTHON, "--parts", "edges",
             "--backend", "cpu", "--run-flags", " ".join(QUICK[2:])], capture_output=True,
            text=True, env=e, timeout=900)
        out = p.stdout + p.stderr
        self.assertEqual(p.returncode, 0, out)
        self.assertIn("add's 3 all at ['333x777_333x777']", out)
        self.assertRegex(out, r"the batch killed [0-9.]+ s after its start, when add's row said "
                         r"running; add's row then interrupted, no process of it left "
                         r"\([0-9]+ s after the start\); its lease held then free")

    def test_device_script_splits_record_and_replay_over_two_calls(self):
        """scripts/flaggems-check2's tune part in two calls, as the device's 10-minute commands
        need for mm at comprehensive level: `--tune-steps record` leaves RESULTS/mmrec, a later
        `--tune-steps replay --record-run` that folder replays it with zero sweeps and compares;
        a record run without its database is a named failure, not a replay of nothing."""
        script, sqla, e = self.device_script()

        def call(results, *steps, dtypes="f16"):
            p = subprocess.run(
                [sys.executable, script, "--caliber", CALIBER_BIN, "--results", results,
                 "--flaggems", ROOT, "--sqlalchemy", sqla, "--python", PYTHON, "--parts", "tune",
                 "--backend", "cpu", "--run-flags", " ".join(QUICK[2:]), "--tune-dtypes", dtypes,
                 *steps], capture_output=True, text=True, env=e, timeout=900)
            return p.returncode, p.stdout + p.stderr

        rc, out = call(self.out("call1"), "--tune-steps", "record")
        self.assertEqual(rc, 0, out)
        self.assertIn("| record (", out)
        self.assertNotIn("| replay", out)
        self.assertEqual(benched(self.log), 8)
        os.remove(self.log)
        rc, out = call(self.out("call2"), "--tune-steps", "replay", "--record-run",
                       os.path.join(self.out("call1"), "mmrec"))
        self.assert_passed_but_for_host_noise(rc, out)
        self.assertIn('| replay (from %s' % os.path.join(self.out("call1"), "mmrec"), out)
        self.assertIn("## mm comprehensive: LibTuner record, then replay", out)
        # summary's check of the inputs mm times twice, for each side (the stand-in has none)
        self.assertIn("record, repeated inputs: none", out)
        self.assertIn("replay, repeated inputs: none", out)
        self.assertIn('"replay": 2', out)  # the two tuned keys; BLAS's column-major pass has none
        self.assertNotIn("replay-missing", out)
        # Every pair compared (the verdicts are the host's noise on the cpu backend: not asserted).
        counts = json.loads(out.split("compare record -> replay: ", 1)[1].splitlines()[0])
        self.assertEqual(sum(counts.values()), 8, counts)  # 4 cases, 2 providers
        # Each provider's ratios read against the other's: torch's rows are the run-to-run band.
        self.assertRegex(out, r"\| gems \| 4 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-4] \| [0-4] \|")
        self.assertRegex(out, r"\| torch \| 4 \| [0-9.]+ \|")
        self.assertEqual(benched(self.log), 0, "the second call's replay swept nothing")
        os.makedirs(self.out("empty"))
        rc, out = call(self.out("call3"), "--tune-steps", "replay", "--record-run",
                       self.out("empty"))
        self.assertEqual(rc, 1, out)
        self.assertIn("holds no flaggems_tune.db", out)

        # A record over several calls: the first call's f16 record resumed over every dtype
        # sweeps only f32's two keys, then replays all four with zero sweeps.
        os.remove(self.log)
        rc, out = call(self.out("call4"), "--tune-steps", "record,replay", "--resume-from",
                       os.path.join(self.out("call1"), "mmrec"), dtypes="f16,f32")
        self.assert_passed_but_for_host_noise(rc, out)
        self.assertIn(", resumed from %s" % os.path.join(self.out("call1"), "mmrec"), out)
        self.assertIn("| 4 keys recorded |", out)
        self.assertIn('"replay": 4', out)
        self.assertEqual(benched(self.log), 8, "the resumed record swept f32's keys alone")

    def test_device_script_sweeps_alone_over_calls_then_records_and_replays(self):
        """flaggems-check2 --tune-steps sweep: LibTuner's sweeps alone (nothing timed) into
        --sweep-dir, resumed by a later call with the folder (mm at comprehensive level is
        about 100 minutes of sweeps on one GPU); `sweep,record,replay` then sweeps only what
        is missing, records with zero sweeps from it and replays. A sweep cut by its limit
        stops the call, keeping its keys; an unknown step is refused (exit 2)."""
        script, sqla, e = self.device_script()
        sweeps = self.out("sweeps")

        def call(results, *steps, dtypes="f16", timeout="900", extra=None):
            p = subprocess.run(
                [sys.executable, script, "--caliber", CALIBER_BIN, "--results", results,
                 "--flaggems", ROOT, "--sqlalchemy", sqla, "--python", PYTHON, "--parts", "tune",
                 "--backend", "cpu", "--run-flags", " ".join(QUICK[2:]), "--tune-dtypes", dtypes,
                 "--timeout", timeout, *steps], capture_output=True, text=True,
                env=dict(e, **(extra or {})), timeout=900)
            return p.returncode, p.stdout + p.stderr

        rc, out = call(self.out("s1"), "--tune-steps", "sweep", "--sweep-dir", sweeps)
        self.assertEqual(rc, 0, out)
        self.assertIn("| sweep (%s) |" % sweeps, out)
        self.assertIn("| 2 keys recorded, 2 new |", out)
        self.assertNotIn("| record", out)
        self.assertFalse(os.path.exists(os.path.join(self.out("s1"), "mmrec")))
        self.assertEqual(benched(self.log), 8, "f16's two keys swept")
        os.remove(self.log)
        # the folder as git keeps it between sessions: the winners as SQL text (not every
        # config's timings: the benchmark tables are megabytes at mm's comprehensive level) and
        # the ledger, no database
        with open(os.path.join(sweeps, "flaggems_tune.sql")) as f:
            text = f.read()
        self.assertEqual(text.count("INSERT INTO"), 2, text)
        self.assertNotIn("p50", text)
        kept = self.out("sweeps-kept")
        os.makedirs(kept)
        for name in ("flaggems_tune.sql", "sweeps.json"):
            shutil.copy(os.path.join(sweeps, name), kept)
        shutil.rmtree(sweeps)
        sweeps = kept
        # a record resumed straight from such a folder (its database made from the text):
        # f16's two keys found, none swept again
        text_only = self.out("sweeps-text-only")
        shutil.copytree(kept, text_only)
        rc, out = call(self.out("s1b"), "--tune-steps", "record", "--resume-from", text_only)
        self.assert_passed_but_for_host_noise(rc, out)
        self.assertIn(", resumed from %s" % text_only, out)
        self.assertEqual(benched(self.log), 0, "the record swept what the folder's text holds")
        os.remove(self.log)
        # the record and the replay of one test of the file (--tune-tests), as a level too long
        # for one call is recorded a test a call
        rc, out = call(self.out("s2"), "--tune-steps", "sweep,record,replay", "--sweep-dir",
                       sweeps, "--tune-tests", "test_mm", dtypes="f16,f32")
        self.assert_passed_but_for_host_noise(rc, out)
        for log in ("mmsweep.log", "mmrec.log", "mmrep.log"):
            with open(os.path.join(self.out("s2"), log)) as f:
                self.assertIn(" benchmark/test_mm.py::test_mm --backend", f.readline())
        self.assertIn("| sweep (%s, resumed with 2 keys) |" % sweeps, out)
        self.assertIn("| 4 keys recorded, 2 new |", out)
        self.assertIn(", resumed from %s" % sweeps, out)
        self.assertIn('"replay": 4', out)
        self.assertEqual(benched(self.log), 8, "the sweep swept f32's keys alone; the record "
                         "and the replay none")
        with open(os.path.join(sweeps, "sweeps.json")) as f:
            ledger = json.load(f)
        self.assertEqual([(x["keys_before"], x["keys_after"], x["rc"]) for x in ledger],
                         [(0, 2, 0), (2, 4, 0)])
        self.assertNotIn("cards**", out)
        this_card = ledger[1]["card"]

        def sweep_again(first_card, results):
            """The folder's first sweep said to be another session's, on first_card."""
            ledger[0]["card"] = first_card
            with open(os.path.join(sweeps, "sweeps.json"), "w") as f:
                json.dump(ledger, f)
            rc, out = call(self.out(results), "--tune-steps", "sweep", "--sweep-dir", sweeps,
                           dtypes="f16,f32")
            self.assertEqual(rc, 0, out)
            self.assertIn("| 4 keys recorded, 0 new |", out)
            return out

        out = sweep_again("Another card GPU-0", "s2b")  # another kind of card
        self.assertRegex(out, r"\*\*The sweep's keys come from 2 kinds of card\*\* \([^)]*Another "
                         r"card GPU-0[^)]*\): a record from it replays winners chosen on another "
                         r"kind")
        # another card of the same kind (another session's machine) is said, not warned of
        out = sweep_again(this_card + " GPU-abcdef12", "s2c")
        self.assertNotIn("kinds of card", out)
        self.assertIn("cards of one kind", out)
        # cut: the stand-in's import outlasts the limit; nothing recorded after it
        rc, out = call(self.out("s3"), "--tune-steps", "sweep,record", "--sweep-dir",
                       self.out("sweeps-cut"), timeout="1", extra={"STANDIN_IMPORT_S": "5"})
        self.assertEqual(rc, 1, out)
        self.assertIn("flaggems-check2: FAIL: tune sweep: rc=124", out)
        self.assertIn("cut (rc 124): --tune-steps sweep --sweep-dir", out)
        self.assertNotIn("| record", out)
        # a test the file does not have: caliber's shard refuses the node, the sweep fails and
        # says where caliber's message is (not "cut": nothing to resume)
        rc, out = call(self.out("s5"), "--tune-steps", "sweep", "--sweep-dir",
                       self.out("sweeps-none"), "--tune-tests", "test_nope")
        self.assertEqual(rc, 1, out)
        self.assertIn("flaggems-check2: FAIL: tune sweep: rc=2", out)
        self.assertIn("; failed (rc 2): %s says why |" % os.path.join(self.out("s5"),
                                                                       "mmsweep.log"), out)
        with open(os.path.join(self.out("s5"), "mmsweep.log")) as f:
            self.assertIn("'benchmark/test_mm.py::test_nope': no such test", f.read())
        rc, out = call(self.out("s4"), "--tune-steps", "sweep,tune")
        self.assertEqual(rc, 2, out)
        self.assertIn("--tune-steps 'sweep,tune': tune; allowed sweep, record, replay", out)

    def test_device_script_cut_with_the_call_reports_what_it_kept(self):
        """flaggems-check2 cut by its call's limit (gpu-check's SIGINT to its process group, the
        commands under way in sessions of their own): exit 130 with RESULTS/flaggems2.md all the
        same. Cut in the record, after the sweep finished, the report keeps the sweep's line;
        cut in the sweep, the folder's ledger and the report say `cut (rc 130)`, so the keys
        LibTuner committed go on from the folder in the next call."""
        script, sqla, e = self.device_script()
        e["STANDIN_IMPORT_S"] = "3"  # each caliber child is still loading when the cut comes

        def cut_in(results, step_log, sweeps):
            p = subprocess.Popen(
                [sys.executable, script, "--caliber", CALIBER_BIN, "--results", results,
                 "--flaggems", ROOT, "--sqlalchemy", sqla, "--python", PYTHON, "--parts", "tune",
                 "--backend", "cpu", "--run-flags", " ".join(QUICK[2:]), "--tune-dtypes", "f16",
                 "--tune-steps", "sweep,record,replay", "--sweep-dir", sweeps],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=e,
                start_new_session=True)
            t0 = time.monotonic()
            while not os.path.exists(os.path.join(results, step_log)) and p.poll() is None \
                    and time.monotonic() - t0 < 300:
                time.sleep(0.05)
            time.sleep(0.5)
            os.killpg(p.pid, signal.SIGINT)
            out, _ = p.communicate(timeout=120)
            with open(os.path.join(results, "flaggems2.md")) as f:
                return p.returncode, out, f.read()

        sweeps = self.out("sweeps")
        rc, out, md = cut_in(self.out("c1"), "mmrec.log", sweeps)
        self.assertEqual(rc, 130, out)
        self.assertIn("| sweep (%s) |" % sweeps, md)
        self.assertIn("| 2 keys recorded, 2 new |", md)
        self.assertIn("**Cut short** (SIGINT or SIGTERM", md)
        self.assertNotIn("| replay", md)
        self.assertIn("flaggems-check2: FAIL: the call was cut short", out)

        sweeps = self.out("sweeps-cut")
        rc, out, md = cut_in(self.out("c2"), "mmsweep.log", sweeps)
        self.assertEqual(rc, 130, out)
        self.assertIn("; cut (rc 130): --tune-steps sweep --sweep-dir %s resumes it |" % sweeps,
                      md)
        self.assertNotIn("| record", md)
        with open(os.path.join(sweeps, "sweeps.json")) as f:
            self.assertEqual([x["rc"] for x in json.load(f)], [130])

    def test_device_script_compiles_the_records_configs_ahead_and_not_the_replays(self):
        """flaggems-check2 --compile-threads 4: the record compiles ahead (its report row says how
        many configs), the replay in the same call is run without the flag (with it, caliber
        refuses a replay) and sweeps nothing."""
        script, sqla, e = self.device_script()
        p = subprocess.run(
            [sys.executable, script, "--caliber", CALIBER_BIN, "--results", self.out("ahead"),
             "--flaggems", ROOT, "--sqlalchemy", sqla, "--python", PYTHON, "--parts", "tune",
             "--backend", "cpu", "--run-flags", " ".join(QUICK[2:]), "--tune-dtypes", "f16",
             "--compile-threads", "4"], capture_output=True, text=True, env=e, timeout=900)
        out = p.stdout + p.stderr
        self.assert_passed_but_for_host_noise(p.returncode, out)
        self.assertIn(", 8 configs compiled ahead in ", out)  # 2 keys, 4 configs each
        self.assertIn(" over 4 threads) |", out)
        self.assertIn('"replay": 2', out)
        c = compiles(self.log)
        self.assertEqual(sorted(b for b, how, _, _ in c if how == "ahead"),
                         ["BLOCK=128", "BLOCK=16", "BLOCK=32", "BLOCK=64"], c)
        # the record's sweep compiled nothing; the replay (a process of its own) compiles the
        # winner it launches, as it goes
        self.assertEqual({b for b, how, _, _ in c if how == "inline"} - {"BLOCK=64"}, set(), c)

    def test_device_script_shards_the_record_then_the_batch_replays_it(self):
        """scripts/flaggems-check2's tune part at core level with --parallel-warmup 2 over two
        cpu devices: the shards sweep every key (the serial measurement none), the report gives
        the shards' keys; the replay sweeps nothing; then the batch part replays that record
        (`--batch-flags "--tune replay --replay-from DIR"`): mm ok with zero sweeps."""
        script, sqla, e = self.device_script()
        e["CALIBER_CPU_DEVICES"] = "2"

        def call(results, *args):
            p = subprocess.run(
                [sys.executable, script, "--caliber", CALIBER_BIN, "--results", results,
                 "--flaggems", ROOT, "--sqlalchemy", sqla, "--python", PYTHON, "--backend", "cpu",
                 *args], capture_output=True, text=True, env=e, timeout=900)
            return p.returncode, p.stdout + p.stderr

        rc, out = call(self.out("pw"), "--parts", "tune", "--tune-level", "core",
                       "--parallel-warmup", "2", "--devices", "0,1", "--run-flags",
                       " ".join(QUICK[2:]))
        self.assert_passed_but_for_host_noise(rc, out)
        self.assertIn("## mm core: LibTuner record, then replay", out)
        self.assertIn(", 2 warmup shards) |", out)
        self.assertIn("| 0 (the shards tuned 4 keys, 0 disagreements, ", out)
        self.assertIn('"replay": 4', out)
        self.assertEqual(benched(self.log), 16, "the shards swept every key, nothing else did")
        os.remove(self.log)
        (rec,) = run_dirs(os.path.join(self.out("pw"), "mmrec"))
        rc, out = call(self.out("pwb"), "--parts", "batch", "--ops", "mm", "--timeout-per-op",
                       "300", "--batch-flags", " ".join(QUICK[2:] + ["--tune", "replay",
                                                                     "--replay-from", rec]))
        self.assertEqual(rc, 0, out)
        self.assertIn("| mm | ok |", out)
        self.assertEqual(benched(self.log), 0, "the batch replayed the sharded record")

    def test_device_script_batch_records_then_resumes(self):
        """scripts/flaggems-check2's batch part with --batch-flags: a file whose LibTuner sweeps
        outlast one device call is recorded in its child's run (`--tune record`), and the next
        call resumes that record from its database (`--tune record --replay-from DB`), sweeping
        only what it lacks: here nothing, since the first call finished."""
        script, sqla, e = self.device_script()

        def call(results, flags):
            p = subprocess.run(
                [sys.executable, script, "--caliber", CALIBER_BIN, "--results", results,
                 "--flaggems", ROOT, "--sqlalchemy", sqla, "--python", PYTHON, "--parts", "batch",
                 "--ops", "mm", "--backend", "cpu", "--timeout-per-op", "300",
                 "--batch-flags", " ".join(QUICK[2:] + flags)],
                capture_output=True, text=True, env=e, timeout=900)
            return p.returncode, p.stdout + p.stderr

        rc, out = call(self.out("b1"), ["--tune", "record"])
        self.assertEqual(rc, 0, out)
        self.assertIn("| mm | ok |", out)
        dbs = [os.path.join(r, f) for r, _, fs in os.walk(self.out("b1")) for f in fs
               if f == "flaggems_tune.db"]
        self.assertEqual(len(dbs), 1, dbs)
        self.assertEqual(benched(self.log), 16, "every key swept once, in the child's record")
        self.assertFalse(os.path.exists(self.shared), "a record never touches the shared db")
        os.remove(self.log)
        rc, out = call(self.out("b2"), ["--tune", "record", "--replay-from", dbs[0]])
        self.assertEqual(rc, 0, out)
        self.assertIn("| mm | ok |", out)
        self.assertEqual(benched(self.log), 0, "the resumed record had every key already")


def compiles(log, kernel="mm_kernel"):
    """The stand-in's compile lines of a kernel: (BLOCK, how, start, end)."""
    if not os.path.exists(log):
        return []
    out = []
    with open(log) as f:
        for x in f:
            w = x.split()
            if w[:2] == ["compile", kernel]:
                out.append((w[2], w[3], float(w[4]), float(w[5])))
    return out


def most_at_once(intervals):
    """The largest number of (start, end) intervals open at one instant."""
    edges = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals],
                   key=lambda x: (x[0], x[1]))
    most = now = 0
    for _, d in edges:
        now += d
        most = max(most, now)
    return most


class PlainTritonAutotune(unittest.TestCase):
    """FlagGems' kernels under plain @triton.autotune (the stand-in's gems softmax): Triton keeps
    their choices in the process, so caliber only observes them: the row says what was swept and
    chosen, in every mode (a note under replay), the footer counts them apart from LibTuner's,
    and the timers' launches are not observed (one sweep and one event a key)."""

    def setUp(self):
        self.tmp = tmpdir()
        self.log = os.path.join(self.tmp, "standin-tune.log")
        self.env = {"FLAGGEMS_DB_URL": "sqlite:///" + os.path.join(self.tmp, "shared.db"),
                    "STANDIN_TUNE_LOG": self.log, "STANDIN_PLAIN_BEST": "64"}

    def run_both(self, name, *tune):
        out = os.path.join(self.tmp, name)
        e = env(self.env)
        for k in ("REPLAY_FROM", "PARALLEL_WARMUP_GPUS"):
            e.pop(k, None)
        e.update(self.env)
        p = subprocess.run([CALIBER_BIN, "run", "--flaggems", ROOT, "test_softmax.py::test_softmax",
                            "test_mm.py::test_mm", "--dtypes", "f32", "--out", out, *tune] + QUICK,
                           capture_output=True, text=True, env=e, timeout=900)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        (d,) = run_dirs(out)
        return d, rows(d)[0]

    def test_the_row_says_what_triton_swept_and_chose(self):
        d, cases = self.run_both("rec", "--tune", "record")
        soft = [c for c in cases if c["op"] == "softmax"]
        self.assertEqual(len(soft), 2, [c["node"] for c in cases])
        for c in soft:
            (g,) = [p for p in c["providers"] if p["role"] == "candidate"]
            t = g["tune"]
            self.assertEqual((t["swept_by"], t["source"], t["tried"]), ("triton", "tuned", 4), t)
            self.assertTrue(g["config"].startswith("BLOCK=64,"), g)  # STANDIN_PLAIN_BEST
            self.assertEqual(len(t["kernels"]), 1, t)  # the prepare call's, not the timers'
            self.assertNotIn("note", t)
        with open(self.log) as f:
            swept = [x for x in f if x.startswith("autotune-bench softmax_kernel")]
        self.assertEqual(len(swept), 8, swept)  # 4 configs x 2 sizes: one sweep a key
        mm = [p for c in cases if c["op"] == "mm" for p in c["providers"]
              if p["role"] == "candidate"]
        self.assertTrue(mm and all(p["tune"]["swept_by"] == "libtuner" for p in mm), mm)
        tune = footer(d)["tune"]
        self.assertEqual((tune["triton_keys_tuned"], tune["keys_tuned"]), (2, 2), tune)
        # replay: LibTuner's keys replayed without a sweep, Triton's swept again and said so
        d2, cases2 = self.run_both("rep", "--tune", "replay", "--replay-from", d)
        tune2 = footer(d2)["tune"]
        self.assertEqual((tune2["benchmarked"], tune2["triton_keys_tuned"]), (0, 2), tune2)
        for c in cases2:
            (g,) = [p for p in c["providers"] if p["role"] == "candidate"]
            if c["op"] == "softmax":
                self.assertEqual(g["tune"]["source"], "tuned", g)
                self.assertIn("plain triton.autotune, swept in this process under --tune "
                              "replay (only LibTuner's keys are recorded and replayed)",
                              g["tune"]["note"])
            else:
                self.assertEqual(g["tune"]["source"], "replay", g)


class CompileAhead(unittest.TestCase):
    """--tune-compile-threads N: LibTuner's configs compiled N at a time before the sweep (the
    stand-in's kernel takes STANDIN_COMPILE_S to compile a config and logs when)."""

    def setUp(self):
        self.tmp = tmpdir()
        self.log = os.path.join(self.tmp, "standin-tune.log")
        self.env = {"FLAGGEMS_DB_URL": "sqlite:///" + os.path.join(self.tmp, "shared.db"),
                    "STANDIN_TUNE_LOG": self.log, "STANDIN_COMPILE_S": "0.3"}

    def record(self, name, *extra, extra_env=None):
        rc, so, se = run("--tune", "record", "--dtypes", "f16", "--out",
                         os.path.join(self.tmp, name), *extra,
                         extra_env=dict(self.env, **(extra_env or {})))
        self.assertEqual(rc, 0, se)
        return the_run(os.path.join(self.tmp, name))

    def test_the_configs_compile_together_before_the_sweep_and_the_sweep_is_unchanged(self):
        d, cases = self.record("ahead", "--tune-compile-threads", "4")
        c = compiles(self.log)
        self.assertEqual(sorted(b for b, _, _, _ in c),
                         ["BLOCK=128", "BLOCK=16", "BLOCK=32", "BLOCK=64"], c)
        self.assertEqual({how for _, how, _, _ in c}, {"ahead"}, "the sweep compiled a config")
        self.assertGreaterEqual(most_at_once([(s, e) for _, _, s, e in c]), 2, c)
        self.assertEqual(benched(self.log), 8)  # the sweep timed every config as before
        tuned = gems(cases)
        self.assertEqual(len(tuned), 2)
        for p in tuned:
            self.assertEqual((p["tune"]["source"], p["tune"]["tried"]), ("tuned", 4))
            self.assertTrue(p["config"].startswith("BLOCK=64,"), p)
            ahead = p["tune"]["compile_ahead"]
            self.assertEqual((ahead["configs"], ahead["threads"]), (4, 4), ahead)
        first = tuned[0]["tune"]["compile_ahead"]["seconds"]
        self.assertGreaterEqual(first, 0.3, tuned[0])  # waited for the compiles it started
        self.assertGreater(footer(d)["tune"]["compile_ahead_s"], 0.3)

    def test_without_it_the_sweep_compiles_as_it_goes(self):
        d, cases = self.record("inline")
        c = compiles(self.log)
        self.assertEqual(len(c), 4, c)
        self.assertEqual({how for _, how, _, _ in c}, {"inline"})
        self.assertEqual(most_at_once([(s, e) for _, _, s, e in c]), 1, c)
        for p in gems(cases):
            self.assertNotIn("compile_ahead", p["tune"])
        self.assertNotIn("compile_ahead_s", footer(d)["tune"])

    def test_a_triton_without_async_compile_says_so_and_the_sweep_compiles(self):
        d, cases = self.record("old", "--tune-compile-threads", "4",
                               extra_env={"STANDIN_TRITON_NO_ASYNC": "1"})
        self.assertEqual({how for _, how, _, _ in compiles(self.log)}, {"inline"})
        p = gems(cases)[0]
        self.assertEqual(p["tune"]["compile_ahead"]["configs"], 0)
        self.assertIn("this Triton has no AsyncCompileMode", p["tune"]["note"])
        self.assertTrue(p["config"].startswith("BLOCK=64,"), p)

    def test_bad_values_and_modes_that_sweep_nothing_are_refused(self):
        out = os.path.join(self.tmp, "bad")
        for args, says in ((("--tune", "record", "--tune-compile-threads", "x"),
                            "--tune-compile-threads"),
                           (("--tune", "record", "--tune-compile-threads", "257"), "256"),
                           (("--tune", "off", "--tune-compile-threads", "4"), "--tune off"),
                           (("--replay-from", self.tmp, "--tune-compile-threads", "4"),
                            "--tune replay")):
            rc, so, se = run(*args, "--out", out, extra_env=self.env)
            self.assertEqual(rc, 2, (args, se))
            self.assertIn(says, se)
            self.assertFalse(os.path.exists(out), args)
        p = subprocess.run([CALIBER_BIN, "run", "add", "--backend", "cpu",
                            "--tune-compile-threads", "4", "--out", out],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("needs --flaggems", p.stderr)
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
