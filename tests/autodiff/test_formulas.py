"""Each primitive's formula text evaluates to what its own derivative computes (the text
cannot drift from the code), and the evaluator reads only its notation."""

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import autodiff.functions as F
import autodiff.functions_conv as C
import autodiff.layers
import autodiff.micrograd._recorded
import autodiff.models  # noqa: F401  (every Function subclass of autodiff is defined)
from autodiff import Variable, formulas, trace, using_config
from autodiff.core import ArrayOps, Function
from autodiff.micrograd.engine import Value, function_class_of_op

RNG = np.random.default_rng(0)
ROOT = Path(__file__).resolve().parents[2]


def _positive(shape=(3, 2)):
    return RNG.uniform(0.5, 2.0, shape)


def _any(shape=(3, 2)):
    return RNG.standard_normal(shape)


def _labels(n, classes):
    return RNG.integers(0, classes, n)


def _pooled(shape, kernel, stride, pad=0):
    """A max pooling already run, whose indexes its two gradient maps copy."""
    return F.pooling(Variable(_any(shape)), kernel, stride, pad).creator


def _batch_norm(shape, train):
    C_ = shape[1]

    def make(x, gamma, beta):
        with using_config("train", train):
            return F.batch_norm(x, gamma, beta, _positive((C_,)), _positive((C_,)))

    return make, [_any(shape), _any((C_,)), _any((C_,))]


_POOL = _pooled((2, 3, 6, 6), 2, 2)
_POOL_PADDED = _pooled((1, 2, 5, 5), 3, 1, 1)

