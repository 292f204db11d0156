"""Long runs stay small and findable: which passes are kept, their labels, the list's filter,
and a recording whose memory is bounded by the passes kept."""

import gc
import math
import textwrap
import weakref
from types import SimpleNamespace

import numpy as np
import pytest

from autodiff import core
from autodiff.core import Variable
from viewer.model.document.document import Document
from viewer.model.panels import plots
from viewer.model.scripts import pass_recording
from viewer.model.scripts.pass_recording import PassRecording
from viewer.model.scripts.pass_sampling import (
    FLAG_HELD,
    FLAG_NONFINITE,
    PassLog,
    PassReservoir,
    filter_entries,
    format_loss,
    pass_label,
)
from viewer.model.scripts.process import ScriptProcess
from viewer.model.scripts.run import ScriptRun, _count_steps


# ---------------------------------------------------------------------------- the rule
def feed(reservoir, n, flagged=()):
    held = set()
    most = 0
    for i in range(n):
        held.add(i)
        held -= set(reservoir.offer(i, i in flagged))
        assert held == set(reservoir.kept)  # what it drops is what leaves the sample
        most = max(most, len(held))
    return held, most


def test_a_short_run_keeps_every_pass():
    reservoir = PassReservoir(max_passes=10)
    held, _ = feed(reservoir, 5)
    assert held == set(range(5)) and not reservoir.sampled and reservoir.note() == ""


def test_a_long_run_keeps_the_first_the_last_evenly_spaced_and_flagged_passes():
    reservoir = PassReservoir(max_passes=100, max_flagged=3)
    flagged = {777, 5000, 6000, 7000, 8000}
    held, most = feed(reservoir, 10_000, flagged)
    kept = reservoir.kept
    assert kept[:50] == list(range(50))  # the first max_passes // 2
    assert kept[-1] == 9999  # the last
    assert {777, 5000, 6000} <= held and not {7000, 8000} & held  # the first 3 flagged
    even = [i for i in kept if i >= 50 and i not in flagged and i != 9999]
    stride = reservoir.stride
    assert stride > 1 and all((i - 50) % stride == 0 for i in even)
    assert np.all(np.diff(even) == stride)  # evenly spaced, no gap
    assert even[0] == 50 and even[-1] + stride > 9999 - stride  # over the whole run
    # bounded whatever the length: max_passes + the last + the flagged ones
    assert most <= 100 + 1 + 3
    note = reservoir.note()
    assert note.startswith(f"showing {len(kept):,} of 10,000 passes: the first 50, ")
    assert f"every {stride}th after them" in note and "the last" in note
    assert "3 flagged (NaN/Inf, graph still held or wrong backward; the first 3 of 5)" in note


def test_the_bound_holds_for_any_length():
    for n in (2, 3, 99, 100, 101, 1000, 4097):
        reservoir = PassReservoir(max_passes=20, max_flagged=0)
        _, most = feed(reservoir, n)
        assert most <= 21 and reservoir.kept[-1] == n - 1
        assert reservoir.kept[:10] == list(range(min(n, 10)))


def test_passes_come_in_order():
    reservoir = PassReservoir(max_passes=4)
    reservoir.offer(0)
    with pytest.raises(ValueError, match="expected pass 1"):
        reservoir.offer(2)
    with pytest.raises(ValueError, match="at least 2"):
        PassReservoir(max_passes=1)


# ---------------------------------------------------------------------------- labels
def test_labels_say_the_pass_the_iteration_and_the_loss():
    assert pass_label(1234, 1233, 0.0421) == "#1234 · iter 1233 · loss 0.0421"
    assert pass_label(3, 2, 5.0, name="loss") == "#3 · iter 2 · loss 5 · from loss"
    # a loss that rounds to a whole number keeps its zeros: "8" would read as exact
    assert [format_loss(v) for v in (7.997, -0.9999, 8.0, 123.4)] == ["8.00", "-1.00", "8", "123"]
    assert pass_label(7, 6, math.nan, FLAG_NONFINITE) == "#7 · iter 6 · loss nan"
    assert "NaN/Inf in a gradient" in pass_label(8, 7, 1.0, FLAG_NONFINITE)
    assert [format_loss(v) for v in (1.23e-5, 1500.0, math.inf, -math.inf)] == [
        "1.23e-05",
        "1.5e+03",
        "inf",
        "-inf",
    ]


