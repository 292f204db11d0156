"""The engine's threads do not reach into each other (the app runs programs, checks and
layouts on several threads of one process): an observer sees the work of the thread that
attached it, never another's, so a recording on one thread takes in nothing another thread
computes meanwhile; and ``Config``'s switches (``no_grad``, ``train``) are each thread's own,
as torch's grad mode is."""

from __future__ import annotations

import threading

import numpy as np

import autodiff.functions as F
from autodiff import Function, Variable, core, trace
from autodiff.layers import Linear
from autodiff.micrograd import Value


class _Split(Function):  # an operation with two outputs
    def forward(self, x):
        return x[0], x[1]

    def backward(self, g0, g1):
        return Variable(np.stack([g0.data, g1.data]))


def _foreign_work() -> None:
    """Engine work of every kind an observer hears of: one- and several-output operations,
    a no_grad one, a Layer's scope, a rename, a backward pass, micrograd's ops."""
    x = Variable(np.array([[0.5, -1.0, 2.0]]), name="fx")
    layer = Linear(4)
    y = F.sum(F.sin(layer(x)) * 2.0)
    y.name = "fy"
    with core.no_grad():
        F.exp(x)
    a, b = _Split()(Variable(np.array([1.0, 2.0])))
    (a * b).backward()
    y.backward()
    v = Value(1.5)
    (v * v + v).backward()


class _Lockstep:
    """A second thread that runs :func:`_foreign_work` each time it is asked, and waits."""

    def __init__(self) -> None:
        self.go = threading.Semaphore(0)
        self.done = threading.Semaphore(0)
        self.errors: list[BaseException] = []
        self.stop = False
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while True:
            self.go.acquire()
            if self.stop:
                return
            try:
                _foreign_work()
            except BaseException as e:  # reported on the test's thread
                self.errors.append(e)
            self.done.release()

    def run_once(self) -> None:
        self.go.release()
        assert self.done.acquire(timeout=30)
        assert not self.errors, self.errors

    def close(self) -> None:
        self.stop = True
        self.go.release()
        self.thread.join(10)


def _own_work() -> Variable:
    x = Variable(np.array(2.0), name="x")
    y = F.sin(x) * x
    y.name = "y"
    y.backward()
    return x


def _counts(t: trace.Trace) -> tuple[int, int, int]:
    return len(t.variables), len(t.functions), len(t.steps)


def test_a_recording_takes_in_no_operation_of_another_thread():
    with trace.record() as alone:
        _own_work()
    other = _Lockstep()
    try:
        with trace.record() as t:
            other.run_once()  # while recording, before and after its own work
            x = _own_work()
            other.run_once()
    finally:
        other.close()
    assert _counts(t) == _counts(alone) == (3, 2, len(alone.steps))
    assert {t.node(n).get("name") for n in t.variables} >= {"x", "y"}
    assert not {"fx", "fy"} & {t.node(n).get("name") for n in t.variables}
    assert float(x.grad.data) == np.sin(2.0) + 2.0 * np.cos(2.0)


def test_each_thread_hears_its_own_operations_when_both_observe():
    class Count:
        def __init__(self) -> None:
            self.forwards = self.steps = self.scopes = self.renames = 0
            self.passes = 0

        def on_forward(self, f, inputs, outputs, recorded):
            self.forwards += 1

        def on_backward_begin(self, output, retain_grad, create_graph):
            self.passes += 1

        def on_backward_event(self, f, gys, gxs, accumulated, cleared):
            self.steps += 1

        def on_rename(self, v):
            self.renames += 1

        def on_scope_begin(self, part):
            self.scopes += 1

        def on_scope_end(self):
            pass

    def counted(work) -> Count:
        c = Count()
        core.add_observer(c)
        try:
            work()
        finally:
            core.remove_observer(c)
        return c

    reference_own, reference_foreign = counted(_own_work), counted(_foreign_work)
    attached = threading.Event()
    finish = threading.Event()
    theirs = Count()

    def other() -> None:
        core.add_observer(theirs)
        try:
            attached.set()
            assert finish.wait(30)
            _foreign_work()
        finally:
            core.remove_observer(theirs)

    thread = threading.Thread(target=other, daemon=True)
    thread.start()
    assert attached.wait(30)
    mine = Count()
    core.add_observer(mine)
    try:
        _own_work()  # both threads observe now: the handlers are each thread's own
        finish.set()
        thread.join(30)
    finally:
        core.remove_observer(mine)
    assert core._observers == ()
    assert vars(mine) == vars(reference_own)
    assert vars(theirs) == vars(reference_foreign)
    assert reference_foreign.forwards > reference_own.forwards > 0
    assert reference_foreign.scopes > 0 and reference_foreign.renames > 0


