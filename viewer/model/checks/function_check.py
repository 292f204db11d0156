"""Central differences, and the check of one Function's backward against its own forward.

The building block of :mod:`viewer.model.checks.gradcheck`: :func:`check_function` re-runs a
Function
(a fresh instance with the same attributes, so the user's graph is never touched) at given
inputs, draws a random output gradient ``gy``, and compares ``backward(gy)`` (on Variables) and
the array path backward takes without create_graph (``derivative(ARRAYS, gy)``, or a second
``backward_data`` where a class has one) with central differences of ``sum(gy * forward(x))`` in
float64. Gradients are summed back over broadcast axes first, as backward does.
Arrays of up to :data:`MAX_ELEMENTS` elements are compared element by element; bigger ones
along a few random directions.

Where the function is not differentiable (``relu`` at 0, ``max`` with ties) the one-sided
differences disagree; a backprop value between them is a valid subgradient: a ``kink``, not an
error. :class:`FunctionSampler` keeps the first calls of every Function class while a script
runs, so that its Functions can be checked after its objects are gone.
"""

from __future__ import annotations

import contextlib
import copy
import math
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from autodiff.core import ARRAYS, Function, Variable, fit_gradient, using_config

__all__ = [
    "ATOL",
    "MAX_ELEMENTS",
    "RTOL",
    "STEP",
    "Comparison",
    "FunctionCheck",
    "FunctionSample",
    "FunctionSampler",
    "SlotCheck",
    "check_function",
]


RTOL = 1e-4  # a derivative passes when |backprop - numeric| <= RTOL * scale + ATOL
ATOL = 1e-7
STEP = 1e-5  # central-difference step, relative to max(1, |x|)
MAX_ELEMENTS = 64  # arrays up to this size are compared element by element (and kept)
# A script's own Functions are checked once a backward pass while the checks have added at
# most this share to the run's own time (plus the grace, so the first passes are checked)
PASS_CHECK_BUDGET = 0.2
PASS_CHECK_GRACE = 0.05  # seconds
DIRECTIONS = 3  # bigger arrays: this many random directions
# Worst first: the status of a group is the first of these that any member has.
_SEVERITY = ("wrong", "kink", "ok", "nonfinite", "skipped")


@dataclass(frozen=True)
class Comparison:
    """Backprop against central differences for one array of derivatives.

    ``method``: ``'elementwise'`` (every element, ``analytic``/``numeric`` kept) or
    ``'directional'`` (``checked`` random directions ``v``: ``<grad, v>`` against the
    difference quotient along ``v``). ``error`` is ``max_abs_error / (scale + ATOL / RTOL)``:
    the relative error, measured absolutely for gradients near zero; the check passes when it
    is at most RTOL.
    """

    shape: tuple[int, ...]
    method: str
    checked: int
    max_abs_error: float
    scale: float  # the largest |derivative| compared (backprop or numeric)
    error: float
    status: str  # 'ok' | 'kink' | 'wrong' | 'nonfinite'
    kinks: int = 0  # points where the function is not differentiable (subgradient accepted)
    nonfinite: int = 0  # points not compared because something was NaN/Inf
    analytic: NDArray[np.float64] | None = field(default=None, repr=False)
    numeric: NDArray[np.float64] | None = field(default=None, repr=False)

    @property
    def relative_error(self) -> float:
        if self.scale > 0:
            return self.max_abs_error / self.scale
        return 0.0 if self.max_abs_error == 0 else math.inf


@dataclass(frozen=True)
class SlotCheck:
    """One input slot of a Function, through one backward path."""

    slot: int
    # 'backward' (Variables, used with create_graph); the array path used without it:
    # 'derivative(ARRAYS)' (the same formula on arrays) or 'backward_data' (a second one)
    path: str
    comparison: Comparison


