"""Detectors of what the forward computed: dead-relu, saturated-activation, broadcast-shape,
stale-value, redundant-computation."""
