import io

import pytest

from mechkit.cli import main


def test_show_gaussian():
    out = io.StringIO()
    assert main(["show", "gaussian", "--sigma", "2"], out=out) == 0
    text = out.getvalue()
    assert "privacy loss" in text and "closed form" in text and "delta(1)" in text


def test_epsilon_dp_sgd():
    out = io.StringIO()
    assert main(["epsilon", "subsampled-gaussian", "--sigma", "1.0", "--q", "0.01", "--steps", "1000",
                 "--delta", "1e-5"], out=out) == 0
    lines = out.getvalue().splitlines()
    eps = float(lines[1].split()[1])
    lo, hi = (float(v) for v in lines[2].split("[")[1].split("]")[0].split(","))
    assert lo <= eps <= hi and hi - lo < 0.03
    out = io.StringIO()
    assert main(["epsilon", "subsampled-gaussian", "--sigma", "1.0", "--q", "0.01", "--steps", "1000",
                 "--delta", "1e-5", "--method", "rdp"], out=out) == 0
    rdp_eps = float(out.getvalue().splitlines()[1].split()[1])
    assert rdp_eps >= lo  # the RDP upper bound is never below the certified lower bound
    out = io.StringIO()
    assert main(["epsilon", "subsampled-gaussian", "--sigma", "1.0", "--q", "0.01", "--steps", "1000",
                 "--delta", "1e-30", "--method", "spa"], out=out) == 0
    lines = out.getvalue().splitlines()
    assert "certified, method spa" in lines[2] and float(lines[1].split()[1]) > 2 * hi
    out = io.StringIO()
    assert main(["epsilon", "gaussian", "--sigma", "10", "--steps", "100", "--delta", "1e-5", "--method", "gdp"],
                out=out) == 0
    assert "not certified" in out.getvalue()


@pytest.mark.parametrize("argv", [["show", "nope", "--sigma", "1"], ["show", "gaussian", "--sigma", "-1"],
                                  ["show", "subsampled-gaussian", "--sigma", "1"],
                                  ["epsilon", "gaussian", "--sigma", "1", "--steps", "0", "--delta", "1e-5"]])
def test_cli_errors_exit_2(argv, capsys):
    assert main(argv) == 2
    assert "mechkit: error:" in capsys.readouterr().err


def _eps_and_bounds(text):
    lines = text.splitlines()
    lo, hi = (float(v) for v in lines[2].split("[")[1].split("]")[0].split(","))
    return float(lines[1].split()[1]), lo, hi


def test_epsilon_with_a_scheme_and_a_relation():
    """The command line accounts the same mechanisms as the API (--scheme, --relation)."""
    import mechkit as mk
    out = io.StringIO()
    assert main(["epsilon", "subsampled-gaussian", "--sigma", "1.0", "--q", "0.01", "--steps", "100",
                 "--delta", "1e-5", "--scheme", "without_replacement", "--relation", "replace_one"], out=out) == 0
    eps, lo, hi = _eps_and_bounds(out.getvalue())
    m = mk.subsample(mk.gaussian(1.0), 0.01, scheme="without_replacement", relation="replace_one")
    api = mk.compose((m, 100)).epsilon(1e-5)
    assert (eps, lo, hi) == pytest.approx((float(api), api.lower, api.upper), abs=1e-6)
    assert "(replace_one)" in out.getvalue() and "without replacement" in out.getvalue()
    out = io.StringIO()
    assert main(["epsilon", "gaussian", "--sigma", "2", "--steps", "10", "--delta", "1e-5", "--relation",
                 "replace_one"], out=out) == 0
    eps, lo, hi = _eps_and_bounds(out.getvalue())
    same = mk.compose((mk.gaussian(2.0, 2.0), 10)).epsilon(1e-5)  # replace-one = twice the contribution bound
    assert lo <= float(same) <= hi


@pytest.mark.parametrize("argv", [["epsilon", "gaussian", "--sigma", "2", "--steps", "3", "--delta", "1e-5",
                                   "--scheme", "poisson"],
                                  ["epsilon", "subsampled-gaussian", "--sigma", "1", "--q", "0.1", "--steps", "3",
                                   "--delta", "1e-5", "--scheme", "without_replacement"],
                                  ["show", "k-ary-randomized-response", "--noise-parameter", "0.5", "--num-buckets",
                                   "4", "--relation", "add_remove"]])
