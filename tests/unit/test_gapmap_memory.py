"""Peak memory per call: the CPU's resident high-water mark (a fake /proc), the device
allocators' peaks (fake torch.cuda and mindspore.runtime), and the measure named."""
from types import SimpleNamespace

from opbench.runner.memory import (
    MINDSPORE_DEVICE,
    RSS_HIGH_WATER,
    TORCH_CUDA,
    RssProbe,
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


def test_the_cpu_uses_the_rss_measure_for_every_framework():
    assert probe_for("torch", "cpu").measure == RSS_HIGH_WATER
    assert probe_for("mindspore", "cpu").measure == RSS_HIGH_WATER


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
