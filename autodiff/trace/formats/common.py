"""What both trace formats share: the names of the node events, the check a JSON text passes
before it is parsed (the JSON file, the npz's header), and what the writers read."""

from __future__ import annotations

import re
from typing import Protocol

import numpy as np

from autodiff.trace._checks import TraceFormatError
from autodiff.trace._reader import TraceReader
from autodiff.trace._recorder import _CLEARED, _EMPTIED, _FREED, _GRAD, _VALUE, Recorder

__all__ = ["EVENT_KINDS", "EVENT_NAMES", "RecordedTrace", "check_structure"]

EVENT_KINDS = {
    "value": _VALUE,
    "grad": _GRAD,
    "cleared": _CLEARED,
    "freed": _FREED,
    "emptied": _EMPTIED,
}
EVENT_NAMES = {v: k for k, v in EVENT_KINDS.items()}


class RecordedTrace(TraceReader, Protocol):
    """What the writers read: a reader whose recorder's tables it offers (a ``Trace``)."""

    max_array_size: int

    @property
    def tables(self) -> Recorder: ...


_CHUNK = 1 << 20  # bytes scanned at a time by check_structure
_BYTES_PER_CONTAINER = 8  # a saved trace has one array/object per ~50 bytes


def check_structure(
    data: bytes, max_depth: int, bytes_per_container: int = _BYTES_PER_CONTAINER
) -> None:
    """Before the JSON parser sees it: refuse nesting deeper than ``max_depth``, and a file so
    dense in arrays and objects (``[[],[],...]``) that parsing it would take many times its
    size in memory (a Python list costs ~60 bytes, its text 3): fewer than
    ``bytes_per_container`` bytes per array or object (0: no limit). Scanned in chunks: the
    check itself stays near the file's size."""
    stripped = re.sub(rb'"(?:[^"\\]|\\.)*"', b'""', data)
    depth = deepest = containers = 0
    for start in range(0, len(stripped), _CHUNK):
        codes = np.frombuffer(stripped, dtype=np.uint8, count=min(_CHUNK, len(stripped) - start),
                              offset=start)  # fmt: skip
        opens = (codes == ord("[")) | (codes == ord("{"))
        closes = (codes == ord("]")) | (codes == ord("}"))
        containers += int(opens.sum())
        delta = opens.astype(np.int32) - closes
        levels = np.cumsum(delta, dtype=np.int32)
        if levels.size:
            deepest = max(deepest, depth + int(levels.max()))
            depth += int(levels[-1])
        if deepest > max_depth:
            raise TraceFormatError(
                f"the file nests arrays/objects deeper than {max_depth} levels; "
                "a saved trace never does: it is not a trace file or it was tampered with"
            )
    if containers > 1000 and containers * bytes_per_container > len(data):
        raise TraceFormatError(
            f"the file holds {containers} arrays/objects in {len(data)} bytes, one per "
            f"{len(data) / containers:.1f} bytes; a saved trace has one per ~50: it is not a "
            "trace file (parsing it would take many times its size in memory)"
        )
