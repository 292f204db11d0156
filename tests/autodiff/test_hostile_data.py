"""Hostile inputs: data files that are planted, damaged or inconsistent, file names that leave
the data folder, and arguments that would give wrong numbers silently. Each must fail with a
message naming the operation, the argument, the shapes or the file."""

from __future__ import annotations

import gzip
import io
import os
import pickle
import re
import struct
import tarfile

import numpy as np
import pytest

import autodiff
import autodiff.functions as F
import autodiff.layers as L
from autodiff import DataLoader, datasets, transforms, utils
from autodiff.dataloaders import SeqDataLoader
from autodiff.datasets import CIFAR10, MNIST, Dataset, ImageNet


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    folder = tmp_path / "data"
    folder.mkdir()
    monkeypatch.setenv("AUTODIFF_DATA", str(folder))
    return folder


# =============================================================================
# CIFAR-10: no code from data
# =============================================================================
def _tarball(path, members):
    with tarfile.open(path, "w:gz") as archive:
        for name, raw in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(raw)
            archive.addfile(info, io.BytesIO(raw))


class _Planted:
    """Unpickling it runs ``os.system('touch CANARY')``."""

    def __init__(self, canary):
        self.canary = canary

    def __reduce__(self):
        return (os.system, (f"touch {self.canary}",))


def _python2_batch(data: np.ndarray, labels: list[int]) -> bytes:
    """A batch pickled as the official files are: Python 2's cPickle, protocol 2, keys and
    array bytes as Python 2 strings, the array rebuilt by numpy.core.multiarray._reconstruct."""

    def string(b: bytes) -> bytes:  # SHORT_BINSTRING or BINSTRING
        return b"U" + bytes([len(b)]) + b if len(b) < 256 else b"T" + struct.pack("<i", len(b)) + b

    def integer(n: int) -> bytes:  # BININT
        return b"J" + struct.pack("<i", n)

    dtype = b"cnumpy\ndtype\n" + string(b"u1") + b"K\x00K\x01\x87R"
    dtype += b"(K\x03" + string(b"|") + b"NNN" + integer(-1) + integer(-1) + b"K\x00tb"
    array = b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85" + string(b"b")
    array += b"\x87R(K\x01" + integer(data.shape[0]) + integer(data.shape[1]) + b"\x86"
    array += dtype + b"\x89" + string(data.tobytes()) + b"tb"
    out = b"\x80\x02}(" + string(b"batch_label") + string(b"training batch 1 of 5")
    out += string(b"labels") + b"](" + b"".join(integer(n) for n in labels) + b"e"
    out += string(b"data") + array
    out += string(b"filenames") + b"](" + string(b"a.png") * len(labels) + b"e"
    return out + b"u."


def _images(n, seed=0):
    return np.random.default_rng(seed).integers(0, 256, size=(n, 3072), dtype=np.uint8)


def test_the_python2_batch_helper_is_read_by_plain_pickle_as_the_official_files_are():
    data = _images(2)
    batch = pickle.loads(_python2_batch(data, [3, 4]), encoding="bytes")
    assert set(batch) == {b"batch_label", b"labels", b"data", b"filenames"}
    np.testing.assert_array_equal(batch[b"data"], data)


def test_cifar10_refuses_a_planted_pickle_and_runs_nothing(data_dir, tmp_path):
    canary = tmp_path / "canary"
    planted = pickle.dumps({b"data": _Planted(canary), b"labels": [0]}, protocol=2)
    _tarball(data_dir / "cifar-10-python.tar.gz", {"cifar-10-batches-py/test_batch": planted})
    with pytest.raises(ValueError) as info:
        CIFAR10(train=False)
    assert type(info.value) is ValueError
    message = str(info.value)
    assert "member 'cifar-10-batches-py/test_batch'" in message
    assert str(data_dir / "cifar-10-python.tar.gz") in message
    assert re.search(r"refused to load '(posix|os|nt)\.system'", message), message
    assert "only plain data and numpy arrays" in message
    assert not canary.exists()
    assert not (data_dir / "cifar-10-python.tar.gz.test.npz").exists()


