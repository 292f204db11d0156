"""Every torch internal the PyTorch recorder relies on, and nothing else: each of these is
private or its timing is not promised across torch versions (checked on torch 2.13). When a
torch release moves one, this module is the one to change; ``tests/autodiff/
test_trace_pytorch.py`` checks each of them directly.

- ``TorchDispatchMode`` (``torch.utils._python_dispatch``): sees every aten op, below
  autograd, so an op's output has no ``grad_fn`` yet while the mode handles it;
- ``torch._C._current_autograd_node()``: the node whose backward is running (None outside
  backward);
- ``Variable._execution_engine.queue_callback``: runs at the end of the backward pass that is
  running (queued from inside one of its hooks; not when the pass fails), and
  ``torch._C._current_graph_task_id()``, which tells one pass from the next;
- ``node.metadata``: a dict per autograd node, where a node id is kept without a reference;
- ``node._input_metadata``: one entry per output of the node (its number of outputs);
- ``AccumulateGrad.variable`` and a custom Function's node class's ``_forward_cls``;
- a node's ``_saved_*`` attributes (what it saved for its backward), a view's ``_base``;
- the global module hooks of ``torch.nn.modules.module`` (``always_call``), and the global
  optimizer step hooks of ``torch.optim.optimizer`` (called with the step's ``args``, the
  optimizer first, and ``kwargs``);
- ``torch._C._DisableTorchDispatch``: runs the recorder's own ops unseen by its mode (and
  ``_dispatch_tls_is_dispatch_key_excluded(DispatchKey.Python)`` says it is on);
  ``_python_dispatch._get_current_dispatch_mode`` (the mode on top of this thread's stack),
  ``torch._C._autograd._top_saved_tensors_default_hooks`` (saved-tensor hooks on);
- ``torch.autograd.backward`` and ``torch.autograd.grad`` as module attributes that
  ``Tensor.backward`` looks up when called (the statistics-only recorder wraps them), the
  ``AccumulateGrad`` node class, and ``node._input_metadata``'s ``shape`` and ``dtype``;
- ``autograd.Function.apply`` as a classmethod the custom Functions inherit, whose node's
  edges are the tensors among its arguments in order (``function_inputs``), and
  ``Tensor.retain_grad`` as a method of torch's C base class that ``torch.Tensor`` may
  override (both wrapped while recording: ``wrap_function_apply``, ``wrap_retain_grad``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import torch
from torch.nn.modules import module as _module
from torch.utils import _python_dispatch
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = [
    "ACCUMULATE_GRAD",
    "RUNS_WITH_MODE_OFF",
    "DispatchMode",
    "accumulated_leaf",
    "current_autograd_node",
    "dispatch_disabled",
    "forward_class_name",
    "function_inputs",
    "graph_task_id",
    "is_compiled_module",
    "is_torchs_backward",
    "module_hooks",
    "no_dispatch",
    "node_tag",
    "on_stack",
    "on_top",
    "optimizer_hooks",
    "output_count",
    "output_metadata",
    "queue_end_of_pass",
    "saved",
    "saved_tensor_hooks_active",
    "tag_node",
    "undo_all",
    "view_base",
    "wrap_backward",
    "wrap_function_apply",
    "wrap_retain_grad",
]

_TAG = "autodiff.trace"  # the key of a recorded node's id in node.metadata


class DispatchMode(TorchDispatchMode):
    """Hands each aten op to ``handle(func, args, kwargs)``, which runs it and returns what
    it returned. Inside ``handle`` the mode is off: ops the recorder runs are not seen."""

    def __init__(self, handle: Callable[[Any, tuple, dict], Any]) -> None:
        super().__init__()
        self._handle = handle

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None):
        return self._handle(func, args, kwargs or {})


def on_top(mode: Any) -> bool:
    """Whether ``mode`` is the innermost dispatch mode on this thread."""
    return _python_dispatch._get_current_dispatch_mode() is mode


def on_stack(mode: Any) -> bool:
    """Whether ``mode`` is among the dispatch modes on this thread."""
    return any(m is mode for m in _python_dispatch._get_current_dispatch_mode_stack())


def saved_tensor_hooks_active() -> bool:
    """Whether saved-tensor hooks are on (``torch.utils.checkpoint`` without reentrance:
    the backward recomputes the forward ops run now)."""
    return torch._C._autograd._top_saved_tensors_default_hooks(False) is not None


def dispatch_disabled() -> bool:
    """Whether :func:`no_dispatch` (torch's ``_DisableTorchDispatch``) is on here: ops run
    now are no dispatch mode's (the recorder's own, a gradient check the viewer runs)."""
    return torch._C._dispatch_tls_is_dispatch_key_excluded(torch._C.DispatchKey.Python)


def no_dispatch() -> Any:
    """A context in which no dispatch mode sees the ops run (the recorder's own, in hooks)."""
    return torch._C._DisableTorchDispatch()


def current_autograd_node() -> Any:
    """The autograd node whose backward is running on this thread, or None."""
    return torch._C._current_autograd_node()


def graph_task_id() -> int:
    """The id of the backward pass (graph task) running on this thread; -1 outside one."""
    return torch._C._current_graph_task_id()


def queue_end_of_pass(callback: Callable[[], None]) -> None:
    """Run ``callback`` when the backward pass running now ends (call it from a hook)."""
    torch.autograd.Variable._execution_engine.queue_callback(callback)


def tag_node(node: Any, value: int, key: str = _TAG) -> None:
    node.metadata[key] = value


def node_tag(node: Any, key: str = _TAG) -> int | None:
    """The id :func:`tag_node` gave ``node`` under ``key``, or None."""
    return node.metadata.get(key)


def output_count(node: Any) -> int:
    """How many outputs ``node`` has (the length of the grad_outputs its hooks receive)."""
    return len(node._input_metadata)


def output_metadata(node: Any) -> list[tuple[tuple[int, ...] | None, Any]]:
    """The shape and torch dtype of each output of ``node`` (None, None where torch has no
    plain shape: a nested tensor)."""
    found = []
    for m in node._input_metadata:
        try:
            found.append((tuple(m.shape), m.dtype))
        except (RuntimeError, TypeError):
            found.append((None, None))
    return found


ACCUMULATE_GRAD: type = torch._C._functions.AccumulateGrad  # a leaf's node in a graph


_TORCH_BACKWARDS = (torch.autograd.backward, torch.autograd.grad)

# set True on a wrapper of torch's backward (its ``__wrapped__`` the function it wraps) that
# runs as well while the recorder's dispatch mode is off (a script's pass log)
RUNS_WITH_MODE_OFF = "autodiff_runs_with_mode_off"


def is_torchs_backward(fn: Any) -> bool:
    """Whether ``fn`` is torch's own ``autograd.backward`` or ``autograd.grad``, or a wrapper
    of one marked ``RUNS_WITH_MODE_OFF`` (not another wrapper, which may look at the dispatch
    modes when the pass ends)."""
    while getattr(fn, RUNS_WITH_MODE_OFF, False):
        fn = fn.__wrapped__
    return any(fn is f for f in _TORCH_BACKWARDS)


def wrap_backward(around: Callable[..., Any]) -> Callable[[], None]:
    """Make ``torch.autograd.backward`` and ``torch.autograd.grad`` (and so
    ``Tensor.backward``, which calls the first) run ``around(original, is_grad, roots, *args,
    **kwargs)`` instead; returns the function that puts the originals back. A reference taken
    before (``from torch.autograd import grad``) keeps calling the original."""
    autograd = torch.autograd
    originals = (autograd.backward, autograd.grad)

    def wrapper(original: Callable[..., Any], is_grad: bool) -> Callable[..., Any]:
        @functools.wraps(original)
        def call(roots: Any, *args: Any, **kwargs: Any) -> Any:
            return around(original, is_grad, roots, *args, **kwargs)

        return call

    wrappers = (wrapper(originals[0], False), wrapper(originals[1], True))
    autograd.backward, autograd.grad = wrappers

    def restore() -> None:
        # a recording started later and still running keeps its own wrappers
        if autograd.backward is wrappers[0]:
            autograd.backward = originals[0]
        if autograd.grad is wrappers[1]:
            autograd.grad = originals[1]

    return restore


def wrap_function_apply(around: Callable[..., Any]) -> Callable[[], None]:
    """Make a custom ``autograd.Function``'s ``apply`` (``MyFn.apply(x, w)``) run
    ``around(original, cls, args, kwargs)`` instead, where ``original(*args, **kwargs)`` is
    torch's ``apply`` for ``cls``; returns the function that puts torch's back. The inputs of
    a custom Function's node are only known from its call: its forward runs its own ops on
    them, and the node is made once it returns. (A class with an ``apply`` of its own is not
    seen.)"""
    function = torch.autograd.Function
    original = function.__dict__["apply"]  # a classmethod

    @functools.wraps(original.__func__)
    def call(cls: type, *args: Any, **kwargs: Any) -> Any:
        return around(original.__get__(None, cls), cls, args, kwargs)

    wrapper = classmethod(call)
    function.apply = wrapper

    def restore() -> None:
        if function.__dict__.get("apply") is wrapper:  # (a later recording's stays)
            function.apply = original

    return restore


def function_inputs(cls: type, args: tuple, kwargs: dict) -> list:
    """The tensors among the arguments of ``cls.apply(*args, **kwargs)``, in the order of its
    node's edges (torch makes one edge per tensor argument, keyword arguments bound to
    ``forward``'s parameters first)."""
    if kwargs:
        try:
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
        except (TypeError, ValueError):
            return []
        bound.apply_defaults()
        args = bound.args
    return [a for a in args if isinstance(a, torch.Tensor)]


def wrap_retain_grad(after: Callable[[Any], None]) -> Callable[[], None]:
    """Make ``tensor.retain_grad()`` call ``after(tensor)`` once torch's has run; returns the
    function that puts torch's back. (torch says which non-leaf keeps its ``.grad`` nowhere
    else: the hook that keeps it is on its node, out of Python's sight.)"""
    tensor = torch.Tensor
    had = "retain_grad" in tensor.__dict__
    original = tensor.retain_grad

    @functools.wraps(original)
    def retain_grad(self: Any) -> None:
        original(self)
        after(self)

    tensor.retain_grad = retain_grad

    def restore() -> None:
        if tensor.__dict__.get("retain_grad") is retain_grad:
            if had:
                tensor.retain_grad = original
            else:
                del tensor.retain_grad

    return restore


def undo_all(*undos: Callable[[], None]) -> Callable[[], None]:
    """One function that runs each of ``undos`` (what the ``wrap_*`` functions return), the
    last first."""

    def undo() -> None:
        for u in reversed(undos):
            u()

    return undo


def accumulated_leaf(node: Any) -> Any:
    """The leaf tensor behind an AccumulateGrad node; None for any other node."""
    return getattr(node, "variable", None)


def forward_class_name(node: Any) -> str | None:
    """The class name of the custom ``autograd.Function`` whose node ``node`` is, or None."""
    cls = getattr(type(node), "_forward_cls", None)
    return None if cls is None else cls.__name__


_SAVED: dict[type, tuple[str, ...]] = {}  # node class -> its _saved_ attributes
_SIZES = ("_sizes", "_strides", "_sizes_opt")


def saved(node: Any) -> list[tuple[str, Any]]:
    """What ``node`` saved for its backward, read from its ``_saved_*`` attributes: a
    tensor's shape as ``("saved_NAME", shape)``, any other value as ``(NAME, value)`` (a
    convolution's ``stride``); sizes and strides of saved tensors left out (their shapes say
    it). Empty for a custom Function's node (its ``ctx`` is not read)."""
    cls = type(node)
    names = _SAVED.get(cls)
    if names is None:
        names = _SAVED[cls] = tuple(
            a for a in dir(cls) if a.startswith("_saved_") and not a.endswith(_SIZES)
        )
    tensors = []
    others = []
    for attr in names:
        try:
            value = getattr(node, attr)
        except RuntimeError:  # freed by a backward, or changed in place since
            continue
        name = attr[len("_saved_") :]
        if isinstance(value, torch.Tensor):
            tensors.append((f"saved_{name}", tuple(value.shape)))
        elif value is not None:
            others.append((name, value))
    return tensors + others


def view_base(t: Any) -> Any:
    """The tensor ``t`` is a view of, or None: an in-place op on a view gives its base a new
    node (CopySlices) that is no output of the op."""
    return t._base if t._is_view() else None


def is_compiled_module(module: Any) -> bool:
    """Whether ``module`` is ``torch.compile``'s wrapper of a module."""
    return type(module).__name__ == "OptimizedModule"


def module_hooks(
    before: Callable[[Any, Any], None], after: Callable[[Any, Any, Any], None]
) -> tuple[Any, Any]:
    """Call ``before(module, args)`` and ``after(module, args, output)`` around every module's
    forward (every thread); returns the two handles (``.remove()`` them)."""
    return (
        _module.register_module_forward_pre_hook(before),
        _module.register_module_forward_hook(after, always_call=True),
    )


def optimizer_hooks(
    before: Callable[[Any, tuple, dict], None], after: Callable[[Any, tuple, dict], None]
) -> tuple[Any, Any]:
    """Call ``before(optimizer, args, kwargs)`` and ``after(optimizer, args, kwargs)`` around
    every ``torch.optim.Optimizer.step`` (every thread; ``after`` not when the step raised);
    returns the two handles (``.remove()`` them)."""
    from torch.optim import optimizer

    return (
        optimizer.register_optimizer_step_pre_hook(before),
        optimizer.register_optimizer_step_post_hook(after),
    )
