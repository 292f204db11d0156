"""Variable, Function, the arithmetic primitives and the backward pass (autodiff.core)."""

from __future__ import annotations

import copy
import math
import operator
import pickle

import engine_steps
import numpy as np
import pytest
from engine_steps import iter_backward

import autodiff
import autodiff.functions as F
from autodiff import (
    Config,
    Function,
    Parameter,
    Variable,
    as_array,
    as_variable,
    core,
    no_grad,
    using_config,
)


# =============================================================================
# Construction and array-like attributes
# =============================================================================
@pytest.mark.parametrize(
    ("data", "dtype"),
    [
        (np.array([1.0, 2.0]), np.float64),
        (np.array([1, 2], dtype=np.int32), np.int32),
        (np.float32(1.5), np.float32),
        (np.int64(3), np.int64),
        (2, np.float64),
        (2.5, np.float64),
    ],
)
def test_variable_accepts_arrays_numpy_scalars_and_python_numbers(data, dtype):
    v = Variable(data)
    assert type(v.data) is np.ndarray
    assert v.data.dtype == dtype
    np.testing.assert_array_equal(v.data, np.asarray(data))


def test_python_numbers_become_0d_float64_arrays():
    v = Variable(3)
    assert v.data.shape == ()
    assert v.data.dtype == np.float64


def test_variable_none_is_allowed():
    assert Variable(None).data is None
    assert repr(Variable(None)) == "variable(None)"


@pytest.mark.parametrize(("data", "type_name"), [("abc", "str"), ([1, 2], "list"), ({}, "dict")])
def test_variable_rejects_other_types_naming_the_type(data, type_name):
    with pytest.raises(TypeError, match=rf"Variable: {type_name} is not supported"):
        Variable(data)


def test_array_like_attributes():
    x = Variable(np.arange(6.0).reshape(2, 3), name="x")
    assert x.name == "x"
    assert x.shape == (2, 3)
    assert x.ndim == 2
    assert x.size == 6
    assert x.dtype == np.float64
    assert len(x) == 2
    assert x.grad is None
    assert x.creator is None
    assert x.generation == 0
    np.testing.assert_array_equal(x.T.data, x.data.T)
    np.testing.assert_array_equal(x.reshape(3, 2).data, x.data.reshape(3, 2))
    np.testing.assert_array_equal(x.reshape((6,)).data, x.data.reshape(6))
    np.testing.assert_array_equal(x.transpose().data, x.data.T)
    np.testing.assert_array_equal(x.transpose(1, 0).data, x.data.T)
    np.testing.assert_array_equal(x.transpose((1, 0)).data, x.data.T)
    np.testing.assert_array_equal(x.sum().data, x.data.sum())
    np.testing.assert_array_equal(x.sum(axis=0, keepdims=True).data, x.data.sum(0, keepdims=True))
    np.testing.assert_array_equal(x.max(axis=1).data, x.data.max(1))
    np.testing.assert_array_equal(x.min().data, x.data.min())


def test_repr_matches_dezero_form():
    assert repr(Variable(np.array(1.0))) == "variable(1.0)"
    assert repr(Variable(np.array([1, 2, 3]))) == "variable([1 2 3])"
    assert repr(Variable(np.array([[1, 2], [3, 4]]))) == "variable([[1 2]\n          [3 4]])"


def test_as_array_and_as_variable():
    assert type(as_array(np.float64(1.0))) is np.ndarray
    a = np.ones(2)
    assert as_array(a) is a
    v = Variable(a)
    assert as_variable(v) is v
    assert isinstance(as_variable(a), Variable)


def test_parameter_is_a_variable():
    p = Parameter(np.ones(2))
    assert isinstance(p, Variable)
    y = p * 2
    y.backward()
    np.testing.assert_array_equal(p.grad.data, [2.0, 2.0])


