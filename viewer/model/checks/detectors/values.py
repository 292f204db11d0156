"""Detectors of what the forward computed: dead-relu, saturated-activation, broadcast-shape,
stale-value, redundant-computation.

Each reads one graph through its TraceReader only (steps, values, shapes, ops, scopes), so it
works on every source; op names go through :func:`op_names.canonical_op`. The limits are
:class:`~viewer.model.checks.problems.Thresholds`' fields:

* **dead-relu** (warning): a ReLU output whose units are zero for every sample of the batch,
  for at least ``dead_fraction`` of its units. A unit is a feature of a ``(N, F)`` output, a
  channel of an ``(N, C, ...)`` one (zero at every sample and position: a feature map's zero
  border is not a dead filter). Outputs of fewer than ``min_batch`` samples are skipped; when
  no ReLU output could be looked at (summarised, or no batch) the detector cannot run.
* **saturated-activation** (warning): a tanh or sigmoid output of at least
  ``saturated_min_elements`` elements with at least ``saturated_fraction`` of them in the flat
  region (``|tanh| > saturated_level``; sigmoid below ``1 - saturated_level`` or above it).
* **broadcast-shape** (error): an elementwise op (or a loss) whose operands are ``(..., N, 1)``
  and ``(..., N)``, so that numpy broadcasts them to an ``N x N`` result with more elements
  than either, which then feeds a reduction (sum, mean, a loss). torch's ``mse_loss`` expands
  its input first: an ``expand`` of ``(N, 1)`` to ``(N, N)`` feeding a loss is the same bug.
* **stale-value** (error): a backward step that read an input the program changed after the
  forward used it (:meth:`~autodiff.trace.TraceReader.stale_inputs`); ops whose backward reads
  no input value (add, sub, sum, views) are not affected and not reported. On PyTorch (where
  only a change through ``.data`` gets past torch's own check) a torch op is reported only
  for an input its autograd node saved (``linear`` saves the weight only when its input needs
  a gradient), and a weight reached through its ``.t()`` view is named. A recording that
  kept no values (``statistics_only=True``) cannot run it.
* **redundant-computation**: the same op on the same input nodes with the same attributes
  twice in one graph, both results used. A warning when its output has at least
  ``redundant_min_elements`` elements, info for a scalar (a typed expression's
  ``square(a) + square(a)`` is a lesson, not waste). Views and shape-only ops, and random ops
  (dropout), are not counted.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from viewer.model.checks.detectors.op_names import (
    ELEMENTWISE_BINARY,
    LOSSES,
    REDUCTIONS,
    VALUE_FREE_BACKWARD,
    VIEWS,
    canonical_op,
    on_line,
)
from viewer.model.checks.problems import (
    CannotRun,
    GraphInput,
    Problem,
    Thresholds,
    graph_detector,
)

# ops whose result differs from call to call: two calls are two samples, not waste
_RANDOM = frozenset(
    {"dropout", "feature_dropout", "alpha_dropout", "bernoulli", "rand_like", "randn_like",
     "randint_like", "normal", "uniform", "multinomial", "exponential"}
)  # fmt: skip
# argument slots whose value an op's backward does not read (linear's bias: gb = sum(gy))
_VALUE_FREE_SLOTS = {"linear": frozenset({2})}
# a torch op's input slots by the names its autograd node saves them under (saved_mat2)
_TORCH_SLOTS = {
    "addmm": ("self", "mat1", "mat2"), "mm": ("self", "mat2"), "bmm": ("self", "mat2"),
    "mul": ("self", "other"), "div": ("self", "other"), "matmul": ("self", "other"),
    "mv": ("self", "vec"), "dot": ("self", "tensor"),
}  # fmt: skip
# how many elementwise ops a broadcast result may pass through before the reduction it feeds
_FOLLOW = 6


def _forward_steps(reader: Any) -> list[Any]:
    return [s for s in reader.steps if s.phase == "forward"]


def _layer(reader: Any, fid: int, out: int | None = None) -> str:
    """How a message names the op: its scope path and op (``layer Net/fc1 (relu)``), else
    the op and the variable it made (``relu -> h``), else the op and node; then the script's
    line it ran on, when known (``on line 7``)."""
    op = reader.ops([fid])[0] or "op"
    path = ""
    scope_of = reader.node_scopes()
    if 0 <= fid < len(scope_of):
        sid = int(scope_of[fid])
        scopes = reader.scopes()
        if 0 < sid < len(scopes):
            path = scopes[sid].path
    at = on_line(reader, fid)
    if path:
        return f"layer {path} ({op}){at}"
    name = reader.names([out])[0] if out is not None else None
    return f"{op} -> {name}{at}" if name else f"{op} (node {fid}){at}"


def _share(fraction: float) -> str:
    return f"{100 * fraction:.0f}%"


@graph_detector("dead-relu")
def dead_relu(graph: GraphInput, limits: Thresholds) -> list[Problem]:
    reader = graph.reader
    found: list[Problem] = []
    candidates = looked = 0
    for step in _forward_steps(reader):
        if canonical_op(step.op) != "relu":
            continue
        candidates += 1
        snap = step.values[0] if step.values else None
        value = None if snap is None else snap.array
        if value is None or value.ndim < 2 or value.shape[0] < limits.min_batch:
            continue
        looked += 1
        zero = value == 0
        # a unit: a feature of (N, F); a channel of (N, C, ...), zero at every position too
        dead = zero.all(axis=0) if value.ndim == 2 else zero.all(axis=(0, *range(2, value.ndim)))
        if not dead.size:
            continue
        fraction = float(dead.mean())
        if fraction >= limits.dead_fraction:
            out = step.outputs[0]
            found.append(
                Problem(
                    "dead-relu",
                    "warning",
                    f"{_layer(reader, step.function, out)}: {_share(fraction)} of its "
                    f"{dead.size} units are zero for all {value.shape[0]} samples (dead ReLUs "
                    "pass no gradient); try a lower learning rate, LeakyReLU, or He "
                    "initialisation / a positive bias",
                    graph.graph,
                    step.index,
                    (step.function, out),
                )
            )
    if candidates and not looked:
        raise CannotRun(
            f"no ReLU output could be looked at: a batch of at least {limits.min_batch} "
            "samples, kept whole (not summarised or left out), is needed"
        )
    return found


@graph_detector("saturated-activation")
def saturated_activation(graph: GraphInput, limits: Thresholds) -> list[Problem]:
    reader = graph.reader
    found: list[Problem] = []
    summarised = looked = 0
    level = limits.saturated_level
    for step in _forward_steps(reader):
        op = canonical_op(step.op)
        if op not in ("tanh", "sigmoid") or not step.outputs:
            continue
        shape = reader.shapes(step.outputs[:1])[0]
        if shape is not None and _size(shape) < limits.saturated_min_elements:
            continue  # a scalar or a handful: not a layer
        snap = step.values[0] if step.values else None
        value = None if snap is None else snap.array
        if value is None:
            summarised += 1
            continue
        if value.size < limits.saturated_min_elements:
            continue
        looked += 1
        if op == "tanh":
            flat = np.abs(value) > level
            region = f"|tanh| > {level:g}"
        else:
            flat = (value < 1 - level) | (value > level)
            region = f"sigmoid outside ({1 - level:g}, {level:g})"
        fraction = float(flat.mean()) if value.size else 0.0
        if fraction >= limits.saturated_fraction:
            out = step.outputs[0]
            found.append(
                Problem(
                    "saturated-activation",
                    "warning",
                    f"{_layer(reader, step.function, out)}: {_share(fraction)} of its "
                    f"{value.size} outputs are saturated ({region}), where the gradient is "
                    "nearly zero; scale the inputs, use a smaller initialisation or learning "
                    "rate, or normalise before the activation",
                    graph.graph,
                    step.index,
                    (step.function, out),
                )
            )
    if summarised and not looked:
        raise CannotRun("the tanh / sigmoid outputs were summarised or not recorded")
    return found


def _size(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _column_meets_row(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """``a`` is ``b`` with a trailing axis of 1 (``(N, 1)`` and ``(N,)``, N > 1): numpy
    broadcasts them to ``N x N``."""
    return len(a) == len(b) + 1 and a[-1] == 1 and a[:-1] == b and len(b) > 0 and b[-1] > 1


def _consumers(reader: Any) -> dict[int, list[int]]:
    """variable -> the function nodes that read it, from the graph's edges."""
    pairs, _ = reader.edges()
    functions = set(reader.functions)
    used: dict[int, list[int]] = defaultdict(list)
    for u, v in np.asarray(pairs).reshape(-1, 2).tolist():
        if v in functions:
            used[u].append(v)
    return used


