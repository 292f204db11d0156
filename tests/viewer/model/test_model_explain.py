"""Explanations of backward steps and chain-rule paths (issue 24's contract): at every
backward step each term's numbers evaluate to its result and the result is the recorded
gradient; the chain's paths sum to each leaf's gradient; typed expressions, saved traces,
scripts, micrograd graphs and users' own Functions are all explained."""

import io
import json
import math
import re

import numpy as np
import pytest

import autodiff.functions as F
from autodiff import Function, Variable, formulas
from autodiff import trace as tr
from autodiff.micrograd.engine import Value
from viewer.model.document.document import Document
from viewer.model.document.gradient_checks import check_document, watch_scripts
from viewer.model.explain import chain, explain_step

SEEDS = ["square_exp_square", "add_add", "diamond", "tanh_x2", "sphere", "matyas", "goldstein"]
# what `.numbers` may hold: numbers, the operators, the few functions, spaces
NUMBERS = re.compile(r"^(?:[0-9.]+|[-−+*/×·^() ]|\*\*|exp|log|sin|cos|tanh|sqrt)*$")  # − : minus


def value_of(numbers: str) -> float:
    return float(formulas.evaluate(numbers, {}))


def recorded(step, slot):
    return np.asarray(step.input_grads[slot].array)


def assert_contract(trace) -> int:
    """Every backward step's terms against the recording; returns how many numbers were
    checked."""
    checked = 0
    for step in trace.steps:
        explanation = explain_step(trace, step.index)
        assert explanation.step == step.index and explanation.function == step.function
        if step.phase != "backward":
            assert explanation.terms == ()
            continue
        slots = [k for k, g in enumerate(step.input_grads) if g is not None]
        assert [t.slot for t in explanation.terms] == slots
        for term in explanation.terms:
            want = recorded(step, term.slot)
            assert term.input == step.inputs[term.slot]
            np.testing.assert_array_equal(np.asarray(term.result), want)
            has_formula = formulas.formula_of(step.op) is not None
            # a Function's attributes (Pow's c) die with it: a script's or saved graph says so
            unknown = "is not in this recording" in explanation.note
            assert bool(term.numbers) == (has_formula and not unknown), (step.op, term.formula)
            assert not unknown or trace.live(step.function) is None
            if term.numbers:
                assert NUMBERS.match(term.numbers), term.numbers
                element = want[term.element] if term.element else want
                assert value_of(term.numbers) == pytest.approx(float(element), rel=1e-3)
                checked += 1
        assert explanation.lines()
    return checked


def assert_leaves_total(trace) -> int:
    leaves = [
        n for n in trace.variables if trace.creator_of(n) < 0 and trace.node(n)["grad"] is not None
    ]
    for n in leaves:
        result = chain(trace, n)
        grad = float(np.asarray(trace.node(n)["grad"].array))
        assert result.total == pytest.approx(grad, rel=1e-9), result.text
        assert result.paths
        products = [p.product for p in result.paths]
        if not result.more and not any(map(math.isnan, products)):
            assert sum(products) == pytest.approx(grad, rel=1e-9)
        for p in result.paths:
            # NaN: a factor a Function without formula could not give (it got 0, sent 0)
            assert p.product == pytest.approx(math.prod(p.factors), nan_ok=True)
            assert len(p.factors) == len(p.labels) == (len(p.nodes) + 1) // 2
            assert p.nodes[-1] == n
    return len(leaves)


@pytest.mark.parametrize("stem", SEEDS)
def test_the_contract_holds_at_every_backward_step_of_the_seeds_examples(stem):
    doc = Document()
    assert doc.load_example(stem) is True
    assert_contract(doc.trace)
    assert assert_leaves_total(doc.trace) >= 1


