"""The corpus of hostile programs (tests/corpus/hostile_expressions.txt): each is refused with
an ExpressionError that has a line and column, or runs; never a raw exception, and within the
run's budgets (no multi-GB allocation: the limits refuse before allocating)."""

import resource
from pathlib import Path

import pytest

from viewer.model.expression.program import ExpressionError, evaluate

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "hostile_expressions.txt"


class HeldRunner(list):
    """A runner that keeps what each work was given (a trace to lay out, a program's job) for
    the test to run by hand."""

    def submit(self, work) -> None:
        self.append(work.args[0])

    def cancel(self, kind: str) -> None:
        pass


def _programs() -> list[tuple[str, str]]:
    blocks = CORPUS.read_text(encoding="utf-8").split("\n---\n")
    found = []
    for block in blocks:
        lines = block.strip("\n").split("\n")
        comments = [line for line in lines if line.startswith("#")]
        code = "\n".join(line for line in lines if not line.startswith("#"))
        if code.strip():
            found.append((comments[-1] if comments else code[:40], code))
    return found


PROGRAMS = _programs()


def test_the_corpus_is_read():
    assert len(PROGRAMS) >= 15


@pytest.mark.parametrize("program", [p for _, p in PROGRAMS], ids=[i for i, _ in PROGRAMS])
def test_hostile_program_is_refused_cleanly(program):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        evaluate(program)
    except ExpressionError as e:
        assert e.line is not None and e.line >= 1 and e.col is not None, e
        assert str(e).startswith(f"line {e.line}")
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 1500, f"peak memory grew by {grown_mb:.0f} MB"


@pytest.mark.parametrize("program", ["y = x  # \ud800", "y = x\udfff * 2", "\ud83d = 1"])
def test_a_lone_surrogate_is_an_expression_error(program):
    with pytest.raises(ExpressionError, match="lone surrogate") as info:
        evaluate(program)
    assert info.value.line == 1 and info.value.col >= 1


def test_a_lone_surrogate_in_a_table_value_is_refused():
    from viewer.model import Document

    doc = Document()
    assert doc.run_expression("y = x * 2")
    assert doc.set_leaf_value("x", "1\ud800") is False
    assert "lone surrogate" in str(doc.last_error)


def test_an_unexpected_engine_error_is_an_error_not_a_crash(monkeypatch):
    from viewer.model import Document
    from viewer.model.expression import program as expression_module

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a hole in the checks")

    doc = Document()
    assert doc.run_expression("y = x * 2")
    monkeypatch.setattr(expression_module.Program, "run", broken)
    assert doc.run_expression("y = x * 3") is False
    assert "ZeroDivisionError: a hole in the checks" in str(doc.last_error)
    assert doc.scene is not None  # the previous graph stays


def test_which_programs_are_quick():
    from viewer.model.expression.program import parse

    nested = "y = tanh(x)\n" + "\n".join(
        f"g{i} = grad({'y' if i == 1 else f'g{i - 1}'}, x)" for i in range(1, 6)
    )
    assert parse("y = sin(x) * x").quick()
    assert parse("y = tanh(x)\ng = grad(y, x)\nh = grad(g, x)").quick()
    assert not parse(nested).quick()
    assert not parse("W = ones(1000, 1000)\ny = sum(W)").quick()
    assert not parse("\n".join(f"a{i} = x * {i}" for i in range(80))).quick()


def test_a_document_runs_a_slow_program_through_its_runner_and_can_cancel_it():
    import threading

    from viewer.model import Document

    doc = Document()
    assert doc.run_expression("y = x * 2")
    before = doc.trace
    jobs = HeldRunner()
    doc.runner = jobs
    nested = "y = tanh(x)\n" + "\n".join(
        f"g{i} = grad({'y' if i == 1 else f'g{i - 1}'}, x)" for i in range(1, 10)
    )
    assert doc.run_expression(nested) and len(jobs) == 1
    assert doc.run_expression("y = x") is False  # one run at a time
    assert "a program is running" in str(doc.last_error)
    worker = threading.Thread(target=jobs[0].run)
    worker.start()
    doc.cancel_expression()
    worker.join(5)
    assert not worker.is_alive()
    assert doc.apply_expression(jobs[0]) is False
    assert doc.trace is before and doc.expression_job is None
    assert doc.run_expression("y = x * 3")


def _slow_document():
    from viewer.model import Document
    from viewer.model.expression.program import parse

    doc = Document()
    slow = "W = ones(1000, 1000)\ny = sum(W * x)"
    assert not parse(slow).quick()
    assert doc.run_expression(slow)  # no runner yet: on this thread
    jobs = HeldRunner()
    doc.runner = jobs
    return doc, jobs


def test_a_leaf_edit_of_a_slow_program_runs_on_the_runner_too():
    doc, jobs = _slow_document()
    before = doc.trace
    assert doc.set_leaf_value("x", "3") and len(jobs) == 1
    assert doc.trace is before  # nothing changed yet: the run is on the worker
    jobs[0].run()
    assert doc.apply_expression(jobs[0])
    assert float(doc.evaluation.output.data) == 3_000_000.0
    assert doc.source == "W = ones(1000, 1000)\nx = 3\ny = sum(W * x)"  # the text holds it
    assert doc.program.source == doc.source and "x" not in doc.leaf_values


def test_a_cancelled_leaf_edit_puts_the_old_value_back():
    doc, jobs = _slow_document()
    assert doc.set_leaf_value("x", "3")
    rows = []
    doc.leaves_changed.connect(rows.append)
    jobs[0].cancel()
    jobs[0].run()
    assert doc.apply_expression(jobs[0]) is False
    assert "x" not in doc.leaf_values and rows  # the table shows the default again
    assert doc.source == "W = ones(1000, 1000)\ny = sum(W * x)"  # and the text is as it was
    assert doc.reset_leaf_values() and len(jobs) == 2
