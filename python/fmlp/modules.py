"""Why: the objects a PyTorch user holds: fmlp.MLP (gated blocks and
Linear-act stacks) and fmlp.Linear, each one C fmlp_mlp on a context. A call
takes a torch tensor of shape (..., dim) (or a float32 numpy array on the
CPU), hands torch's own data pointers to fmlp_mlp_forward and returns a
tensor torch allocated: nothing is copied on either side. The call path is
kept short on purpose; bench/python_overhead.py measures it.
"""
import ctypes
import sys
import threading

from . import _convert, _lib
from ._context import context as _default_context
from ._context import device_string
from .errors import InvalidArgument, ShapeError, Unsupported, check, from_status

_forward = _lib.mlp_forward
_byref = ctypes.byref

# torch is imported when the first module is built from it or called with a
# tensor; `import fmlp` works without it (numpy arrays, safetensors files).
_torch = None
_Tensor = type("_NoTorch", (), {})
_TORCH_DTYPES = {}
_raw_stream = None


def _load_torch():
    global _torch, _Tensor, _TORCH_DTYPES, _raw_stream
    if _torch is None:
        import torch
        _TORCH_DTYPES = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"}
        get = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        _raw_stream = get if get is not None else (lambda i: torch.cuda.current_stream(i).cuda_stream)
        _Tensor = torch.Tensor
        _torch = torch
    return _torch


def _mode_code(mode):
    try:
        return _lib.MODES[mode]
    except (KeyError, TypeError):
        raise InvalidArgument("mode %r is not a mode; use eager, compiled, fused or auto" % (mode,)) from None


def _dtype_code(dtype):
    if isinstance(dtype, str):
        if dtype in _lib.DTYPES:
            return _lib.DTYPES[dtype]
    else:
        _load_torch()
        if dtype in _TORCH_DTYPES:
            return _lib.DTYPES[_TORCH_DTYPES[dtype]]
    raise InvalidArgument("dtype %r is not one fmlp stores; use f32, bf16 or f16 (torch.float32, torch.bfloat16, "
                          "torch.float16)" % (dtype,))


def _rows_of(shape, strides, what):
    """(rows, cols, row stride, column stride) of an (..., cols) array whose
    leading dims flatten to rows of one stride, in elements."""
    if len(shape) == 0:
        raise ShapeError("%s is 0-dimensional; pass (..., features)" % what)
    cols, cs = shape[-1], strides[-1]
    if 0 in shape[:-1]:
        return 0, cols, cols, cs
    rows, ld, span = 1, None, None
    for n, s in zip(reversed(shape[:-1]), reversed(strides[:-1])):
        rows *= n
        if n == 1:
            continue
        if ld is None:
            ld, span = s, s * n
        elif s != span:
            raise ShapeError("%s has shape %s and strides %s: its leading dimensions are not rows of one stride; "
                             "pass %s.contiguous() (or reshape it to (rows, features))"
                             % (what, tuple(shape), tuple(strides), what))
        else:
            span *= n
    return rows, cols, (cols if ld is None or rows <= 1 else ld), cs


class _Handle:
    """Owns one fmlp_mlp; destroyed when the last reference (the module's,
    or a call in flight) goes, so close() never frees under a running call."""
    __slots__ = ("ptr", "ctx")

    def __init__(self, ptr, ctx):
        self.ptr, self.ctx = ptr, ctx

    def __del__(self):
        if self.ptr and not sys.is_finalizing():
            _lib.mlp_destroy(self.ptr)


class Plan:
    """The kernels a mode runs for a row count, known before running."""

    def __init__(self, info):
        self.mode = _lib.MODE_NAMES[info.mode]
        self.resolved = _lib.MODE_NAMES[info.resolved]
        self.rows = info.rows
        self.graph = bool(info.graph)
        self.why = info.why.decode()
        self.kernels = [dict(name=k.name.decode(), op=k.op.decode(), m=k.m, n=k.n, k=k.k, flops=k.flops,
                             bytes=k.bytes) for k in info.kernels[:info.n_kernels]]
        self.flops, self.bytes = info.flops, info.bytes

    def __len__(self):
        return len(self.kernels)

    def __str__(self):
        head = "plan: %s (%d rows): %d kernels" % (self.resolved, self.rows, len(self.kernels))
        if self.mode != self.resolved:
            head += " [auto: %s]" % self.why
        lines = [head]
        for i, k in enumerate(self.kernels, 1):
            lines.append("  %2d  %-40s %-12s %d x %d x %d" % (i, k["name"], k["op"], k["m"], k["n"], k["k"]))
        return "\n".join(lines)


