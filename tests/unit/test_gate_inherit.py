"""The gate measures the way its baseline was measured (inherit_settings), and a difference
in launch mode or passes is listed like any other configuration difference."""
from __future__ import annotations

from opbench.gate.baseline import environment_notes, inherit_settings
from opbench.verdicts.explain import explain_modes

UNSET = dict(mode=None, threshold=None, device="cpu", threads=None, reference="torch",
             target="mindspore", rounds=None, min_sample_time_s=None, max_time_s=None,
             no_backward=False, launch=None, passes=None)

BASELINE_CONFIG = {"reference": "torch", "target": "mindspore", "device": "cpu", "threads": 2,
                   "modes": ["serial"], "threshold": 0.8, "backward": True,
                   "launch": "blocking", "passes": 5,
                   "settings": {"rounds": 30, "min_sample_time_s": 0.01, "max_time_s": 2.0,
                                "warmup_time_s": 0.1}}


def test_unset_options_come_from_the_baseline_and_are_listed():
    done, inherited = inherit_settings(UNSET, BASELINE_CONFIG)
    assert (done["mode"], done["threads"], done["launch"], done["passes"]) == (
        "serial", 2, "blocking", 5)
    assert (done["rounds"], done["min_sample_time_s"], done["max_time_s"]) == (30, 0.01, 2.0)
    assert done["no_backward"] is False
    # a baseline written before worker processes was measured in one process
    assert inherited == ["--mode serial", "--threads 2", "--launch blocking", "--passes 5",
                         "--processes 1", "--rounds 30", "--min-sample-time 0.01", "--max-time 2.0"]


def test_options_given_on_the_command_line_win():
    given = dict(UNSET, mode="async", launch="queued", rounds=12)
    done, inherited = inherit_settings(given, BASELINE_CONFIG)
    assert (done["mode"], done["launch"], done["rounds"]) == ("async", "queued", 12)
    assert not any(item.startswith(("--mode", "--launch", "--rounds")) for item in inherited)


def test_both_modes_and_backward_off_are_inherited():
    config = dict(BASELINE_CONFIG, modes=["serial", "async"], backward=False)
    done, inherited = inherit_settings(UNSET, config)
    assert done["mode"] == "both"
    assert done["no_backward"] is True and "--no-backward" in inherited


def test_an_old_baseline_without_launch_or_passes_means_queued_and_one_pass():
    config = {k: v for k, v in BASELINE_CONFIG.items() if k not in ("launch", "passes")}
    done, _ = inherit_settings(UNSET, config)
    assert done["launch"] == "queued" and done["passes"] == 1


def _record(**config):
    return {"config": {**BASELINE_CONFIG, **config}, "environment": {"machine_id": "m"},
            "frameworks": {}}


def test_launch_and_passes_differences_are_listed():
    notes = environment_notes(_record(), _record(launch="queued", passes=1))
    messages = [n.message for n in notes if n.kind == "config"]
    assert "launch: 'blocking' in the baseline, 'queued' now" in messages
    assert "passes: 5 in the baseline, 1 now" in messages


def test_an_old_file_counts_as_queued_with_one_pass():
    old = _record()
    del old["config"]["launch"], old["config"]["passes"]
    assert not [n for n in environment_notes(old, _record(launch="queued", passes=1))
                if n.kind == "config"]


def test_the_serial_async_gap_note_points_at_blocking_launches_only_when_queued():
    medians = {"serial": {"mindspore": 8e-4}, "async": {"mindspore": 3e-5}}
    (queued,) = explain_modes(medians, "queued")
    (blocking,) = explain_modes(medians, "blocking")
    assert "--launch blocking" in queued
    assert "--launch blocking" not in blocking


def test_blocking_launches_are_never_suggested_for_torch_on_the_cpu():
    medians = {"serial": {"torch": 8e-4, "mindspore": 8e-4},
               "async": {"torch": 3e-5, "mindspore": 3e-5}}
    torch_note, ms_note = explain_modes(medians, "queued", "cpu")
    assert torch_note.startswith("torch:") and "--launch blocking" not in torch_note
    assert ms_note.startswith("mindspore:") and "--launch blocking" in ms_note
    # on a device CUDA_LAUNCH_BLOCKING does change torch's launches
    assert all("--launch blocking" in n for n in explain_modes(medians, "queued", "cuda:0"))
