"""Running programs of the expression language: values, gradients, traces, runtime errors."""

import math

import numpy as np
import pytest

from autodiff.trace import NodeState
from viewer.model.expression.program import ExpressionError, evaluate, parse


def test_square_exp_square_gradient_at_half():
    ev = evaluate("y = square(exp(square(x)))", {"x": 0.5})
    assert float(ev.output.data) == pytest.approx(1.648721270700128)
    assert float(ev.leaves["x"].grad.data) == pytest.approx(3.297442541400256, rel=1e-15)


def test_tanh_x_squared():
    x = 0.7
    ev = evaluate("y = tanh(x) * x**2", {"x": x})
    t = math.tanh(x)
    assert float(ev.output.data) == pytest.approx(t * x**2)
    expected = (1 - t**2) * x**2 + 2 * x * t
    assert float(ev.leaves["x"].grad.data) == pytest.approx(expected, rel=1e-12)


def test_trace_has_forward_then_backward_steps_and_names():
    ev = evaluate("x = 0.5\na = square(x)\ny = exp(a)")
    phases = [s.phase for s in ev.trace.steps]
    assert phases == ["forward", "forward", "backward", "backward"]
    names = {ev.trace.node(n)["name"] for n in ev.trace.variables}
    assert {"x", "a", "y"} <= names
    x_id = next(n for n in ev.trace.variables if ev.trace.node(n)["name"] == "x")
    assert ev.trace.state_at(x_id, -1) is NodeState.VALUE
    assert ev.trace.state_at(x_id, len(ev.trace.steps) - 1) is NodeState.GRAD


def test_default_values_and_overrides():
    program = parse("x = 2.0\ny = x * z")
    assert program.leaves == ("x", "z")
    ev = program.run()
    assert float(ev.output.data) == 2.0  # z defaults to 1.0
    ev = program.run({"z": 3.0, "unknown": 5.0})
    assert float(ev.output.data) == 6.0
    assert float(ev.leaves["z"].grad.data) == 2.0


def test_arrays_matmul_and_sum():
    ev = evaluate("W = [[1, 2], [3, 4]]\nv = [1, 1]\ny = sum(v @ W)")
    assert float(ev.output.data) == 10.0
    np.testing.assert_array_equal(ev.leaves["W"].grad.data, np.ones((2, 2)))


def test_non_scalar_output_is_seeded_with_ones():
    ev = evaluate("x = [1, 2, 3]\ny = x * x")
    np.testing.assert_array_equal(ev.leaves["x"].grad.data, [2.0, 4.0, 6.0])


def test_indexing():
    ev = evaluate("x = [1, 2, 3]\ny = x[1] * 3")
    np.testing.assert_array_equal(ev.leaves["x"].grad.data, [0.0, 3.0, 0.0])


def test_grad_gives_higher_order_derivatives():
    ev = evaluate("x = 2.0\ny = x ** 4 - 2 * x ** 2\ng = grad(y, x)\nh = grad(g, x)")
    assert float(ev.namespace["g"].data) == pytest.approx(4 * 8 - 4 * 2)  # 4x^3 - 4x
    assert float(ev.output.data) == pytest.approx(12 * 4 - 4)  # 12x^2 - 4
    assert float(ev.leaves["x"].grad.data) == pytest.approx(24 * 2)  # third derivative
    passes = {s.backward_pass for s in ev.trace.steps if s.phase == "backward"}
    assert passes == {0, 1, 2}


def test_grad_of_an_unrelated_variable_is_zero():
    ev = evaluate("y = x * 2\ng = grad(y, z)\nout = g + y")
    assert float(ev.namespace["g"].data) == 0.0


def test_grad_needs_a_scalar():
    with pytest.raises(ExpressionError, match="scalar") as info:
        evaluate("x = [1, 2]\ny = x * 2\ng = grad(y, x)")
    assert (info.value.line, info.value.col) == (3, 10)


def test_shape_mismatch_reports_line_col_and_the_engine_message():
    with pytest.raises(ExpressionError) as info:
        evaluate("a = ones(3)\nb = ones(4)\ny = a * x\nz = y + b")
    error = info.value
    assert (error.line, error.col) == (4, 5)
    assert "(3,)" in error.message and "(4,)" in error.message


def test_bad_axis_is_an_expression_error():
    with pytest.raises(ExpressionError) as info:
        evaluate("x = [1, 2]\ny = sum(x, axis=3)")
    assert info.value.line == 2


def test_constant_result_is_refused():
    with pytest.raises(ExpressionError, match="constant"):
        evaluate("2 + 3")


def test_runtime_broadcast_beyond_the_size_limit_is_refused():
    with pytest.raises(ExpressionError, match="limit"):
        evaluate("a = ones(2000, 1)\nb = ones(1, 2000)\ny = a * b + x")


def test_nan_is_reported_not_raised_and_can_be_raised_on_request():
    ev = evaluate("y = log(x - x)", {"x": 1.5})
    assert ev.nonfinite is not None
    assert ev.nonfinite.line == 1
    first = ev.trace.first_nonfinite()
    assert first is not None and first.op == "Log"
    with pytest.raises(ExpressionError, match="Inf"):
        parse("y = log(x - x)").run({"x": 1.5}, nonfinite="raise")


def test_same_text_gives_the_same_trace():
    text = "W = randn(3, 2)\nb = zeros(2)\ny = sum(tanh(ones(4, 3) @ W + b))"
    a = evaluate(text)
    b = evaluate(text)
    assert [(s.op, s.phase) for s in a.trace.steps] == [(s.op, s.phase) for s in b.trace.steps]
    np.testing.assert_array_equal(a.output.data, b.output.data)


def test_release_drops_the_graph():
    import gc
    import weakref

    ev = evaluate("y = exp(square(x))")
    ref = weakref.ref(ev.output)
    gc.disable()
    try:
        ev.release()
        assert ref() is None
    finally:
        gc.enable()
    assert ev.released


def test_retain_grad_keeps_intermediate_gradients():
    ev = parse("a = square(x)\ny = exp(a)").run(retain_grad=True)
    assert ev.namespace["a"].grad is not None
    ev = parse("a = square(x)\ny = exp(a)").run()
    assert ev.namespace["a"].grad is None


def test_augmented_assignment():
    ev = evaluate("y = x * 2\ny += x\ny *= 3", {"x": 1.0})
    assert float(ev.output.data) == 9.0
    assert float(ev.leaves["x"].grad.data) == 9.0
