"""A tensor's numbers as the trace keeps them: its numpy dtype, its statistics computed by
torch, and whether two kept values are the same."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import torch

from autodiff.trace._recorder import _same_raw
from autodiff.trace._snapshot import Snapshot, _dtype_name, capture, summarize

__all__ = [
    "HALF",
    "SUMMED",
    "dtype_of",
    "numpy_dtype",
    "same",
    "statistics",
    "statistics_of",
    "summary",
]

HALF = (torch.float16, torch.bfloat16)
_FLOATS = (torch.float32, torch.float64)


def numpy_dtype(t: Any) -> np.dtype:
    """The numpy dtype of tensor ``t``'s values as the trace keeps them (see dtype_of)."""
    return dtype_of(t.dtype)


_DTYPES: dict[Any, Any] = {}


def dtype_of(torch_dtype: Any) -> np.dtype:
    """The numpy dtype of a torch dtype; float32 for one numpy lacks (bfloat16): the dtype
    of the copies the trace keeps (the saved formats hold numpy dtypes only)."""
    found = _DTYPES.get(torch_dtype)
    if found is None:
        try:
            found = torch.empty((), dtype=torch_dtype).numpy().dtype
        except TypeError:
            found = np.dtype(np.float32)
        _DTYPES[torch_dtype] = found
    return found


SUMMED = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def summary(t: Any) -> Snapshot | None:
    """The Snapshot (statistics only) of a large floating tensor, computed where it is (a
    dense CPU tensor read as one flat array, see _dense_stats; else by torch's kernels); None
    when it holds NaN or Inf (or values whose squares overflow), which ``capture`` summarises
    with the care they need."""
    if t.device.type == "cpu" and t.dtype in _FLOATS:
        snap = _dense_stats(t, t.numel())
        if snap is not None:
            return snap
    dtype = _dtype_name(dtype_of(t.dtype))
    if t.dtype in HALF:
        t = t.float()
    # amin and amax, not aminmax: on a transposed tensor (a weight's .t()) it is 20x slower
    stats = torch.stack([t.amin(), t.amax(), t.sum(), torch.linalg.vector_norm(t)])
    lo, hi, total, norm = stats.tolist()
    if not all(map(math.isfinite, (lo, hi, total, norm))):
        return None
    return Snapshot(
        tuple(t.shape),
        dtype,
        None,
        lo,
        hi,
        total / t.numel(),
        norm,
        0,
        0,
    )


# up to this many elements numpy's summary (in float64) costs least; beyond, one pass each
# for min, max, sum and the sum of squares over the tensor's own memory (see _dense_stats)
NUMPY_UP_TO = 1024


def statistics(t: Any) -> Snapshot:
    """The Snapshot (statistics only) of tensor ``t``, computed the cheapest way its layout
    allows, with the care NaN and Inf need."""
    if t.requires_grad:
        t = t.detach()
    cpu = t.device.type == "cpu"
    if cpu and t.dtype in _FLOATS:
        n = t.numel()
        if n <= NUMPY_UP_TO:
            return summarize(t.numpy(), keep_array=False)
    if t.numel() and t.dtype in SUMMED:
        snap = summary(t)
        if snap is not None:
            return snap
    if not cpu:
        t = t.cpu()
    if t.dtype in HALF:
        t = t.float()
    return capture(t.resolve_conj().numpy(), 0)


def statistics_of(ts: list) -> list[Snapshot]:
    """:func:`statistics` of each tensor in ``ts``, with as few calls as their layouts allow:
    the small CPU float ones all at once (one numpy reduction over their elements laid end to
    end, per statistic); the larger dense ones, over their flat views, ``aminmax`` and ``sum``
    (read back together, in one ``tolist``) and numpy's ``dot`` for the sum of squares (BLAS:
    about half torch's ``dot`` on these sizes). It runs for every gradient of a training
    step: the common case (a contiguous float32 gradient on the CPU) is tested first, with
    attributes that cost torch least (``is_cpu``, not ``device.type``, which makes a device
    object)."""
    snaps: list[Any] = [None] * len(ts)
    small = []
    dense: list[tuple[int, Any, float]] = []  # (index, the tensor, its sum of squares)
    parts: list[Any] = []  # 0-d tensors: min, max and sum of each dense one
    aminmax, dot = torch.aminmax, np.dot
    with np.errstate(over="ignore", invalid="ignore"):  # (a sum of squares may overflow)
        for i, t in enumerate(ts):
            if t.requires_grad:
                t = t.detach()
            if t.is_cpu and t.dtype in _FLOATS:
                n = t.numel()
                if 0 < n <= NUMPY_UP_TO:
                    small.append((i, t.numpy()))
                    continue
                if not n:
                    flat = None
                elif t.is_contiguous():
                    flat = t.view(-1)
                else:
                    flat = _flat(t)
                if flat is not None:
                    lo, hi = aminmax(flat)
                    parts += (lo, hi, flat.sum())
                    a = flat.numpy()
                    dense.append((i, t, float(dot(a, a))))
                    continue
            snaps[i] = statistics(t)
    if dense:
        if len({p.dtype for p in parts}) > 1:
            parts = [p.double() for p in parts]
        stats = torch.stack(parts).tolist()
        finite = math.isfinite
        for j, (i, t, squares) in enumerate(dense):
            lo, hi, total = stats[3 * j : 3 * j + 3]
            if finite(lo) and finite(hi) and finite(total) and finite(squares):
                snaps[i] = Snapshot(
                    tuple(t.shape), _name_of(t.dtype), None, lo, hi, total / t.numel(),
                    math.sqrt(squares), 0, 0,
                )  # fmt: skip
            else:  # NaN, Inf or squares that overflow: summarised with the care they need
                snaps[i] = capture(t.resolve_conj().numpy(), 0)
    if small:
        _summarise_small(small, snaps)
    return snaps


