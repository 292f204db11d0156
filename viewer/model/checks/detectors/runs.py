"""Detectors of a whole run's passes: diverging-loss, graph-held, wrong-backward (and the run's
nonfinite flags).

They read a :class:`~viewer.model.checks.problems.RunInput`: every pass's loss and flags
(:mod:`viewer.model.scripts.pass_sampling`'s ``FLAG_*``), kept or not, and what the script run
adds in ``RunInput.extra`` (each key optional; a detector that needs a missing one raises
CannotRun or falls back as said):

* ``keys``: per pass, the index of its *loss line*: the script line that called ``backward()``
  and the root's shape, as :class:`~viewer.model.scripts.pass_recording.PassRecording` counts
  iterations (a training loss and a validation loss are two lines); without it, lines are
  told apart by the passes' iterations (``iterations``);
* ``lines``: per loss line, the script's line number (-1: unknown);
* ``iterations``: per pass, its iteration within its line;
* ``sampled``: whether the script's own Functions were gradient-checked in the run, and
  ``samples``: the :class:`~viewer.model.checks.function_check.FunctionSampler` holding the
  checks that failed (the class, the input, the numbers);
* ``wrong``: kept pass index (from 0) -> the ops whose check failed in it;
* ``op_nodes``: graph index -> op -> (its function node ids, the step of its first backward);
* ``roots``: graph index -> the loss's node id in that graph;
* ``held_by``: what the leak audit found holding the program's graphs (its words);
* ``held_long``: the passes (from 0) whose root was still alive a whole pass after the next;
* ``held_in``: the script's global that held the first of those roots, in words
  ("`history` (a list, line 28: history.append(loss))"), found before the script's names
  were dropped (the audit, run after, cannot see them);
* ``audit``: what the leak audit found alive once the program's names were dropped, one entry
  per (reason, holder): ``(reason, holder, how many nodes, graph, node ids in that graph)``,
  the reason ``'referenced'`` (something still holds it) or ``'cycle'`` (a reference cycle).

This module is plain Python and numpy: no Qt.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from viewer.model.checks.problems import CannotRun, Problem, RunInput, Thresholds, run_detector
from viewer.model.scripts.pass_sampling import (
    FLAG_GRADCHECK,
    FLAG_HELD,
    FLAG_NONFINITE,
    FLAG_UNCHECKED,
    format_loss,
)

__all__ = [
    "diverging_loss",
    "graph_held",
    "loss_lines",
    "run_nonfinite",
    "wrong_backward",
]

# A long run's loss is compared in blocks: at most this many block means per line, so the
# minibatch noise of thousands of passes averages out and a growth over `diverging_passes`
# blocks is a trend of the whole run, not a bad batch.
MAX_BLOCKS = 50
# A growth smaller than this share of the line's largest loss is noise around convergence
# (a loss of 1e-6 doubling), not divergence.
NOISE_FLOOR = 1e-3
_HOLDERS_NAMED = 2  # graph-held: what holds the graphs at the program's end, named at most


def _flags(run: RunInput) -> np.ndarray:
    return np.asarray(run.flags, dtype=np.int64).reshape(-1)


def _numbers(run: RunInput, n: int) -> list[int]:
    numbers = list(run.numbers)
    return numbers if len(numbers) == n else list(range(1, n + 1))


def loss_lines(run: RunInput) -> list[np.ndarray]:
    """The passes (positions in ``run``) of each loss line, in order of first appearance: by
    ``extra['keys']`` when given, else by iteration (a pass of iteration k continues the first
    line whose last pass had iteration k - 1; iteration 0, or none such, starts a line)."""
    n = len(run.losses)
    keys = run.extra.get("keys")
    if keys is not None and len(keys) == n:
        keys = np.asarray(keys, dtype=np.int64)
        order = list(dict.fromkeys(keys.tolist()))
        return [np.flatnonzero(keys == k) for k in order]
    iterations = run.extra.get("iterations")
    if iterations is None or len(iterations) != n:
        return [np.arange(n)] if n else []
    lines: list[list[int]] = []
    last: list[int] = []  # each line's last iteration
    for i, it in enumerate(np.asarray(iterations, dtype=np.int64).tolist()):
        # the line waiting longest for this iteration (interleaved lines take turns)
        match = next((k for k in range(len(lines)) if last[k] == it - 1), -1)
        if it <= 0 or match < 0:
            lines.append([i])
            last.append(it)
        else:
            lines[match].append(i)
            last[match] = it
    return [np.asarray(line, dtype=np.int64) for line in lines]


def _line_of(run: RunInput, position: int) -> int:
    """The script line of the pass at ``position``'s backward (-1: unknown)."""
    keys, lines = run.extra.get("keys"), run.extra.get("lines")
    if keys is None or lines is None or position >= len(keys):
        return -1
    key = int(keys[position])
    return int(lines[key]) if 0 <= key < len(lines) else -1


