"""Files and bundled examples, opened by what they hold: a program file's text (the Document
runs it at once), a saved trace (a :class:`~viewer.model.document.pending.PendingGraph`), or a
script (:class:`ScriptFile`: only named; the UI asks the user before it runs). Every read is
bounded; an error is raised for the Document to report, and nothing here reads or writes it.

A program or a script whose first line of code is not Python at all (a page of notes saved as
``.txt``) is refused: :func:`not_a_program`. One whose error comes later opens, with its error
shown in place, for the user to fix.
"""

from __future__ import annotations

import ast
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
    "not_a_program",
    "open_example",
    "open_path",
    "read_text_bounded",
]

EXPRESSION_SUFFIXES = (".expr", ".txt")
TRACE_SUFFIXES = (".json", ".npz")  # JSON, or the binary form (trace_to_npz)
SCRIPT_SUFFIXES = (".py",)
MAX_TRACE_BYTES = 200_000_000
SCRIPT_HEAD_BYTES = 256_000  # of a script, read to find its first line of code


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
    (``.json``, ``.npz``) or a script (``.py``, not run). Raises OSError, ValueError or what
    reading a trace raises (TraceFormatError) when it cannot be opened."""
    suffix = path.suffix.lower()
    if suffix in SCRIPT_SUFFIXES:
        if not path.exists():
            raise FileNotFoundError(f"no such script: {path}")
        if not path.is_file():  # a FIFO would block the worker's read, a device never end
            raise ValueError(f"cannot run {path.name}: not a regular file")
        with path.open("rb") as f:
            head = f.read(SCRIPT_HEAD_BYTES).decode("utf-8", errors="replace")
        not_a_program(head, path.name)
        return ScriptFile(path)
    if suffix in TRACE_SUFFIXES:
        return trace_file(path)
    if suffix in EXPRESSION_SUFFIXES:
        text = read_text_bounded(path, MAX_SOURCE_CHARS)
        not_a_program(text, path.name)
        return ProgramText(text, path)
    known = ", ".join(EXPRESSION_SUFFIXES + TRACE_SUFFIXES + SCRIPT_SUFFIXES)
    raise ValueError(f"cannot open {path.name}: unknown file type (use {known})")


def open_example(key: str) -> ProgramText | ScriptFile:
    """A bundled example by name or stem (see :mod:`viewer.model.document.examples`);
    ValueError for an unknown one, or one that needs a package not installed (torch)."""
    example = examples_module.find_example(key)
    missing = example.missing
    if missing:
        raise ValueError(
            f"the example {example.title!r} needs {', '.join(missing)}, which is not "
            f'installed: pip install "autodiff-viewer[{missing[0]}]"'
        )
    if example.kind == "script":
        return ScriptFile(example.path)
    return ProgramText(example.read(), example.path, example.title)


def trace_file(path: Path) -> PendingGraph:
    """A trace saved as JSON or as ``.npz`` (:func:`autodiff.trace.formats.npz.trace_to_npz`),
    as a graph to show. Both readers refuse a hostile file before it can allocate much: the
    JSON one past ``MAX_TRACE_BYTES``, the binary one by each member's size."""
    if path.suffix.lower() == ".npz":
        if path.exists() and not path.is_file():  # a FIFO would block the read
            raise ValueError(f"cannot open {path.name}: not a regular file")
        try:
            t = trace_module.trace_from_npz(path)
        except trace_module.TraceFormatError as e:  # named as load's errors name it
            if str(path) in str(e):
                raise
            raise trace_module.TraceFormatError(f"{path}: {e}") from None
    else:
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


_INCOMPLETE = (  # a line that is Python, but only the start of a statement
    "never closed",
    "unterminated triple-quoted",
    "unexpected EOF",
    "expected an indented block",
)
_OPERATOR_ENDS = "+-*/%@&|^<>=.,([{~"


def not_a_program(text: str, name: str) -> None:
    """ValueError ("not a program: line N of NAME reads '…'") when the first line of code of
    ``text`` (the first not blank and not a comment) is not Python, not even the start of a
    statement: prose, not a program with a mistake. A syntax error on a later line means the
    parser got through real code first: such a file opens, and its error is shown in place."""
    lines = text.split("\n")
    first = next(
        (
            i
            for i, line in enumerate(lines)
            if line.strip().lstrip("\ufeff") and not line.strip().startswith("#")
        ),
        None,
    )
    if first is None:
        return  # blank or comments only: the program's parser says what is missing
    try:
        ast.parse(text)
        return
    except SyntaxError as e:
        if (e.lineno or 1) > first + 1:
            return
    except (ValueError, RecursionError, MemoryError):
        return  # a NUL byte, deep nesting: the program's own checks name it
    line = lines[first].strip().lstrip("\ufeff")
    if line.startswith("@"):  # a decorator is Python only with what it decorates
        line += "\ndef f(): pass"
    try:
        ast.parse(line)
        return
    except SyntaxError as e:
        if any(words in (e.msg or "") for words in _INCOMPLETE):
            return
        if (e.offset or 0) > len(line) and line[-1] in _OPERATOR_ENDS:
            return  # ``y = tanh(x) **``: code that stops short, not prose
    except (ValueError, RecursionError, MemoryError):
        return
    shown = "".join(c if c.isprintable() else " " for c in lines[first].strip()[:40])
    if len(lines[first].strip()) > 40:
        shown += "…"
    raise ValueError(
        f"not a program: line {first + 1} of {name} reads '{shown}', which is not Python. "
        "A program is assignments and expressions, e.g. y = tanh(x) * x**2; nothing was opened"
    )
