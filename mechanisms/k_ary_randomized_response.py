"""k-ary randomized response under replace-one (dp_accounting's RandomizedResponseDpEvent): with probability
1 - noise_parameter report the true bucket, otherwise a bucket drawn uniformly from num_buckets.  The record's
bucket x is replaced by x'; the outputs are lumped as 0 (= x), 1 (= x') and 2 (any other bucket)."""
import sympy as sp

from mechkit.laws import Family

o = sp.Symbol("o", integer=True)
noise_parameter = sp.Symbol("noise_parameter", positive=True)
num_buckets = sp.Symbol("num_buckets", positive=True, integer=True)
own = 1 - noise_parameter + noise_parameter / num_buckets
other = noise_parameter / num_buckets
rest = (num_buckets - 2) * noise_parameter / num_buckets


def pmf(first, second):
    return sp.Piecewise((first, sp.Eq(o, 0)), (second, sp.Eq(o, 1)), (rest, True))


family = Family(p=pmf(own, other), q=pmf(other, own), var=o, domain=[0, 1, 2], name="k_ary_randomized_response",
                constraints={"noise_parameter": "(0, 1)", "num_buckets": "[2, 1e15]"}, relation="replace_one")
