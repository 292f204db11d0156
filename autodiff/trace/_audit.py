"""The leak audit: which recorded engine objects are still alive, and who holds them.

:func:`audit` (or :meth:`autodiff.trace.Trace.audit`) answers, for every Variable and Function
a trace saw that is still alive:

* ``reason='cycle'``: nothing reachable from a root keeps it; only a reference cycle does, so
  a ``gc.collect()`` would free it;
* ``reason='referenced'``: something reachable from a root keeps it (a module global, a local
  of a running frame, a container, a closure cell, an attribute), named in ``held_by``.

Leaves the user holds directly (``x = Variable(...)`` still bound) are expected to live: they
are listed in :attr:`LeakReport.held_leaves`, not as survivors.

How it works, without disturbing anything: with the collector paused, it repeats what CPython's
cycle collector does without freeing anything. Every tracked object's reference count minus the
references other tracked objects hold to it leaves the references from outside the heap (the
interpreter, running frames): those objects are the roots. A breadth-first walk from the named
roots first (module globals, locals of running frames), then from the others, finds the
shortest holder chain of each survivor; what the walk never reaches is cyclic garbage. The
audit keeps no reference to anything it looked at.

It reads the trace only through its reading interface (:class:`autodiff.trace.TraceReader`);
:mod:`autodiff.leaks` is its public face, with ``python -m autodiff.leaks script.py``.
"""

from __future__ import annotations

import gc
import inspect
import sys
import types
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from autodiff import core

if TYPE_CHECKING:
    from autodiff.trace._reader import TraceReader as Trace

__all__ = ["LeakReport", "Survivor", "audit"]

# Chains longer than this are shown as their first and last hops around an ellipsis.
_HEAD, _TAIL = 6, 6
# Above these sizes the audit scans the whole heap once instead of walking back from the
# survivors (gc.get_referrers is linear in the number of objects asked about).
_MAX_BATCH = 256
_MAX_ANCESTORS = 50_000


@dataclass(frozen=True, slots=True)
class Survivor:
    """A recorded engine object that is still alive."""

    node_id: int
    kind: str  # 'variable' | 'function'
    label: str  # the Variable's name (or 'variable #id') or the Function's class name
    reason: str  # 'cycle' | 'referenced'
    held_by: str  # e.g. "global 'cache' (list) [2] -> Variable 'h'"

    def __str__(self) -> str:
        label = (
            self.label
            if self.label.startswith("#") or self.kind == "function"
            else repr(self.label)
        )
        return f"{self.kind} {label} (node {self.node_id}): {self.reason}, {self.held_by}"


@dataclass(frozen=True, slots=True)
class LeakReport:
    """What the audit found: ``survivors`` (leaks) and ``held_leaves`` (leaves still held)."""

    survivors: list[Survivor] = field(default_factory=list)
    held_leaves: list[Survivor] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.survivors

    def __str__(self) -> str:
        if not self.survivors:
            return "no leaks: nothing recorded survived" + (
                f" (leaves still held: {', '.join(s.label for s in self.held_leaves)})"
                if self.held_leaves
                else ""
            )
        lines = [f"{len(self.survivors)} recorded object(s) survived:"]
        lines += [f"  {s}" for s in self.survivors]
        return "\n".join(lines)


# =============================================================================
# The audit
# =============================================================================
def audit(trace: Trace, skip: tuple[types.CodeType, ...] = ()) -> LeakReport:
    """Which of ``trace``'s engine objects are alive, why, and who holds them.

    ``trace``: anything with the reading interface (:class:`autodiff.trace.TraceReader`).
    ``skip``: code objects whose running frames are the audit's callers, not the program's
    (``Trace.audit``), so their locals are not taken for the program's names."""
    was_enabled = gc.isenabled()
    gc.disable()  # a collection during the audit would change what it is looking at
    touched: list[dict] = []
    try:
        return _audit(trace, touched, skip)
    finally:
        # Locals snapshots the audit made of running frames hold references; empty them so
        # that a name the caller deletes afterwards really lets go of its object.
        for d in touched:
            d.clear()
        touched.clear()
        if was_enabled:
            gc.enable()


