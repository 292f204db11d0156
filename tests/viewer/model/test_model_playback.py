"""The playback cursor: bounds, phase jumps, non-finite jumps, ticking, signals."""

import pytest

from viewer.model.document.playback import MAX_SPEED, MIN_SPEED, PlaybackState
from viewer.model.expression.program import evaluate


@pytest.fixture
def steps():
    return evaluate("x = 0.5\ny = square(exp(square(x)))").trace.steps


def recorder(signal):
    seen = []
    signal.connect(seen.append)
    return seen


def test_starts_before_any_step(steps):
    state = PlaybackState(steps)
    assert state.index == -1 and state.at_start and state.current_step is None
    assert state.phase is None
    assert state.n_steps == 6


def test_bounds(steps):
    state = PlaybackState(steps)
    moved = recorder(state.step_changed)
    assert not state.step_back()
    assert state.seek(100) == 5 and state.at_end
    assert not state.step_forward()
    assert state.seek(-7) == -1
    assert moved == [5, -1]
    state.step_forward()
    assert state.index == 0 and state.phase == "forward"


def test_phase_jumps(steps):
    state = PlaybackState(steps)
    assert state.to_phase("backward") == 2  # all forward values, no gradient yet
    assert state.steps[state.index + 1].phase == "backward"
    assert state.to_phase("forward") == -1
    assert state.to_end() == 5
    assert state.to_start() == -1
    with pytest.raises(ValueError):
        state.to_phase("sideways")
    labels = [span.label for span in state.spans]
    assert labels == ["forward", "backward"]


def test_phase_jump_without_that_phase_stays():
    steps = [s for s in evaluate("y = exp(x)").trace.steps if s.phase == "forward"]
    state = PlaybackState(steps)
    assert state.to_phase("backward") == -1


class _Step:
    def __init__(self, phase, backward_pass=-1, during_backward=-1):
        self.phase, self.backward_pass, self.during_backward = phase, backward_pass, during_backward


def test_next_phase_shows_the_first_backward_step_from_anywhere_in_forward(steps):
    state = PlaybackState(steps)
    for start in (-1, 0, 1, 2):
        state.seek(start)
        assert state.next_phase() == 3
        assert state.to_next_phase() == 3
        assert state.current_step.phase == "backward" and state.current_step.op == "Square"
    assert state.span_at(3).label == "backward"
    for start in (3, 4, 5):  # the last phase: B stays put
        state.seek(start)
        assert state.next_phase() is None
        assert state.to_next_phase() == start


def test_next_phase_walks_every_pass_of_a_script():
    phases = [("forward", -1)] * 2 + [("backward", 0)] * 2 + [("forward", -1)] * 2
    phases += [("backward", 1)] * 2
    state = PlaybackState([_Step(p, b) for p, b in phases])
    seen = []
    while (target := state.next_phase()) is not None:
        seen.append(state.to_next_phase())
        assert target == state.index
    assert seen == [2, 4, 6]
    assert [state.span_at(i).label for i in seen] == ["backward", "forward", "backward 2"]
    assert state.span_at(-1) is None


def test_next_phase_treats_create_graph_forward_steps_as_part_of_their_pass():
    steps = evaluate("x = 2.0\ny = x ** 4 - 2 * x ** 2\ngx = grad(y, x)\n").trace.steps
    state = PlaybackState(steps)
    first = next(s.index for s in steps if s.phase == "backward")
    second = next(s.index for s in steps if s.phase == "backward" and s.backward_pass == 1)
    assert state.to_next_phase() == first
    # the forward steps grad() records while pass 0 runs do not stop the jump
    assert steps[first + 1].phase == "forward" and steps[first + 1].during_backward == 0
    assert state.to_next_phase() == second
    assert state.to_next_phase() == second  # the last pass


def test_tick_advances_only_while_playing_and_stops_at_end(steps):
    state = PlaybackState(steps)
    playing = recorder(state.playing_changed)
    assert not state.tick()
    state.play()
    ticks = 0
    while state.tick():
        ticks += 1
    assert ticks == 6 and state.at_end and not state.playing
    assert playing == [True, False]
    state.play()  # at the end: restarts from the beginning
    assert state.index == -1 and state.playing
    state.toggle_playing()
    assert not state.playing


def test_speed_is_clamped_and_signalled(steps):
    state = PlaybackState(steps, speed=2)
    speeds = recorder(state.speed_changed)
    assert state.interval_ms == 500
    state.speed = 1000
    assert state.speed == MAX_SPEED
    state.set_speed(0)
    assert state.speed == MIN_SPEED
    assert speeds == [MAX_SPEED, MIN_SPEED]


def test_next_nonfinite():
    steps = evaluate("x = 1.5\nd = x - x\ny = log(d) * x").trace.steps
    state = PlaybackState(steps)
    bad = state.nonfinite_steps
    assert bad and steps[bad[0]].op == "Log"
    assert state.next_nonfinite() == bad[0]
    assert state.first_nonfinite() == bad[0]
    clean = PlaybackState(evaluate("y = exp(x)").trace.steps)
    assert clean.next_nonfinite() is None and clean.index == -1


def test_selection_and_new_steps(steps):
    state = PlaybackState(steps)
    selected = recorder(state.selection_changed)
    state.select(3)
    state.select(3)
    state.seek(4)
    state.play()
    state.set_steps(steps[:2])
    assert selected == [3, None]
    assert state.index == -1 and not state.playing and state.n_steps == 2
