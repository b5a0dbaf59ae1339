"""What is wrong with a case file, in words: the error a user sees (CaseError: file:line,
case and key, every problem of a file at once), and the pieces every check words its
findings with (where a key is, a close match for a misspelt word, a short repr).

Shared by reading and checking (case_validation.py) and sweep expansion
(case_expansion.py). Imports nothing of opbench at run time.
"""
from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

if TYPE_CHECKING:
    from opbench.cases.case_model import Case, DocPath

__all__ = ["CaseContext", "CaseError", "case_error", "raise_if_any", "raise_sorted",
           "render_key", "short", "suggestion"]


class CaseError(Exception):
    """A case-file problem. str(err) is the full user-facing message:
    '<file>:<line> case '<name>': <what is wrong with which key>'.

    When several problems are reported together, str(err) has one per line and `errors`
    holds them one by one (the attributes of `err` itself are those of the first)."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 case: str | None = None, key: str | None = None,
                 errors: Sequence[CaseError] = ()):
        super().__init__(message)
        self.file, self.line, self.case, self.key = file, line, case, key
        self.errors: tuple[CaseError, ...] = tuple(errors) or (self,)


def render_key(path: DocPath) -> str:
    """('inputs', 'x', 'shape', 1) -> 'inputs.x.shape[1]'"""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def case_error(file: str, line: int | None, case: str | None, key: str | None,
               text: str) -> CaseError:
    """case: the case name, or '#N' for a case without a usable name, or None."""
    where = f"{file}:{line}" if line else file
    if case is None:
        label = ""
    elif case.startswith("#"):
        label = f" case {case}"
    else:
        label = f" case '{case}'"
    return CaseError(f"{where}{label}: {text}", file=file, line=line, case=case, key=key)


def raise_if_any(errors: Sequence[CaseError]) -> None:
    """Raise the problems found (repeats once), as one CaseError; nothing when none."""
    if not errors:
        return
    unique: dict[str, CaseError] = {}
    for err in errors:
        for single in err.errors:
            unique.setdefault(str(single), single)
    flat = list(unique.values())
    if len(flat) == 1:
        raise flat[0]
    first = flat[0]
    raise CaseError("\n".join(unique), file=first.file, line=first.line, case=first.case,
                    key=first.key, errors=flat)


def suggestion(word: str, choices: Iterable[str], prefix: str = "") -> str:
    """` (did you mean 'x'?)` for the closest of choices, or nothing."""
    match = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean '{prefix}{match[0]}'?)" if match else ""


def short(value: Any, limit: int = 60) -> str:
    """A value's repr, cut to `limit` characters for a message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class CaseContext:
    """Where in which file a case lives, to turn a path inside the case into a message."""

    def __init__(self, file: str, case: str | None, lines: Mapping[DocPath, int],
                 default_line: int):
        self.file, self.case, self.lines, self.default_line = file, case, lines, default_line

    @classmethod
    def of(cls, case: Case) -> CaseContext:
        return cls(case.file, case.name, case.lines, case.line)

    def line(self, path: DocPath) -> int:
        """The line of `path`, else of its nearest ancestor that has one."""
        for end in range(len(path), -1, -1):
            if path[:end] in self.lines:
                return self.lines[path[:end]]
        return self.default_line

    def error(self, path: DocPath, text: str, *, keyed: bool = True,
              line: int | None = None) -> CaseError:
        key = render_key(path) if path else None
        body = f"key '{key}': {text}" if keyed and key else text
        return case_error(self.file, line or self.line(path), self.case, key, body)


def raise_sorted(errors: list[CaseError]) -> None:
    """Raise the problems of one file in line order."""
    raise_if_any(sorted(errors, key=lambda e: e.line or 0))
