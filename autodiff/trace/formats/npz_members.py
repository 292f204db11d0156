"""The members of an ``.npz`` (a zip of ``.npy`` arrays), read without trusting the file.

``numpy.load`` of an ``.npz`` reads whatever a member declares: a few megabytes of zip can
declare gigabytes of zeros, a member's header can be nested too deep for the parser or
declare an array of 10**10 elements. :class:`NpzMembers` reads only the members it is asked
for (the others are never decompressed), and for each it checks, before allocating or
decompressing anything of that size: the compression ratio the zip declares, the ``.npy``
header's size and nesting (before numpy's own parser, ``ast.literal_eval``, sees it), the
dtype (exactly the one asked for: no cast), the shape against the zip's declared size and
the limits below. Then it reads exactly the bytes the shape needs, and the rest of the member
must be empty (the zip's CRC is checked there).

So reading a file of ``B`` bytes allocates at most about ``MAX_RATIO * B`` for its arrays
(``B`` when its members are stored, as ``numpy.savez`` writes them), plus about 6 times the
size of the zip's directory. Every failure is a :class:`~autodiff.trace.TraceFormatError`
naming the member and the problem.
"""

from __future__ import annotations

import ast
import io
import math
import os
import stat
import struct
import zipfile
import zlib
from typing import IO

import numpy as np
from numpy.lib.format import read_array_header_1_0, read_array_header_2_0, read_magic

from autodiff.trace._checks import TraceFormatError, _fail

__all__ = [
    "MAX_MEMBERS",
    "MAX_MEMBER_BYTES",
    "MAX_NPY_HEADER",
    "MAX_NPY_NESTING",
    "MAX_RATIO",
    "RATIO_SLACK",
    "NpzMembers",
]

MAX_MEMBERS = 64
"""Entries in the zip's directory, at most (a trace has at most 20: its tables and one buffer
per dtype); a longer directory is refused once read."""

MAX_MEMBER_BYTES = 1 << 34
"""The data of one member, at most (16 GiB); a caller may ask for less (the trace's header)."""

MAX_NPY_HEADER = 4096
"""A member's ``.npy`` header, at most, in bytes (numpy writes 128 for the arrays of a trace;
numpy's own limit is 10 000)."""

MAX_NPY_NESTING = 3
"""Brackets nested in a member's ``.npy`` header, at most (``{'shape': (5, 3), ...}`` nests 2):
refused before ``ast.literal_eval`` parses it."""

MAX_RATIO = 10
"""A member's declared size per byte it takes in the zip, at most (beyond :data:`RATIO_SLACK`):
``numpy.savez`` stores members (ratio 1); ``numpy.savez_compressed``'s tables compress a few
times; a zip bomb compresses zeros a thousand times."""

RATIO_SLACK = 1 << 16
"""Bytes a member may declare beyond :data:`MAX_RATIO` times its compressed size (a small
member of zeros compresses far better than a large one)."""

_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
_OPENERS = {1: read_array_header_1_0, 2: read_array_header_2_0}
_BROKEN = (
    zipfile.BadZipFile,
    zlib.error,
    struct.error,
    EOFError,
    OSError,
    ValueError,  # UnicodeDecodeError, numpy's header errors
    OverflowError,
    NotImplementedError,
    RecursionError,  # ast.literal_eval of ---...1 (a chain of operators, not of brackets)
)


