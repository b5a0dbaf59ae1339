"""The size-sweep decomposition: recovers a known fixed cost and throughput within its
stated uncertainty (coverage by simulation), and says "poor fit" instead of a number."""
import numpy as np
import pytest
from gapmap_fakes import SWEEP_BYTES, instance, record, side_rounds, summary, sweep_record

from opbench.gapmap.decompose import (
    OK,
    OVERHEAD_BOUND,
    POOR,
    fit_line,
    kernel_ratio,
    median_error_s,
    sweeps,
    variant_of,
)
from opbench.gapmap.work import work_of
from opbench.results.records import InstanceRecord, RunRecord, SideSummary

FIXED_S, THROUGHPUT = 30e-6, 5e9        # MindSpore-like: 30 us per call, 5 GB/s


def fit_one(rng, fixed_s=FIXED_S, throughput=THROUGHPUT, works=SWEEP_BYTES, **noise):
    summaries = [summary(side_rounds(rng, fixed_s, throughput, w, **noise)) for w in works]
    return fit_line(works, [s["median_s"] for s in summaries],
                    [median_error_s(SideSummary.from_dict(s)) for s in summaries])


def test_fit_recovers_overhead_and_throughput_of_one_sweep():
    fit = fit_one(np.random.default_rng(1))
    assert fit.status == OK
    assert fit.fixed_ci_s[0] <= FIXED_S <= fit.fixed_ci_s[1]
    assert fit.throughput_ci[0] <= THROUGHPUT <= fit.throughput_ci[1]
    assert fit.throughput == pytest.approx(THROUGHPUT, rel=0.15)


def test_intervals_cover_the_truth_near_their_nominal_95_percent():
    # 400 simulated sweeps with the noise of a real run (per-process offsets the rounds
    # cannot see, round noise): the 95% intervals must cover the truth about 95% of the
    # time -- neither far less (overconfident) nor always (useless).
    rng = np.random.default_rng(2026)
    fixed_hits = throughput_hits = 0
    n = 400
    for _ in range(n):
        fit = fit_one(rng)
        assert fit.status == OK
        fixed_hits += fit.fixed_ci_s[0] <= FIXED_S <= fit.fixed_ci_s[1]
        throughput_hits += fit.throughput_ci[0] <= THROUGHPUT <= fit.throughput_ci[1]
    assert 0.88 <= fixed_hits / n <= 0.995
    assert 0.88 <= throughput_hits / n <= 0.995


def test_kernel_ratio_interval_covers_the_true_throughput_ratio():
    rng = np.random.default_rng(7)
    truth = 5e9 / 20e9                     # target 5 GB/s against reference 20 GB/s
    hits, n = 0, 300
    for _ in range(n):
        ref = fit_one(rng, fixed_s=2e-6, throughput=20e9)
        tgt = fit_one(rng, fixed_s=30e-6, throughput=5e9)
        ratio, (low, high) = kernel_ratio(ref, tgt)
        hits += low <= truth <= high
    assert 0.88 <= hits / n <= 0.995


def test_scatter_beyond_the_errors_widens_the_interval():
    works = [1e4, 1e5, 1e6, 1e7]
    times = [1e-5 + w / 1e9 for w in works]
    tight = fit_line(works, times, [t * 0.03 for t in times])
    bumped = fit_line(works, [t * f for t, f in zip(times, (1.0, 1.08, 0.95, 1.03))],
                      [t * 0.03 for t in times])
    width = lambda f: f.throughput_ci[1] - f.throughput_ci[0]   # noqa: E731
    assert bumped.chi2_per_dof > 1 and width(bumped) > 2 * width(tight)


def test_time_that_does_not_grow_with_work_is_overhead_bound_without_a_throughput():
    works = [1e3, 1e4, 1e5]
    fit = fit_line(works, [100e-6, 101e-6, 99e-6], [3e-6] * 3)
    assert fit.status == OVERHEAD_BOUND and fit.throughput is None
    assert "does not grow" in fit.reason


def test_time_falling_as_work_grows_is_a_poor_fit():
    fit = fit_line([1e3, 1e5, 1e7], [10e-6, 200e-6, 50e-6], [1e-6, 5e-6, 2e-6])
    assert fit.status == POOR and fit.throughput is None
    assert "falls" in fit.reason


def test_superlinear_growth_is_a_poor_fit_not_a_number():
    works = np.array([1e4, 1e5, 1e6])
    times = 1e-6 + (works / 1e5) ** 2 * 1e-4          # quadratic: a line cannot hold it
    fit = fit_line(works, times, times * 0.03)
    assert fit.status == POOR and fit.throughput is None


def test_fewer_than_three_sizes_refuse_to_fit():
    with pytest.raises(ValueError):
        fit_line([1.0, 2.0, 2.0], [1.0, 2.0, 2.0], [0.1] * 3)


