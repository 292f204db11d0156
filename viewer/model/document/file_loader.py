"""Files and bundled examples into the Document, by what they hold: a program file runs at once
(:class:`~viewer.model.document.expression_loader.ExpressionLoader`), a saved trace loads, and a
script
is only prepared (:class:`~viewer.model.document.script_loader.ScriptLoader`): the UI asks the user
before it runs. Every read is bounded, and a file that cannot be opened leaves the document as
it was.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from autodiff import trace as trace_module
from viewer.model.document import examples as examples_module
from viewer.model.expression.program import MAX_SOURCE_CHARS

if TYPE_CHECKING:
    from viewer.model.document.document import Document
    from viewer.model.document.expression_loader import ExpressionLoader
    from viewer.model.document.script_loader import ScriptLoader
    from viewer.model.scripts.process import ScriptProcess

__all__ = [
    "EXPRESSION_SUFFIXES",
    "MAX_TRACE_BYTES",
    "SCRIPT_SUFFIXES",
    "TRACE_SUFFIXES",
    "FileLoader",
    "read_text_bounded",
]

EXPRESSION_SUFFIXES = (".expr", ".txt")
TRACE_SUFFIXES = (".json",)
SCRIPT_SUFFIXES = (".py",)
MAX_TRACE_BYTES = 200_000_000


class FileLoader:
    """Opens files and examples for one Document, through its expression and script loaders."""

    def __init__(
        self, document: Document, expressions: ExpressionLoader, scripts: ScriptLoader
    ) -> None:
        self.document = document
        self.expressions = expressions
        self.scripts = scripts

    def load_path(self, path: str | os.PathLike[str]) -> bool | ScriptProcess:
        """Open a file by its suffix: an expression (``.expr``, ``.txt``) runs at once, a saved
        trace (``.json``) loads; a script (``.py``) is *not* run: a prepared
        :class:`ScriptProcess` is returned for the UI to confirm and start (see
        :meth:`ScriptLoader.prepare`). Returns False on error (``error_raised`` was emitted)."""
        doc = self.document
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix in SCRIPT_SUFFIXES:
            if not path.exists():
                return doc.fail(FileNotFoundError(f"no such script: {path}"))
            if not path.is_file():  # a FIFO would block the worker's read, a device never end
                return doc.fail(ValueError(f"cannot run {path.name}: not a regular file"))
            return self.scripts.open(path)
        if suffix in TRACE_SUFFIXES:
            return self.load_trace_file(path)
        if suffix in EXPRESSION_SUFFIXES:
            try:
                text = read_text_bounded(path, MAX_SOURCE_CHARS)
            except (OSError, UnicodeDecodeError, ValueError) as e:
                return doc.fail(e)
            return self.expressions.load(text, path=path)
        known = ", ".join(EXPRESSION_SUFFIXES + TRACE_SUFFIXES + SCRIPT_SUFFIXES)
        return doc.fail(ValueError(f"cannot open {path.name}: unknown file type (use {known})"))

    def load_example(self, key: str) -> bool | ScriptProcess:
        """Open a bundled example by name or stem (see :mod:`viewer.model.document.examples`)."""
        try:
            example = examples_module.find_example(key)
        except ValueError as e:
            return self.document.fail(e)
        if example.kind == "script":
            return self.scripts.open(example.path)
        return self.expressions.load(example.read(), path=example.path, title=example.title)

    def load_trace_file(self, path: Path) -> bool:
        """Show a trace saved as JSON; a broken file leaves the previous graph."""
        doc = self.document
        try:
            t = trace_module.load(path, max_bytes=MAX_TRACE_BYTES)
        except Exception as e:  # TraceFormatError, OSError, or a bug: the old graph stays
            return doc.fail(e)
        doc.load_trace(t, path.name, path=path)
        if not any(s.phase == "backward" for s in t.steps):
            doc.status_changed.emit(
                f"{path.name} has no backward steps: only the forward pass can be played. To "
                "see gradients, record it with y.backward() inside autodiff.trace.record()"
            )
        return True


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
