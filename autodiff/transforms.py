"""Transforms of a Dataset's examples, named as in DeZero's ``dezero/transforms.py``.

A transform is a callable on one example (``Dataset(transform=...)``). Those on numpy arrays
need nothing else; those on PIL images (:class:`Convert`, :class:`ToArray`, :class:`ToPIL`)
import Pillow when called, so this module imports without it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import DTypeLike, NDArray

__all__ = [
    "AsType",
    "Compose",
    "Convert",
    "Flatten",
    "Normalize",
    "ToArray",
    "ToFloat",
    "ToInt",
    "ToPIL",
]


class Compose:
    """Apply ``transforms`` one after another (none: the identity)."""

    def __init__(self, transforms: Sequence[Callable[[Any], Any]] = ()) -> None:
        self.transforms = list(transforms)

    def __call__(self, img: Any) -> Any:
        for t in self.transforms:
            img = t(img)
        return img


def _pil_image() -> Any:
    try:
        from PIL import Image
    except ImportError as e:
        raise ImportError(
            "this transform works on PIL images: install Pillow (pip install pillow)"
        ) from e
    return Image


# =============================================================================
# PIL images
# =============================================================================
class Convert:
    """Convert a PIL image to ``mode`` ('RGB', 'L'...); 'BGR' swaps the red and blue bands."""

    def __init__(self, mode: str = "RGB") -> None:
        self.mode = mode

    def __call__(self, img: Any) -> Any:
        if self.mode == "BGR":
            r, g, b = img.convert("RGB").split()
            return _pil_image().merge("RGB", (b, g, r))
        return img.convert(self.mode)


class ToArray:
    """A PIL image as a (C, H, W) array of ``dtype``; an array passes through."""

    def __init__(self, dtype: DTypeLike = np.float32) -> None:
        self.dtype = dtype

    def __call__(self, img: Any) -> NDArray:
        if isinstance(img, np.ndarray):
            return img
        if isinstance(img, _pil_image().Image):
            return np.asarray(img).transpose(2, 0, 1).astype(self.dtype)
        raise TypeError(f"ToArray: expected a PIL image or an ndarray, not {type(img).__name__}")


class ToPIL:
    """A (C, H, W) array as a PIL image."""

    def __call__(self, array: NDArray) -> Any:
        return _pil_image().fromarray(array.transpose(1, 2, 0))


# =============================================================================
# numpy arrays
# =============================================================================
class Normalize:
    """``(array - mean) / std``; a sequence gives one value per channel (axis 0), and must have
    as many values as the array has channels (or one)."""

    def __init__(self, mean: Any = 0, std: Any = 1) -> None:
        _check_values("mean", mean)
        if not np.all(_check_values("std", std)):
            raise ValueError(f"Normalize: std {std!r} holds a zero; dividing by it gives inf")
        self.mean = mean
        self.std = std

    @staticmethod
    def _per_channel(name: str, value: Any, array: NDArray) -> Any:
        if np.isscalar(value):
            return value
        values = np.asarray(value)
        if values.size == 1:
            return values.item()
        channels = array.shape[0] if array.ndim else None
        if channels != values.size:
            raise ValueError(
                f"Normalize: {name} has {values.size} values (one per channel) but the array "
                f"of shape {array.shape} has {channels or 'no'} channels (axis 0); give "
                f"{name} one value per channel, or a single number"
            )
        dtype = array.dtype if np.issubdtype(array.dtype, np.floating) else np.float64
        return values.astype(dtype).reshape((-1,) + (1,) * (array.ndim - 1))

    def __call__(self, array: NDArray) -> NDArray:
        mean = self._per_channel("mean", self.mean, array)
        std = self._per_channel("std", self.std, array)
        return (array - mean) / std


def _check_values(name: str, value: Any) -> NDArray:
    """``value`` (a number or one per channel) as a float64 array, refused unless its values
    are finite numbers."""
    try:
        values = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"Normalize: {name} must be a number or a sequence of numbers (one per channel), "
            f"not {value!r}"
        ) from e
    if values.ndim > 1 or values.size == 0 or not np.all(np.isfinite(values)):
        raise ValueError(
            f"Normalize: {name} must be a finite number or a flat sequence of them (one per "
            f"channel), not {value!r} (shape {values.shape})"
        )
    return values


class Flatten:
    """The array as 1-D."""

    def __call__(self, array: NDArray) -> NDArray:
        return array.flatten()


class AsType:
    """The array cast to ``dtype``."""

    def __init__(self, dtype: DTypeLike = np.float32) -> None:
        self.dtype = dtype

    def __call__(self, array: NDArray) -> NDArray:
        return array.astype(self.dtype)


ToFloat = AsType


class ToInt(AsType):
    """The array cast to an integer dtype (int64 by default, DeZero's ``np.int``)."""

    def __init__(self, dtype: DTypeLike = np.int64) -> None:
        super().__init__(dtype)
