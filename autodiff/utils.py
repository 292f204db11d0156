"""Helpers named as in DeZero's ``dezero/utils.py``: numerical gradients and gradient checks,
DOT export of a graph and its picture (with or without Graphviz), and (from
:mod:`autodiff._shapes`, where the engine reads them) the shape helpers of backward."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from autodiff._shapes import (
    get_conv_outsize,
    get_deconv_outsize,
    logsumexp,
    max_backward_shape,
    pair,
    reshape_sum_backward,
    sum_to,
)
from autodiff.core import Variable

__all__ = [
    "cache_dir",
    "get_conv_outsize",
    "get_deconv_outsize",
    "get_dot_graph",
    "get_file",
    "gradient_check",
    "logsumexp",
    "max_backward_shape",
    "numerical_diff",
    "numerical_grad",
    "pair",
    "plot_dot_graph",
    "reshape_sum_backward",
    "sum_to",
]


# =============================================================================
# Gradient check
# =============================================================================
def numerical_diff(f: Callable[[Variable], Any], x: Variable, eps: float = 1e-4) -> NDArray:
    """The book's first derivative (step 4): the central difference
    ``(f(x + eps) - f(x - eps)) / (2 eps)``, elementwise, for an elementwise ``f``.

    ``x`` is a Variable (or an array); ``f`` takes and returns a Variable. For a gradient of
    a function with any shape, see :func:`numerical_grad`.
    """
    data = x.data if isinstance(x, Variable) else np.asarray(x)
    y0 = f(Variable(data - eps))
    y1 = f(Variable(data + eps))
    return (_array(y1) - _array(y0)) / (2 * eps)


def _array(y: Any) -> NDArray:
    return np.asarray(y.data if isinstance(y, Variable) else y)


def numerical_grad(f: Callable[..., Any], x: Any, *args: Any, **kwargs: Any) -> NDArray:
    """Central-difference gradient of ``f`` (which returns a Variable) at ``x``, in float64.

    ``f(x, *args, **kwargs)`` is evaluated twice per element of ``x``; the result summed
    over its elements is the function differentiated (as backward with a ones seed does).
    """
    eps = 1e-4
    x_var = x if isinstance(x, Variable) else Variable(np.asarray(x))
    original = x_var.data
    # perturb a float64 copy; the caller's Variable gets its own array back at the end
    data = np.array(original, dtype=np.float64)
    x_var.data = data
    grad = np.zeros_like(data)
    try:
        for idx in np.ndindex(*data.shape):
            tmp = data[idx]
            data[idx] = tmp + eps
            y1 = _total(f(x_var, *args, **kwargs))
            data[idx] = tmp - eps
            y2 = _total(f(x_var, *args, **kwargs))
            grad[idx] = (y1 - y2) / (2 * eps)
            data[idx] = tmp
    finally:
        x_var.data = original
    return grad


def _total(y: Any) -> float:
    return float(np.asarray(y.data if isinstance(y, Variable) else y, dtype=np.float64).sum())


def gradient_check(
    f: Callable[..., Any],
    *inputs: Any,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    verbose: bool = True,
    **kwargs: Any,
) -> bool:
    """Compare backprop with central differences for every input of ``f``, in float64.

    ``f`` takes as many Variables as ``inputs`` (arrays or Variables) plus ``kwargs``.
    Returns True when every input agrees within ``rtol``/``atol``; otherwise prints a
    side-by-side report of the input(s) that disagree (when ``verbose``) and returns False.
    """
    arrays = [np.array(x.data if isinstance(x, Variable) else x, dtype=np.float64) for x in inputs]
    variables = [Variable(a.copy()) for a in arrays]
    y = f(*variables, **kwargs)
    y.backward()
    ok = True
    for i, (a, v) in enumerate(zip(arrays, variables, strict=True)):
        analytic = np.zeros_like(a) if v.grad is None else np.asarray(v.grad.data)

        def f_i(xi: Variable, i: int = i) -> Any:
            args = [xi if j == i else Variable(arrays[j].copy()) for j in range(len(arrays))]
            return f(*args, **kwargs)

        numeric = numerical_grad(f_i, Variable(a.copy()))
        if analytic.shape != numeric.shape:
            ok = False
            if verbose:
                print(
                    f"gradient_check: input {i}: backprop gave shape {analytic.shape}, "
                    f"the input has shape {numeric.shape}"
                )
            continue
        if not np.allclose(analytic, numeric, rtol=rtol, atol=atol):
            ok = False
            if verbose:
                print(_report(i, a, analytic, numeric, rtol, atol))
    return ok


def _report(
    i: int, x: NDArray, analytic: NDArray, numeric: NDArray, rtol: float, atol: float
) -> str:
    err = np.abs(analytic - numeric)
    bad = err > atol + rtol * np.abs(numeric)
    lines = [
        f"gradient_check: input {i} (shape {x.shape}): {int(bad.sum())} of {x.size} "
        f"elements disagree (rtol={rtol}, atol={atol}); max abs error {err.max():.3g}",
        f"  {'index':<14}{'x':>14}{'backprop':>16}{'numerical':>16}{'abs error':>12}",
    ]
    flat_idx = np.flatnonzero(bad.ravel())
    for k in flat_idx[:10]:
        idx = np.unravel_index(k, x.shape) if x.ndim else ()
        lines.append(
            f"  {tuple(int(v) for v in idx)!s:<14}{float(x[idx]):>14.6g}"
            f"{float(analytic[idx]):>16.8g}{float(numeric[idx]):>16.8g}{float(err[idx]):>12.3g}"
        )
    if len(flat_idx) > 10:
        lines.append(f"  ... and {len(flat_idx) - 10} more")
    return "\n".join(lines)


# =============================================================================
# DOT export (DeZero's colours)
# =============================================================================
def _dot_var(v: Any, verbose: bool = False) -> str:
    name = "" if v.name is None else v.name
    if verbose and v.data is not None:
        if v.name is not None:
            name += ": "
        name += str(v.shape) + " " + str(v.dtype)
    name = name.replace("\\", "\\\\").replace('"', '\\"')
    return f'{id(v)} [label="{name}", color=orange, style=filled]\n'


def _dot_func(f: Any) -> str:
    txt = f'{id(f)} [label="{type(f).__name__}", color=lightblue, style=filled, shape=box]\n'
    for x in f.inputs:
        txt += f"{id(x)} -> {id(f)}\n"
    for ref in f.outputs:
        y = ref()
        if y is not None:
            txt += f"{id(f)} -> {id(y)}\n"
    return txt


def get_dot_graph(output: Any, verbose: bool = True) -> str:
    """DOT text of the graph that produced ``output`` (variables orange, functions boxes)."""
    txt = ""
    funcs: list = []
    seen: set = set()

    def add_func(f: Any) -> None:
        if f not in seen:
            funcs.append(f)
            seen.add(f)

    if output.creator is not None:
        add_func(output.creator)
    txt += _dot_var(output, verbose)
    while funcs:
        func = funcs.pop()
        txt += _dot_func(func)
        for x in func.inputs:
            txt += _dot_var(x, verbose)
            if x.creator is not None:
                add_func(x.creator)
    return "digraph g {\n" + txt + "}"


#: the file types plot_dot_graph draws without Graphviz (autodiff-viewer --export's)
DRAWN_SUFFIXES = (".png", ".svg", ".pdf")


def plot_dot_graph(output: Any, verbose: bool = True, to_file: str = "graph.png") -> None:
    """Draw the graph that produced ``output`` into ``to_file``, of the type its suffix names.

    With Graphviz's ``dot`` on PATH this is DeZero's: the DOT text of :func:`get_dot_graph`
    rendered by ``dot``. Without it, the picture is autodiff-viewer's own export of the same
    graph (``.png``, ``.svg`` or ``.pdf``), run as ``python -m viewer --export`` in a child
    process, as DeZero runs ``dot``: the engine never imports Qt. ``verbose`` adds DeZero's
    ``name: (shape) dtype`` to each variable's label. Raises ValueError for another suffix and
    RuntimeError when neither Graphviz nor PySide6 is installed, or the drawing fails.
    """
    dot = shutil.which("dot")
    if dot is not None:
        _plot_with_graphviz(dot, get_dot_graph(output, verbose), to_file)
        return
    suffix = os.path.splitext(to_file)[1].lower()
    if suffix not in DRAWN_SUFFIXES:
        raise ValueError(
            f"plot_dot_graph: cannot draw {to_file!r}: without Graphviz the file name must end "
            f"in {', '.join(DRAWN_SUFFIXES[:-1])} or {DRAWN_SUFFIXES[-1]} (install Graphviz for "
            "its other formats)"
        )
    missing = [name for name in ("PySide6", "viewer") if importlib.util.find_spec(name) is None]
    if missing:
        raise RuntimeError(
            f"plot_dot_graph: Graphviz's 'dot' is not on PATH and {missing[0]} is not installed, "
            "so the graph cannot be drawn: pip install 'autodiff-viewer' with its dependencies "
            "(PySide6-Essentials), or install Graphviz (e.g. 'apt-get install graphviz'); "
            "get_dot_graph() gives the DOT text without either"
        )
    _plot_with_viewer(output, verbose, to_file)


def _plot_with_graphviz(dot: str, dot_graph: str, to_file: str) -> None:
    extension = os.path.splitext(to_file)[1][1:] or "png"
    with tempfile.NamedTemporaryFile("w", suffix=".dot", delete=False) as fh:
        fh.write(dot_graph)
        graph_path = fh.name
    try:
        subprocess.run([dot, graph_path, "-T", extension, "-o", to_file], check=True)
    finally:
        os.unlink(graph_path)


def _plot_with_viewer(output: Any, verbose: bool, to_file: str) -> None:
    # the recorder is only needed here, and imports networkx
    from autodiff.trace import from_output

    trace = from_output(output)
    if verbose:  # DeZero's label, as _dot_var writes it
        for node in trace.variables:
            attrs = trace.node(node)
            if attrs["shape"] is not None:
                label = f"{attrs['name']}: " if attrs["name"] else ""
                trace.tables.set_name(node, f"{label}{attrs['shape']} {attrs['dtype']}")
    spec = importlib.util.find_spec("viewer")
    assert spec is not None and spec.submodule_search_locations is not None
    # the child imports the viewer the caller would, wherever sys.path found it
    root = os.path.dirname(os.fspath(next(iter(spec.submodule_search_locations))))
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    with tempfile.TemporaryDirectory(prefix="autodiff-plot-") as folder:
        # the export's caption names its input: call it after the picture
        stem = os.path.splitext(os.path.basename(to_file))[0] or "graph"
        trace_path = os.path.join(folder, f"{stem}.json")
        trace.to_json(trace_path)
        done = subprocess.run(
            [sys.executable, "-m", "viewer", "--export", os.path.abspath(to_file), trace_path],
            env=env,
            capture_output=True,
            text=True,
        )
    if done.returncode != 0:
        why = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        raise RuntimeError(f"plot_dot_graph: drawing {to_file!r} failed: {why[0]}")


# =============================================================================
# Local data files (nothing is downloaded)
# =============================================================================
#: where :func:`get_file` looks, as DeZero's ``cache_dir`` (``~/.dezero``); the environment
#: variable ``AUTODIFF_DATA`` names another folder
cache_dir = os.path.join(os.path.expanduser("~"), ".dezero")


def _data_dir() -> str:
    return os.environ.get("AUTODIFF_DATA") or cache_dir


def get_file(url: str, file_name: str | None = None) -> str:
    """The path of the local copy of ``url``'s file: ``file_name`` (by default the last part of
    the URL) in the data folder (``$AUTODIFF_DATA``, else ``~/.dezero``, DeZero's cache).

    The name must be a plain file name, so the path stays inside the data folder: a name with
    a ``/`` or ``\\``, ``.``, ``..``, an empty name (a URL ending in ``/``) or a NUL raises
    ValueError. DeZero downloads a missing file; autodiff never uses the network:
    FileNotFoundError says which file to fetch from where, and where to put it.
    """
    folder = _data_dir()
    if file_name is None:
        source = f"the file name at the end of the URL {url!r}"
        file_name = url[url.rfind("/") + 1 :]
    else:
        source = f"file_name (for the URL {url!r})"
    why = _not_a_plain_name(file_name)
    if why:
        raise ValueError(
            f"get_file: {source} is {file_name!r}, {why}; the file must be a plain name inside "
            f"the data folder {folder!r}: pass file_name='name.ext'"
        )
    file_path = os.path.join(folder, file_name)
    if os.path.isfile(file_path):
        return file_path
    if os.path.exists(file_path):
        raise FileNotFoundError(
            f"get_file: {file_path!r} is a folder or a device, not a file; save {url} there "
            "as a file"
        )
    raise FileNotFoundError(
        f"get_file: {file_name!r} is not in {folder!r}. autodiff does not download: fetch "
        f"{url} yourself and save it as {file_path!r} (or set AUTODIFF_DATA to the folder "
        "that holds it)"
    )


def _not_a_plain_name(file_name: str) -> str:
    """Why ``file_name`` would not name a file directly inside a folder, or ''."""
    if not isinstance(file_name, str):
        return f"a {type(file_name).__name__}, not a str"
    if not file_name:
        return "empty"
    if file_name in (".", ".."):
        return "a folder, not a file"
    if "\0" in file_name:
        return "a name with a NUL character"
    if "/" in file_name or "\\" in file_name or os.path.isabs(file_name):
        return "a path, not a file name"
    return ""
