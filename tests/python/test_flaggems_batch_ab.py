"""`caliber batch --flaggems` and `caliber ab --flaggems-a/--flaggems-b` (docs/flaggems.md,
docs/cluster.md) on the stand-in tree, cpu backend: one child per benchmark file, a kernel that
kills its process isolated, ops_status.csv and --resume right; bad input exit 2 with nothing
written; an A/B of two trees (one planted slower) and of a switch (an environment variable)
finding the slower side."""

import csv
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CALIBER_BIN, tmpdir  # noqa: E402
from test_flaggems import ROOT, QUICK, env  # noqa: E402


def caliber(*args, extra_env=None):
    e = env(extra_env)
    for k in ("STANDIN_MM_CRASHES", "STANDIN_GEMS_FACTOR"):
        e.pop(k, None)
    e.update(extra_env or {})
    p = subprocess.run([CALIBER_BIN] + list(args), capture_output=True, text=True, env=e,
                       timeout=900)
    return p.returncode, p.stdout, p.stderr


def status(batch_root):
    (d,) = [os.path.join(batch_root, x) for x in os.listdir(batch_root)]
    with open(os.path.join(d, "ops_status.csv"), newline="") as f:
        return d, {r["op"]: r for r in csv.DictReader(f)}


class FlagGemsBatch(unittest.TestCase):
    def test_one_child_per_file_crash_isolated_and_resume(self):
        out = os.path.join(tmpdir(), "b")
        rc, so, se = caliber("batch", "--flaggems", ROOT, "--out", out, *QUICK,
                             extra_env={"STANDIN_MM_CRASHES": "1"})
        self.assertEqual(rc, 1, so + se)
        d, st = status(out)
        # The op list is the tree's files: benchmark/test_<op>.py.
        self.assertEqual(sorted(st), ["add", "custom", "failures", "fft", "mm", "softmax"])
        self.assertEqual(st["mm"]["status"], "crashed", st["mm"])
        self.assertIn("SIGSEGV", st["mm"]["reason"])
        self.assertEqual(st["failures"]["status"], "failed")  # a case failed, the run went on
        self.assertEqual(st["fft"]["status"], "skipped")  # FlagGems' own skip guard, every case
        for op in ("add", "custom", "softmax"):
            self.assertEqual(st[op]["status"], "ok", st[op])
            self.assertGreater(int(st[op]["rows"]), 0)
        self.assertTrue(os.path.isfile(os.path.join(d, "logs", "mm.log")))
        # --resume reruns only what is not ok: mm, now that it no longer crashes.
        rc, so, se = caliber("batch", "--resume", d)
        _, st2 = status(out)
        self.assertEqual(st2["mm"]["status"], "ok", st2["mm"])
        self.assertEqual(st2["add"]["duration_s"], st["add"]["duration_s"], "ok ops are kept")
        self.assertIn("mm: ok", so)
        self.assertNotIn("add: ok", so)

    def test_named_ops_and_bad_input(self):
        out = os.path.join(tmpdir(), "b")
        rc, so, se = caliber("batch", "--flaggems", ROOT, "add", "test_softmax.py", "--out", out,
                             *QUICK)
        self.assertEqual(rc, 0, so + se)
        _, st = status(out)
        self.assertEqual(sorted(st), ["add", "softmax"])
        for args, needle in (
                (["--flaggems", ROOT, "nosuchop"],
                 "op: 'nosuchop' is not a benchmark of the FlagGems tree"),
                (["--flaggems", ROOT, "--parallel-warmup", "2"],
                 "--parallel-warmup (PARALLEL_WARMUP_GPUS): '2'"),
                (["--flaggems", tmpdir()], "--flaggems")):
            bad = os.path.join(tmpdir(), "bad")
            rc, so, se = caliber("batch", *args, "--out", bad, *QUICK)
            self.assertEqual(rc, 2, (args, so, se))
            self.assertIn(needle, se)
            self.assertFalse(os.path.exists(bad) and os.listdir(bad), "nothing written")


def verdicts(text, op):
    """The verdicts of the compare table's rows of `op`."""
    return [w for line in text.splitlines() if line.lstrip().startswith(op)
            for w in line.split() if w in ("FASTER", "SLOWER", "SAME", "UNSURE")]


class FlagGemsAb(unittest.TestCase):
    def test_two_trees_one_planted_slower(self):
        tmp = tmpdir()
        a, b = os.path.join(tmp, "A"), os.path.join(tmp, "B")
        shutil.copytree(ROOT, a)
        shutil.copytree(ROOT, b)
        init = os.path.join(b, "src", "flag_gems", "__init__.py")
        with open(init) as f:
            text = f.read()
        with open(init, "w") as f:  # B's gems add does four times A's work
            f.write(text.replace('"STANDIN_GEMS_FACTOR", "3"', '"STANDIN_GEMS_FACTOR", "12"'))
        out = os.path.join(tmp, "ab")
        rc, so, se = caliber("ab", "--flaggems-a", a, "--flaggems-b", b, "add", "--rounds", "2",
                             "--out", out, *QUICK)
        self.assertEqual(rc, 0, so + se)
        self.assertIn("a process per side", so)
        self.assertIn("SLOWER", verdicts(so, "add"), so)
        self.assertNotIn("FASTER", verdicts(so, "add"), so)
        self.assertNotIn("may not be live", so + se)

    def test_a_switch_of_the_environment(self):
        out = os.path.join(tmpdir(), "ab")
        rc, so, se = caliber("ab", "--flaggems", ROOT, "add", "--env", "STANDIN_GEMS_FACTOR=3",
                             "--env", "STANDIN_GEMS_FACTOR=12", "--rounds", "2", "--out", out,
                             *QUICK)
        self.assertEqual(rc, 0, so + se)
        self.assertIn("SLOWER", verdicts(so, "add"), so)

    def test_bad_sides(self):
        tmp = tmpdir()
        for args, needle in ((["--flaggems-a", ROOT], "given without --flaggems-b"),
                             (["--flaggems-a", ROOT, "--flaggems-b", tmp], "--flaggems-b: '"),
                             (["--flaggems-a", ROOT, "--flaggems-b", ROOT], "identical")):
            out = os.path.join(tmpdir(), "ab")
            rc, so, se = caliber("ab", *args, "add", "--out", out, *QUICK)
            self.assertEqual(rc, 2, (args, so, se))
            self.assertIn(needle, se)
            self.assertFalse(os.path.exists(out) and os.listdir(out))


if __name__ == "__main__":
    unittest.main()
