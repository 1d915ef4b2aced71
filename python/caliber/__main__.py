"""python3 -m caliber: Python op suites, and the caliber CLI in this process.

    python3 -m caliber run --py-ops SUITE.py [OP...] [caliber run knobs...]
        (also `run SUITE.py ...`) registers the suite's ops and runs them with caliber's run
        driver: one run directory (run.log, run_identity.json with the Python, torch and Triton
        versions, shapes.yaml) that caliber summary, compare, report and export read as any
        other. `caliber run --py-ops SUITE.py` comes here too (the executable hands it over).
    python3 -m caliber run --flaggems ROOT [OP|test file|node...] [knobs...]
        FlagGems' own benchmark suite (ROOT/benchmark) under pytest, timed by caliber: torch the
        baseline, gems the candidate, one row per (op, dtype, shape) (docs/flaggems.md).
    python3 -m caliber batch|ab --py-ops SUITE.py [knobs...]
        the caliber executable's batch and ab (one `caliber run` child per op or round, each
        back in this interpreter): an op that kills its process fails alone.
    python3 -m caliber list|plan|summary|compare|report|export|... ARGS
        the caliber CLI itself, in this process (list sees the suites' ops).

Exit codes as caliber's: 0 ok, 1 the work ran and something failed, 2 bad input.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import List, Optional

from . import _lib
from .suite import SuiteError, identity_extra, register_suite

USAGE = ("usage: python3 -m caliber run --py-ops SUITE.py [OP...] [knobs...]   (or: run SUITE.py ...)\n"
         "       python3 -m caliber batch|ab --py-ops SUITE.py [OP...] [knobs...]\n"
         "       python3 -m caliber list|summary|compare|report|export|... ARGS")

# Commands whose children are `caliber run` processes: they run in the caliber executable (a
# child of this interpreter would be python, not caliber). The rest run in this process.
_EXECUTABLE_COMMANDS = ("batch", "ab")


def _py_ops(args: List[str]) -> List[str]:
    """The --py-ops values among the arguments (--py-ops X, --py-ops=X; comma lists). A suite
    named twice (a.py,a.py, the flag repeated, ./a.py beside a.py: the same file) is loaded once,
    at its first place."""
    out = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            break
        if a == "--py-ops" and i + 1 < len(args):
            out += args[i + 1].split(",")
            i += 1
        elif a.startswith("--py-ops="):
            out += a.split("=", 1)[1].split(",")
        i += 1
    suites: List[str] = []
    seen = set()
    for s in out:
        s = s.strip()
        key = os.path.realpath(s)
        if s and key not in seen:
            seen.add(key)
            suites.append(s)
    return suites


def _has(rest: List[str], flag: str) -> bool:
    return any(a == flag or a.startswith(flag + "=") for a in rest)


def _legacy(argv: List[str]) -> List[str]:
    """`run SUITE.py ...` and `batch SUITE.py ...` (the first spelling): --py-ops SUITE.py."""
    if len(argv) > 1 and argv[0] in ("run", "batch", "ab", "list") and \
            not argv[1].startswith("-"):
        if argv[1].endswith(".py"):
            return [argv[0], "--py-ops", argv[1]] + argv[2:]
        if argv[0] in ("run", "batch") and "." in os.path.basename(argv[1]):
            raise SuiteError("--py-ops: '%s': the first argument must be the suite file (a .py)"
                             % argv[1])
    return argv


def executable() -> Optional[str]:
    """The caliber executable: CALIBER_EXE (set when the executable handed a command to this
    interpreter), else beside this package (<prefix>/bin/caliber for an install,
    <build>/caliber for a build tree), else caliber on PATH."""
    env = os.environ.get("CALIBER_EXE")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "..", "..", "..", "..", "bin", "caliber"),
                 os.path.join(here, "..", "..", "caliber")):
        cand = os.path.normpath(cand)
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    recorded = _lib.where("EXE")  # a pip-installed copy: the executable of its build or prefix
    if recorded and os.path.isfile(recorded) and os.access(recorded, os.X_OK):
        return recorded
    return shutil.which("caliber")


def run_in_executable(argv: List[str]) -> int:
    """batch and ab: the caliber executable runs them (its children run the suite in this same
    interpreter: CALIBER_PYTHON)."""
    exe = executable()
    if not exe:
        raise SuiteError("%s: the caliber executable is not beside this package and not on PATH; "
                         "set CALIBER_EXE" % argv[0])
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        raise SuiteError("%s: CALIBER_EXE: '%s' is not an executable file; allowed: the caliber "
                         "executable" % (argv[0], exe[:200]))
    env = dict(os.environ, CALIBER_PYTHON=os.environ.get("CALIBER_PYTHON") or sys.executable)
    env.pop("CALIBER_PY_HANDOFF", None)
    sys.stdout.flush()
    sys.stderr.flush()
    return subprocess.call([exe] + argv, env=env)


def install_suite_hooks() -> Optional[str]:
    """A --py-ops run's graph capture goes through torch's graph API on the device the suites'
    ops use (torch's: suite.py's setup times on _torch.auto_backend()'s device), as
    caliber.measure's and a FlagGems run's do: a raw stream capture of torch's ops would let its
    caching allocator hand the graph memory it frees after capture (docs/python.md). Returns the
    backend hooked, None without torch or a torch device."""
    from . import _torch
    if _torch.torch is None:
        return None
    backend = _torch.auto_backend()
    if backend == "cpu":
        return None
    _torch.install_hooks(backend)
    return backend


def run_here(argv: List[str]) -> int:
    """Registers the suites --py-ops names, then runs the caliber CLI in this process: the run
    directory, run.log, shapes.yaml and exit codes are caliber run's."""
    suites = _py_ops(argv[1:])
    if argv[0] == "run" and _has(argv[1:], "--flaggems"):
        # FlagGems' own benchmark suite: pytest in this process feeds the run its cases.
        try:
            from . import flaggems
        except ImportError as e:  # pytest: FlagGems' suite runs under it, in this interpreter
            raise SuiteError("--flaggems: FlagGems' benchmark suite runs under pytest, and %s "
                             "cannot import %s (%s); set CALIBER_PYTHON to a python3 with "
                             "pytest, torch and FlagGems' requirements" %
                             (sys.executable, getattr(e, "name", None) or "it", e))
        flaggems.install()
        if not _has(argv[1:], "--name"):
            argv = argv + ["--name", "flaggems"]
    exe = executable()
    if exe:  # the children a run starts (a parallel warmup's shards) are caliber, not python
        os.environ["CALIBER_EXE"] = exe
    for suite in suites:
        try:
            register_suite(suite)
        except SuiteError as e:
            raise SuiteError("--py-ops: %s" % e)
    if suites:
        install_suite_hooks()
        identity_extra(suites[0] if len(suites) == 1 else suites)
        if argv[0] == "run" and not _has(argv[1:], "--name"):
            # The run's name from the suite's file name, in the characters --name allows.
            stem = os.path.splitext(os.path.basename(suites[0]))[0]
            name = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_"
                           for c in stem)[:128] or "suite"
            argv = argv + ["--name", name]
    return _lib.cli(argv)


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:  # a usage error, as the executable's: the message on stderr, exit 2
        print("caliber: a subcommand is required (python3 -m caliber --help says what it takes)\n"
              + USAGE, file=sys.stderr)
        return 2
    if argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    try:
        argv = _legacy(argv)
        if argv[0] in _EXECUTABLE_COMMANDS:
            return run_in_executable(argv)
        return run_here(argv)
    except SuiteError as e:
        print("caliber: %s" % e, file=sys.stderr)
        return 2
    except _lib.CaliberError as e:
        print("%s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
