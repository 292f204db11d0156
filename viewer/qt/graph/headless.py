"""``autodiff-viewer --export``: load a file, move to a step, write PNG or SVG, no window.

Needs a QGuiApplication (fonts) but never shows anything; ``viewer.app`` selects the offscreen
platform when none is set. A ``.py`` input is the user's own code: it runs only when the caller
says so (``run_scripts=True``, the command line's ``--yes``), as the window asks first.
"""

from __future__ import annotations

from pathlib import Path

from viewer.model.document.document import SCRIPT_SUFFIXES, Document, ScriptError
from viewer.model.expression.program import ExpressionError
from viewer.qt.drawing.themes import theme_named
from viewer.qt.graph.image_export import EXPORT_FORMATS, export_graph
from viewer.qt.graph.scene_binding import scene_overlays

__all__ = ["ExportError", "ScriptFailed", "ScriptNotConfirmed", "export_file"]


class ExportError(Exception):
    """Why the export could not be made, for the command line."""


class ScriptNotConfirmed(ExportError):
    """The input is a script and running it was not allowed (``run_scripts=False``)."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"{path.name} is a Python script: rendering it runs it")
        self.path = path


class ScriptFailed(ExportError):
    """The script raised (or exited non-zero): the message is one line, where it failed;
    ``traceback`` is the whole traceback text."""

    def __init__(self, message: str, traceback: str) -> None:
        super().__init__(message)
        self.traceback = traceback


def _describe(error: BaseException | None) -> str:
    if error is None:
        return "unknown error"
    if isinstance(error, ExpressionError):
        return f"line {error.line}, column {error.col}: {error.message}"
    traceback = getattr(error, "traceback", "")
    if traceback:
        return f"{error}\n{traceback.rstrip()}"
    return str(error)


def export_file(
    source: str | Path,
    out: str | Path,
    phase: str | None = None,
    step: int | None = None,
    theme: str | None = None,
    run_scripts: bool = False,
) -> Path:
    """Render ``source`` (.expr/.txt, .json or .py) to ``out`` (.png, .svg or .pdf).

    ``phase='forward'`` shows the end of the forward pass, ``'backward'`` the end of the
    backward pass; ``step`` (1-based, 0 = before any step) wins over ``phase``; default: the
    last step. A script runs only with ``run_scripts`` (else :class:`ScriptNotConfirmed`);
    one that fails raises :class:`ScriptFailed`. Raises :class:`ExportError` with a message
    for people.
    """
    source, out = Path(source), Path(out)
    if out.suffix.lower() not in EXPORT_FORMATS:
        raise ExportError(
            f"cannot export to {out.name}: the output must end in {' or '.join(EXPORT_FORMATS)}"
        )
    if not source.exists():
        raise ExportError(f"cannot read {source}: no such file")
    if not source.is_file():  # a FIFO or a device would block, a folder is no graph
        raise ExportError(f"cannot read {source}: not a regular file")
    script = source.suffix.lower() in SCRIPT_SUFFIXES
    if script and not run_scripts:
        raise ScriptNotConfirmed(source)
    doc = Document(palette=theme or "light")
    if script:
        ok = doc.run_script(source)
    else:
        result = doc.load_path(source)
        ok = bool(result)
    error = doc.last_error
    if not ok and isinstance(error, ScriptError) and not error.result.ok:
        raise ScriptFailed(error.result.error_summary, error.traceback)
    if not ok or doc.scene is None:
        raise ExportError(f"cannot render {source.name}: {_describe(error)}")
    playback = doc.playback
    if step is not None:
        if not 0 <= step <= playback.n_steps:
            raise ExportError(
                f"--step {step} is out of range: {source.name} has {playback.n_steps} steps "
                f"(use 0 to {playback.n_steps})"
            )
        playback.seek(step - 1)
    elif phase is not None:
        spans = [s for s in playback.spans if s.phase == phase]
        if not spans:
            raise ExportError(f"{source.name} has no {phase} steps")
        playback.seek(spans[-1].stop - 1)
    else:
        playback.to_end()
    current = playback.current_step
    where = (
        "before any step"
        if current is None
        else f"step {playback.index + 1}/{playback.n_steps} · {current.phase} · {current.op}"
    )
    caption = f"{doc.title or source.name} — {where}"
    survivors = getattr(doc.leak_report, "survivors", None)
    if survivors:
        here = sum(doc.scene.index_of(s.node_id) >= 0 for s in survivors)
        caption += f" — leak audit: {len(survivors)} objects outlived the run"
        if here < len(survivors):
            caption += f", {here} of them in this graph"
    try:
        return export_graph(
            out,
            doc.scene.geometry,
            doc.frame(),
            theme_named(theme or "light"),
            caption,
            overlays=scene_overlays(doc.scene),
        )
    except (OSError, ValueError) as exc:
        raise ExportError(str(exc)) from exc
