"""Shared by the Python package's tests: where the package and the caliber binary are
(PYTHONPATH=<build>/python and CALIBER_BIN, set by tests/CMakeLists.txt)."""

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SUITES = os.path.join(HERE, "suites")
CALIBER_BIN = os.environ.get("CALIBER_BIN", "caliber")
ENV = dict(os.environ, ZL_BACKEND="cpu", CALIBER_NO_TORCH="1")


def py_caliber(*args, cwd=None):
    """python3 -m caliber ARGS: (exit code, stdout, stderr)."""
    p = subprocess.run([sys.executable, "-m", "caliber"] + list(args), capture_output=True,
                       text=True, env=ENV, cwd=cwd, timeout=600)
    return p.returncode, p.stdout, p.stderr


def caliber(*args, env=None):
    """The caliber executable: (exit code, stdout, stderr); `env` adds to (or, with "", empties)
    the test environment."""
    p = subprocess.run([CALIBER_BIN] + list(args), capture_output=True, text=True,
                       env=dict(ENV, **(env or {})), timeout=600)
    return p.returncode, p.stdout, p.stderr


def run_dirs(out):
    if not os.path.isdir(out):
        return []
    return sorted(os.path.join(out, d) for d in os.listdir(out)
                  if os.path.isfile(os.path.join(out, d, "run.log")))


def rows(run_dir):
    with open(os.path.join(run_dir, "run.log")) as f:
        lines = [json.loads(x) for x in f if x.strip()]
    return [r for r in lines if r["type"] == "case"], lines[0], lines[-1]


_TMPDIRS = []


@atexit.register
def _remove_tmpdirs():
    """A test process removes the folders it made (CI left 400 of them in /tmp a run);
    CALIBER_KEEP_TEST_TMP=1 keeps them for a look after a failure."""
    if os.environ.get("CALIBER_KEEP_TEST_TMP") != "1":
        for d in _TMPDIRS:
            shutil.rmtree(d, ignore_errors=True)


def tmpdir():
    d = tempfile.mkdtemp(prefix="caliber-py-test-")
    _TMPDIRS.append(d)
    return d
