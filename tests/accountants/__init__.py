"""Tests of mechkit.accountants (fft, spa, edgeworth, edgeworth_bound, rdp, gdp) against independent truths."""