class MLP:
    """An MLP block run by fmlp: gated (y = down(act(gate(x)) * up(x))) or
    a stack (Linear, act, ..., Linear). Build one with MLP.from_torch,
    MLP.from_safetensors, or directly (random weights, PyTorch's init scale):

        MLP(768, 3072, act="gelu_tanh", dtype="bf16", device="cuda")
    """

    def __init__(self, dim, hidden, out_dim=0, *, act="gelu_tanh", block="gated", layers=2, bias=False,
                 dtype="f32", device=None, mode="auto", context=None, seed=0, graph=False):
        if block not in ("gated", "stack"):
            raise InvalidArgument("block %r is not a block; use 'gated' or 'stack'" % (block,))
        if act not in _lib.ACTS:
            raise InvalidArgument("act %r is not an activation; use %s" % (act, ", ".join(_lib.ACTS)))
        desc = _lib.MlpDesc(_lib.BLOCK_GATED if block == "gated" else _lib.BLOCK_STACK, dim, hidden, out_dim,
                            layers if block == "stack" else 0, _lib.ACTS[act], bias, _dtype_code(dtype))
        self._build(desc, context if context is not None else _default_context(device), mode, seed, graph)

    def _build(self, desc, ctx, mode, seed=0, graph=False):
        self._mode = _mode_code(mode)
        h = ctypes.c_void_p()
        check(_lib.mlp_create(ctx._h, _byref(desc), seed, _byref(h)))
        self._handle = _Handle(h, ctx)
        self._ctx = ctx
        d = _lib.mlp_get_desc(h).contents
        self.dim, self.hidden, self.out_dim, self.layers = d.dim, d.hidden, d.out_dim, d.layers
        self.block = "gated" if d.block == _lib.BLOCK_GATED else "stack"
        self.act, self.bias = _lib.ACT_NAMES[d.act], bool(d.bias)
        self.dtype = _lib.DTYPE_NAMES[d.dtype]
        self._dt = d.dtype
        self._cuda = ctx.kind == "cuda"
        self._index = ctx.index
        self._tl = threading.local()
        self._tdtype = None
        if sys.modules.get("torch") is not None:
            _load_torch()
            self._tdtype = {v: k for k, v in _TORCH_DTYPES.items()}[self.dtype]
        if graph:
            self.graph = True

    # ---------------------------------------------------------------- construction

    @classmethod
    def from_torch(cls, module, mode="auto", device=None, *, context=None, graph=False):
        """An fmlp module computing what `module` computes, from its own
        weights in their dtype, on their device (or on `device`)."""
        _load_torch()
        d = _convert.describe(module)
        if cls is Linear and d.kind != "linear":
            raise InvalidArgument("fmlp.Linear.from_torch takes an nn.Linear, not %s; use fmlp.MLP.from_torch"
                                  % type(module).__name__)
        dtypes = {t.dtype for _, t in d.weights}
        if len(dtypes) > 1:
            raise InvalidArgument("the module's weights mix dtypes (%s); convert it to one with module.to(dtype)"
                                  % ", ".join(sorted(str(t) for t in dtypes)))
        ctx = context if context is not None else _default_context(device if device is not None else d.device)
        desc = _lib.MlpDesc(d.block, d.dim, d.hidden, d.out_dim, d.layers, _lib.ACTS[d.act], d.bias,
                            _dtype_code(d.dtype))
        self = cls.__new__(Linear if d.kind == "linear" else cls)
        self._build(desc, ctx, mode, graph=graph)
        for name, t in d.weights:
            self.set_weight(name, t)
        return self

    @classmethod
    def from_safetensors(cls, path, prefix="", act=None, dtype=None, device=None, mode="auto", *, context=None):
        """The MLP whose weights a safetensors file holds under `prefix`
        (e.g. "model.layers.0.mlp."), named as state_dict() names them. The
        sizes come from the file; `act` says the activation (the file does
        not), `dtype` defaults to the file's."""
        desc = _lib.MlpDesc()
        desc.act = _lib.ACTS["none"]
        path = str(path)
        check(_lib.mlp_desc_from_safetensors(path.encode(), prefix.encode(), _byref(desc)))
        single_linear = desc.block == _lib.BLOCK_STACK and desc.layers == 1
        if act is None and not single_linear:
            raise InvalidArgument("from_safetensors needs act=: the file holds weights, not which activation the "
                                  "module applies; pass act='gelu_tanh', 'silu', 'gelu' or 'relu'")
        if act is not None:
            if act not in _lib.ACTS:
                raise InvalidArgument("act %r is not an activation; use %s" % (act, ", ".join(_lib.ACTS)))
            desc.act = _lib.ACTS[act]
        desc.dtype = _dtype_code(dtype) if dtype is not None else _file_dtype(path, prefix, desc)
        self = cls.__new__(Linear if single_linear else cls)
        self._build(desc, context if context is not None else _default_context(device), mode)
        check(_lib.mlp_load_safetensors(self._h(), path.encode(), prefix.encode()))
        return self

    # ---------------------------------------------------------------- properties

    def _h(self):
        h = self._handle
        if h is None:
            raise InvalidArgument("this fmlp module was closed; build it again (from_torch / from_safetensors)")
        return h.ptr

    @property
    def context(self):
        return self._ctx

    @property
    def device(self):
        return device_string(self._ctx.kind, self._ctx.index)

    @property
    def mode(self):
        return _lib.MODE_NAMES[self._mode]

    @mode.setter
    def mode(self, mode):
        self._mode = _mode_code(mode)

    @property
    def graph(self):
        return getattr(self, "_graph", False)

    @graph.setter
    def graph(self, on):
        """CUDA: replay forwards as fmlp's own CUDA graphs (ignored inside a
        caller's capture, e.g. torch.cuda.graph)."""
        check(_lib.mlp_set_graph(self._h(), bool(on)))
        self._graph = bool(on)

    @property
    def closed(self):
        return self._handle is None

    def tensor_names(self):
        """fmlp's tensor names with shapes: [(name, shape)], as state_dict()."""
        out = []
        h = self._h()
        for i in range(_lib.mlp_tensor_count(h)):
            name, rows, cols = ctypes.c_char_p(), ctypes.c_int64(), ctypes.c_int64()
            check(_lib.mlp_tensor_info(h, i, _byref(name), _byref(rows), _byref(cols)))
            bias = name.value.endswith(b".bias")
            out.append((name.value.decode(), (rows.value,) if bias else (rows.value, cols.value)))
        return out

    def set_weight(self, name, tensor):
        """Sets one tensor (a torch tensor on any device, or a numpy array)
        by its state_dict name; converted to the module's dtype."""
        shapes = dict(self.tensor_names())
        if name not in shapes:
            raise InvalidArgument("%r is not a tensor of this module; it has %s" % (name, ", ".join(shapes)))
        shape = shapes[name]
        if hasattr(tensor, "detach"):
            t = tensor.detach()
            if t.device.type != "cpu":
                t = t.to("cpu")
            t = t.contiguous()
            code = _dtype_code(t.dtype)
            ptr, got = t.data_ptr(), tuple(t.shape)
        else:
            import numpy as np
            t = np.ascontiguousarray(tensor, dtype=np.float32)
            code, ptr, got = _lib.DTYPES["f32"], t.ctypes.data, t.shape
        if got != shape:
            raise ShapeError("%s has shape %s but the module needs %s" % (name, got, shape))
        check(_lib.mlp_set_weight(self._h(), name.encode(), code, ptr, shape[0], shape[1] if len(shape) > 1 else 1))

    def get_weight(self, name):
        """One tensor read back as a float32 numpy array (or torch tensor when
        torch is loaded)."""
        shape = dict(self.tensor_names()).get(name)
        if shape is None:
            raise InvalidArgument("%r is not a tensor of this module" % (name,))
        n = shape[0] * (shape[1] if len(shape) > 1 else 1)
        buf = (ctypes.c_float * n)()
        check(_lib.mlp_get_weight(self._h(), name.encode(), buf, shape[0], shape[1] if len(shape) > 1 else 1))
        if _torch is not None:
            return _torch.frombuffer(bytearray(buf), dtype=_torch.float32).reshape(shape)
        import numpy as np
        return np.frombuffer(bytearray(buf), dtype=np.float32).reshape(shape)

    def save_safetensors(self, path, prefix=""):
        """Writes the module's tensors as state_dict() names them, under
        `prefix`, to a safetensors file that from_safetensors reads back."""
        check(_lib.mlp_save_safetensors(self._h(), str(path).encode(), prefix.encode()))

    def plan(self, rows=1, mode=None):
        """The kernels `mode` (default: the module's) runs for `rows` rows."""
        info = _lib.PlanInfo()
        check(_lib.mlp_plan(self._h(), self._mode if mode is None else _mode_code(mode), rows, _byref(info)))
        return Plan(info)

    def close(self):
        """Frees the C module (once no call is running on it); later calls
        raise fmlp.InvalidArgument."""
        self._handle = None

    def __repr__(self):
        if self.block == "gated":
            shape = "dim=%d, hidden=%d, out_dim=%d, act=%s" % (self.dim, self.hidden, self.out_dim, self.act)
        else:
            shape = "dim=%d, hidden=%d, out_dim=%d, layers=%d, act=%s" % (self.dim, self.hidden, self.out_dim,
                                                                          self.layers, self.act)
        return "fmlp.%s(%s, bias=%s, dtype=%s, device=%s, mode=%s%s)" % (
            type(self).__name__, shape, self.bias, self.dtype, self.device, self.mode,
            ", closed" if self.closed else "")

    # ---------------------------------------------------------------- forward

    def _bufs(self):
        xt = _lib.Tensor(None, self._dt, int(self._cuda), 0, self.dim, self.dim)
        yt = _lib.Tensor(None, self._dt, int(self._cuda), 0, self.out_dim, self.out_dim)
        b = self._tl.b = (xt, yt, _byref(xt), _byref(yt))
        return b

    def __call__(self, x, mode=None):
        """y = module(x) for x of shape (..., dim); y has x's leading dims."""
        h = self._handle
        if not isinstance(x, _Tensor):
            return self._call_other(x, mode)
        if h is None:
            self._h()
        if x.requires_grad and _torch.is_grad_enabled():
            raise Unsupported("fmlp runs forwards only: x requires grad while autograd is on; call the module "
                              "under torch.no_grad() or torch.inference_mode(), or pass x.detach()")
        if x.dtype is not self._tdtype:
            return self._dtype_mismatch(x, mode)
        if x.is_cuda is not self._cuda:
            raise self._device_error(x)
        shape = x.shape
        if len(shape) == 2:
            rows, cols = shape
            ld, cs = x.stride()
            if rows <= 1:
                ld = cols
        else:
            rows, cols, ld, cs = _rows_of(shape, x.stride(), "x")
        if cols != self.dim or (cs != 1 and cols > 1):
            raise self._shape_error(cols, cs)
        out = self.out_dim
        if out == cols and ld == cols:
            y = _torch.empty_like(x)
        else:
            y = _torch.empty(shape[:-1] + (out,), dtype=self._tdtype, device=x.device)
        if rows == 0:
            return y
        if self._cuda:
            if x.get_device() != self._index:
                raise self._device_error(x)
            # 0 is torch's legacy default stream; NULL would mean fmlp's own, so it goes as cudaStreamLegacy
            self._ctx._use_stream(_raw_stream(self._index) or 1)
        try:
            xt, yt, bx, by = self._tl.b
        except AttributeError:
            xt, yt, bx, by = self._bufs()
        xt.data = x.data_ptr()
        xt.rows = rows
        xt.ld = ld
        yt.data = y.data_ptr()
        yt.rows = rows
        s = _forward(h.ptr, self._mode if mode is None else _mode_code(mode), bx, by)
        if s:
            raise from_status(s)
        return y

    forward = __call__

    def _call_other(self, x, mode):
        np = sys.modules.get("numpy")
        if np is not None and isinstance(x, np.ndarray):
            return self._call_numpy(np, x, mode)
        torch = sys.modules.get("torch")
        if _torch is None and torch is not None and isinstance(x, torch.Tensor):
            _load_torch()
            return self(x, mode)
        raise InvalidArgument("x is a %s; pass a torch.Tensor (or a float32 numpy array on the CPU)"
                              % type(x).__name__)

    def _call_numpy(self, np, x, mode):
        h = self._h()
        if self._cuda:
            raise InvalidArgument("x is a numpy array (host memory) but the module is on %s; pass a torch tensor "
                                  "on that device" % self.device)
        if x.dtype != np.float32 or self.dtype != "f32":
            raise InvalidArgument("x is a numpy %s array for an %s module; numpy input must be float32 for an "
                                  "f32 module (numpy has no bfloat16: use torch tensors for bf16)"
                                  % (x.dtype, self.dtype))
        item = x.itemsize
        if any(s % item for s in x.strides):
            raise ShapeError("x has strides %s bytes, not whole float32 elements; pass np.ascontiguousarray(x)"
                             % (x.strides,))
        rows, cols, ld, cs = _rows_of(x.shape, [s // item for s in x.strides], "x")
        if cols != self.dim or (cs != 1 and cols > 1):
            raise self._shape_error(cols, cs)
        y = np.empty(x.shape[:-1] + (self.out_dim,), dtype=np.float32)
        if rows == 0:
            return y
        xt = _lib.Tensor(x.ctypes.data, self._dt, 0, rows, cols, ld)
        yt = _lib.Tensor(y.ctypes.data, self._dt, 0, rows, self.out_dim, self.out_dim)
        check(_forward(h, self._mode if mode is None else _mode_code(mode), _byref(xt), _byref(yt)))
        return y

    def _dtype_mismatch(self, x, mode):
        if self._tdtype is None:  # built before torch was imported
            self._tdtype = {v: k for k, v in _TORCH_DTYPES.items()}[self.dtype]
            return self(x, mode)
        raise InvalidArgument("x is %s but the module is %s; convert x (x.to(%s)) or build the module in %s"
                              % (x.dtype, self.dtype, self._tdtype, x.dtype))

    def _device_error(self, x):
        return InvalidArgument("x is on %s but the module is on %s; move it with x.to(%r)"
                               % (x.device, self.device, self.device))

    def _shape_error(self, cols, cs):
        if cols != self.dim:
            return ShapeError("x has %d features in its last dimension but the module takes %d; pass (..., %d)"
                              % (cols, self.dim, self.dim))
        return ShapeError("x's last dimension has stride %d; fmlp reads each row contiguously: pass x.contiguous()"
                          % cs)

    def reference(self, x):
        """The double-precision reference of this module for host x
        (rows, dim), rounding x and the weights as stored: a float64 numpy
        array (rows, out_dim). For tests and checks."""
        import numpy as np
        xr = np.ascontiguousarray(np.asarray(x, dtype=np.float64).reshape(-1, self.dim))
        y = np.empty((xr.shape[0], self.out_dim), dtype=np.float64)
        check(_lib.mlp_reference(self._h(), xr.ctypes.data, xr.shape[0], y.ctypes.data))
        return y


class Linear(MLP):
    """nn.Linear run by fmlp: y = x @ W.T + b."""

    def __init__(self, in_features, out_features, bias=True, *, dtype="f32", device=None, mode="auto",
                 context=None, seed=0):
        desc = _lib.MlpDesc(_lib.BLOCK_STACK, in_features, 0, out_features, 1, _lib.ACTS["none"], bias,
                            _dtype_code(dtype))
        self._build(desc, context if context is not None else _default_context(device), mode, seed)

    @property
    def in_features(self):
        return self.dim

    @property
    def out_features(self):
        return self.out_dim

    def __repr__(self):
        return "fmlp.Linear(in_features=%d, out_features=%d, bias=%s, dtype=%s, device=%s, mode=%s%s)" % (
            self.dim, self.out_dim, self.bias, self.dtype, self.device, self.mode, ", closed" if self.closed else "")


def _file_dtype(path, prefix, desc):
    """The dtype of the first weight the MLP reads from the file."""
    f = ctypes.c_void_p()
    check(_lib.st_open(path.encode(), _byref(f)))
    try:
        first = "gate_proj.weight" if desc.block == _lib.BLOCK_GATED else "0.weight"
        dt = ctypes.c_int()
        check(_lib.st_find(f, (prefix + first).encode(), _byref(dt), None, None, None))
        return dt.value
    finally:
        _lib.st_close(f)
