#!/usr/bin/env python3
"""scripts/libtuner-contention's verdict: PASS only when every write of every worker landed
without an error, FAIL (exit 1) when a worker's storage raised or a row is missing, exit 2 for a
folder that is not FlagGems. FlagGems' own storage class needs SQLAlchemy 2.x, which CI lacks, so
the tree here is a stand-in `models` package over sqlite3 with the calls the script makes; its
misbehaviours are switched by environment variables."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "libtuner-contention")

MODELS = '''
import os, sqlite3

class SQLPersistantModel:
    def __init__(self, url):
        self.path = url[len("sqlite:///"):]

    def _put(self, table, key, fail_env):
        worker = key[4]  # the script's keys end with the worker's number
        if os.environ.get(fail_env) == "1" and worker == 1:
            raise RuntimeError("database is locked (planted)")
        con = sqlite3.connect(self.path, timeout=30)
        with con:
            con.execute('CREATE TABLE IF NOT EXISTS "%s" (k TEXT PRIMARY KEY)' % table)
            if os.environ.get("STANDIN_DROP") == "1" and worker == 0:
                return  # a write that returns without landing
            con.execute('INSERT OR IGNORE INTO "%s" VALUES (?)' % table, (repr(key),))
        con.close()

    def get_config(self, name, key):
        return None

    def get_benchmark(self, name, key, cfg):
        return None

    def put_benchmark(self, name, key, cfg, bench):
        self._put(name + "_bench", list(key) + [cfg.num_stages], "STANDIN_RAISE")

    def put_config(self, name, key, cfg):
        self._put(name + "_config", key, "STANDIN_RAISE")
'''


class LibtunerContention(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        t = self.tmp.name
        self.fg = os.path.join(t, "FlagGems")
        models = os.path.join(self.fg, "src", "flag_gems", "utils", "models")
        os.makedirs(models)
        with open(os.path.join(models, "__init__.py"), "w") as f:
            f.write(MODELS)
        open(os.path.join(models, "sql.py"), "w").close()
        self.sa = os.path.join(t, "sqlalchemy")
        os.makedirs(os.path.join(self.sa, "lib", "sqlalchemy"))
        with open(os.path.join(self.sa, "lib", "sqlalchemy", "__init__.py"), "w") as f:
            f.write("__version__ = 'stand-in'\n")

    def tearDown(self):
        self.tmp.cleanup()

    def run_script(self, *extra, env=None):
        args = [sys.executable, SCRIPT, "--flaggems", self.fg, "--sqlalchemy", self.sa, "--workers", "3",
                "--keys", "4", "--configs", "2", "--rounds", "1"] + list(extra)
        return subprocess.run(args, capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, **(env or {})))

    def test_every_write_lands(self):
        p = self.run_script()
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # 3 workers x 4 keys x 2 tables x (2 benchmarks + 1 winner)
        self.assertIn("round 1: 3 workers, 72 writes, 72 rows, 0 errors, 0 crashed", p.stdout)
        self.assertIn("PASS", p.stdout)

    def test_a_raising_write_fails(self):
        p = self.run_script(env={"STANDIN_RAISE": "1"})
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("error: RuntimeError: database is locked (planted)", p.stdout)
        self.assertIn("FAIL", p.stdout)

    def test_a_lost_row_fails(self):
        p = self.run_script(env={"STANDIN_DROP": "1"})
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"72 writes, 48 rows, 0 errors")

    def test_not_flaggems_is_exit_2(self):
        p = subprocess.run([sys.executable, SCRIPT, "--flaggems", self.tmp.name, "--sqlalchemy", self.sa],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--flaggems", p.stderr)
        p = self.run_script("--workers", "0")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--workers 0: allowed 1..1000", p.stderr)


if __name__ == "__main__":
    unittest.main()
