"""The checks' panels: the gradient check and the Problems panel, each beside its binder
(mirroring :mod:`viewer.model.checks`)."""