def _reduction_after(
    reader: Any, start: int, consumers: dict[int, list[int]], outputs: dict[int, tuple]
) -> int | None:
    """The first reduction (or loss) ``start`` feeds, through elementwise ops; None."""
    frontier, seen = [start], {start}
    for _ in range(_FOLLOW):
        nxt = []
        for var in frontier:
            for fid in consumers.get(var, ()):
                op = canonical_op(reader.ops([fid])[0])
                if op in REDUCTIONS or op in LOSSES:
                    return fid
                for y in outputs.get(fid, ()):
                    if y not in seen:
                        seen.add(y)
                        nxt.append(y)
        frontier = nxt
    return None


@graph_detector("broadcast-shape")
def broadcast_shape(graph: GraphInput, limits: Thresholds) -> list[Problem]:
    reader = graph.reader
    found: list[Problem] = []
    steps = _forward_steps(reader)
    outputs = {s.function: s.outputs for s in steps}
    consumers: dict[int, list[int]] | None = None
    for step in steps:
        op = canonical_op(step.op)
        if op not in ELEMENTWISE_BINARY and op not in LOSSES and op != "expand":
            continue
        shapes = reader.shapes(step.inputs)
        out_shape = reader.shapes(step.outputs[:1])[0] if step.outputs else None
        if any(s is None for s in shapes) or out_shape is None:
            continue
        if op == "expand":  # torch's losses expand the (N, 1) side before comparing
            if len(shapes) != 1:
                continue
            a, b = shapes[0], None
            if not (len(a) == 2 and a[1] == 1 and a[0] > 1 and out_shape == (a[0], a[0])):
                continue
        else:
            if len(shapes) != 2:
                continue
            a, b = shapes
            if not (_column_meets_row(a, b) or _column_meets_row(b, a)):
                continue
            if op not in LOSSES and _size(out_shape) <= max(_size(a), _size(b)):
                continue
        if op in LOSSES:
            reduction = step.function
        else:
            if consumers is None:
                consumers = _consumers(reader)
            reduction = _reduction_after(reader, step.outputs[0], consumers, outputs)
            if reduction is None:
                continue
            if op == "expand" and canonical_op(reader.ops([reduction])[0]) not in LOSSES:
                continue
        n = max(a[-2] if len(a) > 1 else a[-1], 1)
        into = "" if reduction == step.function else (f" and feeds {reader.ops([reduction])[0]}")
        pair = f"{a} and {b}" if b is not None else f"{a} (expanded for a target of ({n},))"
        names = [x for x in reader.names(step.inputs) if x]
        named = f" ({', '.join(names)})" if names else ""
        found.append(
            Problem(
                "broadcast-shape",
                "error",
                f"{_layer(reader, step.function, step.outputs[0])}: shapes {pair}{named} "
                f"broadcast to {n} x {n}{into}, so every prediction is compared with every "
                "target; make the shapes equal: t.reshape(-1, 1) or y.reshape(-1) "
                "(y.squeeze(1)), or keepdims=True where the (N,) side came from a sum",
                graph.graph,
                step.index,
                tuple(dict.fromkeys((step.function, *step.inputs, reduction))),
            )
        )
    return found


