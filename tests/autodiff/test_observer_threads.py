"""An observer sees the engine's work of the thread that attached it, never another's: a
recording on one thread must not take in what another thread computes meanwhile (the app runs
programs, checks and layouts on several threads of one process)."""

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
