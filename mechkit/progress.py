"""One line on stderr when mechkit prepares something slow: a derivation, or compiling its engine or a family's
kernels, that takes more than ``DELAY`` seconds (the first use only; both are cached on disk afterwards).

Lines go through the ``logging`` logger named ``"mechkit"``, which prints them to stderr as ``mechkit: ...``
unless the application configured it first.  Silence them with
``logging.getLogger("mechkit").setLevel(logging.WARNING)``; route them into your own handlers with
``logger.handlers.clear(); logger.propagate = True``.
"""
from __future__ import annotations

import contextlib
import logging
import sys
import threading

#: seconds a preparation may take before its line is printed
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


@contextlib.contextmanager
def announce(what: str):
    """Run the ``with`` body; if it is still running after ``DELAY`` seconds, log one line saying ``what`` is being
    prepared and that the result is cached.  Costs a timer thread, so wrap only work that may be slow."""
    timer = threading.Timer(DELAY, LOGGER.info, args=("%s (first use only; cached on disk afterwards) ...", what))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
