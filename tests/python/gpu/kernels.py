"""Kernels for the H200 checks of the Python package (scripts/py-check): a Triton vector add, the
same add under @triton.autotune (caliber's tune cache keeps its choice), a Triton fused softmax
(one row per program), a Triton kernel that reads far outside its buffer (an illegal address,
for crash isolation), and a torch.compile'd pointwise chain."""

import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def triton_add(x, y, out=None):
    out = torch.empty_like(x) if out is None else out
    n = x.numel()
    _add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out


# Four configs: Triton benchmarks each in the provider's first call unless caliber seeds its
# cache with a cached choice (docs/python.md, "Autotuning and the tune cache").
@triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=w)
                          for b, w in ((256, 2), (512, 4), (1024, 4), (2048, 8))],
                 key=["n"])
@triton.jit
def add_tuned_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def triton_add_tuned(x, y, out=None):
    out = torch.empty_like(x) if out is None else out
    n = x.numel()
    add_tuned_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    return out


@triton.jit
def _softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def triton_softmax(x, out=None):
    rows, cols = x.shape
    out = torch.empty_like(x) if out is None else out
    block = triton.next_power_of_2(cols)
    warps = 4 if block <= 2048 else 8 if block <= 8192 else 16
    _softmax_kernel[(rows,)](out, x, x.stride(0), out.stride(0), cols, BLOCK=block,
                             num_warps=warps)
    return out


@triton.jit
def _bad_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    # 2^40 elements past the buffer: no mapping there, an illegal address on every load.
    x = tl.load(x_ptr + offs + (1 << 40))
    tl.store(out_ptr + offs, x, mask=offs < n)


def triton_bad(x):
    out = torch.empty_like(x)
    _bad_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out


def _chain(x, y):
    return torch.nn.functional.gelu(x) * y + x


compiled_chain = torch.compile(_chain)


def eager_chain(x, y):
    return _chain(x, y)
