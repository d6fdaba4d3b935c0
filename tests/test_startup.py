"""Time to first answer, as behaviour (the timings themselves live in benchmarks/startup.py): ``import mechkit``
and the command line's help and errors load no heavy dependency and compile nothing; every public name still
resolves; slow preparations print one line; the catalog's shipped derivations are current and used."""
import json
import logging
import os
import subprocess
import sys
import time

import pytest

import mechkit as mk
from tests.helpers import ROOT, second_process_launch

HEAVY = ("numba", "sympy", "scipy", "mpmath", "mechkit.engine", "mechkit.laws.family", "mechkit.composition")


def _modules_after(code):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return set(json.loads(out.stdout.strip().splitlines()[-1])), out


HELP = "from mechkit import cli\ntry:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass"
CLI_ERROR = "from mechkit import cli; assert cli.main(['epsilon', 'nosuch', '--steps', '1', '--delta', '1e-5']) == 2"


@pytest.mark.parametrize("code", ["import mechkit", "import mechkit as mk; mk.CATALOG; mk.MechkitError; mk.__version__",
                                  HELP, CLI_ERROR])
def test_light_paths_import_nothing_heavy(code):
    mods, _ = _modules_after(code)
    loaded = sorted(m for m in mods for h in HEAVY if m == h or m.startswith(h + "."))
    assert not loaded, loaded


def test_every_public_name_resolves_and_is_listed():
    for name in mk.__all__:
        assert getattr(mk, name) is not None, name
        assert name in dir(mk), name
    from mechkit import Composition, compose, gaussian  # from-imports go through the lazy lookup too
    assert callable(compose) and isinstance(Composition, type) and gaussian.__name__ == "gaussian"
    with pytest.raises(AttributeError):
        mk.no_such_name  # noqa: B018


def test_a_query_loads_only_its_accountant():
    mods, _ = _modules_after("import mechkit as mk\nprint(mk.compose((mk.gaussian(sigma=1.0), 3)).epsilon(1e-5, "
                             "method='rdp'))\nassert 'spa' in mk.composition.ACCOUNTANTS")
    assert "mechkit.accountants.rdp" in mods
    assert not {"mechkit.accountants.fft", "mechkit.accountants.spa", "mechkit.accountants.edgeworth"} & mods


def test_an_fft_query_needs_no_tilted_moments():
    """The FFT's first mesh asks for the variance of a subsampled loss (the CGF's quadrature): that must not import
    the engine's tilted subject (~2-3 s of compilation on a fresh machine, the saddle point's)."""
    mods, _ = _modules_after("import mechkit as mk\nm = mk.subsample(mk.gaussian(sigma=1.0), 0.1)\n"
                             "print(mk.compose((m, 10)).epsilon(1e-5, method='fft', eps_error=0.1))")
    assert "mechkit.engine.quadrature" in mods and "mechkit.accountants.fft" in mods
    assert not {"mechkit.engine.tilted", "mechkit.accountants.spa"} & mods


def test_a_cgf_quadrature_compiles_no_cumulant_function():
    """The CGF's quadrature takes its cumulants from central moments in Python (``laws.core``): the engine's
    compiled twin, for the tilted moments, is not compiled by an FFT query (it was compiled at the engine's import,
    ~0.4-0.55 s of a cold process)."""
    code = ("import mechkit as mk\nm = mk.subsample(mk.gaussian(sigma=1.0), 0.1)\n"
            "print(mk.compose((m, 10)).epsilon(1e-5, method='fft', eps_error=0.1))\n"
            "from mechkit.engine import scalars\nprint('SIGNATURES', scalars.cumulants_from_central.signatures)")
    mods, out = _modules_after(code)
    assert "mechkit.engine.scalars" in mods and "SIGNATURES []" in out.stdout


def test_the_readme_question_by_auto_needs_no_saddle_point():
    """method="auto" at the README's DP-SGD setting: the saddle point's interval is predicted too wide (sigma 0.8,
    q 0.01: R = 0.19 against 4 eps_error = 0.04), so neither it nor the tilted moments it needs are imported (on a
    fresh machine their compilation is ~5 s of the README command's wait)."""
    mods, out = _modules_after("import mechkit as mk\nm = mk.subsample(mk.gaussian(sigma=0.8), 0.01)\n"
                               "print(mk.compose((m, 300)).epsilon(1e-5).details['auto'])")
    assert "not tried" in out.stdout and "mechkit.accountants.fft" in mods
    assert not {"mechkit.engine.tilted", "mechkit.accountants.spa"} & mods
    # SciPy's optimize and integrate (~0.2 s of every process's imports) serve other queries: imported where used
    assert not {"scipy.optimize", "scipy.integrate"} & mods


