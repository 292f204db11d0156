"""Batch normalisation, embeddings, RNN and LSTM layers, truncated backpropagation through time
(the book's steps 59 and 60), and the sequence data loader."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import autodiff
import autodiff.functions as F
import autodiff.layers as L
from autodiff import Variable, cuda, optimizers
from autodiff.dataloaders import SeqDataLoader
from autodiff.datasets import SinCurve
from autodiff.utils import gradient_check, numerical_grad

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def seeded():
    np.random.seed(0)


# =============================================================================
# batch_norm: DeZero's tests (tests/test_batchnorm.py), their Chainer references written
# out in numpy
# =============================================================================
def _bn_params(n, c, h=None, w=None, dtype=np.float32):
    shape = (n, c) if h is None else (n, c, h, w)
    x = np.random.randn(*shape).astype(dtype)
    gamma = np.random.randn(c).astype(dtype)
    beta = np.random.randn(c).astype(dtype)
    mean = np.random.randn(c).astype(dtype)
    var = np.abs(np.random.randn(c).astype(dtype))
    return x, gamma, beta, mean, var


def _channels(a, ndim):
    return a.reshape((1, -1) if ndim == 2 else (1, -1, 1, 1))


def _fixed_bn_np(x, gamma, beta, mean, var, eps=2e-5):
    """Chainer's fixed_batch_normalization: the given statistics."""
    c = lambda a: _channels(a, x.ndim)  # noqa: E731
    return c(gamma) * (x - c(mean)) / np.sqrt(c(var) + eps) + c(beta)


def _bn_np(x, gamma, beta, eps=2e-5):
    """Chainer's batch_normalization: the batch's statistics."""
    axes = (0,) if x.ndim == 2 else (0, 2, 3)
    mean = x.mean(axis=axes)
    var = x.var(axis=axes)
    return _fixed_bn_np(x, gamma, beta, mean, var, eps)


SHAPES = [(8, 1), (1, 10), (20, 10), (20, 10, 5, 5)]


@pytest.mark.parametrize("shape", SHAPES)
def test_batch_norm_test_mode_uses_the_running_statistics(shape):
    x, gamma, beta, mean, var = _bn_params(*shape)
    with autodiff.test_mode():
        y = F.batch_norm(x, gamma, beta, mean, var)
    assert y.dtype == np.float32
    np.testing.assert_allclose(
        y.data, _fixed_bn_np(x, gamma, beta, mean, var), rtol=1e-4, atol=1e-5
    )


@pytest.mark.parametrize("shape", SHAPES)
def test_batch_norm_training_uses_the_batch_statistics(shape):
    x, gamma, beta, mean, var = _bn_params(*shape)
    y = F.batch_norm(x, gamma, beta, mean, var)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.data, _bn_np(x, gamma, beta), rtol=1e-4, atol=1e-5)


def test_batch_norm_training_updates_the_running_statistics_in_place():
    x, gamma, beta, mean, var = _bn_params(6, 3, 2, 2, dtype=np.float64)
    mean0, var0 = mean.copy(), var.copy()
    F.batch_norm(x, gamma, beta, mean, var, decay=0.8)
    m = 6 * 2 * 2
    rows = x.transpose(0, 2, 3, 1).reshape(-1, 3)
    np.testing.assert_allclose(mean, 0.8 * mean0 + 0.2 * rows.mean(axis=0))
    # the variance folded in is the unbiased one, m / (m - 1) times the batch's
    np.testing.assert_allclose(var, 0.8 * var0 + 0.2 * rows.var(axis=0) * m / (m - 1))
    with autodiff.test_mode():  # test mode reads them and leaves them alone
        y = F.batch_norm(x, gamma, beta, mean, var)
    np.testing.assert_allclose(y.data, _fixed_bn_np(x, gamma, beta, mean, var))
    np.testing.assert_allclose(mean, 0.8 * mean0 + 0.2 * rows.mean(axis=0))


