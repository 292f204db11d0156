"""The chain rule along paths: every path from the graph's output down to a node, the local
derivative of each edge on it (for the element in focus) and their product; the products sum
to the gradient the node got in that backward pass.

The graph is that of one backward pass: the pass of ``step`` (a step of the reader) when it
is given and belongs to one, else the last pass that began before it, else the last pass. Its
output is the variable backward started from; the first factor of every path is the gradient
it was seeded with (∂y/∂y = 1 unless the program passed another).

Each edge's factor is the local derivative ∂out/∂in of the Function between, read from the
recording: the gradient the step sent over the gradient it got (gx / gy: a backward is linear
in gy), or, where gy was 0, the Function's formula (:mod:`autodiff.formulas`) with the
recorded values and ``gy = 1``. For arrays the factors are those of the element in focus
(default: the node's gradient's largest), which only means something when every Function on
the way works element by element on arrays of the node's shape (its formula says so) or
reduces such an array to a scalar (a sum, a loss); otherwise (a matrix product, broadcasting,
another shape) ``paths`` is empty, ``total`` is NaN and ``text`` says which Function stops
it. ``total`` is the sum over all paths, including the ``more`` paths not listed (only the
``max_paths`` largest are); the node's gradient after the pass is that plus any gradient it
held before the pass began.

For the UI: ``Chain.text`` is the plain text the inspector shows, as the seed writes it
(``∂y/∂x = ∂y/∂y · ∂y/∂b · ∂b/∂a · ∂a/∂x = 1 × 2.718 × … = …``, one line per path listed,
then ``+ N more paths``); ``ChainPath.nodes`` runs from the output down to the node, variables
and Functions alternating, so factor k is the edge ``nodes[2k-1]`` (a Function) and its label
is ``labels[k]``; factor 0 is the seed, at ``nodes[0]``.
"""

from __future__ import annotations

import contextlib
import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from autodiff import formulas
from viewer.model.explain import recorded
from viewer.model.explain.recorded import format_number
from viewer.model.explain.step import node_label
from viewer.model.node_display import unnamed_variable

__all__ = [
    "MAX_ENUMERATED",
    "MAX_FACTORS_SHOWN",
    "MAX_VISITS",
    "Chain",
    "ChainPath",
    "chain",
    "chain_ready_at",
]

MAX_FACTORS_SHOWN = 12  # a longer path's text shows its first and last factors around "…"

MAX_ENUMERATED = 5000  # paths walked one by one at most; the total is summed without walking
MAX_VISITS = 500_000  # steps of that walk at most


@dataclass(frozen=True)
class ChainPath:
    """One path from the output down to the node."""

    nodes: tuple[int, ...]  # output variable, Function, variable, ..., the node
    factors: tuple[float, ...]  # the seed, then one local derivative per Function on the path
    labels: tuple[str, ...]  # '∂y/∂y', then '∂b/∂a' per Function
    product: float


@dataclass(frozen=True)
class Chain:
    """The paths to ``node``, largest first, and their sum."""

    node: int
    paths: tuple[ChainPath, ...]
    total: float
    more: int  # paths not listed, summed into total
    text: str


@dataclass(frozen=True)
class _Edge:
    out: int
    function: int
    into: int
    factor: float
    why: str = ""  # why the edge has no factor (NaN)


def chain(
    trace: Any,
    node_id: int,
    focus: tuple[int, ...] | None = None,
    max_paths: int = 5,
    step: int | None = None,
) -> Chain:
    """The chain-rule paths from the output of a backward pass's graph down to ``node_id``
    (the pass of reader step ``step``, default the last pass)."""
    with np.errstate(all="ignore"):  # a NaN or Inf in the recording is shown, not warned of
        return _chain(trace, node_id, focus, max_paths, step)


def _chain(trace: Any, node_id: int, focus: Any, max_paths: int, step: int | None) -> Chain:
    if trace is None:
        return _empty(node_id, "There is no graph.")
    if trace.node(node_id).get("kind") != "variable":
        return _empty(node_id, "The chain rule runs through variables: select one.")
    steps = _pass_steps(trace, step)
    if not steps:
        return _empty(node_id, "No backward pass is recorded: the chain rule starts at one.")
    root, seed_snapshot = _root(trace, steps[0])
    shape = tuple(trace.node(node_id).get("shape") or ())
    element = _element(trace, node_id, steps[-1].index, shape, focus)
    seed = _value(seed_snapshot, element, shape)
    y, x = node_label(trace, root), node_label(trace, node_id)
    head = f"∂{y}/∂{x}"
    if node_id == root:
        only = ChainPath((root,), (seed,), (f"∂{y}/∂{y}",), seed)
        return Chain(node_id, (only,), seed, 0, f"{head} = {format_number(seed)}")
    edges, down = _edges(trace, steps, shape, element, node_id)
    if root not in down:
        return _empty(node_id, f"No path leads from {y} down to {x} in this backward pass.")
    blocked = [e.why for e in edges if e.why and e.out in down and e.into in down]
    if blocked:  # the one nearest the node says most
        return Chain(node_id, (), math.nan, 0, f"{head}: {blocked[-1]}")
    total, count = _sum_paths(edges, root, node_id, seed, down)
    shown = tuple(_walk(trace, edges, root, node_id, seed, down, y, max_paths))
    more = count - len(shown)
    text = _text(head, shown, total, more, element, shape)
    where = symbols_line(trace, [n for p in shown for n in p.nodes] + [node_id])
    return Chain(node_id, shown, total, more, text + (f"\n{where}" if where else ""))