# ---------------------------------------------------------------------------- the filter
def entries():
    rows = [(0, 0, 0.9, 0), (1, 1, 0.5, 0), (2, 0, math.nan, FLAG_NONFINITE), (99, 99, 0.01, 0)]
    return [
        SimpleNamespace(
            title=pass_label(n + 1, it, loss, flags, "Loss"),
            number=n,
            iteration=it,
            loss=loss,
            flags=flags,
        )
        for n, it, loss, flags in rows
    ]


def test_the_filter_finds_text_in_any_case_and_compares_fields():
    graphs = entries()
    assert filter_entries(graphs, "") == [0, 1, 2, 3]
    assert filter_entries(graphs, "ITER 0") == [0, 2]
    assert filter_entries(graphs, "from loss") == [0, 1, 2, 3]
    assert filter_entries(graphs, "loss>0.5") == [0]
    assert filter_entries(graphs, "loss >= 0.5") == [0, 1]
    assert filter_entries(graphs, "loss<0.1") == [3]
    assert filter_entries(graphs, "iter=99") == [3]
    assert filter_entries(graphs, "#<=2") == [0, 1]
    assert filter_entries(graphs, "nan") == [2]
    assert filter_entries(graphs, "no such thing") == []
    # an output of a run that never called backward has no pass: text only
    outputs = [SimpleNamespace(title="output y")]
    assert filter_entries(outputs, "loss>0") == [] and filter_entries(outputs, "Y") == [0]


# ---------------------------------------------------------------------------- the log
def test_the_log_round_trips_through_arrays():
    log = PassLog()
    log.add(1.0, 0, 0, [])
    column = log.parameter("W (2, 2)")
    log.add(0.5, 1, FLAG_NONFINITE, [3.0])
    copy = PassLog.from_arrays(
        log.loss, log.iteration, log.flags, log.grad_norms, log.parameter_labels
    )
    assert column == 0 and len(copy) == 2 and copy.parameter_labels == ["W (2, 2)"]
    assert copy.loss.tolist() == [1.0, 0.5] and copy.flags.tolist() == [0, 1]
    assert np.isnan(copy.grad_norms[0, 0]) and copy.grad_norms[0, 1] == 3.0
    with pytest.raises(ValueError, match="differ in length"):
        PassLog.from_arrays([1.0], [0, 1], [0], np.zeros((0, 1)), [])


# ---------------------------------------------------------------------------- recording
def train(n, nan_at=-1):
    x = Variable(np.array([1.0, 2.0]), name="w")
    for i in range(n):
        x.cleargrad()
        y = (x * x).sum()
        y.backward()
        x.data = x.data - 0.01 * x.grad.data
        if i == nan_at:
            x.data = np.array([np.nan, 1.0])
        elif i == nan_at + 1:
            x.data = np.array([1.0, 2.0])


def test_the_recording_holds_the_kept_passes_only_and_frees_the_others():
    gc.disable()  # freed by reference counting, as the worker runs (collector off)
    try:
        recording = PassRecording(4096, max_passes=20, max_flagged=2)
        most = 0

        def count(*_):
            nonlocal most
            most = max(most, len(recording.segments))

        watcher = SimpleNamespace(on_backward_begin=count)
        core.add_observer(watcher)
        try:
            with recording:
                train(5, nan_at=-1)  # warm up the head
                first = recording._current
                train(400, nan_at=200)
        finally:
            core.remove_observer(watcher)
        assert most <= 10 + 1 + 2  # the tail: max_passes - max_passes // 2, the last, flagged
        assert len(recording.segments) + min(405, 10) == len(recording.reservoir.kept)
        assert set(recording.segments) == set(recording.reservoir.kept[10:])
        assert first is recording.head  # the first passes share one trace
        assert len(recording.passes) == 405  # but every pass's scalars are logged
        assert recording.passes.flags[5 + 201] == FLAG_NONFINITE
        assert 5 + 201 in recording.segments  # a NaN pass is kept
    finally:
        gc.enable()


