"""FlopCounterMode of the stand-in torch: counts 2 flops per output element of each op."""

import torch


class FlopCounterMode:
    def __init__(self, display=False):
        self.total = 0

    def __enter__(self):
        torch._flop_counters.append(self)
        return self

    def __exit__(self, *exc):
        torch._flop_counters.remove(self)

    def get_total_flops(self):
        return self.total
