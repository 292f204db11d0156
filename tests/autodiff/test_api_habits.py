"""PyTorch's and the book's habits (issue 14): method forms, in-place updates, a seeded
``backward(gradient)``, ``Function.input``/``output``, ``numerical_diff``, ``is_simple_core``,
``optimizer.step``/``zero_grad``, ``Layer.train``/``eval``/``named_parameters``.

The expected values are PyTorch's answers, computed by hand (torch is not a test dependency).
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

import autodiff
import autodiff.functions as F
import autodiff.layers as L
from autodiff import Config, Function, Model, Variable, no_grad, optimizers, trace, utils
from autodiff.models import MLP


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


def test_gradients_updated_in_place_are_each_their_own():
    # Add hands one gradient array to both inputs, reshape a view of it: the leaves' and the
    # retained intermediates' .grad are copies, so scaling one leaves the others alone
    x, w = Variable(np.ones((2, 2))), Variable(np.ones(4))
    h = x.reshape(4) + w
    t = h * 1.0
    t.backward(retain_grad=True)
    with no_grad():
        x.grad *= 0.5
        h.grad -= 1.0
    np.testing.assert_array_equal(x.grad.data, np.full((2, 2), 0.5))
    np.testing.assert_array_equal(w.grad.data, np.ones(4))
    np.testing.assert_array_equal(h.grad.data, np.zeros(4))
    np.testing.assert_array_equal(t.grad.data, np.ones(4))


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


# =============================================================================
# The book's small API items
# =============================================================================
def test_is_simple_core_pattern_of_the_books_early_steps():
    namespace: dict = {}
    code = (
        "import autodiff as dezero\n"
        "if dezero.is_simple_core:\n"
        "    from dezero.core_simple import Variable\n"
        "else:\n"
        "    from autodiff.core import Variable\n"
    )
    exec(code, namespace)
    assert autodiff.is_simple_core is False
    assert namespace["Variable"] is Variable


def test_function_input_and_output():
    x = Variable(np.array(2.0))
    y = F.exp(x)
    f = y.creator
    assert f.input is x
    assert f.output is y
    with pytest.raises(AttributeError, match=r"2 inputs; read f\.inputs"):
        _ = (x + x).creator.input
    with pytest.raises(AttributeError, match="not been called"):
        _ = F.Exp().output


def test_a_function_that_keeps_its_own_input_and_output():
    # the book's steps 1-6: a __call__ of its own that stores self.input and self.output
    class Square(Function):
        def __call__(self, input):
            output = Variable(input.data**2)
            self.input = input
            self.output = output
            return output

    x = Variable(np.array(3.0))
    f = Square()
    y = f(x)
    assert f.input is x
    assert f.output is y


def test_numerical_diff_is_a_central_difference():
    x = Variable(np.array(2.0))
    np.testing.assert_allclose(utils.numerical_diff(F.square, x), 4.0, rtol=1e-8)

    def composite(x):
        return F.square(F.exp(F.square(x)))

    x = Variable(np.array(0.5))
    np.testing.assert_allclose(utils.numerical_diff(composite, x), 3.2974426, rtol=1e-6)
    np.testing.assert_allclose(
        utils.numerical_diff(F.sin, Variable(np.array([0.0, 1.0])), eps=1e-6),
        np.cos([0.0, 1.0]),
        rtol=1e-8,
    )


def test_optimizer_step_and_zero_grad_are_update_and_cleargrads():
    rng = np.random.default_rng(0)
    x, t = rng.random((5, 2)), rng.random((5, 1))
    model = MLP((4, 1))
    model(x)  # the weights are made on the first call
    twin = copy.deepcopy(model)
    opt = optimizers.SGD(0.1).setup(model)
    ref = optimizers.SGD(0.1).setup(twin)
    for _ in range(3):
        opt.zero_grad()
        F.mean_squared_error(model(x), t).backward()
        opt.step()
        twin.cleargrads()
        F.mean_squared_error(twin(x), t).backward()
        ref.update()
    for p, q in zip(model.params(), twin.params(), strict=True):
        np.testing.assert_array_equal(p.data, q.data)
    assert opt.steps == 3
    opt.zero_grad()
    assert all(p.grad is None for p in model.params())
    with pytest.raises(RuntimeError, match="setup"):
        optimizers.SGD().zero_grad()


def test_eval_and_train_switch_config_train():
    model = MLP((3, 1))
    assert model.eval() is model
    assert Config.train is False
    x = Variable(np.ones((2, 3)))
    assert F.dropout(x) is x
    assert model.train() is model
    assert Config.train is True
    model.train(False)
    assert Config.train is False


def test_named_parameters_are_dotted_paths():
    class Net(Model):
        def __init__(self):
            super().__init__()
            self.l0 = L.Linear(3, in_size=2)
            self.l1 = L.Linear(1, in_size=3)
            self.shared = self.l0  # a parameter reached twice is named once

    net = Net()
    names = [name for name, _ in net.named_parameters()]
    assert names == ["l0.W", "l0.b", "l1.W", "l1.b"]
    params = [p for _, p in net.named_parameters()]
    assert params == list(net.params())


# ------------------------------------------------------------- the book's steps 28, 59, 60
def test_core_simple_serves_steps_23_to_32():
    """Step 28: ``from dezero.core_simple import Variable, setup_variable`` with dezero read
    as autodiff; Rosenbrock by gradient descent, as the step does."""
    from autodiff.core_simple import Variable as SimpleVariable
    from autodiff.core_simple import setup_variable

    setup_variable()
    x0, x1 = SimpleVariable(np.array(0.0)), SimpleVariable(np.array(2.0))
    for _ in range(1000):
        y = 100 * (x1 - x0**2) ** 2 + (x0 - 1) ** 2
        x0.cleargrad()
        x1.cleargrad()
        y.backward()
        x0.data -= 0.001 * x0.grad
        x1.data -= 0.001 * x1.grad
    # the step prints variable(0.68371...) variable(0.46595...) after its 1000 iterations
    assert float(x0.data) == pytest.approx(0.6837118569138317, abs=1e-12)
    assert float(x1.data) == pytest.approx(0.4659526837427042, abs=1e-12)


def test_mean_squared_error_broadcasts_as_dezero_unless_it_grows():
    y = Variable(np.array([[0.5]]))  # step 59: a (1, 1) prediction, a (1,) target
    loss = F.mean_squared_error(y, np.array([0.2]))
    loss.backward()
    assert float(loss.data) == pytest.approx(0.09)
    assert y.grad.shape == (1, 1) and float(y.grad.data[0, 0]) == pytest.approx(0.6)
    with pytest.raises(ValueError, match=r"\(4, 1\) and \(4,\) differ and would broadcast to"):
        F.mean_squared_error(np.ones((4, 1)), np.ones(4))  # (4, 4): the classic bug


def test_seq_data_loader_is_importable_from_the_package():
    from autodiff import SeqDataLoader
    from autodiff.dataloaders import SeqDataLoader as Same

    assert SeqDataLoader is Same
