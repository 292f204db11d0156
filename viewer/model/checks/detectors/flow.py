"""Detectors of how gradients flow: unreached-parameter, carried-gradient, nonfinite (the
gradients' sizes, vanishing and exploding, are :mod:`.gradient_size`'s).

Each reads one graph through the :class:`~autodiff.trace.TraceReader` protocol only, so it runs
on every source (the engine, micrograd, saved traces, PyTorch recordings). A graph is usually
one backward pass (a :class:`~autodiff.trace.TraceView`); a whole recording with several
passes is looked at pass by pass.

The rules, with the limits of :class:`~viewer.model.checks.problems.Thresholds`:

* **unreached-parameter** (warning): a parameter the pass's forward used (or its graph holds)
  that got no gradient from the pass while other parameters did. The message says where its
  path to the loss was cut: an ``unchain()`` / ``unchain_backward()``, a torch ``.detach()`` /
  ``.data`` or an op run under ``torch.no_grad()`` (the recording marks each as a cut), a new
  leaf made from a computed value (``Variable(h.data)``: a leaf of the graph whose value is
  that of something the parameter computed), or that nothing it computed reached the loss. An
  engine parameter used only under ``no_grad`` is never recorded, so it cannot be named.
* **carried-gradient** (warning): the pass added to a gradient a leaf held from an earlier
  pass (the trace's GRAD_CARRIED): ``cleargrads()`` / ``zero_grad()`` forgotten, unless the
  program accumulates over passes on purpose.
* **nonfinite** (error): the first step whose value or gradient holds NaN or Inf, with its op.

Each uses what a Snapshot always carries (shape, norm, NaN and Inf counts), so arrays summarised
beyond the trace's ``max_array_size`` are read too.
"""

from __future__ import annotations

from typing import Any

from autodiff.trace import NodeState
from viewer.model.checks.detectors.op_names import on_line
from viewer.model.checks.detectors.reading import (
    NO_BACKWARD,
    NO_PARAMETERS,
    backward_passes,
    drawn_nodes,
    node_name,
    node_names,
    reached_by,
)
from viewer.model.checks.problems import (
    CannotRun,
    GraphInput,
    Problem,
    Thresholds,
    graph_detector,
)

__all__ = ["carried_gradient", "nonfinite", "unreached_parameter"]


# ------------------------------------------------------------------------------------------
# unreached-parameter
# ------------------------------------------------------------------------------------------
@graph_detector("unreached-parameter")
def unreached_parameter(graph: GraphInput, limits: Thresholds) -> list[Problem]:
    """Parameters that got no gradient in a pass where others did, and where their path to
    the loss was cut (see the module's docstring)."""
    reader = graph.reader
    passes = backward_passes(reader)
    if not passes:
        raise CannotRun(NO_BACKWARD)
    base = reader.base if reader.base is not None else reader
    params = base.parameters()
    if not params:
        raise CannotRun(NO_PARAMETERS)
    drawn = drawn_nodes(reader)
    problems = []
    for _, indexes in sorted(passes.items()):
        reached = reached_by(reader, indexes)
        if not reached & params:
            continue  # no parameter got a gradient: nothing to compare with
        window = _forward_window(reader, base, indexes[0])
        used = {n for step in window for n in step.inputs if n in params}
        # a view's parameters are its graph's; a whole recording's, those of every pass
        shown = params & drawn if base is not reader else params & reader.detached()
        candidates = sorted((used | shown) - reached)
        found: dict[tuple[str, int | None, tuple[int, ...]], list[int]] = {}
        for p in candidates:
            why, step, cut_nodes = _where_cut(reader, base, p, window, indexes[0])
            found.setdefault((why, step, cut_nodes), []).append(p)
        for (why, step, cut_nodes), group in found.items():
            verb = "gets" if len(group) == 1 else "get"
            nodes = tuple(n for n in (*group, *cut_nodes) if n in drawn)
            problems.append(
                Problem(
                    "unreached-parameter",
                    "warning",
                    f"{node_names(reader, group)} {verb} no gradient from this backward pass: "
                    f"{why}",
                    graph.graph,
                    indexes[0] if step is None else step,
                    nodes,
                )
            )
    return problems


def _forward_window(reader: Any, base: Any, first_backward: int) -> list[Any]:
    """The base's forward steps of the pass whose backward begins at the reader's step
    ``first_backward``: those after the previous pass's last backward step."""
    steps = base.steps
    end = reader.global_step(first_backward)
    start = end
    while start > 0 and steps[start - 1].phase != "backward":
        start -= 1
    return [s for s in steps[start:end] if s.phase == "forward"]