# =============================================================================
# Operators
# =============================================================================
def _v(*shape, seed=0):
    return Variable(np.random.default_rng(seed).uniform(0.5, 1.5, shape))


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (lambda a, b: a + b, lambda a, b: a + b),
        (lambda a, b: a - b, lambda a, b: a - b),
        (lambda a, b: a * b, lambda a, b: a * b),
        (lambda a, b: a / b, lambda a, b: a / b),
        (lambda a, b: a @ b.T, lambda a, b: a @ b.T),
        (lambda a, b: -a, lambda a, b: -a),
        (lambda a, b: +a, lambda a, b: a),
        (lambda a, b: a**3, lambda a, b: a**3),
        (lambda a, b: a[1], lambda a, b: a[1]),
        (lambda a, b: a[:, 1:], lambda a, b: a[:, 1:]),
    ],
)
def test_operators_forward_match_numpy(expr, expected):
    a, b = _v(2, 3, seed=1), _v(2, 3, seed=2)
    np.testing.assert_allclose(expr(a, b).data, expected(a.data, b.data))


@pytest.mark.parametrize(
    "other", [2.0, 3, np.float64(2.0), np.array(2.0), np.array([1.0, 2.0, 3.0])]
)
def test_reflected_operators_with_arrays_and_scalars(other):
    v = Variable(np.array([1.0, 2.0, 4.0]))
    for result, expected in [
        (other + v, other + v.data),
        (v + other, v.data + other),
        (other - v, other - v.data),
        (v - other, v.data - other),
        (other * v, other * v.data),
        (v * other, v.data * other),
        (other / v, other / v.data),
        (v / other, v.data / other),
    ]:
        assert isinstance(result, Variable), type(result)
        assert type(result.data) is np.ndarray
        np.testing.assert_allclose(result.data, expected)


def test_numpy_array_on_the_left_returns_a_variable():
    v = Variable(np.array([1.0, 2.0, 3.0]))
    y = np.ones(3) * v
    assert isinstance(y, Variable)
    assert y.data.dtype == np.float64
    y = np.ones((3, 3)) @ v
    assert isinstance(y, Variable)
    np.testing.assert_allclose(y.data, [6.0, 6.0, 6.0])


def test_results_are_ndarrays_never_numpy_scalars():
    x = Variable(np.array(0.5))
    for y in [x + x, x * 2, 2 - x, x / 3, -x, x**2, F.sin(x), F.exp(x), F.sum(x), F.tanh(x)]:
        assert type(y.data) is np.ndarray, type(y.data)
    y = F.sin(x) * x + x
    y.backward()
    assert type(x.grad.data) is np.ndarray
    v = Variable(np.array([1.0, 2.0]))
    s = F.sum(v)
    assert type(s.data) is np.ndarray
    s.backward()
    assert type(v.grad.data) is np.ndarray


def test_python_number_operands_keep_float32():
    x = Variable(np.ones(3, dtype=np.float32))
    for y in [x * 2.0, 2.0 * x, x + 1, 1 - x, x / 2.0, 2.0 / x, x**2, F.sigmoid(x) * 0.5]:
        assert y.dtype == np.float32, y
    y = F.sum(x * 2.0 + F.exp(x))
    y.backward()
    assert x.grad.dtype == np.float32


def test_pow_rejects_a_variable_exponent():
    x = Variable(np.array(2.0))
    with pytest.raises(TypeError, match="pow: the exponent must be a constant"):
        x ** Variable(np.array(2.0))


@pytest.mark.parametrize(
    ("op", "fn"),
    [
        ("add", operator.add),
        ("sub", operator.sub),
        ("mul", operator.mul),
        ("div", operator.truediv),
    ],
)
def test_broadcasting_errors_name_the_operation_and_shapes(op, fn):
    with pytest.raises(ValueError, match=rf"{op}: shapes \(2, 3\) and \(4,\) cannot be broadcast"):
        fn(Variable(np.ones((2, 3))), Variable(np.ones(4)))


# =============================================================================
# Backward: graph bookkeeping
# =============================================================================
def test_seed_example_from_the_readme():
    x = Variable(np.array(0.5))
    y = F.square(F.exp(F.square(x)))
    y.backward()
    assert repr(y) == "variable(1.648721270700128)"
    assert repr(x.grad) == "variable(3.297442541400256)"


def test_add_of_add_gives_three():
    x = Variable(np.array(3.0))
    y = core.add(core.add(x, x), x)
    y.backward()
    assert x.grad.data == 3.0


