"""autodiff: a define-by-run automatic-differentiation engine on numpy, DeZero-compatible.

``import autodiff as dezero`` runs the programs of "Deep Learning from Scratch 3".
"""

from autodiff import functions, utils
from autodiff.core import (
    Config,
    Function,
    Parameter,
    Variable,
    as_array,
    as_variable,
    no_grad,
    test_mode,
    using_config,
)

__all__ = [
    "Config",
    "Function",
    "Parameter",
    "Variable",
    "as_array",
    "as_variable",
    "functions",
    "no_grad",
    "test_mode",
    "using_config",
    "utils",
]

__version__ = "0.1.0"
