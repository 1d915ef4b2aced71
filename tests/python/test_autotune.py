"""A Triton autotuner's choice in caliber's tune cache, on the cpu backend without triton: the
stand-in autotuner of suites/autotune_suite.py logs every sweep, benchmark and first launch of a
config to $AUTOTUNE_LOG. First run: Triton's sweep, source tuned, swept_by triton, stored; second
run: source cache and no sweep; --tune off: the first config; replay of a cache without the
key: replay-missing; record then replay; a kernel edit is a new provider version (docs/python.md)."""

import os
import shutil
import sqlite3
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ENV, SUITES, rows, run_dirs, tmpdir  # noqa: E402

SUITE = os.path.join(SUITES, "autotune_suite.py")
QUICK = ["--backend", "cpu", "--timeout", "0.2", "--peaks", "off"]
WINNER = "BLOCK=128,num_warps=4,num_stages=3,num_ctas=1"
FIRST = "BLOCK=64,num_warps=4,num_stages=3,num_ctas=1"
TUNED = ("tiled", "self_tuned")


class Autotune(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tmpdir()
        cls.cache = os.path.join(cls.dir, "tune.db")

    def run_suite(self, name, *args, env=None, cache=None):
        """python3 -m caliber run SUITE into its own out dir: (rc, output, log lines, cases,
        footer, run dir)."""
        out = os.path.join(self.dir, name)
        log = os.path.join(self.dir, name + ".log")
        e = dict(ENV, AUTOTUNE_LOG=log, **(env or {}))
        p = subprocess.run([sys.executable, "-m", "caliber", "run", "--py-ops", SUITE, "--out",
                            out, "--tune-cache", cache or self.cache] + QUICK + list(args),
                           capture_output=True, text=True, env=e, timeout=600)
        lines = []
        if os.path.exists(log):
            with open(log) as f:
                lines = f.read().split("\n")
        d = run_dirs(out)
        self.assertEqual(len(d), 1, p.stdout + p.stderr)
        cases, _header, footer = rows(d[0])
        return p.returncode, p.stdout + p.stderr, [x for x in lines if x], cases, footer, d[0]

    def tuned(self, cases):
        """{(node, provider): provider row} of the autotuned candidates."""
        out = {}
        for c in cases:
            self.assertEqual(c["status"], "ok", c)
            for p in c["providers"]:
                if p["name"] in TUNED:
                    out[(c["node"], p["name"])] = p
        self.assertEqual(len(out), 3, cases)
        return out

    def count(self, lines, word):
        return sum(1 for x in lines if x.split()[0] == word)

    def test_1_first_run_sweeps_second_run_reuses(self):
        rc, text, log, cases, footer, _ = self.run_suite("first")
        self.assertEqual(rc, 0, text)
        # Triton's sweep ran in prepare: at_scale's two shapes share Triton's key (4096
        # elements) but not caliber's, so each case sweeps (an older choice is dropped)
        self.assertEqual(self.count(log, "autotune"), 3, log)
        self.assertEqual(self.count(log, "bench"), 12, log)
        for (node, name), p in self.tuned(cases).items():
            t = p["tune"]
            self.assertEqual(p["config"], WINNER, p)
            self.assertEqual(t["source"], "tuned", t)
            self.assertEqual(t["swept_by"], "triton", t)
            self.assertEqual(t["tried"], 4, t)
            self.assertEqual(t["rejected"], 1, t)  # BLOCK=1024: no valid time
            self.assertIn("winner " + WINNER, t["note"])
        keys = {n: p["tune"]["key"] for (n, _), p in self.tuned(cases).items()}
        self.assertEqual(keys["at_scale[f64-4096]"], "d0=4096")
        self.assertEqual(keys["at_scale[f64-64x64]"], "d0=64,d1=64")
        self.assertEqual(footer["tune"]["keys_tuned"], 3)
        # stored in caliber's cache under its key rules, with Triton's trials
        db = sqlite3.connect(self.cache)
        stored = db.execute("SELECT op, provider, provider_version, backend, dtype, key, config, "
                            "trials FROM tune_configs ORDER BY op, key").fetchall()
        db.close()
        self.assertEqual(len(stored), 3, stored)
        for op, prov, version, backend, dtype, key, config, trials in stored:
            self.assertIn(prov, TUNED)
            self.assertTrue(version.startswith("src-"), version)  # the kernel source's hash
            self.assertEqual((backend, dtype, config), ("cpu", "f64", WINNER))
            self.assertIn("BLOCK=1024", trials)

        rc, text, log, cases, footer, _ = self.run_suite("second")
        self.assertEqual(rc, 0, text)
        self.assertEqual(self.count(log, "autotune"), 0, log)
        self.assertEqual(self.count(log, "bench"), 0, log)
        self.assertIn("launch scale_kernel 128", log)  # the cached config is what launched
        for p in self.tuned(cases).values():
            self.assertEqual(p["config"], WINNER)
            self.assertEqual(p["tune"]["source"], "cache", p)
            self.assertNotIn("swept_by", p["tune"])
        self.assertEqual(footer["tune"]["keys_tuned"], 0)

    def test_2_tune_off_launches_the_first_config(self):
        rc, text, log, cases, _f, _ = self.run_suite("off", "--tune", "off")
        self.assertEqual(rc, 0, text)
        self.assertEqual(self.count(log, "autotune"), 0, log)
        self.assertIn("launch scale_kernel 64", log)
        self.assertNotIn("launch scale_kernel 128", log)
        for p in self.tuned(cases).values():
            self.assertEqual((p["config"], p["tune"]["source"]), (FIRST, "default"), p)

    def test_3_replay_of_a_cache_without_the_key_is_replay_missing(self):
        # a recorded cache that holds at_self's choice only
        rc, text, _l, _c, _f, rec = self.run_suite("record_self", "--tune", "record", "at_self")
        self.assertEqual(rc, 0, text)
        rc, text, log, cases, _f, _ = self.run_suite("replay_missing", "--tune", "replay",
                                                     "--replay-from", rec)
        self.assertEqual(rc, 0, text)
        self.assertEqual(self.count(log, "autotune"), 0, log)  # replay never sweeps
        self.assertIn("launch scale_kernel 64", log)
        for (node, _), p in self.tuned(cases).items():
            want = (WINNER, "replay") if node.startswith("at_self") else (FIRST, "replay-missing")
            self.assertEqual((p["config"], p["tune"]["source"]), want, p)

    def test_4_record_then_replay(self):
        rc, text, log, cases, _f, rec = self.run_suite("record", "--tune", "record")
        self.assertEqual(rc, 0, text)
        self.assertEqual(self.count(log, "autotune"), 3, log)  # record never reads the shared
        self.assertTrue(os.path.isfile(os.path.join(rec, "tune.db")))
        rc, text, log, cases, _f, _ = self.run_suite("replay", "--tune", "replay",
                                                     "--replay-from", rec)
        self.assertEqual(rc, 0, text)
        self.assertEqual(self.count(log, "autotune"), 0, log)
        for p in self.tuned(cases).values():
            self.assertEqual((p["config"], p["tune"]["source"]), (WINNER, "replay"), p)

    def test_5_an_edited_kernel_is_tuned_anew(self):
        rc, text, log, cases, _f, _ = self.run_suite("edited", "at_self",
                                                     env={"KERNEL_EDIT": " # v2"})
        self.assertEqual(rc, 0, text)
        self.assertEqual(self.count(log, "autotune"), 1, log)
        self.assertEqual(cases[0]["providers"][0]["tune"]["source"], "tuned")

    def test_6_a_stale_choice(self):
        # the kernel source is the same, its config list is not: the recorded BLOCK=128 is gone
        rc, text, _l, _c, _f, rec = self.run_suite("record_stale", "--tune", "record", "at_self")
        self.assertEqual(rc, 0, text)
        fewer = {"AUTOTUNE_BLOCKS": "64,256,1024"}
        # replay: it cannot be seeded nor evicted; the case fails with the marker, no sweep
        rc, text, log, cases, _f, _ = self.run_suite("replay_stale", "at_self", "--tune",
                                                     "replay", "--replay-from", rec, env=fewer)
        self.assertEqual(rc, 1, text)
        self.assertEqual(self.count(log, "autotune"), 0, log)
        self.assertEqual(cases[0]["status"], "failed")
        self.assertIn("compile_tune_no_evict", cases[0]["markers"])
        self.assertIn("is not among its autotuner's configs", cases[0]["error"])
        # live: a cached config the autotuner no longer has is swept again
        stale = os.path.join(self.dir, "stale.db")
        shutil.copy(os.path.join(rec, "tune.db"), stale)
        rc, text, log, cases, _f, _ = self.run_suite("live_stale", "at_self", env=fewer,
                                                     cache=stale)
        self.assertEqual(rc, 0, text)
        self.assertEqual(self.count(log, "autotune"), 1, log)
        p = cases[0]["providers"][0]
        self.assertEqual((p["tune"]["source"], p["config"]),
                         ("tuned", "BLOCK=256,num_warps=4,num_stages=3,num_ctas=1"), p)

    def test_7_bad_autotune_fields(self):
        base = ('import caliber, sys\nsys.path.insert(0, %r)\nfrom autotune_suite import '
                'scale_kernel, inputs, tiled\nOPS = [caliber.Op(name="bad_at", family='
                '"pointwise", dtypes=["f64"], shapes=[[16]], inputs=inputs, baseline=("b", '
                'tiled), candidate=("c", tiled), %s)]\n')
        cases = [("autotune={'b': scale_kernel}", "'b' is not one of the op's candidates"),
                 ("autotune={'c': 42}", "'c' is a int, not a Triton autotuner"),
                 ("autotune={'zz': scale_kernel}", "'zz' is not one of the op's candidates")]
        for field, needle in cases:
            d = tmpdir()
            path = os.path.join(d, "bad_suite.py")
            with open(path, "w") as f:
                f.write(base % (SUITES, field))
            out = os.path.join(d, "out")
            p = subprocess.run([sys.executable, "-m", "caliber", "run", "--py-ops", path,
                                "--out", out] + QUICK, capture_output=True, text=True,
                               env=ENV, timeout=300)
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
            self.assertIn("op 'bad_at': field 'autotune'", p.stderr)
            self.assertIn(needle, p.stderr)
            self.assertEqual(run_dirs(out), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