MAX_SYMBOLS_EXPLAINED = 6


def symbols_line(trace: Any, nodes: Any) -> str:
    """``where v8 is variable #8 from Add, v6 is variable #6 from Log``: what the symbols of
    unnamed variables (node_label's ``v<id>``) are, as the inspector and the problems name
    them (find ``#8`` goes there); '' when every variable on the paths has a name."""
    parts: list[str] = []
    seen: set[int] = set()
    for n in nodes:
        if n in seen:
            continue
        seen.add(n)
        attrs = trace.node(n)
        if attrs.get("kind") != "variable" or attrs.get("name"):
            continue
        creator = trace.creator_of(n)
        op = trace.node(creator).get("op") if creator >= 0 else None
        parts.append(f"{node_label(trace, n)} is {unnamed_variable(n, op)}")
    if not parts:
        return ""
    if len(parts) > MAX_SYMBOLS_EXPLAINED:
        parts = [*parts[:MAX_SYMBOLS_EXPLAINED], f"{len(parts) - MAX_SYMBOLS_EXPLAINED} more"]
    return "where " + ", ".join(parts)


def _empty(node_id: int, text: str) -> Chain:
    return Chain(node_id, (), 0.0, 0, text)


def chain_ready_at(trace: Any, node_id: int, step: int | None) -> int | None:
    """The reader step after which ``node_id`` holds the whole gradient the backward pass of
    ``step`` (as :func:`chain` picks it) gives it: its last share's step; None when that pass
    sends it nothing. Before that step the program does not hold the chain's total yet."""
    last = None
    for s in _pass_steps(trace, step):
        if node_id in s.inputs:
            last = s.index
    return last


def _pass_steps(trace: Any, step: int | None) -> list[Any]:
    """The backward steps of the chosen pass, in order."""
    backward = [s for s in trace.steps if s.phase == "backward"]
    if not backward:
        return []
    chosen = backward[-1].backward_pass
    if step is not None and 0 <= step < len(trace.steps):
        here = trace.steps[step]
        if here.phase == "backward":
            chosen = here.backward_pass
        else:
            before = [s.backward_pass for s in backward if s.index <= step]
            chosen = before[-1] if before else chosen
    return [s for s in backward if s.backward_pass == chosen]


def _root(trace: Any, first: Any) -> tuple[int, Any]:
    """The variable backward started from, and the gradient it was seeded with."""
    roots = set(trace.backward_roots)
    for k, out in enumerate(first.outputs):
        if out in roots and k < len(first.output_grads):
            return out, first.output_grads[k]
    return first.outputs[0], first.output_grads[0] if first.output_grads else None


def _element(trace: Any, node: int, at: int, shape: tuple[int, ...], focus: Any) -> tuple[int, ...]:
    if not shape:
        return ()
    if (
        focus is not None
        and len(focus) == len(shape)
        and all(0 <= int(i) < n for i, n in zip(focus, shape, strict=True))
    ):
        return tuple(int(i) for i in focus)
    grad = trace.grad_at(node, at)
    a = None if grad is None else grad.array
    if a is None or a.size == 0:
        return (0,) * len(shape)
    magnitude = np.abs(np.nan_to_num(np.asarray(a, dtype=np.float64), nan=0.0))
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(magnitude)), a.shape))


def _value(snapshot: Any, element: tuple[int, ...], shape: tuple[int, ...]) -> float:
    if snapshot is None or snapshot.array is None:
        return math.nan
    a = np.asarray(snapshot.array)
    if a.ndim == 0:
        return float(a)
    if element and a.shape == shape:
        return float(a[element])
    return float(a.reshape(-1)[0]) if a.size == 1 else math.nan