def test_median_error_is_floored_at_the_between_process_spread():
    assert median_error_s(SideSummary(n=15, median_s=1e-3, mad_s=0.0)) == pytest.approx(3e-5)
    big = median_error_s(SideSummary(n=4, median_s=1e-3, mad_s=2e-4))
    assert big == pytest.approx(1.2533 * 1.4826 * 2e-4 / 2)


def test_sweeps_fits_each_case_from_the_record_and_gives_the_kernel_ratio():
    rec = sweep_record(np.random.default_rng(3), ref=(2e-6, 20e9), tgt=(30e-6, 5e9))
    [sweep] = sweeps(RunRecord.from_dict(rec))
    assert (sweep.case, sweep.key, sweep.variant, sweep.unit) == (
        "add", "serial", "dtype=float32", "bytes")
    assert [p.work for p in sweep.points] == sorted(p.work for p in sweep.points)
    assert sweep.kernel_ci[0] <= 0.25 <= sweep.kernel_ci[1]
    assert sweep.fits["mindspore"].fixed_ci_s[0] <= 30e-6 <= sweep.fits["mindspore"].fixed_ci_s[1]


def test_sweeps_keep_dtypes_apart_and_skip_cases_with_two_sizes():
    rng = np.random.default_rng(4)
    rec = sweep_record(rng, dtype="float32")
    rec["instances"] += sweep_record(rng, dtype="float16")["instances"]
    rec["instances"] += sweep_record(rng, case="two", elems=(10, 1000))["instances"]
    found = sorted((s.case, s.variant) for s in sweeps(RunRecord.from_dict(rec)))
    assert found == [("add", "dtype=float16"), ("add", "dtype=float32")]


def test_variant_keeps_non_size_parameters():
    assert variant_of({"shape": [4, 8], "dim": -1, "dtype": "float16"}) == "dim=-1,dtype=float16"
    assert variant_of({"tokens": 64}) == ""


def test_a_poor_fit_gives_no_kernel_ratio():
    rec = record([instance("flat", n, (summary([1e-5 * f] * 5), summary([1e-4] * 5)))
                  for n, f in ((100, 1.0), (10000, 3.0), (1000000, 1.5))])
    [sweep] = sweeps(RunRecord.from_dict(rec))
    assert sweep.fits["torch"].status == POOR
    assert sweep.kernel_ratio is None and sweep.kernel_ci is None


# -- work -----------------------------------------------------------------------------------

def case_instance(op, inputs, **keys) -> InstanceRecord:
    """An instance record of `op` on `inputs` [(shape, dtype)] with the other keys given."""
    return InstanceRecord.from_dict({
        "id": op, "case": op, "op": op, "file": "x.yaml", "apis": {}, "verdict": "PASS",
        "inputs": [{"name": f"i{n}", "shape": s, "dtype": d} for n, (s, d) in enumerate(inputs)],
        **keys})


def gemm(op, shapes, out):
    return case_instance(op, [(s, "float32") for s in shapes], output_shapes=out)


def test_gemm_work_is_two_flops_per_multiply_add():
    assert work_of(gemm("matmul", [[64, 768], [768, 768]], [64, 768])).amount == 2 * 64 * 768 * 768
    # linear's weight is out x in
    assert work_of(gemm("linear", [[1, 32, 768], [3072, 768], [3072]],
                        [1, 32, 3072])).amount == 2 * 32 * 3072 * 768
    # the bias of baddbmm / addmm is not a factor
    w = work_of(gemm("baddbmm", [[12, 128, 128], [12, 128, 64], [12, 64, 128]], [12, 128, 128]))
    assert (w.amount, w.unit) == (2 * 12 * 128 * 128 * 64, "flops")
    assert work_of(gemm("addmm", [[3072], [32, 768], [768, 3072]],
                        [32, 3072])).amount == 2 * 32 * 3072 * 768


def test_conv_work_counts_the_weight_per_output_channel():
    inst = gemm("conv2d", [[8, 64, 56, 56], [128, 64, 3, 3]], [8, 128, 54, 54])
    assert work_of(inst).amount == 2 * 8 * 128 * 54 * 54 * 64 * 9


def test_elementwise_work_is_bytes_read_and_written():
    inst = case_instance("add", [([16, 64], "float16")] * 2, output_shapes=[16, 64])
    w = work_of(inst)
    assert (w.amount, w.unit) == (3 * 16 * 64 * 2, "bytes")


def test_declared_work_wins_and_tuple_outputs_are_summed():
    inst = case_instance("softmax", [([4, 8], "float32")], output_shapes=[[4, 8], [4, 8]],
                         work={"unit": "flops", "per_output_element": 5})
    w = work_of(inst)
    assert (w.amount, w.unit, w.source) == (5 * 64, "flops", "declared")


def test_an_instance_without_outputs_has_no_work():
    assert work_of(case_instance("add", [([4], "float32")])) is None
