"""Scales that keep a plot readable: a robust y range per curve, and log-axis ticks.

* :func:`robust_range`: the y range to show for one curve, so that a curve whose tail runs off
  by orders of magnitude (``exp(x**2)`` near the end of the interval) does not flatten the
  part that matters into a line. Outliers are judged by Tukey's fences on the quartiles; a
  side is clipped only when its outliers would take more of the plot than the rest of the
  curve. What lies outside is reported (:meth:`ViewRange.outside`) so the view can mark it.
* :func:`log_ticks` and :func:`log_tick_labels`: where to put (and how to write) the ticks of
  a log axis so that labels never overlap: decades, then 1-3 or 1-2-5 within a decade only
  when there are enough pixels, plain steps for an axis shorter than a decade.

Pure numpy: the Qt side calls these with the axis length in pixels and the label size.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["FENCE", "ViewRange", "log_tick_labels", "log_ticks", "nice_step", "robust_range"]

FENCE = 2.0  # Tukey's fence: beyond quartile +- FENCE * IQR a value is an outlier
MARGIN = 0.06  # of the range, above and below
_MANTISSAS = ((1,), (1, 3), (1, 2, 5), (1, 2, 3, 4, 5, 6, 7, 8, 9))  # sparse to dense


@dataclass(frozen=True)
class ViewRange:
    """The y range shown for one curve (``low``..``high``) and the curve's finite extent
    (``data_low``..``data_high``, NaN when it has no finite value)."""

    low: float
    high: float
    data_low: float
    data_high: float

    @property
    def clipped_low(self) -> bool:
        return self.data_low < self.low

    @property
    def clipped_high(self) -> bool:
        return self.data_high > self.high

    @property
    def clipped(self) -> bool:
        return self.clipped_low or self.clipped_high

    def outside(self, values: Any) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
        """Masks of the finite ``values`` below and above the range."""
        v = np.asarray(values, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            return np.isfinite(v) & (v < self.low), np.isfinite(v) & (v > self.high)


def robust_range(
    values: Any, include: Iterable[float] = (), fence: float = FENCE, margin: float = MARGIN
) -> ViewRange:
    """The y range to show ``values`` in: their whole finite extent, unless a tail of outliers
    (beyond the quartiles +- ``fence`` * IQR) would take more of the height than the rest of
    the curve; then that side stops at the fence. The ``include`` values (the current point)
    are always inside. ``margin`` (a fraction of the range) is added on both sides."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    finite = v[np.isfinite(v)]
    extra = [float(x) for x in include if math.isfinite(float(x))]
    if finite.size == 0 and not extra:
        return ViewRange(-1.0, 1.0, math.nan, math.nan)
    data_low = float(finite.min()) if finite.size else math.nan
    data_high = float(finite.max()) if finite.size else math.nan
    low, high = (data_low, data_high) if finite.size else (extra[0], extra[0])
    if finite.size >= 4:
        q1, q3 = (float(q) for q in np.percentile(finite, [25.0, 75.0]))
        iqr = q3 - q1
        inner_low = max(data_low, q1 - fence * iqr)
        inner_high = min(data_high, q3 + fence * iqr)
        inner = inner_high - inner_low
        if inner > 0:
            # clip a side only where its outliers would squeeze the rest into half the height
            if data_high - inner_high > inner:
                high = inner_high
            if inner_low - data_low > inner:
                low = inner_low
    for x in extra:
        low, high = min(low, x), max(high, x)
    span = high - low
    pad = margin * span if span > 0 else 0.5 * max(abs(high), 1.0)  # flat: centre it
    return ViewRange(low - pad, high + pad, data_low, data_high)


# =============================================================================
# Log axes
# =============================================================================
def _min_gap(mantissas: Sequence[int]) -> float:
    """The smallest distance, in decades, between two ticks of the pattern."""
    marks = [math.log10(m) for m in mantissas] + [1.0]
    return min(b - a for a, b in itertools.pairwise(marks))


def _pattern_ticks(low: float, high: float, mantissas: Sequence[int]) -> list[float]:
    eps = 1e-9 * max(1.0, abs(low), abs(high))
    out = []
    for decade in range(math.floor(low), math.ceil(high) + 1):
        for m in mantissas:
            v = decade + math.log10(m)
            if low - eps <= v <= high + eps:
                out.append(v)
    return out