_NAMES: dict[Any, str] = {}


def _name_of(torch_dtype: Any) -> str:
    """The name of the numpy dtype of a torch dtype (see dtype_of), remembered."""
    name = _NAMES.get(torch_dtype)
    if name is None:
        name = _NAMES[torch_dtype] = _dtype_name(dtype_of(torch_dtype))
    return name


def _summarise_small(small: list[tuple[int, np.ndarray]], snaps: list) -> None:
    """The Snapshots of small arrays, ``(index in snaps, array)``, into ``snaps``: one numpy
    reduction per statistic over their elements laid end to end, in float64 (a dozen numpy
    calls in all, whatever their number)."""
    arrays = [a for _, a in small]
    sizes = [a.size for a in arrays]
    flat = np.concatenate([a.ravel() for a in arrays], dtype=np.float64)
    starts = list(itertools.accumulate(sizes[:-1], initial=0))
    columns = (
        np.minimum.reduceat(flat, starts).tolist(),
        np.maximum.reduceat(flat, starts).tolist(),
        np.add.reduceat(flat, starts).tolist(),
        np.add.reduceat(flat * flat, starts).tolist(),
    )
    isfinite = math.isfinite
    for (i, a), lo, hi, total, squares, n in zip(small, *columns, sizes, strict=True):
        if isfinite(lo) and isfinite(hi) and isfinite(total) and isfinite(squares):
            snaps[i] = Snapshot(
                tuple(a.shape), _dtype_name(a.dtype), None, lo, hi, total / n,
                math.sqrt(squares), 0, 0,
            )  # fmt: skip
        else:  # NaN, Inf or squares that overflow: summarised with the care they need
            snaps[i] = summarize(a, keep_array=False)


def _flat(t: Any) -> Any:
    """The elements of ``t`` as one flat view when they fill one block of memory (a
    contiguous tensor, or a transpose or permutation of one; statistics do not depend on the
    order), else None."""
    if not t.is_contiguous():
        # a 2-D one (a weight's gradient, transposed: the common case) needs no sort
        t = t.t() if t.ndim == 2 else t.permute(sorted(range(t.ndim), key=lambda d: -t.stride(d)))
        if not t.is_contiguous():
            return None
    return t.reshape(-1)


def _dense_stats(t: Any, n: int) -> Snapshot | None:
    """The statistics of a CPU float tensor whose elements fill one block of memory, from
    three torch reductions over its flat view (``aminmax``, ``sum``, ``dot``: a pass each,
    read back in one ``tolist``). None for other layouts, or for NaN, Inf or overflow."""
    flat = _flat(t) if n else None
    if flat is None:
        return None
    lo, hi = torch.aminmax(flat)
    lo, hi, total, squares = torch.stack([lo, hi, flat.sum(), torch.dot(flat, flat)]).tolist()
    if not (
        math.isfinite(lo) and math.isfinite(hi) and math.isfinite(total) and math.isfinite(squares)
    ):
        return None
    return Snapshot(
        tuple(t.shape), _dtype_name(dtype_of(t.dtype)), None, lo, hi, total / n,
        math.sqrt(squares), 0, 0,
    )  # fmt: skip


def same(raw: Any, last: Any) -> bool:
    """Whether two raw values (``capture``'s) hold the same numbers, bit for bit."""
    if type(raw) is np.ndarray and type(last) is np.ndarray:
        return _same_raw(raw, last)
    return type(raw) is type(last) and raw == last
