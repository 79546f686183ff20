"""Why: a C context (fmlp_ctx) owns a device's backend state: the CPU thread
pool, or a GPU's streams, cuBLASLt handle and workspace. Modules share one
default context per device (fmlp.context(device)), so they share one thread
pool and one stream, and a profiler attached to that context sees every
module on the device. Explicit Context objects exist for other thread
counts or CPU code paths.
"""
import ctypes
import sys
import threading

from . import _lib
from .errors import InvalidArgument, check


def parse_device(device):
    """("cpu", 0) or ("cuda", index) from None, "cpu", "cuda", "cuda:N",
    an int (a CUDA ordinal), a torch.device or a Context."""
    if isinstance(device, Context):
        return device.kind, device.index
    if device is None:
        return "cpu", 0
    if isinstance(device, int) and not isinstance(device, bool):
        return "cuda", device
    s = str(device)
    if s == "cpu":
        return "cpu", 0
    if s == "cuda":
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available():
            return "cuda", torch.cuda.current_device()
        return "cuda", 0
    if s.startswith("cuda:") and s[5:].isdigit():
        return "cuda", int(s[5:])
    raise InvalidArgument("device %r is not a device fmlp runs on; use 'cpu', 'cuda' or 'cuda:N'" % (device,))


def device_string(kind, index):
    return "cpu" if kind == "cpu" else "cuda:%d" % index


class Context:
    """One fmlp_ctx: a device and what forwards on it share.

    threads: CPU worker threads (0: one per core). cpu_path: force a CPU code
    path ("scalar", "avx2", "avx512", "avx512bf16", "amx"; None: the best).
    """

    def __init__(self, device="cpu", threads=0, cpu_path=None):
        self.kind, self.index = parse_device(device)
        opt = _lib.CtxOptions(_lib.DEVICE_CPU if self.kind == "cpu" else _lib.DEVICE_CUDA, self.index, threads,
                              cpu_path.encode() if cpu_path else None)
        h = ctypes.c_void_p()
        check(_lib.ctx_create(ctypes.byref(opt), ctypes.byref(h)))
        self._h = h
        self._tl = threading.local()

    @property
    def device(self):
        """'cpu' or 'cuda:N'."""
        return device_string(self.kind, self.index)

    @property
    def threads(self):
        return _lib.ctx_threads(self._h)

    def cpu_path(self, dtype="f32"):
        """The CPU code path forwards in `dtype` take, e.g. 'avx512bf16'."""
        if dtype not in _lib.DTYPES:
            raise InvalidArgument("dtype %r is not one of f32, bf16, f16" % (dtype,))
        return _lib.ctx_cpu_path(self._h, _lib.DTYPES[dtype]).decode()

    def synchronize(self):
        """Waits for the device work of this context (no-op on the CPU)."""
        check(_lib.ctx_synchronize(self._h))

    def set_stream(self, stream):
        """Sends this thread's forwards on the context to `stream`: a raw
        cudaStream_t as an int, or an object with .cuda_stream (a
        torch.cuda.Stream; torch's default stream goes as cudaStreamLegacy);
        None restores the context's own. Modules do this themselves with
        torch's current stream before each CUDA forward."""
        raw = (stream.cuda_stream or 1) if hasattr(stream, "cuda_stream") else (stream or 0)
        check(_lib.ctx_set_stream(self._h, raw or None))
        self._tl.stream = raw

    @property
    def stream(self):
        """The raw stream this thread's forwards go to (None on the CPU)."""
        out = ctypes.c_void_p()
        check(_lib.ctx_get_stream(self._h, ctypes.byref(out)))
        return out.value

    def _use_stream(self, raw):
        if getattr(self._tl, "stream", 0) != raw:
            check(_lib.ctx_set_stream(self._h, raw or None))
            self._tl.stream = raw

    def __repr__(self):
        return "fmlp.Context(device=%r, threads=%d)" % (self.device, self.threads)

    def __del__(self):
        h = getattr(self, "_h", None)
        # At interpreter exit the CUDA runtime may be gone already.
        if h and not sys.is_finalizing():
            _lib.ctx_destroy(h)


_defaults = {}
_defaults_lock = threading.Lock()


def context(device=None):
    """The default context for `device` ('cpu', 'cuda', 'cuda:N', a
    torch.device; None: 'cpu'), created on first use and shared by every
    module on that device."""
    if isinstance(device, Context):
        return device
    key = parse_device(device)
    with _defaults_lock:
        ctx = _defaults.get(key)
        if ctx is None:
            ctx = _defaults[key] = Context(device_string(*key))
        return ctx


def existing_contexts():
    """The default contexts made so far."""
    with _defaults_lock:
        return list(_defaults.values())


def cuda_device_count():
    """CUDA devices fmlp sees (0 when built without CUDA or with no GPU)."""
    return _lib.cuda_device_count()
