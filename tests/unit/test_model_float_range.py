"""A float external's observed range: read at capture, bounded on a big tensor
(opbench/model/capture/float_range.py), written in the program's JSON (an old file without it
loads and draws as before), and the replay's draw narrowed to it (opbench/model/replay/
float_draw.py, executor.external_array). Framework-free; a real BCE over a [0, 1] target in
both frameworks is tests/integration/test_model_float_range_real.py."""
from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pytest

from opbench.model.capture.float_range import RANGE_SAMPLE, float_range, sample_index
from opbench.model.program import ExternalTensor, Program
from opbench.model.replay.executor import external_array, stand_in_arrays
from opbench.model.replay.float_draw import drawn_interval
from opbench.model.steady import external_from_output


class HostTensor:
    """A MindSpore-like tensor: read on the host (asnumpy)."""

    def __init__(self, values):
        self.values = np.asarray(values)

    def asnumpy(self):
        return self.values


class _Scalar:
    def __init__(self, value):
        self.value = value

    def item(self):
        return self.value


class CountingTensor:
    """A torch-like tensor that counts the elements min() and max() read."""

    def __init__(self, values, reads=None):
        self.values = np.asarray(values)
        self.reads = reads if reads is not None else []

    def detach(self):
        return self

    def __getitem__(self, index):
        return CountingTensor(self.values[index], self.reads)

    def min(self):
        self.reads.append(self.values.size)
        return _Scalar(self.values.min())

    def max(self):
        self.reads.append(self.values.size)
        return _Scalar(self.values.max())


# -- capture: the range read ----------------------------------------------------------------

@pytest.mark.parametrize("shape", [(8, 512, 768), (768, 768), (100_000,), (3, 5, 7, 11, 13)])
def test_a_sample_index_keeps_at_most_the_cap_with_whole_trailing_rows(shape):
    index = sample_index(shape)
    kept = np.empty(shape, dtype=np.int8)[index]
    assert kept.size <= RANGE_SAMPLE
    assert kept.size >= RANGE_SAMPLE // 8          # a sample, not a handful
    if shape[-1] <= RANGE_SAMPLE:
        assert kept.shape[-1] == shape[-1]


def test_a_small_tensor_is_read_whole():
    values = np.linspace(-2.0, 3.0, 6144).reshape(64, 96)
    tensor = CountingTensor(values)
    assert float_range(tensor, values.shape) == (-2.0, 3.0)
    assert tensor.reads == [6144, 6144]


def test_a_big_tensor_is_read_as_a_sample_inside_its_true_range():
    rng = np.random.default_rng(0)
    values = rng.random((8, 512, 768))
    tensor = CountingTensor(values)
    low, high = float_range(tensor, values.shape)
    assert max(tensor.reads) <= RANGE_SAMPLE
    assert values.min() <= low < 0.01 and 0.99 < high <= values.max()


def test_a_host_read_tensor_and_its_bounds():
    assert float_range(HostTensor([[0.5, 0.25], [1.0, 0.0]]), (2, 2)) == (0.0, 1.0)
    # an infinite bound is unset (unbounded on that side); a NaN leaves no range
    assert float_range(HostTensor([0.0, -np.inf, -1.0]), (3,)) == (None, 0.0)
    assert float_range(HostTensor([0.0, np.nan]), (2,)) == (None, None)
    assert float_range(HostTensor(np.zeros((0, 4))), (0, 4)) == (None, None)


def test_a_tensor_that_cannot_be_read_has_no_range():
    class Unreadable:
        def asnumpy(self):
            raise TypeError("bfloat16 has no numpy dtype")
    assert float_range(Unreadable(), (4, 4)) == (None, None)


# -- the program file ---------------------------------------------------------------------

def _program(externals):
    return Program("torch", "2", 1, "blocking", "cpu", "serial", (), tuple(externals))


