"""Command line: ``mechkit show NAME --param value ...``, ``mechkit epsilon NAME ... --steps K --delta D`` and
``mechkit calibrate noise-multiplier|steps|sampling-rate --epsilon E --delta D`` (or ``--advantage A``, or ``--tpr T
--fpr F``; a DP-SGD run's options).

``mechkit epsilon dpsgd --noise-multiplier 0.8 --sampling-rate 0.01 --steps 10000 --delta 1e-5`` (or
``--batch-size B --dataset-size N``, ``--epochs E``) accounts a DP-SGD run (``mk.dpsgd``).

``mechkit plot privacy-curve|tradeoff|compare NAME ... -o FILE.png`` draws the run that ``mechkit epsilon`` would
account (``mechkit.plot``; needs matplotlib: ``pip install "mechkit[plot]"``) and prints the file written.

NAME is a catalog mechanism (gaussian, laplace, randomized-response, discrete-laplace, discrete-gaussian, ...)
or ``subsampled-NAME`` with ``--q RATE`` (and ``--scheme poisson|without_replacement``).  ``--relation
replace_one`` accounts the mechanism under replace-one neighbours (``replace_special``: as dp_accounting, the same
pair).  Parameters are passed as ``--name value``.
"""
from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import re
import sys
import warnings
from pathlib import Path


import mechkit as mk
from mechkit.accountants import METHODS
from mechkit.errors import MechkitError, MechkitWarning
from mechkit.relations import RELATIONS, SCHEMES


def _parse_params(extra):
    params = {}
    it = iter(extra)
    for tok in it:
        if not tok.startswith("--"):
            raise MechkitError(f"expected --name value, got {tok!r}")
        if "=" in tok:
            tok, val = tok.split("=", 1)
        else:
            try:
                val = next(it)
            except StopIteration:
                raise MechkitError(f"parameter {tok} has no value") from None
        try:
            params[tok[2:].replace("-", "_")] = float(val)
        except ValueError:
            raise MechkitError(f"parameter {tok} must be a number, got {val!r}") from None
    return params


def build(name, params, scheme=None, relation=None):
    name = name.replace("-", "_")
    q = None
    if name.startswith("subsampled_"):
        name = name[len("subsampled_"):]
        if "q" not in params:
            raise MechkitError("a subsampled mechanism needs --q (the sampling rate)")
        q = params.pop("q")
    elif scheme is not None:
        raise MechkitError("--scheme applies to subsampled-NAME only")
    if name not in mk.CATALOG:
        raise MechkitError(f"unknown mechanism {name!r}; choose from {', '.join(mk.CATALOG)} (or subsampled-NAME)")
    from mechkit.laws import shipped

    fam = shipped.family(name)  # its shipped record where it has one: no SymPy
    if q is not None:  # the unsampled mechanism is never bound (transforms.subsampled)
        from mechkit.transforms import subsampled

        return subsampled(fam, q, scheme or "poisson", relation or "add_remove", **params)
    # a relation the pair cannot take is refused before the mechanism is bound (binding may compile its kernels)
    own = fam.relation
    if relation not in (None, own, "replace_one") and not (relation == "replace_special" and own == "add_remove"):
        raise MechkitError(f"{fam.name} is a pair for {own!r}; it cannot be accounted under {relation!r}")
    m = fam(**params) if params or not fam.parameters else fam()
    if relation is None or relation == own:
        return m
    return mk.replace_one(m) if relation == "replace_one" else mk.with_relation(m, relation)


_DPSGD = ("noise_multiplier", "sampling_rate", "batch_size", "dataset_size", "epochs")