def test_a_dropped_pass_is_freed_at_once():
    gc.disable()
    try:
        recording = PassRecording(4096, max_passes=4, max_flagged=0)
        with recording:
            train(4)  # passes 0, 1 (the head), 2 and 3: every one after it, for now
            ref = weakref.ref(recording.segments[3])
            train(1)  # pass 4: the tail is full, every 2nd is kept
            assert sorted(recording.segments) == [2, 4]
            assert ref() is None
    finally:
        gc.enable()


def _counting_traces(monkeypatch):
    made = []

    class Counted(pass_recording.Trace):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(pass_recording, "Trace", Counted)
    return made


def test_short_passes_off_the_stride_cost_no_trace_each(monkeypatch):
    """A pass the sample keeps only as the last one for now goes on in the trace of the one
    before (a trace a pass was most of a tiny pass's recorded cost): a long run of tiny
    passes makes a trace for every few dozen passes, and each kept pass still has its graph,
    with the loss the program computed."""
    made = _counting_traces(monkeypatch)
    monkeypatch.setattr(pass_recording, "SHARED_SECONDS", 60.0)  # the pass count decides
    gc.disable()
    try:
        recording = PassRecording(4096, max_passes=20, max_flagged=2)
        with recording:
            train(3000, nan_at=1500)
    finally:
        gc.enable()
    # the head, each pass on the stride and the one after it, one per SHARED_PASSES (162
    # here; a trace a pass past the head made 2991)
    assert len(made) < 3000 // 10, len(made)
    kept = recording.reservoir.kept
    assert len(recording.passes) == 3000 and 1501 in kept and 2999 in kept  # NaN, last
    assert set(recording.segments) == set(kept[10:])
    loss = recording.passes.loss
    shared = 0
    for p in kept[10:]:
        trace = recording.segments[p]
        bpass = recording.trace_pass[p]
        shared += bpass > 0
        root = trace.backward_roots[bpass]
        last = len(trace.steps) - 1
        value = trace.value_at(root, last).array
        assert np.sum(value) == loss[p] or (math.isnan(loss[p]) and np.isnan(value).any()), p
    assert shared  # the last pass, at least, came after others in its trace


def test_a_pass_kept_in_a_shared_trace_keeps_it_to_itself_from_then_on(monkeypatch):
    """A pass kept for more than being the last (flagged, or on the stride) ends its trace:
    the passes after it are recorded elsewhere, so what a kept pass holds stays bounded."""
    made = _counting_traces(monkeypatch)
    monkeypatch.setattr(pass_recording, "SHARED_SECONDS", 60.0)
    gc.disable()
    try:
        recording = PassRecording(4096, max_passes=20, max_flagged=2)
        with recording:
            train(400, nan_at=300)
    finally:
        gc.enable()
    nan = 301  # the pass after the one that set the NaN
    assert recording.passes.flags[nan] == FLAG_NONFINITE and nan in recording.segments
    trace = recording.segments[nan]
    assert len(trace.backward_roots) == recording.trace_pass[nan] + 1  # nothing after it
    assert all(t is not trace for p, t in recording.segments.items() if p > nan)
    assert len(made) < 400


