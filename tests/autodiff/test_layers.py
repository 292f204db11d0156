"""Layers and models: registration order, lazy Linear, errors, weights on disk, ownership."""

import gc
import weakref

import numpy as np
import pytest

import autodiff
import autodiff.functions as F
import autodiff.layers as L
from autodiff import Layer, Model, Parameter, Variable, utils
from autodiff.models import MLP, Sequential


class Block(Layer):
    def __init__(self):
        super().__init__()
        self.p2 = Parameter(np.array([2.0]), name="p2")
        self.inner = L.Linear(3, in_size=2)
        self.not_a_param = np.ones(3)
        self.p1 = Parameter(np.array([1.0]), name="p1")


@pytest.fixture(autouse=True)
def seeded():
    np.random.seed(0)


# =============================================================================
# Registration
# =============================================================================
def test_exports_match_dezero():
    assert autodiff.Layer is Layer
    assert autodiff.Model is Model
    for name in ("layers", "models", "optimizers", "datasets", "dataloaders"):
        assert hasattr(autodiff, name)
    assert autodiff.Dataset is autodiff.datasets.Dataset
    assert autodiff.DataLoader is autodiff.dataloaders.DataLoader


def test_params_come_in_assignment_order_recursively():
    block = Block()
    params = list(block.params())
    assert params == [block.p2, block.inner.W, block.inner.b, block.p1]
    assert block.parameters() == params
    assert list(block.named_params()) == ["p2", "inner/W", "inner/b", "p1"]


def test_param_order_is_the_same_for_every_instance():
    names = [[p.name for p in Block().params()] for _ in range(5)]
    assert all(n == names[0] for n in names)


def test_reassigning_a_non_parameter_unregisters_and_a_new_parameter_registers():
    block = Block()
    block.p2 = None
    assert block.p2 not in list(block.params())
    assert len(list(block.params())) == 3
    block.p3 = Parameter(np.zeros(2))
    assert list(block.params())[-1] is block.p3
    del block.p1
    # parameters are named by their path from the layer (the viewer's l0.W, l1.b)
    assert [p.name for p in block.params()] == ["inner.W", "inner.b", "p3"]


def test_a_shared_parameter_is_yielded_once():
    class Tied(Layer):
        def __init__(self):
            super().__init__()
            self.a = L.Linear(2, in_size=2)
            self.b = self.a  # the same layer under two names
            self.w = self.a.W

    tied = Tied()
    assert list(tied.params()) == [tied.a.W, tied.a.b]
    assert list(tied.named_params()) == ["a/W", "a/b"]


def test_sub_layers_take_their_attribute_name():
    model = MLP((4, 3))
    assert [layer.name for layer in model.layers] == ["l0", "l1"]


def test_assigning_before_super_init_is_a_clear_error():
    class Forgetful(Layer):
        def __init__(self):
            self.w = Parameter(np.zeros(1))

    with pytest.raises(RuntimeError, match=r"super\(\).__init__\(\)"):
        Forgetful()


def test_cleargrads_and_zero_grad_clear_every_gradient():
    model = MLP((4, 2))
    x = np.random.randn(5, 3)
    for clear in (model.cleargrads, model.zero_grad):
        F.sum(model(x)).backward()
        assert all(p.grad is not None for p in model.params())
        clear()
        assert all(p.grad is None for p in model.params())


# =============================================================================
# Linear
# =============================================================================
def test_linear_is_lazy_and_initialised_like_dezero():
    layer = L.Linear(4)
    assert layer.W.data is None
    x = np.random.randn(5, 3).astype(np.float32)
    np.random.seed(42)
    y = layer(x)
    np.random.seed(42)
    expected_W = np.random.randn(3, 4).astype(np.float32) * np.float32(np.sqrt(1 / 3))
    np.testing.assert_array_equal(layer.W.data, expected_W)
    np.testing.assert_array_equal(layer.b.data, np.zeros(4, dtype=np.float32))
    assert layer.in_size == 3
    assert layer.W.data.dtype == np.float32
    assert y.shape == (5, 4)
    np.testing.assert_allclose(y.data, x @ expected_W, rtol=1e-6)


