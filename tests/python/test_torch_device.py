"""caliber._torch's device interface on scripted stand-ins for torch (CI has no torch): caliber's
backend picks torch's device module in one place (cuda and rocm torch.cuda, musa torch.musa,
ascend torch.npu), with its graph class and its generator, and every device call of the package
(capture hooks, streams, RNG guard, FlagGems' session, suites) goes through it (docs/python.md,
"Other vendors"). Each stand-in torch has only the module it is about: a call that reached for
torch.cuda on a MUSA or an Ascend torch fails here."""

import contextlib
import ctypes
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("CALIBER_NO_TORCH", "1")
import common  # noqa: E402

import importlib  # noqa: E402

try:  # caliber.flaggems (the Session tests) needs pytest: a python3 that has it runs these tests
    import pytest  # noqa: F401
except ImportError:
    from test_flaggems import PYTHON  # noqa: E402
    os.execv(PYTHON, [PYTHON] + sys.argv)

from caliber import _lib, _torch, suite  # noqa: E402

bench = importlib.import_module("caliber.bench")  # the module (caliber.bench is its function)

STUCK = "Offset increment outside graph capture encountered unexpectedly."
GRAPHS = {"cuda": "CUDAGraph", "musa": "MUSAGraph", "npu": "NPUGraph"}


class Generator:
    def __init__(self, device=None, capturing=False):
        self.capturing = capturing
        self.state = (7, 1024)

    def set_state(self, s):
        self.state = s

    def get_state(self):
        return self.state

    def graphsafe_get_state(self):
        return self

    def graphsafe_set_state(self, other):
        self.capturing = other.capturing


class Stream:
    def __init__(self, log, name, what):
        self.log, self.name, self.what = log, name, what

    def synchronize(self):
        self.log.append((self.name, "synchronize", self.what))


class Module:
    """One device module of torch's (torch.cuda, torch.musa, torch.npu) that logs every call."""

    def __init__(self, log, name, graph=True, rng=True, capturing=False):
        self.log, self.name = log, name
        if graph:
            module = self

            class Graph:
                def __init__(self):
                    module.log.append((module.name, GRAPHS[module.name]))

                def capture_begin(self):
                    module.log.append((module.name, "capture_begin"))

                def capture_end(self):
                    module.log.append((module.name, "capture_end"))

                def replay(self):
                    module.log.append((module.name, "replay"))
            setattr(self, GRAPHS[name], Graph)
        if rng:
            self.default_generators = [Generator(capturing=capturing)]

    def _note(self, *what):
        self.log.append((self.name,) + what)

    def is_available(self):
        return True

    def current_device(self):
        self._note("current_device")
        return 0

    def set_device(self, index):
        self._note("set_device", index)

    def set_stream(self, stream):
        self._note("set_stream", stream)

    def current_stream(self):
        return Stream(self.log, self.name, "current")

    def ExternalStream(self, handle, device=None):  # noqa: N802 - torch's name
        self._note("ExternalStream", handle, device)
        return ("external", self.name, handle)

    @contextlib.contextmanager
    def device(self, index):
        self._note("device", index)
        yield

    @contextlib.contextmanager
    def stream(self, s):
        self._note("stream", s)
        yield

    def get_rng_state(self):
        self._note("get_rng_state")
        return self.default_generators[0].get_state()

    def set_rng_state(self, s):
        self._note("set_rng_state", s)
        self.default_generators[0].set_state(s)


class FakeTorch:
    """torch with only the device modules given (no torch.cuda unless given)."""

    def __init__(self, **modules):
        self.log = []
        self.__version__ = "0-stand-in"
        self.version = type("version", (), {"hip": None})()
        for name, kw in modules.items():
            setattr(self, name, Module(self.log, name, **kw))
        self.Generator = Generator

    def device(self, kind, index):
        return (kind, index)

    def randn(self, n, device=None):
        self.log.append(("torch", "randn", device))
        gen = getattr(self, device).default_generators[0]
        if gen.capturing:
            raise RuntimeError(STUCK)


class Faked(unittest.TestCase):
    """Each test's torch is a stand-in, as _torch and as `import torch` see it."""

    def use(self, **modules):
        t = FakeTorch(**modules)
        _torch.torch = t
        sys.modules["torch"] = t
        return t

    def setUp(self):
        self.saved = _torch.torch, sys.modules.get("torch")
        _torch._apis.clear()
        _torch._streams.clear()

    def tearDown(self):
        _torch.torch = self.saved[0]
        if self.saved[1] is None:
            sys.modules.pop("torch", None)
        else:
            sys.modules["torch"] = self.saved[1]
        _torch._apis.clear()
        _torch._streams.clear()