@pytest.mark.parametrize("shape", [(8, 3), (4, 5, 3, 3)])
@pytest.mark.parametrize("wrt", ["x", "gamma", "beta"])
def test_batch_norm_gradients_match_numerical(shape, wrt):
    x, gamma, beta, mean, var = _bn_params(*shape, dtype=np.float64)
    weights = np.random.randn(*shape)  # the plain sum would not depend on x at all
    args = {"x": x, "gamma": gamma, "beta": beta}

    def f(v):
        given = {**args, wrt: v}
        y = F.batch_norm(given["x"], given["gamma"], given["beta"], mean.copy(), var.copy())
        return y * weights

    assert gradient_check(f, args[wrt])


def test_batch_norm_names_the_shapes_it_refuses():
    with pytest.raises(ValueError, match=r"batch_norm: expected .* got \(2, 3, 4\)"):
        F.batch_norm(np.zeros((2, 3, 4)), np.ones(3), np.zeros(3), np.zeros(3), np.ones(3))
    with pytest.raises(ValueError, match=r"gamma \(4,\)"):
        F.batch_norm(np.zeros((2, 3)), np.ones(4), np.zeros(3), np.zeros(3), np.ones(3))


# =============================================================================
# BatchNorm and EmbedID layers
# =============================================================================
def test_batchnorm_layer_is_lazy_and_keeps_running_statistics_as_untrained_state(tmp_path):
    layer = L.BatchNorm()
    assert [p.name for p in layer.params()] == ["avg_mean", "avg_var", "gamma", "beta"]
    assert all(p.data is None for p in layer.params())
    x = np.random.randn(10, 4).astype(np.float32) * 3 + 1
    y = layer(x)
    assert layer.gamma.data.dtype == np.float32 and layer.gamma.shape == (4,)
    np.testing.assert_allclose(y.data.mean(axis=0), 0, atol=1e-5)
    before = layer.avg_mean.data.copy()
    assert np.all(before != 0)  # folded in by the call

    F.sum(y * np.random.randn(10, 4)).backward()
    assert layer.avg_mean.grad is None and layer.avg_var.grad is None
    assert layer.gamma.grad is not None and layer.beta.grad is not None
    optimizers.SGD(lr=0.1).setup(layer).update()
    np.testing.assert_array_equal(layer.avg_mean.data, before)  # not trained

    layer.save_weights(tmp_path / "bn.npz")
    other = L.BatchNorm()
    other.load_weights(tmp_path / "bn.npz")
    np.testing.assert_array_equal(other.avg_var.data, layer.avg_var.data)
    with autodiff.test_mode():
        np.testing.assert_allclose(other(x).data, layer(x).data)


def test_batchnorm_layer_takes_images_per_channel():
    layer = L.BatchNorm()
    y = layer(np.random.randn(2, 3, 4, 4))
    assert layer.gamma.shape == (3,)
    np.testing.assert_allclose(y.data.mean(axis=(0, 2, 3)), 0, atol=1e-12)


def test_embed_id_picks_rows_and_sums_repeated_ids():
    layer = L.EmbedID(5, 3)
    assert layer.W.shape == (5, 3) and layer.W.dtype == np.float64
    ids = np.array([[1, 4], [1, 0]])
    y = layer(ids)
    np.testing.assert_array_equal(y.data, layer.W.data[ids])
    y.backward()
    np.testing.assert_array_equal(layer.W.grad.data[:, 0], [1, 2, 0, 0, 1])


def test_embed_id_draws_dezeros_weights():
    np.random.seed(3)
    expected = np.random.randn(5, 3)
    np.random.seed(3)
    np.testing.assert_array_equal(L.EmbedID(5, 3).W.data, expected)


# =============================================================================
# RNN and LSTM
# =============================================================================
def _float64(layer, x):
    """Run two steps so lazy weights exist, then make every parameter float64."""
    layer(x)
    layer(x)
    layer.reset_state()
    for p in layer.params():
        p.data = p.data.astype(np.float64)
    return layer


def _sequence_loss(layer, xs, weights):
    layer.reset_state()
    loss = 0
    for x, w in zip(xs, weights, strict=True):
        loss = loss + F.sum(layer(x) * w)
    return loss


