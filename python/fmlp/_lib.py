"""Why: the one place that knows the C library's binary interface. It finds
and loads libfmlp.so, declares the structs of include/fmlp.h that cross the
boundary and every function's signature, so the rest of the package speaks
Python. The binding is ctypes: python/README.md says why and what it costs.
"""
import ctypes
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def _library_path():
    env = os.environ.get("FMLP_LIBRARY")
    if env:
        if not os.path.exists(env):
            raise ImportError("FMLP_LIBRARY=%s does not exist; point it at a built libfmlp.so "
                              "(cmake --build build --target fmlp_shared) or unset it" % env)
        return env
    path = os.path.join(_HERE, "libfmlp.so")
    if not os.path.exists(path):
        raise ImportError("fmlp's C library libfmlp.so is not installed beside %s; install the package with "
                          "`pip install --no-build-isolation ./python` (or `make python`) from the repository, "
                          "or set FMLP_LIBRARY to a built libfmlp.so" % _HERE)
    return path


PATH = _library_path()
lib = ctypes.CDLL(PATH)
_libc = ctypes.CDLL(None)
_libc.free.argtypes = [ctypes.c_void_p]
_libc.free.restype = None

c_int, c_int64, c_bool, c_double, c_void_p, c_char_p = (ctypes.c_int, ctypes.c_int64, ctypes.c_bool,
                                                         ctypes.c_double, ctypes.c_void_p, ctypes.c_char_p)
P = ctypes.POINTER

# Enumerations, as include/fmlp.h numbers them.
DTYPES = {"f32": 0, "bf16": 1, "f16": 2}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}
MODES = {"eager": 0, "compiled": 1, "fused": 2, "auto": 3}
MODE_NAMES = {v: k for k, v in MODES.items()}
ACTS = {"none": 0, "gelu": 1, "gelu_tanh": 2, "silu": 3, "relu": 4}
ACT_NAMES = {v: k for k, v in ACTS.items()}
BLOCK_GATED, BLOCK_STACK = 0, 1
DEVICE_CPU, DEVICE_CUDA = 0, 1
ACTIVITY_CPU, ACTIVITY_CUDA = 1, 2
BOUNDS = {0: "overhead-bound", 1: "memory-bound", 2: "compute-bound", 3: "copy-bound"}
MAX_LAYERS = 32


class Tensor(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("dtype", c_int), ("device", c_int), ("rows", c_int64), ("cols", c_int64),
                ("ld", c_int64)]


class MlpDesc(ctypes.Structure):
    _fields_ = [("block", c_int), ("dim", c_int64), ("hidden", c_int64), ("out_dim", c_int64), ("layers", c_int),
                ("act", c_int), ("bias", c_bool), ("dtype", c_int)]


class CtxOptions(ctypes.Structure):
    _fields_ = [("device", c_int), ("device_index", c_int), ("threads", c_int), ("cpu_path", c_char_p)]


class KernelInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 96), ("op", ctypes.c_char * 32), ("m", c_int64), ("n", c_int64),
                ("k", c_int64), ("flops", c_int64), ("bytes", c_int64)]


class PlanInfo(ctypes.Structure):
    _fields_ = [("mode", c_int), ("resolved", c_int), ("device", c_int), ("dtype", c_int), ("rows", c_int64),
                ("graph", c_bool), ("why", ctypes.c_char * 128), ("n_kernels", c_int),
                ("kernels", KernelInfo * 72), ("flops", c_int64), ("bytes", c_int64)]


TRACE_READY = ctypes.CFUNCTYPE(None, c_void_p, c_void_p)


class ProfilerOptions(ctypes.Structure):
    _fields_ = [("activities", c_int), ("record_shapes", c_bool), ("profile_memory", c_bool),
                ("with_flops", c_bool), ("skip_first", c_int), ("wait", c_int), ("warmup", c_int),
                ("active", c_int), ("repeat", c_int), ("on_trace_ready", TRACE_READY), ("user", c_void_p),
                ("rank", c_int), ("world_size", c_int), ("dist_backend", c_char_p)]


class TableOptions(ctypes.Structure):
    _fields_ = [("sort_by", c_char_p), ("row_limit", c_int), ("analyses", c_bool)]


class ProfileSummary(ctypes.Structure):
    _fields_ = [("steps", c_int), ("wall_us", c_double), ("kernel_us", c_double), ("overhead_us", c_double),
                ("idle_us", c_double), ("kernels_per_step", c_int), ("copies_per_step", c_int), ("bound", c_int),
                ("reason", ctypes.c_char * 256), ("copy_us", c_double), ("copy_bytes", c_double)]


