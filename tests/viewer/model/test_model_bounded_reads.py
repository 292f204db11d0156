"""Opening a file never blocks or reads without bound (issue 11): a FIFO, a device and a huge
file are refused before they are read, with a message naming the file; a hostile JSON dense in
arrays is refused before parsing."""

import os
import sys

import pytest

from autodiff import trace
from viewer.model import Document


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs are POSIX")
@pytest.mark.parametrize("suffix", [".expr", ".json"])
def test_a_fifo_is_refused_without_blocking(tmp_path, suffix):
    fifo = tmp_path / f"pipe{suffix}"
    os.mkfifo(fifo)
    doc = Document()
    assert doc.load_path(fifo) is False
    assert "not a regular file" in str(doc.last_error)


def test_a_device_and_a_huge_program_are_refused(tmp_path):
    doc = Document()
    if os.path.exists("/dev/zero"):
        zero = tmp_path / "zero.expr"
        zero.symlink_to("/dev/zero")
        assert doc.load_path(zero) is False
        assert "not a regular file" in str(doc.last_error)
    big = tmp_path / "big.txt"
    with open(big, "wb") as f:
        f.truncate(200_000_000)  # sparse: nothing written, st_size says 200 MB
    assert doc.load_path(big) is False
    assert "at most 20000 characters" in str(doc.last_error)


def test_a_json_dense_in_arrays_is_refused_before_parsing(tmp_path):
    path = tmp_path / "dense.json"
    path.write_text('{"format": "autodiff-trace", "x": [' + "[]," * 300_000 + "[]]}")
    with pytest.raises(trace.TraceFormatError, match="not a trace file"):
        trace.load(path)
    doc = Document()
    assert doc.load_path(path) is False


def test_a_binary_program_file_is_named_in_its_error(tmp_path):
    path = tmp_path / "noise.expr"
    path.write_bytes(bytes(range(128, 256)) * 4)
    doc = Document()
    assert doc.load_path(path) is False
    assert "cannot open noise.expr: not UTF-8 text" in str(doc.last_error)
