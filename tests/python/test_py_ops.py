"""The caliber executable with --py-ops (docs/python.md, "Python op suites into run directories"): run, list, batch
and ab of Python suites, and their bad input (exit 2 naming the knob, nothing written)."""

import csv
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ENV, SUITES, caliber, py_caliber, rows, run_dirs, tmpdir  # noqa: E402

HOST = os.path.join(SUITES, "host_suite.py")
CRASHING = os.path.join(SUITES, "crashing_suite.py")
QUICK = ["--backend", "cpu", "--timeout", "0.3", "--peaks", "off"]


def bad_suite():
    path = os.path.join(tmpdir(), "no_import.py")
    with open(path, "w") as f:
        f.write("import caliber\nraise ImportError('no triton here')\n")
    return path


def listing(out):
    return sorted(os.listdir(out)) if os.path.isdir(out) else []


class RunAndList(unittest.TestCase):
    def test_run_writes_the_suites_run_directory(self):
        out = tmpdir()
        rc, so, se = caliber("run", "--py-ops", HOST, "--out", out, *QUICK)
        self.assertEqual(rc, 0, so + se)
        (d,) = run_dirs(out)
        self.assertTrue(os.path.basename(d).startswith("host_suite-"), d)
        cases, header, _ = rows(d)
        # the default op list is the suite's, not the built-in corpus
        self.assertEqual({c["op"] for c in cases}, {"py_sum", "py_scale", "py_nap"})
        self.assertTrue(all(c["status"] == "ok" for c in cases))
        with open(os.path.join(d, "run_identity.json")) as f:
            ident = json.load(f)
        self.assertTrue(ident["python"]["suite"].endswith("host_suite.py"))
        # and with an op named and a knob: the same as caliber run's
        out = tmpdir()
        rc, so, se = caliber("run", "py_scale", "--py-ops=" + HOST, "--l2", "warm", "--out", out,
                             *QUICK)
        self.assertEqual(rc, 0, so + se)
        (d,) = run_dirs(out)
        cases, header, _ = rows(d)
        self.assertEqual({c["op"] for c in cases}, {"py_scale"})
        self.assertEqual(header["l2"], "warm")

    def test_list_names_the_suites_ops(self):
        rc, so, se = caliber("list", "--names", "--py-ops", HOST, "--backend", "cpu")
        self.assertEqual(rc, 0, se)
        self.assertEqual(so.split(), ["py_sum", "py_scale", "py_nap"])
        rc, so, se = py_caliber("list", "--names", "--py-ops", HOST, "--backend", "cpu")
        self.assertEqual(rc, 0, se)
        self.assertEqual(so.split(), ["py_sum", "py_scale", "py_nap"])
        rc, so, se = caliber("list", "--names", "--py-ops", HOST, "py_nope", "--backend", "cpu")
        self.assertEqual(rc, 2)
        self.assertIn("unknown op 'py_nope'", se)


class BatchAndAb(unittest.TestCase):
    def test_batch_runs_each_op_of_the_suite_in_its_own_process(self):
        for how in ("executable", "python"):
            with self.subTest(how):
                out = tmpdir()
                args = ["batch", "--py-ops", CRASHING, "--out", out, *QUICK]
                rc, so, se = (caliber if how == "executable" else py_caliber)(*args)
                self.assertEqual(rc, 1, so + se)
                (bdir,) = [os.path.join(out, d) for d in os.listdir(out)]
                with open(os.path.join(bdir, "ops_status.csv")) as f:
                    status = {r["op"]: r for r in csv.DictReader(f)}
                self.assertEqual(list(status), ["py_first", "py_crash", "py_last"])
                self.assertEqual(status["py_first"]["status"], "ok")
                self.assertEqual(status["py_crash"]["status"], "crashed")
                self.assertEqual(status["py_last"]["status"], "ok")
                self.assertEqual(status["py_last"]["rows"], "1")

    def test_ab_of_a_suite_and_of_two_suites(self):
        out = tmpdir()
        rc, so, se = caliber("ab", "--py-ops", HOST, "py_scale", "--env", "PY_AB=1", "--env",
                             "PY_AB=2", "--rounds", "1", "--out", out, *QUICK)
        self.assertEqual(rc, 0, so + se)
        self.assertIn("py_scale", so)
        (ab,) = [os.path.join(out, d) for d in os.listdir(out)]
        self.assertEqual(len(run_dirs(ab)), 2)
        # two builds of the same ops: one suite per side, through --arg
        copy = os.path.join(tmpdir(), "host_suite_b.py")
        with open(HOST) as f, open(copy, "w") as g:
            g.write(f.read())
        out = tmpdir()
        rc, so, se = caliber("ab", "--arg=--py-ops=" + HOST, "--arg=--py-ops=" + copy, "py_scale",
                             "--rounds", "1", "--out", out, *QUICK)
        self.assertEqual(rc, 0, so + se)
        (ab,) = [os.path.join(out, d) for d in os.listdir(out)]
        sides = {}
        for d in run_dirs(ab):
            with open(os.path.join(d, "run_identity.json")) as f:
                sides[os.path.basename(d)[0]] = json.load(f)["python"]["suite"]
        self.assertTrue(sides["A"].endswith("host_suite.py"), sides)
        self.assertTrue(sides["B"].endswith("host_suite_b.py"), sides)