def test_the_readme_question_leaves_the_rarely_used_entries_uncompiled():
    """The FFT's exponent pass (losses wider than 700 nats), its running minimum (a curve's later queries), the
    vectorised checked inverse, the atoms' tails (a law without atoms never asks) and the tilted moments' scan grids
    compile at their first call (``engine.lazy``), not at import (~0.9 s of a cold process); the first call
    compiles them for their one signature."""
    code = ("import mechkit as mk\nm = mk.subsample(mk.gaussian(sigma=0.8), 0.01)\n"
            "print(mk.compose((m, 300)).epsilon(1e-5, method='fft'))\n"
            "from mechkit.accountants import fft_sums\nfrom mechkit.engine import roots\n"
            "from mechkit.engine import peaks, tails\n"
            "print('COMPILED', [f.compiled for f in (fft_sums._exponents, fft_sums.running_min_delta, "
            "roots.checked_inverse_many, tails.atom_tails, peaks.scan_grid_at)], roots.checked_inverse.signatures)")
    mods, out = _modules_after(code)
    assert "COMPILED [False, False, False, False, False] []" in out.stdout


def test_a_lazy_entry_compiles_its_signature_at_the_first_call_only():
    import numpy as np
    from numba import types

    from mechkit.engine import lazy

    @lazy.entry(types.float64(types.float64[::1], types.int64), error_model="numpy")
    def weighted(x, k):
        return x.sum() * k
    assert not weighted.compiled and weighted.__name__ == "weighted"
    assert weighted(np.arange(4.0), 3) == 18.0 and weighted.compiled
    assert weighted(np.arange(4.0), 2.0) == 12.0  # converted to the one signature, not compiled again
    assert len(weighted.dispatcher.signatures) == 1


_CATALOG_QUESTIONS = '''import mechkit as mk
from mechkit import cli
m = mk.subsample(mk.gaussian(sigma=1.0), 0.1)
print(mk.compose((m, 10), (mk.laplace(scale=3.0), 2)).epsilon(1e-5, method="fft", eps_error=0.1))
print(mk.dpsgd(noise_multiplier=1.0, sampling_rate=0.01, steps=20).epsilon(1e-5, method="rdp"))
assert cli.main(["epsilon", "subsampled-laplace", "--scale", "2", "--q", "0.1", "--steps", "5", "--delta", "1e-5",
                 "--method", "rdp"]) == 0
'''


def test_a_catalog_question_on_a_warm_cache_imports_no_sympy():
    """Catalog families and their subsampled families bind from their shipped records (``laws.shipped``): a question
    about them, from Python or the command line, never imports SymPy (~0.3 s of every process); showing a family's
    privacy loss does."""
    mods, out = _modules_after(_CATALOG_QUESTIONS)
    assert "mechkit.laws.shipped" in mods and "mechkit.accountants.fft" in mods and "epsilon" in out.stdout
    assert not {m for m in mods if m == "sympy" or m.startswith("sympy.")}
    mods, _ = _modules_after("import mechkit as mk\nprint(mk.gaussian(sigma=1.0).family.privacy_loss)")
    assert "sympy" in mods


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@pytest.fixture
def progress_lines(monkeypatch):
    from mechkit import progress
    cap = _Capture()
    progress.LOGGER.addHandler(cap)
    monkeypatch.setattr(progress, "DELAY", 0.05)
    yield progress, cap.lines
    progress.LOGGER.removeHandler(cap)


def test_slow_preparation_prints_one_line_fast_none(progress_lines):
    progress, lines = progress_lines
    with progress.announce("fast thing"):
        pass
    with progress.announce("slow thing"):
        time.sleep(0.3)
    time.sleep(0.1)
    assert lines == ["slow thing (first use only; cached on disk afterwards) ..."]


def test_short_preparations_print_one_line_once_their_total_is_long(progress_lines):
    """A family's kernels compile one at a time as queries ask for them (``progress.tally``): one line when their
    summed time first passes the delay, none below it, none when lines are off."""
    progress, lines = progress_lines
    for _ in range(4):
        progress.tally("fam-a", "compiling the kernels of A", 0.02)   # 0.02 .. 0.08 s: one line, at the third
    progress.tally("fam-b", "compiling the kernels of B", 0.04)       # below the delay
    with progress.enabled(False):
        progress.tally("fam-c", "compiling the kernels of C", 1.0)    # silenced
    assert lines == ["compiling the kernels of A (first use only; cached on disk afterwards) ..."]


