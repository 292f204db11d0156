"""The program's text is the one truth: a leaf's value is written into it (only the right side
of its assignment changes), a file replaces it only when allowed, and a file whose first line
of code is not Python (prose) is refused before anything changes."""

import pytest

from viewer.model.document.document import Document
from viewer.model.document.expression_loader import leaf_edit
from viewer.model.document.file_loader import not_a_program
from viewer.model.expression.program import ExpressionError, parse
from viewer.model.scripts.process import ScriptProcess

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


# ---------------------------------------------------------------------------- not_a_program
@pytest.mark.parametrize(
    "text",
    [
        "x = 0.5\ny = exp(x)\n",
        "# comments first\n\nx = 0.5\ny = exp(x +\n",  # an error on a later line
        "y = (x +\n     2)\n",
        "y = tanh(x) **\nz = 1\n",  # code cut short on line 1: a program with a mistake
        '"""A docstring\nover lines\n"""\nimport numpy\n',
        "@decorator\ndef f():\n    pass\n",
        "def f(x):\n    return x\n",
        "",
        "# only a comment\n",
    ],
)
def test_code_is_not_refused(text):
    not_a_program(text, "f.expr")


@pytest.mark.parametrize(
    ("text", "line", "shown"),
    [
        (PROSE, 1, "Once upon a time, a student wanted to se…"),
        ("# a title comment\n\nDear reader, hello!\n", 3, "Dear reader, hello!"),
        ("Hello world.\nx = 1\n", 1, "Hello world."),
    ],
)
def test_prose_is_refused_naming_the_line(text, line, shown):
    with pytest.raises(ValueError) as caught:
        not_a_program(text, "notes.txt")
    message = str(caught.value)
    assert message.startswith(f"not a program: line {line} of notes.txt reads '{shown}'")


def test_opening_prose_changes_nothing_and_a_later_error_opens(tmp_path):
    doc = Document()
    assert doc.run_expression("x = 0.5\ny = exp(x)")
    trace, source = doc.trace, doc.source
    for suffix in (".txt", ".expr", ".py"):
        notes = tmp_path / f"notes{suffix}"
        notes.write_text(PROSE)
        assert doc.load_path(notes) is False
        assert str(doc.last_error).startswith("not a program: line 1")
        assert doc.trace is trace and doc.source == source and doc.script_run is None
    broken = tmp_path / "broken.expr"
    broken.write_text("x = 0.5\ny = 2\nz = exp(x +\n")
    assert doc.load_path(broken) is False  # opened: its text is the source, with its error
    assert doc.source == broken.read_text()
    assert isinstance(doc.last_error, ExpressionError) and doc.last_error.line == 3
    script = tmp_path / "broken.py"
    script.write_text("import numpy as np\nx = np.ones(3)\ny = x +\n")
    run = doc.load_path(script)
    assert isinstance(run, ScriptProcess)  # the worker reports its SyntaxError
    doc.script_run = None


def test_a_program_replaces_the_source_only_when_allowed(tmp_path):
    doc = Document()
    assert doc.run_expression("x = 0.5\ny = exp(x)")
    trace, source = doc.trace, doc.source
    path = tmp_path / "other.expr"
    path.write_text("y = cos(x)\n")
    asked = []
    statuses = []
    doc.status_changed.connect(statuses.append)

    def no(opened):
        asked.append(opened.path.name)
        return False

    assert doc.load_path(path, no) is False
    assert doc.load_example("diamond", no) is False
    assert asked == ["other.expr", "diamond.expr"]
    assert doc.trace is trace and doc.source == source and doc.last_error is None
    assert statuses[-1] == "Kept the edited program; diamond.expr was not opened"
    assert doc.load_path(path, lambda opened: True)
    assert doc.source == "y = cos(x)\n"


def test_a_trace_saved_as_npz_opens_like_one_saved_as_json(tmp_path):
    # README and --check call .npz a saved trace; File > Open said "unknown file type"
    import numpy as np

    import autodiff.functions as F
    from autodiff import Variable, trace
    from autodiff.trace.formats.npz import trace_to_npz

    x = Variable(np.array(0.5), name="x")
    with trace.record() as t:
        y = F.sin(x) * x
        y.backward()
    good = tmp_path / "good.npz"
    trace_to_npz(t, good)
    doc = Document()
    assert doc.load_path(good, lambda: True)
    assert doc.kind == "trace" and doc.title == "good.npz"
    nodes = {doc.trace.node(i).get("name"): i for i in doc.trace.variables}
    last = len(doc.trace.steps) - 1
    assert float(doc.trace.grad_at(nodes["x"], last).array) == pytest.approx(
        float(x.grad.data)
    )  # the gradient the program computed: sin(0.5) + 0.5 cos(0.5)
    # a broken one is refused with its name and why, and the graph on screen stays
    for name, data in (("text.npz", b"hello"), ("cut.npz", good.read_bytes()[:300])):
        bad = tmp_path / name
        bad.write_bytes(data)
        assert not doc.load_path(bad, lambda: True)
        assert str(doc.last_error).startswith(f"{bad}: not a binary trace")
        assert doc.title == "good.npz"
