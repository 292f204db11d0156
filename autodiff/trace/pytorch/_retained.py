"""The non-leaves whose gradient ``retain_grad()`` keeps, for both PyTorch recorders.

torch drops a non-leaf's gradient once its node has run, unless ``retain_grad()`` was called
on it: then its ``.grad`` holds it after the pass (added to what an earlier pass left there).
torch says which tensors do only through a hook on their node, out of Python's sight, so the
recorders wrap ``Tensor.retain_grad`` while they record (``_internals.wrap_retain_grad``) and
note the tensors here; when a pass begins they are matched with their recorded nodes, and
after each node's step its retained outputs show their ``.grad`` instead of being cleared.
"""

from __future__ import annotations

import weakref
from typing import Any

from autodiff.trace.pytorch import _internals as ti

__all__ = ["RetainedGrads"]


class RetainedGrads:
    """The tensors ``retain_grad()`` was called on (weakly), and the recorded variables they
    are."""

    def __init__(self) -> None:
        self._waiting: list[Any] = []  # weakrefs of tensors not matched with a variable yet
        self._kept: dict[int, Any] = {}  # variable -> weakref of its tensor

    def note(self, t: Any) -> None:
        self._waiting.append(weakref.ref(t))

    def resolve(self, key: str, outputs: dict[int, tuple[int, ...]]) -> None:
        """Match the tensors noted with the variables they are: the output of their node now
        (an in-place op moves torch's hook that keeps ``.grad`` to its new node) tagged under
        ``key``, ``outputs`` being each function node's output variables. A tensor whose node
        is not recorded (yet: the statistics-only recorder records it at its pass) waits."""
        waiting = []
        for ref in self._waiting:
            t = ref()
            if t is None or t.grad_fn is None:
                continue
            fid = ti.node_tag(t.grad_fn, key)
            if fid is None:
                waiting.append(ref)
            else:
                self._kept[outputs[fid][t.output_nr]] = ref
        self._waiting = waiting

    def waiting(self) -> bool:
        return bool(self._waiting)

    def after_step(self, outs: tuple[int, ...]) -> tuple[tuple[int, ...], list]:
        """After the step of the node with outputs ``outs``: those whose gradient torch drops
        (cleared), and ``(output, its .grad)`` of those whose ``.grad`` it keeps."""
        kept_refs = self._kept
        if not kept_refs:
            return outs, []
        cleared = []
        kept = []
        for vid in outs:
            ref = kept_refs.get(vid)
            t = None if ref is None else ref()
            g = None if t is None else t.grad
            if g is None:
                cleared.append(vid)
            else:
                kept.append((vid, g))
        return tuple(cleared), kept

    def clear(self) -> None:
        self._waiting.clear()
        self._kept.clear()
