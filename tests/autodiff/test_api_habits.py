"""PyTorch's and the book's habits (issue 14): method forms, in-place updates and a seeded
``backward(gradient)``.

The expected values are PyTorch's answers, computed by hand (torch is not a test dependency).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import autodiff.functions as F
import autodiff.layers as L
from autodiff import Config, Variable, no_grad, trace


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


# =============================================================================
# backward(gradient)
# =============================================================================
def test_a_number_seeds_backward_as_in_pytorch():
    x = Variable(np.array(3.0))
    y = x**2
    y.backward(2.0)
    np.testing.assert_allclose(x.grad.data, 2.0 * 2 * 3.0)  # torch: 12.0


def test_an_array_seeds_a_vector_output():
    x = Variable(np.array([1.0, 2.0, 3.0]))
    y = x**2
    y.backward(np.array([1.0, 10.0, 100.0]))
    np.testing.assert_allclose(x.grad.data, [2.0, 40.0, 600.0])  # torch: [2, 40, 600]


def test_a_scalar_seed_is_broadcast_and_takes_the_dtype():
    x = Variable(np.array([1.0, 2.0], dtype=np.float32))
    y = x * 3.0
    y.backward(0.5)
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(x.grad.data, [1.5, 1.5])


def test_a_variable_seed_and_the_caller_array_is_not_kept():
    seed = np.array([1.0, -1.0])
    x = Variable(np.array([2.0, 5.0]))
    y = x * x
    y.backward(seed, retain_grad=True)
    seed[:] = 0.0
    np.testing.assert_allclose(y.grad.data, [1.0, -1.0])
    np.testing.assert_allclose(x.grad.data, [4.0, -10.0])
    x.cleargrad()
    (x * 3.0).backward(Variable(np.array([2.0, 1.0])))
    np.testing.assert_allclose(x.grad.data, [6.0, 3.0])


def test_a_seed_on_a_leaf_is_its_gradient():
    x = Variable(np.array([1.0, 2.0]))
    x.backward(np.array([3.0, 4.0]))
    np.testing.assert_allclose(x.grad.data, [3.0, 4.0])


def test_a_seed_with_create_graph_is_differentiated():
    x = Variable(np.array(2.0))
    y = x**3
    y.backward(2.0, create_graph=True)
    gx = x.grad
    np.testing.assert_allclose(gx.data, 2.0 * 3 * 4.0)  # torch: 24
    x.cleargrad()
    gx.backward()
    np.testing.assert_allclose(x.grad.data, 2.0 * 6 * 2.0)  # torch: 24

    # a Variable seed stays in the graph: d(g * 3x^2)/dg = 3x^2
    x = Variable(np.array(2.0))
    g = Variable(np.array(2.0))
    (x**3).backward(g, create_graph=True)
    gx = x.grad
    x.cleargrad()
    gx.backward()
    np.testing.assert_allclose(g.grad.data, 12.0)
    np.testing.assert_allclose(x.grad.data, 24.0)


def test_a_seed_of_the_wrong_shape_names_both_shapes():
    y = Variable(np.ones((2, 3))) * 2.0
    with pytest.raises(ValueError, match=r"\(3,\).*\(2, 3\)"):
        y.backward(np.ones(3))


@pytest.mark.parametrize("flag", [True, False, np.bool_(True)])
def test_dezero_positional_flag_explains_the_signature(flag):
    y = Variable(np.array(1.0)) * 2.0
    with pytest.raises(TypeError, match=r"gradient=.*retain_grad="):
        y.backward(flag)


@pytest.mark.parametrize("keyword", ["retain_grad", "create_graph"])
def test_a_non_bool_flag_explains_the_signature(keyword):
    y = Variable(np.array(1.0)) * 2.0
    with pytest.raises(TypeError, match=rf"{keyword}.*gradient="):
        y.backward(**{keyword: np.ones(1)})
    with pytest.raises(TypeError, match="retain_grad"):
        y.backward(None, np.ones(()))


def test_dezero_keyword_calls_still_work():
    x = Variable(np.array(2.0))
    t = x * x
    y = t + x
    y.backward(retain_grad=True)
    np.testing.assert_allclose(t.grad.data, 1.0)
    np.testing.assert_allclose(x.grad.data, 5.0)
    x.cleargrad()
    z = x**3
    z.backward(create_graph=True)
    np.testing.assert_allclose(x.grad.data, 12.0)


@pytest.mark.parametrize("retain_grad", [False, True])
def test_the_recorder_sees_the_seed(retain_grad):
    x = Variable(np.array([1.0, 2.0, 3.0]), name="x")
    seed = np.array([1.0, 10.0, 100.0])
    with trace.record() as t:
        y = x**2
        y.backward(seed, retain_grad=retain_grad)
    root = t.backward_roots[0]
    step = t.steps[-1]
    assert step.phase == "backward"
    np.testing.assert_array_equal(step.output_grads[0].array, seed)
    if retain_grad:
        np.testing.assert_array_equal(t.grad_at(root, step.index).array, seed)