def test_diamond_graph_is_processed_in_generation_order():
    # x -> a = x^2 -> (b = a^2, c = a^2) -> y = b + c: y = 2 x^4, dy/dx = 8 x^3 = 64 at 2.
    # A depth-first order runs a's backward before c's contribution arrived: 32, wrong.
    x = Variable(np.array(2.0))
    a = F.square(x)
    y = F.square(a) + F.square(a)
    y.backward()
    assert y.data == 32.0
    assert x.grad.data == 64.0


def test_generations():
    x = Variable(np.array(1.0))
    a = F.square(x)
    b = F.exp(a)
    c = a + b
    assert (x.generation, a.generation, b.generation, c.generation) == (0, 1, 2, 3)
    assert c.creator.generation == 2


def test_gradients_accumulate_across_calls_until_cleargrad():
    x = Variable(np.array(3.0))
    y = x * x
    y.backward()
    assert x.grad.data == 6.0
    y = x * x
    y.backward()
    assert x.grad.data == 12.0
    x.cleargrad()
    y = x * x
    y.backward()
    assert x.grad.data == 6.0


def test_backward_on_a_leaf_sets_its_gradient_to_one():
    x = Variable(np.array([1.0, 2.0]))
    x.backward()
    np.testing.assert_array_equal(x.grad.data, [1.0, 1.0])


def test_retain_grad():
    x0, x1 = Variable(np.array(1.0)), Variable(np.array(1.0))
    t = core.add(x0, x1)
    y = core.add(x0, t)
    y.backward()
    # as in the book (step 18): intermediate gradients are dropped by default
    assert y.grad is None
    assert t.grad is None
    assert (x0.grad.data, x1.grad.data) == (2.0, 1.0)

    x0.cleargrad()
    x1.cleargrad()
    t = core.add(x0, x1)
    y = core.add(x0, t)
    y.backward(retain_grad=True)
    assert y.grad.data == 1.0
    assert t.grad.data == 1.0
    assert (x0.grad.data, x1.grad.data) == (2.0, 1.0)


def test_retained_intermediate_gradients_do_not_flow_into_the_next_pass():
    # A retained .grad of an intermediate is a record; the next backward must not add it in.
    x = Variable(np.array(2.0))
    t = x * 3.0
    y = t * t  # dy/dx = 2 t * 3 = 36
    y.backward(retain_grad=True)
    assert x.grad.data == 36.0
    assert t.grad.data == 12.0
    y.backward(retain_grad=True)
    assert x.grad.data == 72.0  # accumulated, not 36 + 2 * 36
    assert t.grad.data == 24.0


def test_a_custom_seed_gradient_is_used():
    x = Variable(np.array([1.0, 2.0]))
    y = x * 3.0
    y.grad = Variable(np.array([10.0, 100.0]))
    y.backward()
    np.testing.assert_array_equal(x.grad.data, [30.0, 300.0])


def test_no_grad_builds_no_graph():
    x = Variable(np.array(2.0))
    with no_grad():
        y = F.square(x) * 3 + 1
    assert y.creator is None
    assert y.generation == 0
    assert Config.enable_backprop is True
    y.backward()
    assert x.grad is None


def test_using_config_restores_on_error():
    with pytest.raises(RuntimeError), using_config("enable_backprop", False):
        raise RuntimeError
    assert Config.enable_backprop is True


def test_test_mode_switches_train_off():
    with autodiff.test_mode():
        assert Config.train is False
    assert Config.train is True


def test_backward_restores_config_after_an_error():
    class Broken(Function):
        def forward(self, x):
            return x

        def backward(self, gy):
            raise ZeroDivisionError("boom")

    x = Variable(np.array(1.0))
    y = Broken()(x)
    with pytest.raises(ZeroDivisionError):
        y.backward(create_graph=True)
    assert Config.enable_backprop is True


def test_unchain_makes_a_leaf():
    x = Variable(np.array(2.0))
    y = F.square(x)
    z = F.square(y)
    y.unchain()
    z.backward()
    assert y.creator is None
    assert x.grad is None
    assert y.grad.data == 8.0  # dz/dy = 2 y


