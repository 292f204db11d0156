"""Datasets, named as in DeZero's ``dezero/datasets.py``: the toy data of the examples,
generated in memory, and MNIST, CIFAR-10 and ImageNet's labels read from local files
(:func:`autodiff.utils.get_file`: nothing is downloaded).

 Like DeZero, :func:`get_spiral` and
:func:`get_sine` seed numpy's global random generator, so a program that builds its model
after loading the data (the book's programs do) prints the book's numbers.
"""

from __future__ import annotations

import gzip
import os
import pickle
import tarfile
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from autodiff.transforms import Compose, Flatten, Normalize, ToFloat
from autodiff.utils import _data_dir, get_file

__all__ = [
    "CIFAR10",
    "MNIST",
    "Dataset",
    "ImageNet",
    "SinCurve",
    "Spiral",
    "get_sine",
    "get_spiral",
]


class Dataset:
    """Base class: ``prepare()`` fills ``self.data`` (and ``self.label``, or leaves it None).

    ``dataset[i]`` is ``(transform(data[i]), target_transform(label[i]))``.
    """

    def __init__(
        self,
        train: bool = True,
        transform: Callable[[Any], Any] | None = None,
        target_transform: Callable[[Any], Any] | None = None,
    ) -> None:
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        self.data: Any = None
        self.label: Any = None
        self.prepare()
        if self.data is None:
            raise ValueError(f"{type(self).__name__}.prepare() did not set self.data")

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        if not isinstance(index, int | np.integer):
            raise TypeError(
                f"{type(self).__name__}: index with one integer, not {type(index).__name__}; "
                "use a DataLoader for batches"
            )
        x = self.data[index]
        if self.transform is not None:
            x = self.transform(x)
        if self.label is None:
            return x, None
        t = self.label[index]
        if self.target_transform is not None:
            t = self.target_transform(t)
        return x, t

    def __len__(self) -> int:
        return len(self.data)

    def prepare(self) -> None:
        """Fill ``self.data`` and ``self.label``; subclasses override this."""


# =============================================================================
# Spiral: three interleaved arms, the book's classification toy
# =============================================================================
def get_spiral(train: bool = True) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
    """300 points in 2-D on three spiral arms (100 each), shuffled; labels 0, 1, 2.

    Seeds numpy's global generator with 1984 (train) or 2020 (test), as DeZero does.
    """
    np.random.seed(1984 if train else 2020)
    num_data, num_class, input_dim = 100, 3, 2
    x = np.zeros((num_class * num_data, input_dim), dtype=np.float32)
    t = np.zeros(num_class * num_data, dtype=np.int64)
    for j in range(num_class):
        for i in range(num_data):
            rate = i / num_data
            radius = 1.0 * rate
            # One randn() per point, in this order, to reproduce DeZero's data exactly.
            theta = j * 4.0 + 4.0 * rate + np.random.randn() * 0.2
            ix = num_data * j + i
            x[ix] = (radius * np.sin(theta), radius * np.cos(theta))
            t[ix] = j
    order = np.random.permutation(num_data * num_class)
    return x[order], t[order]


class Spiral(Dataset):
    """:func:`get_spiral` as a Dataset."""

    def prepare(self) -> None:
        self.data, self.label = get_spiral(self.train)


# =============================================================================
# Sine toy data
# =============================================================================
def get_sine(num_data: int = 100, seed: int | None = 0) -> tuple[NDArray, NDArray]:
    """The book's regression toy (steps 43-45): ``x ~ U(0, 1)``, ``y = sin(2 pi x) + U(0, 1)``.

    Both of shape ``(num_data, 1)``, float64. Seeds numpy's global generator with ``seed``
    first, unless ``seed`` is None.
    """
    if seed is not None:
        np.random.seed(seed)
    x = np.random.rand(num_data, 1)
    y = np.sin(2 * np.pi * x) + np.random.rand(num_data, 1)
    return x, y


class SinCurve(Dataset):
    """A noisy sine sampled at 1000 points on ``[0, 2 pi]``, as next-value pairs
    (``data[i] = y[i]``, ``label[i] = y[i + 1]``), for sequence models. The test split is a
    clean cosine."""

    def prepare(self) -> None:
        num_data = 1000
        x = np.linspace(0, 2 * np.pi, num_data)
        noise = np.random.uniform(-0.05, 0.05, size=x.shape)
        y = np.sin(x) + noise if self.train else np.cos(x)
        y = y.astype(np.float64)
        self.data = y[:-1][:, np.newaxis]
        self.label = y[1:][:, np.newaxis]


# =============================================================================
# Image datasets from local files
# =============================================================================
_DEFAULT = object()  # "DeZero's default transform", told apart from an explicit None


