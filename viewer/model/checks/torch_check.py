"""``torch.autograd.gradcheck`` on a program's own custom ``torch.autograd.Function``, reported
as the project's own check reports an autodiff Function.

Imported only once torch is: :mod:`viewer.model.scripts.torch_passes` after the script's own
``import torch``, :mod:`viewer.model.checks.gradcheck` only where ``torch`` is in
``sys.modules`` (a recording made in this process). The app never imports torch for a
program that does not.

:func:`gradcheck_function` runs ``torch.autograd.gradcheck(Cls.apply, inputs)`` in float64,
with the project's step and tolerances (:data:`~viewer.model.checks.function_check.STEP`,
``RTOL``, ``ATOL``). gradcheck's verdict is the status; the figures of the row (the input
that failed, the max abs error, backprop against the numeric derivative) are the project's
own: ``backward`` with a random output gradient against central differences of
``sum(gy * forward(x))`` (:func:`~viewer.model.checks.function_check._compare`), so a torch row
reads as an autodiff row does. Where gradcheck fails only at points where the forward is not
differentiable (a ``kink``: ``relu`` at 0), the row is a kink, not an error, as for the engine.

:class:`FunctionInputs` wraps ``torch.autograd.Function.apply`` while a script runs: the first
call of each of the program's own Function classes has its inputs copied (float64 clones,
``requires_grad`` as they had) and its check queued on the run's
:class:`~viewer.model.checks.function_check.FunctionSampler`, which runs it at the end of a
backward pass within the checks' time budget. Every later call costs one set lookup; torch's
aten ops pay nothing. :func:`check_recorded` checks a recording made in this process, with
the class still defined here, on the inputs the recording kept.
"""

from __future__ import annotations

import inspect
import re
import sys
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from autodiff.trace import TraceReader
from viewer.model.checks.function_check import (
    _PLAIN,
    ATOL,
    MAX_ELEMENTS,
    RTOL,
    STEP,
    FunctionSample,
    FunctionSampler,
    SlotCheck,
    _compare,
    _probe,
    _worst_status,
    describe_error,
)

__all__ = [
    "FunctionInputs",
    "check_recorded",
    "gradcheck_function",
    "is_own_function",
    "live_classes",
]

Result = tuple[str, tuple[SlotCheck, ...], str]

# torch.autograd.gradcheck is the function; its module keeps the error (a RuntimeError)
_GradcheckError = getattr(sys.modules["torch.autograd.gradcheck"], "GradcheckError", RuntimeError)

_INPUT = re.compile(r"with respect to input (\d+)")


def is_own_function(cls: type) -> bool:
    """Whether ``cls`` is a custom ``torch.autograd.Function`` of the program's, not torch's."""
    module = (getattr(cls, "__module__", "") or "").split(".")[0]
    return module not in ("torch", "functorch")


def _as_tuple(out: Any) -> tuple:
    return out if isinstance(out, tuple) else (out,)


def _differentiable(outs: tuple) -> list[int]:
    return [
        k
        for k, y in enumerate(outs)
        if isinstance(y, torch.Tensor) and y.requires_grad and y.is_floating_point()
    ]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and bool(
            torch.equal(a.detach(), b.detach())
            or (a.is_floating_point() and torch.allclose(a.detach(), b.detach(), equal_nan=True))
        )
    return True


