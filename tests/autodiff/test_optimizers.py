"""Optimizers against hand-computed steps; hooks; bad input (no parameters, no gradients, NaN)."""

import math

import numpy as np
import pytest

import autodiff.functions as F
import autodiff.layers as L
from autodiff import Layer, Parameter, Variable, optimizers
from autodiff.models import MLP
from autodiff.optimizers import (
    SGD,
    AdaDelta,
    AdaGrad,
    Adam,
    ClipGrad,
    FreezeParam,
    MomentumSGD,
    NonFiniteGradientError,
    NonFiniteGradientWarning,
    WeightDecay,
)

P0 = np.array([1.0, -2.0, 0.5])
G1 = np.array([0.5, -1.0, 2.0])
G2 = np.array([-0.25, 0.5, 1.0])


class One(Layer):
    """A model with a single parameter."""

    def __init__(self, data=P0):
        super().__init__()
        self.p = Parameter(np.array(data, dtype=np.float64), name="p")


def step(optimizer, model, grad):
    model.p.grad = Variable(np.array(grad))
    optimizer.update()
    return model.p.data.copy()


def two_steps(optimizer):
    model = One()
    optimizer.setup(model)
    return step(optimizer, model, G1), step(optimizer, model, G2)


# =============================================================================
# Each optimizer against its update rule, computed here by hand
# =============================================================================
def test_sgd():
    p1, p2 = two_steps(SGD(lr=0.1))
    np.testing.assert_allclose(p1, [0.95, -1.9, 0.3])
    np.testing.assert_allclose(p2, [0.975, -1.95, 0.2])


def test_momentum_sgd():
    p1, p2 = two_steps(MomentumSGD(lr=0.1, momentum=0.9))
    v1 = -0.1 * G1  # [-0.05, 0.1, -0.2]
    np.testing.assert_allclose(p1, [0.95, -1.9, 0.3])
    v2 = 0.9 * v1 - 0.1 * G2  # [-0.02, 0.04, -0.28]
    np.testing.assert_allclose(v2, [-0.02, 0.04, -0.28])
    np.testing.assert_allclose(p2, [0.93, -1.86, 0.02])


def test_adagrad():
    p1, p2 = two_steps(AdaGrad(lr=0.1, eps=0.0))
    # h = g^2, so the first step is lr * sign(g)
    np.testing.assert_allclose(p1, [0.9, -1.9, 0.4])
    h = G1**2 + G2**2  # [0.3125, 1.25, 5]
    np.testing.assert_allclose(p2, p1 - 0.1 * G2 / np.sqrt(h))
    np.testing.assert_allclose(p2[0], 0.9 + 0.025 / math.sqrt(0.3125))


def test_adadelta():
    rho, eps = 0.9, 1e-6
    p1, p2 = two_steps(AdaDelta(rho=rho, eps=eps))
    msg = 0.1 * G1**2
    dx1 = np.sqrt(eps / (msg + eps)) * G1
    np.testing.assert_allclose(p1, P0 - dx1)
    msdx = 0.1 * dx1**2
    msg = 0.9 * msg + 0.1 * G2**2
    dx2 = np.sqrt((msdx + eps) / (msg + eps)) * G2
    np.testing.assert_allclose(p2, P0 - dx1 - dx2)


def test_adam():
    opt = Adam(alpha=0.1, beta1=0.9, beta2=0.999, eps=0.0)
    p1, p2 = two_steps(opt)
    # Step 1: m = 0.1 g, v = 0.001 g^2, lr = 0.1 sqrt(0.001) / 0.1, so the step is 0.1 sign(g).
    np.testing.assert_allclose(p1, [0.9, -1.9, 0.4])
    m = 0.9 * 0.1 * G1 + 0.1 * G2
    v = 0.999 * 0.001 * G1**2 + 0.001 * G2**2
    lr = 0.1 * math.sqrt(1 - 0.999**2) / (1 - 0.9**2)
    np.testing.assert_allclose(p2, p1 - lr * m / np.sqrt(v))
    assert opt.t == 2


def test_optimizer_state_is_per_parameter():
    class Two(Layer):
        def __init__(self):
            super().__init__()
            self.a = Parameter(np.zeros(2))
            self.b = Parameter(np.zeros(2))

    model = Two()
    opt = MomentumSGD(lr=1.0, momentum=0.5).setup(model)
    model.a.grad = Variable(np.ones(2))
    model.b.grad = Variable(-np.ones(2))
    opt.update()
    opt.update()
    np.testing.assert_allclose(model.a.data, [-2.5, -2.5])
    np.testing.assert_allclose(model.b.data, [2.5, 2.5])