def _dpsgd(args, params, steps, **fixed):
    """``mk.dpsgd`` from the command line's --noise-multiplier, --sampling-rate or --batch-size/--dataset-size,
    --steps or --epochs, --scheme (as ``sampling``) and --relation."""
    unknown = sorted(set(params) - set(_DPSGD))
    if unknown:
        raise MechkitError(f"unknown option(s) for dpsgd: {', '.join('--' + u.replace('_', '-') for u in unknown)}; "
                           "it takes --noise-multiplier, --sampling-rate or --batch-size and --dataset-size, "
                           "--steps or --epochs")
    kw = {k: (int(v) if k in ("batch_size", "dataset_size") and float(v).is_integer() else v)
          for k, v in params.items()}
    if "noise_multiplier" not in kw and "noise_multiplier" not in fixed:
        raise MechkitError("dpsgd needs --noise-multiplier")
    return mk.dpsgd(**{**kw, **fixed}, steps=steps, sampling=args.scheme or "poisson", relation=args.relation)


def _calibrate(args, params, out):
    """``mechkit calibrate noise-multiplier|steps|sampling-rate``: ``mk.calibrate`` over a DP-SGD run, for an
    (--epsilon, --delta) target (``--query delta``: bound delta(epsilon)), an --advantage, or --tpr at --fpr."""
    target = {k: getattr(args, k) for k in ("epsilon", "delta", "advantage", "tpr", "fpr")
              if getattr(args, k) is not None}
    if args.query != "epsilon":
        target["query"] = args.query
    if args.eps_error is not None:
        target["eps_error"] = args.eps_error
    if args.memory_limit is not None:
        target["memory_limit"] = args.memory_limit * 2**20
    if args.what == "noise-multiplier":
        bounds = tuple(args.bounds) if args.bounds else (0.3, 50.0)
        cal = mk.calibrate(lambda s: _dpsgd(args, params, args.steps, noise_multiplier=s), bounds=bounds, **target)
    elif args.what == "sampling-rate":
        if any(k in params for k in ("sampling_rate", "batch_size")):
            raise MechkitError("calibrate sampling-rate takes neither --sampling-rate nor --batch-size (it finds it)")
        bounds = tuple(args.bounds) if args.bounds else (1e-6, 1.0)
        cal = mk.calibrate(lambda q: _dpsgd(args, params, args.steps, sampling_rate=q), bounds=bounds, **target)
    else:
        if args.steps is not None or "epochs" in params:
            raise MechkitError("calibrate steps takes neither --steps nor --epochs (it finds the steps)")
        bounds = tuple(int(b) for b in args.bounds) if args.bounds else (1, 10**7)
        cal = mk.calibrate(lambda t: _dpsgd(args, params, t), bounds=bounds, integer=True, **target)
    est, label = cal.estimate, args.what.replace("-", " ")
    if args.json:
        print(json.dumps({**_fields(est), "value": cal.value, "parameter": args.what, "neighbour": cal.neighbour,
                          "neighbour_upper": float(cal.neighbour_upper), "evaluations": cal.evaluations,
                          "quantity": cal.quantity, **target, "params": params, "steps": args.steps,
                          "scheme": args.scheme, "relation": args.relation}), file=out)
        return 0
    limit = cal.target[0] if cal.quantity.startswith("epsilon") else cal.target[1]
    print(f"{label:<16} {cal.value}", file=out)
    print(f"{cal.quantity:<16} <= {est.upper:.6g} <= {limit:g} (certified, method {est.method}; interval "
          f"[{est.lower:.6g}, {est.upper:.6g}])", file=out)
    print(f"next value       {cal.neighbour} has upper bound {cal.neighbour_upper:.6g} > {limit:g} "
          f"({cal.evaluations} evaluations)", file=out)
    return 0


