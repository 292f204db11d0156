"""The inspector's data: everything about one node at one playback step, as plain values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from autodiff.trace import NodeState, TraceReader
from viewer.model.node_display import node_display, unnamed_variable

__all__ = [
    "FULL_ARRAY_LIMIT",
    "ArrayInfo",
    "NodeInfo",
    "NodeRef",
    "describe_array",
    "inspect",
    "inspect_module",
    "torch_rows",
]

FULL_ARRAY_LIMIT = 64  # arrays up to this many elements are shown in full
HISTOGRAM_BINS = 20


@dataclass(frozen=True)
class NodeRef:
    """A neighbour in the graph: its id and a label ("x", "Square")."""

    node_id: int
    label: str
    slot: int  # argument slot (consumers) or output index (creator)


@dataclass(frozen=True)
class ArrayInfo:
    """A value or a gradient for display.

    ``text`` is the full array (numpy's formatting) when it has at most FULL_ARRAY_LIMIT
    elements and the trace kept a copy; otherwise ``text`` is the summary and ``histogram`` /
    ``bin_edges`` describe the distribution (when the trace kept the array).
    """

    shape: tuple[int, ...]
    dtype: str
    text: str
    summary: str
    full: bool
    min: float
    max: float
    mean: float
    norm: float
    nan: int
    inf: int
    histogram: NDArray[np.int64] | None = None
    bin_edges: NDArray[np.float64] | None = None
    array: NDArray[Any] | None = field(default=None, repr=False)


@dataclass(frozen=True)
class NodeInfo:
    node_id: int
    kind: str  # 'variable' | 'function'
    name: str | None
    op: str | None
    shape: tuple[int, ...] | None
    dtype: str | None
    generation: int
    constant: bool
    state: NodeState
    step: int
    value: ArrayInfo | None
    grad: ArrayInfo | None
    creator: NodeRef | None  # the Function that made a variable
    consumers: tuple[NodeRef, ...]  # Functions that take a variable (one per argument slot)
    inputs: tuple[NodeRef, ...]  # a Function's inputs, per slot
    outputs: tuple[NodeRef, ...]  # a Function's outputs
    grad_of: int | None = None  # for a gradient made under create_graph: whose gradient
    live: bool = False  # the engine object still exists
    note: str = ""  # why the gradient shows as it does (carried over, used and dropped...)
    # for a constant: the gradients that reached it at this step, not stored: (op, slot, info)
    passing: tuple[tuple[str, int, ArrayInfo], ...] = ()
    # for a module box (kind 'module'): its rows (path, class, parameters, what ran in it)
    module_rows: tuple[tuple[str, str], ...] = ()
    # a cut (unchain_backward): the leaf where this graph's history was cut, or a node of
    # the detached history drawn behind it; '' for neither
    history: str = ""
    detached: bool = False  # in that detached history: no step of this graph touches it
    scope: str = ""  # the module path it was made in ('Net/layer1/0/conv1'); '' for none
    parameter: bool = False  # a Parameter leaf (an nn.Parameter: its name is named_parameters')
    # a torch node's own words: its autograd node, aten op and saved tensors' shapes
    torch_rows: tuple[tuple[str, str], ...] = ()
    line: int | None = None  # a function's line of the script it ran on, when recorded
    values_kept: bool = True  # False: a recording of gradients' statistics only

    @property
    def title(self) -> str:
        if self.kind == "function":
            return f"{self.op} (function #{self.node_id})"
        if self.kind == "module":
            return f"{self.name} ({self.op} module)" if self.op else f"{self.name} (scope)"
        if self.name:
            return f"{self.name} (variable #{self.node_id})"
        if self.constant:
            return f"constant (variable #{self.node_id})"
        op = self.creator.label.rsplit(" #", 1)[0] if self.creator is not None else None
        return unnamed_variable(self.node_id, op)  # as the problems' messages name it

    def as_rows(self) -> list[tuple[str, str]]:
        """(field, text) rows for a two-column table."""
        rows = [("kind", self.kind)]
        if self.kind == "module":
            return rows + list(self.module_rows)
        if self.kind == "function":
            rows.append(("op", str(self.op)))
            if self.line is not None:
                rows.append(("script", f"line {self.line}"))
            rows.extend(self.torch_rows)
        else:
            rows.append(("parameter" if self.parameter else "name", self.name or "—"))
            rows.append(("shape", str(self.shape)))
            rows.append(("dtype", str(self.dtype)))
        if self.scope:
            rows.append(("module", self.scope))
        rows.append(("generation", str(self.generation)))
        rows.append(("state", self.state.value.replace("_", " ")))
        if self.value is not None:
            rows.append(("value", self.value.text))
        elif self.kind == "variable" and not self.values_kept:
            rows.append(("value", "not recorded (statistics only)"))
        if self.grad is not None:
            rows.append(("grad", self.grad.text))
        for op, slot, info in self.passing:
            rows.append((f"∇ at {op} arg {slot} (not stored)", info.text))
        if self.note:
            rows.append(("note", self.note))
        if self.history:
            rows.append(("history", self.history))
        if self.creator is not None:
            rows.append(("creator", self.creator.label))
        if self.consumers:
            rows.append(("consumers", ", ".join(c.label for c in self.consumers)))
        if self.inputs:
            rows.append(("inputs", ", ".join(c.label for c in self.inputs)))
        if self.outputs:
            rows.append(("outputs", ", ".join(c.label for c in self.outputs)))
        if self.grad_of is not None:
            rows.append(("gradient of", f"#{self.grad_of}"))
        return rows


def inspect(trace: TraceReader, node_id: int, step_index: int) -> NodeInfo:
    """Describe ``node_id`` after ``trace.steps[0..step_index]`` (-1: before any step)."""
    attrs = trace.node(node_id)
    graph = trace.graph
    kind = attrs["kind"]
    creator = None
    consumers: list[NodeRef] = []
    inputs: list[NodeRef] = []
    outputs: list[NodeRef] = []
    if kind == "variable":
        for u, _, data in graph.in_edges(node_id, data=True):
            creator = NodeRef(int(u), _label(graph, u), int(data.get("slot", 0)))
        for _, v, data in graph.out_edges(node_id, data=True):
            consumers.append(NodeRef(int(v), _label(graph, v), int(data.get("slot", 0))))
        consumers.sort(key=lambda r: (r.node_id, r.slot))
        consumers = _by_slot(consumers)
    else:
        for u, _, data in graph.in_edges(node_id, data=True):
            inputs.append(NodeRef(int(u), _label(graph, u), int(data.get("slot", 0))))
        for _, v, data in graph.out_edges(node_id, data=True):
            outputs.append(NodeRef(int(v), _label(graph, v), int(data.get("slot", 0))))
        inputs.sort(key=lambda r: r.slot)
        outputs.sort(key=lambda r: r.slot)
    value = grad = None
    shown = node_display(trace, node_id, step_index)
    passing: tuple[tuple[str, int, ArrayInfo], ...] = ()
    if kind == "variable":
        value = describe_array(shown.value)
        grad = describe_array(shown.grad)
        passing = tuple((op, slot, describe_array(g)) for op, slot, g in shown.passing)
    return NodeInfo(
        node_id=int(node_id),
        kind=kind,
        name=attrs.get("name"),
        op=attrs.get("op"),
        shape=attrs.get("shape"),
        dtype=attrs.get("dtype"),
        generation=int(attrs.get("generation", 0)),
        constant=bool(attrs.get("constant", False)),
        state=shown.state,
        step=int(step_index),
        value=value,
        grad=grad,
        creator=creator,
        consumers=tuple(consumers),
        inputs=tuple(inputs),
        outputs=tuple(outputs),
        grad_of=attrs.get("grad_of"),
        live=_is_live(trace, node_id),
        note=shown.note,
        passing=passing,  # type: ignore[arg-type]
        history=_history(trace, node_id, kind),
        detached=node_id in trace.detached(),
        scope=str(attrs.get("scope") or ""),
        parameter=kind == "variable" and node_id in trace.parameters(),
        torch_rows=torch_rows(_torch_params(trace, node_id, attrs)) if kind == "function" else (),
        line=trace.line_of(node_id) if kind == "function" else None,
        values_kept=trace.values_kept,
    )


def _torch_params(trace: TraceReader, node_id: int, attrs: dict[str, Any]) -> dict[str, Any]:
    """A function node's kept attributes, with the ``torch_node`` a live torch recording gives
    its cuts (None: torch made no node) though it keeps no attribute of them."""
    params = trace.function_params(node_id)
    if "torch_node" in attrs and "torch_node" not in params:
        params = {"torch_node": attrs["torch_node"], **params}
    return params


def torch_rows(params: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """A torch node's rows, from what ``autodiff.trace.pytorch`` kept of it: torch's name for
    the autograd node, the aten op, and each saved tensor's shape (``saved_input``); () for a
    Function of the engine. A cut torch made no node for says so."""
    if "torch_node" not in params:
        return ()
    node = params["torch_node"]
    rows = [("torch node", str(node) if node else "none: a cut (no autograd node)")]
    if params.get("aten"):
        rows.append(("aten op", str(params["aten"])))
    elif node:
        rows.append(("aten op", "none: a custom autograd.Function (your own backward)"))
    others = []
    for key, value in params.items():
        if key.startswith("saved_"):
            shape = "() a scalar" if value == () else str(value)
            rows.append((f"saved {key.removeprefix('saved_')}", shape))
        elif key not in ("torch_node", "aten"):
            others.append((key, str(value)))  # a saved non-tensor (padding, dim) as kept
    return (*rows, *others)


DETACHED_HISTORY = "cut off before this graph (unchain_backward): not run here"


def _history(trace: TraceReader, node_id: int, kind: str) -> str:
    """What a cut (unchain_backward) did here: '' if nothing."""
    detached = trace.detached()
    if node_id in detached:
        return DETACHED_HISTORY
    at = trace.cut_at(node_id) if kind == "variable" else None
    if at is None or trace.creator_of(node_id) >= 0:
        return ""
    behind = " (greyed, above)" if detached else ""
    return f"cut before this graph{behind}: a leaf here, where backward stops"


def _float_text(v: float) -> str:
    """Six decimals, as numpy prints them, without its trailing point: 1, not "1."."""
    if v != v or v in (float("inf"), float("-inf")):
        return str(v)
    if v != 0 and not 1e-4 <= abs(v) < 1e16:
        return np.format_float_scientific(v, precision=6, trim="-")
    return np.format_float_positional(v, precision=6, trim="-")


def _by_slot(refs: list[NodeRef]) -> list[NodeRef]:
    """A Function that takes the node in several slots (``x + x``) is named with each slot."""
    counts: dict[int, int] = {}
    for r in refs:
        counts[r.node_id] = counts.get(r.node_id, 0) + 1
    return [
        NodeRef(r.node_id, f"{r.label} (arg {r.slot})", r.slot) if counts[r.node_id] > 1 else r
        for r in refs
    ]


def _is_live(trace: TraceReader, node_id: int) -> bool:
    try:
        return trace.live(node_id) is not None
    except (IndexError, KeyError):
        return False


def _label(graph: Any, node_id: int) -> str:
    attrs = graph.nodes[node_id]
    if attrs.get("kind") == "function":
        return f"{attrs.get('op')} #{node_id}"
    name = attrs.get("name")
    return f"{name} #{node_id}" if name else f"variable #{node_id}"


def describe_array(snapshot: Any) -> ArrayInfo | None:
    """An :class:`ArrayInfo` for a trace Snapshot (None stays None)."""
    if snapshot is None:
        return None
    array = snapshot.array
    summary = (
        f"shape {snapshot.shape}, min {snapshot.min:.4g}, max {snapshot.max:.4g}, "
        f"mean {snapshot.mean:.4g}, norm {snapshot.norm:.4g}"
    )
    if snapshot.nan or snapshot.inf:
        summary += f", {snapshot.nan} NaN, {snapshot.inf} Inf"
    full = array is not None and array.size <= FULL_ARRAY_LIMIT
    histogram = edges = None
    if array is not None and not full and array.dtype.kind in "biuf":
        finite = np.asarray(array, dtype=np.float64).reshape(-1)
        finite = finite[np.isfinite(finite)]
        if finite.size:
            histogram, edges = np.histogram(finite, bins=HISTOGRAM_BINS)
    if full:
        values = np.asarray(array)
        if values.ndim == 0 and values.dtype.kind == "f":
            text = _float_text(float(values))
        else:
            with np.printoptions(
                threshold=FULL_ARRAY_LIMIT + 1, formatter={"float_kind": _float_text}
            ):
                text = np.array2string(values, separator=", ")
    else:
        text = summary
    return ArrayInfo(
        shape=tuple(snapshot.shape),
        dtype=str(snapshot.dtype),
        text=text,
        summary=summary,
        full=full,
        min=float(snapshot.min),
        max=float(snapshot.max),
        mean=float(snapshot.mean),
        norm=float(snapshot.norm),
        nan=int(snapshot.nan),
        inf=int(snapshot.inf),
        histogram=histogram,
        bin_edges=edges,
        array=array,
    )


def inspect_module(scene: Any, index: int, step: int) -> NodeInfo:
    """The inspector's data for module box ``index`` of ``scene`` after ``step``: its path
    and class, its repeats, inputs and outputs (the variables its edges cross to), its
    parameters and their gradient norm, and what last ran inside it."""
    box = scene.module(index)
    if box is None:
        raise ValueError(f"node {index} of the scene is not a module box")
    ins, outs = scene.boundary(index)

    def refs(indexes: list[int]) -> tuple[NodeRef, ...]:
        out = []
        for slot, i in enumerate(indexes):
            nid = int(scene.node_ids[i])
            out.append(NodeRef(nid, f"{scene.names[i] or 'variable'} #{nid}", slot))
        return tuple(out)

    ran = scene.last_phase(index, step)
    norm = scene.parameter_grad_norm(index, step)
    rows = [
        ("path", box.path),
        ("class", box.cls or "(an autodiff.scope block)"),
    ]
    if box.count > 1:
        rows.append(("repeats", f"{box.count} consecutive instances, folded"))
    rows.append(("parameters", f"{len(box.params)} ({box.param_values:,} values)"))
    rows.append(("‖∇θ‖", "—" if norm is None else f"{norm:.4g}"))
    detached = bool(scene.detached[index])
    if detached:  # cut-off history: it ran before this graph, and nothing runs in it here
        rows.append(("ran", "before this graph"))
        rows.append(("history", DETACHED_HISTORY))
        state = NodeState.VALUE
    else:
        rows.append(("ran", {"forward": "forward", "backward": "backward"}.get(ran, "not yet")))
        state = {"forward": NodeState.VALUE, "backward": NodeState.GRAD}.get(
            ran, NodeState.NOT_COMPUTED
        )
    return NodeInfo(
        node_id=int(scene.node_ids[index]),
        kind="module",
        name=box.path,
        op=box.cls,
        shape=None,
        dtype=None,
        generation=-1,
        constant=False,
        state=state,
        step=step,
        value=None,
        grad=None,
        creator=None,
        consumers=(),
        inputs=refs(ins),
        outputs=refs(outs),
        live=True,
        module_rows=tuple(rows),
        detached=detached,
    )
