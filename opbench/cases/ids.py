"""Short instance ids for tables: `reshape[1x128x768,float16]` for
`reshape[shape=1x128x768,dtype=float16]`.

The full id names every parameter, which is what the JSON, -k and the gate match on; in a
table it makes the first column 40-60 characters wide and folds every row at 100 columns.
The values alone still tell the rows apart (their order is the case's param order, the same
in every row of a case), so tables show them and the JSON keeps the full id. When two ids
would shorten to the same text (two params swapped values, say), both keep their full form.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable


def short_id(instance_id: str) -> str:
    """`name[k1=v1,k2=v2]` -> `name[v1,v2]`; anything else unchanged."""
    name, bracket, rest = instance_id.partition("[")
    if not bracket or not rest.endswith("]"):
        return instance_id
    parts = _split_top_level(rest[:-1])
    values = []
    for part in parts:
        key, equals, value = part.partition("=")
        if not equals or not key.isidentifier():
            return instance_id
        values.append(value)
    return f"{name}[{','.join(values)}]"


def short_ids(instance_ids: Iterable[str]) -> dict[str, str]:
    """Full id -> the text a table shows: the short id, unless another id of the same table
    shortens to the same text."""
    ids = list(dict.fromkeys(instance_ids))
    shortened = {i: short_id(i) for i in ids}
    taken = Counter(shortened.values())
    return {i: (s if taken[s] == 1 else i) for i, s in shortened.items()}


def _split_top_level(text: str) -> list[str]:
    """Split at commas outside brackets and braces (values may hold `[2]x[3]` or `{a=1}`)."""
    parts, depth, start = [], 0, 0
    for position, char in enumerate(text):
        if char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:position])
            start = position + 1
    parts.append(text[start:])
    return parts
