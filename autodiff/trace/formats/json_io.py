"""Exports of a :class:`~autodiff.trace.Trace` (DOT, GraphML, JSON) and the validating loader.

The JSON file is plain data: a node-link graph, the steps as the contract spells them, and the
node events that are not steps. Loading never executes anything (no pickle); it checks every
field and raises :class:`~autodiff.trace.TraceFormatError` naming the JSON path and the problem.
"""

from __future__ import annotations

import json
import os
import re
import stat
from typing import Any

import numpy as np

from autodiff.trace._checks import (
    _MAX_NDIM,
    MAX_DTYPE,
    MAX_LINE,
    MAX_NAME,
    MAX_OP,
    TraceFormatError,
    _bool,
    _dict,
    _fail,
    _int,
    _list,
    _str,
    check_params,
    cut_text,
    params_to_plain,
)
from autodiff.trace._reader import TraceReader
from autodiff.trace._recorder import Recorder
from autodiff.trace._rows import FUNCTION, VARIABLE
from autodiff.trace._rules import check_graph, check_tables
from autodiff.trace._snapshot import Snapshot, raw_nonfinite, snapshot_from_dict, to_snapshot
from autodiff.trace.formats.common import EVENT_KINDS, EVENT_NAMES, RecordedTrace, check_structure

__all__ = ["DEFAULT_MAX_BYTES", "MAX_DEPTH", "SCHEMA_VERSION", "load", "to_dot", "to_graphml"]

FORMAT = "autodiff-trace"
# 2: events may be 'emptied' (a gradient set to None by the program) and carry the backward
# 'pass' that produced a gradient; nodes may be 'operand' (a constant backward stores no
# gradient on); an event's 'visible' may be any step from -1 up to its stamp. Files of version
# 1 load as they are.
# 3: scopes (a table, each node's scope id), the parameter flag; 4: flat arrays; 5: a function
# node's small attributes ("params"), and its source line ("line", optional: a reader that
# does not know it ignores it)
SCHEMA_VERSION = 5
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
MAX_DEPTH = 7 + _MAX_NDIM  # what the format needs: an accumulation's array nests 6 + ndim


# =============================================================================
# DOT and GraphML
# =============================================================================
def _fmt(snap: Snapshot | None) -> str:
    if snap is None:
        return "-"
    if snap.array is not None and snap.array.size <= 4:
        text = np.array2string(snap.array, precision=4, separator=", ")
    else:
        text = f"min {snap.min:.4g} max {snap.max:.4g} mean {snap.mean:.4g}"
    if not snap.finite:
        text += f" (nan {snap.nan}, inf {snap.inf})"
    return text


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


_DOT_DETACHED = ', style="filled,dashed", color=gray60, fillcolor=gray92, fontcolor=gray40'


