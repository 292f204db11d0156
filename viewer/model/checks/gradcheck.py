"""Gradient checks on the graph: is backprop right, and if not, which Function is wrong?

Two checks, both against central differences ``(f(x + h) - f(x - h)) / 2h`` in float64:

* **Leaves** (typed expressions): the program is re-run with each leaf element nudged, and the
  change of every backward root is compared with the gradient backprop gave that leaf. A
  ``grad(y, x)`` call is a backward pass of its own (``create_graph=True``): its root ``y`` is
  checked the same way, and the final backward through the gradient graph checks the second
  (or higher) derivative.
* **Functions** (any graph): each Function's ``backward`` (and its array fast path
  ``backward_data``) is compared with central differences of *its own* ``forward`` at the
  inputs it saw, with a random output gradient. This is what names the culprit: a custom
  Function with a wrong backward fails its local check while every correct primitive passes.
  The live Function is re-run on a fresh instance (its ``__dict__`` copied), so the user's
  graph is never touched (see :mod:`viewer.model.checks.function_check`). For a script, whose
  objects are gone when it ends, a :class:`FunctionSampler` attached to the run keeps the
  parameters and inputs of the first calls of every Function class (ask for it with
  :class:`ScriptSampling`), and checks the script's own classes at once (their module is
  cleared at the end); the run sends them back as ``result.samples``.

Where a function is not differentiable (``relu`` at 0, ``max`` with ties) the two one-sided
differences disagree; a backprop value between them is a valid subgradient, reported as a
``kink``, not as an error. Points where the forward or the gradient is NaN/Inf are reported as
``nonfinite`` (the graph's NaN overlay shows where they were born).

The checks take plain inputs and return a :class:`GradCheckReport`: :func:`check_function`,
:func:`check_trace` (with the samples, if any), :func:`check_program`, and :func:`check_graph`
(the right one for a graph as the viewer shows it). :func:`apply_overlays` colours a scene by a
report (overlay kind ``'gradcheck'``: green < 1e-6 < amber < 1e-3 < red, a wrong Function is
red with a ``wrong backward`` badge). What works with a Document (checking what it shows,
having its scripts keep samples) is in :mod:`viewer.model.document.gradient_checks`.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

import networkx as nx
import numpy as np
from numpy.typing import NDArray

from autodiff import core
from autodiff.trace import TraceReader
from viewer.model.checks.function_check import (
    ATOL,
    MAX_ELEMENTS,
    RTOL,
    STEP,
    Comparison,
    FunctionCheck,
    FunctionSample,
    FunctionSampler,
    SlotCheck,
    _check_at,
    _compare,
    _probe,
    _worst_status,
    check_function,
)
from viewer.model.checks.report import GradCheckReport, LeafCheck, ReportRow
from viewer.model.explain.torch_ops import is_custom_function, is_torch_function
from viewer.model.panels.plots import snapshot_total

__all__ = [
    "ATOL",
    "MAX_ELEMENTS",
    "OBJECTS_GONE_REASON",
    "OVERLAY_KIND",
    "RTOL",
    "SAVED_TRACE_REASON",
    "STEP",
    "TORCH_CUSTOM_REASON",
    "TORCH_NOTE",
    "TORCH_OP_REASON",
    "TORCH_TRACE_REASON",
    "Comparison",
    "FunctionCheck",
    "FunctionSample",
    "FunctionSampler",
    "GradCheckReport",
    "LeafCheck",
    "ReportRow",
    "SlotCheck",
    "apply_overlays",
    "check_function",
    "check_graph",
    "check_program",
    "check_trace",
    "torch_unreachable_reason",
]

MAX_FUNCTIONS = 400  # beyond this, a few Functions of each op stand for the rest
PER_OP = 3  # how many Functions of one op are checked in a big graph
OVERLAY_KIND = "gradcheck"


# =============================================================================
# Every Function of a graph
# =============================================================================
def _function_ids(trace: TraceReader) -> list[int]:
    """The graph's Functions; not those of a detached history (cut before the graph by
    unchain_backward: they belong to an earlier graph, and are checked there)."""
    detached = trace.detached()
    return [f for f in trace.functions if f not in detached]


def _outputs(trace: TraceReader, function: int) -> set[int]:
    return {int(v) for _, v in trace.graph.out_edges(function)}


def _live(trace: TraceReader, node_id: int) -> Any:
    try:
        return trace.live(node_id)
    except (IndexError, KeyError):
        return None


def _check_live(
    function: Any, options: Mapping[str, Any]
) -> tuple[str, tuple[SlotCheck, ...], str]:
    inputs = [x.data for x in getattr(function, "inputs", ())]
    return _check_at(type(function), dict(vars(function)), inputs, **options)


def _torch_recorded(
    trace: TraceReader, fids: list[int], op: str, options: Mapping[str, Any]
) -> tuple[str, tuple[SlotCheck, ...], str] | None:
    """torch.autograd.gradcheck of custom Function ``op`` on its recorded inputs, where its
    class is defined in this process; None where it is not (or torch was never imported:
    then nothing here recorded a torch program)."""
    if "torch" not in sys.modules:
        return None
    from viewer.model.checks.torch_check import check_recorded

    return check_recorded(trace, fids, op, **options)


def _function_checks(
    trace: TraceReader,
    samples: FunctionSampler | None,
    *,
    max_functions: int = MAX_FUNCTIONS,
    classes_here: bool = False,
    **options: Any,
) -> tuple[list[FunctionCheck], list[str]]:
    ids = _function_ids(trace)
    checks: list[FunctionCheck] = []
    notes: list[str] = []
    torch_ids = [fid for fid in ids if is_torch_function(trace, fid)]
    if torch_ids:
        # torch's nodes are torch's code: re-running an autodiff primitive of the same op name
        # (or a sample of one) would check something else
        # a cut of torch's (detach, .data, no_grad) made no autograd node: nothing to check
        cut = set(trace.cuts())
        ids = [
            fid
            for fid in ids
            if fid not in set(torch_ids)
            and not (trace.function_params(fid) == {} and _outputs(trace, fid) <= cut)
        ]
        by_torch_op: dict[str, list[int]] = {}
        for fid in torch_ids:
            by_torch_op.setdefault(trace.node(fid)["op"], []).append(fid)
        for op, fids in by_torch_op.items():
            if not is_custom_function(trace, fids[0]):
                checks.append(FunctionCheck(tuple(fids), op, "skipped", message=TORCH_OP_REASON))
                continue
            # the program's own autograd.Function: torch.autograd.gradcheck ran on its first
            # inputs while the script ran (its class is gone with the script)
            found = samples.for_op(op, torch=True) if samples is not None else []
            if not found:
                # a recording made in this process: the live class on the recorded inputs
                checked = _torch_recorded(trace, fids, op, options) if classes_here else None
                if checked is None:
                    checks.append(
                        FunctionCheck(tuple(fids), op, "skipped", message=TORCH_CUSTOM_REASON)
                    )
                else:
                    checks.append(FunctionCheck(tuple(fids), op, *checked, "live"))
                continue
            results = [s.check() for s in found]
            status = _worst_status(r[0] for r in results)
            worst = next(r for r in results if r[0] == status)
            checks.append(FunctionCheck(tuple(fids), op, status, worst[1], worst[2], "sample"))
    ops = {fid: trace.node(fid)["op"] for fid in ids}
    by_op: dict[str, list[int]] = {}
    for fid in ids:
        by_op.setdefault(ops[fid], []).append(fid)
    big = len(ids) > max_functions
    if big:
        notes.append(
            f"{len(ids)} Functions: {PER_OP} of each op were checked, and stand for the rest"
        )
    for op, fids in by_op.items():
        live = [(fid, f) for fid in fids if (f := _live(trace, fid)) is not None]
        if big and live:
            results = [_check_live(f, options) for _, f in live[:PER_OP]]
            status = _worst_status(r[0] for r in results)
            worst = next(r for r in results if r[0] == status)
            checks.append(FunctionCheck(tuple(fids), op, status, worst[1], worst[2], "live"))
            continue
        for fid, function in live:
            status, slots, message = _check_live(function, options)
            checks.append(FunctionCheck((fid,), op, status, slots, message, "live"))
        freed = tuple(fid for fid in fids if all(fid != lf for lf, _ in live))
        if not freed:
            continue
        found = samples.for_op(op) if samples is not None else []  # (autodiff's, not torch's)
        if not found:
            checks.append(
                FunctionCheck(
                    freed,
                    op,
                    "skipped",
                    message=(
                        f"{op} was not checked: its objects are gone (a script that ended, a "
                        "saved trace) and no sample was kept. Check a live graph "
                        "(viewer.show(y)) or run the script from the viewer"
                    ),
                )
            )
            continue
        results = [s.check(**options) for s in found]
        status = _worst_status(r[0] for r in results)
        worst = next(r for r in results if r[0] == status)
        checks.append(FunctionCheck(freed, op, status, worst[1], worst[2], "sample"))
    return checks, notes


TORCH_OP_REASON = (
    "torch's op, recorded by autodiff.trace.pytorch: this check re-runs autodiff's Functions "
    "and cannot re-run torch's nodes; its gradients are shown as torch computed them"
)
TORCH_CUSTOM_REASON = (
    "a custom torch.autograd.Function, not checked: its class is not reachable from this "
    "recording (a saved trace, or one recorded elsewhere), and no check of it was kept. A "
    "script run from the viewer (File > Open Script) gradchecks it while it runs"
)
TORCH_TRACE_REASON = (
    "every Function here is torch's (a recording of autodiff.trace.pytorch): this check "
    "re-runs autodiff's Functions, not torch's nodes, so nothing was checked (your own "
    "torch.autograd.Functions are checked, with torch.autograd.gradcheck in float64)"
)


def torch_unreachable_reason(ops: Sequence[str]) -> str:
    """Why nothing of a torch recording was checked when its custom Functions ``ops`` could
    not be: torch's own nodes are never re-run, and their classes are not reachable."""
    names = ", ".join(ops)
    return (
        "nothing was checked: torch's own nodes are not re-run here, and the class of your "
        f"custom torch.autograd.Function {names} is not reachable from this recording (a saved "
        "trace, or one recorded elsewhere) and no check of it was kept. A script run from the "
        "viewer (File > Open Script) gradchecks it while it runs"
    )