def _schedule(args, params):
    """The composition of the phases in ``--schedule FILE``: a JSON list of objects, or a CSV file with a header,
    whose keys are ``mk.dpsgd``'s (noise_multiplier, sampling_rate or batch_size and dataset_size, steps or
    epochs); --scheme and --relation apply to every phase."""
    import csv

    if params or args.steps is not None:
        raise MechkitError("--schedule takes the phases from the file: no other DP-SGD option with it")
    try:
        with open(args.schedule, newline="") as fh:
            text = fh.read()
    except OSError as exc:
        raise MechkitError(f"cannot read --schedule {args.schedule!r}: {exc.strerror}") from None
    try:
        rows = json.loads(text) if text.lstrip().startswith("[") else list(csv.DictReader(text.splitlines()))
    except ValueError as exc:
        raise MechkitError(f"--schedule {args.schedule!r} is neither a JSON list nor a CSV table: {exc}") from None
    if not rows or not all(isinstance(r, dict) for r in rows):
        raise MechkitError(f"--schedule {args.schedule!r} holds no phases (a JSON list of objects or CSV rows)")
    phases = []
    for i, row in enumerate(rows, 1):
        try:
            kw = {k.strip(): float(v) for k, v in row.items() if str(v).strip() != ""}
        except (TypeError, ValueError, AttributeError):
            raise MechkitError(f"--schedule phase {i}: every value must be a number, got {row!r}") from None
        steps = kw.pop("steps", None)
        try:
            phases.append(_dpsgd(args, kw, None if steps is None else int(steps)))
        except MechkitError as exc:
            raise MechkitError(f"--schedule phase {i}: {exc}") from None
    return mk.compose(*phases)


def _run(args, params):
    """(the step's mechanism, the composition, its number of steps) for ``epsilon``/``delta``."""
    if args.name == "dpsgd":
        run = _schedule(args, params) if args.schedule else _dpsgd(args, params, args.steps)
        return run.items[0][0], run, run.total_count
    m = build(args.name, params, args.scheme, args.relation)
    if args.steps is None or args.steps < 1:
        raise MechkitError(f"--steps must be a positive integer, got {args.steps}")
    return m, mk.compose((m, args.steps)), args.steps


#: ``mechkit plot WHAT``: the function of ``mechkit.plot`` that draws it
PLOTS = {"privacy-curve": "privacy_curve", "tradeoff": "tradeoff_curve", "compare": "compare"}


def _plot(args, params, out):
    """``mechkit plot WHAT NAME ... -o FILE``: the run as for ``epsilon``, drawn by ``mechkit.plot`` (Agg backend)
    into FILE; prints the path written."""
    kw = {}
    if args.methods is not None:
        if args.what != "compare":
            raise MechkitError("--methods applies to 'mechkit plot compare' only")
        kw["methods"] = [m.strip() for m in args.methods.split(",") if m.strip()]
        unknown = [m for m in kw["methods"] if m not in METHODS]
        if unknown or not kw["methods"]:
            raise MechkitError(f"--methods: unknown method(s) {', '.join(unknown) or '(none given)'}; choose from "
                               f"{', '.join(sorted(METHODS))}")
    try:
        import matplotlib
        matplotlib.use("Agg")  # files only: no window, no display needed
    except ImportError:
        pass  # mechkit.plot says what to install
    from mechkit import plot

    _, run, _ = _run(args, params)
    ax = getattr(plot, PLOTS[args.what])(run, **kw)
    import matplotlib.pyplot as plt
    try:
        ax.figure.savefig(args.output, dpi=args.dpi, bbox_inches="tight")
    except (OSError, ValueError) as exc:
        raise MechkitError(f"cannot write -o {args.output!r}: {exc}") from None
    finally:
        plt.close(ax.figure)
    print(args.output, file=out)
    return 0


def _fields(est):
    """The JSON fields every subcommand reports of an Estimate: value, lower, upper, method, certified."""
    return {"value": float(est), "lower": float(est.lower), "upper": float(est.upper), "method": est.method,
            "certified": bool(est.certified)}


def _print_json(args, params, steps, est, out):
    query = {"delta": args.delta} if args.cmd == "epsilon" else {"epsilon": args.epsilon}
    record = {**_fields(est), "query": args.cmd, "name": args.name, "params": params, "steps": steps,
              "scheme": args.scheme, "relation": args.relation, **query}
    if "one_sided" in est.details:
        record["note"] = est.details["one_sided"]
    print(json.dumps(record, allow_nan=True), file=out)


