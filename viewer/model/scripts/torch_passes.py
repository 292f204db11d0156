"""A script's PyTorch passes: recorded with :mod:`autodiff.trace.pytorch`, sampled and logged
as the engine's are (:mod:`viewer.model.scripts.pass_recording`).

torch is never imported here. :meth:`TorchPasses.start` (on the script's thread, before the
script runs) starts recording at once if torch is already imported, else puts a finder first
on ``sys.meta_path`` that, once the script's own ``import torch`` has run torch's module,
starts the recorder on that thread (torch's dispatch mode, which sees the ops, is the
thread's own). A script that never imports torch never has it imported.

Passes: ``torch.autograd.backward`` (which ``Tensor.backward`` calls) and
``torch.autograd.grad`` are wrapped while the run lasts, so each top-level call on the
script's thread is one pass, numbered with the engine's passes in the run's shared
:class:`~viewer.model.scripts.pass_sampling.PassReservoir` and logged in its shared
:class:`~viewer.model.scripts.pass_sampling.PassLog`: the loss (the root's sum), the
iteration, the gradient norms of the leaves the pass reached whose ``.grad`` it changed
(named as ``named_parameters()`` names them in the outermost module called, else
``leaf #k``), the NaN/Inf flag, and the held flag (the previous
pass of the same line still has its root alive: ``losses.append(loss)``).

Memory: as the engine's, the first ``reservoir.head`` passes share one recording (so a
``retain_graph`` repeat, or a graph built across passes, stays one trace); from then on, each
pass's recording (the ops since the previous pass ended, then its backward) is a trace of its
own, kept while the reservoir keeps the pass and dropped as soon as it does not. One
recording per kept pass is the bounded equivalent of the engine's segments: a recording holds
copies, never tensors or autograd nodes, so dropping it frees it. The recording is switched
only between passes, outside torch's dispatch (after torch's backward returned), and only while
the dispatch modes are those of when the recording began: the recorder's innermost, or none of
its own when it took its mode off for the pass (as ``record()`` does for ``backward()``: the
pass wrappers here are marked to run so). A script's own mode on top of it keeps the passes
in one recording until it exits.

Leaks: a weak reference to the root of each kept pass (and of the last pass of each line);
:meth:`TorchPasses.audit` lists those still alive once the script's namespace was dropped.
"""

from __future__ import annotations

import gc
import importlib.abc
import math
import sys
import threading
import types
import weakref
from collections.abc import Callable
from typing import Any

from autodiff.leaks import Survivor
from viewer.model.scripts.pass_recording import call_line, place_norm
from viewer.model.scripts.pass_sampling import (
    FLAG_GRADCHECK,
    FLAG_NONFINITE,
    FLAG_UNCHECKED,
    pass_label,
)

__all__ = ["TorchGraph", "TorchPasses"]

# Survivors whose holders are looked for (gc.get_referrers scans the heap once per object).
_MAX_HOLDERS = 5


class TorchGraph:
    """One kept torch pass: its trace, its backward pass there and its pass number."""

    __slots__ = ("backward_pass", "number", "trace")

    def __init__(self, trace: Any, backward_pass: int, number: int) -> None:
        self.trace = trace
        self.backward_pass = backward_pass
        self.number = number


class _TorchImportWatch(importlib.abc.MetaPathFinder):
    """Finds nothing itself: once the finders after it found torch's module, its loader's
    ``exec_module`` is wrapped (on that loader only) so ``imported`` runs after it."""

    def __init__(self, thread: int, imported: Any) -> None:
        self._thread = thread
        self._imported = imported
        self._busy = False

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != "torch" or self._busy or threading.get_ident() != self._thread:
            return None
        self._busy = True
        try:
            spec = None
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
        finally:
            self._busy = False
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module
        imported = self._imported

        def exec_module(module: types.ModuleType) -> None:
            run(module)
            try:
                imported()
            except Exception as e:  # the script runs on, unrecorded, rather than fail here
                print(f"autodiff-viewer: torch is not recorded: {e}", file=sys.stderr)

        loader.exec_module = exec_module
        return spec


