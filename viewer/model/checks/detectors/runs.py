"""Detectors of a whole run's passes: diverging-loss, graph-held, wrong-backward (and the run's
nonfinite flags)."""
