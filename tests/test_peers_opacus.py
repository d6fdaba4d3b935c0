"""``mechkit.opacus.register()`` inside Opacus (issue 22): ``PrivacyEngine(accountant="mechkit")`` trains with
mechkit's accountant, compared with Opacus's own accountants on the same history.  Optional: the tests that train
skip (pytest.importorskip) without torch and Opacus (``pip install "mechkit[peers]"``); the two tests of
``register()``'s errors run everywhere (they hide or fake Opacus in ``sys.modules``).

The run: a linear model on 64 random examples, batches of 8 (Opacus's Poisson sampling, sample rate 1/8), one epoch
(8 steps) at noise multiplier 1.0 and one at 1.5, set on the DP optimizer between them; the accountant's history is
then [(1.0, 0.125, 8), (1.5, 0.125, 8)].  What is asserted:

* the engine's ``get_epsilon(delta)`` is exactly the certified upper bound of the same run in mechkit,
  ``mk.compose(mk.dpsgd(1.0, 0.125, 8), mk.dpsgd(1.5, 0.125, 8)).epsilon(delta, method="fft").upper``;
* Opacus's PRV accountant (Gopi et al., ``eps_error`` 0.01, ``delta_error`` delta / 1000, its [lower, estimate,
  upper] from the discrete PRV its ``get_epsilon`` builds): its lower bound is at most mechkit's upper bound (sound:
  its PRV is the remove direction's, whose truth is at most the max over directions that mechkit bounds); mechkit's
  lower bound is at most its upper bound (sound where the remove direction dominates, as it does for the
  subsampled Gaussian here: the two agree to 1e-4); its estimate, which it certifies to within its eps_error, lies
  in mechkit's interval widened by that 0.01;
* Opacus's RDP accountant (an upper bound through the RDP-to-DP conversion) is at least mechkit's lower bound
  (sound) and, measured, at least mechkit's upper bound (RDP is the looser bound: by 0.61 here);
* ``make_private_with_epsilon`` with the registered accountant (Opacus's noise search creates its accountant by
  name) returns a noise multiplier whose certified mechkit epsilon is within Opacus's tolerance (0.01) below the
  target.

Values when written (opacus 1.6.0, torch 2.14.1, delta = 1e-5):

 accountant                       lower     estimate  upper
 mechkit (fft)                    3.34586   3.35615   3.36645    (engine.get_epsilon: 3.366448400889)
 Opacus "prv"                     3.34586   3.35615   3.36645    (its get_epsilon: 3.366448224821)
 Opacus "rdp"                                         3.97495
 Opacus "gdp" (CLT, no bound)               0.98541

(mechkit's FFT composer and Opacus's PRV accountant follow the same paper with the same budgets: they agree to
2e-7.)  ``make_private_with_epsilon(target_epsilon=2.0, target_delta=1e-5, epochs=2)``: noise multiplier 1.47461,
mechkit's certified epsilon [1.97740, 1.98757, 1.99773].  The module takes about 9 s (4 s of them importing torch
and Opacus).
"""
from __future__ import annotations

import sys
import types

import pytest

import mechkit as mk
from mechkit.errors import MechkitError
from mechkit.opacus import MechkitAccountant, register

DELTA = 1e-5
EE = 0.01                       # Opacus's PRV eps_error (its default) and mechkit's
N, BATCH = 64, 8                # sample rate 1 / 8
Q = BATCH / N
SIGMAS = (1.0, 1.5)             # one epoch each
SLACK = 1e-9

# Opacus's reminder about its secure RNG, and torch's about the backward hooks on a model whose inputs need no grad
pytestmark = [pytest.mark.filterwarnings("ignore:Secure RNG turned off"),
              pytest.mark.filterwarnings("ignore:Full backward hook is firing")]


def _setup():
    """A registered Opacus, a linear model, a data loader and an SGD optimizer (seeded)."""
    torch = pytest.importorskip("torch")
    opacus = pytest.importorskip("opacus")
    register()
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    data = torch.utils.data.TensorDataset(torch.randn(N, 4), torch.randint(0, 2, (N,)))
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH)
    return torch, opacus, model, loader, torch.optim.SGD(model.parameters(), lr=0.1)


def _epoch(torch, model, optimizer, loader):
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()


@pytest.fixture(scope="module")
def trained():
    """The engine after one epoch per noise multiplier of SIGMAS."""
    torch, opacus, model, loader, optimizer = _setup()
    engine = opacus.PrivacyEngine(accountant="mechkit")
    model, optimizer, loader = engine.make_private(module=model, optimizer=optimizer, data_loader=loader,
                                                   noise_multiplier=SIGMAS[0], max_grad_norm=1.0)
    for sigma in SIGMAS:
        optimizer.noise_multiplier = sigma
        _epoch(torch, model, optimizer, loader)
    return opacus, engine


