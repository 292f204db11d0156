"""The script worker's result, as files in the run's folder: one schema, written by the worker
(:mod:`viewer.model.scripts.worker`) and read by the app (:mod:`viewer.model.scripts.process`)
through the functions here, one ``write_*`` and one ``read_*`` per part.

* ``result.json``: a :class:`ResultMeta` (the outcome, the graphs as :class:`GraphRow`, the
  leak report's survivors, the pass log's labels, the samples' structure, the problem
  detectors' report: :meth:`~viewer.model.checks.problems.ProblemReport.to_json`);
* ``trace.npz``: the recording (:func:`autodiff.trace.trace_to_npz`); ``segment_N.npz``: the
  recording of pass N alone, for the passes a long run kept past its first ones
  (:mod:`viewer.model.scripts.pass_recording`);
* ``passes.npz``: every pass's scalars (a :class:`~viewer.model.scripts.pass_sampling.PassLog`);
* ``samples.npz``: the samples' arrays (:mod:`viewer.model.scripts.worker_data`).

A reader trusts nothing: what does not fit the schema is a :class:`ValueError` naming it.
Never pickle: a result is data, not code.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from autodiff.leaks import LeakReport, Survivor
from viewer.model.checks.function_check import FunctionSampler
from viewer.model.checks.problems import ProblemReport
from viewer.model.scripts.pass_sampling import PassLog
from viewer.model.scripts.worker_data import pack_samples, unpack_samples

__all__ = [
    "PASSES_NAME",
    "RECORDINGS_DONE_NAME",
    "RESULT_NAME",
    "SAMPLES_NAME",
    "SEGMENT_LOST",
    "SEGMENT_NAME",
    "SEGMENT_NONE",
    "TRACE_NAME",
    "GraphRow",
    "ResultMeta",
    "read_graph_row",
    "read_leaks",
    "read_meta",
    "read_passes",
    "read_samples",
    "write_graph_row",
    "write_leaks",
    "write_meta",
    "write_passes",
    "write_samples",
]

RESULT_NAME = "result.json"
TRACE_NAME = "trace.npz"
SAMPLES_NAME = "samples.npz"
PASSES_NAME = "passes.npz"
SEGMENT_NAME = "segment_{}.npz"
# Written once the worker has written every recording (those of the graphs not shown come
# after ``result.json``): empty, or why some could not be written
RECORDINGS_DONE_NAME = "recordings.done"

SEGMENT_NONE = -1  # the graph is in the run's trace (``trace.npz``)
SEGMENT_LOST = -2  # the graph had a segment of its own that could not be sent


class GraphRow(NamedTuple):
    """One graph of the run (a :class:`~viewer.model.scripts.run.ScriptGraph` less its trace):
    ``segment`` names the file holding its recording, ``SEGMENT_NAME.format(segment)``, or is
    SEGMENT_NONE / SEGMENT_LOST."""

    title: str
    root: int
    backward_pass: int
    number: int
    iteration: int
    loss: float
    flags: int
    segment: int


def write_graph_row(row: GraphRow) -> list[Any]:
    return [
        str(row.title),
        int(row.root),
        int(row.backward_pass),
        int(row.number),
        int(row.iteration),
        float(row.loss),
        int(row.flags),
        int(row.segment),
    ]


def read_graph_row(data: Any) -> GraphRow:
    title, root, bpass, number, iteration, loss, flags, segment = _row(data, len(GraphRow._fields))
    if type(loss) not in (int, float):
        raise ValueError("a graph's loss is not a number")
    return GraphRow(
        _str(title, "graph title"),
        _int(root, "graph root"),
        _int(bpass, "graph pass"),
        _int(number, "graph number"),
        _int(iteration, "graph iteration"),
        float(loss),
        _int(flags, "graph flags"),
        _int(segment, "graph segment"),
    )


def write_leaks(report: LeakReport) -> dict[str, Any]:
    return {
        "survivors": [_write_survivor(s) for s in report.survivors],
        "held_leaves": [_write_survivor(s) for s in report.held_leaves],
    }


def read_leaks(data: Any) -> LeakReport:
    if type(data) is not dict:
        raise ValueError("the leak report is not an object")
    return LeakReport(
        [_read_survivor(r) for r in _list(data.get("survivors"), "survivors")],
        [_read_survivor(r) for r in _list(data.get("held_leaves"), "held leaves")],
    )


def _write_survivor(s: Survivor) -> list[Any]:
    return [int(s.node_id), str(s.kind), str(s.label), str(s.reason), str(s.held_by)]


def _read_survivor(data: Any) -> Survivor:
    node_id, kind, label, reason, held_by = _row(data, 5)
    return Survivor(
        _int(node_id, "node id"),
        _str(kind, "kind"),
        _str(label, "label"),
        _str(reason, "reason"),
        _str(held_by, "held by"),
    )


@dataclass(frozen=True)
class ResultMeta:
    """``result.json``: what the run came to, beside the files of arrays."""

    ok: bool
    cancelled: bool
    error: str | None
    trace_sent: bool  # trace.npz holds the recording
    trace_error: str | None  # why the recording could not be sent
    graphs: tuple[GraphRow, ...]
    pass_labels: tuple[str, ...] | None  # the pass log's parameters; None: no passes.npz
    loss_label: str
    sampling: str | None
    leaks: LeakReport | None
    leak_error: str | None
    exit_code: int | None
    error_line: int | None
    error_message: str | None
    samples: Any  # what write_samples returned; None: no samples
    samples_per_class: int
    # the forward work no backward reached (autodiff.trace.ForwardOnly.as_dict); None: none
    forward_only: dict[str, Any] | None = None
    # the problem detectors' report over the run; None: they did not run, or (read back) the
    # report was malformed, which ``problems_error`` then says
    problems: ProblemReport | None = None
    problems_error: str | None = None


def write_meta(meta: ResultMeta, folder: str | os.PathLike[str]) -> None:
    """``result.json`` in ``folder``, whole or not at all (the app takes its presence for the
    end of the run)."""
    data = {
        "ok": bool(meta.ok),
        "cancelled": bool(meta.cancelled),
        "error": meta.error,
        "trace": bool(meta.trace_sent),
        "trace_error": meta.trace_error,
        "graphs": [write_graph_row(g) for g in meta.graphs],
        "passes": None
        if meta.pass_labels is None
        else {"labels": list(meta.pass_labels), "loss_label": meta.loss_label},
        "sampling": meta.sampling,
        "leaks": None if meta.leaks is None else write_leaks(meta.leaks),
        "leak_error": meta.leak_error,
        "exit_code": meta.exit_code,
        "error_line": meta.error_line,
        "error_message": meta.error_message,
        "samples": meta.samples,
        "samples_per_class": int(meta.samples_per_class),
        "forward_only": meta.forward_only,
        "problems": None if meta.problems is None else meta.problems.to_json(),
    }
    path = os.path.join(folder, RESULT_NAME)
    with open(path + ".part", "w", encoding="utf-8") as f:
        json.dump(data, f, allow_nan=True)
    os.replace(path + ".part", path)


def read_meta(folder: str | os.PathLike[str]) -> ResultMeta:
    """The :class:`ResultMeta` in ``folder``; the outcome's fields of the wrong type read as
    absent, a malformed graph, leak report or pass log is a ValueError."""
    with open(os.path.join(folder, RESULT_NAME), encoding="utf-8") as f:
        data = json.load(f)
    if type(data) is not dict:
        raise ValueError("the result is not an object")
    passes = data.get("passes")
    labels = loss_label = None
    if type(passes) is dict:
        labels = passes.get("labels")
        if type(labels) is not list or not all(type(s) is str for s in labels):
            raise ValueError("the pass log's labels are not text")
        loss_label = _str(passes.get("loss_label", "loss"), "loss label")
    samples = data.get("samples")
    leaks = data.get("leaks")
    problems, problems_error = _problems(data.get("problems"))
    return ResultMeta(
        ok=data.get("ok") is True,
        cancelled=data.get("cancelled") is True,
        error=_opt_str(data.get("error")),
        trace_sent=data.get("trace") is True,
        trace_error=_opt_str(data.get("trace_error")),
        graphs=tuple(read_graph_row(r) for r in _list(data.get("graphs"), "graphs")),
        pass_labels=None if labels is None else tuple(labels),
        loss_label=loss_label or "loss",
        sampling=_opt_str(data.get("sampling")),
        leaks=None if leaks is None else read_leaks(leaks),
        leak_error=_opt_str(data.get("leak_error")),
        exit_code=_opt_int(data.get("exit_code")),
        error_line=_opt_int(data.get("error_line")),
        error_message=_opt_str(data.get("error_message")),
        samples=samples,
        samples_per_class=0
        if samples is None
        else _int(data.get("samples_per_class", 2), "samples_per_class"),
        forward_only=_forward_only(data.get("forward_only")),
        problems=problems,
        problems_error=problems_error,
    )


def _problems(value: Any) -> tuple[ProblemReport | None, str | None]:
    """The problem report, checked (None: absent); a malformed one is left out with why, not a
    failed result: the run's graphs are worth showing without it."""
    if value is None:
        return None, None
    try:
        return ProblemReport.from_json(value), None
    except (ValueError, TypeError) as e:
        return None, f"the problem report is malformed: {e}"


