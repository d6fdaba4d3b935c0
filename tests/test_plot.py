"""mechkit.plot and ``mechkit plot``: what is drawn is what the API answers (the line's data are the estimates at
the plotted epsilons, the band is the certified interval), the axes say what they show, matplotlib is imported only
when a plot is drawn, and the command line writes a PNG."""
import io
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import mechkit as mk  # noqa: E402
from mechkit import plot  # noqa: E402
from mechkit.cli import main  # noqa: E402
from tests.helpers import ROOT  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def run():
    return mk.compose((mk.gaussian(sigma=1.0), 10))


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _quiet(f, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mk.MechkitWarning)
        return f(*args, **kwargs)


def _band_within(coll, x, lower, upper):
    """Every vertex of the fill_between polygon lies between lower and upper at its epsilon, and both edges are
    there: the polygon is the band [lower, upper] and not some other one."""
    verts = np.concatenate([p.vertices for p in coll.get_paths()])
    for vx, vy in verts:
        i = int(np.argmin(np.abs(x - vx)))
        assert abs(x[i] - vx) <= 1e-12 * max(1.0, abs(vx))
        assert lower[i] * (1 - 1e-12) <= vy <= upper[i] * (1 + 1e-12), (vx, vy, lower[i], upper[i])
    for edge in (lower, upper):
        hits = [np.any(np.isclose(verts[:, 0], xi, rtol=0, atol=1e-12) & np.isclose(verts[:, 1], yi, rtol=1e-12,
                                                                                    atol=0))
                for xi, yi in zip(x, edge)]
        assert all(hits)


def test_privacy_curve_draws_the_estimates_and_the_certified_band(run):
    ax = plot.privacy_curve(run)
    line = ax.get_lines()[0]
    x, y = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
    assert x[0] == 0.0 and len(x) == plot.GRID_POINTS and np.all(np.diff(x) > 0)
    d = _quiet(run.delta, x)
    positive = np.asarray(d) > 0
    np.testing.assert_array_equal(y[positive], np.asarray(d)[positive])
    assert np.all(np.isnan(y[~positive]))
    assert y[0] > 0.5 and 1e-13 < y[-1] < 1e-8  # from delta(0) down to about 1e-10 (the default grid's end)
    (band,) = ax.collections
    _band_within(band, x, d.lower, d.upper)
    assert d.upper[-1] > d.lower[-1]  # a band that is visible somewhere
    assert ax.get_yscale() == "log" and ax.get_xlabel() == "epsilon" and ax.get_ylabel() == "delta"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["fft estimate", "[lower, upper] (certified)"]


def test_privacy_curve_of_a_curve_and_a_mechanism_into_a_given_axes(run):
    eps = np.array([0.0, 0.5, 1.0, 2.0, 4.0])
    fig, (left, right) = plt.subplots(1, 2)
    curve = run.curve()
    assert plot.privacy_curve(curve, left, epsilons=eps, label="my run") is left
    line = left.get_lines()[0]
    assert line.get_label() == "my run"
    np.testing.assert_array_equal(line.get_xdata(), eps)
    np.testing.assert_array_equal(line.get_ydata(), np.asarray(curve.delta(eps)))
    m = mk.gaussian(sigma=2.0)
    assert plot.privacy_curve(m, right, epsilons=eps) is right
    np.testing.assert_array_equal(right.get_lines()[0].get_ydata(), m.delta(eps))
    assert not right.collections  # a mechanism's one-shot curve has no interval to shade
    assert right.get_lines()[0].get_label() == "delta(epsilon)"


def test_tradeoff_curve_draws_beta_its_band_and_the_diagonal(run):
    alphas = np.linspace(0.0, 1.0, 21)
    ax = plot.tradeoff_curve(run, alphas=alphas)
    beta_line, diagonal = ax.get_lines()
    b = run.tradeoff(alphas)
    np.testing.assert_array_equal(beta_line.get_xdata(), alphas)
    np.testing.assert_array_equal(beta_line.get_ydata(), np.asarray(b))
    assert np.all(np.asarray(b)[1:-1] < 1 - alphas[1:-1])  # mu = sqrt(10): well below perfect privacy
    (band,) = ax.collections
    _band_within(band, alphas, b.lower, b.upper)
    np.testing.assert_array_equal(diagonal.get_xdata(), [0.0, 1.0])
    np.testing.assert_array_equal(diagonal.get_ydata(), [1.0, 0.0])
    assert ax.get_xlabel() == "type I error alpha" and ax.get_ylabel() == "type II error beta"
    assert ax.get_xlim() == (0.0, 1.0) and ax.get_ylim() == (0.0, 1.0)