@dataclass(frozen=True)
class FunctionCheck:
    """A Function's backward against central differences of its own forward.

    ``node_ids``: the graph's Function nodes this result is for (one for a live Function; every
    node of the op when the check ran on a sample or stands for a big graph's op).
    ``source``: ``'live'`` (the graph's own object), ``'sample'`` (kept by a
    :class:`FunctionSampler` during a script), ``'given'`` (:func:`check_function`) or ``''``.
    """

    node_ids: tuple[int, ...]
    op: str
    status: str  # 'ok' | 'kink' | 'wrong' | 'nonfinite' | 'skipped'
    slots: tuple[SlotCheck, ...] = ()
    message: str = ""
    source: str = ""

    @property
    def error(self) -> float:
        errors = [s.comparison.error for s in self.slots]
        return max(errors) if errors else math.nan

    @property
    def max_abs_error(self) -> float:
        errors = [s.comparison.max_abs_error for s in self.slots]
        return max(errors) if errors else math.nan

    @property
    def worst(self) -> SlotCheck | None:
        """The slot check with the largest error (None when nothing was compared)."""
        return max(self.slots, key=lambda s: s.comparison.error, default=None)


# =============================================================================
# Central differences
# =============================================================================
@dataclass
class _Probe:
    """Difference quotients of ``f: R^shape -> R^k`` at ``x`` along ``m`` directions."""

    method: str
    indexes: NDArray[np.intp] | None  # elementwise: flat indexes, in order
    directions: list[NDArray[np.float64]]  # directional: the unit-max directions
    central: NDArray[np.float64]  # (m, k)
    plus: NDArray[np.float64]  # one-sided, forward
    minus: NDArray[np.float64]  # one-sided, backward


def _probe(
    f: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    x: NDArray[np.float64],
    rng: np.random.Generator,
    max_elements: int = MAX_ELEMENTS,
    step: float = STEP,
) -> _Probe:
    with np.errstate(all="ignore"):
        base = np.asarray(f(x), dtype=np.float64).reshape(-1)
        moves: list[tuple[NDArray[np.float64], NDArray[np.float64]]] = []
        if x.size <= max_elements:
            method = "elementwise"
            indexes: NDArray[np.intp] | None = np.arange(x.size)
            directions: list[NDArray[np.float64]] = []
            for i in indexes:
                xp = x.copy()
                xm = x.copy()
                h = step * max(1.0, abs(float(x.flat[i])))
                xp.flat[i] += h
                xm.flat[i] -= h
                moves.append((xp, xm))
        else:
            method = "directional"
            indexes = None
            directions = []
            h = step * max(1.0, float(np.max(np.abs(x))) if x.size else 1.0)
            for _ in range(DIRECTIONS):
                v = rng.standard_normal(x.shape)
                v /= max(float(np.max(np.abs(v))), 1e-300)
                directions.append(v)
                moves.append((x + h * v, x - h * v))
        central, plus, minus = [], [], []
        for k, (xp, xm) in enumerate(moves):
            if indexes is not None:
                i = indexes[k]
                hp = float(xp.flat[i] - x.flat[i])  # the step actually taken (rounding)
                hm = float(x.flat[i] - xm.flat[i])
            else:
                hp = hm = h
            fp = np.asarray(f(xp), dtype=np.float64).reshape(-1)
            fm = np.asarray(f(xm), dtype=np.float64).reshape(-1)
            central.append((fp - fm) / (hp + hm))
            plus.append((fp - base) / hp)
            minus.append((base - fm) / hm)
    k = base.size
    return _Probe(
        method,
        indexes,
        directions,
        np.asarray(central, dtype=np.float64).reshape(-1, k),
        np.asarray(plus, dtype=np.float64).reshape(-1, k),
        np.asarray(minus, dtype=np.float64).reshape(-1, k),
    )


