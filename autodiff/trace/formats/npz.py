"""A trace as compact binary data: the recorder's decoded tables, with every array in one
numpy ``.npz`` (never pickle), validated field by field when read back.

This is how a trace crosses a process boundary (a script run in a child interpreter hands
its recording to the app): unlike :func:`autodiff.trace.Trace.to_json` it builds no Step,
Snapshot or networkx object of the run, so a run of millions of steps goes across at the
cost of its arrays. Reading trusts nothing: it reads only the members below, each bounded
before it is read (:mod:`autodiff.trace.formats.npz_members`: sizes, compression ratio, exact
dtypes), then
checks every field, then the rules every trace keeps (:func:`autodiff.trace._rules.check_tables`,
the JSON loader's too); a hostile or broken file raises :class:`~autodiff.trace.TraceFormatError`
naming the member or the field. Writing checks the same rules first, and cuts names and op names
to the loaders' limits, so a file written is a file read back.

Layout of the ``.npz``: ``header`` (UTF-8 JSON, as uint8) holds the structure, with each raw
value as a *reference* ``kind + 3 * index`` (-1: None) into ``scalars`` (float64),
``arrays`` (rows ``(dtype, offset, size)`` into the flat buffer ``data_<dtype>``, shapes in
the header) or ``summaries`` (rows ``min, max, mean, norm`` and ``nan, inf``, shapes and
dtypes in the header). The arrays of one dtype lie back to back in its buffer, in order.
The optional ``line_nodes`` and ``line_numbers`` pair each function node that has one with its
source line (:meth:`autodiff.trace.Trace.line_of`). The header's ``params`` lists ``[function
node, attributes]``, the attributes as the JSON format writes them (``[name, kind, value]``
rows, :func:`autodiff.trace._checks.check_params`).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import io
import json
import math
import os
from typing import Any

import numpy as np

from autodiff.trace._checks import (
    _ARRAY_DTYPES,
    _MAX_NDIM,
    MAX_DTYPE,
    MAX_LINE,
    MAX_NAME,
    MAX_OP,
    TraceFormatError,
    _fail,
    _int,
    _list,
    check_params,
    cut_text,
    params_to_plain,
)
from autodiff.trace._recorder import Recorder
from autodiff.trace._rows import FUNCTION, FWD
from autodiff.trace._rules import check_graph, check_tables
from autodiff.trace._snapshot import Snapshot, summarize
from autodiff.trace.formats.common import EVENT_KINDS, EVENT_NAMES, RecordedTrace, check_structure
from autodiff.trace.formats.npz_members import MAX_MEMBER_BYTES, NpzMembers

__all__ = ["FORMAT", "MAX_HEADER_BYTES", "MAX_HEADER_DEPTH", "tables_from_npz", "trace_to_npz"]

FORMAT = "autodiff-trace-binary"
VERSION = 1
_SCALAR, _ARRAY, _SUMMARY = range(3)

MAX_HEADER_BYTES = 1 << 30
"""The ``header`` member's JSON text, at most (1 GiB: a run of tens of millions of steps).
Parsing JSON takes up to ~25 times its text in memory: with the zip's ratio bound
(:data:`autodiff.trace.formats.npz_members.MAX_RATIO`) that bounds what a small file can cost."""

MAX_HEADER_DEPTH = 16
"""Arrays and objects nested in the header, at most (it nests 6: a tuple among a Function's
attributes, ``params``): refused before the JSON parser sees it."""

_TABLES = {  # member -> (dtype, columns: None for 1-D)
    "scalars": ("float64", None),
    "arrays": ("int64", 3),
    "summary_stats": ("float64", 4),
    "summary_counts": ("int64", 2),
    "scope_nodes": ("int64", None),
    "scope_ids": ("int64", None),
    "line_nodes": ("int64", None),
    "line_numbers": ("int64", None),
}
# members a file may lack: one written before scopes (version 1), or before source lines
_OPTIONAL = frozenset({"scope_nodes", "scope_ids", "line_nodes", "line_numbers"})


@functools.cache
def _storable(dtype: np.dtype) -> bool:
    """Whether an array of ``dtype`` is kept as it is (asked once a dtype: ``dtype.name`` is
    slow, and asked for every array of a long run)."""
    return dtype.name in _ARRAY_DTYPES


class _Values:
    """Raw values (float, ndarray, Snapshot summary) as references into typed tables."""

    def __init__(self) -> None:
        self.scalars: list[float] = []
        self.arrays: list[np.ndarray] = []
        self.summaries: list[Snapshot] = []
        # One array held by several entries (a gradient that is also an accumulation's new
        # value) is written once: the trace keeps every array alive while it is written.
        self._seen: dict[int, int] = {}

    def ref(self, raw: Any) -> int:
        if raw is None:
            return -1
        if isinstance(raw, float | np.floating) and not isinstance(raw, np.ndarray):
            self.scalars.append(float(raw))
            return _SCALAR + 3 * (len(self.scalars) - 1)
        if type(raw) is Snapshot:
            if raw.array is not None:
                raw = raw.array
            else:
                self.summaries.append(raw)
                return _SUMMARY + 3 * (len(self.summaries) - 1)
        ref = self._seen.get(id(raw))
        if ref is None:
            array = np.asarray(raw)
            if not _storable(array.dtype):  # complex, longdouble: as JSON keeps them
                self.summaries.append(summarize(array, keep_array=False))
                ref = _SUMMARY + 3 * (len(self.summaries) - 1)
            else:
                self.arrays.append(array)
                ref = _ARRAY + 3 * (len(self.arrays) - 1)
            self._seen[id(raw)] = ref
        return ref

    def refs(self, raws: Any) -> list[int]:
        return [self.ref(r) for r in raws]

    def write(self, header: dict, out: dict[str, np.ndarray]) -> None:
        out["scalars"] = np.asarray(self.scalars, dtype=_stored("float64"))
        dtypes: list[str] = []
        rows = []
        buffers: dict[str, list[np.ndarray]] = {}
        offsets: dict[str, int] = {}
        names: dict[np.dtype, str] = {}  # dtype.name is slow, and asked once an array
        for a in self.arrays:
            name = names.get(a.dtype) or names.setdefault(a.dtype, a.dtype.name)
            if name not in offsets:
                offsets[name] = 0
                buffers[name] = []
                dtypes.append(name)
            rows.append((dtypes.index(name), offsets[name], a.size))
            buffers[name].append(np.ascontiguousarray(a, dtype=_stored(name)).reshape(-1))
            offsets[name] += a.size
        out["arrays"] = np.asarray(rows, dtype=_stored("int64")).reshape(-1, 3)
        for name, parts in buffers.items():
            out[f"data_{name}"] = np.concatenate(parts)
        header["array_dtypes"] = dtypes
        header["array_shapes"] = [list(a.shape) for a in self.arrays]
        stats = [[s.min, s.max, s.mean, s.norm] for s in self.summaries]
        out["summary_stats"] = np.asarray(stats, dtype=_stored("float64")).reshape(-1, 4)
        counts = [[s.nan, s.inf] for s in self.summaries]
        out["summary_counts"] = np.asarray(counts, dtype=_stored("int64")).reshape(-1, 2)
        header["summary_shapes"] = [list(s.shape) for s in self.summaries]
        header["summary_dtypes"] = [s.dtype for s in self.summaries]


@functools.cache
def _stored(name: str) -> np.dtype:
    """The dtype a member of dtype ``name`` is stored as (little-endian, whatever the machine):
    the one the reader asks for."""
    return np.dtype(name).newbyteorder("<")


@contextlib.contextmanager
def _collector_paused() -> Any:
    """Reading or writing a long run makes millions of small lists and nothing cyclic: with
    the collector on, each of its passes would walk the whole heap (the trace included)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def trace_to_npz(trace: RecordedTrace, file: str | os.PathLike[str] | io.BytesIO) -> None:
    """Write ``trace`` (its decoded tables) to ``file`` (a path or a binary buffer). A trace
    :func:`tables_from_npz` would refuse raises TraceFormatError and writes nothing."""
    with _collector_paused():
        _write(trace.tables, file)


