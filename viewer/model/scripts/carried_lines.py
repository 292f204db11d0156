"""Script lines for the passes kept past a run's head, carried over from the head's passes.

The head of a run (its first passes) records each op's script line (``Trace(lines=...)``, a
stack walk per op); the segments recorded past it do not: noting lines in every segment made
a pass with 20 evaluation forwards (no ``no_grad()``) about 1.27x as costly, a sine-example
pass about 1.05x. Yet a problem found in a pass kept late (the NaN at pass #4,000) should name
its line as the first passes' do.

:func:`carry_lines` gives them the lines of a head pass *of the same structure*: the same
loss line (the script line that called ``backward()``) and the same loss graph, op by op in
creation order, each op's inputs wired to the same earlier ops (or leaves) in the same slots,
with the same shapes. A training loop's every pass matches its first. Two passes with the same
ops, wiring and shapes written on different lines (an ``if`` with two identical branches)
would get the head pass's lines: docs/limits.md says so.

Done once at the end of a run, over the kept graphs only, before the result is written (the
worker's files carry the lines): a view of each kept segment, and of the head's passes until
every structure is found. Plain Python, no Qt.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autodiff.trace import Trace

__all__ = ["carry_lines", "structure"]

_Structure = tuple[tuple[Any, ...], ...]


def structure(view: Any, functions: Sequence[int]) -> _Structure:
    """The loss graph's shape as a hashable value: per function (creation order), its op and
    its inputs by slot, each the position of the function that made it (-1: a leaf or a
    constant) and its shape."""
    position = {int(f): k for k, f in enumerate(functions)}
    sources, slots = view.edges()
    inputs: dict[int, list[tuple[int, int]]] = {}
    for (source, target), slot in zip(sources.tolist(), slots.tolist(), strict=True):
        if target in position:
            inputs.setdefault(target, []).append((int(slot), int(source)))
    variables = sorted({v for pairs in inputs.values() for _, v in pairs})
    shape_of = dict(zip(variables, view.shapes(variables), strict=True))
    made_by = {v: position.get(view.creator_of(v), -1) for v in variables}
    ops = view.ops(functions)
    return tuple(
        (
            ops[k],
            tuple(
                (slot, made_by[v], _shape(shape_of[v]))
                for slot, v in sorted(inputs.get(int(f), []))
            ),
        )
        for k, f in enumerate(functions)
    )


def _shape(shape: Any) -> tuple[int, ...] | None:
    return None if shape is None else tuple(int(n) for n in shape)


def carry_lines(
    graphs: Sequence[Any], head: Trace, pass_keys: Sequence[int], head_passes: int
) -> int:
    """Give each kept pass recorded in a segment of its own (a graph whose ``trace`` is an
    engine :class:`~autodiff.trace.Trace` other than ``head``) the lines of the first head
    pass (``number < head_passes``) of the same loss line (``pass_keys[number]``) and the
    same :func:`structure`; returns how many graphs got lines. A graph that cannot be read
    is left as it was: it had no lines before."""
    later = [
        g
        for g in graphs
        if isinstance(g.trace, Trace) and g.trace is not head and 0 <= g.number < len(pass_keys)
    ]
    # each later pass's structure first; then the head passes, in order, only until every
    # structure wanted has its lines (a training loop: its first pass)
    wanted: dict[tuple[int, _Structure], list[tuple[Any, list[int]]]] = {}
    for g in later:
        try:
            view = g.view(g.trace)
            functions = list(view.functions)
            shape = (int(pass_keys[g.number]), structure(view, functions))
        except Exception:
            continue
        wanted.setdefault(shape, []).append((g, functions))
    keys = {key for key, _ in wanted}
    carried = 0
    for g in graphs:
        if not wanted:
            break
        if g.trace is not None or not 0 <= g.number < min(head_passes, len(pass_keys)):
            continue
        key = int(pass_keys[g.number])
        if key not in keys:
            continue
        try:
            view = g.view(head)
            functions = list(view.functions)
            lines = [view.line_of(f) for f in functions]
            if all(line is None for line in lines):
                continue
            found = wanted.pop((key, structure(view, functions)), ())
        except Exception:
            continue
        for later_graph, later_functions in found:
            tables = later_graph.trace.tables
            for f, line in zip(later_functions, lines, strict=True):
                if line is not None:
                    tables.set_line(int(f), int(line))
            carried += 1
    return carried
