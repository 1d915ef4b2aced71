"""A tuned kernel of the stand-in, shaped like FlagGems' Triton ops: @libentry() over @libtuner()
over a kernel, four BLOCK configs, keyed on the size with the "log" strategy (sizes 100 and 120
share the key 128, as nearby shapes share a config in FlagGems)."""

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
