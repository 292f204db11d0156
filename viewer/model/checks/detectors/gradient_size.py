"""Detectors of the gradients' sizes: vanishing-gradient, exploding-gradient.

Like :mod:`.flow`'s, each reads one graph through the :class:`~autodiff.trace.TraceReader`
protocol only, pass by pass, with the limits of
:class:`~viewer.model.checks.problems.Thresholds`:

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

Each uses what a Snapshot always carries (shape, norm, NaN and Inf counts), so arrays summarised
beyond the trace's ``max_array_size`` are read too.
"""

from __future__ import annotations

import math
from typing import Any

from viewer.model.checks.detectors.reading import (
    NO_BACKWARD,
    NO_PARAMETERS,
    backward_passes,
    first_users,
    node_name,
    parameter_layers,
    reached_by,
    rms,
)
from viewer.model.checks.problems import (
    CannotRun,
    GraphInput,
    Problem,
    Thresholds,
    graph_detector,
)

__all__ = ["exploding_gradient", "vanishing_gradient"]


# ------------------------------------------------------------------------------------------
# vanishing-gradient and exploding-gradient
# ------------------------------------------------------------------------------------------
def _parameter_grads(reader: Any) -> list[tuple[int, list[tuple[int, Any]]]]:
    """Per backward pass of the reader: (its last step, [(parameter, the gradient it holds
    after the pass)]) for the parameters the pass gave a gradient."""
    passes = backward_passes(reader)
    if not passes:
        raise CannotRun(NO_BACKWARD)
    params = reader.parameters()
    if not params:
        raise CannotRun(NO_PARAMETERS)
    out = []
    for _, indexes in sorted(passes.items()):
        last = indexes[-1]
        grads = []
        for p in sorted(reached_by(reader, indexes) & params):
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
        layers = parameter_layers(reader, [p for p, _ in grads])
        first = first_users(reader, [p for p, _ in grads])
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
            grad_rms, value_rms = rms(g), rms(value)
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
                    f"{node_name(reader, p)}'s gradient is {grad_rms:.3g} per element (root mean "
                    f"square), {than}: a step would throw it far away; use a smaller learning "
                    "rate or clip the gradients",
                    graph.graph,
                    last,
                    (p,),
                )
            )
    return problems
