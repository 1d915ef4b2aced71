"""torch glue for caliber on a CUDA device (docs/python.md).

- Launches go to the stream caliber times: torch's current stream is set to
  torch.cuda.ExternalStream over caliber's stream while caliber runs Python code.
- Graph capture goes through torch's own graph API and memory pool (torch.cuda.CUDAGraph
  capture_begin / capture_end / replay), never a raw stream capture: the caching allocator then
  knows that memory allocated under capture belongs to the graph's private pool, and the graph's
  generator bookkeeping stays torch's. caliber's C++ timer drives the capture through hooks
  (caliber_c_set_capture_hooks) and puts its own event and L2-flush nodes into the same capture.
- RNG guard: torch's default CUDA generator state is saved when a capture begins and restored
  when its graph is released (or the capture aborted), so that capturing and replaying torch.rand
  leaves the state callers see unchanged.
- Errors: a torch.AcceleratorError carries the CUDA error code; other exceptions (Triton's
  launcher raises RuntimeError) are read for the runtime's error text, so the C++ side can
  classify them (refused capture, fatal sticky error) as it does its own.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Dict, Iterator

from . import _lib

try:
    import torch
except Exception:  # pragma: no cover - torch is optional
    torch = None

# CUDA runtime error texts (cudaGetErrorString) and their codes, for exceptions that carry only
# the text (Triton's launcher, older torch). The codes are the runtime's own numbers, which the
# cuda backend classifies (src/backends/cuda/cuda_common.hpp).
_CUDA_TEXTS = (
    ("operation not permitted when stream is capturing", 900),
    ("operation failed due to a previous error during capture", 901),
    ("operation would make the legacy stream depend on a capturing blocking stream", 906),
    ("an illegal memory access was encountered", 700),
    ("device-side assert triggered", 710),
    ("an illegal instruction was encountered", 715),
    ("misaligned address", 716),
    ("unspecified launch failure", 719),
)


def native_code(exc: BaseException) -> int:
    """The CUDA error code an exception stands for, 0 when it is not a runtime error."""
    code = getattr(exc, "error_code", None)
    if isinstance(code, int) and code > 0:
        return code
    text = str(exc)
    for needle, c in _CUDA_TEXTS:
        if needle in text:
            return c
    return 0


def available() -> bool:
    return torch is not None and torch.cuda.is_available()


_STUCK = "Offset increment outside graph capture"


def _fresh_generator_state(state: Any) -> None:
    """Gives the current device's default generator a new state object holding `state` (its seed
    and offset) that no graph has registered, so that it is not capturing."""
    idx = torch.cuda.current_device()
    gen = torch.cuda.default_generators[idx]
    fresh = torch.Generator(device=torch.device("cuda", idx))
    fresh.set_state(state)
    gen.graphsafe_set_state(fresh.graphsafe_get_state())


def heal_generator(where: str) -> bool:
    """After a capture ended, was aborted or its graph released: the default CUDA generator must
    draw outside capture again. A capture torch did not close with its own epilogue (an aborted
    one, or one the timer's hooks ended on another path) leaves the generator's state marked as
    capturing, and every later torch.rand/randn outside capture then fails ("Offset increment
    outside graph capture encountered unexpectedly"): FlagGems' next input. One draw finds out;
    a stuck state is replaced by a fresh one with the same seed and offset. True when healed."""
    try:
        state = torch.cuda.get_rng_state()
    except Exception:  # no usable device: nothing to heal
        return False
    try:
        torch.randn(1, device="cuda")
        return False
    except RuntimeError as e:
        if _STUCK not in str(e) or not hasattr(torch.cuda.default_generators[0],
                                               "graphsafe_set_state"):
            return False  # another state (the stream still capturing): not this repair's
        _fresh_generator_state(state)
        sys.stderr.write("caliber: torch's default CUDA generator was left capturing (%s); it "
                         "has a fresh state with the same seed and offset\n" % where)
        return True
    finally:
        try:
            torch.cuda.set_rng_state(state)
        except Exception:
            pass


def profiler_idle() -> bool:
    """True when torch's profiler is not running now, though it may have run: Kineto keeps its
    CUPTI subscription for the life of the process once a profile has run, and caliber's kernel
    trace may then open beside it (docs/timing.md, "Beside a profiler"). False while it runs, and
    when this torch cannot say (no flag found): the trace then yields to the subscriber."""
    if torch is None:
        return False
    flags = []
    prof = getattr(getattr(torch, "autograd", None), "profiler", None)
    if prof is not None and hasattr(prof, "_is_profiler_enabled"):
        flags.append(bool(prof._is_profiler_enabled))
    enabled = getattr(getattr(getattr(torch, "_C", None), "_autograd", None), "_profiler_enabled",
                      None)
    if callable(enabled):
        try:
            flags.append(bool(enabled()))
        except Exception:
            return False
    return bool(flags) and not any(flags)


# Opening the trace beside torch's idle profiler read every kernel about twice its length on the
# H200 (2026-12-04, docs/timing.md "Beside a profiler"): until that is understood the trace
# yields to Kineto's subscription (events, SAMPLE_METHOD_EVENTS_NO_TRACE); this variable set to 1
# opens it beside anyway, to diagnose (with CALIBER_TRACE_DUMP).
BESIDE_ENV = "CALIBER_TRACE_BESIDE_PROFILER"


def beside_profiler_allowed() -> bool:
    return os.environ.get(BESIDE_ENV) == "1"


class _Capture:
    """The capture hooks: one capture at a time (the timer captures one graph per measurement)."""

    def __init__(self) -> None:
        self.graphs: Dict[int, Any] = {}
        self.next_id = 1
        self.active = None
        self.saved_rng = None
        self.cb = _lib.CAPTURE_FN(self._hook)

    def _restore_rng(self) -> None:
        if self.saved_rng is not None:
            torch.cuda.set_rng_state(self.saved_rng)
            self.saved_rng = None

    def _hook(self, what: int, graph: int, code_ptr: Any, msg: Any, cap: int) -> int:
        try:
            if what == 1:  # begin, on the current stream (caliber's)
                self.saved_rng = torch.cuda.get_rng_state()
                g = torch.cuda.CUDAGraph()
                g.capture_begin()
                self.active = g
                return 0
            if what == 2:  # end
                g, self.active = self.active, None
                g.capture_end()
                gid = self.next_id
                self.next_id += 1
                self.graphs[gid] = g
                return gid
            if what == 3:  # replay
                self.graphs[graph].replay()
                return 0
            if what == 4:  # release: the graph and its private pool go, the generator comes back
                g = self.graphs.pop(graph, None)
                del g
                self._restore_rng()
                heal_generator("after a graph's release")
                return 0
            if what == 5:  # abort
                g, self.active = self.active, None
                if g is not None:
                    try:
                        g.capture_end()
                    except Exception:  # an invalidated capture: heal_generator below
                        pass
                    del g
                self._restore_rng()
                heal_generator("after an aborted capture")
                return 0
            if what == 6:  # may the trace open beside torch's idle profiler?
                return 1 if beside_profiler_allowed() and profiler_idle() else 0
            raise ValueError("unknown capture request %d" % what)
        except BaseException as e:  # noqa: B902 - nothing may cross the C boundary
            code_ptr[0] = native_code(e)
            _lib.write(msg, cap, "%s: %s" % (type(e).__name__, e))
            return -1


_capture = None


def install_hooks() -> None:
    """Routes caliber's graph capture through torch (once per process)."""
    global _capture
    if _capture is None:
        _capture = _Capture()
        _lib.lib().caliber_c_set_capture_hooks(_capture.cb)


_streams = {}


def external_stream(handle: int, index: int) -> Any:
    key = (handle, index)
    if key not in _streams:
        _streams[key] = torch.cuda.ExternalStream(handle, device=torch.device("cuda", index))
    return _streams[key]


@contextlib.contextmanager
def on_stream(handle: int, index: int) -> Iterator[None]:
    """torch's current device and stream set to caliber's while the block runs."""
    with torch.cuda.device(index):
        with torch.cuda.stream(external_stream(handle, index)):
            yield


@contextlib.contextmanager
def rng_guard() -> Iterator[None]:
    """The default CUDA generator as the caller left it, whatever the block draws."""
    state = torch.cuda.get_rng_state()
    try:
        yield
    finally:
        torch.cuda.set_rng_state(state)


def versions() -> Dict[str, Any]:
    out = {}
    if torch is not None:
        out["torch"] = torch.__version__
        out["torch_cuda"] = getattr(torch.version, "cuda", None)
    try:
        import triton
        out["triton"] = triton.__version__
    except Exception:
        pass
    return out