@pytest.mark.parametrize(
    "planted",
    [
        pytest.param(lambda canary: pickle.dumps(_Planted(canary), protocol=0), id="protocol0"),
        pytest.param(lambda canary: pickle.dumps([_Planted(canary)]), id="default-protocol"),
        pytest.param(
            lambda canary: (
                b"cbuiltins\neval\n(V__import__('os').system('touch "
                + str(canary).encode()
                + b"')\ntR."
            ),
            id="eval",
        ),
    ],
)
def test_cifar10_refuses_code_in_any_protocol(data_dir, tmp_path, planted):
    canary = tmp_path / "canary"
    _tarball(data_dir / "cifar-10-python.tar.gz", {"test_batch": planted(canary)})
    with pytest.raises(ValueError, match=r"member 'test_batch' of .*refused to load"):
        CIFAR10(train=False)
    assert not canary.exists()


def test_cifar10_reads_batches_pickled_as_the_official_files_are(data_dir):
    data = _images(3)
    _tarball(
        data_dir / "cifar-10-python.tar.gz",
        {"cifar-10-batches-py/test_batch": _python2_batch(data, [0, 9, 4])},
    )
    ds = CIFAR10(train=False, transform=None)
    assert ds.data.shape == (3, 3, 32, 32) and ds.data.dtype == np.uint8
    np.testing.assert_array_equal(ds.data.reshape(3, -1), data)
    np.testing.assert_array_equal(ds.label, [0, 9, 4])
    assert ds.label.dtype == np.int64
    assert (data_dir / "cifar-10-python.tar.gz.test.npz").exists()


@pytest.mark.parametrize("protocol", [2, pickle.DEFAULT_PROTOCOL, 5])
def test_cifar10_reads_batches_pickled_by_python3_and_numpy(data_dir, protocol):
    batches = {}
    for i in range(1, 6):
        labels = list(np.arange(i, i + 2) % 10)  # numpy integers, pickled as numpy scalars
        batch = {b"data": _images(2, seed=i), b"labels": labels, "batch_label": f"{i}"}
        batches[f"cifar-10-batches-py/data_batch_{i}"] = pickle.dumps(batch, protocol=protocol)
    _tarball(data_dir / "cifar-10-python.tar.gz", batches)
    ds = CIFAR10(train=True, transform=None)
    assert ds.data.shape == (10, 3, 32, 32)
    np.testing.assert_array_equal(ds.data[8:].reshape(2, -1), _images(2, seed=5))
    np.testing.assert_array_equal(ds.label, [1, 2, 2, 3, 3, 4, 4, 5, 5, 6])


def test_cifar10_reads_the_binary_version(data_dir):
    data = _images(2)
    records = np.concatenate([np.array([[7], [1]], np.uint8), data], axis=1)
    _tarball(
        data_dir / "cifar-10-binary.tar.gz",
        {"cifar-10-batches-bin/test_batch.bin": records.tobytes()},
    )
    ds = CIFAR10(train=False, transform=None)
    np.testing.assert_array_equal(ds.data.reshape(2, -1), data)
    np.testing.assert_array_equal(ds.label, [7, 1])


def test_cifar10_without_either_archive_names_both(data_dir):
    with pytest.raises(FileNotFoundError) as info:
        CIFAR10(train=False)
    assert "cifar-10-python.tar.gz" in str(info.value)
    assert "cifar-10-binary.tar.gz" in str(info.value)


@pytest.mark.parametrize(
    ("members", "expected"),
    [
        ({"test_batch": pickle.dumps([1, 2])}, r"holds a list, not a CIFAR-10 batch"),
        ({"test_batch": b"\x80\x02}(U\x04data"}, r"not a readable pickle"),
        (
            {"test_batch": pickle.dumps({b"data": np.zeros((2, 3072), np.float64)})},
            r"'data' is an array of shape \(2, 3072\) and dtype float64",
        ),
        (
            {"test_batch": pickle.dumps({b"data": np.zeros((2, 100), np.uint8)})},
            r"'data' has shape \(2, 100\), not \(N, 3072\)",
        ),
        (
            {"test_batch": pickle.dumps({b"data": _images(2), b"labels": [1, 2, 3]})},
            r"'labels' should be 2 integers, one per image of 'data' \(2, 3072\)",
        ),
        (
            {"test_batch": pickle.dumps({b"data": _images(2), b"labels": [1, 12]})},
            r"labels from 1 to 12",
        ),
        (
            {"a/test_batch": pickle.dumps([]), "b/test_batch": pickle.dumps([])},
            r"member 'b/test_batch' .*holds 'test_batch' twice",
        ),
        ({"data_batch_1": pickle.dumps([])}, r"lacks \['test_batch'\]"),
    ],
)
def test_cifar10_names_the_member_of_a_damaged_archive(data_dir, members, expected):
    _tarball(data_dir / "cifar-10-python.tar.gz", members)
    with pytest.raises(ValueError, match=expected) as info:
        CIFAR10(train=False)
    assert str(data_dir / "cifar-10-python.tar.gz") in str(info.value)