def _on_line(run: RunInput, position: int) -> str:
    line = _line_of(run, position)
    return f" (backward() on line {line})" if line >= 0 else ""


def _graph_of(run: RunInput, number: int) -> int | None:
    return run.graph_of_pass.get(number)


def _root_nodes(run: RunInput, graph: int | None) -> tuple[int, ...]:
    root = run.extra.get("roots", {}).get(graph) if graph is not None else None
    return () if root is None else (int(root),)


# =============================================================================
# diverging-loss
# =============================================================================
@run_detector("diverging-loss")
def diverging_loss(run: RunInput, limits: Thresholds) -> list[Problem]:
    """The loss of one line growing over ``limits.diverging_passes`` successive passes by at
    least ``limits.diverging_factor`` (warning), or turning NaN/Inf after finite values (error).

    A long line is compared in at most :data:`MAX_BLOCKS` block means (minibatch noise
    averages out); a growth is counted only when it is larger than ``diverging_factor - 1``
    times the loss it grew from and than :data:`NOISE_FLOOR` of the line's largest loss, and
    when the line's second half averages ``diverging_factor`` times its first half or more (a
    loss that rises within each epoch, its batches always in the same order, and falls from
    one epoch to the next is not diverging)."""
    losses = np.asarray(run.losses, dtype=np.float64).reshape(-1)
    if len(losses) < 2:
        raise CannotRun("fewer than 2 backward passes: no trend to look at")
    numbers = _numbers(run, len(losses))
    found = []
    for line in loss_lines(run):
        values = losses[line]
        finite = np.isfinite(values)
        bad = np.flatnonzero(~finite)
        if bad.size and finite[: bad[0]].any():
            found.append(_turned_nonfinite(run, line, values, int(bad[0]), numbers))
            continue
        if bad.size:
            continue  # never finite from the start: the nonfinite detectors say where
        growth = _growth(values, limits)
        if growth is not None:
            found.append(_grew(run, line, values, growth, numbers))
    return found


def _turned_nonfinite(
    run: RunInput, line: np.ndarray, values: np.ndarray, bad: int, numbers: Sequence[int]
) -> Problem:
    position = int(line[bad])
    number = numbers[position]
    before = int(line[bad - 1])
    first = float(values[0])
    last = float(values[bad - 1])
    trend = "after growing" if last > first else "after falling"
    message = (
        f"the loss{_on_line(run, position)} turned {format_loss(float(values[bad]))} at pass "
        f"#{number}, {trend} from {format_loss(first)} at pass #{numbers[int(line[0])]} to "
        f"{format_loss(last)} at pass #{numbers[before]}: lower the learning rate (e.g. 10x), "
        "or clip the gradients"
    )
    graph = _graph_of(run, number)
    if graph is None:
        graph = _graph_of(run, numbers[before])
    return Problem("diverging-loss", "error", message, graph, None, _root_nodes(run, graph))


