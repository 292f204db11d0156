"""Which backward passes of a long run are kept, what each is called, and how the list filters.

A training script calls ``backward()`` once per iteration: hundreds of thousands of times. The
run keeps every pass's scalars (its loss, its iteration, whether it went NaN, the parameters'
gradient norms: a :class:`PassLog`, what the Training plot draws) but the graphs of a bounded
sample of the passes only (:class:`PassReservoir`):

* the **first** ``max_passes // 2`` passes, all of them (a run of at most that many keeps
  everything);
* after them, **evenly spaced** ones: every ``stride``-th pass, the stride doubling (and every
  other kept one dropped) whenever more than ``max_passes - max_passes // 2`` are held;
* the **last** pass;
* every **flagged** pass, the first ``max_flagged`` of them: NaN or Inf in its loss or in a
  parameter's gradient, or its graph still **held** by the program when the next pass ended
  (``losses.append(loss)`` keeps every iteration's graph alive: a leak). A held pass is known
  one pass late, which the last pass's place in the sample covers: it is kept until the next
  pass ends.

So at most ``max_passes + 1 + max_flagged`` graphs are held, whatever the length of the run,
and a pass that is dropped is dropped for good (its recording freed at once).

A pass is labelled ``#1234 · iter 1233 · loss 0.0421``: its number (from 1, as the list
always counted), its iteration and its loss. The **iteration** is the pass's index (from 0)
among the passes started from the same line of the script on a root of the same shape: the
``loss.backward()`` of a training loop counts its loop's iterations, and a second
``backward()`` elsewhere in the loop (a validation loss) counts its own.

This module is plain Python and numpy: the recording side is
:mod:`viewer.model.scripts.pass_recording`.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "DEFAULT_MAX_FLAGGED",
    "DEFAULT_MAX_PASSES",
    "FLAG_GRADCHECK",
    "FLAG_HELD",
    "FLAG_NONFINITE",
    "FLAG_UNCHECKED",
    "GraphFilter",
    "PassLog",
    "PassReservoir",
    "filter_entries",
    "format_loss",
    "pass_label",
]

DEFAULT_MAX_PASSES = 1000
DEFAULT_MAX_FLAGGED = 100
MAX_NORMS = 50  # parameters whose gradient norm is logged per pass (as the plot draws)
FLAG_NONFINITE = 1  # NaN or Inf in the loss or in a parameter's gradient
FLAG_HELD = 2  # the program still held the pass's graph (its root) when the next pass ended
FLAG_GRADCHECK = 4  # a Function of the script's own failed its gradient check in the pass
FLAG_UNCHECKED = 8  # a Function of the script's own ran, but the checks' time budget was spent
# the problem kinds (viewer.model.checks.problems.KINDS) a pass's own flags stand for
_KIND_FLAGS = {
    "nonfinite": FLAG_NONFINITE,
    "graph-held": FLAG_HELD,
    "wrong-backward": FLAG_GRADCHECK,
}


def format_loss(value: float) -> str:
    """A loss in a few characters: ``0.0421``, ``1.23e-05``, ``1.5e+03``, ``nan``; ``5`` for
    5.0, but ``8.00`` for 7.997 (three digits that round to a whole number keep their zeros:
    "8" would read as exact)."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = f"{value:.3g}"
    if value != int(value) and "." not in text and "e" not in text and len(text.lstrip("-")) < 3:
        return f"{value:#.3g}"
    return text


def pass_label(
    number: int,
    iteration: int,
    loss: float,
    flags: int = 0,
    name: str = "",
    wrong: Sequence[str] = (),
) -> str:
    """``#1234 · iter 1233 · loss 0.0421`` for pass ``number - 1``; `` · NaN/Inf`` when
    flagged, `` · wrong backward: Cube`` for the script's own Functions (``wrong``) whose
    gradient check failed in it, and `` · from y`` for a named root."""
    parts = [f"#{number}"]
    if iteration >= 0:
        parts.append(f"iter {iteration}")
    parts.append(f"loss {format_loss(loss)}")
    if flags & FLAG_NONFINITE and math.isfinite(loss):
        parts.append("NaN/Inf in a gradient")
    if flags & FLAG_HELD:
        parts.append("graph still held")
    if flags & FLAG_GRADCHECK:
        parts.append("wrong backward" + (f": {', '.join(wrong)}" if wrong else ""))
    elif flags & FLAG_UNCHECKED:
        parts.append("backward not checked")
    if name:
        parts.append(f"from {name}")
    return " · ".join(parts)