def test_unchain_backward_cuts_every_link_upstream():
    x = Variable(np.array(2.0))
    a = F.square(x)
    b = F.exp(a)
    y = b + a
    y.unchain_backward()
    assert y.creator is not None  # the output keeps its own creator, as in DeZero
    assert a.creator is None
    assert b.creator is None
    y.backward()
    assert x.grad is None
    assert a.grad.data == 1.0


def test_multi_output_function_with_an_unused_output():
    class Split(Function):
        def forward(self, x):
            return x[0], x[1]

        def backward(self, g0, g1):
            return Variable(np.stack([g0.data, g1.data]))

    x = Variable(np.array([1.0, 2.0]))
    a, b = Split()(x)
    y = a * 3.0
    y.backward()
    np.testing.assert_array_equal(x.grad.data, [3.0, 0.0])
    del b


def test_backward_names_a_wrong_number_of_gradients():
    class Bad(Function):
        def forward(self, x0, x1):
            return x0 + x1

        def backward(self, gy):
            return gy

    y = Bad()(Variable(np.array(1.0)), Variable(np.array(2.0)))
    with pytest.raises(ValueError, match=r"Bad.backward returned 1 gradient\(s\) for 2 input"):
        y.backward()


def test_backward_names_a_gradient_of_the_wrong_shape():
    class Bad(Function):
        def forward(self, x):
            return x.sum()

        def backward(self, gy):
            return gy  # should be broadcast to x's shape

    y = Bad()(Variable(np.ones(3)))
    with pytest.raises(ValueError, match=r"gradient of shape \(\) for input 0 of shape \(3,\)"):
        y.backward()


def test_a_user_function_returning_arrays_from_backward_works():
    class Twice(Function):
        def forward(self, x):
            return 2 * x

        def backward(self, gy):
            return 2 * gy.data  # a plain array, not a Variable

    x = Variable(np.array([1.0, 2.0]))
    Twice()(x).backward()
    np.testing.assert_array_equal(x.grad.data, [2.0, 2.0])
    x.cleargrad()
    Twice()(x).backward(create_graph=True)
    np.testing.assert_array_equal(x.grad.data, [2.0, 2.0])


def test_deep_chain_of_100000_runs_backward_and_releases():
    x = Variable(np.array(1.0))
    y = x
    for _ in range(100_000):
        y = y + 1.0
    assert y.generation == 100_000
    y.backward()
    assert x.grad.data == 1.0
    del y  # the chain is freed by reference counting without a RecursionError


# =============================================================================
# Higher-order derivatives
# =============================================================================
def test_nth_derivative_of_sin():
    x = Variable(np.array(1.0))
    y = F.sin(x)
    y.backward(create_graph=True)
    expected = [math.cos(1.0), -math.sin(1.0), -math.cos(1.0), math.sin(1.0)]
    for n in range(4):
        gx = x.grad
        assert gx.data == pytest.approx(expected[n], abs=1e-12), n
        x.cleargrad()
        gx.backward(create_graph=True)


def test_newton_method_on_x4_minus_2x2():
    def f(x):
        return x**4 - 2 * x**2

    x = Variable(np.array(2.0))
    iterates = []
    for _ in range(10):
        iterates.append(float(x.data))
        y = f(x)
        x.cleargrad()
        y.backward(create_graph=True)
        gx = x.grad
        x.cleargrad()
        gx.backward()
        gx2 = x.grad
        x.data = x.data - gx.data / gx2.data
    # the iterates the book prints (step 33)
    expected = [
        2.0,
        1.4545454545454546,
        1.1510467893775467,
        1.0253259289766978,
        1.0009084519430513,
        1.0000012353089454,
        1.000000000002289,
        1.0,
        1.0,
        1.0,
    ]
    assert iterates == expected


def test_double_backprop_gradient_of_gradient_norm():
    # z = (dy/dx)^3 + y with y = x^2: dz/dx = 3 (2x)^2 * 2 + 2x = 24 x^2 + 2x = 100 at x = 2
    x = Variable(np.array(2.0))
    y = x**2
    y.backward(create_graph=True)
    gx = x.grad
    x.cleargrad()
    z = gx**3 + y
    z.backward()
    assert x.grad.data == 100.0


