"""caliber._torch's repair of torch's default CUDA generator, on a scripted stand-in for torch (CI
has no torch): a capture that torch did not close leaves the generator's state marked capturing,
and every later draw outside capture fails; heal_generator finds that with one draw and gives the
generator a fresh state holding the same seed and offset (docs/python.md)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("CALIBER_NO_TORCH", "1")
import common  # noqa: E402,F401

from caliber import _torch  # noqa: E402

STUCK = "Offset increment outside graph capture encountered unexpectedly."


class State:
    def __init__(self, seed_offset, capturing=False):
        self.seed_offset = seed_offset
        self.capturing = capturing


class Generator:
    """torch.Generator's graph-safe state API as far as heal_generator uses it."""

    def __init__(self, device=None, state=None):
        self.state = state or State((0, 0))

    def set_state(self, seed_offset):
        self.state.seed_offset = seed_offset

    def get_state(self):
        return self.state.seed_offset

    def graphsafe_get_state(self):
        return self.state

    def graphsafe_set_state(self, state):
        self.state = state


class Cuda:
    def __init__(self, gen):
        self.default_generators = [gen]

    def current_device(self):
        return 0

    def get_rng_state(self):
        return self.default_generators[0].get_state()

    def set_rng_state(self, s):
        self.default_generators[0].set_state(s)


class FakeTorch:
    def __init__(self, capturing):
        self.draws = 0
        self.cuda = Cuda(Generator(state=State((7, 1024), capturing)))
        self.Generator = Generator

    def device(self, kind, index):
        return (kind, index)

    def randn(self, n, device=None):
        gen = self.cuda.default_generators[0]
        if gen.state.capturing:
            raise RuntimeError(STUCK)
        seed, offset = gen.state.seed_offset
        gen.state.seed_offset = (seed, offset + 4)
        self.draws += 1


class HealGenerator(unittest.TestCase):
    def setUp(self):
        self.saved = _torch.torch

    def tearDown(self):
        _torch.torch = self.saved

    def test_a_stuck_generator_draws_again_with_its_seed_and_offset(self):
        t = _torch.torch = FakeTorch(capturing=True)
        self.assertTrue(_torch.heal_generator("test", "cuda"))
        gen = t.cuda.default_generators[0]
        self.assertFalse(gen.state.capturing)
        self.assertEqual(gen.get_state(), (7, 1024))  # the probe's draw left no trace
        t.randn(1, device="cuda")  # FlagGems' next input
        self.assertEqual(t.draws, 1)

    def test_a_healthy_generator_is_left_as_it_was(self):
        t = _torch.torch = FakeTorch(capturing=False)
        state_obj = t.cuda.default_generators[0].state
        self.assertFalse(_torch.heal_generator("test", "cuda"))
        self.assertIs(t.cuda.default_generators[0].state, state_obj)
        self.assertEqual(t.cuda.default_generators[0].get_state(), (7, 1024))

    def test_another_error_is_not_this_repairs(self):
        t = _torch.torch = FakeTorch(capturing=False)

        def fails(n, device=None):
            raise RuntimeError("operation not permitted when stream is capturing")
        t.randn = fails
        self.assertFalse(_torch.heal_generator("test", "cuda"))


class ProfilerTorch:
    """torch's two profiler flags as profiler_idle reads them: the Python one
    (torch.autograd.profiler._is_profiler_enabled) and the C++ one (_C._autograd._profiler_enabled)."""

    def __init__(self, py_flag, c_flag):
        ns = type("ns", (), {})
        self.autograd = ns()
        self._C = ns()
        if py_flag is not None:
            self.autograd.profiler = ns()
            self.autograd.profiler._is_profiler_enabled = py_flag
        if c_flag is not None:
            self._C._autograd = ns()
            self._C._autograd._profiler_enabled = lambda: c_flag


class ProfilerIdle(unittest.TestCase):
    """The kernel trace opens beside torch's idle profiler only on a clear word that it is idle."""

    def setUp(self):
        self.saved = _torch.torch

    def tearDown(self):
        _torch.torch = self.saved

    def test_idle_only_when_every_flag_found_says_so(self):
        cases = [((False, False), True), ((False, None), True), ((None, False), True),
                 ((True, False), False), ((False, True), False), ((None, None), False)]
        for (py_flag, c_flag), idle in cases:
            _torch.torch = ProfilerTorch(py_flag, c_flag)
            self.assertEqual(_torch.profiler_idle(), idle, (py_flag, c_flag))

    def test_beside_unless_turned_off(self):
        """The trace opens beside an idle profiler unless CALIBER_TRACE_BESIDE_PROFILER=0 (its
        records' clock is read and scaled: docs/timing.md, "Beside a profiler")."""
        saved = os.environ.pop(_torch.BESIDE_ENV, None)
        try:
            self.assertTrue(_torch.beside_profiler_allowed())
            os.environ[_torch.BESIDE_ENV] = "1"
            self.assertTrue(_torch.beside_profiler_allowed())
            os.environ[_torch.BESIDE_ENV] = "0"
            self.assertFalse(_torch.beside_profiler_allowed())
        finally:
            os.environ.pop(_torch.BESIDE_ENV, None)
            if saved is not None:
                os.environ[_torch.BESIDE_ENV] = saved

    def test_no_torch_is_never_idle(self):
        _torch.torch = None
        self.assertFalse(_torch.profiler_idle())


if __name__ == "__main__":
    unittest.main()
