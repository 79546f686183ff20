"""Why: PyTorch users already know torch.profiler; this is the same API
(profile, schedule, ProfilerActivity, record_function,
tensorboard_trace_handler, key_averages().table(), export_chrome_trace) over
fmlp's C profiler, plus what torch does not give: the verdict per step as
an object. A profile covers fmlp contexts, not modules: every module on a
device shares that device's default context (fmlp.context), so profiling
the context sees them all. With several contexts (the CPU and a GPU), each
gets its own C profiler on one schedule, stepped together.
"""
import ctypes
import enum
import functools
import os
import socket
import threading
import time

from . import _lib
from ._context import Context, context, cuda_device_count, existing_contexts
from .errors import InvalidArgument, check, from_status


class ProfilerActivity(enum.Enum):
    CPU = "cpu"
    CUDA = "cuda"


class Schedule:
    """torch.profiler.schedule's numbers: skip_first steps ignored, then
    cycles of `wait` idle, `warmup` recorded-and-dropped and `active`
    recorded steps, `repeat` cycles (0: until the profile stops)."""

    def __init__(self, wait, warmup, active, repeat=0, skip_first=0):
        for name, v in (("wait", wait), ("warmup", warmup), ("active", active), ("repeat", repeat),
                        ("skip_first", skip_first)):
            if not isinstance(v, int) or v < 0:
                raise InvalidArgument("schedule %s = %r; use a whole number >= 0" % (name, v))
        if active < 1:
            raise InvalidArgument("schedule active = %d; at least one step must be recorded" % active)
        self.wait, self.warmup, self.active, self.repeat, self.skip_first = wait, warmup, active, repeat, skip_first

    def __repr__(self):
        return "fmlp.schedule(wait=%d, warmup=%d, active=%d, repeat=%d, skip_first=%d)" % (
            self.wait, self.warmup, self.active, self.repeat, self.skip_first)