# op name -> cases: (make the output from Variables, input arrays). Several shapes each,
# broadcasting for the binary ops, and the primitives' parameters.
CASES = {
    "Add": [
        (lambda a, b: a + b, [_any(), _any()]),
        (lambda a, b: a + b, [_any((4, 3)), _any((3,))]),
        (lambda a, b: a + b, [_any((3, 1)), _any((1, 4))]),
        (lambda a, b: a + b, [_any(()), _any((2, 3))]),
    ],
    "Mul": [
        (lambda a, b: a * b, [_any(), _any()]),
        (lambda a, b: a * b, [_any((4, 3)), _any((3,))]),
        (lambda a, b: a * b, [_any(()), _any((2, 3))]),
    ],
    "Neg": [(lambda a: -a, [_any()]), (lambda a: -a, [_any(())])],
    "Sub": [
        (lambda a, b: a - b, [_any(), _any()]),
        (lambda a, b: a - b, [_any((3,)), _any((4, 3))]),
    ],
    "Div": [
        (lambda a, b: a / b, [_any(), _positive()]),
        (lambda a, b: a / b, [_any((4, 3)), _positive((3,))]),
        (lambda a, b: a / b, [_any((2, 1)), _positive((1, 3))]),
    ],
    "Pow": [
        (lambda a: a**3, [_any()]),
        (lambda a: a**0.5, [_positive()]),
        (lambda a: a**-1.5, [_positive((4,))]),
        (lambda a: F.pow(a, 2), [_any(())]),
    ],
    "Square": [(F.square, [_any()]), (F.square, [_any(())])],
    "Exp": [(F.exp, [_any()]), (F.exp, [_any(())])],
    "Log": [(F.log, [_positive()]), (F.log, [_positive(())])],
    "Sin": [(F.sin, [_any()]), (F.sin, [_any(())])],
    "Cos": [(F.cos, [_any()]), (F.cos, [_any(())])],
    "Tanh": [(F.tanh, [_any()]), (F.tanh, [_any(())])],
    "Sigmoid": [(F.sigmoid, [_any()]), (F.sigmoid, [_any((5,))])],
    "ReLU": [(F.relu, [_any((4, 3))])],
    "LeakyReLU": [
        (lambda a: F.leaky_relu(a), [_any((4, 3))]),
        (lambda a: F.leaky_relu(a, 0.01), [_any((5,))]),
    ],
    "Clip": [
        (lambda a: F.clip(a, -0.5, 0.5), [_any((4, 3))]),
        (lambda a: F.clip(a, 0.0, 1.0), [_any((6,))]),
    ],
    "Reshape": [
        (lambda a: F.reshape(a, (2, 6)), [_any((3, 4))]),
        (lambda a: F.reshape(a, (4, -1)), [_any((2, 3, 4))]),
    ],
    "Transpose": [
        (F.transpose, [_any((3, 4))]),
        (lambda a: F.transpose(a, (1, 0, 2)), [_any((2, 3, 4))]),
        (lambda a: F.transpose(a, (-1, 0, 1)), [_any((2, 3, 4))]),
    ],
    "Concat": [
        (lambda a, b: F.concat((a, b), axis=1), [_any((3, 2)), _any((3, 4))]),
        (lambda a, b, c: F.concat((a, b, c), axis=0), [_any((1, 2)), _any((3, 2)), _any()]),
        (lambda a, b: F.concat((a, b), axis=-1), [_any((2, 2, 1)), _any((2, 2, 3))]),
        (lambda a: F.concat((a,), axis=0), [_any()]),
    ],
    "GetItem": [
        (lambda a: a[1], [_any((3, 2))]),
        (lambda a: a[1:3], [_any((4, 2))]),
        (lambda a: F.get_item(a, np.array([0, 2, 0])), [_any((3, 2))]),
        (lambda a: a[:, 1], [_any((3, 2))]),
        (lambda a: a[np.array([0, 1, 1]), np.array([2, 0, 2])], [_any((2, 3))]),
    ],
    "GetItemGrad": [
        (lambda g: F.GetItemGrad(np.array([0, 2, 0]), (3, 2))(g), [_any((3, 2))]),
        (lambda g: F.GetItemGrad((slice(None), 1), (3, 2))(g), [_any((3,))]),
    ],
    "Sum": [
        (F.sum, [_any((3, 4))]),
        (lambda a: F.sum(a, axis=0), [_any((3, 4))]),
        (lambda a: F.sum(a, axis=1, keepdims=True), [_any((3, 4))]),
        (lambda a: F.sum(a, axis=(0, 2)), [_any((2, 3, 4))]),
        (lambda a: F.sum(a, axis=-1), [_any((2, 3, 4))]),
        (F.sum, [_any(())]),
    ],
    "SumTo": [
        (lambda a: F.sum_to(a, (1, 4)), [_any((3, 4))]),
        (lambda a: F.sum_to(a, (3, 1)), [_any((2, 3, 4))]),
        (lambda a: F.sum_to(a, ()), [_any((2, 3))]),
    ],
    "BroadcastTo": [
        (lambda a: F.broadcast_to(a, (3, 4)), [_any((4,))]),
        (lambda a: F.broadcast_to(a, (3, 4)), [_any((3, 1))]),
        (lambda a: F.broadcast_to(a, (2, 2)), [_any(())]),
    ],
    "MatMul": [
        (F.matmul, [_any((3, 4)), _any((4, 2))]),
        (F.matmul, [_any((2, 3, 4)), _any((4, 5))]),
        (F.matmul, [_any((2, 3, 4)), _any((2, 4, 5))]),
        (F.matmul, [_any((4,)), _any((4, 2))]),
        (F.matmul, [_any((3, 4)), _any((4,))]),
        (F.matmul, [_any((4,)), _any((4,))]),
        (F.matmul, [_any((2, 3, 4)), _any((4,))]),
    ],
    "Linear": [
        (F.linear, [_any((3, 4)), _any((4, 2)), _any((2,))]),
        (F.linear, [_any((3, 4)), _any((4, 2))]),
        (F.linear, [_any((2, 3, 4)), _any((4, 2)), _any((2,))]),
    ],
    "Max": [
        (F.max, [_any((3, 4))]),
        (lambda a: F.max(a, axis=1), [_any((3, 4))]),
        (lambda a: F.max(a, axis=0, keepdims=True), [_any((3, 4))]),
        (lambda a: F.max(a, axis=(0, 2)), [_any((2, 3, 4))]),
    ],
    "Min": [
        (F.min, [_any((3, 4))]),
        (lambda a: F.min(a, axis=-1), [_any((2, 3, 4))]),
    ],
    "Softmax": [
        (F.softmax, [_any((3, 4))]),
        (lambda a: F.softmax(a, axis=0), [_any((3, 4))]),
        (lambda a: F.softmax(a, axis=-1), [_any((2, 3, 4))]),
    ],
    "LogSoftmax": [
        (F.log_softmax, [_any((3, 4))]),
        (lambda a: F.log_softmax(a, axis=0), [_any((3, 4))]),
    ],
    "MeanSquaredError": [
        (F.mean_squared_error, [_any((4, 3)), _any((4, 3))]),
        (F.mean_squared_error, [_any((5,)), _any((5,))]),
        (F.mean_squared_error, [_any((1, 1)), _any((1,))]),
    ],
    "SoftmaxCrossEntropy": [
        (F.softmax_cross_entropy, [_any((4, 3)), _labels(4, 3)]),
        (F.softmax_cross_entropy, [_any((6, 5)), _labels(6, 5)]),
    ],
    "BatchNorm": [
        _batch_norm((5, 3), train=True),
        _batch_norm((2, 3, 4, 4), train=True),
        _batch_norm((5, 3), train=False),
        _batch_norm((2, 3, 2, 2), train=False),
    ],
    "Im2col": [
        (lambda a: F.im2col(a, 3), [_any((2, 3, 5, 5))]),
        (lambda a: F.im2col(a, (2, 3), 2, 1, to_matrix=False), [_any((1, 2, 5, 6))]),
    ],
    "Col2im": [
        (lambda a: F.col2im(a, (2, 3, 5, 5), 3), [_any((18, 27))]),
        (
            lambda a: F.col2im(a, (1, 2, 5, 6), (2, 3), 2, 1, to_matrix=False),
            [_any((1, 2, 2, 3, 3, 3))],
        ),
    ],
    "Conv2d": [
        (F.conv2d, [_any((2, 3, 5, 5)), _any((4, 3, 3, 3)), _any((4,))]),
        (
            lambda x, W: F.conv2d(x, W, stride=2, pad=1),
            [_any((2, 3, 5, 6)), _any((4, 3, 3, 3))],
        ),
        (
            lambda x, W, b: F.conv2d(x, W, b, stride=(1, 2), pad=(0, 1)),
            [_any((1, 2, 4, 5)), _any((3, 2, 2, 3)), _any((3,))],
        ),
    ],
    "Deconv2d": [
        (F.deconv2d, [_any((2, 3, 4, 4)), _any((3, 4, 3, 3)), _any((4,))]),
        (
            lambda x, W: F.deconv2d(x, W, stride=2, pad=1),
            [_any((2, 3, 3, 4)), _any((3, 2, 3, 3))],
        ),
        (
            lambda x, W: F.deconv2d(x, W, stride=2, pad=1, outsize=(6, 8)),
            [_any((1, 2, 3, 4)), _any((2, 3, 3, 3))],
        ),
    ],
    "Conv2DGradW": [
        (lambda x, g: C.Conv2DGradW((3, 3), 1, 0)(x, g), [_any((2, 3, 5, 5)), _any((2, 4, 3, 3))]),
        (
            lambda x, g: C.Conv2DGradW((2, 3), 2, 1)(x, g),
            [_any((1, 2, 5, 6)), _any((1, 3, 3, 3))],
        ),
    ],
    "Pooling": [
        (lambda a: F.pooling(a, 2, 2), [_any((2, 3, 6, 6))]),
        (lambda a: F.pooling(a, 3, 1, 1), [_any((1, 2, 5, 5))]),
    ],
    "Pooling2DGrad": [
        (lambda g: C.Pooling2DGrad(_POOL)(g), [_any((2, 3, 3, 3))]),
        (lambda g: C.Pooling2DGrad(_POOL_PADDED)(g), [_any((1, 2, 5, 5))]),
    ],
    "Pooling2DWithIndexes": [
        (lambda a: C.Pooling2DWithIndexes(_POOL)(a), [_any((2, 3, 6, 6))]),
        (lambda a: C.Pooling2DWithIndexes(_POOL_PADDED)(a), [_any((1, 2, 5, 5))]),
    ],
    "AveragePooling": [
        (lambda a: F.average_pooling(a, 2, 2), [_any((2, 3, 6, 6))]),
        (lambda a: F.average_pooling(a, 3, 1, 1), [_any((1, 2, 5, 5))]),
    ],
}


