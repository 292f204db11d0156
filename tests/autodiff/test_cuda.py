"""autodiff.cuda (DeZero's GPU switch) and to_gpu()/to_cpu() on Variables, Layers and
DataLoaders, without CuPy and with a stand-in CuPy.

No GPU here: the stand-in module ``cupy`` keeps its arrays in a subclass of ndarray
(:class:`DeviceArray`) and, as CuPy does, refuses to compute with a plain numpy array. An
array the engine makes with numpy (``np.zeros(shape)``, ``np.random.rand``) or converts back
(``np.asarray``) in the middle of a "GPU" program shows up either as that refusal or as a
plain ndarray where a DeviceArray should be.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

import numpy as np
import pytest

import autodiff
import autodiff.functions as F
from autodiff import DataLoader, Variable, cuda, optimizers
from autodiff.datasets import Dataset
from autodiff.models import MLP


# ----------------------------------------------------------------------------- the stand-in
class DeviceArray(np.ndarray):
    """An array "on the GPU": numpy underneath, but a plain ndarray operand is refused."""

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        operands = (inputs[0], *inputs[2:]) if method == "at" else inputs  # not the indexes
        for x in (*operands, *kwargs.get("out", ())):
            _refuse_host(x, f"{ufunc.__name__}.{method}")
            if not isinstance(x, np.ndarray | np.generic | int | float | bool):
                return NotImplemented  # a Variable: its own operator answers
        args = [x.view(np.ndarray) if isinstance(x, DeviceArray) else x for x in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(o.view(np.ndarray) for o in kwargs["out"])
        result = getattr(ufunc, method)(*args, **kwargs)
        if method == "at":
            return None
        if "out" in kwargs:
            return inputs[0] if result is kwargs["out"][0] else _to_device(result)
        return _to_device(result)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        for x in _flat(args) + _flat(list(kwargs.values())):
            _refuse_host(x, func.__name__)
        # numpy's own code on the arrays underneath (views: in-place functions write through)
        plain = {k: _host_view(v) for k, v in kwargs.items()}
        return _to_device(func(*_host_view(args), **plain))


def _flat(items: Any) -> list:
    out = []
    for x in items:
        out.extend(_flat(x) if isinstance(x, list | tuple) else [x])
    return out


def _host_view(x: Any) -> Any:
    if isinstance(x, list | tuple):
        return type(x)(_host_view(v) for v in x)
    return x.view(np.ndarray) if isinstance(x, DeviceArray) else x


def _refuse_host(x: Any, op: str) -> None:
    if type(x) is np.ndarray:
        raise TypeError(f"stand-in CuPy: a numpy array of shape {x.shape} met a GPU array in {op}")


def _to_device(result: Any) -> Any:
    if isinstance(result, tuple):
        return tuple(_to_device(r) for r in result)
    if isinstance(result, np.ndarray | np.generic) and not isinstance(result, DeviceArray):
        return np.asarray(result).view(DeviceArray)  # CuPy's reductions give 0-d arrays
    return result


class _OnDevice:
    """A numpy function (or namespace) whose arrays come back as DeviceArrays."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _to_device(self._target(*args, **kwargs))

    def __getattr__(self, name: str) -> Any:
        return _OnDevice(getattr(self._target, name))


def _fake_cupy() -> types.ModuleType:
    cupy = types.ModuleType("cupy")
    cupy.ndarray = DeviceArray
    cupy.calls = []

    def asarray(x: Any, dtype: Any = None) -> DeviceArray:
        cupy.calls.append("asarray")
        if isinstance(x, DeviceArray):
            return x if dtype is None else x.astype(dtype)
        return np.array(x, dtype=dtype).view(DeviceArray)  # a copy, as a transfer is

    def asnumpy(x: Any) -> np.ndarray:
        cupy.calls.append("asnumpy")
        return np.array(x.view(np.ndarray) if isinstance(x, DeviceArray) else x)

    def get_array_module(*args: Any) -> Any:
        return cupy if any(isinstance(a, DeviceArray) for a in args) else np

    cupy.asarray, cupy.asnumpy, cupy.get_array_module = asarray, asnumpy, get_array_module
    cupy.array = asarray

    def __getattr__(name: str) -> Any:
        target = getattr(np, name)
        return target if isinstance(target, type) else _OnDevice(target)

    cupy.__getattr__ = __getattr__
    return cupy


