"""A trace as compact binary data: the recorder's decoded tables, with every array in one
numpy ``.npz`` (never pickle), validated field by field when read back.

This is how a trace crosses a process boundary (a script run in a child interpreter hands
its recording to the app): unlike :func:`autodiff.trace.Trace.to_json` it builds no Step,
Snapshot or networkx object of the run, so a run of millions of steps goes across at the
cost of its arrays. Reading trusts nothing: a hostile or broken file raises
:class:`~autodiff.trace.TraceFormatError` naming the field.

Layout of the ``.npz``: ``header`` (UTF-8 JSON, as uint8) holds the structure, with each raw
value as a *reference* ``kind + 3 * index`` (-1: None) into ``scalars`` (float64),
``arrays`` (rows ``(dtype, offset, size)`` into the flat buffer ``data_<dtype>``, shapes in
the header) or ``summaries`` (rows ``min, max, mean, norm`` and ``nan, inf``, shapes and
dtypes in the header).
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import math
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from autodiff.trace._checks import _ARRAY_DTYPES, _MAX_NDIM, TraceFormatError, _fail, _int, _list
from autodiff.trace._io import _EVENT_NAMES
from autodiff.trace._recorder import _FUNCTION, _FWD
from autodiff.trace._rules import check_graph, check_tables
from autodiff.trace._snapshot import Snapshot

if TYPE_CHECKING:
    from collections.abc import Callable

    from autodiff.trace._trace import Trace

__all__ = ["FORMAT", "trace_from_npz", "trace_to_npz"]

FORMAT = "autodiff-trace-binary"
VERSION = 1
_SCALAR, _ARRAY, _SUMMARY = range(3)


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
            self.arrays.append(np.asarray(raw))
            ref = self._seen[id(raw)] = _ARRAY + 3 * (len(self.arrays) - 1)
        return ref

    def refs(self, raws: Any) -> list[int]:
        return [self.ref(r) for r in raws]

    def write(self, header: dict, out: dict[str, np.ndarray]) -> None:
        out["scalars"] = np.asarray(self.scalars, dtype=np.float64)
        dtypes: list[str] = []
        rows = []
        buffers: dict[str, list[np.ndarray]] = {}
        offsets: dict[str, int] = {}
        for a in self.arrays:
            name = a.dtype.name
            if name not in _ARRAY_DTYPES:
                a, name = a.astype(np.float64), "float64"
            if name not in offsets:
                offsets[name] = 0
                buffers[name] = []
                dtypes.append(name)
            rows.append((dtypes.index(name), offsets[name], a.size))
            buffers[name].append(np.ascontiguousarray(a).reshape(-1))
            offsets[name] += a.size
        out["arrays"] = np.asarray(rows, dtype=np.int64).reshape(-1, 3)
        for name, parts in buffers.items():
            out[f"data_{name}"] = np.concatenate(parts) if parts else np.zeros(0, dtype=name)
        header["array_dtypes"] = dtypes
        header["array_shapes"] = [list(a.shape) for a in self.arrays]
        stats = [[s.min, s.max, s.mean, s.norm] for s in self.summaries]
        out["summary_stats"] = np.asarray(stats, dtype=np.float64).reshape(-1, 4)
        counts = [[s.nan, s.inf] for s in self.summaries]
        out["summary_counts"] = np.asarray(counts, dtype=np.int64).reshape(-1, 2)
        header["summary_shapes"] = [list(s.shape) for s in self.summaries]
        header["summary_dtypes"] = [s.dtype for s in self.summaries]


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


def trace_to_npz(trace: Trace, file: str | os.PathLike[str] | io.BytesIO) -> None:
    """Write ``trace`` (its decoded tables) to ``file`` (a path or a binary buffer)."""
    with _collector_paused():
        _write(trace, file)


def _write(trace: Trace, file: str | os.PathLike[str] | io.BytesIO) -> None:
    check_tables(trace.tables)
    values = _Values()
    info = []
    for entry in trace._info:
        if entry.kind == _FUNCTION:
            _, gen, op, ins, outs = entry
            info.append([1, int(gen), str(op), list(ins), list(outs)])
        else:
            _, gen, shape, dtype = entry
            shape = None if shape is None else [int(d) for d in shape]
            info.append([0, int(gen), shape, None if dtype is None else np.dtype(dtype).name])
    raw = []
    for r in trace._raw:
        if r.kind == _FWD:
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
        [int(stamp), int(visible), int(node), _EVENT_NAMES[kind], values.ref(value), origin]
        for stamp, visible, node, kind, value, origin in trace._extra
    ]
    header = {
        "format": FORMAT,
        "version": VERSION,
        "max_array_size": trace.max_array_size,
        "info": info,
        "raw": raw,
        "extra": extra,
        "names": {str(k): str(v) for k, v in trace._names.items()},
        "constants": sorted(trace._constants),
        "operands": sorted(trace._operands),
        "grad_of": {str(k): int(v) for k, v in trace._grad_of.items()},
        "backward_roots": [int(r) for r in trace.backward_roots],
        "scopes": [[r.name, r.cls, int(r.parent)] for r in trace.scopes()[1:]],
        "parameters": sorted(trace._parameters),
        "cuts": [[int(n), int(k)] for n, k in sorted(trace._recorder._cut.items())],
    }
    out: dict[str, np.ndarray] = {}
    scope_of = trace._scope_of
    out["scope_nodes"] = np.fromiter(scope_of.keys(), np.int64, len(scope_of))
    out["scope_ids"] = np.fromiter(scope_of.values(), np.int64, len(scope_of))
    values.write(header, out)
    text = json.dumps(header, allow_nan=True, separators=(",", ":")).encode("utf-8")
    out["header"] = np.frombuffer(text, dtype=np.uint8)
    np.savez(file, **out)


# =============================================================================
# Reading, validated
# =============================================================================
def _shape(v: Any, path: str) -> tuple[int, ...]:
    dims = _list(v, path)
    if len(dims) > _MAX_NDIM:
        raise _fail(path, f"more than {_MAX_NDIM} dimensions")
    return tuple(_int(d, f"{path}[{i}]", lo=0) for i, d in enumerate(dims))


class _Reader:
    def __init__(self, header: dict, arrays: Any) -> None:
        self.header = header
        self.scalars = arrays["scalars"].astype(np.float64, copy=False).reshape(-1)
        table = arrays["arrays"]
        self.array_rows = table.astype(np.int64, copy=False).reshape(-1, 3)
        dtypes = [str(d) for d in _list(header.get("array_dtypes"), "array_dtypes")]
        for d in dtypes:
            if d not in _ARRAY_DTYPES:
                raise _fail("array_dtypes", f"{d[:20]!r} is not an array dtype")
        self.buffers = [arrays[f"data_{d}"].reshape(-1) for d in dtypes]
        self.array_shapes = _list(header.get("array_shapes"), "array_shapes", len(self.array_rows))
        self.summary_stats = arrays["summary_stats"].astype(np.float64, copy=False).reshape(-1, 4)
        self.summary_counts = arrays["summary_counts"].astype(np.int64, copy=False).reshape(-1, 2)
        n = len(self.summary_stats)
        self.summary_shapes = _list(header.get("summary_shapes"), "summary_shapes", n)
        self.summary_dtypes = _list(header.get("summary_dtypes"), "summary_dtypes", n)
        if len(self.summary_counts) != n:
            raise _fail("summary_counts", f"expected {n} rows")
        self._arrays: dict[int, np.ndarray] = {}  # one array for every ref to it, as written
        self.scalar_list = self.scalars.tolist()  # Python floats, read once
        self.row_list = self.array_rows.tolist()

    def value(self, ref: Any, path: str, i: int | None = None) -> Any:
        """The raw value ``ref`` names (``path[i]`` in a message: built only for one)."""
        if type(ref) is not int or ref < -1:
            raise _fail(_at(path, i), f"expected a value reference, got {str(ref)[:40]}")
        if ref < 0:
            return None
        kind, index = ref % 3, ref // 3
        if kind == _SCALAR:
            if index >= len(self.scalars):
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
            if not 0 <= which < len(self.buffers) or math.prod(shape) != size:
                raise _fail(_at(path, i), f"array {index} has a bad buffer or size")
            buffer = self.buffers[which]
            if offset < 0 or offset + size > len(buffer):
                raise _fail(_at(path, i), f"array {index} runs past its buffer")
            found = self._arrays[index] = buffer[offset : offset + size].reshape(shape).copy()
            return found
        if index >= len(self.summary_stats):
            raise _fail(_at(path, i), f"summary {index} does not exist")
        shape = _shape(self.summary_shapes[index], f"summary_shapes[{index}]")
        dtype = self.summary_dtypes[index]
        if type(dtype) is not str or len(dtype) > 64:
            raise _fail(f"summary_dtypes[{index}]", "expected a dtype name")
        nan, inf = (int(x) for x in self.summary_counts[index])
        if nan < 0 or inf < 0:
            raise _fail(f"summary_counts[{index}]", "negative counts")
        return Snapshot(
            shape, dtype, None, *(float(x) for x in self.summary_stats[index]), nan, inf
        )

    def values(self, refs: Any, path: str) -> tuple:
        return tuple([self.value(r, path, i) for i, r in enumerate(_list(refs, path))])


def _at(path: str, i: int | None) -> str:
    return path if i is None else f"{path}[{i}]"


def trace_from_npz(
    file: str | os.PathLike[str] | io.BytesIO, make: Callable[[int], Trace]
) -> Trace:
    """Read a trace written by :func:`trace_to_npz`; raises TraceFormatError."""
    with _collector_paused():
        return _read(file, make)


def _read(file: str | os.PathLike[str] | io.BytesIO, make: Callable[[int], Trace]) -> Trace:
    try:
        with np.load(file, allow_pickle=False) as arrays:
            data = {name: arrays[name] for name in arrays.files}
    except (OSError, ValueError, EOFError, KeyError) as e:
        raise TraceFormatError(f"not a binary trace: {str(e)[:200]}") from None
    try:
        header = json.loads(bytes(data["header"].astype(np.uint8)).decode("utf-8"))
        reader = _Reader(header, data)
    except KeyError as e:
        raise TraceFormatError(f"not a binary trace: missing {e}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError, TypeError) as e:
        raise TraceFormatError(f"not a binary trace: {str(e)[:200]}") from None
    if type(header) is not dict or header.get("format") != FORMAT:
        raise TraceFormatError(f"not a binary trace: the format is not {FORMAT!r}")
    if header.get("version") != VERSION:
        raise _fail("version", f"expected {VERSION}")
    t = make(_int(header.get("max_array_size"), "max_array_size", lo=0))
    rows = t.tables
    info = _list(header.get("info"), "info")
    n = len(info)
    for i, row in enumerate(_list(header.get("scopes", []), "scopes")):
        p = f"scopes[{i}]"
        name, cls, parent = _list(row, p, 3)
        if type(name) is not str or type(cls) is not str or len(name) + len(cls) > 10_000:
            raise _fail(p, "expected [name, class, parent]")
        sid = rows.add_scope(name, cls, _int(parent, f"{p}[2]", 0, i))
        if len(t.scopes()[sid].path) > 10_000:
            raise _fail(p, "the scope's path is longer than 10000 characters")
    for i, entry in enumerate(info):
        p = f"info[{i}]"
        entry = _list(entry, p)
        if entry and entry[0] == 1 and len(entry) == 5:
            op = entry[2]
            if type(op) is not str or len(op) > 200:
                raise _fail(f"{p}[2]", "expected an op name")
            ins = tuple(_int(x, f"{p}[3]", 0, n - 1) for x in _list(entry[3], f"{p}[3]"))
            outs = tuple(_int(x, f"{p}[4]", 0, n - 1) for x in _list(entry[4], f"{p}[4]"))
            rows.add_function(_int(entry[1], f"{p}[1]"), op, ins, outs)
        elif entry and entry[0] == 0 and len(entry) == 4:
            shape = None if entry[2] is None else _shape(entry[2], f"{p}[2]")
            dtype = entry[3]
            if dtype is not None and (type(dtype) is not str or dtype not in _ARRAY_DTYPES):
                raise _fail(f"{p}[3]", "expected an array dtype or null")
            rows.add_variable(_int(entry[1], f"{p}[1]"), shape, dtype)
        else:
            raise _fail(p, "expected [0, gen, shape, dtype] or [1, gen, op, ins, outs]")
    check_graph(rows)

    def function(v: Any, path: str) -> int:
        fid = _int(v, path, 0, n - 1)
        if t._info[fid].kind != _FUNCTION:
            raise _fail(path, f"node {fid} is not a function")
        return fid

    roots = [
        _int(r, "backward_roots", 0, n - 1)
        for r in _list(header.get("backward_roots"), "backward_roots")
    ]
    for k, r in enumerate(_list(header.get("raw"), "raw")):
        p = f"raw[{k}]"
        r = _list(r, p)
        if r and r[0] == 0 and len(r) == 4:
            fid = function(r[1], f"{p}[1]")
            _, _, _, ins, outs = t._info[fid]
            vals = reader.values(r[2], f"{p}[2]")
            if len(vals) != len(outs):
                raise _fail(f"{p}[2]", f"{len(vals)} values for {len(outs)} outputs")
            during = _int(r[3], f"{p}[3]", lo=-1)
            rows.add_forward_step(fid, vals, during)
        elif r and r[0] == 1 and len(r) == 7:
            fid = function(r[1], f"{p}[1]")
            _, _, _, ins, outs = t._info[fid]
            gys = reader.values(r[2], f"{p}[2]")
            gxs = reader.values(r[3], f"{p}[3]")
            if len(gys) != len(outs) or len(gxs) != len(ins):
                raise _fail(p, "the gradients do not match the function's slots")
            accs = []
            for j, a in enumerate(_list(r[4], f"{p}[4]")):
                q = f"{p}[4][{j}]"
                a = _list(a, q, 5)
                slot = _int(a[1], f"{q}[1]", 0, max(len(ins) - 1, 0))
                node = _int(a[0], f"{q}[0]", 0, n - 1)
                if not ins or node != ins[slot]:
                    raise _fail(q, "the node is not the function's input at that slot")
                accs.append((node, slot, *(reader.value(a[i], f"{q}[{i}]") for i in (2, 3, 4))))
            cleared = tuple(_int(c, f"{p}[5]", 0, n - 1) for c in _list(r[5], f"{p}[5]"))
            bpass = _int(r[6], f"{p}[6]", 0, max(len(roots) - 1, 0))
            rows.add_backward_step(fid, gys, gxs, tuple(accs), cleared, bpass)
        else:
            raise _fail(p, "expected a forward or a backward step")
    t.backward_roots = roots
    scope_nodes = data.get("scope_nodes", np.zeros(0, np.int64))
    scope_ids = data.get("scope_ids", np.zeros(0, np.int64))
    if (
        scope_nodes.shape != scope_ids.shape
        or scope_nodes.ndim != 1
        or scope_nodes.dtype.kind not in "iu"
        or scope_ids.dtype.kind not in "iu"
        or (scope_nodes.size and (scope_nodes.min() < 0 or scope_nodes.max() >= n))
        or (scope_ids.size and (scope_ids.min() < 0 or scope_ids.max() >= len(t.scopes())))
    ):
        raise _fail("scope_nodes", "expected node ids and scope ids of the same length")
    for node, sid in zip(scope_nodes.tolist(), scope_ids.tolist(), strict=True):
        rows.set_scope(node, sid)
    for v in _list(header.get("parameters", []), "parameters"):
        rows.mark_parameter(_int(v, "parameters", 0, n - 1))
    for i, pair in enumerate(_list(header.get("cuts", []), "cuts")):
        node, step = _list(pair, f"cuts[{i}]", 2)
        rows.mark_cut(_int(node, f"cuts[{i}][0]", 0, n - 1), _int(step, f"cuts[{i}][1]", lo=0))
    kinds = {name: kind for kind, name in _EVENT_NAMES.items()}
    steps = len(t._raw)
    last = 0
    for i, e in enumerate(_list(header.get("extra"), "extra")):
        p = f"extra[{i}]"
        e = _list(e, p, 6)
        stamp = _int(e[0], f"{p}[0]", last, steps)
        last = stamp
        visible = _int(e[1], f"{p}[1]", -1, stamp)
        node = _int(e[2], f"{p}[2]", 0, n - 1)
        if e[3] not in kinds:
            raise _fail(f"{p}[3]", f"expected one of {sorted(kinds)}")
        origin = None if e[5] is None else _int(e[5], f"{p}[5]", -1, len(roots))
        value = reader.value(e[4], f"{p}[4]")
        rows.add_event(stamp, visible, node, kinds[e[3]], value, origin)
    names = header.get("names")
    if type(names) is not dict:
        raise _fail("names", "expected an object")
    for key, name in names.items():
        if not key.isdigit() or type(name) is not str or len(name) > 10_000:
            raise _fail("names", f"bad entry {key[:20]!r}")
        rows.set_name(_int(int(key), "names", 0, n - 1), name)
    for field in ("constants", "operands"):
        for v in _list(header.get(field), field):
            rows.mark_constant(_int(v, field, 0, n - 1), operand=field == "operands")
    grad_of = header.get("grad_of")
    if type(grad_of) is not dict:
        raise _fail("grad_of", "expected an object")
    for key, target in grad_of.items():
        if not key.isdigit():
            raise _fail("grad_of", f"bad key {key[:20]!r}")
        rows.set_grad_of(_int(int(key), "grad_of", 0, n - 1), _int(target, "grad_of", 0, n - 1))
    check_tables(rows, graph=False)
    return t