def _print_estimate(args, m, run, est, out):
    rel = "" if m.relation == "add_remove" else f" ({m.relation})"
    what = f"{m.name}{rel} x {run.total_count} steps" if len(run) == 1 else f"{run!r}{rel}"
    if args.cmd == "epsilon":
        print(f"mechanism  {what}, delta = {args.delta:g}", file=out)
        print(f"epsilon    {float(est):.6f}", file=out)
        fmt = "{:.6f}"
    else:
        print(f"mechanism  {what}, epsilon = {args.epsilon:g}", file=out)
        print(f"delta      {float(est):.6e}", file=out)
        fmt = "{:.6e}"
    if est.certified:
        print(f"bounds     [{fmt.format(est.lower)}, {fmt.format(est.upper)}]  (certified, method {est.method}; "
              "max over add and remove)", file=out)
    else:
        print(f"bounds     none  (method {est.method} is an approximation, not certified)", file=out)
    if "one_sided" in est.details:
        print("note       sampling without replacement: the lower bound is attained by a pair of datasets, "
              "the upper bound holds however the worst case changes from step to step "
              "(docs/relations.md)", file=out)
    if est.details.get("reliable") is False:
        print(f"note       the {est.method} expansion is outside its regime here (large correction "
              "term); trust the bounds, or use --method fft", file=out)


def _show(m, out):
    fam = m.family
    print(f"mechanism      {m.name}", file=out)
    print(f"privacy loss   L(x) = {fam.privacy_loss}", file=out)
    for key, invs in fam.inverse_loss or []:
        for e in invs:
            print(f"inverse        x(s) = {e}   [variant {key}]", file=out)
    print(f"CGF            K(t) = {fam.cgf if fam.cgf is not None else '(compiled quadrature)'}", file=out)
    print(f"CGF source     {m.core.cgf_source}", file=out)
    print(f"loss support   {m.remove.support}", file=out)
    vals, probs = m.remove.atoms()
    if vals.size:
        shown = ", ".join(f"{v:.6g}: {p:.6g}" for v, p in list(zip(vals, probs))[:6])
        print(f"atoms (remove) {shown}{' ...' if vals.size > 6 else ''}", file=out)
    print("cumulants K^(n)(0), n = 1..6 (remove):", file=out)
    print("   " + "  ".join(f"{c:.6g}" for c in m.remove.cumulants(0.0)), file=out)
    print("one-shot privacy curve (max over add and remove):", file=out)
    for eps in (0.0, 0.5, 1.0, 2.0):
        print(f"   delta({eps:g}) = {m.delta(eps):.6e}", file=out)
    for d in (1e-5, 1e-10):
        print(f"   epsilon({d:g}) = {m.epsilon(d):.6f}", file=out)


def _catalog_help():
    """The catalog's mechanisms and their parameters for ``--help``, read from the shipped index
    (``mechanisms/_derived/index.json``) so that help needs neither SymPy nor the engine; '' when it is missing."""
    try:
        spec = importlib.util.find_spec("mechkit.mechanisms")
        base = (Path(spec.submodule_search_locations[0]) if spec is not None
                else Path(__file__).resolve().parent.parent / "mechanisms")
        index = json.loads((base / "_derived" / "index.json").read_text())
    except (OSError, ValueError, ImportError, AttributeError, TypeError, IndexError):
        return ""
    lines = ["mechanisms (NAME; parameters as --name value):"]
    for name, entry in sorted(index.items()):
        first = entry["summary"].split(". ")[0].rstrip(".")
        lines.append(f"  {name.replace('_', '-')}: {first[:90]}{'...' if len(first) > 90 else ''}")
        for pname, what in entry["parameters"]:
            lines.append(f"      --{pname.replace('_', '-')}{'  ' + what if what else ''}")
    lines.append("  subsampled-NAME: NAME's parameters and --q RATE (--scheme poisson|without_replacement)")
    lines.append("  dpsgd: --noise-multiplier, --sampling-rate or --batch-size/--dataset-size, --steps or --epochs")
    return "\n".join(lines)