class Mapping(Faked):
    def test_each_backend_gets_its_module_and_graph_class(self):
        for backend, name in (("cuda", "cuda"), ("nvidia", "cuda"), ("rocm", "cuda"),
                              ("hip", "cuda"), ("musa", "musa"), ("mthreads", "musa"),
                              ("ascend", "npu"), ("npu", "npu"), ("amd", "cuda"),
                              ("moore", "musa"), ("cann", "npu"), ("Huawei", "npu")):
            t = self.use(**{name: {}})  # that module alone
            api = _torch.device_api(backend)
            self.assertIs(api.module, getattr(t, name), backend)
            self.assertIs(api.graph_class, getattr(api.module, GRAPHS[name]), backend)
            self.assertIs(_torch._graph_class(backend, api.module), api.graph_class)
            self.assertTrue(_torch.available(backend), backend)

    def test_a_torch_without_the_module_is_named(self):
        self.use(cuda={})
        for backend, module, package in (("musa", "torch.musa", "torch_musa"),
                                         ("ascend", "torch.npu", "torch_npu")):
            with self.assertRaises(RuntimeError) as e:
                _torch.device_api(backend)
            self.assertIn("backend %s needs %s" % (backend, module), str(e.exception))
            self.assertIn(package, str(e.exception))
            self.assertFalse(_torch.available(backend))
        self.use(musa={})
        with self.assertRaises(RuntimeError) as e:
            _torch.device_api("cuda")
        self.assertIn("backend cuda needs torch.cuda", str(e.exception))
        with self.assertRaises(ValueError):
            _torch.device_api("cpu")  # the host has no device module
        with self.assertRaises(ValueError):
            _torch.device_api("host")  # nor by its alias (the library's registry resolves it)
        with self.assertRaises(ValueError):
            _torch.device_api("tpu")

    def test_the_vendor_package_is_imported_once_to_register_its_module(self):
        d = common.tmpdir()
        with open(os.path.join(d, "torch_musa.py"), "w") as f:
            f.write("import sys\nt = sys.modules['torch']\nt.musa = t.registered\n")
        t = self.use(cuda={})
        t.registered = Module(t.log, "musa")
        saved = set(_torch._imported)
        _torch._imported.discard("torch_musa")
        sys.path.insert(0, d)
        try:
            self.assertIs(_torch.device_api("musa").module, t.registered)
        finally:
            sys.path.remove(d)
            sys.modules.pop("torch_musa", None)
            _torch._imported.clear()
            _torch._imported.update(saved)

    def test_auto_picks_the_module_that_sees_a_device(self):
        self.use(musa={})
        self.assertEqual(_torch.auto_backend(), "musa")
        self.assertEqual(bench._resolve_backend("auto"), "musa")
        self.use(npu={})
        self.assertEqual(_torch.auto_backend(), "ascend")
        t = self.use(cuda={})
        self.assertEqual(_torch.auto_backend(), "cuda")
        t.version.hip = "6.2"
        self.assertEqual(_torch.auto_backend(), "rocm")
        self.use()
        self.assertEqual(_torch.auto_backend(), "cpu")


class Calls(Faked):
    def test_streams_and_sync_go_to_the_backends_module(self):
        for backend, name in (("cuda", "cuda"), ("musa", "musa"), ("ascend", "npu")):
            t = self.use(**{name: {}})
            with _torch.on_stream(77, 1, backend):
                pass
            _torch.device_api(backend).synchronize()
            self.assertEqual(t.log, [(name, "device", 1),
                                     (name, "ExternalStream", 77, (name, 1)),
                                     (name, "stream", ("external", name, 77)),
                                     (name, "synchronize", "current")], backend)

    def test_a_module_without_external_stream_is_named(self):
        t = self.use(npu={})
        t.npu.ExternalStream = None  # torch_npu has none (2.x): the launches would go elsewhere
        with self.assertRaises(RuntimeError) as e:
            _torch.external_stream(5, 0, "ascend")
        self.assertIn("torch.npu has no ExternalStream", str(e.exception))

    def test_rng_guard_saves_and_restores_the_backends_generator(self):
        t = self.use(musa={})
        with _torch.rng_guard("musa"):
            t.musa.default_generators[0].state = (7, 2048)  # the block draws
        self.assertEqual(t.log, [("musa", "get_rng_state"), ("musa", "set_rng_state", (7, 1024))])
        self.assertEqual(t.musa.default_generators[0].state, (7, 1024))

    def test_no_default_generators_no_guard(self):
        t = self.use(musa={"rng": False})
        api = _torch.device_api("musa")
        self.assertFalse(api.has_rng)
        self.assertIsNone(api.get_rng_state())
        with _torch.rng_guard("musa"):
            pass
        self.assertFalse(_torch.heal_generator("test", "musa"))
        self.assertEqual(t.log, [])  # neither get_rng_state nor set_rng_state nor a draw

    def test_heal_draws_on_the_backends_device(self):
        t = self.use(musa={"capturing": True})
        self.assertTrue(_torch.heal_generator("test", "musa"))
        self.assertIn(("torch", "randn", "musa"), t.log)
        self.assertFalse(t.musa.default_generators[0].capturing)
        self.assertEqual(t.log[-1], ("musa", "set_rng_state", (7, 1024)))


