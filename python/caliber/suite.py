"""Python op suites: ops declared in a Python file, run by caliber's run driver into the same
run directories as `caliber run` (docs/python.md).

A suite is a Python file with a list OPS; each entry is a caliber.Op or a dict of its fields:

    name         the op's name (unique; not a built-in op's)                      required
    family       blas, pointwise, norm, ... (picks caliber's family shapes)       required
    dtypes       caliber dtype names: f32, f16, bf16, f64, i32, i64                required
    inputs       inputs(case) -> tuple of arguments for every provider            required
    baseline     fn, (name, fn) or {name: fn}: e.g. a torch op                     one of these
    candidate    fn, (name, fn) or {name: fn}: e.g. a Triton kernel                two at least
    reference    reference(*inputs) -> the exact answer (float64 where it can);
                 without it candidates are checked against the first baseline
    tolerance    (atol, rtol) or {dtype: (atol, rtol)}: every element within
                 atol + rtol * |ref|; without it a per-dtype gate on the norm-relative error
    shapes       [[...], ...]: the op's own shapes; without them caliber's shape file by
                 the op's name, else its family
    dim_names    names of the shape's dimensions (M, N, K): node ids read M4096-N4096-K4096
    prepare      prepare(provider_name, fn, inputs): before any timing (Triton autotunes here);
                 without it each provider runs once and the device synchronizes
    flops, bytes flops(case), bytes(case): for TFLOPS and GB/s
    bytes_needed bytes_needed(case): device memory a case needs (skipped beyond free memory)
    rng          True when the op draws random numbers (the capture RNG guard applies)
    autotune     {candidate name: Triton autotuner} (the @triton.autotune object the candidate
                 launches), or the autotuner alone when the op has one candidate: caliber's
                 tune cache keeps its choice (docs/python.md). A candidate that is itself an
                 autotuner needs no entry
    backends     the caliber backends to register for (default: cpu and cuda)
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import json
import math
import os
import re
import sys
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _autotune, _lib
from ._dtypes import torch_name

DTYPES = ("f32", "f16", "bf16", "f64", "i32", "i64", "c64")
_DEFAULT_BACKENDS = ("cpu", "cuda")
# Norm-relative error gates when no tolerance is given (include/caliber/check.hpp's spirit).
_NORM_GATE = {"f32": 1e-5, "f16": 1e-3, "bf16": 1e-2, "f64": 1e-12, "i32": 0.0, "i64": 0.0,
              "c64": 1e-5}
_FIELDS = ("name", "family", "dtypes", "inputs", "baseline", "candidate", "reference",
           "tolerance", "shapes", "dim_names", "prepare", "flops", "bytes", "bytes_needed", "rng",
           "backends", "description", "autotune")


Provider = Callable[..., Any]
ProviderSpec = Union[Provider, Tuple[str, Provider], Mapping[str, Provider]]
Tolerance = Tuple[float, float]
Prov = Tuple[str, Provider, str]  # (name, callable, role)


class SuiteError(ValueError):
    """Bad input in a suite: the message names the op and the field (exit 2)."""


@dataclass(kw_only=True)
class Op:
    """One op of a suite: caliber.Op(name=..., family=..., ...); the fields above.

    Every field defaults to None so that a missing required one is reported by validate() with
    the op's name and the field's, as a dict's would be; an unknown keyword is refused by load()
    the same way ("unknown field"). Field order and names are _FIELDS'."""

    name: Optional[str] = None
    family: Optional[str] = None
    dtypes: Optional[Sequence[str]] = None
    inputs: Optional[Callable[["Case"], Any]] = None
    baseline: Optional[ProviderSpec] = None
    candidate: Optional[ProviderSpec] = None
    reference: Optional[Callable[..., Any]] = None
    tolerance: Optional[Union[Tolerance, Dict[str, Tolerance]]] = None
    shapes: Optional[Sequence[Sequence[int]]] = None
    dim_names: Optional[Sequence[str]] = None
    prepare: Optional[Callable[[str, Callable[..., Any], Tuple[Any, ...]], Any]] = None
    flops: Optional[Callable[["Case"], float]] = None
    bytes: Optional[Callable[["Case"], float]] = None
    bytes_needed: Optional[Callable[["Case"], int]] = None
    rng: Optional[bool] = None
    backends: Optional[Sequence[str]] = None
    description: Optional[str] = None
    autotune: Any = None

    def fields(self) -> Dict[str, Any]:
        """The fields that were given (not None), as the dict form of the op."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) is not None}

    # The dict an Op used to be: op["name"], op.get("shapes") keep working.
    def __getitem__(self, key: str) -> Any:
        if key not in _FIELDS:
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        value = getattr(self, key, None) if key in _FIELDS else None
        return default if value is None else value

    def keys(self) -> List[str]:
        return list(self.fields())


class Case:
    """A case as the input maker sees it."""

    def __init__(self, d: Mapping[str, Any], host: bool, device_index: int,
                 device_type: str = "cuda") -> None:
        self.op = d["op"]
        self.dtype = d["dtype"]
        self.shape = list(d["shape"])
        self.dim_names = list(d.get("dim_names") or [])
        self.params = dict(d.get("params") or {})
        self.node = d["node"]
        self.host = host
        self.device = "cpu" if host else "%s:%d" % (device_type, device_index)

    @property
    def dims(self) -> Dict[str, int]:
        return dict(zip(self.dim_names, self.shape))

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def torch_dtype(self) -> Any:
        import torch
        return getattr(torch, torch_name(self.dtype))

    @property
    def numpy_dtype(self) -> Any:
        import numpy
        return {"f32": numpy.float32, "f16": numpy.float16, "f64": numpy.float64,
                "i32": numpy.int32, "i64": numpy.int64, "c64": numpy.complex64}[self.dtype]

    def __repr__(self) -> str:
        return "Case(%s)" % self.node


def _providers(op: Mapping[str, Any], field: str, role: str) -> List[Prov]:
    v = op.get(field)
    if v is None:
        return []
    if callable(v):
        return [(getattr(v, "__name__", field) if getattr(v, "__name__", "<lambda>") != "<lambda>"
                 else field, v, role)]
    if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str):
        items = [v]
    elif isinstance(v, dict):
        items = list(v.items())
    else:
        raise SuiteError("op '%s': field '%s' must be a callable, a (name, callable) pair or a "
                         "{name: callable} dict, not %s" % (op.get("name"), field,
                                                            type(v).__name__))
    out = []
    for name, fn in items:
        if not isinstance(name, str) or not name:
            raise SuiteError("op '%s': field '%s': a provider name must be a non-empty string"
                             % (op.get("name"), field))
        if not callable(fn):
            raise SuiteError("op '%s': field '%s': provider '%s' is not callable"
                             % (op.get("name"), field, name))
        out.append((name, fn, role))
    return out


def autotuners(op: Mapping[str, Any], provs: List[Prov]) -> Dict[int, Any]:
    """{provider index: Triton autotuner} of the op's candidates: those the field 'autotune'
    names, and candidates that are autotuners themselves. Raises SuiteError naming the field."""
    who = "op '%s': field 'autotune'" % op.get("name")
    cands = [p[0] for p in provs if p[2] == "candidate"]
    v = op.get("autotune")
    named = {}
    if isinstance(v, dict):
        named = dict(v)
    elif v is not None:
        if len(cands) != 1:
            raise SuiteError("%s: an autotuner alone needs an op with one candidate (this one "
                             "has %d: %s); use {candidate name: autotuner}"
                             % (who, len(cands), ", ".join(cands) or "none"))
        named = {cands[0]: v}
    out = {}
    for name, obj in named.items():
        if name not in cands:
            raise SuiteError("%s: '%s' is not one of the op's candidates (%s); caliber tunes "
                             "candidates only" % (who, name, ", ".join(cands) or "none"))
        if _autotune.find(obj) is None:
            raise SuiteError("%s: '%s' is a %s, not a Triton autotuner (what @triton.autotune "
                             "makes: configs, a cache dict, keys)" % (who, name,
                                                                     type(obj).__name__))
        out[[p[0] for p in provs].index(name)] = obj
    for i, (name, fn, role) in enumerate(provs):
        if role == "candidate" and i not in out and _autotune.find(fn) is not None:
            out[i] = fn
    return out


def validate(op: Any, index: int) -> List[Prov]:
    """The op's fields checked; returns its providers. Raises SuiteError naming op and field."""
    if not isinstance(op, dict):
        raise SuiteError("OPS[%d] is a %s, not a caliber.Op or dict" % (index, type(op).__name__))
    name = op.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SuiteError("OPS[%d]: field 'name' is missing or not a non-empty string" % index)
    who = "op '%s'" % name
    unknown = sorted(set(op) - set(_FIELDS))
    if unknown:
        raise SuiteError("%s: unknown field '%s'; fields: %s" % (who, unknown[0],
                                                                 ", ".join(_FIELDS)))
    if not isinstance(op.get("family"), str) or not op["family"]:
        raise SuiteError("%s: field 'family' is missing or not a non-empty string" % who)
    dtypes = op.get("dtypes")
    if not isinstance(dtypes, (list, tuple)) or not dtypes:
        raise SuiteError("%s: field 'dtypes' is missing or not a non-empty list" % who)
    for d in dtypes:
        if d not in DTYPES:
            raise SuiteError("%s: field 'dtypes': '%s' is not a dtype; allowed: %s"
                             % (who, d, ", ".join(DTYPES)))
    if not callable(op.get("inputs")):
        raise SuiteError("%s: field 'inputs' is missing or not callable (inputs(case) -> tuple)"
                         % who)
    provs = _providers(op, "baseline", "baseline") + _providers(op, "candidate", "candidate")
    if not provs:
        raise SuiteError("%s: field 'baseline' or 'candidate' is missing: an op needs a provider"
                         % who)
    names = [p[0] for p in provs]
    if len(set(names)) != len(names):
        raise SuiteError("%s: field 'candidate': provider names repeat (%s)" % (who,
                                                                                 ", ".join(names)))
    for f in ("reference", "prepare", "flops", "bytes", "bytes_needed"):
        if op.get(f) is not None and not callable(op[f]):
            raise SuiteError("%s: field '%s' is not callable" % (who, f))
    shapes = op.get("shapes")
    if shapes is not None:
        ok = isinstance(shapes, (list, tuple)) and shapes and all(
            isinstance(s, (list, tuple)) and s and all(isinstance(x, int) and x > 0 for x in s)
            for s in shapes)
        if not ok:
            raise SuiteError("%s: field 'shapes' must be a non-empty list of lists of positive "
                             "integers" % who)
    tol = op.get("tolerance")
    if tol is not None:
        pairs = tol.values() if isinstance(tol, dict) else [tol]
        for t in pairs:
            if not (isinstance(t, (list, tuple)) and len(t) == 2 and
                    all(isinstance(x, (int, float)) and x >= 0 for x in t)):
                raise SuiteError("%s: field 'tolerance' must be (atol, rtol) or {dtype: (atol, "
                                 "rtol)} with non-negative numbers" % who)
    backends = op.get("backends", _DEFAULT_BACKENDS)
    if not isinstance(backends, (list, tuple)) or not backends or not all(
            isinstance(b, str) and b for b in backends):
        raise SuiteError("%s: field 'backends' must be a non-empty list of backend names" % who)
    autotuners(op, provs)
    return provs