def _compare(
    analytic: NDArray[Any] | None,
    probe: _Probe,
    column: int,
    shape: tuple[int, ...],
    rtol: float = RTOL,
    atol: float = ATOL,
) -> Comparison:
    """Backprop's ``analytic`` (None: no gradient, i.e. zeros) against column ``column``."""
    a = np.zeros(shape) if analytic is None else np.asarray(analytic, dtype=np.float64)
    with np.errstate(all="ignore"):
        if probe.indexes is not None:
            projected = a.reshape(-1)[probe.indexes]
        else:
            projected = np.array([float(np.sum(a * v)) for v in probe.directions])
        c = probe.central[:, column]
        p = probe.plus[:, column]
        m = probe.minus[:, column]
        numeric_finite = np.isfinite(c) & np.isfinite(p) & np.isfinite(m)
        finite = numeric_finite & np.isfinite(projected)
        # backprop gives NaN/Inf where the function is smooth and finite: that is a bug
        broken = numeric_finite & ~np.isfinite(projected)
        values = np.concatenate([np.abs(projected[finite]), np.abs(c[finite])])
        scale = float(values.max()) if values.size else 0.0
        tol = rtol * scale + atol
        diff = np.abs(projected - c)
        bad = finite & (diff > tol)
        lo, hi = np.minimum(p, m), np.maximum(p, m)
        kink = bad & (hi - lo > 2 * tol) & (projected >= lo - tol) & (projected <= hi + tol)
        compared = finite & ~kink
        max_abs = float(diff[compared].max()) if compared.any() else 0.0
    if broken.any():
        max_abs = math.inf
    error = max_abs / (scale + atol / rtol)
    if not finite.any() and not broken.any():
        status = "nonfinite"
    elif broken.any() or (bad & ~kink).any():
        status = "wrong"
    elif kink.any():
        status = "kink"
    else:
        status = "ok"
    keep = probe.indexes is not None
    return Comparison(
        shape=tuple(shape),
        method=probe.method,
        checked=len(c),
        max_abs_error=max_abs,
        scale=scale,
        error=error,
        status=status,
        kinks=int(kink.sum()),
        nonfinite=int((~finite & ~broken).sum()),
        analytic=a.copy() if keep else None,
        numeric=c.reshape(shape).copy() if keep else None,
    )


def _worst_status(statuses: Iterable[str]) -> str:
    found = set(statuses)
    for status in _SEVERITY:
        if status in found:
            return status
    return "skipped"