def hook(cap, what, graph=0):
    code = (ctypes.c_int64 * 1)()
    msg = ctypes.create_string_buffer(512)
    r = cap._hook(what, graph, code, ctypes.addressof(msg), len(msg))
    return r, code[0], msg.value.decode()


class CaptureHooks(Faked):
    def test_capture_uses_the_backends_graph_class_and_generator(self):
        for backend, name in (("cuda", "cuda"), ("musa", "musa"), ("ascend", "npu")):
            t = self.use(**{name: {}})
            cap = _torch._Capture(backend)
            self.assertEqual(hook(cap, 1), (0, 0, ""))
            gid, code, _ = hook(cap, 2)
            self.assertEqual((gid, code), (1, 0))
            self.assertEqual(hook(cap, 3, gid)[0], 0)
            self.assertEqual(hook(cap, 4, gid)[0], 0)
            self.assertEqual(t.log[:5], [(name, "get_rng_state"), (name, GRAPHS[name]),
                                         (name, "capture_begin"), (name, "capture_end"),
                                         (name, "replay")], backend)
            self.assertIn((name, "set_rng_state", (7, 1024)), t.log)

    def test_no_graph_class_refuses_the_capture(self):
        """The C++ side reads a refusal with code 0 as CaptureRefused: the direct timer times
        the case, marked BENCHMARK_DIRECT_NO_CUDAGRAPH, and the note names the missing class."""
        t = self.use(musa={"graph": False})
        self.assertIsNone(_torch.device_api("musa").graph_class)
        cap = _torch._Capture("musa")
        r, code, msg = hook(cap, 1)
        self.assertEqual((r, code), (-1, 0))
        self.assertIn("torch.musa has no MUSAGraph", msg)
        self.assertEqual(hook(cap, 5)[0], 0)  # the abort puts the generator back
        self.assertEqual(t.log[-1], ("musa", "set_rng_state", (7, 1024)))

    def test_capture_without_default_generators_guards_nothing(self):
        t = self.use(musa={"rng": False})
        cap = _torch._Capture("musa")
        self.assertEqual(hook(cap, 1)[0], 0)
        gid = hook(cap, 2)[0]
        self.assertEqual(hook(cap, 4, gid)[0], 0)
        self.assertNotIn("get_rng_state", [e[1] for e in t.log])
        self.assertNotIn("set_rng_state", [e[1] for e in t.log])


class ErrorTexts(unittest.TestCase):
    def test_one_table_of_cudas_texts_serves_every_backend(self):
        """HIP and MUSA keep CUDA's numbers and wording for these errors (their C++ backends
        classify the same codes); an exception's own code wins everywhere."""
        e = RuntimeError("MUSA error: operation not permitted when stream is capturing")
        self.assertEqual(_torch.native_code(e), 900)
        own = RuntimeError("ACL error")
        own.error_code = 507011
        self.assertEqual(_torch.native_code(own), 507011)
        self.assertEqual(_torch.native_code(RuntimeError("EZ9999: Inner Error!")), 0)

    def test_hip_names_its_errors_on_rocm_5(self):
        """ROCm 5.2's hipGetErrorString gives the error's name, not CUDA's text (read from
        libamdhip64 5.2): torch's HIP message carries the name, which must classify the same."""
        for name, code in (("hipErrorIllegalAddress", 700), ("hipErrorAssert", 710),
                           ("hipErrorLaunchFailure", 719), ("hipErrorStreamCaptureUnsupported", 900),
                           ("hipErrorStreamCaptureInvalidated", 901),
                           ("hipErrorStreamCaptureImplicit", 906),
                           ("cudaErrorIllegalAddress", 700)):
            self.assertEqual(_torch.native_code(RuntimeError("HIP error: " + name)), code, name)
        self.assertEqual(_torch.native_code(RuntimeError("HIP error: hipErrorOutOfMemory")), 0)


