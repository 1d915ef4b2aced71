"""`caliber batch --flaggems` and `caliber ab --flaggems-a/--flaggems-b` (docs/flaggems.md,
docs/cluster.md) on the stand-in tree, cpu backend: one child per benchmark file, a kernel that
kills its process isolated, ops_status.csv and --resume right; bad input exit 2 with nothing
written; an A/B of two trees (one planted slower) and of a switch (an environment variable)
finding the slower side."""

import csv
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CALIBER_BIN, tmpdir  # noqa: E402
from test_flaggems import ROOT, QUICK, env, standin_copy  # noqa: E402


def caliber(*args, extra_env=None):
    e = env(extra_env)
    for k in ("STANDIN_MM_CRASHES", "STANDIN_GEMS_FACTOR", "STANDIN_IMPORT_LOG",
              "STANDIN_IMPORT_S"):
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
        system_tmp = tmpdir()  # the children's TMPDIR
        rc, so, se = caliber("batch", "--flaggems", ROOT, "--out", out, *QUICK,
                             extra_env={"STANDIN_MM_CRASHES": "1", "TMPDIR": system_tmp})
        self.assertEqual(rc, 1, so + se)
        d, st = status(out)
        # The crashed child could not remove its staging folders: they were in the batch's
        # staging/, which the batch removed (docs/cluster.md, "Temporary files").
        self.assertEqual([x for x in os.listdir(system_tmp) if x.startswith("caliber-")], [])
        self.assertFalse(os.path.exists(os.path.join(d, "staging")))
        # The op list is the tree's files: benchmark/test_<op>.py.
        self.assertEqual(sorted(st), ["add", "custom", "failures", "fft", "mm", "softmax"])
        self.assertEqual(st["mm"]["status"], "crashed", st["mm"])
        self.assertIn("SIGSEGV", st["mm"]["reason"])
        self.assertEqual(st["failures"]["status"], "failed")  # a case failed, the run went on
        # its reason names the failed case; a finished run's log ends in its closing lines (the
        # time split), which say nothing of why
        self.assertNotIn("log: time:", st["failures"]["reason"])
        self.assertIn("test_failures.py::", st["failures"]["reason"])  # the failed case
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

    def test_ops_per_child_pays_the_import_once_a_group(self):
        """--ops-per-child 3 over the stand-in's 6 files: 2 groups; the group with the failing
        file vouches for its 2 ok files and runs the failing one alone (3 imports, not 6); every
        status and row count is the one-child-per-file batch's; the group whose file crashes
        (STANDIN_MM_CRASHES) runs each of its files alone; summary counts each row once."""
        runs = {}
        for per_child, crash in (("1", "0"), ("3", "0"), ("3", "1")):
            out = os.path.join(tmpdir(), "b")
            log = os.path.join(tmpdir(), "imports.log")
            t0 = time.monotonic()
            rc, so, se = caliber("batch", "--flaggems", ROOT, "--ops-per-child", per_child,
                                 "--out", out, *QUICK,
                                 extra_env={"STANDIN_IMPORT_LOG": log, "STANDIN_IMPORT_S": "0.5",
                                            **({"STANDIN_MM_CRASHES": "1"} if crash == "1"
                                               else {})})
            wall = time.monotonic() - t0
            self.assertEqual(rc, 1, so + se)  # the failures file fails, in every layout
            with open(log) as f:
                imports = len(f.read().split())
            d, st = status(out)
            runs[per_child, crash] = (d, st, imports)
            print("ops-per-child %s%s: %d FlagGems imports, %.1f s wall" % (
                per_child, " (mm crashes)" if crash == "1" else "", imports, wall))
        # Each batch imports FlagGems once more, before anything runs: the dry run of its
        # selection (a FlagGems that does not import is the batch's exit 2).
        _, one, one_imports = runs["1", "0"]
        d, grouped, imports = runs["3", "0"]
        self.assertEqual(one_imports, 1 + 6)
        self.assertEqual(imports, 1 + 3, "the dry run, 2 groups, and the failing file again alone")
        for op in one:
            self.assertEqual(grouped[op]["status"], one[op]["status"], (op, grouped[op]))
            self.assertEqual(grouped[op]["rows"], one[op]["rows"], (op, grouped[op]))
        self.assertEqual(grouped["add"]["run"], grouped["custom"]["run"])
        self.assertTrue(grouped["add"]["run"].startswith("group-add-3-"), grouped["add"])
        self.assertTrue(grouped["failures"]["run"].startswith("failures-"), grouped["failures"])
        self.assertTrue(grouped["softmax"]["run"].startswith("group-fft-3-"), grouped["softmax"])
        # summary of the batch: every op's rows once, the failing file's from its own run only
        rc, so, se = caliber("export", d, "--format", "csv")
        self.assertEqual(rc, 0, se)
        exported = list(csv.DictReader(so.splitlines()))
        rc1, so1, se1 = caliber("export", runs["1", "0"][0], "--format", "csv")
        self.assertEqual(rc1, 0, se1)
        self.assertEqual(len(exported), len(list(csv.DictReader(so1.splitlines()))))
        _, crashed, crash_imports = runs["3", "1"]
        self.assertEqual(crashed["mm"]["status"], "crashed", crashed["mm"])
        self.assertIn("SIGSEGV", crashed["mm"]["reason"])
        for op in ("fft", "softmax"):  # mm's group could vouch for none: each ran alone
            self.assertTrue(crashed[op]["run"].startswith(op + "-"), crashed[op])
            self.assertEqual(crashed[op]["status"], one[op]["status"])
        self.assertEqual(crash_imports, 1 + 1 + 1 + 1 + 3,
                         "the dry run, group 1, failures, group 2, its 3 files")

    def test_a_benchmark_in_a_folder_of_benchmark(self):
        """FlagGems keeps some benchmarks a folder down (benchmark/test_FLA/), which pytest
        collects: caliber list and batch list them as ops, run and batch's children find their
        file, and the rows count for that op."""
        tree = os.path.join(tmpdir(), "FlagGems")
        standin_copy(tree)
        sub = os.path.join(tree, "benchmark", "test_SUB")
        os.makedirs(sub)
        with open(os.path.join(tree, "benchmark", "test_softmax.py")) as f:
            text = f.read()
        with open(os.path.join(sub, "test_subsoftmax.py"), "w") as f:  # as test_FLA/'s import
            f.write(text.replace("from . import base", "from benchmark import base"))
        rc, so, se = caliber("list", "--flaggems", tree, "--names")
        self.assertEqual(rc, 0, se)
        self.assertIn("subsoftmax", so.split())
        out = os.path.join(tmpdir(), "b")
        rc, so, se = caliber("batch", "--flaggems", tree, "test_SUB/test_subsoftmax.py", "add",
                             "--out", out, *QUICK)
        self.assertEqual(rc, 0, so + se)
        _, st = status(out)
        self.assertEqual(st["subsoftmax"]["status"], "ok", st["subsoftmax"])
        self.assertGreater(int(st["subsoftmax"]["rows"]), 0, st["subsoftmax"])
        run_out = os.path.join(tmpdir(), "r")
        rc, so, se = caliber("run", "--flaggems", tree, "subsoftmax", "--out", run_out, *QUICK)
        self.assertEqual(rc, 0, so + se)
        (d,) = [os.path.join(run_out, x) for x in os.listdir(run_out)]
        with open(os.path.join(d, "run.log")) as f:
            tests = {json.loads(x).get("params", {}).get("test", "") for x in f if '"case"' in x}
        self.assertTrue(tests and all("test_SUB/test_subsoftmax.py::" in t for t in tests), tests)
        # A file that does not import is the batch's bad input, named by its error (the dry run
        # of the selection renders pytest's collection error without pytest's terminal).
        with open(os.path.join(sub, "test_subsoftmax.py"), "w") as f:
            f.write(text.replace("from . import base", "from .no_such_module import base"))
        bad = os.path.join(tmpdir(), "bad")
        rc, so, se = caliber("batch", "--flaggems", tree, "subsoftmax", "--out", bad, *QUICK)
        self.assertEqual(rc, 2, so + se)
        self.assertIn("ImportError", se)
        self.assertNotIn("verbose", se)
        self.assertFalse(os.path.exists(bad) and os.listdir(bad), "nothing written")

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
                 "'2' with batch --flaggems"),  # not the local scheduler's Slurm advice
                (["--flaggems", ROOT, "--ops-per-child", "0"],
                 "--ops-per-child: '0' is not allowed; allowed: a whole number from 1 to 1000"),
                (["--flaggems", tmpdir()], "--flaggems"),
                # a node selects across ops; --shape is no way to narrow a FlagGems op
                (["--flaggems", ROOT, "--node", "test_add.py::test_add"],
                 "narrow them with --dtypes, or run")):
            bad = os.path.join(tmpdir(), "bad")
            rc, so, se = caliber("batch", *args, "--out", bad, *QUICK)
            self.assertEqual(rc, 2, (args, so, se))
            self.assertIn(needle, se)
            self.assertFalse(os.path.exists(bad) and os.listdir(bad), "nothing written")
        # A FlagGems that does not import is the batch's bad input, before anything is written
        # (its runs' own check, made once in a child), not a batch of failed ops.
        bad = os.path.join(tmpdir(), "bad")
        rc, so, se = caliber("batch", "--flaggems", ROOT, "add", "softmax", "--out", bad, *QUICK,
                             extra_env={"STANDIN_BREAK_IMPORT": "1"})
        self.assertEqual(rc, 2, so + se)
        self.assertIn("sqlalchemy_standin_missing", se)
        self.assertFalse(os.path.exists(bad) and os.listdir(bad), "nothing written")


