"""caliber run --flaggems ROOT: FlagGems' own benchmark suite under pytest, timed by caliber
(docs/flaggems.md).

FlagGems' benchmark files (ROOT/benchmark/test_*.py) run unchanged under pytest in this Python
process, with this module as a pytest plugin. Every latency FlagGems asks for goes through
`Benchmark.get_latency`, whose timing call (`triton.testing.do_bench` or `do_bench_cudagraph`, as
base.py's module global `triton` reaches them) is routed to the run's timers through the C ABI
(caliber_c_run_call): torch's call is the baseline, gems' (FlagGems' op, or torch's op inside
`flag_gems.use_gems`) the candidate. Each input FlagGems yields is one case; the C++ run driver
builds every row, writes run.log, the identity and the footer. FlagGems' own record
(`--record json`) lands beside run.log as flaggems_result.json, carrying caliber's numbers.

Seams for the tuning work (LibTuner's cache, parallel warmup): `TuneHooks`. A tree's op list (one
op per benchmark file) is the C++ side's, one rule: `caliber list --flaggems ROOT`, which
`caliber batch --flaggems` runs one child per op of.
"""

import ctypes
import faulthandler
import gc
import hashlib
import inspect
import io
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback

import pytest

from . import _lib, _staging
from ._dtypes import dtype_name

# caliber's backend -> FlagGems' vendor names (GEMS_VENDOR, which FlagGems reads at import).
VENDORS = {"cuda": ("nvidia",), "musa": ("mthreads",), "rocm": ("amd", "hygon"),
           "ascend": ("ascend",)}

# MUSA compat: the skip guards dropped when FlagGems dispatches to mthreads (a MUSA device is no
# CUDA device to torch, so these guards skip what runs there) are the musa backend's compat rules
# whose op is "flaggems:<file>" (src/backends/musa: one table for caliber's ops and FlagGems'
# files). Only a skipif mark of that file with that exact reason goes; guards inside functions
# stay.
COMPAT_BACKEND = "musa"
COMPAT_PREFIX = "flaggems:"


def compat_rules():
    """[(file, exact skip reason)] of the FlagGems benchmark files whose guard MUSA lifts."""
    return [(r["op"][len(COMPAT_PREFIX):], r["reason"]) for r in _lib.compat_rules(COMPAT_BACKEND)
            if r.get("op", "").startswith(COMPAT_PREFIX)]


BASELINE, CANDIDATE = "baseline", "candidate"
RECORD_FILE = "flaggems_result.json"

_T_LOADED = time.time()  # when this plugin was imported: the interpreter and pytest had started


def _process_start():
    """The wall time this process started (Linux's /proc), else this plugin's import time."""
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        started_ago = uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")
        return min(time.time() - max(0.0, started_ago), _T_LOADED)
    except (OSError, ValueError, IndexError):
        return _T_LOADED


class FlagGemsError(ValueError):
    """Bad input (exit 2, nothing written): the message names the knob and the value."""


class TuneHooks:
    """Where FlagGems' LibTuner mapping plugs in (--tune, REPLAY_FROM): each method is called at
    its point of the session; the defaults leave FlagGems' own cache alone."""

    def environment(self, knobs, env):
        """Before flag_gems is imported (FLAGGEMS_DB_URL is read at import)."""

    def installed(self, flag_gems):
        """After the import: wrap LibTuner here."""

    def opened(self, run_dir):
        """The run directory exists."""

    def preparing(self, on):
        """A provider's prepare call starts (True) or ends (False)."""

    def provider(self, case, role):
        """A dict for the provider's "tune" object after its prepare call, or None."""
        return None

    def finished(self, run):
        """pytest has ended and the run is open: the tuning totals for the footer."""


tune_hooks = TuneHooks()
# The mapping itself fills the seams: python/caliber/flaggems_tune.py.
from .flaggems_tune import Hooks as _TuneMapping  # noqa: E402
tune_hooks = _TuneMapping()


def size_text(x):
    """A compact spelling of FlagGems' shape detail: tensors as 4096x4096 (t: not contiguous),
    other arguments as they print; arguments joined by '_'."""
    size = getattr(x, "shape", None)
    if size is not None and hasattr(x, "dtype"):
        dims = "x".join(str(int(d)) for d in size) or "scalar"
        contiguous = getattr(x, "is_contiguous", None)
        if callable(contiguous) and not contiguous():
            dims += "t"
        return dims
    if isinstance(x, (list, tuple)):
        inner = [size_text(v) for v in x]
        inner = [v for v in inner if v]
        return "(" + ",".join(inner) + ")" if inner else ""
    if isinstance(x, dict):
        inner = ["%s=%s" % (k, size_text(v)) for k, v in x.items()]
        return ",".join(v for v in inner if not v.endswith("="))
    if isinstance(x, (bool, int, float, str)):
        return str(x)
    if x is None:
        return ""
    text = str(x).replace("torch.", "")  # a dtype, a layout, a memory format...
    return text if len(text) <= 32 and " " not in text else type(x).__name__


def shape_key(args, kwargs):
    parts = [size_text(a) for a in args]
    if kwargs:
        parts.append(size_text(kwargs))
    text = "_".join(p for p in parts if p)
    return re.sub(r"\s+", "", text) or "-"


def _first_tensor(args):
    for a in args:
        if hasattr(a, "dtype") and hasattr(a, "shape"):
            return a
        if isinstance(a, (list, tuple)):
            t = _first_tensor(a)
            if t is not None:
                return t
    return None


# ---------------------------------------------------------------------------------------------
# The run's C side.

class _Run:
    """The fed run (caliber_c_run_call): requests as dicts, replies as dicts."""

    def __init__(self, handle):
        self.handle = handle
        self.targets = {}
        self.next = 1
        self.errors = {}
        self.launch_cb = _lib.LAUNCH_FN(self._launch)

    def _launch(self, target, provider, code_ptr, msg, cap):
        try:
            self.targets[target]()
            return 0
        except BaseException as e:  # noqa: B902 - nothing may cross the C boundary
            from .bench import launch_failed
            self.errors[target] = e
            return launch_failed(e, "%s: %s" % (type(e).__name__, e), code_ptr, msg, cap)

    def call(self, request, fn=None):
        lib = _lib.lib()
        buf = _lib.buffer()
        target = 0
        if fn is not None:
            target = self.next
            self.next += 1
            self.targets[target] = fn
        rc = lib.caliber_c_run_call(self.handle, json.dumps(request, default=str).encode(),
                                    self.launch_cb if fn is not None else _lib.LAUNCH_FN(),
                                    target, buf, len(buf))
        reply = json.loads(_lib.text(buf))
        if rc != 0:
            raise _RunRefused(reply.get("error", "refused"), bool(reply.get("usage")))
        if fn is not None:
            reply["_target"] = target
        return reply

    def release(self, target):
        self.targets.pop(target, None)
        self.errors.pop(target, None)


class _RunRefused(RuntimeError):
    def __init__(self, message, usage):
        super().__init__(message)
        self.usage = usage


def _declare(lib):
    if getattr(lib, "_caliber_fed", False):
        return
    lib.caliber_c_set_feeder.argtypes = [FEED_FN]
    lib.caliber_c_set_feeder.restype = None
    lib.caliber_c_run_call.argtypes = [ctypes.c_int64, ctypes.c_char_p, _lib.LAUNCH_FN,
                                       ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64]
    lib.caliber_c_run_call.restype = ctypes.c_int
    lib._caliber_fed = True


FEED_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, ctypes.c_char_p, ctypes.c_void_p,
                           ctypes.c_int64)


# ---------------------------------------------------------------------------------------------
# One case: the providers FlagGems timed for one input.