class Dtypes(unittest.TestCase):
    def test_one_table_both_ways(self):
        """caliber's dtype names and torch's, one table (caliber._dtypes) read both ways: a suite
        case's torch dtype and a FlagGems row's dtype text."""
        from caliber import _dtypes
        for ours in ("f32", "f16", "bf16", "f64", "i32", "i64", "c64"):
            self.assertEqual(_dtypes.dtype_name("torch." + _dtypes.torch_name(ours)), ours)
        self.assertEqual(_dtypes.torch_name("bf16"), "bfloat16")
        with self.assertRaises(KeyError):
            _dtypes.torch_name("f8")


class Session(Faked):
    """FlagGems' session: the run's device set-up, its synchronize and its generator reading go
    through the backend's module (a MUSA torch has no torch.cuda at all)."""

    def session(self, backend):
        from caliber import flaggems

        class Run:
            def call(self, req, *_):
                return {"run_dir": common.tmpdir(), "device": {
                    "backend": backend, "name": "stand-in", "index": 1, "stream": 4242,
                    "host": False}}
        knobs = {"backend": backend, "flaggems": common.tmpdir(), "host": False,
                 "level": "core", "mode": "kernel", "shape_mode": "upstream"}
        return flaggems.Session(Run(), knobs)

    def test_open_sets_the_runs_device_and_stream_on_musa(self):
        s = self.session("musa")
        t = self.use(musa={})
        s._open([])
        self.assertEqual(t.log[:3], [("musa", "set_device", 1),
                                     ("musa", "ExternalStream", 4242, ("musa", 1)),
                                     ("musa", "set_stream", ("external", "musa", 4242))])
        self.assertIn(("torch", "randn", "musa"), t.log)  # the generator's check, on MUSA

    def test_open_on_ascend_uses_torch_npu(self):
        s = self.session("ascend")
        t = self.use(npu={})
        s._open([])
        self.assertEqual(t.log[0], ("npu", "set_device", 1))

    def test_sync_and_rng_state_on_musa(self):
        s = self.session("musa")
        t = self.use(musa={})
        s._sync()
        self.assertEqual(s._rng_state(), (7, 1024))
        self.assertEqual(t.log, [("musa", "synchronize", "current"), ("musa", "get_rng_state")])

    def test_rng_state_is_unknown_without_default_generators(self):
        """torch.musa without default_generators: nothing is read, not even another module's
        generator (this stand-in has a torch.cuda too)."""
        s = self.session("musa")
        t = self.use(musa={"rng": False}, cuda={})
        self.assertIsNone(s._rng_state())
        self.assertEqual(t.log, [])


class Suite(Faked):
    """A suite's set-up and synchronize on the device torch has (the request names no backend):
    torch's current stream is caliber's, and case.device is that module's device."""

    def test_setup_and_sync_on_musa(self):
        t = self.use(musa={})
        reg = suite.Registry()
        op = {"name": "add", "inputs": lambda case: (case.device,)}
        reg.ops.append((op, [("torch", lambda *a: None)]))
        answer = reg._answer(0, {"call": "setup", "stream": 99, "host": False, "case": {
            "op": "add", "dtype": "f32", "shape": [4], "node": "add[f32-4]"}})
        self.assertEqual(answer["status"], "ok", answer)
        w = reg.workloads[answer["workload"]]
        self.assertEqual(w.args, ("musa:0",))
        self.assertEqual(t.log, [("musa", "current_device"),
                                 ("musa", "ExternalStream", 99, ("musa", 0)),
                                 ("musa", "set_stream", ("external", "musa", 99))])
        suite._sync(w.case)
        self.assertEqual(t.log[-1], ("musa", "synchronize", "current"))


class SuiteRunHooks(Faked):
    """A --py-ops run captures through torch's graph API on the device its suites use, as
    caliber.measure and a FlagGems run do; without torch or a torch device nothing is hooked."""

    def tearDown(self):
        super().tearDown()
        _torch._capture = None
        _lib.lib().caliber_c_set_capture_hooks(_lib.CAPTURE_FN())  # a null pointer: unhooked

    def test_hooked_on_torchs_device(self):
        from caliber import __main__ as entry
        self.use(musa={})
        _torch._capture = None
        self.assertEqual(entry.install_suite_hooks(), "musa")
        self.assertIsNotNone(_torch._capture)
        self.assertEqual(_torch._capture.backend, "musa")
        _torch._capture = None
        _torch.torch = None
        self.assertIsNone(entry.install_suite_hooks())
        self.assertIsNone(_torch._capture)


if __name__ == "__main__":
    unittest.main()
