# A Python op suite with a real @triton.autotune kernel (scripts/py-check's autotune check): run
# twice against one tune cache, the first run's rows say Triton swept (source tuned, swept_by
# triton) and the second's that caliber's cache gave the config (source cache) with no sweep.
# Every config Triton benchmarks is appended to $AUTOTUNE_LOG, so the check counts sweeps.
import os
import sys

import torch

import caliber

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernels  # noqa: E402

if os.environ.get("AUTOTUNE_LOG"):
    _bench = kernels.add_tuned_kernel._bench

    def _counted(*args, **kwargs):
        with open(os.environ["AUTOTUNE_LOG"], "a") as f:
            f.write("bench %s\n" % (kwargs.get("config"),))
        return _bench(*args, **kwargs)

    kernels.add_tuned_kernel._bench = _counted


def pair(case):
    x = torch.rand(case.shape, device=case.device, dtype=case.torch_dtype) + 0.5
    y = torch.rand(case.shape, device=case.device, dtype=case.torch_dtype) + 0.5
    return x, y


OPS = [
    caliber.Op(name="py_vadd_tuned", family="pointwise", dtypes=["f32"],
               shapes=[[1 << 20], [1 << 24]], inputs=pair, baseline=("torch", torch.add),
               candidate=("triton_tuned", kernels.triton_add_tuned),
               autotune={"triton_tuned": kernels.add_tuned_kernel},
               reference=lambda x, y: x.double() + y.double(), backends=["cuda"],
               bytes=lambda c: 12 * c.numel),
]