def test_cifar10_refuses_a_link_or_an_oversized_member(data_dir, monkeypatch):
    with tarfile.open(data_dir / "cifar-10-python.tar.gz", "w:gz") as archive:
        link = tarfile.TarInfo("cifar-10-batches-py/test_batch")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        archive.addfile(link)
    with pytest.raises(ValueError, match=r"member 'cifar-10-batches-py/test_batch' .*not a plain"):
        CIFAR10(train=False)
    _tarball(data_dir / "cifar-10-python.tar.gz", {"test_batch": pickle.dumps(bytes(100))})
    monkeypatch.setattr(datasets, "_MAX_BATCH_BYTES", 10)
    with pytest.raises(
        ValueError, match=r"member 'test_batch' .*: \d+ bytes, not a CIFAR-10 batch"
    ):
        CIFAR10(train=False)


def test_cifar10_names_an_archive_that_is_not_a_tarball(data_dir):
    (data_dir / "cifar-10-python.tar.gz").write_bytes(b"not a tarball")
    with pytest.raises(ValueError, match=r"cifar-10-python\.tar\.gz' is not a readable .tar.gz"):
        CIFAR10(train=False)


def test_cifar10_names_a_binary_batch_of_partial_records(data_dir):
    _tarball(data_dir / "cifar-10-binary.tar.gz", {"test_batch.bin": b"\0" * 3074})
    with pytest.raises(ValueError, match=r"'test_batch\.bin' .*3074 bytes, not a whole number"):
        CIFAR10(train=False)


@pytest.mark.parametrize(
    ("write", "expected"),
    [
        (lambda p: p.write_bytes(b"garbage"), r"is not a readable \.npz"),
        (lambda p: p.write_bytes(pickle.dumps({"data": 1})), r"is not a readable \.npz"),
        (lambda p: np.save(p, np.zeros(3)) or os.replace(f"{p}.npy", p), r"one array, not an"),
        (lambda p: np.savez(p, images=np.zeros(1)), r"holds \['images'\], not the arrays"),
        (
            lambda p: np.savez(p, data=np.zeros((2, 3, 32, 32)), label=np.zeros(2, int)),
            r"'data' of shape \(2, 3, 32, 32\) and dtype float64",
        ),
        (
            lambda p: np.savez(p, data=np.zeros((2, 3, 32, 32), np.uint8), label=np.zeros(3, int)),
            r"'label' of shape \(3,\) and dtype int64, not 2 integers",
        ),
        (
            lambda p: np.savez(p, data=np.zeros((1, 3, 32, 32), np.uint8), label=np.array([None])),
            r"is damaged",
        ),
    ],
)
def test_a_bad_cifar10_cache_is_named_not_a_key_error(data_dir, write, expected):
    cache = data_dir / "cifar-10-python.tar.gz.test.npz"
    write(cache)
    with pytest.raises(ValueError, match=expected) as info:
        CIFAR10(train=False)
    assert str(cache) in str(info.value) and "delete it" in str(info.value)


# =============================================================================
# MNIST: damaged and inconsistent files
# =============================================================================
def _gz(path, raw):
    with gzip.open(path, "wb") as f:
        f.write(raw)


def _mnist_images(n, extra=b""):
    return struct.pack(">IIII", 0x803, n, 28, 28) + bytes(n * 784) + extra


def _mnist_labels(n, values=None):
    values = bytes(n) if values is None else bytes(values)
    return struct.pack(">II", 0x801, n) + values


IMAGES, LABELS = "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"


