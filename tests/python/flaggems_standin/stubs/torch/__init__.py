"""A tiny stand-in for torch, only what the stand-in FlagGems tree touches (CI has no torch).

Tensors carry a shape and a dtype; an op does host work proportional to its output's size, and
inside flag_gems.use_gems() torch's ops dispatch to the stand-in gems ops (flag_gems registers
them in `_gems_ops`), as FlagGems' aten overrides do."""

import os
import math

_gems_ops = {}       # name -> replacement, while flag_gems.use_gems() is active
_flop_counters = []  # FlopCounterMode objects counting


class dtype:
    def __init__(self, name, size, floating=True):
        self.name = name
        self.itemsize = size
        self.is_floating_point = floating

    def __repr__(self):
        return "torch." + self.name

    __str__ = __repr__


float16 = dtype("float16", 2)
bfloat16 = dtype("bfloat16", 2)
float32 = dtype("float32", 4)
float64 = dtype("float64", 8)
complex64 = dtype("complex64", 8, floating=False)
cfloat = complex64
int32 = dtype("int32", 4, floating=False)
uint8 = dtype("uint8", 1, floating=False)
int64 = dtype("int64", 8, floating=False)
bool = dtype("bool", 1, floating=False)  # noqa: A001 - torch's own name


class Size(tuple):
    def __repr__(self):
        return "torch.Size([%s])" % ", ".join(str(d) for d in self)

    __str__ = __repr__


def _work(n):
    """Host work proportional to n elements (about 1 unit per 256)."""
    s = 0
    for i in range(max(1, n >> 8)):
        s += i
    return s


class Tensor:
    def __init__(self, shape, dtype=float32, contiguous=True, requires_grad=False):
        self.shape = Size(int(d) for d in shape)
        self.dtype = dtype
        self._contiguous = contiguous
        self.requires_grad = requires_grad
        self.grad = None

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def numel(self):
        return math.prod(self.shape) if self.shape else 1

    def dim(self):
        return len(self.shape)

    def element_size(self):
        return self.dtype.itemsize

    def is_contiguous(self):
        return self._contiguous

    def clone(self):
        return Tensor(self.shape, self.dtype)

    def requires_grad_(self, flag=True):
        self.requires_grad = flag
        return self

    def t(self):
        return Tensor(tuple(reversed(self.shape)), self.dtype, contiguous=False)

    def mm(self, other):
        return _op("mm", self, other)

    def add_(self, other):
        _op("add", self, other)
        return self

    def __repr__(self):
        return "tensor(shape=%s, dtype=%s)" % (list(self.shape), self.dtype)


def _out_shape(name, a, b=None):
    if name == "mm":
        return (a.shape[0], b.shape[1])
    return a.shape


def _op(name, a, b=None, **kwargs):
    gems = _gems_ops.get(name)
    if gems is not None:
        return gems(a, b, **kwargs) if b is not None else gems(a, **kwargs)
    return _compute(name, a, b, factor=1)


def _compute(name, a, b=None, factor=1):
    shape = _out_shape(name, a, b)
    n = math.prod(shape) if shape else 1
    if name == "mm":
        n *= max(1, a.shape[1] // 16)
    for c in _flop_counters:
        c.total += 2 * n
    _work(n * factor)
    return Tensor(shape, a.dtype)


def add(a, b, alpha=1):
    return _op("add", a, b)


def softmax(x, dim=-1, dtype=None):
    return _op("softmax", x)


def _shape_args(shape):
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        return tuple(shape[0])
    return shape


def randn(*shape, size=None, dtype=float32, device=None, requires_grad=False):
    return Tensor(_shape_args(shape) if size is None else tuple(size), dtype,
                  requires_grad=requires_grad)


rand = empty = zeros = ones = randn


def randint(low, high, size, dtype=int64, device=None):
    return Tensor(size, dtype)


def _convert_weight_to_int4pack(w, inner_k_tiles):
    """aten's: uint8 [n, k/2] (two int4 values a byte) in."""
    return _op("int4pack", w)


def randn_like(t, dtype=None):
    return Tensor(t.shape, dtype or t.dtype)


empty_like = rand_like = randn_like


def complex(real, imag):  # noqa: A001 - torch's own name
    return Tensor(real.shape, complex64)


def manual_seed(seed):
    """Recorded where STANDIN_SEED_LOG names a file (a test reads which seed the run gave)."""
    log = os.environ.get("STANDIN_SEED_LOG")
    if log:
        with open(log, "a") as f:
            f.write("%d\n" % seed)


def is_tensor(x):
    return isinstance(x, Tensor)


def is_floating_point(x):
    return x.dtype.is_floating_point


def device(name):
    return name


class _Autograd:
    @staticmethod
    def grad(outputs, inputs, grad_outputs=None, retain_graph=False):
        out = outputs[0] if isinstance(outputs, (list, tuple)) else outputs
        _compute("backward", out, factor=2 if _gems_ops else 1)
        return tuple(Tensor(x.shape, x.dtype) for x in inputs)


autograd = _Autograd()


class _Fft:
    @staticmethod
    def fft(x):
        return _op("fft", x)


fft = _Fft()


class _Cuda:
    @staticmethod
    def is_available():
        return False

    @staticmethod
    def synchronize():
        pass

    @staticmethod
    def empty_cache():
        pass


cuda = _Cuda()


class _Backends:
    class cuda:
        class matmul:
            allow_tf32 = True


backends = _Backends()
__version__ = "2.11.0+standin"


class version:
    cuda = None