TORCH_NOTE = (
    "your own torch.autograd.Functions are checked with torch.autograd.gradcheck in float64 "
    "(the figures: backward against central differences of forward); torch's own ops are not "
    "re-run (a skipped row says why)"
)
SAVED_TRACE_REASON = (
    "a saved trace holds no program to re-run, and its objects are gone: gradients can't be "
    "checked numerically. Open the expression or the script that recorded it to check it"
)
OBJECTS_GONE_REASON = (
    "the graph's objects are gone (a script that ended, a released graph) and no sample was "
    "kept: gradients can't be checked numerically. Check a live graph (viewer.show(y)), a "
    "typed expression, or a script run from the viewer"
)


def check_trace(
    trace: TraceReader,
    samples: FunctionSampler | None = None,
    *,
    saved: bool = False,
    classes_here: bool = True,
    rtol: float = RTOL,
    atol: float = ATOL,
    max_elements: int = MAX_ELEMENTS,
    max_functions: int = MAX_FUNCTIONS,
    seed: int = 0,
) -> GradCheckReport:
    """Check every Function of ``trace`` (a Trace or TraceView) locally.

    Live Functions (``trace.live(id)``: the graph is still referenced, as with
    ``viewer.show(y)``) are re-run at their own inputs; freed ones use ``samples`` (kept while
    a script ran: its ``result.samples``) by op name. Leaf gradients are not re-derived here:
    without the program that built the graph there is nothing to re-run (see
    :func:`check_program`).

    A custom ``torch.autograd.Function`` of a torch recording is checked with
    ``torch.autograd.gradcheck``: from ``samples`` (the check its script's run made), else,
    with ``classes_here`` (the recording was made in this process, where its class is still
    defined; never for a ``saved`` trace), on the inputs the recording kept.

    When no Function can be re-run at all (``saved``: the trace was loaded from a file) the
    report has no rows, only its ``reason``.
    """
    began = time.perf_counter()
    options = {"rtol": rtol, "atol": atol, "max_elements": max_elements, "seed": seed}
    checks, notes = _function_checks(
        trace,
        samples,
        max_functions=max_functions,
        classes_here=classes_here and not saved,
        **options,
    )
    reason = ""
    if not checks:
        reason = "the graph has no Function to check (a leaf alone)"
    elif all(c.message in (TORCH_OP_REASON, TORCH_CUSTOM_REASON) for c in checks):
        custom = sorted({c.op for c in checks if c.message == TORCH_CUSTOM_REASON})
        reason = torch_unreachable_reason(custom) if custom else TORCH_TRACE_REASON
        checks, notes = [], []
    elif all(c.message == TORCH_OP_REASON or c.source in ("live", "sample") for c in checks) and (
        not any(c.status in ("ok", "kink", "wrong") for c in checks)
    ):
        # torch's ops and custom Functions that could not be checked: the rows say why
        reason = next(c.message for c in checks if c.source in ("live", "sample"))
    elif all(c.status == "skipped" and c.source == "" for c in checks):
        # One row per op saying the same thing would contradict nothing-checked: drop them.
        reason = SAVED_TRACE_REASON if saved else OBJECTS_GONE_REASON
        checks, notes = [], []
    else:
        torch_rows = [
            c for c in checks if c.node_ids and all(is_torch_function(trace, n) for n in c.node_ids)
        ]
        if torch_rows:
            notes.append(TORCH_NOTE)
        if len(torch_rows) < len(checks):
            notes.append(
                "each Function's backward was compared with central differences of its own "
                "forward (a skipped row says why it could not be); leaf gradients are "
                "re-derived only for typed expressions"
            )
    return GradCheckReport(
        "trace",
        (),
        tuple(checks),
        tuple(notes),
        time.perf_counter() - began,
        rtol,
        atol,
        reason=reason,
    )