def test_setup_returns_self_and_takes_a_list_of_parameters():
    w = Parameter(np.array([1.0]))
    opt = SGD(lr=0.5)
    assert opt.setup([w]) is opt
    w.grad = Variable(np.array([2.0]))
    opt.update()
    np.testing.assert_allclose(w.data, [0.0])
    assert opt.steps == 1


def test_sgd_trains_a_float32_model_in_place():
    model = MLP((4, 1))
    x = np.random.default_rng(0).standard_normal((8, 2)).astype(np.float32)
    opt = SGD(lr=0.1).setup(model)
    losses = []
    for _ in range(20):
        loss = F.mean_squared_error(model(x), np.zeros((8, 1), np.float32))
        model.cleargrads()
        loss.backward()
        opt.update()
        losses.append(float(loss.data))
    assert losses[-1] < losses[0]
    assert all(p.data.dtype == np.float32 for p in model.params())


# =============================================================================
# Hooks
# =============================================================================
def test_weight_decay_equals_adding_the_l2_term_to_the_loss():
    rate = 0.3
    x = np.random.default_rng(1).standard_normal((5, 3))

    def make():
        layer = L.Linear(2, dtype=np.float64, in_size=3)
        return layer

    np.random.seed(3)
    with_term = make()
    np.random.seed(3)
    with_hook = make()
    opt_term = SGD(lr=0.1).setup(with_term)
    opt_hook = SGD(lr=0.1).setup(with_hook)
    opt_hook.add_hook(WeightDecay(rate))
    assert opt_hook.hooks[0].rate == rate

    for _ in range(3):
        loss = F.sum(F.tanh(with_term(x)))
        for p in with_term.params():
            loss = loss + rate / 2 * F.sum(p**2)
        with_term.cleargrads()
        loss.backward()
        opt_term.update()

        loss = F.sum(F.tanh(with_hook(x)))
        with_hook.cleargrads()
        loss.backward()
        opt_hook.update()

    for a, b in zip(with_term.params(), with_hook.params(), strict=True):
        np.testing.assert_allclose(a.data, b.data, rtol=1e-12)


def global_norm(model):
    return math.sqrt(sum(float((p.grad.data**2).sum()) for p in model.params()))


def clipped(max_norm, scale):
    class Two(Layer):
        def __init__(self):
            super().__init__()
            self.a = Parameter(np.zeros(3))
            self.b = Parameter(np.zeros(4))

    model = Two()
    model.a.grad = Variable(np.array([3.0, 0.0, 4.0]) * scale)  # norm 5 * scale
    model.b.grad = Variable(np.zeros(4))
    ClipGrad(max_norm)(list(model.params()))
    return model


def test_clip_grad_bounds_the_global_norm():
    model = clipped(max_norm=1.0, scale=2.0)  # global norm 10
    assert global_norm(model) <= 1.0
    assert global_norm(model) == pytest.approx(1.0, rel=1e-5)
    np.testing.assert_allclose(model.a.grad.data / global_norm(model), [0.6, 0.0, 0.8])


def test_clip_grad_leaves_small_gradients_alone():
    model = clipped(max_norm=100.0, scale=1.0)
    np.testing.assert_array_equal(model.a.grad.data, [3.0, 0.0, 4.0])


def test_clip_grad_as_a_hook_bounds_the_step():
    model = One(np.zeros(3))
    opt = SGD(lr=1.0).setup(model)
    opt.add_hook(ClipGrad(1.0))
    model.p.grad = Variable(np.array([30.0, 0.0, 40.0]))
    opt.update()
    assert np.linalg.norm(model.p.data) == pytest.approx(1.0, rel=1e-5)


def test_freeze_param_keeps_a_layer_fixed_and_trains_the_rest():
    model = MLP((3, 2))
    x = np.ones((4, 2), dtype=np.float32)
    model(x)
    frozen = [p.data.copy() for p in model.l0.params()]
    trained = [p.data.copy() for p in model.l1.params()]
    opt = SGD(lr=0.5).setup(model)
    opt.add_hook(FreezeParam(model.l0))
    loss = F.sum(model(x))
    model.cleargrads()
    loss.backward()
    opt.update()  # DeZero crashes here: the frozen parameters' grad is None
    for before, p in zip(frozen, model.l0.params(), strict=True):
        np.testing.assert_array_equal(p.data, before)
    assert any(
        not np.array_equal(before, p.data)
        for before, p in zip(trained, model.l1.params(), strict=True)
    )


def test_hooks_run_in_the_order_added():
    calls = []
    model = One()
    opt = SGD().setup(model)
    opt.add_hook(lambda params: calls.append(("first", len(params))))
    opt.add_hook(lambda params: calls.append(("second", len(params))))
    step(opt, model, G1)
    assert calls == [("first", 1), ("second", 1)]


