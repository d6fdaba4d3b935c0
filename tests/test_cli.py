import io

import pytest

from mechkit.cli import main


def test_show_gaussian():
    out = io.StringIO()
    assert main(["show", "gaussian", "--sigma", "2"], out=out) == 0
    text = out.getvalue()
    assert "privacy loss" in text and "closed form" in text and "delta(1)" in text


def test_epsilon_dp_sgd_rdp_bound():
    out = io.StringIO()
    assert main(["epsilon", "subsampled-gaussian", "--sigma", "1.0", "--q", "0.01", "--steps", "1000",
                 "--delta", "1e-5"], out=out) == 0
    assert "epsilon    <=" in out.getvalue()


@pytest.mark.parametrize("argv", [["show", "nope", "--sigma", "1"], ["show", "gaussian", "--sigma", "-1"],
                                  ["show", "subsampled-gaussian", "--sigma", "1"],
                                  ["epsilon", "gaussian", "--sigma", "1", "--steps", "0", "--delta", "1e-5"]])
def test_cli_errors_exit_2(argv, capsys):
    assert main(argv) == 2
    assert "mechkit: error:" in capsys.readouterr().err
