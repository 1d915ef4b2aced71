"""The C ABI library (libcaliber_py.so, src/capi/caliber_c.h) loaded with ctypes.

ctypes, not a compiled extension module: one library serves every Python 3 (CI runs Debian's
3.11, the H200 machine 3.12), and the library is the same C++ the caliber executable is built
from, so a Python process times with the same timers and writes the same run directories.
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

LAUNCH_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, ctypes.c_int64,
                             ctypes.POINTER(ctypes.c_int64), ctypes.c_void_p, ctypes.c_int64)
CALL_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, ctypes.c_char_p, ctypes.c_void_p,
                           ctypes.c_int64)
CAPTURE_FN = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                              ctypes.POINTER(ctypes.c_int64), ctypes.c_void_p, ctypes.c_int64)

ABI_VERSION = 1
REPLY_BYTES = 1 << 22  # a measurement with every sample (return_mode="all") fits

_lib: Optional[ctypes.CDLL] = None


class CaliberError(RuntimeError):
    """A measurement that failed, or caliber refusing its input."""


def where(name: str) -> Optional[str]:
    """A path CMake recorded beside the package (_where.py: EXE, SHAPES_DIR), for a copy of the
    package that pip installed away from its build tree or prefix; None without one."""
    try:
        from . import _where  # type: ignore[attr-defined]
    except ImportError:
        return None
    value = getattr(_where, name, None)
    return value if isinstance(value, str) and value else None


def library_path() -> str:
    """CALIBER_PY_LIB, else libcaliber_py.so beside this file (build tree and install alike)."""
    env = os.environ.get("CALIBER_PY_LIB")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "libcaliber_py.so")


def lib() -> ctypes.CDLL:
    """The loaded library, loaded once. torch, when installed, is imported first, so that the
    CUDA runtime its libraries load is the one this library then shares."""
    global _lib
    if _lib is not None:
        return _lib
    if "torch" not in sys.modules and os.environ.get("CALIBER_NO_TORCH") != "1":
        try:
            import importlib.util
            if importlib.util.find_spec("torch") is not None:
                import torch  # noqa: F401
        except Exception:  # a broken torch install must not stop host (cpu) timing
            pass
    if "CALIBER_SHAPES_DIR" not in os.environ:
        # an installed package: <prefix>/lib/caliber/python/caliber -> <prefix>/share/caliber/shapes
        # (a build tree's library knows its source tree's shapes/ already)
        here = os.path.dirname(os.path.abspath(__file__))
        shapes = os.path.normpath(os.path.join(here, "..", "..", "..", "..", "share", "caliber",
                                               "shapes"))
        if not os.path.isdir(shapes):
            shapes = where("SHAPES_DIR") or ""  # a copy pip installed elsewhere (a venv)
        if os.path.isdir(shapes):
            os.environ["CALIBER_SHAPES_DIR"] = shapes
    path = library_path()
    if not os.path.exists(path):
        raise CaliberError(
            "caliber's library is not at %s: build the tree (cmake --build --preset cpu) and "
            "put <build>/python on PYTHONPATH, or set CALIBER_PY_LIB" % path)
    handle = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    handle.caliber_c_abi_version.restype = ctypes.c_int
    if handle.caliber_c_abi_version() != ABI_VERSION:
        raise CaliberError("%s speaks C ABI %d, this package %d: rebuild" %
                           (path, handle.caliber_c_abi_version(), ABI_VERSION))
    handle.caliber_c_cli.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    handle.caliber_c_cli.restype = ctypes.c_int
    handle.caliber_c_device_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p,
                                             ctypes.c_int64]
    handle.caliber_c_device_open.restype = ctypes.c_int64
    handle.caliber_c_measure.argtypes = [ctypes.c_int64, ctypes.c_char_p, LAUNCH_FN,
                                         ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64]
    handle.caliber_c_measure.restype = ctypes.c_int
    handle.caliber_c_set_capture_hooks.argtypes = [CAPTURE_FN]
    handle.caliber_c_set_capture_hooks.restype = None
    handle.caliber_c_register_op.argtypes = [ctypes.c_char_p, ctypes.c_char_p, CALL_FN, LAUNCH_FN,
                                             ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64]
    handle.caliber_c_register_op.restype = ctypes.c_int
    handle.caliber_c_ops_mark.restype = ctypes.c_int64
    handle.caliber_c_ops_adopt.argtypes = [ctypes.c_int64, ctypes.c_char_p, ctypes.c_void_p,
                                           ctypes.c_int64]
    handle.caliber_c_ops_adopt.restype = ctypes.c_int
    handle.caliber_c_identity_extra.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    handle.caliber_c_identity_extra.restype = ctypes.c_int
    handle.caliber_c_markers.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    handle.caliber_c_markers.restype = ctypes.c_int
    handle.caliber_c_settings.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    handle.caliber_c_settings.restype = ctypes.c_int
    handle.caliber_c_child_env.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p,
                                           ctypes.c_int64]
    handle.caliber_c_child_env.restype = ctypes.c_int
    handle.caliber_c_compat_rules.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64]
    handle.caliber_c_compat_rules.restype = ctypes.c_int
    _lib = handle
    return handle


def buffer(size: int = REPLY_BYTES) -> Any:
    return ctypes.create_string_buffer(size)


def text(buf: Any) -> str:
    return buf.value.decode("utf-8", "replace")


def write(ptr: Any, cap: int, message: str) -> None:
    """Writes `message` (cut to cap - 1 bytes) NUL-terminated at a callback's buffer."""
    if not ptr or cap <= 0:
        return
    data = message.encode("utf-8", "replace")[:cap - 1] + b"\0"
    ctypes.memmove(ptr, data, len(data))