def gradcheck_function(
    cls: type,
    args: Sequence[Any],
    kwargs: Mapping[str, Any] | None = None,
    *,
    eps: float = STEP,
    rtol: float = RTOL,
    atol: float = ATOL,
    max_elements: int = MAX_ELEMENTS,
    seed: int = 0,
) -> Result:
    """(status, slot checks, message) of ``torch.autograd.gradcheck(cls.apply, args)``.

    ``args`` are ``apply``'s arguments: float64 tensors are checked against those that
    require grad (the others, integers and plain values are passed as they are). Inputs over
    ``max_elements`` elements make gradcheck run in its ``fast_mode`` (random directions), as
    the project's own check goes directional. Status ``'skipped'`` (with why) when there is no
    gradient to check: no floating-point input that requires grad, or no differentiable output.
    """
    op = cls.__name__
    args = tuple(args)
    kwargs = dict(kwargs or {})
    slots = [
        k
        for k, a in enumerate(args)
        if isinstance(a, torch.Tensor) and a.requires_grad and a.is_floating_point()
    ]
    if not slots:
        return (
            "skipped",
            (),
            f"{op} was called with no floating-point input that requires grad: there is no "
            "gradient to check (gradcheck differentiates only those)",
        )
    if any(not bool(torch.isfinite(args[k]).all()) for k in slots):
        return "nonfinite", (), f"{op}: an input holds NaN or Inf here; nothing to compare"

    def run(*xs: Any) -> Any:
        return cls.apply(*xs, **kwargs)

    # the program's random numbers go on as if no check had run (fast_mode draws some)
    with torch.random.fork_rng(devices=[]), torch.enable_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gradcheck's own advice (double precision...) aside
        try:
            outs = _as_tuple(run(*args))
            again = _as_tuple(run(*args))
        except Exception as e:
            return "skipped", (), f"re-running {op}.apply failed: {describe_error(e)}"
        if not all(_same(a, b) for a, b in zip(outs, again, strict=True)):
            return "skipped", (), f"{op}'s forward is random (dropout?): it cannot be checked"
        wanted = _differentiable(outs)
        if not wanted:
            return (
                "skipped",
                (),
                f"{op}'s outputs are not differentiable (integers, or marked "
                "non-differentiable): there is no gradient to check",
            )
        if any(not bool(torch.isfinite(outs[k]).all()) for k in wanted):
            return "nonfinite", (), f"{op}'s forward gives NaN or Inf here; nothing to compare"
        big = sum(args[k].numel() for k in slots) > max_elements
        failure = ""
        try:
            torch.autograd.gradcheck(
                run, args, eps=eps, atol=atol, rtol=rtol, fast_mode=big, raise_exception=True
            )
        except _GradcheckError as e:
            failure = " ".join(str(e).split("\n")[0].split())
        except Exception as e:  # backward raised, or returned a gradient of the wrong shape
            return "wrong", (), f"{op}.backward raised {describe_error(e)} under gradcheck"
        try:
            checks = _figures(run, args, slots, outs, wanted, rtol, atol, max_elements, seed)
        except Exception as e:
            checks = []
            failure = failure or f"the figures could not be computed: {describe_error(e)}"
    return _verdict(op, failure, checks)


def _figures(
    run: Callable[..., Any],
    args: tuple,
    slots: list[int],
    outs: tuple,
    wanted: list[int],
    rtol: float,
    atol: float,
    max_elements: int,
    seed: int,
) -> list[SlotCheck]:
    """The project's own figures: backward with a random ``gy`` against central differences
    of ``sum(gy * forward(x))``, per input that requires grad (its slot is its position in
    ``apply``'s arguments)."""
    rng = np.random.default_rng(seed)
    gys = [rng.standard_normal(tuple(outs[k].shape)) for k in wanted]
    grads = torch.autograd.grad(
        [outs[k] for k in wanted],
        [args[k] for k in slots],
        [torch.as_tensor(g, dtype=outs[k].dtype) for g, k in zip(gys, wanted, strict=True)],
        allow_unused=True,
    )

    def loss(slot: int) -> Callable[[NDArray[np.float64]], NDArray[np.float64]]:
        def f(x: NDArray[np.float64]) -> NDArray[np.float64]:
            moved = list(args)
            moved[slot] = torch.as_tensor(x, dtype=args[slot].dtype, device=args[slot].device)
            with torch.no_grad():
                ys = _as_tuple(run(*moved))
            total = sum(
                float(np.vdot(gy, ys[k].detach().cpu().double().numpy()))
                for gy, k in zip(gys, wanted, strict=True)
            )
            return np.array([total])

        return f

    checks = []
    for slot, g in zip(slots, grads, strict=True):
        x = args[slot].detach().cpu().double().numpy().copy()
        analytic = None if g is None else g.detach().cpu().double().numpy()
        probe = _probe(loss(slot), x, rng, max_elements)
        checks.append(
            SlotCheck(slot, "backward", _compare(analytic, probe, 0, x.shape, rtol, atol))
        )
    return checks


def _verdict(op: str, failure: str, checks: list[SlotCheck]) -> Result:
    """gradcheck's verdict (``failure``: its message, '' when it passed) with the figures."""
    figured = _worst_status(c.comparison.status for c in checks) if checks else "skipped"
    if not failure:
        status = "nonfinite" if figured == "nonfinite" else "ok"
        worst = max(checks, key=lambda c: c.comparison.error, default=None)
        if worst is None:
            return status, (), f"{op}: torch.autograd.gradcheck passed"
        cmp = worst.comparison
        text = f"{op}: torch.autograd.gradcheck passed; max error {cmp.max_abs_error:.2g}"
        return status, tuple(checks), text + f" (relative {cmp.relative_error:.2g})"
    if figured == "kink":  # gradcheck failed where the forward is not differentiable
        kinks = sum(c.comparison.kinks for c in checks)
        return (
            "kink",
            tuple(checks),
            f"{op} is not differentiable at {kinks} point(s) here; backprop gives a valid "
            "one-sided (sub)gradient (torch.autograd.gradcheck: " + failure + ")",
        )
    named = _INPUT.search(failure)
    slot = int(named.group(1)) if named else -1
    culprit = next((c for c in checks if c.slot == slot), None)
    if culprit is None:
        culprit = max(checks, key=lambda c: c.comparison.error, default=None)
    if culprit is None:
        return "wrong", (), f"{op}.backward fails torch.autograd.gradcheck: {failure}"
    cmp = culprit.comparison
    text = (
        f"{op}.backward disagrees with torch.autograd.gradcheck (central differences of "
        f"{op}.forward, float64) for input {culprit.slot}: max error {cmp.max_abs_error:.3g} "
        f"(relative {cmp.relative_error:.2g})"
    )
    if cmp.analytic is not None and cmp.numeric is not None and cmp.analytic.size <= 4:
        text += (
            f"; backprop {np.array2string(cmp.analytic.reshape(-1), precision=4)}, "
            f"numeric {np.array2string(cmp.numeric.reshape(-1), precision=4)}"
        )
    if not failure.startswith("Jacobian mismatch"):
        text += f"; gradcheck: {failure}"
    return "wrong", tuple(checks), text