_FORWARD_ONLY_COUNTS = ("operations", "graphs", "through_parameters", "sampled")


def _forward_only(value: Any) -> dict[str, Any] | None:
    """The forward-only summary, checked field by field (None: absent); a malformed one is a
    ValueError, as any other part of the result."""
    if value is None:
        return None
    if type(value) is not dict:
        raise ValueError("forward_only: expected an object")
    out: dict[str, Any] = {
        k: _int(value.get(k, 0), f"forward_only.{k}") for k in _FORWARD_ONLY_COUNTS
    }
    ops = value.get("ops", {})
    if type(ops) is not dict:
        raise ValueError("forward_only.ops: expected an object")
    out["ops"] = {
        _str(k, "forward_only: an op's name"): _int(n, "forward_only: an op's count")
        for k, n in ops.items()
    }
    return out


def write_passes(log: PassLog, folder: str | os.PathLike[str]) -> None:
    """``passes.npz``: the log's arrays (its labels go in :class:`ResultMeta`)."""
    np.savez(
        os.path.join(folder, PASSES_NAME),
        loss=log.loss,
        iteration=log.iteration,
        flags=log.flags,
        grad_norms=log.grad_norms.astype(np.float32),
        data_columns=np.array(sorted(log.data_columns), dtype=np.int64),
    )


