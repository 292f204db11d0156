"""Files and bundled examples, opened by what they hold: a program file's text (the Document
runs it at once), a saved trace (a :class:`~viewer.model.document.pending.PendingGraph`), or a
script (:class:`ScriptFile`: only named; the UI asks the user before it runs). Every read is
bounded; an error is raised for the Document to report, and nothing here reads or writes it.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from autodiff import trace as trace_module
from viewer.model.document import examples as examples_module
from viewer.model.document.pending import PendingGraph
from viewer.model.expression.program import MAX_SOURCE_CHARS

__all__ = [
    "EXPRESSION_SUFFIXES",
    "MAX_TRACE_BYTES",
    "SCRIPT_SUFFIXES",
    "TRACE_SUFFIXES",
    "ProgramText",
    "ScriptFile",
    "open_example",
    "open_path",
    "read_text_bounded",
]

EXPRESSION_SUFFIXES = (".expr", ".txt")
TRACE_SUFFIXES = (".json",)
SCRIPT_SUFFIXES = (".py",)
MAX_TRACE_BYTES = 200_000_000


@dataclass(frozen=True)
class ProgramText:
    """A typed program read from ``path`` (``title``: '' for the file's name)."""

    text: str
    path: Path
    title: str = ""


@dataclass(frozen=True)
class ScriptFile:
    """A script to prepare, once the UI confirmed (:meth:`Document.prepare_script`)."""

    path: Path


def open_path(path: Path) -> ProgramText | PendingGraph | ScriptFile:
    """What ``path`` holds, by its suffix: an expression (``.expr``, ``.txt``), a saved trace
    (``.json``) or a script (``.py``, not run). Raises OSError, ValueError or what reading a
    trace raises (TraceFormatError) when it cannot be opened."""
    suffix = path.suffix.lower()
    if suffix in SCRIPT_SUFFIXES:
        if not path.exists():
            raise FileNotFoundError(f"no such script: {path}")
        if not path.is_file():  # a FIFO would block the worker's read, a device never end
            raise ValueError(f"cannot run {path.name}: not a regular file")
        return ScriptFile(path)
    if suffix in TRACE_SUFFIXES:
        return trace_file(path)
    if suffix in EXPRESSION_SUFFIXES:
        return ProgramText(read_text_bounded(path, MAX_SOURCE_CHARS), path)
    known = ", ".join(EXPRESSION_SUFFIXES + TRACE_SUFFIXES + SCRIPT_SUFFIXES)
    raise ValueError(f"cannot open {path.name}: unknown file type (use {known})")


def open_example(key: str) -> ProgramText | ScriptFile:
    """A bundled example by name or stem (see :mod:`viewer.model.document.examples`);
    ValueError for an unknown one."""
    example = examples_module.find_example(key)
    if example.kind == "script":
        return ScriptFile(example.path)
    return ProgramText(example.read(), example.path, example.title)


def trace_file(path: Path) -> PendingGraph:
    """A trace saved as JSON, as a graph to show."""
    t = trace_module.load(path, max_bytes=MAX_TRACE_BYTES)
    note = None
    if not any(s.phase == "backward" for s in t.steps):
        note = (
            f"{path.name} has no backward steps: only the forward pass can be played. To "
            "see gradients, record it with y.backward() inside autodiff.trace.record()"
        )
    return PendingGraph(t, path.name, "trace", path, note=note)


def read_text_bounded(path: Path, max_chars: int) -> str:
    """A program file's text, read with a cap: a FIFO, a device (``/dev/zero``) or a file of
    gigabytes is refused before reading, with a message that names the file."""
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"cannot open {path.name}: not a regular file")
    limit = 4 * max_chars  # UTF-8: at most 4 bytes a character
    if info.st_size > limit:
        raise ValueError(
            f"cannot open {path.name}: {info.st_size} bytes; a program has at most "
            f"{max_chars} characters"
        )
    with open(path, "rb") as f:
        raw = f.read(limit + 1)
    if len(raw) > limit:
        raise ValueError(f"cannot open {path.name}: it grew past {limit} bytes while read")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(
            f"cannot open {path.name}: not UTF-8 text (byte {e.start} is 0x{raw[e.start]:02x}); "
            "a program is a text file"
        ) from None
    if len(text) > max_chars:
        raise ValueError(
            f"cannot open {path.name}: {len(text)} characters; a program has at most {max_chars}"
        )
    return text