def _write(rec: Recorder, file: str | os.PathLike[str] | io.BytesIO) -> None:
    check_tables(rec)
    values = _Values()
    info = []
    for entry in rec._info:
        if entry.kind == FUNCTION:
            _, gen, op, ins, outs = entry
            info.append([1, int(gen), cut_text(op, MAX_OP), list(ins), list(outs)])
        else:
            _, gen, shape, dtype = entry
            shape = None if shape is None else [int(d) for d in shape]
            info.append([0, int(gen), shape, None if dtype is None else np.dtype(dtype).name])
    raw = []
    for r in rec._raw:
        if r.kind == FWD:
            _, fid, _ins, _outs, vals, during = r
            raw.append([0, fid, values.refs(vals), int(during)])
        else:
            _, fid, gys, gxs, accs, cleared, bpass = r
            acc_rows = [
                [int(node), int(slot), values.ref(old), values.ref(c), values.ref(new)]
                for node, slot, old, c, new in accs
            ]
            raw.append(
                [1, fid, values.refs(gys), values.refs(gxs), acc_rows, list(cleared), int(bpass)]
            )
    extra = [
        [int(stamp), int(visible), int(node), EVENT_NAMES[kind], values.ref(value), origin]
        for stamp, visible, node, kind, value, origin in rec._extra
    ]
    header = {
        "format": FORMAT,
        "version": VERSION,
        "max_array_size": rec.max_array_size,
        "info": info,
        "raw": raw,
        "extra": extra,
        "names": {str(k): cut_text(v, MAX_NAME) for k, v in rec._names.items()},
        "constants": sorted(rec._constants),
        "operands": sorted(rec._operands),
        "grad_of": {str(k): int(v) for k, v in rec._grad_of.items()},
        "backward_roots": [int(r) for r in rec.backward_roots],
        "scopes": [[r.name, r.cls, int(r.parent)] for r in rec._scopes[1:]],
        "parameters": sorted(rec._parameters),
        "cuts": [[int(n), int(k)] for n, k in sorted(rec._cut.items())],
        "params": [[int(fid), params_to_plain(p)] for fid, p in sorted(rec._params.items())],
    }
    out: dict[str, np.ndarray] = {}
    scope_of = rec._scope_of
    out["scope_nodes"] = np.fromiter(scope_of.keys(), np.int64, len(scope_of))
    out["scope_ids"] = np.fromiter(scope_of.values(), np.int64, len(scope_of))
    lines = rec._lines
    if lines:  # most recordings keep none: no members, as a file from before them
        out["line_nodes"] = np.fromiter(lines.keys(), np.int64, len(lines))
        out["line_numbers"] = np.fromiter(lines.values(), np.int64, len(lines))
    values.write(header, out)
    text = json.dumps(header, allow_nan=True, separators=(",", ":")).encode("utf-8")
    out["header"] = np.frombuffer(text, dtype=np.uint8)
    for name, array in out.items():
        limit = MAX_HEADER_BYTES if name == "header" else MAX_MEMBER_BYTES
        if array.nbytes > limit:
            raise TraceFormatError(
                f"member {name!r}: {array.nbytes} bytes, above the limit of {limit} a binary "
                "trace is read back with: the run is too large to send"
            )
    np.savez(file, **out)