@pytest.fixture
def fake_cupy(monkeypatch):
    """autodiff.cuda reloaded with the stand-in installed as ``cupy``; reloaded without it
    afterwards (gpu_enable is decided at import, as in DeZero)."""
    module = _fake_cupy()
    monkeypatch.setitem(sys.modules, "cupy", module)
    importlib.reload(cuda)
    yield module
    monkeypatch.undo()
    importlib.reload(cuda)


@pytest.fixture
def no_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError
    importlib.reload(cuda)
    yield
    monkeypatch.undo()
    importlib.reload(cuda)


# ----------------------------------------------------------------------------- without CuPy
def test_without_cupy_gpu_is_off_and_to_gpu_names_cupy(no_cupy):
    assert autodiff.cuda is cuda and cuda.gpu_enable is False
    x = Variable(np.ones(3))
    assert cuda.get_array_module(x) is np and cuda.get_array_module(x.data) is np
    assert cuda.as_numpy(x) is x.data
    np.testing.assert_array_equal(cuda.as_numpy(2.0), np.array(2.0))
    model = MLP((4, 2))
    model(np.ones((1, 3), dtype=np.float32))
    loader = DataLoader(_Tiny(), 4)
    for move in (x.to_gpu, model.to_gpu, loader.to_gpu, lambda: cuda.as_cupy(x)):
        with pytest.raises(RuntimeError, match=r"CuPy is not installed: to_gpu\(\) needs it"):
            move()
    with pytest.raises(RuntimeError, match="CuPy is not installed"):
        DataLoader(_Tiny(), 4, gpu=True)
    assert all(type(p.data) is np.ndarray for p in model.params())
    x.to_cpu()
    model.to_cpu()
    loader.to_cpu()
    assert type(x.data) is np.ndarray and type(next(loader)[0]) is np.ndarray


# ----------------------------------------------------------------------------- with CuPy
def test_with_cupy_the_switch_is_on_and_arrays_move(fake_cupy):
    assert cuda.gpu_enable is True and cuda.cupy is fake_cupy
    x = Variable(np.arange(3.0))
    x.grad = Variable(np.ones(3))
    x.to_gpu()
    assert type(x.data) is DeviceArray and type(x.grad.data) is DeviceArray
    assert cuda.get_array_module(x) is fake_cupy and cuda.get_array_module(x.data) is fake_cupy
    assert cuda.get_array_module(np.ones(2)) is np
    x.to_cpu()
    assert type(x.data) is np.ndarray and type(x.grad.data) is np.ndarray
    np.testing.assert_array_equal(x.data, [0.0, 1.0, 2.0])
    assert type(cuda.as_cupy(np.ones(2))) is DeviceArray
    assert type(cuda.as_numpy(cuda.as_cupy(np.ones(2)))) is np.ndarray
    assert fake_cupy.calls.count("asnumpy") >= 2


def test_the_stand_in_refuses_a_numpy_array_next_to_a_gpu_one(fake_cupy):
    with pytest.raises(TypeError, match="stand-in CuPy"):
        cuda.as_cupy(np.ones(2)) + np.ones(2)


def _on_gpu(*arrays: Any) -> list[Variable]:
    out = []
    for a in arrays:
        v = Variable(np.asarray(a))
        v.to_gpu()
        out.append(v)
    return out


