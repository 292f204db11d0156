"""Datasets, named as in DeZero's ``dezero/datasets.py``: the toy data of the examples,
generated in memory, and MNIST, CIFAR-10 and ImageNet's labels read from local files
(:func:`autodiff.utils.get_file`: nothing is downloaded).

 Like DeZero, :func:`get_spiral` and
:func:`get_sine` seed numpy's global random generator, so a program that builds its model
after loading the data (the book's programs do) prints the book's numbers.
"""

from __future__ import annotations

import gzip
import io
import os
import pickle
import struct
import tarfile
import zlib
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
    ...) from the data folder (see :func:`autodiff.utils.get_file`), each checked against its
    IDX header (magic number, count, image size), and the two counts against each other. The
    default transform, as DeZero's, flattens an image and scales it to [0, 1] float32.
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
        images_name, labels_name = self.files[bool(self.train)]
        images_path = get_file(self.url + images_name)
        labels_path = get_file(self.url + labels_name)
        images = _read_idx(images_path, 0x803, (28, 28), "images of 28x28", self.url)
        labels = _read_idx(labels_path, 0x801, (), "labels", self.url)
        if len(images) != len(labels):
            raise ValueError(
                f"MNIST: {images_path!r} holds {len(images)} images but {labels_path!r} holds "
                f"{len(labels)} labels; the two files must come from the same set"
            )
        _check_labels("MNIST", labels_path, labels)
        self.data = images.reshape(-1, 1, 28, 28)
        self.label = labels

    @staticmethod
    def labels() -> dict[int, str]:
        return {i: str(i) for i in range(10)}


def _read_idx(
    path: str, magic: int, item_shape: tuple[int, ...], items: str, url: str
) -> NDArray[np.uint8]:
    """The uint8 items of a gzipped IDX file (MNIST's format: a big-endian header of a magic
    number, the count and the item's sizes, then the bytes), refused unless the header
    describes the bytes that follow it exactly."""
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError, zlib.error) as e:
        raise ValueError(
            f"MNIST: {path!r} is not a whole gzip file ({e}); fetch it again from {url}"
        ) from e
    header = struct.Struct(f">{2 + len(item_shape)}I")
    if len(raw) < header.size:
        raise ValueError(
            f"MNIST: {path!r} holds {len(raw)} bytes, fewer than its {header.size}-byte header; "
            f"fetch it again from {url}"
        )
    found, count, *dims = header.unpack_from(raw)
    if found != magic or tuple(dims) != item_shape:
        raise ValueError(
            f"MNIST: {path!r} is not an MNIST file of {items}: its header reads magic "
            f"{found:#x} and sizes {tuple(dims)}, expected magic {magic:#x} and sizes "
            f"{item_shape}; fetch it again from {url}"
        )
    item_size = int(np.prod(item_shape))
    body = len(raw) - header.size
    if body != count * item_size:
        whole = f"{body // item_size} whole" if body % item_size == 0 else "not a whole number of"
        raise ValueError(
            f"MNIST: {path!r} announces {count} {items} ({count * item_size} bytes) but holds "
            f"{body} bytes after its header ({whole} {items}): the file is truncated or "
            f"damaged; fetch it again from {url}"
        )
    return np.frombuffer(raw, np.uint8, offset=header.size).reshape(count, *item_shape)


def _check_labels(dataset: str, where: str, labels: NDArray) -> None:
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        raise ValueError(
            f"{dataset}: {where!r} holds labels from {labels.min()} to {labels.max()}; its 10 "
            "classes are numbered 0 to 9"
        )


# A CIFAR-10 batch is a pickle: reading one must not run the code a planted archive could hold.
# The official batches (Python 2 pickles, protocol 2) name three globals, numpy's array
# reconstruction; pickles of the same dicts written by Python 3 (any protocol) add at most the
# others in the table below.
def _latin1(text: str, encoding: str) -> bytes:
    # what a Python 3 pickle of protocol 2 spells bytes with: codecs.encode(text, "latin1")
    if encoding != "latin1":
        raise ValueError(f"only latin1-encoded bytes are read, not {encoding!r}")
    return text.encode("latin1")


def _pickle_globals() -> dict[tuple[str, str], Any]:
    # numpy's own reducers, found where numpy keeps them (numpy.core in numpy 1, numpy._core
    # in numpy 2): pickles name either module
    reconstruct = np.empty(0).__reduce__()[0]
    frombuffer = np.empty(1).__reduce_ex__(5)[0]
    scalar = np.uint8(0).__reduce__()[0]
    table: dict[tuple[str, str], Any] = {
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
        ("_codecs", "encode"): _latin1,
    }
    for package in ("numpy.core", "numpy._core"):
        table[package + ".multiarray", "_reconstruct"] = reconstruct
        table[package + ".multiarray", "scalar"] = scalar
        table[package + ".numeric", "_frombuffer"] = frombuffer
    return table


