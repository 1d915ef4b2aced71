"""Stand-in Triton: caliber must route every FlagGems timing call to its own timers."""

__version__ = "3.6.0+standin"


class _Testing:
    @staticmethod
    def do_bench(*args, **kwargs):
        raise RuntimeError("stand-in triton.testing.do_bench was called: caliber must time it")

    @staticmethod
    def do_bench_cudagraph(*args, **kwargs):
        raise RuntimeError("stand-in triton.testing.do_bench_cudagraph was called: caliber must "
                           "time it")


testing = _Testing()