class _Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (``mechkit: error: ...``, exit code 2), as mechkit's own errors."""

    def error(self, message):
        self.exit(2, f"mechkit: error: {self.prog.split(' ', 1)[-1] + ': ' if ' ' in self.prog else ''}{message}\n")


def main(argv=None, out=sys.stdout):
    ap = _Parser(prog="mechkit", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                 epilog=_catalog_help())
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp_show = sub.add_parser("show", help="what mechkit derived for a mechanism")
    sp_show.add_argument("name")
    sp_eps = sub.add_parser("epsilon", help="epsilon of `--steps` compositions at `--delta` (NAME dpsgd: a DP-SGD "
                            "run from --noise-multiplier, --sampling-rate or --batch-size/--dataset-size, --steps "
                            "or --epochs)")
    sp_eps.add_argument("name")
    sp_eps.add_argument("--steps", type=int, default=None)
    sp_eps.add_argument("--delta", type=float, required=True)
    sp_eps.add_argument("--method", default="auto", choices=sorted(METHODS))
    sp_eps.add_argument("--eps-error", type=float, default=None, help="fft: half-width of the certified interval")
    sp_eps.add_argument("--memory-limit", type=float, default=None, metavar="MIB",
                        help="fft: the largest grid's memory in MiB (default 1024)")
    sp_del = sub.add_parser("delta", help="delta of `--steps` compositions at `--epsilon` (NAME dpsgd as for epsilon)")
    sp_del.add_argument("name")
    sp_del.add_argument("--steps", type=int, default=None)
    sp_del.add_argument("--epsilon", type=float, required=True)
    sp_del.add_argument("--method", default="auto", choices=sorted(m for m in METHODS if m != "rdp"))
    sp_del.add_argument("--eps-error", type=float, default=None, help="fft: the epsilon budget of the bounds")
    sp_del.add_argument("--memory-limit", type=float, default=None, metavar="MIB",
                        help="fft: the largest grid's memory in MiB (default 1024)")
    sp_cal = sub.add_parser("calibrate", help="the noise multiplier (or steps) of a DP-SGD run that meets --epsilon "
                            "at --delta, by a certified upper bound")
    sp_cal.add_argument("what", choices=["noise-multiplier", "steps", "sampling-rate"])
    sp_cal.add_argument("--epsilon", type=float, default=None)
    sp_cal.add_argument("--delta", type=float, default=None)
    sp_cal.add_argument("--query", choices=["epsilon", "delta"], default="epsilon",
                        help="with --epsilon and --delta: bound epsilon(delta) (default) or delta(epsilon)")
    sp_cal.add_argument("--advantage", type=float, default=None, help="instead: the attacker's advantage")
    sp_cal.add_argument("--tpr", type=float, default=None, help="instead: the attacker's true-positive rate ...")
    sp_cal.add_argument("--fpr", type=float, default=None, help="... at this false-positive rate")
    sp_cal.add_argument("--eps-error", type=float, default=None, help="fft: half-width of the certified interval")
    sp_cal.add_argument("--memory-limit", type=float, default=None, metavar="MIB",
                        help="fft: the largest grid's memory in MiB (default 1024)")
    sp_cal.add_argument("--steps", type=int, default=None)
    sp_cal.add_argument("--bounds", type=float, nargs=2, default=None, help="the interval searched")
    sp_plot = sub.add_parser("plot", help="draw a run's privacy curve (with its certified band), its trade-off "
                             "function, or its delta by each method into -o FILE (NAME dpsgd as for epsilon)")
    sp_plot.add_argument("what", choices=sorted(PLOTS))
    sp_plot.add_argument("name")
    sp_plot.add_argument("--steps", type=int, default=None)
    sp_plot.add_argument("-o", "--output", required=True, metavar="FILE",
                         help="the image file (its format from the extension: .png, .pdf, .svg ...)")
    sp_plot.add_argument("--methods", default=None, help="with compare: the methods, comma-separated "
                         "(default fft,spa,edgeworth,rdp,gdp)")
    sp_plot.add_argument("--dpi", type=float, default=150.0)
    for p in (sp_eps, sp_del, sp_plot):
        p.add_argument("--schedule", default=None, metavar="FILE",
                       help="with dpsgd: the phases of the run, a JSON list of objects or a CSV table with "
                       "mk.dpsgd's keys (noise_multiplier, sampling_rate, steps...)")
    for p in (sp_eps, sp_del, sp_cal):
        p.add_argument("--json", action="store_true", help="print one JSON object (value, lower, upper, method, "
                       "certified and the inputs)")
    for p in (sp_show, sp_eps, sp_del, sp_cal, sp_plot):
        p.add_argument("--scheme", choices=SCHEMES, default=None,
                       help="with subsampled-NAME: the sampling scheme (default poisson)")
        p.add_argument("--relation", choices=RELATIONS, default=None,
                       help="the neighbouring relation (default: the mechanism's, add_remove for most)")
    args, extra = ap.parse_known_args(argv)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MechkitWarning)
        code = _dispatch(args, extra, out)
    for w in caught:
        if issubclass(w.category, MechkitWarning):
            print(f"mechkit: warning: {cli_spelling(str(w.message))}", file=sys.stderr)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return code


