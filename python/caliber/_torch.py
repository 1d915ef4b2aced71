"""torch glue for caliber on a device torch drives (docs/python.md).

- The device interface: caliber's backend picks torch's device module, in one place
  (`device_api`): cuda and rocm (torch's HIP build) torch.cuda, musa torch.musa (torch_musa),
  ascend torch.npu (torch_npu). Every device call below goes through it, never torch.cuda itself.
- Launches go to the stream caliber times: torch's current stream is set to the module's
  ExternalStream over caliber's stream while caliber runs Python code.
- Graph capture goes through torch's own graph API and memory pool (the module's graph class,
  `_graph_class`: CUDAGraph, MUSAGraph, NPUGraph; capture_begin / capture_end / replay), never a
  raw stream capture: the caching allocator then knows that memory allocated under capture
  belongs to the graph's private pool, and the graph's generator bookkeeping stays torch's.
  caliber's C++ timer drives the capture through hooks (caliber_c_set_capture_hooks) and puts its
  own event and L2-flush nodes into the same capture. A module without a graph class refuses
  every capture (the C++ timer then times with the direct timer, marked).
- RNG guard: torch's default device generator state is saved when a capture begins and restored
  when its graph is released (or the capture aborted), so that capturing and replaying torch.rand
  leaves the state callers see unchanged. A module without default_generators has no guard.
- Errors: a torch.AcceleratorError carries the runtime's error code; other exceptions (Triton's
  launcher raises RuntimeError) are read for CUDA's error texts, which HIP and MUSA keep with
  CUDA's numbers, so the C++ side can classify them (refused capture, fatal sticky error) as it
  does its own; on ascend none of them matches and every code is an ordinary failure.
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

# Runtime error texts and their codes, for exceptions that carry only the text (Triton's launcher,
# older torch). The codes are the runtime's own numbers, which the cuda backend classifies
# (src/backends/cuda/cuda_common.hpp) and HIP shares (hip_runtime_api.h: hipErrorIllegalAddress
# 700, hipErrorAssert 710, hipErrorLaunchFailure 719, hipErrorStreamCapture* 900/901/906). The
# texts are cudaGetErrorString's; HIP's is CUDA's text on later ROCm and the error's name on ROCm
# 5.2 (hipGetErrorString(700) is "hipErrorIllegalAddress" there, read from libamdhip64 5.2), so
# both names are here too. HIP has no 715/716.
_CUDA_TEXTS = (
    ("operation not permitted when stream is capturing", 900),
    ("operation failed due to a previous error during capture", 901),
    ("operation would make the legacy stream depend on a capturing blocking stream", 906),
    ("an illegal memory access was encountered", 700),
    ("device-side assert triggered", 710),
    ("an illegal instruction was encountered", 715),
    ("misaligned address", 716),
    ("unspecified launch failure", 719),
    ("ErrorStreamCaptureUnsupported", 900),  # cudaError... and hipError... names
    ("ErrorStreamCaptureInvalidated", 901),
    ("ErrorStreamCaptureImplicit", 906),
    ("ErrorIllegalAddress", 700),
    ("ErrorAssert", 710),
    ("ErrorIllegalInstruction", 715),
    ("ErrorMisalignedAddress", 716),
    ("ErrorLaunchFailure", 719),
)


def native_code(exc: BaseException) -> int:
    """The runtime error code an exception stands for, 0 when it is not a runtime error. The texts
    are CUDA's (and the errors' names), and one table serves every backend: HIP keeps CUDA's
    numbers for these errors (MUSA is taken to, unverified: no MUSA runtime was at hand), their
    C++ backends classify the same numbers; ACL's messages share none of these words, and the
    ascend backend reads every code as an ordinary failure."""
    code = getattr(exc, "error_code", None)
    if isinstance(code, int) and code > 0:
        return code
    text = str(exc)
    for needle, c in _CUDA_TEXTS:
        if needle in text:
            return c
    return 0


# --- the device interface ----------------------------------------------------------------------

# caliber's backend -> torch's device module (torch.<name>, also the torch.device type), the
# package that registers it when torch itself has none, its graph class, the word for messages.
_MODULES = {
    "cuda": ("cuda", None, "CUDAGraph", "CUDA"),
    "rocm": ("cuda", None, "CUDAGraph", "CUDA"),  # torch's HIP build answers as torch.cuda
    "musa": ("musa", "torch_musa", "MUSAGraph", "MUSA"),
    "ascend": ("npu", "torch_npu", "NPUGraph", "NPU"),
}


def _canonical(backend: str) -> str:
    """The backend's own name for a name or alias, as the library's registry resolves it
    (caliber_c_settings' "backends"); a name it does not know comes back as given."""
    b = (backend or "").lower()
    return _lib.settings().get("backends", {}).get(b, b)


def _graph_class(backend: str, module: Any) -> Any:
    """The device module's graph class (CUDAGraph, MUSAGraph, NPUGraph), None where it has none."""
    return getattr(module, _MODULES[_canonical(backend)][2], None)


class DeviceApi:
    """torch's device module for one caliber backend: what caliber calls on it."""

    def __init__(self, backend: str, module: Any) -> None:
        name, _, graph, word = _MODULES[_canonical(backend)]
        self.backend = _canonical(backend)
        self.name = name  # torch.<name>, and the torch.device type
        self.module = module
        self.word = word
        self.graph_name = graph
        self.graph_class = _graph_class(backend, module)
        self.has_rng = hasattr(module, "default_generators")

    def _need(self, attr: str, why: str = "") -> Any:
        f = getattr(self.module, attr, None)
        if f is None:
            raise RuntimeError("caliber: backend %s: torch.%s has no %s%s" % (
                self.backend, self.name, attr, why))
        return f

    def device(self, index: int) -> Any:
        return torch.device(self.name, index)

    def current_device(self) -> int:
        return self._need("current_device")()

    def set_device(self, index: int) -> None:
        self._need("set_device")(index)

    def set_stream(self, stream: Any) -> None:
        self._need("set_stream")(stream)

    def synchronize(self) -> None:
        """torch's current stream on this device, drained."""
        self._need("current_stream")().synchronize()

    def external_stream(self, handle: int, index: int) -> Any:
        why = ": torch's launches cannot be put on the stream caliber times"
        return self._need("ExternalStream", why)(handle, device=self.device(index))

    def device_context(self, index: int) -> Any:
        return self._need("device")(index)

    def stream_context(self, stream: Any) -> Any:
        return self._need("stream")(stream)

    def new_graph(self) -> Any:
        if self.graph_class is None:
            raise RuntimeError("caliber: backend %s: torch.%s has no %s, so caliber captures "
                               "no graph through torch here (the direct timer times it)" %
                               (self.backend, self.name, self.graph_name))
        return self.graph_class()

    def get_rng_state(self) -> Any:
        """The default generator's state, None where the module has no default_generators."""
        return self.module.get_rng_state() if self.has_rng else None

    def set_rng_state(self, state: Any) -> None:
        if self.has_rng and state is not None:
            self.module.set_rng_state(state)


_imported = set()


def _module(backend: str, required: bool) -> Any:
    """torch.<name> for the backend; its vendor package is imported once when torch has none yet
    (torch_musa and torch_npu register the module on import). None, or with `required` a
    RuntimeError naming the backend and the module, when it is not there."""
    b = _canonical(backend)
    if b not in _MODULES:
        if not required:
            return None
        known = ", ".join(sorted(_MODULES))
        raise ValueError("caliber: backend '%s' has no torch device module (torch drives %s)" %
                         (backend, known))
    name, package, _, _ = _MODULES[b]
    if torch is None:
        if required:
            raise RuntimeError("caliber: backend %s needs torch.%s, and torch does not import" %
                               (b, name))
        return None
    module = getattr(torch, name, None)
    if module is None and package is not None and package not in _imported:
        _imported.add(package)  # once: a package that is not there stays not there
        try:
            __import__(package)
        except Exception:
            pass
        module = getattr(torch, name, None)
    if module is None and required:
        raise RuntimeError("caliber: backend %s needs torch.%s, which this torch does not have%s" %
                           (b, name, " (%s, which registers it, does not import)" % package
                            if package else ""))
    return module


_apis: Dict[str, Any] = {}


def device_api(backend: str) -> DeviceApi:
    """The device interface for caliber's backend (cuda, rocm, musa, ascend or an alias): the
    one place that picks torch's module. A host backend, an unknown one, or a torch without the
    module is an error that names the backend and the module."""
    b = _canonical(backend)
    if b == "cpu":
        raise ValueError("caliber: backend cpu is the host's: no torch device module serves it "
                         "(torch sees no cuda, musa or npu device)")
    cached = _apis.get(b)
    if cached is not None and cached[0] is torch:
        return cached[1]
    api = DeviceApi(b, _module(b, True))
    _apis[b] = (torch, api)
    return api


def available(backend: str) -> bool:
    """True when torch has the backend's device module and it sees a device."""
    module = _module(backend, False)
    is_available = getattr(module, "is_available", None)
    return is_available is not None and bool(is_available())


def auto_backend() -> str:
    """caliber's backend for torch's device: cuda (rocm for torch's HIP build), musa or ascend,
    the first whose module sees a device; cpu when none does."""
    for b in ("cuda", "musa", "ascend"):
        if available(b):
            if b == "cuda" and getattr(getattr(torch, "version", None), "hip", None):
                return "rocm"
            return b
    return "cpu"


_STUCK = "Offset increment outside graph capture"


def _fresh_generator_state(api: DeviceApi, state: Any) -> None:
    """Gives the current device's default generator a new state object holding `state` (its seed
    and offset) that no graph has registered, so that it is not capturing."""
    idx = api.current_device()
    gen = api.module.default_generators[idx]
    fresh = torch.Generator(device=api.device(idx))
    fresh.set_state(state)
    gen.graphsafe_set_state(fresh.graphsafe_get_state())


def heal_generator(where: str, backend: str) -> bool:
    """After a capture ended, was aborted or its graph released: the default device generator
    must draw outside capture again. A capture torch did not close with its own epilogue (an
    aborted one, or one the timer's hooks ended on another path) leaves the generator's state
    marked as capturing, and every later torch.rand/randn outside capture then fails ("Offset
    increment outside graph capture encountered unexpectedly"): FlagGems' next input. One draw
    finds out; a stuck state is replaced by a fresh one with the same seed and offset. True when
    healed. Nothing to heal where the module has no default_generators."""
    try:
        api = device_api(backend)
        state = api.get_rng_state()
    except Exception:  # no usable device: nothing to heal
        return False
    if state is None:
        return False
    try:
        torch.randn(1, device=api.name)
        return False
    except RuntimeError as e:
        if _STUCK not in str(e) or not hasattr(api.module.default_generators[0],
                                               "graphsafe_set_state"):
            return False  # another state (the stream still capturing): not this repair's
        _fresh_generator_state(api, state)
        sys.stderr.write("caliber: torch's default %s generator was left capturing (%s); it "
                         "has a fresh state with the same seed and offset\n" % (api.word, where))
        return True
    finally:
        try:
            api.set_rng_state(state)
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


# Beside torch's idle profiler the trace reads its records' clock first (Kineto makes CUPTI stamp
# them in TSC ticks: docs/timing.md "Beside a profiler") and opens by default; this variable set to
# 0 makes it yield to the other subscriber instead (events, SAMPLE_METHOD_EVENTS_NO_TRACE).
BESIDE_ENV = "CALIBER_TRACE_BESIDE_PROFILER"


def beside_profiler_allowed() -> bool:
    return os.environ.get(BESIDE_ENV, "1") != "0"


class _Capture:
    """The capture hooks: one capture at a time (the timer captures one graph per measurement)."""

    def __init__(self, backend: str) -> None:
        self.graphs: Dict[int, Any] = {}
        self.next_id = 1
        self.active = None
        self.saved_rng = None
        self.backend = backend  # the device's: its module's graph class and generator
        self.cb = _lib.CAPTURE_FN(self._hook)

    def _restore_rng(self) -> None:
        if self.saved_rng is not None:
            device_api(self.backend).set_rng_state(self.saved_rng)
            self.saved_rng = None

    def _hook(self, what: int, graph: int, code_ptr: Any, msg: Any, cap: int) -> int:
        try:
            if what == 1:  # begin, on the current stream (caliber's)
                api = device_api(self.backend)
                self.saved_rng = api.get_rng_state()  # None: no generator to guard
                g = api.new_graph()  # no graph class: refused, the direct timer times it
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
                heal_generator("after a graph's release", self.backend)
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
                heal_generator("after an aborted capture", self.backend)
                return 0
            if what == 6:  # may the trace open beside torch's idle profiler?
                return 1 if beside_profiler_allowed() and profiler_idle() else 0
            raise ValueError("unknown capture request %d" % what)
        except BaseException as e:  # noqa: B902 - nothing may cross the C boundary
            code_ptr[0] = native_code(e)
            _lib.write(msg, cap, "%s: %s" % (type(e).__name__, e))
            return -1


_capture = None


def install_hooks(backend: str) -> None:
    """Routes caliber's graph capture through torch's graph API for the backend's device (the
    hooks are installed once per process; the latest device's backend is theirs)."""
    global _capture
    if _capture is None:
        _capture = _Capture(backend)
        _lib.lib().caliber_c_set_capture_hooks(_capture.cb)
    _capture.backend = backend


_streams = {}


def external_stream(handle: int, index: int, backend: str) -> Any:
    api = device_api(backend)
    key = (api.name, handle, index)
    if key not in _streams:
        _streams[key] = api.external_stream(handle, index)
    return _streams[key]


@contextlib.contextmanager
def on_stream(handle: int, index: int, backend: str) -> Iterator[None]:
    """torch's current device and stream set to caliber's while the block runs."""
    api = device_api(backend)
    with api.device_context(index):
        with api.stream_context(external_stream(handle, index, backend)):
            yield


@contextlib.contextmanager
def rng_guard(backend: str) -> Iterator[None]:
    """The default device generator as the caller left it, whatever the block draws (no guard
    where the module has no default_generators)."""
    api = device_api(backend)
    state = api.get_rng_state()
    try:
        yield
    finally:
        api.set_rng_state(state)


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
