"""Peak memory per call: the CPU's resident high-water mark (a fake /proc), the device
allocators' peaks (fake torch.cuda and mindspore.runtime), and the measure named."""
from types import SimpleNamespace

import opbench.runner.memory as memory_mod
from opbench.runner.memory import (
    MALLOC_HELD,
    MINDSPORE_DEVICE,
    RSS_HIGH_WATER,
    TORCH_CUDA,
    MallocProbe,
    RssProbe,
    output_bytes,
    peak_memory,
    probe_for,
)


def fake_proc(tmp_path, rss_kib):
    (tmp_path / "status").write_text(f"Name:\tpython\nVmHWM:\t{rss_kib} kB\nVmRSS:\t{rss_kib} kB\n")
    return tmp_path


def test_rss_probe_resets_the_high_water_mark_and_reads_the_growth(tmp_path):
    proc = fake_proc(tmp_path, 1000)

    def call():   # the op touches 512 KiB more at its peak, then frees half
        assert (proc / "clear_refs").read_text() == "5"
        (proc / "status").write_text("VmHWM:\t1512 kB\nVmRSS:\t1256 kB\n")

    assert RssProbe(proc).peak_bytes(call) == 512 * 1024


class FakeAllocator:
    def __init__(self):
        self.allocated, self.peak, self.resets = 4096, 99999, 0

    def reset(self):
        self.resets += 1
        self.peak = self.allocated

    def run(self):            # an op that allocates 1 MiB of workspace and frees it
        self.peak = max(self.peak, self.allocated + 2**20)


def test_device_probes_read_the_allocators_peak_after_a_reset():
    a = FakeAllocator()
    cuda = SimpleNamespace(reset_peak_memory_stats=a.reset, memory_allocated=lambda: a.allocated,
                           max_memory_allocated=lambda: a.peak)
    runtime = SimpleNamespace(reset_peak_memory_stats=a.reset,
                              memory_allocated=lambda: a.allocated,
                              max_memory_allocated=lambda: a.peak)
    modules = {"torch": SimpleNamespace(cuda=cuda), "mindspore.runtime": runtime}
    torch_probe = probe_for("torch", "cuda:0", modules.__getitem__)
    ms_probe = probe_for("mindspore", "ascend:0", modules.__getitem__)
    assert (torch_probe.measure, ms_probe.measure) == (TORCH_CUDA, MINDSPORE_DEVICE)
    assert torch_probe.peak_bytes(a.run) == 2**20
    assert ms_probe.peak_bytes(a.run) == 2**20 and a.resets == 2


def test_the_cpu_uses_the_malloc_measure_for_every_framework_where_glibc_has_it():
    measure = MALLOC_HELD if memory_mod._mallinfo2() is not None else RSS_HIGH_WATER
    assert probe_for("torch", "cpu").measure == measure
    assert probe_for("mindspore", "cpu").measure == measure


class _Tensor:
    def __init__(self, nbytes):
        self.nbytes = nbytes


def test_the_malloc_probe_counts_what_the_held_output_keeps():
    """torch: malloc sees the output (3 MiB for a 3 MiB add, measured)."""
    in_use = [10_000]

    def call():
        in_use[0] += 3 * 2**20
        return _Tensor(3 * 2**20)

    probe = MallocProbe(lambda: in_use[0])
    assert probe.peak_bytes(call) == 3 * 2**20
    assert probe.details == {"malloc_bytes": 3 * 2**20, "output_bytes": 3 * 2**20}


def test_a_pool_that_reused_its_reserve_reads_at_least_the_outputs_bytes():
    """MindSpore on the CPU: its pool serves the output from memory reserved at its first op,
    so malloc sees nothing; the output's own bytes still count."""
    probe = MallocProbe(lambda: 5_000)
    assert probe.peak_bytes(lambda: (_Tensor(2**20), [_Tensor(2**10), 7])) == 2**20 + 2**10
    assert probe.details["malloc_bytes"] == 0
    assert output_bytes(None) == 0 and output_bytes(_Tensor("x")) == 0


def test_the_real_malloc_probe_sees_a_held_numpy_array():
    import numpy as np
    import pytest

    in_use = memory_mod._mallinfo2()
    if in_use is None:
        pytest.skip("no glibc mallinfo2 here")
    assert MallocProbe(in_use).peak_bytes(lambda: np.ones(3 * 2**20 // 8)) >= 3 * 2**20


def test_peak_memory_names_the_measure_and_records_a_failing_probe():
    class Fixed:
        measure = "fake"

        def peak_bytes(self, call):
            call()
            return 123

    def probe(name, device):
        if name == "mindspore":
            raise OSError("no clear_refs")
        return Fixed()

    called = []
    found = peak_memory({"torch": lambda: called.append(1), "mindspore": lambda: None},
                        "cpu", probe)
    assert found["torch"] == {"bytes": 123, "measure": "fake"} and called == [1]
    assert found["mindspore"]["bytes"] is None and "no clear_refs" in found["mindspore"]["error"]


def test_the_real_rss_probe_sees_a_large_fresh_allocation():
    import numpy as np

    probe = RssProbe()
    grown = probe.peak_bytes(lambda: np.ones(64 * 2**20 // 8).sum())
    assert grown >= 32 * 2**20
