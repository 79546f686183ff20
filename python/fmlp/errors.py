"""Why: every C call returns a status, and fmlp_last_error() says what was
wrong and what to do; here each status becomes one exception class carrying
that message, so callers catch fmlp.Error (or a standard base class such as
ValueError) instead of checking codes.
"""
from . import _lib


class Error(Exception):
    """A failed fmlp call; str(e) is the library's message."""
    status = None
    status_name = None


class InvalidArgument(Error, ValueError):
    """A value out of range, a wrong dtype or device, a closed module."""
    status, status_name = 1, "invalid argument"


class ShapeError(Error, ValueError):
    """Shapes or strides that do not fit the module."""
    status, status_name = 2, "shape"


class OutOfMemory(Error, MemoryError):
    status, status_name = 3, "out of memory"


class FileError(Error, OSError):
    """A file could not be opened, read or written (FMLP_ERR_IO)."""
    status, status_name = 4, "io"


class FormatError(Error, ValueError):
    """A file is malformed, or lacks the tensors asked for."""
    status, status_name = 5, "format"


class Unsupported(Error):
    """Valid, but not available on this build, device or dtype."""
    status, status_name = 6, "unsupported"


class NoDevice(Error, RuntimeError):
    status, status_name = 7, "no device"


class DeviceError(Error, RuntimeError):
    status, status_name = 8, "device"


class InternalError(Error, RuntimeError):
    status, status_name = 9, "internal"


_BY_STATUS = {c.status: c for c in (InvalidArgument, ShapeError, OutOfMemory, FileError, FormatError, Unsupported,
                                    NoDevice, DeviceError, InternalError)}


def from_status(status, what=None):
    """The exception for a failed status, with fmlp_last_error()'s message
    (read on the calling thread, where the C library left it)."""
    msg = (_lib.last_error() or b"").decode("utf-8", "replace")
    if what:
        msg = "%s: %s" % (what, msg) if msg else what
    return _BY_STATUS.get(status, Error)(msg or "fmlp status %d" % status)


def check(status, what=None):
    if status:
        raise from_status(status, what)