def test_mnist_with_5_labels_for_3_images_names_both_files_and_counts(data_dir):
    _gz(data_dir / IMAGES, _mnist_images(3))
    _gz(data_dir / LABELS, _mnist_labels(5))
    with pytest.raises(ValueError) as info:
        MNIST(train=False)
    message = str(info.value)
    assert f"{data_dir / IMAGES}' holds 3 images" in message
    assert f"{data_dir / LABELS}' holds 5 labels" in message


@pytest.mark.parametrize(
    ("images", "expected"),
    [
        (lambda p: p.write_bytes(_mnist_images(2)), r"is not a whole gzip file"),
        (
            lambda p: p.write_bytes(gzip.compress(_mnist_images(2))[:-20]),
            r"is not a whole gzip file",
        ),
        (lambda p: _gz(p, _mnist_images(2)[:10]), r"holds 10 bytes, fewer than its 16-byte header"),
        (
            lambda p: _gz(p, _mnist_images(2)[:-100]),
            r"announces 2 images of 28x28 \(1568 bytes\) but holds 1468 bytes .*not a whole",
        ),
        (
            lambda p: _gz(p, _mnist_images(2, extra=bytes(784))),
            r"announces 2 images of 28x28 .* holds 2352 bytes .*\(3 whole images",
        ),
        (lambda p: _gz(p, _mnist_labels(100)), r"not an MNIST file of images of 28x28"),
        (
            lambda p: _gz(p, struct.pack(">IIII", 0x803, 1, 32, 32) + bytes(1024)),
            r"sizes \(32, 32\), expected magic 0x803 and sizes \(28, 28\)",
        ),
    ],
)
def test_damaged_mnist_images_name_the_file(data_dir, images, expected):
    images(data_dir / IMAGES)
    _gz(data_dir / LABELS, _mnist_labels(2))
    with pytest.raises(ValueError, match=expected) as info:
        MNIST(train=False)
    assert str(data_dir / IMAGES) in str(info.value)


def test_mnist_labels_out_of_range_name_the_file(data_dir):
    _gz(data_dir / IMAGES, _mnist_images(2))
    _gz(data_dir / LABELS, _mnist_labels(2, [3, 200]))
    with pytest.raises(ValueError, match=r"labels-idx1-ubyte\.gz' holds labels from 3 to 200"):
        MNIST(train=False)


# =============================================================================
# ImageNet's labels: a literal, never code
# =============================================================================
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("__import__('os').system('touch CANARY')", r"is not a Python dict literal"),
        ("[1, 2]", r"holds a list, not a dict of class ids"),
        ("{'a': 1}", r"holds a dict, not a dict of class ids \(int\) to names \(str\)"),
    ],
)
def test_imagenet_labels_are_a_literal_and_never_run(data_dir, tmp_path, text, expected):
    canary = tmp_path / "CANARY"
    path = data_dir / "imagenet1000_clsidx_to_labels.txt"
    path.write_text(text.replace("CANARY", str(canary)))
    with pytest.raises(ValueError, match=expected) as info:
        ImageNet.labels()
    assert str(path) in str(info.value)
    assert not canary.exists()


# =============================================================================
# get_file stays inside the data folder
# =============================================================================
@pytest.mark.parametrize(
    ("url", "file_name", "expected"),
    [
        ("https://example.com/a/..", None, r"URL 'https://example.com/a/\.\.' is '\.\.', a folder"),
        ("https://example.com/a/.", None, r"is '\.', a folder, not a file"),
        ("https://example.com/a/", None, r"URL 'https://example.com/a/' is '', empty"),
        ("https://example.com/", "/etc/passwd", r"file_name .* is '/etc/passwd', a path"),
        ("https://example.com/", "../x.bin", r"is '\.\./x\.bin', a path, not a file name"),
        ("https://example.com/", "..\\x.bin", r"a path, not a file name"),
        ("https://example.com/", "..", r"file_name .* is '\.\.', a folder"),
        ("https://example.com/", "", r"file_name .* is '', empty"),
        ("https://example.com/x\0.bin", None, r"a NUL character"),
    ],
)
def test_get_file_refuses_names_that_leave_the_data_folder(data_dir, url, file_name, expected):
    (data_dir.parent / "x.bin").write_bytes(b"outside")
    with pytest.raises(ValueError, match=expected) as info:
        utils.get_file(url, file_name)
    assert repr(str(data_dir)) in str(info.value)
    assert "get_file" in str(info.value)


