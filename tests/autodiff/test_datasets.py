"""Toy datasets and DataLoader: shapes, determinism, complete and seeded batching."""

import numpy as np
import pytest

from autodiff import DataLoader, Dataset, datasets


# =============================================================================
# Datasets
# =============================================================================
def test_spiral_is_three_balanced_arms():
    x, t = datasets.get_spiral(train=True)
    assert x.shape == (300, 2)
    assert x.dtype == np.float32
    assert t.shape == (300,)
    assert t.dtype.kind == "i"
    assert np.bincount(t).tolist() == [100, 100, 100]
    radius = np.linalg.norm(x, axis=1)
    assert radius.max() <= 1.0
    assert radius.min() == 0.0  # each arm starts at the origin


def test_spiral_is_deterministic_and_train_differs_from_test():
    x1, t1 = datasets.get_spiral(train=True)
    x2, t2 = datasets.get_spiral(train=True)
    np.testing.assert_array_equal(x1, x2)
    np.testing.assert_array_equal(t1, t2)
    x3, _ = datasets.get_spiral(train=False)
    assert not np.array_equal(x1, x3)


def test_spiral_leaves_numpys_generator_seeded_like_dezero():
    datasets.get_spiral()
    a = np.random.rand(3)
    datasets.get_spiral()
    b = np.random.rand(3)
    np.testing.assert_array_equal(a, b)  # the model built next gets the book's weights


def test_spiral_dataset_items_and_transforms():
    ds = datasets.Spiral(train=True)
    x, t = datasets.get_spiral(train=True)
    assert len(ds) == 300
    xi, ti = ds[7]
    np.testing.assert_array_equal(xi, x[7])
    assert ti == t[7]
    scaled = datasets.Spiral(transform=lambda v: v * 2, target_transform=lambda v: v + 10)
    xi, ti = scaled[np.int64(7)]
    np.testing.assert_array_equal(xi, x[7] * 2)
    assert ti == t[7] + 10
    with pytest.raises(TypeError, match="index with one integer"):
        ds[[1, 2]]


def test_sine_data_is_the_books():
    x, y = datasets.get_sine()
    assert x.shape == y.shape == (100, 1)
    np.random.seed(0)
    x0 = np.random.rand(100, 1)
    np.testing.assert_array_equal(x, x0)
    noise = y - np.sin(2 * np.pi * x)
    assert noise.min() >= 0 and noise.max() <= 1
    x2, _ = datasets.get_sine(num_data=10, seed=None)
    assert x2.shape == (10, 1)


def test_sin_curve_is_next_value_pairs():
    ds = datasets.SinCurve(train=True)
    assert ds.data.shape == ds.label.shape == (999, 1)
    np.testing.assert_array_equal(ds.data[1:], ds.label[:-1])
    test = datasets.SinCurve(train=False)
    np.testing.assert_allclose(test.data[0, 0], 1.0)  # cos(0)


class Squares(Dataset):
    def prepare(self):
        self.data = np.arange(10, dtype=np.float64)
        self.label = self.data**2


class Unlabelled(Dataset):
    def prepare(self):
        self.data = np.arange(4)


def test_a_dataset_without_labels_yields_none():
    assert Unlabelled()[2] == (2, None)


def test_prepare_must_set_data():
    class Nothing(Dataset):
        pass

    with pytest.raises(ValueError, match=r"prepare\(\) did not set self.data"):
        Nothing()


# =============================================================================
# DataLoader
# =============================================================================
def epoch(loader):
    return [(x.copy(), t.copy()) for x, t in loader]


def test_one_pass_visits_every_example_once_in_full_batches_then_a_remainder():
    ds = Squares()
    loader = DataLoader(ds, batch_size=3)
    batches = epoch(loader)
    assert len(loader) == 4
    assert [len(x) for x, _ in batches] == [3, 3, 3, 1]
    xs = np.concatenate([x for x, _ in batches])
    ts = np.concatenate([t for _, t in batches])
    assert sorted(xs.tolist()) == list(range(10))
    np.testing.assert_array_equal(ts, xs**2)  # pairs stay together


def test_shuffling_is_seeded_and_changes_every_pass():
    np.random.seed(5)
    a = [x.tolist() for x, _ in epoch(DataLoader(Squares(), 4))]
    np.random.seed(5)
    loader = DataLoader(Squares(), 4)
    b = [x.tolist() for x, _ in epoch(loader)]
    assert a == b
    c = [x.tolist() for x, _ in epoch(loader)]  # the next pass reshuffles
    assert c != a
    assert sorted(v for batch in c for v in batch) == list(range(10))


def test_without_shuffle_the_order_is_the_datasets():
    loader = DataLoader(Squares(), 4, shuffle=False)
    assert [x.tolist() for x, _ in epoch(loader)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert epoch(loader)[0][0].tolist() == [0, 1, 2, 3]  # and again from the start


def test_transforms_apply_per_example_and_match_the_fast_path():
    plain = Squares()
    with_transform = Squares(transform=lambda v: v + 0.5)
    np.random.seed(1)
    a = epoch(DataLoader(plain, 4))
    np.random.seed(1)
    b = epoch(DataLoader(with_transform, 4))
    for (xa, ta), (xb, tb) in zip(a, b, strict=True):
        np.testing.assert_array_equal(xa + 0.5, xb)
        np.testing.assert_array_equal(ta, tb)


def test_next_and_bad_batch_sizes():
    loader = DataLoader(datasets.Spiral(), 100, shuffle=False)
    x, t = loader.next()
    assert x.shape == (100, 2)
    assert t.shape == (100,)
    for bad in (0, -1, 2.5):
        with pytest.raises(ValueError, match="batch_size must be a positive integer"):
            DataLoader(Squares(), bad)
