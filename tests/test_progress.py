"""Progress lines for long operations (issue 22): one line on the "mechkit" logger when a large FFT composition,
individual accounting, a sweep or a calibration is still running after ``progress.DELAY`` seconds; none for fast
work, none inside another operation's line or in an executor's tasks, and none with ``progress=False``,
``mechkit.progress.enabled(False)`` or the logger at WARNING.  Slow work is simulated: a tiny DELAY and a sleep in
the operation's inner step."""
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import mechkit as mk
from mechkit import ParameterError, progress
from mechkit.accountants import fft
from mechkit.individual import conversions, pld

SLEEP = 0.08


@pytest.fixture
def lines(monkeypatch, caplog):
    """The working lines the "mechkit" logger emits (caplog's handler on it: the logger does not propagate); the
    tiny DELAY lets loading an accountant's compiled code print its own line too, which is left out here."""
    monkeypatch.setattr(progress, "DELAY", 0.01)
    progress.LOGGER.addHandler(caplog.handler)
    try:
        yield lambda: [r.getMessage() for r in caplog.records
                       if r.name == "mechkit" and "first use only" not in r.getMessage()]
    finally:
        progress.LOGGER.removeHandler(caplog.handler)


def slowed(monkeypatch, module, name):
    """Make ``module.name`` sleep before it runs: the operation around it outlasts DELAY."""
    original = getattr(module, name)

    def slow(*args, **kwargs):
        time.sleep(SLEEP)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, slow)


def test_a_working_line_names_the_work_and_how_to_silence_it_and_fast_work_prints_none(lines):
    with progress.working("quick"):
        pass
    with progress.working("gated off", when=False):
        time.sleep(SLEEP)
    with progress.working("slow"):
        with progress.working("inner"):   # nested: the outer line covers it
            time.sleep(SLEEP)
    assert lines() == ["slow ... (silence: progress=False, or the 'mechkit' logger at level WARNING)"]
    progress.enabled(False)               # as a call: from then on
    try:
        with progress.working("switched off"):
            time.sleep(SLEEP)
    finally:
        progress.enabled(True)
    old = progress.LOGGER.level
    progress.LOGGER.setLevel(logging.WARNING)
    try:
        with progress.working("logger at WARNING"):
            time.sleep(SLEEP)
    finally:
        progress.LOGGER.setLevel(old)
    assert len(lines()) == 1


def test_large_fft_grid_announces_one_line(lines, monkeypatch):
    run = mk.compose((mk.gaussian(sigma=1.0), 4))
    slowed(monkeypatch, fft, "compose_direction")
    run.epsilon(1e-5, method="fft", variant="prv", eps_error=0.011)   # a small grid: below PROGRESS_POINTS, no timer
    assert lines() == []
    monkeypatch.setattr(fft, "PROGRESS_POINTS", 1)      # every grid counts as large
    est = run.epsilon(1e-5, method="fft", variant="prv", eps_error=0.012)
    (line,) = lines()
    assert line.startswith(f"composing 4 runs of 1 mechanism(s) on an FFT grid of {est.details['grid_points']} "
                           "points ... (silence: mechkit.progress.enabled(False), or the 'mechkit' logger")
    with progress.enabled(False):                       # as a context manager: only inside
        run.epsilon(1e-5, method="fft", eps_error=0.013)
    assert progress.is_enabled() and len(lines()) == 1


@pytest.fixture(scope="module")
def accountant():
    acc = mk.IndividualPLDAccountant(5, 0.05, 0.9, 1.0, max_steps=4, sigma_ratio=1.5, max_sigma_factor=4.0,
                                     eps_error=0.05)
    for k in range(4):
        acc.step(np.linspace(0.2, 1.2, 5) * (1 + k / 10))
    return acc


def test_individual_accounting_announces_one_line_unless_progress_false(lines, monkeypatch, accountant):
    slowed(monkeypatch, pld, "evaluate_blocks")
    serial = accountant.epsilon(1e-5)
    assert lines() == ["individual PLD accounting: epsilon at delta=1e-05 of 5 examples after 4 steps ... (silence: "
                       "progress=False, or the 'mechkit' logger at level WARNING)"]
    quiet = accountant.epsilon(1e-5, progress=False)
    accountant.delta(1.0, progress=False)
    accountant.fitted_mu(progress=False)
    assert len(lines()) == 1 and np.array_equal(quiet, serial) and np.array_equal(quiet.upper, serial.upper)
    accountant.fitted_mu()
    assert lines()[-1].startswith("individual PLD accounting: the fitted mu of 5 examples")