@pytest.fixture(scope="module")
def mechkit_estimate():
    return mk.compose(*(mk.dpsgd(s, Q, N // BATCH) for s in SIGMAS)).epsilon(DELTA, method="fft")


def test_register_is_idempotent_and_creates_mechkit_accountants():
    opacus = pytest.importorskip("opacus")
    register()
    register()
    acc = opacus.accountants.create_accountant("mechkit")
    assert type(acc) is MechkitAccountant and acc.mechanism() == "mechkit"
    assert type(opacus.PrivacyEngine(accountant="mechkit").accountant) is MechkitAccountant
    assert type(opacus.PrivacyEngine().accountant) is not MechkitAccountant   # Opacus's default is left alone


def test_engine_epsilon_is_mechkits_certified_upper_bound(trained, mechkit_estimate):
    _, engine = trained
    assert type(engine.accountant) is MechkitAccountant
    assert engine.accountant.history == [(s, Q, N // BATCH) for s in SIGMAS]
    assert engine.get_epsilon(DELTA) == mechkit_estimate.upper
    state = engine.accountant.state_dict()          # what PrivacyEngine.save_checkpoint stores
    other = MechkitAccountant()
    other.load_state_dict(state)
    assert other.get_epsilon(DELTA) == engine.get_epsilon(DELTA)


def test_against_opacus_prv_accountant(trained, mechkit_estimate):
    opacus, engine = trained
    prv = opacus.accountants.PRVAccountant()
    prv.history = list(engine.accountant.history)
    # its get_epsilon returns the upper bound of this discrete PRV's (lower, estimate, upper)
    lower, est, upper = prv._get_dprv(eps_error=EE, delta_error=DELTA / 1000).compute_epsilon(DELTA, DELTA / 1000, EE)
    assert upper == pytest.approx(prv.get_epsilon(DELTA), abs=SLACK)
    m = mechkit_estimate
    assert lower <= m.upper + SLACK, f"Opacus PRV lower bound {lower} above mechkit's upper bound {m.upper}"
    assert m.lower <= upper + SLACK, f"mechkit's lower bound {m.lower} above Opacus PRV's upper bound {upper}"
    assert m.lower - EE - SLACK <= est <= m.upper + EE + SLACK, (m.lower, est, m.upper)


def test_against_opacus_rdp_accountant(trained, mechkit_estimate):
    opacus, engine = trained
    rdp = opacus.accountants.RDPAccountant()
    rdp.history = list(engine.accountant.history)
    eps = rdp.get_epsilon(DELTA)
    assert eps >= mechkit_estimate.lower - SLACK, "Opacus's RDP upper bound is below mechkit's certified lower bound"
    assert eps >= mechkit_estimate.upper, (eps, mechkit_estimate.upper)   # measured: RDP is looser by 0.61


def test_make_private_with_epsilon_uses_the_registered_accountant():
    torch, opacus, model, loader, optimizer = _setup()
    engine = opacus.PrivacyEngine(accountant="mechkit")
    model, optimizer, loader = engine.make_private_with_epsilon(
        module=model, optimizer=optimizer, data_loader=loader, target_epsilon=2.0, target_delta=DELTA, epochs=2,
        max_grad_norm=1.0)
    upper = mk.dpsgd(optimizer.noise_multiplier, Q, 2 * N // BATCH).epsilon(DELTA, method="fft").upper
    assert 2.0 - 0.01 <= upper <= 2.0, (optimizer.noise_multiplier, upper)   # Opacus's epsilon_tolerance: 0.01
    _epoch(torch, model, optimizer, loader)
    assert engine.get_epsilon(DELTA) <= upper


def test_register_without_opacus_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "opacus", None)               # import opacus... raises ImportError
    monkeypatch.setitem(sys.modules, "opacus.accountants", None)
    with pytest.raises(MechkitError, match=r"needs opacus.*pip install opacus"):
        register()


def test_register_with_an_opacus_without_registry(monkeypatch):
    old = types.ModuleType("opacus")
    old.__version__ = "1.5.4"                                       # create_accountant was a fixed if/elif then
    monkeypatch.setitem(sys.modules, "opacus", old)
    monkeypatch.setitem(sys.modules, "opacus.accountants", types.ModuleType("opacus.accountants"))
    with pytest.raises(MechkitError, match=r"opacus 1\.5\.4 has no accountant registry.*engine\.accountant"):
        register()