# =============================================================================
# Reading, validated
# =============================================================================
def _shape(v: Any, path: str) -> tuple[int, ...]:
    dims = _list(v, path)
    if len(dims) > _MAX_NDIM:
        raise _fail(path, f"more than {_MAX_NDIM} dimensions")
    return tuple(_int(d, f"{path}[{i}]", lo=0) for i, d in enumerate(dims))


def _node_key(key: str, field: str) -> int:
    """A node id written as an object's key: ASCII digits only (``'²'.isdigit()`` is true)."""
    if not (key.isascii() and key.isdigit() and len(key) <= 18):
        raise _fail(field, f"bad key {key[:20]!r}: expected a node id")
    return int(key)


class _Reader:
    """The raw values the header's references name, from the tables read (each checked)."""

    def __init__(self, header: dict, tables: dict[str, np.ndarray], buffers: list) -> None:
        self.scalars = tables["scalars"]
        self.array_rows = tables["arrays"]
        self.buffers = buffers
        n = len(self.array_rows)
        self.array_shapes = _list(header.get("array_shapes"), "array_shapes", n)
        self.summary_stats = tables["summary_stats"]
        n = len(self.summary_stats)
        self.summary_shapes = _list(header.get("summary_shapes"), "summary_shapes", n)
        self.summary_dtypes = _list(header.get("summary_dtypes"), "summary_dtypes", n)
        self.summary_counts = tables["summary_counts"]
        if len(self.summary_counts) != n:
            raise _fail("summary_counts", f"expected {n} rows")
        self._check_rows()
        self._arrays: dict[int, np.ndarray] = {}  # one array for every ref to it, as written
        self.scalar_list = self.scalars.tolist()  # Python floats, read once
        self.row_list = self.array_rows.tolist()

    def _check_rows(self) -> None:
        """Each buffer holds its arrays back to back, in order, and nothing else: no two
        arrays share elements, so the arrays read take no more memory than the buffers."""
        which, offset, size = self.array_rows.T
        if len(which) and (which.min() < 0 or which.max() >= len(self.buffers) or size.min() < 0):
            raise _fail("arrays", "a row names no buffer, or a negative size")
        for b, buffer in enumerate(self.buffers):
            mine = which == b
            sizes = size[mine]
            # (the sum in float64 first: one in int64 could overflow)
            if sizes.sum(dtype=np.float64) > len(buffer) + 1 or int(sizes.sum()) != len(buffer):
                raise _fail("arrays", f"the arrays of buffer {b} do not fill it exactly")
            starts = np.cumsum(sizes) - sizes
            if not np.array_equal(offset[mine], starts):
                raise _fail("arrays", f"the arrays of buffer {b} are not back to back")

    def value(self, ref: Any, path: str, i: int | None = None) -> Any:
        """The raw value ``ref`` names (``path[i]`` in a message: built only for one)."""
        if type(ref) is not int or ref < -1:
            raise _fail(_at(path, i), f"expected a value reference, got {str(ref)[:40]}")
        if ref < 0:
            return None
        kind, index = ref % 3, ref // 3
        if kind == _SCALAR:
            if index >= len(self.scalar_list):
                raise _fail(_at(path, i), f"scalar {index} does not exist")
            return self.scalar_list[index]
        if kind == _ARRAY:
            found = self._arrays.get(index)
            if found is not None:
                return found
            if index >= len(self.row_list):
                raise _fail(_at(path, i), f"array {index} does not exist")
            which, offset, size = self.row_list[index]
            shape = _shape(self.array_shapes[index], f"array_shapes[{index}]")
            if math.prod(shape) != size:
                raise _fail(_at(path, i), f"array {index}'s shape does not hold {size} elements")
            buffer = self.buffers[which]
            found = self._arrays[index] = buffer[offset : offset + size].reshape(shape).copy()
            return found
        if index >= len(self.summary_stats):
            raise _fail(_at(path, i), f"summary {index} does not exist")
        shape = _shape(self.summary_shapes[index], f"summary_shapes[{index}]")
        dtype = self.summary_dtypes[index]
        if type(dtype) is not str or len(dtype) > MAX_DTYPE:
            raise _fail(f"summary_dtypes[{index}]", "expected a dtype name")
        nan, inf = self.summary_counts[index].tolist()
        if nan < 0 or inf < 0:
            raise _fail(f"summary_counts[{index}]", "negative counts")
        return Snapshot(shape, dtype, None, *self.summary_stats[index].tolist(), nan, inf)

    def values(self, refs: Any, path: str) -> tuple:
        return tuple([self.value(r, path, i) for i, r in enumerate(_list(refs, path))])


