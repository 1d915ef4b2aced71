"""Stand-in flag_gems: use_gems, the vendor, and gems ops that cost three times torch's."""

import os
import sys
import time

import torch

# FlagGems' own import (torch, Triton, its op registry) took 4-6 s on the H200: STANDIN_IMPORT_S
# seconds stand for it, and STANDIN_IMPORT_LOG gets a line per import (a batch's children count).
if os.environ.get("STANDIN_IMPORT_LOG"):
    with open(os.environ["STANDIN_IMPORT_LOG"], "a") as _f:
        _f.write("%d\n" % os.getpid())
# STANDIN_CACHE_LOG gets a line per import: who imports (caliber's process, or FlagGems' own
# pytest), and the cache folders Triton and FlagGems would use there.
if os.environ.get("STANDIN_CACHE_LOG"):
    import json as _json
    with open(os.environ["STANDIN_CACHE_LOG"], "a") as _f:
        _f.write(_json.dumps({"side": "caliber" if "caliber" in sys.modules else "flaggems",
                              "argv0": sys.argv[0] if sys.argv else "",
                              **{k: os.environ.get(k) for k in (
                                  "TRITON_CACHE_DIR", "FLAGGEMS_CACHE_DIR", "FLAGGEMS_DB_URL")}})
                 + "\n")
time.sleep(float(os.environ.get("STANDIN_IMPORT_S", "0")))
# STANDIN_SHARD_IMPORT_S: the same, in a parallel warmup's shards only (they run with --tune-shard).
if any(a == "--tune-shard" or a.startswith("--tune-shard=") for a in sys.argv):
    time.sleep(float(os.environ.get("STANDIN_SHARD_IMPORT_S", "0")))

if os.environ.get("STANDIN_BREAK_IMPORT"):
    import sqlalchemy_standin_missing  # noqa: F401 - fails, as FlagGems does without SQLAlchemy

__version__ = "0.0.0+standin"
# FlagGems' device_finder: GEMS_VENDOR first, else what it detects on the host
# (STANDIN_DETECT_VENDOR stands for that, default nvidia).
vendor_name = os.environ.get("STANDIN_FORCE_VENDOR") or os.environ.get("GEMS_VENDOR") or \
    os.environ.get("STANDIN_DETECT_VENDOR") or "nvidia"
device = "musa" if vendor_name == "mthreads" else "cuda"


class _Runtime:
    torch_backend_device = torch.backends.cuda
    torch_device_fn = torch.cuda


runtime = _Runtime()


def _gems(name):
    def op(a, b=None, **kwargs):
        if name == "add" and os.environ.get("STANDIN_ADD_RAISES_AT") == str(a.numel()):
            raise ValueError("stand-in gems add fails on %d elements" % a.numel())
        # STANDIN_GEMS_FACTOR: gems' work against torch's (default 3), a switch to A/B.
        return torch._compute(name, a, b, factor=int(os.environ.get("STANDIN_GEMS_FACTOR", "3")))
    return op


_OPS = {name: _gems(name) for name in ("add", "mm", "softmax", "fft")}
# mm goes through a LibTuner-tuned kernel (utils/tuned.py, utils/libentry.py), as FlagGems' does.
from .utils import tuned as _tuned  # noqa: E402

_OPS["mm"] = _tuned.mm
_OPS["softmax"] = _tuned.softmax  # plain @triton.autotune, as FlagGems' softmax


def add(a, b, alpha=1):
    return _OPS["add"](a, b)


def fft(x):
    return _OPS["fft"](x)


def linear_backward(input, grad_output, weight, output_mask):
    """FlagGems' own; its benchmark times it on both sides (no native op to compare with)."""
    return torch._compute("linear_backward", grad_output)


def _convert_weight_to_int4pack(w, inner_k_tiles):
    """FlagGems' takes int32 [n, k] (one int4 value an element), not aten's uint8 [n, k/2].
    STANDIN_CONVERT_RAISES=N: it fails on a weight of N rows."""
    if os.environ.get("STANDIN_CONVERT_RAISES") == str(w.shape[0]):
        raise ValueError("stand-in gems int4pack fails on %d rows" % w.shape[0])
    return torch._compute("int4pack", w, factor=3)


class use_gems:
    """Inside it torch's ops are gems' (FlagGems registers aten overrides)."""

    def __init__(self, exclude=None, include=None):
        self.exclude = exclude or []

    def __enter__(self):
        self.saved = dict(torch._gems_ops)
        torch._gems_ops.update({k: v for k, v in _OPS.items() if k not in self.exclude})

    def __exit__(self, *exc):
        torch._gems_ops.clear()
        torch._gems_ops.update(self.saved)
