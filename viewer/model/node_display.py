"""What one node shows at one playback step: the single source of the graph's labels, its
tooltips and the inspector, so that the three always agree.

Everything comes from the recording (the trace's state, value and gradient after the step),
never from the live objects, plus two facts of the step itself:

- at a backward step, an output whose gradient backward drops once used (``retain_grad=False``)
  shows the gradient the step received: the seed ``1`` on the output of the first backward step,
  the gradient flowing through an intermediate. From the next step it is *grad cleared*.
- a plain operand (``x * 3``) keeps no gradient: the gradient that reached its slot is shown as
  passing, marked as not stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from autodiff.trace import GradFate, NodeState, TraceReader

__all__ = ["NodeDisplay", "left_over_note", "node_display", "unnamed_variable"]


@dataclass(frozen=True)
class NodeDisplay:
    """A node at a step: its drawn state, value and gradient (Snapshots or None), a note on the
    gradient ('' when there is nothing to say) and, for a constant, the gradients that reached
    it at this step without being stored: ``(op, slot, Snapshot)``."""

    state: NodeState
    value: Any
    grad: Any
    note: str = ""
    passing: tuple[tuple[str, int, Any], ...] = ()
    origin: int | None = None  # the backward pass (0-based) whose gradient is held


def unnamed_variable(node_id: int, op: str | None = None) -> str:
    """An unnamed variable as the inspector's title, the problems' messages and the chain
    rule's symbols name it: ``variable #4 from Log`` (``variable #4`` for a leaf). Not
    ``Log #4``, which reads as the Function (it has its own id)."""
    return f"variable #{node_id} from {op}" if op else f"variable #{node_id}"


def left_over_note(state: NodeState, origin: int | None, fate: GradFate, offset: int = 0) -> str:
    """Why a gradient made by pass ``origin`` and left over after it is drawn as ``state``
    (GRAD_CARRIED or GRAD_PREVIOUS), and what comes of it: ``fate``, the reader's
    :meth:`~autodiff.trace.TraceReader.grad_fate`, the answer the state was made from.
    ``offset``: the run's number of the trace's pass 0 (a pass of a long run recorded on its
    own), so the note numbers passes as the graph list."""
    if origin is not None and origin >= 0:
        source = f"from backward #{origin + offset + 1}"
    elif offset > 0:
        source = "from an earlier backward (this pass was recorded on its own)"
    else:
        source = "held before recording began"
    if state is NodeState.GRAD_CARRIED:
        where = source if source.startswith("held") else f"carried over {source}"
    else:
        where = f"previous gradient, {source}"
    if fate.adder is not None:
        return (
            f"{where}: nothing empties it (cleargrad / zero_grad) before backward "
            f"#{fate.adder + offset + 1}, which adds to it"
        )
    if fate.emptied:
        return (
            f"{where}; the program empties it (cleargrad / zero_grad) before the next "
            "backward, which starts afresh"
        )
    return f"{where}; no later backward touches it"


def node_display(
    trace: TraceReader, node_id: int, step_index: int, step: Any = None
) -> NodeDisplay:
    """What ``node_id`` shows after step ``step_index`` of ``trace`` (a Trace or TraceView);
    ``step`` is ``trace.steps[step_index]`` when the caller has it."""
    state = trace.state_at(node_id, step_index)
    value = trace.value_at(node_id, step_index)
    grad = trace.grad_at(node_id, step_index)
    origin = trace.grad_origin(node_id, step_index) if grad is not None else None
    note = ""
    if state in (NodeState.GRAD_CARRIED, NodeState.GRAD_PREVIOUS):
        fate = trace.grad_fate(node_id, step_index)
        note = left_over_note(state, origin, fate, offset=trace.pass_offset)
    passing: tuple[tuple[str, int, Any], ...] = ()
    if step_index >= 0:
        if step is None:
            step = trace.steps[step_index]
        if step.phase == "backward":
            if node_id in step.outputs and node_id in step.cleared:
                g = step.output_grads[step.outputs.index(node_id)]
                if g is not None:
                    grad, state, origin = g, NodeState.GRAD, step.backward_pass
                    note = (
                        f"the gradient {step.op} received at this step; backward drops it "
                        "once used (retain_grad=False)"
                    )
            elif state is NodeState.CONSTANT and grad is None and node_id in step.inputs:
                passing = tuple(
                    (step.op, slot, g)
                    for slot, (x, g) in enumerate(zip(step.inputs, step.input_grads, strict=False))
                    if x == node_id and g is not None
                )
                if passing:
                    note = "reached this constant at this step; not stored (constants keep none)"
    return NodeDisplay(state, value, grad, note, passing, origin)