class PassReservoir:
    """The passes whose graphs are kept (see the module's docstring for the rule).

    Feed the passes in order with :meth:`offer`; it answers the passes that leave the sample
    (the caller frees their graphs); :attr:`kept` is the sample now."""

    def __init__(
        self, max_passes: int = DEFAULT_MAX_PASSES, max_flagged: int = DEFAULT_MAX_FLAGGED
    ) -> None:
        if max_passes < 2:
            raise ValueError(f"max_passes must be at least 2, got {max_passes}")
        self.max_passes = int(max_passes)
        self.max_flagged = max(0, int(max_flagged))
        self.head = self.max_passes // 2
        self.capacity = self.max_passes - self.head
        self.stride = 1
        self.seen = 0
        self.flagged_seen = 0
        self._even: list[int] = []  # kept evenly spaced passes after the head, ascending
        self._flagged: list[int] = []  # kept flagged passes after the head
        self._last = -1  # the last pass, when nothing else keeps it

    def likely_kept(self, index: int) -> bool:
        """Whether pass ``index`` (the next one) will be in the sample as it stands: one of
        the first, or on the stride (a later doubling can still drop it)."""
        return index < self.head or (index - self.head) % self.stride == 0

    def only_last(self, index: int) -> bool:
        """Whether pass ``index`` is in the sample only as the last pass, for now: the next
        pass's end drops it unless it turns out held."""
        return self._last == index

    def offer(self, index: int, flagged: bool = False, previous_flagged: bool = False) -> list[int]:
        """Pass ``index`` (the next one: ``seen``) ended; the passes dropped from the sample.
        ``previous_flagged``: the pass before it turned out flagged (its graph still held)."""
        if index != self.seen:
            raise ValueError(f"pass {index} offered, expected pass {self.seen}")
        self.seen += 1
        # flagged passes after the first ones (those are all kept anyway), for the note
        if flagged and index >= self.head:
            self.flagged_seen += 1
        if previous_flagged and index - 1 >= self.head:
            self.flagged_seen += 1
            if 0 <= self._last == index - 1 and len(self._flagged) < self.max_flagged:
                self._flagged.append(self._last)  # kept as the last pass until now: kept on
                self._last = -1
        dropped = []
        if self._last >= 0:
            dropped.append(self._last)
            self._last = -1
        if index < self.head:
            return dropped
        if flagged and len(self._flagged) < self.max_flagged:
            self._flagged.append(index)
            return dropped
        if (index - self.head) % self.stride == 0:
            self._even.append(index)
            if len(self._even) > self.capacity:
                self.stride *= 2
                keep = [i for i in self._even if (i - self.head) % self.stride == 0]
                dropped.extend(i for i in self._even if (i - self.head) % self.stride)
                self._even = keep
        else:
            self._last = index
        return dropped

    @property
    def kept(self) -> list[int]:
        """The passes kept now, ascending."""
        head = list(range(min(self.seen, self.head)))
        tail = sorted({*self._even, *self._flagged, *([self._last] if self._last >= 0 else [])})
        return head + tail

    @property
    def sampled(self) -> bool:
        """Whether some pass was dropped."""
        return len(self.kept) < self.seen

    def note(self, shown: int | None = None) -> str:
        """``showing 1,001 of 280,000 passes: the first 500, every 512th after them, the last
        and 3 with NaN/Inf`` ('' when every pass is kept); ``shown``: how many of the kept
        passes are listed, when not all (a cancel can cut the last one short)."""
        kept = self.kept
        if len(kept) == self.seen:
            return ""
        parts = [f"the first {self.head:,}"]
        if self.stride > 1:
            parts.append(f"every {_ordinal(self.stride)} after them")
        else:
            parts.append("every pass after them")
        parts.append("the last")
        flagged = len(self._flagged)
        if flagged:
            more = (
                f"; the first {flagged} of {self.flagged_seen:,}"
                if self.flagged_seen > flagged
                else ""
            )
            parts.append(f"{flagged} flagged (NaN/Inf, graph still held or wrong backward{more})")
        listed = ", ".join(parts[:-1]) + " and " + parts[-1]
        shown = len(kept) if shown is None else shown
        return f"showing {shown:,} of {self.seen:,} passes: {listed}"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