def test_progress_lines_go_to_stderr_and_can_be_silenced(progress_lines, capsys):
    progress, lines = progress_lines
    with progress.announce("shown"):
        time.sleep(0.3)
    assert "mechkit: shown (first use only" in capsys.readouterr().err
    old = progress.LOGGER.level
    progress.LOGGER.setLevel(logging.WARNING)
    try:
        with progress.announce("hidden"):
            time.sleep(0.3)
    finally:
        progress.LOGGER.setLevel(old)
    assert "hidden" not in capsys.readouterr().err and lines == [lines[0]]


def test_closed_form_cgf_is_checked_on_first_use_only():
    from mechkit.laws.core import Law
    calls = []
    law = Law()
    law.offer_closed_cgf(("K0", "K1"), lambda: calls.append(1) or False)
    assert calls == []
    assert law.cgf_source == "quadrature" and law.closed_cgf is None and calls == [1]
    law.offer_closed_cgf(("K0",), lambda: calls.append(2) or True)
    assert law.closed_cgf == ("K0",) and law.cgf_source == "closed form" and calls == [1, 2]


def test_numba_cache_probe_looks_only_inside_the_package(monkeypatch):
    from mechkit import cache
    seen = []
    monkeypatch.setattr(cache, "_numba_can_cache", lambda f: seen.append(f) or True)
    assert cache.ensure_numba_cache() is None
    pkg = ROOT / "mechkit"
    assert seen and all(pkg in f.resolve().parents for f in seen), seen
    assert {f.parent.name for f in seen} >= {"mechkit", "engine", "accountants", "spa"}


def test_a_bind_imports_no_optimizer():
    mods, _ = _modules_after("import mechkit as mk\nmk.gaussian(sigma=1.0).delta(1.0)")
    assert "scipy.optimize" not in mods  # SciPy's optimize is imported where a curve is inverted


def test_the_command_ends_with_the_heaps_out_of_the_collectors_reach(monkeypatch):
    """``mechkit`` (the console script: ``pyproject.toml`` names ``cli.console``) returns ``main``'s exit code and
    freezes the objects alive, so the interpreter's last collections do not walk them."""
    import gc
    import tomllib

    from mechkit import cli
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["mechkit"] == "mechkit.cli:console"
    monkeypatch.setattr(sys, "argv", ["mechkit", "epsilon", "nosuch", "--steps", "1", "--delta", "1e-5"])
    before = gc.get_freeze_count()
    try:
        assert cli.console() == 2
        assert gc.get_freeze_count() > before
    finally:
        gc.unfreeze()


class _Reporter:
    """A stand-in for the engine's second process: reports subjects on its standard output, then ends."""

    def __init__(self, lines):
        import io
        self.stdout = io.StringIO("".join(f"{s}\n" for s in lines))
        self.waited = False

    def wait(self):
        self.waited = True


def test_waiting_for_a_subject_of_the_second_process_waits_for_that_one_only(monkeypatch):
    from mechkit.engine import warm
    proc = _Reporter(["quadrature", "peaks"])  # it ends before reporting "tilted" (failed, or killed)
    monkeypatch.setattr(warm, "_STATE", {"proc": proc, "done": set()})
    assert warm.SUBJECTS == ("quadrature", "peaks", "tilted")
    assert warm.pending("quadrature") and not warm.pending("roots")
    warm.wait("quadrature")
    assert not warm.pending("quadrature") and warm.pending("peaks") and not proc.waited
    assert proc.stdout.readline() == "peaks\n"  # "peaks" not read yet: this process went on after "quadrature"
    warm.wait("tilted")  # the second process ended without it: this process compiles it (nothing pending)
    assert proc.waited and not warm.pending("tilted") and not warm.pending("peaks")


