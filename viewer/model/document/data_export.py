"""File > Export of the graph as data: DOT, GraphML, or the trace as JSON (which Open loads).

The writers are the recorder's own (``Trace.to_dot``, ``to_graphml``, ``to_json``); this module
picks one by the file's suffix and knows what a :class:`~autodiff.trace.TraceView` (one
graph of a script) can give: DOT and GraphML of the graph on screen, and JSON of the whole
recording (the JSON format describes a complete trace: Open shows every iteration at once).
Pictures (PNG, SVG) are painted by the Qt side (``viewer.qt.graph.image_export``).

:func:`export_trace` takes the trace and the path, writes the file and returns what it did (an
:class:`ExportResult`), or raises: reporting it is the caller's
(:meth:`Document.export_data <viewer.model.document.document.Document.export_data>`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from autodiff.trace import TraceReader

__all__ = [
    "DATA_FORMATS",
    "FILE_FILTER",
    "ExportResult",
    "export_trace",
    "format_for",
]

# suffix -> (format name, what it holds)
DATA_FORMATS: dict[str, tuple[str, str]] = {
    ".dot": ("DOT", "the graph, for Graphviz"),
    ".gv": ("DOT", "the graph, for Graphviz"),
    ".graphml": ("GraphML", "the graph with every node's attributes (yEd, Gephi, networkx)"),
    ".json": ("JSON", "the whole trace: graph, steps and values; File > Open loads it again"),
}
FILE_FILTER = "DOT graph (*.dot *.gv);;GraphML (*.graphml);;Trace as JSON (*.json)"


@dataclass(frozen=True)
class ExportResult:
    path: Path
    format: str  # 'DOT' | 'GraphML' | 'JSON'
    message: str  # for the status bar


def format_for(path: str | os.PathLike[str]) -> str:
    """'DOT', 'GraphML' or 'JSON' from the suffix; ValueError naming the known ones."""
    suffix = Path(path).suffix.lower()
    if suffix not in DATA_FORMATS:
        known = ", ".join(DATA_FORMATS)
        raise ValueError(
            f"cannot export to {Path(path).name}: unknown suffix {suffix or '(none)'!r}; "
            f"use one of {known} (or .png / .svg for a picture)"
        )
    return DATA_FORMATS[suffix][0]


def export_trace(
    trace: TraceReader, path: str | os.PathLike[str], step: int | None = None
) -> ExportResult:
    """Write ``trace`` (a Trace or a TraceView) to ``path`` in the format its suffix names;
    DOT labels hold the values after ``step`` (the playback's, -1: before any), by default
    the last ones."""
    path = Path(path)
    fmt = format_for(path)
    if fmt == "JSON":
        whole = trace.base  # a TraceView's: the bigger recording it shows one graph of
        if whole is None:
            raise ValueError("this graph has no trace to save as JSON")
        whole.to_json(path)
        note = ""
        if whole is not trace:
            note = " (the script's whole recording, every iteration, not only this graph)"
        return ExportResult(path, fmt, f"Saved the trace to {path.name}{note}")
    # A TraceView exports the graph shown; a Trace its whole graph.
    at = ""
    if fmt == "DOT":
        if step is None:
            path.write_text(trace.to_dot(), encoding="utf-8")
        else:
            path.write_text(trace.to_dot(step), encoding="utf-8")
            at = " with the values before any step" if step < 0 else f" at step {step + 1}"
    else:
        trace.to_graphml(path)
    n = trace.graph.number_of_nodes()
    return ExportResult(path, fmt, f"Exported the graph ({n} nodes) to {path.name} as {fmt}{at}")
