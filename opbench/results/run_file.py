"""The results file of a run in progress, rewritten after every instance without redoing
the instances that did not change.

records.write_run_dict writes `RunRecord.from_dict(d).to_dict()` as indented JSON: what is
written is what RunRecord reads back. Done whole after every instance of every process,
that grew with the file: at the end of the shipped library (378 instances, 3.4 MB) one
save took 0.31 s (0.12 s for the typed round trip, 0.16 s for the indented dump, which
json does in Python, not C), and a sequential library run spent ~110 s of its 491 s wall
saving (2026-11-26). RunFileWriter gives byte for byte the same file: each instance is
fingerprinted with json's C encoder (compact, 0.04 s for the whole library), and only an
instance whose fingerprint changed goes through the typed round trip and the indented
dump again; the rest reuse their text.
"""
from __future__ import annotations

import os
from typing import Any, Mapping

from opbench.results.io import json_text, write_text_atomic
from opbench.results.records import InstanceRecord, RunRecord

__all__ = ["RunFileWriter"]

# The list item's indentation inside the file: the top-level object and the "instances"
# list each indent by 1 (io.json_text).
_ITEM_INDENT = "  "
_EMPTY_INSTANCES = '\n "instances": []'


class RunFileWriter:
    """write(path, data): the file records.write_run_dict would write for `data` (a run's
    record as dicts), remembering each instance's text between calls. One writer per run:
    instances are known by their position in data["instances"]."""

    def __init__(self) -> None:
        self._texts: list[tuple[str, str]] = []     # per position: (fingerprint, its text)

    def __call__(self, path: str | os.PathLike, data: Mapping[str, Any]) -> None:
        write_text_atomic(path, self.text(data))

    def text(self, data: Mapping[str, Any]) -> str:
        instances = data.get("instances") or []
        header = json_text(RunRecord.from_dict({**data, "instances": []}).to_dict())
        if not instances:
            return header
        items = [self._instance_text(i, inst) for i, inst in enumerate(instances)]
        del self._texts[len(instances):]
        listed = (_EMPTY_INSTANCES[:-1] + "\n" + _ITEM_INDENT
                  + (",\n" + _ITEM_INDENT).join(items) + "\n ]")
        where = header.index(_EMPTY_INSTANCES)
        return header[:where] + listed + header[where + len(_EMPTY_INSTANCES):]

    def _instance_text(self, position: int, instance: Mapping[str, Any]) -> str:
        fingerprint = json_text(instance, indent=None)
        if position < len(self._texts) and self._texts[position][0] == fingerprint:
            return self._texts[position][1]
        typed = InstanceRecord.from_dict(instance, f"instances/{position}").to_dict()
        text = json_text(typed).replace("\n", "\n" + _ITEM_INDENT)
        if position < len(self._texts):
            self._texts[position] = (fingerprint, text)
        else:
            self._texts.append((fingerprint, text))
        return text