# =============================================================================
# iter_backward and observers
# =============================================================================
def test_iter_backward_yields_steps_in_heap_order():
    x = Variable(np.array(2.0))
    a = F.square(x)
    b = F.exp(a)
    c = F.sin(a)
    y = b + c
    steps = list(iter_backward(y))
    names = [type(s.function).__name__ for s in steps]
    # generation first; among equal generations the most recently created first (Sin, Exp)
    assert names == ["Add", "Sin", "Exp", "Square"]
    assert [s.index for s in steps] == [0, 1, 2, 3]
    assert steps[-1].accumulated == ()
    assert x.grad.data == pytest.approx(2 * 2.0 * (math.exp(4.0) + math.cos(4.0)))
    # the fan-in at a is a step the user sees: Exp's contribution added to Sin's
    (slot, old, new) = steps[2].accumulated[0]
    assert slot == 0
    assert old.data == pytest.approx(math.cos(4.0))
    assert new.data == pytest.approx(math.cos(4.0) + math.exp(4.0))
    assert [type(v.creator).__name__ for v in steps[0].cleared] == ["Add"]


def test_iter_backward_reports_grads_as_variables():
    x = Variable(np.array([1.0, 2.0]))
    y = F.sum(x * x)
    steps = list(iter_backward(y))
    for step in steps:
        for g in (*step.output_grads, *step.input_grads):
            assert g is None or isinstance(g, Variable)
    mul = steps[-1]
    np.testing.assert_array_equal(mul.input_grads[0].data, [1.0, 2.0])  # per slot
    np.testing.assert_array_equal(mul.input_grads[1].data, [1.0, 2.0])
    ((slot, _old, new),) = mul.accumulated  # x * x: the second slot adds to the first
    assert slot == 1
    np.testing.assert_array_equal(new.data, [2.0, 4.0])
    np.testing.assert_array_equal(x.grad.data, [2.0, 4.0])


class _Recorder:
    def __init__(self):
        self.events = []

    def on_variable(self, v):
        self.events.append(("variable", v))

    def on_constant(self, v):
        self.events.append(("constant", v))

    def on_forward(self, f, inputs, outputs, recorded):
        self.events.append(("forward", type(f).__name__, recorded))

    def on_backward_begin(self, output, retain_grad, create_graph):
        self.events.append(("begin", output.grad.data.item()))

    def on_backward_step(self, step):
        self.events.append(("step", type(step.function).__name__, step.index))

    def on_backward_end(self, output):
        self.events.append(("end",))


def test_observer_hook_events_and_results_match_the_silent_path():
    rec = _Recorder()
    engine_steps.add_observer(rec)
    try:
        x = Variable(np.array(0.5))
        y = F.sin(x) * x + 2.0
        with no_grad():
            F.exp(x)
        y.backward()
        observed = x.grad.data.copy()
    finally:
        engine_steps.remove_observer(rec)
    kinds = [e[0] for e in rec.events]
    assert kinds.count("constant") == 1
    forwards = [e[1:] for e in rec.events if e[0] == "forward"]
    assert forwards == [("Sin", True), ("Mul", True), ("Add", True), ("Exp", False)]
    steps = [e[1:] for e in rec.events if e[0] == "step"]
    assert steps == [("Add", 0), ("Mul", 1), ("Sin", 2)]
    assert rec.events[-1] == ("end",)
    assert ("begin", 1.0) in rec.events

    x2 = Variable(np.array(0.5))
    (F.sin(x2) * x2 + 2.0).backward()
    assert observed == x2.grad.data
    assert core._observers == ()


def test_functions_have_creation_order_even_under_no_grad():
    with no_grad():
        f = F.Sin()
        f(Variable(np.array(1.0)))
    assert isinstance(f._order, int)


def test_plain_operands_become_constants_without_gradients():
    x = Variable(np.array([1.0, 2.0]))
    y = x / 3.0 + np.ones(2)
    const = y.creator.inputs[1]
    assert isinstance(const, core.Constant)
    assert isinstance(const, Variable)
    y.backward()
    assert const.grad is None
    np.testing.assert_allclose(x.grad.data, [1 / 3, 1 / 3])
    # the gradient still reaches observers and iter_backward
    steps = list(iter_backward(x / 3.0 + np.ones(2)))
    assert steps[0].input_grads[1] is not None


