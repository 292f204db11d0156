"""Fixtures shared by the model's and the window's tests of the viewer."""

import numpy as np
import pytest


@pytest.fixture
def explain_term():
    """``explain_term(**fields)``: a chain-rule Term of an Exp step (input 3 = 'a', output 7 =
    'b'), any field replaced."""
    from viewer.model.explain import Term

    def make(**kw) -> Term:
        fields = dict(
            input=3,
            slot=0,
            formula="gx = gy · exp(x)",
            numbers="5.43656 × exp(0.25)",
            result=np.float64(6.98),
            element=None,
            shapes="",
            broadcast="",
            accumulation="",
            links=(("gy", 7), ("x", 3)),
        )
        fields.update(kw)
        return Term(**fields)

    return make


@pytest.fixture
def explain_names():
    """The names of that step's nodes, as the window's name lookup gives them."""
    return lambda node_id: {3: "a", 5: "Exp", 7: "b"}.get(node_id, f"#{node_id}")