class _DataUnpickler(pickle.Unpickler):
    """Unpickles plain data and numpy arrays only; any other global is refused, naming
    ``where``."""

    def __init__(self, file: Any, where: str) -> None:
        super().__init__(file, encoding="bytes")
        self.where = where
        self.allowed = _pickle_globals()

    def find_class(self, module: str, name: str) -> Any:
        found = self.allowed.get((module, name))
        if found is None:
            raise _RefusedGlobal(
                f"{self.where}: refused to load {module + '.' + name!r} (only plain data and "
                "numpy arrays are read); this is not an official CIFAR-10 archive"
            )
        return found


class _RefusedGlobal(ValueError):
    pass


#: the most bytes a member of a CIFAR-10 archive may have (a batch has about 31 MB)
_MAX_BATCH_BYTES = 64 * 2**20


class CIFAR10(_WithDefaultTransform):
    """CIFAR-10: ``data`` (N, 3, 32, 32) uint8, ``label`` (N,) int64.

    Reads ``cifar-10-python.tar.gz`` (https://www.cs.toronto.edu/~kriz/) from the data folder,
    or else ``cifar-10-binary.tar.gz`` from the same page, or the ``.train.npz`` /
    ``.test.npz`` cache beside them that DeZero (and this class) write. The python version's
    pickles are read with a loader that builds plain data and numpy arrays only: a member that
    names anything else (code to run) is refused. The default transform, as DeZero's, is
    float32 scaled as ``(x - 0.5) / 0.5``.
    """

    url = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
    binary_url = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"

    @staticmethod
    def default_transform() -> Compose:
        return Compose([ToFloat(), Normalize(mean=0.5, std=0.5)])

    def _cache_path(self) -> str:
        name = self.url[self.url.rfind("/") + 1 :]
        return os.path.join(_data_dir(), name + (".train.npz" if self.train else ".test.npz"))

    def prepare(self) -> None:
        cache = self._cache_path()
        if os.path.exists(cache):
            self.data, self.label = _read_cifar_cache(cache)
            return
        wanted = [f"data_batch_{i}" for i in range(1, 6)] if self.train else ["test_batch"]
        try:
            path = get_file(self.url)
            read = _read_cifar_pickle
        except FileNotFoundError as missing:
            try:
                path = get_file(self.binary_url)
            except FileNotFoundError:
                raise FileNotFoundError(
                    f"{missing} (or fetch {self.binary_url}, the binary version, into the "
                    "same folder)"
                ) from None
            read = _read_cifar_binary
            wanted = [name + ".bin" for name in wanted]
        batches = [read(path, name, member) for name, member in _cifar_members(path, wanted)]
        self.data = np.concatenate([data for data, _ in batches]).reshape(-1, 3, 32, 32)
        self.label = np.concatenate([label for _, label in batches]).astype(np.int64)
        np.savez_compressed(cache, data=self.data, label=self.label)

    @staticmethod
    def labels() -> dict[int, str]:
        names = ("airplane", "automobile", "bird", "cat", "deer")
        names += ("dog", "frog", "horse", "ship", "truck")
        return dict(enumerate(names))


def _cifar_members(path: str, wanted: list[str]) -> list[tuple[str, bytes]]:
    """``(member name, bytes)`` of the members of the archive ``path`` whose last part is in
    ``wanted``, in that order; each must be there once, as a file."""
    found: dict[str, tuple[str, bytes]] = {}
    try:
        with tarfile.open(path, "r:gz") as archive:
            for member in archive.getmembers():
                base = member.name.rsplit("/", 1)[-1]
                if base not in wanted:
                    continue
                where = f"CIFAR10: member {member.name!r} of {path!r}"
                if base in found:
                    raise ValueError(
                        f"{where}: the archive holds {base!r} twice (also as "
                        f"{found[base][0]!r}); this is not an official CIFAR-10 archive"
                    )
                if not member.isfile() or member.size > _MAX_BATCH_BYTES:
                    what = f"{member.size} bytes" if member.isfile() else "not a plain file"
                    raise ValueError(
                        f"{where}: {what}, not a CIFAR-10 batch (a file of about 31 MB); this "
                        "is not an official CIFAR-10 archive"
                    )
                found[base] = (member.name, archive.extractfile(member).read())
    except (tarfile.TarError, OSError, EOFError, zlib.error) as e:
        raise ValueError(
            f"CIFAR10: {path!r} is not a readable .tar.gz archive ({e}); fetch it again"
        ) from e
    missing = [name for name in wanted if name not in found]
    if missing:
        raise ValueError(f"CIFAR10: {path!r} lacks {missing}; fetch it again")
    return [found[name] for name in wanted]