def _torch_reads(params: dict[str, Any], n_inputs: int) -> frozenset[int] | None:
    """The input slots whose value a torch node's backward reads, from what it saved
    (``saved_mat2``...); None: not known (all may be read); ``frozenset()``: none (torch
    saved no tensor: ``sub``, ``mean``, a view)."""
    saved = {k[len("saved_") :] for k in params if k.startswith("saved_")}
    if not saved:
        return frozenset()
    aten = str(params.get("aten", "")).split(".")  # aten.addmm.default
    names = _TORCH_SLOTS.get(aten[1]) if len(aten) > 1 else None
    if names is None or len(names) != n_inputs:
        return None
    return frozenset(i for i, name in enumerate(names) if name in saved)


def _viewed_name(reader: Any, x: int, inputs_of: dict[int, tuple[int, ...]]) -> int | None:
    """The named variable (a parameter) torch's unnamed view ``x`` (``W.t()``) was made of."""
    for _ in range(_FOLLOW):
        fid = reader.creator_of(x)
        if fid < 0 or canonical_op(reader.ops([fid])[0]) not in VIEWS:
            return None
        made_of = inputs_of.get(fid, ())
        if len(made_of) != 1:
            return None
        x = made_of[0]
        if reader.names([x])[0]:
            return x
    return None


