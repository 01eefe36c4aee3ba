"""Faults: the catalogue of fault kinds (the single source), target expressions, and how faults act."""