def test_the_issue_example_at_the_exp_step():
    doc = Document()
    assert doc.load_expression("x = 1.0\ny = square(exp(square(x)))")
    exp_step = next(s for s in doc.trace.steps if s.phase == "backward" and s.op == "Exp")
    explanation = doc.explain_step(exp_step.index)
    (term,) = explanation.terms
    assert term.formula == "gx = gy · exp(x)"
    assert term.numbers in ("5.437 · exp(1)", "5.437 · 2.718")
    assert term.result == pytest.approx(14.78, rel=1e-3)
    assert term.element is None and term.shapes == "" and term.broadcast == ""
    assert dict(term.links) == {"gx": exp_step.inputs[0], "gy": exp_step.outputs[0], "x": 2}
    text = "\n".join(explanation.lines())
    assert "5.437 · exp(1)" in text and "14.78" in text
    x = doc.trace.variables[0]
    path = doc.chain(x)
    assert path.total == pytest.approx(4 * math.e**2, rel=1e-12)
    (only,) = path.paths
    assert only.factors[0] == 1.0 and only.factors[2] == pytest.approx(math.e)
    assert "∂y/∂x = ∂y/∂y · " in path.text and " × 2.718 × " in path.text


def test_a_variable_used_three_times_shows_each_contribution_and_the_sum():
    doc = Document()
    assert doc.load_expression("x = 3.0\ny = add(add(x, x), x)")
    backward = [s for s in doc.trace.steps if s.phase == "backward"]
    first, second = backward
    assert all(t.accumulation == "" for t in doc.explain_step(first.index).terms)
    a, b = doc.explain_step(second.index).terms
    n1, n2 = first.index + 1, second.index + 1
    assert a.accumulation == f"x.grad = 1 (from Add, step {n1}) + 1 (from Add, step {n2}) = 2"
    assert b.accumulation == (
        f"x.grad = 1 (from Add, step {n1}) + 1 (from Add, step {n2}) + 1 (from Add, step {n2}) = 3"
    )
    paths = doc.chain(0)
    assert len(paths.paths) == 3 and paths.total == 3.0 and paths.more == 0
    assert "sum over 3 paths: 1 + 1 + 1 = 3" in paths.text


def test_many_paths_list_the_largest_and_sum_the_rest():
    doc = Document()
    assert doc.load_example("goldstein")
    x = next(n for n in doc.trace.variables if doc.trace.node(n)["name"] == "x")
    full = chain(doc.trace, x, max_paths=100)
    short = chain(doc.trace, x, max_paths=2)
    assert short.total == full.total == pytest.approx(-5376.0)
    assert len(short.paths) == 2 and short.more == len(full.paths) - 2 > 0
    sizes = sorted((abs(p.product) for p in full.paths), reverse=True)
    assert [abs(p.product) for p in short.paths] == sizes[:2]
    assert f"+ {short.more} more paths" in short.text


def linear_layer():
    rng = np.random.default_rng(0)
    x = Variable(rng.standard_normal((4, 2)), name="x")
    W = Variable(rng.standard_normal((2, 3)), name="W")
    b = Variable(rng.standard_normal(3), name="b")
    with tr.record() as t:
        y = F.sum(F.exp(F.matmul(x, W) + b))
        y.backward()
    return t, (x, W, b)


def test_a_broadcast_operand_says_which_axis_was_summed_and_sums_its_numbers():
    t, (_, _, b) = linear_layer()
    add = next(s for s in t.steps if s.phase == "backward" and s.op == "Add")
    explanation = explain_step(t, add.index)
    full, bias = explanation.terms
    assert full.broadcast == ""
    assert full.shapes == "gy (4, 3) → gx0 (4, 3)"
    assert bias.broadcast == "summed over axis 0: b (3,) was broadcast to (4, 3)"
    assert bias.shapes == "gy (4, 3) → gx1 (3,)"
    np.testing.assert_allclose(bias.result, b.grad.data)
    # the default element is the gradient's largest; its numbers are the four rows' sum
    assert bias.element == (int(np.argmax(np.abs(b.grad.data))),)
    assert bias.numbers.count("+") == 3
    assert value_of(bias.numbers) == pytest.approx(b.grad.data[bias.element], rel=1e-3)
    focused = explain_step(t, add.index, focus=(2, 1))
    assert focused.terms[0].element == (2, 1) and focused.terms[1].element == (1,)
    assert value_of(focused.terms[1].numbers) == pytest.approx(b.grad.data[1], rel=1e-3)
    assert_contract_of_terms(t)