class TorchPasses:
    """The torch side of one run: ``start()`` before the script, ``stop()`` after it (both on
    the script's thread), then ``graphs()`` (the kept passes), ``audit()`` and ``notes``."""

    def __init__(
        self,
        max_array_size: int,
        recording: Any,
        script: str | None = None,
        on_import: Callable[[], None] | None = None,
    ) -> None:
        self.max_array_size = max_array_size
        self._on_import = on_import  # called once torch is imported, before it is recorded
        self._engine = recording  # the run's PassRecording: its reservoir and log are shared
        self.reservoir = recording.reservoir
        self.log = recording.passes
        self.script = script
        self.imported = False  # whether torch was (the recorder started)
        self.kept: dict[int, TorchGraph] = {}  # pass index -> its graph
        # (trace, output node) of the last outputs, when no backward ran at all
        self.outputs: list[tuple[Any, int]] = []
        self.notes: list[str] = []
        self._thread = 0
        self._finder: _TorchImportWatch | None = None
        self._record: Any = None  # the recorder's context manager
        self._trace: Any = None  # its trace
        self._stack = -1  # the dispatch mode stack's depth with the recorder's mode on top
        self._mode: Any = None  # the recorder's dispatch mode
        self._depth = 0
        self._patched: list[tuple[Any, str, Any]] = []
        self._hook: Any = None
        self._modules: set[int] = set()
        self._labels: Any = None  # leaf tensor -> its label (weakly: a WeakTensorKeyDictionary)
        self._leaf_count = 0
        self._columns: dict[str, int | None] = {}
        self._roots: dict[int, Any] = {}  # pass index -> weakref of its root (for the audit)
        self._mp_main: Any = None
        # the first inputs of the program's own autograd.Functions, for the gradient check
        # (viewer.model.checks.torch_check.FunctionInputs; only when the run keeps samples)
        self._inputs: Any = None

    # ------------------------------------------------------------------ start and stop
    def start(self) -> None:
        self._thread = threading.get_ident()
        self._mp_main = sys.modules.get("__mp_main__")
        if "torch" in sys.modules:
            self._torch_imported()
        else:
            self._finder = _TorchImportWatch(self._thread, self._torch_imported)
            sys.meta_path.insert(0, self._finder)

    def _torch_imported(self) -> None:
        if self.imported or threading.get_ident() != self._thread:
            return
        self.imported = True
        if self._on_import is not None:
            self._on_import()
        import torch
        from torch.utils import _python_dispatch
        from torch.utils.weak import WeakTensorKeyDictionary

        from autodiff.trace import pytorch

        self._pytorch = pytorch
        self._torch = torch
        self._dispatch = _python_dispatch
        self._runs_with_mode_off = pytorch.RUNS_WITH_MODE_OFF
        self._labels = WeakTensorKeyDictionary()
        autograd = torch.autograd
        for name in ("backward", "grad"):
            original = getattr(autograd, name)
            setattr(autograd, name, self._wrap(original, name))
            self._patched.append((autograd, name, original))
        self._hook = torch.nn.modules.module.register_module_forward_pre_hook(self._module_called)
        if self._engine.checker is not None:
            from viewer.model.checks.torch_check import FunctionInputs

            self._inputs = FunctionInputs(self._engine.checker, self.max_array_size)
            self._inputs.start()
        # The first op under a dispatch mode imports torch._dynamo: imported now, so that the
        # reference cycles of finished frames it leaves (a frame that keeps itself as a
        # local), whose callers are the script's frames, are collected below with torch's
        # own. With the collector paused for the run they would keep the script's module
        # alive, and its objects would be taken for leaks.
        import torch._dynamo

        gc.collect()
        self._begin_recording()

    def _begin_recording(self) -> None:
        with self._engine.bookkeeping:  # a Cancel must not leave a recording begun, unknown
            record = self._pytorch.record(self.max_array_size)
            self._trace = record.__enter__()
            self._record = record
            self._stack = self._torch._C._len_torch_dispatch_stack()
            self._mode = self._dispatch._get_current_dispatch_mode()

    def _end_recording(self) -> Any:
        with self._engine.bookkeeping:  # nor one half ended
            record, trace = self._record, self._trace
            self._record = self._trace = None
            if record is not None:
                record.__exit__(None, None, None)
                for note in trace.notes:
                    if note not in self.notes:
                        self.notes.append(note)
            return trace

    def stop(self) -> None:
        # multiprocessing (which torch imports) keeps ``__main__`` as ``__mp_main__`` when it
        # is first imported: the script's module, its globals with it, after the run
        mp_main = sys.modules.get("__mp_main__")
        if mp_main is not self._mp_main and getattr(mp_main, "__file__", None) == self.script:
            if self._mp_main is None:
                del sys.modules["__mp_main__"]
            else:
                sys.modules["__mp_main__"] = self._mp_main
        if self._finder is not None:
            if self._finder in sys.meta_path:
                sys.meta_path.remove(self._finder)
            self._finder = None
        if not self.imported:
            return
        for owner, name, original in reversed(self._patched):
            setattr(owner, name, original)
        self._patched.clear()
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        if self._inputs is not None:
            self._inputs.stop()
        trace = self._end_recording()
        if not len(self.log) and trace is not None:  # no backward at all: its last outputs
            self.outputs = [(trace, int(nid)) for nid in trace.outputs(last=3)]

    # ------------------------------------------------------------------ passes
    def _wrap(self, original: Any, name: str) -> Any:
        passes = self

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if passes._depth or threading.get_ident() != passes._thread or not passes._active:
                return original(*args, **kwargs)
            root = args[0] if args else kwargs.get("tensors" if name == "backward" else "outputs")
            begun = passes._begin_pass(root)
            passes._depth += 1
            try:
                result = original(*args, **kwargs)
            finally:
                passes._depth -= 1
            # a backward that raised (or was cancelled) is no pass, as the engine's is not
            passes._end_pass(begun)
            return result

        wrapper.__wrapped__ = original  # type: ignore[attr-defined]
        # it runs as well with the recorder's mode off (see _modes_as_begun): the recorder
        # then takes its mode off for the pass, as it does for a plain backward()
        setattr(wrapper, self._runs_with_mode_off, True)
        wrapper.__doc__ = original.__doc__
        wrapper.__name__ = original.__name__
        return wrapper

    @property
    def _active(self) -> bool:
        return self._record is not None

    def _begin_pass(self, root: Any) -> tuple:
        torch = self._torch
        if isinstance(root, list | tuple):
            root = root[0] if root else None
        trace = self._trace
        before = len(trace.backward_roots)
        index = self.reservoir.seen
        loss = math.nan
        key: tuple = (call_line(self.script), None)
        with torch._C._DisableTorchDispatch():  # the run's own arithmetic is no op of the script
            if isinstance(root, torch.Tensor):
                key = (key[0], tuple(root.shape))
                try:
                    loss = float(root.detach().sum(dtype=torch.float64).item())
                except (RuntimeError, TypeError, ValueError):
                    loss = math.nan
                ref = weakref.ref(root)
                leaves = self._leaves_of(root)
            else:
                ref = None
                leaves = []
            grads = []  # (leaf, its label, its .grad before the pass)
            for leaf in leaves:
                g = leaf.grad
                grads.append((leaf, self._label(leaf), None if g is None else (id(g), g._version)))
        return trace, before, index, loss, key, ref, grads

    def _end_pass(self, begun: tuple) -> None:
        index = begun[2]
        checked = self._check_functions(index)  # (its time is bounded: Cancel need not wait)
        with self._engine.bookkeeping:  # a Cancel now waits for the log entry and the graph
            self._log_pass(begun, checked)

    def _log_pass(self, begun: tuple, checked: int) -> None:
        trace, before, index, loss, key, ref, grads = begun
        engine = self._engine  # one count and one log for both engines' passes
        iteration, held = engine.count_pass(key, ref)
        if ref is not None:
            self._roots[index] = ref
        torch = self._torch
        flags = 0 if math.isfinite(loss) else FLAG_NONFINITE
        norms: list[float] = []
        with torch._C._DisableTorchDispatch():
            for leaf, label, was in grads:
                g = leaf.grad
                if g is None or was == (id(g), g._version):
                    continue  # this pass gave it no gradient (torch.autograd.grad, a cut)
                try:
                    norm = float(g.detach().double().norm().item())
                except (RuntimeError, TypeError, ValueError):
                    norm = math.nan
                if not math.isfinite(norm):
                    flags |= FLAG_NONFINITE
                column = self._columns.get(label, -1)
                if column == -1:
                    column = self._columns[label] = self.log.parameter(
                        label, not isinstance(leaf, torch.nn.Parameter)
                    )
                place_norm(norms, column, norm)
        flags |= checked
        dropped = engine.log_pass(loss, iteration, flags, norms, held)
        if self._inputs is not None:  # the passes the sample will show are always checked
            engine.checker.priority = self.reservoir.likely_kept(index + 1)
        if trace is not None and len(trace.backward_roots) > before:
            self.kept[index] = TorchGraph(trace, before, index)
        for gone in dropped:  # freed at once, the engine's too (one reservoir for both)
            self._forget(gone)
        if index + 1 < self.reservoir.head:
            return
        self._prune()
        if self._modes_as_begun():
            self._end_recording()  # from here on each pass gets a recording of its own
            self._begin_recording()

    def _modes_as_begun(self) -> bool:
        """Whether the dispatch modes are those of when the recording began: its mode the
        innermost, or the same less its mode, which it took off for the pass running now."""
        depth = self._torch._C._len_torch_dispatch_stack()
        dispatch = self._dispatch
        if depth == self._stack:
            return dispatch._get_current_dispatch_mode() is self._mode
        return depth == self._stack - 1 and all(
            mode is not self._mode for mode in dispatch._get_current_dispatch_mode_stack()
        )

    def _check_functions(self, index: int) -> int:
        """At pass ``index``'s end: gradcheck the program's own Functions first called since
        (within the run's check budget); the pass's flags for what was found."""
        if self._inputs is None:
            return 0
        checker = self._engine.checker
        self._depth += 1  # gradcheck's own torch.autograd.grad calls are no passes
        try:
            with self._torch._C._DisableTorchDispatch():  # nor its ops the program's
                checker.run_queued()
        finally:
            self._depth -= 1
        wrong = checker.end_pass()
        if wrong:
            self._engine.wrong[index] = wrong
            return FLAG_GRADCHECK
        return FLAG_UNCHECKED if checker.last_pass_missed else 0

    def _prune(self) -> None:
        """Forget the passes the reservoir no longer keeps (the engine's passes drop ours)."""
        keep = set(self.reservoir.kept)
        for gone in [p for p in self.kept if p not in keep]:
            self._forget(gone)

    def _forget(self, index: int) -> None:
        self.kept.pop(index, None)
        self._roots.pop(index, None)

    def _module_called(self, module: Any, args: Any) -> None:
        """Name the parameters of the outermost module called (as named_parameters does)."""
        if id(module) in self._modules or threading.get_ident() != self._thread:
            return
        for m in module.modules():
            self._modules.add(id(m))
        for name, p in module.named_parameters():
            if p not in self._labels:
                self._labels[p] = f"{name} {tuple(p.shape)}"

    @staticmethod
    def _leaves_of(root: Any) -> list[Any]:
        """The leaves the backward from ``root`` accumulates into (its AccumulateGrad nodes'
        tensors), walking torch's graph: a training step's few hundred nodes at most."""
        leaves = []
        seen: set[int] = set()
        todo = [root.grad_fn]
        while todo:
            node = todo.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            leaf = getattr(node, "variable", None)  # AccumulateGrad's
            if leaf is not None:
                leaves.append(leaf)
            else:
                todo.extend(p for p, _ in node.next_functions)
        return leaves

    def _label(self, leaf: Any) -> str:
        """A leaf's label in the plot: its parameter name, else the program's one module-level
        name for it (as the graph names it), else ``leaf #k (shape)``."""
        label = self._labels.get(leaf)
        if label is None:
            name = self._pytorch.module_level_name(leaf)
            if name is None:
                self._leaf_count += 1
                name = f"leaf #{self._leaf_count}"
            label = self._labels[leaf] = f"{name} {tuple(leaf.shape)}"
        return label

    # ------------------------------------------------------------------ results
    def graphs(self) -> list[tuple[int, str, Any, int, int]]:
        """``(pass index, title, trace, root, backward pass)`` of each kept pass, in order;
        then the last forward outputs when torch never ran a backward (index -1)."""
        log = self.log
        iterations, losses, flags = log.iteration, log.loss, log.flags  # (copies: once)
        rows = []
        self._prune()
        for index in sorted(self.kept):
            g = self.kept[index]
            roots = g.trace.backward_roots
            if not 0 <= g.backward_pass < len(roots) or index >= len(log):
                continue
            title = pass_label(
                index + 1,
                int(iterations[index]),
                float(losses[index]),
                int(flags[index]),
                wrong=self._engine.wrong.get(index, ()),
            )
            rows.append((index, title, g.trace, int(roots[g.backward_pass]), g.backward_pass))
        for trace, nid in self.outputs:
            rows.append((-1, f"torch output #{nid}", trace, nid, -1))
        return rows

    def traces(self) -> list[Any]:
        """The recordings :meth:`graphs` shows graphs of, each once (several passes may
        share one): what a result sends."""
        self._prune()
        found = {id(g.trace): g.trace for g in self.kept.values()}
        for trace, _ in self.outputs:
            found.setdefault(id(trace), trace)
        return list(found.values())

    def audit(self) -> list[Survivor]:
        """The roots (losses) of recorded passes still alive, with what holds each: call
        once the script's namespace was dropped (and after the engine's audit: when a root
        is alive, cyclic garbage is collected first, so that what is reported is what the
        program still references, not a frame an exception's traceback kept)."""
        if not any(ref() is not None for ref in self._roots.values()):
            return []
        gc.collect()
        found = []
        for index, ref in sorted(self._roots.items()):
            t = ref()
            if t is None:
                continue
            held_by = _holder(t) if len(found) < _MAX_HOLDERS else ""
            t = None
            found.append(
                Survivor(-1, "variable", f"torch loss of pass #{index + 1}", "referenced", held_by)
            )
        return found


def _holder(obj: Any) -> str:
    """What holds ``obj``: its container and, a step further, the name that container has
    (a module's or a class's attribute), in the audit's words."""
    for container in gc.get_referrers(obj):
        if not isinstance(container, list | tuple | dict | set):
            continue
        kind = type(container).__name__
        if isinstance(container, dict):
            name = next((k for k, v in container.items() if v is obj), None)
            if isinstance(name, str):
                return f"'{name}' -> torch tensor"
        for owner in gc.get_referrers(container):
            if isinstance(owner, dict):
                name = next((k for k, v in owner.items() if v is container), None)
                if isinstance(name, str):
                    owner_name = owner.get("__name__")
                    where = f"global '{name}' of {owner_name}" if owner_name else f"'{name}'"
                    return f"{where} ({kind}) -> torch tensor"
        return f"a {kind} -> torch tensor"
    return ""
