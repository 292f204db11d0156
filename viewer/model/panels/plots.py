"""The data behind the plot panel: numpy arrays only, pyqtgraph draws them.

* :func:`function_plot`: for an expression and one scalar leaf, ``f``, ``df/dx`` and
  ``d2f/dx2`` over a range around the leaf's current value, computed by the engine itself
  (backward with ``create_graph=True``, then backward through the gradient), and the current
  point.
* :func:`training_curves`: for a script's trace, the loss (the root of each ``backward()``
  call) and the gradient norm of every parameter, per backward pass.
* :func:`nearest_kept_pass`: the graph a click on pass N of the training curves opens (a long
  run keeps the graphs of a sample of its passes), and :func:`document_shown_pass`, the pass
  on screen, which the curves mark.
* :func:`node_histograms`: the distribution of a node's value and gradient at a step.
* :meth:`FunctionPlot.view_ranges`: a readable y range per curve (:mod:`plot_scales`).

The ``document_*`` helpers pick the right input from a
:class:`viewer.model.document.document.Document`.
A request that cannot be plotted raises a ValueError whose message says what is missing and
what to do (the panel shows it; nothing else changes).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from autodiff.trace import Snapshot, TraceReader
from viewer.model.node_display import node_display, unnamed_variable
from viewer.model.panels.plot_scales import ViewRange, robust_range

__all__ = [
    "DEFAULT_BINS",
    "DEFAULT_POINTS",
    "FunctionPlot",
    "Histogram",
    "NodeHistograms",
    "PassChoice",
    "TrainingCurves",
    "ViewRange",
    "document_function_plot",
    "document_histograms",
    "document_shown_pass",
    "document_training_curves",
    "function_plot",
    "graph_pass",
    "histogram",
    "iter_document_function_plot",
    "iter_function_plot",
    "nearest_kept_pass",
    "node_histograms",
    "pass_log_curves",
    "robust_range",
    "snapshot_total",
    "training_curves",
]

DEFAULT_POINTS = 101  # odd: the current value is the middle point (about 2 ms a point)
DEFAULT_BINS = 20
MAX_PARAMETERS = 50  # gradient-norm curves drawn at most


# =============================================================================
# f, df/dx, d2f/dx2 of an expression
# =============================================================================
@dataclass(frozen=True)
class FunctionPlot:
    """``f`` and its first two derivatives along one scalar leaf, the others held fixed.

    ``x[index]`` is the leaf's current value ``x0``; ``f``, ``df``, ``d2f`` hold NaN where the
    program has no finite value. For a non-scalar output ``f`` is its sum (what backward
    differentiates: it seeds the output's gradient with ones).
    """

    leaf: str
    output: str  # "y", or "sum(y)" for a non-scalar output
    x: NDArray[np.float64]
    f: NDArray[np.float64]
    df: NDArray[np.float64]
    d2f: NDArray[np.float64]
    index: int

    @property
    def n_points(self) -> int:
        return len(self.x)

    @property
    def x0(self) -> float:
        return float(self.x[self.index])

    @property
    def f0(self) -> float:
        return float(self.f[self.index])

    @property
    def df0(self) -> float:
        return float(self.df[self.index])

    @property
    def d2f0(self) -> float:
        return float(self.d2f[self.index])

    @property
    def labels(self) -> tuple[str, str, str]:
        """Legend texts: ``y``, ``dy/dx``, ``d2y/dx2``."""
        y, x = self.output, self.leaf
        return (y, f"d{y}/d{x}", f"d2{y}/d{x}2")

    def view_ranges(self) -> tuple[ViewRange, ViewRange, ViewRange]:
        """The y range to show ``f``, ``df`` and ``d2f`` in, each around its own values and
        the current point: the three can differ by orders of magnitude, and a tail that runs
        off (``exp(x**2)`` at the end of the interval) is clipped rather than flattening the
        rest (see :func:`viewer.model.panels.plot_scales.robust_range`)."""
        f, df, d2f = (robust_range(v, [v[self.index]]) for v in (self.f, self.df, self.d2f))
        return f, df, d2f


def _leaf_value(program: Any, values: Mapping[str, Any], name: str) -> NDArray[np.float64]:
    value = values.get(name, program.defaults[name])
    return np.asarray(value, dtype=np.float64)


def _choose_leaf(program: Any, values: Mapping[str, Any], leaf: str | None) -> str:
    leaves = tuple(program.leaves)
    if not leaves:
        raise ValueError(
            "the expression has no leaf variable to plot against: use a name such as x "
            "(y = tanh(x) * x ** 2)"
        )
    if leaf is None:
        if len(leaves) > 1:
            raise ValueError(
                f"choose a leaf: the expression has {len(leaves)} leaves "
                f"({', '.join(leaves)}); f is plotted against one of them, the others keep "
                "their current values"
            )
        leaf = leaves[0]
    elif leaf not in leaves:
        raise ValueError(
            f"{leaf} is not a leaf of the expression; its leaves are {', '.join(leaves)}"
        )
    shape = _leaf_value(program, values, leaf).shape
    if shape not in ((), (1,)):
        raise ValueError(
            f"the leaf {leaf} has shape {shape}; a 1-D plot needs a scalar leaf. Choose a "
            f"scalar leaf, or give {leaf} a single number"
        )
    return leaf


def _derivatives(program: Any, values: Mapping[str, Any], leaf: str) -> tuple[float, float, float]:
    """f, df/dx, d2f/dx2 at ``values`` (NaN when the program fails there)."""
    from viewer.model.expression.program import ExpressionError

    try:
        evaluation = program.run(values, backward=False, max_array_size=0)
    except ExpressionError:
        return math.nan, math.nan, math.nan
    try:
        y = evaluation.output
        x = evaluation.leaves[leaf]
        f = float(np.sum(y.data))
        x.cleargrad()
        y.backward(create_graph=True)  # a ones seed: d sum(y) / dx
        gx = x.grad
        if gx is None:
            return f, 0.0, 0.0
        df = float(np.sum(gx.data))
        x.cleargrad()
        if gx.creator is None:  # the gradient is a constant: f is linear in x
            return f, df, 0.0
        gx.backward()
        d2f = float(np.sum(x.grad.data)) if x.grad is not None else 0.0
        return f, df, d2f
    except (ValueError, TypeError, ArithmeticError):
        return math.nan, math.nan, math.nan
    finally:
        evaluation.release()


def function_plot(
    program: Any,
    values: Mapping[str, Any] | None = None,
    leaf: str | None = None,
    n_points: int = DEFAULT_POINTS,
    half_width: float | None = None,
) -> FunctionPlot:
    """``f``, ``df/dx`` and ``d2f/dx2`` of ``program`` (a parsed expression) against the
    scalar ``leaf`` over ``x0 ± half_width`` (default ``max(2, |x0|)``), ``n_points`` points
    (made odd, so that ``x0`` itself is one). ``values`` are the current leaf values (the
    program's defaults otherwise). ValueError: no leaf, several and none chosen, a matrix leaf.
    """
    *_, plot = iter_function_plot(program, values, leaf, n_points, half_width, chunk=n_points)
    return plot


def iter_function_plot(
    program: Any,
    values: Mapping[str, Any] | None = None,
    leaf: str | None = None,
    n_points: int = DEFAULT_POINTS,
    half_width: float | None = None,
    chunk: int = 8,
) -> Iterator[FunctionPlot | None]:
    """:func:`function_plot` in slices, for a GUI that computes between events: the request
    is checked at once (ValueError, as :func:`function_plot`); each ``next()`` then computes
    up to ``chunk`` points and yields None, and the last one yields the FunctionPlot.

    The points run the engine on the calling thread (its observers and ``Config`` are that
    thread's: nothing another thread records or switches reaches them)."""
    values = dict(values or {})
    name = _choose_leaf(program, values, leaf)
    if n_points < 3:
        raise ValueError(f"a plot needs at least 3 points, got {n_points}")
    n = n_points if n_points % 2 else n_points + 1
    current = _leaf_value(program, values, name)
    x0 = float(current.reshape(-1)[0])
    if not math.isfinite(x0):
        raise ValueError(f"the leaf {name} is {x0}: give it a finite value to plot around")
    width = float(half_width) if half_width is not None else max(2.0, abs(x0))
    if not width > 0:
        raise ValueError(f"the plot's half width must be positive, got {half_width}")
    xs = x0 + width * np.linspace(-1.0, 1.0, n)
    xs[n // 2] = x0
    return _function_points(program, values, name, current, xs, max(1, int(chunk)))


def _function_points(
    program: Any,
    values: dict[str, Any],
    name: str,
    current: NDArray[np.float64],
    xs: NDArray[np.float64],
    chunk: int,
) -> Iterator[FunctionPlot | None]:
    n = len(xs)
    f = np.empty(n)
    df = np.empty(n)
    d2f = np.empty(n)
    for start in range(0, n, chunk):
        with np.errstate(all="ignore"):
            for i in range(start, min(start + chunk, n)):
                run_values = {**values, name: np.full(current.shape, xs[i])}
                f[i], df[i], d2f[i] = _derivatives(program, run_values, name)
        if start + chunk < n:
            yield None
    output_is_scalar = True
    with np.errstate(all="ignore"):
        probe = program.run({**values, name: current}, backward=False, max_array_size=0)
        if probe.output is not None:
            output_is_scalar = probe.output.data.size == 1
        probe.release()
    output = program.output_name or "f"
    if not output_is_scalar:
        output = f"sum({output})"
    yield FunctionPlot(name, output, xs, f, df, d2f, n // 2)


def _document_program(document: Any) -> tuple[Any, dict[str, Any]]:
    program = document.program
    if document.kind != "expression" or program is None:
        raise ValueError(
            "f, df/dx and d2f/dx2 are plotted for a typed expression; this graph is a "
            f"{document.kind or 'empty document'}. Type an expression, or open an .expr example"
        )
    evaluation = document.evaluation
    values = dict(evaluation.values) if evaluation is not None else dict(document.leaf_values)
    return program, values


def document_function_plot(document: Any, leaf: str | None = None, **options: Any) -> FunctionPlot:
    """:func:`function_plot` for the document's expression at its current leaf values."""
    program, values = _document_program(document)
    return function_plot(program, values, leaf, **options)


def iter_document_function_plot(
    document: Any, leaf: str | None = None, **options: Any
) -> Iterator[FunctionPlot | None]:
    """:func:`iter_function_plot` for the document's expression at its current leaf values
    (checked at once, like :func:`document_function_plot`)."""
    program, values = _document_program(document)
    return iter_function_plot(program, values, leaf, **options)


# =============================================================================
# Loss and gradient norms per backward pass
# =============================================================================
@dataclass(frozen=True)
class TrainingCurves:
    """Per backward pass (``steps``: the pass numbers, 0-based): the loss (the value of the
    root ``backward()`` was called on, summed) and each parameter's gradient norm at the end
    of the pass (NaN where it got no gradient). Passes whose root is itself a gradient (the
    second backward of Newton's method) are left out."""

    steps: NDArray[np.int64]
    loss: NDArray[np.float64]
    loss_label: str
    parameters: tuple[int, ...]  # node ids, in creation order
    labels: tuple[str, ...]  # one per parameter: "W (3, 2)", "b #12"
    grad_norms: NDArray[np.float64]  # (n_parameters, n_steps)
    notes: tuple[str, ...] = ()

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    def norms_by_label(self) -> dict[str, NDArray[np.float64]]:
        return {label: self.grad_norms[k] for k, label in enumerate(self.labels)}


def snapshot_total(snapshot: Any) -> float:
    """Sum of a recorded value (NaN when there is none); from the mean when no copy was kept."""
    if snapshot is None:
        return math.nan
    if snapshot.array is not None:
        return float(np.sum(np.asarray(snapshot.array, dtype=np.float64)))
    return float(snapshot.mean) * float(np.prod(snapshot.shape))


def training_curves(trace: TraceReader, max_parameters: int = MAX_PARAMETERS) -> TrainingCurves:
    """The loss and the parameters' gradient norms for every ``backward()`` of ``trace``.

    One walk over the steps: a parameter is a leaf variable (no creator, not a constant, not a
    gradient) that received a gradient; its gradient at the end of a pass is the last
    contribution (or fan-in sum) it received in that pass.
    """
    roots = list(trace.backward_roots)
    if not roots:
        raise ValueError(
            "there is no loss to plot: the program never called backward(). Call "
            "loss.backward() in the training loop"
        )
    passes = [p for p, r in enumerate(roots) if trace.node(r).get("grad_of") is None]
    if not passes:
        raise ValueError("every backward() here runs from a gradient: there is no loss to plot")
    wanted = set(passes)
    values: dict[int, Any] = {}
    grads: dict[int, dict[int, Any]] = {p: {} for p in passes}
    candidates: set[int] = set()
    for step in trace.steps:
        if step.phase == "forward":
            for nid, snap in zip(step.outputs, step.values, strict=False):
                values[nid] = snap
            continue
        if step.backward_pass not in wanted:
            continue
        latest = grads[step.backward_pass]
        summed = {a.slot: a.new for a in step.accumulations}
        for slot, nid in enumerate(step.inputs):
            g = summed.get(slot, step.input_grads[slot] if slot < len(step.input_grads) else None)
            if g is not None:
                latest[nid] = g
                candidates.add(nid)
    parameters = []
    for nid in sorted(candidates):
        if trace.creator_of(nid) >= 0:  # made by a Function: not a leaf (no networkx graph)
            continue
        attrs = trace.node(nid)
        if attrs["kind"] != "variable" or attrs.get("constant") or attrs.get("grad_of") is not None:
            continue
        parameters.append(nid)
    notes = []
    trainable = trace.parameters()
    parameters, note = _without_data(
        parameters,
        lambda nid: nid not in trainable,
        lambda nid: trace.node(nid).get("name") or unnamed_variable(nid),
    )
    if note:
        notes.append(note)
    if len(parameters) > max_parameters:
        notes.append(f"{len(parameters)} parameters: the first {max_parameters} are drawn")
        parameters = parameters[:max_parameters]
    loss = np.array(
        [snapshot_total(values.get(roots[p]) or trace.node(roots[p]).get("value")) for p in passes]
    )
    norms = np.full((len(parameters), len(passes)), math.nan)
    for j, p in enumerate(passes):
        latest = grads[p]
        for k, nid in enumerate(parameters):
            g = latest.get(nid)
            if g is not None:
                norms[k, j] = float(g.norm)
    name = trace.node(roots[passes[-1]]).get("name") or "loss"
    return TrainingCurves(
        steps=np.asarray(passes, dtype=np.int64),
        loss=loss,
        loss_label=str(name),
        parameters=tuple(parameters),
        labels=_parameter_labels(trace, parameters),
        grad_norms=norms,
        notes=tuple(notes),
    )


def _parameter_labels(trace: TraceReader, parameters: list[int]) -> tuple[str, ...]:
    names = [trace.node(nid).get("name") for nid in parameters]
    counts: dict[str, int] = {}
    for name in names:
        if name:
            counts[name] = counts.get(name, 0) + 1
    labels = []
    for nid, name in zip(parameters, names, strict=True):
        shape = trace.node(nid).get("shape")
        base = name or "parameter"
        if not name or counts[name] > 1:
            base += f" #{nid}"
        labels.append(f"{base} {tuple(shape)}" if shape else base)
    return tuple(labels)


def pass_log_curves(log: Any) -> TrainingCurves:
    """:class:`TrainingCurves` from a run's :class:`~viewer.model.scripts.pass_sampling.PassLog`:
    every pass, though the run kept the graphs of a sample of them."""
    if not len(log):
        raise ValueError(
            "there is no loss to plot: the program never called backward(). Call "
            "loss.backward() in the training loop"
        )
    norms = log.grad_norms
    labels = list(log.parameter_labels)
    notes = [
        f"{len(log):,} backward pass{'es' if len(log) != 1 else ''}, from every pass's loss "
        "and gradients"
    ]
    columns, note = _without_data(
        list(range(len(norms))), log.data_columns.__contains__, labels.__getitem__
    )
    if note:
        notes.append(note)
    return TrainingCurves(
        steps=np.arange(len(log), dtype=np.int64),
        loss=log.loss,
        loss_label=str(log.loss_label),
        parameters=tuple(columns),
        labels=tuple(labels[k] for k in columns),
        grad_norms=norms[columns],
        notes=tuple(notes),
    )


# data leaves named in the plot's note, at most
MAX_DATA_NAMED = 4


def _without_data(
    leaves: list[int], is_data: Callable[[int], bool], name_of: Callable[[int], str]
) -> tuple[list[int], str]:
    """``leaves`` without those that are not Parameters (``is_data``), where some are, and
    the note that names what was left out (by ``name_of``); all of them, and no note, where
    none is a Parameter (micrograd, DeZero's early steps: nothing tells data from weights)."""
    data = [leaf for leaf in leaves if is_data(leaf)]
    if not data or len(data) == len(leaves):
        return leaves, ""
    names = [str(name_of(leaf)) for leaf in data]
    shown = ", ".join(names[:MAX_DATA_NAMED])
    if len(names) > MAX_DATA_NAMED:
        shown += f" and {len(names) - MAX_DATA_NAMED} more"
    one = len(names) == 1
    note = (
        f"not drawn: {shown}, {'a leaf' if one else 'leaves'} with a gradient that "
        f"{'is not a Parameter' if one else 'are not Parameters'}"
    )
    return [leaf for leaf in leaves if not is_data(leaf)], note


def document_training_curves(document: Any, **options: Any) -> TrainingCurves:
    """:func:`training_curves` over the whole run of the document's script (every iteration,
    not only the graph on screen), or over the document's trace."""
    result = document.script_result
    log = None if result is None else result.passes
    if (
        document.kind == "script"
        and log is not None
        and (result.sampling or any(g.own_trace for g in result.graphs))
    ):
        # a long run keeps the graphs of some passes only, and the scalars of all; a torch
        # program's passes are recordings of their own, not in the run's (engine's) trace
        return pass_log_curves(log)
    if document.kind == "script" and result is not None and result.trace is not None:
        trace = result.trace
    elif document.trace is not None:
        trace = document.trace
    else:
        raise ValueError("there is no graph: run a script that trains something first")
    try:
        return training_curves(trace, **options)
    except ValueError as e:
        if document.kind == "script" and result is not None:
            raise ValueError(f"{result.path.name}: {e}") from None
        raise


# =============================================================================
# The pass on screen, and the pass a click on the curves opens
# =============================================================================
def graph_pass(graph: Any) -> int:
    """The pass (from 0, among all the run's, as the Training plot counts them) that a
    script's ``graph`` (a :class:`~viewer.model.scripts.run.ScriptGraph`) shows; -1 for a
    graph of no backward pass."""
    if graph.backward_pass < 0:
        return -1
    return graph.number if graph.number >= 0 else graph.backward_pass


def document_shown_pass(document: Any) -> int | None:
    """The pass whose graph the document shows (from 0); None when it shows no script's pass."""
    result = document.script_result
    if document.kind != "script" or result is None:
        return None
    index = result.graph_index(document.trace)
    number = graph_pass(result.graphs[index]) if index >= 0 else -1
    return number if number >= 0 else None


@dataclass(frozen=True)
class PassChoice:
    """The graph that a click on pass ``wanted`` opens: ``graphs[index]``, pass ``number``,
    the kept pass nearest the one wanted (a long run keeps ``kept`` of its ``total`` passes'
    graphs)."""

    index: int
    number: int
    wanted: int
    kept: int
    total: int

    def note(self, on_screen: bool = False) -> str:
        """For the status line: ``Opened pass #412 (nearest kept to #400: ...)``, numbered
        from 1 as the graph list (``on_screen``: it was shown already)."""
        number = f"#{self.number + 1}"  # an identifier, as the graph list writes it
        text = f"Pass {number} is on screen" if on_screen else f"Opened pass {number}"
        if self.number != self.wanted:
            text += (
                f" (nearest kept to #{self.wanted + 1}: the run kept the graphs of "
                f"{self.kept:,} of its {self.total:,} passes)"
            )
        return text


def nearest_kept_pass(result: Any, wanted: int) -> PassChoice | None:
    """The graph of ``result`` (a :class:`~viewer.model.scripts.run.ScriptResult`) that shows
    pass ``wanted``, else the kept pass nearest it (the earlier of two as near); None when
    no graph shows a pass."""
    numbers = np.array([graph_pass(g) for g in result.graphs], dtype=np.int64)
    kept = np.flatnonzero(numbers >= 0)
    if not kept.size:
        return None
    distance = np.abs(numbers[kept] - int(wanted))
    best = distance == distance.min()
    index = int(kept[best][np.argmin(numbers[kept][best])])
    total = len(result.passes) if result.passes is not None else int(numbers.max()) + 1
    return PassChoice(index, int(numbers[index]), int(wanted), int(kept.size), total)


# =============================================================================
# Histograms of a node
# =============================================================================
@dataclass(frozen=True)
class Histogram:
    """``counts`` per bin between ``edges`` (``len(edges) == len(counts) + 1``) of the finite
    elements; ``nan`` and ``inf`` count the others."""

    counts: NDArray[np.int64]
    edges: NDArray[np.float64]
    n: int  # finite elements counted
    nan: int = 0
    inf: int = 0
    label: str = ""
    live: bool = False  # made from the live object (the trace kept only a summary)


@dataclass(frozen=True)
class NodeHistograms:
    node_id: int
    label: str
    value: Histogram | None
    grad: Histogram | None
    message: str = ""  # why one of them is missing


def histogram(array: Any, bins: int = DEFAULT_BINS, label: str = "") -> Histogram:
    """Counts and bin edges of the finite elements of ``array``."""
    data = np.asarray(array, dtype=np.float64).reshape(-1)
    finite = data[np.isfinite(data)]
    nan = int(np.isnan(data).sum())
    inf = int(np.isinf(data).sum())
    if finite.size:
        counts, edges = np.histogram(finite, bins=bins)
    else:
        counts, edges = np.zeros(bins, dtype=np.int64), np.linspace(0.0, 1.0, bins + 1)
    return Histogram(
        counts.astype(np.int64), edges.astype(np.float64), int(finite.size), nan, inf, label
    )


def node_histograms(
    trace: TraceReader, node_id: int, step: int, bins: int = DEFAULT_BINS
) -> NodeHistograms:
    """Histograms of the value and gradient of variable ``node_id`` after ``step``.

    From the trace's copies; when it kept only a summary (arrays above its
    ``max_array_size``) the live object's array is used if it still holds what the step held."""
    attrs = trace.node(node_id)
    name = attrs.get("name") or f"#{node_id}"
    if attrs["kind"] != "variable":
        return NodeHistograms(
            node_id,
            f"{attrs.get('op')} #{node_id}",
            None,
            None,
            "a Function has no value of its own: select one of its inputs or outputs",
        )
    missing = []
    found: dict[str, Histogram | None] = {}
    shown = node_display(trace, node_id, step)  # what the label and the inspector show
    for what, snap in (("value", shown.value), ("grad", shown.grad)):
        if snap is None:
            found[what] = None
            missing.append(f"no {'gradient' if what == 'grad' else 'value'} at this step")
            continue
        if snap.array is not None:
            found[what] = histogram(snap.array, bins, f"{what} of {name}")
            continue
        obj = trace.live(node_id)
        data = (
            getattr(obj, "data", None)
            if what == "value"
            else getattr(getattr(obj, "grad", None), "data", None)
        )
        # The live array stands in for the step's only if it still is what the step held
        # (its statistics equal the step's summary): never a later iteration's numbers.
        if data is not None and Snapshot.of(np.asarray(data), 0) == snap:
            h = histogram(data, bins, f"{what} of {name} (unchanged since this step)")
            found[what] = Histogram(h.counts, h.edges, h.n, h.nan, h.inf, h.label, live=True)
        elif data is not None:
            found[what] = None
            missing.append(
                f"the trace kept only a summary of the {what} ({int(np.prod(snap.shape))} "
                "elements) and the object holds another array now; record with a larger "
                "max_array_size"
            )
        else:
            found[what] = None
            missing.append(
                f"the trace kept only a summary of the {what} ({int(np.prod(snap.shape))} "
                "elements) and the object is gone; record with a larger max_array_size"
            )
    return NodeHistograms(node_id, name, found["value"], found["grad"], "; ".join(missing))


def document_histograms(
    document: Any, node_id: int | None = None, bins: int = DEFAULT_BINS
) -> NodeHistograms | None:
    """:func:`node_histograms` for ``node_id`` (default: the selection) at the current step;
    None when nothing is selected."""
    node_id = document.selection if node_id is None else node_id
    if node_id is None or document.trace is None:
        return None
    return node_histograms(document.trace, node_id, document.playback.index, bins)
