"""DeZero's ``dezero.core_simple`` names, for the book's steps 23-32.

The book grows two cores: ``core_simple`` (steps 23-32) and ``core`` (from step 33). autodiff
has one core, which does everything both do, so this module only gives the first one's names
(``from dezero.core_simple import Variable`` with ``dezero`` read as ``autodiff``) and
``setup_variable()``, which in DeZero patches Variable's operators in: here they are written
out in :mod:`autodiff.core`, so it does nothing.
"""

from __future__ import annotations

from autodiff.core import (
    Config,
    Function,
    Variable,
    as_array,
    as_variable,
    no_grad,
    using_config,
)

__all__ = [
    "Config",
    "Function",
    "Variable",
    "as_array",
    "as_variable",
    "no_grad",
    "setup_variable",
    "using_config",
]


def setup_variable() -> None:
    """Nothing to do: Variable's operators (``+ - * / ** @``, ``x[...]``) are always there."""
