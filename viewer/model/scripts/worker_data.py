"""Plain data across the script worker's process boundary: JSON for the structure, numpy
arrays by index beside it (written to an ``.npz``, read with ``allow_pickle=False``).

What crosses is what :class:`~viewer.model.checks.function_check.FunctionSampler` keeps (numbers,
strings, bytes, arrays, numpy scalars, slices, tuples, lists, dicts) and the checks it made
(:class:`~viewer.model.checks.function_check.Comparison`, :class:`SlotCheck`). :func:`pack` raises
:class:`Unpackable` for anything else; :func:`unpack` trusts nothing and raises
:class:`ValueError` naming what it could not read. Never pickle: a result is data, not code.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from viewer.model.checks.function_check import (
    Comparison,
    FunctionSample,
    FunctionSampler,
    SlotCheck,
)

__all__ = ["Unpackable", "pack", "pack_samples", "unpack", "unpack_samples"]

_MAX_DEPTH = 12
_CLASSES: dict[str, type] = {"Comparison": Comparison, "SlotCheck": SlotCheck}


class Unpackable(TypeError):
    """The value holds something that is not plain data."""


def pack(value: Any, arrays: list[np.ndarray], depth: int = 0) -> Any:
    """``value`` as JSON-able data; its arrays are appended to ``arrays`` and named by index."""
    if depth > _MAX_DEPTH:
        raise Unpackable("nested too deeply")
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int) and not isinstance(value, np.generic):
        return value
    if isinstance(value, float) and not isinstance(value, np.generic):
        return value if math.isfinite(value) else {"$": "f", "v": repr(value)}
    if isinstance(value, complex):
        return {"$": "c", "v": [pack(value.real, arrays), pack(value.imag, arrays)]}
    if isinstance(value, bytes):
        return {"$": "b", "v": value.hex()}
    if isinstance(value, np.ndarray | np.generic):
        array = np.asarray(value)
        if array.dtype.hasobject:
            raise Unpackable("an object array")
        arrays.append(np.array(array, copy=True))
        return {"$": "g" if isinstance(value, np.generic) else "a", "v": len(arrays) - 1}
    if isinstance(value, slice):
        parts = [pack(p, arrays, depth + 1) for p in (value.start, value.stop, value.step)]
        return {"$": "s", "v": parts}
    if value is Ellipsis:
        return {"$": "e"}
    if isinstance(value, tuple | list):
        items = [pack(v, arrays, depth + 1) for v in value]
        return {"$": "t" if isinstance(value, tuple) else "l", "v": items}
    if isinstance(value, dict):
        pairs = [[pack(k, arrays, depth + 1), pack(v, arrays, depth + 1)] for k, v in value.items()]
        return {"$": "d", "v": pairs}
    name = type(value).__name__
    if dataclasses.is_dataclass(value) and _CLASSES.get(name) is type(value):
        fields = {
            f.name: pack(getattr(value, f.name), arrays, depth + 1)
            for f in dataclasses.fields(value)
        }
        return {"$": "o", "n": name, "v": fields}
    raise Unpackable(f"a {name}")


def unpack(data: Any, arrays: Sequence[np.ndarray], depth: int = 0) -> Any:
    """The value :func:`pack` made of ``data``; ValueError when ``data`` is not such a value."""
    if depth > _MAX_DEPTH:
        raise ValueError("nested too deeply")
    if data is None or type(data) in (bool, int, float, str):
        return data
    if type(data) is not dict or "$" not in data:
        raise ValueError(f"not a packed value: {type(data).__name__}")
    tag, v = data["$"], data.get("v")
    if tag == "f":
        if v not in ("nan", "inf", "-inf"):
            raise ValueError(f"not a float: {str(v)[:40]!r}")
        return float(v)
    if tag == "c":
        real, imag = (_number(unpack(p, arrays, depth + 1)) for p in _items(v, 2))
        return complex(real, imag)
    if tag == "b":
        if type(v) is not str:
            raise ValueError("bytes must be hex text")
        return bytes.fromhex(v)
    if tag in ("a", "g"):
        if type(v) is not int or not 0 <= v < len(arrays):
            raise ValueError(f"no array number {str(v)[:40]}")
        array = arrays[v]
        return array[()] if tag == "g" else array
    if tag == "s":
        return slice(*(unpack(p, arrays, depth + 1) for p in _items(v, 3)))
    if tag == "e":
        return Ellipsis
    if tag in ("t", "l"):
        items = [unpack(p, arrays, depth + 1) for p in _items(v)]
        return tuple(items) if tag == "t" else items
    if tag == "d":
        out = {}
        for pair in _items(v):
            key, value = (unpack(p, arrays, depth + 1) for p in _items(pair, 2))
            try:
                out[key] = value
            except TypeError:
                raise ValueError("a dict key that is not hashable") from None
        return out
    if tag == "o":
        cls = _CLASSES.get(data.get("n"))  # type: ignore[arg-type]
        if cls is None or type(v) is not dict:
            raise ValueError(f"not a known class: {str(data.get('n'))[:40]!r}")
        names = {f.name for f in dataclasses.fields(cls)}
        if not set(v) <= names:
            raise ValueError(f"unknown fields of {cls.__name__}: {sorted(set(v) - names)[:5]}")
        try:
            return cls(**{k: unpack(p, arrays, depth + 1) for k, p in v.items()})
        except TypeError as e:
            raise ValueError(f"{cls.__name__}: {e}") from None
    raise ValueError(f"unknown tag {str(tag)[:20]!r}")


def _items(v: Any, n: int | None = None) -> list[Any]:
    if type(v) is not list or (n is not None and len(v) != n):
        raise ValueError("expected a list" + (f" of {n}" if n is not None else ""))
    return v


def _number(v: Any) -> float:
    if type(v) not in (int, float):
        raise ValueError("expected a number")
    return float(v)


# =============================================================================
# A FunctionSampler's samples
# =============================================================================
def pack_samples(sampler: FunctionSampler, arrays: list[np.ndarray]) -> list[Any]:
    """Every sample of ``sampler`` as data: its class by module and name, its plain
    attributes and inputs, the check made during the run (the script's own classes) and
    whether it is a custom torch Function's (its check torch.autograd.gradcheck's)."""
    out = []
    for cls, found in sampler.samples.items():
        for sample in found:
            try:
                params = pack(sample.params, arrays)
            except Unpackable:
                continue
            try:
                result = None if sample.result is None else pack(sample.result, arrays)
            except Unpackable:
                result = None
            out.append(
                {
                    "module": str(getattr(cls, "__module__", "") or ""),
                    "name": str(getattr(cls, "__qualname__", cls.__name__)),
                    "params": params,
                    "inputs": [pack(np.asarray(x), arrays) for x in sample.inputs],
                    "dropped": [str(d) for d in sample.dropped],
                    "result": result,
                    "torch": bool(sample.torch),
                }
            )
    return out


def unpack_samples(data: Any, arrays: Sequence[np.ndarray], per_class: int = 2) -> FunctionSampler:
    """A :class:`FunctionSampler` holding the samples :func:`pack_samples` wrote.

    A class of ``autodiff`` already imported here is the real class (its check runs on
    demand, as for a run in this process); any other class (the script's own, gone with the
    worker) is a stand-in carrying only its name, and its sample only the check made then.
    """
    sampler = FunctionSampler(per_class=per_class)
    stand_ins: dict[tuple[str, str], type] = {}
    for i, row in enumerate(_items(data)):
        if type(row) is not dict:
            raise ValueError(f"sample {i} is not an object")
        module, name = row.get("module"), row.get("name")
        if type(module) is not str or type(name) is not str or not name or len(name) > 300:
            raise ValueError(f"sample {i}: a bad class name")
        cls = _autodiff_class(module, name)
        result = row.get("result")
        result = None if result is None else unpack(result, arrays)
        if cls is None:
            if result is None:
                continue  # nothing can check a class that is gone
            cls = stand_ins.get((module, name))
            if cls is None:
                short = name.rsplit(".", 1)[-1]
                cls = type(short, (), {"__module__": module, "__qualname__": name})
                stand_ins[(module, name)] = cls
        if result is not None:
            status, slots, message = _items(list(result) if type(result) is tuple else result, 3)
            if type(status) is not str or type(message) is not str or type(slots) is not tuple:
                raise ValueError(f"sample {i}: a bad check result")
            if not all(type(s) is SlotCheck for s in slots):
                raise ValueError(f"sample {i}: a bad slot check")
            result = (status, slots, message)
        params = unpack(row.get("params"), arrays)
        inputs = tuple(unpack(x, arrays) for x in _items(row.get("inputs")))
        dropped = tuple(str(d) for d in _items(row.get("dropped")))
        from_torch = row.get("torch", False)
        if type(from_torch) is not bool:
            raise ValueError(f"sample {i}: a bad torch mark")
        if type(params) is not dict or not all(isinstance(x, np.ndarray) for x in inputs):
            raise ValueError(f"sample {i}: bad attributes or inputs")
        sampler.samples.setdefault(cls, []).append(
            FunctionSample(cls, params, inputs, dropped, result, torch=from_torch)
        )
    return sampler


def _autodiff_class(module: str, name: str) -> type | None:
    """The Function class ``module.name`` of autodiff, if that module is already imported
    (data never makes this process import anything)."""
    from autodiff import core

    if module != "autodiff" and not module.startswith("autodiff."):
        return None
    found: Any = sys.modules.get(module)
    for part in name.split("."):
        if found is None or not part.isidentifier():
            return None
        found = getattr(found, part, None)
    if isinstance(found, type) and issubclass(found, core.Function):
        return found
    return None
