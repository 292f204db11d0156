"""Record real PyTorch programs into a :class:`~autodiff.trace.Trace` the viewer reads.

``with pytorch.record() as t: ...`` records the torch code run inside the block, on the
thread that entered it: every autograd node torch made (``t.node(fid)['torch_node']``, e.g.
``AddmmBackward0``, with an ``op`` a user knows: ``linear``, ``conv2d``, ``relu``), the values
the program computed, and each backward pass in the order torch's engine ran it, with the
gradients torch passed and produced. Scopes are module paths (``Net/layer1/0/conv1``);
``t.parameters()`` are the ``nn.Parameter`` leaves, named as ``named_parameters()`` names
them. ``record(statistics_only=True)`` records only the backward passes' graphs and their
gradients' statistics, at a fraction of the cost. See docs/trace.md ("PyTorch programs").

Importing this module needs torch (``pip install "autodiff-viewer[torch]"``); nothing else in
``autodiff`` or ``viewer`` imports it.
"""

from __future__ import annotations

try:
    import torch  # noqa: F401
except ImportError as e:  # one message, naming what to install
    raise ImportError(
        "autodiff.trace.pytorch records PyTorch programs and needs torch: "
        'pip install "autodiff-viewer[torch]"'
    ) from e

import contextlib
from collections.abc import Iterator
from typing import Any

from autodiff.trace._trace import DEFAULT_MAX_ARRAY_SIZE, Trace
from autodiff.trace.pytorch._gradients import GradientRecording
from autodiff.trace.pytorch._internals import RUNS_WITH_MODE_OFF
from autodiff.trace.pytorch._names import module_level_name
from autodiff.trace.pytorch._ops import op_name
from autodiff.trace.pytorch._recording import TorchRecording

__all__ = ["RUNS_WITH_MODE_OFF", "TorchTrace", "module_level_name", "op_name", "record"]


class TorchTrace(Trace):
    """A :class:`~autodiff.trace.Trace` of a torch program. Its function nodes also name the
    autograd node torch made (``node(fid)['torch_node']``, None for a cut such as
    ``detach``); ``notes`` says what the recording could not show as it ran (torch.compile);
    ``values_kept`` is False for a statistics-only recording (its variables have no forward
    value, and every gradient is a summary)."""

    notes: list[str]
    values_kept: bool

    def _attrs(self, nid: int) -> dict[str, Any]:
        attrs = super()._attrs(nid)
        if attrs["kind"] == "function":
            attrs["torch_node"] = dict(self.tables._params.get(nid, ())).get("torch_node")
        return attrs


@contextlib.contextmanager
def record(
    max_array_size: int = DEFAULT_MAX_ARRAY_SIZE, statistics_only: bool = False
) -> Iterator[TorchTrace]:
    """Record the torch code run inside the block, on this thread (ops on other threads are
    not seen). Arrays of up to ``max_array_size`` elements are copied when the op runs, larger
    ones summarised. Once the block ends the recording holds no tensor and no autograd
    node (while it runs: the last op's tensors until the next op, and a few recent ones whose
    statistics it shares).

    ``statistics_only``: record only what backward passes run, from torch's autograd graph
    when ``backward()``, ``torch.autograd.backward`` or ``torch.autograd.grad`` is called:
    the nodes and their order, every gradient as its statistics (min, max, mean, norm,
    NaN/Inf counts), ``.grad`` after each pass, module scopes and parameters' names. No
    forward value is recorded (``values_kept`` is False: the variables have none), nor the
    program's inputs and constants, nor cuts (``detach``, ``no_grad``), and
    ``max_array_size`` does not apply. A backward reached through a reference to
    ``torch.autograd.grad`` taken before the block (``from torch.autograd import grad``) is
    not recorded."""
    if max_array_size < 0:
        raise ValueError(f"max_array_size must be >= 0, got {max_array_size}")
    recording = GradientRecording() if statistics_only else TorchRecording(int(max_array_size))
    trace = TorchTrace(tables=recording.tables)
    trace.notes = recording.notes
    trace.values_kept = not statistics_only
    if statistics_only:
        trace.notes.append(
            "statistics only: no forward values recorded; gradients are their statistics"
        )
    recording.start()
    try:
        yield trace
    finally:
        recording.stop()