def _where_cut(
    reader: Any, base: Any, param: int, window: list[Any], first_backward: int
) -> tuple[str, int | None, tuple[int, ...]]:
    """Why ``param``'s path to the loss was cut: (the words, the reader's step where it shows,
    the cut's nodes)."""
    made = _made_from({param}, window)  # what the parameter computed in this pass's forward
    cuts = base.cuts()
    cut = _first_cut(made, window, cuts)
    copied = None if cut is not None else _copied_leaf(reader, made, window)
    if copied is not None:
        # a copy that a cut then used (torch's nested no_grad ops): the cut names it better
        cut = _first_cut(_made_from(made | {copied[0]}, window), window, cuts)
    if cut is not None:
        words, step, nodes = _cut_words(reader, base, cut, cuts[cut], first_backward)
        if step is None:  # the cut ran outside the drawn graph: where its result enters it
            step = _first_use(reader, _made_from(made | {cut}, window))
        return words, step, nodes
    if copied is not None:
        leaf, source, step = copied
        return (
            f"the value of {node_name(reader, source)}{on_line(base, source)} reached the loss as "
            "a new leaf "
            f"({node_name(reader, leaf)}, as `Variable(h.data)` or an op on `.data` makes one), "
            "which backward stops at; use the Variable itself",
            step,
            (leaf,),
        )
    if made - {param}:
        why = "nothing it computed in this pass reaches the loss; is its output used?"
    else:
        why = "this pass's loss does not use it at all"
    return why, None, ()


def _made_from(nodes: set[int], window: list[Any]) -> set[int]:
    """``nodes`` and every variable the forward steps of ``window`` computed from them."""
    made = set(nodes)
    for step in window:
        if any(n in made for n in step.inputs):
            made.update(step.outputs)
    return made


def _first_cut(made: set[int], window: list[Any], cuts: dict[int, int]) -> int | None:
    """The first variable of ``made`` whose history was cut, in the order the forward ran."""
    for step in window:
        for out in step.outputs:
            if out in made and out in cuts:
                return out
    return None


def _cut_words(
    reader: Any, base: Any, node: int, cut_step: int, first_backward: int
) -> tuple[str, int | None, tuple[int, ...]]:
    creator = base.creator_of(node)
    op = (base.node(creator).get("op") if creator >= 0 else None) or "?"
    if op == "detach":
        how = "`.detach()` (or `.data`) cut its path"
    elif _torch(reader):  # a torch op that ran without autograd made the cut
        how = f"`{op}` ran under `torch.no_grad()` and cut its path"
    else:
        how = f"`unchain()` / `unchain_backward()` cut its path after `{op}`"
    local = reader.local_step(cut_step)
    shown = 0 <= local < first_backward and reader.global_step(local) == cut_step
    step = local if shown else None
    return (
        f"{how} ({node_name(reader, node)}{on_line(base, node)}); backward stops there",
        step,
        (node,),
    )


def _torch(reader: Any) -> bool:
    """Whether the graph is a PyTorch recording (live or saved): its functions name the
    autograd node torch made (``torch_node``, kept with a saved trace)."""
    return any("torch_node" in reader.function_params(f) for f in reader.functions)


def _copied_leaf(
    reader: Any, made: set[int], window: list[Any]
) -> tuple[int, int, int | None] | None:
    """A leaf the pass's forward used (not a parameter, not the parameter's own work) whose
    value is that of a variable the parameter computed: the value reached the loss copied,
    without its history. (leaf, the variable, the reader's first step that used the leaf)."""
    last = len(reader.steps) - 1
    params = reader.parameters()
    detached = reader.detached()
    used = sorted({n for step in window for n in step.inputs})
    leaves = [
        n
        for n in used
        if n not in made
        and n not in params
        and n not in detached
        and reader.creator_of(n) < 0
        and not reader.node(n).get("constant")
    ]
    if not leaves:
        return None
    values: dict[tuple, list[tuple[int, Any]]] = {}
    for n in sorted(made):
        if reader.node(n).get("kind") != "variable":
            continue
        v = reader.value_at(n, last)
        if v is None or v.size < 2 or not v.finite or v.min == v.max:
            continue  # a constant array matches too easily to say it was copied
        values.setdefault(tuple(v.shape), []).append((n, v))
    for leaf in leaves:
        v = reader.value_at(leaf, last)
        if v is None:
            continue
        for source, value in values.get(tuple(v.shape), ()):
            if value == v:
                return leaf, source, _first_use(reader, {leaf})
    return None


def _first_use(reader: Any, nodes: set[int]) -> int | None:
    """The reader's first forward step that uses one of ``nodes``."""
    for step in reader.steps:
        if step.phase == "forward" and any(n in nodes for n in step.inputs):
            return step.index
    return None


