"""Gradient checks: a Function's backward against numerical differences, the
per-pass checks of a script's run, and the report they make."""

# The problem detectors register themselves with viewer.model.checks.problems on import: the
# package imports them so that detect() never runs with an empty registry (problems.py cannot
# import them itself: they import it).
from viewer.model.checks import detectors  # noqa: F401  (they register)