def assert_contract_of_terms(t):
    for step in t.steps:
        if step.phase == "backward":
            for term in explain_step(t, step.index).terms:
                np.testing.assert_array_equal(term.result, recorded(step, term.slot))
                if term.numbers:
                    want = np.asarray(term.result)[term.element or ()]
                    assert value_of(term.numbers) == pytest.approx(float(want), rel=1e-3)


def test_a_matrix_product_writes_the_elements_sum_of_products_and_a_loss_its_numbers():
    rng = np.random.default_rng(1)
    x = Variable(rng.standard_normal((2, 3)), name="x")
    W = Variable(rng.standard_normal((3, 2)), name="W")
    target = Variable(rng.standard_normal((2, 2)), name="t")
    with tr.record() as t:
        loss = F.mean_squared_error(F.matmul(x, W), target)
        loss.backward()
    matmul = next(s for s in t.steps if s.phase == "backward" and s.op == "MatMul")
    gx, gW = explain_step(t, matmul.index, focus=(1, 0)).terms
    assert gx.formula == "gx0 = gy @ x1ᵀ" and gx.element == (1, 0)
    assert gx.shapes == "gy (2, 2), x1 (3, 2) → gx0 (2, 3)"
    assert gx.numbers.count(" + ") == 1  # two products: gy's row 1 times W's row 0
    assert value_of(gx.numbers) == pytest.approx(x.grad.data[1, 0], rel=1e-3)
    assert gW.element == (1, 0) and gW.numbers.count(" + ") == 1
    assert value_of(gW.numbers) == pytest.approx(W.grad.data[1, 0], rel=1e-3)
    mse = next(s for s in t.steps if s.phase == "backward" and s.op == "MeanSquaredError")
    for term in explain_step(t, mse.index).terms:
        assert "len(" in term.formula and "len" not in term.numbers  # a count, written
        want = np.asarray(term.result)[term.element]
        assert value_of(term.numbers) == pytest.approx(float(want), rel=1e-3)
    assert_contract(t)


def pow_terms(trace) -> list:
    """The terms of tanh(x) * x**2's Pow step (x = 0.5)."""
    step = next(s for s in trace.steps if s.phase == "backward" and s.op == "Pow")
    return list(explain_step(trace, step.index).terms)


def record_tanh_x2():
    x = Variable(np.array(0.5), name="x")
    with tr.record() as t:
        y = F.tanh(x) * x**2
        y.backward()
    return t, (x, y)  # the objects: the live trace reads the Pow Function while they live


def test_a_pow_step_has_the_same_numbers_live_saved_as_json_or_npz_and_from_a_script(tmp_path):
    t, alive = record_tanh_x2()
    (live,) = pow_terms(t)
    assert live.formula == "gx = gy · c · x^(c − 1)"
    assert "2" in live.numbers and value_of(live.numbers) == pytest.approx(live.result, rel=1e-3)
    # the numbers in the formula's notation: "0.5^(2 − 1)", not Python's "0.5**(2 - 1)"
    assert live.numbers.endswith(" · 2 · 0.5^(2 − 1)"), live.numbers
    fid = next(s.function for s in t.steps if s.op == "Pow")
    assert t.live(fid) is not None and t.function_params(fid) == {"c": 2}
    t.to_json(tmp_path / "t.json")
    from_json = tr.load(tmp_path / "t.json")
    assert from_json.live(fid) is None and from_json.function_params(fid) == {"c": 2}
    buffer = io.BytesIO()
    tr.trace_to_npz(t, buffer)
    buffer.seek(0)
    from_npz = tr.trace_from_npz(buffer)
    assert from_npz.live(fid) is None and from_npz.function_params(fid) == {"c": 2}
    script = tmp_path / "s.py"
    script.write_text(
        "import numpy as np\nfrom autodiff import Variable\nimport autodiff.functions as F\n"
        "x = Variable(np.array(0.5), name='x')\ny = F.tanh(x) * x**2\ny.backward()\n"
    )
    doc = Document()
    assert doc.run_script(script) and doc.kind == "script"
    for trace in (from_json, from_npz, doc.trace):
        (term,) = pow_terms(trace)
        assert (term.formula, term.numbers) == (live.formula, live.numbers)
        assert term.result == live.result
        assert value_of(term.numbers) == pytest.approx(term.result, rel=1e-3)
        assert_contract(trace)
    del alive


