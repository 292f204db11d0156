"""Leaves changed between the forward that used them and the backward that reads them
(and gradients emptied there: ``loss = ...; optimizer.zero_grad(); loss.backward()``).

torch's version counter makes a backward fail when a tensor it saved was changed in place,
but not a change made through ``.data`` (``p.data.add_(...)``, ``p.data = ...``), nor one
to a tensor torch did not save: the backward then reads the new value silently. When a
backward pass begins, each recorded leaf kept whole (a parameter, an input that requires
grad) is compared with the value the recording holds, and a changed one gets its new value
at the pass's first step, as the engine's recorder does (``Recorder._note_stale_leaves``):
``Trace.stale_inputs`` then compares the value a backward step reads with its forward's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autodiff.trace._recorder import _EMPTIED, _VALUE, _same_raw
from autodiff.trace.pytorch._values import HALF

__all__ = ["note_changed_leaves"]


def note_changed_leaves(recording: Any) -> None:
    """A backward pass begins: record the new value of every live leaf of ``recording`` (a
    ``TorchRecording``) whose numbers differ from the last ones it recorded, and the
    emptying of a ``.grad`` the program set to None since (else the pass's gradient would
    read as added to the old one: a carried gradient). Summarised leaves are not compared
    (summarising again costs as much as recording)."""
    rec = recording.tables
    k = len(rec._raw)  # the index the pass's first step gets
    last_of = recording._leaf_last
    for ref, vid in recording._leaf_list:
        t = ref()
        if t is None:
            continue
        last, has_grad = last_of[vid]
        if has_grad and t.grad is None:  # zero_grad() between the forward and backward()
            rec.add_event(k, k, vid, _EMPTIED, None, None)
            has_grad = False
            last_of[vid] = (last, has_grad)
        if type(last) is not np.ndarray and type(last) is not float:
            continue  # summarised
        now = t.detach()
        if now.device.type != "cpu":
            now = now.cpu()
        if now.dtype in HALF:
            now = now.float()
        if now.is_conj():
            now = now.resolve_conj()
        # bit for bit, on the tensor's own memory (a CPU leaf is not copied)
        if _same_raw(now.numpy(), last):
            continue
        raw = recording._raw(t)
        rec.add_event(k, k, vid, _VALUE, raw, None)
        last_of[vid] = (raw, has_grad)
