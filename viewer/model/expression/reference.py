"""The expression language's reference, as the app's Help shows it: built from the rules
themselves (:data:`~viewer.model.expression.rules.FUNCTIONS`, ``CONSTRUCTORS``, ``BINOPS``),
so it lists exactly what the checker accepts."""

from __future__ import annotations

from viewer.model.expression.rules import (
    BINOPS,
    CONSTANT_NAMES,
    CONSTRUCTORS,
    FUNCTIONS,
    GRAD,
    KNOWN_CALLABLES,
    MAX_EXPONENT,
)

__all__ = ["language_reference", "unknown_function_hint"]

# Sections of the function list, in the order a learner meets them; a function the table
# does not name goes under "Other" (so a new one is never left out).
_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Elementwise", ("sin", "cos", "exp", "log", "tanh", "square", "sqrt", "neg")),
    ("Activations", ("sigmoid", "relu", "leaky_relu", "softmax", "log_softmax")),
    ("Arithmetic", ("add", "sub", "mul", "div", "matmul", "linear", "clip")),
    ("Reductions", ("sum", "mean", "average", "max", "min")),
    ("Losses", ("mean_squared_error", "sigmoid_cross_entropy", "binary_cross_entropy")),
    (
        "Shapes",
        ("reshape", "transpose", "flatten", "expand_dims", "broadcast_to", "sum_to"),
    ),
)


def language_reference() -> list[tuple[str, list[tuple[str, str]]]]:
    """The language's sections: (title, [(what to type, what it does)]), plain text."""
    operators = " ".join(BINOPS.values())
    sections: list[tuple[str, list[tuple[str, str]]]] = [
        (
            "Statements",
            [
                ("name = expr", "names the result in the graph; the last statement is the output"),
                ("name += expr", "also -= *= /= **= @="),
                ("x = 0.5", "a constant right side makes a leaf with that starting value"),
                ("# text", "a comment; the first comment line is the program's title"),
            ],
        ),
        (
            "Operators",
            [
                (operators, "and unary - and +"),
                ("x ** 2", f"the exponent is a number, at most {MAX_EXPONENT:g} in size"),
                ("x[0], W[:, 1]", "indexing with integers and slices"),
                (
                    "[[1, 2], [3, 4]]",
                    "nested lists make arrays; " + ", ".join(CONSTANT_NAMES) + " is a constant",
                ),
            ],
        ),
    ]
    listed: set[str] = set()
    for title, names in _GROUPS:
        rows = [(FUNCTIONS[n].signature, "") for n in names if n in FUNCTIONS]
        listed.update(n for n in names if n in FUNCTIONS)
        if rows:
            sections.append((title, rows))
    other = [(FUNCTIONS[n].signature, "") for n in FUNCTIONS if n not in listed]
    if other:
        sections.append(("Other", other))
    sections.append(
        ("Constant arrays", [(_signature_and_note(text)) for _, text in CONSTRUCTORS.values()])
    )
    sections.append(
        (
            "Derivatives",
            [(f"{GRAD}(y, x)", "dy/dx as a graph of its own: grad(grad(y, x), x) is the second")],
        )
    )
    return sections


def _signature_and_note(text: str) -> tuple[str, str]:
    signature, _, note = text.partition(": ")
    return signature, note


def unknown_function_hint(name: str, close: list[str]) -> str:
    """What to say after "unknown function name()": the close matches, else where the list
    is (it has too many entries for one message line)."""
    if close:
        return f"did you mean {' or '.join(close)}?"
    return f"Help > Expression Language lists all {len(KNOWN_CALLABLES)}"