def _declare(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


last_error = _declare("fmlp_last_error", c_char_p)
status_name = _declare("fmlp_status_name", c_char_p, c_int)
ctx_create = _declare("fmlp_ctx_create", c_int, P(CtxOptions), P(c_void_p))
ctx_destroy = _declare("fmlp_ctx_destroy", None, c_void_p)
ctx_threads = _declare("fmlp_ctx_threads", c_int, c_void_p)
ctx_cpu_path = _declare("fmlp_ctx_cpu_path", c_char_p, c_void_p, c_int)
ctx_synchronize = _declare("fmlp_ctx_synchronize", c_int, c_void_p)
ctx_set_stream = _declare("fmlp_ctx_set_stream", c_int, c_void_p, c_void_p)
ctx_get_stream = _declare("fmlp_ctx_get_stream", c_int, c_void_p, P(c_void_p))
cuda_device_count = _declare("fmlp_cuda_device_count", c_int)
mlp_create = _declare("fmlp_mlp_create", c_int, c_void_p, P(MlpDesc), ctypes.c_uint64, P(c_void_p))
mlp_destroy = _declare("fmlp_mlp_destroy", None, c_void_p)
mlp_get_desc = _declare("fmlp_mlp_get_desc", P(MlpDesc), c_void_p)
mlp_tensor_count = _declare("fmlp_mlp_tensor_count", c_int, c_void_p)
mlp_tensor_info = _declare("fmlp_mlp_tensor_info", c_int, c_void_p, c_int, P(c_char_p), P(c_int64), P(c_int64))
mlp_set_weight = _declare("fmlp_mlp_set_weight", c_int, c_void_p, c_char_p, c_int, c_void_p, c_int64, c_int64)
mlp_get_weight = _declare("fmlp_mlp_get_weight", c_int, c_void_p, c_char_p, c_void_p, c_int64, c_int64)
mlp_load_safetensors = _declare("fmlp_mlp_load_safetensors", c_int, c_void_p, c_char_p, c_char_p)
mlp_save_safetensors = _declare("fmlp_mlp_save_safetensors", c_int, c_void_p, c_char_p, c_char_p)
mlp_desc_from_safetensors = _declare("fmlp_mlp_desc_from_safetensors", c_int, c_char_p, c_char_p, P(MlpDesc))
mlp_plan = _declare("fmlp_mlp_plan", c_int, c_void_p, c_int, c_int64, P(PlanInfo))
mlp_set_graph = _declare("fmlp_mlp_set_graph", c_int, c_void_p, c_bool)
mlp_reference = _declare("fmlp_mlp_reference", c_int, c_void_p, c_void_p, c_int64, c_void_p)
st_open = _declare("fmlp_st_open", c_int, c_char_p, P(c_void_p))
st_close = _declare("fmlp_st_close", None, c_void_p)
st_find = _declare("fmlp_st_find", c_int, c_void_p, c_char_p, P(c_int), P(c_int64), P(c_int64), P(c_void_p))
profiler_create = _declare("fmlp_profiler_create", c_int, c_void_p, P(ProfilerOptions), P(c_void_p))
profiler_destroy = _declare("fmlp_profiler_destroy", None, c_void_p)
profiler_start = _declare("fmlp_profiler_start", c_int, c_void_p)
profiler_stop = _declare("fmlp_profiler_stop", c_int, c_void_p)
profiler_step = _declare("fmlp_profiler_step", c_int, c_void_p)
profiler_table_string = _declare("fmlp_profiler_table_string", c_int, c_void_p, P(TableOptions), P(c_void_p))
profiler_export_trace = _declare("fmlp_profiler_export_trace", c_int, c_void_p, c_char_p)
profiler_summary = _declare("fmlp_profiler_summary", c_int, c_void_p, P(ProfileSummary))
range_push = _declare("fmlp_range_push", None, c_void_p, c_char_p)
range_pop = _declare("fmlp_range_pop", None, c_void_p)

# The forward is called without argtypes: ctypes then skips its per-argument
# conversion, which is most of a call's cost. Callers pass a c_void_p handle,
# a Python int mode and byref() tensors, exactly the C types.
mlp_forward = lib.fmlp_mlp_forward
mlp_forward.restype = c_int


def take_string(ptr):
    """The text of a malloc'd C string the library returned, freed."""
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        _libc.free(ptr)

