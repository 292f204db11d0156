"""The expression language's checker: what is accepted, what is refused (with line and col)."""

import numpy as np
import pytest

from viewer.model.expression.program import (
    MAX_ELEMENTS,
    MAX_SOURCE_CHARS,
    ExpressionError,
    parse,
    parse_value,
)


def test_free_names_become_leaves_in_order_of_first_use():
    program = parse("y = b * exp(a) + a")
    assert program.leaves == ("b", "a")
    assert program.output_name == "y"
    assert float(program.defaults["a"]) == 1.0


def test_literal_assignment_makes_a_leaf_with_a_default():
    program = parse("x = 0.5\nW = [[1, 2], [3, 4]]\ny = sum(x * W)")
    assert program.leaves == ("x", "W")
    assert float(program.defaults["x"]) == 0.5
    np.testing.assert_array_equal(program.defaults["W"], [[1.0, 2.0], [3.0, 4.0]])
    assert program.defaults["W"].dtype == np.float64


def test_randn_is_seeded_by_position():
    a = parse("W = randn(2, 3)\ny = sum(W)").defaults["W"]
    b = parse("W = randn(2, 3)\ny = sum(W)").defaults["W"]
    c = parse("W = randn(2, 3, seed=1)\ny = sum(W)").defaults["W"]
    np.testing.assert_array_equal(a, b)
    assert a.shape == (2, 3)
    assert not np.array_equal(a, c)


def test_accepted_forms():
    for text in [
        "y = x @ ones(1, 1)",
        "y = -x + +x",
        "y = x ** 0.5",
        "y = x ** -2",
        "y = sum(x, axis=0, keepdims=True)",
        "y = reshape(x, 1, 1)",
        "y = reshape(x, (1, 1))",
        "y = reshape(x, shape=(1,))",
        "v = arange(4)\ny = v[1:3] * x",
        "W = zeros(2, 3)\ny = W[0, 1] + W[:, 0] + x",
        "y = x\ny += 1",
        "y = grad(x ** 3, x)",
        "y = softmax(x * ones(1, 3), axis=1)",
        "y = pi * x",
        "tanh(x) * x**2",
    ]:
        parse(text)


@pytest.mark.parametrize(
    ("text", "line", "col", "fragment"),
    [
        ("import os", 1, 1, "imports"),
        ("from os import path", 1, 1, "imports"),
        ("x = 1\ny = x.data", 2, 5, "attributes"),
        ("y = (lambda: 1)()", 1, 6, "lambdas"),
        ("y = ones(2)(x)", 1, 5, "only functions called by name"),
        ("f = lambda: 1", 1, 5, "lambdas"),
        ("y = [i for i in x]", 1, 5, "comprehensions"),
        ("y = sum(i for i in x)", 1, 8, "generator"),
        ("y = __import__('os')", 1, 5, "dunder"),
        ("y = __builtins__", 1, 5, "dunder"),
        ("y = _x + 1", 1, 5, "underscore"),
        ("y = squre(x)", 1, 5, "did you mean square"),
        ("y = frobnicate(x)", 1, 5, "Help > Expression Language lists all"),
        ("y = exp(x, axis=1)", 1, 12, "keyword axis"),
        ("y = sum(x, foo=1)", 1, 12, "keyword foo"),
        ("y = sum(x, **kw)", 1, 12, "keyword arguments"),
        ("y = x ** 2 ** 3", 1, 10, "towers"),
        ("y = x ** 5000", 1, 10, "too large"),
        ("y = x ** x", 1, 10, "must be a number"),
        ("y = zeros(2000, 2000)", 1, 5, "limit"),
        ("y = x * ones(1000, 1001)", 1, 9, "limit"),
        ("y = x < 1", 1, 5, "comparisons"),
        ("y = x if x else 1", 1, 5, "conditional"),
        ("y = 'text'", 1, 5, "strings"),
        ("y = x // 2", 1, 5, "//"),
        ("y = x % 2", 1, 5, "%"),
        ("for i in x:\n    pass", 1, 1, "loops"),
        ("def f():\n    pass", 1, 1, "function definitions"),
        ("y = x[x]", 1, 7, "integer literals"),
        ("exp = 3", 1, 1, "built-in name"),
        ("y = exp", 1, 5, "is a function"),
        ("y = x\nx = 1", 2, 1, "before it is assigned"),
        ("a, b = 1, 2", 1, 1, "plain name"),
        ("y = 1j * x", 1, 5, "complex"),
        ("y = grad(x)", 1, 5, "two arguments"),
        ("y = (x := 2)", 1, 6, "walrus"),
        ("y = {1: 2}", 1, 5, "dictionaries"),
        ("y = [[1, 2], [3]]", 1, 5, "ragged"),
        ("y = x +", 1, 8, "syntax error"),
        ("", 1, 1, "nothing to evaluate"),
        ("# only a comment", 1, 1, "nothing to evaluate"),
    ],
)
def test_rejections_point_at_line_and_column(text, line, col, fragment):
    with pytest.raises(ExpressionError) as info:
        parse(text)
    error = info.value
    assert fragment in error.message
    assert (error.line, error.col) == (line, col), error