def nonfinite(obj: Any, path: str = "") -> Optional[Tuple[str, float]]:
    """The first NaN or infinity in `obj` (nested dicts, lists and tuples) and where: ("flops",
    nan), ("quantiles[1]", inf); None when there is none."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return path, obj
    if isinstance(obj, dict):
        items: Any = ((("%s.%s" % (path, k)) if path else str(k), v) for k, v in obj.items())
    elif isinstance(obj, (list, tuple)):
        items = (("%s[%d]" % (path, i), v) for i, v in enumerate(obj))
    else:
        return None
    for where, v in items:
        found = nonfinite(v, where)
        if found is not None:
            return found
    return None


def dumps(obj: Any, who: str) -> str:
    """JSON for the library. JSON has no NaN or Infinity (json.dumps would write the bare words,
    which no JSON reader takes): a value that is not a finite number is refused, naming `who`,
    the key and the value."""
    found = nonfinite(obj)
    if found is not None:
        raise ValueError("%s: %s=%r is not allowed (a finite number)" % (who, found[0], found[1]))
    return json.dumps(obj, allow_nan=False)


def markers() -> Dict[str, Any]:
    """The marker spellings of run.log (src/records/markers.hpp), from the library."""
    buf = buffer(4096)
    lib().caliber_c_markers(buf, len(buf))
    return json.loads(text(buf))


_settings: Optional[Dict[str, Any]] = None


def settings() -> Dict[str, Any]:
    """The allowed words and the defaults of a measurement's options, from the library's knob
    table (caliber_c_settings): {"words": {"timer": [...], ...}, "defaults": {...}}."""
    global _settings
    if _settings is None:
        buf = buffer(8192)
        if lib().caliber_c_settings(buf, len(buf)) != 0:
            raise CaliberError("caliber: the library's settings did not fit the reply buffer")
        _settings = json.loads(text(buf))
    return _settings


def child_env(backend: str, index: int) -> Dict[str, str]:
    """The variables that make device `index` of `backend` (as this process sees it) a child's
    only device, pinned by its physical id (backend.child_env in the library)."""
    buf = buffer(4096)
    rc = lib().caliber_c_child_env(backend.encode(), int(index), buf, len(buf))
    reply = json.loads(text(buf))
    if rc != 0:
        raise CaliberError("--devices: %s" % reply.get("error"))
    return reply


def compat_rules(backend: str) -> List[Dict[str, str]]:
    """The backend's compat rules (backend.compat_rules in the library): [{op, reason, why}]."""
    buf = buffer(1 << 16)
    rc = lib().caliber_c_compat_rules(backend.encode(), buf, len(buf))
    reply = json.loads(text(buf))
    if rc != 0:
        raise CaliberError("compat rules of %s: %s" % (backend, reply.get("error")))
    return reply


def cli(args: Sequence[str]) -> int:
    """Runs the caliber CLI in this process; returns its exit code."""
    argv = [b"caliber"] + [a.encode() for a in args]
    arr = (ctypes.c_char_p * (len(argv) + 1))(*argv, None)
    sys.stdout.flush()
    sys.stderr.flush()
    return lib().caliber_c_cli(len(argv), arr)
