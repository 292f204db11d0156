"""What a gradient check found: per-leaf and per-Function results, the panel's rows, a summary.

Plain data built by :mod:`viewer.model.checks.gradcheck`; the Qt side reads
:meth:`GradCheckReport.rows`
for the table and :attr:`GradCheckReport.summary` for the status bar.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from viewer.model.checks.function_check import _SEVERITY, ATOL, RTOL, Comparison, FunctionCheck

__all__ = ["GradCheckReport", "LeafCheck", "ReportRow"]

# the statuses whose error was measured: a NaN/Inf or skipped check has none to show
_JUDGED = ("ok", "kink", "wrong")


@dataclass(frozen=True)
class LeafCheck:
    """The gradient backprop gave a leaf in one backward pass, against central differences of
    that pass's root as the leaf is nudged (the program is re-run each time)."""

    name: str
    node_id: int
    root: int  # node id of the backward root
    root_label: str
    backward_pass: int
    order: int  # 1: dy/dx; 2: the root is itself a gradient (grad() inside), ...
    status: str
    comparison: Comparison | None
    message: str = ""

    @property
    def label(self) -> str:
        text = f"d{self.root_label}/d{self.name}"
        if self.order > 1:
            text += f" (derivative of order {self.order})"
        return text

    @property
    def error(self) -> float:
        return self.comparison.error if self.comparison is not None else math.nan


@dataclass(frozen=True)
class ReportRow:
    """One line of the gradient-check panel; selecting it selects ``node_id``."""

    node_id: int | None
    kind: str  # 'leaf' | 'function'
    label: str
    status: str
    error: float
    max_abs_error: float
    detail: str


@dataclass(frozen=True)
class GradCheckReport:
    """Everything one gradient check found. ``ok`` is False when anything is wrong."""

    kind: str  # 'expression' | 'trace'
    leaves: tuple[LeafCheck, ...]
    functions: tuple[FunctionCheck, ...]
    notes: tuple[str, ...] = ()
    duration: float = 0.0
    rtol: float = RTOL
    atol: float = ATOL
    reason: str = ""  # why nothing was checked (then there are no rows)

    @property
    def ok(self) -> bool:
        return not self.wrong_leaves and not self.wrong_functions

    @property
    def wrong_leaves(self) -> tuple[LeafCheck, ...]:
        return tuple(c for c in self.leaves if c.status == "wrong")

    @property
    def wrong_functions(self) -> tuple[FunctionCheck, ...]:
        return tuple(c for c in self.functions if c.status == "wrong")

    @property
    def flagged_node_ids(self) -> tuple[int, ...]:
        """Function nodes whose backward is wrong, in graph order."""
        return tuple(sorted({n for c in self.wrong_functions for n in c.node_ids}))

    @property
    def checked(self) -> int:
        """How many leaf and Function checks actually compared numbers."""
        done = ("ok", "kink", "wrong")
        return sum(c.status in done for c in self.leaves) + sum(
            c.status in done for c in self.functions
        )

    def node_errors(self) -> dict[int, float]:
        """The worst error per node (leaves and Functions) that was compared."""
        errors: dict[int, float] = {}
        for leaf in self.leaves:
            if leaf.comparison is not None and leaf.status in ("ok", "kink", "wrong"):
                errors[leaf.node_id] = max(errors.get(leaf.node_id, 0.0), leaf.error)
        for check in self.functions:
            if check.status in ("ok", "kink", "wrong"):
                for nid in check.node_ids:
                    errors[nid] = max(errors.get(nid, 0.0), check.error)
        return errors

    def rows(self) -> list[ReportRow]:
        """The panel's table: leaves first (by pass), then Functions (wrong ones first)."""
        rows = [
            ReportRow(
                c.node_id,
                "leaf",
                c.label,
                c.status,
                c.error if c.status in _JUDGED else math.nan,
                c.comparison.max_abs_error
                if c.comparison is not None and c.status in _JUDGED
                else math.nan,
                c.message,
            )
            for c in self.leaves
        ]
        order = {s: k for k, s in enumerate(_SEVERITY)}
        for c in sorted(
            self.functions, key=lambda c: (order[c.status], min(c.node_ids, default=0))
        ):
            ids = c.node_ids
            where = f" #{ids[0]}" if len(ids) == 1 else f" ({len(ids)} nodes)" if ids else ""
            rows.append(
                ReportRow(
                    ids[0] if ids else None,
                    "function",
                    f"{c.op}{where}",
                    c.status,
                    c.error if c.status in _JUDGED else math.nan,
                    c.max_abs_error if c.status in _JUDGED else math.nan,
                    c.message,
                )
            )
        return rows

    @property
    def summary(self) -> str:
        """One line for the status bar."""
        if self.wrong_functions:
            ops = sorted({c.op for c in self.wrong_functions})
            text = f"Gradient check: the backward of {', '.join(ops)} is wrong"
            if self.wrong_leaves:
                text += f"; {len(self.wrong_leaves)} leaf gradient(s) disagree"
            return text
        if self.wrong_leaves:
            names = sorted({c.name for c in self.wrong_leaves})
            return f"Gradient check: the gradient of {', '.join(names)} disagrees"
        if self.checked == 0:
            reason = self.reason or (self.notes[0] if self.notes else "nothing could be checked")
            return f"Gradient check: {reason}"
        n_leaves = sum(c.status in ("ok", "kink") for c in self.leaves)
        n_functions = sum(c.status in ("ok", "kink") for c in self.functions)
        errors = [e for e in self.node_errors().values() if math.isfinite(e)]
        worst = f"; largest error {max(errors):.1e}" if errors else ""
        parts = []
        if n_leaves:
            parts.append(f"{n_leaves} leaf gradient{'s' if n_leaves != 1 else ''}")
        if n_functions:
            parts.append(f"{n_functions} Function{'s' if n_functions != 1 else ''}")
        agree = "agree" if n_leaves + n_functions > 1 else "agrees"
        everything = (*self.leaves, *self.functions)
        nonfinite = sum(c.status == "nonfinite" for c in everything)
        skipped = sum(c.status == "skipped" for c in everything)
        if nonfinite:
            # NaN/Inf there: central differences cannot judge those gradients, so the graph
            # as a whole has not passed (what was judged is said after)
            text = (
                f"Gradient check cannot judge {nonfinite} of {len(everything)} checks: NaN/Inf in "
                "their values, and central differences need finite numbers (see the NaN "
                f"flag); {' and '.join(parts)} {agree} with central differences"
            )
        else:
            text = f"Gradient check passed: {' and '.join(parts)} {agree} with central differences"
        if skipped:
            text += f"; {skipped} not checked (see the list)"
        return text + worst