def _growth(values: np.ndarray, limits: Thresholds) -> tuple[int, int, int] | None:
    """(first block, last block, block size) of the first stretch of at least
    ``diverging_passes`` successive growths that counts, else None."""
    n = len(values)
    size = max(1, math.ceil(n / MAX_BLOCKS))
    blocks = n // size
    if blocks < 2:
        return None
    half = n // 2
    early, late = float(values[:half].mean()), float(values[half:].mean())
    floor = NOISE_FLOOR * float(np.max(np.abs(values)))
    if late - early <= (limits.diverging_factor - 1.0) * max(abs(early), floor):
        return None  # no worse overall: a loss that rises within each epoch, then falls again
    means = values[: blocks * size].reshape(blocks, size).mean(axis=1)
    rising = np.diff(means) > 0
    want = max(1, int(limits.diverging_passes))
    start = 0
    while start < len(rising):
        if not rising[start]:
            start += 1
            continue
        end = start
        while end < len(rising) and rising[end]:
            end += 1
        # blocks start..end grew at each step
        if end - start >= want:
            low, high = float(means[start]), float(means[end])
            scale = max(abs(low), floor)
            if high - low > (limits.diverging_factor - 1.0) * scale and high - low > floor:
                return start, end, size
        start = end
    return None


def _grew(
    run: RunInput,
    line: np.ndarray,
    values: np.ndarray,
    growth: tuple[int, int, int],
    numbers: Sequence[int],
) -> Problem:
    start, end, size = growth
    first_pos = int(line[start * size])
    last_pos = int(line[min(len(line) - 1, (end + 1) * size - 1)])
    low = float(values[start * size : (start + 1) * size].mean())
    high = float(values[end * size : (end + 1) * size].mean())
    count = (end - start) * size
    if size == 1:
        what = f"over {count} passes in a row"
        span = (
            f"from {format_loss(low)} at pass #{numbers[first_pos]} to {format_loss(high)} at "
            f"pass #{numbers[last_pos]}"
        )
    else:
        what = f"over {end - start} blocks of {size} passes in a row"
        span = (
            f"from a mean of {format_loss(low)} (passes #{numbers[first_pos]}-) to "
            f"{format_loss(high)} (to pass #{numbers[last_pos]})"
        )
    ratio = f" (x{high / low:.3g})" if low > 0 else ""
    message = (
        f"the loss{_on_line(run, first_pos)} grew {what}, {span}{ratio}: the learning rate is "
        "likely too large; lower it (e.g. 10x) or clip the gradients"
    )
    graph = _graph_of(run, numbers[last_pos])
    if graph is None:  # the last kept pass of the stretch
        kept = [numbers[int(p)] for p in line if run.graph_of_pass.get(numbers[int(p)]) is not None]
        inside = [k for k in kept if numbers[first_pos] <= k <= numbers[last_pos]]
        graph = _graph_of(run, inside[-1]) if inside else None
    return Problem("diverging-loss", "warning", message, graph, None, _root_nodes(run, graph))


# =============================================================================
# graph-held
# =============================================================================
@run_detector("graph-held")
def graph_held(run: RunInput, limits: Thresholds) -> list[Problem]:
    """Passes whose graph the program kept alive after the next pass of the same line
    (FLAG_HELD): the first, how many, the backward's line, and what held them if the leak
    audit said (warning).

    Given ``extra['held_long']`` (the passes whose root was alive still a whole pass later,
    as the recording tells), only those are a warning: a loss alive only while the next pass
    runs is a variable not rebound yet (``loss = train_step()``), one graph more in memory at
    a time, which is said as info.

    Given ``extra['audit']``, graphs something still referenced when the program ended (an
    intermediate kept in a list, a Variable captured by a callback) are a warning too, when
    the passes did not show it already; graphs kept only by a reference cycle (freed when
    the cycle collector runs: memory held longer, no wrong number) are said as info."""
    flags = _flags(run)
    audit = run.extra.get("audit") or []
    if len(flags) < 2 and not audit:
        raise CannotRun("fewer than 2 backward passes: a held graph shows at the next pass")
    found = _held_passes(run, flags) if len(flags) >= 2 else []
    if not any(p.severity == "warning" for p in found):
        found += _held_at_end(audit)
    return found