# =============================================================================
# The first inputs of a run's own Functions
# =============================================================================
class _NotKept(Exception):
    pass


def _copy_argument(value: Any, max_elements: int, depth: int = 0) -> Any:
    """``value`` for the check: a tensor as a float64 clone (requires_grad as it had; an
    integer one as a plain clone), plain data as it is; _NotKept otherwise."""
    if isinstance(value, torch.Tensor):
        if value.numel() > max_elements:
            raise _NotKept(
                f"has {value.numel():,} elements, over max_array_size ({max_elements:,})"
            )
        copy = value.detach().clone()
        if copy.is_floating_point():
            copy = copy.to(torch.float64)
        return copy.requires_grad_(value.requires_grad and copy.is_floating_point())
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, tuple | list) and depth < 4:
        return type(value)(_copy_argument(v, max_elements, depth + 1) for v in value)
    raise _NotKept(f"is a {type(value).__name__}, not a tensor or plain data")


def _as_arrays(args: Sequence[Any]) -> tuple[NDArray[Any], ...]:
    """The tensors among ``args`` as arrays (what a sample keeps, and sends back)."""
    return tuple(a.detach().cpu().numpy().copy() for a in args if isinstance(a, torch.Tensor))


class FunctionInputs:
    """While a run lasts, the first call of each of the program's own ``torch.autograd.Function``
    classes (on the run's thread) that can have a gradient has its inputs copied and its
    gradcheck queued on ``sampler`` (:meth:`FunctionSampler.queue_check`), which runs it at a
    pass's end. Inputs of more than ``max_elements`` elements are not copied: the sample
    says so.

    ``start()`` and ``stop()`` on the run's thread; the copies are made with no dispatch mode
    seeing them (the recorder's would record them as the program's ops).
    """

    def __init__(self, sampler: FunctionSampler, max_elements: int) -> None:
        self.sampler = sampler
        self.max_elements = max_elements
        self.seen: set[type] = set()  # classes looked at for good
        self._waiting: dict[type, None] = {}  # own classes called with nothing to check yet
        self._thread = 0
        self._original: Any = None

    def start(self) -> None:
        self._thread = threading.get_ident()
        base = torch.autograd.Function
        original = base.__dict__["apply"]
        self._original = original
        call = original.__func__
        seen = self.seen
        thread = self._thread
        first_call = self._first_call

        def apply(cls: type, *args: Any, **kwargs: Any) -> Any:
            if cls not in seen and threading.get_ident() == thread:
                first_call(cls, args, kwargs)
            return call(cls, *args, **kwargs)

        apply.__doc__ = call.__doc__
        base.apply = classmethod(apply)  # type: ignore[assignment]

    def stop(self) -> None:
        """Restore ``apply``; a class never called with an input that requires grad gets a
        sample saying so (it made no graph node, but the run's report lists it)."""
        if self._original is not None:
            torch.autograd.Function.apply = self._original  # type: ignore[assignment]
            self._original = None
        for cls in self._waiting:
            reason = (
                f"{cls.__name__} was not checked: it was never called with a floating-point "
                "input that requires grad (with grad enabled), so it has no gradient to check"
            )
            sample = FunctionSample(cls, {}, (), (), ("skipped", (), reason), torch=True)
            self.sampler.samples.setdefault(cls, []).append(sample)
        self._waiting.clear()

    def _first_call(self, cls: type, args: tuple, kwargs: dict) -> None:
        """Copy the inputs of ``cls``'s first call that can have a gradient (a floating-point
        input that requires grad, grad enabled) and queue its check; a class of torch's own
        is never looked at again."""
        if not is_own_function(cls):
            self.seen.add(cls)
            return
        if not torch.is_grad_enabled() or not any(
            isinstance(a, torch.Tensor) and a.requires_grad for a in (*args, *kwargs.values())
        ):
            self._waiting[cls] = None  # a later call may have one
            return
        self.seen.add(cls)
        self._waiting.pop(cls, None)
        with torch._C._DisableTorchDispatch():
            try:
                copies = tuple(_copy_argument(a, self.max_elements) for a in args)
                named = {k: _copy_argument(v, self.max_elements) for k, v in kwargs.items()}
                arrays = _as_arrays(copies)
            except Exception as e:  # never the program's error: its call goes on unchecked
                why = str(e) if isinstance(e, _NotKept) else f"could not be copied ({e})"
                reason = f"{cls.__name__} was not checked: an argument of its first call {why}"
                self.sampler.queue_check(cls, lambda: ("skipped", (), reason), ())
                return

        def check() -> Result:
            with torch._C._DisableTorchDispatch():
                return gradcheck_function(cls, copies, named)

        self.sampler.queue_check(cls, check, arrays)