class NpzMembers:
    """The members of one ``.npz`` (a path or a binary file object), read one by one with
    :meth:`read`; a context manager (closes the zip)."""

    def __init__(self, file: str | os.PathLike[str] | IO[bytes]) -> None:
        if isinstance(file, str | os.PathLike):
            try:
                mode = os.stat(file).st_mode
            except OSError as e:
                raise TraceFormatError(f"{os.fspath(file)}: cannot read the file: {e}") from None
            if not stat.S_ISREG(mode):  # a FIFO or a device would block or never end
                raise TraceFormatError(f"{os.fspath(file)}: not a regular file")
        try:
            self._zip = zipfile.ZipFile(file)
        except _BROKEN as e:
            raise TraceFormatError(f"not a binary trace (a zip of .npy arrays): {e}") from None
        infos = self._zip.infolist()
        self._members = {info.filename: info for info in infos}
        if len(infos) > MAX_MEMBERS or len(self._members) < len(infos):
            self.close()
            names = [info.filename for info in infos]
            twice = next((n for i, n in enumerate(names) if n in names[:i]), "")
            problem = (
                f"the zip lists {len(infos)} members, above the limit of {MAX_MEMBERS}"
                if len(infos) > MAX_MEMBERS
                else f"the zip lists member {twice[:40]!r} twice"
            )
            raise TraceFormatError(f"not a binary trace: {problem}")

    def __enter__(self) -> NpzMembers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._zip.close()

    def __contains__(self, name: str) -> bool:
        return f"{name}.npy" in self._members

    def read(
        self,
        name: str,
        dtype: str,
        columns: int | None = None,
        max_bytes: int = MAX_MEMBER_BYTES,
    ) -> np.ndarray:
        """Member ``name`` (``name.npy`` in the zip): a read-only array of exactly ``dtype``
        (little-endian), 1-D, or 2-D with ``columns`` columns, of at most ``max_bytes``."""
        where = f"member {name!r}"
        info = self._members.get(f"{name}.npy")
        if info is None:
            raise _fail(where, "missing (the file is not a binary trace, or not a whole one)")
        if info.flag_bits & 0x1:
            raise _fail(where, "encrypted")
        if info.compress_type not in _METHODS:
            raise _fail(where, f"compressed by method {info.compress_type}: not stored or deflated")
        declared = info.file_size
        if declared > max_bytes + MAX_NPY_HEADER + 16:
            raise _fail(where, f"declares {declared} bytes, above the limit of {max_bytes}")
        if declared > MAX_RATIO * info.compress_size + RATIO_SLACK:
            raise _fail(
                where,
                f"declares {declared} bytes for {info.compress_size} in the zip, more than "
                f"{MAX_RATIO} times as many (a zip bomb, not a trace)",
            )
        want = np.dtype(dtype).newbyteorder("<")
        try:
            with self._zip.open(info) as f:
                return _read_npy(f, declared, want, columns, max_bytes, where)
        except TraceFormatError:
            raise
        except _BROKEN as e:
            raise _fail(where, f"cannot be read: {type(e).__name__}: {str(e)[:200]}") from None


def _read_npy(
    f: IO[bytes],
    declared: int,
    want: np.dtype,
    columns: int | None,
    max_bytes: int,
    where: str,
) -> np.ndarray:
    major, minor = read_magic(io.BytesIO(_exactly(f, 8, where, "the .npy magic")))
    opener = _OPENERS.get(major)
    if opener is None or minor != 0:
        raise _fail(where, f".npy format version {major}.{minor}: a trace's are 1.0 or 2.0")
    length = _exactly(f, 2 if major == 1 else 4, where, "the .npy header's length")
    size = int.from_bytes(length, "little")
    if size > MAX_NPY_HEADER:
        raise _fail(where, f"an .npy header of {size} bytes, above the limit of {MAX_NPY_HEADER}")
    text = _exactly(f, size, where, "the .npy header")
    if _nesting(text) > MAX_NPY_NESTING:
        raise _fail(where, f"an .npy header nested deeper than {MAX_NPY_NESTING} levels")
    try:  # (numpy would retry one that is not, repaired, with a warning: none is needed)
        ast.literal_eval(text.decode("latin1"))
    except SyntaxError:
        raise _fail(where, "its .npy header is not a Python literal") from None
    shape, fortran_order, dtype = opener(io.BytesIO(length + text), max_header_size=size)
    if dtype.str != want.str:
        raise _fail(where, f"holds {dtype} ({dtype.str!r}); a trace stores {want} ({want.str!r})")
    if fortran_order:
        raise _fail(where, "stored in Fortran order; a trace's members are in C order")
    ndim = 1 if columns is None else 2
    if len(shape) != ndim or (columns is not None and shape[1] != columns):
        expected = "(n,)" if columns is None else f"(n, {columns})"
        raise _fail(where, f"has shape {shape}; expected {expected}")
    if any(d < 0 for d in shape):
        raise _fail(where, f"has shape {shape}")
    nbytes = math.prod(shape) * want.itemsize
    if nbytes > max_bytes:
        raise _fail(where, f"declares an array of {nbytes} bytes, above the limit of {max_bytes}")
    start = 8 + len(length) + size
    if start + nbytes != declared:
        raise _fail(
            where,
            f"its header declares {nbytes} bytes of data, the zip {declared - start}",
        )
    data = _exactly(f, nbytes, where, "the data")
    if f.read(1):  # also where the zip's CRC is checked
        raise _fail(where, "runs past its data")
    return np.frombuffer(data, dtype=want).reshape(shape)


def _exactly(f: IO[bytes], n: int, where: str, what: str) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise _fail(where, f"truncated: {what} ends after {len(data)} of {n} bytes")
    return data


def _nesting(text: bytes) -> int:
    """How deep brackets nest in ``text`` (those in strings count too: a trace's headers have
    none there)."""
    depth = deepest = 0
    for c in text:
        if c in b"([{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in b")]}":
            depth -= 1
    return deepest
