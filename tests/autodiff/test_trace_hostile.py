"""Hostile and broken binary traces (.npz): each is refused with a TraceFormatError naming the
member or the field, in memory bounded by the file's size (nothing a member declares is
allocated or decompressed before it is checked); and whatever a recording holds, its writer
writes a file its reader reads back."""

import contextlib
import io
import json
import re
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

import autodiff
import autodiff.functions as F
from autodiff import Function, Layer, Variable, trace
from autodiff.trace import TraceFormatError
from autodiff.trace._checks import MAX_NAME, MAX_OP, MAX_SCOPE_PATH
from autodiff.trace._trace import trace_from_npz
from autodiff.trace.formats.npz import MAX_HEADER_DEPTH, trace_to_npz
from autodiff.trace.formats.npz_members import (
    MAX_MEMBERS,
    MAX_NPY_HEADER,
    MAX_NPY_NESTING,
    MAX_RATIO,
)

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "traces"
MB = 1 << 20


# ----------------------------------------------------------------------------------------
# Making hostile files
# ----------------------------------------------------------------------------------------
def _recorded():
    x = Variable(np.array([1.0, 2.0, 3.0]), name="x")
    with trace.record() as t:
        y = F.sum(F.tanh(x) * x)
        y.name = "y"
        y.backward()
    return t


def _good_members():
    """Member name -> array of a small trace's file."""
    buffer = io.BytesIO()
    trace_to_npz(_recorded(), buffer)
    buffer.seek(0)
    with np.load(buffer) as z:
        return {name: z[name] for name in z.files}


def _npy(array):
    out = io.BytesIO()
    np.lib.format.write_array(out, np.asarray(array), allow_pickle=False)
    return out.getvalue()


def _raw_npy(header, data=b""):
    """An .npy with ``header`` as its header text, as a hostile tool writes it."""
    text = header.encode("latin1")
    if len(text) < 1 << 16:
        return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text + data
    return b"\x93NUMPY\x02\x00" + len(text).to_bytes(4, "little") + text + data


