"""Forward-only work, counted instead of kept: the compaction of a recorder's tape.

A program does much forward work that no backward pass ever reaches: an evaluation loop that
forgot ``no_grad()``, a metric computed from a model's output, operations thrown away. Each
such step costs the recording a tuple, its value and two weak references, and the reader a
node and a row: a loop of a million of them filled gigabytes while it showed nothing.

:func:`compact` rewrites the not yet decoded part of a recorder's tape, removing every forward
step that

* no backward step reached, and
* can never be reached: its Function and all its outputs are dead (an object the tape recorded
  is named by its creation order, never reused, so a dead one never comes back), and
* no step that stays used as an input.

The entries that only described what went (the constants and leaves such a step alone read,
their names, attributes, source lines and deaths, a module scope left empty) go with it. The
steps removed are counted in a :class:`ForwardOnly`: operations by op, the graphs they formed
(steps linked by the values they passed), and how many of those graphs read a ``Parameter`` (a
model run forward without ``no_grad()``: an evaluation loop). Its first few graphs are kept
whole as a sample (:attr:`ForwardOnly.sample_left`), so the viewer can show one.

What stays is what a trace without the forward-only work would have recorded: the decoder
reads the compacted tape as it reads any other.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from autodiff.trace._rows import BWD, FWD

__all__ = ["ForwardOnly", "compact", "forward_only_note"]

# The tape's entry kinds, as the recorder numbers them (autodiff.trace._recorder). A FWD
# entry is (FWD, f_key, k0, k1, value, during, class, generation, f_ref, y_ref, y_key); a
# _FWD_MANY one (_FWD_MANY, f_key, in_keys, values, during, class, generation, meta, f_ref,
# y_refs, y_keys).
(
    _FWD_MANY, _T_STEP, _T_NODE, _T_INFO, _T_INPUT, _T_EVENT, _T_GRAD_OF, _T_ROOT, _T_NAME,
    _T_LEAF, _T_SEGMENT, _T_SCOPE, _T_SCOPE_END, _T_PARAMETER, _T_PARAMS,
) = range(2, 17)  # fmt: skip
_T_LINE = 17

# Graphs kept whole as a sample, per run
DEFAULT_SAMPLE = 3
# A compaction looks again at most this many entries it kept (those after a step that was
# alive then): a graph held for good is not scanned over and over
_RESCAN = 20_000


class ForwardOnly:
    """What compaction removed, over one recording or several (a run's head and its
    segments share one)."""

    def __init__(self, sample: int = DEFAULT_SAMPLE) -> None:
        self.operations = 0  # forward steps removed
        self.graphs = 0  # the graphs they formed
        self.through_parameters = 0  # of those graphs, the ones that read a Parameter
        self.ops: Counter[str] = Counter()  # op -> steps removed
        self.sample_left = max(0, int(sample))  # graphs still to keep whole as the sample
        self.sampled = 0  # graphs kept whole

    def __bool__(self) -> bool:
        return bool(self.operations or self.sampled)

    def as_dict(self) -> dict[str, Any]:
        """Plain data (a result's meta, a test)."""
        return {
            "operations": self.operations,
            "graphs": self.graphs,
            "through_parameters": self.through_parameters,
            "ops": dict(self.ops.most_common()),
            "sampled": self.sampled,
        }

    def note(self) -> str:
        """One line for the Script panel ('' when nothing was removed)."""
        return forward_only_note(self.as_dict())


def forward_only_note(summary: dict[str, Any] | None) -> str:
    """The Script panel's line for a :meth:`ForwardOnly.as_dict` (one read back from a file
    too: every field checked)."""
    if not summary:
        return ""
    try:
        operations = int(summary.get("operations", 0))
        graphs = int(summary.get("graphs", 0))
        through = int(summary.get("through_parameters", 0))
        sampled = int(summary.get("sampled", 0))
        ops = [(str(k), int(v)) for k, v in dict(summary.get("ops", {})).items()]
    except (TypeError, ValueError, AttributeError):
        return ""
    if operations <= 0:
        return ""
    ops.sort(key=lambda kv: -kv[1])
    shown = ", ".join(f"{op} × {n:,}" for op, n in ops[:3])
    if len(ops) > 3:
        shown += ", …"
    plural = "s" if operations != 1 else ""
    g_plural = "s" if graphs != 1 else ""
    text = (
        f"{operations:,} forward-only operation{plural} ({shown}) in {graphs:,} "
        f"graph{g_plural} that no backward reached: counted, not recorded in full"
    )
    if sampled:
        text += f"; the first {sampled} kept whole in the list"
    if through:
        text += (
            f". {through:,} of these graphs ran Parameters without no_grad() (an evaluation "
            "loop?): wrap it in `with no_grad():` to save their memory and time"
        )
    return text


def compact(recorder: Any, summary: ForwardOnly, parameters: set[int]) -> int:
    """Remove the forward-only steps from ``recorder``'s tape after its last compaction
    point (``recorder._compact_from``), counting them in ``summary``; ``parameters``: the
    creation orders of the Parameters registered so far. Returns the steps removed."""
    with recorder._sync_lock:
        tape = recorder._tape
        start = recorder._compact_from
        end = len(tape)
        if end <= start:
            return 0
        chunk = tape[start:end]
        removed, kept, resume = _compact_chunk(chunk, summary, parameters, recorder)
        if removed:
            tape[start:end] = kept
        # from the first step kept only because it was alive (an evaluation's last output,
        # still held): it may die before the next compaction; not further back than _RESCAN
        recorder._compact_from = start + max(resume, len(kept) - _RESCAN)
        return removed


def _inputs(e: tuple) -> tuple:
    """A step entry's input keys. A FWD entry holds one or two inline (the second None for
    one input) or, past two, their tuple first (and the recorder's marker second);
    _FWD_MANY holds their tuple."""
    if e[0] != FWD:
        return e[2]
    k0, k1 = e[2], e[3]
    if k1 is None:
        return (k0,)
    if type(k0) is tuple:
        return k0
    return (k0, k1)


def _compact_chunk(
    chunk: list, summary: ForwardOnly, parameters: set[int], recorder: Any
) -> tuple[int, list, int]:
    """The steps removed, the new chunk, and where in it the next compaction begins.
    (``chunk`` is a copy: the steps removed are set to None in it.) A flood of throwaway
    operations goes through here at a few hundred thousand a second: the loops are plain."""
    # 1. Backwards: which forward steps go. A step stays when backward reached it, when
    # something of it is alive, or when a step that stays read one of its outputs.
    reached: set[int] = set()
    needed: set[int] = set()
    keyed: set[int] = set()  # keys that entries other than steps name
    drop: list[int] = []  # chunk indexes of the steps that go, last first
    first_alive = len(chunk)  # the first step kept though no backward reached it (yet)
    for i in range(len(chunk) - 1, -1, -1):
        e = chunk[i]
        if type(e) is not tuple:
            continue
        kind = e[0]
        if kind == FWD:  # (a Function's and an output's reference are never None here)
            if e[1] in reached or e[10] in needed or e[5] >= 0:  # >= 0: made by create_graph
                needed.update(_inputs(e))
                if e[1] not in reached:
                    first_alive = i
            elif e[8]() is not None or e[9]() is not None:
                needed.update(_inputs(e))
                first_alive = i
            else:
                drop.append(i)
        elif kind == _FWD_MANY:
            if e[1] in reached or e[4] >= 0 or any(y in needed for y in e[10]):
                needed.update(e[2])
                if e[1] not in reached:
                    first_alive = i
            elif e[8]() is not None or any(r() is not None for r in e[9]):
                needed.update(e[2])
                first_alive = i
            else:
                drop.append(i)
        elif kind == BWD:
            reached.add(e[1])
        elif kind in (_T_NAME, _T_PARAMS, _T_PARAMETER, _T_LEAF, _T_LINE):
            keyed.add(e[1])
        elif kind == _T_STEP:
            needed.update(e[1][2])
        elif kind == _T_INFO:
            needed.update(e[2][3])
        elif kind in (_T_EVENT, _T_ROOT):
            needed.add(e[2] if kind == _T_EVENT else e[1])
        elif kind == _T_GRAD_OF:
            needed.add(e[1])
            needed.add(e[2])
    if not drop:
        return 0, chunk, first_alive
    drop.reverse()

    # 2. Forwards: the graphs the removed steps formed (linked by the values they passed:
    # a union-find over their outputs), and the first few kept whole as the sample.
    group_of: dict[int, int] = {}  # output key of a removed step -> its group
    parent: list[int] = []
    reads_parameter: list[bool] = []
    merged = False

    def find(g: int) -> int:
        while parent[g] != g:
            parent[g] = parent[parent[g]]
            g = parent[g]
        return g

    step_group: list[int] = []
    for i in drop:
        e = chunk[i]
        in_keys = _inputs(e)
        g = -1
        for k in in_keys:
            h = group_of.get(k)
            if h is None:
                continue
            h = find(h)
            if g < 0:
                g = h
            elif h != g:  # two graphs meet: one group
                g, h = min(g, h), max(g, h)
                parent[h] = g
                reads_parameter[g] = reads_parameter[g] or reads_parameter[h]
                merged = True
        if g < 0:
            g = len(parent)
            parent.append(g)
            reads_parameter.append(False)
        if not reads_parameter[g] and not parameters.isdisjoint(in_keys):
            reads_parameter[g] = True
        if e[0] == FWD:
            group_of[e[10]] = g
        else:
            for y in e[10]:
                group_of[y] = g
        step_group.append(g)
    if merged:
        step_group = [find(g) for g in step_group]
        roots = [g for g in range(len(parent)) if parent[g] == g]
    else:
        roots = parent
    sample: set[int] = set()
    if summary.sample_left and recorder.sample_forward_only:
        for g in step_group:  # in the order of their first step
            if g not in sample:
                if len(sample) == summary.sample_left:
                    break
                sample.add(g)
    summary.graphs += len(roots) - len(sample)
    summary.through_parameters += sum(1 for g in roots if reads_parameter[g] and g not in sample)
    summary.sampled += len(sample)
    summary.sample_left -= len(sample)

    # 3. What goes with the removed steps: their weak references (their deaths are on the
    # tape) and the keys other entries name.
    gone_keys: set[int] = set()
    gone_refs: set[int] = set()
    add_ref = gone_refs.add
    by_class: dict[type, int] = {}
    removed = 0
    sample_root: dict[int, int] = dict.fromkeys(g for g in step_group if g in sample)
    for i, g in zip(drop, step_group, strict=True):
        e = chunk[i]
        if sample and g in sample:
            needed.update(_inputs(e))  # its inputs stay, with it
            sample_root[g] = e[10][0] if e[0] == _FWD_MANY else e[10]  # its last step's
            continue
        chunk[i] = None
        add_ref(id(e[8]))
        if e[0] == FWD:
            add_ref(id(e[9]))
            if keyed:
                gone_keys.update(k for k in (e[1], e[10]) if k in keyed)
        else:
            gone_refs.update(id(r) for r in e[9])
            if keyed:
                gone_keys.update(k for k in (e[1], *e[10]) if k in keyed)
        cls = e[6] if e[0] == FWD else e[5]
        by_class[cls] = by_class.get(cls, 0) + 1
        removed += 1
    recorder._sample_keys.extend(sample_root.values())  # in the order of their first step
    if not removed:
        return 0, chunk, first_alive
    summary.operations += removed
    ops = summary.ops
    for cls, n in by_class.items():
        ops[cls.__name__] += n

    # 4. The new chunk. A leaf or a constant registered here, dead, that nothing kept reads
    # goes too; so does a module scope left with nothing in it.
    registered = recorder._registered
    kept: list = []
    append = kept.append
    resume = -1
    scopes: list[list] = []  # per open scope: [its index in kept, whether anything is in it]
    for i, e in enumerate(chunk):
        if type(e) is not tuple:
            if e is not None and id(e) not in gone_refs:
                append(e)
            continue
        kind = e[0]
        if kind <= _FWD_MANY and kind != BWD:
            if i == first_alive:  # from the scope it is in, so that scope can go then
                resume = scopes[0][0] if scopes else len(kept)
        elif kind == _T_INPUT:
            key = e[1]
            if key not in needed and (e[2] is None or e[2]() is None):
                gone_keys.add(key)
                registered.discard(key)
                add_ref(id(e[2]))  # its death comes later in the chunk
                continue
        elif kind in (_T_NAME, _T_PARAMS, _T_PARAMETER, _T_LEAF, _T_LINE):
            if e[1] in gone_keys:
                continue
        elif kind == _T_SCOPE:
            scopes.append([len(kept), False])
            append(e)
            continue
        elif kind == _T_SCOPE_END:
            if scopes:
                at, used = scopes.pop()
                if not used:  # nothing but weak references since it began
                    del kept[at]
                    continue
            append(e)
            if scopes:
                scopes[-1][1] = True
            continue
        if scopes:
            scopes[-1][1] = True
        append(e)
    return removed, kept, len(kept) if resume < 0 else resume