def describe_error(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


# =============================================================================
# One Function, locally
# =============================================================================
class _Wrong(Exception):
    """A backward that cannot even produce a gradient of the right shape."""


def _instance(cls: type, params: Mapping[str, Any]) -> Any:
    """A fresh Function of ``cls`` with ``params`` as its attributes, ``__init__`` skipped (the
    parameters it set are in ``params``)."""
    function = cls.__new__(cls)
    function.__dict__.update(params)
    return function


def _prepared(
    cls: type, params: Mapping[str, Any], xs: Sequence[NDArray[Any]]
) -> tuple[Any, list[Variable]]:
    """A fresh Function wired as ``Function.__call__`` would wire it, to inputs ``xs``.

    Done by hand rather than through ``__call__``: a call would be reported to the engine's
    observers, and a check must never add nodes to a recording (a script's trace) or
    trigger the leak audit's bookkeeping."""
    function = _instance(cls, params)
    ys = function.forward(*[x.copy() for x in xs])
    ys = ys if isinstance(ys, tuple) else (ys,)  # as in __call__: only a tuple is several
    outputs = [Variable(np.asarray(y)) for y in ys]
    function.inputs = [Variable(x.copy()) for x in xs]
    function.outputs = [weakref.ref(y) for y in outputs]
    function.generation = 0
    for y in outputs:
        y.creator = function
        y.generation = 1
    return function, outputs


def _gradient_arrays(
    gxs: Any, xs: Sequence[NDArray[Any]], op: str, path: str, function: Function
) -> list[NDArray[np.float64] | None]:
    if not isinstance(gxs, tuple | list):
        gxs = (gxs,)
    if len(gxs) != len(xs):
        raise _Wrong(
            f"{op}.{path} returned {len(gxs)} gradient(s) for {len(xs)} input(s); it must "
            "return one per input"
        )
    arrays: list[NDArray[np.float64] | None] = []
    for slot, (gx, x) in enumerate(zip(gxs, xs, strict=True)):
        if gx is None:
            arrays.append(None)
            continue
        with contextlib.suppress(ValueError):  # a shape it cannot fit is named below
            gx = fit_gradient(function, slot, gx)
        data = np.asarray(gx.data if isinstance(gx, Variable) else gx, dtype=np.float64)
        if data.shape != x.shape:
            raise _Wrong(
                f"{op}.{path} returned a gradient of shape {data.shape} for input {slot} of "
                f"shape {x.shape}"
            )
        arrays.append(data)
    return arrays


def _check_at(
    cls: type,
    params: Mapping[str, Any],
    inputs: Sequence[Any],
    *,
    rtol: float = RTOL,
    atol: float = ATOL,
    max_elements: int = MAX_ELEMENTS,
    seed: int = 0,
) -> tuple[str, tuple[SlotCheck, ...], str]:
    """(status, slot checks, message) for ``cls`` with ``params`` at ``inputs``."""
    op = cls.__name__
    xs: list[NDArray[Any]] = []
    for x in inputs:
        array = np.asarray(x.data if isinstance(x, Variable) else x)
        if array.dtype.kind == "f":
            array = array.astype(np.float64)
        xs.append(array.copy())
    slots = [k for k, x in enumerate(xs) if x.dtype.kind == "f"]
    if not slots:
        return "skipped", (), f"{op} has no floating-point input to differentiate"
    if any(not np.all(np.isfinite(xs[k])) for k in slots):
        return "nonfinite", (), f"{op}: an input holds NaN or Inf here; nothing to compare"
    try:
        with np.errstate(all="ignore"):
            function, outputs = _prepared(cls, params, xs)
    except Exception as e:
        return "skipped", (), f"re-running {op}.forward failed: {describe_error(e)}"
    ys = [np.asarray(y.data, dtype=np.float64) for y in outputs]
    if any(not np.all(np.isfinite(y)) for y in ys):
        return "nonfinite", (), f"{op}'s forward gives NaN or Inf here; nothing to compare"
    rng = np.random.default_rng(seed)
    gys = [rng.standard_normal(y.shape) for y in ys]

    analytic: dict[str, list[NDArray[np.float64] | None]] = {}
    try:
        with np.errstate(all="ignore"), using_config("enable_backprop", False):
            gxs = function.backward(*[Variable(gy.copy()) for gy in gys])
        analytic["backward"] = _gradient_arrays(gxs, xs, op, "backward", function)
        array_path = None
        if getattr(cls, "backward_data", None) is not None:
            array_path = "backward_data"
            with np.errstate(all="ignore"):
                gxs = function.backward_data(*[gy.copy() for gy in gys])
        elif getattr(cls, "derivative", None) is not None:
            array_path = "derivative(ARRAYS)"
            with np.errstate(all="ignore"):
                gxs = function.derivative(ARRAYS, *[gy.copy() for gy in gys])
        if array_path is not None:
            analytic[array_path] = _gradient_arrays(gxs, xs, op, array_path, function)
    except _Wrong as e:
        return "wrong", (), str(e)
    except Exception as e:
        return "wrong", (), f"{op}.backward raised {describe_error(e)}"

    def loss(slot: int) -> Callable[[NDArray[np.float64]], NDArray[np.float64]]:
        def f(x: NDArray[np.float64]) -> NDArray[np.float64]:
            args = [x if k == slot else xs[k] for k in range(len(xs))]
            ys = _instance(cls, params).forward(*[a.copy() for a in args])
            ys = ys if isinstance(ys, tuple) else (ys,)
            total = sum(
                float(np.vdot(gy, np.asarray(y, dtype=np.float64)))
                for gy, y in zip(gys, ys, strict=True)
            )
            return np.array([total])

        return f

    try:
        with np.errstate(all="ignore"):
            first = loss(slots[0])
            if not np.array_equal(first(xs[slots[0]]), first(xs[slots[0]]), equal_nan=True):
                return "skipped", (), f"{op}'s forward is random (dropout?): it cannot be checked"
        checks = []
        for slot in slots:
            probe = _probe(loss(slot), xs[slot], rng, max_elements)
            for path, grads in analytic.items():
                comparison = _compare(grads[slot], probe, 0, xs[slot].shape, rtol, atol)
                checks.append(SlotCheck(slot, path, comparison))
    except Exception as e:
        return "skipped", (), f"re-running {op}.forward failed: {describe_error(e)}"
    status = _worst_status(c.comparison.status for c in checks)
    return status, tuple(checks), _function_message(op, status, checks)


def _function_message(op: str, status: str, checks: Sequence[SlotCheck]) -> str:
    if not checks:
        return ""
    worst = max(checks, key=lambda c: c.comparison.error)
    cmp = worst.comparison
    if status == "wrong":
        text = (
            f"{op}.{worst.path} disagrees with central differences of {op}.forward for "
            f"input {worst.slot}: max error {cmp.max_abs_error:.3g} "
            f"(relative {cmp.relative_error:.2g})"
        )
        if cmp.analytic is not None and cmp.numeric is not None and cmp.analytic.size <= 4:
            text += (
                f"; backprop {np.array2string(cmp.analytic.reshape(-1), precision=4)}, "
                f"numeric {np.array2string(cmp.numeric.reshape(-1), precision=4)}"
            )
        return text
    if status == "kink":
        paths = {c.path for c in checks}
        kinks = max(sum(c.comparison.kinks for c in checks if c.path == path) for path in paths)
        return (
            f"{op} is not differentiable at {kinks} point(s) here; backprop gives a valid "
            "one-sided (sub)gradient"
        )
    if status == "nonfinite":
        return f"{op}: the differences are NaN/Inf here; nothing to compare"
    return f"{op}: max error {cmp.max_abs_error:.2g} (relative {cmp.relative_error:.2g})"


def check_function(
    function: Function | type,
    *inputs: Any,
    params: Mapping[str, Any] | None = None,
    rtol: float = RTOL,
    atol: float = ATOL,
    max_elements: int = MAX_ELEMENTS,
    seed: int = 0,
) -> FunctionCheck:
    """Check one Function's backward against central differences of its own forward.

    ``function`` is a Function object (its attributes are the parameters: ``Pow(3)`` keeps
    ``c``) or a Function class with ``params``; ``inputs`` are arrays or Variables. The object
    itself is not modified: a fresh instance runs forward and backward.

    >>> check_function(Cube(), np.array([1.0, 2.0])).status   # doctest: +SKIP
    'ok'
    """
    if isinstance(function, type):
        cls, attrs = function, dict(params or {})
    else:
        cls, attrs = type(function), {**vars(function), **(params or {})}
    status, slots, message = _check_at(
        cls, attrs, inputs, rtol=rtol, atol=atol, max_elements=max_elements, seed=seed
    )
    return FunctionCheck((), cls.__name__, status, slots, message, "given")


# =============================================================================
# Samples of a script's Functions
# =============================================================================
_PLAIN = (int, float, complex, bool, str, bytes, type(None), np.generic, slice, type(Ellipsis))


class _NotPlain(Exception):
    pass


def _plain_copy(value: Any, max_elements: int, depth: int = 0) -> Any:
    """A copy of ``value`` if it is plain data (numbers, arrays, tuples of them...), else
    _NotPlain: a sample must not keep engine objects (Variables, layers) alive."""
    if depth > 8:
        raise _NotPlain
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, np.ndarray):
        if value.size > max_elements or value.dtype.kind == "O":
            raise _NotPlain
        return value.copy()
    if isinstance(value, tuple | list):
        items = [_plain_copy(v, max_elements, depth + 1) for v in value]
        return type(value)(items)
    if isinstance(value, dict):
        return {k: _plain_copy(v, max_elements, depth + 1) for k, v in value.items()}
    raise _NotPlain