def nice_step(x: float) -> float:
    """The smallest of 1, 2, 5 times a power of ten that is at least ``x`` (> 0): a tick
    step."""
    e = math.floor(math.log10(x))
    for k in (e, e + 1):
        for m in (1, 2, 5):
            if m * 10.0**k >= x * (1 - 1e-12):
                return m * 10.0**k
    return 10.0 ** (e + 2)


def _linear_ticks(low: float, high: float, px_per_decade: float, gap_px: float) -> list[float]:
    """Ticks at multiples of a round step, for an axis shorter than a decade; the step makes
    the tightest pair (at the top, where a log axis squeezes) ``gap_px`` apart."""
    a, b = 10.0**low, 10.0**high
    step = nice_step((b - a) / 64)
    for _ in range(40):
        if b - step <= 0 or (math.log10(b) - math.log10(b - step)) * px_per_decade >= gap_px:
            break
        step = nice_step(step * 1.5)
    first = math.ceil(a / step - 1e-9)
    last = math.floor(b / step + 1e-9)
    values = [k * step for k in range(first, last + 1) if k * step > 0]
    return [math.log10(v) for v in values]


def log_ticks(
    low: float, high: float, length_px: float, label_px: float = 24.0
) -> tuple[list[float], list[float]]:
    """Ticks of a log axis from ``10**low`` to ``10**high`` drawn ``length_px`` long:
    ``(labelled, minor)``, both as log10 values. Labelled ticks are at least ``label_px``
    apart (the height of a label on a vertical axis, its width on a horizontal one); minor
    ticks (unlabelled) at least 4 px apart."""
    low, high = sorted((float(low), float(high)))
    span = high - low
    if not (math.isfinite(span) and span > 0 and length_px > 0):
        return [], []
    ppd = length_px / span  # pixels per decade
    labelled: list[float] | None = None
    for mantissas in reversed(_MANTISSAS):
        if _min_gap(mantissas) * ppd >= label_px:
            labelled = _pattern_ticks(low, high, mantissas)
            break
    if labelled is None:  # even decades are too close: every k-th one
        k = max(1, int(nice_step(label_px / ppd)))
        labelled = [float(d) for d in range(math.ceil(low / k) * k, math.floor(high) + 1, k)]
    if len(labelled) < 2 and span < 1.0:
        labelled = _linear_ticks(low, high, ppd, label_px)
    minor: list[float] = []
    if span <= 1000:
        for mantissas in reversed(_MANTISSAS):
            if _min_gap(mantissas) * ppd >= 4.0:
                minor = _pattern_ticks(low, high, mantissas)
                break
    taken = np.asarray(labelled)
    minor = [v for v in minor if not np.any(np.isclose(taken, v, rtol=0, atol=1e-9))]
    return labelled, minor


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _format(x: float, digits: int) -> str:
    e = math.floor(math.log10(abs(x)))
    if -3 <= e <= 4:
        return np.format_float_positional(
            x, precision=digits, unique=True, fractional=False, trim="-"
        )
    mantissa = np.format_float_positional(
        x / 10.0**e, precision=digits, unique=True, fractional=False, trim="-"
    )
    if mantissa == "10":
        mantissa, e = "1", e + 1
    power = f"10{str(e).translate(_SUPERSCRIPT)}"
    return power if mantissa == "1" else f"{mantissa}·{power}"


def log_tick_labels(values: Sequence[float]) -> list[str]:
    """Labels for log-axis ticks at ``values`` (log10): ``0.03``, ``0.3``, ``2·10⁻⁵``, with the
    fewest significant digits that keep neighbours apart and each label true to 0.1 %."""
    xs = [10.0 ** float(v) for v in values]
    for digits in range(1, 7):
        labels = [_format(x, digits) for x in xs]
        if len(set(labels)) == len(labels) and all(
            abs(_parse(s) - x) <= 1e-3 * x for s, x in zip(labels, xs, strict=True)
        ):
            return labels
    return [_format(x, 7) for x in xs]


def _parse(label: str) -> float:
    if "10" in label and any(c in label for c in "⁰¹²³⁴⁵⁶⁷⁸⁹"):
        mantissa, _, power = label.rpartition("10")
        exponent = int(power.translate(str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")))
        return float(mantissa.rstrip("·") or 1.0) * 10.0**exponent
    return float(label)
