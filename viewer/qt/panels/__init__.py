"""The docks around the graph, each beside its binder: inspector, legend,
playback, plots, leaks, script (the checks' panels are in :mod:`viewer.qt.checks`)."""
