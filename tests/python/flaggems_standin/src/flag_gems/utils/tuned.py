"""Tuned kernels of the stand-in, shaped like FlagGems' Triton ops: @libentry() over @libtuner()
over a kernel, four BLOCK configs each. `scale` is keyed on the size with the "log" strategy
(sizes 100 and 120 share the key 128, as nearby shapes share a config in FlagGems); `mm` (the
stand-in's gems mm, flag_gems/__init__.py) on M, N and K, as FlagGems' mm is. `softmax` is
under plain @triton.autotune (keyed on its size), as FlagGems' norms and softmax are: Triton keeps
its choice in the process, no database."""

import triton

from .libentry import Config, jit, libentry, libtuner

CONFIGS = [Config({"BLOCK": b}, num_warps=4, num_stages=2) for b in (16, 32, 64, 128)]


@libentry()
@libtuner(configs=CONFIGS, key=["n"], strategy="log")
@jit
def scale_kernel(x, out, n, factor, BLOCK=16):
    for start in range(0, n, BLOCK):
        for i in range(start, min(start + BLOCK, n)):
            out[i] = x[i] * factor


def scale(x, factor=2.0):
    """x * factor through the tuned kernel (a list of floats)."""
    out = [0.0] * len(x)
    scale_kernel.run(x, out, len(x), factor)
    return out


@libentry()
@libtuner(configs=CONFIGS, key=["M", "N", "K"])
@jit
def mm_kernel(a, b, M, N, K, BLOCK=16):
    import os
    import torch
    if os.environ.get("STANDIN_MM_CRASHES"):  # a kernel that kills its process (crash isolation)
        import signal
        os.kill(os.getpid(), signal.SIGSEGV)
    return torch._compute("mm", a, b, factor=int(os.environ.get("STANDIN_GEMS_FACTOR", "3")))


def mm(a, b, **kwargs):
    """The stand-in's gems mm: a LibTuner sweep on a new (M, N, K), then three times torch's
    work."""
    return mm_kernel.run(a, b, a.shape[0], b.shape[1], a.shape[1])


@triton.autotune(configs=CONFIGS, key=["n"])
@libentry()
@jit
def softmax_kernel(a, n, BLOCK=16):
    import os
    import torch
    return torch._compute("softmax", a, None,
                          factor=int(os.environ.get("STANDIN_GEMS_FACTOR", "3")))


def softmax(a, b=None, **kwargs):
    """The stand-in's gems softmax: a plain Triton autotune sweep on a new size, then three
    times torch's work."""
    return softmax_kernel.run(a, a.numel())
