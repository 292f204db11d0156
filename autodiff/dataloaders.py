"""Mini-batches from a Dataset, named as in DeZero's ``dezero/dataloaders.py``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from autodiff import cuda
from autodiff.datasets import Dataset

__all__ = ["DataLoader", "SeqDataLoader"]


class DataLoader:
    """Iterate over ``dataset`` in batches of ``batch_size`` ``(x, t)`` arrays.

    One pass (``for x, t in loader``) visits every example exactly once; the last batch is
    smaller when ``batch_size`` does not divide the dataset. With ``shuffle`` the order is a
    fresh ``np.random.permutation`` per pass, so ``np.random.seed`` makes it repeatable.
    With ``gpu`` (or after :meth:`to_gpu`) the batches are CuPy arrays on the GPU.
    """

    def __init__(
        self, dataset: Any, batch_size: int, shuffle: bool = True, gpu: bool = False
    ) -> None:
        loader = type(self).__name__
        if len(dataset) == 0:
            raise ValueError(f"{loader}: {type(dataset).__name__} is empty")
        if (
            isinstance(batch_size, bool)
            or not isinstance(batch_size, int | np.integer)
            or batch_size < 1
        ):
            raise ValueError(
                f"{loader}: batch_size must be a positive integer, not {batch_size!r} "
                f"({type(batch_size).__name__}); the {type(dataset).__name__} holds "
                f"{len(dataset)} examples"
            )
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.data_size = len(dataset)
        self.max_iter = math.ceil(self.data_size / self.batch_size)
        self.gpu = False
        if gpu:
            self.to_gpu()
        self.reset()

    def reset(self) -> None:
        """Start a new pass (with a new order when shuffling)."""
        self.iteration = 0
        if self.shuffle:
            self.index = np.random.permutation(self.data_size)
        else:
            self.index = np.arange(self.data_size)

    def __len__(self) -> int:
        return self.max_iter

    def to_cpu(self) -> None:
        """Give the next batches as numpy arrays (the default)."""
        self.gpu = False

    def to_gpu(self) -> None:
        """Give the next batches as CuPy arrays on the GPU; RuntimeError without CuPy."""
        if not cuda.gpu_enable:
            raise RuntimeError(cuda.CUPY_MISSING)
        self.gpu = True

    def __iter__(self) -> DataLoader:
        return self

    def __next__(self) -> tuple[NDArray, NDArray]:
        if self.iteration >= self.max_iter:
            self.reset()
            raise StopIteration
        i, size = self.iteration, self.batch_size
        batch_index = self.index[i * size : (i + 1) * size]
        self.iteration += 1
        x, t = self._gather(batch_index)
        if self.gpu:
            return cuda.as_cupy(x), cuda.as_cupy(t)
        return x, t

    def next(self) -> tuple[NDArray, NDArray]:
        return self.__next__()

    def _gather(self, batch_index: NDArray) -> tuple[NDArray, NDArray]:
        ds = self.dataset
        plain = (
            type(ds).__getitem__ is Dataset.__getitem__
            and ds.transform is None
            and ds.target_transform is None
            and isinstance(ds.data, np.ndarray)
            and isinstance(ds.label, np.ndarray)
        )
        if plain:  # no transforms: index the arrays at once (same result as the loop below)
            return ds.data[batch_index], ds.label[batch_index]
        batch = [ds[int(j)] for j in batch_index]
        x = np.array([example[0] for example in batch])
        t = np.array([example[1] for example in batch])
        return x, t


class SeqDataLoader(DataLoader):
    """Batches for truncated backpropagation through time over one long sequence.

    The sequence is cut into ``batch_size`` equal stretches; the i-th batch holds element i
    of each stretch, so row k of consecutive batches walks along stretch k in order (an RNN
    keeps its state per row). Never shuffles. With ``gpu`` (or after :meth:`to_gpu`) the
    batches are CuPy arrays on the GPU.
    """

    def __init__(self, dataset: Any, batch_size: int, gpu: bool = False) -> None:
        super().__init__(dataset, batch_size, shuffle=False, gpu=gpu)
        if self.batch_size > self.data_size:
            raise ValueError(
                f"SeqDataLoader: batch_size {self.batch_size} is larger than the sequence "
                f"({self.data_size} elements of the {type(dataset).__name__}): each row of a "
                f"batch walks its own stretch, at least one element long; use a batch_size of "
                f"at most {self.data_size}"
            )

    def __next__(self) -> tuple[NDArray, NDArray]:
        if self.iteration >= self.max_iter:
            self.reset()
            raise StopIteration
        jump = self.data_size // self.batch_size
        batch_index = (np.arange(self.batch_size) * jump + self.iteration) % self.data_size
        self.iteration += 1
        x, t = self._gather(batch_index)
        if self.gpu:
            return cuda.as_cupy(x), cuda.as_cupy(t)
        return x, t
