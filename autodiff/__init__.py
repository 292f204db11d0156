"""autodiff: a define-by-run automatic-differentiation engine on numpy, DeZero-compatible.

``import autodiff as dezero`` runs the programs of "Deep Learning from Scratch 3".
"""

from autodiff import (
    cuda,
    dataloaders,
    datasets,
    functions,
    layers,
    models,
    optimizers,
    transforms,
    utils,
)
from autodiff.core import (
    Config,
    Function,
    Parameter,
    Variable,
    as_array,
    as_variable,
    no_grad,
    scope,
    test_mode,
    using_config,
)
from autodiff.dataloaders import DataLoader, SeqDataLoader
from autodiff.datasets import Dataset
from autodiff.layers import Layer
from autodiff.models import Model

__all__ = [
    "Config",
    "DataLoader",
    "Dataset",
    "Function",
    "Layer",
    "Model",
    "Parameter",
    "SeqDataLoader",
    "Variable",
    "as_array",
    "as_variable",
    "cuda",
    "dataloaders",
    "datasets",
    "functions",
    "is_simple_core",
    "layers",
    "models",
    "no_grad",
    "optimizers",
    "scope",
    "test_mode",
    "transforms",
    "using_config",
    "utils",
]

__version__ = "0.1.0"

#: DeZero's switch between its two cores (steps 23-32 of the book use ``core_simple``). autodiff
#: has one core, so it is False and ``if dezero.is_simple_core: ... else: from dezero.core
#: import ...`` takes the second branch.
is_simple_core = False