def test_a_cancelled_runs_step_count_counts_a_shared_trace_once(monkeypatch):
    """What a cancel may send is counted by trace: one that two kept passes share (the
    last, and the one before it, found held as it ended) is counted once."""
    monkeypatch.setattr(pass_recording, "SHARED_SECONDS", 60.0)
    gc.disable()
    try:
        recording = PassRecording(4096, max_passes=20, max_flagged=2)
        x = Variable(np.array([1.0, 2.0]), name="w")
        history = []
        with recording:
            for i in range(200):
                x.cleargrad()
                y = (x * x).sum()
                y.backward()
                if i == 198:  # off the stride: kept only because the program holds it
                    history.append(y)
    finally:
        gc.enable()
    assert recording.passes.flags[198] == FLAG_HELD
    assert recording.segments[198] is recording.segments[199]
    traces = {id(t): t for t in (recording.head, *recording.segments.values())}
    total = sum(t.count_steps() for t in traces.values())
    assert _count_steps(recording, 10**9) == total


def test_without_sharing_each_pass_past_the_head_has_its_own_trace(monkeypatch):
    """SHARED_SECONDS 0: every pass is long enough to get a trace of its own (the rule for
    long passes)."""
    made = _counting_traces(monkeypatch)
    monkeypatch.setattr(pass_recording, "SHARED_SECONDS", 0.0)
    gc.disable()
    try:
        recording = PassRecording(4096, max_passes=20, max_flagged=2)
        with recording:
            train(100)
    finally:
        gc.enable()
    assert len(made) == 1 + 1 + 90  # the head, one as it ends, one after each pass past it
    assert all(recording.trace_pass[p] == 0 for p in recording.segments)


def write(tmp_path, text):
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(text))
    return path


TRAIN = """
import numpy as np
from autodiff import Variable
w = Variable(np.array([1.0, 2.0]), name="w")
for epoch in range(300):
    w.cleargrad()
    loss = (w * w).sum()
    loss.name = "loss"
    loss.backward()
    w.data = w.data - 0.01 * w.grad.data
    if epoch == 150:
        w.data = np.array([np.nan, 1.0])
    if epoch == 151:
        w.data = np.array([1.0, 2.0])
    if epoch % 100 == 0:  # a second backward() line counts its own iterations
        check = (w * 2).sum()
        check.backward()
"""


def test_a_run_lists_its_kept_passes_with_iterations_and_losses(tmp_path):
    run = ScriptRun(write(tmp_path, TRAIN))
    run.max_passes = 40
    result = run.run()
    assert result.ok, result.error
    assert len(result.passes) == 303 and result.sampling.startswith(
        f"showing {len(result.graphs)} of 303 passes: the first 20"
    )
    first = result.graphs[0]
    assert first.title == "#1 · iter 0 · loss 5 · from loss" and first.trace is None
    second = result.graphs[1]  # the check's pass, at the same epoch: its own line
    assert second.title == "#2 · iter 0 · loss 5.88"  # after the update
    assert result.graphs[2].title.startswith("#3 · iter 1 · loss ")
    nan = [g for g in result.graphs if "loss nan" in g.title]
    assert len(nan) == 1 and nan[0].trace is not None  # kept, in a trace of its own
    last = result.graphs[-1]
    assert last.number == 302 and last.trace is not None
    assert len(result.graphs) <= 40 + 1 + 100
    view = result.view(len(result.graphs) - 1)
    assert [s.phase for s in view.steps].count("backward") == 2  # its Mul and Sum


def test_the_app_gets_the_sample_and_plots_every_pass(tmp_path):
    doc = Document()
    doc.script_max_passes = 40
    assert doc.run_script(write(tmp_path, TRAIN))
    result = doc.script_result
    assert result.sampling and 20 < len(result.graphs) <= 141
    assert result.graphs[-1].own_trace and not result.graphs[0].own_trace
    nan = [k for k, g in enumerate(result.graphs) if g.flags & FLAG_NONFINITE]
    assert len(nan) == 1 and doc.show_script_graph(nan[0])
    assert doc.title.endswith(result.graphs[nan[0]].title)
    curves = plots.document_training_curves(doc)
    assert curves.n_steps == 303 and curves.labels == ("w (2,)",)  # every pass
    assert curves.loss[0] == 5.0 and np.flatnonzero(np.isnan(curves.loss)).tolist() == [153]