class _WithDefaultTransform(Dataset):
    """A dataset whose images get ``default_transform()`` unless a transform is given (None
    included: the raw data), as DeZero's MNIST and CIFAR10."""

    def __init__(
        self,
        train: bool = True,
        transform: Any = _DEFAULT,
        target_transform: Callable[[Any], Any] | None = None,
    ) -> None:
        if transform is _DEFAULT:
            transform = self.default_transform()
        super().__init__(train, transform, target_transform)

    @staticmethod
    def default_transform() -> Any:
        raise NotImplementedError


class MNIST(_WithDefaultTransform):
    """The MNIST digits: ``data`` (N, 1, 28, 28) uint8, ``label`` (N,) uint8.

    Reads the four files of http://yann.lecun.com/exdb/mnist/ (``train-images-idx3-ubyte.gz``
    ...) from the data folder (see :func:`autodiff.utils.get_file`). The default transform, as
    DeZero's, flattens an image and scales it to [0, 1] float32.
    """

    url = "http://yann.lecun.com/exdb/mnist/"
    files: ClassVar[dict[bool, tuple[str, str]]] = {
        True: ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
        False: ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
    }

    @staticmethod
    def default_transform() -> Compose:
        return Compose([Flatten(), ToFloat(), Normalize(0.0, 255.0)])

    def prepare(self) -> None:
        images, labels = self.files[bool(self.train)]
        with gzip.open(get_file(self.url + images), "rb") as f:
            data = np.frombuffer(f.read(), np.uint8, offset=16)
        self.data = data.reshape(-1, 1, 28, 28)
        with gzip.open(get_file(self.url + labels), "rb") as f:
            self.label = np.frombuffer(f.read(), np.uint8, offset=8)

    @staticmethod
    def labels() -> dict[int, str]:
        return {i: str(i) for i in range(10)}


class CIFAR10(_WithDefaultTransform):
    """CIFAR-10: ``data`` (N, 3, 32, 32), ``label`` (N,) int64.

    Reads ``cifar-10-python.tar.gz`` (https://www.cs.toronto.edu/~kriz/) from the data folder,
    or the ``.train.npz`` / ``.test.npz`` cache beside it that DeZero (and this class) write.
    The default transform, as DeZero's, is float32 scaled as ``(x - 0.5) / 0.5``.
    """

    url = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"

    @staticmethod
    def default_transform() -> Compose:
        return Compose([ToFloat(), Normalize(mean=0.5, std=0.5)])

    def _cache_path(self) -> str:
        name = self.url[self.url.rfind("/") + 1 :]
        return os.path.join(_data_dir(), name + (".train.npz" if self.train else ".test.npz"))

    def prepare(self) -> None:
        cache = self._cache_path()
        if os.path.exists(cache):
            with np.load(cache) as loaded:
                self.data, self.label = loaded["data"], loaded["label"]
            return
        wanted = [f"data_batch_{i}" for i in range(1, 6)] if self.train else ["test_batch"]
        batches = {}
        with tarfile.open(get_file(self.url), "r:gz") as archive:
            for member in archive.getmembers():
                base = member.name.rsplit("/", 1)[-1]
                if base in wanted:
                    batches[base] = pickle.load(archive.extractfile(member), encoding="bytes")
        missing = [name for name in wanted if name not in batches]
        if missing:
            raise ValueError(f"CIFAR10: {get_file(self.url)!r} lacks {missing}")
        self.data = np.concatenate([batches[n][b"data"] for n in wanted]).reshape(-1, 3, 32, 32)
        self.label = np.concatenate([np.asarray(batches[n][b"labels"]) for n in wanted])
        self.label = self.label.astype(np.int64)
        np.savez_compressed(cache, data=self.data, label=self.label)

    @staticmethod
    def labels() -> dict[int, str]:
        names = ("airplane", "automobile", "bird", "cat", "deer")
        names += ("dog", "frog", "horse", "ship", "truck")
        return dict(enumerate(names))


class ImageNet(Dataset):
    """Only ImageNet's 1000 class names, as in DeZero (which has no ImageNet images either)."""

    labels_url = (
        "https://gist.githubusercontent.com/yrevar/942d3a0ac09ec9e5eb3a/raw/"
        "238f720ff059c1f82f368259d1ca4ffa5dd8f9f5/imagenet1000_clsidx_to_labels.txt"
    )

    def __init__(self) -> None:
        raise NotImplementedError(
            "ImageNet: only ImageNet.labels() is available (as in DeZero), not the images"
        )

    @staticmethod
    def labels() -> dict[int, str]:
        """Class id -> name, from ``imagenet1000_clsidx_to_labels.txt`` in the data folder
        (a Python dict literal, read with ``ast.literal_eval``, never ``eval``)."""
        import ast

        with open(get_file(ImageNet.labels_url)) as f:
            return ast.literal_eval(f.read())