def _candidates(trace: Trace) -> tuple[dict[int, int], set[int]]:
    """id(object) -> node id for every live recorded object, and the ids of the leaves."""
    found: dict[int, int] = {}
    leaves: set[int] = set()
    for nid in trace.alive():
        obj = trace.live(nid)
        if obj is not None:
            found[id(obj)] = nid
            if isinstance(obj, core.Variable) and obj.creator is None:
                leaves.add(id(obj))
        obj = None
    return found, leaves


def _user_frames(skip: tuple[types.CodeType, ...]) -> list[types.FrameType]:
    """Running frames of every thread, without the audit's own and its callers' in ``skip``."""
    own = {id(g) for g in (globals(),)}
    frames = []
    for top in sys._current_frames().values():
        f = top
        while f is not None:
            if id(f.f_globals) not in own and f.f_code not in skip:
                frames.append(f)
            f = f.f_back
    return frames


def _ancestors(trace: Trace, probe: list, stop: set[int]) -> list | None:
    """The objects the audit has to look at: ``probe``, the live recorded objects and their
    ``inputs`` lists, and every tracked object that can reach one of them from outside the
    graph (their holders, their holders' holders...), stopping at module globals and frame
    locals. None when that walk grows past its limits (then the whole heap is scanned).

    The references the graph makes itself (``creator``, ``inputs``, ``grad``) are known; only
    the objects with more references than those (held from elsewhere) are walked back from,
    with ``gc.get_referrers``, which compares each reference in the heap with every object
    asked about: it is for few objects at a time.
    """
    members: list = [probe]
    del probe  # from here on the probe is referenced by the caller's name and members only
    for nid in trace.alive():
        obj = trace.live(nid)
        if obj is not None:
            members.append(obj)
        obj = None
    n_live = len(members)
    members += _inputs_lists(members, n_live)
    known = _graph_references(members, n_live)
    counts = [sys.getrefcount(o) for o in members]
    extra = counts[0] - 1  # what the counting adds, beyond the caller's name for the probe
    frontier = [members[k] for k in range(1, len(members)) if counts[k] - extra > known.get(k, 0)]
    counts.clear()
    known.clear()
    seen = {id(o) for o in members}
    while frontier:
        batch = tuple([o for o in frontier if id(o) not in stop])
        frontier.clear()
        if len(batch) > _MAX_BATCH or len(members) > _MAX_ANCESTORS + 2 * n_live:
            del batch
            members.clear()
            return None
        if not batch:
            break
        found = gc.get_referrers(*batch)
        own = (id(batch), id(members), id(frontier))  # the call's own argument tuple, ...
        del batch
        for r in found:
            if id(r) not in seen and id(r) not in own:
                seen.add(id(r))
                members.append(r)
                frontier.append(r)
        found.clear()
    return members


def _inputs_lists(members: list, n_live: int) -> list:
    lists = []
    for k in range(1, n_live):
        inputs = (
            getattr(members[k], "inputs", None) if isinstance(members[k], core.Function) else None
        )
        if type(inputs) is list:
            lists.append(inputs)
    return lists


def _graph_references(members: list, n_live: int) -> dict[int, int]:
    """member index -> how many references the graph itself holds to it."""
    index = {id(o): k for k, o in enumerate(members)}
    known: dict[int, int] = {}
    for k in range(1, len(members)):
        o = members[k]
        if k >= n_live:  # an inputs list: referenced by its Function
            refs: tuple = tuple(o)
            known[k] = known.get(k, 0) + 1
        elif isinstance(o, core.Variable):
            refs = (o.creator, o.grad)
        else:
            continue
        for r in refs:
            j = index.get(id(r)) if r is not None else None
            if j is not None:
                known[j] = known.get(j, 0) + 1
    return known


