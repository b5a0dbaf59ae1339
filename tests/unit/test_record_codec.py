"""config/record_codec.py: a mapping read as a frozen dataclass by its fields, once, at the
boundary (issue 33: records read as typed fields, not string keys)."""
from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from opbench.config.record_codec import decoded, record_from


@dataclass(frozen=True)
class Probe:
    python: str
    frameworks: tuple[str, ...] = field(default=(), metadata=decoded(tuple))
    missing: tuple[str, ...] = field(default=("none",), metadata=decoded(tuple, True))
    note: str | None = "unset"


def test_keys_become_fields_and_absent_keys_take_the_defaults():
    probe = record_from(Probe, {"python": "3.11.7", "frameworks": ["torch", "mindspore"]})
    assert probe == Probe("3.11.7", ("torch", "mindspore"), ("none",), "unset")


def test_a_missing_required_key_is_a_key_error_naming_it():
    with pytest.raises(KeyError, match="Probe: missing 'python'"):
        record_from(Probe, {"frameworks": []})


def test_null_reads_as_the_default_only_where_the_field_says_so():
    probe = record_from(Probe, {"python": "3.10", "missing": None, "note": None})
    assert probe.missing == ("none",)       # null_is_default
    assert probe.note is None                # a null kept as it was written


def test_keys_the_record_does_not_declare_are_ignored():
    assert record_from(Probe, {"python": "3.12", "newer_key": 1}) == Probe("3.12")
