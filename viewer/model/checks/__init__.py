"""Gradient checks: a Function's backward against numerical differences, the
per-pass checks of a script's run, and the report they make."""

# The problem detectors register with viewer.model.checks.problems on import; importing them
# here, before any module of the package is used, fills its registry without problems
# importing them back.
from viewer.model.checks import detectors  # noqa: F401