def _audit(trace: Trace, touched: list[dict], skip: tuple[types.CodeType, ...]) -> LeakReport:
    cand, leaves = _candidates(trace)
    if not cand:
        return LeakReport()

    # Named roots: module globals, and locals of running frames (snapshots made now, so that
    # names deleted since an earlier snapshot no longer count).
    named: list[tuple[int, str]] = []
    local_dicts: dict[int, str] = {}
    for frame in _user_frames(skip):
        locs = frame.f_locals
        if frame.f_code.co_flags & inspect.CO_OPTIMIZED and type(locs) is dict:
            touched.append(locs)
            local_dicts[id(locs)] = f"{frame.f_code.co_qualname}()"
            named.append((id(locs), "frame"))
    del frame, locs
    module_dicts: dict[int, str] = {}
    for name, module in list(sys.modules.items()):
        d = getattr(module, "__dict__", None)
        if type(d) is dict and id(d) not in module_dicts:
            module_dicts[id(d)] = name
            named.append((id(d), "module"))
    del module, d

    probe: list = []  # referenced by this frame alone: calibrates the counts below
    stop = set(module_dicts) | set(local_dicts)
    objs = _ancestors(trace, probe, stop)
    if objs is None:  # many candidates: the whole heap, in one pass
        objs = gc.get_objects()
    n = len(objs)
    pos = {id(o): i for i, o in enumerate(objs)}
    counts = [sys.getrefcount(o) for o in objs]
    extra = counts[pos[id(probe)]] - 1  # references the counting itself adds
    del probe
    # Minus the references from other tracked objects (every tracked holder of a non-root
    # object is in objs): what is left comes from outside the heap, i.e. from a root.
    internal = Counter(map(id, gc.get_referents(*objs)))
    counts = [c - extra - internal.get(id(o), 0) for c, o in zip(counts, objs, strict=True)]
    internal.clear()

    parent = [-2] * n  # -2: not reached; -1: a root; else the index of the holder
    depth = [0] * n
    head: list[Any] = [None] * n  # the first objects of the chain (for long chains)
    remaining = {pos[k] for k in cand if k in pos}
    queue: deque[int] = deque()

    def seed(i: int) -> None:
        if parent[i] == -2:
            parent[i] = -1
            head[i] = (i,)
            queue.append(i)
            remaining.discard(i)

    def walk() -> None:
        while queue and remaining:
            i = queue.popleft()
            d = depth[i] + 1
            h = head[i]
            for r in gc.get_referents(objs[i]):
                j = pos.get(id(r))
                if j is not None and parent[j] == -2:
                    parent[j] = i
                    depth[j] = d
                    head[j] = h if len(h) >= _HEAD else (*h, j)
                    remaining.discard(j)
                    queue.append(j)

    for key, _kind in named:
        i = pos.get(key)
        if i is not None:
            seed(i)
    walk()
    if remaining:
        for i in range(n):
            if counts[i] > 0:
                seed(i)
        walk()
    queue.clear()

    namer = _Namer(objs, pos, module_dicts, local_dicts, cand)
    survivors: list[Survivor] = []
    held: list[Survivor] = []
    garbage: dict[int, list[int]] | None = None
    for key, nid in sorted(cand.items(), key=lambda kv: kv[1]):
        i = pos.get(key)
        if i is None:
            continue  # not tracked by the collector (cannot happen for engine objects)
        obj = objs[i]
        kind = "function" if isinstance(obj, core.Function) else "variable"
        label = namer.label(i)
        if parent[i] == -2:
            if garbage is None:
                garbage = _reverse_edges(objs, pos, parent)
            survivors.append(Survivor(nid, kind, label, "cycle", namer.cycle(i, garbage)))
        else:
            chain = _chain(i, parent, depth, head)
            text = namer.render(chain, depth[i])
            on_path = any(objs[c] is not obj and id(objs[c]) in cand for c in chain)
            if key in leaves and not on_path:
                held.append(Survivor(nid, kind, label, "referenced", text))
            else:
                survivors.append(Survivor(nid, kind, label, "referenced", text))
        obj = None
    if garbage is not None:
        garbage.clear()
    namer.objs = []
    objs.clear()
    pos.clear()
    return LeakReport(survivors, held)


