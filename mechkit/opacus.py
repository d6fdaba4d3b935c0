"""An accountant with Opacus's interface, answered by mechkit (importable without torch or Opacus).

``MechkitAccountant`` keeps the history Opacus's accountants keep, a list of (noise_multiplier, sample_rate,
steps) phases (consecutive equal steps merged), and answers ``get_epsilon(delta)`` with the certified *upper* bound
of the composed DP-SGD run (``mk.dpsgd`` per phase, Poisson sampling, add/remove neighbours: Opacus's setting);
``get_estimate(delta)`` returns the whole ``Estimate``.

With Opacus >= 1.6, ``register()`` (once per process) adds it to Opacus's accountant registry
(``opacus.accountants.register_accountant``, which ``create_accountant`` reads), so that
``PrivacyEngine(accountant="mechkit")`` and ``make_private_with_epsilon`` (whose noise search creates its accountant
by name) use it.  Opacus checks no accountant's type, so the class need not subclass ``IAccountant`` and this module
imports neither Opacus nor torch.  With any Opacus, after ``engine = PrivacyEngine()``:
``engine.accountant = MechkitAccountant()`` (before ``make_private``) makes the engine's ``get_epsilon`` mechkit's.
"""
from __future__ import annotations

import importlib
import math

from . import relations
from .errors import MechkitError, ParameterError, check_real


def _phase(noise_multiplier, sample_rate):
    """(noise multiplier >= 0, sample rate in [0, 1]) as floats; a ``ParameterError`` names one out of range."""
    return (check_real("noise_multiplier", noise_multiplier, low=0.0, low_open=False),
            check_real("sample_rate", sample_rate, low=0.0, high=1.0, low_open=False, high_open=False))