@dataclass(frozen=True)
class FunctionSample:
    """One Function call kept by a :class:`FunctionSampler`: its class, plain attributes and
    inputs, and for a class defined outside ``autodiff`` the check already made (its module's
    globals are cleared when the script ends, so its methods could not run later)."""

    cls: type
    params: dict[str, Any]
    inputs: tuple[NDArray[Any], ...]
    dropped: tuple[str, ...] = ()  # attributes that were not plain data and were left out
    result: tuple[str, tuple[SlotCheck, ...], str] | None = None  # (status, slots, message)
    # a custom torch.autograd.Function (checked with torch.autograd.gradcheck), not an
    # autodiff Function: a graph's op of the same name is only matched to its own engine's
    torch: bool = False

    @property
    def op(self) -> str:
        return self.cls.__name__

    def check(self, **options: Any) -> tuple[str, tuple[SlotCheck, ...], str]:
        """(status, slot checks, message): the check made during the run, or one made now."""
        if self.result is not None:
            return self.result
        status, slots, message = _check_at(
            self.cls, copy.deepcopy(self.params), self.inputs, **options
        )
        if status == "skipped" and self.dropped:
            message += f" (attributes not kept by the sampler: {', '.join(self.dropped)})"
        return status, slots, message


def _from_autodiff(cls: type) -> bool:
    return (getattr(cls, "__module__", "") or "").split(".")[0] == "autodiff"