def test_linear_with_in_size_initialises_at_once_and_nobias_has_no_b():
    layer = L.Linear(2, nobias=True, dtype=np.float64, in_size=3)
    assert layer.W.shape == (3, 2)
    assert layer.W.dtype == np.float64
    assert layer.b is None
    assert list(layer.params()) == [layer.W]
    x = np.random.randn(4, 3)
    np.testing.assert_allclose(layer(x).data, x @ layer.W.data)


def test_linear_gradients_match_numerical_ones():
    layer = L.Linear(3, dtype=np.float64, in_size=4)
    layer.b.data = np.random.randn(3)
    x = np.random.randn(5, 4)
    assert utils.gradient_check(lambda v: F.sum(F.tanh(layer(v))), x)
    layer.cleargrads()  # gradient_check's backward reached W too
    y = F.sum(F.tanh(layer(x)))
    y.backward()

    def loss_of_W(W):
        return F.sum(F.tanh(F.linear(x, W, layer.b)))

    np.testing.assert_allclose(
        layer.W.grad.data, utils.numerical_grad(loss_of_W, layer.W.data.copy()), rtol=1e-5
    )


def test_linear_rejects_an_input_that_is_not_2d():
    layer = L.Linear(3, in_size=2)
    with pytest.raises(ValueError, match=r"Linear layer: expected an input of shape \(N, 2\)"):
        layer(np.ones(2))


def test_linear_reused_with_a_different_width_names_layer_and_shapes():
    model = MLP((4, 3))
    model(np.ones((5, 2), dtype=np.float32))
    with pytest.raises(ValueError) as info:
        model(np.ones((5, 6), dtype=np.float32))
    message = str(info.value)
    assert "Linear layer 'l0'" in message
    assert "expected an input of shape (N, 2)" in message
    assert "got (5, 6)" in message


def test_linear_with_a_given_in_size_rejects_other_widths():
    layer = L.Linear(3, in_size=2)
    with pytest.raises(ValueError, match=r"\(N, 2\).*got \(4, 5\)"):
        layer(Variable(np.ones((4, 5))))


# =============================================================================
# Models
# =============================================================================
def test_mlp_applies_the_activation_between_layers_only():
    model = MLP((5, 2), activation=F.relu)
    x = np.random.randn(4, 3).astype(np.float32)
    y = model(x)
    h = np.maximum(x @ model.l0.W.data + model.l0.b.data, 0)
    np.testing.assert_allclose(y.data, h @ model.l1.W.data + model.l1.b.data, rtol=1e-5)


def test_mlp_needs_at_least_one_layer():
    with pytest.raises(ValueError, match="fc_output_sizes is empty"):
        MLP(())


def test_sequential_registers_layers_and_chains_them():
    model = Sequential(L.Linear(4), F.sigmoid, L.Linear(2))
    y = model(np.ones((3, 5), dtype=np.float32))
    assert y.shape == (3, 2)
    assert len(list(model.params())) == 4


def test_model_plot_draws_one_forward_pass(monkeypatch):
    calls = []
    monkeypatch.setattr(
        utils, "plot_dot_graph", lambda y, verbose, to_file: calls.append((y, verbose, to_file))
    )
    model = MLP((3, 1))
    model.plot(np.ones((2, 2), dtype=np.float32), to_file="net.png")
    (y, verbose, to_file), *_ = calls
    assert y.shape == (2, 1)
    assert verbose is True
    assert to_file == "net.png"


# =============================================================================
# Weights on disk
# =============================================================================
def trained_mlp():
    model = MLP((4, 2))
    model(np.random.randn(3, 3).astype(np.float32))
    return model


def test_save_load_round_trip(tmp_path):
    model = trained_mlp()
    path = tmp_path / "weights.npz"
    model.save_weights(path)
    fresh = MLP((4, 2))  # lazy: takes the saved shapes
    fresh.load_weights(path)
    for a, b in zip(model.params(), fresh.params(), strict=True):
        np.testing.assert_array_equal(a.data, b.data)
    x = np.random.randn(2, 3).astype(np.float32)
    np.testing.assert_array_equal(model(x).data, fresh(x).data)


