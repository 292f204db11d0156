"""Each primitive's formula text evaluates to what its own derivative computes (the text
cannot drift from the code), and the evaluator reads only its notation."""

import numpy as np
import pytest

import autodiff.functions as F
from autodiff import Variable, formulas
from autodiff.core import ArrayOps

RNG = np.random.default_rng(0)


def _positive(shape=(3, 2)):
    return RNG.uniform(0.5, 2.0, shape)


def _any(shape=(3, 2)):
    return RNG.standard_normal(shape)


# op name -> (make the output from Variables, input arrays)
CASES = {
    "Add": (lambda a, b: a + b, [_any(), _any()]),
    "Mul": (lambda a, b: a * b, [_any(), _any()]),
    "Neg": (lambda a: -a, [_any()]),
    "Sub": (lambda a, b: a - b, [_any(), _any()]),
    "Div": (lambda a, b: a / b, [_any(), _positive()]),
    "Square": (F.square, [_any()]),
    "Exp": (F.exp, [_any()]),
}


def environment(function, gys):
    """The names a formula reads, for ``function`` just run: x/x0.., y/y0.., gy/gy0.., and
    the Function's own attributes."""
    env = {k: v for k, v in vars(function).items() if not k.startswith("_")}
    xs = [v.data for v in function.inputs]
    ys = [o().data for o in function.outputs]
    for prefix, values in (("x", xs), ("y", ys), ("gy", gys)):
        if len(values) == 1:
            env[prefix] = values[0]
        for i, v in enumerate(values):
            env[f"{prefix}{i}"] = v
    return env


@pytest.mark.parametrize("op", sorted(CASES))
def test_the_formula_text_computes_what_the_derivative_does(op):
    make, arrays = CASES[op]
    inputs = [Variable(a.copy()) for a in arrays]
    out = make(*inputs)
    function = out.creator
    assert type(function).__name__ == op
    text = formulas.formula_of(function)
    assert text is not None and len(text) == len(inputs)
    gy = RNG.standard_normal(out.shape)
    expected = function.derivative(ArrayOps(), gy)
    if not isinstance(expected, tuple):
        expected = (expected,)
    env = environment(function, [gy])
    for slot, (formula, want) in enumerate(zip(text, expected, strict=True)):
        got = np.broadcast_to(formulas.evaluate(formula, env), np.shape(want))
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=f"{op} {formula}")
        assert formulas.gradient_name(formula) == ("gx" if len(text) == 1 else f"gx{slot}")


def test_a_formula_is_found_by_class_instance_and_recorded_op_name():
    y = F.square(Variable(np.array(2.0)))
    assert formulas.formula_of(y.creator) == formulas.formula_of(F.Square)
    assert formulas.formula_of("Square") == ("gx = gy · 2 · x",)
    assert formulas.formula_of("NoSuchOp") is None


def test_the_notation_reads_its_signs():
    env = {"gy": 3.0, "x": 2.0, "x0": 4.0, "x1": 2.0}
    assert formulas.evaluate("gx = gy · 2 · x", env) == 12.0
    assert formulas.evaluate("gy × x²", env) == 12.0
    assert formulas.evaluate("gy · (−x0 / x1²)", env) == -3.0
    assert formulas.evaluate("2 ^ 3", env) == 8.0
    assert formulas.evaluate("√(x0)", env) == 2.0
    a = np.arange(6.0).reshape(2, 3)
    assert formulas.evaluate("aᵀ", {"a": a}).shape == (3, 2)
    assert formulas.names_in("gx = gy · exp(x)") == {"gy", "x"}


@pytest.mark.parametrize(
    "text",
    ["__import__('os')", "x.__class__", "open('f')", "[x for x in y]", "lambda: 1", "x[0]", "'s'"],
)
def test_anything_outside_the_notation_is_refused(text):
    with pytest.raises(formulas.FormulaError):
        formulas.evaluate(text, {"x": 1.0, "y": [1.0]})


def test_a_name_not_given_is_named():
    with pytest.raises(formulas.FormulaError, match="'w'"):
        formulas.evaluate("gy · w", {"gy": 1.0})