class PassLog:
    """Every pass's scalars, 17 bytes a pass plus 4 per logged parameter: the loss (the sum
    of the root's value), the iteration, the flags, and the gradient norm of up to
    :data:`MAX_NORMS` parameters (leaves that received a gradient, in the order first seen;
    NaN where a pass gave one none). ``data_columns``: the columns of leaves that are not
    Parameters (``x = Variable(data)``, an input tensor with ``requires_grad``), which the
    plot leaves out beside Parameters."""

    def __init__(self) -> None:
        self._loss = array("d")
        self._iteration = array("q")
        self._flags = bytearray()
        self.parameter_labels: list[str] = []
        self.data_columns: set[int] = set()
        self._norms: list[array] = []
        self.loss_label = "loss"

    def __len__(self) -> int:
        return len(self._loss)

    def flag(self, index: int, flags: int) -> None:
        """Add ``flags`` to pass ``index``'s (one learnt after the pass ended)."""
        self._flags[index] |= flags & 0xFF

    def add(self, loss: float, iteration: int, flags: int, norms: Sequence[float]) -> None:
        """One pass: ``norms[k]`` is parameter ``k``'s (see :meth:`parameter`)."""
        self._loss.append(loss)
        self._iteration.append(iteration)
        self._flags.append(flags & 0xFF)
        columns = self._norms
        if len(norms) == len(columns):  # a norm for every column, the usual case
            for column, norm in zip(columns, norms, strict=True):
                column.append(norm)
        else:
            for k, column in enumerate(columns):
                column.append(norms[k] if k < len(norms) else math.nan)

    def parameter(self, label: str, data: bool = False) -> int | None:
        """A new parameter's column (NaN for the passes before), None past MAX_NORMS;
        ``data``: the leaf is not a Parameter (see ``data_columns``)."""
        if len(self._norms) >= MAX_NORMS:
            return None
        if data:
            self.data_columns.add(len(self._norms))
        self.parameter_labels.append(label)
        self._norms.append(array("f", [math.nan]) * len(self._loss))
        return len(self._norms) - 1

    @property
    def loss(self) -> NDArray[np.float64]:
        return np.frombuffer(self._loss, dtype=np.float64).copy()

    @property
    def iteration(self) -> NDArray[np.int64]:
        return np.frombuffer(self._iteration, dtype=np.int64).copy()

    @property
    def flags(self) -> NDArray[np.uint8]:
        return np.frombuffer(bytes(self._flags), dtype=np.uint8).copy()

    @property
    def grad_norms(self) -> NDArray[np.float64]:
        """``(n_parameters, n_passes)``."""
        if not self._norms:
            return np.zeros((0, len(self)), dtype=np.float64)
        return np.stack([np.frombuffer(c, dtype=np.float32) for c in self._norms]).astype(
            np.float64
        )

    @classmethod
    def from_arrays(
        cls,
        loss: NDArray,
        iteration: NDArray,
        flags: NDArray,
        grad_norms: NDArray,
        parameter_labels: Sequence[str],
        loss_label: str = "loss",
        data_columns: Sequence[int] = (),
    ) -> PassLog:
        """A log from the arrays of another (the script worker sends them); ValueError when
        they do not fit together."""
        loss = np.asarray(loss, dtype=np.float64).reshape(-1)
        n = len(loss)
        iteration = np.asarray(iteration, dtype=np.int64).reshape(-1)
        flags = np.asarray(flags, dtype=np.uint8).reshape(-1)
        norms = np.asarray(grad_norms, dtype=np.float32)
        labels = [str(s) for s in parameter_labels]
        if len(iteration) != n or len(flags) != n or norms.ndim != 2:
            raise ValueError("the pass log's arrays differ in length")
        if norms.shape != (len(labels), n) or len(labels) > MAX_NORMS:
            raise ValueError("the pass log's gradient norms do not fit its parameters")
        data = {int(k) for k in data_columns}
        if any(not 0 <= k < len(labels) for k in data):
            raise ValueError("the pass log's data columns are not among its parameters")
        log = cls()
        log.data_columns = data
        log._loss = array("d", loss.tobytes())
        log._iteration = array("q", iteration.tobytes())
        log._flags = bytearray(flags.tobytes())
        log.parameter_labels = labels
        log._norms = [array("f", row.tobytes()) for row in norms]
        log.loss_label = str(loss_label)
        return log