class MechkitAccountant:
    """Opacus's accountant interface (``step``, ``get_epsilon``, ``__len__``, ``mechanism``, ``state_dict``,
    ``load_state_dict``, ``get_optimizer_hook_fn``) over mechkit's certified composition.

    Parameters
    ----------
    method : the accountant answering ``get_epsilon`` ("fft" by default; "auto", "spa" ...).
    **options : its options (e.g. ``eps_error``).

    Attributes
    ----------
    history : [(noise_multiplier, sample_rate, steps), ...], as Opacus's accountants keep it.
    """

    def __init__(self, method: str = "fft", **options: object) -> None:
        self.history = []
        self.method, self.options = method, dict(options)

    @classmethod
    def mechanism(cls) -> str:
        """The name Opacus knows the accountant by: "mechkit"."""
        return "mechkit"

    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """Record one optimizer step (checked before the history changes).

        Parameters
        ----------
        noise_multiplier : >= 0 (0: no privacy, epsilon inf).
        sample_rate : in [0, 1] (0: the step touches no example).

        Raises
        ------
        ParameterError : a value outside its range.
        """
        sigma, q = _phase(noise_multiplier, sample_rate)
        if self.history and self.history[-1][:2] == (sigma, q):
            last = self.history[-1]
            self.history[-1] = (sigma, q, last[2] + 1)
        else:
            self.history.append((sigma, q, 1))

    def __len__(self) -> int:
        return len(self.history)

    def composition(self) -> object:
        """The recorded run as a mechkit ``Composition`` (None where no step touched an example).

        Returns
        -------
        A ``Composition`` of the phases with noise and a positive sample rate, or None.
        """
        from .training import dpsgd

        phases = [dpsgd(s, q, n, sampling=relations.POISSON) for s, q, n in self.history if q > 0 and s > 0]
        if not phases:
            return None
        from .composition import compose

        return compose(*phases)

    def get_estimate(self, delta: float) -> object:
        """The ``Estimate`` of epsilon at ``delta`` (inf where a step had no noise, 0 where no step counted).

        Parameters
        ----------
        delta : in (0, 1).

        Returns
        -------
        An ``Estimate`` (certified by the method).
        """
        from .estimate import Estimate

        d = check_real("delta", delta, low=0.0, high=1.0)
        if any(s == 0 and q > 0 for s, q, _ in self.history):
            return Estimate(math.inf, math.inf, math.inf, self.method, True, {"note": "a step without noise"})
        run = self.composition()
        if run is None:
            return Estimate(0.0, 0.0, 0.0, self.method, True, {"note": "no step touched an example"})
        return run.epsilon(d, method=self.method, **self.options)

    def get_epsilon(self, delta: float, *args: object, **kwargs: object) -> float:
        """The certified upper bound of epsilon at ``delta`` (Opacus's accountants return one number: this one is on
        the safe side).

        Parameters
        ----------
        delta : in (0, 1).
        *args, **kwargs : accepted for Opacus's signature and ignored.

        Returns
        -------
        The upper bound.
        """
        est = self.get_estimate(delta)
        return float(est.upper if est.upper is not None else est)

    def state_dict(self, destination: dict | None = None) -> dict:
        """{"history": [...], "mechanism": "mechkit"} (into ``destination`` when given), as Opacus's accountants.

        Parameters
        ----------
        destination : a dict to fill, or None.

        Returns
        -------
        The state dict.
        """
        out = {} if destination is None else destination
        out["history"] = [tuple(h) for h in self.history]
        out["mechanism"] = self.mechanism()
        return out

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a ``state_dict`` (checked before the history changes).

        Parameters
        ----------
        state_dict : as ``state_dict`` returns it.

        Raises
        ------
        ParameterError : another mechanism's state, or a malformed history.
        """
        if not isinstance(state_dict, dict) or state_dict.get("mechanism") != self.mechanism():
            raise ParameterError("state_dict is not a mechkit accountant's (its 'mechanism' is not 'mechkit')")
        history = []
        for h in state_dict.get("history", []):
            try:
                s, q, n = h
            except (TypeError, ValueError):
                raise ParameterError(f"malformed history entry {h!r}: expected (noise_multiplier, sample_rate, "
                                     "steps)") from None
            s, q = _phase(s, q)
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise ParameterError(f"steps must be a positive integer, got {n!r}")
            history.append((s, q, n))
        self.history = history

    def get_optimizer_hook_fn(self, sample_rate: float) -> object:
        """The hook Opacus attaches to the DP optimizer: one ``step`` per optimizer step that took one.

        Parameters
        ----------
        sample_rate : the data loader's sample rate.

        Returns
        -------
        ``hook(optimizer)``.
        """
        def hook_fn(optim):
            self.step(noise_multiplier=optim.noise_multiplier, sample_rate=sample_rate * optim.accumulated_iterations)
        return hook_fn


def register() -> None:
    """Register ``MechkitAccountant`` with Opacus under the name "mechkit": afterwards
    ``opacus.PrivacyEngine(accountant="mechkit")`` accounts with mechkit (its ``get_epsilon(delta)`` is the certified
    upper bound), and so does ``make_private_with_epsilon``'s search for the noise multiplier.  Calling it again
    changes nothing.

    Opacus's own registry is used (``opacus.accountants.register_accountant``, Opacus >= 1.6); nothing of Opacus is
    patched.  Importing Opacus imports torch, so the first call takes a few seconds.

    Returns
    -------
    None.

    Raises
    ------
    MechkitError : Opacus is not installed, or is older than 1.6 (no accountant registry; the message names the
        alternative, ``engine.accountant = MechkitAccountant()``).
    """
    try:
        accountants = importlib.import_module("opacus.accountants")
    except ImportError as exc:
        raise MechkitError("mechkit.opacus.register() needs opacus, which is not installed (pip install opacus); "
                           f"importing it failed: {exc}") from exc
    register_accountant = getattr(accountants, "register_accountant", None)
    if register_accountant is None:
        version = getattr(importlib.import_module("opacus"), "__version__", "unknown")
        raise MechkitError(f"opacus {version} has no accountant registry (opacus.accountants.register_accountant, "
                           "opacus >= 1.6), so PrivacyEngine(accountant='mechkit') cannot work; upgrade opacus, or set "
                           "engine.accountant = mechkit.opacus.MechkitAccountant() after engine = PrivacyEngine()")
    # force: the name is mechkit's, and registering the same class again must not raise Opacus's "already registered"
    register_accountant("mechkit", MechkitAccountant, force=True)
