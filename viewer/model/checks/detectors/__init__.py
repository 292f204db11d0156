"""The problem detectors, one module per family; each registers its detectors on import with
:func:`viewer.model.checks.problems.graph_detector` / ``run_detector``."""

from viewer.model.checks.detectors import (  # noqa: F401  (they register)
    flow,
    gradient_size,
    runs,
    values,
)