# =============================================================================
# Bad input
# =============================================================================
def test_setup_on_a_model_without_parameters_is_an_error():
    class Empty(Layer):
        def forward(self, x):
            return x

    with pytest.raises(ValueError, match=r"SGD\.setup: Empty has no parameters"):
        SGD().setup(Empty())
    with pytest.raises(TypeError, match="Layer/Model or a list of Parameters"):
        Adam().setup(3)


def test_update_before_setup_is_an_error():
    with pytest.raises(RuntimeError, match=r"setup\(model\) first"):
        SGD().update()


def test_update_without_gradients_is_an_error():
    model = One()
    opt = Adam().setup(model)
    with pytest.raises(RuntimeError, match=r"none of the parameters has a gradient.*backward"):
        opt.update()
    assert opt.t == 0
    np.testing.assert_array_equal(model.p.data, P0)


def nan_loss_model():
    model = MLP((3, 1))
    x = np.ones((2, 2), dtype=np.float32)
    model(x)
    x[0, 0] = np.nan  # no numpy warning: NaN propagates silently
    loss = F.sum(model(x))
    model.cleargrads()
    loss.backward()
    return model


def test_a_nan_loss_raises_naming_the_step_and_parameter():
    model = nan_loss_model()
    before = [p.data.copy() for p in model.params()]
    opt = SGD().setup(model)
    with pytest.raises(NonFiniteGradientError, match=r"SGD.update \(step 0\).*'l0/W'.*NaN"):
        opt.update()
    for b, p in zip(before, model.params(), strict=True):
        np.testing.assert_array_equal(b, p.data)


def test_a_nan_loss_can_warn_and_skip_the_step():
    model = nan_loss_model()
    before = [p.data.copy() for p in model.params()]
    opt = Adam(on_nonfinite="warn").setup(model)
    with pytest.warns(NonFiniteGradientWarning, match="Adam.update"):
        opt.update()
    assert opt.t == 0
    assert opt.steps == 0
    for b, p in zip(before, model.params(), strict=True):
        np.testing.assert_array_equal(b, p.data)


def test_an_infinite_gradient_is_caught_too_and_can_be_ignored():
    model = One()
    model.p.grad = Variable(np.array([1.0, np.inf, 0.0]))
    with pytest.raises(NonFiniteGradientError, match="1 infinite"):
        SGD().setup(model).update()
    with pytest.raises(ValueError, match="on_nonfinite"):
        SGD(on_nonfinite="sometimes")
    SGD(on_nonfinite="ignore").setup(model).update()
    assert np.isinf(model.p.data[1])


def test_public_names():
    for name in ("SGD", "MomentumSGD", "AdaGrad", "AdaDelta", "Adam"):
        assert issubclass(getattr(optimizers, name), optimizers.Optimizer)
    for name in ("WeightDecay", "ClipGrad", "FreezeParam"):
        assert callable(getattr(optimizers, name))


def test_the_finite_check_raises_no_numpy_warning_and_covers_big_models():
    model = One([0.0, 0.0])
    model.p.grad = Variable(np.array([np.inf, -np.inf]))  # a sum would warn: inf - inf
    with pytest.raises(NonFiniteGradientError, match="2 infinite"):
        SGD().setup(model).update()
    big = One(np.zeros(100_000))  # past the size where gradients are checked one by one
    grad = np.zeros(100_000)
    grad[-1] = np.nan
    big.p.grad = Variable(grad)
    with pytest.raises(NonFiniteGradientError, match="1 NaN"):
        SGD().setup(big).update()
    grad[-1] = 1.0
    SGD(lr=1.0).setup(big).update()
    assert big.p.data[-1] == -1.0


def test_hooks_do_not_double_apply_to_a_shared_gradient_array():
    # W1 + W2 hands both leaves the same gradient array; an in-place hook would hit it twice.
    from autodiff import Parameter
    from autodiff.optimizers import SGD, ClipGrad, WeightDecay

    for hook in (WeightDecay(0.5), ClipGrad(0.1)):
        w1 = Parameter(np.array([1.0, 2.0]))
        w2 = Parameter(np.array([3.0, 4.0]))
        (w1 + w2).sum().backward()
        opt = SGD(lr=1.0).setup([w1, w2])
        opt.add_hook(hook)
        expected = [p.grad.data.copy() for p in (w1, w2)]
        if isinstance(hook, WeightDecay):
            expected = [g + 0.5 * p.data for g, p in zip(expected, (w1, w2), strict=True)]
        else:
            norm = np.sqrt(sum(float((g * g).sum()) for g in expected))
            expected = [g * (0.1 / (norm + 1e-6)) for g in expected]
        before = [p.data.copy() for p in (w1, w2)]
        opt.update()
        for b, p, g in zip(before, (w1, w2), expected, strict=True):
            np.testing.assert_allclose(p.data, b - g)