def test_an_attribute_a_recording_does_not_keep_is_named(tmp_path):
    doc = Document()
    assert doc.load_expression("x = 2.0\ny = x ** 3")
    pow_step = next(s for s in doc.trace.steps if s.phase == "backward")
    (live,) = doc.explain_step(pow_step.index).terms
    assert live.formula == "gx = gy · c · x^(c − 1)" and value_of(live.numbers) == 12.0
    path = tmp_path / "t.json"
    assert doc.save_trace(path) and doc.load_path(path)
    (saved,) = doc.explain_step(pow_step.index).terms
    assert (saved.formula, saved.numbers) == (live.formula, live.numbers)
    # a file of schema 4 keeps no attributes: it loads, and the note names the one missing
    data = json.loads(path.read_text())
    assert data["schema_version"] == 5
    data["schema_version"] = 4
    for node in data["graph"]["nodes"]:
        node.pop("params", None)
    old = tmp_path / "v4.json"
    old.write_text(json.dumps(data))
    assert doc.load_path(old)
    explanation = doc.explain_step(pow_step.index)
    assert explanation.terms[0].formula == live.formula and explanation.terms[0].numbers == ""
    assert explanation.terms[0].result == 12.0
    assert "Pow's c is not in this recording" in explanation.note
    assert doc.chain(0).total == 12.0  # the factor then comes from the recorded gx / gy


def test_a_nan_gradient_is_explained_without_numbers():
    doc = Document()
    assert doc.load_example("nan_log")
    for step in doc.trace.steps:
        explanation = doc.explain_step(step.index)
        for term in explanation.terms:
            if not np.isfinite(term.result):
                assert term.numbers == "" and "not a finite number" in explanation.note


def test_the_chain_of_an_array_follows_one_element_through_elementwise_functions():
    x = Variable(np.array([0.5, -1.0, 2.0]), name="x")
    with tr.record() as t:
        y = F.sum(F.exp(x) * x)
        y.backward()
    for k in range(3):
        result = chain(t, 0, focus=(k,))
        assert result.total == pytest.approx(x.grad.data[k], rel=1e-12)
        assert len(result.paths) == 2 and "at element [" in result.text
    assert chain(t, 0).total == pytest.approx(x.grad.data.max())  # largest by default


def test_the_chain_through_a_matrix_product_says_why_it_has_no_paths():
    t, _ = linear_layer()
    x = next(n for n in t.variables if t.node(n)["name"] == "x")
    result = chain(t, x)
    assert result.paths == () and math.isnan(result.total)
    assert "MatMul" in result.text and "element by element" in result.text
    b = next(n for n in t.variables if t.node(n)["name"] == "b")
    assert "broadcasts (3,) to (4, 3)" in chain(t, b).text


def test_a_saved_trace_is_explained_from_its_op_names(tmp_path):
    doc = Document()
    assert doc.load_expression("x = 1.0\ny = square(exp(square(x)))")
    before = [doc.explain_step(s.index) for s in doc.trace.steps]
    path = tmp_path / "t.json"
    assert doc.save_trace(path)
    assert doc.load_path(path) is True and doc.kind == "trace"
    assert all(doc.trace.live(f) is None for f in doc.trace.functions)
    after = [doc.explain_step(s.index) for s in doc.trace.steps]
    assert [[(t.formula, t.numbers) for t in e.terms] for e in after] == [
        [(t.formula, t.numbers) for t in e.terms] for e in before
    ]
    assert any(t.numbers == "5.437 · exp(1)" for e in after for t in e.terms)
    assert_contract(doc.trace)
    assert doc.chain(0).total == pytest.approx(4 * math.e**2)


