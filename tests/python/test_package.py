"""The package as a package: caliber.Op as a dataclass that keeps the dict API suites used, the
pytest plugin's state on the session (no module globals; xdist's worker -> controller hand-over),
and py.typed. The install itself (pip into a venv, the plugin found without -p) is
tests/package/test_newcomer.sh."""

import dataclasses
import json
import os
import types
import unittest

import caliber
from caliber import suite


class OpDataclass(unittest.TestCase):
    def test_fields_and_dict_view(self):
        op = caliber.Op(name="x", family="pointwise", dtypes=["f64"], inputs=lambda c: (1,),
                        baseline=("b", lambda v: v))
        self.assertTrue(dataclasses.is_dataclass(op))
        self.assertEqual([f.name for f in dataclasses.fields(op)], list(suite._FIELDS))
        self.assertEqual(op["name"], "x")
        self.assertEqual(op.get("shapes", "none"), "none")
        self.assertEqual(sorted(op.fields()), ["baseline", "dtypes", "family", "inputs", "name"])
        with self.assertRaises(KeyError):
            op["shape"]

    def test_validation_is_the_dicts(self):
        good = dict(name="x", family="pointwise", dtypes=["f64"], inputs=lambda c: (1,),
                    baseline=("b", lambda v: v))
        self.assertEqual(suite.validate(caliber.Op(**good).fields(), 0),
                         suite.validate(good, 0))
        with self.assertRaisesRegex(suite.SuiteError, "op 'x': field 'dtypes': 'f65'"):
            suite.validate(caliber.Op(**dict(good, dtypes=["f65"])).fields(), 0)
        with self.assertRaises(TypeError):
            caliber.Op(shape=[[1]])  # load() turns this into "unknown field 'shape'"

    def test_py_typed_ships(self):
        here = os.path.dirname(caliber.__file__)
        self.assertTrue(os.path.isfile(os.path.join(here, "py.typed")), here)


class PluginState(unittest.TestCase):
    def setUp(self):
        try:
            import pytest  # noqa: F401
        except ImportError:
            self.skipTest("pytest is not installed (Debian: python3-pytest)")
        from caliber import pytest_plugin
        self.plugin = pytest_plugin

    def config(self, workeroutput=None):
        import pytest
        c = types.SimpleNamespace(stash=pytest.Stash())
        if workeroutput is not None:
            c.workeroutput = workeroutput
        return c

    def test_no_module_global_holds_measurements(self):
        for name, value in vars(self.plugin).items():
            self.assertFalse(isinstance(value, list) and not name.startswith("__"),
                             "module global list %s" % name)
        a, b = self.config(), self.config()
        self.plugin.rows(a).append({"test": "t"})
        self.assertEqual(self.plugin.rows(b), [])  # two sessions, two stores

    def test_xdist_worker_hands_rows_to_controller(self):
        out = {}
        worker = self.config(workeroutput=out)
        self.plugin.rows(worker).append({"test": "w1", "latency_ms": 1.0})
        self.plugin.pytest_sessionfinish(types.SimpleNamespace(config=worker), 0)
        controller = self.config()
        node = types.SimpleNamespace(workeroutput=out, config=controller)
        self.plugin.pytest_testnodedown(node, None)
        self.assertEqual(self.plugin.rows(controller), [{"test": "w1", "latency_ms": 1.0}])
        json.dumps(self.plugin.rows(controller))


if __name__ == "__main__":
    unittest.main(verbosity=2)