# =============================================================================
# Typed expressions: leaves, every backward pass, and the Functions
# =============================================================================
def _pass_ends(trace: TraceReader) -> dict[int, int]:
    ends: dict[int, int] = {}
    for step in trace.steps:
        if step.phase == "backward":
            ends[step.backward_pass] = step.index
    return ends


def _derivative_orders(trace: TraceReader, roots: Sequence[int]) -> list[int]:
    """1 + how many create_graph passes built a part of each root's graph."""
    during = {s.function: s.during_backward for s in trace.steps if s.during_backward >= 0}
    graph = trace.graph
    orders = []
    for root in roots:
        upstream = nx.ancestors(graph, root) if root in graph else set()
        orders.append(1 + len({during[n] for n in upstream if n in during}))
    return orders


def _root_label(trace: TraceReader, root: int, program_output: str | None, last: bool) -> str:
    name = trace.node(root).get("name")
    if name:
        return str(name)
    if last and program_output:
        return program_output
    return f"#{root}"


def check_program(
    program: Any,
    values: Mapping[str, Any] | None = None,
    *,
    rtol: float = RTOL,
    atol: float = ATOL,
    max_elements: int = MAX_ELEMENTS,
    check_functions: bool = True,
    seed: int = 0,
) -> GradCheckReport:
    """Check a typed expression (a :class:`viewer.model.expression.program.Program`) at ``values``
    (leaf name -> value; the program's defaults otherwise).

    For every backward pass (each ``grad()`` call, then the final backward) and every leaf it
    reaches: backprop's gradient against central differences of the pass's root, the program
    being re-run with the leaf nudged; leaves of more than ``max_elements`` elements are
    checked along random directions. Then every Function locally (``check_functions``).
    Node ids are those of a run of the same program, as the document shows it.
    """
    from viewer.model.expression.program import ExpressionError

    began = time.perf_counter()
    values = dict(values or {})
    sizes = [np.size(values.get(n, program.defaults[n])) for n in program.leaves]
    keep = max([16, *sizes])
    # The engine holds outputs weakly: Functions of a gradient graph whose outputs nobody
    # kept are gone after the run. Keep them for the length of the check.
    keeper = _Keeper()
    core.add_observer(keeper)
    try:
        base = program.run(values, max_array_size=keep)
    finally:
        core.remove_observer(keeper)
    notes: list[str] = []
    try:
        trace = base.trace
        roots = list(trace.backward_roots)
        ends = _pass_ends(trace)
        orders = _derivative_orders(trace, roots)
        ids = {id(obj): nid for nid in trace.variables if (obj := trace.live(nid)) is not None}
        leaf_ids = {name: ids.get(id(v)) for name, v in base.leaves.items()}
        graph = trace.graph
        last_pass = len(roots) - 1
        labels = [
            _root_label(trace, r, program.output_name, p == last_pass) for p, r in enumerate(roots)
        ]
        leaf_values = {n: np.array(base.values[n], dtype=np.float64) for n in program.leaves}

        def roots_at(name: str, x: NDArray[np.float64]) -> NDArray[np.float64]:
            """The value (summed) of every pass's root with leaf ``name`` set to ``x``."""
            run_values = {**leaf_values, name: x}
            try:
                with np.errstate(all="ignore"):
                    ev = program.run(run_values, backward=False, max_array_size=16)
            except ExpressionError:
                return np.full(len(roots), math.nan)
            t = ev.trace
            if list(t.backward_roots) != roots[:last_pass]:
                raise _Mismatch
            out = [snapshot_total(t.node(r)["value"]) for r in roots[:last_pass]]
            output = ev.output
            out.append(float(np.sum(output.data)) if output is not None else math.nan)
            ev.release()
            return np.asarray(out, dtype=np.float64)

        upstream = [nx.ancestors(graph, r) if r in graph else set() for r in roots]
        rng = np.random.default_rng(seed)
        leaf_checks: list[LeafCheck] = []
        for name in program.leaves:
            nid = leaf_ids.get(name)
            if nid is None:
                notes.append(f"{name} is not used by the expression: nothing to check")
                continue
            passes = [p for p, r in enumerate(roots) if nid == r or nid in upstream[p]]
            if not passes:
                continue
            x = leaf_values[name]
            probe = None  # stays None where x holds NaN or Inf: nothing to compare
            if np.all(np.isfinite(x)):
                try:
                    probe = _probe(lambda v, name=name: roots_at(name, v), x, rng, max_elements)
                except _Mismatch:
                    notes.append(
                        f"re-running with another {name} built a different graph: not checked"
                    )
                    continue
            for p in passes:
                comparison = None
                if probe is None:
                    status, message = "nonfinite", f"{name} holds NaN or Inf"
                else:
                    if p == last_pass:
                        leaf = base.leaves[name]
                        grad = None if leaf.grad is None else leaf.grad.data
                    else:
                        snap = trace.grad_at(nid, ends[p]) if p in ends else None
                        grad = None if snap is None else snap.array
                    comparison = _compare(grad, probe, p, x.shape, rtol, atol)
                    status = comparison.status
                    message = _leaf_message(name, labels[p], comparison)
                leaf_checks.append(
                    LeafCheck(
                        name, nid, roots[p], labels[p], p, orders[p], status, comparison, message
                    )
                )
        function_checks: list[FunctionCheck] = []
        if check_functions:
            options = {"rtol": rtol, "atol": atol, "max_elements": max_elements, "seed": seed}
            function_checks, more = _function_checks(trace, None, **options)
            notes.extend(more)
    finally:
        base.release()
        keeper.functions.clear()
    return GradCheckReport(
        "expression",
        tuple(leaf_checks),
        tuple(function_checks),
        tuple(notes),
        time.perf_counter() - began,
        rtol,
        atol,
    )