def test_backward_event_hook_reports_what_the_backward_step_does():
    """on_backward_event gets each step's facts as they are, without a BackwardStep."""
    seen = []

    class Events:
        def on_backward_event(self, f, gys, gxs, accumulated, cleared):
            seen.append((type(f).__name__, gys, gxs, accumulated, cleared))

    x = Variable(np.array(0.5))
    y = F.sin(x) * x  # x reaches Mul twice: its gradient accumulates at the leaf
    with_steps = [
        (type(s.function).__name__, s.output_grads_raw, s.input_grads_raw, s.accumulated_raw,
         s.cleared)
        for s in iter_backward(y)
    ]  # fmt: skip
    x.cleargrad()
    events = Events()
    core.add_observer(events)
    try:
        y.backward()
    finally:
        core.remove_observer(events)
    assert [s[0] for s in seen] == [s[0] for s in with_steps] == ["Mul", "Sin"]
    for got, expected in zip(seen, with_steps, strict=True):
        assert [float(g) for g in got[1]] == [float(g) for g in expected[1]]
        assert [float(g) for g in got[2]] == [float(g) for g in expected[2]]
        assert len(got[3]) == len(expected[3]) and got[4] == expected[4]
    assert len(seen[1][3]) == 1  # Sin's gradient added to the one Mul gave x


def test_rename_hook_fires_on_name_assignment_only():
    renamed = []

    class Names:
        def on_rename(self, v):
            renamed.append(v.name)

    observer = Names()
    core.add_observer(observer)
    try:
        x = Variable(np.array(1.0), name="x")  # a name given at construction: no event
        y = x * 2.0
        y.name = "y"
    finally:
        core.remove_observer(observer)
    y.name = "later"
    assert renamed == ["y"] and y.name == "later" and x.name == "x"


def _pickled(v):
    return pickle.loads(pickle.dumps(v))


@pytest.mark.parametrize("make_copy", [copy.copy, copy.deepcopy, _pickled])
def test_a_copied_variable_is_a_new_object_with_its_own_creation_order(make_copy):
    """The recorder names live objects by creation order, so a copy must not share it."""
    x = Variable(np.array([1.0, 2.0]), name="x")
    c = make_copy(x)
    assert c is not x and c.name == "x" and np.array_equal(c.data, x.data)
    assert c._order != x._order
    if make_copy is not _pickled:  # a graph holds weak references: it does not pickle
        y = F.sin(x)
        d = make_copy(y)
        assert d.generation == y.generation and d._order != y._order
        assert d.creator._order != y.creator._order or make_copy is copy.copy


@pytest.mark.parametrize("create_graph", [False, True])
def test_backward_sums_a_broadcast_gradient_back_once_for_any_function(create_graph):
    # a user's Function may return the gradient at the broadcast shape, as the built-in
    # derivatives do: the loop sums it back to the input's shape on both paths
    class AddRow(Function):
        def forward(self, x, b):
            return x + b

        def backward(self, gy):
            return gy, gy

    x = Variable(np.ones((4, 3)))
    b = Variable(np.array([1.0, 2.0, 3.0]))
    AddRow()(x, b).backward(create_graph=create_graph)
    assert b.grad.shape == (3,)
    np.testing.assert_array_equal(b.grad.data, [4.0, 4.0, 4.0])
    assert (b.grad.creator is not None) == create_graph


def test_backward_names_the_op_and_shapes_broadcasting_cannot_explain():
    class Bad(Function):
        def forward(self, x):
            return x * 2

        def backward(self, gy):
            return gy[:2]

    y = Bad()(Variable(np.ones(3)))
    with pytest.raises(ValueError, match=r"Bad.backward returned a gradient of shape \(2,\)"):
        y.backward()


