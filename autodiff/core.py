"""The engine's core: Variable, Function, the arithmetic primitives and backward.

Names follow DeZero (``dezero/core.py``) so the book's programs run by changing the import.
Differences that matter:

* Variable's operators are written out below as methods; nothing is patched in at import time.
* Backward pops Functions from a heap keyed on ``(-generation, -creation order)`` instead of
  re-sorting a list on every insert. The recorder in :mod:`autodiff.trace` hears each step
  through the observer hook (:func:`add_observer`).
* Each primitive writes its derivative once, as ``derivative(ops, *gys)`` over a small
  namespace of operations: without ``create_graph`` backward runs it with :data:`ARRAYS` on
  plain ndarrays and keeps intermediate gradients as arrays (no Function or Variable is built
  for a gradient nobody differentiates); with it, the same formula runs with :data:`VARIABLES`
  and is recorded. Broadcasting is summed back once, in the backward loop, not by each op.
* A plain number or array operand becomes a :class:`Constant`, which receives no ``.grad``.
* Every result is an ndarray, never a numpy scalar.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import operator
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

from autodiff import _shapes, cuda

__all__ = [
    "ARRAYS",
    "VARIABLES",
    "ArrayOps",
    "Config",
    "Constant",
    "Function",
    "Parameter",
    "Variable",
    "VariableOps",
    "add",
    "add_observer",
    "as_array",
    "as_variable",
    "div",
    "fit_gradient",
    "mul",
    "neg",
    "no_grad",
    "observing",
    "pow",
    "remove_observer",
    "replace_observers",
    "rsub",
    "scope",
    "sub",
    "test_mode",
    "using_config",
]


# =============================================================================
# Config
# =============================================================================
class _Switches(threading.local):
    """The switches of each thread (as torch's grad mode is per thread): a ``no_grad()`` on
    one thread builds no graph there and changes nothing another thread computes. A new
    thread starts with the defaults."""

    enable_backprop = True
    train = True


# The engine's hot paths read this directly (a thread-local attribute: ~20 ns more than a
# class attribute); programs read and write ``Config``.
_switches = _Switches()


def _switch(name: str) -> property:
    """``Config.<name>``, read and written on this thread's switches."""
    return property(
        lambda cls: getattr(_switches, name),
        lambda cls, value: setattr(_switches, name, value),
    )


class _ConfigType(type):
    enable_backprop = _switch("enable_backprop")
    train = _switch("train")


class Config(metaclass=_ConfigType):
    """The engine's switches, DeZero's ``Config``: ``Config.enable_backprop = False`` (or
    :func:`no_grad`) records no graph; ``Config.train`` drives dropout and batch norm. Each
    thread has its own (they start True), as torch's grad mode: the app's threads never
    switch each other's engine work."""


@contextlib.contextmanager
def using_config(name: str, value: Any) -> Iterator[None]:
    old_value = getattr(Config, name)
    setattr(Config, name, value)
    try:
        yield
    finally:
        setattr(Config, name, old_value)


def no_grad():
    """Context manager: operations inside build no graph (their results are constants)."""
    return using_config("enable_backprop", False)


def test_mode():
    """Context manager: ``Config.train`` is False inside (dropout becomes the identity)."""
    return using_config("train", False)


# =============================================================================
# Observers: the recorder's hook. With none attached the cost is one tuple check.
# =============================================================================
_observers: tuple = ()  # every attached observer, in the order attached
_attached: tuple = ()  # (observer, the ident of the thread that attached it), in that order
# The threads that have observers: an operation is reported only to the observers of the
# thread that runs it (a recording on one thread takes in nothing another thread does).
_threads: frozenset = frozenset()
_get_ident = threading.get_ident


def observing() -> bool:
    """Whether the current thread has observers: its operations are reported."""
    return bool(_observers) and _get_ident() in _threads


def add_observer(observer: Any) -> None:
    """Attach an observer to the current thread: it sees the engine's work on this thread
    only (as torch's dispatch modes do), so another thread's operations never reach a
    recording. It may define any of:

    ``on_forward(function, inputs, outputs, recorded)``: after a Function ran forward;
    ``recorded`` is False under ``no_grad`` (the outputs are constants, no graph was built).
    An input the engine made to wrap a plain number or array operand (``x * 2``,
    ``matmul(x, ndarray)``) is a :class:`Constant`.
    ``on_forward_one(function, inputs, output)``: optional, with ``on_forward``: called
    instead of it for a recorded operation with one output (nearly all of them), so that
    the engine builds no list of outputs for it.
    ``on_backward_begin(output, retain_grad, create_graph)`` and ``on_backward_end(output)``:
    around a backward pass.
    ``on_backward_event(function, output_grads, input_grads, accumulated, cleared)``: after
    each Function's step of it. ``output_grads``: the gradient each output delivered (None for
    an output that received none); ``input_grads``: the gradient given to each input slot
    (summed back to the input's shape); ``accumulated``: for each slot whose input already held
    a gradient, ``(slot, old, new)`` with ``new = old + contribution``; ``cleared``: the outputs
    whose gradient was dropped because ``retain_grad`` was False. The gradients are as the loop
    holds them: ndarrays (numpy scalars from a user's backward) or, with create_graph,
    Variables.
    ``on_rename(variable)``: ``variable.name`` was assigned.
    ``on_scope_begin(part)`` and ``on_scope_end()``: a named part of the program begins and
    ends (an observer defines both or neither): ``part`` is the Layer whose ``__call__`` runs
    (:mod:`autodiff.layers`) or the name given to :func:`scope`. Scopes nest.
    """
    with _observers_lock:
        if observer not in _observers:
            _set_attached((*_attached, (observer, _get_ident())))


def remove_observer(observer: Any) -> None:
    """Detach an observer (from any thread)."""
    with _observers_lock:
        _set_attached(tuple(pair for pair in _attached if pair[0] is not observer))


def replace_observers(detach: tuple, attach: tuple) -> None:
    """Detach the observers ``detach``, then attach ``attach`` to the current thread, in that
    order: what :func:`remove_observer` and :func:`add_observer` do one by one, in one change
    of the observers and one binding of the handlers (a long run's recording hands the engine
    to a new recorder at many a backward pass's end: four changes were most of that)."""
    me = _get_ident()
    with _observers_lock:
        attached = tuple(pair for pair in _attached if all(pair[0] is not o for o in detach))
        for observer in attach:
            if observer not in (o for o, _ in attached):
                attached = (*attached, (observer, me))
        _set_attached(attached)


# Held while the observers change and their handlers are bound: threads that attach and
# detach at once lose none of each other's changes. Only attaching takes it, never an operation.
_observers_lock = threading.RLock()


def _set_attached(attached: tuple) -> None:
    """(Holding _observers_lock) the observers are now ``attached``."""
    global _observers, _attached, _threads
    _attached = attached
    _observers = tuple(o for o, _ in attached)
    _threads = frozenset(t for _, t in attached)
    if not _deferring.depth:
        _bind_handlers()


class _Deferring(threading.local):
    depth = 0  # inside observers_changing() on this thread: bound once, at its end


_deferring = _Deferring()


@contextlib.contextmanager
def observers_changing() -> Iterator[None]:
    """Attach and detach several observers, binding the handlers once at the end (or rebind
    them, an observer's class having changed: autodiff.trace's LineRecorder). No operation of
    this thread may run inside: its handlers are the old ones until it ends (another thread's
    changes bind at once)."""
    _deferring.depth += 1
    try:
        yield
    finally:
        _deferring.depth -= 1
        if not _deferring.depth:
            with _observers_lock:
                _bind_handlers()


_EVENTS = (
    "on_forward",
    "on_backward_begin",
    "on_backward_event",
    "on_backward_end",
    "on_rename",
)
# event -> the observers' bound handlers, looked up once when an observer is attached
_handlers: dict[str, tuple] = {}
# The handlers of the events that fire once per operation, read directly where they fire: an
# observer that does not handle one costs nothing there.
_on_forward: tuple = ()
# What a recorded operation with one output calls, ``(function, inputs, output)``: each
# observer's ``on_forward_one``, or its ``on_forward`` wrapped (no list of outputs is built
# for the observers that take one output); with exactly one, it is also ``_forward_one``,
# called without a loop.
_forward_ones: tuple = ()
_forward_one: Any = None
_on_backward_event: tuple = ()
# The handlers of a backward pass's beginning and end, read directly by _backward (no event
# name looked up, no arguments packed, once per pass per observer)
_on_backward_begin: tuple = ()
_on_backward_end: tuple = ()
# The one ``on_backward_event`` handler, called without a loop; None with none or several.
_backward_step: Any = None
_on_rename: tuple = ()
# (on_scope_begin, on_scope_end) of each observer that handles scopes: Layer.__call__ reads it
# once per call (empty: no scope is opened at all)
_on_scope: tuple = ()
# The callback of each recorded output's weak reference (``Function.outputs``): the
# ``output_ref_callback`` of the one observer that has one (None: none, or several, and the
# references are plain). A recorder that gives its own keeps the engine's reference instead of
# making a second one per output.
_output_ref_callback: Any = None


def _bind_handlers() -> None:
    global _handlers, _on_forward, _forward_ones, _forward_one, _on_backward_event
    global _backward_step, _on_rename, _on_scope, _output_ref_callback
    global _on_backward_begin, _on_backward_end
    # Plain loops, one pass over the observers: every trace.record() binds twice (start and
    # stop), a fixed cost a short recorded block pays in full.
    if not _observers:
        _handlers = {}
        _on_forward = _forward_ones = _on_backward_event = _on_rename = _on_scope = ()
        _on_backward_begin = _on_backward_end = ()
        _forward_one = _backward_step = _output_ref_callback = None
        return
    handlers: dict[str, tuple] = dict.fromkeys(_EVENTS, ())
    forward_ones: tuple = ()
    scopes: tuple = ()
    callbacks: tuple = ()
    # Observers on several threads (rare: e.g. a gradient check beside a program's run): each
    # handler is wrapped to answer its own thread's operations only, and outputs' references
    # get no observer's callback. On one thread the handlers are called as they are.
    only = _only_on if len(_threads) > 1 else None
    for o, thread in _attached:
        for event in _EVENTS:
            h = getattr(o, event, None)
            if h is not None:
                handlers[event] += (h if only is None else only(thread, h),)
        on_forward = getattr(o, "on_forward", None)
        if on_forward is not None:
            h = _one_output_handler(o, on_forward)
            forward_ones += (h if only is None else only(thread, h),)
        begin = getattr(o, "on_scope_begin", None)
        if begin is not None:
            end = o.on_scope_end
            scopes += ((begin, end) if only is None else (only(thread, begin), only(thread, end)),)
        callback = getattr(o, "output_ref_callback", None)
        if callback is not None and only is None:
            callbacks += (callback,)
    _handlers = handlers
    _on_forward = handlers["on_forward"]
    _forward_ones = forward_ones
    _forward_one = forward_ones[0] if len(forward_ones) == 1 else None
    _on_backward_event = steps = handlers["on_backward_event"]
    _backward_step = steps[0] if len(steps) == 1 else None
    _on_backward_begin = handlers["on_backward_begin"]
    _on_backward_end = handlers["on_backward_end"]
    _on_rename = handlers["on_rename"]
    _on_scope = scopes
    _output_ref_callback = callbacks[0] if len(callbacks) == 1 else None


def _only_on(thread: int, handler: Any) -> Any:
    """``handler``, called only for the work of thread ``thread``."""

    def on_its_thread(*args: Any) -> None:
        if _get_ident() == thread:
            handler(*args)

    return on_its_thread


def _one_output_handler(observer: Any, on_forward: Any) -> Any:
    one = getattr(observer, "on_forward_one", None)
    if one is not None:
        return one

    def wrapped(function: Any, inputs: list, output: Variable) -> None:
        on_forward(function, inputs, [output], True)

    return wrapped


def _begin_scope(part: Any) -> tuple:
    """Tell the scope handlers that ``part`` begins; returns the ends to call when it is over
    (the same observers, even if others were attached in between)."""
    pairs = _on_scope if _get_ident() in _threads else ()
    for begin, _ in pairs:
        begin(part)
    return pairs


@contextlib.contextmanager
def scope(name: str) -> Iterator[None]:
    """A named part of the program: the recorder puts every Function run inside the block in
    scope ``name`` (nested in the scope around it, e.g. a Layer's), and the viewer can
    collapse it into one box. Costs nothing when nothing records.

    >>> with scope("loss"):
    ...     loss = F.mean_squared_error(y, t)
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"scope() takes a non-empty name (a str), not {name!r}")
    pairs = _begin_scope(name) if _on_scope else ()
    try:
        yield
    finally:
        for _, end in pairs:
            end()


@contextlib.contextmanager
def _sole_observer(observer: Any) -> Iterator[None]:
    """Inside the block ``observer`` is the only one of this thread (a replayed backward
    that nobody else should record); the others come back after it. Other threads keep
    theirs."""
    me = _get_ident()
    with _observers_lock:
        mine = tuple(pair for pair in _attached if pair[1] == me)
        _set_attached((*[p for p in _attached if p[1] != me], (observer, me)))
    try:
        yield
    finally:
        with _observers_lock:
            _set_attached((*[p for p in _attached if p[1] != me], *mine))


def _notify(event: str, *args: Any) -> None:
    for handler in _handlers.get(event, ()):
        handler(*args)


# Creation order of Variables and Functions: breaks generation ties deterministically. It is
# also each object's identity for the recorder (unlike id(), never reused), so a copy gets its
# own (_restore_state).
_creation_counter = itertools.count()


def _restore_state(obj: Any, state: Any) -> None:
    """``__setstate__`` of Variable and Function (copy, deepcopy, pickle): the attributes as
    saved, and a new creation order, since the copy is a new object."""
    dict_state, slot_state = state if isinstance(state, tuple) else (state, None)
    if dict_state:
        obj.__dict__.update(dict_state)
    if slot_state:
        for name, value in slot_state.items():
            setattr(obj, name, value)
    obj._order = next(_creation_counter)


# =============================================================================
# Variable
# =============================================================================
_ACCEPTED_SCALARS = (int, float, np.number, np.bool_)


class Variable:
    """A node holding an ndarray, its gradient and the Function that created it."""

    __slots__ = ("__weakref__", "_name", "_order", "creator", "data", "generation", "grad")
    __array_priority__ = 200

    def __array_ufunc__(self, ufunc: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        # numpy hands us every ufunc that meets a Variable. ``np.ones(3) * v`` becomes our
        # reflected operator (a Variable); ``array -= lr * p.grad`` (micrograd's update, p.grad
        # being a Variable) updates the array in place with the Variable's data, as an array
        # operand would; any other ufunc is refused with a message naming ``.data``.
        out = kwargs.get("out")
        if method == "__call__" and len(args) == 2 and ufunc in _REFLECTED:
            a, b = args
            if out is None and len(kwargs) == 0 and b is self and not isinstance(a, Variable):
                return getattr(self, _REFLECTED[ufunc])(a)
            if out is not None and len(out) == 1 and out[0] is a and type(a) is np.ndarray:
                return ufunc(a, b.data if isinstance(b, Variable) else b, **kwargs)
        if method == "__call__" and ufunc in (np.equal, np.not_equal):
            # ``array == v``: Variables compare by identity, and an array is not this one
            return ufunc is np.not_equal
        raise TypeError(
            f"numpy.{ufunc.__name__} ({method}) on a Variable: a Variable is a graph node, not "
            "an array; use autodiff.functions (or the method, v.exp()) to differentiate it, or "
            "its array, v.data, for numpy"
        )

    def __init__(self, data: Any, name: str | None = None) -> None:
        if data is not None and type(data) is not np.ndarray:
            if cuda.is_cupy_array(data):
                pass  # on the GPU: kept as it is
            elif isinstance(data, np.ndarray):
                data = np.asarray(data)
            elif isinstance(data, _ACCEPTED_SCALARS) and not isinstance(data, bool):
                data = np.asarray(data, dtype=np.float64 if isinstance(data, int) else None)
            else:
                raise TypeError(
                    f"Variable: {type(data).__name__} is not supported; "
                    "pass a numpy ndarray (or a CuPy array), a numpy scalar or a Python number"
                )
        if data is not None and data.dtype.kind in "OSUVM":
            raise TypeError(
                f"Variable: an array of dtype {data.dtype} (shape {data.shape}) is not "
                "supported; pass numbers (a float or int array)"
            )
        self.data = data
        self._name = name
        self.grad: Variable | None = None
        self.creator: Function | None = None
        self.generation = 0
        self._order = next(_creation_counter)

    @property
    def name(self) -> str | None:
        return self._name

    @name.setter
    def name(self, value: str | None) -> None:
        self._name = value
        # a recorder keeps names given after the Variable was made
        if _on_rename and _get_ident() in _threads:
            for handler in _on_rename:
                handler(self)

    # --- array-like properties --------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def size(self) -> int:
        return self.data.size

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        if self.data is None:
            return "variable(None)"
        p = str(self.data).replace("\n", "\n" + " " * 9)
        return "variable(" + p + ")"

    # --- graph bookkeeping ---------------------------------------------------
    def set_creator(self, func: Function) -> None:
        self.creator = func
        self.generation = func.generation + 1

    def unchain(self) -> None:
        """Forget the creator: this Variable becomes a leaf."""
        self.creator = None

    def unchain_backward(self) -> None:
        """Cut every creator link upstream of this Variable (truncated backprop)."""
        if self.creator is None:
            return
        funcs = [self.creator]
        seen = {id(self.creator)}
        while funcs:
            f = funcs.pop()
            for x in f.inputs:
                if x.creator is not None:
                    if id(x.creator) not in seen:
                        seen.add(id(x.creator))
                        funcs.append(x.creator)
                    x.unchain()

    def cleargrad(self) -> None:
        self.grad = None

    # --- device (DeZero's; autodiff.cuda) ----------------------------------
    def to_cpu(self) -> None:
        """Move ``data`` (and a gradient held) to numpy arrays."""
        self._move(cuda.as_numpy)

    def to_gpu(self) -> None:
        """Move ``data`` (and a gradient held) to CuPy arrays on the GPU; RuntimeError
        without CuPy."""
        if not cuda.gpu_enable:
            raise RuntimeError(cuda.CUPY_MISSING)
        self._move(cuda.as_cupy)

    def _move(self, convert: Any) -> None:
        if self.data is not None:
            self.data = convert(self.data)
        if self.grad is not None and self.grad.data is not None:
            self.grad.data = convert(self.grad.data)

    __setstate__ = _restore_state

    def backward(
        self, gradient: Any = None, retain_grad: bool = False, create_graph: bool = False
    ) -> None:
        """Backpropagate from this Variable to every leaf of its graph.

        ``gradient`` seeds it, as in PyTorch: d(something)/d(this Variable), a number or an
        array of this Variable's shape (or a Variable); a number or a 0-d array is broadcast
        to the shape. None seeds ones (or the gradient this Variable already holds, as in
        DeZero). The seed becomes this Variable's ``.grad``.
        Gradients accumulate: calling backward twice (or reaching a leaf by two paths)
        adds up, until :meth:`cleargrad` resets it, as in DeZero and PyTorch.
        ``retain_grad=False`` drops the gradients of intermediate Variables once used;
        ``create_graph=True`` records the backward pass itself, so the gradients are
        differentiable again (higher-order derivatives, Newton's method).
        """
        for flag, value in (("retain_grad", retain_grad), ("create_graph", create_graph)):
            if not isinstance(value, bool | np.bool_):
                raise TypeError(
                    f"backward: {flag} must be True or False, not {type(value).__name__}; "
                    "the signature is backward(gradient=None, retain_grad=False, "
                    "create_graph=False): pass a seed as gradient=..."
                )
        if gradient is not None:
            if isinstance(gradient, bool | np.bool_):
                raise TypeError(
                    f"backward({gradient!r}): the first argument is the gradient that seeds "
                    "backward (as in PyTorch), not a flag; the signature is "
                    "backward(gradient=None, retain_grad=False, create_graph=False): write "
                    f"backward(retain_grad={gradient!r}) for DeZero's flag, or pass the seed "
                    "as gradient=..."
                )
            self.grad = _seed(self, gradient, create_graph)
        _backward(self, retain_grad, create_graph)

    # --- shape methods (composites in autodiff.functions) -------------------
    def reshape(self, *shape: Any) -> Variable:
        if len(shape) == 1 and isinstance(shape[0], tuple | list):
            shape = tuple(shape[0])
        return _functions().reshape(self, shape)

    def transpose(self, *axes: Any) -> Variable:
        if len(axes) == 0:
            axes = None
        elif len(axes) == 1 and (isinstance(axes[0], tuple | list) or axes[0] is None):
            axes = axes[0]
        return _functions().transpose(self, axes)

    @property
    def T(self) -> Variable:
        return _functions().transpose(self)

    def sum(self, axis: Any = None, keepdims: bool = False) -> Variable:
        return _functions().sum(self, axis, keepdims)

    def max(self, axis: Any = None, keepdims: bool = False) -> Variable:
        return _functions().max(self, axis, keepdims)

    def min(self, axis: Any = None, keepdims: bool = False) -> Variable:
        return _functions().min(self, axis, keepdims)

    # --- elementwise functions as methods (PyTorch's habit: x.relu()) ----------
    def exp(self) -> Variable:
        return _functions().exp(self)

    def log(self) -> Variable:
        return _functions().log(self)

    def sin(self) -> Variable:
        return _functions().sin(self)

    def cos(self) -> Variable:
        return _functions().cos(self)

    def tanh(self) -> Variable:
        return _functions().tanh(self)

    def sigmoid(self) -> Variable:
        return _functions().sigmoid(self)

    def relu(self) -> Variable:
        return _functions().relu(self)

    # --- operators -------------------------------------------------------------
    def __add__(self, other: Any) -> Variable:
        return add(self, other)

    def __radd__(self, other: Any) -> Variable:
        return add(self, other)

    def __sub__(self, other: Any) -> Variable:
        return sub(self, other)

    def __rsub__(self, other: Any) -> Variable:
        return rsub(self, other)

    def __mul__(self, other: Any) -> Variable:
        return mul(self, other)

    def __rmul__(self, other: Any) -> Variable:
        return mul(self, other)

    def __truediv__(self, other: Any) -> Variable:
        return div(self, other)

    def __rtruediv__(self, other: Any) -> Variable:
        return rdiv(self, other)

    def __neg__(self) -> Variable:
        return neg(self)

    def __pos__(self) -> Variable:
        return self

    def __pow__(self, c: Any) -> Variable:
        return pow(self, c)

    def __matmul__(self, other: Any) -> Variable:
        return _functions().matmul(self, other)

    def __rmatmul__(self, other: Any) -> Variable:
        return _functions().matmul(other, self)

    def __getitem__(self, slices: Any) -> Variable:
        return _functions().get_item(self, slices)

    # In-place operators. With backprop on they build the graph as the plain ones do (a new
    # Variable: ``x += 1`` rebinds x). Under no_grad they update ``.data`` itself, as
    # PyTorch's do: the same array, its dtype kept (numpy's in-place casting rules).
    def __iadd__(self, other: Any) -> Variable:
        return add(self, other) if _switches.enable_backprop else self._update(np.add, other)

    def __isub__(self, other: Any) -> Variable:
        return sub(self, other) if _switches.enable_backprop else self._update(np.subtract, other)

    def __imul__(self, other: Any) -> Variable:
        return mul(self, other) if _switches.enable_backprop else self._update(np.multiply, other)

    def __itruediv__(self, other: Any) -> Variable:
        if _switches.enable_backprop:
            return div(self, other)
        return self._update(np.true_divide, other)

    def _update(self, ufunc: Any, other: Any) -> Variable:
        data = self.data
        value = other.data if isinstance(other, Variable) else other
        try:
            ufunc(data, value, out=data)
        except ValueError as e:
            shape = np.shape(value)
            raise ValueError(
                f"{ufunc.__name__} in place under no_grad: an operand of shape {shape} cannot "
                f"update a Variable of shape {data.shape} in place ({e})"
            ) from None
        return self

    # A Variable is a graph node, hashed by identity; == stays identity too so that
    # Variables can live in sets and dicts (as in DeZero).
    __hash__ = object.__hash__


# numpy's ufunc for ``array <op> variable`` -> the Variable's reflected operator
_REFLECTED = {
    np.add: "__radd__",
    np.subtract: "__rsub__",
    np.multiply: "__rmul__",
    np.true_divide: "__rtruediv__",
    np.matmul: "__rmatmul__",
}


class Parameter(Variable):
    """A Variable that a Layer registers as trainable."""

    __slots__ = ()


class Constant(Variable):
    """A plain number or array operand the engine wrapped (``x * 2``, ``matmul(x, ndarray)``).

    Nobody asked for its gradient, so backward stores none (``.grad`` stays None). Besides
    saving work, this keeps create_graph from tying a constant to its own gradient's graph
    (``d(x / c)/dc`` uses ``c``): a reference cycle reference counting could not free.
    """

    __slots__ = ()


def as_array(x: Any, array_module: Any = np) -> NDArray:
    """Return ``x`` as an array: an ndarray or a CuPy array as it is, numpy scalars and Python
    numbers as 0-d arrays of ``array_module`` (numpy, or DeZero's ``xp``)."""
    if type(x) is np.ndarray or cuda.is_cupy_array(x):
        return x
    return array_module.asarray(x)


def as_variable(obj: Any) -> Variable:
    if isinstance(obj, Variable):
        return obj
    return Variable(obj)


def _functions():
    # autodiff.functions imports this module; importing it lazily avoids the cycle.
    global _functions_module
    if _functions_module is None:
        from autodiff import functions

        _functions_module = functions
    return _functions_module


_functions_module = None


# =============================================================================
# Function
# =============================================================================
class _OnlyOne:
    """``f.input`` / ``f.output`` of a Function with exactly one input / output (the book's
    early steps name them so). A non-data descriptor: a Function that sets ``self.input``
    itself (those steps' own ``__call__``) keeps what it set, in its ``__dict__``."""

    def __init__(self, plural: str) -> None:
        self.plural = plural

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, f: Any, owner: type | None = None) -> Any:
        if f is None:
            return self
        items = getattr(f, self.plural, None)
        if items is None:
            raise AttributeError(
                f"{type(f).__name__}.{self.name}: the Function has not been called (or ran "
                "under no_grad, which links no graph)"
            )
        if len(items) != 1:
            raise AttributeError(
                f"{type(f).__name__}.{self.name}: the Function has {len(items)} "
                f"{self.plural}; read f.{self.plural}"
            )
        return items[0] if self.plural == "inputs" else items[0]()


class Function:
    """Base class of every primitive.

    ``forward`` takes and returns ndarrays. The derivative is written either way:

    * ``derivative(ops, *gys)``, once, for the engine's primitives: the output gradients in,
      one gradient per input out (None for none), computed with the operations of ``ops``
      (:class:`ArrayOps` or :class:`VariableOps`) and the methods ndarrays and Variables share
      (arithmetic, ``@``, ``[...]``, ``.reshape``, ``.transpose``, ``.T``, ``.sum``, ``.shape``).
      ``ops.value(v)`` is what the formula computes with for an input or output Variable ``v``
      (``ops.value(self.inputs[0])``, ``ops.value(self.outputs[0]())``).
      Backward runs it on arrays, or on Variables (recorded) with ``create_graph``;
    * ``backward(*gys)``, on Variables, as in DeZero: a user's Function. Without
      ``create_graph`` it runs unrecorded.

    A gradient may keep the shape broadcasting gave it (``x + b`` with ``b`` of shape (3,)):
    backward sums it back to the input's shape. A Function holds its inputs strongly and its
    outputs by weakref: dropping the final output frees the graph by reference counting alone.

    ``backward_data``, the same derivative on plain arrays written a second time, is a fast path
    kept only where ``bench/engine.py`` shows it pays (each says which row); backward uses it
    instead of ``derivative`` when ``create_graph`` is False.
    """

    # None: the class writes ``backward`` itself (see __init_subclass__)
    derivative: Any = None
    # None: no second, array-only derivative
    backward_data: Any = None

    __slots__ = ("__dict__", "__weakref__", "_order", "generation", "inputs", "outputs")
    #: the one input Variable (``inputs[0]``) of a one-input Function
    input = _OnlyOne("inputs")
    #: the one output Variable (``outputs[0]()``, None once freed) of a one-output Function
    output = _OnlyOne("outputs")

    def __call__(self, *inputs: Any) -> Any:
        # This runs once per operation. One and two inputs (nearly every primitive) and one
        # output take straight paths without the generic list building.
        if len(inputs) == 1:
            x = inputs[0]
            if not isinstance(x, Variable):
                x = _constant(as_array(x))
            inputs = [x]
            generation = x.generation
            ys = self.forward(x.data)
        elif len(inputs) == 2:
            x0, x1 = inputs
            if not isinstance(x0, Variable):
                x0 = _constant(as_array(x0))
            if not isinstance(x1, Variable):
                x1 = _constant(as_array(x1))
            inputs = [x0, x1]
            generation = x0.generation if x0.generation > x1.generation else x1.generation
            ys = self.forward(x0.data, x1.data)
        else:
            inputs = list(inputs)
            generation = 0
            for i, x in enumerate(inputs):
                if not isinstance(x, Variable):
                    inputs[i] = x = _constant(as_array(x))
                if x.generation > generation:
                    generation = x.generation
            ys = self.forward(*[x.data for x in inputs])

        if type(ys) is not tuple:
            # numpy ufuncs turn 0-d arrays into numpy scalars; results stay ndarrays (or
            # CuPy's arrays)
            if type(ys) is not np.ndarray:
                ys = np.asarray(ys) if isinstance(ys, np.generic) else as_array(ys)
            y = Variable(ys)
            self._order = next(_creation_counter)
            if _switches.enable_backprop:
                self.generation = generation
                y.creator = self
                y.generation = generation + 1
                self.inputs = inputs
                if _forward_ones and _get_ident() in _threads:
                    self.outputs = [weakref.ref(y, _output_ref_callback)]
                    if _forward_one is not None:
                        _forward_one(self, inputs, y)
                    else:
                        for handler in _forward_ones:
                            handler(self, inputs, y)
                else:
                    self.outputs = [weakref.ref(y)]
            elif _on_forward and _get_ident() in _threads:
                for handler in _on_forward:
                    handler(self, inputs, [y], False)
            return y

        outputs = [Variable(y if type(y) is np.ndarray else as_array(y)) for y in ys]
        self._order = next(_creation_counter)
        if _switches.enable_backprop:
            self.generation = generation
            for output in outputs:
                output.creator = self
                output.generation = generation + 1
            self.inputs = inputs
            if _on_forward and _get_ident() in _threads:
                callback = _output_ref_callback
                self.outputs = [weakref.ref(output, callback) for output in outputs]
                for handler in _on_forward:
                    handler(self, inputs, outputs, True)
            else:
                self.outputs = [weakref.ref(output) for output in outputs]
        elif _on_forward and _get_ident() in _threads:
            for handler in _on_forward:
                handler(self, inputs, outputs, False)
        return outputs[0] if len(outputs) == 1 else outputs

    __setstate__ = _restore_state

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__
        if "backward" in own and "derivative" not in own:
            cls.derivative = None  # a subclass's own backward is its derivative, on both paths
        if ("backward" in own or "derivative" in own) and "backward_data" not in own:
            cls.backward_data = None  # an inherited fast path would disagree with it

    def forward(self, *xs: NDArray) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.forward is not implemented")

    def backward(self, *gys: Variable) -> Any:
        """The derivative on Variables: one gradient per input, each of the input's shape."""
        if self.derivative is None:
            raise NotImplementedError(f"{type(self).__name__}.backward is not implemented")
        gxs = self.derivative(VARIABLES, *gys)
        inputs = self.inputs
        if type(gxs) is not tuple:
            return _fit(self, 0, gxs, inputs[0], True) if len(inputs) == 1 else gxs
        if len(gxs) != len(inputs):
            return gxs  # backward names the mismatch
        pairs = enumerate(zip(gxs, inputs, strict=True))
        return tuple(_fit(self, k, gx, x, True) for k, (gx, x) in pairs)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} generation={getattr(self, 'generation', '?')}>"


# =============================================================================
# The operations a derivative is written with
# =============================================================================
class ArrayOps:
    """A derivative's operations on ndarrays: backward without ``create_graph``.

    Only what ndarrays and Variables spell differently is here; arithmetic, ``@``, ``[...]``,
    ``.reshape``, ``.transpose``, ``.T``, ``.sum`` and ``.shape`` are common to both.
    """

    __slots__ = ()
    #: what the formula computes with for an input or output Variable: its array
    value = staticmethod(operator.attrgetter("data"))
    exp = staticmethod(np.exp)
    sin = staticmethod(np.sin)
    cos = staticmethod(np.cos)
    sum_to = staticmethod(_shapes.sum_to)
    broadcast_to = staticmethod(_shapes.broadcast_to)

    @staticmethod
    def scatter_add(gy: NDArray, slices: Any, shape: tuple[int, ...]) -> NDArray:
        """Zeros of ``shape`` with ``gy`` added at ``slices``: the gradient of ``x[slices]``."""
        return _functions()._scatter_add(gy, slices, shape)

    @staticmethod
    def softmax(x: NDArray, axis: Any) -> NDArray:
        return _functions()._softmax_data(x, axis)

    # A derivative that is itself a primitive (conv2d's gradient is deconv2d, max pooling's
    # a scatter): on arrays, the Function's forward alone, building no graph.
    @staticmethod
    def apply(function: Function, *xs: NDArray) -> NDArray:
        return function.forward(*xs)


class VariableOps:
    """The same operations on Variables, recorded: backward with ``create_graph``."""

    __slots__ = ()

    @staticmethod
    def value(v: Variable) -> Variable:
        return v

    @staticmethod
    def exp(x: Variable) -> Variable:
        return _functions().exp(x)

    @staticmethod
    def sin(x: Variable) -> Variable:
        return _functions().sin(x)

    @staticmethod
    def cos(x: Variable) -> Variable:
        return _functions().cos(x)

    @staticmethod
    def sum_to(x: Variable, shape: tuple[int, ...]) -> Variable:
        return _functions().sum_to(x, shape)

    @staticmethod
    def broadcast_to(x: Variable, shape: tuple[int, ...]) -> Variable:
        return _functions().broadcast_to(x, shape)

    @staticmethod
    def scatter_add(gy: Variable, slices: Any, shape: tuple[int, ...]) -> Variable:
        return _functions().GetItemGrad(slices, shape)(gy)

    @staticmethod
    def softmax(x: Variable, axis: Any) -> Variable:
        return _functions().softmax(x, axis)

    # (see ArrayOps.apply) on Variables, the Function called: recorded
    @staticmethod
    def apply(function: Function, *xs: Variable) -> Variable:
        return function(*xs)


#: the derivative's operations without create_graph (plain arrays)
ARRAYS = ArrayOps()
#: with create_graph (Variables: the backward pass is recorded, differentiable again)
VARIABLES = VariableOps()


# =============================================================================
# Backward
# =============================================================================
def _backward(output: Variable, retain_grad: bool, create_graph: bool) -> None:
    # The one backward loop. Functions are popped from a heap keyed on (-generation, -creation
    # order): a Function runs only after every Function that consumed its outputs, and ties
    # go to the most recently created first, so the order is the same on every run. No
    # recursion: any depth works. With no observer of backward steps (``emit`` False) it skips
    # collecting what a step did.
    #
    # Gradients of intermediate Variables live in ``pending`` while they are being summed and
    # are handed to their creator when it is popped; only leaves (and, with retain_grad, the
    # intermediates) get a ``.grad`` Variable. Without create_graph the values are plain arrays
    # (``derivative(ARRAYS, ...)``), so no Variable is built for a gradient nobody will see.
    if output.data is None:
        raise ValueError(
            f"backward: {output.name or 'the Variable'} holds no data (Variable(None)); "
            "assign it an array before calling backward()"
        )
    if output.grad is None:
        output.grad = Variable(cuda.get_array_module(output.data).ones_like(output.data))
    seed = output.grad
    observers = bool(_observers) and _get_ident() in _threads  # this thread's are told
    step_event = _backward_step if observers else None  # the only one (None: several)
    step_events = _on_backward_event if observers else ()
    emit = bool(step_events)
    if observers:
        for handler in _on_backward_begin:
            handler(output, retain_grad, create_graph)
    creator = output.creator
    if creator is None:  # backward() on a leaf: its gradient is the seed, nothing to do
        if observers:
            for handler in _on_backward_end:
                handler(output)
        return

    pending: dict = {output: seed if create_graph else seed.data}
    heap: list = [(-creator.generation, -creator._order, creator)]
    seen: set = {creator}
    heappush, heappop = heapq.heappush, heapq.heappop
    if create_graph:
        old_mode = _switches.enable_backprop
        _switches.enable_backprop = True
    try:
        while heap:
            f = heappop(heap)[2]
            output_refs = f.outputs
            if len(output_refs) == 1:
                y = output_refs[0]()
                gy = pending.pop(y, None)
                if gy is None:
                    continue  # the output was dropped or received no gradient
                ys, gys = (y,), (gy,)
                single = True
            else:
                single = False
                ys = tuple(ref() for ref in output_refs)
                gys = [pending.pop(y, None) for y in ys]
                if all(gy is None for gy in gys):
                    continue  # nothing flowed into this Function (e.g. unused outputs)
                # an output that is alive but received nothing contributes zeros
                for k, y in enumerate(ys):
                    if gys[k] is None and y is not None:
                        zeros = cuda.get_array_module(y.data).zeros_like(y.data)
                        gys[k] = Variable(zeros) if create_graph else zeros
                gys = tuple(gys)

            # The outputs' gradients are complete: keep them on the Variables only if asked.
            # As in DeZero, retain_grad=False leaves every non-leaf's .grad None afterwards,
            # the output's own included.
            if not retain_grad and single:
                y.grad = None  # the common case, spelled out: this loop runs once per step
                cleared = ys if emit else ()
            else:
                cleared = []
                for y, gy in zip(ys, gys, strict=True):
                    if y is None or gy is None:
                        continue
                    if retain_grad:
                        if y is not output:
                            kept = gy
                            if y.grad is None and type(gy) is np.ndarray:
                                kept = gy.copy()  # its own array (see _shares_a_received)
                            y.grad = _accumulate(y.grad, kept, create_graph)
                    else:
                        y.grad = None
                        if emit:
                            cleared.append(y)
                cleared = tuple(cleared)

            if create_graph:
                gxs = f.backward(*gys)
            elif (derivative := f.backward_data) is not None:
                gxs = derivative(*gys)
            elif (derivative := f.derivative) is not None:
                gxs = derivative(ARRAYS, gy) if single else derivative(ARRAYS, *gys)
            else:
                gxs = _backward_without_graph(f, gys)
            inputs = f.inputs
            if type(gxs) is not tuple:
                gxs = (gxs,)
            if len(gxs) != len(inputs):
                raise ValueError(
                    f"{type(f).__name__}.backward returned {len(gxs)} gradient(s) for "
                    f"{len(inputs)} input(s); return one per input (None for no gradient)"
                )

            # a tuple grown only where a sum happens: most steps have none, and build nothing
            accumulated: tuple = ()
            for slot, x in enumerate(inputs):
                gx = gxs[slot]
                if gx is None:
                    continue
                if create_graph and not isinstance(gx, Variable):
                    gx = Variable(as_array(gx))  # a backward that returned plain arrays
                data = x.data
                if data is not None and gx.shape != data.shape:
                    gx = _fit(f, slot, gx, x, create_graph)
                    if emit:  # observers see the gradient the input received
                        gxs = (*gxs[:slot], gx, *gxs[slot + 1 :])
                c = x.creator
                if c is None:
                    if type(x) is Constant:
                        continue
                    # a leaf: .grad is its running sum, across backward() calls too
                    old = x.grad
                    if old is None and not create_graph:
                        if type(gx) is not np.ndarray:
                            gx = as_array(gx)
                        if gx is gys[0] or (
                            (gx.base is not None or len(gys) > 1) and _shares_a_received(gx, gys)
                        ):
                            gx = gx.copy()
                        x.grad = Variable(gx)
                        continue
                    x.grad = _accumulate(old, gx, create_graph)
                    if emit and old is not None:
                        accumulated = (*accumulated, (slot, old, x.grad))
                    continue
                old = pending.get(x)
                if old is None:
                    pending[x] = gx
                else:
                    pending[x] = new = old + gx
                    if emit:
                        accumulated = (*accumulated, (slot, old, new))
                if c not in seen:
                    seen.add(c)
                    heappush(heap, (-c.generation, -c._order, c))

            if emit:
                if step_event is not None:
                    step_event(f, gys, gxs, accumulated, cleared)
                else:
                    for handler in step_events:
                        handler(f, gys, gxs, accumulated, cleared)
    finally:
        if create_graph:
            _switches.enable_backprop = old_mode

    if observers:
        for handler in _on_backward_end:  # those attached now, as _notify would
            handler(output)


def _seed(output: Variable, gradient: Any, create_graph: bool) -> Variable:
    """``backward(gradient)``'s seed as the output's gradient Variable: of the output's shape
    (a scalar is broadcast to it) and, for a floating output, of its dtype."""
    data = output.data
    if data is None:
        return None  # _backward names the missing data
    if isinstance(gradient, Variable):
        if create_graph:  # the seed stays a graph node: derivatives reach it
            if gradient.shape != data.shape and gradient.ndim == 0:
                return _functions().broadcast_to(gradient, data.shape)
            _check_seed_shape(gradient.shape, data.shape)
            return gradient
        gradient = gradient.data
    dtype = data.dtype if data.dtype.kind in "fc" else None
    xp = cuda.get_array_module(data)
    try:
        seed = xp.asarray(gradient, dtype=dtype)
    except (TypeError, ValueError):
        raise TypeError(
            f"backward: the gradient must be a number, an array or a Variable, not "
            f"{type(gradient).__name__}"
        ) from None
    if seed.shape != data.shape:
        if seed.ndim != 0:
            _check_seed_shape(seed.shape, data.shape)
        seed = xp.full(data.shape, seed, dtype=seed.dtype)
    elif seed is gradient:
        seed = seed.copy()  # the caller's array is not the engine's to keep
    return Variable(seed)


def _check_seed_shape(given: tuple, wanted: tuple) -> None:
    if given != wanted:
        raise ValueError(
            f"backward: the gradient has shape {given} but the Variable has shape {wanted}; "
            "pass an array of the Variable's shape (or a number, broadcast to it)"
        )


def _shares_a_received(gx: NDArray, gys: tuple) -> bool:
    """Whether ``gx`` is (a view of) a gradient the step received: one handed on unchanged
    (``Add`` returns ``gy, gy``; ``reshape`` a view of it), which another Variable may hold as
    its ``.grad`` too. A leaf's ``.grad`` gets a copy, so that an in-place update of one
    gradient (``x.grad *= 0.5`` under no_grad) does not reach another."""
    root = gx if gx.base is None else gx.base
    for g in gys:
        if g is not None and (g is root or getattr(g, "base", None) is root or g is gx):
            return True
    return False


def _as_grad(g: Any) -> Variable:
    """A gradient value (an array, a numpy scalar, or a Variable) as a Variable."""
    if isinstance(g, Variable):
        return g
    return Variable(g if type(g) is np.ndarray else as_array(g))


def _accumulate(old: Variable | None, g: Any, create_graph: bool) -> Variable:
    """``old + g`` as a new Variable: recorded when create_graph, else added as arrays."""
    if old is None:
        return _as_grad(g)
    if create_graph:
        return old + g
    return _as_grad(old.data + g)


def _fit(f: Function, slot: int, gx: Any, x: Variable, recorded: bool) -> Any:
    """``gx`` summed back to the shape of ``f``'s input ``x`` (the one place broadcasting is
    undone in backward); a shape broadcasting cannot explain raises, naming the op."""
    data = x.data
    if gx is None or data is None or gx.shape == data.shape:
        return gx
    try:
        if recorded and isinstance(gx, Variable):
            return _functions().sum_to(gx, data.shape)
        return _shapes.sum_to(gx, data.shape)
    except ValueError:  # sum_to refuses any shape it cannot sum down to the input's
        raise ValueError(
            f"{type(f).__name__}.backward returned a gradient of shape {gx.shape} for input "
            f"{slot} of shape {data.shape}, which broadcasting does not explain"
        ) from None


def fit_gradient(f: Function, slot: int, gx: Any) -> Any:
    """A gradient for ``f``'s input ``slot`` as backward keeps it: summed back to the input's
    shape where broadcasting widened it. ValueError names the op for any other shape."""
    return _fit(f, slot, gx, f.inputs[slot], isinstance(gx, Variable))


def _backward_without_graph(f: Function, gys: tuple) -> tuple:
    """Run a user's Function's ``backward`` (on Variables) without recording."""
    old_mode = _switches.enable_backprop
    _switches.enable_backprop = False
    try:
        gxs = f.backward(*[None if g is None else _as_grad(g) for g in gys])
    finally:
        _switches.enable_backprop = old_mode
    if type(gxs) is not tuple:
        gxs = (gxs,)
    return tuple(g.data if isinstance(g, Variable) else g for g in gxs)


# =============================================================================
# Arithmetic primitives (each: a Function subclass and a lowercase function)
# =============================================================================
class Add(Function):
    formula = ("gx0 = gy", "gx1 = gy")

    def forward(self, x0, x1):
        try:
            return x0 + x1
        except ValueError as e:
            raise _broadcast_error("add", x0, x1) from e

    def derivative(self, ops, gy):
        return gy, gy  # backward sums a broadcast operand's share back to its shape


def add(x0: Any, x1: Any) -> Variable:
    return Add()(x0, x1 if isinstance(x1, Variable) else _operand(x1, x0))


def _operand(x: Any, like: Any) -> Any:
    """A plain number or array operand becomes a constant input (a leaf, no gradient wanted).

    A Python number takes the floating dtype of the other operand, as numpy's own scalars do,
    so ``float32_variable * 2.0`` stays float32.
    """
    if isinstance(x, Variable):
        return x
    if not isinstance(like, Variable):
        return _constant(as_array(x))
    data = like.data
    xp = np if type(data) is np.ndarray else cuda.get_array_module(data)
    if isinstance(x, int | float) and data.dtype.kind == "f":
        return _constant(xp.asarray(x, dtype=data.dtype))
    return _constant(as_array(x, xp))


def _constant(data: NDArray) -> Constant:
    """Wrap a plain number or array operand (the one place the engine makes a Constant)."""
    return Constant(data)


def _broadcast_error(op: str, x0: NDArray, x1: NDArray) -> ValueError:
    return ValueError(f"{op}: shapes {x0.shape} and {x1.shape} cannot be broadcast together")


class Mul(Function):
    formula = ("gx0 = gy · x1", "gx1 = gy · x0")

    def forward(self, x0, x1):
        try:
            return x0 * x1
        except ValueError as e:
            raise _broadcast_error("mul", x0, x1) from e

    def derivative(self, ops, gy):
        x0, x1 = self.inputs
        return gy * ops.value(x1), gy * ops.value(x0)


def mul(x0: Any, x1: Any) -> Variable:
    return Mul()(x0, x1 if isinstance(x1, Variable) else _operand(x1, x0))


class Neg(Function):
    formula = ("gx = −gy",)

    def forward(self, x):
        return -x

    def derivative(self, ops, gy):
        return -gy


def neg(x: Any) -> Variable:
    return Neg()(x)


class Sub(Function):
    formula = ("gx0 = gy", "gx1 = −gy")

    def forward(self, x0, x1):
        try:
            return x0 - x1
        except ValueError as e:
            raise _broadcast_error("sub", x0, x1) from e

    def derivative(self, ops, gy):
        return gy, -gy


def sub(x0: Any, x1: Any) -> Variable:
    return Sub()(x0, x1 if isinstance(x1, Variable) else _operand(x1, x0))


def rsub(x0: Any, x1: Any) -> Variable:
    # other - self
    return Sub()(_operand(x1, x0), x0)


class Div(Function):
    formula = ("gx0 = gy / x1", "gx1 = gy · (−x0 / x1²)")

    def forward(self, x0, x1):
        try:
            return x0 / x1
        except ValueError as e:
            raise _broadcast_error("div", x0, x1) from e

    def derivative(self, ops, gy):
        # d(x0/x1) = dx0/x1 - x0 dx1 / x1^2
        x0, x1 = ops.value(self.inputs[0]), ops.value(self.inputs[1])
        return gy / x1, gy * (-x0 / x1**2)


def div(x0: Any, x1: Any) -> Variable:
    return Div()(x0, x1 if isinstance(x1, Variable) else _operand(x1, x0))


def rdiv(x0: Any, x1: Any) -> Variable:
    # other / self
    return Div()(_operand(x1, x0), x0)


class Pow(Function):
    """``x ** c`` for a constant exponent ``c``."""

    formula = ("gx = gy · c · x^(c − 1)",)

    def __init__(self, c: Any) -> None:
        self.c = c

    def forward(self, x):
        return x**self.c

    def derivative(self, ops, gy):
        c = self.c
        return c * ops.value(self.inputs[0]) ** (c - 1) * gy


def pow(x: Any, c: Any) -> Variable:
    if isinstance(c, Variable):
        raise TypeError("pow: the exponent must be a constant (a number), not a Variable")
    return Pow(c)(x)
