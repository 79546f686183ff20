"""Why: a trace written by fmlp or by torch.profiler is read back with the
C library's readers, so the same table, analyses and verdict apply to both:
fmlp.trace.summarize(path) and fmlp.trace.diff(a, b) are `fmlp trace
summarize` and `fmlp trace diff` as Python calls.
"""
import contextlib
import ctypes

from . import _lib, _trace_api
from .errors import InvalidArgument, check
from .profiler import Summary


class TraceSummary:
    """A trace's table and analyses (.text) and verdict (.summary)."""

    def __init__(self, path, text, summary):
        self.path, self.text, self.summary = path, text, summary

    def __str__(self):
        return self.text


@contextlib.contextmanager
def _opened(paths):
    f = _trace_api.fns()
    handles = []
    try:
        for p in paths:
            h = ctypes.c_void_p()
            check(f["open"](str(p).encode(), ctypes.byref(h)), str(p))
            handles.append(h)
        yield f, handles
    finally:
        for h in handles:
            f["close"](h)


def summarize(path, sort_by=None, row_limit=-1):
    """The table (sort_by, row_limit as key_averages().table) with the
    analyses, and the verdict, of one trace file (.json or .json.gz)."""
    with _opened([path]) as (f, (h,)):
        opt = _lib.TableOptions(sort_by.encode() if sort_by else None, row_limit if row_limit else -1, True)
        out = ctypes.c_void_p()
        check(f["table"](h, ctypes.byref(opt), ctypes.byref(out)), str(path))
        text = _lib.take_string(out.value)
        s = _lib.ProfileSummary()
        check(f["summary"](h, ctypes.byref(s)), str(path))
        return TraceSummary(str(path), text, Summary(str(path), s))


def diff(a, b, *more):
    """Traces side by side (2 to 4): kernels per step, the time split, time
    per kernel name; returns the text `fmlp trace diff` prints."""
    paths = [a, b, *more]
    if len(paths) > 4:
        raise InvalidArgument("diff takes 2 to 4 traces, got %d" % len(paths))
    with _opened(paths) as (f, handles):
        arr = (ctypes.c_void_p * len(handles))(*[h.value for h in handles])
        out = ctypes.c_void_p()
        check(f["diff"](arr, len(handles), ctypes.byref(out)))
        return _lib.take_string(out.value)
