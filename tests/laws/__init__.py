"""Tests of mechkit.laws: derived objects against closed forms and the mpmath reference, atoms, the density screen."""