# ------------------------------------------------------------------------------------------
# carried-gradient
# ------------------------------------------------------------------------------------------
@graph_detector("carried-gradient")
def carried_gradient(graph: GraphInput, limits: Thresholds) -> list[Problem]:
    """A backward pass that added to gradients left over from an earlier pass: of parameters,
    and of other leaves the program updates between the passes (a weight kept as a plain
    Variable); a leaf it never changes (the data) is not trained, its gradient not used."""
    reader = graph.reader
    passes = backward_passes(reader)
    if not passes:
        raise CannotRun(NO_BACKWARD)
    steps = reader.steps
    params = reader.parameters()
    ends: dict[int, int] = {}
    problems = []
    for bpass, indexes in sorted(passes.items()):
        first: dict[int, int] = {}  # leaf -> the pass's first step giving it a gradient
        for k in indexes:
            step = steps[k]
            for node, grad in zip(step.inputs, step.input_grads, strict=False):
                if grad is not None and node not in first and reader.creator_of(node) < 0:
                    first[node] = k
        carried = []
        for node, k in sorted(first.items(), key=lambda item: (item[1], item[0])):
            if reader.state_at(node, k - 1) is not NodeState.GRAD_CARRIED:
                continue
            if reader.grad_fate(node, k - 1).adder != bpass:
                continue
            if node in params or _updated(reader, node, k - 1, ends):
                carried.append((node, k))
        if not carried:
            continue
        carried.sort(key=lambda item: (item[0] not in params, item[1], item[0]))
        nodes = tuple(n for n, _ in carried)
        verb = "is" if len(nodes) == 1 else "are"
        if graph.source == "micrograd":
            clear = "model.zero_grad() (micrograd)"
        else:
            clear = "model.cleargrads() (DeZero) / optimizer.zero_grad() (PyTorch)"
        problems.append(
            Problem(
                "carried-gradient",
                "warning",
                f"this backward adds to the gradient of {node_names(reader, nodes)}, which {verb} "
                f"left over from an earlier pass: call {clear} before backward(), unless you "
                "accumulate gradients over passes on purpose",
                graph.graph,
                min(k for _, k in carried),
                nodes,
            )
        )
    return problems


def _updated(reader: Any, node: int, step: int, ends: dict[int, int]) -> bool:
    """Whether leaf ``node``'s value after the reader's ``step`` differs from its value when
    the pass that left its gradient ended (False when that pass is not in the recording).
    ``ends``: the base's last step of each pass looked up so far (-1: not found)."""
    origin = reader.grad_origin(node, step)
    base = reader.base
    if origin is None or origin < 0 or base is None:
        return False
    if origin not in ends:
        steps = base.steps
        ends[origin] = next(
            (
                k
                for k in range(reader.global_step(step), -1, -1)
                if steps[k].phase == "backward" and steps[k].backward_pass == origin
            ),
            -1,
        )
    end = ends[origin]
    return end >= 0 and base.value_at(node, end) != reader.value_at(node, step)


# ------------------------------------------------------------------------------------------
# nonfinite
# ------------------------------------------------------------------------------------------
@graph_detector("nonfinite")
def nonfinite(graph: GraphInput, limits: Thresholds) -> list[Problem]:
    """The first NaN or Inf of the graph, forward or backward, with its op."""
    reader = graph.reader
    step = reader.first_nonfinite()
    if step is None:
        return []
    op = step.op
    if step.phase == "forward":
        bad = [
            (n, v)
            for n, v in zip(step.outputs, step.values, strict=False)
            if v is not None and not v.finite
        ]
        what = "value"
        inputs = [reader.value_at(n, step.index - 1) for n in step.inputs]
        if any(v is not None and not v.finite for v in inputs):
            cause = "its inputs already hold NaN/Inf that no step made (a leaf's data?)"
        else:
            cause = (
                "its inputs are finite: look for a log or sqrt of a negative or of 0, a "
                "division by zero, 0/0 or an exp that overflows"
            )
    else:
        bad = [
            (n, g)
            for n, g in zip(step.inputs, step.input_grads, strict=False)
            if g is not None and not g.finite
        ]
        what = "gradient"
        received = [g for g in step.output_grads if g is not None]
        if any(not g.finite for g in received):
            cause = "the gradient it received is already NaN/Inf (the seed?)"
        else:
            cause = (
                "from a finite gradient: its derivative is infinite or undefined there "
                "(sqrt or log at 0, a division by zero), or it overflows"
            )
    if not bad:  # the step's output gradient is the one that is not finite
        bad = [
            (n, g)
            for n, g in zip(step.outputs, step.output_grads, strict=False)
            if g is not None and not g.finite
        ]
    nodes = tuple(n for n, _ in bad)
    kinds = []
    if any(s.nan for _, s in bad):
        kinds.append("NaN")
    if any(s.inf for _, s in bad):
        kinds.append("Inf")
    found = "/".join(kinds) or "NaN/Inf"
    where = f" of {node_names(reader, nodes)}" if nodes else ""
    return [
        Problem(
            "nonfinite",
            "error",
            f"{found} first appears in the {what}{where} made by `{op}`"
            f"{on_line(reader, step.function)} ({step.phase} step {step.index + 1}): {cause}",
            graph.graph,
            step.index,
            (step.function, *nodes),
        )
    ]