def environment(function, gys):
    """The names a formula reads, for ``function`` just run: x/x0.., xs, y/y0.., gy/gy0.., and
    the Function's own public attributes."""
    env = {k: v for k, v in vars(function).items() if not k.startswith("_")}
    xs = [v.data for v in function.inputs]
    ys = [o().data for o in function.outputs]
    env["xs"] = tuple(xs)
    for prefix, values in (("x", xs), ("y", ys), ("gy", gys)):
        if len(values) == 1:
            env[prefix] = values[0]
        for i, v in enumerate(values):
            env[f"{prefix}{i}"] = v
    return env


def _primitives():
    """Every Function class of autodiff with a derivative of its own (written or inherited):
    the primitives. A class without one (micrograd's hand-built ops, whose derivative is the
    program's closure; a shared base) is no primitive."""
    found, stack = [], list(Function.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if not cls.__module__.startswith("autodiff."):
            continue  # a user's Function (a test's own)
        if cls.derivative is not None or cls.backward is not Function.backward:
            found.append(cls)
    return sorted(found, key=lambda c: c.__name__)


_CASE_IDS = [(op, i) for op in sorted(CASES) for i in range(len(CASES[op]))]


@pytest.mark.parametrize(("op", "case"), _CASE_IDS, ids=[f"{op}-{i}" for op, i in _CASE_IDS])
def test_the_formula_text_computes_what_the_derivative_does(op, case):
    make, arrays = CASES[op][case]
    inputs = [Variable(a.copy()) for a in arrays]
    out = make(*inputs)
    function = out.creator
    assert type(function).__name__ == op
    texts = formulas.slot_formulas(function, len(inputs))
    assert texts is not None and len(texts) == len(inputs)
    gy = RNG.standard_normal(out.shape)
    expected = function.derivative(ArrayOps(), gy)
    if not isinstance(expected, tuple):
        expected = (expected,)
    env = environment(function, [gy])
    if op in formulas.MATRIX_PRODUCTS:
        env = formulas.matrix_view(env)
    for slot, (text, want) in enumerate(zip(texts, expected, strict=True)):
        assert formulas.gradient_name(text) == ("gx" if len(texts) == 1 else f"gx{slot}")
        value = formulas.evaluate(text, env)
        if want is None:  # a slot that receives no gradient: its text says 0
            assert formulas.right_side(text) == "0", f"{op} {text}"
            continue
        shape = arrays[slot].shape
        want = formulas.to_input(want, shape)
        got = formulas.to_input(value, shape)
        assert got.shape == shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=f"{op} {text}")