class FunctionSampler:
    """An engine observer that keeps the first ``per_class`` calls of every Function class.

    Attach it while a script runs (``ScriptRun.observers``, see
    :func:`viewer.model.document.gradient_checks.watch_scripts`): when the script ends its
    objects are gone, but the samples let :func:`viewer.model.checks.gradcheck.check_trace`
    check each op. It copies only plain data (arrays up to ``max_elements`` elements, numbers,
    tuples), never engine objects, so it keeps no graph alive. A class defined outside
    ``autodiff`` (the script's own) is checked at once, on the script's thread, while its
    module still exists.
    """

    def __init__(
        self,
        per_class: int = 2,
        max_elements: int = 1_000_000,
        per_pass: bool = True,
        budget: float = PASS_CHECK_BUDGET,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.per_class = per_class
        self.max_elements = max_elements
        self.samples: dict[type, list[FunctionSample]] = {}
        self._full: set[type] = set()
        # Per backward pass (see end_pass): the first call of each of the script's own
        # classes is checked, while the checks have added at most ``budget`` to the time the
        # run took without them; a call that fails is kept as a sample too (at most
        # ``per_class`` a class).
        self.per_pass = per_pass
        self.budget = budget
        self._clock = clock  # seconds; the budget's measure of the run and of the checks
        self._own: dict[type, bool] = {}
        self._checked: set[type] = set()  # this pass
        self._wrong: list[str] = []  # this pass: the ops whose check failed
        self._wrong_kept: dict[type, int] = {}
        self._spent = 0.0
        self._began = clock()
        self.passes_checked = 0
        self.passes_unchecked = 0  # passes with a call of an own class the budget left out
        self._missed = False
        self.last_pass_missed = False  # the pass end_pass closed: the budget left one out
        # checks another engine's recorder queued (custom torch Functions: queue_check)
        self._queued: list[tuple[type, Callable[[], tuple], tuple[NDArray[Any], ...]]] = []
        # the pass being run will be kept (its graph shown): checked whatever the budget
        # (a bounded number: the sample's), so what the list shows is never unchecked
        self.priority = True

    def on_forward(self, function: Any, inputs: Any, outputs: Any, recorded: bool) -> None:
        cls = type(function)
        if not recorded:
            return
        own = self._own.get(cls)
        if own is None:
            own = self._own[cls] = not _from_autodiff(cls)
        if own and self.per_pass and cls not in self._checked:
            self._check_in_pass(cls, function, inputs)
            return
        if cls in self._full:
            return
        self._keep(cls, function, inputs, None)

    def _keep(
        self, cls: type, function: Any, inputs: Any, result: tuple | None
    ) -> FunctionSample | None:
        """Keep this call as a sample (checked now if ``cls`` is the script's own)."""
        found = self.samples.setdefault(cls, [])
        try:
            arrays = tuple(_plain_copy(x.data, self.max_elements) for x in inputs)
        except _NotPlain:
            return None
        params: dict[str, Any] = {}
        dropped = []
        for key, value in vars(function).items():
            try:
                params[key] = _plain_copy(value, self.max_elements)
            except _NotPlain:
                dropped.append(key)
        if result is None and not _from_autodiff(cls):
            result = _check_at(cls, dict(vars(function)), arrays)
        sample = FunctionSample(cls, params, arrays, tuple(dropped), result)
        found.append(sample)
        if sum(s.result is None or s.result[0] != "wrong" for s in found) >= self.per_class:
            self._full.add(cls)
        return sample

    def _check_in_pass(self, cls: type, function: Any, inputs: Any) -> None:
        """Check the pass's first call of the script's own ``cls``, within the budget."""
        self._checked.add(cls)
        now = self._clock()
        if self._over_budget(now):
            return
        try:
            result = _check_at(cls, dict(vars(function)), tuple(x.data for x in inputs))
        finally:
            self._spent += self._clock() - now
        if result[0] == "wrong":
            self._wrong.append(cls.__name__)
            if self._wrong_kept.get(cls, 0) < self.per_class:  # the call that failed
                self._wrong_kept[cls] = self._wrong_kept.get(cls, 0) + 1
                self._keep(cls, function, inputs, result)
                return
        if cls not in self._full:
            self._keep(cls, function, inputs, result)

    def _over_budget(self, now: float) -> bool:
        """Whether the checks spent their share of the run's time (plus the grace) and this
        pass will not be kept: it is then unchecked (``_missed``)."""
        over = self._spent > self.budget * (now - self._began - self._spent) + PASS_CHECK_GRACE
        if over and not self.priority:
            self._missed = True
            return True
        return False

    def queue_check(
        self,
        cls: type,
        check: Callable[[], tuple[str, tuple[SlotCheck, ...], str]],
        inputs: tuple[NDArray[Any], ...],
    ) -> None:
        """Queue the check of a class another engine's recorder saw (a custom
        ``torch.autograd.Function``'s first call, :mod:`viewer.model.checks.torch_check`):
        ``check()`` gives (status, slot checks, message), made by :meth:`run_queued` at a
        pass's end within the budget; ``inputs``: the call's arrays, kept with the result."""
        self._queued.append((cls, check, inputs))

    def run_queued(self) -> None:
        """At a pass's end, before :meth:`end_pass`: the queued checks, while the budget
        allows (the pass is then unchecked, and the rest wait for the next pass's end), or
        whatever it says when the pass will be kept (``priority``)."""
        while self._queued:
            cls, check, inputs = self._queued[0]
            self._checked.add(cls)
            now = self._clock()
            if self._over_budget(now):
                return
            self._queued.pop(0)
            try:
                try:
                    result = check()
                except Exception as e:  # the check's own failure: no verdict on the class
                    result = ("skipped", (), f"{cls.__name__} could not be checked: "
                              f"{describe_error(e)}")  # fmt: skip
            finally:
                self._spent += self._clock() - now
            if result[0] == "wrong":
                self._wrong.append(cls.__name__)
            sample = FunctionSample(cls, {}, inputs, (), result, torch=True)
            self.samples.setdefault(cls, []).append(sample)

    def end_pass(self) -> tuple[str, ...]:
        """A backward pass ended: the ops of the script's own Functions whose check failed in
        it (since the last end_pass), and the next pass checks afresh."""
        self.last_pass_missed = False
        if not self._checked:
            return ()
        if self._missed:
            self.passes_unchecked += 1
            self._missed = False
            self.last_pass_missed = True
        else:
            self.passes_checked += 1
        self._checked.clear()
        if not self._wrong:
            return ()
        wrong = tuple(sorted(set(self._wrong)))
        self._wrong.clear()
        return wrong

    def for_op(self, op: str, torch: bool = False) -> list[FunctionSample]:
        """The samples of every class named ``op`` (a graph node knows only the name), of
        autodiff's Functions or (``torch``) of custom torch Functions."""
        return [
            s
            for cls, found in self.samples.items()
            if cls.__name__ == op
            for s in found
            if s.torch == torch
        ]
