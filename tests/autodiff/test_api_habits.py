"""PyTorch's and the book's habits (issue 14): method forms and in-place updates.

The expected values are PyTorch's answers, computed by hand (torch is not a test dependency).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import autodiff.functions as F
import autodiff.layers as L
from autodiff import Config, Variable, no_grad


@pytest.fixture(autouse=True)
def _config_train_restored():
    yield
    Config.train = True


# =============================================================================
# Method forms
# =============================================================================
@pytest.mark.parametrize(
    ("method", "function"),
    [
        ("relu", F.relu),
        ("tanh", F.tanh),
        ("exp", F.exp),
        ("log", F.log),
        ("sin", F.sin),
        ("cos", F.cos),
        ("sigmoid", F.sigmoid),
    ],
)
def test_a_method_is_the_function(method, function):
    data = np.array([0.5, 1.5, 2.5])
    x, x_ref = Variable(data.copy()), Variable(data.copy())
    y = getattr(x, method)()
    y_ref = function(x_ref)
    np.testing.assert_array_equal(y.data, y_ref.data)
    assert type(y.creator) is type(y_ref.creator)
    F.sum(y).backward()
    F.sum(y_ref).backward()
    np.testing.assert_array_equal(x.grad.data, x_ref.grad.data)


def test_methods_chain():
    x = Variable(np.array([-1.0, 2.0]))
    y = x.relu().exp().sum()
    y.backward()
    np.testing.assert_allclose(y.data, 1.0 + math.exp(2.0))
    np.testing.assert_allclose(x.grad.data, [0.0, math.exp(2.0)])


# =============================================================================
# In-place operators
# =============================================================================
def test_in_place_operators_under_no_grad_update_the_data_itself():
    x = Variable(np.array([1.0, 2.0, 3.0], dtype=np.float32))
    data = x.data
    before = x
    with no_grad():
        x -= 1.0
        x += np.array([10.0, 20.0, 30.0])  # float64 array: the float32 array is kept
        x *= Variable(np.array(2.0))
        x /= 4
    assert x is before
    assert x.data is data
    assert x.data.dtype == np.float32
    np.testing.assert_allclose(x.data, [5.0, 10.5, 16.0])
    assert x.creator is None


def test_in_place_under_no_grad_follows_numpy_casting_and_broadcasting():
    x = Variable(np.array([1, 2], dtype=np.int64))
    with no_grad(), pytest.raises(TypeError):  # numpy's same-kind rule, as PyTorch refuses
        x /= 2
    y = Variable(np.zeros(3))
    with no_grad(), pytest.raises(ValueError, match=r"\(2, 3\).*\(3,\)"):
        y += np.ones((2, 3))


def test_in_place_operators_with_backprop_build_a_graph():
    x = Variable(np.array(3.0))
    y = x
    y += 1.0
    y *= x
    assert y is not x
    np.testing.assert_allclose(x.data, 3.0)
    y.backward()
    np.testing.assert_allclose(y.data, 12.0)
    np.testing.assert_allclose(x.grad.data, 2 * 3.0 + 1.0)  # d(x(x+1))/dx


def test_an_array_updated_in_place_by_a_variable_micrograd_style():
    model = L.Linear(2, in_size=3)
    reference = [p.data.copy() for p in model.params()]
    x = Variable(np.arange(6.0).reshape(2, 3))
    F.sum(model(x) ** 2).backward()
    lr = 0.1
    arrays = [p.data for p in model.params()]
    for p in model.params():
        p.data -= lr * p.grad
    for p, array, before in zip(model.params(), arrays, reference, strict=True):
        assert p.data is array
        np.testing.assert_allclose(p.data, before - lr * p.grad.data)


def test_an_array_with_a_variable_operand():
    v = Variable(np.array([1.0, 2.0]))
    a = np.ones(2, dtype=np.float32)
    a += v
    assert a.dtype == np.float32
    np.testing.assert_array_equal(a, [2.0, 3.0])
    assert isinstance(np.ones(2) * v, Variable)
    assert isinstance(np.ones(2) - v, Variable)
    np.testing.assert_array_equal((np.ones(2) - v).data, [0.0, -1.0])
    assert (np.ones(2) == v) is False


def test_a_numpy_function_on_a_variable_names_data():
    with pytest.raises(TypeError, match=r"numpy\.exp.*v\.data"):
        np.exp(Variable(np.array(1.0)))