def test_every_primitive_has_a_formula_and_a_drift_case():
    primitives = _primitives()
    names = [cls.__name__ for cls in primitives]
    assert {"Add", "Conv2d", "Pooling2DGrad", "BatchNorm", "Min"} <= set(names)
    assert "ValueOp" not in names  # micrograd's hand-built ops: the program's own derivative
    without_text = [
        n for cls, n in zip(primitives, names, strict=True) if "formula" not in vars(cls)
    ]
    assert without_text == []
    assert sorted(set(names) - set(CASES)) == []
    assert sorted(set(CASES) - set(names)) == []  # a case names a primitive that exists


def test_a_user_function_has_no_formula():
    class Twice(Function):
        def forward(self, x):
            return 2 * x

        def backward(self, gy):
            return 2 * gy

    y = Twice()(Variable(np.array(1.0)))
    assert formulas.formula_of(y.creator) is None
    assert formulas.formula_of(Twice) is None
    assert formulas.formula_of("Twice") is None


def test_an_op_name_finds_the_engines_class_before_a_programs_namesake():
    class Square(Function):  # a program's own, with a text of its own
        formula = ("gx = gy",)

        def forward(self, x):
            return x

        def backward(self, gy):
            return gy

    assert formulas.formula_of(Square) == ("gx = gy",)
    assert formulas.formula_of("Square") == vars(F.Square)["formula"]