def test_filters_announce_many_examples_only(lines, monkeypatch):
    filt = mk.GDPFilter(50, budget_mu=1.0)
    filt.step(np.full(50, 0.1))
    slowed(monkeypatch, conversions, "unique_apply")
    slowed(monkeypatch, conversions, "positive_apply")
    filt.epsilon(1e-5)
    assert lines() == []                                # 50 examples: below PROGRESS_EXAMPLES, no timer
    monkeypatch.setattr(conversions, "PROGRESS_EXAMPLES", 10)
    filt.epsilon(1e-5)
    filt.delta(1.0)
    filt.delta(1.0, progress=False)
    assert [s.split(" ...")[0] for s in lines()] == ["GDPFilter.epsilon of 50 examples",
                                                      "GDPFilter.delta of 50 examples"]


def slow_gaussian(sigma):
    time.sleep(SLEEP)
    return mk.gaussian(sigma=sigma)


def test_a_sweep_announces_one_line_not_its_compositions(lines, monkeypatch):
    monkeypatch.setattr(fft, "PROGRESS_POINTS", 1)
    slowed(monkeypatch, fft, "compose_direction")
    mk.sweep(mk.gaussian, {"sigma": [1.0]}, delta=1e-5, method="fft", variant="prv")
    assert [s.split(" ...")[0] for s in lines()] == ["sweep of 1 points (epsilon by method 'fft')"]
    mk.sweep(mk.gaussian, {"sigma": [2.0]}, delta=1e-5, method="fft", variant="prv", progress=False)
    assert len(lines()) == 1


def test_a_calibration_announces_one_line(lines):
    first = []

    def make(s):
        if not first:
            first.append(s)
            time.sleep(SLEEP)
        return mk.compose((mk.gaussian(sigma=s), 2))

    cal = mk.calibrate(make, epsilon=2.0, delta=1e-5, bounds=(0.5, 8.0), method="fft", tolerance=0.2)
    assert lines() == ["calibration: the parameter in [0.5, 8] with epsilon(1e-05) <= 2 ... (silence: "
                       "progress=False, or the 'mechkit' logger at level WARNING)"]
    first.clear()
    again = mk.calibrate(make, epsilon=2.0, delta=1e-5, bounds=(0.5, 8.0), method="fft", tolerance=0.2,
                         progress=False)
    assert len(lines()) == 1 and again.value == cal.value > 0


def slow_line(what):
    with progress.working(what):
        time.sleep(SLEEP)
    return threading.current_thread().name


def test_tasks_on_an_executor_print_nothing_and_answer_in_order(lines):
    calls = [((f"task {i}",), {}) for i in range(3)]
    with ThreadPoolExecutor(max_workers=2) as ex:
        names = progress.run_in_order(ex, slow_line, calls)
    assert lines() == [] and len(names) == 3
    progress.run_in_order(None, slow_line, calls[:1])
    assert lines() == ["task 0 ... (silence: progress=False, or the 'mechkit' logger at level WARNING)"]


def test_bad_executor_or_progress_is_refused_before_any_work(accountant):
    fresh = mk.IndividualPLDAccountant(3, 0.05, 0.9, 1.0, sigma_ratio=1.5, max_sigma_factor=4.0)
    fresh.step(np.ones(3))
    filt = mk.GDPFilter(3, budget_mu=1.0)
    for call in (lambda ex: fresh.epsilon(1e-5, executor=ex), lambda ex: fresh.delta(1.0, executor=ex),
                 lambda ex: fresh.fitted_mu(executor=ex), lambda ex: filt.epsilon(1e-5, executor=ex),
                 lambda ex: filt.delta(1.0, executor=ex)):
        with pytest.raises(ParameterError, match="executor must be a concurrent.futures.Executor"):
            call("pool")
    for call in (lambda p: fresh.epsilon(1e-5, progress=p), lambda p: fresh.step(np.ones(3), progress=p),
                 lambda p: filt.delta(1.0, progress=p),
                 lambda p: mk.sweep(lambda s: mk.gaussian(sigma=s), {"s": [1.0]}, delta=1e-5, progress=p)):
        with pytest.raises(ParameterError, match="progress must be True or False, got 'no'"):
            call("no")
    assert fresh._plan is None and fresh.steps == 1     # no grid planned, no step taken
    with pytest.raises(ParameterError, match="on must be True or False"):
        progress.enabled(1)
    assert progress.is_enabled()


