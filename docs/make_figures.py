"""The README's figures: ``python docs/make_figures.py`` (re)writes ``docs/img/*.png``.  Needs the plot extra
(``pip install "mechkit[plot]"``); the run is the README's "Plots" example."""
import pathlib

import matplotlib

matplotlib.use("Agg")  # files only

import mechkit as mk  # noqa: E402
from mechkit import plot  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parent / "img"


def main():
    OUT.mkdir(exist_ok=True)
    run = mk.dpsgd(noise_multiplier=1.0, sampling_rate=0.01, steps=1000)
    ax = plot.privacy_curve(run)
    path = OUT / "privacy_curve.png"
    ax.figure.savefig(path, dpi=100, bbox_inches="tight", metadata={"Software": None})
    print(path)


if __name__ == "__main__":
    main()
