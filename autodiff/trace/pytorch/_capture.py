"""The values a :class:`~autodiff.trace.pytorch._recording.TorchRecording` keeps of tensors,
taken when the recorder sees them: a copy up to ``max_array_size`` elements (``capture``),
beyond it the statistics, computed by torch.

A few recent statistics are shared by the tensors that hold the same numbers now (a weight and
its ``.t()``, a gradient handed from one node to the next, and on to ``.grad``).

(Computing a step's statistics together, ``statistics_of``, saved about 9 us a tensor, but its
sums of squares are numpy's dot, whose rounding differs from ``summary``'s torch dot: the
values recording keeps ``summary``'s numbers.)
"""

from __future__ import annotations

from typing import Any

from autodiff.trace._snapshot import Snapshot, capture
from autodiff.trace.pytorch._values import HALF, SUMMED, summary

__all__ = ["SUMMARIES_KEPT", "ValueCapture"]

SUMMARIES_KEPT = 8  # recent tensors whose statistics are shared (ValueCapture._summaries)


class ValueCapture:
    """The raw values (``capture``'s forms) of tensors, as one recording keeps them."""

    __slots__ = ("_summaries", "max_array_size")

    def __init__(self, max_array_size: int) -> None:
        self.max_array_size = max_array_size
        # (storage, offset, layout, dtype, version) -> (Snapshot, the tensor): the tensor is
        # held so that no new tensor takes its memory while the entry is kept
        self._summaries: dict[tuple, tuple[Snapshot, Any]] = {}

    def forget(self) -> None:
        """Drop the shared statistics (and their tensors): an op may change tensors in place
        (``.data.add_()`` changes a tensor, not its version), or the recording ends."""
        self._summaries.clear()

    def one(self, t: Any) -> Any:
        """The raw value the trace keeps of tensor ``t``: a copy up to ``max_array_size``
        elements; beyond, the statistics, computed by torch where it is on (numpy's pass over
        a large array costs many times torch's)."""
        if t.requires_grad:
            t = t.detach()
        if t.numel() > self.max_array_size and t.dtype in SUMMED:
            snap = self._summary(t)
            if snap is not None:
                return snap
        return _copy(t, self.max_array_size)

    def many(self, ts: Any) -> list:
        """:meth:`one` of each tensor of ``ts`` (None stays None)."""
        one = self.one
        return [None if t is None else one(t) for t in ts]

    def _summary(self, t: Any) -> Snapshot | None:
        """``summary(t)``, shared by the tensors that hold the same numbers now; None where
        ``summary`` gives none (NaN or Inf: ``capture`` summarises them with the care they
        need)."""
        key = _key(t)
        hit = self._summaries.get(key)
        if hit is not None:
            return _shaped(hit[0], t)
        snap = summary(t)
        if snap is not None:
            self._keep(key, snap, t)
        return snap

    def _keep(self, key: tuple, snap: Snapshot, t: Any) -> None:
        cache = self._summaries
        if len(cache) >= SUMMARIES_KEPT:
            del cache[next(iter(cache))]
        cache[key] = (snap, t)


def _key(t: Any) -> tuple:
    """What tells that two tensors hold the same numbers now: the same memory, the same layout
    up to the order of the dimensions (a transpose's too), dtype and version."""
    return (
        t.untyped_storage().data_ptr(),
        t.storage_offset(),
        tuple(sorted(zip(t.shape, t.stride(), strict=True))),
        t.dtype,
        t._version,
    )


def _shaped(snap: Snapshot, t: Any) -> Snapshot:
    """``snap`` with ``t``'s shape (a permutation of the tensor it was computed on holds the
    same numbers in its own shape)."""
    shape = tuple(t.shape)
    if snap.shape == shape:
        return snap
    return Snapshot(shape, snap.dtype, None, *snap._stats)


def _copy(t: Any, max_size: int) -> Any:
    """``capture`` of a tensor's numbers (on the CPU; a half precision one as float32)."""
    if not t.is_cpu:
        t = t.cpu()
    if t.dtype in HALF:
        t = t.float()
    if t.is_conj():
        t = t.resolve_conj()
    return capture(t.numpy(), max_size)