def test_get_file_refuses_a_folder_of_the_files_name(data_dir):
    (data_dir / "x.bin").mkdir()
    with pytest.raises(FileNotFoundError, match=r"x\.bin' is a folder or a device, not a file"):
        utils.get_file("https://example.com/x.bin")


# =============================================================================
# No silent wrong data: BatchNorm, SeqDataLoader, DataLoader, Normalize
# =============================================================================
@pytest.mark.parametrize("shape", [(0, 3), (0, 3, 4, 4), (2, 3, 0, 4)])
def test_batchnorm_refuses_an_empty_batch_in_training_mode(shape):
    class Net(L.Layer):
        def __init__(self):
            super().__init__()
            self.bn1 = L.BatchNorm()

    net = Net()
    net.bn1(np.ones((2, 3) if len(shape) == 2 else (2, 3, 4, 4), np.float32))  # statistics exist
    before = net.bn1.avg_mean.data.copy(), net.bn1.avg_var.data.copy()
    with pytest.raises(ValueError) as info:
        net.bn1(np.ones(shape, np.float32))
    message = str(info.value)
    assert "BatchNorm layer 'bn1'" in message and f"empty batch of shape {shape}" in message
    assert "NaN" in message
    np.testing.assert_array_equal(net.bn1.avg_mean.data, before[0])
    np.testing.assert_array_equal(net.bn1.avg_var.data, before[1])
    assert np.all(np.isfinite(net.bn1.avg_var.data))


def test_batchnorm_on_an_empty_batch_in_test_mode_gives_an_empty_result():
    bn = L.BatchNorm()
    bn(np.ones((2, 3), np.float32))
    with autodiff.test_mode():
        assert bn(np.ones((0, 3), np.float32)).shape == (0, 3)
    with pytest.raises(ValueError, match=r"BatchNorm layer: an empty batch of shape \(0, 3\)"):
        L.BatchNorm()(np.ones((0, 3), np.float32))


def test_batch_norm_called_directly_refuses_an_empty_batch_in_training_mode():
    mean, var = np.zeros(3), np.ones(3)
    gamma, beta = np.ones(3), np.zeros(3)
    with pytest.raises(ValueError, match=r"batch_norm: an empty batch of shape \(0, 3\)"):
        F.batch_norm(np.ones((0, 3)), gamma, beta, mean, var)
    np.testing.assert_array_equal(mean, np.zeros(3))
    np.testing.assert_array_equal(var, np.ones(3))
    with autodiff.test_mode():
        assert F.batch_norm(np.ones((0, 3)), gamma, beta, mean, var).shape == (0, 3)


class _Sequence(Dataset):
    def prepare(self):
        self.data = np.arange(3.0)[:, None]
        self.label = np.arange(1.0, 4.0)[:, None]


@pytest.mark.parametrize("batch_size", [4, 100])
def test_seq_loader_refuses_a_batch_size_larger_than_the_data(batch_size):
    with pytest.raises(ValueError) as info:
        SeqDataLoader(_Sequence(), batch_size)
    message = str(info.value)
    assert f"SeqDataLoader: batch_size {batch_size} is larger than the sequence" in message
    assert "(3 elements of the _Sequence)" in message and "at most 3" in message


