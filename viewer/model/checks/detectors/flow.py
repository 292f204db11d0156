"""Detectors of how gradients flow: unreached-parameter, carried-gradient, vanishing-gradient,
exploding-gradient, nonfinite.

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
* **vanishing-gradient** (warning): the parameters' gradient norms summed per layer (the scope
  of the function that uses the parameter: ``Net/l1``; its name's prefix, ``l1``, outside any
  scope); a layer whose norm is more than ``vanishing_orders`` orders of magnitude below the
  largest layer's, among the layers that ran before the largest in the forward (a gradient
  vanishes on its way back: a bias beside its weight, or a later layer, is not that). A layer
  whose gradient is exactly zero is left to the detectors of dead
  units; one that got none is unreached-parameter's.
* **exploding-gradient** (warning): a parameter whose gradient's root mean square is more than
  ``exploding_ratio`` times its value's *and* above ``exploding_floor`` (so a bias initialised
  at zero, whose first gradients are ordinary, does not fire).
* **nonfinite** (error): the first step whose value or gradient holds NaN or Inf, with its op.

Each uses what a Snapshot always carries (shape, norm, NaN and Inf counts), so arrays summarised
beyond the trace's ``max_array_size`` are read too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from autodiff.trace import NodeState
from viewer.model.checks.detectors.op_names import on_line
from viewer.model.checks.problems import (
    CannotRun,
    GraphInput,
    Problem,
    Thresholds,
    graph_detector,
)

__all__ = [
    "carried_gradient",
    "exploding_gradient",
    "nonfinite",
    "unreached_parameter",
    "vanishing_gradient",
]

_NO_BACKWARD = "the graph has no backward pass"
_NO_PARAMETERS = "the graph has no parameters (Parameter, nn.Parameter)"


# ------------------------------------------------------------------------------------------
# What the detectors share: the passes of a reader, names, layers
# ------------------------------------------------------------------------------------------
def _passes(reader: Any) -> dict[int, list[int]]:
    """The reader's backward passes: pass number -> its backward steps' indexes, ascending."""
    found: dict[int, list[int]] = {}
    for step in reader.steps:
        if step.phase == "backward":
            found.setdefault(step.backward_pass, []).append(step.index)
    return found


def _reached(reader: Any, indexes: Iterable[int]) -> set[int]:
    """The nodes a backward step of ``indexes`` gave a gradient to."""
    steps = reader.steps
    got: set[int] = set()
    for k in indexes:
        step = steps[k]
        for node, grad in zip(step.inputs, step.input_grads, strict=False):
            if grad is not None:
                got.add(node)
    return got


def _name(reader: Any, node_id: int) -> str:
    """A node as the user knows it: its name, else ``op #id`` after its creator."""
    node = reader.node(node_id)
    if node.get("name"):
        return str(node["name"])
    if node.get("kind") == "function":
        return f"{node.get('op')} #{node_id}"
    base = reader.base if reader.base is not None else reader  # a view's leaf may have one
    creator = base.creator_of(node_id)
    if creator < 0:
        return f"variable #{node_id}"
    return f"{base.node(creator).get('op')} #{node_id}"


def _names(reader: Any, nodes: Iterable[int], at_most: int = 4) -> str:
    """``a, b and c`` (``a, b, c, d and 3 more`` past ``at_most``)."""
    names = [_name(reader, n) for n in nodes]
    if len(names) > at_most:
        names = [*names[:at_most], f"{len(names) - at_most} more"]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _drawn(reader: Any) -> set[int]:
    return set(reader.variables) | set(reader.functions)


def _first_users(reader: Any, params: Iterable[int]) -> dict[int, int]:
    """Each parameter's first function in the reader (node ids grow in the order the program
    made them, so the smallest is the earliest in the forward)."""
    params = set(params)
    pairs, _ = reader.edges()
    user: dict[int, int] = {}
    for source, target in pairs.tolist():
        if source in params and (source not in user or target < user[source]):
            user[source] = target
    return user


def _layers(reader: Any, params: Iterable[int]) -> dict[int, str]:
    """Each parameter's layer: the scope path of the first function of the reader that uses
    it (a parameter itself, a leaf, is in no scope); outside any scope, the prefix of its name
    (``l1`` of ``l1.W``, ``hidden.0`` of ``hidden.0.weight``), else its name."""
    params = set(params)
    user = _first_users(reader, params)
    scope_of = reader.node_scopes()
    scopes = reader.scopes()
    layers: dict[int, str] = {}
    for p in params:
        path = ""
        fid = user.get(p)
        if fid is not None and 0 <= fid < len(scope_of):
            sid = int(scope_of[fid])
            if 0 < sid < len(scopes):
                path = scopes[sid].path
        if not path:
            name = _name(reader, p)
            path = name.rsplit(".", 1)[0] if "." in name else name
        layers[p] = path
    return layers


def _rms(snapshot: Any) -> float:
    """The root mean square of a Snapshot's finite elements (NaN when it has none)."""
    size = max(1, snapshot.size)
    return float(snapshot.norm) / math.sqrt(size)