def test_compare_draws_one_line_per_method(run):
    eps = np.linspace(0.0, 20.0, 11)
    ax = plot.compare(run, epsilons=eps)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["fft", "spa", "edgeworth", "rdp (upper bound)", "gdp (not certified)"]
    lines = dict(zip(labels, ax.get_lines()))
    for label, method in (("fft", "fft"), ("spa", "spa"), ("edgeworth", "edgeworth"),
                          ("gdp (not certified)", "gdp")):
        np.testing.assert_array_equal(lines[label].get_xdata(), eps)
        np.testing.assert_array_equal(lines[label].get_ydata(), np.asarray(_quiet(run.delta, eps, method=method)))
    rdp = lines["rdp (upper bound)"]  # RDP answers epsilon(delta): drawn through (epsilon(delta), delta)
    deltas = np.asarray(rdp.get_ydata(), float)
    np.testing.assert_array_equal(rdp.get_xdata(), np.asarray(run.epsilon(deltas, method="rdp")))
    assert ax.get_yscale() == "log" and ax.get_xlabel() == "epsilon"


def test_compare_skips_a_method_that_cannot_answer_and_says_why(run):
    adp = mk.compose((mk.approximate_dp(1.0, 1e-6), 3))  # a point mass at +inf: no CGF, no variance
    ax = plot.compare(adp, methods=("fft", "gdp", "rdp"), epsilons=[0.0, 1.0, 2.0])
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[0] == "fft" and labels[1].startswith("gdp: skipped (method 'gdp' needs a finite variance")
    assert labels[2] == "rdp: skipped (no finite Renyi-DP bound)"
    assert len([ln for ln in ax.get_lines() if len(ln.get_xdata())]) == 1
    ax = plot.compare(run, methods=["fft", "nope"], epsilons=[1.0, 2.0])
    assert [t.get_text() for t in ax.get_legend().get_texts()][1].startswith("nope: skipped (unknown method")


def test_bad_input_is_a_parameter_error(run):
    with pytest.raises(mk.ParameterError, match="epsilons"):
        plot.privacy_curve(run, epsilons=[-1.0, 1.0])
    with pytest.raises(mk.ParameterError, match="alpha"):
        plot.tradeoff_curve(run, alphas=[0.5, 1.5])
    with pytest.raises(mk.ParameterError, match="run"):
        plot.compare("gaussian")
    with pytest.raises(mk.ParameterError, match="run_or_curve"):
        plot.privacy_curve(42)


def test_without_matplotlib_the_error_says_what_to_install(run, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)  # `import matplotlib.pyplot` raises ImportError
    with pytest.raises(mk.MechkitError, match=r'pip install "mechkit\[plot\]"'):
        plot.privacy_curve(run)
    assert main(["plot", "privacy-curve", "gaussian", "--sigma", "1", "--steps", "10", "-o", "x.png"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mechkit: error:") and 'mechkit[plot]' in err and len(err.strip().splitlines()) == 1


def test_importing_mechkit_does_not_import_matplotlib():
    code = ("import sys, mechkit as mk, mechkit.plot\nmk.plot.privacy_curve\n"
            "assert not [m for m in sys.modules if m.split('.')[0] == 'matplotlib'], 'matplotlib imported'")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]


def test_cli_writes_a_png_and_prints_its_path(tmp_path):
    path = tmp_path / "curve.png"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-m", "mechkit.cli", "plot", "privacy-curve", "dpsgd", "--noise-multiplier",
                          "1", "--sampling-rate", "0.01", "--steps", "100", "-o", str(path)], env=env,
                         capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == str(path)
    assert path.read_bytes()[:8] == PNG


def test_cli_tradeoff_and_compare_in_process(tmp_path):
    for what, extra in (("tradeoff", []), ("compare", ["--methods", "fft,gdp"])):
        path = tmp_path / f"{what}.png"
        out = io.StringIO()
        assert main(["plot", what, "gaussian", "--sigma", "1", "--steps", "10", "-o", str(path), *extra],
                    out=out) == 0
        assert out.getvalue().strip() == str(path) and path.read_bytes()[:8] == PNG


@pytest.mark.parametrize("argv", [["plot", "tradeoff", "gaussian", "--sigma", "1", "--steps", "3", "--methods", "fft"],
                                  ["plot", "compare", "gaussian", "--sigma", "1", "--steps", "3", "--methods", "ff"],
                                  ["plot", "privacy-curve", "gaussian", "--sigma", "1"],
                                  ["plot", "privacy-curve", "dpsgd", "--sampling-rate", "0.1", "--steps", "3"]])
def test_cli_plot_errors_are_one_line(argv, tmp_path, capsys):
    assert main([*argv, "-o", str(tmp_path / "x.png")], out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert err.startswith("mechkit: error:") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.png").exists()


def test_cli_unwritable_output_is_one_line(tmp_path, capsys):
    bad = tmp_path / "no-such-dir" / "x.png"
    assert main(["plot", "privacy-curve", "gaussian", "--sigma", "1", "--steps", "3", "-o", str(bad)],
                out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert err.startswith("mechkit: error: cannot write -o") and len(err.strip().splitlines()) == 1
