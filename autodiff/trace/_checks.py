"""The loaders' field checks (JSON, binary, a Snapshot's dict): each returns the checked value
or raises :class:`TraceFormatError` naming the field's path and the problem. A leaf module:
it imports nothing of the trace package."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = [
    "MAX_DTYPE",
    "MAX_NAME",
    "MAX_OP",
    "MAX_PARAMS",
    "MAX_PARAM_CHARS",
    "MAX_PARAM_STR",
    "MAX_PARAM_TUPLE",
    "MAX_SCOPE_PATH",
    "TraceFormatError",
    "check_params",
    "params_to_plain",
    "small_params",
    "small_value",
]

_MAX_NDIM = 64  # numpy's most: a recorded array has at most as many dimensions
# The longest strings a saved trace may hold, in characters (both loaders refuse longer ones;
# the writers cut a longer name or op with a marker, the recorder a scope's name, class and
# path, so whatever a recording holds is read back).
MAX_NAME = 10_000  # a Variable's name, a scope's name
MAX_OP = 200  # a Function's class name, a scope's Layer class name
# A scope's path ("Net/b2/fc") is derived from the names, not saved: past this it keeps its first
# part and its last ones around "/…/", so a deep nest costs at most this much per scope.
MAX_SCOPE_PATH = 1_000
MAX_DTYPE = 64  # a dtype's name
MAX_LINE = (1 << 31) - 1  # a Function's source line (CPython's line numbers are C ints)
_ARRAY_DTYPES = frozenset(
    ["bool"]
    + [f"int{n}" for n in (8, 16, 32, 64)]
    + [f"uint{n}" for n in (8, 16, 32, 64)]
    + ["float16", "float32", "float64"]
)
# A Function's attributes kept in a recording (Pow's ``c``, Sum's ``axis``...): small plain data
# only, so a formula's numbers can be written without the live Function. Per Function, at most:
MAX_PARAMS = 8  # attributes
MAX_PARAM_CHARS = 200  # characters of their names and values (repr) together
MAX_PARAM_STR = 50  # characters of a string value (and of a name)
MAX_PARAM_TUPLE = 16  # ints in a tuple value (a shape, axes, stride, pad, kernel size)
_PARAM_INT = 1 << 63  # an int value lies in [-2**63, 2**63)
_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


class TraceFormatError(ValueError):
    """A saved trace is malformed; the message names the JSON path and the problem."""


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    return type(v).__name__


def cut_text(text: Any, limit: int) -> str | None:
    """``text`` as a string the loaders accept (``Variable(name=123)`` has a name that is not
    one): cut to ``limit`` characters, the last one a marker, when longer; None stays None."""
    if text is None:
        return None
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fail(path: str, problem: str) -> TraceFormatError:
    return TraceFormatError(f"{path}: {problem}")


def _int(v: Any, path: str, lo: int | None = None, hi: int | None = None) -> int:
    if type(v) is not int:
        raise _fail(path, f"expected int, got {_type_name(v)}")
    if lo is not None and v < lo:
        raise _fail(path, f"expected an int >= {lo}, got {v}")
    if hi is not None and v > hi:
        raise _fail(path, f"expected an int <= {hi}, got {v}")
    return v


def _bool(v: Any, path: str) -> bool:
    if type(v) is not bool:
        raise _fail(path, f"expected bool, got {_type_name(v)}")
    return v


def _str(v: Any, path: str, optional: bool = False, max_len: int = 10_000) -> str | None:
    if v is None and optional:
        return None
    if type(v) is not str:
        raise _fail(
            path, f"expected {'string or null' if optional else 'string'}, got {_type_name(v)}"
        )
    if len(v) > max_len:
        raise _fail(path, f"string of {len(v)} characters, above the limit of {max_len}")
    return v


def _list(v: Any, path: str, length: int | None = None) -> list:
    if type(v) is not list:
        raise _fail(path, f"expected array, got {_type_name(v)}")
    if length is not None and len(v) != length:
        raise _fail(path, f"expected {length} item(s), got {len(v)}")
    return v


def _dict(v: Any, path: str, keys: tuple[str, ...]) -> dict:
    if type(v) is not dict:
        raise _fail(path, f"expected object, got {_type_name(v)}")
    for key in keys:
        if key not in v:
            raise _fail(path, f"missing field '{key}'")
    return v


def _float(v: Any, path: str) -> float:
    if type(v) is str:
        if v in _NONFINITE:
            return _NONFINITE[v]
        raise _fail(path, f"expected a number or 'nan'/'inf'/'-inf', got string {v[:20]!r}")
    if type(v) not in (int, float):
        raise _fail(path, f"expected number, got {_type_name(v)}")
    return float(v)


def _array(v: Any, shape: tuple[int, ...], dtype: str, path: str) -> np.ndarray:
    """Decode an array's elements, checking they match ``shape`` and are the right scalars:
    a flat list in row-major order (schema 4 writes every array so), or nested lists, one
    level per axis (schemas 1 to 3). The two are told apart by the first element."""
    if dtype not in _ARRAY_DTYPES:
        raise _fail(path, f"arrays of dtype {dtype!r} cannot be stored (numeric dtypes only)")
    kind = np.dtype(dtype).kind
    flat: list = []
    levels = shape
    if len(shape) >= 2 and isinstance(v, list) and (not v or not isinstance(v[0], list)):
        levels = (math.prod(shape),)
    # iterative walk: (value, depth, path)
    stack = [(v, 0, path)]
    while stack:
        item, depth, p = stack.pop()
        if depth < len(levels):
            _list(item, p, levels[depth])
            for i in range(len(item) - 1, -1, -1):
                stack.append((item[i], depth + 1, f"{p}[{i}]"))
            continue
        if kind == "b":
            flat.append(_bool(item, p))
        elif kind in "iu":
            flat.append(_int(item, p))
        else:
            flat.append(_float(item, p))
    try:
        a = np.array(flat, dtype=dtype).reshape(shape)
    except (OverflowError, ValueError) as e:
        raise _fail(path, f"values do not fit dtype {dtype}: {e}") from None
    a.flags.writeable = False
    return a


# ---------------------------------------------------------------------------------------------
# A Function's small attributes: kept while recording, written and read by both formats as
# [name, kind, value] rows, kind one of _PARAM_KINDS (a string and a float stay apart: "inf"
# is a string, ["x", "float", "inf"] a float).
# ---------------------------------------------------------------------------------------------
_PARAM_KINDS = ("none", "bool", "int", "float", "str", "ints")


def _plain(v: Any) -> Any:
    """``v`` as small plain data (None, bool, int, float, str, tuple of ints), else _SKIP."""
    t = type(v)
    if t is float or t is bool or v is None:
        return v
    if t is int:
        return v if -_PARAM_INT <= v < _PARAM_INT else _SKIP
    if t is str:
        return v if len(v) <= MAX_PARAM_STR else _SKIP
    if t is tuple:
        if len(v) > MAX_PARAM_TUPLE:
            return _SKIP
        out = []
        for i in v:
            if type(i) is bool or not isinstance(i, (int, np.integer)):
                return _SKIP
            i = int(i)
            if not -_PARAM_INT <= i < _PARAM_INT:
                return _SKIP
            out.append(i)
        return tuple(out)
    if (isinstance(v, np.generic) or (t is np.ndarray and v.ndim == 0)) and v.dtype.kind in "biuf":
        return _plain(v.item())
    return _SKIP


_SKIP = object()


def small_value(v: Any) -> bool:
    """Whether :func:`small_params` keeps ``v`` (its size budget aside)."""
    return _plain(v) is not _SKIP


def small_params(attributes: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The public attributes of a Function (its ``__dict__``) that are small plain data, as
    ``(name, value)`` pairs within the limits above (arrays, Variables, callables are left out)."""
    out: list[tuple[str, Any]] = []
    used = 0
    for name, v in attributes.items():
        if name[:1] == "_" or len(name) > MAX_PARAM_STR:
            continue
        v = _plain(v)
        if v is _SKIP:
            continue
        used += len(name) + len(repr(v))
        if used > MAX_PARAM_CHARS:
            break
        out.append((name, v))
        if len(out) == MAX_PARAMS:
            break
    return tuple(out)