def test_another_threads_outputs_get_no_recorders_reference_callback():
    made = []

    def other() -> None:
        made.append(F.sin(Variable(np.array(1.0))))

    with trace.record() as t:
        thread = threading.Thread(target=other)
        thread.start()
        thread.join(30)
        own = F.sin(Variable(np.array(1.0)))
    assert made[0].creator.outputs[0].__callback__ is None
    assert own.creator.outputs[0].__callback__ is not None  # the tape's: this thread records
    assert len(t.functions) == 1


# ----------------------------------------------------------------------------------------
# Config's switches are each thread's own, as torch's grad mode
# ----------------------------------------------------------------------------------------
def _in_thread(work):
    """Run ``work`` on a new thread; its result (or its exception, raised here)."""
    out: list = []

    def run() -> None:
        try:
            out.append(("ok", work()))
        except BaseException as e:  # raised on the test's thread
            out.append(("error", e))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)
    kind, value = out[0]
    if kind == "error":
        raise value
    return value


def test_no_grad_on_one_thread_leaves_another_threads_graph_whole():
    entered, leave = threading.Event(), threading.Event()

    def evaluate() -> None:
        with core.no_grad():
            entered.set()
            assert leave.wait(30)

    thread = threading.Thread(target=evaluate)
    thread.start()
    try:
        assert entered.wait(30)
        assert core.Config.enable_backprop  # the other thread's no_grad is its own
        x = Variable(np.array(3.0))
        y = x * x
        assert y.creator is not None
        y.backward()
        assert float(x.grad.data) == 6.0
    finally:
        leave.set()
        thread.join(30)


def test_another_threads_double_backward_does_not_switch_this_threads_no_grad():
    def double_backward() -> float:
        x = Variable(np.array(2.0))
        y = x**3
        y.backward(create_graph=True)  # switches enable_backprop on for its pass
        gx = x.grad
        x.cleargrad()
        gx.backward()
        return float(x.grad.data)

    with core.no_grad():
        assert _in_thread(double_backward) == 12.0
        assert not core.Config.enable_backprop
        z = Variable(np.array(1.0)) * 2.0
        assert z.creator is None  # still no graph here
    assert core.Config.enable_backprop


def test_config_is_read_and_written_per_thread_as_dezero_programs_do():
    core.Config.train = False
    try:
        assert core.Config.train is False
        assert _in_thread(lambda: (core.Config.train, core.Config.enable_backprop)) == (True, True)

        def switched_off() -> bool:
            core.Config.enable_backprop = False  # DeZero's step-by-step code sets it so
            return (Variable(np.array(1.0)) * 2.0).creator is None

        assert _in_thread(switched_off)
        assert core.Config.enable_backprop  # not here
        with core.using_config("train", True):
            assert core.Config.train
        assert core.Config.train is False
    finally:
        core.Config.train = True


def test_threads_attaching_and_detaching_at_once_lose_no_observer():
    """Each thread attaches and detaches its own observers while the others do: none is
    lost (attached but never told) nor left behind."""
    import sys

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    missed: list[int] = []

    class Seen:
        ops = 0

        def on_forward(self, f, inputs, outputs, recorded):
            self.ops += 1

    def churn(n: int) -> None:
        for _ in range(n):
            seen = Seen()
            core.add_observer(seen)
            F.exp(Variable(np.array(1.0)))
            core.remove_observer(seen)
            if seen.ops != 1:
                missed.append(seen.ops)

    try:
        threads = [threading.Thread(target=churn, args=(300,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        sys.setswitchinterval(old)
    assert core._observers == () and core._threads == frozenset()
    assert missed == []