def _edges(
    trace: Any, steps: list[Any], shape: tuple[int, ...], element: tuple[int, ...], target: int
) -> tuple[list[_Edge], set[int]]:
    """The edges of the pass on some path down to ``target``, each with its local
    derivative at ``element`` or why it has none (a non-elementwise Function or broadcasting,
    for arrays); and the variables they join."""
    links = [
        (s, slot)
        for s in steps
        for slot, grad in enumerate(s.input_grads)
        if grad is not None and s.outputs
    ]
    down = _reaching([(s.outputs[0], s.inputs[slot]) for s, slot in links], target)
    edges = []
    made: dict[int, tuple[Any, Any]] = {}
    for s, slot in links:
        out, into = s.outputs[0], s.inputs[slot]
        if out not in down or into not in down:
            continue
        if len(s.outputs) != 1:
            why = f"{s.op} (step {s.index + 1}) has several outputs: no single ∂out/∂in"
            edges.append(_Edge(out, s.function, into, math.nan, why))
            continue

        def context(s: Any = s) -> tuple[Any, Any]:
            if s.index not in made:  # read only for arrays, or a step that got 0
                made[s.index] = (recorded.environment(trace, s), _formulas(trace, s))
            return made[s.index]

        factor, why = _factor(s, context, slot, s.input_grads[slot], shape, element)
        edges.append(_Edge(out, s.function, into, factor, why))
    return edges, down


def _formulas(trace: Any, step: Any) -> tuple[str, ...] | None:
    return recorded.formulas_of(trace, step)


def _factor(
    step: Any,
    context: Callable[[], tuple[recorded.Environment, tuple[str, ...] | None]],
    slot: int,
    grad: Any,
    shape: tuple[int, ...],
    element: tuple[int, ...],
) -> tuple[float, str]:
    """∂out/∂in of one edge at ``element`` (of the node's ``shape``), or NaN and why it has
    none. Three kinds of edge have one: scalar to scalar; elementwise between arrays of the
    node's shape (the formula says whether the Function is); an array of the node's shape into
    a scalar (a sum, a loss). Each is the gradient the step sent over the one it got (gx / gy,
    exact for a gradient linear in gy), or its formula with gy = 1 where gy was 0."""
    gy_snapshot = step.output_grads[0] if step.output_grads else None
    in_shape = tuple(grad.shape)
    out_shape = tuple(gy_snapshot.shape) if gy_snapshot is not None else context()[0].out_shape
    where = f"{step.op} (step {step.index + 1})"
    if in_shape and in_shape != shape:
        return math.nan, (
            f"{where} takes an array of shape {in_shape}, not the {shape} of the element in "
            "focus: no product per path can be given"
        )
    if out_shape and in_shape != out_shape and not _broadcasts(in_shape, out_shape):
        return math.nan, (
            f"{where} does not work element by element ({in_shape} to {out_shape}): the "
            "gradient of one element mixes many, so no product per path can be given"
        )
    if out_shape and in_shape != out_shape:
        return math.nan, (
            f"{where} broadcasts {in_shape} to {out_shape}: one element's gradient gathers "
            "many, so no product per path can be given"
        )
    index = element if in_shape else ()
    text = None
    if in_shape and out_shape:  # array to array: only an elementwise Function has a factor
        env, texts = context()
        text = texts[slot] if texts is not None and slot < len(texts) else None
        if text is None:
            return math.nan, (
                f"{where} has no formula: whether it works element by element is not known, "
                "so no product per path can be given"
            )
        if recorded.elementwise_frame(text, env) != out_shape:
            return math.nan, (
                f"{where} does not work element by element: the gradient of one element "
                "mixes many, so no product per path can be given"
            )
    gy = _value(gy_snapshot, index if out_shape else (), out_shape)
    gx = _value(grad, index, in_shape)
    if gy != 0 and math.isfinite(gy):
        return gx / gy, ""
    env, texts = context()
    text = texts[slot] if texts is not None and slot < len(texts) else None
    if text is not None:
        with contextlib.suppress(
            formulas.FormulaError, ArithmeticError, ValueError, TypeError, KeyError
        ):
            factor = _from_formula(text, env, in_shape, out_shape, index)
            if factor is not None:
                return factor, ""
    if gx == 0:
        return math.nan, ""  # unknown, but nothing flows through it (see _sum_paths)
    return math.nan, f"{where} got no gradient to divide by"


