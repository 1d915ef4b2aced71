"""scripts/flaggems-check (docs/flaggems.md, "Side by side with FlagGems' own runs") on the
stand-in tree, cpu backend: caliber's run and FlagGems' own pytest of the same files, their rows
joined per (op, dtype, shape) and their wall times, a file a side or (--group) every file in one
process a side; a missing file is a named failure."""

import csv
import os
import subprocess
import sys
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
    os.makedirs(pkg)
    with open(os.path.join(pkg, "__init__.py"), "w") as f:
        f.write('__version__ = "0.0+standin"\n')
    return where


def check(results, *extra):
    p = subprocess.run(
        [sys.executable, SCRIPT, "--caliber", CALIBER_BIN, "--results", results, "--flaggems",
         ROOT, "--sqlalchemy", sqlalchemy_standin(os.path.join(results + "-sqla")), "--python",
         PYTHON, "--modes", "kernel", "--native-warmup", "1", "--backend", "cpu", "--run-flags",
         " ".join(QUICK[2:]), *extra], capture_output=True, text=True,
        env=env({"STANDIN_OWN_DO_BENCH": "1"}), timeout=900)
    return p.returncode, p.stdout + p.stderr


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

    def test_a_missing_file(self):
        results = os.path.join(tmpdir(), "missing")
        rc, out = check(results, "--ops", "add,nosuchop", "--group")
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL: add+nosuchop: no benchmark/test_nosuchop.py", out)


if __name__ == "__main__":
    unittest.main()