def _held_at_end(audit: Sequence[Any]) -> list[Problem]:
    """The leak audit's survivors as graph-held problems: one for what is still referenced
    (warning), one for what only a reference cycle keeps (info)."""
    found = []
    for reason, severity in (("referenced", "warning"), ("cycle", "info")):
        entries = [a for a in audit if a[0] == reason]
        if not entries:
            continue
        count = sum(int(a[2]) for a in entries)
        graph = next((a[3] for a in entries if a[3] is not None), None)
        nodes = tuple(n for a in entries if a[3] == graph for n in a[4])
        holders = list(dict.fromkeys(a[1] for a in entries))
        if reason == "referenced":
            named = ", ".join(holders[:_HOLDERS_NAMED])
            message = (
                f"{count} nodes of the program's graphs were still alive when it ended, held by "
                f"{named}: a Variable kept there keeps its creator and everything upstream "
                "alive; keep numbers (float(v.data)) instead, or drop the reference when done"
            )
        else:
            message = (
                f"{count} nodes of the program's graphs outlived it in a reference cycle, freed "
                "only when the cycle collector runs: memory held longer, no wrong gradient; "
                "break the cycle (x.cleargrad() after backward(create_graph=True), no Function "
                "keeping its outputs)"
            )
        found.append(Problem("graph-held", severity, message, graph, None, nodes))
    return found


def _held_passes(run: RunInput, flags: np.ndarray) -> list[Problem]:
    """The passes flagged held (see :func:`graph_held`)."""
    flagged = np.flatnonzero(flags & FLAG_HELD)
    if not flagged.size:
        return []
    numbers = _numbers(run, len(flags))
    held_long = run.extra.get("held_long")
    held = flagged if held_long is None else np.unique(np.asarray(held_long, dtype=np.int64))
    if not held.size:
        first = int(flagged[0])
        message = (
            f"each pass's loss was still referenced while the next pass ran, from pass "
            f"#{numbers[first]}{_on_line(run, first)} (e.g. loss = train_step() keeps the "
            "last loss until the call returns): one graph more in memory at a time, freed "
            "after; not a leak"
        )
        return [Problem("graph-held", "info", message)]
    first = int(held[0])
    number = numbers[first]
    count = len(held)
    held_in = run.extra.get("held_in")
    holders = [h for h in run.extra.get("held_by", ()) if h]
    by = f", held by {held_in}" if held_in else ""
    if holders:  # still alive when the program ended: a module outliving the script holds them
        by += f"; the leak audit found them{' still' if held_in else ''} held by {holders[0]}"
    what = (
        "it keeps each iteration's loss"
        if held_in
        else "something keeps each iteration's loss (e.g. history.append(loss))"
    )
    passes = f"{count} passes" if count != 1 else "1 pass"
    message = (
        f"the graphs of {passes} stayed alive after their pass, the first pass #{number}"
        f"{_on_line(run, first)}{by}: {what}, and with it the whole graph; keep the number "
        "instead: float(loss.data) (loss.item() in PyTorch)"
    )
    graph = _graph_of(run, number)
    return [Problem("graph-held", "warning", message, graph, None, _root_nodes(run, graph))]