def _read_cifar_pickle(path: str, member: str, raw: bytes) -> tuple[NDArray, NDArray]:
    """The images ``(N, 3072)`` uint8 and labels ``(N,)`` of one pickled batch."""
    where = f"CIFAR10: member {member!r} of {path!r}"
    try:
        batch = _DataUnpickler(io.BytesIO(raw), where).load()
    except _RefusedGlobal as refused:
        raise ValueError(str(refused)) from None
    except Exception as e:  # any failure of a damaged pickle, reported the same way
        raise ValueError(f"{where}: not a readable pickle ({type(e).__name__}: {e})") from e
    if not isinstance(batch, dict):
        raise ValueError(f"{where}: holds a {type(batch).__name__}, not a CIFAR-10 batch (a dict)")
    # the official batches' keys are bytes (Python 2 strings); a Python 3 copy's are str
    data = batch.get(b"data", batch.get("data"))
    labels = batch.get(b"labels", batch.get("labels"))
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2:
        described = (
            f"an array of shape {data.shape} and dtype {data.dtype}"
            if isinstance(data, np.ndarray)
            else type(data).__name__
        )
        raise ValueError(f"{where}: 'data' is {described}, not images of shape (N, 3072) uint8")
    if data.shape[1] != 3072:
        raise ValueError(f"{where}: 'data' has shape {data.shape}, not (N, 3072) (3x32x32)")
    try:
        label_array = np.asarray(labels)
    except Exception as e:
        raise ValueError(f"{where}: 'labels' is not a list of integers ({e})") from e
    if label_array.dtype.kind not in "iu" or label_array.shape != (len(data),):
        raise ValueError(
            f"{where}: 'labels' should be {len(data)} integers, one per image of 'data' "
            f"{data.shape}; it is {type(labels).__name__} of shape {label_array.shape} and "
            f"dtype {label_array.dtype}"
        )
    _check_labels("CIFAR10", f"{path}:{member}", label_array)
    return data, label_array


def _read_cifar_binary(path: str, member: str, raw: bytes) -> tuple[NDArray, NDArray]:
    """The images and labels of one batch of the binary version: records of a label byte and
    3072 pixel bytes."""
    if len(raw) % 3073:
        raise ValueError(
            f"CIFAR10: member {member!r} of {path!r} holds {len(raw)} bytes, not a whole number "
            "of 3073-byte records (a label and a 3x32x32 image); fetch the archive again"
        )
    records = np.frombuffer(raw, np.uint8).reshape(-1, 3073)
    labels = records[:, 0]
    _check_labels("CIFAR10", f"{path}:{member}", labels)
    return records[:, 1:], labels


def _read_cifar_cache(path: str) -> tuple[NDArray, NDArray]:
    """The ``data`` and ``label`` arrays of a cache written by DeZero or by :class:`CIFAR10`,
    checked; anything else is an error naming the file, which can be deleted."""
    again = "delete it to read the archive again"
    try:
        loaded = np.load(path, allow_pickle=False)
    except Exception as e:  # not an .npz: a damaged zip, a pickle refused, a truncated file...
        raise ValueError(
            f"CIFAR10: the cache {path!r} is not a readable .npz ({type(e).__name__}: {e}); {again}"
        ) from e
    if not hasattr(loaded, "files"):  # a lone .npy array
        raise ValueError(f"CIFAR10: the cache {path!r} is one array, not an .npz; {again}")
    with loaded:
        if "data" not in loaded.files or "label" not in loaded.files:
            raise ValueError(
                f"CIFAR10: the cache {path!r} holds {loaded.files}, not the arrays 'data' and "
                f"'label'; {again}"
            )
        try:
            data, label = loaded["data"], loaded["label"]
        except Exception as e:
            raise ValueError(
                f"CIFAR10: the cache {path!r} is damaged ({type(e).__name__}: {e}); {again}"
            ) from e
    if data.dtype != np.uint8 or data.ndim != 4 or data.shape[1:] != (3, 32, 32):
        raise ValueError(
            f"CIFAR10: the cache {path!r} holds 'data' of shape {data.shape} and dtype "
            f"{data.dtype}, not images (N, 3, 32, 32) uint8; {again}"
        )
    if label.dtype.kind not in "iu" or label.shape != (len(data),):
        raise ValueError(
            f"CIFAR10: the cache {path!r} holds 'label' of shape {label.shape} and dtype "
            f"{label.dtype}, not {len(data)} integers (one per image); {again}"
        )
    _check_labels("CIFAR10", path, label)
    return data, label.astype(np.int64)


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

        path = get_file(ImageNet.labels_url)
        try:
            with open(path, encoding="utf-8") as f:
                labels = ast.literal_eval(f.read())
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as e:
            raise ValueError(
                f"ImageNet.labels: {path!r} is not a Python dict literal of class ids and names "
                f"({type(e).__name__}: {e})"
            ) from e
        if not isinstance(labels, dict) or not all(
            isinstance(k, int) and isinstance(v, str) for k, v in labels.items()
        ):
            raise ValueError(
                f"ImageNet.labels: {path!r} holds a {type(labels).__name__}, not a dict of class "
                "ids (int) to names (str)"
            )
        return labels