class Softplus(Function):
    def forward(self, x):
        return np.logaddexp(0.0, x)

    def backward(self, gy):
        (x,) = self.inputs
        return gy / (1 + F.exp(-x))


def test_a_users_function_shows_numbers_in_and_out_and_says_the_derivative_is_its_code():
    x = Variable(np.array([0.5, -2.0]), name="x")
    with tr.record() as t:
        y = F.sum(Softplus()(x))
        y.backward()
    step = next(s for s in t.steps if s.phase == "backward" and s.op == "Softplus")
    explanation = explain_step(t, step.index)
    (term,) = explanation.terms
    assert "your own code" in term.formula and term.numbers == ""
    np.testing.assert_array_equal(term.result, x.grad.data)
    assert term.element == (0,)  # the larger gradient: sigmoid(0.5)
    assert "your own code" in explanation.note
    assert "At element [0], in: x = 0.5, gy = 1; out: gx = 0.6225" in explanation.note
    assert "Run the gradient check" in explanation.note


def test_a_users_function_in_a_script_shows_its_gradient_check():
    doc = Document()
    sampling = watch_scripts(doc)  # as the window does: a script keeps samples to check
    result = doc.load_example("right_backward").run()
    assert result.ok, result.error
    assert doc.apply_script_result(result)
    step = next(s for s in doc.trace.steps if s.phase == "backward" and s.op == "Softplus")
    assert "Run the gradient check" in doc.explain_step(step.index).note
    report = check_document(doc)
    assert report is not None and doc.gradient_check is report
    assert "Gradient check: ok" in doc.explain_step(step.index).note
    assert_contract_of_terms(doc.trace)
    del sampling


def test_a_graph_of_a_script_is_explained(tmp_path):
    script = tmp_path / "s.py"
    script.write_text(
        "import numpy as np\nfrom autodiff import Variable\nimport autodiff.functions as F\n"
        "x = Variable(np.array(0.5), name='x')\ny = F.exp(F.square(x))\ny.backward()\n"
    )
    doc = Document()
    assert doc.run_script(script) and doc.kind == "script"
    exp_step = next(s for s in doc.trace.steps if s.phase == "backward" and s.op == "Exp")
    (term,) = doc.explain_step(exp_step.index).terms
    assert term.numbers == "1 · exp(0.25)"
    assert term.result == pytest.approx(math.exp(0.25))
    assert_contract(doc.trace)
    assert doc.chain(0).total == pytest.approx(math.exp(0.25))


def test_a_micrograd_graph_is_explained():
    with tr.record() as t:
        a, b = Value(2.0, label="a"), Value(-3.0, label="b")
        c = a * b + a
        c.backward()
    assert_contract(t)
    mul = next(s for s in t.steps if s.phase == "backward" and s.op == "Mul")
    assert [term.numbers for term in explain_step(t, mul.index).terms] == ["1 · (-3)", "1 · 2"]
    a_node = next(n for n in t.variables if t.node(n)["name"] == "a")
    assert chain(t, a_node).total == pytest.approx(a.grad) == pytest.approx(-2.0)


def test_the_micrograd_example_script_is_explained():
    doc = Document()
    result = doc.load_example("micrograd_mlp").run()
    assert result.ok, result.error
    assert doc.apply_script_result(result)
    assert_contract(doc.trace)
    assert assert_leaves_total(doc.trace) > 10


def test_higher_order_graphs_are_explained_on_their_own_steps():
    doc = Document()
    assert doc.load_example("higher_order")
    t = doc.trace
    for step in t.steps:
        explanation = doc.explain_step(step.index)
        if step.phase == "forward" and step.during_backward >= 0:
            assert "create_graph=True" in explanation.note
    assert_contract_of_terms(t)
    x = next(n for n in t.variables if t.node(n)["name"] == "x")
    assert chain(t, x).total == pytest.approx(float(t.node(x)["grad"].array))