# =============================================================================
# The graph list's filter
# =============================================================================
@dataclass(frozen=True)
class GraphFilter:
    """What the filter box asks: ``text`` as typed. ``loss>0.5``, ``iter<=10`` or ``#>=100``
    compare a field (``<``, ``<=``, ``>``, ``>=``, ``=``); ``nan`` (or ``inf``) finds the
    passes with NaN/Inf, ``held`` (or ``leak``) those whose graph the program still held,
    ``wrong`` (or ``gradcheck``) those where a Function of the script's own failed its
    gradient check; a problem kind (``dead-relu``, ``graph-held``: see
    :data:`viewer.model.checks.problems.KINDS`) those showing a problem of that kind, the
    passes' own flags included (``nonfinite``, ``graph-held``, ``wrong-backward``); anything
    else is a case-insensitive substring of the label."""

    text: str

    _COMPARE = re.compile(
        r"^\s*(loss|iter|iteration|pass|#)\s*(<=|>=|<|>|==|=)\s*([-+]?[\d.]+(?:e[-+]?\d+)?|nan|inf)"
        r"\s*$",
        re.IGNORECASE,
    )

    def matches(self, label: str, number: int = -1, iteration: int = -1, loss: float = math.nan,
                flags: int = 0, kinds: Collection[str] = ()) -> bool:  # fmt: skip
        text = self.text.strip()
        if not text:
            return True
        lowered = text.lower()
        if lowered in kinds or flags & _KIND_FLAGS.get(lowered, 0):
            return True
        if lowered in ("nan", "inf", "nan/inf"):
            return (
                bool(flags & FLAG_NONFINITE)
                or not math.isfinite(loss)
                or lowered in (label.lower())
            )
        if lowered in ("held", "leak", "leaks"):
            return bool(flags & FLAG_HELD)
        if lowered in ("wrong", "gradcheck", "wrong backward"):
            return bool(flags & FLAG_GRADCHECK)
        if lowered in ("unchecked", "not checked"):
            return bool(flags & FLAG_UNCHECKED)
        found = self._COMPARE.match(text)
        if found is None:
            return lowered in label.lower()
        field, op, raw = found.groups()
        try:
            bound = float(raw)
        except ValueError:
            return False
        field = field.lower()
        value = loss if field == "loss" else float(number if field in ("pass", "#") else iteration)
        if field != "loss" and value < 0:
            return False
        if op in ("=", "=="):
            return value == bound
        return {"<": value < bound, "<=": value <= bound, ">": value > bound, ">=": value >= bound}[
            op
        ]


def filter_entries(
    entries: Sequence[object], text: str, kinds: Mapping[int, Collection[str]] | None = None
) -> list[int]:
    """The indexes of ``entries`` (objects with ``title`` and, for passes, ``number``,
    ``iteration``, ``loss`` and ``flags``) that the filter ``text`` lets through; ``kinds``:
    the problem kinds each entry (by index) shows, for a filter by kind."""
    wanted = GraphFilter(text)
    kinds = kinds or {}
    out = []
    for k, e in enumerate(entries):
        number = int(getattr(e, "number", -1))
        if wanted.matches(
            str(getattr(e, "title", "")),
            number + 1 if number >= 0 else -1,
            int(getattr(e, "iteration", -1)),
            float(getattr(e, "loss", math.nan)),
            int(getattr(e, "flags", 0)),
            kinds.get(k, ()),
        ):
            out.append(k)
    return out