# =============================================================================
# wrong-backward
# =============================================================================
@run_detector("wrong-backward")
def wrong_backward(run: RunInput, limits: Thresholds) -> list[Problem]:
    """The script's own Functions whose backward failed its gradient check in a pass
    (FLAG_GRADCHECK; the sampler's kept check names the class and the input), one problem per
    class (error); passes where the checks' time budget left them unchecked (FLAG_UNCHECKED)
    are said in one info problem."""
    if not run.extra.get("sampled"):
        raise CannotRun("the script's own Functions were not gradient-checked in this run")
    flags = _flags(run)
    numbers = _numbers(run, len(flags))
    failed = np.flatnonzero(flags & FLAG_GRADCHECK)
    found = []
    checks = _failed_checks(run.extra.get("samples"))
    wrong_in: dict[int, Sequence[str]] = run.extra.get("wrong", {})
    for op, message in checks.items():
        passes = sorted(p for p, ops in wrong_in.items() if op in ops)
        first = passes[0] if passes else (int(failed[0]) if failed.size else None)
        where = ""
        graph = None
        nodes: tuple[int, ...] = ()
        step = None
        if first is not None and first < len(numbers):
            number = numbers[first]
            where = f"; first in pass #{number}{_on_line(run, first)}"
            if failed.size > 1:
                where += f", {failed.size} passes flagged"
            graph = _graph_of(run, number)
            found_nodes = run.extra.get("op_nodes", {}).get(graph, {}).get(op)
            if found_nodes is not None:
                nodes, step = tuple(found_nodes[0]), found_nodes[1]
        found.append(
            Problem(
                "wrong-backward",
                "error",
                f"{message}{where}: fix the derivative in {op}.backward "
                "(Ctrl+G shows every input's numbers)",
                graph,
                step,
                nodes,
            )
        )
    if failed.size and not checks:
        number = numbers[int(failed[0])]
        found.append(
            Problem(
                "wrong-backward",
                "error",
                f"a Function of the script's own failed its gradient check in {failed.size} "
                f"passes, the first pass #{number}{_on_line(run, int(failed[0]))}; its check "
                "was not kept: run Check Gradients (Ctrl+G) on that pass",
                _graph_of(run, number),
            )
        )
    unchecked = int(np.count_nonzero(flags & FLAG_UNCHECKED))
    if unchecked:
        found.append(
            Problem(
                "wrong-backward",
                "info",
                f"the script's own Functions were not gradient-checked in {unchecked} of "
                f"{len(flags)} passes (the checks' share of the run's time was spent); the "
                "passes kept were checked",
            )
        )
    return found


def _failed_checks(samples: Any) -> dict[str, str]:
    """op -> the message of its first failed check, from a FunctionSampler's samples."""
    found: dict[str, str] = {}
    for sample_list in getattr(samples, "samples", {}).values():
        for sample in sample_list:
            result = sample.result
            if result is None or result[0] != "wrong":
                continue
            op = sample.op
            if op not in found:
                found[op] = result[2] or f"{op}.backward disagrees with central differences"
    return found


# =============================================================================
# nonfinite (the passes not kept)
# =============================================================================
@run_detector("nonfinite")
def run_nonfinite(run: RunInput, limits: Thresholds) -> list[Problem]:
    """The first pass flagged NaN/Inf (its loss, or a parameter's gradient), when its graph was
    not kept: a kept one is the graph detector's (it names the op), so it is said once."""
    flags = _flags(run)
    bad = np.flatnonzero(flags & FLAG_NONFINITE)
    if not bad.size:
        return []
    numbers = _numbers(run, len(flags))
    first = int(bad[0])
    number = numbers[first]
    if _graph_of(run, number) is not None:
        return []
    loss = float(run.losses[first]) if first < len(run.losses) else math.nan
    what = (
        f"the loss is {format_loss(loss)}"
        if not math.isfinite(loss)
        else "a parameter's gradient holds NaN/Inf"
    )
    later = [numbers[int(p)] for p in bad if run.graph_of_pass.get(numbers[int(p)]) is not None]
    see = f"; the first kept one is pass #{later[0]}" if later else ""
    message = (
        f"NaN/Inf first in pass #{number}{_on_line(run, first)}: {what} ({bad.size} passes "
        f"flagged); its graph was not kept{see}: run fewer passes, or keep more "
        "(--max-passes), to see the op"
    )
    return [Problem("nonfinite", "error", message)]