class _Mismatch(Exception):
    """A re-run of the program built a differently shaped graph."""


class _Keeper:
    """An engine observer that holds every recorded Function (only during a check)."""

    def __init__(self) -> None:
        self.functions: list[Any] = []

    def on_forward(self, function: Any, inputs: Any, outputs: Any, recorded: bool) -> None:
        if recorded:
            self.functions.append(function)


def _leaf_message(name: str, root: str, cmp: Comparison) -> str:
    if cmp.status == "nonfinite":
        return f"d{root}/d{name}: NaN or Inf here; nothing to compare"
    text = f"max error {cmp.max_abs_error:.3g} (relative {cmp.relative_error:.2g})"
    if cmp.analytic is not None and cmp.numeric is not None and cmp.analytic.size <= 4:
        text += (
            f"; backprop {np.array2string(cmp.analytic.reshape(-1), precision=6)}, "
            f"numeric {np.array2string(cmp.numeric.reshape(-1), precision=6)}"
        )
    if cmp.status == "kink":
        text += f"; not differentiable at {cmp.kinks} point(s), a one-sided value was used"
    return text


# =============================================================================
# The scene
# =============================================================================
def apply_overlays(scene: Any, report: GradCheckReport) -> int:
    """Colour the checked nodes of ``scene`` by their error (overlay kind ``'gradcheck'``);
    wrong Functions are flagged red with a ``wrong backward`` badge. Returns how many nodes
    got an overlay. Read them back with ``scene.overlay_arrays('gradcheck')``."""
    from viewer.model.scene.overlays import Overlay

    errors = {n: e for n, e in report.node_errors().items() if scene.index_of(n) >= 0}
    scene.set_error_colours(errors, OVERLAY_KIND)
    tips: dict[int, list[str]] = {}
    for leaf in report.leaves:
        if leaf.node_id in errors:
            tips.setdefault(leaf.node_id, []).append(f"{leaf.label}: {leaf.message}")
    wrong: set[int] = set()
    for check in report.functions:
        for nid in check.node_ids:
            if nid in errors:
                tips.setdefault(nid, []).append(check.message)
                if check.status == "wrong":
                    wrong.add(nid)
    for nid, lines in tips.items():
        current = next(o for o in scene.overlays[nid] if o.kind == OVERLAY_KIND)
        if nid in wrong:
            overlay = Overlay(OVERLAY_KIND, "wrong backward", scene.palette.error, "\n".join(lines))
        else:
            overlay = Overlay(OVERLAY_KIND, current.badge, current.color, "\n".join(lines))
        scene.set_overlay(nid, overlay)
    return len(errors)


