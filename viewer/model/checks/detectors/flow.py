"""Detectors of how gradients flow: unreached-parameter, carried-gradient, vanishing-gradient,
exploding-gradient, nonfinite."""
