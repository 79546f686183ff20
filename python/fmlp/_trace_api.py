"""Why: fmlp.trace reads trace files through the C library's trace readers
(the same code as `fmlp trace summarize/diff`), never a parser of its own;
this is the one place that declares those C functions (include/fmlp.h,
"trace files"). Strings come back malloc'd and are freed with free().
"""
import ctypes

from . import _lib

P = ctypes.POINTER
_fns = None


def fns():
    global _fns
    if _fns is None:
        _fns = {
            "open": _lib._declare("fmlp_trace_open", ctypes.c_int, ctypes.c_char_p, P(ctypes.c_void_p)),
            "close": _lib._declare("fmlp_trace_close", None, ctypes.c_void_p),
            "summary": _lib._declare("fmlp_trace_summary", ctypes.c_int, ctypes.c_void_p, P(_lib.ProfileSummary)),
            "table": _lib._declare("fmlp_trace_summary_string", ctypes.c_int, ctypes.c_void_p, P(_lib.TableOptions),
                                   P(ctypes.c_void_p)),
            "diff": _lib._declare("fmlp_trace_diff_string", ctypes.c_int, P(ctypes.c_void_p), ctypes.c_int,
                                  P(ctypes.c_void_p)),
        }
    return _fns