def _dispatch(args, extra, out):
    """Run the parsed command; a ``MechkitError`` is printed on one line (exit code 2)."""
    try:
        params = _parse_params(extra)
        if args.cmd == "calibrate":
            return _calibrate(args, params, out)
        if args.cmd == "plot":
            return _plot(args, params, out)
        if args.cmd == "show":
            _show(build(args.name, params, args.scheme, args.relation), out)
            return 0
        m, run, steps = _run(args, params)
        opts = {} if args.eps_error is None else {"eps_error": args.eps_error}
        if args.memory_limit is not None:
            opts["memory_limit"] = args.memory_limit * 2**20
        if args.cmd == "epsilon":
            est = run.epsilon(args.delta, method=args.method, **opts)
        else:
            est = run.delta(args.epsilon, method=args.method, **opts)
        if args.json:
            _print_json(args, params, steps, est, out)
            return 0
        _print_estimate(args, m, run, est, out)
    except MechkitError as exc:
        print(f"mechkit: error: {cli_spelling(str(exc))}", file=sys.stderr)
        return 2
    return 0


#: the library's spelling of a remedy -> the command line's (the options the CLI has)
_SPELLING = [(re.compile(r"method='(\w+)'"), r"--method \1"), (re.compile(r"method=\"(\w+)\""), r"--method \1"),
             (re.compile(r"\beps_error(=|\b)"), lambda m: "--eps-error" + (" " if m.group(1) == "=" else "")),
             (re.compile(r"\bmemory_limit(=|\b)"), lambda m: "--memory-limit" + (" " if m.group(1) == "=" else ""))]


def cli_spelling(message: str) -> str:
    """An error message with its remedies in the command line's spelling (``method='spa'`` -> ``--method spa``,
    ``eps_error`` -> ``--eps-error``, ``memory_limit`` -> ``--memory-limit``).

    Parameters
    ----------
    message : the library's message.

    Returns
    -------
    The message as the command line prints it.
    """
    for pattern, repl in _SPELLING:
        message = pattern.sub(repl, message)
    return message


def console() -> int:
    """The ``mechkit`` command (``main`` on ``sys.argv``), returning its exit code.

    Before the process ends, the objects alive are moved out of the garbage collector's reach (``gc.freeze``): the
    interpreter's last collections would walk SymPy's and Numba's heaps for ~0.4 s only to free memory the system
    frees anyway.  (Only cyclic garbage left at exit is not collected; the command's files are closed by then.)
    """
    code = main()
    gc.freeze()
    return code


if __name__ == "__main__":
    sys.exit(console())