class _Case:
    def __init__(self, op, dtype, shape, detail, test, ordinal):
        self.op = op
        self.dtype = dtype
        self.shape = shape
        self.detail = detail
        self.test = test
        self.ordinal = ordinal
        self.providers = []  # dicts for the case request
        self.targets = []
        self.flops = 0.0
        self.bytes = 0.0
        self.skipped = None
        self.dims = None
        self.torch_dtype = dtype
        # Where the case's wall time went on the Python side (docs/run-log.md's phases): FlagGems'
        # own loop before the case's first provider (its inputs), the first call of each provider
        # (JIT compilation, LibTuner's sweep) and the host-cost runs; the C++ side adds settling
        # and timing from its measurements.
        self.inputs_s = 0.0
        self.prepare_s = 0.0
        self.host_s = 0.0
        self.t_begin = time.perf_counter()
        self.t_end = None  # when its last provider's timing ended
        self.input = None  # the input of FlagGems' loop it is (Session.input), or None
        self.detail_key = shape  # the arguments of its first call, spelled as a shape
        self.recorded = False  # shape and detail are what FlagGems' own record_shapes recorded
        self.seen = []  # the roles of the get_latency calls it holds, in order
        self.origin = None  # (file, module, function) of the pytest test that made it

    def roles(self):
        return list(self.seen)

    def describe(self, args, kwargs, detail, recorded=True):
        """The case's shape, shape detail and dims from these arguments and their detail."""
        self.shape = shape_key(args, kwargs)
        self.detail = detail
        self.recorded = recorded
        t = _first_tensor(args)
        self.dims = [int(d) for d in t.shape] if t is not None else None


# ---------------------------------------------------------------------------------------------
# The session: the plugin pytest calls, and the patches on FlagGems' benchmark classes.

def benchmark_file(root, op):
    """The benchmark file of an op (absolute), None when the tree has none: benchmark/test_<op>.py,
    else benchmark/<dir>/test_<op>.py in the first folder (by name) that has one, as the C++ side
    lists a tree's ops (src/batch/flaggems_tree.cpp, flaggems_files)."""
    bench = os.path.join(root, "benchmark")
    name = "test_%s.py" % op
    if os.path.isfile(os.path.join(bench, name)):
        return os.path.abspath(os.path.join(bench, name))
    try:
        folders = sorted(d for d in os.listdir(bench)
                         if not d.startswith(".") and d != "__pycache__" and
                         os.path.isdir(os.path.join(bench, d)))
    except OSError:
        return None
    for d in folders:
        f = os.path.join(bench, d, name)
        if os.path.isfile(f):
            return os.path.abspath(f)
    return None


OVERLAY_FORM = ("allowed: a mapping of FlagGems op names (or benchmark class names) to shapes, "
                "at the top or under 'ops:', each a list of shapes or {shapes: [...], shape_desc: "
                "TEXT}, a shape a list of integers >= 0 (or of such lists), e.g. "
                "'ops: {softmax: [[32, 48]]}'")


def _shape_error(shape):
    """Why `shape` is no shape of an overlay (a list of integers >= 0, or of such lists: FlagGems'
    index benchmarks take [[rows, cols], [[indices]]]; 0 is a conv benchmark's padding), or None."""
    if not isinstance(shape, list) or not shape:
        return "%r is not a shape (a non-empty list of dimensions)" % (shape,)
    for d in shape:
        if isinstance(d, list):
            why = _shape_error(d)
            if why:
                return why
        elif isinstance(d, bool) or not isinstance(d, int) or d < 0:
            return "dimension %r is not an integer >= 0" % (d,)
    return None


def overlay_entries(path, data):
    """The entries of a --shapes overlay file (its YAML as loaded): {op or class name: {"shapes":
    [...], maybe "shape_desc"}}. Anything else is refused (FlagGemsError), before anything runs:
    an entry set_shapes would never find, or a shape FlagGems would fail on, is no overlay."""
    def refuse(what):
        raise FlagGemsError("--shapes: '%s': %s; %s" % (path, what, OVERLAY_FORM))

    if not isinstance(data, dict):
        refuse("the file holds %s, not a mapping" % ("nothing" if data is None else
                                                     "a " + type(data).__name__))
    ops = data
    if "ops" in data:
        extra = sorted(str(key) for key in data if key != "ops")
        if extra:  # caliber's own shape files have families: and levels: beside ops:
            refuse("'%s' beside 'ops' is not read (caliber's own shape file format names caliber's "
                   "ops, not FlagGems')" % extra[0])
        ops = data["ops"]
        if not isinstance(ops, dict):
            refuse("'ops' holds a %s, not a mapping" % type(ops).__name__)
    if not ops:
        refuse("no op to overlay")
    out = {}
    for op, entry in ops.items():
        if not isinstance(op, str):
            refuse("op name %r is not a name" % (op,))
        shapes, desc = entry, None
        if isinstance(entry, dict):
            if "family" in entry:
                refuse("'%s': {family: ...} is caliber's own shape file format, which names caliber's "
                       "ops, not FlagGems'" % op)
            extra = sorted(str(key) for key in entry if key not in ("shapes", "shape_desc"))
            if extra or "shapes" not in entry:
                refuse("'%s': %s" % (op, "'%s' is not read" % extra[0] if extra else "no 'shapes'"))
            shapes, desc = entry["shapes"], entry.get("shape_desc")
            if desc is not None and not isinstance(desc, str):
                refuse("'%s': shape_desc %r is not text" % (op, desc))
        if not isinstance(shapes, list) or not shapes:
            refuse("'%s': %r is not a list of shapes" % (op, shapes))
        for shape in shapes:
            why = _shape_error(shape)
            if why:
                refuse("'%s': %s" % (op, why))
        out[op] = {"shapes": [list(s) for s in shapes]}
        if desc is not None:
            out[op]["shape_desc"] = desc
    return out


