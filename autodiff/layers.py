"""Layers: containers of Parameters, named as in DeZero's ``dezero/layers.py``.

A :class:`Layer` registers every :class:`~autodiff.core.Parameter` and sub-``Layer`` assigned
to it as an attribute, in assignment order, so :meth:`Layer.params` always yields the same
parameters in the same order (DeZero keeps them in a set, whose order changes between runs).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any
from weakref import ref

import numpy as np
from numpy.typing import DTypeLike

import autodiff.core as _core
import autodiff.functions as F
from autodiff import cuda
from autodiff._shapes import conv_pair, is_count, pair
from autodiff.core import Parameter, Variable

__all__ = ["LSTM", "RNN", "BatchNorm", "Conv2d", "Deconv2d", "EmbedID", "Layer", "Linear"]

# Bumped whenever any Layer gains or loses a Parameter or sub-Layer: params() caches its
# answer per layer and rebuilds it only when this has changed (in practice, never while training).
_structure_version = 0


class Layer:
    """Base class of layers and models: holds Parameters and sub-Layers by attribute name.

    Subclasses implement :meth:`forward`; calling the layer runs it. ``name`` is the attribute
    name under which a parent layer holds this one (used in error messages), or None. While a
    trace records, each call is a scope (:meth:`_scope_name`): the Functions it runs carry its
    path, ``Net/b2/fc``.
    """

    def __init__(self) -> None:
        # Attribute names of registered Parameters and Layers, in assignment order.
        object.__setattr__(self, "_params", {})
        object.__setattr__(self, "name", None)

    def __setattr__(self, name: str, value: Any) -> None:
        global _structure_version
        registered = self.__dict__.get("_params")
        if registered is None:
            raise RuntimeError(
                f"{type(self).__name__}: call super().__init__() in __init__ before assigning "
                f"attributes (assigning {name!r})"
            )
        if isinstance(value, Parameter | Layer):
            registered[name] = None
            _structure_version += 1
            if isinstance(value, Layer):
                if value.name is None:
                    object.__setattr__(value, "name", name)
                    # named by its place, not by the user: called on its own, the class names
                    # its scope (scope_name)
                    object.__setattr__(value, "_place_name", name)
                _qualify_names(value, value.name)
            elif value.name is None:
                value.name = name  # a Parameter is named after its attribute ("W")
        elif name in registered:
            del registered[name]
            _structure_version += 1
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        global _structure_version
        if name in self._params:
            del self._params[name]
            _structure_version += 1
        object.__delattr__(self, name)

    def __call__(self, *inputs: Any) -> Any:
        if _core._on_scope:  # a recorder listens: the call is a scope (Net/b2/fc)
            ends = _core._begin_scope(self)
            try:
                outputs = self.forward(*inputs)
            finally:
                for _, end in ends:
                    end()
        else:
            outputs = self.forward(*inputs)
        # Weak references only: a layer must not keep the last graph alive.
        d = self.__dict__
        try:
            d["inputs"] = [ref(x) for x in inputs] if len(inputs) != 1 else [ref(inputs[0])]
            if type(outputs) is not tuple:
                d["outputs"] = [ref(outputs)]
                return outputs
            d["outputs"] = [ref(y) for y in outputs]
        except TypeError:  # a Python number among them: nothing to free
            d["inputs"] = [_weak(x) for x in inputs]
            if type(outputs) is not tuple:
                d["outputs"] = [_weak(outputs)]
                return outputs
            d["outputs"] = [_weak(y) for y in outputs]
        return outputs if len(outputs) > 1 else outputs[0]

    def _scope_name(self, outermost: bool) -> str:
        """The part of scope paths this layer's call adds: the name its parent holds it by
        (``fc``), or the name the user set; the outermost layer of a call is named by its
        class (``Net/b2/fc``) unless the user named it. A '/' would read as nesting: '_'."""
        d = self.__dict__
        name = d.get("name")
        if not name or not isinstance(name, str) or (outermost and name == d.get("_place_name")):
            name = type(self).__name__
        return name.replace("/", "_")

    def forward(self, *inputs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.forward is not implemented")

    # --- parameters ----------------------------------------------------------
    def params(self) -> Iterator[Parameter]:
        """Iterate over every Parameter of this layer and its sub-layers, each once, in the
        order they were assigned."""
        cache = self.__dict__.get("_params_cache")
        if cache is None or cache[0] != _structure_version:
            seen: set[int] = set()
            found = []
            for param in self._iter_params():
                if id(param) not in seen:
                    seen.add(id(param))
                    found.append(param)
            cache = (_structure_version, tuple(found))
            object.__setattr__(self, "_params_cache", cache)
        return iter(cache[1])

    def _iter_params(self) -> Iterator[Parameter]:
        d = self.__dict__
        for name in self._params:
            obj = d[name]
            if isinstance(obj, Layer):
                yield from obj._iter_params()
            else:
                yield obj

    def parameters(self) -> list[Parameter]:
        """The parameters as a list (micrograd's name for :meth:`params`)."""
        return list(self.params())

    def cleargrads(self) -> None:
        """Set every parameter's gradient to None, before the next ``backward()``."""
        for param in self.params():
            param.grad = None

    def zero_grad(self) -> None:
        """micrograd's and PyTorch's name for :meth:`cleargrads`."""
        self.cleargrads()

    def to_cpu(self) -> None:
        """Move every parameter's array (and gradient) to numpy."""
        for param in self.params():
            param.to_cpu()

    def to_gpu(self) -> None:
        """Move every parameter's array (and gradient) to CuPy on the GPU; a weight made on
        the first call is made where the input is. RuntimeError without CuPy."""
        if not cuda.gpu_enable:
            raise RuntimeError(cuda.CUPY_MISSING)
        for param in self.params():
            param.to_gpu()

    def named_params(self) -> dict[str, Parameter]:
        """Parameters keyed by their path of attribute names (``'l0/W'``), as saved to ``.npz``.

        A parameter shared by two attributes appears once, under its first path.
        """
        out: dict[str, Parameter] = {}
        seen: set[int] = set()
        for key, param in self._iter_named(""):
            if id(param) not in seen:
                seen.add(id(param))
                out[key] = param
        return out

    def _iter_named(self, prefix: str) -> Iterator[tuple[str, Parameter]]:
        d = self.__dict__
        for name in self._params:
            obj = d[name]
            key = f"{prefix}/{name}" if prefix else name
            if isinstance(obj, Layer):
                yield from obj._iter_named(key)
            else:
                yield key, obj

    # --- PyTorch's habits ------------------------------------------------------
    def named_parameters(self) -> Iterator[tuple[str, Parameter]]:
        """``(name, parameter)`` pairs with dotted paths (``'l0.W'``), each parameter once, in
        :meth:`params` order (:meth:`named_params` keys them ``'l0/W'``)."""
        for key, param in self.named_params().items():
            yield key.replace("/", "."), param

    def train(self, mode: bool = True) -> Layer:
        """Switch to training (``mode=True``) or evaluation; returns self. The switch is
        DeZero's ``Config.train``: it applies to every layer, not this one only (on this
        thread: each thread has its own)."""
        _core._switches.train = bool(mode)
        return self

    def eval(self) -> Layer:
        """``train(False)``: dropout becomes the identity, for every layer (``Config.train``)."""
        return self.train(False)

    # --- weights on disk -----------------------------------------------------
    def save_weights(self, path: str | os.PathLike) -> None:
        """Save every parameter's array to a compressed ``.npz`` file, keyed like ``'l0/W'``
        (a parameter on the GPU stays there; :meth:`load_weights` puts it back there)."""
        arrays = {}
        for key, param in self.named_params().items():
            if param.data is None:
                raise ValueError(
                    f"save_weights: parameter {key!r} of {type(self).__name__} is not "
                    "initialised yet (its layer has not seen an input); run one forward pass "
                    "or give the layer its in_size before saving"
                )
            arrays[key] = cuda.as_numpy(param.data)  # a copy from the GPU's
        try:
            np.savez_compressed(path, **arrays)
        except BaseException:
            for candidate in (os.fspath(path), os.fspath(path) + ".npz"):
                if os.path.exists(candidate):
                    os.remove(candidate)
            raise

    def load_weights(self, path: str | os.PathLike) -> None:
        """Load arrays saved by :meth:`save_weights`; every parameter must be in the file with
        its current shape (a lazily initialised one takes the saved shape)."""
        path = os.fspath(path)
        if not os.path.exists(path) and os.path.exists(path + ".npz"):
            path += ".npz"
        if not os.path.exists(path):
            raise FileNotFoundError(f"load_weights: no weights file at {path!r}")
        params = self.named_params()
        try:
            npz = np.load(path, allow_pickle=False)
            with npz:
                saved = {key: npz[key] for key in npz.files}
        except Exception as e:  # a damaged zip, a lone .npy array, a pickle refused...
            raise ValueError(
                f"load_weights: {path!r} is not a readable .npz of weights (one array per "
                f"parameter) ({type(e).__name__}: {e})"
            ) from e
        unexpected = [key for key in saved if key not in params]
        if unexpected:
            raise ValueError(
                f"load_weights: {path!r} holds parameters {unexpected} that "
                f"{type(self).__name__} does not have (it has {list(params)})"
            )
        for key, param in params.items():
            if key not in saved:
                raise ValueError(
                    f"load_weights: parameter {key!r} is missing from {path!r} "
                    f"(the file has {list(saved)})"
                )
            if param.data is not None and param.data.shape != saved[key].shape:
                raise ValueError(
                    f"load_weights: parameter {key!r} has shape {param.data.shape} but "
                    f"{path!r} holds shape {saved[key].shape}"
                )
        for key, param in params.items():
            on_gpu = cuda.is_cupy_array(param.data)
            param.data = cuda.as_cupy(saved[key]) if on_gpu else saved[key]

    def _label(self) -> str:
        kind = type(self).__name__
        return f"{kind} layer {self.name!r}" if self.name else f"{kind} layer"


def _qualify_names(layer: Layer, prefix: str) -> None:
    """Name the parameters of a sub-layer by their path from its parent: the viewer then
    tells ``l0.W`` from ``l1.W``. A name the user gave (other than the attribute's) stays."""
    for key, param in layer._iter_named(""):
        own = key.replace("/", ".")
        if param.name is None or param.name in (own, key.rsplit("/", 1)[-1]):
            param.name = f"{prefix}.{own}"


def _weak(x: Any) -> Any:
    try:
        return ref(x)
    except TypeError:  # a Python number: nothing to free
        return lambda: x


def _scaled_randn(shape: tuple[int, ...], fan_in: int, dtype: Any) -> np.ndarray:
    """DeZero's weight initialisation, ``randn(*shape) * sqrt(1 / fan_in)``, seed for seed.
    The scale is cast to ``dtype`` first, as numpy 1 did implicitly when the book printed its
    numbers; numpy 2 would otherwise promote W to float64."""
    scale = np.asarray(np.sqrt(1 / fan_in), dtype=dtype)
    return np.random.randn(*shape).astype(dtype) * scale


class Linear(Layer):
    """``y = x @ W + b``: a fully connected layer.

    ``W`` has shape ``(in_size, out_size)`` and starts as ``randn * sqrt(1 / in_size)``,
    ``b`` starts at zeros (as in DeZero, so seeded runs give the book's numbers). With
    ``in_size=None`` the weight is created on the first call, from the input's width.
    """

    def __init__(
        self,
        out_size: int,
        nobias: bool = False,
        dtype: DTypeLike = np.float32,
        in_size: int | None = None,
    ) -> None:
        super().__init__()
        self.in_size = in_size
        self.out_size = out_size
        self.dtype = dtype
        self.W = Parameter(None, name="W")
        if in_size is not None:
            self._init_W()
        self.b = None if nobias else Parameter(np.zeros(out_size, dtype=dtype), name="b")

    def _init_W(self, xp: Any = np) -> None:
        W = _scaled_randn((self.in_size, self.out_size), self.in_size, self.dtype)
        self.W.data = W if xp is np else cuda.as_cupy(W)

    def forward(self, x: Any) -> Variable:
        shape = getattr(x, "shape", None)
        if shape is None or len(shape) != 2:
            expected = "(N, in_size)" if self.W.data is None else f"(N, {self.W.data.shape[0]})"
            raise ValueError(
                f"{self._label()}: expected an input of shape {expected}, got "
                f"{'a ' + type(x).__name__ if shape is None else shape}; reshape a single "
                "sample to (1, in_size)"
            )
        W = self.W.data
        if W is None:
            self.in_size = shape[1]
            self._init_W(cuda.get_array_module(x))
        elif shape[1] != W.shape[0]:
            raise ValueError(
                f"{self._label()}: expected an input of shape (N, {W.shape[0]}), got {shape}; "
                f"the layer's weight was created for inputs of width {W.shape[0]} "
                f"(W is {W.shape}); use a new Linear layer for inputs of width {shape[1]}"
            )
        return F.linear(x, self.W, self.b)


# =============================================================================
# Normalisation, embeddings and recurrent layers (DeZero)
# =============================================================================
class BatchNorm(Layer):
    """Batch normalisation (:func:`autodiff.functions.batch_norm`) with a scale ``gamma`` and
    a shift ``beta`` per channel (axis 1), created on the first call from the input's width.

    ``avg_mean`` and ``avg_var``, the running statistics used in test mode, are Parameters as
    in DeZero, so :meth:`Layer.save_weights` keeps them; nothing differentiates them (their
    ``grad`` stays None, so optimizers leave them alone): batch_norm updates them in place.
    """

    def __init__(self) -> None:
        super().__init__()
        self.avg_mean = Parameter(None, name="avg_mean")
        self.avg_var = Parameter(None, name="avg_var")
        self.gamma = Parameter(None, name="gamma")
        self.beta = Parameter(None, name="beta")

    def _init_params(self, x: Any) -> None:
        width, dtype = x.shape[1], x.dtype
        xp = cuda.get_array_module(x)
        for param, fill in (
            (self.avg_mean, xp.zeros),
            (self.avg_var, xp.ones),
            (self.gamma, xp.ones),
            (self.beta, xp.zeros),
        ):
            if param.data is None:
                param.data = fill(width, dtype=dtype)

    def forward(self, x: Any) -> Variable:
        shape = getattr(x, "shape", None)
        if shape is None or len(shape) not in (2, 4):
            raise ValueError(
                f"{self._label()}: expected an input of shape (N, C) or (N, C, H, W), got "
                f"{'a ' + type(x).__name__ if shape is None else shape}"
            )
        if _core._switches.train and 0 in shape:
            raise ValueError(
                f"{self._label()}: an empty batch of shape {tuple(shape)} in training mode has no "
                "mean or variance: it would set the running statistics avg_mean and avg_var to "
                "NaN; skip empty batches (or run it under autodiff.test_mode())"
            )
        if self.avg_mean.data is None:
            self._init_params(x)
        return F.batch_norm(x, self.gamma, self.beta, self.avg_mean.data, self.avg_var.data)


class EmbedID(Layer):
    """A lookup table: ``W`` of shape ``(in_size, out_size)`` starts as ``randn`` (float64, as
    in DeZero); calling the layer on integer ids returns their rows, ``W[x]``."""

    def __init__(self, in_size: int, out_size: int) -> None:
        super().__init__()
        self.W = Parameter(np.random.randn(in_size, out_size), name="W")

    def forward(self, x: Any) -> Variable:
        return F.embed_id(x, self.W)


class RNN(Layer):
    """An Elman RNN: ``h = tanh(x2h(x) + h2h(h))``, keeping ``h`` between calls until
    :meth:`reset_state`; the first step after a reset has no ``h2h`` term.

    The weights are drawn in DeZero's order, so a seeded run gives its numbers: ``x2h`` (a
    :class:`Linear` from ``in_size``, lazy when it is None), then ``h2h`` (no bias), which
    DeZero creates lazily at the second step. Given ``in_size``, ``h2h`` is made at once with
    the hidden width (DeZero gives it ``in_size``, which fails unless the two are equal).
    """

    def __init__(self, hidden_size: int, in_size: int | None = None) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.x2h = Linear(hidden_size, in_size=in_size)
        h_in = None if in_size is None else hidden_size
        self.h2h = Linear(hidden_size, in_size=h_in, nobias=True)
        self.h: Variable | None = None

    def reset_state(self) -> None:
        """Forget the hidden state: the next call starts a new sequence."""
        self.h = None

    def forward(self, x: Any) -> Variable:
        a = self.x2h(x)
        h_new = F.tanh(a if self.h is None else a + self.h2h(self.h))
        self.h = h_new
        return h_new


class LSTM(Layer):
    """A long short-term memory layer, as DeZero writes it: forget, input and output gates
    (sigmoid) and a candidate (tanh), each ``x2? (x) + h2? (h)`` with its own Linear layers;
    ``c = f * c + i * u``, ``h = o * tanh(c)``, both kept until :meth:`reset_state`.

    The eight Linear layers are created in DeZero's order (``x2f x2i x2o x2u`` from
    ``in_size``, lazy when None, then ``h2f h2i h2o h2u`` from ``hidden_size``, no bias), so
    seeded runs draw the same weights.
    """

    def __init__(self, hidden_size: int, in_size: int | None = None) -> None:
        super().__init__()
        H, I = hidden_size, in_size  # noqa: E741 (DeZero's names)
        self.hidden_size = hidden_size
        self.x2f = Linear(H, in_size=I)
        self.x2i = Linear(H, in_size=I)
        self.x2o = Linear(H, in_size=I)
        self.x2u = Linear(H, in_size=I)
        self.h2f = Linear(H, in_size=H, nobias=True)
        self.h2i = Linear(H, in_size=H, nobias=True)
        self.h2o = Linear(H, in_size=H, nobias=True)
        self.h2u = Linear(H, in_size=H, nobias=True)
        self.reset_state()

    def reset_state(self) -> None:
        """Forget ``h`` and ``c``: the next call starts a new sequence."""
        self.h: Variable | None = None
        self.c: Variable | None = None

    def forward(self, x: Any) -> Variable:
        h = self.h
        if h is None:
            f = F.sigmoid(self.x2f(x))
            i = F.sigmoid(self.x2i(x))
            o = F.sigmoid(self.x2o(x))
            u = F.tanh(self.x2u(x))
        else:
            f = F.sigmoid(self.x2f(x) + self.h2f(h))
            i = F.sigmoid(self.x2i(x) + self.h2i(h))
            o = F.sigmoid(self.x2o(x) + self.h2o(h))
            u = F.tanh(self.x2u(x) + self.h2u(h))
        c_new = i * u if self.c is None else f * self.c + i * u
        h_new = o * F.tanh(c_new)
        self.h, self.c = h_new, c_new
        return h_new


# =============================================================================
# Convolution (DeZero's layers.Conv2d / Deconv2d)
# =============================================================================
class _Convolution(Layer):
    """What Conv2d and Deconv2d share: the arguments, DeZero's initialisation of ``W``
    (``randn * sqrt(1 / (in_channels * KH * KW))``, ``b`` at zeros), created on the first call
    from the input's channels when ``in_channels`` is None."""

    _weight_layout = ""

    def __init__(
        self,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        pad: Any = 0,
        nobias: bool = False,
        dtype: DTypeLike = np.float32,
        in_channels: int | None = None,
    ) -> None:
        super().__init__()
        kind = f"{type(self).__name__} layer"
        conv_pair(kind, "kernel_size", kernel_size)
        conv_pair(kind, "stride", stride)
        conv_pair(kind, "pad", pad, least=0)
        for name, size in (("out_channels", out_channels), ("in_channels", in_channels)):
            if (size is not None or name == "out_channels") and not is_count(size):
                raise ValueError(f"{kind}: {name} must be a positive int, not {size!r}")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.pad = pad
        self.dtype = dtype
        self.W = Parameter(None, name="W")
        if in_channels is not None:
            self._init_W()
        self.b = None if nobias else Parameter(np.zeros(out_channels, dtype=dtype), name="b")

    def _weight_shape(self) -> tuple[int, ...]:
        raise NotImplementedError

    def _init_W(self, xp: Any = np) -> None:
        KH, KW = pair(self.kernel_size)
        fan_in = self.in_channels * KH * KW
        W = _scaled_randn(self._weight_shape(), fan_in, self.dtype)
        self.W.data = W if xp is np else cuda.as_cupy(W)

    def _check_input(self, x: Any) -> None:
        shape = getattr(x, "shape", None)
        if shape is None or len(shape) != 4:
            raise ValueError(
                f"{self._label()}: expected images of shape (N, C, H, W), got "
                f"{'a ' + type(x).__name__ if shape is None else shape}"
            )
        if 0 in shape:
            raise ValueError(
                f"{self._label()}: the images of shape {tuple(shape)} are empty; N, C, H and W "
                "must be at least 1"
            )
        if self.W.data is None:
            self.in_channels = shape[1]
            self._init_W(cuda.get_array_module(x))
        elif shape[1] != self.in_channels:
            raise ValueError(
                f"{self._label()}: expected {self.in_channels} input channels, got an input of "
                f"shape {shape}; the weight {self._weight_layout} is {self.W.data.shape}"
            )


class Conv2d(_Convolution):
    """``y = conv2d(x, W, b)`` over images ``(N, C, H, W)``; ``W`` has shape
    ``(out_channels, in_channels, KH, KW)``."""

    _weight_layout = "(out_channels, in_channels, KH, KW)"

    def _weight_shape(self) -> tuple[int, ...]:
        return (self.out_channels, self.in_channels, *pair(self.kernel_size))

    def forward(self, x: Any) -> Variable:
        self._check_input(x)
        return F.conv2d(x, self.W, self.b, self.stride, self.pad)


class Deconv2d(_Convolution):
    """``y = deconv2d(x, W, b)``, the transposed convolution; ``W`` has shape
    ``(in_channels, out_channels, KH, KW)``."""

    _weight_layout = "(in_channels, out_channels, KH, KW)"

    def _weight_shape(self) -> tuple[int, ...]:
        return (self.in_channels, self.out_channels, *pair(self.kernel_size))

    def forward(self, x: Any) -> Variable:
        self._check_input(x)
        return F.deconv2d(x, self.W, self.b, self.stride, self.pad)
