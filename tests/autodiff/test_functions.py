"""Every function in autodiff.functions and every arithmetic primitive: forward against numpy,
float64 gradient checks on seeded data (broadcasting included), the array fast path against the
Variable path, second derivatives, and the error messages."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
from engine_steps import iter_backward
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import autodiff
import autodiff.functions as F
from autodiff import Function, Variable, core, functions_conv, no_grad
from autodiff.utils import gradient_check


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _uniform(shape, low=-1.0, high=1.0, seed=0):
    return _rng(seed).uniform(low, high, shape)


def _positive(shape, seed=0):
    return _uniform(shape, 0.5, 2.0, seed)


def _away_from_zero(shape, seed=0):
    # kinks (relu, leaky_relu, clip) must not sit within the numerical-difference step
    x = _uniform(shape, 0.2, 1.5, seed)
    return x * np.where(_rng(seed + 100).random(shape) < 0.5, -1.0, 1.0)


def _distinct(shape, seed=0):
    # max/min need a unique extreme: a shuffled, well-spaced range
    n = int(np.prod(shape))
    return _rng(seed).permutation(np.linspace(-1.0, 1.0, n)).reshape(shape)


LABELS = np.array([2, 0, 1, 2])
TARGET = _uniform((4, 3), seed=42)


def _softmax_np(x, axis=1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _log_softmax_np(x, axis=1):
    return np.log(_softmax_np(x, axis))


def _sigmoid_np(x):
    return 1 / (1 + np.exp(-x))


def _sce_np(x, t):
    return -np.mean(_log_softmax_np(x)[np.arange(len(t)), t])


def _dropout_train(x):
    np.random.seed(0)  # the same mask on every call, so the gradient can be checked
    return F.dropout(x, 0.3)


def _dropout_np(x):
    np.random.seed(0)
    mask = np.random.rand(*x.shape) > 0.3
    return x * mask / 0.7


@dataclass
class Case:
    name: str
    fn: Callable[..., Variable]
    inputs: tuple[np.ndarray, ...]
    numpy: Callable[..., np.ndarray] | None = None
    second_order: bool = True  # also check the gradient of the gradient
    covers: tuple[str, ...] = field(default=())  # names in F.__all__ this case exercises


def _cases() -> list[Case]:
    s23, s3 = (2, 3), (3,)
    cases = [
        # --- arithmetic, same shapes and broadcasting ---------------------------------
        *[
            Case(
                f"{name}{sa}{sb}",
                fn,
                (_uniform(sa, seed=1), _positive(sb, seed=2)),
                ref,
                covers=(name,),
            )
            for name, fn, ref in [
                ("add", F.add, np.add),
                ("sub", F.sub, np.subtract),
                ("mul", F.mul, np.multiply),
                ("div", F.div, np.divide),
            ]
            for sa, sb in [
                (s23, s23),
                (s23, s3),
                (s23, (1, 3)),
                ((2, 1), (1, 3)),
                ((), s23),
                (s23, ()),
                ((4, 1, 3), (2, 1)),
            ]
        ],
        Case("rsub", lambda x: F.rsub(x, 2.0), (_uniform(s23),), lambda x: 2.0 - x),
        Case("rdiv", lambda x: F.rdiv(x, 2.0), (_positive(s23),), lambda x: 2.0 / x),
        Case("neg", F.neg, (_uniform(s23),), np.negative),
        Case("pow3", lambda x: F.pow(x, 3), (_uniform(s23),), lambda x: x**3, covers=("pow",)),
        Case("pow0.5", lambda x: F.pow(x, 0.5), (_positive(s23),), np.sqrt, covers=("pow",)),
        Case("pow-1.5", lambda x: x**-1.5, (_positive(s23),), lambda x: x**-1.5, covers=("pow",)),
        # --- elementwise ------------------------------------------------------------------
        Case("square", F.square, (_uniform(s23),), np.square),
        Case("exp", F.exp, (_uniform(s23),), np.exp),
        Case("log", F.log, (_positive(s23),), np.log),
        Case("sin", F.sin, (_uniform(s23),), np.sin),
        Case("cos", F.cos, (_uniform(s23),), np.cos),
        Case("tanh", F.tanh, (_uniform(s23),), np.tanh),
        Case("sigmoid", F.sigmoid, (_uniform(s23, -3, 3),), _sigmoid_np),
        Case("sigmoid_simple", F.sigmoid_simple, (_uniform(s23, -3, 3),), _sigmoid_np),
        Case("relu", F.relu, (_away_from_zero(s23),), lambda x: np.maximum(x, 0)),
        Case(
            "leaky_relu",
            lambda x: F.leaky_relu(x, 0.1),
            (_away_from_zero(s23),),
            lambda x: np.where(x > 0, x, 0.1 * x),
        ),
        Case(
            "clip",
            lambda x: F.clip(x, -0.5, 0.5),
            (np.array([[-0.9, -0.3, 0.1], [0.4, 0.7, -0.1]]),),
            lambda x: np.clip(x, -0.5, 0.5),
        ),
        # --- shapes -----------------------------------------------------------------------
        Case(
            "reshape", lambda x: F.reshape(x, (3, 2)), (_uniform(s23),), lambda x: x.reshape(3, 2)
        ),
        Case("reshape-1", lambda x: F.reshape(x, -1), (_uniform(s23),), lambda x: x.reshape(-1)),
        Case("transpose", F.transpose, (_uniform(s23),), np.transpose),
        Case(
            "transpose_axes",
            lambda x: F.transpose(x, (1, 2, 0)),
            (_uniform((2, 3, 4)),),
            lambda x: x.transpose(1, 2, 0),
            covers=("transpose",),
        ),
        Case(
            "transpose_negative_axes",
            lambda x: F.transpose(x, (-1, 0, 1)),
            (_uniform((2, 3, 4)),),
            lambda x: x.transpose(-1, 0, 1),
            covers=("transpose",),
        ),
        Case("expand_dims", lambda x: F.expand_dims(x, 1), (_uniform(s23),), lambda x: x[:, None]),
        Case("flatten", F.flatten, (_uniform((2, 3, 2)),), lambda x: x.reshape(2, -1)),
        Case("get_item_int", lambda x: F.get_item(x, 1), (_uniform(s23),), lambda x: x[1]),
        Case(
            "get_item_slice",
            lambda x: x[:, 1:],
            (_uniform(s23),),
            lambda x: x[:, 1:],
            covers=("get_item",),
        ),
        Case(
            "get_item_repeated",
            lambda x: F.get_item(x, np.array([0, 0, 1, 0])),
            (_uniform(s23),),
            lambda x: x[[0, 0, 1, 0]],
        ),
        # --- sums and broadcasting ---------------------------------------------------------
        *[
            Case(
                f"sum_axis{axis}_keep{keep}",
                lambda x, a=axis, k=keep: F.sum(x, a, k),
                (_uniform((2, 3, 4)),),
                lambda x, a=axis, k=keep: x.sum(axis=a, keepdims=k),
                covers=("sum",),
            )
            for axis in (None, 0, 1, -1, (0, 2))
            for keep in (False, True)
        ],
        Case(
            "sum_to",
            lambda x: F.sum_to(x, (1, 3)),
            (_uniform(s23),),
            lambda x: x.sum(0, keepdims=True),
        ),
        Case(
            "sum_to_lead",
            lambda x: F.sum_to(x, (3,)),
            (_uniform((2, 2, 3)),),
            lambda x: x.sum((0, 1)),
            covers=("sum_to",),
        ),
        Case(
            "broadcast_to",
            lambda x: F.broadcast_to(x, (2, 3)),
            (_uniform((1, 3)),),
            lambda x: np.broadcast_to(x, (2, 3)),
        ),
        Case(
            "broadcast_to_lead",
            lambda x: F.broadcast_to(x, (4, 2, 3)),
            (_uniform(s3),),
            lambda x: np.broadcast_to(x, (4, 2, 3)),
            covers=("broadcast_to",),
        ),
        Case("average", F.average, (_uniform(s23),), np.mean),
        Case(
            "mean_axis",
            lambda x: F.mean(x, axis=0),
            (_uniform(s23),),
            lambda x: x.mean(0),
            covers=("mean",),
        ),
        # --- matrix products --------------------------------------------------------------
        Case("matmul", F.matmul, (_uniform((2, 3)), _uniform((3, 4), seed=1)), np.matmul),
        Case("matmul_vec_mat", F.matmul, (_uniform(3), _uniform((3, 4), seed=1)), np.matmul),
        Case("matmul_mat_vec", F.matmul, (_uniform((2, 3)), _uniform(3, seed=1)), np.matmul),
        Case("matmul_vec_vec", F.matmul, (_uniform(3), _uniform(3, seed=1)), np.matmul),
        Case(
            "matmul_batched_broadcast",
            F.matmul,
            (_uniform((2, 2, 3)), _uniform((3, 4), seed=1)),
            np.matmul,
        ),
        Case(
            "linear",
            F.linear,
            (_uniform((2, 3)), _uniform((3, 4), seed=1), _uniform(4, seed=2)),
            lambda x, W, b: x @ W + b,
        ),
        Case(
            "linear_no_bias",
            F.linear,
            (_uniform((2, 3)), _uniform((3, 4), seed=1)),
            np.matmul,
            covers=("linear",),
        ),
        Case(
            "linear_simple",
            F.linear_simple,
            (_uniform((2, 3)), _uniform((3, 4), seed=1), _uniform(4, seed=2)),
            lambda x, W, b: x @ W + b,
        ),
        # --- max / min --------------------------------------------------------------------
        *[
            Case(
                f"{name}_axis{axis}_keep{keep}",
                lambda x, f=fn, a=axis, k=keep: f(x, a, k),
                (_distinct((2, 3, 4)),),
                lambda x, r=ref, a=axis, k=keep: r(x, axis=a, keepdims=k),
                covers=(name,),
            )
            for name, fn, ref in [("max", F.max, np.max), ("min", F.min, np.min)]
            for axis in (None, 1, -1, (0, 2))
            for keep in (False, True)
        ],
        # --- softmax and losses -----------------------------------------------------------
        Case("softmax", F.softmax, (_uniform((4, 3)),), _softmax_np),
        Case(
            "softmax_axis0",
            lambda x: F.softmax(x, axis=0),
            (_uniform((4, 3)),),
            lambda x: _softmax_np(x, 0),
            covers=("softmax",),
        ),
        Case("softmax_simple", F.softmax_simple, (_uniform((4, 3)),), _softmax_np),
        Case("log_softmax", F.log_softmax, (_uniform((4, 3)),), _log_softmax_np),
        Case(
            "softmax_cross_entropy",
            lambda x: F.softmax_cross_entropy(x, LABELS),
            (_uniform((4, 3)),),
            lambda x: _sce_np(x, LABELS),
        ),
        Case(
            "softmax_cross_entropy_simple",
            lambda x: F.softmax_cross_entropy_simple(x, LABELS),
            (_uniform((4, 3)),),
            lambda x: _sce_np(x, LABELS),
        ),
        Case(
            "sigmoid_cross_entropy",
            lambda x: F.sigmoid_cross_entropy(x, np.array([1, 0, 1, 1])),
            (_uniform(4, -2, 2),),
            lambda x: (
                -np.mean(
                    np.array([1, 0, 1, 1]) * np.log(_sigmoid_np(x))
                    + (1 - np.array([1, 0, 1, 1])) * np.log(1 - _sigmoid_np(x))
                )
            ),
        ),
        Case(
            "binary_cross_entropy",
            lambda p: F.binary_cross_entropy(p, np.array([1.0, 0.0, 1.0])),
            (_uniform(3, 0.2, 0.8),),
            lambda p: (
                -np.mean(
                    np.array([1, 0, 1]) * np.log(p) + (1 - np.array([1, 0, 1])) * np.log(1 - p)
                )
            ),
        ),
        Case(
            "mean_squared_error",
            F.mean_squared_error,
            (_uniform((4, 3)), TARGET),
            lambda a, b: ((a - b) ** 2).sum() / len(a),
        ),
        Case(
            "mean_squared_error_simple",
            F.mean_squared_error_simple,
            (_uniform((4, 3)), TARGET),
            lambda a, b: ((a - b) ** 2).sum() / len(a),
        ),
        Case("dropout_train", _dropout_train, (_uniform(s23),), _dropout_np, covers=("dropout",)),
        # --- normalisation and embeddings ---------------------------------------------------
        # batch_norm's output is weighted: the plain sum of a normalised batch does not depend
        # on x, so its gradient would be zero whatever backward computed
        Case(
            "batch_norm_train",
            _batch_norm_weighted((5, 3)),
            (_uniform((5, 3), seed=3), _positive(3, seed=4), _uniform(3, seed=5)),
            _batch_norm_np((5, 3)),
            covers=("batch_norm",),
        ),
        Case(
            "batch_norm_train_nchw",
            _batch_norm_weighted((2, 3, 2, 2)),
            (_uniform((2, 3, 2, 2), seed=3), _positive(3, seed=4), _uniform(3, seed=5)),
            _batch_norm_np((2, 3, 2, 2)),
            covers=("batch_norm",),
        ),
        Case(
            "batch_norm_test_mode",
            _batch_norm_weighted((4, 3), train=False),
            (_uniform((4, 3), seed=3), _positive(3, seed=4), _uniform(3, seed=5)),
            _batch_norm_np((4, 3), train=False),
            covers=("batch_norm",),
        ),
        Case(
            "embed_id",
            lambda W: F.embed_id(np.array([[0, 2], [0, 3]]), W),
            (_uniform((4, 3)),),
            lambda W: W[np.array([[0, 2], [0, 3]])],
        ),
        Case(
            "concat",
            lambda a, b: F.concat((a, b), axis=1),
            (_uniform((2, 3, 2), seed=1), _uniform((2, 1, 2), seed=2)),
            lambda a, b: np.concatenate((a, b), axis=1),
        ),
    ]
    return cases


# running statistics of batch_norm's test-mode case
_BN_MEAN = np.array([0.1, -0.2, 0.3])
_BN_VAR = np.array([0.5, 1.5, 2.0])


def _batch_norm_weighted(shape, train=True):
    weights = _uniform(shape, seed=11)

    def fn(x, gamma, beta):
        # fresh running statistics per call: training updates them in place
        mean, var = _BN_MEAN.copy(), _BN_VAR.copy()
        with autodiff.using_config("train", train):
            return F.batch_norm(x, gamma, beta, mean, var) * weights

    return fn


def _batch_norm_np(shape, train=True):
    weights = _uniform(shape, seed=11)

    def ref(x, gamma, beta):
        axes = (0,) if x.ndim == 2 else (0, 2, 3)
        c = (1, -1) if x.ndim == 2 else (1, -1, 1, 1)
        mean = x.mean(axis=axes, keepdims=True) if train else _BN_MEAN.reshape(c)
        var = x.var(axis=axes, keepdims=True) if train else _BN_VAR.reshape(c)
        y = (x - mean) / np.sqrt(var + 2e-5) * gamma.reshape(c) + beta.reshape(c)
        return y * weights

    return ref


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_forward_matches_numpy(case):
    y = case.fn(*[Variable(a.copy()) for a in case.inputs])
    assert isinstance(y, Variable)
    assert type(y.data) is np.ndarray
    np.testing.assert_allclose(y.data, case.numpy(*case.inputs), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_gradient_matches_numerical(case):
    assert gradient_check(case.fn, *case.inputs)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_array_fast_path_equals_variable_path(case):
    # backward() without create_graph runs each Function's backward_data on arrays;
    # create_graph=True runs backward on Variables. Both must give the same gradients.
    fast = [Variable(a.copy()) for a in case.inputs]
    case.fn(*fast).backward()
    slow = [Variable(a.copy()) for a in case.inputs]
    case.fn(*slow).backward(create_graph=True)
    for a, b in zip(fast, slow, strict=True):
        assert (a.grad is None) == (b.grad is None)
        if a.grad is not None:
            assert a.grad.shape == a.shape
            assert type(a.grad.data) is np.ndarray
            np.testing.assert_allclose(a.grad.data, b.grad.data, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.second_order and c.name != "dropout_train"], ids=lambda c: c.name
)
def test_second_derivative_matches_numerical(case):
    # d/dx sum(w * dy/dx): the gradient graph built with create_graph is differentiable too
    w = [_uniform(a.shape, seed=7) for a in case.inputs]

    def grad_dot_w(*xs):
        for x in xs:
            x.cleargrad()
        y = case.fn(*xs)
        y.backward(create_graph=True)
        total = None
        for x, wi in zip(xs, w, strict=True):
            if x.grad is None:
                continue
            term = F.sum(x.grad * wi)
            total = term if total is None else total + term
        for x in xs:
            x.cleargrad()
        return total if total is not None else F.sum(xs[0] * 0.0)

    assert gradient_check(grad_dot_w, *case.inputs, rtol=1e-3, atol=1e-4)


def test_every_public_function_has_a_case():
    covered = {c.name for c in CASES}
    for c in CASES:
        covered.update(c.covers)
    untested_by_design = {"accuracy"}  # not differentiable: tested on its own below
    # the convolution family has its cases in test_conv.py, which checks its own coverage
    covered.update(functions_conv.__all__)
    missing = set(F.__all__) - covered - untested_by_design
    assert not missing, f"functions without a gradient-check case: {sorted(missing)}"


def _function_classes() -> list[type[Function]]:
    classes = []
    for module in (core, F):
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(obj, Function)
                and obj is not Function
                and obj.__module__ == module.__name__
            ):
                classes.append(obj)
    return classes


def test_every_primitive_is_exercised_by_the_cases():
    seen: set[type] = set()
    for case in CASES:
        xs = [Variable(a.copy()) for a in case.inputs]
        y = case.fn(*xs)
        y.backward(create_graph=True)  # GetItemGrad and friends live in gradient graphs
        stack = [y] + [x.grad for x in xs if x.grad is not None]
        visited: set[int] = set()
        while stack:
            v = stack.pop()
            f = v.creator
            if f is None or id(f) in visited:
                continue
            visited.add(id(f))
            seen.add(type(f))
            stack.extend(f.inputs)
    missing = {cls.__name__ for cls in _function_classes()} - {cls.__name__ for cls in seen}
    assert not missing, f"Function classes no case runs: {sorted(missing)}"


def test_every_primitive_writes_its_derivative_once():
    # One formula per primitive (``derivative``), run on arrays without create_graph and on
    # Variables with it; this replaced the rule that every primitive also wrote the array path
    # out a second time (``backward_data``). At most five keep that second copy, each where
    # bench/engine.py shows it pays, and each names its row.
    classes = _function_classes()
    assert [cls.__name__ for cls in classes if cls.derivative is None] == []
    second = [cls for cls in classes if cls.backward_data is not None]
    assert len(second) <= 5, [cls.__name__ for cls in second]
    for cls in second:
        assert "bench/engine.py" in inspect.getsource(cls.backward_data), cls.__name__


# =============================================================================
# Specific behaviour
# =============================================================================
def test_float32_is_preserved_through_an_mlp_step():
    rng = _rng(0)
    x = rng.standard_normal((8, 4)).astype(np.float32)
    t = rng.integers(0, 3, 8)
    W1 = autodiff.Parameter(rng.standard_normal((4, 5)).astype(np.float32))
    b1 = autodiff.Parameter(np.zeros(5, dtype=np.float32))
    W2 = autodiff.Parameter(rng.standard_normal((5, 3)).astype(np.float32))
    h = F.relu(F.linear(x, W1, b1))
    h = F.dropout(F.sigmoid(h) * 2.0 - F.tanh(h))
    loss = F.softmax_cross_entropy(F.linear(h, W2), t) + F.mean_squared_error(
        F.sum(h, axis=1), np.zeros(8, dtype=np.float32)
    )
    assert loss.dtype == np.float32
    loss.backward()
    for p in (W1, b1, W2):
        assert p.grad.dtype == np.float32, p


def test_linear_without_bias_has_two_inputs():
    y = F.linear(Variable(np.ones((2, 3))), Variable(np.ones((3, 4))))
    assert len(y.creator.inputs) == 2


def test_sum_gradient_is_writable():
    # a broadcast view would be read-only and break in-place updates (weight decay, clipping)
    x = Variable(np.ones((2, 3)))
    F.sum(x).backward()
    x.grad.data *= 0.5
    y = Variable(np.ones((1, 3)))
    z = F.broadcast_to(y, (2, 3))
    z.data += 1.0
    (F.sum(z * 2.0)).backward()
    y.grad.data += 1.0


def test_accuracy():
    y = Variable(np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]]))
    acc = F.accuracy(y, np.array([1, 0, 0]))
    assert acc.data == pytest.approx(2 / 3)
    assert acc.creator is None


def test_dropout_is_the_identity_in_test_mode():
    x = Variable(np.ones(5))
    with autodiff.test_mode():
        assert F.dropout(x) is x


def test_dropout_scales_kept_units():
    np.random.seed(1)
    y = F.dropout(Variable(np.ones(10_000)), 0.5)
    kept = y.data[y.data != 0]
    assert np.all(kept == 2.0)
    assert 0.45 < kept.size / 10_000 < 0.55


def test_get_item_accepts_a_variable_index():
    x = Variable(np.arange(5.0))
    np.testing.assert_array_equal(F.get_item(x, Variable(np.array([1, 3]))).data, [1.0, 3.0])


def test_reshape_to_the_same_shape_returns_the_input():
    x = Variable(np.ones((2, 3)))
    assert F.reshape(x, (2, 3)) is x
    assert F.broadcast_to(x, [2, 3]) is x
    assert F.sum_to(x, [2, 3]) is x


def test_exp_backward_uses_the_output():
    x = Variable(np.array(1.0))
    y = F.exp(x)
    y.backward()
    assert x.grad.data == y.data


# =============================================================================
# Error messages
# =============================================================================
def test_matmul_error_names_the_shapes():
    with pytest.raises(ValueError, match=r"^matmul: shapes \(3, 4\) and \(5, 2\) are not aligned"):
        F.matmul(Variable(np.ones((3, 4))), Variable(np.ones((5, 2))))


def test_matmul_of_a_scalar_says_to_use_mul():
    with pytest.raises(ValueError, match=r"matmul: shapes \(\) and \(3,\) .*use mul"):
        F.matmul(Variable(np.array(2.0)), Variable(np.ones(3)))


def test_linear_errors_name_the_shapes():
    with pytest.raises(ValueError, match=r"linear: shapes \(2, 3\) and \(4, 5\) are not aligned"):
        F.linear(np.ones((2, 3)), np.ones((4, 5)))
    with pytest.raises(ValueError, match=r"linear: a bias of shape \(4,\) does not broadcast"):
        F.linear(np.ones((2, 3)), np.ones((3, 5)), np.ones(4))


def test_reshape_error_names_the_shapes():
    with pytest.raises(ValueError, match=r"reshape: cannot reshape an array of shape \(2, 3\) "):
        F.reshape(Variable(np.ones((2, 3))), (4, 2))


def test_broadcast_to_error_names_the_shapes():
    with pytest.raises(ValueError, match=r"broadcast_to: an array of shape \(2,\) cannot be"):
        F.broadcast_to(Variable(np.ones(2)), (3, 3))


def test_sum_to_error_names_the_shapes():
    with pytest.raises(ValueError, match=r"sum_to: cannot sum an array of shape \(2, 3\) to"):
        F.sum_to(Variable(np.ones((2, 3))), (5, 3))


def test_transpose_error_names_the_axes():
    with pytest.raises(ValueError, match=r"transpose: axes \(0, 0\) do not match"):
        F.transpose(Variable(np.ones((2, 3))), (0, 0))


def test_get_item_error_names_the_shape():
    with pytest.raises(IndexError, match=r"get_item: index 5 is invalid for shape \(3,\)"):
        F.get_item(Variable(np.ones(3)), 5)


def test_mean_squared_error_rejects_different_shapes():
    with pytest.raises(ValueError, match=r"mean_squared_error: shapes \(4, 1\) and \(4,\) differ"):
        F.mean_squared_error(np.ones((4, 1)), np.ones(4))


def test_softmax_cross_entropy_error_names_the_shapes():
    with pytest.raises(ValueError, match=r"softmax_cross_entropy: expected scores of shape"):
        F.softmax_cross_entropy(np.ones((4, 3)), np.ones((4, 3), dtype=int))


# =============================================================================
# Property tests: broadcasting
# =============================================================================
@settings(max_examples=40, deadline=None)
@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3),
    op=st.sampled_from([F.add, F.sub, F.mul, F.div]),
    seed=st.integers(0, 2**16),
)
def test_broadcasting_gradients_have_the_input_shapes(shapes, op, seed):
    sa, sb = shapes.input_shapes
    a = _uniform(sa, seed=seed)
    b = _positive(sb, seed=seed + 1)
    x0, x1 = Variable(a.copy()), Variable(b.copy())
    y = op(x0, x1)
    assert y.shape == shapes.result_shape
    y.backward()
    assert x0.grad.shape == sa
    assert x1.grad.shape == sb
    assert gradient_check(op, a, b, verbose=False)


@settings(max_examples=25, deadline=None)
@given(
    shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
    seed=st.integers(0, 2**16),
)
def test_sum_then_broadcast_round_trip(shape, seed):
    a = _uniform(shape, seed=seed)
    for axis in [None, *range(len(shape))]:
        assert gradient_check(lambda x, ax=axis: F.sum(x, axis=ax) * 2.0, a, verbose=False)


def test_no_grad_matmul_chain_records_nothing():
    with no_grad():
        y = F.matmul(Variable(np.ones((2, 2))), Variable(np.ones((2, 2))))
    assert y.creator is None


@pytest.mark.parametrize("fn", [F.matmul, F.linear])
def test_the_gradient_of_a_constant_matmul_operand_is_not_computed(fn):
    W = Variable(np.ones((3, 2)))
    y = fn(np.ones((4, 3)), W)  # a batch of data: a plain array, wrapped as a Constant
    steps = list(iter_backward(F.sum(y)))
    matmul_step = steps[-1]
    assert isinstance(matmul_step.function, (F.MatMul, F.Linear))
    assert matmul_step.input_grads[0] is None
    np.testing.assert_array_equal(W.grad.data, np.full((3, 2), 4.0))


@pytest.mark.parametrize(
    ("call", "kind", "words"),
    [
        (lambda x: F.sum(x, axis=5), ValueError, ["sum", "axis 5", "(2, 3)"]),
        (lambda x: F.sum(x, axis=-3), ValueError, ["sum", "axis -3", "(2, 3)"]),
        (lambda x: F.max(x, axis=9), ValueError, ["max", "axis 9"]),
        (lambda x: F.min(x, axis=(0, 4)), ValueError, ["min", "axis 4"]),
        (lambda x: F.softmax(x, axis=4), ValueError, ["softmax", "axis 4", "(2, 3)"]),
        (lambda x: F.log_softmax(x, axis=-7), ValueError, ["log_softmax", "axis -7"]),
        (lambda x: F.sum(x, axis=1.5), TypeError, ["sum", "1.5", "float"]),
        (lambda x: F.expand_dims(x, 100), ValueError, ["expand_dims", "axis 100", "-3..2"]),
        (lambda x: F.expand_dims(x, 10**18), ValueError, ["expand_dims"]),
        (lambda x: Variable(None).backward(), ValueError, ["backward", "no data"]),
        (lambda x: Variable(np.array(["a", "b"])), TypeError, ["Variable", "<U1", "(2,)"]),
        (lambda x: Variable(np.array([None, 1.0])), TypeError, ["Variable", "object"]),
    ],
)
def test_engine_errors_name_the_operation_and_the_shapes(call, kind, words):
    x = Variable(np.ones((2, 3)))
    with pytest.raises(kind) as info:
        call(x)
    for word in words:
        assert word in str(info.value)


def test_expand_dims_at_both_ends():
    x = Variable(np.ones(3))
    assert F.expand_dims(x, 0).shape == (1, 3) and F.expand_dims(x, 1).shape == (3, 1)
    assert F.expand_dims(x, -1).shape == (3, 1) and F.expand_dims(x, -2).shape == (1, 3)
