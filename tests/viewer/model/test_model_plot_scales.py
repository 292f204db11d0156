"""Readable plots without Qt: a robust y range per curve (f, f', f'' differ by orders of
magnitude), and log-axis ticks whose labels never overlap."""

import math

import numpy as np
import pytest

from viewer.model.expression.program import parse
from viewer.model.panels.plot_scales import ViewRange, log_tick_labels, log_ticks, robust_range
from viewer.model.panels.plots import function_plot

SEED = "x = 0.5\ny = square(exp(square(x)))"  # the first launch's program


def _readable(values, view):
    """The bulk of the curve (its interquartile range) takes a fifth of the height or more,
    and the view is no wider than the curve's own 10-90 % spread needs."""
    finite = np.asarray(values)[np.isfinite(values)]
    q1, q3 = np.percentile(finite, [25, 75])
    p10, p90 = np.percentile(finite, [10, 90])
    span = view.high - view.low
    return (q3 - q1) / span >= 0.2 and span <= 2 * (p90 - p10)


def test_each_curve_of_the_first_launch_gets_its_own_readable_range():
    data = function_plot(parse(SEED))
    curves = (data.f, data.df, data.d2f)
    assert np.nanmax(data.d2f) > 2e7  # what flattened the other two on one axis
    views = data.view_ranges()
    for values, view, current in zip(curves, views, (data.f0, data.df0, data.d2f0), strict=True):
        assert isinstance(view, ViewRange)
        assert _readable(values, view)
        assert view.low < current < view.high  # the current point is always in sight
        assert view.clipped_high and not view.clipped_low  # the exp tail runs off the top
        below, above = view.outside(values)
        assert not below.any()
        assert above.sum() == int(np.sum(np.asarray(values) > view.high)) > 0
        assert view.data_high == pytest.approx(np.nanmax(values))
    # the three ranges differ: one shared axis cannot show them all
    assert views[2].high > 5 * views[0].high
    shared = ViewRange(
        min(v.data_low for v in views), max(v.data_high for v in views), math.nan, math.nan
    )
    assert not _readable(data.f, shared) and not _readable(data.df, shared)


def test_smooth_curves_are_not_clipped():
    data = function_plot(parse("x = 1.0\ny = tanh(x) * x ** 2"))
    for values, view in zip((data.f, data.df, data.d2f), data.view_ranges(), strict=True):
        assert not view.clipped
        assert view.low < np.nanmin(values) and np.nanmax(values) < view.high
        assert _readable(values, view)
    x = np.linspace(-3, 3, 101)
    assert not robust_range(np.sin(x)).clipped


def test_robust_range_edges():
    flat = robust_range(np.zeros(7))
    assert flat.low < 0 < flat.high and not flat.clipped
    empty = robust_range([math.nan, math.inf], include=[2.0])
    assert empty.low < 2.0 < empty.high and not empty.clipped
    assert robust_range([]) == ViewRange(-1.0, 1.0, math.nan, math.nan)
    spike = np.r_[np.linspace(0, 1, 50), 1e9]
    view = robust_range(spike, include=[0.5])
    assert view.clipped_high and view.high < 2 and view.data_high == 1e9
    low_spike = robust_range(np.r_[-1e9, np.linspace(0, 1, 50)])
    assert low_spike.clipped_low and low_spike.low > -2


@pytest.mark.parametrize(
    ("low", "high", "pixels"),
    [
        (math.log10(0.03), math.log10(1.1), 90),  # spiral.py's loss: 1.5 decades, short axis
        (math.log10(0.03), math.log10(1.1), 400),
        (-3, 1, 90),
        (-2.2, -0.9, 120),
        (-0.92, -0.74, 90),  # less than a decade
        (-300, 300, 100),
        (0, 0.0004, 200),
    ],
)
def test_log_ticks_keep_labels_a_label_apart(low, high, pixels):
    label_px = 20.0
    labelled, minor = log_ticks(low, high, pixels, label_px)
    assert len(labelled) >= 1
    px = np.sort((np.asarray(labelled) - low) / (high - low) * pixels)
    assert np.all(np.diff(px) >= label_px - 1e-6)
    assert all(low - 1e-9 <= v <= high + 1e-9 for v in (*labelled, *minor))
    assert not set(np.round(labelled, 9)) & set(np.round(minor, 9))
    labels = log_tick_labels(labelled)
    assert len(set(labels)) == len(labels)


def test_log_ticks_of_a_short_axis_are_decades_or_1_3():
    labelled, minor = log_ticks(math.log10(0.03), math.log10(1.1), 90, 20)
    assert log_tick_labels(labelled) == ["0.03", "0.1", "0.3", "1"]
    assert minor  # the other mantissas, unlabelled
    wide, _ = log_ticks(math.log10(0.03), math.log10(1.1), 400, 20)
    assert log_tick_labels(wide) == ["0.05", "0.1", "0.2", "0.5", "1"]  # 1-2-5 with room
    assert log_tick_labels(log_ticks(-0.92, -0.74, 90, 20)[0]) == ["0.14", "0.16", "0.18"]
    assert log_ticks(1, 1, 100) == ([], []) and log_ticks(0, 1, 0) == ([], [])


def test_log_tick_labels():
    values = [math.log10(v) for v in (0.03, 0.1, 1, 1e4, 2e-5, 1e-5, 1e6, 3e7)]
    expected = ["0.03", "0.1", "1", "10000", "2·10⁻⁵", "10⁻⁵", "10⁶", "3·10⁷"]
    assert log_tick_labels(values) == expected
