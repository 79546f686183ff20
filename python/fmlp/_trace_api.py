"""Why: fmlp.trace reads trace files through the C library's trace readers
(the same code as `fmlp trace summarize/diff`), never a parser of its own.
Those readers are becoming public C API; this seam is the only place that
names the C functions, looked up by name so the package works with a
library that has them and says clearly what is missing with one that
does not. Expected (include/fmlp.h):

  fmlp_status fmlp_trace_open(const char *path, fmlp_trace **out);
  void        fmlp_trace_close(fmlp_trace *t);
  fmlp_status fmlp_trace_summary(fmlp_trace *t, fmlp_profile_summary *out);
  fmlp_status fmlp_trace_table_string(fmlp_trace *t, const fmlp_table_options *opt, char **out);
  fmlp_status fmlp_trace_diff_string(fmlp_trace *const *traces, int n, char **out);

Strings come back malloc'd, freed here with free().
"""
import ctypes

from . import _lib
from .errors import Unsupported

NAMES = ("fmlp_trace_open", "fmlp_trace_close", "fmlp_trace_summary", "fmlp_trace_table_string",
         "fmlp_trace_diff_string")
P = ctypes.POINTER
_fns = None


def missing():
    """The expected C functions this libfmlp.so lacks."""
    return [n for n in NAMES if not _lib.has(n)]


def fns():
    global _fns
    if _fns is None:
        gone = missing()
        if gone:
            raise Unsupported("fmlp.trace needs the C library's trace API, and %s lacks %s; rebuild libfmlp.so "
                              "from a tree that has it, or use the CLI: `fmlp trace summarize FILE`, "
                              "`fmlp trace diff A B`" % (_lib.PATH, ", ".join(gone)))
        _fns = {
            "open": _lib._declare("fmlp_trace_open", ctypes.c_int, ctypes.c_char_p, P(ctypes.c_void_p)),
            "close": _lib._declare("fmlp_trace_close", None, ctypes.c_void_p),
            "summary": _lib._declare("fmlp_trace_summary", ctypes.c_int, ctypes.c_void_p, P(_lib.ProfileSummary)),
            "table": _lib._declare("fmlp_trace_table_string", ctypes.c_int, ctypes.c_void_p, P(_lib.TableOptions),
                                   P(ctypes.c_void_p)),
            "diff": _lib._declare("fmlp_trace_diff_string", ctypes.c_int, P(ctypes.c_void_p), ctypes.c_int,
                                  P(ctypes.c_void_p)),
        }
    return _fns
