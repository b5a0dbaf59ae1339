"""Per-worker isolation for pytest-xdist (opbench/placement.py): disjoint core sets with SMT
siblings kept together, one device per worker through the visible-devices variables (fake
devices: a fake /dev and fake environments), and refusals when workers would share."""
from __future__ import annotations

import pytest

from opbench.runner.placement import (
    PlacementError,
    partition_cores,
    physical_cores,
    plan,
    smt_siblings,
    visible_devices,
    worker_index,
)

# 4 physical cores with two SMT threads each, numbered as Linux does: cpu N and N+4 share.
SMT = {cpu: {cpu % 4, cpu % 4 + 4} for cpu in range(8)}


def test_two_workers_on_two_cores_get_one_core_and_one_thread_each():
    placements = plan(2, "cpu", {0, 1})
    assert [(p.worker, p.cpus, p.threads, p.device) for p in placements] == [
        ("gw0", (0,), 1, "cpu"), ("gw1", (1,), 1, "cpu")]
    assert all(p.env == {} for p in placements)


def test_smt_siblings_stay_with_one_worker_and_threads_count_physical_cores():
    assert physical_cores(range(8), SMT.get) == [(0, 4), (1, 5), (2, 6), (3, 7)]
    placements = plan(2, "cpu", range(8), SMT.get)
    assert [p.cpus for p in placements] == [(0, 4, 1, 5), (2, 6, 3, 7)]
    assert [p.threads for p in placements] == [2, 2]


def test_shares_are_equal_and_disjoint_and_leftover_cores_stay_unused():
    shares = partition_cores([(c,) for c in range(8)], 3)
    assert shares == [(0, 1), (2, 3), (4, 5)]
    assert len({c for s in shares for c in s}) == sum(map(len, shares))


def test_only_the_cpus_this_process_may_use_are_shared_out():
    # taskset -c 2,3 (or a container's cpuset): cpus 0 and 1 are someone else's
    assert [p.cpus for p in plan(2, "cpu", {2, 3}, SMT.get)] == [(2,), (3,)]


@pytest.mark.parametrize("workers, cpus, siblings", [(3, {0, 1}, None), (5, range(8), SMT.get),
                                                     (2, {0, 4}, SMT.get)])
def test_more_workers_than_cores_is_refused_with_the_reason(workers, cpus, siblings):
    with pytest.raises(PlacementError, match=rf"{workers} workers but \d CPU cores: workers "
                                             rf"would share cores.*Use -n \d or fewer"):
        plan(workers, "cpu", cpus, siblings or (lambda c: (c,)))


def test_each_cuda_worker_sees_one_device_as_its_device_0():
    placements = plan(4, "cuda", range(8), SMT.get, devices=["0", "1", "2", "3"])
    assert [p.env for p in placements] == [{"CUDA_VISIBLE_DEVICES": d} for d in "0123"]
    assert {p.device for p in placements} == {"cuda:0"}
    assert [p.visible_device for p in placements] == ["0", "1", "2", "3"]
    # 4 cores for 4 workers: each also gets a core for its host-side dispatch
    assert [p.cpus for p in placements] == [(0, 4), (1, 5), (2, 6), (3, 7)]
    assert placements[2].as_record() == {"id": "gw2", "cpus": [2, 6], "device": "cuda:0",
                                         "visible_device": "2"}


def test_ascend_workers_use_the_ascend_runtime_variable_and_may_share_host_cores():
    devices = [str(i) for i in range(8)]
    placements = plan(8, "ascend", {0, 1}, devices=devices)
    assert [p.env for p in placements] == [{"ASCEND_RT_VISIBLE_DEVICES": d} for d in devices]
    # 8 devices, 2 cores: the devices isolate the kernels; the cores are not pinned
    assert {p.cpus for p in placements} == {None} and {p.threads for p in placements} == {None}


def test_more_workers_than_devices_or_one_named_device_is_refused():
    with pytest.raises(PlacementError, match=r"3 workers but 2 cuda device\(s\) \(0, 1 "
                                             r"visible\): workers would share a device"):
        plan(3, "cuda", range(8), devices=["0", "1"])
    with pytest.raises(PlacementError, match="--device cuda:1 names one device"):
        plan(2, "cuda:1", range(8), devices=["0", "1"])
    with pytest.raises(PlacementError, match="only cpu, cuda and ascend"):
        plan(2, "mps", range(8))


def test_visible_devices_come_from_the_variable_else_the_driver_nodes(tmp_path):
    assert visible_devices("cuda", {"CUDA_VISIBLE_DEVICES": "2, 3"}, tmp_path) == ["2", "3"]
    assert visible_devices("cuda", {"CUDA_VISIBLE_DEVICES": ""}, tmp_path) == []
    for name in ("nvidia1", "nvidia0", "nvidia10", "nvidiactl", "nvidia-uvm", "davinci0",
                 "davinci1", "davinci_manager"):
        (tmp_path / name).touch()
    assert visible_devices("cuda", {}, tmp_path) == ["0", "1", "10"]
    assert visible_devices("ascend", {}, tmp_path) == ["0", "1"]
    assert visible_devices("ascend", {"ASCEND_RT_VISIBLE_DEVICES": "4,5"}, tmp_path) == \
        ["4", "5"]
    assert visible_devices("cpu", {}, tmp_path) == []


def test_smt_siblings_are_read_from_sysfs(tmp_path):
    for cpu, text in ((0, "0,4\n"), (1, "1-2\n")):
        topology = tmp_path / f"cpu{cpu}" / "topology"
        topology.mkdir(parents=True)
        (topology / "thread_siblings_list").write_text(text)
    assert smt_siblings(0, tmp_path) == {0, 4}
    assert smt_siblings(1, tmp_path) == {1, 2}
    assert smt_siblings(7, tmp_path) == {7}          # no sysfs entry: alone


def test_worker_ids():
    assert worker_index("gw0") == 0 and worker_index("gw12") == 12
    with pytest.raises(PlacementError, match="not a pytest-xdist worker id"):
        worker_index("master")


def test_the_xdist_scheduler_scopes_a_case_item_by_its_case():
    from opbench.pytest_plugin.case_scheduling import case_scope

    assert case_scope("cases/x.yaml::add.bias[hidden=64,dtype=float32]") == \
        "cases/x.yaml::add.bias"
    assert case_scope("cases/x.yaml::add.bias[hidden=4096,dtype=float32]") == \
        "cases/x.yaml::add.bias"
    assert case_scope("cases/x.yml::neg") == "cases/x.yml::neg"
    assert case_scope("cases/y.yaml::add[n=4]") != case_scope("cases/x.yaml::add[n=4]")
    assert case_scope("tests/test_a.py::test_b[1]") is None      # not a case: loadscope's