@graph_detector("stale-value")
def stale_value(graph: GraphInput, limits: Thresholds) -> list[Problem]:
    reader = graph.reader
    found: list[Problem] = []
    backward = [s for s in reader.steps if s.phase == "backward"]
    if not backward:
        raise CannotRun("the graph has no backward pass")
    told = 0
    inputs_of: dict[int, tuple[int, ...]] | None = None
    for step in backward:
        stale = reader.stale_inputs(step.index)
        if stale is None:  # a PyTorch recording without the values: that step cannot tell
            continue
        told += 1
        op = canonical_op(step.op)
        if not stale or op in VALUE_FREE_BACKWARD:
            continue
        params = reader.function_params(step.function)
        if "aten" in params:  # a torch op: what its backward reads is what it saved
            reads = _torch_reads(params, len(step.inputs))
            free = () if reads is None else frozenset(range(len(step.inputs))) - reads
        else:
            free = _VALUE_FREE_SLOTS.get(op, ())
        stale = tuple(
            x for x in stale if any(i not in free for i, y in enumerate(step.inputs) if y == x)
        )
        if not stale:
            continue
        names = reader.names(stale)
        viewed: list[int] = []
        for k, x in enumerate(stale):
            if names[k]:
                continue
            if inputs_of is None:
                inputs_of = {s.function: s.inputs for s in _forward_steps(reader)}
            leaf = _viewed_name(reader, x, inputs_of)
            if leaf is not None:
                names[k] = reader.names([leaf])[0]
                viewed.append(leaf)
        which = ", ".join(
            name if name else f"node {x}" for x, name in zip(stale, names, strict=True)
        )
        where = _layer(reader, step.function)
        found.append(
            Problem(
                "stale-value",
                "error",
                f"{which} changed after the forward of {where} used it and before the backward "
                "that reads it, so its gradients come from the new value; change .data only "
                "after backward() (the optimizer step after loss.backward()), or run the "
                "forward again after the change",
                graph.graph,
                step.index,
                (step.function, *stale, *viewed),
            )
        )
    if not told:
        raise CannotRun(
            "the PyTorch recording kept no value of the leaves its backward steps read "
            "(pytorch.record(statistics_only=True) keeps only gradients' statistics): a value "
            "changed after the forward cannot be seen"
        )
    return found


def _params_key(reader: Any, fid: int) -> Any:
    params = reader.function_params(fid)
    try:
        return tuple(sorted((k, repr(v)) for k, v in params.items()))
    except TypeError:
        return None


def _same_values(reader: Any, inputs: Any, before: int, after: int) -> bool:
    """Whether every input held the same value at step ``before`` as at step ``after`` (their
    arrays, or their statistics where only those were kept; unknown counts as the same)."""
    for node in inputs:
        a, b = reader.value_at(node, before), reader.value_at(node, after)
        if a is None or b is None or a is b:
            continue
        if a.array is not None and b.array is not None:
            if not np.array_equal(a.array, b.array):
                return False
        elif (a.min, a.max, a.mean, a.norm) != (b.min, b.max, b.mean, b.norm):
            return False
    return True


@graph_detector("redundant-computation")
def redundant_computation(graph: GraphInput, limits: Thresholds) -> list[Problem]:
    reader = graph.reader
    found: list[Problem] = []
    # every step in order: a backward step ends a pass, and an op of the next pass repeating
    # one of this pass's (a training loop's forward) is not redundant
    steps = [s for s in reader.steps if s.phase != "forward" or s.during_backward < 0]
    used: set[int] = set()
    pairs, _ = reader.edges()
    functions = set(reader.functions)
    for u, v in np.asarray(pairs).reshape(-1, 2).tolist():
        if v in functions:
            used.add(u)
    used.update(reader.backward_roots)
    first: dict[Any, Any] = {}
    same: dict[int, int] = {}  # a view made twice -> the first one (torch's W.t() per call)
    for step in steps:
        if step.phase != "forward":
            first.clear()
            same.clear()
            continue
        op = canonical_op(step.op)
        if not step.inputs or op in _RANDOM or len(step.outputs) != 1:
            continue
        params = _params_key(reader, step.function)
        if params is None:
            continue
        key = (op, tuple([same.get(x, x) for x in step.inputs]), params)
        earlier = first.get(key)
        if earlier is None:
            first[key] = step
            continue
        if op in VIEWS:
            same[step.outputs[0]] = same.get(earlier.outputs[0], earlier.outputs[0])
            continue
        if earlier.outputs[0] not in used or step.outputs[0] not in used:
            continue
        if not _same_values(reader, step.inputs, earlier.index, step.index):
            first[key] = step  # its inputs changed in between (w.data = ...): new work
            continue
        shape = reader.shapes(step.outputs)[0] or ()
        elements = _size(shape)
        severity = "warning" if elements >= limits.redundant_min_elements else "info"
        names = [x for x in reader.names(step.inputs) if x]
        what = _layer(reader, step.function, step.outputs[0])
        if names:
            what += f" on {', '.join(names)}"
        steps = f"steps {earlier.index + 1} and {step.index + 1}"  # (as the playback counts)
        line = reader.line_of(earlier.function)
        if line is not None and line != reader.line_of(step.function):
            steps += f", the first on line {line}"
        found.append(
            Problem(
                "redundant-computation",
                severity,
                f"{what} is computed twice ({steps}, "
                f"{elements} element{'s' if elements != 1 else ''} each), both results used: "
                "compute it once and reuse the variable",
                graph.graph,
                step.index,
                (earlier.function, step.function, earlier.outputs[0], step.outputs[0]),
            )
        )
    return found