def _at(path: str, i: int | None) -> str:
    return path if i is None else f"{path}[{i}]"


def tables_from_npz(file: str | os.PathLike[str] | io.BytesIO) -> Recorder:
    """The tables of a trace written by :func:`trace_to_npz`, filled through their
    constructors (``Trace(tables=...)`` reads them); raises TraceFormatError."""
    with _collector_paused():
        return _read(file)


def _read_header(members: NpzMembers) -> dict:
    text = members.read("header", "uint8", max_bytes=MAX_HEADER_BYTES).tobytes()
    try:
        check_structure(text, MAX_HEADER_DEPTH, bytes_per_container=0)
    except TraceFormatError as e:
        raise _fail("member 'header'", str(e)) from None
    try:
        header = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:  # ValueError: JSON, digits
        raise _fail("member 'header'", f"not JSON text: {str(e)[:200]}") from None
    if type(header) is not dict or header.get("format") != FORMAT:
        raise TraceFormatError(f"not a binary trace: the format is not {FORMAT!r}")
    if header.get("version") != VERSION:
        raise _fail("version", f"expected {VERSION}")
    return header


def _read(file: str | os.PathLike[str] | io.BytesIO) -> Recorder:
    with NpzMembers(file) as members:
        header = _read_header(members)
        tables = {
            name: members.read(name, dtype, columns)
            for name, (dtype, columns) in _TABLES.items()
            if name not in _OPTIONAL or name in members
        }
        dtypes = _list(header.get("array_dtypes"), "array_dtypes")
        for i, d in enumerate(dtypes):
            if d not in _ARRAY_DTYPES or d in dtypes[:i]:
                raise _fail("array_dtypes", f"{str(d)[:20]!r} is not an array dtype, or twice")
        buffers = [members.read(f"data_{d}", d) for d in dtypes]
    reader = _Reader(header, tables, buffers)
    rows = Recorder(_int(header.get("max_array_size"), "max_array_size", lo=0))
    for i, row in enumerate(_list(header.get("scopes", []), "scopes")):
        p = f"scopes[{i}]"
        name, cls, parent = _list(row, p, 3)
        if type(name) is not str or len(name) > MAX_NAME:
            raise _fail(f"{p}[0]", f"expected a name of at most {MAX_NAME} characters")
        if type(cls) is not str or len(cls) > MAX_OP:
            raise _fail(f"{p}[1]", f"expected a class name of at most {MAX_OP} characters")
        rows.add_scope(name, cls, _int(parent, f"{p}[2]", 0, i))
    info = _list(header.get("info"), "info")
    n = len(info)
    for i, entry in enumerate(info):
        p = f"info[{i}]"
        entry = _list(entry, p)
        if entry and entry[0] == 1 and len(entry) == 5:
            op = entry[2]
            if type(op) is not str or len(op) > MAX_OP:
                raise _fail(f"{p}[2]", f"expected an op name of at most {MAX_OP} characters")
            ins = tuple(_int(x, f"{p}[3]", 0, n - 1) for x in _list(entry[3], f"{p}[3]"))
            outs = tuple(_int(x, f"{p}[4]", 0, n - 1) for x in _list(entry[4], f"{p}[4]"))
            rows.add_function(_int(entry[1], f"{p}[1]"), op, ins, outs)
        elif entry and entry[0] == 0 and len(entry) == 4:
            shape = None if entry[2] is None else _shape(entry[2], f"{p}[2]")
            dtype = entry[3]
            if dtype is not None and (type(dtype) is not str or len(dtype) > MAX_DTYPE):
                raise _fail(f"{p}[3]", "expected a dtype name or null")
            rows.add_variable(_int(entry[1], f"{p}[1]"), shape, dtype)
        else:
            raise _fail(p, "expected [0, gen, shape, dtype] or [1, gen, op, ins, outs]")
    check_graph(rows)

    def function(v: Any, path: str) -> int:
        fid = _int(v, path, 0, n - 1)
        if rows._info[fid].kind != FUNCTION:
            raise _fail(path, f"node {fid} is not a function")
        return fid

    for k, r in enumerate(_list(header.get("raw"), "raw")):
        p = f"raw[{k}]"
        r = _list(r, p)
        if r and r[0] == 0 and len(r) == 4:
            fid = function(r[1], f"{p}[1]")
            rows.add_forward_step(fid, reader.values(r[2], f"{p}[2]"), _int(r[3], f"{p}[3]"))
        elif r and r[0] == 1 and len(r) == 7:
            fid = function(r[1], f"{p}[1]")
            gys = reader.values(r[2], f"{p}[2]")
            gxs = reader.values(r[3], f"{p}[3]")
            accs = []
            for j, a in enumerate(_list(r[4], f"{p}[4]")):
                q = f"{p}[4][{j}]"
                a = _list(a, q, 5)
                node, slot = _int(a[0], f"{q}[0]"), _int(a[1], f"{q}[1]")
                # the contribution is the input's gradient (a[3], the same value, as written)
                contribution = gxs[slot] if 0 <= slot < len(gxs) else None
                old, new = reader.value(a[2], f"{q}[2]"), reader.value(a[4], f"{q}[4]")
                accs.append((node, slot, old, contribution, new))
            cleared = tuple(_int(c, f"{p}[5]") for c in _list(r[5], f"{p}[5]"))
            rows.add_backward_step(fid, gys, gxs, tuple(accs), cleared, _int(r[6], f"{p}[6]"))
        else:
            raise _fail(p, "expected a forward or a backward step")
    roots = _list(header.get("backward_roots"), "backward_roots")
    rows.backward_roots = [_int(r, f"backward_roots[{i}]") for i, r in enumerate(roots)]
    scope_nodes = tables.get("scope_nodes", np.zeros(0, np.int64))
    scope_ids = tables.get("scope_ids", np.zeros(0, np.int64))
    if scope_nodes.shape != scope_ids.shape:
        raise _fail("scope_nodes", "expected as many node ids as scope_ids has scope ids")
    for node, sid in zip(scope_nodes.tolist(), scope_ids.tolist(), strict=True):
        if sid == 0:
            raise _fail("scope_ids", f"node {node} is in scope 0 (the root): never written")
        rows.set_scope(node, sid)
    line_nodes = tables.get("line_nodes", np.zeros(0, np.int64))
    line_numbers = tables.get("line_numbers", np.zeros(0, np.int64))
    if line_nodes.shape != line_numbers.shape:
        raise _fail("line_nodes", "expected as many node ids as line_numbers has lines")
    for i, (node, line) in enumerate(zip(line_nodes.tolist(), line_numbers.tolist(), strict=True)):
        rows.set_line(
            function(node, f"line_nodes[{i}]"), _int(line, f"line_numbers[{i}]", 0, MAX_LINE)
        )
    for v in _list(header.get("parameters", []), "parameters"):
        rows.mark_parameter(_int(v, "parameters"))
    for i, pair in enumerate(_list(header.get("params", []), "params")):
        fid, params = _list(pair, f"params[{i}]", 2)
        rows.set_params(function(fid, f"params[{i}][0]"), check_params(params, f"params[{i}][1]"))
    for i, pair in enumerate(_list(header.get("cuts", []), "cuts")):
        node, step = _list(pair, f"cuts[{i}]", 2)
        rows.mark_cut(_int(node, f"cuts[{i}][0]"), _int(step, f"cuts[{i}][1]"))
    for i, e in enumerate(_list(header.get("extra"), "extra")):
        p = f"extra[{i}]"
        e = _list(e, p, 6)
        if type(e[3]) is not str or e[3] not in EVENT_KINDS:
            raise _fail(f"{p}[3]", f"expected one of {sorted(EVENT_KINDS)}")
        origin = None if e[5] is None else _int(e[5], f"{p}[5]")
        value = reader.value(e[4], f"{p}[4]")
        rows.add_event(
            _int(e[0], f"{p}[0]"), _int(e[1], f"{p}[1]"), _int(e[2], f"{p}[2]"), EVENT_KINDS[e[3]],
            value, origin,
        )  # fmt: skip
    names = header.get("names")
    if type(names) is not dict:
        raise _fail("names", "expected an object")
    for key, name in names.items():
        if type(name) is not str or len(name) > MAX_NAME:
            raise _fail(f"names[{key[:20]!r}]", f"expected a name of at most {MAX_NAME} characters")
        rows.set_name(_node_key(key, "names"), name)
    for field in ("constants", "operands"):
        for v in _list(header.get(field), field):
            rows.mark_constant(_int(v, field), operand=field == "operands")
    grad_of = header.get("grad_of")
    if type(grad_of) is not dict:
        raise _fail("grad_of", "expected an object")
    for key, target in grad_of.items():
        rows.set_grad_of(_node_key(key, "grad_of"), _int(target, f"grad_of[{key!r}]"))
    check_tables(rows, graph=False)
    return rows
