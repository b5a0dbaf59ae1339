"""The gate measures the way its baseline was measured (inherit_settings), and a difference
in launch mode or passes is listed like any other configuration difference."""
from __future__ import annotations

from dataclasses import replace

from opbench.config.options import OPTIONS, OptionSpec, RunOptions
from opbench.gate.baseline import environment_notes
from opbench.gate.baseline import inherit_settings as inherit_from_record
from opbench.results.records import RecordedConfig, RunRecord
from opbench.verdicts.explain import explain_modes

UNSET = dict(mode=None, threshold=None, device="cpu", threads=None, reference="torch",
             target="mindspore", rounds=None, min_sample_time_s=None, max_time_s=None,
             no_backward=False, launch=None, passes=None)

BASELINE_CONFIG = {"reference": "torch", "target": "mindspore", "device": "cpu", "threads": 2,
                   "modes": ["serial"], "threshold": 0.8, "backward": True,
                   "launch": "blocking", "passes": 5,
                   "settings": {"rounds": 30, "min_sample_time_s": 0.01, "max_time_s": 2.0,
                                "warmup_time_s": 0.1}}


def inherit_settings(options: dict, baseline_config: dict, *table):
    """inherit_settings with the baseline's config as its results file holds it."""
    return inherit_from_record(options, RecordedConfig.from_dict(baseline_config), *table)


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


def _record(**config) -> dict:
    return {"schema_version": 1, "created_utc": "2026-01-01T00:00:00+00:00",
            "complete": True, "config": {**BASELINE_CONFIG, **config},
            "environment": {"opbench": "0.1.0", "python": "3.11", "numpy": "1.26",
                            "cpu_model": "cpu", "machine_id": "m"},
            "frameworks": {}, "instances": []}


def notes_between(baseline: dict, current: dict):
    return environment_notes(RunRecord.from_dict(baseline), RunRecord.from_dict(current))


def test_launch_and_passes_differences_are_listed():
    notes = notes_between(_record(), _record(launch="queued", passes=1))
    messages = [n.message for n in notes if n.kind == "config"]
    assert "launch: 'blocking' in the baseline, 'queued' now" in messages
    assert "passes: 5 in the baseline, 1 now" in messages


def test_an_old_file_counts_as_queued_with_one_pass():
    old = _record()
    del old["config"]["launch"], old["config"]["passes"]
    assert not [n for n in notes_between(old, _record(launch="queued", passes=1))
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


def test_a_side_named_by_its_label_gets_its_frameworks_launch_hint():
    # two MindSpore builds: the sides are `mindspore@ms29` and `mindspore`; the labelled one
    # lost the hint when the lookup went by name (seen on the 2.9.0 against 2.10.0 run)
    medians = {"serial": {"mindspore@ms29": 8e-4, "mindspore": 8e-4},
               "async": {"mindspore@ms29": 3e-5, "mindspore": 3e-5}}
    frameworks = {"mindspore@ms29": "mindspore", "mindspore": "mindspore"}
    notes = explain_modes(medians, "queued", "cpu", frameworks.__getitem__)
    assert len(notes) == 2 and all("--launch blocking" in n for n in notes)
    assert notes[0].startswith("mindspore@ms29:")


# -- the inheritance is derived from the options table ------------------------------------

def test_a_new_row_in_the_options_table_is_inherited_without_touching_the_gate():
    warmup = OptionSpec("warmup_time_s", "warmup-time", float,
                        "Warm-up per measurement, seconds.", recorded_as="settings.warmup_time_s")
    table = (*OPTIONS, warmup)
    done, inherited = inherit_settings(UNSET, BASELINE_CONFIG, table)
    assert done["warmup_time_s"] == 0.1 and inherited[-1] == "--warmup-time 0.1"
    done, inherited = inherit_settings(dict(UNSET, warmup_time_s=0.5), BASELINE_CONFIG, table)
    assert done["warmup_time_s"] == 0.5 and "--warmup-time 0.1" not in inherited
    # a row the gate must not follow says so, and is not
    done, inherited = inherit_settings(UNSET, BASELINE_CONFIG, (replace(warmup, inherited=False),))
    assert "warmup_time_s" not in done and inherited == []


def test_every_row_reads_back_from_a_record_what_the_option_asked_for():
    given = RunOptions(mode="both", threads=3, launch="queued", passes=2, processes=2,
                       no_quiesce=True, rounds=9, min_sample_time_s=0.02, max_time_s=2.0,
                       no_backward=True, threshold=0.7, device="cpu", reference="torch",
                       target="mindspore")
    recorded = given.to_config().as_dict()
    for spec in OPTIONS:
        assert spec.recorded_value(recorded) == getattr(given, spec.field), spec.field


def test_a_baseline_measured_without_quiescing_is_followed_like_any_row():
    done, inherited = inherit_settings(UNSET, dict(BASELINE_CONFIG, quiesce=False))
    assert done["no_quiesce"] is True and "--no-quiesce" in inherited
    done, inherited = inherit_settings(UNSET, dict(BASELINE_CONFIG, quiesce=True))
    assert not done.get("no_quiesce") and "--no-quiesce" not in inherited


def test_threshold_device_and_frameworks_are_not_taken_from_the_baseline():
    config = dict(BASELINE_CONFIG, threshold=0.5, device="cuda:0", reference="numpy")
    unset = dict(UNSET, threshold=None, device=None, reference=None, target=None)
    done, inherited = inherit_settings(unset, config)
    assert (done["threshold"], done["device"], done["reference"]) == (None, None, None)
    assert not any(item.startswith(("--threshold", "--device", "--reference", "--target"))
                   for item in inherited)