@pytest.mark.parametrize("cls", [L.RNN, L.LSTM])
def test_recurrent_steps_gradients_match_numerical(cls):
    xs = np.random.randn(3, 2, 4)  # 3 steps of a batch of 2
    weights = np.random.randn(3, 2, 5)
    layer = _float64(cls(5), xs[0])
    loss = _sequence_loss(layer, xs, weights)
    layer.cleargrads()
    loss.backward()
    for p in layer.params():
        numerical = numerical_grad(lambda v: _sequence_loss(layer, xs, weights), p)
        np.testing.assert_allclose(p.grad.data, numerical, rtol=1e-5, atol=1e-7, err_msg=p.name)
    # and through the inputs
    x0 = Variable(xs[0].copy())

    def from_first_input(v):
        return _sequence_loss(layer, [v, *xs[1:]], weights)

    layer.cleargrads()
    from_first_input(x0).backward()
    np.testing.assert_allclose(x0.grad.data, numerical_grad(from_first_input, x0), rtol=1e-5)


def test_rnn_first_step_has_no_recurrent_term_and_state_resets():
    layer = L.RNN(3)
    x = np.random.randn(1, 2)
    h1 = layer(x)
    np.testing.assert_allclose(h1.data, np.tanh(x @ layer.x2h.W.data + layer.x2h.b.data))
    assert layer.h2h.W.data is None  # lazy, as DeZero: made at the second step
    h2 = layer(x)
    assert layer.h2h.W.shape == (3, 3)
    assert not np.allclose(h1.data, h2.data)
    layer.reset_state()
    np.testing.assert_allclose(layer(x).data, h1.data)


def test_rnn_with_in_size_makes_a_square_recurrent_weight():
    layer = L.RNN(3, in_size=2)
    assert layer.x2h.W.shape == (2, 3) and layer.h2h.W.shape == (3, 3)
    layer(np.ones((1, 2)))
    assert layer(np.ones((1, 2))).shape == (1, 3)


def test_lstm_state_resets():
    layer = L.LSTM(4, in_size=2)
    x = np.random.randn(3, 2)
    h1 = layer(x)
    assert layer.c.shape == (3, 4)
    layer(x)
    layer.reset_state()
    assert layer.h is None and layer.c is None
    np.testing.assert_allclose(layer(x).data, h1.data)


class _SimpleRNN(autodiff.Model):
    """The book's step 59 model."""

    def __init__(self, hidden_size, out_size, cell=L.RNN):
        super().__init__()
        self.rnn = cell(hidden_size)
        self.fc = L.Linear(out_size)

    def reset_state(self):
        self.rnn.reset_state()

    def forward(self, x):
        return self.fc(self.rnn(x))


@pytest.mark.parametrize("cell", [L.RNN, L.LSTM])
def test_truncated_bptt_on_sincurve_lowers_the_loss(cell):
    # the book's steps 59 (RNN, one sequence) and 60 (LSTM, SeqDataLoader)
    train_set = SinCurve(train=True)
    model = _SimpleRNN(10, 1, cell)
    optimizer = optimizers.Adam().setup(model)
    bptt_length, batch = 10, 10
    loader = SeqDataLoader(train_set, batch_size=batch)
    epoch_losses = []
    for _ in range(8):
        model.reset_state()
        loss, total = 0, 0.0
        for count, (x, t) in enumerate(loader, start=1):
            loss = loss + F.mean_squared_error(model(x), t)
            if count % bptt_length == 0:
                model.cleargrads()
                loss.backward()
                loss.unchain_backward()
                optimizer.update()
                total += float(loss.data)
                loss = 0
        epoch_losses.append(total)
    assert epoch_losses[-1] < 0.5 * epoch_losses[0], epoch_losses


