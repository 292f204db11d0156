"""The bundled examples that demonstrate a gradient bug, and the kinds each must report above
``info`` through ``--check`` (exactly these, nothing else): every other bundled example is
meant to be correct and reports nothing above ``info``. The detector tests leave out the
demonstrations of their own kinds when they check that correct programs stay quiet.

The leaks folder: global_list (an intermediate kept in a list at every step) and closure (a
graph captured by a callback) hold graphs, graph-held; create_graph_cycle and strong_outputs
keep theirs only in a reference cycle (memory freed late, no wrong gradient: graph-held as
info); clean_graph and no_grad hold nothing."""

from __future__ import annotations

DEMONSTRATIONS: dict[str, tuple[str, ...]] = {
    "wrong_backward": ("wrong-backward",),
    "custom_function_gradcheck": ("wrong-backward",),  # its BadCube
    "nan_log": ("nonfinite",),
    "closure": ("graph-held",),
    "global_list": ("graph-held",),
    # the debugging category's planted bugs
    "forgot_cleargrads": ("carried-gradient",),
    "broadcast_loss": ("broadcast-shape",),
    "dead_relu": ("dead-relu",),
    "history_append": ("graph-held",),
    "diverging_lr": ("diverging-loss",),
}

# leak demonstrations that are no gradient bug: graph-held as info, nothing above it
CYCLES = ("create_graph_cycle", "strong_outputs")


def demonstrates(stem: str, kinds: tuple[str, ...] | frozenset[str] | set[str]) -> bool:
    """Whether the example ``stem`` demonstrates a bug of one of ``kinds``."""
    return bool(set(DEMONSTRATIONS.get(stem, ())) & set(kinds))
