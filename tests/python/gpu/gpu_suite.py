# A Python op suite on the cuda backend (scripts/py-check): torch ops as baselines, Triton
# kernels and a torch.compile kernel as candidates, a float64 reference each, and one op whose
# Triton kernel reads an illegal address. `python3 -m caliber batch` runs each op in a process of
# its own, so the broken op fails alone; `python3 -m caliber run` stops timing after it (a sticky
# CUDA error poisons the process) and reports the later cases as not run.
import os
import sys

import torch

import caliber

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernels  # noqa: E402


def pair(case):
    x = torch.rand(case.shape, device=case.device, dtype=case.torch_dtype) + 0.5
    y = torch.rand(case.shape, device=case.device, dtype=case.torch_dtype) + 0.5
    return x, y


def one(case):
    return (torch.randn(case.shape, device=case.device, dtype=case.torch_dtype),)


OPS = [
    caliber.Op(name="py_vadd", family="pointwise", dtypes=["f32"], shapes=[[1 << 20], [1 << 24]],
               inputs=pair, baseline=("torch", torch.add),
               candidate=("triton", kernels.triton_add),
               reference=lambda x, y: x.double() + y.double(), backends=["cuda"],
               bytes=lambda c: 12 * c.numel),
    caliber.Op(name="py_illegal", family="pointwise", dtypes=["f32"], shapes=[[1 << 20]],
               inputs=one, baseline=("torch", torch.clone),
               candidate=("triton_bad", kernels.triton_bad), backends=["cuda"]),
    caliber.Op(name="py_softmax", family="norm", dtypes=["f16"], shapes=[[4096, 4096]],
               inputs=one, baseline=("torch", lambda x: torch.softmax(x, dim=-1)),
               candidate=("triton", kernels.triton_softmax),
               reference=lambda x: torch.softmax(x.double(), dim=-1), backends=["cuda"],
               bytes=lambda c: 4 * c.numel),
    caliber.Op(name="py_chain", family="pointwise", dtypes=["f32"], shapes=[[1 << 24]],
               inputs=pair, baseline=("eager", kernels.eager_chain),
               candidate=("compiled", kernels.compiled_chain),
               reference=lambda x, y: kernels.eager_chain(x.double(), y.double()),
               tolerance=(1e-5, 1e-5), backends=["cuda"], bytes=lambda c: 12 * c.numel),
]