# =============================================================================
# A recording made in this process: the live class on the recorded inputs
# =============================================================================
def live_classes(name: str) -> list[type]:
    """The program's own ``torch.autograd.Function`` classes named ``name`` defined in this
    process now (a recording names a custom node by its class's name only)."""
    found = []
    todo = list(torch.autograd.Function.__subclasses__())
    seen: set[type] = set()
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        todo.extend(cls.__subclasses__())
        if cls.__name__ == name and is_own_function(cls):
            found.append(cls)
    return sorted(found, key=lambda c: (c.__module__, c.__qualname__))


def _arity(cls: type) -> tuple[int, int] | None:
    """How many positional arguments ``cls.apply`` takes (required, all); None when it
    takes ``*args`` (the recording cannot say how many it was given)."""
    try:
        signature = inspect.signature(cls.forward)
    except (TypeError, ValueError):
        return None
    params = list(signature.parameters.values())
    if getattr(cls, "setup_context", None) is torch.autograd.Function.setup_context:
        params = params[1:]  # ctx
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return None
    positional = [p for p in params if p.kind in kinds]
    required = sum(p.default is inspect.Parameter.empty for p in positional)
    return required, len(positional)


def _recorded_inputs(trace: TraceReader, fid: int, op: str) -> tuple[Any, ...] | str:
    """Node ``fid``'s inputs as its recording kept them, as float64 tensors that require
    grad, or why they cannot be (the recording keeps a custom Function's inputs that require
    grad faithfully; a tensor that does not, or a plain argument, it does not keep)."""
    slots = sorted(
        (int(data.get("slot", 0)), int(u)) for u, _, data in trace.graph.in_edges(fid, data=True)
    )
    step = next((s.index for s in trace.steps if s.phase == "forward" and s.function == fid), -1)
    if step < 0:
        return f"{op} #{fid} has no forward step in this recording"
    inputs = []
    for k, (_, vid) in enumerate(slots):
        creator = trace.creator_of(vid)
        made_by_torch = creator >= 0 and "torch_node" in trace.function_params(creator)
        leaf = creator < 0 and not trace.node(vid).get("constant")
        if not (made_by_torch or leaf):
            return (
                f"input {k} of {op} #{fid} does not require grad, and the recording does not "
                "keep such an input of a custom Function faithfully"
            )
        snap = trace.value_at(vid, step)
        array = None if snap is None else snap.array
        if array is None:
            return (
                f"input {k} of {op} #{fid} was kept as a summary (over max_array_size), not whole"
            )
        array = np.asarray(array)
        if array.dtype.kind != "f":
            return f"input {k} of {op} #{fid} is no floating-point tensor"
        inputs.append(torch.tensor(array, dtype=torch.float64, requires_grad=True))
    return tuple(inputs)


def check_recorded(
    trace: TraceReader, fids: Sequence[int], op: str, **options: Any
) -> Result | None:
    """gradcheck of custom Function ``op`` (nodes ``fids`` of a recording made in this
    process) on the inputs recorded for its first node that has them whole: its live class,
    found by name (None: no class of that name is defined here, or several are)."""
    classes = live_classes(op)
    if len(classes) != 1:
        return None
    (cls,) = classes
    arity = _arity(cls)
    why = ""
    for fid in fids:
        inputs = _recorded_inputs(trace, fid, op)
        if isinstance(inputs, str):
            why = why or inputs
            continue
        if arity is None or not arity[0] <= len(inputs) <= arity[1]:
            why = why or (
                f"{op}.forward takes other arguments than the {len(inputs)} tensor(s) the "
                "recording kept (a plain argument, or one that does not require grad, is not "
                "recorded)"
            )
            continue
        status, slots, message = gradcheck_function(cls, inputs, **options)
        return status, slots, f"{message} (on the inputs recorded for {op} #{fid})"
    return "skipped", (), f"{op} was not checked: {why}"