@pytest.mark.parametrize(
    "op",
    [
        lambda x, w: F.sum(x * 2.0 + 1),  # scalar operands made on the device
        lambda x, w: F.sum(F.sum_to(x, (1, 4)) * w),
        lambda x, w: F.sum(F.broadcast_to(w, (3, 4)) * x),
        lambda x, w: F.sum(F.max(x, axis=1)),
        lambda x, w: F.sum(F.clip(x, 0.2, 0.8)),
        lambda x, w: F.sum(F.softmax(x) * x),
        lambda x, w: F.sum(F.log_softmax(x)),
        lambda x, w: F.sum(F.dropout(x, 0.5)),
        lambda x, w: F.sum(x[[0, 0, 2]]),  # get_item: gradients added at a repeated index
        lambda x, w: F.mean_squared_error(x, x * 0.5),
        lambda x, w: F.sum(F.relu(x) * F.tanh(x) + F.exp(x) * F.sigmoid(x)),
        lambda x, w: F.sum(F.im2col(F.reshape(x, (1, 1, 3, 4)), 2, pad=1)),
    ],
)
def test_functions_stay_on_the_gpu_forward_and_backward(fake_cupy, op):
    rng = np.random.default_rng(0)
    data, wdata = rng.random((3, 4)), rng.random((1, 4))
    x, w = _on_gpu(data, wdata)
    np.random.seed(0)
    y = op(x, w)
    y.backward()
    assert type(y.data) is DeviceArray
    assert type(x.grad.data) is DeviceArray
    # the same numbers as on numpy
    xc, wc = Variable(data), Variable(wdata)
    np.random.seed(0)
    yc = op(xc, wc)
    yc.backward()
    np.testing.assert_allclose(cuda.as_numpy(y), yc.data)
    np.testing.assert_allclose(cuda.as_numpy(x.grad), xc.grad.data)


class _Tiny(Dataset):
    """60 examples of 8 features in 3 classes: a stand-in for MNIST."""

    def prepare(self) -> None:
        rng = np.random.default_rng(52)
        self.data = rng.random((60, 8)).astype(np.float32)
        self.label = (self.data[:, :3].argmax(axis=1)).astype(np.int64)


def _train_step_52(optimizer: Any, gpu: bool) -> tuple[list[float], Any, Any]:
    """The book's step 52, on a small dataset: MLP training, moved to the GPU when asked."""
    np.random.seed(0)
    train_loader = DataLoader(_Tiny(), 10)
    model = MLP((16, 3))
    optimizer.setup(model)
    if gpu and autodiff.cuda.gpu_enable:
        train_loader.to_gpu()
        model.to_gpu()
    losses = []
    for _epoch in range(3):
        sum_loss = 0.0
        for x, t in train_loader:
            y = model(x)
            loss = F.softmax_cross_entropy(y, t)
            model.cleargrads()
            loss.backward()
            optimizer.update()
            sum_loss += float(loss.data) * len(t)
        losses.append(sum_loss / len(train_loader.dataset))
    return losses, model, (x, t, y, loss)


@pytest.mark.parametrize("make", [optimizers.SGD, optimizers.MomentumSGD, optimizers.Adam])
def test_step_52_trains_on_the_gpu_as_on_the_cpu(fake_cupy, make):
    losses, model, (x, t, y, loss) = _train_step_52(make(), gpu=True)
    assert all(type(a) is DeviceArray for a in (x, t, y.data, loss.data))
    for p in model.params():
        assert type(p.data) is DeviceArray and type(p.grad.data) is DeviceArray
    assert "asnumpy" not in fake_cupy.calls  # nothing came back to the host while training
    cpu_losses, cpu_model, _ = _train_step_52(make(), gpu=False)
    np.testing.assert_allclose(losses, cpu_losses, rtol=1e-5)
    assert losses[-1] < losses[0]
    model.to_cpu()
    for p, q in zip(model.params(), cpu_model.params(), strict=True):
        assert type(p.data) is np.ndarray
        np.testing.assert_allclose(p.data, q.data, rtol=1e-4, atol=1e-6)


def test_weights_saved_from_the_gpu_load_back_onto_it(fake_cupy, tmp_path):
    model = MLP((4, 2))
    model(np.ones((1, 3), dtype=np.float32))
    model.to_gpu()
    before = [cuda.as_numpy(p.data) for p in model.params()]
    model.save_weights(tmp_path / "w.npz")
    assert all(type(p.data) is DeviceArray for p in model.params())
    for p in model.params():
        p.data = p.data * 0
    model.load_weights(tmp_path / "w.npz")
    for p, saved in zip(model.params(), before, strict=True):
        assert type(p.data) is DeviceArray
        np.testing.assert_array_equal(cuda.as_numpy(p.data), saved)