def test_columns_count_characters_not_bytes():
    with pytest.raises(ExpressionError) as info:
        parse("# é\nété = 1\ny = été.T")
    assert (info.value.line, info.value.col) == (3, 5)


def test_very_long_input_is_refused():
    with pytest.raises(ExpressionError, match="too long"):
        parse("y = x" + " + x" * (MAX_SOURCE_CHARS // 4))


def test_deep_nesting_is_refused_before_the_parser_gives_up():
    with pytest.raises(ExpressionError, match="nested too deeply"):
        parse("y = " + "(" * 300 + "x" + ")" * 300)
    with pytest.raises(ExpressionError, match="nested too deeply"):
        parse("y = " + "-" * 500 + "x")
    with pytest.raises(ExpressionError, match="nested too deeply"):
        parse("y = x" + " ** -x" * 200)  # no long chain of one operator: nesting


def test_a_chain_too_long_is_named_as_a_chain_not_as_nesting():
    """``x + x + … + x`` nests nothing a user typed: the message says what is too long."""
    with pytest.raises(ExpressionError) as info:
        parse("x = 1\ny = x" + " + x" * 300)
    message = str(info.value)
    assert "a chain of 301 terms joined by + is too long" in message
    assert "nested" not in message and (info.value.line, info.value.col) == (2, 5)
    with pytest.raises(ExpressionError, match="a chain of 400 terms joined by \\*\\* "):
        parse("y = " + " ** ".join(["x"] * 400))


def test_a_long_flat_sum_is_not_too_deep():
    from viewer.model.expression.program import evaluate

    terms = [f"x{i}" for i in range(200)]  # a chain 200 deep in Python's tree
    ev = evaluate("y = " + " + ".join(terms))
    assert float(ev.output.data) == pytest.approx(200 * float(ev.leaves["x0"].data))


def test_the_language_never_calls_eval_exec_or_compile():
    import ast
    import inspect

    from viewer.model.expression import program as expression

    tree = ast.parse(inspect.getsource(expression))
    called = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert not called & {"eval", "exec", "compile", "__import__"}


def test_parse_value():
    assert float(parse_value("0.5")) == 0.5
    assert float(parse_value("-2")) == -2.0
    np.testing.assert_array_equal(parse_value("[1, 2]"), [1.0, 2.0])
    assert parse_value("randn(3)").shape == (3,)
    assert float(parse_value("pi / 2")) == pytest.approx(np.pi / 2)
    assert float(parse_value(3)) == 3.0
    with pytest.raises(ExpressionError):
        parse_value("x + 1")
    with pytest.raises(ExpressionError):
        parse_value("__import__('os')")
    with pytest.raises(ExpressionError):
        parse_value(np.zeros(MAX_ELEMENTS + 1))


def test_the_language_reference_lists_every_callable_the_checker_accepts_once():
    from viewer.model.expression.reference import language_reference
    from viewer.model.expression.rules import KNOWN_CALLABLES

    codes = [code for _, rows in language_reference() for code, _ in rows]
    for name in KNOWN_CALLABLES:
        starts = [c for c in codes if c.startswith(f"{name}(")]
        assert len(starts) == 1, (name, starts)