def _zip(members, deflated=(), extra=None):
    """The bytes of a zip of ``members`` (name -> array or .npy bytes); ``deflated`` names
    the members compressed; ``extra(zipfile)`` may add more."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, value in members.items():
            data = value if isinstance(value, bytes) else _npy(value)
            method = zipfile.ZIP_DEFLATED if name in deflated else zipfile.ZIP_STORED
            z.writestr(f"{name}.npy", data, compress_type=method)
        if extra is not None:
            extra(z)
    return out.getvalue()


def _with(**replaced):
    members = _good_members()
    members.update(replaced)
    return _zip(members)


def _header_edited(edit):
    members = _good_members()
    header = json.loads(members["header"].tobytes())
    edit(header)
    members["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    return _zip(members)


def _zeros_member(z, name, nbytes, prefix=b""):
    """A deflated member of ``prefix`` then ``nbytes`` zero bytes, written a chunk at a time."""
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_DEFLATED
    info._compresslevel = 1  # (fast: zeros compress a thousand times at any level)
    with z.open(info, "w", force_zip64=True) as f:
        f.write(prefix)
        chunk = bytes(4 * MB)
        for _ in range(nbytes // len(chunk)):
            f.write(chunk)


def _read(data):
    return trace_from_npz(io.BytesIO(data))


def _refused(data, message):
    with pytest.raises(TraceFormatError, match=message) as info:
        _read(data)
    text = str(info.value)
    assert "Traceback" not in text and len(text) < 600
    return text


def _peak_mb(action):
    """The most memory ``action`` held at once (numpy's arrays and Python's objects)."""
    tracemalloc.start()
    try:
        with contextlib.suppress(TraceFormatError):
            action()
        return tracemalloc.get_traced_memory()[1] / MB
    finally:
        tracemalloc.stop()


# ----------------------------------------------------------------------------------------
# Memory: bounded before anything is allocated
# ----------------------------------------------------------------------------------------
ZIP_BOMB = 256 * MB  # what the bombs below declare (each file is a few hundred KB)


@pytest.fixture(scope="module")
def unused_bomb():
    members = _good_members()
    return _zip(members, extra=lambda z: _zeros_member(z, "unused.npy", ZIP_BOMB))


def test_an_unknown_member_is_never_decompressed(unused_bomb):
    assert len(unused_bomb) < 2 * MB
    back = _read(unused_bomb)
    assert len(back.steps) == len(_recorded().steps)
    assert _peak_mb(lambda: _read(unused_bomb)) < 50


@pytest.mark.parametrize("name", ["header", "scalars", "data_float64"])
def test_a_member_declaring_more_than_its_ratio_is_refused_unread(name):
    members = _good_members()
    dtype = "uint8" if name == "header" else "float64"
    npy_header = np.lib.format.header_data_from_array_1_0(np.zeros(0, dtype))
    npy_header["shape"] = (ZIP_BOMB // np.dtype(dtype).itemsize,)
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, npy_header)
    del members[name]
    bomb = _zip(members, extra=lambda z: _zeros_member(z, f"{name}.npy", ZIP_BOMB, out.getvalue()))
    assert len(bomb) < 2 * MB
    text = _refused(bomb, rf"member '{name}': declares \d+ bytes for \d+ in the zip")
    assert f"more than {MAX_RATIO} times" in text
    assert _peak_mb(lambda: _read(bomb)) < 50


def test_a_header_of_empty_arrays_is_refused_in_bounded_memory():
    # [[],[],...] takes ~20 times its text once parsed: the ratio bounds the text to 10 times
    # what the zip holds, so the app never parses the 100 MB a 100 KB member inflates to
    text = ("[" + "[]," * (33 * MB) + "[]]").encode()
    members = _good_members()
    members["header"] = np.frombuffer(text, dtype=np.uint8)
    data = _zip(members, deflated={"header"})
    assert len(data) < 1 * MB
    _refused(data, r"member 'header': declares")
    assert _peak_mb(lambda: _read(data)) < 200
    small = _with(header=np.frombuffer(b"[" + b"[]," * 100_000 + b"[]]", dtype=np.uint8))
    _refused(small, "not a binary trace: the format is not")  # not an AttributeError


def test_a_shape_of_ten_billion_elements_is_refused_before_allocating():
    huge = _raw_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (10000000000,), }", bytes(8))
    data = _with(scalars=huge)
    _refused(data, r"member 'scalars': declares an array of 80000000000 bytes, above the limit")
    assert _peak_mb(lambda: _read(data)) < 50
    lying = _raw_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000,), }", bytes(8))
    _refused(_with(scalars=lying), r"member 'scalars': .*8000000 bytes of data, the zip 8")


# ----------------------------------------------------------------------------------------
# Not a zip of .npy members, or a broken one
# ----------------------------------------------------------------------------------------
def test_a_plain_npy_and_not_a_zip_are_refused():
    _refused(_npy(np.arange(3.0)), r"not a binary trace \(a zip of \.npy arrays\)")
    _refused(b"", r"not a binary trace")
    _refused(b"PK\x05\x06" + bytes(18), r"not a binary trace")  # an empty zip


def test_every_truncation_is_refused():
    data = _zip(_good_members())
    for end in range(0, len(data), max(1, len(data) // 97)):
        with pytest.raises(TraceFormatError):
            _read(data[:end])


def test_a_corrupted_member_fails_its_crc():
    data = bytearray(_zip(_good_members()))
    info = zipfile.ZipFile(io.BytesIO(bytes(data))).getinfo("scalars.npy")
    data[info.header_offset + 30 + len(info.filename) + info.compress_size - 1] ^= 0xFF
    _refused(bytes(data), r"member 'scalars': cannot be read: BadZipFile: Bad CRC-32")


def test_a_missing_member_is_named():
    members = _good_members()
    del members["summary_stats"]
    _refused(_zip(members), r"member 'summary_stats': missing")


def test_the_zips_directory_is_bounded():
    members = {f"m{i}": np.zeros(0) for i in range(MAX_MEMBERS + 1)}
    _refused(_zip(members), rf"lists {MAX_MEMBERS + 1} members, above the limit of {MAX_MEMBERS}")

    def twice(z):
        with pytest.warns(UserWarning, match="Duplicate name"):
            z.writestr("scalars.npy", _npy(np.zeros(1)))

    _refused(_zip(_good_members(), extra=twice), r"lists member 'scalars.npy' twice")


def test_a_member_compressed_otherwise_is_refused():
    members = _good_members()
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as z:
        for name, value in members.items():
            method = zipfile.ZIP_BZIP2 if name == "scalars" else zipfile.ZIP_STORED
            z.writestr(f"{name}.npy", _npy(value), compress_type=method)
    _refused(data.getvalue(), r"member 'scalars': compressed by method 12")


# ----------------------------------------------------------------------------------------
# A member's .npy header: guarded before numpy's parser sees it
# ----------------------------------------------------------------------------------------
def test_a_long_or_deep_npy_header_is_refused_before_parsing():
    long = "{'descr': '<f8', 'fortran_order': False, 'shape': (0,), }" + " " * 100_000
    _refused(_with(scalars=_raw_npy(long)), rf"above the limit of {MAX_NPY_HEADER}")
    deep = "{'descr': '<f8', 'fortran_order': False, 'shape': " + "(" * 1000 + ")" * 1000 + "}"
    _refused(_with(scalars=_raw_npy(deep)), rf"nested deeper than {MAX_NPY_NESTING} levels")
    signs = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + "-" * 3000 + "1,), }"
    _refused(_with(scalars=_raw_npy(signs)), r"member 'scalars': cannot be read: RecursionError")
    _refused(_with(scalars=_raw_npy("__import__('os')")), r"member 'scalars': cannot be read")
    python2 = "{'descr': '<f8', 'fortran_order': False, 'shape': (1L,), }"  # numpy would repair it
    _refused(_with(scalars=_raw_npy(python2, bytes(8))), r"header is not a Python literal")


@pytest.mark.parametrize(
    ("member", "array", "message"),
    [
        ("scalars", np.array([1 + 2j]), r"holds complex128 \('<c16'\); a trace stores float64"),
        ("scalars", np.array([1.0], dtype=">f8"), r"holds >f8 \('>f8'\); a trace stores float64"),
        ("arrays", np.zeros((1, 3)), r"holds float64 \('<f8'\); a trace stores int64"),
        ("arrays", np.zeros((1, 4), dtype=np.int64), r"has shape \(1, 4\); expected \(n, 3\)"),
        ("arrays", np.zeros((2, 3), dtype=np.int64, order="F"), r"stored in Fortran order"),
        ("header", np.frombuffer(b"{}", dtype=np.int8), r"holds int8 \('\|i1'\)"),
        ("scope_ids", np.zeros((1, 1), dtype=np.int64), r"has shape \(1, 1\); expected \(n,\)"),
    ],
)
def test_a_member_of_another_dtype_or_shape_is_refused_not_cast(member, array, message):
    _refused(_with(**{member: array}), rf"member '{member}': {message}")


def test_a_buffer_of_another_dtype_is_refused_not_cast():
    members = _good_members()
    floats = members["data_float64"]
    members["data_float64"] = np.zeros(len(floats), dtype=np.int8)
    _refused(_zip(members), r"member 'data_float64': holds int8 \('\|i1'\); a trace stores float64")


def test_arrays_sharing_a_buffers_elements_are_refused():
    # each array row reading the whole buffer would copy it once per row
    members = _good_members()
    rows = members["arrays"].copy()
    rows[:, 1] = 0
    rows[:, 2] = rows[0, 2]
    members["arrays"] = rows
    _refused(_zip(members), r"arrays: the arrays of buffer 0 do not fill it exactly|back to back")


# ----------------------------------------------------------------------------------------
# The header's JSON
# ----------------------------------------------------------------------------------------
def test_a_deeply_nested_header_is_refused_before_parsing():
    deep = np.frombuffer(b"[" * 100_000 + b"]" * 100_000, dtype=np.uint8)
    _refused(_with(header=deep), rf"member 'header': .*deeper than {MAX_HEADER_DEPTH} levels")


def test_a_header_that_is_not_json_text_is_refused():
    _refused(_with(header=np.frombuffer(b"\xff\xfe", np.uint8)), r"member 'header': not JSON")
    _refused(_with(header=np.frombuffer(b'{"a": 1', np.uint8)), r"member 'header': not JSON")
    digits = b'{"format": ' + b"9" * 5000 + b"}"
    _refused(_with(header=np.frombuffer(digits, np.uint8)), r"member 'header': not JSON")


@pytest.mark.parametrize("key", ["²", "\u0661", "-1", "1e3", " 1", "9" * 40])
def test_a_node_key_that_is_not_ascii_digits_is_refused(key):
    _refused(_header_edited(lambda h: h["names"].update({key: "x"})), r"names: bad key")
    _refused(_header_edited(lambda h: h["grad_of"].update({key: 0})), r"grad_of: bad key")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda h: h["info"][0].__setitem__(3, "d" * 65), r"info\[0\]\[3\]: expected a dtype"),
        (lambda h: h["names"].update({"0": "n" * (MAX_NAME + 1)}), r"at most 10000 characters"),
        (lambda h: h["scopes"].append(["s", "C" * (MAX_OP + 1), 0]), r"at most 200 characters"),
        (lambda h: h.update(array_dtypes=["float64", "float64"]), r"array_dtypes: .* or twice"),
        (lambda h: h.update(array_dtypes=["complex128"]), r"array_dtypes: 'complex128' is not"),
        (lambda h: h.update(version=2), r"version: expected 1"),
    ],
)
def test_header_fields_are_checked(edit, message):
    _refused(_header_edited(edit), message)


# ----------------------------------------------------------------------------------------
# The corpus: the files, small enough to keep
# ----------------------------------------------------------------------------------------
NPZ_CORPUS = {
    "complex_scalars": r"member 'scalars': holds complex128",
    "float_row_table": r"member 'arrays': holds float64",
    "int8_as_float64": r"member 'data_float64': holds int8",
    "huge_shape": r"member 'scalars': declares an array of 80000000000 bytes",
    "plain_npy": r"not a binary trace \(a zip of \.npy arrays\)",
    "truncated": r"not a binary trace \(a zip of \.npy arrays\)",
    "name_key_superscript": r"names: bad key '²'",
    "root_is_a_function": r"backward_roots\[0\]: node \d+ is not a variable",
    "event_pass_equal_to_roots": r"events\[\d+\]\.pass: backward pass 1 does not exist",
    "during_backward_999": r"steps\[0\]\.during_backward: backward pass 999 does not exist",
}


def test_the_npz_corpus_is_there():
    assert {p.stem for p in CORPUS.glob("*.npz")} == set(NPZ_CORPUS)
    assert all(p.stat().st_size < 8192 for p in CORPUS.glob("*.npz"))


@pytest.mark.parametrize("name", sorted(NPZ_CORPUS))
def test_a_corpus_npz_is_refused_naming_the_member_or_field(name):
    path = CORPUS / f"{name}.npz"
    with pytest.raises(TraceFormatError, match=NPZ_CORPUS[name]):
        trace_from_npz(path)
    with pytest.raises(TraceFormatError, match=NPZ_CORPUS[name]):
        trace_from_npz(io.BytesIO(path.read_bytes()))


def test_a_path_that_is_not_a_regular_file_is_refused(tmp_path):
    with pytest.raises(TraceFormatError, match="not a regular file"):
        trace_from_npz(tmp_path)
    with pytest.raises(TraceFormatError, match="cannot read the file"):
        trace_from_npz(tmp_path / "missing.npz")


# ----------------------------------------------------------------------------------------
# What a recording holds is written so that it is read back
# ----------------------------------------------------------------------------------------
def _both_ways(t, tmp_path):
    """``t`` saved as JSON and as npz, and read back from each."""
    t.to_json(tmp_path / "t.json")
    trace_to_npz(t, tmp_path / "t.npz")
    return trace.load(tmp_path / "t.json"), trace_from_npz(tmp_path / "t.npz")


def test_ten_thousand_nested_scopes_are_read_back(tmp_path):
    x = Variable(np.array(2.0), name="x")
    with trace.record() as t, contextlib.ExitStack() as stack:
        for i in range(10_000):
            stack.enter_context(autodiff.scope(f"block{i}"))
        y = F.sin(x) * x
        y.backward()
    deepest = t.scopes()[-1]
    assert deepest.depth == 10_000 and len(deepest.path) <= MAX_SCOPE_PATH
    assert deepest.path.startswith("block0/…/") and deepest.path.endswith("/block9999")
    for back in _both_ways(t, tmp_path):
        assert [r.path for r in back.scopes()] == [r.path for r in t.scopes()]
        assert back.node(back.functions[-1])["scope"] == deepest.path


def test_long_names_op_names_and_layer_classes_are_read_back(tmp_path):
    class Twice(Function):
        def forward(self, x):
            return x * 2

        def backward(self, gy):
            return gy * 2

    Twice.__name__ = "T" * (MAX_OP + 100)

    class Block(Layer):
        def forward(self, x):
            return Twice()(x)

    Block.__name__ = "B" * (MAX_OP + 100)
    block = Block()
    block.name = "n" * (MAX_NAME + 100)
    x = Variable(np.array(1.0), name="x" * (MAX_NAME + 100))
    with trace.record() as t:
        with autodiff.scope("s" * (MAX_NAME + 100)):
            y = block(x)
        y.backward()
    for back in _both_ways(t, tmp_path):
        assert back.node(0)["name"] == "x" * (MAX_NAME - 1) + "…"
        assert back.node(back.functions[0])["op"] == "T" * (MAX_OP - 1) + "…"
        outer, inner = back.scopes()[1:]
        assert outer.name == "s" * (MAX_NAME - 1) + "…" and len(outer.path) <= MAX_SCOPE_PATH
        assert inner.name == "n" * (MAX_NAME - 1) + "…" and len(inner.path) <= MAX_SCOPE_PATH
        assert inner.cls == "B" * (MAX_OP - 1) + "…"
        assert re.fullmatch(r"s+/…/s+…", outer.path) and re.fullmatch(r"s+/…/n+…", inner.path)


@pytest.mark.parametrize("dtype", [np.complex128, np.longdouble])
def test_values_of_dtypes_without_a_buffer_are_kept_as_summaries(tmp_path, dtype):
    x = Variable(np.array([1.5, -2.0], dtype=dtype), name="x")
    with trace.record() as t:
        y = F.sum(x * x)
        y.backward()
    for back in _both_ways(t, tmp_path):
        value = back.steps[0].values[0]
        assert value.array is None and value.dtype == str(np.dtype(dtype))
        assert value.shape == (2,) and value.max == 4.0
        assert back.node(0)["dtype"] == t.node(0)["dtype"]


def test_an_array_of_numpys_most_dimensions_is_read_back(tmp_path):
    x = Variable(np.full((1,) * 64, 3.0), name="x")
    with trace.record() as t:
        y = F.sum(x * x)
        y.backward()
    for back in _both_ways(t, tmp_path):
        assert back.node(0)["shape"] == (1,) * 64
        assert back.steps[0].values[0].array.shape == (1,) * 64
        assert back.steps[-1].input_grads[0] == t.steps[-1].input_grads[0]


def test_a_trace_the_readers_would_refuse_is_not_written(tmp_path):
    t = _recorded()
    function = t.functions[0]
    t.backward_roots = [function]  # what a hostile file once made the app hold
    with pytest.raises(TraceFormatError, match=r"backward_roots\[0\]: node \d+ is not a variable"):
        trace_to_npz(t, tmp_path / "t.npz")
    with pytest.raises(TraceFormatError, match=r"backward_roots\[0\]"):
        t.to_json(tmp_path / "t.json")
    assert not (tmp_path / "t.npz").exists() and not (tmp_path / "t.json").exists()


def test_a_tall_column_round_trips_through_json(tmp_path):
    """A (4096, 1) int64 array is as many rows as elements: written as nested lists it was as
    dense in brackets as a hostile file, and the loader refused what the writer wrote."""
    import autodiff.functions as F
    from autodiff import Variable, trace

    column = np.arange(4096, dtype=np.int64).reshape(4096, 1)
    with trace.record() as t:
        x = Variable(np.ones((4096, 1)), name="x")
        y = F.sum(x * column)
        y.backward()
    path = tmp_path / "tall.json"
    t.to_json(path)
    assert path.read_text().count("[") < 200  # flat: a list per array, not per row
    loaded = trace.load(path)
    values = [s.values for s in loaded.steps if s.phase == "forward"]
    kept = [v.array for vs in values for v in vs if v is not None and v.shape == (4096, 1)]
    assert kept and np.array_equal(kept[0], column.astype(np.float64))


def test_nested_arrays_of_older_schemas_still_load():
    from autodiff.trace._checks import _array

    nested = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    flat = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    expected = np.arange(1.0, 7.0).reshape(3, 2)
    assert np.array_equal(_array(nested, (3, 2), "float64", "a"), expected)
    assert np.array_equal(_array(flat, (3, 2), "float64", "a"), expected)
    with pytest.raises(TraceFormatError, match="a"):
        _array(flat[:5], (3, 2), "float64", "a")
    with pytest.raises(TraceFormatError):
        _array([[1.0, 2.0], 3.0, [4.0, 5.0]], (3, 2), "float64", "a")