def to_dot(trace: TraceReader, step: int | None = None) -> str:
    """DOT text in DeZero's colours: variables orange ellipses, functions light blue boxes;
    each scope instance (a Layer's call, an ``autodiff.scope`` block) is a cluster around the
    nodes made in it, nested as the scopes are. A view's detached history (cut before its
    graph by unchain_backward) is grey and dashed. ``step``: the values and gradients held
    after that step (-1: before any), as the viewer shows them; by default the last ones."""
    g = trace.graph
    detached = trace.detached()
    node_lines: dict[int, str] = {}
    for nid, a in g.nodes(data=True):
        if a["kind"] == "function":
            torch_node = _torch_node(trace, nid)
            label = f"{a['op']}\n" + (f"{torch_node}\n" if torch_node else "")
            label += f"gen {a['generation']}"
            node_lines[nid] = (
                f'{nid} [label="{_dot_escape(label)}", color=lightblue, style=filled, shape=box]'
            )
        else:
            parts = [a["name"] or ""]
            if a["shape"] is not None:
                parts.append(f"{a['shape']} {a['dtype']}")
            value, grad = a["value"], a["grad"]
            if step is not None:
                value, grad = trace.value_at(nid, step), trace.grad_at(nid, step)
            parts.append(f"value {_fmt(value)}")
            if grad is not None:
                parts.append(f"grad {_fmt(grad)}")
            parts.append(f"gen {a['generation']}" + (" const" if a["constant"] else ""))
            label = "\n".join(p for p in parts if p)
            node_lines[nid] = f'{nid} [label="{_dot_escape(label)}", color=orange, style=filled]'
        if nid in detached:
            node_lines[nid] = node_lines[nid][:-1] + _DOT_DETACHED + "]"
    scopes = trace.scopes()
    scope_ids = np.asarray(trace.node_scopes(), dtype=np.int64).reshape(-1)
    members: dict[int, list[int]] = {}
    for nid in node_lines:
        sid = int(scope_ids[nid]) if 0 <= nid < len(scope_ids) else 0
        members.setdefault(sid if 0 <= sid < len(scopes) else 0, []).append(nid)
    used = set()  # the scopes around the graph's nodes (a view: not the whole run's)
    for sid in members:
        while sid and sid not in used:
            used.add(sid)
            sid = scopes[sid].parent
    children: dict[int, list[int]] = {}
    for sid in sorted(used):
        children.setdefault(scopes[sid].parent, []).append(sid)
    lines = ["digraph g {"]

    def cluster(sid: int, indent: str) -> None:
        """Scope ``sid``'s nodes and its sub-scopes' clusters (iterative: scopes nest deep)."""
        todo: list[tuple[int, str] | str] = [(sid, indent)]
        while todo:
            item = todo.pop()
            if isinstance(item, str):  # a cluster's closing brace
                lines.append(item)
                continue
            sid, indent = item
            inner = indent
            if sid:
                row = scopes[sid]
                title = f"{row.path} ({row.cls})" if row.cls else row.path
                lines.append(f"{indent}subgraph cluster_{sid} {{")
                inner = indent + "  "
                lines.append(f'{inner}label="{_dot_escape(title)}"; style=rounded; color=gray50;')
                todo.append(f"{indent}}}")
            lines.extend(inner + node_lines[nid] for nid in members.get(sid, ()))
            todo.extend((c, inner) for c in reversed(children.get(sid, [])))

    cluster(0, "")
    for u, v, _k in sorted(g.edges(keys=True)):
        faint = " [style=dashed, color=gray60]" if u in detached or v in detached else ""
        lines.append(f"{u} -> {v}{faint}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _torch_node(trace: TraceReader, nid: int) -> str | None:
    """The autograd node's name torch gave a PyTorch recording's Function (``AddmmBackward0``),
    None for the engine's and for a cut."""
    name = trace.function_params(nid).get("torch_node")
    return name if isinstance(name, str) else None


def _flat_snapshot(prefix: str, snap: Snapshot | None, out: dict[str, Any]) -> None:
    out[prefix] = _fmt(snap)
    if snap is not None:
        for field in ("min", "max", "mean", "norm"):
            out[f"{prefix}_{field}"] = float(getattr(snap, field))
        out[f"{prefix}_nan"] = snap.nan
        out[f"{prefix}_inf"] = snap.inf


_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


def _xml_text(text: Any) -> str:
    """Text XML 1.0 can hold: control characters (NUL, ESC...) and lone surrogates become
    ``\\xNN`` escapes."""
    return _XML_INVALID.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def to_graphml(trace: TraceReader, path: str | os.PathLike[str]) -> None:
    """GraphML with flat attributes (GraphML has no None or nested values: '' and -1 stand in);
    ``detached``: in a view's history cut before its graph."""
    import networkx as nx

    g = trace.graph
    detached = trace.detached()
    flat = nx.MultiDiGraph()
    for nid, a in g.nodes(data=True):
        attrs: dict[str, Any] = {
            "kind": a["kind"],
            "name": _xml_text(a["name"] or ""),
            "op": _xml_text(a["op"] or ""),
            "shape": "" if a["shape"] is None else str(a["shape"]),
            "dtype": a["dtype"] or "",
            "generation": a["generation"],
            "constant": a["constant"],
            "grad_of": -1 if a["grad_of"] is None else a["grad_of"],
            "scope": _xml_text(a["scope"]),
            "parameter": a["parameter"],
            "detached": nid in detached,
            "torch_node": "",
        }
        if a["kind"] == "function":
            attrs["torch_node"] = _xml_text(_torch_node(trace, nid) or "")
        if a["kind"] == "variable":
            _flat_snapshot("value", a["value"], attrs)
            _flat_snapshot("grad", a["grad"], attrs)
        flat.add_node(nid, **attrs)
    for u, v, k, d in g.edges(keys=True, data=True):
        flat.add_edge(u, v, key=k, slot=d["slot"])
    nx.write_graphml(flat, os.fspath(path))


# =============================================================================
# JSON
# =============================================================================
def _snap_dict(snap: Snapshot | None) -> dict[str, Any] | None:
    return None if snap is None else snap.to_dict()


def trace_to_dict(trace: RecordedTrace) -> dict[str, Any]:
    """The JSON-ready dict of a trace (what :func:`to_json` writes); a trace whose tables
    break a rule the loaders keep (:func:`~autodiff.trace._rules.check_tables`) raises
    TraceFormatError instead."""
    rec = trace.tables
    check_tables(rec)
    g = trace.graph
    scope_of = rec._scope_of
    parameters = rec._parameters
    params = rec._params
    lines = rec._lines
    nodes = []
    for nid in range(len(rec._info)):
        a = g.nodes[nid]
        nodes.append(
            {
                "id": nid,
                "kind": a["kind"],
                "name": cut_text(a["name"], MAX_NAME),
                "op": cut_text(a["op"], MAX_OP),
                "shape": None if a["shape"] is None else list(a["shape"]),
                "dtype": a["dtype"],
                "generation": a["generation"],
                "constant": a["constant"],
                "operand": nid in rec._operands,
                "grad_of": a["grad_of"],
                "scope": scope_of.get(nid, 0),
                "parameter": nid in parameters,
            }
        )
        if nid in params:
            nodes[-1]["params"] = params_to_plain(params[nid])
        if nid in lines:
            nodes[-1]["line"] = lines[nid]
    links = [
        {"source": u, "target": v, "slot": d["slot"]}
        for u, v, d in sorted(g.edges(data=True), key=lambda e: (e[1], e[0], e[2]["slot"]))
    ]
    steps = []
    for s in trace.steps:
        steps.append(
            {
                "index": s.index,
                "phase": s.phase,
                "function": s.function,
                "op": cut_text(s.op, MAX_OP),
                "generation": s.generation,
                "inputs": list(s.inputs),
                "outputs": list(s.outputs),
                "values": [_snap_dict(v) for v in s.values],
                "output_grads": [_snap_dict(v) for v in s.output_grads],
                "input_grads": [_snap_dict(v) for v in s.input_grads],
                "accumulations": [
                    {
                        "node": a.node,
                        "slot": a.slot,
                        "old": a.old.to_dict(),
                        "contribution": a.contribution.to_dict(),
                        "new": a.new.to_dict(),
                    }
                    for a in s.accumulations
                ],
                "cleared": list(s.cleared),
                "backward_pass": s.backward_pass,
                "nonfinite": s.nonfinite,
                "during_backward": s.during_backward,
            }
        )
    events = [
        {
            "stamp": stamp,
            "visible": visible,
            "node": node,
            "kind": EVENT_NAMES[kind],
            "snapshot": _snap_dict(to_snapshot(raw)),
            "pass": origin,
        }
        for stamp, visible, node, kind, raw, origin in rec._extra
    ]
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "max_array_size": trace.max_array_size,
        "graph": {"directed": True, "multigraph": True, "nodes": nodes, "links": links},
        "steps": steps,
        "events": events,
        "backward_roots": list(trace.backward_roots),
        "scopes": [{"name": r.name, "cls": r.cls, "parent": r.parent} for r in trace.scopes()[1:]],
        "cuts": [[node, step] for node, step in sorted(rec._cut.items())],
    }