def test_unchain_backward_cuts_the_hidden_state_from_the_past():
    layer = L.RNN(3)
    x = np.random.randn(1, 2)
    loss = F.sum(layer(x)) + F.sum(layer(x))
    loss.backward()
    loss.unchain_backward()
    assert layer.h.creator is None  # the next window starts from a leaf
    # the next window's gradient is that of one step from a constant state
    h0 = layer.h.data.copy()
    layer.cleargrads()
    F.sum(layer(x)).backward()
    pre = x @ layer.x2h.W.data + layer.x2h.b.data + h0 @ layer.h2h.W.data
    g = 1 - np.tanh(pre) ** 2
    np.testing.assert_allclose(layer.h2h.W.grad.data, h0.T @ g, rtol=1e-6)


# =============================================================================
# Against DeZero (in a child process: its import needs matplotlib and PIL stand-ins)
# =============================================================================
_DEZERO_SCRIPT = """
import sys
import numpy as np
sys.path.insert(0, {bench!r})
from engine import _import_dezero
dezero = _import_dezero()
import dezero.functions as F
import dezero.layers as L
out = {{}}
for cls, subs in (("RNN", ("x2h", "h2h")),
                  ("LSTM", ("x2f", "x2i", "x2o", "x2u", "h2f", "h2i", "h2o", "h2u"))):
    np.random.seed(0)
    layer = getattr(L, cls)(5)
    xs = np.random.randn(4, 3, 2)
    loss = 0
    for x in xs:
        y = layer(dezero.Variable(x))
        loss = loss + F.sum(y * y)
    loss.backward()
    out[cls + "/loss"] = loss.data
    for name in subs:
        out[cls + "/" + name + "/W"] = getattr(layer, name).W.data
        out[cls + "/" + name + "/gW"] = getattr(layer, name).W.grad.data
np.savez({path!r}, **out)
"""


@pytest.mark.skipif(importlib.util.find_spec("dezero") is None, reason="DeZero is not installed")
def test_rnn_and_lstm_match_dezero_with_the_same_seed(tmp_path):
    path = tmp_path / "dezero.npz"
    script = _DEZERO_SCRIPT.format(bench=str(ROOT / "bench"), path=str(path))
    subprocess.run([sys.executable, "-c", textwrap.dedent(script)], check=True, timeout=120)
    with np.load(path) as saved:
        ref = dict(saved)
    for cls in ("RNN", "LSTM"):
        np.random.seed(0)
        layer = getattr(L, cls)(5)
        xs = np.random.randn(4, 3, 2)
        loss = 0
        for x in xs:
            y = layer(Variable(x))
            loss = loss + F.sum(y * y)
        loss.backward()
        np.testing.assert_allclose(loss.data, ref[cls + "/loss"], rtol=1e-6)
        names = [k.split("/")[1] for k in ref if k.startswith(cls + "/") and k.endswith("/gW")]
        assert names
        for name in names:
            sub = getattr(layer, name)
            # the same draws; DeZero's scaled weight is float64 under numpy 2, ours float32
            np.testing.assert_allclose(sub.W.data, ref[f"{cls}/{name}/W"], rtol=1e-6)
            np.testing.assert_allclose(
                sub.W.grad.data, ref[f"{cls}/{name}/gW"], rtol=1e-4, atol=1e-6, err_msg=name
            )


# =============================================================================
# SeqDataLoader
# =============================================================================
def test_seq_data_loader_walks_each_row_along_its_own_stretch(monkeypatch):
    ds = autodiff.Dataset.__new__(autodiff.Dataset)
    ds.data, ds.label = np.arange(12.0)[:, None], np.arange(1.0, 13.0)[:, None]
    ds.transform = ds.target_transform = None
    loader = SeqDataLoader(ds, batch_size=3)
    batches = [x.ravel().tolist() for x, _ in loader]
    assert len(batches) == 4
    assert batches == [[0, 4, 8], [1, 5, 9], [2, 6, 10], [3, 7, 11]]
    again = [x.ravel().tolist() for x, _ in loader]
    assert again == batches  # never shuffled
    monkeypatch.setattr(cuda, "cupy", None)
    monkeypatch.setattr(cuda, "gpu_enable", False)
    with pytest.raises(RuntimeError, match="CuPy is not installed"):
        SeqDataLoader(ds, 3, gpu=True)