def read_passes(meta: ResultMeta, folder: str | os.PathLike[str]) -> PassLog | None:
    path = os.path.join(folder, PASSES_NAME)
    if meta.pass_labels is None or not os.path.isfile(path):
        return None
    with np.load(path, allow_pickle=False) as npz:
        return PassLog.from_arrays(
            npz["loss"],
            npz["iteration"],
            npz["flags"],
            npz["grad_norms"],
            list(meta.pass_labels),
            meta.loss_label,
            npz["data_columns"].reshape(-1).tolist() if "data_columns" in npz.files else (),
        )


def write_samples(sampler: FunctionSampler | None, folder: str | os.PathLike[str]) -> Any:
    """``samples.npz`` (the arrays); returns the structure, for :attr:`ResultMeta.samples`."""
    arrays: list[np.ndarray] = []
    samples = None if sampler is None else pack_samples(sampler, arrays)
    np.savez(os.path.join(folder, SAMPLES_NAME), *arrays)
    return samples


def read_samples(meta: ResultMeta, folder: str | os.PathLike[str]) -> FunctionSampler | None:
    if meta.samples is None:
        return None
    with np.load(os.path.join(folder, SAMPLES_NAME), allow_pickle=False) as npz:
        arrays = [npz[f"arr_{i}"] for i in range(len(npz.files))]
    return unpack_samples(meta.samples, arrays, meta.samples_per_class)


def _row(value: Any, width: int) -> list[Any]:
    if type(value) is not list or len(value) != width:
        raise ValueError(f"expected a row of {width}")
    return value


def _list(value: Any, what: str) -> list[Any]:
    if type(value) is not list:
        raise ValueError(f"{what}: expected a list")
    return value


def _int(value: Any, what: str) -> int:
    if type(value) is not int:
        raise ValueError(f"{what} is not an integer")
    return value


def _str(value: Any, what: str) -> str:
    if type(value) is not str:
        raise ValueError(f"{what} is not text")
    return value


def _opt_int(value: Any) -> int | None:
    return value if type(value) is int else None


def _opt_str(value: Any) -> str | None:
    return value if type(value) is str else None