class Session:
    def __init__(self, run, knobs):
        self.run = run
        self.knobs = knobs
        self.root = os.path.abspath(knobs["flaggems"])
        self.host = bool(knobs.get("host"))
        self.refusal = None
        self.opened = None
        self.planned = False  # --dry-run: the selection was printed (_plan)
        self.case = None
        self.keys = {}  # (op, dtype, shape) -> (times seen, the first one's pytest node)
        self.homes = {}  # (file, function, op) -> the shape's suffix for that test's rows
        self.sources = {}  # module name -> [(test function name, its source)], file order
        self.noted = set()  # (node, earlier node) pairs whose shared key was reported
        self.node = None
        self.origin = None  # (file, module, function) of the running pytest test
        self.opid = None
        self.test_cases = 0
        self.shapes = {}
        self.gems_depth = 0
        self.gems_args = []  # the arguments of each use_gems entered, innermost last
        self.retime_gems = None  # a use_gems entered again for a re-timing (_launcher)
        self.dtype = None
        self.ordinal = 0
        # The input FlagGems' loop holds (a number per input the wrapped get_input_iter yielded;
        # None outside one), and what FlagGems' own record_shapes recorded for it, not yet a
        # case's: (bench, args, kwargs, detail).
        self.inputs = 0
        self.input = None
        self.recorded = None
        self.bench_op = None  # the op_name of the test's benchmark running now, once known
        self.case_errors = {}  # ordinal -> error of the current dtype's loop, for FlagGems' record
        self.test_errors = []  # the errors of the running test's failed cases, in order
        self.wanted_markers = set()
        self.explicit = []
        self.given = {}  # each test file or node of the selection -> (its knob, its value as given)
        self.unusable = None  # why nothing more can run (a sticky device error), once known
        self.matched_markers = set()
        self.flag_gems = None
        self.base = None
        self.conftest = None
        self.record_tmp = None
        self.terminal_text = None  # pytest's own report, kept out of caliber's (pytest_configure)
        self.overlay_ops = {}  # --shapes: op or class name -> its entry, as overlaid
        self.pytest_args = []
        self.t_mark = time.perf_counter()  # where the previous case ended (the inputs phase starts)
        # Wall times of the start-up's milestones (docs/run-log.md, the footer's startup).
        self.t_start = {"process": _process_start(), "loaded": _T_LOADED}

    # --- before pytest: environment, import, arguments ------------------------------------

    def prepare(self):
        env = os.environ
        backend = self.knobs["backend"]
        want = VENDORS.get(backend)
        given = env.get("GEMS_VENDOR")
        if want and given and given not in want:
            raise FlagGemsError("--backend (ZL_BACKEND): '%s' selects FlagGems vendor %s, but "
                                "GEMS_VENDOR is '%s'" % (backend, "/".join(want), given))
        if want and len(want) == 1 and not given:
            # One vendor: FlagGems is told. Several (rocm: amd or hygon): FlagGems detects which
            # (GEMS_VENDOR would take precedence over its detection), checked after the import.
            env["GEMS_VENDOR"] = want[0]
        tune_hooks.environment(self.knobs, env)
        src = os.path.join(self.root, "src")
        if os.path.isdir(os.path.join(src, "flag_gems")) and src not in sys.path:
            sys.path.insert(0, src)
        if self.root not in sys.path:
            sys.path.insert(0, self.root)
        self.t_start["import"] = time.time()
        try:
            import flag_gems
        except ModuleNotFoundError as e:
            raise FlagGemsError("--flaggems: '%s': FlagGems does not import in %s: no module "
                                "named '%s' (%s)" % (self.knobs["flaggems"], sys.executable,
                                                      e.name, e))
        except Exception as e:
            tb = traceback.format_exception_only(type(e), e)[-1].strip()
            raise FlagGemsError("--flaggems: '%s': FlagGems does not import in %s: %s" %
                                (self.knobs["flaggems"], sys.executable, tb))
        self.flag_gems = flag_gems
        self.t_start["imported"] = time.time()
        vendor = getattr(flag_gems, "vendor_name", None)
        if given and vendor != given:  # the user's GEMS_VENDOR, not the backend, asked for it
            raise FlagGemsError("GEMS_VENDOR: '%s' asks FlagGems for vendor %s, but FlagGems "
                                "dispatches to '%s' (allowed: a vendor this FlagGems and device "
                                "have, or GEMS_VENDOR unset)" % (given, given, vendor))
        expected = want
        if expected and vendor not in expected:
            raise FlagGemsError("--backend (ZL_BACKEND): '%s' expects FlagGems vendor %s, but "
                                "FlagGems dispatches to '%s'" % (backend, "/".join(expected),
                                                                 vendor))
        tune_hooks.installed(flag_gems)
        self._wrap_use_gems(flag_gems)
        if not self.host:
            # graph capture through torch's own graph API, installed before the run opens its
            # device (docs/python.md)
            from . import _torch
            if _torch.available(self.knobs["backend"]):
                _torch.install_hooks(self.knobs["backend"])
        self.pytest_args = self._arguments()

    def _test_path(self, text, knob):
        """A test file or node id, relative to ROOT/benchmark or ROOT (or as given), as an
        absolute node. The tree's own first: FlagGems' tests/ holds files of the same names.
        Only a test file (test_*.py) inside ROOT/benchmark: another tree's file would run against
        this tree's flag_gems under this tree's name, and a file that is no test reaches pytest
        as an argument it does not know."""
        path, sep, rest = text.partition("::")
        bench = os.path.join(self.root, "benchmark")
        for cand in (os.path.join(bench, path), os.path.join(self.root, path), path):
            if os.path.isfile(cand):
                cand = os.path.abspath(cand)
                inside = any(os.path.commonpath([p, b]) == b for p, b in (
                    (cand, bench), (os.path.realpath(cand), os.path.realpath(bench))))
                name = os.path.basename(cand)
                if not inside or not (name.startswith("test_") and name.endswith(".py")):
                    raise FlagGemsError(
                        "%s: '%s' is %s: allowed is a test file (test_*.py) under %s/benchmark, "
                        "or a node id in one" % (knob, text, "not a test file" if inside else
                                                 "outside the tree's benchmark folder",
                                                 self.knobs["flaggems"]))
                self.given[cand + sep + rest] = (knob, text)
                return cand + sep + rest
        raise FlagGemsError("%s: '%s': no such benchmark file under %s/benchmark" %
                            (knob, text, self.knobs["flaggems"]))

    def _read_op_file(self, path):
        try:
            with open(path) as f:
                lines = f.read().splitlines()
        except OSError as e:
            raise FlagGemsError("--op-file (OP_FILE): '%s' cannot be read: %s" % (path, e))
        out = []
        for line in lines:
            line = line.split("#", 1)[0].strip()
            if line:
                out.append(line)
        return out

    def _arguments(self):
        k = self.knobs
        paths = []
        ops = list(k.get("ops") or [])
        if k.get("op_file"):
            if k["op_file"].endswith(".py"):  # the old runner's meaning: the test file
                paths.append(self._test_path(k["op_file"], "--op-file (OP_FILE)"))
            else:  # caliber's: a list of ops
                ops += self._read_op_file(k["op_file"])
        if k.get("node"):
            paths.append(self._test_path(k["node"], "--node (TEST_NODE)"))
        for op in ops:
            if op.endswith(".py") or "::" in op or "/" in op:
                paths.append(self._test_path(op, "OP"))
                continue
            f = benchmark_file(self.root, op)
            if f is not None:
                paths.append(f)
            else:
                self.wanted_markers.add(op)
        self.explicit = list(paths)
        if self.wanted_markers:
            # markers reach into every file: collect the whole tree once and keep what was named
            # (a file and its folder both given would collect that file twice)
            paths = [os.path.join(self.root, "benchmark")]
        elif not paths:
            paths.append(os.path.join(self.root, "benchmark"))
        self.record_tmp = _staging.mkdtemp("caliber-flaggems-")
        args = paths + ["--rootdir", self.root, "-p", "no:cacheprovider", "--capture=sys", "-q", "--tb=short",
                        "--level", k["level"], "--mode", k["mode"],
                        "--record", "json", "--output",
                        os.path.join(self.record_tmp, RECORD_FILE)]
        if k.get("shapes_file"):
            if k["shape_mode"] != "file":
                # upstream runs FlagGems' core_shapes.yaml as it is: the file would be recorded
                # and never read
                raise FlagGemsError("--shapes: '%s' is overlaid with --shape-mode file only; "
                                    "--shape-mode (SHAPE_MODE) is '%s' (FlagGems' "
                                    "core_shapes.yaml as it is): drop one of the two" %
                                    (k["shapes_file"], k["shape_mode"]))
            args += ["--shape_file", self._overlay_shapes()]
        return args

    def _overlay_shapes(self):
        """SHAPE_MODE=file: FlagGems' core_shapes.yaml with caliber's entries overlaid (an op of
        caliber's shape file replaces that op's shapes)."""
        import yaml
        upstream = os.path.join(self.root, "benchmark", "core_shapes.yaml")
        data = {}
        if os.path.isfile(upstream):
            with open(upstream) as f:
                data = yaml.safe_load(f) or {}
        mine = self.knobs["shapes_file"]
        try:
            with open(mine) as f:
                theirs = yaml.safe_load(f)
        except (OSError, yaml.YAMLError) as e:
            raise FlagGemsError("--shapes: '%s' cannot be read: %s" % (mine, e))
        self.overlay_ops = overlay_entries(mine, theirs)
        for op, entry in self.overlay_ops.items():
            data[op] = dict(data.get(op) if isinstance(data.get(op), dict) else {}, **entry)
        path = os.path.join(self.record_tmp, "shapes_overlay.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(data, f)
        self.overlay = path
        return path

    def _overlay_refusal(self, items):
        """Why the overlay names an op none of the selected benchmarks looks up, or None.
        FlagGems' benchmarks name their op (op_name) only when their test runs, so what the
        collection can tell is used: an op_name is a string in the source of a selected test file
        (FlagGems gives it as one: op_name="add", or a parametrize list of them), and a class
        is one the file names or a benchmark class it derives from (set_shapes' MRO lookup);
        FlagGems' "<op> backward" keys go with <op>."""
        if not self.overlay_ops:
            return None
        words, quoted = set(), set()
        for path in sorted({os.path.abspath(_item_path(item)) for item in items}):
            try:
                with open(path) as f:
                    src = f.read()
            except OSError:
                continue
            words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", src))
            quoted.update(m.group(2) for m in re.finditer(r"(['\"])([^'\"\\\n]{1,200})\1", src))
        classes = set()
        for name, mod in list(sys.modules.items()):
            if name != "benchmark" and not name.startswith("benchmark."):
                continue
            for obj in list(vars(mod).values()):
                if inspect.isclass(obj) and obj.__name__ in words and \
                        callable(getattr(obj, "set_shapes", None)):
                    classes.update(c.__name__ for c in obj.__mro__
                                   if callable(getattr(c, "set_shapes", None)))
        for op in self.overlay_ops:
            base = op[:-len(" backward")] if op.endswith(" backward") else op
            if base in quoted or op in classes:
                continue
            ops = sorted({self._opid(item) for item in items} & quoted)
            return ("--shapes: '%s': '%s' is no op or benchmark class of the selected benchmarks "
                    "(allowed: an op_name their test files give%s, or a benchmark class they use%s)"
                    % (self.knobs["shapes_file"], op, ", e.g. " + ", ".join(ops[:8]) if ops else "",
                       ": " + ", ".join(sorted(classes)) if classes else ""))
        return None

    def _wrap_use_gems(self, flag_gems):
        cls = getattr(flag_gems, "use_gems", None)
        if cls is None or getattr(cls, "_caliber_wrapped", False):
            return
        init, enter, exit_ = cls.__init__, cls.__enter__, cls.__exit__
        session = self

        def __init__(self_, *a, **kw):
            self_._caliber_args = (a, kw)  # to enter the same use_gems again (_launcher)
            return init(self_, *a, **kw)

        def __enter__(self_):
            session.gems_depth += 1
            session.gems_args.append(getattr(self_, "_caliber_args", ((), {})))
            return enter(self_)

        def __exit__(self_, *a):
            session.gems_depth -= 1
            if session.gems_args:
                session.gems_args.pop()
            return exit_(self_, *a)

        cls.__init__, cls.__enter__, cls.__exit__ = __init__, __enter__, __exit__
        cls._caliber_wrapped = True

    def show_report(self):
        """pytest's own report, kept out of caliber's output (pytest_configure), onto stderr: for
        an ending caliber has no message of its own for (an internal error, ...)."""
        text = self.terminal_text.getvalue().strip() if self.terminal_text is not None else ""
        if text and not getattr(self, "collect_errors", None):  # those are shown already
            _say("pytest's report:\n" + text)

    # --- pytest hooks ---------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session, config, items):
        self._compat(items)
        if self.wanted_markers:
            keep = []
            for item in items:
                mark = self._opid(item)
                if mark in self.wanted_markers or self._named(item):
                    keep.append(item)
                    if mark in self.wanted_markers:
                        self.matched_markers.add(mark)
            items[:] = keep

    def _named(self, item, explicit=None):
        """Whether a file or node given explicitly (any, or those of `explicit`) selects the
        item."""
        path = os.path.abspath(_item_path(item))
        name = item.nodeid.partition("::")[2]
        for sel in self.explicit if explicit is None else explicit:
            file, _, rest = sel.partition("::")
            if path == file and (not rest or name == rest or name.startswith(rest + "[") or
                                 name.startswith(rest + "::")):
                return True
        return False

    def _compat(self, items):
        if getattr(self.flag_gems, "vendor_name", None) != "mthreads":
            return
        rules = compat_rules()
        for item in items:
            name = os.path.basename(_item_path(item))
            for file, reason in rules:
                if name == file:
                    item.own_markers[:] = [m for m in item.own_markers if not (
                        m.name == "skipif" and m.kwargs.get("reason") == reason)]

    def _opid(self, item):
        builtin = getattr(self.conftest_module(), "BUILTIN_MARKS", ())
        for mark in item.iter_markers():
            if mark.name not in builtin:
                return mark.name
        return item.nodeid

    def conftest_module(self):
        if self.conftest is None:
            self.conftest = sys.modules.get("benchmark.conftest")
        return self.conftest

    def pytest_collection_finish(self, session):
        missing = sorted(self.wanted_markers - self.matched_markers)
        if missing:
            self.refusal = ("OP: '%s' is neither benchmark/test_%s.py nor a marker of any "
                            "benchmark under %s" % (missing[0], missing[0],
                                                    self.knobs["flaggems"]))
        elif session.testsfailed or getattr(self, "collect_errors", None):
            errors = getattr(self, "collect_errors", None) or ["a collection error"]
            self.refusal = "--flaggems: '%s': pytest could not collect the selection: %s" % (
                self.knobs["flaggems"], errors[0].strip().splitlines()[-1])
        elif (self.wanted_markers or not session.items) and self._not_found(session):
            knob, text = self._not_found(session)
            self.refusal = "%s: '%s': no such test under %s/benchmark" % (
                knob, text, self.knobs["flaggems"])
        elif not session.items:
            self.refusal = "--flaggems: '%s': the selection holds no benchmark" % (
                self.knobs["flaggems"])
        else:
            self.refusal = self._overlay_refusal(session.items)
        if self.refusal:
            pytest.exit(self.refusal, returncode=2)
        if self.knobs.get("dry_run"):  # what the selection holds, and nothing run
            self._plan(session.items)
            pytest.exit("caliber run --dry-run", returncode=0)
        self._patch_base()
        if tune_hooks.in_shard():  # a parallel-warmup shard opens no run (flaggems_warmup.py)
            return
        self.t_start["collected"] = time.time()
        try:
            self._open(session.items)
        except _RunRefused as e:  # the run directory could not be claimed (--out, ...)
            self.refusal = str(e)
            pytest.exit(self.refusal, returncode=2)
        self._send_startup()
        # FlagGems' loop calls gc.collect() after every input; with torch, Triton and FlagGems
        # imported that scan cost ~0.1 s an input on the H200 (2026-12-01). What exists now
        # (modules, classes, the run's set-up) is moved out of the collector's view, so each
        # collect scans what the benchmarks made since: the same garbage is found.
        gc.freeze()

    def _not_found(self, session):
        """(knob, value as given) of a test file or node id that pytest found no test of (it then
        collects nothing at all), else None. With markers the whole tree is collected and the
        explicit ones picked from it (pytest_collection_modifyitems): one that picked none."""
        for arg, _ in getattr(session, "_notfound", None) or []:  # pytest's own list
            if arg in self.given:
                return self.given[arg]
        if self.wanted_markers:
            for sel in self.explicit:
                if sel in self.given and not any(self._named(i, [sel]) for i in session.items):
                    return self.given[sel]
            return None
        nodes = [v for k, v in self.given.items() if "::" in k]
        return nodes[0] if len(nodes) == 1 and not session.items else None

    @pytest.hookimpl(trylast=True)  # after the terminal plugin's, which makes the reporter
    def pytest_configure(self, config):
        # pytest's own report (progress dots, its summary line, the banner of a pytest.exit) is
        # not caliber's, whose rows and messages say it: the reporter writes into a buffer, and
        # stays (FlagGems' conftest writes its JSON record from the reporter's
        # pytest_terminal_summary). Real errors still reach the user: collection errors and
        # failed tests as they come (below), the rest with pytest's report (_feed).
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and hasattr(reporter, "_tw"):
            try:  # pytest's internals (7 to 9 have them); without, its report stays as it is
                from _pytest.config import create_terminal_writer
                text = io.StringIO()
                reporter._tw = create_terminal_writer(config, text)
                self.terminal_text = text
            except (ImportError, AttributeError, TypeError):
                pass

    def pytest_collectreport(self, report):
        if report.failed:
            self.collect_errors = getattr(self, "collect_errors", []) + [str(report.longrepr)]
            _say("pytest could not collect %s:\n%s" % (report.nodeid or "the selection",
                                                        str(report.longrepr).rstrip()))

    def _plan(self, items):
        ops = {}
        for item in items:
            o = ops.setdefault(self._opid(item), {"benchmarks": 0, "files": []})
            o["benchmarks"] += 1
            path = os.path.relpath(os.path.abspath(_item_path(item)), self.knobs["flaggems"])
            if path not in o["files"]:
                o["files"].append(path)
        self.run.call({"call": "plan", "ops": [dict(v, op=k) for k, v in ops.items()]})
        self.planned = True

    def _open(self, items):
        ops = []
        for item in items:
            op = self._opid(item)
            if op not in ops:
                ops.append(op)
        reply = self.run.call({"call": "open", "ops": ops, "identity": self._identity()})
        self.opened = reply
        run_dir = reply["run_dir"]
        tune_hooks.opened(run_dir)
        conf = self.conftest_module()
        record = os.path.join(run_dir, RECORD_FILE)
        if conf is not None:
            conf.REPORT_FILE = record
            if getattr(conf, "Config", None) is not None:
                conf.Config.output = record
        # The run's seed (--seed, else fresh and recorded in run_identity.json) seeds torch's
        # generators once, before FlagGems makes its first input: the same seed, the same inputs.
        torch_mod = sys.modules.get("torch")
        if reply.get("seed") is not None and callable(getattr(torch_mod, "manual_seed", None)):
            torch_mod.manual_seed(int(reply["seed"]))
        dev = reply["device"]
        if not dev.get("host"):
            # FlagGems allocates on torch's current device and launches on its current stream:
            # both are the run's for the whole session (the backward's forward runs inside
            # get_latency, and its kernels must land where the events are).
            # torch's module is the backend's (torch.cuda, torch.musa, torch.npu: _torch.py).
            from . import _torch
            backend = self.knobs["backend"]
            api = _torch.device_api(backend)
            api.set_device(dev["index"])
            api.set_stream(_torch.external_stream(dev["stream"], dev["index"], backend))
            _torch.heal_generator("after the run's set-up: peaks", backend)

    def _send_startup(self):
        """The start-up's phases for the footer: the interpreter and pytest up to this plugin,
        FlagGems' import (torch and Triton with it), pytest's collection of the selection, and
        the run's opening (its directory, the device, the peaks)."""
        t = dict(self.t_start, opened=time.time())
        if "import" not in t:
            return

        def span(a, b):
            return round(max(0.0, t[b] - t[a]), 3)
        self.run.call({"call": "startup", "phases": {
            "interpreter_s": span("process", "loaded"),
            "flag_gems_import_s": span("import", "imported"),
            "collection_s": span("imported", "collected"),
            "open_s": span("collected", "opened")}})

    def _identity(self):
        fg = self.flag_gems
        commit = _git_commit(self.root)
        info = {"root": self.root, "version": getattr(fg, "__version__", None),
                "commit": commit or _version_commit(fg),
                "source": _source_state(fg, self.root, commit),
                "vendor": getattr(fg, "vendor_name", None),
                "device": getattr(fg, "device", None), "mode": self.knobs["mode"],
                "level": self.knobs["level"], "shape_mode": self.knobs["shape_mode"],
                "pytest_args": self.pytest_args, "record": RECORD_FILE}
        try:
            import triton
            info["triton"] = getattr(triton, "__version__", None)
            info["flagtree"] = _flagtree_version(triton)
        except Exception:
            info["triton"] = None
        info["pytest"] = pytest.__version__
        from . import _torch
        py = {"version": sys.version.split()[0], "executable": sys.executable}
        py.update(_torch.versions())
        return {"flaggems": info, "python": py, "ops_libs": ["flaggems:" + self.root]}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self.node = item.nodeid
        self.origin = (os.path.abspath(_item_path(item)), getattr(item, "module", None),
                       getattr(item, "originalname", None) or item.name.split("[", 1)[0])
        self.opid = self._opid(item)
        self.test_cases = 0
        self.test_errors = []
        self.t_mark = time.perf_counter()
        self.bench_op = self.dtype = self.input = self.recorded = None
        yield
        self._flush()
        self.node = self.origin = None

    @pytest.hookimpl(trylast=True)  # after FlagGems' conftest has written the test's entry
    def pytest_runtest_logreport(self, report):
        if report.failed:  # the row says why in a line; the traceback is here
            _say("%s failed in its %s:\n%s" % (report.nodeid, report.when,
                                                report.longreprtext.rstrip()))
        if self.opened is None:
            return
        if report.passed and report.when == "call" and self.test_errors:
            self._record_failed(report)
        if report.skipped and report.when in ("setup", "call"):
            self._flush()
            self.run.call({"call": "case", "op": self.opid or report.nodeid,
                           "node": report.nodeid, "status": "skipped",
                           "reason": _reason(report), "params": {"test": report.nodeid}})
        elif report.failed and report.when in ("setup", "call", "teardown"):
            self._flush()
            request = {"call": "case", "op": self.opid or report.nodeid, "node": report.nodeid,
                       "params": {"test": report.nodeid}, "providers": []}
            if report.when == "setup":  # a fixture raised: the test never ran
                request["error"] = "the test's setup failed: %s" % _reason(report)
            elif report.when == "teardown":  # the test's rows stand; the run fails
                request["error"] = "the test's teardown failed: %s" % _reason(report)
            else:
                # FlagGems' loop stopped here (its input iterator, or its own code, raised): the
                # cases it yielded before stand; the rest of the test is lost. The row is the
                # benchmark's (its op_name, the dtype its loop was in), as its cases are.
                request["op"] = self.bench_op or request["op"]
                if self.bench_op is not None and self.dtype is not None:
                    request["dtype"] = dtype_name(self.dtype)
                    request["flaggems"] = {"dtype": str(self.dtype)}
                request["error"] = "the benchmark stopped: %s" % _reason(report)
            self.run.call(request)

    def _record_failed(self, report):
        """FlagGems' record of a test some of whose shapes failed says failed, as FlagGems' own
        run says it (its loop's pytest.fail on the first failing shape); caliber ran the rest,
        so the test itself passed."""
        results = getattr(self.conftest_module(), "TEST_RESULTS", None)
        entry = results.get(getattr(report, "opid", None) or self.opid) \
            if isinstance(results, dict) else None
        if not isinstance(entry, dict) or entry.get("test_case", report.nodeid) != report.nodeid:
            return
        n = len(self.test_errors)
        entry.update(result="failed", reason="Failed: %s%s" % (
            self.test_errors[0], " (and %d more failed shapes)" % (n - 1) if n > 1 else ""))

    def pytest_sessionfinish(self, session, exitstatus):
        self._flush()
        if self.opened is not None and self.shapes:
            self.run.call({"call": "shapes", "ops": self.shapes,
                           "source": os.path.join(self.root, "benchmark", "core_shapes.yaml"),
                           "overlay": os.path.abspath(self.knobs["shapes_file"])
                           if self.knobs.get("shapes_file") else ""})

    # --- the patches on base.py -----------------------------------------------------------

    def _patch_base(self):
        base = sys.modules.get("benchmark.base")
        if base is None:
            return  # no test imported base.py: nothing of FlagGems' to time
        self.base = base
        bench = base.Benchmark
        if getattr(bench, "_caliber_session", None) is not None:
            bench._caliber_session = self
            return
        bench._caliber_session = self
        base.triton = _TritonView(base.triton, self)
        orig_latency, orig_init = bench.get_latency, bench.__init__
        session = self

        def get_latency(self_, op, *args, **kwargs):
            return session.get_latency(orig_latency, self_, op, args, kwargs)

        def __init__(self_, *args, **kwargs):
            orig_init(self_, *args, **kwargs)
            session.wrap_instance(self_)

        bench.get_latency, bench.__init__ = get_latency, __init__
        orig_update = base.update_result

        def update_result(op, data):
            return orig_update(op, session.annotate_record(data))

        base.update_result = update_result
        # A benchmark with its own run may import conftest's update_result itself and pass its
        # record as JSON text (FlagGems' int4pack files: `from .conftest import update_result`,
        # `update_result(op, result.to_json())`): the collected modules' own name is rebound.
        for name, mod in list(sys.modules.items()):
            if name.startswith("benchmark.") and name != "benchmark.base" and \
                    getattr(mod, "update_result", None) is orig_update:
                mod.update_result = update_result

    def wrap_instance(self, bench):
        """The instance's loop (run, get_input_iter, record_shapes), its metrics and its dtypes,
        seen by the session."""
        session = self
        run, get_iter = bench.run, bench.get_input_iter

        def run_():
            session.dtype = None  # a run of its own may time without the input iterator
            session.bench_op = bench.op_name
            try:
                return run()
            finally:
                session._flush()
                session.input = session.recorded = None
                session.shapes[bench.op_name] = {
                    "shapes": [list(s) if isinstance(s, (list, tuple)) else s
                               for s in (getattr(bench, "shapes", None) or [])],
                    "shape_desc": getattr(bench, "shape_desc", ""),
                    "cases": session.shapes.get(bench.op_name, {}).get("cases", [])}

        def get_input_iter(dtype):
            session._flush()
            session.bench_op = bench.op_name
            session.dtype = dtype
            session.ordinal = 0
            session.case_errors = {}
            session.input = session.recorded = None
            for item in get_iter(dtype):
                session._flush()
                # One input: every get_latency until the next is its case (a role met twice
                # starts another), whatever arguments each provider gets.
                session.inputs += 1
                session.input, session.recorded = session.inputs, None
                yield item
                session.ordinal += 1
            session._flush()
            session.input = None

        record_shapes = bench.record_shapes

        def record_shapes_(*args, **kwargs):
            detail = record_shapes(*args, **kwargs)
            session.recorded_shapes(bench, args, kwargs, detail)
            return detail

        bench.run, bench.get_input_iter = run_, get_input_iter
        bench.record_shapes, bench._caliber_record_shapes = record_shapes_, record_shapes
        self._wrap_metrics(bench)
        self._wrap_dtypes(bench)

    def _wrap_metrics(self, bench):
        """FlagGems' get_tflops and get_gbps of the instance: their counts onto the case."""
        session = self
        get_tflops, get_gbps = bench.get_tflops, bench.get_gbps

        def get_tflops_(op, *args, **kwargs):
            try:
                flops = get_tflops(op, *args, **kwargs)
            except Exception:
                return float("nan")
            if session.case is not None and isinstance(flops, (int, float)):
                session.case.flops = float(flops)
            return flops

        def get_gbps_(args, latency=None):
            try:
                gbps = get_gbps(args, latency=latency)
            except Exception:
                return float("nan")
            if session.case is not None and isinstance(gbps, (int, float)) and \
                    isinstance(latency, (int, float)) and math.isfinite(gbps * latency) and \
                    not session.case.bytes:
                session.case.bytes = float(gbps) * float(latency) * 1e6  # FlagGems' formula
            return gbps

        bench.get_tflops, bench.get_gbps = get_tflops_, get_gbps_

    def _wrap_dtypes(self, bench):
        """--dtypes on the instance's set_dtypes."""
        session = self
        wanted = list(session.knobs.get("dtypes") or [])

        def set_dtypes(user_desired_dtypes):
            # caliber's --dtypes intersected with the op's own (FlagGems fails the test on a dtype
            # the op lacks); each dtype asked for and missing is a skipped row.
            own = list(getattr(bench, "dtypes", None) or [])
            bench.to_bench_dtypes = [d for d in own if dtype_name(d) in wanted]
            for name in wanted:
                if all(dtype_name(d) != name for d in own):
                    session.skip_row(bench.op_name, name, "--dtypes: %s is not among the op's "
                                     "dtypes (%s)" % (name, ", ".join(dtype_name(d) for d in own)))

        if wanted and hasattr(bench, "set_dtypes"):
            bench.set_dtypes = set_dtypes

    def skip_row(self, op, dtype, reason):
        if self.opened is None:
            return
        self._flush()
        self.run.call({"call": "case", "op": op, "dtype": dtype, "node": "%s[%s]" % (op, dtype),
                       "status": "skipped", "reason": reason,
                       "params": {"test": self.node or ""}})

    def annotate_record(self, data):
        """FlagGems' record of one (op, dtype): a shape caliber failed alone carries its error,
        and latencies caliber has no number for are null (JSON has no NaN). Returns the record,
        as it came: an object, or JSON text (a record a benchmark serialized itself)."""
        if isinstance(data, str):
            try:
                parsed = json.loads(data)
            except ValueError:
                return data
            if not isinstance(parsed, dict):
                return data
            self.annotate_record(parsed)
            return json.dumps(parsed)
        if not isinstance(data, dict):
            return data
        for i, metric in enumerate(data.get("result") or []):
            if not isinstance(metric, dict):
                continue
            if i in self.case_errors and not metric.get("error_msg"):
                metric["error_msg"] = self.case_errors[i]
            for key, v in list(metric.items()):
                if isinstance(v, float) and not math.isfinite(v):
                    metric[key] = None
        return data

    # --- timing ---------------------------------------------------------------------------

    def get_latency(self, orig, bench, op, args, kwargs):
        role = self._role(bench, op, shape_key(args, kwargs))
        self._begin(bench, role, args, kwargs)
        self.current_role = role
        try:
            return orig(bench, op, *args, **kwargs)
        except Exception as e:  # the op raised (a backward's forward, outside the timer)
            self._provider_error(role, e)
            return float("nan")

    def _role(self, bench, op, shape):
        """Which provider a get_latency call is, as FlagGems' Benchmark.run calls them: torch's
        (the baseline) is `torch_op` outside use_gems, gems' (the candidate) `gems_op` or any op
        inside use_gems. Where `torch_op` is `gems_op` (FlagGems' own op on both sides: no native
        op to compare with), run() times it as the baseline first, then as gems'."""
        if self.gems_depth > 0:
            return CANDIDATE
        gems_op = getattr(bench, "gems_op", None)
        if gems_op is None or op is not gems_op:
            return BASELINE
        if op is not getattr(bench, "torch_op", None):
            return CANDIDATE
        if "latency_base" not in (getattr(bench, "to_bench_metrics", None) or ["latency_base"]):
            return CANDIDATE  # run() times no baseline
        c = self.case
        if self._continues(c, bench, shape) and BASELINE in c.roles() and \
                CANDIDATE not in c.roles():
            return CANDIDATE
        return BASELINE

    def _continues(self, c, bench, shape):
        """Whether a get_latency call of `bench` on arguments spelled `shape` belongs to the case
        `c`: within one input FlagGems' loop yielded, every call (the providers' arguments may
        differ: torch's and gems' inputs of one pair); outside one, calls on the same sizes."""
        if c is None or c.op != bench.op_name:
            return False
        if self.input is not None or c.input is not None:
            return c.input == self.input
        return c.detail_key == shape

    def recorded_shapes(self, bench, args, kwargs, detail):
        """FlagGems' own record_shapes of an input (its record's shape_detail): the case's shape
        and detail, whichever provider's arguments it was given."""
        c = self.case
        if c is not None and not c.recorded and c.input is not None and c.input == self.input \
                and c.op == bench.op_name:
            c.describe(args, kwargs, detail)  # recorded after the case's first call
        else:
            self.recorded = (bench, args, kwargs, detail)

    def _begin(self, bench, role, args, kwargs):
        shape = shape_key(args, kwargs)
        c = self.case
        if c is not None and (not self._continues(c, bench, shape) or role in c.roles()):
            self._flush()
            c = None
        if c is None:
            t = _first_tensor(args)
            dtype = self.dtype if self.dtype is not None else getattr(t, "dtype", "-")
            c = _Case(bench.op_name, dtype_name(dtype), shape, None, self.node, self.ordinal)
            c.origin = self.origin
            c.torch_dtype = str(dtype)
            c.input = self.input
            c.inputs_s = max(0.0, c.t_begin - self.t_mark)
            c.t_begin = self.t_mark
            rec, self.recorded = self.recorded, None
            if rec is not None and rec[0] is bench:
                c.describe(*rec[1:])
            else:  # FlagGems recorded none for it: the detail of this call's arguments
                record = getattr(bench, "_caliber_record_shapes", None) or bench.record_shapes
                try:
                    detail = record(*args, **kwargs)
                except Exception:
                    detail = None
                c.describe(args, kwargs, detail, recorded=False)
            self.case = c
        c.seen.append(role)

    def _provider_error(self, role, e):
        c = self.case
        message = "%s: %s" % (type(e).__name__, e)
        entry = {"name": _provider_name(role), "role": role, "error": message}
        entry.update(tune_hooks.provider(c, role) or {})  # e.g. compile_tune_no_evict
        c.providers.append(entry)
        self.case_errors[c.ordinal] = message
        self.test_errors.append(message)

    def _launcher(self, fn, grad_to_none):
        """The provider's launch as the timers call it. The run may call it again after its
        get_latency has returned: where the other provider of the row fell back to the direct
        timer, the row is timed again in one regime when it is written (_flush), by then outside
        the `use_gems` the call was timed in, where torch's op is torch's again. So a call made
        inside use_gems enters a use_gems of the same arguments once when it is called outside
        (kept until the case is written, _end_retime_gems), and a call made outside leaves one
        that is still entered."""
        session = self
        gems_args = self.gems_args[-1] if self.gems_depth > 0 and self.gems_args else None

        def call():
            if gems_args is not None and session.gems_depth == 0:
                session.retime_gems = session.flag_gems.use_gems(*gems_args[0], **gems_args[1])
                session.retime_gems.__enter__()
            elif gems_args is None and session.retime_gems is not None:
                session._end_retime_gems()
            if grad_to_none is not None:
                for x in grad_to_none:
                    x.grad = None
            fn()
        return call

    def _end_retime_gems(self):
        ctx, self.retime_gems = self.retime_gems, None
        if ctx is not None:
            ctx.__exit__(None, None, None)

    def time(self, fn, grad_to_none=None):
        """One provider's device time for the current case (base.py's do_bench call)."""
        c = self.case
        role = getattr(self, "current_role", BASELINE)
        if c is None:  # a timing call outside get_latency: its own case
            c = self.case = _Case(getattr(self, "opid", None) or "op", "-", "-", None, self.node,
                                  self.ordinal)
            c.origin = self.origin
            c.detail_key = "-"

        call = self._launcher(fn, grad_to_none)
        if self.unusable:  # the device context is gone: nothing more is called, let alone timed
            c.skipped = self.unusable
            return float("nan")
        if tune_hooks.in_shard():  # a warmup shard: prepare its share (LibTuner sweeps), time nothing
            if tune_hooks.owns(c.ordinal, (c.op, c.dtype)):
                try:
                    call()
                    self._sync()
                except Exception:  # the measuring run meets it again and reports it
                    pass
            tune_hooks.provider(c, role)
            return 1.0
        # One call and a synchronize first: JIT compilation and LibTuner's sweep stay out of the
        # timers and captures.
        rng_before = self._rng_state()
        t_prepare = time.perf_counter()
        tune_hooks.preparing(True)
        try:
            call()
            self._sync()
        except Exception as e:
            self._provider_error(role, e)
            return float("nan")
        finally:
            tune_hooks.preparing(False)
            c.prepare_s += time.perf_counter() - t_prepare
        rng = rng_before is not None and not _same(rng_before, self._rng_state())
        if c.skipped:
            return float("nan")
        node = "%s[%s-%s]" % (c.op, c.dtype, c.shape)
        request = {"call": "time", "op": c.op, "node": node, "provider": _provider_name(role),
                   "rng": rng}
        if self.host:
            reply = self.run.call(request, call)
        else:
            from . import _torch
            # the generator as FlagGems left it, whatever was captured
            with _torch.rng_guard(self.knobs["backend"]):
                reply = self.run.call(request, call)
        c.targets.append(reply["_target"])
        if reply.get("unusable"):
            self.unusable = reply["unusable"]
        if "skipped" in reply:
            c.skipped = self.unusable = reply["skipped"]
            return float("nan")
        entry = {"name": _provider_name(role), "role": role, "measurement": reply["id"]}
        if reply.get("ok"):
            # The timer's warmup enqueued its last batch of calls back to back: their host time
            # per call is the host cost; runs of its own only where the timer gave none.
            if reply.get("host_ms", 0) > 0:
                entry["host_ms"] = reply["host_ms"]
            else:
                t_host = time.perf_counter()
                entry["host_ms"] = self._host_cost(call)
                c.host_s += time.perf_counter() - t_host
        entry.update(tune_hooks.provider(c, role) or {})  # config, tune, tune_markers
        c.providers.append(entry)
        c.t_end = time.perf_counter()
        if not reply.get("ok"):
            self.case_errors[c.ordinal] = reply.get("error") or "measurement failed"
            self.test_errors.append(self.case_errors[c.ordinal])
            return float("nan")
        return reply["latency_ms"]

    def _host_cost(self, call):
        """The host cost of one eager call in ms: the wall time per call of a run of launches
        enqueued back to back on an idle stream (no synchronize inside, so while the device
        keeps up this is the host's time per call, not the kernel's), median of 3 runs."""
        self._sync()
        t = time.perf_counter()
        call()
        self._sync()
        one = max(time.perf_counter() - t, 1e-7)
        n = int(max(5, min(100, 0.01 / one)))
        per = []
        for _ in range(3):
            self._sync()
            t0 = time.perf_counter()
            for _ in range(n):
                call()
            t1 = time.perf_counter()
            self._sync()
            per.append((t1 - t0) / n)
        per.sort()
        return per[1] * 1e3

    def _sync(self):
        if self.host:
            return
        from . import _torch
        _torch.device_api(self.knobs["backend"]).synchronize()

    def _rng_state(self):
        """The default generator's state; None on the host, or where the device's module has no
        default_generators (nothing is then known to be drawn)."""
        if self.host:
            return None
        try:
            from . import _torch
            return _torch.device_api(self.knobs["backend"]).get_rng_state()
        except Exception:
            return None

    def _flush(self):
        c, self.case = self.case, None
        if c is None or self.opened is None:
            if c is not None:
                for t in c.targets:
                    self.run.release(t)
            return
        shape = c.shape + self._suffix(c)
        key = (c.op, c.dtype, shape)
        seen, first = self.keys.get(key, (0, c.test))
        self.keys[key] = (seen + 1, first)
        if seen:  # the same sizes twice in one test (mm's B=2 and B=16), or see _collision
            shape = "%s#%d" % (shape, seen + 1)
            if first != c.test:
                self._collision(c, first, shape)
        request = {"call": "case", "op": c.op, "dtype": c.dtype, "shape": shape,
                   "node": "%s[%s-%s]" % (c.op, c.dtype, shape), "family": "flaggems",
                   "params": {"test": c.test or "", "ordinal": str(c.ordinal),
                              "shape_detail": _detail_text(c.detail)},
                   "flops": c.flops, "bytes": c.bytes, "providers": c.providers,
                   # FlagGems' own record's spelling of the case, for `export --format
                   # flaggems-log`: torch's dtype text and the shape detail as its JSON holds it.
                   "flaggems": {"dtype": c.torch_dtype, **_detail_json(c.detail)}}
        if c.dims:
            request["dims"] = c.dims
        # The case ends with its last provider's timing: FlagGems' loop after it (its gc.collect,
        # the next input, record_shapes) is the next case's inputs phase.
        end = c.t_end if c.t_end is not None else time.perf_counter()
        request["phases"] = {"inputs_s": c.inputs_s, "prepare_s": c.prepare_s,
                             "host_s": c.host_s, "wall_s": max(0.0, end - c.t_begin)}
        self.t_mark = end
        if c.skipped:
            request.update(status="skipped", reason=c.skipped)
        try:
            self.run.call(request)
        finally:
            self._end_retime_gems()
            for t in c.targets:
                self.run.release(t)
        entry = self.shapes.setdefault(c.op, {"shapes": [], "shape_desc": "", "cases": []})
        if shape not in entry["cases"]:
            entry["cases"].append(shape)

    # --- a row's key: the shape's suffix (docs/flaggems.md, "What a row is") -----------------

    def _suffix(self, c):
        """'' when the test that made the case is its op's home test, else '@<test function>'.
        Decided from the test and the tree alone, never from what else ran, so an input's key is
        the same whatever was selected."""
        if c.origin is None or not c.origin[2]:
            return ""
        path, module, func = c.origin
        key = (path, func, c.op)
        if key not in self.homes:
            home = _home_test(benchmark_file(self.root, c.op), path, func, c.op,
                              self._test_functions(module))
            self.homes[key] = "" if home else "@" + func
        return self.homes[key]

    def _test_functions(self, module):
        """The module's test functions in file order, with their source (decorators included:
        a parametrize names its ops there)."""
        name = getattr(module, "__name__", None)
        if name is None:
            return []
        if name not in self.sources:
            out = []
            for fname, obj in list(vars(module).items()):
                if fname.startswith("test") and inspect.isfunction(obj) and \
                        getattr(obj, "__module__", None) == name:
                    try:
                        src = inspect.getsource(obj)
                    except (OSError, TypeError):
                        src = ""
                    out.append((fname, src))
            self.sources[name] = out
        return self.sources[name]

    def _collision(self, c, first, shape):
        """Two tests gave one key (neither a home test the rule tells apart): the count suffix
        then depends on what ran, which is said once per pair of tests."""
        if (c.test, first) in self.noted:
            return
        self.noted.add((c.test, first))
        out = sys.__stderr__ or sys.stderr  # past pytest's capture of the test's output
        print("caliber: flaggems: %s gives %s[%s-%s] as %s did: the row is keyed '%s', which "
              "depends on what else is selected (docs/flaggems.md, What a row is)"
              % (c.test, c.op, c.dtype, shape.rsplit("#", 1)[0], first, shape), file=out,
              flush=True)


def _home_test(own_file, path, func, op, functions):
    """Whether test function `func` of file `path` is op's home test, whose rows carry no suffix:
    not when the op has a benchmark file of its own (benchmark/test_<op>.py) and this is another;
    yes when the function is named test_<op>; not when another function of the file is; else
    yes unless an earlier function of the file names the op (its name quoted in its source)."""
    if own_file is not None and os.path.realpath(own_file) != os.path.realpath(path):
        return False
    if func == "test_" + op:
        return True
    names = [n for n, _ in functions]
    if "test_" + op in names:
        return False
    quoted = ('"%s"' % op, "'%s'" % op)
    for name, src in functions:
        if name == func:
            return True
        if any(q in src for q in quoted):
            return False
    return True


class _Testing:
    """base.py's `triton.testing` as caliber sees it: do_bench and do_bench_cudagraph time with
    the run's timers; everything else is Triton's."""

    def __init__(self, real, session):
        self._real = real
        self._session = session

    def do_bench(self, fn, warmup=None, rep=None, grad_to_none=None, quantiles=None,
                 return_mode="mean", **kw):
        return self._session.time(fn, grad_to_none)

    def do_bench_cudagraph(self, fn, rep=None, grad_to_none=None, quantiles=None,
                           return_mode="mean", **kw):
        return self._session.time(fn, grad_to_none)

    def __getattr__(self, name):
        return getattr(self._real, name)


class _Namespace:
    def __init__(self, real, **attrs):
        self._real = real
        self.__dict__.update(attrs)

    def __getattr__(self, name):
        return getattr(self._real, name)


class _TritonView:
    """A view of the triton module for base.py alone: Triton's own testing module stays as it is
    (LibTuner's benchmarker imports do_bench_cudagraph from it, and its sweep must not be timed
    as a provider)."""

    def __init__(self, real, session):
        self._real = real
        testing = _Testing(getattr(real, "testing", None), session)
        self.testing = testing
        backends = getattr(real, "backends", None)
        ascend = getattr(backends, "ascend", None) if backends is not None else None
        npu = _Namespace(getattr(ascend, "testing", None),
                         do_bench_npu=lambda fn, *a, **k: session.time(fn))
        self.backends = _Namespace(backends, ascend=_Namespace(ascend, testing=npu))

    def __getattr__(self, name):
        return getattr(self._real, name)


def _item_path(item):
    path = getattr(item, "path", None)  # pytest 7 and later; fspath before
    return str(path if path is not None else item.fspath)


def _provider_name(role):
    return "torch" if role == BASELINE else "gems"


def _same(a, b):
    try:
        return bool((a == b).all())
    except Exception:
        return a is b


def _detail_json(detail):
    """FlagGems' shape detail as its record's JSON holds it (BenchmarkResult.to_json: a torch.Size
    is a list, a dtype its text), or its text when that is long or not JSON: {"shape_detail": ...},
    and where it holds an object (a generative benchmark's {"size", "dtype", "device"}) also
    "shape_detail_json", its JSON text in its own key order: FlagGems' --compare keys an input by
    str() of the object it reads back, so the order is part of the key, and the run log's JSON
    objects keep theirs sorted (docs/flaggems.md, "FlagGems' own record formats")."""
    try:
        text = json.dumps(detail, default=str, allow_nan=False)
    except (TypeError, ValueError):
        return {"shape_detail": _detail_text(detail)}
    if len(text) > 4000:
        return {"shape_detail": _detail_text(detail)}
    value = json.loads(text)
    out = {"shape_detail": value}
    if "{" in text:
        out["shape_detail_json"] = json.dumps(value, separators=(",", ":"))
    return out


def _detail_text(detail):
    if detail is None:
        return ""
    text = str(detail)
    return text if len(text) <= 4000 else text[:4000] + "..."


def _reason(report):
    """Why a test was skipped or failed: the guard's own reason (pytest's "Skipped: " dropped)."""
    longrepr = report.longrepr
    if hasattr(longrepr, "reprcrash") and longrepr.reprcrash is not None:
        text = longrepr.reprcrash.message
    elif isinstance(longrepr, tuple) and len(longrepr) == 3:
        text = str(longrepr[2])
    else:
        text = str(longrepr)
    return text[len("Skipped: "):] if report.skipped and text.startswith("Skipped: ") else text


def _say(text):
    """A message of the session on stderr, past pytest's capture."""
    out = sys.__stderr__ or sys.stderr
    print("caliber: flaggems: " + text, file=out, flush=True)


def _git_commit(root):
    """The checkout's commit: ROOT's own git repository only (not one it happens to sit in)."""
    try:
        out = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        lines = out.stdout.split()
        if out.returncode == 0 and len(lines) == 2 and \
                os.path.realpath(lines[0]) == os.path.realpath(root):
            return lines[1]
    except Exception:
        pass
    marker = os.path.join(root, "COMMIT")
    if os.path.isfile(marker):
        with open(marker) as f:
            return f.read().strip() or None
    return None


SOURCE_SUFFIXES = (".py", ".yaml", ".yml", ".json")  # code, and the configs it reads (tunings)


def _source_state(fg, root, commit):
    """What the imported flag_gems is, beyond its commit (an edited checkout, a tarball, two
    trees of one version): sha256 over its package's code and config files (each one's path
    relative to the package, then its content, in path order; files over 8 MiB or past 20000
    named but not read), their count, and whether ROOT's checkout has changes to tracked files
    (None where ROOT is no git checkout of its own; commit: _git_commit's answer for ROOT)."""
    pkg = os.path.dirname(os.path.abspath(getattr(fg, "__file__", "") or ""))
    h, files = hashlib.sha256(), 0
    if os.path.isdir(pkg):
        for d, dirs, names in os.walk(pkg):
            dirs[:] = sorted(x for x in dirs if x != "__pycache__")
            for name in sorted(names):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(d, name)
                rel = os.path.relpath(path, pkg)
                h.update(rel.encode(errors="replace") + b"\0")
                files += 1
                try:
                    if files <= 20000 and os.path.getsize(path) <= 8 << 20:
                        with open(path, "rb") as f:
                            h.update(f.read())
                except OSError:
                    h.update(b"\1unreadable")
                h.update(b"\0")
    dirty = None
    if commit and os.path.exists(os.path.join(root, ".git")):
        try:
            out = subprocess.run(["git", "-C", root, "status", "--porcelain",
                                  "--untracked-files=no"], capture_output=True, text=True,
                                 timeout=30)
            if out.returncode == 0:
                dirty = bool(out.stdout.strip())
        except Exception:
            pass
    return {"sha256": h.hexdigest() if files else None, "files": files, "dirty": dirty}


def _version_commit(fg):
    """FlagGems' development versions end in +<commit> (flag_gems.__version__)."""
    version = str(getattr(fg, "__version__", "") or "")
    return version.rsplit("+", 1)[1] if "+" in version else None


def _flagtree_version(triton):
    try:
        from importlib import metadata
        return metadata.version("flagtree")
    except Exception:
        pass
    return getattr(getattr(triton, "flagtune", None), "__version__", None)


# ---------------------------------------------------------------------------------------------
# Entry: the feeder the run driver calls, and `python3 -m caliber run --flaggems`.

_session = None


def _feed(handle, knobs_text, msg, cap):
    global _session
    try:
        knobs = json.loads(knobs_text.decode())
        session = Session(_Run(handle), knobs)
        _session = session
        try:  # a refusal of prepare's, after its temporary folder was made, leaves none
            session.prepare()
            sys.stdout.flush()
            code = pytest.main(session.pytest_args, plugins=[session])
        finally:
            if session.record_tmp:
                shutil.rmtree(session.record_tmp, ignore_errors=True)
        if session.opened is not None:  # LibTuner's totals for the footer (flaggems_tune.py)
            tune_hooks.finished(session.run)
        if session.refusal:
            _lib.write(msg, cap, session.refusal)
            return 2
        if session.planned:  # --dry-run: printed, nothing opened
            return 0
        if tune_hooks.in_shard():  # prepared its share; nothing opened, nothing measured
            return 0 if int(code) in (0, 1) else 2
        if session.opened is None and int(code) == 4 and knobs.get("node"):
            _lib.write(msg, cap, "--node (TEST_NODE): '%s': no such test under %s/benchmark" %
                       (knobs["node"], knobs["flaggems"]))
            return 2
        if session.opened is None:
            why = "; ".join(getattr(session, "collect_errors", [])[:1]) or \
                "pytest ended with exit code %s before any benchmark ran" % int(code)
            session.show_report()
            _lib.write(msg, cap, "--flaggems: '%s': %s" % (knobs["flaggems"], why.strip()))
            return 2
        if int(code) not in (0, 1):  # 1: a test failed, which its rows say already
            session.show_report()
            _lib.write(msg, cap, "pytest ended with exit code %s" % int(code))
            return 2
        return 0
    except FlagGemsError as e:
        _lib.write(msg, cap, str(e))
        return 2
    except BaseException as e:  # noqa: B902 - nothing may cross the C boundary
        _lib.write(msg, cap, "--flaggems: %s: %s" % (type(e).__name__, e))
        return 2


_FEED = FEED_FN(_feed)


def install():
    """Makes this process's `caliber run --flaggems` feed its cases from FlagGems' suite."""
    lib = _lib.lib()
    _declare(lib)
    lib.caliber_c_set_feeder(_FEED)
    # A FlagGems benchmark that hangs (a sweep that never ends, a wait on the device) can be asked
    # where it is: `kill -USR1 PID` prints every thread's Python stack to stderr (docs/flaggems.md).
    if hasattr(signal, "SIGUSR1"):
        try:
            faulthandler.register(signal.SIGUSR1, all_threads=True)
        except (RuntimeError, ValueError):  # no usable stderr, or not the main thread
            pass