def test_scheme_and_relation_errors_are_one_line(argv, capsys):
    assert main(argv, out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert err.startswith("mechkit: error:") and len(err.strip().splitlines()) == 1


def test_a_relation_the_pair_cannot_take_is_refused_before_binding(monkeypatch, capsys):
    # binding may compile the family's kernels (a progress line on stderr before the error, seconds): the refusal
    # comes first (CI found the progress line where this family was first bound by this test)
    import types

    import mechkit.cli as cli
    fam = cli.mk.catalog("k_ary_randomized_response").family

    class Unbindable:
        relation, name, parameters = fam.relation, fam.name, fam.parameters

        def __call__(self, *args, **kwargs):
            raise AssertionError("bound before the relation was checked")
    monkeypatch.setattr(cli.mk, "catalog", lambda name: types.SimpleNamespace(family=Unbindable()))
    argv = ["show", "k-ary-randomized-response", "--noise-parameter", "0.5", "--num-buckets", "4", "--relation",
            "add_remove"]
    assert main(argv, out=io.StringIO()) == 2
    assert capsys.readouterr().err.startswith("mechkit: error: k_ary_randomized_response is a pair for 'replace_one'")


def test_dpsgd_and_calibrate_in_the_users_words():
    """`mechkit epsilon dpsgd ...` is mk.dpsgd; `mechkit calibrate ...` is mk.calibrate over it."""
    import mechkit as mk
    out = io.StringIO()
    assert main(["epsilon", "dpsgd", "--noise-multiplier", "1.0", "--batch-size", "600", "--dataset-size", "60000",
                 "--epochs", "1", "--delta", "1e-5"], out=out) == 0
    eps, lo, hi = _eps_and_bounds(out.getvalue())
    api = mk.dpsgd(1.0, batch_size=600, dataset_size=60_000, epochs=1).epsilon(1e-5)
    assert (eps, lo, hi) == pytest.approx((float(api), api.lower, api.upper), abs=1e-6)
    assert "x 100 steps" in out.getvalue()
    out = io.StringIO()
    assert main(["calibrate", "noise-multiplier", "--sampling-rate", "1", "--steps", "4", "--epsilon", "2",
                 "--delta", "1e-5"], out=out) == 0
    lines = out.getvalue().splitlines()
    sigma = float(lines[0].split()[-1])
    cal = mk.calibrate(lambda s: mk.dpsgd(s, 1.0, 4), 2.0, 1e-5, (0.3, 50.0))
    assert sigma == pytest.approx(cal.value, rel=1e-12) and "certified" in lines[1]


@pytest.mark.parametrize("argv", [["epsilon", "dpsgd", "--sigma", "1", "--steps", "3", "--delta", "1e-5"],
                                  ["epsilon", "dpsgd", "--sampling-rate", "0.1", "--steps", "3", "--delta", "1e-5"],
                                  ["epsilon", "gaussian", "--sigma", "1", "--delta", "1e-5"],
                                  ["calibrate", "steps", "--noise-multiplier", "1", "--sampling-rate", "0.1",
                                   "--steps", "5", "--epsilon", "1", "--delta", "1e-5"],
                                  ["calibrate", "noise-multiplier", "--sampling-rate", "1", "--steps", "4",
                                   "--epsilon", "2", "--delta", "1e-5", "--bounds", "40", "50"]])
def test_dpsgd_and_calibrate_errors_are_one_line(argv, capsys):
    assert main(argv, out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert err.startswith("mechkit: error:") and len(err.strip().splitlines()) == 1


def test_delta_json_and_name_equals_value():
    """`mechkit delta`, `--json` (the Estimate's numbers and the inputs) and `--name=value`, against the API."""
    import json

    import mechkit as mk
    out = io.StringIO()
    assert main(["delta", "dpsgd", "--noise-multiplier=0.8", "--sampling-rate=0.01", "--steps=500", "--epsilon", "2",
                 "--json"], out=out) == 0
    rec = json.loads(out.getvalue())
    api = mk.dpsgd(0.8, 0.01, 500).delta(2.0)
    assert (rec["value"], rec["lower"], rec["upper"]) == (float(api), api.lower, api.upper)
    assert rec["certified"] is True and rec["method"] == "fft" and rec["epsilon"] == 2.0 and rec["steps"] == 500
    out = io.StringIO()
    assert main(["epsilon", "gaussian", "--sigma=2", "--steps", "10", "--delta", "1e-5", "--json"], out=out) == 0
    rec = json.loads(out.getvalue())
    api = mk.compose((mk.gaussian(2.0), 10)).epsilon(1e-5)
    assert rec["value"] == float(api) and rec["params"] == {"sigma": 2.0} and rec["delta"] == 1e-5
    out = io.StringIO()
    assert main(["delta", "gaussian", "--sigma", "2", "--steps", "10", "--epsilon", "1"], out=out) == 0
    assert out.getvalue().splitlines()[1].startswith("delta")


def test_argparse_errors_are_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["delta", "gaussian", "--sigma", "2", "--steps", "3", "--epsilon", "1", "--method", "rdp"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("mechkit: error:") and len(err.strip().splitlines()) == 1 and "rdp" in err


def test_schedule_file_csv_and_json(tmp_path, capsys):
    """`--schedule FILE`: the phases of a DP-SGD run (CSV with a header, or a JSON list), composed as mk.dpsgd's."""
    import json

    import mechkit as mk
    csv_path = tmp_path / "phases.csv"
    csv_path.write_text("noise_multiplier,sampling_rate,steps\n1.0,0.01,500\n0.8,0.02,200\n")
    json_path = tmp_path / "phases.json"
    json_path.write_text(json.dumps([{"noise_multiplier": 1.0, "sampling_rate": 0.01, "steps": 500},
                                     {"noise_multiplier": 0.8, "batch_size": 200, "dataset_size": 10000,
                                      "epochs": 4}]))
    api = mk.compose(mk.dpsgd(1.0, 0.01, 500), mk.dpsgd(0.8, 0.02, 200)).epsilon(1e-5)
    for path in (csv_path, json_path):
        out = io.StringIO()
        assert main(["epsilon", "dpsgd", "--schedule", str(path), "--delta", "1e-5", "--json"], out=out) == 0
        rec = json.loads(out.getvalue())
        assert (rec["value"], rec["lower"], rec["upper"]) == (float(api), api.lower, api.upper)
        assert rec["steps"] == 700
    bad = tmp_path / "bad.csv"
    bad.write_text("noise_multiplier,sampling_rate,steps\n1.0,1.5,10\n")
    assert main(["epsilon", "dpsgd", "--schedule", str(bad), "--delta", "1e-5"], out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert err.startswith("mechkit: error: --schedule phase 1:") and len(err.strip().splitlines()) == 1
    assert main(["epsilon", "dpsgd", "--schedule", str(csv_path), "--steps", "3", "--delta", "1e-5"],
                out=io.StringIO()) == 2


def test_help_lists_every_mechanism_and_its_parameters_without_importing_the_engine():
    """Issue 21: `mechkit --help` lists each catalog mechanism with its parameters, read from the shipped index
    (no SymPy, no Numba: it answers in a fraction of a second; timings live in benchmarks/)."""
    import json
    import subprocess
    import sys

    code = ("import sys, io, contextlib\nfrom mechkit.cli import main\nbuf = io.StringIO()\n"
            "with contextlib.redirect_stdout(buf):\n    try:\n        main(['--help'])\n    except SystemExit:\n"
            "        pass\nprint(buf.getvalue())\n"
            "print('IMPORTED', sorted(m for m in ('sympy', 'numba', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
    assert out.strip().endswith("IMPORTED []"), out[-300:]
    from mechkit.laws import catalog
    index = catalog.index()
    assert json.loads((catalog.prederived_dir() / "index.json").read_text()) == index  # the shipped index is current
    for name, entry in index.items():
        assert f"  {name.replace('_', '-')}: " in out
        for pname, _ in entry["parameters"]:
            assert f"--{pname.replace('_', '-')}" in out


def test_calibrate_sampling_rate_and_other_targets(capsys):
    """`mechkit calibrate sampling-rate`, and targets --advantage, --tpr/--fpr and --query delta, as mk.calibrate."""
    import json

    import mechkit as mk

    def run(*argv):
        buf = io.StringIO()
        return main(list(argv), out=buf), buf.getvalue()

    base = ["--noise-multiplier", "1.0", "--steps", "30", "--json"]
    rc, text = run("calibrate", "sampling-rate", "--epsilon", "2", "--delta", "1e-5", "--bounds", "1e-3", "1", *base)
    got = json.loads(text)
    assert rc == 0 and got["upper"] <= 2.0 < got["neighbour_upper"] and got["quantity"] == "epsilon(1e-05)"
    assert got["neighbour"] > got["value"]  # more sampling is less private: the infeasible neighbour lies above
    run_at = mk.dpsgd(noise_multiplier=1.0, sampling_rate=got["value"], steps=30)
    assert run_at.epsilon(1e-5).upper == got["upper"]  # the JSON's bound is the library's, at the value printed
    rc, text = run("calibrate", "noise-multiplier", "--sampling-rate", "0.01", "--steps", "30", "--advantage", "0.05",
                   "--json")
    got = json.loads(text)
    assert rc == 0 and got["quantity"] == "advantage" and got["upper"] <= 0.05 and got["advantage"] == 0.05
    rc, text = run("calibrate", "noise-multiplier", "--sampling-rate", "0.01", "--steps", "30", "--epsilon", "1",
                   "--delta", "1e-5", "--query", "delta")
    assert rc == 0 and "delta(1)" in text
    capsys.readouterr()  # the runs above may print a progress line (a calibration past progress.DELAY)
    rc, _ = run("calibrate", "noise-multiplier", "--sampling-rate", "0.01", "--steps", "30", "--tpr", "0.02")
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "give one target" in err


def test_remedies_are_spelled_as_the_command_line_takes_them(capsys):
    """Issue 21: a memory-limit error names the eps_error that fits and the saddle point, as CLI options."""
    from mechkit.cli import cli_spelling

    assert main(["epsilon", "gaussian", "--sigma", "1", "--steps", "10", "--delta", "1e-5", "--method", "fft",
                 "--eps-error", "1e-4", "--memory-limit", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--eps-error >= " in err and "--method spa" in err and "--memory-limit" in err
    assert "method='" not in err and "eps_error" not in err
    assert cli_spelling("use method='fft' or eps_error=0.1") == "use --method fft or --eps-error 0.1"


def test_warnings_are_spelled_as_the_command_line_takes_them(capsys):
    assert main(["epsilon", "subsampled-gaussian", "--sigma", "0.8", "--q", "0.01", "--steps", "100", "--delta",
                 "1e-5", "--method", "spa"], out=io.StringIO()) == 0
    err = capsys.readouterr().err
    assert "mechkit: warning:" in err and "--method fft" in err and "method='" not in err
