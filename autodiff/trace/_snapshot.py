"""Snapshots of arrays for the recorder: a copy of small arrays, a summary of large ones.

While recording, :func:`capture` stores the cheapest faithful form of an array (a Python float
for a 0-d float64, a read-only copy up to ``max_size`` elements, a summary :class:`Snapshot`
beyond); :func:`to_snapshot` turns that raw form into a :class:`Snapshot` only when someone
looks at it, so statistics of small arrays cost nothing at recording time.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from autodiff.trace._checks import (
    _ARRAY_DTYPES,
    _MAX_NDIM,
    _array,
    _dict,
    _fail,
    _float,
    _int,
    _list,
    _str,
)

__all__ = ["Snapshot", "capture", "raw_nonfinite", "to_snapshot"]

_F64 = np.dtype(np.float64)
_FLOAT64 = np.float64
_NAN = float("nan")


def _stat(index: int, doc: str) -> property:
    def get(self: Snapshot) -> Any:
        stats = self._stats
        return (stats if stats is not None else self._compute())[index]

    return property(get, doc=doc)


class Snapshot:
    """A value or gradient as the recorder saw it (read-only).

    ``array`` is a read-only copy when the array had at most the trace's ``max_array_size``
    elements, else None. ``min``, ``max``, ``mean`` and ``norm`` are taken over the finite
    elements (NaN when there are none); ``nan`` and ``inf`` count the non-finite ones. For a
    kept copy they are computed when first read: a long run has hundreds of thousands of
    snapshots, and a viewer reads the statistics of a few.
    """

    __slots__ = ("_finite", "_stats", "array", "dtype", "shape")

    shape: tuple[int, ...]
    dtype: str
    array: np.ndarray | None

    def __init__(
        self,
        shape: tuple[int, ...],
        dtype: str,
        array: np.ndarray | None,
        min: float,
        max: float,
        mean: float,
        norm: float,
        nan: int,
        inf: int,
    ) -> None:
        init = object.__setattr__
        init(self, "shape", shape)
        init(self, "dtype", dtype)
        init(self, "array", array)
        init(self, "_stats", (min, max, mean, norm, nan, inf))
        init(self, "_finite", nan == 0 and inf == 0)

    @classmethod
    def _of_copy(cls, array: np.ndarray) -> Snapshot:
        """The Snapshot of the trace's own read-only copy, statistics left for later."""
        self = object.__new__(cls)
        init = object.__setattr__
        init(self, "shape", tuple(array.shape))
        init(self, "dtype", _dtype_name(array.dtype))
        init(self, "array", array)
        init(self, "_stats", None)
        init(self, "_finite", None)
        return self

    def _compute(self) -> tuple:
        stats = summarize(self.array, keep_array=False)._stats  # type: ignore[arg-type]
        object.__setattr__(self, "_stats", stats)
        object.__setattr__(self, "_finite", stats[4] == 0 and stats[5] == 0)
        return stats

    min = _stat(0, "smallest finite element (NaN when none)")
    max = _stat(1, "largest finite element (NaN when none)")
    mean = _stat(2, "mean of the finite elements (NaN when none)")
    norm = _stat(3, "Euclidean norm of the finite elements (NaN when none)")
    nan = _stat(4, "number of NaN elements")
    inf = _stat(5, "number of infinite elements")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Snapshot is read-only: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Snapshot is read-only: cannot delete {name!r}")

    def __reduce__(self) -> tuple:
        return (Snapshot, (self.shape, self.dtype, self.array, *(self._stats or self._compute())))

    @property
    def finite(self) -> bool:
        """No NaN and no Inf (cheaper than the statistics when they were not computed)."""
        finite = self._finite
        if finite is None:
            a = self.array
            finite = a.dtype.kind not in "fc" or bool(np.isfinite(a).all())  # type: ignore[union-attr]
            object.__setattr__(self, "_finite", finite)
        return finite

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @classmethod
    def of(cls, array: Any, max_array_size: int = 4096) -> Snapshot:
        """Snapshot ``array`` now (copied when it has at most ``max_array_size`` elements)."""
        return to_snapshot(capture(np.asarray(array), max_array_size))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Snapshot):
            return NotImplemented
        if (self.shape, self.dtype, self.nan, self.inf) != (
            other.shape,
            other.dtype,
            other.nan,
            other.inf,
        ):
            return False
        for a, b in (
            (self.min, other.min),
            (self.max, other.max),
            (self.mean, other.mean),
            (self.norm, other.norm),
        ):
            if a != b and not (a != a and b != b):  # NaN equals NaN here
                return False
        if (self.array is None) != (other.array is None):
            return False
        if self.array is None:
            return True
        return _arrays_equal(self.array, other.array)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.nan, self.inf))

    def __repr__(self) -> str:
        if self.array is not None and self.array.size <= 6:
            body = np.array2string(self.array, separator=", ")
        else:
            body = f"min={self.min:.4g} max={self.max:.4g} mean={self.mean:.4g}"
        flags = "" if self.finite else f" nan={self.nan} inf={self.inf}"
        return f"Snapshot({self.shape}, {self.dtype}, {body}{flags})"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: non-finite floats become the strings 'nan', 'inf', '-inf'."""
        array = None
        if self.array is not None and self.array.dtype.name in _ARRAY_DTYPES:
            array = encode_array(self.array)
        return {
            "shape": list(self.shape),
            "dtype": self.dtype,
            "array": array,
            "min": encode_float(self.min),
            "max": encode_float(self.max),
            "mean": encode_float(self.mean),
            "norm": encode_float(self.norm),
            "nan": self.nan,
            "inf": self.inf,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Snapshot:
        """Inverse of :meth:`to_dict`; raises ``TraceFormatError`` naming the bad field."""
        return snapshot_from_dict(d, "snapshot")


def _arrays_equal(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def encode_float(v: float) -> float | str:
    if v != v:
        return "nan"
    if v == math.inf:
        return "inf"
    if v == -math.inf:
        return "-inf"
    return v


def encode_array(a: np.ndarray) -> Any:
    """The elements as one flat list in row-major order (a scalar for a 0-d array), the shape
    being stored beside them: nested lists, one per row, would make a (4096, 1) array as
    dense in brackets as the hostile files the loader refuses. In float arrays, non-finite
    elements become 'nan', 'inf' or '-inf'."""
    flat = a.ravel().tolist()
    if a.dtype.kind == "f" and not bool(np.isfinite(a).all()):
        flat = [encode_float(v) for v in flat]
    return flat[0] if a.ndim == 0 else flat


# -----------------------------------------------------------------------------
# Raw forms, kept while recording: None (no data), float (0-d float64), a numpy float64
# scalar (immutable, kept as the engine made it), a read-only ndarray copy, or a Snapshot
# (already summarised because the array was large).
# -----------------------------------------------------------------------------
def capture(a: Any, max_size: int) -> Any:
    """The raw form of ``a`` (an ndarray or None) to keep in a trace.

    A copy is made writable-free only when a Snapshot shows it (:func:`to_snapshot`): nothing
    but the trace holds it before that."""
    if type(a) is np.ndarray:
        if a.ndim == 0 and a.dtype is _F64:
            return a.item()
        if a.size <= max_size:
            return a.copy()
        return summarize(a, keep_array=False)
    if a is None:
        return None
    return capture(np.asarray(a), max_size)


def to_snapshot(raw: Any) -> Snapshot | None:
    """The Snapshot of a raw form (None stays None)."""
    if type(raw) is _FLOAT64:
        raw = float(raw)
    if type(raw) is float:
        if raw - raw == 0.0:  # finite
            return Snapshot((), "float64", _scalar_array(raw), raw, raw, raw, abs(raw), 0, 0)
        nan = 1 if raw != raw else 0
        return Snapshot((), "float64", _scalar_array(raw), _NAN, _NAN, _NAN, _NAN, nan, 1 - nan)
    if raw is None or type(raw) is Snapshot:
        return raw
    raw.flags.writeable = False  # the trace's own copy, shown from now on
    return Snapshot._of_copy(raw)


def _scalar_array(v: float) -> np.ndarray:
    a = np.array(v)
    a.flags.writeable = False
    return a


def raw_nonfinite(raw: Any) -> bool:
    """Whether a raw form holds NaN or Inf (cheap: no Snapshot is built)."""
    t = type(raw)
    if t is float:
        return raw - raw != 0.0
    if t is _FLOAT64:
        raw = float(raw)
        return raw - raw != 0.0
    if raw is None:
        return False
    if t is Snapshot:
        return not raw.finite
    if raw.dtype.kind not in "fc":
        return False
    return not bool(np.isfinite(raw).all())  # isfinite never warns


_DTYPE_NAMES: dict[np.dtype, str] = {}


def _dtype_name(dtype: np.dtype) -> str:
    """``str(dtype)``, remembered (numpy computes the name in Python each time)."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype)
    return name