def check_graph(
    trace: TraceReader,
    program: Any = None,
    values: Mapping[str, Any] | None = None,
    *,
    samples: FunctionSampler | None = None,
    saved: bool = False,
    classes_here: bool = True,
    **options: Any,
) -> GradCheckReport:
    """Check a graph as the viewer shows it.

    With the typed ``program`` that built ``trace``: :func:`check_program` at ``values``
    (leaves and Functions), keeping only the results whose node ids mean the same node in
    ``trace``. Without: :func:`check_trace` with a script's ``samples``; ``saved``: the trace
    was loaded from a file (nothing of it can be re-run); ``classes_here``: it was recorded in
    this process (a custom torch Function's class may still be defined here).
    """
    if program is not None:
        return _matched(check_program(program, values, **options), trace)
    return check_trace(trace, samples, saved=saved, classes_here=classes_here, **options)


def _matched(report: GradCheckReport, trace: TraceReader) -> GradCheckReport:
    """Keep only results whose node ids mean the same node in the document's ``trace`` (the
    check ran the program again; a deterministic program gives the same ids)."""

    def same(nid: int, op: str | None, name: str | None) -> bool:
        try:
            attrs = trace.node(nid)
        except (IndexError, KeyError):
            return False
        return attrs.get("op") == op if op is not None else attrs.get("name") == name

    leaves = tuple(c for c in report.leaves if same(c.node_id, None, c.name))
    functions = tuple(c for c in report.functions if all(same(n, c.op, None) for n in c.node_ids))
    if len(leaves) == len(report.leaves) and len(functions) == len(report.functions):
        return report
    notes = (*report.notes, "the graph on screen differs from a fresh run: some results hidden")
    return dataclasses.replace(report, leaves=leaves, functions=functions, notes=notes)