def to_json(trace: RecordedTrace, path: str | os.PathLike[str]) -> None:
    data = trace_to_dict(trace)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, allow_nan=False, separators=(",", ":"))


# =============================================================================
# Loading, with validation
# =============================================================================
def load(
    path: str | os.PathLike[str],
    max_bytes: int | None = None,
    max_depth: int = MAX_DEPTH,
) -> Recorder:
    """Read a trace written by :meth:`Trace.to_json`, validating every field; returns its
    tables, filled through their constructors (``Trace(tables=...)`` reads them)."""
    limit = DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):  # a FIFO or a device would block or never end
            raise TraceFormatError(f"{os.fspath(path)}: not a regular file")
        size = info.st_size
        if size > limit:
            raise TraceFormatError(
                f"{os.fspath(path)}: the file has {size / 1e6:.1f} MB, above the limit of "
                f"{limit / 1e6:.1f} MB; pass max_bytes= to trace.load() to read it anyway"
            )
        with open(path, "rb") as f:
            raw = f.read(limit + 1)
    except OSError as e:
        raise TraceFormatError(f"{os.fspath(path)}: cannot read the file: {e}") from e
    if len(raw) > limit:
        raise TraceFormatError(f"{os.fspath(path)}: the file grew above {limit} bytes")
    try:
        check_structure(raw, max_depth)
    except TraceFormatError as e:
        try:  # random bytes trip the bracket count first: say what they are instead
            raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise TraceFormatError(f"{os.fspath(path)}: not UTF-8 text: {bad}") from None
        raise TraceFormatError(f"{os.fspath(path)}: {e}") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise TraceFormatError(f"{os.fspath(path)}: not UTF-8 text: {e}") from None
    except json.JSONDecodeError as e:
        raise TraceFormatError(f"{os.fspath(path)}: not valid JSON: {_json_error(e)}") from None
    except RecursionError:
        raise TraceFormatError(f"{os.fspath(path)}: nested too deeply") from None
    except ValueError as e:  # e.g. an integer of thousands of digits
        raise TraceFormatError(f"{os.fspath(path)}: not a trace: {str(e)[:200]}") from None
    try:
        return tables_from_dict(data)
    except TraceFormatError as e:
        raise TraceFormatError(f"{os.fspath(path)}: {e}") from None


