"""Long operations: the one line on stderr that says what mechkit is busy with, and running the blocks of a long
operation on a ``concurrent.futures.Executor``.

**Lines.**  Two kinds, each printed only if the work is still running after ``DELAY`` seconds (a timer thread), so
fast work prints nothing:

* ``announce(what)``: preparing something that is cached on disk afterwards (a derivation, compiling the engine or
  a family's kernels): first use only (``tally``: the same line for preparation done in many short steps, once
  their total passes ``DELAY``);
* ``working(what)``: a long operation (a large FFT composition, individual accounting over many examples, a sweep, a
  calibration).  A working line inside another one in the same thread (a sweep's FFT compositions) is not printed:
  the outer line covers it.

Lines go through the ``logging`` logger named ``"mechkit"``, which prints them to stderr as ``mechkit: ...``
unless the application configured it first.  Silence them

* all, with the logger's level: ``logging.getLogger("mechkit").setLevel(logging.WARNING)``; route them into your
  own handlers with ``logger.handlers.clear(); logger.propagate = True``;
* all, with ``mechkit.progress.enabled(False)`` (after ``import mechkit.progress``; the whole process), or only
  inside a block with ``with mechkit.progress.enabled(False): ...``;
* one call's, with ``progress=False`` on the long operations that take it (``mk.sweep``, ``mk.calibrate``, the
  individual accountants' ``epsilon`` and ``delta``, ``IndividualPLDAccountant.fitted_mu`` and ``.step``): no line
  of this thread while the call runs, the derivations and compilations it triggers included.

**Executors.**  ``check_executor`` and ``run_in_order`` are what ``mk.sweep`` and the individual accountants share
(here, at the bottom of the package, where both may import them): an executor is checked before any work, and the
calls run serially (None) or one task each, the answers in order.  A task on an executor prints no line (the
caller's line covers it).
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor

from .errors import MechkitError, ParameterError

#: seconds an operation may run before its line is printed
DELAY = 1.0

LOGGER = logging.getLogger("mechkit")


class _Stderr(logging.Handler):
    """Writes to the ``sys.stderr`` of the moment (not the one at import: test runners and notebooks swap it)."""

    def emit(self, record):
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:
            self.handleError(record)


if not LOGGER.handlers:  # the application's own configuration wins
    _handler = _Stderr()
    _handler.setFormatter(logging.Formatter("mechkit: %(message)s"))
    LOGGER.addHandler(_handler)
    LOGGER.propagate = False
if LOGGER.level == logging.NOTSET:
    LOGGER.setLevel(logging.INFO)

_switch = {"on": True}       # the process-wide switch (``enabled``)
_local = threading.local()   # per thread: ``off`` (a progress=False call runs), ``depth`` (a working line is open)


def is_enabled() -> bool:
    """Whether a line may be printed now, in this thread: the process-wide switch (``enabled``) is on and no call
    with ``progress=False`` is running in this thread.  (The logger's level is checked when a line is printed.)"""
    return _switch["on"] and not getattr(_local, "off", False)


class _Restore(contextlib.AbstractContextManager):
    def __init__(self, previous):
        self._previous = previous

    def __exit__(self, *exc):
        _switch["on"] = self._previous


def _check_flag(name, value):
    if not isinstance(value, bool):
        raise ParameterError(f"{name} must be True or False, got {value!r}")
    return value


def enabled(on: bool) -> contextlib.AbstractContextManager:
    """Switch mechkit's progress lines on or off for the whole process.

    ``mechkit.progress.enabled(False)`` silences them from then on; ``with mechkit.progress.enabled(False): ...``
    only inside the block (the previous setting comes back at its end).  The ``progress=False`` keyword of a call
    silences that call's lines only; the logger's level silences everything the logger would print.

    Parameters
    ----------
    on : True or False.

    Returns
    -------
    A context manager that restores the previous setting on exit (ignore it to keep the new one).

    Raises
    ------
    ParameterError : ``on`` not a bool.
    """
    previous = _switch["on"]
    _switch["on"] = _check_flag("on", on)
    return _Restore(previous)


@contextlib.contextmanager
def setting(progress: bool) -> Iterator[None]:
    """The ``progress=`` keyword of a long operation, for the ``with`` body in this thread: False silences every
    line printed inside (``working`` and ``announce``), True changes nothing.

    Parameters
    ----------
    progress : True or False; a ``ParameterError`` names ``progress`` otherwise (checked on entry, before the body
        runs).
    """
    if _check_flag("progress", progress):
        yield
        return
    previous = getattr(_local, "off", False)
    _local.off = True
    try:
        yield
    finally:
        _local.off = previous


@contextlib.contextmanager
def _timer(message, args):
    timer = threading.Timer(DELAY, LOGGER.info, args=(message, *args))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


@contextlib.contextmanager
def announce(what: str) -> Iterator[None]:
    """Run the ``with`` body; if it is still running after ``DELAY`` seconds, log one line saying ``what`` is being
    prepared and that the result is cached.  Costs a timer thread, so wrap only work that may be slow.

    Parameters
    ----------
    what : what is prepared, e.g. "compiling the kernels of the family 'gaussian'".
    """
    if not is_enabled():
        yield
        return
    with _timer("%s (first use only; cached on disk afterwards) ...", (what,)):
        yield


_tallies: dict = {}


def tally(key: Hashable, what: str, seconds: float) -> None:
    """Add ``seconds`` of preparation done in short steps (e.g. compiling one kernel of a family when a query
    first asks for it) to ``key``'s total; when the total first passes ``DELAY``, log ``announce``'s line for
    ``what`` (no single step runs long enough for ``announce``'s timer).

    Parameters
    ----------
    key : what the steps belong to (e.g. a family's generated module name).
    what : what is prepared, e.g. "compiling the kernels of the family 'gaussian'".
    seconds : the duration of the step just done.
    """
    before = _tallies.get(key, 0.0)
    _tallies[key] = before + seconds
    if before < DELAY <= before + seconds and is_enabled():
        LOGGER.info("%s (first use only; cached on disk afterwards) ...", what)


@contextlib.contextmanager
def working(what: str, *, when: bool = True, silence: str = "progress=False") -> Iterator[None]:
    """Run the ``with`` body; if it is still running after ``DELAY`` seconds, log one line: ``what`` and how to
    silence it.  Nothing inside another ``working`` body of this thread (the outer line covers it), nor when lines
    are off (``is_enabled``).

    Parameters
    ----------
    what : the operation and its size, e.g. "composing 2 mechanisms on an FFT grid of 4194304 points".
    when : False: no timer at all (for work known to be quick, e.g. a small grid).
    silence : the switch the line names besides the logger's level (the keyword of the call, or
        "mechkit.progress.enabled(False)" for an operation without one).
    """
    if not (when and is_enabled()) or getattr(_local, "depth", 0):
        yield
        return
    _local.depth = 1
    try:
        with _timer("%s ... (silence: %s, or the 'mechkit' logger at level WARNING)", (what, silence)):
            yield
    finally:
        _local.depth = 0


def check_executor(executor: Executor | None) -> Executor | None:
    """``executor`` if it is None or has a callable ``submit`` (a ``concurrent.futures.Executor``: a process or
    thread pool, dask.distributed's ``Client.get_executor()``), else a ``ParameterError`` naming ``executor``.

    Parameters
    ----------
    executor : the value of an ``executor=`` keyword.
    """
    if executor is not None and not callable(getattr(executor, "submit", None)):
        raise ParameterError(f"executor must be a concurrent.futures.Executor (with submit), or None to run in this "
                             f"process, got {type(executor).__name__}")
    return executor


def _quietly(fn, args, kwargs):
    """A task on an executor: ``fn(*args, **kwargs)`` without progress lines (the caller's line covers it)."""
    with setting(False):
        return fn(*args, **kwargs)


def run_in_order(executor: Executor | None, fn: Callable[..., object], calls: Sequence[tuple[tuple, dict]],
                 on_error: Callable[[int, MechkitError], BaseException] | None = None) -> list:
    """``fn(*args, **kwargs)`` for each ``(args, kwargs)`` of ``calls``, the results in the order of ``calls``.

    Parameters
    ----------
    executor : None: one call after the other in this process; a ``concurrent.futures.Executor``: one task per
        call, all submitted at once (``fn`` and the arguments are pickled to a process pool's workers: give a
        module-level function), without progress lines in the task.
    fn : the function.
    calls : (positional arguments, keyword arguments) of each call.
    on_error : (index of the call, the ``MechkitError`` it raised) -> the exception raised instead (chained to it);
        None: the error is raised as it is.

    Returns
    -------
    The results, in the order of ``calls``.

    Raises
    ------
    MechkitError : the first call (in order) that failed with one (or what ``on_error`` made of it); on an
        executor, the calls not yet started are cancelled.  Other exceptions are raised as they are.
    """
    if executor is None:
        futures = None
    else:
        futures = [executor.submit(_quietly, fn, args, kwargs) for args, kwargs in calls]
    try:
        out = []
        for i, (args, kwargs) in enumerate(calls):
            try:
                out.append(fn(*args, **kwargs) if futures is None else futures[i].result())
            except MechkitError as exc:
                if on_error is None:
                    raise
                raise on_error(i, exc) from exc
        return out
    finally:
        for future in futures or ():
            future.cancel()  # after a failure (or an interrupt): the calls not started are dropped


_POOL = []                     # the shared thread pool of ``threaded`` (made on first use)
_POOL_LOCK = [threading.Lock()]


def _after_fork():
    """A forked child (a process pool's worker) has none of the parent's threads: it makes its own pool."""
    _POOL.clear()
    _POOL_LOCK[0] = threading.Lock()


os.register_at_fork(after_in_child=_after_fork)


#: where ``/proc/loadavg`` counts another task running, it is read again this many times, RECHECK_S seconds apart,
#: and the smallest count taken: one read saw a transient task before 8% of the sustained loop's queries
#: (``benchmarks/threads.py``), three reads 0.2 ms apart none in 200
RECHECKS, RECHECK_S = 2, 2e-4


def _others_running(line):
    """How many tasks other than the reading thread were running or runnable at the moment ``/proc/loadavg`` was
    read (its fourth field, "running/total", counts the reader itself), or None where ``line`` does not say."""
    try:
        return max(int(line.split()[3].split("/")[0]) - 1, 0)
    except (IndexError, ValueError):
        return None


def _read_loadavg():
    try:
        with open("/proc/loadavg") as f:
            return f.read()
    except OSError:   # not Linux
        return ""


def _spare_core():
    """Whether a second core is likely idle: two or more cores, and at most cores - 2 other tasks running or
    runnable right now (``/proc/loadavg``'s instantaneous count, where Linux gives one); elsewhere a 1-minute load
    average below the cores less a half (it counts this process's own running thread: alone on two cores it is
    about 1).  The instantaneous count is the better signal: the 1-minute average lags by a minute both ways, so a
    loop of threaded compositions raised it to 1.5 by itself and then ran one thread at a time on an idle machine,
    and a competing process that had just started was not seen (docs/performance.md: two threads are slower than
    one after the other where the other core is busy)."""
    cores = os.cpu_count() or 1
    if cores < 2:
        return False
    others = _others_running(_read_loadavg())
    if others is not None:
        for _ in range(RECHECKS):   # a task running for a moment (a kernel thread, one of ours ending) is no competitor
            if others <= cores - 2:
                break
            time.sleep(RECHECK_S)
            again = _others_running(_read_loadavg())
            others = others if again is None else min(others, again)
        return others <= cores - 2
    return _load_average_spare(cores)


def _load_average_spare(cores):
    """``_spare_core``'s rule where there is no instantaneous count: the 1-minute load average below the cores less
    a half."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):   # no load average on this system
        load = 0.0
    return load < cores - 0.5


def threaded(fn: Callable[[Hashable], object], keys: Sequence[Hashable]) -> dict:
    """{key: fn(key)}, the calls in parallel threads of a shared two-thread pool where a second core is likely idle
    (``_spare_core``), else one after the other: for work that releases the GIL (FFTs, compiled passes with
    ``nogil``).  The results are the same either way.  Each call runs with this thread's progress setting
    (``setting``); the first exception (in the order of ``keys``) is raised.

    Parameters
    ----------
    fn : a function of one key.
    keys : the keys, distinct.
    """
    if len(keys) < 2 or not _spare_core():
        return {k: fn(k) for k in keys}
    off = getattr(_local, "off", False)

    def task(k):
        with setting(not off):
            return fn(k)
    with _POOL_LOCK[0]:
        if not _POOL:
            _POOL.append(ThreadPoolExecutor(max_workers=2, thread_name_prefix="mechkit"))
    futures = {k: _POOL[0].submit(task, k) for k in keys}
    return {k: f.result() for k, f in futures.items()}