def test_seq_loader_with_batch_size_equal_to_the_data_takes_each_element_once():
    x, t = next(SeqDataLoader(_Sequence(), 3))
    np.testing.assert_array_equal(x[:, 0], [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(t[:, 0], [1.0, 2.0, 3.0])


@pytest.mark.parametrize("loader", [SeqDataLoader, DataLoader])
@pytest.mark.parametrize(
    "batch_size", [True, False, 2.0, 2.5, float("nan"), float("inf"), 0, -1, "2", None]
)
def test_loaders_refuse_a_batch_size_that_is_not_a_positive_int(loader, batch_size):
    with pytest.raises(ValueError) as info:
        loader(_Sequence(), batch_size)
    message = str(info.value)
    assert f"{loader.__name__}: batch_size must be a positive integer, not {batch_size!r}" in (
        message
    )
    assert "holds 3 examples" in message


def test_loaders_take_numpy_integers():
    assert SeqDataLoader(_Sequence(), np.int64(2)).batch_size == 2
    assert DataLoader(_Sequence(), np.int32(2)).batch_size == 2


@pytest.mark.parametrize(
    ("transform", "image", "expected"),
    [
        (
            lambda: transforms.Normalize(mean=[0.5, 0.5, 0.5]),
            np.zeros((1, 28, 28)),
            r"Normalize: mean has 3 values \(one per channel\) but the array of shape "
            r"\(1, 28, 28\) has 1 channels",
        ),
        (
            lambda: transforms.Normalize(std=[1.0, 2.0]),
            np.zeros((3, 4, 4)),
            r"Normalize: std has 2 values .* shape \(3, 4, 4\) has 3 channels",
        ),
        (
            lambda: transforms.Normalize(mean=[1.0, 2.0, 3.0]),
            np.zeros(784),
            r"mean has 3 values .* shape \(784,\) has 784 channels",
        ),
        (
            lambda: transforms.Normalize(mean=[1.0, 2.0]),
            np.zeros(()),
            r"mean has 2 values .* shape \(\) has no channels",
        ),
    ],
)
def test_normalize_refuses_values_that_do_not_fit_the_channels(transform, image, expected):
    with pytest.raises(ValueError, match=expected):
        transform()(image)


@pytest.mark.parametrize(
    ("kwargs", "error", "expected"),
    [
        ({"std": 0}, ValueError, r"Normalize: std 0 holds a zero"),
        ({"std": [1.0, 0.0, 1.0]}, ValueError, r"Normalize: std \[1\.0, 0\.0, 1\.0\] holds a zero"),
        ({"mean": float("nan")}, ValueError, r"Normalize: mean must be a finite number"),
        ({"mean": [[0.5], [0.5]]}, ValueError, r"mean must be a finite .*shape \(2, 1\)"),
        ({"mean": []}, ValueError, r"mean must be a finite .*shape \(0,\)"),
        ({"std": "a"}, TypeError, r"Normalize: std must be a number or a sequence of numbers"),
    ],
)
def test_normalize_refuses_bad_mean_and_std(kwargs, error, expected):
    with pytest.raises(error, match=expected):
        transforms.Normalize(**kwargs)


def test_normalize_per_channel_and_single_values():
    image = np.arange(12, dtype=np.uint8).reshape(3, 2, 2)
    y = transforms.Normalize(mean=[0.5, 0.5, 0.5], std=[0.5, 0.5, 0.5])(image)
    np.testing.assert_allclose(y, (image - 0.5) / 0.5)  # the values are not cast to uint8
    gray = np.ones((1, 2, 2), np.float32)
    for mean in ([0.5], (0.5,), np.array([0.5]), 0.5):
        y = transforms.Normalize(mean=mean)(gray)
        assert y.shape == (1, 2, 2) and y.dtype == np.float32
        np.testing.assert_allclose(y, 0.5)


# =============================================================================
# Convolution and pooling: the op, the argument and the shapes
# =============================================================================
def _x(shape=(2, 3, 5, 5)):
    return np.random.default_rng(0).standard_normal(shape)


# each op called with (x, kernel_size, stride, pad); conv2d and deconv2d take the kernel from W
CONV_OPS = {
    "conv2d": lambda x, k, s, p: F.conv2d(x, np.ones((4, 3, 3, 3)), stride=s, pad=p),
    "conv2d_simple": lambda x, k, s, p: F.conv2d_simple(x, np.ones((4, 3, 3, 3)), stride=s, pad=p),
    "deconv2d": lambda x, k, s, p: F.deconv2d(x, np.ones((3, 4, 3, 3)), stride=s, pad=p),
    "pooling": lambda x, k, s, p: F.pooling(x, k, s, p),
    "pooling_simple": lambda x, k, s, p: F.pooling_simple(x, k, s, p),
    "average_pooling": lambda x, k, s, p: F.average_pooling(x, k, s, p),
    "im2col": lambda x, k, s, p: F.im2col(x, k, s, p),
    "col2im": lambda x, k, s, p: F.col2im(np.ones((32, 12)), x.shape, k, s, p),
    "Conv2d layer": lambda x, k, s, p: L.Conv2d(4, k, s, p)(x),
    "Deconv2d layer": lambda x, k, s, p: L.Deconv2d(4, k, s, p)(x),
}
TAKE_A_KERNEL = [op for op in CONV_OPS if op not in ("conv2d", "conv2d_simple", "deconv2d")]

BAD_SIZES = [
    (0, ValueError, "must be positive, got 0"),
    (-2, ValueError, "must be positive, got -2"),
    ((2, 0), ValueError, r"must be positive, got \(2, 0\)"),
    (2.5, TypeError, r"must be an int or a pair of ints \(height, width\), not 2\.5 \(float\)"),
    ((1.5, 1.5), TypeError, r"not \(1\.5, 1\.5\) \(tuple\)"),
    (2.0, TypeError, r"not 2\.0 \(float\)"),
    (True, TypeError, r"not True \(bool\)"),
    ((1, 2, 3), TypeError, r"not \(1, 2, 3\) \(tuple\)"),
    ("2", TypeError, r"not '2' \(str\)"),
    (None, TypeError, r"not None \(NoneType\)"),
]
BAD_PADS = [
    (-1, ValueError, "must be non-negative, got -1"),
    ((0, -1), ValueError, r"must be non-negative, got \(0, -1\)"),
    (1.5, TypeError, r"not 1\.5 \(float\)"),
    (False, TypeError, r"not False \(bool\)"),
]


@pytest.mark.parametrize("op", list(CONV_OPS))
@pytest.mark.parametrize(("value", "error", "expected"), BAD_SIZES)
def test_a_bad_stride_is_named_with_the_op(op, value, error, expected):
    with pytest.raises(error, match=rf"^{op}: stride .*{expected}"):
        CONV_OPS[op](_x(), 2, value, 0)


@pytest.mark.parametrize("op", list(CONV_OPS))
@pytest.mark.parametrize(("value", "error", "expected"), BAD_PADS)
def test_a_bad_pad_is_named_with_the_op(op, value, error, expected):
    with pytest.raises(error, match=rf"^{op}: pad .*{expected}"):
        CONV_OPS[op](_x(), 2, 1, value)


@pytest.mark.parametrize("op", TAKE_A_KERNEL)
@pytest.mark.parametrize(("value", "error", "expected"), BAD_SIZES)
def test_a_bad_kernel_size_is_named_with_the_op(op, value, error, expected):
    with pytest.raises(error, match=rf"^{op}: kernel_size .*{expected}"):
        CONV_OPS[op](_x(), value, 1, 0)


@pytest.mark.parametrize("op", list(CONV_OPS))
def test_numpy_integers_are_sizes(op):
    y = CONV_OPS[op](_x(), np.int64(2), (np.int32(1), 1), np.int64(0))
    assert y.size > 0


@pytest.mark.parametrize("op", [op for op in CONV_OPS if op != "col2im"])
@pytest.mark.parametrize("shape", [(0, 3, 5, 5), (2, 3, 0, 5), (2, 3, 5, 0)])
def test_an_empty_batch_is_named_with_the_op_and_its_shape(op, shape):
    with pytest.raises(ValueError, match=rf"^{op}: .*{re.escape(str(shape))} .*empty"):
        CONV_OPS[op](_x(shape), 2, 1, 0)


@pytest.mark.parametrize("op", [op for op in CONV_OPS if op != "col2im"])
def test_an_input_that_is_not_4d_is_named_with_the_op_and_its_shape(op):
    with pytest.raises(ValueError, match=rf"^{op}: expected .*\(N, C, H, W\), got \(3, 5, 5\)"):
        CONV_OPS[op](_x((3, 5, 5)), 2, 1, 0)


@pytest.mark.parametrize("op", ["pooling", "average_pooling", "im2col", "Conv2d layer"])
def test_a_kernel_larger_than_the_padded_input_is_named_with_the_shapes(op):
    name = op.split()[0].lower()
    with pytest.raises(
        ValueError,
        match=rf"^{name}: a kernel of \(8, 8\) does not fit an input of \(5, 5\) with padding "
        r"\(1, 1\) \(the input's shape is \(2, 3, 5, 5\)\)",
    ):
        CONV_OPS[op](_x(), 8, 1, 1)


def test_col2im_names_a_bad_image_shape_and_windows_of_the_wrong_shape():
    with pytest.raises(ValueError, match=r"^col2im: input_shape must be .* not \(1, 1, 3\)"):
        F.col2im(np.ones((4, 4)), (1, 1, 3), 2)
    with pytest.raises(ValueError, match=r"^col2im: input_shape must be .* not \(1, 0, 3, 3\)"):
        F.col2im(np.ones((4, 4)), (1, 0, 3, 3), 2)
    with pytest.raises(
        ValueError,
        match=r"^col2im: an image of shape \(1, 1, 3, 3\) with kernel \(2, 2\), stride \(1, 1\) "
        r"and padding \(0, 0\) has windows \(N\*OH\*OW, C\*KH\*KW\) = \(4, 4\), got \(5, 5\)",
    ):
        F.col2im(np.ones((5, 5)), (1, 1, 3, 3), 2)


def test_conv_weights_and_biases_that_do_not_fit_are_named():
    x = _x()
    with pytest.raises(ValueError, match=r"^conv2d: .*no empty axis, got \(4, 3, 0, 3\)"):
        F.conv2d(x, np.ones((4, 3, 0, 3)))
    with pytest.raises(ValueError, match=r"^conv2d: the bias must have shape \(4,\).* got \(1,\)"):
        F.conv2d(x, np.ones((4, 3, 3, 3)), np.ones(1))
    with pytest.raises(ValueError, match=r"^deconv2d: the bias must have shape \(2,\).*\(3, 2, 3"):
        F.deconv2d(x, np.ones((3, 2, 3, 3)), np.ones(3))
    with pytest.raises(ValueError, match=r"^conv2d_simple: the bias must have shape \(4,\)"):
        F.conv2d_simple(x, np.ones((4, 3, 3, 3)), np.ones(2))


def test_deconv2d_names_a_padding_that_leaves_no_output_and_a_bad_outsize():
    with pytest.raises(
        ValueError,
        match=r"^deconv2d: an input of shape \(2, 3, 5, 5\) with kernel \(3, 3\), stride \(1, 1\) "
        r"and padding \(5, 5\) gives an output of \(-3, -3\)",
    ):
        F.deconv2d(_x(), np.ones((3, 2, 3, 3)), pad=5)
    with pytest.raises(TypeError, match=r"^deconv2d: outsize must be an int or a pair"):
        F.deconv2d(_x(), np.ones((3, 2, 3, 3)), outsize=(7.5, 7))
    with pytest.raises(ValueError, match=r"^deconv2d: outsize must be positive"):
        F.deconv2d(_x(), np.ones((3, 2, 3, 3)), outsize=0)


@pytest.mark.parametrize("cls", [L.Conv2d, L.Deconv2d])
@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"out_channels": 0}, "out_channels must be a positive int, not 0"),
        ({"out_channels": True}, "out_channels must be a positive int, not True"),
        ({"out_channels": 2.0}, r"out_channels must be a positive int, not 2\.0"),
        ({"in_channels": 0}, "in_channels must be a positive int, not 0"),
    ],
)
def test_conv_layers_name_a_bad_channel_count(cls, kwargs, expected):
    with pytest.raises(ValueError, match=rf"^{cls.__name__} layer: {expected}"):
        cls(**{"out_channels": 4, "kernel_size": 3, **kwargs})


def test_pair_takes_ints_only():
    assert utils.pair(np.int64(3)) == (3, 3)
    for bad in (2.5, (1.5, 1.5), True, (1, True), (1, 2, 3)):
        with pytest.raises(ValueError, match=r"^pair: expected an int or a pair of ints"):
            utils.pair(bad)


@pytest.mark.parametrize(
    "write",
    [
        lambda p: p.write_bytes(b"not a zip"),
        lambda p: p.write_bytes(pickle.dumps({"l0/W": np.zeros(2)})),
        lambda p: np.save(p, np.zeros(3)) or os.replace(f"{p}.npy", p),
        lambda p: np.savez(p, **{"W": np.array([None]), "b": np.zeros(2)}),
    ],
)
def test_a_bad_weights_file_is_named(tmp_path, write):
    path = tmp_path / "weights.npz"
    write(path)
    with pytest.raises(ValueError, match=r"^load_weights: .* is not a readable \.npz") as info:
        L.Linear(2, in_size=3).load_weights(path)
    assert str(path) in str(info.value)
