"""--tune on FlagGems' LibTuner database (python/caliber/flaggems_tune.py) against the stand-in's
LibTuner (tests/python/flaggems_standin/src/flag_gems/utils/libentry.py): record -> replay with
zero sweeps -> replay-missing; eviction in live mode and compile_tune_no_evict under replay; off;
the shard merge's disagreement count. Each scenario is a process of its own, as a run is."""

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER = os.path.join(HERE, "flaggems_tune_driver.py")


def drive(*args, env=None):
    e = dict(os.environ)
    for k in list(e):
        if k.startswith("STANDIN_TUNE") or k in ("FLAGGEMS_DB_URL", "REPLAY_FROM"):
            del e[k]
    e.update(env or {})
    p = subprocess.run([sys.executable, DRIVER] + [str(a) for a in args], capture_output=True,
                       text=True, env=e, timeout=120)
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    return p.returncode, lines, p.stderr


def config_rows(db):
    with sqlite3.connect(db) as con:
        out = {}
        for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'"):
            cols = [r[1] for r in con.execute('PRAGMA table_info("%s")' % t)]
            if "p50" in cols:
                continue
            out[t] = con.execute('SELECT * FROM "%s" ORDER BY key_0' % t).fetchall()
        return out


class FlagGemsTune(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.log = os.path.join(self.dir, "standin.log")
        self.shared = os.path.join(self.dir, "shared.db")

    def tearDown(self):
        self.tmp.cleanup()

    def run_dir(self, name):
        d = os.path.join(self.dir, name)
        os.makedirs(d, exist_ok=True)
        return d

    def log_lines(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return f.read().splitlines()

    def test_record_replay_missing(self):
        rec = self.run_dir("rec")
        code, out, err = drive("record", rec, "", 1000, 100,
                               env={"STANDIN_TUNE_LOG": self.log,
                                    "FLAGGEMS_DB_URL": "sqlite:///" + self.shared})
        self.assertEqual(code, 0, err)
        self.assertEqual(out[-1]["db_url"], "sqlite:///" + os.path.join(rec, "flaggems_tune.db"))
        self.assertFalse(os.path.exists(self.shared), "record must not touch the shared db")
        first = out[0]["report"]
        self.assertEqual(first["tune"]["source"], "tuned")
        self.assertEqual(first["tune"]["tried"], 4)  # four configs benchmarked
        self.assertEqual(first["tune"]["swept_by"], "libtuner")
        self.assertTrue(first["config"].startswith("BLOCK=64,"), first)
        self.assertEqual(first["tune"]["key"], "1024")
        self.assertEqual(sum(1 for x in self.log_lines() if x.startswith("bench")), 8)

        os.remove(self.log)
        rep = self.run_dir("rep")
        code, out, err = drive("replay", rep, rec, 1000, 100, 5000,
                               env={"STANDIN_TUNE_LOG": self.log, "STANDIN_TUNE_BEST": "16"})
        self.assertEqual(code, 0, err)
        self.assertEqual([o["report"]["tune"]["source"] for o in out[:3]],
                         ["replay", "replay", "replay-missing"])
        self.assertEqual([o["report"]["tune"]["tried"] for o in out[:3]], [0, 0, 0])
        # The recorded winner, although the planted best moved: replay does not retune.
        self.assertTrue(out[0]["report"]["config"].startswith("BLOCK=64,"))
        self.assertTrue(out[2]["report"]["config"].startswith("BLOCK=16,"))  # the first config
        self.assertIn("not in the replayed", out[2]["report"]["tune"]["note"])
        self.assertEqual([x for x in self.log_lines() if x.startswith("bench")], [],
                         "replay must sweep nothing")
        self.assertEqual(out[-1]["totals"]["replay_missing"], 1)
        # The missing key is not written into the replay's copy, nor into the source.
        self.assertEqual(len(list(config_rows(os.path.join(rep, "flaggems_tune.db")).values())[0]),
                         2)
        self.assertEqual(len(list(config_rows(os.path.join(rec, "flaggems_tune.db")).values())[0]),
                         2)

    def test_live_uses_shared_db_and_evicts(self):
        url = "sqlite:///" + self.shared
        code, out, err = drive("live", "", "", 1000, env={"FLAGGEMS_DB_URL": url})
        self.assertEqual(code, 0, err)
        self.assertEqual(out[0]["report"]["tune"]["source"], "tuned")
        code, out, err = drive("live", "", "", 1000, env={"FLAGGEMS_DB_URL": url})
        self.assertEqual(out[0]["report"]["tune"]["source"], "cache")
        self.assertEqual(out[0]["report"]["tune"]["tried"], 0)
        # BLOCK=64 is cached but can no longer launch: deleted, retuned without it.
        code, out, err = drive("live", "", "", 1000, env={
            "FLAGGEMS_DB_URL": url, "STANDIN_TUNE_FAIL": "BLOCK=64", "STANDIN_TUNE_LOG": self.log})
        self.assertEqual(code, 0, err)
        rep = out[0]
        self.assertNotIn("error", rep)
        self.assertEqual(rep["report"]["tune"]["source"], "tuned")
        self.assertTrue(rep["report"]["tune"]["evicted"].startswith("BLOCK=64,"))
        self.assertIn("deleted from the LibTuner database", rep["report"]["tune"]["note"])
        self.assertFalse(rep["report"]["config"].startswith("BLOCK=64,"))
        # Three configs left; their timings come from LibTuner's benchmark table this time.
        self.assertEqual(rep["report"]["tune"]["tried"] +
                         rep["report"]["tune"]["bench_cache_hits"], 3)
        rows = list(config_rows(self.shared).values())[0]
        self.assertEqual(len(rows), 1)
        self.assertNotIn(64, rows[0][1:], rows)  # the stored winner is no longer BLOCK=64

    def test_replay_cannot_evict(self):
        rec = self.run_dir("rec")
        self.assertEqual(drive("record", rec, "", 1000)[0], 0)
        rep = self.run_dir("rep")
        code, out, err = drive("replay", rep, rec, 1000, 4000,
                               env={"STANDIN_TUNE_FAIL": "BLOCK=64"})
        self.assertEqual(code, 0, err)
        self.assertIn("out of resources", out[0]["error"])
        self.assertEqual(out[0]["report"]["tune_markers"], ["compile_tune_no_evict"])
        self.assertIn("cannot be evicted", out[0]["report"]["tune"]["note"])
        # A later case of the same run is not affected (replay-missing gets the first config).
        self.assertNotIn("error", out[1])
        self.assertEqual(out[1]["report"]["tune"]["source"], "replay-missing")
        self.assertEqual(len(list(config_rows(os.path.join(rep, "flaggems_tune.db")).values())[0]),
                         1, "replay deleted nothing")

    def test_off_reads_and_writes_nothing(self):
        url = "sqlite:///" + self.shared
        self.assertEqual(drive("record", self.run_dir("r"), "", 1000)[0], 0)
        code, out, err = drive("off", "", "", 1000, env={"FLAGGEMS_DB_URL": url,
                                                         "STANDIN_TUNE_LOG": self.log})
        self.assertEqual(code, 0, err)
        self.assertEqual(out[0]["report"]["tune"]["source"], "default")
        self.assertTrue(out[0]["report"]["config"].startswith("BLOCK=16,"))
        self.assertFalse(os.path.exists(self.shared))
        self.assertEqual([x for x in self.log_lines() if x.startswith("bench")], [])

    def test_bad_replay_source(self):
        code, out, _ = drive("replay", self.run_dir("x"), self.run_dir("empty"), 10)
        self.assertEqual(code, 2)
        self.assertIn("--replay-from (REPLAY_FROM)", out[0]["usage_error"])
        self.assertIn("holds no flaggems_tune.db", out[0]["usage_error"])
        junk = os.path.join(self.dir, "junk.db")
        with open(junk, "w") as f:
            f.write("not sqlite " * 100)
        code, out, _ = drive("replay", self.run_dir("y"), junk, 10)
        self.assertEqual(code, 2)
        self.assertIn("is not a SQLite database", out[0]["usage_error"])
        code, out, _ = drive("sideways", "", "", 10)
        self.assertEqual(code, 2)
        self.assertIn("--tune: 'sideways' is not a mode", out[0]["usage_error"])

    def test_shard_merge_counts_disagreements(self):
        s0, s1 = os.path.join(self.dir, "shard-0.db"), os.path.join(self.dir, "shard-1.db")
        # Sizes 100 and 120 share the key 128; the two devices' fastest BLOCK differs.
        env0 = {"CALIBER_CPU_VISIBLE_DEVICES": "0", "STANDIN_TUNE_BEST_DEV1": "16"}
        env1 = dict(env0, CALIBER_CPU_VISIBLE_DEVICES="1")
        self.assertEqual(drive("shard", s0, "", 100, 1000, env=env0)[0], 0)
        self.assertEqual(drive("shard", s1, "", 120, 3000, env=env1)[0], 0)
        into = os.path.join(self.dir, "merged.db")
        code, out, err = drive("merge", into, s0, s1)
        self.assertEqual(code, 0, err)
        m = out[0]
        self.assertEqual(m["keys"], 3)  # 128, 1024 and 4096
        self.assertEqual(m["disagreements"], 1)
        self.assertIn("[128]", m["disagreeing_keys"][0])
        rows = list(config_rows(into).values())[0]
        self.assertEqual(len(rows), 3)
        self.assertIn(64, [r for r in rows if r[0] == 128][0][1:])  # the first shard's winner
        # Same devices, same planted best: no disagreement.
        s2 = os.path.join(self.dir, "shard-2.db")
        self.assertEqual(drive("shard", s2, "", 120, env=env0)[0], 0)
        code, out, _ = drive("merge", os.path.join(self.dir, "m2.db"), s0, s2)
        self.assertEqual(out[0]["disagreements"], 0)
        # The merged database replays with zero sweeps.
        rep = self.run_dir("rep")
        code, out, err = drive("replay", rep, into, 100, 1000, 3000,
                               env={"STANDIN_TUNE_LOG": self.log})
        self.assertEqual([o["report"]["tune"]["source"] for o in out[:3]], ["replay"] * 3)
        self.assertEqual([x for x in self.log_lines() if x.startswith("bench")], [])


class ShardShare(unittest.TestCase):
    """flaggems_warmup.owns: a shard's share of FlagGems' loops, blocks of BLOCK consecutive
    inputs of each (op, dtype) loop, the g-th loop met starting on shard g mod N."""

    def shares(self, n, loops):
        from caliber import flaggems_warmup as w
        out = []
        for i in range(n):
            w._SHARD, w._LOOPS = (i, n), {}
            out.append([(loop, k) for loop, size in loops for k in range(size)
                        if w.owns(k, loop)])
        w._SHARD, w._LOOPS = None, {}
        return out

    def test_short_loops_stay_on_one_shard_long_ones_spread(self):
        from caliber import flaggems_warmup as w
        b = w.BLOCK
        core = [(("mm", "f16"), 3), (("mm", "f32"), 3), (("mm_t", "f16"), 2)]
        got = self.shares(4, core)
        self.assertEqual(got, [[(core[0][0], k) for k in range(3)],
                               [(core[1][0], k) for k in range(3)],
                               [(core[2][0], k) for k in range(2)], []])
        long = [(("mm", "f16"), 4 * b + 1)]
        got = self.shares(4, long)
        self.assertEqual([len(x) for x in got], [b + 1, b, b, b])  # shard 0: blocks 1 and 5
        self.assertEqual(sorted(k for x in got for _, k in x), list(range(4 * b + 1)))
        self.assertTrue(all(w.owns(k, ("x", "y")) for k in range(9)))  # outside a shard: all

    def test_without_a_loop_ordinal_mod_n(self):
        from caliber import flaggems_warmup as w
        w._SHARD = (1, 3)
        try:
            self.assertEqual([k for k in range(7) if w.owns(k)], [1, 4])
        finally:
            w._SHARD = None


if __name__ == "__main__":
    unittest.main()