class BadInput(unittest.TestCase):
    def refused(self, command, *args, needles=(), env=None):
        out = tmpdir()
        rc, so, se = caliber(command, *args, "--out", out, *QUICK, env=env)
        self.assertEqual(rc, 2, so + se)
        self.assertIn("--py-ops", se)
        for n in needles:
            self.assertIn(n, se)
        self.assertEqual(listing(out), [], "nothing is written for bad input")

    def test_missing_suite(self):
        for command, extra in (("run", []), ("batch", []), ("ab", ["--env", "X=1"])):
            with self.subTest(command):
                self.refused(command, "--py-ops", "/nonexistent/suite.py", *extra,
                             needles=["'/nonexistent/suite.py' does not exist"])
        self.refused("run", "--py-ops", SUITES, needles=["is not a regular file"])
        self.refused("list", "--py-ops", os.path.join(SUITES, "..", "..", "CMakeLists.txt"),
                     needles=["is not a .py file"])

    def test_suite_that_does_not_import(self):
        bad = bad_suite()
        for command, extra in (("run", []), ("batch", []), ("ab", ["py_x", "--env", "X=1"])):
            with self.subTest(command):
                self.refused(command, "--py-ops", bad, *extra,
                             needles=["does not import", "no triton here"])

    def test_unknown_op_of_the_suite(self):
        for command in ("run", "batch"):
            with self.subTest(command):
                out = tmpdir()
                rc, so, se = caliber(command, "--py-ops", HOST, "py_nope", "--out", out, *QUICK)
                self.assertEqual(rc, 2, so + se)
                self.assertIn("unknown op 'py_nope'", se)
                self.assertEqual(listing(out), [])

    def test_no_arguments_is_a_usage_error_on_stderr(self):
        # As the executable: nothing on stdout, the message on stderr, exit 2; --help is stdout.
        for who, call in (("caliber", caliber), ("python3 -m caliber", py_caliber)):
            with self.subTest(who):
                rc, so, se = call()
                self.assertEqual(rc, 2, so + se)
                self.assertEqual(so, "")
                self.assertIn("subcommand is required", se)
        rc, so, se = py_caliber("--help")
        self.assertEqual((rc, se), (0, ""))
        self.assertIn("usage: python3 -m caliber run", so)

    def test_no_python_interpreter(self):
        self.refused("run", "--py-ops", HOST, env={"CALIBER_PYTHON": "/nonexistent/python3"},
                     needles=["CALIBER_PYTHON='/nonexistent/python3' is not an executable"])
        self.refused("run", "--py-ops", HOST, env={"PATH": "/nonexistent",
                                                   "CALIBER_PYTHON": ""},
                     needles=["no python3 is on PATH"])
        # a batch's children would all fail: the parent refuses first
        self.refused("batch", "--py-ops", HOST, env={"CALIBER_PYTHON": "/nonexistent/python3"},
                     needles=["CALIBER_PYTHON"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