def load(path: str) -> List[Tuple[Dict[str, Any], List[Prov]]]:
    """Imports the suite file; returns its OPS validated, as (op, providers) pairs."""
    if os.path.isdir(path):
        raise SuiteError("suite '%s' is a directory, not a file; allowed: a Python suite file "
                         "(.py)" % path)
    if not os.path.exists(path):
        raise SuiteError("suite '%s' does not exist" % path)
    if not os.path.isfile(path):
        raise SuiteError("suite '%s' is not a regular file; allowed: a Python suite file (.py)"
                         % path)
    name = "caliber_suite_" + os.path.splitext(os.path.basename(path))[0].replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SuiteError("suite '%s' is not a Python file" % path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(module)
    except TypeError as e:
        unknown = re.search(r"Op\.__init__\(\) got an unexpected keyword argument '(\w+)'",
                            str(e))
        if unknown is None:
            raise SuiteError("suite '%s' does not import: TypeError: %s (in %s)"
                             % (path, e, sys.executable))
        raise SuiteError("suite '%s': caliber.Op: unknown field '%s'; fields: %s"
                         % (path, unknown.group(1), ", ".join(_FIELDS)))
    except Exception as e:
        tb = traceback.format_exception_only(type(e), e)[-1].strip()
        # The interpreter matters (torch or triton installed in another one): name it, and the
        # variable that picks another.
        raise SuiteError("suite '%s' does not import: %s (in %s; CALIBER_PYTHON names another "
                         "interpreter)" % (path, tb, sys.executable))
    finally:
        sys.path.pop(0)
    ops = getattr(module, "OPS", None)
    if not isinstance(ops, (list, tuple)) or not ops:
        raise SuiteError("suite '%s': field 'OPS' is missing or empty (a list of caliber.Op)"
                         % path)
    out = []
    seen = set()
    for i, op in enumerate(ops):
        if isinstance(op, Op):
            op = op.fields()
        provs = validate(op, i)
        if op["name"] in seen:
            raise SuiteError("op '%s': field 'name' is used twice in the suite" % op["name"])
        seen.add(op["name"])
        out.append((op, provs))
    return out


# ---------------------------------------------------------------------------------------------
# Comparison of an output with the reference.

def _flat(x: Any) -> List[Any]:
    if isinstance(x, (list, tuple)):
        out = []
        for v in x:
            out.extend(_flat(v))
        return out
    return [complex(x) if isinstance(x, complex) else float(x)]


def compare(out: Any, ref: Any, dtype: str,
            tolerance: Any) -> Tuple[bool, float, float, str]:
    """(passed, max_abs_err, rel_err, detail) of out against ref."""
    tol = tolerance.get(dtype) if isinstance(tolerance, dict) else tolerance
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(out, torch.Tensor):
        r = ref if isinstance(ref, torch.Tensor) else torch.as_tensor(ref)
        o = out.detach().to(torch.float64)
        r = r.detach().to(device=o.device, dtype=torch.float64)
        if o.shape != r.shape:
            return False, 0.0, 0.0, "shape %s differs from the reference's %s" % (
                tuple(o.shape), tuple(r.shape))
        d = (o - r).abs()
        nonfinite = int((~torch.isfinite(o) & torch.isfinite(r)).sum().item())
        max_abs = float(d.max().item()) if d.numel() else 0.0
        rnorm = float(torch.linalg.vector_norm(r).item())
        rel = float(torch.linalg.vector_norm(o - r).item()) / rnorm if rnorm > 0 else max_abs
        bad = 0
        if tol is not None:
            bad = int((d > tol[0] + tol[1] * r.abs()).sum().item())
        n = o.numel()
    else:
        try:
            import numpy
            o = numpy.asarray(out, dtype=numpy.float64).ravel()
            r = numpy.asarray(ref, dtype=numpy.float64).ravel()
            if o.shape != r.shape:
                return False, 0.0, 0.0, "size %d differs from the reference's %d" % (o.size,
                                                                                      r.size)
            d = numpy.abs(o - r)
            nonfinite = int(numpy.sum(~numpy.isfinite(o) & numpy.isfinite(r)))
            max_abs = float(d.max()) if d.size else 0.0
            rnorm = float(numpy.linalg.norm(r))
            rel = float(numpy.linalg.norm(o - r)) / rnorm if rnorm > 0 else max_abs
            bad = int(numpy.sum(d > tol[0] + tol[1] * numpy.abs(r))) if tol is not None else 0
            n = o.size
        except ImportError:
            o, r = _flat(out), _flat(ref)
            if len(o) != len(r):
                return False, 0.0, 0.0, "size %d differs from the reference's %d" % (len(o),
                                                                                      len(r))
            d = [abs(a - b) for a, b in zip(o, r)]
            nonfinite = sum(1 for a, b in zip(o, r) if not math.isfinite(a) and math.isfinite(b))
            max_abs = max(d) if d else 0.0
            rnorm = math.sqrt(sum(b * b for b in r))
            rel = math.sqrt(sum(x * x for x in d)) / rnorm if rnorm > 0 else max_abs
            bad = sum(1 for x, b in zip(d, r) if x > tol[0] + tol[1] * abs(b)) if tol else 0
            n = len(o)
    if tol is not None:
        passed = nonfinite == 0 and bad == 0 and math.isfinite(max_abs)
        how = "atol=%g rtol=%g" % (tol[0], tol[1])
    else:
        gate = _NORM_GATE.get(dtype, 1e-5)
        passed = nonfinite == 0 and math.isfinite(rel) and rel <= gate
        how = "norm gate %g" % gate
    detail = "%d elements vs reference: max_abs_err %.3g, rel_err %.3g (%s)" % (n, max_abs, rel,
                                                                                   how)
    if nonfinite:
        detail += "; %d non-finite where the reference is finite" % nonfinite
    if bad:
        detail += "; %d elements out of tolerance" % bad
    return passed, max_abs, rel, detail


# ---------------------------------------------------------------------------------------------
# The workloads the run driver asks for, through the C ABI.

class _Workload:
    def __init__(self, op: Dict[str, Any], provs: List[Prov], case: Case,
                 args: Tuple[Any, ...]) -> None:
        self.op = op
        self.provs = provs
        self.case = case
        self.args = args
        self.ref: Any = None


class Registry:
    """The suite's ops as the C++ run driver sees them: one call and one launch trampoline."""

    def __init__(self) -> None:
        self.ops: List[Tuple[Dict[str, Any], List[Prov]]] = []
        self.tuners: List[Dict[int, Any]] = []  # per op: {provider index: Triton autotuner}
        self.workloads: Dict[int, _Workload] = {}
        self.next_id = 1
        self.call_cb = _lib.CALL_FN(self._call)
        self.launch_cb = _lib.LAUNCH_FN(self._launch)

    def _err(self, op: Mapping[str, Any], what: str, e: BaseException) -> Dict[str, Any]:
        from .bench import _native_code
        return {"status": "error", "native_code": _native_code(e),
                "message": "op '%s': %s raised %s: %s" % (op["name"], what, type(e).__name__, e)}

    def _call(self, target: int, request: bytes, reply: Any, cap: int) -> int:
        req: Dict[str, Any] = {}
        try:
            req = json.loads(request.decode())
            answer = self._answer(target, req)
        except BaseException as e:  # noqa: B902 - nothing may cross the C boundary
            answer = {"status": "error", "message": "%s: %s" % (type(e).__name__, e)}
        _lib.write(reply, cap, self._reply_json(target, req, answer))
        return 0

    def _reply_json(self, target: int, req: Dict[str, Any], answer: Dict[str, Any]) -> str:
        """The answer as JSON; one holding a NaN or an infinity (which JSON cannot carry) becomes
        an error that names the op, the call, the provider and the value."""
        found = _lib.nonfinite(answer)
        if found is None:
            return json.dumps(answer, allow_nan=False)
        who = "op '%s'" % self.ops[target][0]["name"] if 0 <= target < len(self.ops) else "op ?"
        if "provider" in req and 0 <= target < len(self.ops):
            provs = self.ops[target][1]
            p = int(req["provider"])
            if 0 <= p < len(provs):
                who += ": provider '%s'" % provs[p][0]
        return json.dumps({"status": "error", "message": "%s: %s gave %s=%r, not a finite number" % (
            who, req.get("call", "a call"), found[0], found[1])})

    def _answer(self, target: int, req: Dict[str, Any]) -> Dict[str, Any]:
        op, provs = self.ops[target]
        what = req.get("call")
        if what == "bytes_needed":
            if op.get("bytes_needed") is None:
                return {"status": "ok", "bytes": 0}
            case = Case(req["case"], True, 0)
            try:
                return {"status": "ok", "bytes": int(op["bytes_needed"](case))}
            except Exception as e:
                return self._err(op, "field 'bytes_needed'", e)
        if what == "setup":
            host = bool(req.get("host"))
            index, kind = 0, "cpu"
            if not host:
                from . import _torch
                backend = _torch.auto_backend()  # the request names none: torch's device
                api = _torch.device_api(backend)
                index, kind = api.current_device(), api.name
                api.set_stream(_torch.external_stream(req["stream"], index, backend))
            case = Case(req["case"], host, index, kind)
            try:
                args = op["inputs"](case)
            except Exception as e:
                return self._err(op, "field 'inputs'", e)
            if not isinstance(args, tuple):
                args = (args,)
            w = _Workload(op, provs, case, args)
            flops = bytes_ = 0.0
            try:
                if op.get("flops") is not None:
                    flops = float(op["flops"](case))
                if op.get("bytes") is not None:
                    bytes_ = float(op["bytes"](case))
                else:
                    bytes_ = float(sum(getattr(a, "nbytes", 0) or 0 for a in args))
            except Exception as e:
                return self._err(op, "field 'flops' or 'bytes'", e)
            for field, value in (("flops", flops), ("bytes", bytes_)):
                if not math.isfinite(value) or value < 0:
                    return {"status": "error", "message": "op '%s': field '%s' gave %r; allowed: a "
                            "finite number, 0 or more" % (op["name"], field, value)}
            wid = self.next_id
            self.next_id += 1
            self.workloads[wid] = w
            return {"status": "ok", "workload": wid, "flops": flops, "bytes": bytes_}
        wid = int(req.get("workload") or 0)
        w = self.workloads.get(wid)  # type: ignore[assignment]
        if what == "release":
            self.workloads.pop(wid, None)
            return {"status": "ok"}
        if w is None:
            return {"status": "error", "message": "no such workload"}
        p = int(req.get("provider", 0))
        pname, fn, _role = provs[p]
        if what == "prepare":
            tuner = self.tuners[target].get(p)
            text = req.get("config") or ""
            seed = None
            if tuner is not None and text and not req.get("sweep"):
                seed = _autotune.seed_for(tuner, text)
                if seed is None:
                    return {"status": "rejected", "message":
                            "op '%s': provider '%s': config %s is not among its autotuner's "
                            "configs" % (op["name"], pname, text)}
            tuned = tuner is not None and (seed is not None or req.get("sweep"))
            prep = _autotune.Prepared(tuner, seed) if tuned else None
            try:
                with prep or contextlib.nullcontext():
                    if op.get("prepare") is not None:
                        op["prepare"](pname, fn, w.args)
                    else:
                        fn(*w.args)  # compiles and autotunes (Triton) here, never under a timer
                    _sync(w.case)
            except Exception as e:
                return self._err(op, "prepare of provider '%s'" % pname, e)
            if req.get("sweep"):
                return {"status": "ok", "tune": prep.result() if prep is not None else {}}
            return {"status": "ok"}
        if what == "check":
            try:
                out = fn(*w.args)
            except Exception as e:
                return self._err(op, "provider '%s'" % pname, e)
            try:
                if w.ref is None:
                    if op.get("reference") is not None:
                        w.ref = op["reference"](*w.args)
                    else:
                        base = [q for q in provs if q[2] == "baseline"]
                        if not base:
                            return {"status": "ok", "passed": True, "detail":
                                    "no reference and no baseline: not checked"}
                        w.ref = base[0][1](*w.args)
                passed, max_abs, rel, detail = compare(out, w.ref, w.case.dtype,
                                                       op.get("tolerance"))
            except Exception as e:
                return self._err(op, "field 'reference' (checking '%s')" % pname, e)
            # A provider's NaN output fails its check; its errors then are no numbers (null).
            return {"status": "ok", "passed": bool(passed),
                    "max_abs_err": max_abs if math.isfinite(max_abs) else None,
                    "rel_err": rel if math.isfinite(rel) else None, "detail": detail}
        return {"status": "error", "message": "unknown call '%s'" % what}

    def _launch(self, target: int, provider: int, code_ptr: Any, msg: Any, cap: int) -> int:
        w = self.workloads.get(target)
        if w is None:
            _lib.write(msg, cap, "no such workload %d" % target)
            return 2
        try:
            w.provs[provider][1](*w.args)
            return 0
        except BaseException as e:  # noqa: B902
            from .bench import launch_failed
            return launch_failed(e, "op '%s': provider '%s' raised %s: %s" % (
                w.op["name"], w.provs[provider][0], type(e).__name__, e), code_ptr, msg, cap)

    def register(self, ops: List[Tuple[Dict[str, Any], List[Prov]]], source: str) -> None:
        lib = _lib.lib()
        mark = lib.caliber_c_ops_mark()
        err = _lib.buffer(4096)
        for op, provs in ops:
            index = len(self.ops)
            self.ops.append((op, provs))
            tuners = autotuners(op, provs)
            self.tuners.append(tuners)
            providers = []
            for i, (n, _fn, r) in enumerate(provs):
                entry: Dict[str, Any] = {"name": n, "role": r}
                if i in tuners:
                    # caliber's tuner keeps Triton's choice in its cache (docs/python.md)
                    entry.update(configs=_autotune.configs(tuners[i]), swept_by="triton",
                                 version=_autotune.kernel_version(tuners[i]))
                providers.append(entry)
            info = {"name": op["name"], "family": op["family"], "dtypes": list(op["dtypes"]),
                    "dim_names": list(op.get("dim_names") or []), "rng": bool(op.get("rng")),
                    "description": op.get("description", ""), "providers": providers}
            if op.get("shapes") is not None:
                info["shapes"] = [list(s) for s in op["shapes"]]
            for backend in op.get("backends", _DEFAULT_BACKENDS):
                rc = lib.caliber_c_register_op(backend.encode(), json.dumps(info).encode(),
                                               self.call_cb, self.launch_cb, index, err, len(err))
                if rc != 0:
                    raise SuiteError(_lib.text(err))
        if lib.caliber_c_ops_adopt(mark, source.encode(), err, len(err)) != 0:
            raise SuiteError(_lib.text(err))


def _sync(case: Case) -> None:
    if not case.host:
        from . import _torch
        _torch.device_api(_torch.auto_backend()).synchronize()


_registry: Optional[Registry] = None


def register_suite(path: str) -> List[str]:
    """Loads the suite and registers its ops with caliber; returns their names."""
    global _registry
    ops = load(path)
    if _registry is None:
        _registry = Registry()
    _registry.register(ops, "python:" + os.path.abspath(path))
    return [op["name"] for op, _ in ops]


def identity_extra(path: Union[str, Sequence[str]]) -> None:
    """run_identity.json's "python" entry; `path` is the suite (or a list of suites)."""
    from . import _torch
    suite: Union[str, List[str]] = [os.path.abspath(p) for p in path] \
        if not isinstance(path, str) else os.path.abspath(path)
    info: Dict[str, Any] = {"version": sys.version.split()[0], "executable": sys.executable, "suite": suite}
    info.update(_torch.versions())
    _lib.lib().caliber_c_identity_extra(b"python", json.dumps(info).encode())
