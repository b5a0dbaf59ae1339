"""The settings a gate measures with (gate/settings.py): a frozen record checked against the
options table when it is made, so a typo in a setting is an error instead of a keyword that
RunOptions silently dropped."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from opbench.config.options import RunOptions
from opbench.gate.settings import GATE_RUN_SETTINGS, GateRunSettings, GateSettingError


def test_an_unknown_gate_setting_is_an_error_naming_it_and_where_it_is_defined():
    @dataclass(frozen=True)
    class Typo(GateRunSettings):
        max_time: float = 6.0      # the option's field is max_time_s

    with pytest.raises(GateSettingError) as err:
        Typo()
    message = str(err.value)
    assert "gate setting 'max_time' is not a run option" in message
    assert f"{__name__}." in message and "Typo" in message      # where it was defined
    assert "max_time_s" in message                               # what there is instead


@pytest.mark.parametrize("given, message", [
    ({"threads": 0}, "gate setting threads = 0 (option --threads): --threads must be a "
                     "positive integer"),
    ({"max_time_s": -1.0}, "(option --max-time): --max-time must be a positive finite"),
    ({"launch": "fast"}, "(option --launch): launch must be one of"),
])
def test_a_value_the_option_refuses_is_an_error_naming_setting_and_option(given, message):
    with pytest.raises(GateSettingError) as err:
        GateRunSettings(**given)
    assert message in str(err.value)
    assert "opbench.gate.settings.GateRunSettings" in str(err.value)


def test_the_gate_settings_fill_only_what_the_user_left_unset():
    done = GATE_RUN_SETTINGS.fill({"rounds": 12, "threads": None, "device": "cpu"})
    assert (done["rounds"], done["threads"], done["device"]) == (12, 1, "cpu")
    config = RunOptions.from_mapping(done).to_config()
    assert (config.launch, config.processes, config.passes) == ("blocking", 4, 5)
    assert (config.settings.max_time_s, config.settings.min_sample_time_s) == (6.0, 0.01)