# ------------------------------------------------------------------------------------------
# unreached-parameter
# ------------------------------------------------------------------------------------------
@graph_detector("unreached-parameter")
def unreached_parameter(graph: GraphInput, limits: Thresholds) -> list[Problem]:
    """Parameters that got no gradient in a pass where others did, and where their path to
    the loss was cut (see the module's docstring)."""
    reader = graph.reader
    passes = _passes(reader)
    if not passes:
        raise CannotRun(_NO_BACKWARD)
    base = reader.base if reader.base is not None else reader
    params = base.parameters()
    if not params:
        raise CannotRun(_NO_PARAMETERS)
    drawn = _drawn(reader)
    problems = []
    for _, indexes in sorted(passes.items()):
        reached = _reached(reader, indexes)
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
                    f"{_names(reader, group)} {verb} no gradient from this backward pass: {why}",
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
            f"the value of {_name(reader, source)}{on_line(base, source)} reached the loss as "
            "a new leaf "
            f"({_name(reader, leaf)}, as `Variable(h.data)` or an op on `.data` makes one), "
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
        f"{how} ({_name(reader, node)}{on_line(base, node)}); backward stops there",
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
    passes = _passes(reader)
    if not passes:
        raise CannotRun(_NO_BACKWARD)
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
                f"this backward adds to the gradient of {_names(reader, nodes)}, which {verb} "
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
# vanishing-gradient and exploding-gradient
# ------------------------------------------------------------------------------------------
def _parameter_grads(reader: Any) -> list[tuple[int, list[tuple[int, Any]]]]:
    """Per backward pass of the reader: (its last step, [(parameter, the gradient it holds
    after the pass)]) for the parameters the pass gave a gradient."""
    passes = _passes(reader)
    if not passes:
        raise CannotRun(_NO_BACKWARD)
    params = reader.parameters()
    if not params:
        raise CannotRun(_NO_PARAMETERS)
    out = []
    for _, indexes in sorted(passes.items()):
        last = indexes[-1]
        grads = []
        for p in sorted(_reached(reader, indexes) & params):
            g = reader.grad_at(p, last)
            if g is not None:
                grads.append((p, g))
        out.append((last, grads))
    return out


@graph_detector("vanishing-gradient")
def vanishing_gradient(graph: GraphInput, limits: Thresholds) -> list[Problem]:
    """Layers whose gradient norm is more than ``vanishing_orders`` orders of magnitude below
    the largest layer's (see the module's docstring)."""
    reader = graph.reader
    problems = []
    compared = False
    for last, grads in _parameter_grads(reader):
        layers = _layers(reader, [p for p, _ in grads])
        first = _first_users(reader, [p for p, _ in grads])
        squares: dict[str, float] = {}
        members: dict[str, list[int]] = {}
        for p, g in grads:
            norm = float(g.norm)
            if not math.isfinite(norm) or not g.finite:
                continue  # NaN/Inf: nonfinite's
            squares[layers[p]] = squares.get(layers[p], 0.0) + norm * norm
            members.setdefault(layers[p], []).append(p)
        norms = {layer: math.sqrt(s) for layer, s in squares.items()}
        if len(norms) < 2:
            continue
        compared = True
        top_layer = max(norms, key=lambda layer: norms[layer])
        top = norms[top_layer]
        floor = top * 10.0 ** (-limits.vanishing_orders)
        # where each layer starts in the forward: a gradient vanishes on its way back, so
        # only a layer that ran before the largest one can have lost it (a bias beside its
        # weight in the same op, or a layer after, is a different story)
        start = {
            layer: min((first.get(p, 1 << 62) for p in ps), default=1 << 62)
            for layer, ps in members.items()
        }
        for layer, norm in norms.items():
            if norm == 0.0 or norm >= floor or start[layer] >= start[top_layer]:
                continue
            orders = math.log10(top / norm)
            problems.append(
                Problem(
                    "vanishing-gradient",
                    "warning",
                    f"layer {layer}'s gradient norm {norm:.3g} is {orders:.1f} orders of "
                    f"magnitude below {top_layer}'s ({top:.3g}): its parameters barely learn; "
                    "try ReLU instead of tanh/sigmoid, a larger initialisation (He/Xavier), "
                    "normalisation or residual connections",
                    graph.graph,
                    last,
                    tuple(members[layer]),
                )
            )
    if not compared:
        raise CannotRun("fewer than 2 layers got a finite gradient")
    return problems


@graph_detector("exploding-gradient")
def exploding_gradient(graph: GraphInput, limits: Thresholds) -> list[Problem]:
    """Parameters whose gradient is far larger than their value (see the module's
    docstring)."""
    reader = graph.reader
    problems = []
    for last, grads in _parameter_grads(reader):
        for p, g in grads:
            value = reader.value_at(p, last)
            if value is None or not g.finite:
                continue
            grad_rms, value_rms = _rms(g), _rms(value)
            if not math.isfinite(value_rms):
                continue
            if grad_rms <= limits.exploding_floor or grad_rms <= limits.exploding_ratio * value_rms:
                continue
            if value_rms == 0:
                than = "while its value is 0"
            else:
                than = f"{grad_rms / value_rms:.3g} times its value's ({value_rms:.3g})"
            problems.append(
                Problem(
                    "exploding-gradient",
                    "warning",
                    f"{_name(reader, p)}'s gradient is {grad_rms:.3g} per element (root mean "
                    f"square), {than}: a step would throw it far away; use a smaller learning "
                    "rate or clip the gradients",
                    graph.graph,
                    last,
                    (p,),
                )
            )
    return problems


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
    where = f" of {_names(reader, nodes)}" if nodes else ""
    return [
        Problem(
            "nonfinite",
            "error",
            f"{found} first appears in the {what}{where} made by `{op}`"
            f"{on_line(reader, step.function)} ({step.phase} step {step.index}): {cause}",
            graph.graph,
            step.index,
            (step.function, *nodes),
        )
    ]