def test_load_finds_the_file_numpy_named_with_npz(tmp_path):
    model = trained_mlp()
    model.save_weights(tmp_path / "w")  # numpy appends .npz
    other = trained_mlp()
    other.load_weights(tmp_path / "w")
    np.testing.assert_array_equal(other.l0.W.data, model.l0.W.data)


def test_load_of_a_missing_file_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nothing\.npz"):
        trained_mlp().load_weights(tmp_path / "nothing.npz")


def test_load_with_a_mismatched_shape_names_the_parameter(tmp_path):
    MLP((5, 2))
    small = MLP((5, 2))
    small(np.ones((1, 3), dtype=np.float32))
    small.save_weights(tmp_path / "w.npz")
    model = trained_mlp()  # hidden size 4, not 5
    before = model.l0.W.data.copy()
    with pytest.raises(ValueError, match=r"'l0/W' has shape \(3, 4\).*\(3, 5\)"):
        model.load_weights(tmp_path / "w.npz")
    np.testing.assert_array_equal(model.l0.W.data, before)  # nothing half-loaded


def test_load_with_a_missing_or_extra_parameter_names_it(tmp_path):
    trained_mlp().save_weights(tmp_path / "two.npz")
    three = MLP((4, 2, 2))
    with pytest.raises(ValueError, match=r"'l2/W' is missing"):
        three.load_weights(tmp_path / "two.npz")
    three(np.ones((1, 3), dtype=np.float32))
    three.save_weights(tmp_path / "three.npz")
    with pytest.raises(ValueError, match=r"\['l2/W', 'l2/b'\]"):
        trained_mlp().load_weights(tmp_path / "three.npz")


def test_save_before_initialisation_names_the_parameter(tmp_path):
    with pytest.raises(ValueError, match=r"'l0/W'.*not initialised"):
        MLP((2, 1)).save_weights(tmp_path / "w.npz")
    assert not (tmp_path / "w.npz").exists()


# =============================================================================
# Ownership: a layer must not keep a graph alive
# =============================================================================
def test_a_layer_holds_its_last_inputs_and_outputs_only_weakly():
    model = MLP((3, 2))
    x = Variable(np.ones((2, 2), dtype=np.float32))
    gc.disable()
    try:
        y = model(x)
        y_ref = weakref.ref(y)
        creator_ref = weakref.ref(y.creator)
        assert model.outputs[0]() is y
        del y
        assert y_ref() is None
        assert creator_ref() is None
        assert model.outputs[0]() is None
    finally:
        gc.enable()


def test_a_layer_may_take_plain_numbers():
    class Scale(Layer):
        def forward(self, x, k):
            return x * k

    scale = Scale()
    y = scale(Variable(np.ones(2)), 3.0)
    np.testing.assert_array_equal(y.data, [3.0, 3.0])
    assert scale.inputs[1]() == 3.0
    assert scale.outputs[0]() is y


def test_to_cpu_keeps_numpy_and_to_gpu_without_cupy_names_it(monkeypatch):
    from autodiff import cuda

    monkeypatch.setattr(cuda, "cupy", None)
    monkeypatch.setattr(cuda, "gpu_enable", False)
    model = MLP((2,))
    model(np.ones((1, 3)))
    model.to_cpu()
    assert all(type(p.data) is np.ndarray for p in model.params())
    with pytest.raises(RuntimeError, match=r"CuPy is not installed: to_gpu\(\) needs it"):
        model.to_gpu()


def test_parameters_are_named_by_their_path_and_user_names_stay():
    from autodiff import models

    mlp = models.MLP((3, 4, 1))
    assert [p.name for p in mlp.params()] == ["l0.W", "l0.b", "l1.W", "l1.b", "l2.W", "l2.b"]

    class Pair(Layer):
        def __init__(self):
            super().__init__()
            self.fc = L.Linear(2)
            self.scale = Parameter(np.ones(1), name="gain")

    class Net(models.Model):
        def __init__(self):
            super().__init__()
            self.b1 = Pair()
            self.b2 = Pair()

    names = [p.name for p in Net().params()]
    assert names == ["b1.fc.W", "b1.fc.b", "gain", "b2.fc.W", "b2.fc.b", "gain"]