def verdicts(text, op, role="candidate"):
    """The verdicts of the compare table's rows of `op` and `role`. Only the candidate (gems)
    rows carry the planted effect; the torch baseline rows are the same code on both sides, a
    null whose verdict is a matter of odds (and of the host's load), not of the planting."""
    return [w for line in text.splitlines()
            if line.lstrip().startswith(op) and role in line.split()
            for w in line.split() if w in ("FASTER", "SLOWER", "SAME", "UNSURE")]


class FlagGemsAb(unittest.TestCase):
    def test_two_trees_one_planted_slower(self):
        tmp = tmpdir()
        a, b = os.path.join(tmp, "A"), os.path.join(tmp, "B")
        standin_copy(a)
        standin_copy(b)
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
        # What only FlagGems' side can check (its tree's ops, its import) is checked by a dry run
        # of each side's run before the A/B directory exists.
        b = os.path.join(tmp, "B")
        standin_copy(b)
        for args, op, extra, needle in (
                ([], "nosuchop", {}, "nosuchop"),
                ([], "add", {"STANDIN_BREAK_IMPORT": "1"}, "sqlalchemy_standin_missing")):
            out = os.path.join(tmpdir(), "ab")
            rc, so, se = caliber("ab", "--flaggems-a", ROOT, "--flaggems-b", b, op, "--out", out,
                                 *QUICK, extra_env=extra)
            self.assertEqual(rc, 2, (args, so, se))
            self.assertIn(needle, se)
            self.assertFalse(os.path.exists(out) and os.listdir(out))


if __name__ == "__main__":
    unittest.main()
