"""The program's text is the one truth: a leaf's value is written into it (only the right side
of its assignment changes)."""

import pytest

from viewer.model.document.document import Document
from viewer.model.document.expression_loader import leaf_edit
from viewer.model.expression.program import ExpressionError, parse

PROSE = (
    "Once upon a time, a student wanted to see backpropagation happen step by step.\n"
    "She wrote her notes in a plain text file, about gradients and chain rules.\n\n"
) * 20


# ---------------------------------------------------------------------------- leaf_edit
@pytest.mark.parametrize(
    ("source", "value", "after"),
    [
        ("# seeds\nx = 0.5  # start\ny = exp(x)\n", "2", "# seeds\nx = 2  # start\ny = exp(x)\n"),
        ("x = [1, 2]\ny = sum(x)", "[3,  4]  # typed", "x = [3,  4]\ny = sum(x)"),
        ("x = [1,\n     2]\ny = sum(x)", "[5, 6]", "x = [5, 6]\ny = sum(x)"),
        ("# é ü 😀\nx = (0.5)\ny = x * 2", "pi / 4", "# é ü 😀\nx = (pi / 4)\ny = x * 2"),
        ("square(x)", "2", "x = 2\nsquare(x)"),
        ("W = ones(3)\ny = sum(W * x)", "3", "W = ones(3)\nx = 3\ny = sum(W * x)"),
        ("a = 2; y = a * x", "1.5", "x = 1.5\na = 2; y = a * x"),
    ],
)
def test_a_leaf_value_is_written_into_the_text(source, value, after):
    edit = leaf_edit(source, "x", value)
    assert edit.after == after
    assert edit.before == source and edit.name == "x"
    assert "x" in parse(edit.after).leaves


def test_the_written_value_is_the_programs_default():
    edit = leaf_edit("x = 0.5\ny = x * 3", "x", "[1, 2]")
    assert parse(edit.after).defaults["x"].tolist() == [1.0, 2.0]
    edit = leaf_edit("y = x * 3", "x", "-2.5")
    assert float(parse(edit.after).defaults["x"]) == -2.5


def test_leaf_edit_refuses_what_it_cannot_write():
    with pytest.raises(ExpressionError, match="must be a constant"):
        leaf_edit("x = 0.5\ny = x", "x", "x + 1")
    with pytest.raises(ExpressionError, match="not a variable"):
        leaf_edit("x = 0.5\ny = x", "z", "1")
    with pytest.raises(ExpressionError, match="does not parse"):
        leaf_edit("x = 0.5\ny = exp(x", "x", "1")


def test_a_typed_leaf_value_runs_from_the_text_and_says_so():
    doc = Document()
    edits = []
    doc.source_edited.connect(edits.append)
    assert doc.run_expression("x = 0.5  # start\ny = square(x)")
    assert doc.set_leaf_value("x", "3")
    assert doc.source == doc.program.source == "x = 3  # start\ny = square(x)"
    assert float(doc.evaluation.output.data) == 9.0
    assert len(edits) == 1 and edits[0].after == doc.source
    assert not doc.set_leaf_value("x", "[1, 2, 3]]")  # no edit, no signal
    assert len(edits) == 1 and doc.source == "x = 3  # start\ny = square(x)"
