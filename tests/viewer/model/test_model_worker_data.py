"""What crosses the script worker's boundary is data: it round-trips, and bad data is refused
with a ValueError that names the problem, never run or half-built."""

import math

import numpy as np
import pytest

import autodiff.functions as F
from viewer.model.checks.function_check import Comparison, FunctionSampler, SlotCheck
from viewer.model.scripts.worker_data import Unpackable, pack, pack_samples, unpack, unpack_samples


def roundtrip(value):
    arrays = []
    data = pack(value, arrays)
    return unpack(data, arrays)


def test_plain_values_round_trip():
    value = {
        "axis": (0, -1),
        "keepdims": False,
        "name": "w",
        "big": 10**30,
        "f": 1.5,
        "nan": math.nan,
        "inf": -math.inf,
        "c": 1 + 2j,
        "b": b"\x00\xff",
        "s": slice(1, None, 2),
        "e": Ellipsis,
        "none": None,
        "list": [1, [2, 3]],
        (1, 2): "tuple key",
        "scalar": np.float32(2.5),
        "array": np.arange(6.0).reshape(2, 3),
    }
    back = roundtrip(value)
    assert set(back) == set(value)
    for key in value:
        if key in ("nan", "array", "scalar"):
            continue
        assert back[key] == value[key] and type(back[key]) is type(value[key]), key
    assert math.isnan(back["nan"])
    assert back["scalar"] == np.float32(2.5) and back["scalar"].dtype == np.float32
    np.testing.assert_array_equal(back["array"], value["array"])


def test_checks_round_trip():
    comparison = Comparison(
        (2,),
        "elementwise",
        2,
        0.5,
        1.0,
        0.25,
        "wrong",
        0,
        0,
        np.array([1.0, 2.0]),
        np.array([1.0, 1.5]),
    )
    back = roundtrip(("wrong", (SlotCheck(0, "backward", comparison),), "slot 0 is off"))
    status, (slot,), message = back
    assert (status, message, slot.slot, slot.path) == ("wrong", "slot 0 is off", 0, "backward")
    assert slot.comparison.error == 0.25
    np.testing.assert_array_equal(slot.comparison.numeric, [1.0, 1.5])


@pytest.mark.parametrize(
    "value",
    [object(), np.array([object()]), F.Sum(0, False), lambda: 1, [[[[[[[[[[[[[[1]]]]]]]]]]]]]]],
)
def test_what_is_not_plain_data_is_refused(value):
    with pytest.raises(Unpackable):
        pack(value, [])


@pytest.mark.parametrize(
    "data",
    [
        {"$": "a", "v": 3},  # no such array
        {"$": "a", "v": "0"},
        {"$": "x"},
        {"no tag": 1},
        [1, 2],  # lists are tagged
        {"$": "f", "v": "1e999"},
        {"$": "b", "v": "zz"},
        {"$": "d", "v": [[{"$": "l", "v": []}, 1]]},  # an unhashable key
        {"$": "o", "n": "Popen", "v": {}},  # not a known class
        {"$": "o", "n": "SlotCheck", "v": {"__class__": 1}},
        {"$": "s", "v": [1, 2]},
    ],
)
def test_bad_data_is_refused_by_name(data):
    with pytest.raises(ValueError):
        unpack(data, [np.zeros(2)])


def test_samples_round_trip_with_the_real_autodiff_class_and_a_stand_in_for_the_rest():
    sampler = FunctionSampler(per_class=1)
    from autodiff import Function, Variable

    class Mine(Function):
        def forward(self, x):
            return x * 3

        def backward(self, gy):
            return gy * 2  # wrong on purpose

    x = Variable(np.array([1.0, 2.0]))
    from autodiff import core

    core.add_observer(sampler)
    try:
        F.sum(Mine()(x), axis=0, keepdims=True)
    finally:
        core.remove_observer(sampler)
    arrays = []
    data = pack_samples(sampler, arrays)
    back = unpack_samples(data, arrays)
    by_name = {cls.__name__: cls for cls in back.samples}
    assert by_name["Sum"] is F.Sum
    (sum_sample,) = back.samples[F.Sum]
    assert sum_sample.params["axis"] == 0 and sum_sample.params["keepdims"] is True
    assert sum_sample.check()[0] == "ok"  # run here, on demand
    mine = by_name["Mine"]
    assert mine is not Mine and not issubclass(mine, Function)  # only a name
    assert back.for_op("Mine")[0].check()[0] == "wrong"  # the check the worker made


def test_a_sample_never_makes_this_process_import_a_module():
    row = {
        "module": "autodiff.not_imported_anywhere",
        "name": "Boom",
        "params": {"$": "d", "v": []},
        "inputs": [],
        "dropped": [],
        "result": None,
    }
    assert unpack_samples([row], []).samples == {}  # unknown and unchecked: dropped
    with pytest.raises(ValueError):
        unpack_samples([{**row, "name": 5}], [])