def test_observers_changing_binds_the_handlers_once_at_its_end(monkeypatch):
    from autodiff import core

    calls = []
    real = core._bind_handlers
    monkeypatch.setattr(core, "_bind_handlers", lambda: (calls.append(1), real()))

    class Seen:
        def __init__(self):
            self.ops = []

        def on_forward(self, function, inputs, outputs, recorded):
            self.ops.append(type(function).__name__)

    a, b = Seen(), Seen()
    core.add_observer(a)
    calls.clear()
    with core.observers_changing():
        core.remove_observer(a)
        core.add_observer(b)
        with core.observers_changing():  # nested: still one binding, at the outer end
            core.remove_observer(b)
            core.add_observer(b)
        assert calls == []
    assert calls == [1]
    try:
        F.exp(Variable(np.array(1.0)))
        assert a.ops == [] and b.ops == ["Exp"]  # the new set is the one bound
        with pytest.raises(RuntimeError), core.observers_changing():
            core.remove_observer(b)
            raise RuntimeError("boom")
        F.exp(Variable(np.array(1.0)))
        assert b.ops == ["Exp"]  # bound at the end even when the block raised
    finally:
        core.remove_observer(a)
        core.remove_observer(b)


def test_replace_observers_removes_then_adds_with_one_binding(monkeypatch):
    # What a long run's recording does at a kept pass's end: its new recorder in the place of
    # the ended one, its own observer after it; the order is the one remove_observer and
    # add_observer one by one give, with the handlers bound once
    from autodiff import core

    calls = []
    real = core._bind_handlers
    monkeypatch.setattr(core, "_bind_handlers", lambda: (calls.append(1), real()))
    heard = []

    class Hears:
        def __init__(self, name):
            self.name = name

        def on_backward_begin(self, output, retain_grad, create_graph):
            heard.append(self.name)

    old, log, other, new = Hears("old"), Hears("log"), Hears("other"), Hears("new")
    for o in (old, log, other):
        core.add_observer(o)
    try:
        calls.clear()
        core.replace_observers((old, log), (new, log))
        assert calls == [1]
        assert core._observers == (other, new, log)
        (Variable(np.array(2.0)) * 3).backward()
        assert heard == ["other", "new", "log"]
        core.replace_observers((), (log,))  # already attached: not twice
        assert core._observers == (other, new, log)
    finally:
        for o in (old, log, other, new):
            core.remove_observer(o)


def test_every_observer_hears_each_operation_by_the_handler_it_defines():
    # A recorded one-output operation goes to on_forward_one where an observer defines it,
    # to on_forward (outputs as a list, recorded True) where it does not; several outputs
    # and no_grad go to on_forward. Each backward step reaches every observer, in order.
    heard = []

    class Plain:
        def on_forward(self, function, inputs, outputs, recorded):
            heard.append(("plain", type(function).__name__, len(outputs), recorded))

        def on_backward_event(self, function, gys, gxs, accumulated, cleared):
            heard.append(("plain step", type(function).__name__))

    class Fast(Plain):
        def on_forward(self, function, inputs, outputs, recorded):
            heard.append(("fast", type(function).__name__, len(outputs), recorded))

        def on_forward_one(self, function, inputs, output):
            assert output is function.outputs[0]() and inputs is function.inputs
            heard.append(("fast one", type(function).__name__))

        def on_backward_event(self, function, gys, gxs, accumulated, cleared):
            heard.append(("fast step", type(function).__name__))

    class Two(Function):
        def forward(self, x):
            return x, 2 * x

        def backward(self, gy0, gy1):
            return gy0 + 2 * gy1

    plain, fast = Plain(), Fast()
    core.add_observer(plain)
    core.add_observer(fast)
    try:
        x = Variable(np.array(1.0))
        y = F.exp(x)
        a, b = Two()(y)
        with core.no_grad():
            F.exp(x)
        (a + b).backward()
    finally:
        core.remove_observer(plain)
        core.remove_observer(fast)
    assert heard[:6] == [
        ("plain", "Exp", 1, True),
        ("fast one", "Exp"),
        ("plain", "Two", 2, True),
        ("fast", "Two", 2, True),
        ("plain", "Exp", 1, False),
        ("fast", "Exp", 1, False),
    ]
    assert heard[6:8] == [("plain", "Add", 1, True), ("fast one", "Add")]
    steps = [h for h in heard[8:] if h[0].endswith("step")]  # (Two's backward runs no_grad)
    assert steps == [
        (who, op) for op in ("Add", "Two", "Exp") for who in ("plain step", "fast step")
    ]
    assert core._forward_ones == () and core._backward_step is None  # none left listening
