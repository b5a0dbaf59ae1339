"""An external tensor's layout and small values: described (opbench/model/capture/layout.py),
written and read in the program's JSON (old files without them still load), carried from a
described output to a step's external (steady.py), and rebuilt by the replay's
external_array (opbench/model/replay/executor.py). Framework-free; the torch and MindSpore
views are tests/integration/test_model_external_layout_real.py."""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from opbench.model.capture.layout import MAX_KEPT_VALUES, dim_order, expanded_from
from opbench.model.program import ExternalTensor, Program
from opbench.model.replay.executor import external_array
from opbench.model.steady import external_from_output


@pytest.mark.parametrize("shape, strides, base", [
    ((4, 3), (1, 0), (4, 1)),             # a column expanded over 3
    ((2, 4, 3), (0, 3, 1), (1, 4, 3)),    # a leading batch dim broadcast
    ((4, 1), (1, 0), None),               # a size-1 dim's stride is no expansion
    ((4, 3), (3, 1), None),               # contiguous
])
def test_expanded_from_sets_the_stride_0_dims_to_one(shape, strides, base):
    assert expanded_from(shape, strides) == base


@pytest.mark.parametrize("shape, strides, order", [
    ((16, 8), (1, 16), (1, 0)),           # w.T of an (8, 16) weight
    ((2, 3, 4), (12, 1, 3), (0, 2, 1)),   # the last two dims swapped
    ((2, 3, 4), (12, 4, 1), None),        # contiguous
    ((4, 3), (6, 1), None),               # a slice with gaps: not a permutation
    ((4, 1, 3), (1, 7, 4), (2, 0, 1)),    # a size-1 dim goes last, whatever its stride
])
def test_dim_order_of_dense_permuted_views(shape, strides, order):
    assert dim_order(shape, strides) == order


def _program(externals):
    return Program("torch", "2", 1, "blocking", "cpu", "serial", (), tuple(externals))


def test_layout_and_values_round_trip_through_the_program_json():
    externals = [ExternalTensor(0, (4, 3), "bool", "input", "", 0.0, 1.0,
                                expanded_from=(4, 1), values=(0, 0, 1, 1)),
                 ExternalTensor(1, (16, 8), "float32", "input", dim_order=(1, 0)),
                 ExternalTensor(2, (64, 128), "bool", "input", "", 0.0, 1.0,
                                true_fraction=0.125)]
    again = Program.from_json(json.loads(json.dumps(_program(externals).to_json())))
    assert again.externals == tuple(externals)


def test_an_external_without_layout_is_written_as_before_and_an_old_row_loads():
    plain = ExternalTensor(0, (2, 5), "int64", "input", "", 0.0, 9.0)
    data = json.loads(json.dumps(_program([plain]).to_json()))
    assert data["externals"] == [[0, [2, 5], "int64", "input", "", 0.0, 9.0]]
    old = Program.from_json(data).externals[0]
    assert (old.expanded_from, old.dim_order, old.values, old.true_fraction) == (None,) * 4


def test_a_step_external_made_from_an_output_takes_its_layout_and_values():
    # the sixth item as a JSON file gives it back (program.py _tuples: arrays to tuples)
    node = ("tensor", (4, 3), "bool", 0.0, 1.0,
            (("expanded_from", (4, 1)), ("values", (0, 1, 1, 0)), ("unknown", 3)))
    ext = external_from_output(5, node, (), "torch.Tensor.expand")
    assert (ext.id, ext.expanded_from, ext.values) == (5, (4, 1), (0, 1, 1, 0))
    plain = external_from_output(6, ("tensor", (3,), "int64", 0.0, 2.0), (), "torch.arange")
    assert plain.values is None and plain.expanded_from is None


def test_kept_values_are_what_the_replay_uses():
    ids = external_array(ExternalTensor(0, (2, 3), "int64", "input", "", 2.0, 9.0,
                                        values=(2, 4, 9, 5, 6, 7)))
    assert ids.tolist() == [[2, 4, 9], [5, 6, 7]] and ids.dtype == np.int64
    mask = external_array(ExternalTensor(1, (3,), "bool", "input", values=(1, 0, 1)))
    assert mask.tolist() == [True, False, True]


def test_an_expanded_external_repeats_its_base_along_the_expanded_dims():
    pad = external_array(ExternalTensor(0, (4, 3), "bool", "input", expanded_from=(4, 1),
                                        values=(0, 0, 1, 1)))
    assert pad.shape == (4, 3) and pad.flags["C_CONTIGUOUS"]
    assert pad.tolist() == [[False] * 3] * 2 + [[True] * 3] * 2
    drawn = external_array(ExternalTensor(1, (5, 64), "float32", "input",
                                          expanded_from=(5, 1)))
    assert (drawn == drawn[:, :1]).all() and len(np.unique(drawn[:, 0])) == 5


def test_values_of_the_wrong_count_are_drawn_instead():
    ext = ExternalTensor(0, (2, 3), "int64", "input", "", 0.0, 3.0, values=(1, 2))
    ids = external_array(ext)
    assert ids.shape == (2, 3) and ids.min() >= 0 and ids.max() <= 3


def test_a_large_bool_external_is_drawn_with_its_true_share():
    mask = external_array(ExternalTensor(0, (64, 128), "bool", "input", "", 0.0, 1.0,
                                         true_fraction=0.125))
    assert abs(mask.mean() - 0.125) < 0.02
    half = external_array(ExternalTensor(0, (64, 128), "bool", "input", "", 0.0, 1.0))
    assert abs(half.mean() - 0.5) < 0.03


def test_large_externals_without_layout_are_drawn_as_before():
    # the draw before layouts and values: seeded by id, shape and dtype, in the range
    big = ExternalTensor(3, (MAX_KEPT_VALUES + 1,), "int64", "input", "", 0.0, 50.0)
    digest = hashlib.sha256(f"{big.id}:{big.shape}:{big.dtype}".encode()).digest()
    before = np.random.default_rng(int.from_bytes(digest[:8], "little")).integers(
        0, 51, size=big.shape, dtype=np.int64)
    assert np.array_equal(external_array(big), before)
