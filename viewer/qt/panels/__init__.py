"""The docks around the graph, each beside its binder: inspector, legend,
playback, plots, leaks, gradients, script."""
