"""Whatever is typed, the language answers with a Program or an ExpressionError, never a crash."""

import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from viewer.model.expression.program import ExpressionError, parse

TOKENS = [
    "x", "y", "W", "a", " ", "\n", "=", "+", "-", "*", "/", "**", "@", "(", ")", "[", "]",
    ",", ":", "0", "1", "2.5", "1e3", "-1", "exp", "log", "sum", "reshape", "grad", "randn",
    "zeros", "ones", "arange", "axis=", "keepdims=True", "shape=", ".", "_", "__class__",
    "lambda", "import", "'s'", "x[0]", "max", "softmax", "matmul", "tanh", "sqrt", "pi", "#",
]  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TOKENS), max_size=25))
def test_random_token_soup_never_crashes(tokens):
    text = "".join(tokens)
    try:
        program = parse(text)
    except ExpressionError as e:
        assert e.line >= 1 and e.col >= 1
        return
    try:
        evaluation = program.run()
    except ExpressionError as e:
        assert e.line >= 1 and e.col >= 1
        return
    evaluation.release()


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=60))
def test_arbitrary_unicode_never_crashes(text):
    with contextlib.suppress(ExpressionError):
        parse(text).run()
