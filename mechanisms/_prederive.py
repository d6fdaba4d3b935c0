"""Write the catalog's shipped derivations: ``python -m mechkit.mechanisms._prederive`` (or, in the source tree,
``python mechanisms/_prederive.py``).

Every catalog family, for an add/remove family its Poisson-subsampled family and, for the additive-noise
families (q symmetric about 0), its replace-one family and their subsampled families under replace-one (Poisson,
without replacement) are derived (or loaded from the cache) and exported into
``mechanisms/_derived`` as one JSON file per family (structure, display expressions, generated module source),
with ``index.json``, the catalog's names, summaries and parameters for the command line's ``--help``, and
``records.json``, what binding a catalog family or its subsampled family reads without SymPy (``laws.shipped``);
files of families no longer in the catalog, or of an older code version, are removed.  Run it after changing the
catalog or the derivation code (the cache key hashes both: ``tests/laws/test_prederived.py`` says when).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import mechkit as mk
from mechkit.errors import ParameterError
from mechkit.laws import catalog, shipped
from mechkit.transforms import replace
from mechkit.symbolic import codegen


#: the subsampled families shipped with a catalog family where they exist (``families``)
SUBSAMPLED = (("poisson", "add_remove"), ("poisson", "replace_one"), ("without_replacement", "replace_one"))


def families():
    """Every family shipped pre-derived: the catalog's, their subsampled families, and for additive noise the
    replace-one families (module docstring)."""
    out = []
    for name in mk.CATALOG:
        fam = catalog.catalog(name).family
        out.append(fam)
        if fam.relation != "add_remove":
            continue
        out.append(mk.subsampled_family(fam))
        try:
            replace.mirrored(fam)
        except ParameterError:
            continue
        out += [replace.replace_one_family(fam), mk.subsampled_family(fam, "poisson", "replace_one"),
                mk.subsampled_family(fam, "without_replacement", "replace_one")]
    return out


def record(fam, sig=None):
    """What ``laws.shipped`` binds ``fam`` from without SymPy, or None where a derived constant is not a sampling
    rate's complement (a normalising sum: the family takes the SymPy path)."""
    import sympy as sp

    consts = []
    rate = {s.name: s for s in fam.parameters}.get("sampling_rate")
    for c, e in fam.constants:
        if rate is None or sp.expand(e - (1 - rate)) != 0:
            return None
        consts.append([c.name, [shipped.COMPLEMENT, rate.name]])
    rec = {"name": fam.name, "key": fam.key, "relation": fam.relation, "one_sided": fam.one_sided,
           "parameters": [[s.name, {f: bool(getattr(s, f)) for f in shipped.FLAGS}] for s in fam.parameters],
           "constraints": {k: list(v) for k, v in fam.constraints.items()}, "defaults": fam.defaults,
           "constants": consts}
    if sig is not None:
        rec["signature"] = {"required": sig[0], "optional": sig[1], "doc": sig[2]}
    return rec


def records():
    """The records of every catalog family and of its shipped subsampled families (``laws.shipped``)."""
    out = {}
    for name in mk.CATALOG:
        fam = catalog.catalog(name).family
        out[shipped.reference(name)] = record(fam, catalog.signature(name))
        for scheme, relation in SUBSAMPLED:
            try:
                sub = mk.subsampled_family(fam, scheme, relation)
            except ParameterError:
                continue
            out[shipped.reference(name, scheme, relation)] = record(sub)
    return {k: v for k, v in out.items() if v is not None}


def main(out: Path | None = None) -> list[Path]:
    out = Path(out) if out is not None else catalog.prederived_dir()
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for fam in families():
        fam.derive()
        written.append(codegen.export_entry(fam.spec, out))
    for stale in set(out.glob("fam_*.json")) - set(written):
        stale.unlink()
    # the command line's --help reads this (no SymPy import): each mechanism's summary and parameters
    index = out / "index.json"
    index.write_text(json.dumps(catalog.index(), indent=1, sort_keys=True) + "\n")
    written.append(index)
    # what binding reads without SymPy (laws.shipped), with the hash of the sources that shape it
    recs = out / shipped.RECORDS
    fams = {k: v for k, v in records().items() if (out / f"fam_{v['key']}.json").exists()}
    recs.write_text(json.dumps({"sources": shipped.sources_hash(), "families": fams}, indent=0, sort_keys=True)
                    + "\n")
    written.append(recs)
    return written


if __name__ == "__main__":
    for path in main(sys.argv[1] if len(sys.argv) > 1 else None):
        print(path)