def test_the_document_keeps_the_focused_element_until_another_graph():
    doc = Document()
    assert doc.explain_step(0).terms == () and doc.chain(0).paths == ()  # no graph yet
    doc.set_focus_element((1, 2))
    assert doc.focus_element == (1, 2)
    assert doc.load_expression("x = 1.0\ny = exp(x)")
    assert doc.focus_element is None
    assert doc.playback.index == -1 and doc.explain_step(-1).note.startswith("Before the first")
    assert doc.chain(0).total == pytest.approx(math.e)  # before any step: the last pass


def test_a_deep_chain_is_walked_in_its_length_and_its_text_stays_short():
    x = Variable(np.array(0.5), name="x")
    with tr.record() as t:
        y = x
        for _ in range(3000):
            y = F.sin(y)
        y.backward()
    result = chain(t, 0)
    (path,) = result.paths
    assert len(path.factors) == 3001 and result.total == pytest.approx(x.grad.data)
    assert path.product == pytest.approx(x.grad.data)
    assert "… (2989 more)" in result.text and len(result.text) < 600
    last = explain_step(t, len(t.steps) - 1)
    assert last.terms[0].numbers.endswith("· cos(0.5)")


def test_a_sum_a_transpose_and_a_softmax_write_the_chain_rules_sum_over_gy():
    x = Variable(np.arange(6.0).reshape(2, 3) / 10, name="x")
    weights = Variable(np.array([[1.0, -2.0], [0.5, 3.0], [2.0, 1.0]]), name="w")
    with tr.record() as t:
        s = F.softmax(F.transpose(x), axis=1)
        y = F.sum(s * weights)
        y.backward()
    backward = {s.op: s for s in t.steps if s.phase == "backward"}
    (total,) = explain_step(t, backward["Sum"].index, focus=(2, 1)).terms
    assert total.numbers == "1" and total.element == (2, 1)
    (moved,) = explain_step(t, backward["Transpose"].index, focus=(1, 2)).terms
    gy = np.asarray(backward["Transpose"].output_grads[0].array)
    assert value_of(moved.numbers) == pytest.approx(gy[2, 1], rel=1e-3)  # x[1, 2] is y[2, 1]
    assert " + " not in moved.numbers and "·" not in moved.numbers
    (soft,) = explain_step(t, backward["Softmax"].index).terms
    assert soft.numbers.count(" · ") == 2  # each row of 2: gy_j times ∂y_j/∂x
    assert value_of(soft.numbers) == pytest.approx(np.asarray(soft.result)[soft.element], rel=1e-3)
    assert_contract(t)


def test_the_chain_says_which_node_each_unnamed_symbol_is_as_the_inspector_names_it():
    from viewer.model.expression.program import evaluate

    t = evaluate("x = -0.5\nh = tanh(x)\ny = h * log(x * x) + x ** 2").trace
    text = chain(t, 0).text  # d y / d x: four paths through unnamed intermediates
    used = set(re.findall(r"\bv(\d+)\b", text.split("\nwhere ")[0]))
    assert used  # the paths do go through unnamed variables
    where = text.rsplit("\n", 1)[1]
    assert where.startswith("where ")
    for n in used:  # every symbol is explained with the inspector's own words for the node
        op = t.node(t.creator_of(int(n)))["op"]
        assert f"v{n} is variable #{n} from {op}" in where
        doc = Document()
        doc.load_trace(t)
        assert doc.inspect(int(n)).title == f"variable #{n} from {op}"
    from viewer.model.panels.explain_view import chain_lines

    linked = {n for _, n in chain_lines(chain(t, 0))[-1].segments if n is not None}
    assert linked == {int(n) for n in used}  # each symbol's words ring its node
    # a chain through named variables only has nothing to explain
    named = evaluate("x = 0.5\nh = tanh(x)\ny = h * x").trace
    x = next(n for n in named.graph.nodes if named.node(n).get("name") == "x")
    assert "where" not in chain(named, x).text
