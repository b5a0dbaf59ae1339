"""Which case instances a command runs: `-k EXPR`, `--op OP`, `--tag TAG`, the same in every
`opbench` command and with the same meaning as in `pytest cases/`.

`-k` takes pytest's expression language (`add and float32`, `softmax or layer_norm`,
`not (float16 or bfloat16)`): every word is a case-insensitive substring of one of the
instance's names, exactly as pytest's `-k` matches an item. The names are the ones pytest
gives a case item: the instance id, the case file's name, the operator and the tags. The
parser is pytest's own (`_pytest.mark.expression.Expression`, unchanged in its interface
since pytest 6: `compile(text)` and `evaluate(matcher)`), so both front doors accept and
reject the same expressions. A word is a substring, as in pytest: `-k "add["` also selects
`scatter_add[...]`; `--op add` selects one operator exactly.

Pure: no click, no printing. opbench/cli_selection.py holds the command-line options.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Callable, Iterable, Sequence

# pytest's -k has no `=`; an instance id does (`reshape[shape=8x16]`). The hint names the
# way that works in both front doors.
_EQUALS_HINT = ("`=` is not part of pytest's -k language: select `shape=8x16` with "
                "-k 8x16 (or -k \"shape and 8x16\")")


class SelectionError(ValueError):
    """A -k expression that does not parse; the message is fit for a user."""


def compile_keyword(expression: str | None) -> Callable[[Iterable[str]], bool] | None:
    """A predicate over an instance's names for a -k expression (None: no -k filter).
    Raises SelectionError for an expression pytest would refuse too."""
    if expression is None or not expression.strip():
        return None
    from _pytest.mark.expression import Expression

    text = expression.strip()
    try:
        compiled = Expression.compile(text)
    except Exception as exc:  # noqa: BLE001 - SyntaxError in pytest 8+, ParseError before
        if _is_one_word(text):
            # `-k shape=8x16`: one word that pytest cannot parse only for its `=`, kept as a
            # plain substring (what -k meant before it took expressions).
            return lambda names: any(text.lower() in name.lower() for name in names)
        hint = f"; {_EQUALS_HINT}" if "=" in text else ""
        raise SelectionError(f"-k {expression!r} is not a valid expression: {exc}{hint}") \
            from None

    def matches(names: Iterable[str]) -> bool:
        lowered = [name.lower() for name in names]

        def word_matches(word: str, /, **kwargs: Any) -> bool:
            return any(word.lower() in name for name in lowered)

        return bool(compiled.evaluate(word_matches))

    return matches


def _is_one_word(text: str) -> bool:
    return not any(c.isspace() or c in "()" for c in text)


def instance_names(instance_id: str, op: str | None, tags: Iterable[str] = (),
                   file: str | None = None) -> tuple[str, ...]:
    """The names -k looks in: those pytest gives the case item (its name, its file's name,
    the operator and the tags as keywords and markers)."""
    names = [instance_id]
    if op:
        names.append(op)
    names.extend(tags)
    if file:
        names.append(PurePath(file).name)
    return tuple(names)


@dataclass(frozen=True)
class Selection:
    """-k, --op and --tag together; every one given must hold (None or empty: no filter)."""

    keyword: str | None = None
    ops: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # fails at construction, before anything is loaded or measured
        object.__setattr__(self, "_keyword_matches", compile_keyword(self.keyword))

    def matches(self, instance_id: str, op: str | None, tags: Iterable[str] = (),
                file: str | None = None) -> bool:
        tags = tuple(tags)
        if self.ops and op not in self.ops:
            return False
        if self.tags and not set(self.tags).intersection(tags):
            return False
        keyword_matches = self._keyword_matches  # type: ignore[attr-defined]
        return keyword_matches is None or keyword_matches(
            instance_names(instance_id, op, tags, file))

    def instances(self, instances: Iterable[Any]) -> list[Any]:
        """CaseInstances that match, in their order."""
        return [inst for inst in instances
                if self.matches(inst.id, inst.op, inst.case.tags, inst.case.file)]

    def describe(self) -> str:
        what = []
        if self.ops:
            what.append(f"op {', '.join(self.ops)}")
        if self.keyword:
            what.append(f"-k {self.keyword!r}")
        if self.tags:
            what.append(f"tag {', '.join(self.tags)}")
        return " and ".join(what)


def as_tuple(values: Sequence[str] | str | None) -> tuple[str, ...]:
    if values is None:
        return ()
    if isinstance(values, str):
        return (values,)
    return tuple(values)