# Beyond this, a sum of squares could overflow (and warn): those arrays take the careful path.
_SAFE_SQUARES = 1e300


def summarize(a: np.ndarray, keep_array: bool) -> Snapshot:
    """Shape, dtype and statistics of ``a``; ``array`` is ``a`` itself when ``keep_array``."""
    kind = a.dtype.kind
    dtype = _dtype_name(a.dtype)
    shape = tuple(a.shape)
    array = a if keep_array else None
    n = a.size
    if n and kind in "biuf":
        # The common case, with the fewest passes: min and max first (NaN and Inf show there),
        # then the sum and the sum of squares when they cannot overflow.
        vals = a.astype(np.float64, copy=False)
        lo = float(np.minimum.reduce(vals, axis=None))
        hi = float(np.maximum.reduce(vals, axis=None))
        if lo - lo == 0.0 and hi - hi == 0.0:
            m = max(-lo, hi)
            if m * m * n < _SAFE_SQUARES:
                mean = float(np.add.reduce(vals, axis=None)) / n
                flat = vals.ravel()
                norm = math.sqrt(float(np.dot(flat, flat)))
                return Snapshot(shape, dtype, array, lo, hi, mean, norm, 0, 0)
    return _summarize_carefully(a, shape, dtype, array)


def _summarize_carefully(
    a: np.ndarray, shape: tuple[int, ...], dtype: str, array: np.ndarray | None
) -> Snapshot:
    """:func:`summarize` for non-finite, complex, empty or huge-valued arrays."""
    kind = a.dtype.kind
    nan = inf = 0
    lo = hi = mean = norm = _NAN
    if a.size and kind in "biufc":
        with np.errstate(all="ignore"):
            vals = np.abs(a) if kind == "c" else a
            if kind in "fc":
                nan = int(np.count_nonzero(np.isnan(a)))
                inf = int(np.count_nonzero(np.isinf(a)))
                if nan or inf:
                    vals = vals[np.isfinite(vals)]
            if vals.size:
                vals = vals.astype(np.float64, copy=False)
                lo = float(vals.min())
                hi = float(vals.max())
                mean = float(vals.mean())
                norm = float(np.sqrt(np.dot(vals.ravel(), vals.ravel())))
    return Snapshot(shape, dtype, array, lo, hi, mean, norm, nan, inf)


_SNAPSHOT_KEYS = ("shape", "dtype", "array", "min", "max", "mean", "norm", "nan", "inf")


def snapshot_from_dict(d: Any, path: str, optional: bool = False) -> Snapshot | None:
    if d is None and optional:
        return None
    _dict(d, path, _SNAPSHOT_KEYS)
    shape_list = _list(d["shape"], f"{path}.shape")
    if len(shape_list) > _MAX_NDIM:
        raise _fail(
            f"{path}.shape", f"{len(shape_list)} dimensions, above the limit of {_MAX_NDIM}"
        )
    shape = tuple(_int(n, f"{path}.shape[{i}]", lo=0) for i, n in enumerate(shape_list))
    dtype = _str(d["dtype"], f"{path}.dtype", max_len=64)
    array = None
    if d["array"] is not None:
        array = _array(d["array"], shape, dtype, f"{path}.array")
    stats = [_float(d[k], f"{path}.{k}") for k in ("min", "max", "mean", "norm")]
    nan = _int(d["nan"], f"{path}.nan", lo=0)
    inf = _int(d["inf"], f"{path}.inf", lo=0)
    return Snapshot(shape, dtype, array, *stats, nan, inf)
