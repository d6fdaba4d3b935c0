"""Tests of mechkit.symbolic: density strings, parsing, float exponents."""
