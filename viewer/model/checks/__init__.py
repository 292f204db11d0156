"""Gradient checks: a Function's backward against numerical differences, the
per-pass checks of a script's run, and the report they make."""