def _broadcasts(in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> bool:
    try:
        return np.broadcast_shapes(in_shape, out_shape) == out_shape
    except ValueError:
        return False


def _from_formula(
    text: str,
    env: recorded.Environment,
    in_shape: tuple[int, ...],
    out_shape: tuple[int, ...],
    index: tuple[int, ...],
) -> float | None:
    """The formula evaluated with gy = 1 at ``index``; None when the recording cannot."""
    names = recorded.names_in(text)
    if any(env.values.get(n) is None for n in names if n in env.nodes and n[:2] != "gy"):
        return None
    ones = {n: 1.0 for n in names if n.startswith("gy")}
    if out_shape:  # elementwise, one shape: the element's own numbers
        frame = recorded.elementwise_frame(text, env)
        if frame != out_shape:
            return None
        scalars = recorded.values_at(env, names - set(ones), index, frame)
        return float(formulas.evaluate(text, {**scalars, **ones}))
    values = {n: env.values[n] for n in names if n not in ones}
    full = np.broadcast_to(np.asarray(formulas.evaluate(text, {**values, **ones})), in_shape)
    return float(full[index]) if index else float(full)


def _reaching(links: list[tuple[int, int]], target: int) -> set[int]:
    """The variables from which some path of ``links`` (output, input) leads to ``target``."""
    up = defaultdict(list)
    for out, into in links:
        up[into].append(out)
    seen = {target}
    stack = [target]
    while stack:
        for out in up[stack.pop()]:
            if out not in seen:
                seen.add(out)
                stack.append(out)
    return seen


def _sum_paths(
    edges: list[_Edge], root: int, target: int, seed: float, down: set[int]
) -> tuple[float, int]:
    """The sum of the path products and the number of paths, in the pass's order (each
    variable's gradient is complete before its creator's step)."""
    total: dict[int, float] = defaultdict(float)
    count: dict[int, int] = defaultdict(int)
    total[root], count[root] = seed, 1
    for e in edges:
        if e.out in down and e.into in down and count[e.out]:
            # an unknown factor (a Function without formula that got 0) passes on nothing
            flows = total[e.out] != 0 or not math.isnan(e.factor)
            total[e.into] += total[e.out] * e.factor if flows else 0.0
            count[e.into] += count[e.out]
    return total[target], count[target]


def _walk(
    trace: Any,
    edges: list[_Edge],
    root: int,
    target: int,
    seed: float,
    down: set[int],
    y: str,
    max_paths: int,
) -> list[ChainPath]:
    """The ``max_paths`` largest of the paths from ``root`` to ``target`` walked depth first
    (at most MAX_ENUMERATED paths and MAX_VISITS steps of the walk). A path is kept as a
    chain of parent links while walking, so a path 100 000 Functions deep costs its length,
    not its square."""
    below = defaultdict(list)
    for e in edges:
        if e.out in down and e.into in down:
            below[e.out].append(e)
    # the walk's visits: (edge taken or None at the root, parent visit, product so far)
    visits: list[tuple[_Edge | None, int, float]] = [(None, -1, seed)]
    found: list[int] = []
    stack = [0]
    while stack and len(found) < MAX_ENUMERATED and len(visits) < MAX_VISITS:
        k = stack.pop()
        edge, _, product = visits[k]
        n = root if edge is None else edge.into
        if n == target:
            found.append(k)
            continue
        for e in reversed(below[n]):
            visits.append((e, k, product * e.factor))
            stack.append(len(visits) - 1)
    found.sort(key=lambda k: -abs(visits[k][2]) if math.isfinite(visits[k][2]) else 0.0)
    names: dict[int, str] = {}

    def name(n: int) -> str:
        if n not in names:
            names[n] = node_label(trace, n)
        return names[n]

    paths = []
    for k in found[:max_paths]:
        taken = []
        while k > 0:
            edge, k, _ = visits[k]
            taken.append(edge)
        taken.reverse()
        nodes = [root]
        for e in taken:
            nodes += [e.function, e.into]
        factors = (seed, *(e.factor for e in taken))
        labels = (f"∂{y}/∂{y}", *(f"∂{name(e.out)}/∂{name(e.into)}" for e in taken))
        paths.append(ChainPath(tuple(nodes), factors, labels, math.prod(factors)))
    return paths


def _text(
    head: str,
    paths: tuple[ChainPath, ...],
    total: float,
    more: int,
    element: tuple[int, ...],
    shape: tuple[int, ...],
) -> str:
    at = f" at element {list(element)}" if shape else ""
    lines = []
    for p in paths:
        numbers = ["?" if math.isnan(f) else format_number(f) for f in p.factors]
        symbols = " · ".join(_elide(list(p.labels)))
        numbers = " × ".join(_elide(numbers))
        product = "? (a factor is unknown)" if math.isnan(p.product) else format_number(p.product)
        lines.append(f"{head}{at} = {symbols} = {numbers} = {product}")
    if len(paths) > 1 or more:
        rest = total - sum(p.product for p in paths)
        tail = f" + {more} more paths ({format_number(rest)})" if more else ""
        listed = " + ".join(format_number(p.product) for p in paths)
        lines.append(f"sum over {len(paths) + more} paths: {listed}{tail} = {format_number(total)}")
    return "\n".join(lines)


def _elide(parts: list[str]) -> list[str]:
    """The parts of a long path's line: its first and last few around '…'."""
    if len(parts) <= MAX_FACTORS_SHOWN:
        return parts
    half = MAX_FACTORS_SHOWN // 2
    return [*parts[:half], f"… ({len(parts) - 2 * half} more)", *parts[-half:]]
