"""Optimizers and gradient hooks, named as in DeZero's ``dezero/optimizers.py``.

``optimizer.setup(model)`` once, then per step: ``model.cleargrads()``, ``loss.backward()``,
``optimizer.update()``. Hooks run on the parameters that have a gradient, in the order they were
added, before the update. Each update first checks that the gradients are finite: a NaN or
infinite gradient (usually a NaN loss) raises :class:`NonFiniteGradientError` naming the step and
the parameter, and leaves the parameters as they were.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from autodiff import cuda
from autodiff.core import Parameter, Variable
from autodiff.layers import Layer

__all__ = [
    "SGD",
    "AdaDelta",
    "AdaGrad",
    "Adam",
    "ClipGrad",
    "FreezeParam",
    "MomentumSGD",
    "NonFiniteGradientError",
    "NonFiniteGradientWarning",
    "Optimizer",
    "WeightDecay",
]


_all_true = np.logical_and.reduce


def _all_finite(g: Any) -> Any:
    finite = np.isfinite(g)
    if type(finite) is np.ndarray:
        return _all_true(finite, None)
    return finite.all()  # CuPy's: its own reduction


# Up to this many gradient elements in all, they are checked with one concatenated isfinite().
_FINITE_CHECK_CONCAT_LIMIT = 1 << 16


class NonFiniteGradientError(FloatingPointError):
    """A gradient reaching ``Optimizer.update`` holds NaN or infinity."""


class NonFiniteGradientWarning(UserWarning):
    """Issued instead of :class:`NonFiniteGradientError` when ``on_nonfinite='warn'``."""


class Optimizer:
    """Base class: ``update()`` calls ``update_one(param)`` for each parameter with a gradient.

    ``on_nonfinite`` says what a NaN/infinite gradient does: ``'raise'`` (the default), ``'warn'``
    (a :class:`NonFiniteGradientWarning`, and this step's update is skipped) or ``'ignore'``.
    """

    def __init__(self, on_nonfinite: str = "raise") -> None:
        if on_nonfinite not in ("raise", "warn", "ignore"):
            raise ValueError(
                f"{type(self).__name__}: on_nonfinite must be 'raise', 'warn' or 'ignore', "
                f"not {on_nonfinite!r}"
            )
        self.target: Any = None
        self.hooks: list[Callable[[list[Parameter]], None]] = []
        self.on_nonfinite = on_nonfinite
        self.steps = 0  # update() calls completed

    def setup(self, target: Layer | Iterable[Variable]) -> Optimizer:
        """Attach the model (anything with ``params()``, or a list of Variables); returns self."""
        name = type(self).__name__
        if not hasattr(target, "params"):
            if isinstance(target, Variable):
                target = [target]
            try:
                target = list(target)
            except TypeError:
                raise TypeError(
                    f"{name}.setup: expected a Layer/Model or a list of Parameters, got "
                    f"{type(target).__name__}"
                ) from None
            bad = [type(p).__name__ for p in target if not isinstance(p, Variable)]
            if bad:
                raise TypeError(f"{name}.setup: the list holds non-Variables: {bad}")
            target = _ParamList(target)
        if next(iter(target.params()), None) is None:
            raise ValueError(
                f"{name}.setup: {type(target).__name__} has no parameters to optimise; "
                "assign Parameters or layers to it as attributes (self.l1 = L.Linear(10)) "
                "after calling super().__init__()"
            )
        self.target = target
        return self

    def update(self) -> None:
        """Apply one step to every parameter that has a gradient."""
        if self.target is None:
            raise RuntimeError(f"{type(self).__name__}.update: no model; call setup(model) first")
        params = [p for p in self.target.params() if p.grad is not None]
        if not params:
            raise RuntimeError(
                f"{type(self).__name__}.update (step {self.steps}): none of the parameters "
                "has a gradient; call loss.backward() before update(), and cleargrads() "
                "before backward() rather than between backward() and update()"
            )
        if self.on_nonfinite != "ignore" and not self._grads_finite(params):
            return
        if self.hooks:
            for hook in self.hooks:
                hook(params)
            # A hook (FreezeParam) may have dropped gradients.
            params = [p for p in params if p.grad is not None]
        update_one = self.update_one
        for param in params:
            update_one(param)
        self.steps += 1

    def step(self) -> None:
        """PyTorch's name for :meth:`update`."""
        self.update()

    def zero_grad(self) -> None:
        """PyTorch's habit: clear the gradients of the parameters set up (``cleargrads()``)."""
        if self.target is None:
            raise RuntimeError(
                f"{type(self).__name__}.zero_grad: no model; call setup(model) first"
            )
        for param in self.target.params():
            param.cleargrad()

    def update_one(self, param: Parameter) -> None:
        raise NotImplementedError(f"{type(self).__name__}.update_one is not implemented")

    def add_hook(self, f: Callable[[list[Parameter]], None]) -> None:
        """Add ``f(params)``, run on the parameters with a gradient before each update."""
        self.hooks.append(f)

    def _grads_finite(self, params: list[Parameter]) -> bool:
        # One isfinite over all gradients at once: for small models the per-array call
        # overhead dominates. No sum-based shortcut: inf - inf would raise a RuntimeWarning.
        flat = [p.grad.data.ravel() for p in params]
        if sum(map(len, flat)) <= _FINITE_CHECK_CONCAT_LIMIT:
            if _all_finite(np.concatenate(flat)):
                return True
        elif all(_all_finite(g) for g in flat):
            return True
        bad = next(p for p, g in zip(params, flat, strict=True) if not np.isfinite(g).all())
        self._report_nonfinite(bad)
        return False

    def _report_nonfinite(self, param: Parameter) -> None:
        g = param.grad.data
        names = getattr(self.target, "named_params", None)
        key = next((k for k, p in (names() if names else {}).items() if p is param), None)
        label = repr(key or param.name) if key or param.name else "(unnamed)"
        message = (
            f"{type(self).__name__}.update (step {self.steps}): the gradient of parameter "
            f"{label} (shape {g.shape}) has {int(np.isnan(g).sum())} NaN and "
            f"{int(np.isinf(g).sum())} infinite values; the loss is probably NaN or infinite "
            "(a learning rate too high, a log of 0, an overflowing exp); the parameters were "
            "not updated"
        )
        if self.on_nonfinite == "raise":
            raise NonFiniteGradientError(message)
        warnings.warn(message, NonFiniteGradientWarning, stacklevel=3)


class _ParamList:
    """Adapts a plain list of Variables to the ``params()`` protocol of a Layer."""

    def __init__(self, params: list[Variable]) -> None:
        self._list = params

    def params(self) -> Iterable[Variable]:
        return iter(self._list)


# =============================================================================
# Hooks
# =============================================================================
class WeightDecay:
    """Adds ``rate * param`` to each gradient: the same as adding ``rate/2 * sum(param**2)``
    to the loss (L2 regularisation)."""

    def __init__(self, rate: float) -> None:
        self.rate = rate

    def __call__(self, params: list[Parameter]) -> None:
        # Out of place: the engine may hand two leaves the same gradient array (W1 + W2),
        # and an in-place update would then be applied to both twice.
        for param in params:
            param.grad.data = param.grad.data + self.rate * param.data


class ClipGrad:
    """Scales all gradients down together so that their global L2 norm is at most ``max_norm``."""

    def __init__(self, max_norm: float) -> None:
        self.max_norm = max_norm

    def __call__(self, params: list[Parameter]) -> None:
        total = 0.0
        for param in params:
            g = param.grad.data
            total += float((g * g).sum())
        rate = self.max_norm / (math.sqrt(total) + 1e-6)
        if rate < 1:
            for param in params:
                param.grad.data = param.grad.data * rate  # out of place, see WeightDecay


class FreezeParam:
    """Keeps the given layers' (or Parameters') values fixed by dropping their gradients."""

    def __init__(self, *layers: Layer | Parameter) -> None:
        self.freeze_params: list[Parameter] = []
        for layer in layers:
            if isinstance(layer, Variable):
                self.freeze_params.append(layer)
            else:
                self.freeze_params.extend(layer.params())

    def __call__(self, params: list[Parameter]) -> None:
        for param in self.freeze_params:
            param.grad = None


# =============================================================================
# Optimizers
# =============================================================================
class SGD(Optimizer):
    """``param -= lr * grad``."""

    def __init__(self, lr: float = 0.01, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lr = lr

    def update_one(self, param: Parameter) -> None:
        param.data -= self.lr * param.grad.data


class MomentumSGD(Optimizer):
    """``v = momentum * v - lr * grad; param += v``."""

    def __init__(self, lr: float = 0.01, momentum: float = 0.9, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lr = lr
        self.momentum = momentum
        self.vs: dict[Parameter, np.ndarray] = {}

    def update_one(self, param: Parameter) -> None:
        v = self.vs.get(param)
        if v is None:
            v = self.vs[param] = cuda.get_array_module(param.data).zeros_like(param.data)
        v *= self.momentum
        v -= self.lr * param.grad.data
        param.data += v


class AdaGrad(Optimizer):
    """``h += grad**2; param -= lr * grad / (sqrt(h) + eps)``: per-element step sizes that
    shrink for parameters that have had large gradients."""

    def __init__(self, lr: float = 0.001, eps: float = 1e-8, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lr = lr
        self.eps = eps
        self.hs: dict[Parameter, np.ndarray] = {}

    def update_one(self, param: Parameter) -> None:
        h = self.hs.get(param)
        if h is None:
            h = self.hs[param] = cuda.get_array_module(param.data).zeros_like(param.data)
        grad = param.grad.data
        h += grad * grad
        param.data -= self.lr * grad / (np.sqrt(h) + self.eps)


class AdaDelta(Optimizer):
    """AdaDelta (Zeiler 2012): no learning rate; the step is scaled by the ratio of running
    RMS of past steps to running RMS of gradients."""

    def __init__(self, rho: float = 0.95, eps: float = 1e-6, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rho = rho
        self.eps = eps
        self.msg: dict[Parameter, np.ndarray] = {}
        self.msdx: dict[Parameter, np.ndarray] = {}

    def update_one(self, param: Parameter) -> None:
        msg = self.msg.get(param)
        if msg is None:
            xp = cuda.get_array_module(param.data)
            msg = self.msg[param] = xp.zeros_like(param.data)
            self.msdx[param] = xp.zeros_like(param.data)
        msdx = self.msdx[param]
        rho, eps = self.rho, self.eps
        grad = param.grad.data
        msg *= rho
        msg += (1 - rho) * grad * grad
        dx = np.sqrt((msdx + eps) / (msg + eps)) * grad
        msdx *= rho
        msdx += (1 - rho) * dx * dx
        param.data -= dx


class Adam(Optimizer):
    """Adam (Kingma & Ba 2015) with the bias correction folded into :attr:`lr`."""

    def __init__(
        self,
        alpha: float = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        eps: float = 1e-8,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.t = 0
        self.alpha = alpha
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps
        self.ms: dict[Parameter, np.ndarray] = {}
        self.vs: dict[Parameter, np.ndarray] = {}

    def update(self) -> None:
        steps = self.steps
        self.t += 1
        try:
            super().update()
        finally:
            if self.steps == steps:  # no step was taken (an error, or a skipped NaN step)
                self.t -= 1

    @property
    def lr(self) -> float:
        # alpha * sqrt(1 - beta2^t) / (1 - beta1^t)
        fix1 = 1.0 - math.pow(self.beta1, self.t)
        fix2 = 1.0 - math.pow(self.beta2, self.t)
        return self.alpha * math.sqrt(fix2) / fix1

    def update_one(self, param: Parameter) -> None:
        m = self.ms.get(param)
        if m is None:
            xp = cuda.get_array_module(param.data)
            m = self.ms[param] = xp.zeros_like(param.data)
            self.vs[param] = xp.zeros_like(param.data)
        v = self.vs[param]
        grad = param.grad.data
        m += (1 - self.beta1) * (grad - m)
        v += (1 - self.beta2) * (grad * grad - v)
        param.data -= self.lr * m / (np.sqrt(v) + self.eps)