def _threaded_in_a_forked_child():
    return progress.threaded(lambda k: k * 2, [1, 2, 3])


def test_spare_core_counts_the_tasks_running_now(monkeypatch):
    """A second core is spare where no other task is running right now (``/proc/loadavg``'s instantaneous count,
    which counts the reader itself), whatever the lagging 1-minute average says; without that count, the average."""
    assert progress._others_running("0.60 0.85 0.99 1/79 14819") == 0
    assert progress._others_running("1.93 1.60 1.20 3/80 14820") == 2
    assert progress._others_running("") is None and progress._others_running("1.0 1.0 1.0 x/80 1") is None
    cases = [  # (cores, /proc/loadavg, 1-minute average, spare)
        (2, "1.90 1.50 1.00 1/80 1", 1.9, True),    # our own loop's threads left the average at 1.9: idle now
        (2, "0.20 0.20 0.20 2/80 1", 0.2, False),   # a competitor that has just started: busy now
        (4, "0.20 0.20 0.20 3/80 1", 0.2, True),    # two others leave two of four cores
        (4, "0.20 0.20 0.20 4/80 1", 0.2, False),
        (2, "", 1.2, True),                         # no /proc: the 1-minute average below the cores less a half
        (2, "", 1.6, False),
        (1, "0.00 0.00 0.00 1/80 1", 0.0, False),   # one core
    ]
    for cores, line, load, spare in cases:
        monkeypatch.setattr(os, "cpu_count", lambda c=cores: c)
        monkeypatch.setattr(progress, "_read_loadavg", lambda s=line: s)
        monkeypatch.setattr(os, "getloadavg", lambda v=load: (v, v, v))
        assert progress._spare_core() is spare, (cores, line, load)
    # a task seen running at the first read and gone at the next is transient; one running at every read is not
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    for reads, spare in ((["2/80", "1/80"], True), (["2/80", "3/80", "1/80"], True), (["2/80"] * 3, False)):
        lines = iter(f"0.50 0.50 0.50 {r} 1" for r in reads)
        monkeypatch.setattr(progress, "_read_loadavg", lambda: next(lines))
        assert progress._spare_core() is spare, reads


@pytest.mark.skipif(not os.path.exists("/proc/loadavg"), reason="Linux's /proc/loadavg")
def test_a_busy_process_is_seen_at_once():
    """The instantaneous count sees a process that has been spinning for a fraction of a second (the 1-minute
    average barely moves in that time)."""
    import subprocess
    import sys
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        seen = [progress._others_running(progress._read_loadavg()) for _ in range(20)]
    finally:
        spin.kill()
        spin.wait()
    assert max(seen) >= 1, seen


def test_threaded_runs_every_key_with_the_callers_setting_and_raises_the_first_error(monkeypatch):
    seen = {}
    monkeypatch.setattr(progress, "_spare_core", lambda: False)   # a busy machine: one after the other, same answers
    assert progress.threaded(lambda k: (k, threading.current_thread().name), [1, 2]) == \
        {1: (1, threading.current_thread().name), 2: (2, threading.current_thread().name)}
    monkeypatch.setattr(progress, "_spare_core", lambda: True)

    def fn(k):
        seen[k] = (threading.current_thread().name, progress.is_enabled())
        return k * k
    assert progress.threaded(fn, [3, 4]) == {3: 9, 4: 16}
    with progress.setting(False):
        out = progress.threaded(lambda k: (k, progress.is_enabled()), [1, 2])
    assert out == {1: (1, False), 2: (2, False)}                 # silenced in the pool's threads too
    assert seen[3][0].startswith("mechkit") and seen[4][0].startswith("mechkit")

    def bad(k):
        if k == 2:
            raise ParameterError(f"key {k}")
        return k
    with pytest.raises(ParameterError, match="key 2"):
        progress.threaded(bad, [1, 2])
    # a forked child (a process pool's worker) gets a pool of its own: the parent's threads do not exist there (with
    # the parent's pool it would wait forever: killed after 30 s)
    import signal
    pid = os.fork()
    if pid == 0:
        ok = False
        try:
            ok = _threaded_in_a_forked_child() == {1: 2, 2: 4, 3: 6}
        finally:
            os._exit(0 if ok else 1)
    deadline = time.monotonic() + 30.0
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    if done[0] == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("threaded() hung in a forked child")
    assert os.waitstatus_to_exitcode(done[1]) == 0