def test_a_process_run_keeps_what_it_is_told(tmp_path):
    process = ScriptProcess(write(tmp_path, TRAIN), max_passes=10)
    result = process.run()
    assert result.ok, result.error
    assert len(result.passes) == 303 and len(result.graphs) <= 10 + 1 + 100
    assert [g.number for g in result.graphs][:5] == [0, 1, 2, 3, 4]


def test_the_memory_held_stays_bounded_with_the_collector_off():
    gc.disable()  # as in the worker: only reference counting frees what the run drops
    try:
        recording = PassRecording(4096, max_passes=20, max_flagged=0)
        x = Variable(np.array(1.5), name="x")  # bench/long_runs.py's loop
        with recording:
            for i in range(4500):
                if i == 500:
                    before = len(gc.get_objects())
                y = (x * x).sum()
                y.name = "loss"
                x.cleargrad()
                y.backward()
                x.data = x.data - 1e-6 * x.grad.data
            after = len(gc.get_objects())
        # a dropped pass's trace leaves nothing behind (about 25 objects a pass if it did)
        assert after - before < 1000, after - before
        assert len(recording.segments) <= 11 and len(recording.passes) == 4500
    finally:
        gc.enable()


LEAKY = """
import numpy as np
from autodiff import Variable
w = Variable(np.array([1.0, 2.0]), name="w")
for epoch in range(60):
    w.cleargrad()
    h = w * w
    if epoch == 0:
        cycle = {"h": h}
        cycle["me"] = cycle  # a leak in the first pass: a cycle holds h
    loss = h.sum()
    loss.backward()
"""


def test_the_leak_audit_is_flagged_on_the_first_passes_graphs_only(tmp_path):
    path = tmp_path / "leaky.py"
    path.write_text(textwrap.dedent(LEAKY))
    doc = Document()
    doc.script_max_passes = 10
    assert doc.run_script(path)
    result = doc.script_result
    assert result.leak_report is not None and result.leak_report.survivors
    assert result.graphs[-1].own_trace  # on screen: a pass recorded on its own

    def leaks():
        return [o for overlays in doc.scene.overlays.values() for o in overlays if o.kind == "leak"]

    assert leaks() == []  # its node ids are not the audit's
    assert doc.show_script_graph(0)  # the first pass: the audited recording
    assert leaks()


HOLDS = """
import numpy as np
from autodiff import Variable
w = Variable(np.array([1.0, 2.0]), name="w")
history = []
for epoch in range(80):
    w.cleargrad()
    loss = (w * w).sum()
    loss.backward()
    if epoch in (3, 40, 61):
        history.append(loss)  # keeps that iteration's whole graph alive: a leak
    w.data = w.data - 0.01 * w.grad.data
"""


def test_a_pass_whose_graph_the_program_keeps_is_flagged_and_kept(tmp_path):
    run = ScriptRun(write(tmp_path, HOLDS))
    run.max_passes = 10  # the first 5, every 2nd, 4th... after them, the last, the flagged
    result = run.run()
    assert result.ok, result.error
    flags = result.passes.flags
    assert np.flatnonzero(flags & FLAG_HELD).tolist() == [3, 40, 61]
    kept = {g.number: g for g in result.graphs}
    assert {3, 40, 61} <= set(kept)  # 40 and 61 lie off the evenly spaced ones: kept as held
    assert kept[61].title.endswith("graph still held") and kept[61].trace is not None
    assert "graph still held" not in kept[62].title if 62 in kept else True
    assert "flagged (NaN/Inf, graph still held or wrong backward" in result.sampling
    listed = filter_entries(result.graphs, "held")
    assert [result.graphs[k].number for k in listed] == [3, 40, 61]
    clean = ScriptRun(write(tmp_path, TRAIN))
    assert not (clean.run().passes.flags & FLAG_HELD).any()  # no pass held in the usual loop


