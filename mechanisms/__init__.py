"""The built-in catalog: each module defines ``family``, a pair of densities in the public form.

Shipped inside the wheel as ``mechkit.mechanisms``; reached as ``mk.gaussian(...)``, ``mk.laplace(...)`` ...
"""