def test_a_float_range_round_trips_and_an_old_row_has_none():
    ranged = ExternalTensor(0, (64, 96), "float32", "input", "", 0.0, 1.0)
    half = ExternalTensor(1, (4, 4), "float32", "input", "", None, 0.0)
    data = json.loads(json.dumps(_program([ranged, half]).to_json()))
    assert Program.from_json(data).externals == (ranged, half)
    data["externals"] = [[0, [64, 96], "float32", "input", ""]]     # a file before them
    old = Program.from_json(data).externals[0]
    assert (old.low, old.high) == (None, None)


def test_a_step_reading_an_output_made_before_it_keeps_the_float_range():
    ext = external_from_output(3, ("tensor", (64, 96), "float32", 0.0, 1.0), (), "torch.rand")
    assert (ext.low, ext.high, ext.name) == (0.0, 1.0, "from torch.rand")


# -- replay: the draw -----------------------------------------------------------------------

@pytest.mark.parametrize("low, high, interval", [
    (None, None, None),               # a file before them: as before
    (-5.0, 5.0, None),                # a wide range holds the default draw: as before
    (0.0, 1.0, (0.0, 1.0)),           # torch.rand data
    (0.0, 30.0, (0.0, 1.0)),          # non-negative: the default's positive half
    (None, 0.0, (-1.0, 0.0)),         # a float mask's -inf and 0
    (0.25, 0.25, (0.25, 0.25)),       # a constant
    (2.0, 500.0, (2.0, 500.0)),       # beside the default: the observed range
    (3.0, None, (3.0, 5.0)),          # above it, one bound: the default's width from it
    (None, -4.0, (-6.0, -4.0)),
])
def test_the_drawn_interval_is_the_default_narrowed_to_the_observed_range(low, high,
                                                                         interval):
    assert drawn_interval(-1.0, 1.0, low, high) == interval


def _old_float_draw(ext):
    """executor._drawn_array's float draw before the observed range (the same seed rule)."""
    digest = hashlib.sha256(f"{ext.id}:{ext.shape}:{ext.dtype}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    shape = tuple(ext.shape)
    if len(shape) <= 1:
        return rng.uniform(0.5, 1.5, size=shape).astype(np.float32)
    values = rng.uniform(-1.0, 1.0, size=shape)
    if ext.role == "parameter":
        values /= np.sqrt(max(1, int(np.prod(shape[1:]))))
    return values.astype(np.float32)


@pytest.mark.parametrize("ext", [
    ExternalTensor(0, (64, 96), "float32", "input"),
    ExternalTensor(1, (32, 96), "float32", "parameter"),
    ExternalTensor(2, (32,), "float32", "parameter"),
    ExternalTensor(3, (32, 96), "float32", "parameter", "", -0.5, 0.5),   # holds +-1/sqrt(96)
    ExternalTensor(4, (64, 96), "float32", "input", "", -3.0, 4.0),
])
def test_without_a_narrower_range_the_values_are_byte_identical_to_before(ext):
    assert external_array(ext).tobytes() == _old_float_draw(ext).tobytes()


def test_a_target_in_zero_one_is_drawn_in_zero_one():
    values = external_array(ExternalTensor(0, (64, 96), "float32", "input", "", 0.0, 1.0))
    assert values.dtype == np.float32
    assert values.min() >= 0.0 and values.max() <= 1.0
    assert values.min() < 0.05 and values.max() > 0.95 and values.std() > 0.2


def test_a_weight_narrower_than_its_fan_in_draw_is_drawn_in_its_range():
    bound = 1 / math.sqrt(96)
    values = external_array(ExternalTensor(0, (32, 96), "float32", "parameter", "", 0.0, 1.0))
    assert values.min() >= 0.0 and values.max() <= bound + 1e-7


def test_a_constant_scale_and_a_zero_bias_are_the_scripts_constants():
    ones = external_array(ExternalTensor(0, (16,), "float32", "parameter", "", 1.0, 1.0))
    zeros = external_array(ExternalTensor(1, (16,), "float32", "parameter", "", 0.0, 0.0))
    assert (ones == 1.0).all() and (zeros == 0.0).all()


def test_a_stand_in_for_a_float_output_is_drawn_in_its_range():
    drawn = stand_in_arrays(("tensor", (8, 4), "float32", 0.0, 1.0), 5)
    assert drawn.min() >= 0.0 and drawn.max() <= 1.0