def test_a_held_pass_known_late_is_kept_in_place_of_being_dropped():
    r = PassReservoir(max_passes=4, max_flagged=2)
    for i in range(7):
        r.offer(i)
    assert 6 in r.kept and 5 not in r.kept  # 6 is kept only as the last, for now
    r.offer(7, previous_flagged=True)
    assert 6 in r.kept and r.flagged_seen == 1


def test_the_note_counts_as_dropped_only_flagged_passes_it_did_not_keep():
    """QA: 91 flagged passes shown and one more in the first ones (all kept) read as 'the
    first 91 of 92', as if one had been dropped."""
    r = PassReservoir(max_passes=10, max_flagged=50)
    for i in range(40):
        r.offer(i, flagged=i % 2 == 1)  # flagged ones among the first 5 too
    note = r.note()
    assert "flagged (NaN/Inf, graph still held or wrong backward)" in note
    assert "the first" not in note.split("flagged", 1)[1]  # every flagged pass is kept
    assert all(i in r.kept for i in range(1, 40, 2))


def test_the_pass_log_holds_each_passs_loss_norms_and_flags_whatever_their_types():
    # a float64 scalar loss, a float32 one and a vector root (its sum); scalar and vector
    # gradients; a leaf first reached in a later pass gets a column of its own, NaN before
    a = Variable(np.array(3.0), name="a")
    w = Variable(np.array([1.0, -2.0]), name="w")
    b = Variable(np.array(2.0, dtype=np.float32), name="b")
    m = Variable(np.array([[0.0, 3.0], [4.0, 0.0]]), name="m")
    recording = PassRecording(4096, max_passes=20, max_flagged=2)
    with recording:
        loss = a * a  # d/da = 2a = 6
        loss.name = "L"
        loss.backward()
        del loss  # not held: no pass of this line is flagged as such
        a.cleargrad()
        (w * w).backward()  # a vector root: its loss is the sum, 5; gradient 2w
        (b * b).backward()  # float32: loss 4, gradient 4
        (m * m.T).backward()  # m reached twice (summed): its gradient 2 m.T, norm 2 * 5
        a.data = np.array(np.nan)
        a.cleargrad()
        (a * a).backward()  # NaN in the loss and in a scalar gradient
    log = recording.passes
    assert log.parameter_labels == ["a", "w (2,)", "b", "m (2, 2)"]
    assert log.loss.tolist()[:4] == [9.0, 5.0, 4.0, 24.0] and math.isnan(log.loss[4])
    assert log.loss_label == "L" and recording.names == {0: "L"}
    norms = log.grad_norms
    assert norms[0, 0] == 6.0 and np.isnan(norms[0, 1:]).all()
    assert norms[1, 1] == pytest.approx(math.sqrt(20.0)) and np.isnan(norms[1, [0, 2, 3, 4]]).all()
    assert norms[2, 2] == 4.0 and np.isnan(norms[2, [0, 1, 3, 4]]).all()
    assert norms[3, 3] == pytest.approx(10.0) and np.isnan(norms[3, [0, 1, 2, 4]]).all()
    assert log.flags.tolist() == [0, 0, 0, 0, FLAG_NONFINITE]


def test_a_nan_in_a_scalar_gradient_flags_a_pass_whose_loss_is_finite():
    x = Variable(np.array(1.0), name="x")
    recording = PassRecording(4096, max_passes=20, max_flagged=2)
    with recording:
        (x * x).backward()
        x.cleargrad()
        (x * x).backward(np.array(np.inf))  # the loss is 1, its seed (and x's gradient) Inf
    assert recording.passes.flags.tolist() == [0, FLAG_NONFINITE]
    assert recording.passes.loss.tolist() == [1.0, 1.0]
