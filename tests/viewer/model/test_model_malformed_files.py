"""The corpus of malformed trace files (tests/corpus/traces/): each is refused with a
TraceFormatError that names the file or the field, and opening it in the app fails cleanly,
in plain words, with the previous graph still on screen. A bug fixed adds its file."""

from pathlib import Path

import pytest

from autodiff import trace
from viewer.model import Document

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "traces"
FILES = sorted(CORPUS.glob("*.json"))


def test_the_corpus_is_there():
    assert len(FILES) >= 15


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_a_malformed_file_is_refused(path):
    with pytest.raises(trace.TraceFormatError) as info:
        trace.load(path)
    message = str(info.value)
    assert message and "Traceback" not in message
    doc = Document()
    assert doc.run_expression("y = x * 2")
    before = doc.trace
    assert doc.load_path(path) is False
    assert doc.trace is before  # the previous graph stays
    assert isinstance(doc.last_error, trace.TraceFormatError)


def test_a_json_that_is_not_a_trace_says_what_was_expected(tmp_path):
    from viewer.model import Document

    for text, found in (
        ('{"name": "settings", "size": 3}', "this one has no 'format' field"),
        ("[1, 2, 3]", "this one holds a JSON list, not an object"),
    ):
        path = tmp_path / "data.json"
        path.write_text(text)
        doc = Document()
        assert doc.load_path(path) is False
        message = str(doc.last_error)
        assert "not a saved trace: expected a file written by File > Save Trace" in message
        assert found in message
