"""Does a traced call carry over to the other framework unchanged, given the mapping's note?

A mapping entry that "differs" often differs in a way a particular call does not touch: an
argument only torch has, never passed; argument names that differ, with every argument passed
by position. The note's clauses (written by tools/build_api_mapping.py, joined by "; ") say
which names are involved; any clause this module does not understand counts as a real
difference, so the case is emitted as a draft for a person to finish.
"""
from __future__ import annotations

import re
from typing import Iterable

from opbench.frameworks.apimap import MappingEntry

_RENAMED = re.compile(r"^argument names differ: torch \(([^)]*)\) vs MindSpore \(([^)]*)\)$")
_TORCH_ONLY = re.compile(r"^MindSpore lacks torch argument\(s\): (.+)$")
_MINDSPORE_ONLY = re.compile(r"^MindSpore also accepts: (.+)$")


def _names(text: str) -> set[str]:
    return {name.strip() for name in text.split(",") if name.strip()}


def call_fits(entry: MappingEntry, source: str, keywords: Iterable[str]) -> tuple[bool, str]:
    """(True, "") when a call of entry's `source` side ("torch" or "mindspore") passing these
    keyword arguments can be written the same way on the other side; else (False, why)."""
    if entry.status == "same":
        return True, ""
    if entry.status != "differs":
        return False, entry.note
    used = set(keywords)
    problems: list[str] = []
    for clause in (c.strip() for c in entry.note.split(";")):
        renamed, torch_only, ms_only = (_RENAMED.match(clause), _TORCH_ONLY.match(clause),
                                        _MINDSPORE_ONLY.match(clause))
        if renamed:
            own = _names(renamed.group(1) if source == "torch" else renamed.group(2))
            clash = sorted(own & used)
        elif torch_only:
            clash = sorted(_names(torch_only.group(1)) & used) if source == "torch" else []
        elif ms_only:
            clash = sorted(_names(ms_only.group(1)) & used) if source == "mindspore" else []
        else:
            problems.append(clause)
            continue
        if clash:
            problems.append(f"{clause} (this call passes {', '.join(clash)} by keyword)")
    return (not problems), "; ".join(problems)