def params_to_plain(params: tuple[tuple[str, Any], ...]) -> list[list[Any]]:
    """The JSON rows of ``small_params``' pairs (a non-finite float as 'nan'/'inf'/'-inf')."""
    rows = []
    for name, v in params:
        t = type(v)
        if v is None:
            rows.append([name, "none", None])
        elif t is bool:
            rows.append([name, "bool", v])
        elif t is int:
            rows.append([name, "int", v])
        elif t is float:
            rows.append([name, "float", v if math.isfinite(v) else str(v)])
        elif t is str:
            rows.append([name, "str", v])
        else:
            rows.append([name, "ints", list(v)])
    return rows


def check_params(v: Any, path: str) -> tuple[tuple[str, Any], ...]:
    """The pairs of saved rows ``v`` (:func:`params_to_plain`), checked against the limits."""
    rows = _list(v, path)
    if len(rows) > MAX_PARAMS:
        raise _fail(path, f"{len(rows)} attributes, above the limit of {MAX_PARAMS}")
    out: list[tuple[str, Any]] = []
    used = 0
    for i, row in enumerate(rows):
        p = f"{path}[{i}]"
        name, kind, value = _list(row, p, 3)
        name = _str(name, f"{p}[0]", max_len=MAX_PARAM_STR)
        if not name.isidentifier() or name.startswith("_"):
            raise _fail(f"{p}[0]", f"{name[:20]!r} is not a public attribute name")
        if kind not in _PARAM_KINDS:
            raise _fail(f"{p}[1]", f"expected one of {', '.join(_PARAM_KINDS)}")
        q = f"{p}[2]"
        if kind == "none":
            if value is not None:
                raise _fail(q, f"expected null, got {_type_name(value)}")
        elif kind == "bool":
            value = _bool(value, q)
        elif kind == "int":
            value = _int(value, q, -_PARAM_INT, _PARAM_INT - 1)
        elif kind == "float":
            value = _float(value, q)
        elif kind == "str":
            value = _str(value, q, max_len=MAX_PARAM_STR)
        else:
            items = _list(value, q)
            if len(items) > MAX_PARAM_TUPLE:
                raise _fail(q, f"{len(items)} ints, above the limit of {MAX_PARAM_TUPLE}")
            value = tuple(
                _int(x, f"{q}[{j}]", -_PARAM_INT, _PARAM_INT - 1) for j, x in enumerate(items)
            )
        used += len(name) + len(repr(value))
        if used > MAX_PARAM_CHARS:
            raise _fail(path, f"attributes above the limit of {MAX_PARAM_CHARS} characters")
        out.append((name, value))
    if len({n for n, _ in out}) != len(out):
        raise _fail(path, "an attribute is named twice")
    return tuple(out)