def _chain(i: int, parent: list[int], depth: list[int], head: list[Any]) -> list[int]:
    """Object indices from the root to ``i``; long chains keep only head and tail (-1 between)."""
    tail = [i]
    j = i
    while parent[j] >= 0 and len(tail) < _TAIL + _HEAD + 3:
        j = parent[j]
        tail.append(j)
    tail.reverse()
    if parent[j] < 0:
        return tail
    return [*head[i], -1, *tail[-_TAIL:]]


def _reverse_edges(objs: list, pos: dict[int, int], parent: list[int]) -> dict[int, list[int]]:
    """For unreached (garbage) objects: who among the garbage refers to them."""
    rev: dict[int, list[int]] = {}
    for i, o in enumerate(objs):
        if parent[i] != -2:
            continue
        for r in gc.get_referents(o):
            j = pos.get(id(r))
            if j is not None and parent[j] == -2:
                rev.setdefault(j, []).append(i)
    return rev


_GRAPH = (core.Variable, core.Function)


class _Namer:
    """Turns chains of object indices into text: labels, hops, and roots' names."""

    def __init__(
        self,
        objs: list,
        pos: dict[int, int],
        module_dicts: dict[int, str],
        local_dicts: dict[int, str],
        cand: dict[int, int],
    ) -> None:
        self.objs = objs
        self.pos = pos
        self.module_dicts = module_dicts
        self.local_dicts = local_dicts
        self.cand = cand

    def label(self, i: int) -> str:
        """The Variable's name ('#<node id>' when it has none) or the Function's class name."""
        o = self.objs[i]
        if isinstance(o, core.Variable):
            return o.name if o.name is not None else f"#{self.cand.get(id(o), '?')}"
        return type(o).__name__

    def describe(self, i: int) -> str:
        o = self.objs[i]
        if isinstance(o, core.Variable):
            return f"Variable {o.name!r}" if o.name is not None else f"Variable {self.label(i)}"
        if isinstance(o, core.Function):
            return f"Function {type(o).__name__}"
        if isinstance(o, types.FunctionType):
            return f"(function {o.__qualname__})"
        return f"({type(o).__name__})"

    def hop(self, prev: int | None, i: int, j: int) -> str:
        """How object ``i`` refers to object ``j`` (``prev`` holds ``i``)."""
        a, b = self.objs[i], self.objs[j]
        if type(a) is dict:
            for k, v in a.items():
                if v is b:
                    if id(a) in self.module_dicts:
                        mod = self.module_dicts[id(a)]
                        where = "" if mod == "__main__" else f" in {mod}"
                        return f"global {k!r}{where}"
                    if id(a) in self.local_dicts:
                        return f"local {k!r} in {self.local_dicts[id(a)]}"
                    if prev is not None and getattr(self.objs[prev], "__dict__", None) is a:
                        return f".{k}"
                    return f"[{k!r}]"
            return "(value)"
        if type(a) in (list, tuple):
            for k, v in enumerate(a):
                if v is b:
                    return f"[{k}]"
        if type(a) is types.CellType:
            return "cell_contents"
        if isinstance(a, types.FunctionType):
            if b is a.__closure__:
                return "closure"
            if b is a.__defaults__:
                return "defaults"
            if b is a.__globals__:
                return "__globals__"
        if isinstance(a, types.FrameType | types.GeneratorType | types.CoroutineType):
            return "local"
        if isinstance(a, type):
            for k, v in vars(a).items():
                if v is b:
                    return f".{k}"
        for k in _slot_names(type(a)):
            if getattr(a, k, None) is b:
                return f".{k}"
        d = getattr(a, "__dict__", None)
        if type(d) is dict:
            if d is b:
                return ".__dict__"
            for k, v in d.items():
                if v is b:
                    return f".{k}"
        return "->"

    def _closure_name(self, fn: Any, cell: Any) -> str:
        closure = fn.__closure__ or ()
        for k, c in enumerate(closure):
            if c is cell and k < len(fn.__code__.co_freevars):
                return fn.__code__.co_freevars[k]
        return "?"

    def render(self, chain: list[int], length: int) -> str:
        """The holder chain from a root: ``chain`` from :func:`_chain`, ``length`` its depth."""
        root = chain[0]
        o = self.objs[root]
        if (id(o) in self.module_dicts or id(o) in self.local_dicts) and len(chain) > 1:
            parts = [self.hop(None, root, chain[1]), self.text(chain[1])]
            return self._follow(chain, 1, parts, length)
        parts = ["held from outside Python's heap:", self.text(root)]
        return self._follow(chain, 0, parts, length)

    def text(self, i: int) -> str:
        o = self.objs[i]
        return f"-> {self.describe(i)}" if isinstance(o, _GRAPH) else self.describe(i)

    def _follow(self, chain: list[int], k: int, parts: list[str], length: int) -> str:
        """Append the hops from chain[k] (already described) to the end of the chain."""
        objs = self.objs
        while k + 1 < len(chain):
            i, j = chain[k], chain[k + 1]
            if j == -1:
                parts.append(f"-> ... ({length + 1 - (len(chain) - 1)} more) ...")
                parts.append(self.text(chain[k + 2]))
                k += 2
                continue
            a, b = objs[i], objs[j]
            after = chain[k + 2] if k + 2 < len(chain) else -1
            if (
                isinstance(a, types.FunctionType)
                and b is a.__closure__
                and after != -1
                and k + 3 < len(chain)
                and chain[k + 3] != -1
            ):
                name = self._closure_name(a, objs[after])
                parts.append(f"-> closure cell {name!r} of {a.__qualname__}()")
                parts.append(self.text(chain[k + 3]))
                k += 3
                continue
            prev = chain[k - 1] if k > 0 and chain[k - 1] != -1 else None
            h = self.hop(prev, i, j)
            if after != -1 and h.startswith(".") and type(b) in (list, tuple, dict):
                # an attribute holding a container: ".inputs[0]"; ".__dict__" + ".w" -> ".w"
                inner = self.hop(i, j, after)
                if inner.startswith("[") or (h == ".__dict__" and inner.startswith(".")):
                    parts.append(inner if h == ".__dict__" else h + inner)
                    parts.append(self.text(after))
                    k += 2
                    continue
            parts.append(h)
            parts.append(self.text(j))
            k += 1
        return " ".join(parts)

    def cycle(self, i: int, rev: dict[int, list[int]]) -> str:
        """Walk back from ``i`` through the garbage (graph objects first) until an object
        repeats: the cycle that keeps ``i`` alive, and how ``i`` hangs from it."""
        path = [i]
        seen = {i: 0}
        j = i
        for _ in range(10_000):
            holders = rev.get(j, [])
            if not holders:
                return "unreachable garbage (held by an object outside Python's view)"
            graph_holders = [h for h in holders if isinstance(self.objs[h], _GRAPH)]
            j = (graph_holders or holders)[0]
            if j in seen:
                break
            seen[j] = len(path)
            path.append(j)
        else:
            return "cyclic garbage (the chain back to the cycle is too long to show)"
        # path[m + 1] holds path[m]; j (== path[seen[j]]) holds path[-1]
        loop = [j, *reversed(path[seen[j] :])]
        cycle_text = self._plain(loop)
        if seen[j] == 0:
            return f"cycle: {cycle_text}"
        lead = list(reversed(path[: seen[j] + 1]))
        return f"held via {self._plain(lead)}, in the cycle {cycle_text}"

    def _plain(self, chain: list[int]) -> str:
        if len(chain) > _HEAD + _TAIL + 2:
            hidden = len(chain) - _HEAD - _TAIL
            chain = [*chain[:_HEAD], -1, *chain[-_TAIL:]]
            return self._follow(chain, 0, [self.describe(chain[0])], hidden + len(chain) - 2)
        return self._follow(chain, 0, [self.describe(chain[0])], len(chain) - 1)


_SLOTS: dict[type, tuple[str, ...]] = {}


def _slot_names(cls: type) -> tuple[str, ...]:
    names = _SLOTS.get(cls)
    if names is None:
        found: list[str] = []
        for c in cls.__mro__:
            slots = c.__dict__.get("__slots__", ())
            if isinstance(slots, str):
                slots = (slots,)
            found += [s for s in slots if s not in ("__dict__", "__weakref__")]
        names = _SLOTS[cls] = tuple(found)
    return names
