"""Transforms, and the datasets read from local files: get_file never downloads."""

from __future__ import annotations

import gzip
import importlib.util
import struct

import numpy as np
import pytest

from autodiff import DataLoader, transforms, utils
from autodiff.datasets import CIFAR10, MNIST, ImageNet


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTODIFF_DATA", str(tmp_path))
    return tmp_path


# =============================================================================
# Transforms
# =============================================================================
def test_array_transforms():
    a = np.arange(12, dtype=np.uint8).reshape(3, 2, 2)
    assert transforms.Flatten()(a).shape == (12,)
    assert transforms.ToFloat()(a).dtype == np.float32
    assert transforms.AsType(np.float64)(a).dtype == np.float64
    assert transforms.ToInt()(a.astype(np.float32)).dtype == np.int64
    np.testing.assert_allclose(transforms.Normalize(2.0, 4.0)(a.astype(float)), (a - 2.0) / 4.0)
    per_channel = transforms.Normalize(mean=[0.0, 1.0, 2.0], std=[1.0, 2.0, 4.0])(a.astype(float))
    np.testing.assert_allclose(per_channel[2], (a[2] - 2.0) / 4.0)
    both = transforms.Compose([transforms.Flatten(), transforms.ToFloat()])
    assert both(a).shape == (12,) and both(a).dtype == np.float32
    assert transforms.Compose()(a) is a
    assert transforms.ToArray()(a) is a


@pytest.mark.skipif(importlib.util.find_spec("PIL") is not None, reason="Pillow is installed")
def test_image_transforms_say_they_need_pillow():
    with pytest.raises(ImportError, match="install Pillow"):
        transforms.ToPIL()(np.zeros((3, 2, 2), dtype=np.uint8))


# =============================================================================
# get_file and the datasets on disk
# =============================================================================
def test_get_file_finds_a_local_file_and_never_downloads(data_dir):
    (data_dir / "x.bin").write_bytes(b"1")
    assert utils.get_file("https://example.com/a/x.bin") == str(data_dir / "x.bin")
    assert utils.get_file("https://example.com/y", file_name="x.bin") == str(data_dir / "x.bin")
    with pytest.raises(FileNotFoundError) as info:
        utils.get_file("https://example.com/a/missing.gz")
    message = str(info.value)
    assert "'missing.gz'" in message and "https://example.com/a/missing.gz" in message
    assert str(data_dir) in message and "AUTODIFF_DATA" in message


def test_get_file_defaults_to_dezeros_cache(monkeypatch):
    monkeypatch.delenv("AUTODIFF_DATA", raising=False)
    assert utils.cache_dir.endswith(".dezero")
    with pytest.raises(FileNotFoundError, match=r"\.dezero"):
        utils.get_file("https://example.com/surely-not-there-3f9a.npz")


def _write_mnist(folder, prefix, n):
    images = np.random.randint(0, 256, size=(n, 28, 28), dtype=np.uint8)
    labels = np.random.randint(0, 10, size=n, dtype=np.uint8)
    with gzip.open(folder / f"{prefix}-images-idx3-ubyte.gz", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28) + images.tobytes())
    with gzip.open(folder / f"{prefix}-labels-idx1-ubyte.gz", "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + labels.tobytes())
    return images, labels


def test_mnist_reads_the_local_files(data_dir):
    images, labels = _write_mnist(data_dir, "t10k", 5)
    ds = MNIST(train=False)
    assert ds.data.shape == (5, 1, 28, 28) and len(ds) == 5
    x, t = ds[2]
    assert x.shape == (784,) and x.dtype == np.float32
    np.testing.assert_allclose(x, images[2].ravel() / 255.0, rtol=1e-6)
    assert t == labels[2]
    x, _ = next(iter(DataLoader(ds, 5, shuffle=False)))
    assert x.shape == (5, 784)
    raw = MNIST(train=False, transform=None)
    assert raw[0][0].shape == (1, 28, 28)
    assert MNIST.labels()[3] == "3"


def test_mnist_without_its_files_names_them(data_dir):
    with pytest.raises(FileNotFoundError, match=r"train-images-idx3-ubyte\.gz"):
        MNIST(train=True)


def test_cifar10_reads_the_npz_cache(data_dir):
    data = np.random.randint(0, 256, size=(4, 3, 32, 32)).astype(np.uint8)
    label = np.array([0, 1, 2, 3])
    np.savez(data_dir / "cifar-10-python.tar.gz.test.npz", data=data, label=label)
    ds = CIFAR10(train=False)
    x, t = ds[1]
    assert x.shape == (3, 32, 32) and x.dtype == np.float32
    np.testing.assert_allclose(x, (data[1] - 0.5) / 0.5)
    assert t == 1
    assert CIFAR10.labels()[0] == "airplane"
    with pytest.raises(FileNotFoundError, match=r"cifar-10-python\.tar\.gz"):
        CIFAR10(train=True)


def test_imagenet_has_only_its_labels(data_dir):
    with pytest.raises(NotImplementedError, match="labels"):
        ImageNet()
    (data_dir / "imagenet1000_clsidx_to_labels.txt").write_text("{0: 'tench', 1: 'goldfish'}")
    assert ImageNet.labels() == {0: "tench", 1: "goldfish"}
