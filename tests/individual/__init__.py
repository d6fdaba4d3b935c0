"""Tests of mechkit.individual: individual GDP and PLD accounting."""