NOT_A_TRACE = "not a saved trace: expected a file written by File > Save Trace or autodiff.trace"


def tables_from_dict(data: Any) -> Recorder:
    """The tables of the trace in the dict of :func:`trace_to_dict` (validated field by field,
    then by the rules every trace keeps: :func:`~autodiff.trace._rules.check_tables`)."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        if not isinstance(data, dict):
            found = f"holds a JSON {type(data).__name__}, not an object"
        elif "format" not in data:
            found = "has no 'format' field"
        else:
            found = f"has the format {str(data['format'])[:40]!r}, not {FORMAT!r}"
        raise TraceFormatError(f"{NOT_A_TRACE}; this one {found}")
    _dict(data, "$", ("format", "schema_version"))
    version = _int(data["schema_version"], "schema_version", lo=1)
    if version > SCHEMA_VERSION:
        raise _fail(
            "schema_version",
            f"the file has schema version {version}, this autodiff reads up to "
            f"{SCHEMA_VERSION}: upgrade autodiff to load it",
        )
    _dict(data, "$", ("max_array_size", "graph", "steps", "events", "backward_roots"))
    rows = Recorder(_int(data["max_array_size"], "max_array_size", lo=0))
    if "scopes" in data:  # schema 3
        _load_scopes(rows, _list(data["scopes"], "scopes"))
    _load_graph(rows, data["graph"])
    _load_steps(rows, _list(data["steps"], "steps"))
    roots = _list(data["backward_roots"], "backward_roots")
    rows.backward_roots = [_int(r, f"backward_roots[{i}]") for i, r in enumerate(roots)]
    _load_events(rows, _list(data["events"], "events"))
    for i, pair in enumerate(_list(data.get("cuts", []), "cuts")):
        node, step = _list(pair, f"cuts[{i}]", 2)
        rows.mark_cut(_int(node, f"cuts[{i}][0]"), _int(step, f"cuts[{i}][1]"))
    check_tables(rows, graph=False)
    return rows


def _load_scopes(rows: Recorder, scopes: list) -> None:
    """Scope instances 1..n (0, the root, is every trace's); a parent comes before its
    children."""
    for i, row in enumerate(scopes):
        p = f"scopes[{i}]"
        _dict(row, p, ("name", "cls", "parent"))
        name = _str(row["name"], f"{p}.name", max_len=MAX_NAME)
        cls = _str(row["cls"], f"{p}.cls", max_len=MAX_OP)
        parent = _int(row["parent"], f"{p}.parent", lo=0)
        if parent > i:  # scope ids start at 1: row i is scope i + 1
            raise _fail(f"{p}.parent", f"scope {parent} does not come before scope {i + 1}")
        rows.add_scope(name, cls, parent)


def _node_ref(rows: Recorder, v: Any, path: str, kind: int | None = None) -> int:
    info = rows._info
    nid = _int(v, path, lo=0)
    if nid >= len(info):
        raise _fail(path, f"node {nid} does not exist (the graph has {len(info)} nodes)")
    if kind is not None and info[nid].kind != kind:
        raise _fail(path, f"node {nid} is not a {'variable' if kind == VARIABLE else 'function'}")
    return nid


def _load_graph(rows: Recorder, g: Any) -> None:
    _dict(g, "graph", ("nodes", "links"))
    nodes = _list(g["nodes"], "graph.nodes")
    grad_of: dict[int, tuple[int, str]] = {}
    for i, n in enumerate(nodes):
        p = f"graph.nodes[{i}]"
        _dict(n, p, ("id", "kind", "name", "op", "shape", "dtype", "generation", "constant"))
        if _int(n["id"], f"{p}.id") != i:
            raise _fail(f"{p}.id", f"expected {i} (node ids are dense and in order), got {n['id']}")
        kind = _str(n["kind"], f"{p}.kind")
        gen = _int(n["generation"], f"{p}.generation")
        constant = _bool(n["constant"], f"{p}.constant")
        if kind == "function":
            op = _str(n["op"], f"{p}.op", max_len=MAX_OP)
            rows.add_function(gen, op)
        elif kind == "variable":
            name = _str(n["name"], f"{p}.name", optional=True, max_len=MAX_NAME)
            shape = None
            if n["shape"] is not None:
                dims = _list(n["shape"], f"{p}.shape")
                if len(dims) > _MAX_NDIM:
                    raise _fail(f"{p}.shape", f"more than {_MAX_NDIM} dimensions")
                shape = tuple(_int(d, f"{p}.shape[{j}]", lo=0) for j, d in enumerate(dims))
            dtype = _str(n["dtype"], f"{p}.dtype", optional=True, max_len=MAX_DTYPE)
            operand = n.get("operand") is not None and _bool(n["operand"], f"{p}.operand")
            rows.add_variable(gen, shape, dtype, name, constant, operand)
            if n.get("grad_of") is not None:
                grad_of[i] = (n["grad_of"], f"{p}.grad_of")
        else:
            raise _fail(f"{p}.kind", f"expected 'variable' or 'function', got {kind[:20]!r}")
        if n.get("scope") is not None:
            scope = _int(n["scope"], f"{p}.scope", lo=0)
            if scope >= len(rows._scopes):
                raise _fail(f"{p}.scope", f"scope {scope} does not exist")
            rows.set_scope(i, scope)
        if n.get("parameter") is not None and _bool(n["parameter"], f"{p}.parameter"):
            rows.mark_parameter(i)
        if n.get("params") is not None:  # schema 5
            if kind != "function":
                raise _fail(f"{p}.params", "only a function node has attributes")
            rows.set_params(i, check_params(n["params"], f"{p}.params"))
        if n.get("line") is not None:  # a function's source line (optional, schema 5)
            if kind != "function":
                raise _fail(f"{p}.line", "only a function node has a source line")
            rows.set_line(i, _int(n["line"], f"{p}.line", lo=0, hi=MAX_LINE))
    for nid, (target, p) in grad_of.items():
        rows.set_grad_of(nid, _int(target, p))
    links = _list(g["links"], "graph.links")
    ins: dict[int, dict[int, int]] = {}
    outs: dict[int, dict[int, int]] = {}
    info = rows._info
    for j, e in enumerate(links):
        p = f"graph.links[{j}]"
        _dict(e, p, ("source", "target", "slot"))
        u = _node_ref(rows, e["source"], f"{p}.source")
        v = _node_ref(rows, e["target"], f"{p}.target")
        slot = _int(e["slot"], f"{p}.slot", lo=0)
        if info[u].kind == VARIABLE and info[v].kind == FUNCTION:
            table, f, x = ins, v, u
        elif info[u].kind == FUNCTION and info[v].kind == VARIABLE:
            table, f, x = outs, u, v
        else:
            raise _fail(p, "a link must join a variable and a function")
        slots = table.setdefault(f, {})
        if slot in slots:
            raise _fail(f"{p}.slot", f"function node {f} has two links at slot {slot}")
        slots[slot] = x
    for f in [nid for nid, row in enumerate(info) if row.kind == FUNCTION]:
        for table, what in ((ins, "input"), (outs, "output")):
            slots = table.get(f, {})
            if sorted(slots) != list(range(len(slots))):
                raise _fail("graph.links", f"the {what} slots of function node {f} have gaps")
        in_ids = tuple(ins.get(f, {})[k] for k in range(len(ins.get(f, {}))))
        out_ids = tuple(outs.get(f, {})[k] for k in range(len(outs.get(f, {}))))
        rows.link_function(f, in_ids, out_ids)
    check_graph(rows)


_STEP_KEYS = (
    "index",
    "phase",
    "function",
    "op",
    "generation",
    "inputs",
    "outputs",
    "values",
    "output_grads",
    "input_grads",
    "accumulations",
    "cleared",
    "backward_pass",
    "nonfinite",
)


def _ids(v: Any, path: str, expected: tuple[int, ...]) -> tuple[int, ...]:
    ids = tuple(_int(n, f"{path}[{i}]") for i, n in enumerate(_list(v, path)))
    if ids != expected:
        raise _fail(path, f"{list(ids)} does not match the graph's links {list(expected)}")
    return ids


def _load_steps(rows: Recorder, steps: list) -> None:
    for k, s in enumerate(steps):
        p = f"steps[{k}]"
        _dict(s, p, _STEP_KEYS)
        if _int(s["index"], f"{p}.index") != k:
            raise _fail(f"{p}.index", f"expected {k}, got {s['index']}")
        phase = _str(s["phase"], f"{p}.phase")
        if phase not in ("forward", "backward"):
            raise _fail(f"{p}.phase", f"expected 'forward' or 'backward', got {phase[:20]!r}")
        fid = _node_ref(rows, s["function"], f"{p}.function", FUNCTION)
        _, gen, op, in_ids, out_ids = rows._info[fid]
        if _str(s["op"], f"{p}.op") != op:
            raise _fail(f"{p}.op", f"{s['op'][:40]!r} differs from node {fid}'s op {op!r}")
        if _int(s["generation"], f"{p}.generation") != gen:
            raise _fail(f"{p}.generation", f"{s['generation']} differs from node {fid}'s {gen}")
        _ids(s["inputs"], f"{p}.inputs", in_ids)
        _ids(s["outputs"], f"{p}.outputs", out_ids)
        bpass = _int(s["backward_pass"], f"{p}.backward_pass", lo=-1)
        during = _int(s.get("during_backward", -1), f"{p}.during_backward", lo=-1)
        nonfinite = _bool(s["nonfinite"], f"{p}.nonfinite")

        def snaps(key: str, n: int, s: dict = s, p: str = p) -> tuple[Snapshot | None, ...]:
            items = _list(s[key], f"{p}.{key}", n)
            return tuple(
                snapshot_from_dict(d, f"{p}.{key}[{i}]", optional=True) for i, d in enumerate(items)
            )

        if phase == "forward":
            if bpass != -1:
                raise _fail(f"{p}.backward_pass", f"expected -1 for a forward step, got {bpass}")
            values = snaps("values", len(out_ids))
            for key in ("output_grads", "input_grads", "accumulations", "cleared"):
                _list(s[key], f"{p}.{key}", 0)
            produced = values
            rows.add_forward_step(fid, values, during)
        else:
            if bpass < 0:
                raise _fail(f"{p}.backward_pass", f"expected >= 0 for a backward step, got {bpass}")
            if during != -1:
                raise _fail(f"{p}.during_backward", "expected -1 for a backward step")
            _list(s["values"], f"{p}.values", 0)
            gys = snaps("output_grads", len(out_ids))
            gxs = snaps("input_grads", len(in_ids))
            accs = []
            for i, a in enumerate(_list(s["accumulations"], f"{p}.accumulations")):
                ap = f"{p}.accumulations[{i}]"
                _dict(a, ap, ("node", "slot", "old", "contribution", "new"))
                slot = _int(a["slot"], f"{ap}.slot", lo=0, hi=len(in_ids) - 1)
                node = _int(a["node"], f"{ap}.node")
                if node != in_ids[slot]:
                    raise _fail(f"{ap}.node", f"expected input {slot}'s node {in_ids[slot]}")
                old = snapshot_from_dict(a["old"], f"{ap}.old")
                contribution = snapshot_from_dict(a["contribution"], f"{ap}.contribution")
                new = snapshot_from_dict(a["new"], f"{ap}.new")
                if contribution != gxs[slot]:
                    raise _fail(f"{ap}.contribution", f"differs from input_grads[{slot}]")
                accs.append((node, slot, old, gxs[slot], new))
            cleared = tuple(
                _int(n, f"{p}.cleared[{i}]")
                for i, n in enumerate(_list(s["cleared"], f"{p}.cleared"))
            )
            produced = gxs + tuple(a[4] for a in accs)
            rows.add_backward_step(fid, gys, gxs, tuple(accs), cleared, bpass)
        if nonfinite != any(raw_nonfinite(v) for v in produced):
            raise _fail(f"{p}.nonfinite", f"says {nonfinite} but the step's snapshots disagree")


def _load_events(rows: Recorder, events: list) -> None:
    for i, e in enumerate(events):
        p = f"events[{i}]"
        _dict(e, p, ("stamp", "visible", "node", "kind", "snapshot"))
        stamp = _int(e["stamp"], f"{p}.stamp")
        visible = _int(e["visible"], f"{p}.visible")
        node = _int(e["node"], f"{p}.node")
        kind_name = _str(e["kind"], f"{p}.kind")
        if kind_name not in EVENT_KINDS:
            raise _fail(
                f"{p}.kind", f"expected one of {sorted(EVENT_KINDS)}, got {kind_name[:20]!r}"
            )
        snap = snapshot_from_dict(e["snapshot"], f"{p}.snapshot", optional=True)
        origin = e.get("pass")
        if origin is not None:
            origin = _int(origin, f"{p}.pass")
        rows.add_event(stamp, visible, node, EVENT_KINDS[kind_name], snap, origin)


def _json_error(e: json.JSONDecodeError) -> str:
    """json's message with its place: "Unterminated string starting at line 1, column 4997"
    (its ``msg`` ends in "at" for some errors: with the place after it in brackets it read
    "starting at)"), "Expecting value at line 3, column 1"."""
    msg = e.msg if e.msg.endswith(" at") else f"{e.msg} at"
    return f"{msg} line {e.lineno}, column {e.colno}"
