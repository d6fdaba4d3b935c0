"""k-ary randomized response under replace-special (dp_accounting's REPLACE_SPECIAL): the record's bucket x against
a special input whose report is uniform over the num_buckets; outputs lumped as 0 (= x) and 1 (any other)."""
import sympy as sp

from mechkit.laws import Family

o = sp.Symbol("o", integer=True)
noise_parameter = sp.Symbol("noise_parameter", positive=True)
num_buckets = sp.Symbol("num_buckets", positive=True, integer=True)

p = sp.Piecewise((1 - noise_parameter + noise_parameter / num_buckets, sp.Eq(o, 0)),
                 ((num_buckets - 1) * noise_parameter / num_buckets, True))
q = sp.Piecewise((1 / num_buckets, sp.Eq(o, 0)), (1 - 1 / num_buckets, True))

family = Family(p=p, q=q, var=o, domain=[0, 1], name="k_ary_randomized_response_special",
                constraints={"noise_parameter": "(0, 1)", "num_buckets": "[2, 1e15]"}, relation="replace_special")
