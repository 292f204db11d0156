"""The compact binary form of a trace (how a recording crosses a process boundary): it round-
trips every state, value, gradient and step exactly, builds no Step while writing, and reading
refuses what is not one (no pickle, every field checked)."""

import io
import json

import numpy as np
import pytest

import autodiff.functions as F
from autodiff import Variable, no_grad, trace
from autodiff.trace import TraceFormatError
from autodiff.trace._trace import trace_from_npz
from autodiff.trace.formats.npz import trace_to_npz


def _loop():
    x = Variable(np.array(1.0), name="x")
    w = Variable(np.arange(12.0).reshape(3, 4) / 10, name="w")  # 12 > 8: a summary
    with trace.record(max_array_size=8) as t:
        for v, clear in ((1.0, True), (2.0, False), (0.5, True)):
            x.data = np.array(v)
            if clear:
                x.cleargrad()
                w.cleargrad()
            with no_grad():
                c = x * 3
            y = F.sum(F.tanh(w * x) * 2.0) + F.sin(x) * x + c
            y.name = "y"
            y.backward(create_graph=v == 0.5)
    return t


def _round_trip(t):
    buffer = io.BytesIO()
    trace_to_npz(t, buffer)
    buffer.seek(0)
    return trace_from_npz(buffer)


def test_round_trip_keeps_everything_the_viewer_reads():
    t = _loop()
    back = _round_trip(t)
    n = len(t.steps)
    assert back.steps == t.steps
    assert back.backward_roots == t.backward_roots
    assert back._constants == t._constants and back._operands == t._operands
    assert back._names == t._names and back._grad_of == t._grad_of
    for node in range(len(t._info)):
        assert back.node(node) == t.node(node)
        assert back.position_timeline(node) == t.position_timeline(node)
        for pos in range(-1, 2 * n):
            assert back.state_at_position(node, pos) is t.state_at_position(node, pos)
            assert back.value_at_position(node, pos) == t.value_at_position(node, pos)
            assert back.grad_at_position(node, pos) == t.grad_at_position(node, pos)


def test_writing_builds_no_step_of_the_run():
    t = _loop()
    trace_to_npz(t, io.BytesIO())
    assert t._steps == [] and t._graph is None


def _function(header):
    return next(e for e in header["info"] if e[0] == 1)


def _fid(header):
    return header["info"].index(_function(header))


def _seed(header):
    return next(e for e in header["extra"] if e[5] is not None and e[5] >= 0)


def _accumulation(header):
    return next(a for r in header["raw"] if r[0] == 1 for a in r[4])


def _tampered(edit):
    buffer = io.BytesIO()
    trace_to_npz(_loop(), buffer)
    buffer.seek(0)
    with np.load(buffer) as f:
        arrays = {k: f[k] for k in f.files}
    header = json.loads(bytes(arrays["header"]).decode())
    edit(header, arrays)
    arrays["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    out = io.BytesIO()
    np.savez(out, **arrays)
    out.seek(0)
    return out


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda h, a: h.update(format="pickle"), "format"),
        (lambda h, a: h["raw"][0].__setitem__(1, 10**6), "raw"),
        (lambda h, a: h["raw"][0][2].__setitem__(0, 3 * 10**7), "does not exist"),
        (lambda h, a: _function(h)[3].append(_function(h)[4][0]), "cycle"),
        (lambda h, a: h["extra"][0].__setitem__(3, "exec"), "expected one of"),
        (lambda h, a: h.update(array_dtypes=["object"]), "not an array dtype"),
        (lambda h, a: a.update(arrays=np.array([[0, 10**9, 4]])), "array"),
        # the rules the JSON loader keeps too (autodiff.trace._rules)
        (lambda h, a: h["backward_roots"].__setitem__(0, _fid(h)), "is not a variable"),
        (lambda h, a: h["cuts"].append([_fid(h), 0]), r"cuts\[\d+\]\[0\]: node \d+ is not a"),
        (lambda h, a: h["grad_of"].update({"0": _fid(h)}), r"grad_of: node \d+ is not a"),
        (lambda h, a: h["raw"][0].__setitem__(3, 999), r"during_backward: backward pass 999"),
        (lambda h, a: _seed(h).__setitem__(5, len(h["backward_roots"])), r"events\[\d+\]\.pass"),
        (lambda h, a: _accumulation(h).__setitem__(4, -1), r"expected old \+ contribution = new"),
    ],
)
def test_reading_refuses_what_is_not_a_trace(edit, message):
    with pytest.raises(TraceFormatError, match=message):
        trace_from_npz(_tampered(edit))


def test_pickled_objects_are_never_loaded():
    buffer = io.BytesIO()
    np.savez(buffer, header=np.array([object()], dtype=object))
    buffer.seek(0)
    with pytest.raises(TraceFormatError, match=r"member 'header': holds object"):
        trace_from_npz(buffer)
    with pytest.raises(TraceFormatError):
        trace_from_npz(io.BytesIO(b"not a zip file"))


def _arrays_of(t):
    from autodiff.trace._rows import FWD

    found = []
    for r in t._raw:
        groups = (r[4],) if r[0] == FWD else (r[2], r[3], *(a[2:] for a in r[4]))
        found += [v for g in groups for v in g if isinstance(v, np.ndarray)]
    return found


def test_an_array_held_by_several_entries_is_written_once_and_read_back_shared():
    x = Variable(np.array([1.0, 2.0, 3.0]), name="x")
    with trace.record() as t:
        for _ in range(2):
            y = F.sum(F.tanh(x) * x + x)
            y.backward()
    arrays = _arrays_of(t)
    unique = {id(a) for a in arrays}
    assert len(unique) < len(arrays)  # a gradient is also an accumulation's value
    buffer = io.BytesIO()
    trace_to_npz(t, buffer)
    buffer.seek(0)
    with np.load(buffer) as z:
        assert len(z["arrays"]) == len(unique) + sum(
            1 for e in t._extra if isinstance(e[4], np.ndarray)
        )
    buffer.seek(0)
    back = trace_from_npz(buffer)
    assert len({id(a) for a in _arrays_of(back)}) == len(unique)
