"""The DP-SGD front end: ``mk.dpsgd(...)`` is the composition of a training run in a practitioner's words.

Each step adds Gaussian noise of standard deviation ``noise_multiplier`` x clip norm to the sum of the clipped
per-example gradients of a batch, so one step is the Gaussian mechanism with sigma = ``noise_multiplier`` and
sensitivity 1 (the clip norm), subsampled by the batch sampling (``mk.subsample``):

* ``sampling="poisson"`` (Opacus, TensorFlow Privacy): every example joins a batch with probability
  ``sampling_rate`` (= batch_size / dataset_size); neighbours are add/remove (``relation`` may be "replace_one");
* ``sampling="without_replacement"`` (shuffled fixed-size batches): batches of ``batch_size`` drawn uniformly from
  ``dataset_size`` examples; neighbours are replace-one (docs/relations.md: its compositions report an attained
  lower bound and an upper bound valid under adaptivity).

Steps: ``steps``, or ``epochs`` passes over the data: ceil(epochs x dataset_size / batch_size) steps, or
ceil(epochs / sampling_rate) when only the rate is given.
"""
from __future__ import annotations

import math
import numbers

from . import relations
from .composition import Composition, compose
from .errors import ParameterError, check_real
from .laws.shipped import family
from .transforms import replace_one, subsampled


def _count(name, value, low=1):
    if isinstance(value, bool) or not (isinstance(value, numbers.Integral)
                                       or (isinstance(value, float) and value.is_integer())):
        raise ParameterError(f"{name} must be an integer >= {low}, got {value!r}")
    if value < low:
        raise ParameterError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def plan(sampling_rate: float | None = None, steps: int | None = None, *, batch_size: int | None = None,
         dataset_size: int | None = None, epochs: float | None = None) -> tuple[float, int]:
    """The sampling rate and number of steps that ``dpsgd`` composes, from either way of stating them (checked).

    Parameters
    ----------
    sampling_rate : in (0, 1]; or give ``batch_size`` and ``dataset_size`` instead (rate = batch / dataset).
    steps : the number of steps, >= 1; or give ``epochs`` instead.
    batch_size, dataset_size : integers with 1 <= batch_size <= dataset_size.
    epochs : passes over the data, > 0.

    Returns
    -------
    (sampling rate, steps).

    Raises
    ------
    ParameterError : a value outside its range, both or neither of each alternative.
    """
    by_size = batch_size is not None or dataset_size is not None
    if (sampling_rate is None) == (not by_size):
        raise ParameterError("give either sampling_rate or batch_size and dataset_size (not both, not neither)")
    if by_size:
        if batch_size is None or dataset_size is None:
            raise ParameterError("batch_size and dataset_size go together (the rate is batch_size / dataset_size)")
        n = _count("dataset_size", dataset_size)
        b = _count("batch_size", batch_size)
        if b > n:
            raise ParameterError(f"batch_size must be at most dataset_size = {n}, got {b}")
        rate = b / n
    else:
        rate = check_real("sampling_rate", sampling_rate, low=0.0, high=1.0, high_open=False)
    if (steps is None) == (epochs is None):
        raise ParameterError("give either steps or epochs (not both, not neither)")
    if steps is not None:
        return rate, _count("steps", steps)
    e = check_real("epochs", epochs, low=0.0)
    total = math.ceil(e * dataset_size / batch_size) if by_size else math.ceil(e / rate)
    return rate, _count("steps (from epochs)", total)


def dpsgd(noise_multiplier: float, sampling_rate: float | None = None, steps: int | None = None, *,
          batch_size: int | None = None, dataset_size: int | None = None, epochs: float | None = None,
          sampling: str = relations.POISSON, relation: str | None = None) -> Composition:
    """The composition of a DP-SGD run (module docstring); everything is checked before any derivation.

    Parameters
    ----------
    noise_multiplier : the noise standard deviation over the clip norm, > 0.
    sampling_rate : in (0, 1]; or ``batch_size`` and ``dataset_size``.
    steps : the number of steps, >= 1; or ``epochs``.
    batch_size, dataset_size : integers, 1 <= batch_size <= dataset_size.
    epochs : passes over the data, > 0.
    sampling : "poisson" (default) or "without_replacement".
    relation : the neighbouring relation: "add_remove" (default for Poisson) or "replace_one" (the only one, and
        the default, for sampling without replacement).

    Returns
    -------
    A ``Composition`` of ``steps`` runs of the subsampled Gaussian (the Gaussian itself at rate 1; under
    replace-one its replace-one pair).

    Raises
    ------
    ParameterError : a value outside its range, a missing or doubled alternative, an unknown sampling or
        relation, or a combination that does not exist (without replacement under add/remove).
    """
    sigma = check_real("noise_multiplier", noise_multiplier, low=0.0)
    relations.check_scheme(sampling)
    if relation is None:
        relation = relations.ADD_REMOVE if sampling == relations.POISSON else relations.REPLACE_ONE
    relations.check_relation(relation)
    rate, total = plan(sampling_rate, steps, batch_size=batch_size, dataset_size=dataset_size, epochs=epochs)
    if sampling == relations.WITHOUT_REPLACEMENT and relation != relations.REPLACE_ONE:
        raise ParameterError("sampling without replacement is accounted under relation='replace_one' (fixed-size "
                             "batches need neighbours of the same size); for add/remove use sampling='poisson'")
    gaussian = family("gaussian")  # its shipped record where it has one: no SymPy
    if rate == 1.0:  # every example in every batch: the Gaussian mechanism itself, whatever the sampling
        base = gaussian(sigma=sigma, sensitivity=1.0)
        step = base if relation == relations.ADD_REMOVE else replace_one(base)
    else:  # the unsampled Gaussian is never bound (its kernels need no compile)
        step = subsampled(gaussian, rate, sampling, relation, sigma=sigma, sensitivity=1.0)
    return compose((step, total))