def test_a_wait_for_the_second_process_runs_the_registered_compilations_meanwhile(monkeypatch):
    """``warm.meanwhile`` tasks run in order while the awaited subject is not reported (a real pipe: the second
    process reports after 1.5 s), the rest stay for a later wait; a task that raises is dropped; without a second
    process nothing is registered."""
    import collections
    import time

    from mechkit.engine import warm
    monkeypatch.setattr(warm, "_IDLE", collections.deque())
    monkeypatch.setattr(warm, "_STATE", {"proc": None})
    warm.meanwhile(lambda: None)
    assert not warm._IDLE  # a warm cache: no second process, nothing to do meanwhile
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.5); print('quadrature', flush=True)"],
                            stdout=subprocess.PIPE, bufsize=0)  # as warm.start opens it
    monkeypatch.setattr(warm, "_STATE", {"proc": proc, "done": set()})
    ran = []

    def task(i):
        ran.append(i)
        if i == 1:
            raise ValueError("a kernel that does not compile")
        time.sleep(0.2)
    for i in range(40):
        warm.meanwhile(lambda i=i: task(i))
    extra = _Reporter([]).wait  # one function registered twice is one task
    warm.meanwhile(extra)
    warm.meanwhile(extra)
    assert list(warm._IDLE).count(extra) == 1
    warm._IDLE.pop()
    start = time.perf_counter()
    warm.work_while_pending("quadrature")
    assert 1.3 < time.perf_counter() - start < 3.0  # until the report (at 1.5 s), not the 8 s of all the tasks
    assert ran == list(range(len(ran))) and 3 <= len(ran) < 40 and len(warm._IDLE) == 40 - len(ran)
    assert "quadrature" in warm._STATE["done"]
    warm.work_while_pending("quadrature")  # reported: nothing more runs
    assert len(warm._IDLE) == 40 - len(ran)
    warm.wait("peaks")  # the process ends without it
    proc.wait()


def test_a_report_read_with_an_earlier_one_is_seen_without_blocking(monkeypatch):
    """Two reports arriving together: reading the first must not hide the second in a buffer that ``select``
    cannot see (the process's pipe is unbuffered), so the wait for "peaks" runs no task after it arrived."""
    import collections
    import time

    from mechkit.engine import warm
    proc = subprocess.Popen([sys.executable, "-c", "print('quadrature\\npeaks', flush=True); import time; "
                             "time.sleep(3)"], stdout=subprocess.PIPE, bufsize=0)
    monkeypatch.setattr(warm, "_IDLE", collections.deque())
    monkeypatch.setattr(warm, "_STATE", {"proc": proc, "done": set()})
    time.sleep(1.0)  # both lines are in the pipe
    warm.wait("quadrature")
    ran = []
    warm.meanwhile(lambda: ran.append(1))
    warm.work_while_pending("peaks")
    assert ran == [] and "peaks" in warm._STATE["done"]
    proc.kill()
    proc.wait()


def test_subjects_reported_before_the_one_awaited_are_named_without_blocking(monkeypatch):
    """While it waits for "peaks", this process loads what the second process has already reported ("quadrature",
    which "peaks" imports anyway): ``ready_before`` names it without waiting for more; nothing later, nothing unread."""
    import time

    from mechkit.engine import warm
    proc = subprocess.Popen([sys.executable, "-c", "print('quadrature', flush=True); import time; time.sleep(3); "
                             "print('peaks', flush=True)"], stdout=subprocess.PIPE, bufsize=0)
    monkeypatch.setattr(warm, "_STATE", {"proc": proc, "done": set()})
    assert warm.ready_before("quadrature") == []  # nothing comes before the first subject
    time.sleep(1.0)  # the first report is in the pipe, the second is not
    start = time.perf_counter()
    assert warm.ready_before("tilted") == ["quadrature"] and time.perf_counter() - start < 1.0
    assert warm.pending("peaks")
    proc.kill()
    proc.wait()
    monkeypatch.setattr(warm, "_STATE", {"proc": None})
    assert warm.ready_before("peaks") == []  # no second process: nothing to load early


def test_the_code_version_is_kept_beside_a_hash_of_the_sources(tmp_path, monkeypatch):
    """``entries.code_version`` parses the sources once per cache: a later process with the same bytes reads the
    memo (a planted answer proves it is read), one with other bytes or a damaged memo parses again."""
    from mechkit.symbolic import entries
    monkeypatch.setenv("MECHKIT_CACHE_DIR", str(tmp_path))
    entries.code_version.cache_clear()
    try:
        true = entries.code_version()
        memo = tmp_path / "code-version.json"
        got = json.loads(memo.read_text())
        assert got["version"] == true and len(got["raw"]) == 64
        memo.write_text(json.dumps({"raw": got["raw"], "version": "planted"}))
        entries.code_version.cache_clear()
        assert entries.code_version() == "planted"
        for damaged in (json.dumps({"raw": "0" * 64, "version": "planted"}), "{not json", json.dumps({"raw": 1})):
            memo.write_text(damaged)
            entries.code_version.cache_clear()
            assert entries.code_version() == true
            assert json.loads(memo.read_text())["version"] == true  # rewritten
    finally:
        entries.code_version.cache_clear()


