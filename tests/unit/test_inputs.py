"""Seeded inputs: stability across processes, each distribution, bfloat16 rounding,
gradient weights and tolerances."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from opbench.cases.case_files import (
    DISTRIBUTIONS,
    DTYPES,
    Case,
    CaseInstance,
    InputSpec,
    expand,
    load_cases,
)
from opbench.runner.inputs import (
    DEFAULT_TOLERANCES,
    EXACT,
    generate_array,
    generate_inputs,
    grad_weight,
    instance_seed,
    numpy_dtype,
    round_to_bfloat16,
    tolerance_for,
)

REPO = Path(__file__).resolve().parents[2]
VALID = Path(__file__).parent / "fixtures" / "cases" / "valid"

# Sample size for the distribution checks: large enough that the bounds below sit at many
# standard errors (mask p: sigma = sqrt(p(1-p)/n) ~ 0.003), small enough to run in ms.
N = 20_000


def make_instance(*specs: InputSpec, instance_id: str = "op[x=1]", rtol=None,
                  atol=None) -> CaseInstance:
    case = Case(name="op", op="op", file="<test>", line=1, tags=(), description="",
                params={}, raw={}, rtol=rtol, atol=atol)
    return CaseInstance(id=instance_id, case=case, params={}, inputs=tuple(specs), calls={})


def draw(dist: str, dtype: str = "float32", shape=(N,), seed: int = 1, **options):
    spec = InputSpec(name="x", shape=tuple(shape), dtype=dtype, dist=dist, options=options)
    return generate_array(spec, np.random.Generator(np.random.PCG64(seed)))


# ---------------------------------------------------------------------------------------
# Seeds
# ---------------------------------------------------------------------------------------


def test_seed_is_the_documented_hash_of_the_id():
    digest = hashlib.sha256(b"reshape[shape=8x16,dtype=float32]").digest()
    expected = int.from_bytes(digest[:8], "big") & (2**63 - 1)
    assert instance_seed("reshape[shape=8x16,dtype=float32]") == expected
    assert 0 <= instance_seed("a") < 2**63
    assert instance_seed("a") != instance_seed("b")


def test_inputs_are_bitwise_identical_in_another_process(tmp_path):
    instances = [i for case in load_cases([VALID]) for i in expand(case)]
    out = tmp_path / "arrays.npz"
    script = (
        "import sys, numpy as np\n"
        "from opbench.cases.case_files import load_cases, expand\n"
        "from opbench.runner.inputs import generate_inputs\n"
        "arrays = {}\n"
        "for case in load_cases([sys.argv[1]]):\n"
        "    for inst in expand(case):\n"
        "        for name, a in generate_inputs(inst).items():\n"
        "            arrays[inst.id + '/' + name] = a\n"
        "np.savez(sys.argv[2], **arrays)\n")
    # A different hash salt in the child: nothing may depend on Python's hash().
    env = {**os.environ, "PYTHONHASHSEED": "12345",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, "-c", script, str(VALID), str(out)], check=True, env=env,
                   cwd=tmp_path, timeout=120)
    with np.load(out) as theirs:
        ours = {f"{i.id}/{name}": a for i in instances for name, a in generate_inputs(i).items()}
        assert sorted(theirs.files) == sorted(ours)
        for key, array in ours.items():
            assert theirs[key].dtype == array.dtype and theirs[key].shape == array.shape
            assert theirs[key].tobytes() == array.tobytes(), key


def test_same_instance_same_arrays_other_instance_other_arrays():
    spec = InputSpec(name="x", shape=(16,), dtype="float32")
    a = generate_inputs(make_instance(spec, instance_id="op[n=1]"))["x"]
    b = generate_inputs(make_instance(spec, instance_id="op[n=1]"))["x"]
    c = generate_inputs(make_instance(spec, instance_id="op[n=2]"))["x"]
    assert a.tobytes() == b.tobytes()
    assert not np.array_equal(a, c)


def test_inputs_come_from_one_stream_in_declaration_order():
    x = InputSpec(name="x", shape=(8,), dtype="float32")
    y = InputSpec(name="y", shape=(8,), dtype="float32")
    both = generate_inputs(make_instance(x, y))
    assert list(both) == ["x", "y"]
    alone = generate_inputs(make_instance(x))
    assert both["x"].tobytes() == alone["x"].tobytes()
    assert not np.array_equal(both["x"], both["y"])   # y continues the stream
    swapped = generate_inputs(make_instance(y, x))
    assert swapped["y"].tobytes() == both["x"].tobytes()


def test_arrays_are_c_contiguous_with_the_numpy_dtype_including_0d():
    for dtype in DTYPES:
        dist = {"bool": "mask", "int32": "randint", "int64": "randint"}.get(dtype, "normal")
        for shape in [(), (3, 4), (0, 5)]:
            spec = InputSpec(name="x", shape=shape, dtype=dtype, dist=dist)
            array = generate_inputs(make_instance(spec))["x"]
            assert isinstance(array, np.ndarray)
            assert array.shape == shape
            assert array.dtype == numpy_dtype(dtype)
            assert array.flags.c_contiguous


def test_permutation_is_contiguous_even_though_it_is_built_from_a_broadcast():
    assert draw("permutation", "int64", shape=(3, 5)).flags.c_contiguous


# ---------------------------------------------------------------------------------------
# Distributions
# ---------------------------------------------------------------------------------------


def test_normal_has_the_requested_mean_and_std():
    x = draw("normal", mean=3.0, std=2.0)
    assert x.dtype == np.float32
    assert abs(x.mean() - 3.0) < 0.1 and abs(x.std() - 2.0) < 0.1
    y = draw("normal", "float64")
    assert y.dtype == np.float64 and abs(y.mean()) < 0.05 and abs(y.std() - 1) < 0.05


def test_uniform_stays_in_range_and_fills_it():
    x = draw("uniform", low=-2.0, high=3.0)
    assert x.min() >= -2.0 and x.max() <= 3.0
    assert x.min() < -1.9 and x.max() > 2.9
    assert abs(x.mean() - 0.5) < 0.1
    default = draw("uniform")
    assert default.min() >= 0.0 and default.max() <= 1.0


def test_positive_is_strictly_positive_with_default_bounds():
    x = draw("positive", "float16")
    assert x.dtype == np.float16
    assert x.min() > 0 and x.min() >= np.float16(0.1) and x.max() <= 1.0


def test_randint_is_integer_in_half_open_range_and_hits_every_value():
    x = draw("randint", "int32", low=-3, high=4)
    assert x.dtype == np.int32
    assert set(np.unique(x).tolist()) == set(range(-3, 4))
    defaults = draw("randint", "int64")
    assert defaults.min() >= 0 and defaults.max() <= 9
    as_float = draw("randint", "float32", low=0, high=5)
    assert np.array_equal(as_float, np.round(as_float))


def test_mask_has_probability_p_of_true():
    x = draw("mask", "bool", p=0.2)
    assert x.dtype == np.bool_
    assert abs(x.mean() - 0.2) < 0.02
    assert draw("mask", "bool", p=0.0).sum() == 0
    assert draw("mask", "bool", p=1.0).all()
    as_float = draw("mask", "float32", p=0.5)
    assert set(np.unique(as_float).tolist()) == {0.0, 1.0}


def test_arange_counts_in_c_order():
    x = draw("arange", "int64", shape=(2, 3))
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_permutation_permutes_each_row_independently():
    x = draw("permutation", "int64", shape=(50, 7))
    for row in x:
        assert sorted(row.tolist()) == list(range(7))
    assert len({tuple(row) for row in x.tolist()}) > 1


def test_every_documented_distribution_can_be_drawn():
    for dist in DISTRIBUTIONS:
        dtype = "bool" if dist == "mask" else ("int64" if dist in (
            "randint", "arange", "permutation") else "float32")
        assert draw(dist, dtype, shape=(4,)).shape == (4,)


def test_float16_is_drawn_in_float32_then_cast():
    seed = 7
    half = draw("normal", "float16", shape=(64,), seed=seed)
    single = draw("normal", "float32", shape=(64,), seed=seed)
    assert half.dtype == np.float16
    assert half.tobytes() == single.astype(np.float16).tobytes()


def test_bfloat16_inputs_are_float32_holding_bfloat16_values():
    seed = 7
    bf = draw("normal", "bfloat16", shape=(256,), seed=seed)
    single = draw("normal", "float32", shape=(256,), seed=seed)
    assert bf.dtype == np.float32
    assert not (bf.view(np.uint32) & 0xFFFF).any()
    assert np.array_equal(bf, round_to_bfloat16(single))


# ---------------------------------------------------------------------------------------
# bfloat16 rounding
# ---------------------------------------------------------------------------------------

ULP_AT_ONE = 2.0**-7   # bfloat16 keeps 7 explicit mantissa bits


def reference_bfloat16(value: float) -> float:
    """Nearest bfloat16 by brute force: compare the two bfloat16 neighbours in float64."""
    bits = int(np.float32(value).view(np.uint32))
    below = np.uint32(bits & 0xFFFF0000).view(np.float32)
    above = np.uint32((bits & 0xFFFF0000) + 0x10000).view(np.float32)
    lo, hi = float(below), float(above)
    d_lo, d_hi = abs(float(np.float32(value)) - lo), abs(hi - float(np.float32(value)))
    if d_lo != d_hi:
        return lo if d_lo < d_hi else hi
    return lo if (bits >> 16) % 2 == 0 else hi   # tie: the even one


@pytest.mark.parametrize("value, expected", [
    (1.0, 1.0),
    (1 + ULP_AT_ONE / 2, 1.0),                       # tie, 1.0 is even: round down
    (1 + 3 * ULP_AT_ONE / 2, 1 + 2 * ULP_AT_ONE),    # tie, 1+ulp is odd: round up
    (1 + ULP_AT_ONE / 2 + 2**-20, 1 + ULP_AT_ONE),   # just above the tie
    (-(1 + 3 * ULP_AT_ONE / 2), -(1 + 2 * ULP_AT_ONE)),
    (np.float32(np.finfo(np.float32).max), np.inf),  # beyond bfloat16's largest finite
    (np.inf, np.inf),
    (-np.inf, -np.inf),
    (0.0, 0.0),
    (1e-40, reference_bfloat16(1e-40)),              # subnormal
])
def test_round_to_bfloat16_known_values(value, expected):
    assert float(round_to_bfloat16(np.float32(value))) == expected


def test_round_to_bfloat16_keeps_nan_and_shape():
    nan_in_low_bits = np.uint32(0x7F800001).view(np.float32)   # would become inf if rounded
    out = round_to_bfloat16(np.array([[np.nan, nan_in_low_bits]], dtype=np.float32))
    assert out.shape == (1, 2) and out.dtype == np.float32 and np.isnan(out).all()


def test_round_to_bfloat16_matches_brute_force_on_random_bits():
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 2**32, size=3000, dtype=np.uint64).astype(np.uint32)
    # Exact ties are 1 in 65536 random patterns: add 500 of them on purpose.
    ties = (rng.integers(0, 2**16, size=500, dtype=np.uint64) << 16 | 0x8000).astype(np.uint32)
    values = np.concatenate([bits, ties]).view(np.float32)
    values = values[np.isfinite(values)]
    ours = round_to_bfloat16(values)
    expected = np.array([reference_bfloat16(v) for v in values], dtype=np.float32)
    assert np.array_equal(ours, expected)


def test_round_to_bfloat16_is_idempotent():
    x = round_to_bfloat16(np.linspace(-5, 5, 1001, dtype=np.float32))
    assert np.array_equal(round_to_bfloat16(x), x)


# ---------------------------------------------------------------------------------------
# Gradient weights
# ---------------------------------------------------------------------------------------


def test_grad_weight_is_seeded_and_separate_from_the_inputs():
    w = grad_weight("op[x=1]", (4, 8), "float32")
    assert w.shape == (4, 8) and w.dtype == np.float32 and w.flags.c_contiguous
    assert grad_weight("op[x=1]", (4, 8), "float32").tobytes() == w.tobytes()
    x = generate_inputs(make_instance(InputSpec(name="x", shape=(4, 8), dtype="float32")))["x"]
    assert not np.array_equal(w, x)
    assert not np.array_equal(w, grad_weight("op[x=2]", (4, 8), "float32"))
    assert not np.array_equal(w, grad_weight("op[x=1]", (4, 8), "float32", index=1))
    bf = grad_weight("op[x=1]", (16,), "bfloat16")
    assert bf.dtype == np.float32 and not (bf.view(np.uint32) & 0xFFFF).any()
    assert grad_weight("op[x=1]", (3,), "float16").dtype == np.float16
    with pytest.raises(ValueError):
        grad_weight("op[x=1]", (3,), "int64")


# ---------------------------------------------------------------------------------------
# Tolerances
# ---------------------------------------------------------------------------------------


def test_default_tolerances_cover_every_dtype_and_loosen_with_precision():
    assert set(DEFAULT_TOLERANCES) == set(DTYPES)
    order = ["float64", "float32", "float16", "bfloat16"]
    rtols = [DEFAULT_TOLERANCES[d][0] for d in order]
    assert rtols == sorted(rtols)
    for dtype in ("int32", "int64", "bool"):
        assert DEFAULT_TOLERANCES[dtype] == EXACT


def test_tolerance_follows_the_first_floating_input():
    idx = InputSpec(name="i", shape=(2,), dtype="int64", dist="randint")
    half = InputSpec(name="h", shape=(2,), dtype="float16")
    single = InputSpec(name="s", shape=(2,), dtype="float32")
    assert tolerance_for(make_instance(idx, half, single)) == DEFAULT_TOLERANCES["float16"]
    assert tolerance_for(make_instance(idx)) == EXACT
    assert tolerance_for(make_instance()) == EXACT


def test_case_tolerance_overrides_each_part_separately():
    single = InputSpec(name="s", shape=(2,), dtype="float32")
    default_rtol, default_atol = DEFAULT_TOLERANCES["float32"]
    assert tolerance_for(make_instance(single, rtol=0.5)) == (0.5, default_atol)
    assert tolerance_for(make_instance(single, atol=0.25)) == (default_rtol, 0.25)
    assert tolerance_for(make_instance(single, rtol=0.5, atol=0.25)) == (0.5, 0.25)


def test_loaded_case_tolerance_reaches_the_instances():
    [case] = [c for c in load_cases([VALID]) if c.name == "reshape"]
    assert {tolerance_for(i) for i in expand(case)} == {(1e-5, 1e-6)}