def schedule(*, wait, warmup, active, repeat=0, skip_first=0):
    """Like torch.profiler.schedule; pass it to fmlp.profile(schedule=...)."""
    return Schedule(wait, warmup, active, repeat, skip_first)


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An on_trace_ready handler writing each window's trace to dir_name as
    torch's does: <worker>.<time>.pt.trace.json[.gz]."""
    def handler(prof):
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or "%s_%d" % (socket.gethostname(), os.getpid())
        name = "%s.%d.pt.trace.json%s" % (worker, time.time_ns(), ".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, name))
    return handler


_profiled = []  # contexts some profile records now (for record_function)
_profiled_lock = threading.Lock()


class Summary:
    """The verdict of one context's last window: per step, where the time
    went, and whether it was overhead-, memory-, compute- or copy-bound."""

    def __init__(self, device, s):
        self.device = device
        self.steps = s.steps
        self.wall_us, self.kernel_us, self.overhead_us, self.idle_us = s.wall_us, s.kernel_us, s.overhead_us, \
            s.idle_us
        self.kernels_per_step, self.copies_per_step = s.kernels_per_step, s.copies_per_step
        self.copy_us, self.copy_bytes = s.copy_us, s.copy_bytes
        self.bound = _lib.BOUNDS.get(s.bound, "unknown")
        self.reason = s.reason.decode("utf-8", "replace")

    def as_dict(self):
        return {k: getattr(self, k) for k in ("device", "steps", "wall_us", "kernel_us", "overhead_us", "idle_us",
                                               "kernels_per_step", "copies_per_step", "copy_us", "copy_bytes", "bound", "reason")}

    def __str__(self):
        return ("%s: %s (%s); per step over %d steps: wall %.1f us, kernels %.1f us, copies %.1f us, "
                "dispatch overhead %.1f us, idle %.1f us, %d kernels" % (self.device, self.bound, self.reason,
                                                                        self.steps, self.wall_us, self.kernel_us,
                                                                        self.copy_us, self.overhead_us, self.idle_us,
                                                                        self.kernels_per_step))

    __repr__ = __str__


def _activity_set(activities):
    if activities is None:
        out = {ProfilerActivity.CPU}
        if cuda_device_count() > 0:
            out.add(ProfilerActivity.CUDA)
        return out
    out = set()
    for a in activities:
        # torch.profiler.ProfilerActivity members are accepted by name too
        name = getattr(a, "name", a)
        try:
            out.add(ProfilerActivity[str(name).upper()])
        except KeyError:
            raise InvalidArgument("activity %r is not one; use fmlp.ProfilerActivity.CPU or .CUDA" % (a,)) from None
    if not out:
        raise InvalidArgument("activities is empty; pass [fmlp.ProfilerActivity.CPU] and/or .CUDA")
    return out


class profile:
    """with fmlp.profile(activities=[...], schedule=fmlp.schedule(...),
    on_trace_ready=handler) as prof: ... prof.step()

    contexts: the fmlp contexts to record (Context objects or devices);
    default: every default context made so far that an activity covers, or
    the current device's when none exists yet."""

    def __init__(self, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_flops=False, contexts=None):
        self.activities = _activity_set(activities)
        if schedule is not None and not isinstance(schedule, Schedule):
            raise InvalidArgument("schedule must come from fmlp.schedule(wait=, warmup=, active=, repeat=); "
                                  "got %r" % (schedule,))
        if on_trace_ready is not None and not callable(on_trace_ready):
            raise InvalidArgument("on_trace_ready must be callable (a function of the profile, or "
                                  "fmlp.tensorboard_trace_handler(dir)); got %r" % (on_trace_ready,))
        self.schedule, self.on_trace_ready = schedule, on_trace_ready
        self.record_shapes, self.profile_memory, self.with_flops = record_shapes, profile_memory, with_flops
        self._contexts_arg = contexts
        self._profs = []  # [(Context, fmlp_profiler handle)]
        self._ready = False
        self._running = False
        self.step_num = 0
        self._callback = _lib.TRACE_READY(self._on_ready)

    def _on_ready(self, prof, user):
        self._ready = True

    def _pick_contexts(self):
        if self._contexts_arg is not None:
            return [c if isinstance(c, Context) else context(c) for c in self._contexts_arg]
        cpu, cuda = ProfilerActivity.CPU in self.activities, ProfilerActivity.CUDA in self.activities
        ctxs = [c for c in existing_contexts() if (c.kind == "cpu" and cpu) or (c.kind == "cuda" and cuda)]
        if not ctxs:
            ctxs = [context("cuda" if cuda and cuda_device_count() > 0 else "cpu")]
        return ctxs

    def _options(self, ctx):
        o = _lib.ProfilerOptions()
        if ctx.kind == "cpu":
            o.activities = _lib.ACTIVITY_CPU
        else:
            o.activities = ((_lib.ACTIVITY_CPU if ProfilerActivity.CPU in self.activities else 0) |
                            (_lib.ACTIVITY_CUDA if ProfilerActivity.CUDA in self.activities else 0))
        o.record_shapes, o.profile_memory, o.with_flops = self.record_shapes, self.profile_memory, self.with_flops
        s = self.schedule
        if s is not None:
            o.skip_first, o.wait, o.warmup, o.active, o.repeat = s.skip_first, s.wait, s.warmup, s.active, s.repeat
        o.on_trace_ready = self._callback
        return o

    # ---------------------------------------------------------------- lifecycle

    def start(self):
        if self._running:
            raise InvalidArgument("this profile is already running; stop it first")
        self._destroy()
        for ctx in self._pick_contexts():
            h = ctypes.c_void_p()
            opt = self._options(ctx)
            s = _lib.profiler_create(ctx._h, ctypes.byref(opt), ctypes.byref(h))
            if s == 0:
                self._profs.append((ctx, h))
                s = _lib.profiler_start(h)
            if s:
                err = from_status(s)
                self._destroy()
                raise err
        self._running = True
        self.step_num = 0
        with _profiled_lock:
            _profiled.extend(c for c, _ in self._profs)
        return self

    def step(self):
        """Ends one step (ProfilerStep#N) and advances the schedule; calls
        on_trace_ready once when a window of recorded steps closes."""
        if not self._running:
            raise InvalidArgument("profile.step(): the profile is not running; use it inside `with fmlp.profile(...)`")
        for _, h in self._profs:
            check(_lib.profiler_step(h))
        self.step_num += 1
        self._fire()

    def stop(self):
        if not self._running:
            return
        self._running = False
        with _profiled_lock:
            for c, _ in self._profs:
                _profiled.remove(c)
        for _, h in self._profs:
            check(_lib.profiler_stop(h))
        self._fire()

    def _fire(self):
        if self._ready:
            self._ready = False
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def _destroy(self):
        for _, h in self._profs:
            _lib.profiler_destroy(h)
        self._profs = []

    def __del__(self):
        if not hasattr(self, "_profs"):
            return
        if self._running:
            try:
                self.stop()
            except Exception:
                pass
        self._destroy()

    # ---------------------------------------------------------------- results

    def _windows(self):
        """[(ctx, handle)] of the contexts whose last window recorded work;
        all of them when none did (so errors say why)."""
        if not self._profs:
            raise InvalidArgument("this profile has not run; use it in `with fmlp.profile(...) as prof:`")
        out = []
        for ctx, h in self._profs:
            s = _lib.ProfileSummary()
            if _lib.profiler_summary(h, ctypes.byref(s)) == 0 and (s.kernels_per_step or s.copies_per_step):
                out.append((ctx, h))
        return out or self._profs

    def key_averages(self):
        return KeyAverages(self)

    def table(self, sort_by=None, row_limit=-1, analyses=False):
        parts = []
        windows = self._windows()
        for ctx, h in windows:
            opt = _lib.TableOptions(sort_by.encode() if sort_by else None, row_limit if row_limit else -1, analyses)
            out = ctypes.c_void_p()
            check(_lib.profiler_table_string(h, ctypes.byref(opt), ctypes.byref(out)))
            text = _lib.take_string(out.value)
            parts.append(("fmlp context %s:\n" % ctx.device if len(windows) > 1 else "") + text)
        return "\n".join(parts)

    def analyses(self):
        """The analyses fmlp prints after its table (GPU idle time, launch
        overhead, the verdict per step) as text."""
        parts = []
        for ctx, h in self._windows():
            plain = self._table_of(h, False)
            full = self._table_of(h, True)
            parts.append(full[len(plain):].strip("\n") if full.startswith(plain) else full)
        return "\n\n".join(parts)

    @staticmethod
    def _table_of(h, analyses):
        opt = _lib.TableOptions(None, -1, analyses)
        out = ctypes.c_void_p()
        check(_lib.profiler_table_string(h, ctypes.byref(opt), ctypes.byref(out)))
        return _lib.take_string(out.value)

    def summaries(self):
        """{device: Summary} of the last completed window, per context."""
        out = {}
        for ctx, h in self._windows():
            s = _lib.ProfileSummary()
            check(_lib.profiler_summary(h, ctypes.byref(s)))
            out[ctx.device] = Summary(ctx.device, s)
        return out

    def summary(self):
        """The Summary of the (first) context that recorded work."""
        return next(iter(self.summaries().values()))

    def export_chrome_trace(self, path):
        """Writes the last window as a Chrome/Kineto trace (gzip for .gz);
        with several recording contexts, one file each, the device inserted
        before the extension (trace.cuda0.json). Returns the paths written."""
        windows = self._windows()
        paths = []
        for ctx, h in windows:
            p = path
            if len(windows) > 1:
                stem, ext = (path[:-8], ".json.gz") if path.endswith(".json.gz") else os.path.splitext(path)
                p = "%s.%s%s" % (stem, ctx.device.replace(":", ""), ext)
            check(_lib.profiler_export_trace(h, p.encode()))
            paths.append(p)
        return paths


class KeyAverages:
    """What prof.key_averages() returns: .table(sort_by=, row_limit=)."""

    def __init__(self, prof):
        self._prof = prof

    def table(self, sort_by=None, row_limit=-1, analyses=False, **ignored):
        """torch's column names: self_cpu_time_total, cpu_time_total,
        self_cuda_time_total, cuda_time_total, count, flops."""
        return self._prof.table(sort_by=sort_by, row_limit=row_limit, analyses=analyses)

    def __str__(self):
        return self.table()


class record_function:
    """A named range in the profile, as torch.profiler.record_function: a
    context manager or a decorator. Free when no profile records."""

    def __init__(self, name):
        self.name = str(name)
        self._tl = threading.local()

    def __enter__(self):
        with _profiled_lock:
            ctxs = list(_profiled)
        name = self.name.encode()
        for c in ctxs:
            _lib.range_push(c._h, name)
        self._tl.__dict__.setdefault("stack", []).append(ctxs)
        return self

    def __exit__(self, *exc):
        for c in reversed(self._tl.stack.pop()):
            _lib.range_pop(c._h)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with record_function(self.name):
                return fn(*args, **kwargs)
        return wrapped