def test_two_threads_waiting_for_the_second_process_both_get_their_subject(monkeypatch):
    """The FFT composes its two directions in threads: both may wait at once (one reads the reports at a time; a
    reader that meets the end must not close the pipe under the other)."""
    import threading

    from mechkit.engine import warm

    class Slow(_Reporter):
        def __init__(self, lines):
            super().__init__(lines)
            plain = self.stdout.readline
            self.stdout.readline = lambda: (time.sleep(0.01), plain())[1]

    for _ in range(20):
        monkeypatch.setattr(warm, "_STATE", {"proc": Slow(["quadrature", "peaks"]), "done": set()})
        errors = []

        def waiter(subject):
            try:
                warm.wait(subject)
            except Exception as exc:  # pragma: no cover - what the lock prevents
                errors.append(exc)

        threads = [threading.Thread(target=waiter, args=(s,)) for s in ("tilted", "peaks")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors and not warm.pending("tilted") and not warm.pending("peaks")


def test_the_second_process_warms_the_package_this_process_runs(tmp_path, monkeypatch):
    """``python -c`` puts its working directory first on the path: started from a directory holding another
    ``mechkit`` (a source checkout beside an installed copy), the second process must still import this one."""
    import mechkit
    decoy = tmp_path / "mechkit"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("__file__ = 'the decoy'\n")
    monkeypatch.chdir(tmp_path)
    args, kw = second_process_launch(monkeypatch)
    out = subprocess.run([args[0], "-c", "import mechkit; print(mechkit.__file__)"], env=kw["env"],
                         cwd=kw.get("cwd"), capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == mechkit.__file__, out.stdout + out.stderr


def test_a_plainly_cold_engine_cache_is_told_without_numba(tmp_path, monkeypatch):
    """``warm._plainly_cold``: the engine folder's own ``__pycache__`` holds no index of the first subject (and every
    folder's can be written), or ``NUMBA_CACHE_DIR`` names a new or empty directory; else Numba decides."""
    from mechkit.engine import warm
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    engine = tmp_path / "mechkit" / "engine"
    engine.mkdir(parents=True)
    for d in (engine, engine.parent):
        (d / "__init__.py").write_text("")
    monkeypatch.setattr(warm, "__file__", str(engine / "warm.py"))
    assert warm._plainly_cold()  # no __pycache__ yet: Numba's in-tree locator would create it
    (engine.parent / "__pycache__").write_text("a file where another folder's cache would be")
    assert not warm._plainly_cold()  # Numba cannot cache in-tree there: the engine's cache is not plainly its own
    (engine.parent / "__pycache__").unlink()
    (engine / "__pycache__").mkdir()
    (engine / "__pycache__" / "peaks.x.nbi").write_text("")
    assert warm._plainly_cold()  # another subject's index says nothing of the first
    (engine / "__pycache__" / "quadrature.x.nbi").write_text("")
    assert not warm._plainly_cold()
    (engine / "__pycache__" / "quadrature.x.nbi").unlink()
    elsewhere = tmp_path / "elsewhere" / "numba"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(elsewhere))
    assert warm._plainly_cold()  # a new directory there: nothing is cached yet
    elsewhere.mkdir(parents=True)
    assert warm._plainly_cold()  # empty
    (elsewhere / "engine_0123").mkdir()
    assert not warm._plainly_cold()  # something is cached there: Numba is asked


def test_on_a_fresh_install_the_second_process_starts_before_numba_is_imported(tmp_path):
    """A fresh copy of the package (no compiled cache beside it), imported as the README's command does: the second
    process is started before this one imports Numba (its ~0.2 s import then overlaps the second's)."""
    import shutil
    for name in ("mechkit", "mechanisms"):  # a source tree: the package and its catalog folder
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    code = ("import subprocess, sys\nseen = []\n"
            "class Recorder:\n    def __init__(self, *args, **kwargs):\n"
            "        seen.append('numba' in sys.modules)\n        self.stdout = None\n"
            "subprocess.Popen = Recorder\nimport mechkit.engine.warm as warm\nprint('SEEN', seen, warm.started())\n")
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "MECHKIT_ENGINE_WARMER")}
    env["PYTHONPATH"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert "SEEN [False] True" in out.stdout, out.stdout + out.stderr
