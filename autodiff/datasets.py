"""Toy datasets for the examples, generated in memory (nothing is downloaded).

Named as in DeZero's ``dezero/datasets.py``. Like DeZero, :func:`get_spiral` and
:func:`get_sine` seed numpy's global random generator, so a program that builds its model
after loading the data (the book's programs do) prints the book's numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["Dataset", "SinCurve", "Spiral", "get_sine", "get_spiral"]


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