def test_a_formula_is_found_by_class_instance_and_recorded_op_name():
    y = F.square(Variable(np.array(2.0)))
    assert formulas.formula_of(y.creator) == formulas.formula_of(F.Square)
    assert formulas.formula_of("Square") == ("gx = gy · 2 · x",)
    assert formulas.formula_of("NoSuchOp") is None


def test_a_formula_is_found_by_name_in_a_fresh_interpreter():
    # the op names of a saved trace are looked up before anything imported the primitives
    code = (
        "from autodiff import formulas\n"
        "print(formulas.formula_of('Conv2d')[2], formulas.formula_of('+')[0])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.split("\n")[0] == "gx2 = channel_sum(gy) gx0 = gy"


def test_every_recorded_op_name_finds_its_primitives_text(tmp_path):
    x = Variable(_any((4, 3)))
    W = Variable(_any((3, 2)))
    b = Variable(_any((2,)))
    img = Variable(_any((1, 2, 6, 6)))
    K = Variable(_any((3, 2, 3, 3)))
    with trace.record() as t:
        h = F.sigmoid(F.linear(x, W, b)) + F.tanh(F.matmul(x, W)) ** 2
        z = F.sum(F.softmax(h) * F.exp(-h) / F.log(1.5 + F.relu(h)))
        conv = F.pooling(F.conv2d(img, K, stride=1, pad=1), 2, 2)
        z = z + F.sum(F.average_pooling(conv, 3)) + F.mean_squared_error(h, h.data * 0)
        z.backward()
    recorded = {op for op in t.ops(list(t.graph.nodes)) if op is not None}
    assert {"Linear", "Sigmoid", "Conv2d", "Pooling", "Pow", "MeanSquaredError"} <= recorded
    t.to_json(tmp_path / "saved.json")  # a saved trace names its ops the same way
    saved = trace.load(tmp_path / "saved.json")
    assert {op for op in saved.ops(list(saved.graph.nodes)) if op is not None} == recorded
    for op in recorded:
        cls = {c.__name__: c for c in _primitives()}[op]
        assert formulas.formula_of(op) == vars(cls)["formula"], op


def test_a_recorded_micrograd_graph_names_primitives_with_texts():
    a, b = Value(2.0), Value(-3.0)
    with trace.record() as t:
        c = (a * b + a**2).tanh().relu()
        d = (c - a / b).exp().log()
        hand = Value(0.5, (a,), "sigmoid")
        d.backward()
    ops = [op for op in t.ops(list(t.graph.nodes)) if op is not None]
    assert {"Add", "Mul", "Pow", "Tanh", "ReLU", "Exp", "Log", "sigmoid"} == set(ops)
    for op in set(ops) - {"sigmoid"}:
        assert formulas.formula_of(op) is not None, op
    assert formulas.formula_of("sigmoid") is None  # built by hand: the program's own closure
    assert hand.data == 0.5


# micrograd's op names (Value._op) -> how to make one, and the exponent a power's name carries
MICROGRAD_OPS = {
    "+": lambda a, b: a + b,
    "*": lambda a, b: a * b,
    "**2": lambda a: a**2,
    "**-1": lambda a: a**-1,
    "**0.5": lambda a: a**0.5,
    "ReLU": lambda a: a.relu(),
    "tanh": lambda a: a.tanh(),
    "exp": lambda a: a.exp(),
    "log": lambda a: a.log(),
}


@pytest.mark.parametrize("op", sorted(MICROGRAD_OPS))
def test_micrograds_op_names_find_texts_that_give_micrograds_own_shares(op):
    make = MICROGRAD_OPS[op]
    n = make.__code__.co_argcount
    texts = formulas.formula_of(op)
    assert texts == vars(function_class_of_op(op))["formula"]
    # positive inputs, and negative ones where the op is defined there (ReLU's both sides)
    draws = [RNG.uniform(0.5, 2.0, n)]
    if op not in ("log", "**0.5", "**-1"):
        draws.append(-RNG.uniform(0.5, 2.0, n))
    for values in draws:
        children = [Value(float(v)) for v in values]
        out = make(*children)
        assert out._op == op
        out.grad = float(RNG.standard_normal())
        shares = out._rule(out)  # micrograd's own local chain rule, written apart from core's
        env = {"gy": out.grad, "y": out.data}
        for i, child in enumerate(children):
            env[f"x{i}"] = child.data
        if n == 1:
            env["x"] = children[0].data
        if op.startswith("**"):
            env["c"] = float(op[2:])
        for text, share in zip(texts, shares, strict=True):
            got = float(formulas.evaluate(text, env))
            assert math.isclose(got, share, rel_tol=1e-12, abs_tol=1e-15), (op, text, values)


def test_every_op_micrograd_makes_has_a_name_here():
    # each of Value's primitives: the op name it records is one formula_of knows
    a, b = Value(1.5), Value(0.5)
    made = [a + b, a * b, a**3, a.relu(), a.tanh(), a.exp(), a.log()]
    for v in made:
        assert function_class_of_op(v._op) is not None, v._op
        assert formulas.formula_of(v._op) is not None, v._op


def test_one_text_per_slot_of_a_call():
    assert formulas.slot_formulas("Concat", 3) == (
        "gx0 = part(gy, axis, 0, xs)",
        "gx1 = part(gy, axis, 1, xs)",
        "gx2 = part(gy, axis, 2, xs)",
    )
    assert formulas.slot_formulas("Concat", 1) == ("gx = part(gy, axis, 0, xs)",)
    assert formulas.slot_formulas("Linear", 2) == ("gx0 = gy @ x1ᵀ", "gx1 = x0ᵀ @ gy")
    assert len(formulas.slot_formulas("Conv2d", 3)) == 3
    assert formulas.slot_formulas("Square", 2) is None
    assert formulas.slot_formulas("NoSuchOp", 1) is None


def test_what_an_input_receives_from_a_text():
    g = np.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(formulas.to_input(g, (3,)), g.sum(axis=0))
    np.testing.assert_array_equal(formulas.to_input(g, (4, 1)), g.sum(axis=1, keepdims=True))
    np.testing.assert_array_equal(formulas.to_input(2.0, (2,)), [2.0, 2.0])
    # a 1-D matrix operand read as a column (k, 1)
    np.testing.assert_array_equal(formulas.to_input(g[:, :1], (4,)), g[:, 0])
    with pytest.raises(ValueError, match="does not fit"):
        formulas.to_input(g, (5,))


def test_a_matrix_product_reads_1d_operands_as_a_row_and_a_column():
    env = formulas.matrix_view({"x0": np.ones(4), "x1": np.ones((2, 4, 3)), "gy": np.ones((2, 3))})
    assert env["x0"].shape == (1, 4)
    assert env["gy"].shape == env["gy0"].shape == (2, 1, 3)


def test_the_notation_reads_its_signs():
    env = {"gy": 3.0, "x": 2.0, "x0": 4.0, "x1": 2.0}
    assert formulas.evaluate("gx = gy · 2 · x", env) == 12.0
    assert formulas.evaluate("gy × x²", env) == 12.0
    assert formulas.evaluate("gy · (−x0 / x1²)", env) == -3.0
    assert formulas.evaluate("2 ^ 3", env) == 8.0
    assert formulas.evaluate("√(x0)", env) == 2.0
    a = np.arange(6.0).reshape(2, 3)
    assert formulas.evaluate("aᵀ", {"a": a}).shape == (3, 2)
    # the matrix transpose of stacked matrices: the last two axes
    assert formulas.evaluate("aᵀ", {"a": np.zeros((5, 2, 3))}).shape == (5, 3, 2)
    np.testing.assert_array_equal(formulas.evaluate("a ≥ 2", {"a": a}), a >= 2)
    np.testing.assert_array_equal(formulas.evaluate("a ≤ 2", {"a": a}), a <= 2)
    np.testing.assert_array_equal(formulas.evaluate("gx = (a == 2)", {"a": a}), a == 2)
    assert formulas.gradient_name("gx1 = x == y") == "gx1"
    assert formulas.right_side("x == y") == "x == y"
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
