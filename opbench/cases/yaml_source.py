"""Reading one case file's YAML: data, the line of every key and list item, and the
problems a plain `yaml.safe_load` would hide or choke on, in one pass over the parser's
events.

Why events and not `yaml.safe_load` plus a walk of the composed node tree (what cases.py
did before): a case file arrives in a pull request, so it is hostile input.
- An alias bomb (`a: &a [x, x]`, `b: &b [*a, *a]`, ... nested 30 deep) is a few lines of
  text but billions of values once expanded; walking or validating the expanded tree took
  13-15 GB and minutes. Here every anchored value knows its size, and the expansion that
  aliases add is bounded before anything is expanded.
- Deep nesting (`[[[[...]]]]`, 20,000 levels) makes PyYAML's recursive composer raise
  RecursionError and libyaml's composer (the C loader) crash the process with a segfault
  (measured at 200,000 levels). libyaml's event parser is not recursive; depth is counted
  here and refused long before any recursion could matter.
- Speed: libyaml's events (`yaml.CSafeLoader`'s parser) are ~20x faster than PyYAML's pure-Python
  loader, and the file is parsed once (a 50,000-case, 10 MB file: 5 s of events against
  two 107 s pure-Python loads).

Semantics follow `yaml.safe_load` (the SafeConstructor builds every scalar), plus the case
format's YAML 1.2 exponent floats (`1e-5` is a number) and merge keys (`<<: *defaults`).
Duplicate keys are reported, not silently overwritten.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

__all__ = ["YamlDocument", "YamlLimitError", "read_yaml", "MAX_DEPTH",
           "ALIAS_EXPANSION_FLOOR", "ALIAS_EXPANSION_FACTOR", "RECURSIVE_ALIAS"]

DocPath = tuple

# A case is a mapping of inputs, calls and args nested a handful of levels (the deepest in
# the shipped library is 7: cases > case > params > shape > values > value > item). 64
# leaves room for nested argument lists and stays far below any recursion limit of the
# code that reads the data afterwards (jsonschema, deepcopy, the expander).
MAX_DEPTH = 64
# Aliases may add at most this many values beyond the file's own (merge keys and shared
# argument lists add a few per case; an alias bomb adds billions)...
ALIAS_EXPANSION_FLOOR = 100_000
# ...or this many times the number of values written in the file, whichever is larger.
ALIAS_EXPANSION_FACTOR = 10
RECURSIVE_ALIAS = "recursive YAML alias (a value that contains itself)"

_MERGE_TAG = "tag:yaml.org,2002:merge"
_MAP_TAGS = (None, "!", "tag:yaml.org,2002:map")
_SEQ_TAGS = (None, "!", "tag:yaml.org,2002:seq")
_MARK_NONE = yaml.Mark("<case file>", 0, 0, 0, None, None)


class YamlLimitError(Exception):
    """The document is valid YAML but beyond what a case file may be (too deep, aliases
    expanding too far, more than one document). `line` is 1-based."""

    def __init__(self, message: str, line: int):
        super().__init__(message)
        self.line = line


class _CaseResolver(yaml.resolver.Resolver):
    """YAML 1.2 exponent floats: YAML 1.1 (PyYAML) reads `1e-5` and `1.0e5` as strings,
    which would silently turn a tolerance or an argument into text."""


_CaseResolver.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"))


class _ScalarBuilder(yaml.constructor.SafeConstructor, _CaseResolver):
    """Builds one scalar the way yaml.safe_load would (resolution, then construction)."""

    def __init__(self) -> None:
        yaml.constructor.SafeConstructor.__init__(self)
        _CaseResolver.__init__(self)

    def build(self, event: yaml.ScalarEvent) -> tuple[str, Any]:
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.resolve(yaml.ScalarNode, event.value, event.implicit)
        node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
        if tag == _MERGE_TAG:
            return tag, None
        constructor = self.yaml_constructors.get(tag)
        if constructor is None:
            raise yaml.constructor.ConstructorError(
                None, None, f"could not determine a constructor for the tag {tag!r}",
                event.start_mark)
        return tag, constructor(self, node)


# libyaml's loader when PyYAML was built with it (only its parser is used: the events).
_EVENT_SOURCE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _events(text: str):
    """The document's parse events."""
    parser = _EVENT_SOURCE(text)
    try:
        while parser.check_event():
            yield parser.get_event()
    finally:
        parser.dispose()


@dataclass
class _Collection:
    """An open mapping or sequence while its events arrive."""

    path: DocPath
    line: int
    anchor: str | None
    is_map: bool
    size: int = 1                               # values inside it, aliases expanded
    items: list = field(default_factory=list)   # sequence items
    pairs: list = field(default_factory=list)   # mapping: (key, value) written here
    merges: list = field(default_factory=list)  # mapping: the mappings `<<` merges in
    key: Any = None
    key_line: int = 0
    has_key: bool = False
    key_is_merge: bool = False
    key_is_duplicate: bool = False
    first_line: dict = field(default_factory=dict)


@dataclass
class YamlDocument:
    data: Any
    lines: dict[DocPath, int]                     # path -> 1-based line
    problems: list[tuple[DocPath, int, str]]      # (path, line, message) found while reading


def read_yaml(text: str) -> YamlDocument:
    """Parse one YAML document. Raises yaml.YAMLError for invalid YAML (with marks) and
    YamlLimitError for YAML beyond a case file's limits."""
    return _Reader().read(text)


class _Reader:
    def __init__(self) -> None:
        self.builder = _ScalarBuilder()
        self.lines: dict[DocPath, int] = {}
        self.problems: list[tuple[DocPath, int, str]] = []
        self.anchors: dict[str, tuple[Any, int]] = {}   # anchor -> (value, size)
        self.open_anchors: set[str] = set()
        self.stack: list[_Collection] = []
        self.written = 0       # values written in the file
        self.expanded = 0      # values that aliases add
        self.root: Any = None
        self.documents = 0

    def read(self, text: str) -> YamlDocument:
        for event in _events(text):
            line = event.start_mark.line + 1
            if isinstance(event, yaml.DocumentStartEvent):
                self.documents += 1
                if self.documents > 1:
                    raise YamlLimitError("expected a single document in the stream, found "
                                         "another one", line)
            elif isinstance(event, yaml.ScalarEvent):
                self.written += 1
                tag, value = self.builder.build(event)
                self._anchor(event.anchor, value, 1, line)
                self._deliver(value, 1, line, merge=tag == _MERGE_TAG)
            elif isinstance(event, yaml.AliasEvent):
                self._alias(event.anchor, line, event.start_mark)
            elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                self._open(event, line)
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                self._close()
        return YamlDocument(self.root, self.lines, self.problems)

    # -- collections ------------------------------------------------------------------------
    def _open(self, event, line: int) -> None:
        is_map = isinstance(event, yaml.MappingStartEvent)
        if event.tag not in (_MAP_TAGS if is_map else _SEQ_TAGS):
            raise yaml.constructor.ConstructorError(
                None, None, f"could not determine a constructor for the tag {event.tag!r}",
                event.start_mark)
        if len(self.stack) >= MAX_DEPTH:
            raise YamlLimitError(f"nested more than {MAX_DEPTH} levels deep", line)
        self.written += 1
        path = self._child_path(line)
        self.stack.append(_Collection(path, line, event.anchor, is_map))
        if event.anchor:
            self.open_anchors.add(event.anchor)

    def _child_path(self, line: int) -> DocPath:
        """The path of the value about to be delivered to the innermost collection (and the
        line of a sequence item)."""
        if not self.stack:
            self.lines[()] = line
            return ()
        parent = self.stack[-1]
        if parent.is_map:
            if not parent.has_key:
                return parent.path + ("<key>",)   # a collection as a key: refused at delivery
            return parent.path + (parent.key,) if not parent.key_is_merge else parent.path
        index = len(parent.items)
        self.lines[parent.path + (index,)] = line
        return parent.path + (index,)

    def _close(self) -> None:
        done = self.stack.pop()
        if done.is_map:
            value: Any = {}
            for source in reversed(done.merges):
                value.update(source)
            for key, item in done.pairs:
                value[key] = item
        else:
            value = done.items
        if done.anchor:
            self.open_anchors.discard(done.anchor)
        self._anchor(done.anchor, value, done.size, done.line)
        self._deliver(value, done.size, done.line, opened=True)

    # -- values -----------------------------------------------------------------------------
    def _anchor(self, anchor: str | None, value: Any, size: int, line: int) -> None:
        if anchor:
            self.anchors[anchor] = (value, size)

    def _alias(self, anchor: str, line: int, mark) -> None:
        if anchor in self.open_anchors:
            self.problems.append((self._path_for_problem(), line, RECURSIVE_ALIAS))
            self._deliver(None, 1, line)
            return
        if anchor not in self.anchors:
            raise yaml.composer.ComposerError(None, None, f"found undefined alias {anchor!r}",
                                              mark)
        value, size = self.anchors[anchor]
        self.expanded += size
        limit = max(ALIAS_EXPANSION_FLOOR, ALIAS_EXPANSION_FACTOR * self.written)
        if self.expanded > limit:
            raise YamlLimitError(
                f"YAML aliases expand to more than {limit:,} values (the file writes "
                f"{self.written:,}); refusing what looks like an alias bomb (at alias "
                f"'*{anchor}')", line)
        self._deliver(value, size, line, merge=False)

    def _path_for_problem(self) -> DocPath:
        if not self.stack:
            return ()
        parent = self.stack[-1]
        if parent.is_map and parent.has_key and not parent.key_is_merge:
            return parent.path + (parent.key,)
        return parent.path

    def _deliver(self, value: Any, size: int, line: int, merge: bool = False,
                 opened: bool = False) -> None:
        """Hand a finished value to the innermost open collection (or make it the root)."""
        if not self.stack:
            self.root = value
            return
        parent = self.stack[-1]
        parent.size += size
        if parent.is_map:
            if not parent.has_key:
                self._take_key(parent, value, line, merge)
            else:
                self._take_value(parent, value, line)
        else:
            if not opened and (parent.path + (len(parent.items),)) not in self.lines:
                self.lines[parent.path + (len(parent.items),)] = line
            parent.items.append(value)

    def _take_key(self, parent: _Collection, key: Any, line: int, merge: bool) -> None:
        if isinstance(key, (list, dict)):
            raise YamlLimitError("a mapping key must be a plain value, not a list or mapping",
                                 line)
        parent.key, parent.key_line, parent.has_key, parent.key_is_merge = key, line, True, merge
        parent.key_is_duplicate = not merge and key in parent.first_line
        if not merge and not parent.key_is_duplicate:
            parent.first_line[key] = line
            self.lines[parent.path + (key,)] = line

    def _take_value(self, parent: _Collection, value: Any, line: int) -> None:
        key, key_line = parent.key, parent.key_line
        parent.has_key = False
        if parent.key_is_merge:
            sources = value if isinstance(value, list) else [value]
            if not all(isinstance(s, dict) for s in sources):
                raise YamlLimitError("a merge key '<<' needs a mapping or a list of mappings",
                                     key_line)
            parent.merges.extend(sources)
            return
        if parent.key_is_duplicate:
            self.problems.append((parent.path + (key,), key_line, f"duplicate key '{key}' "
                                  f"(first at line {parent.first_line[key]})"))
            return
        parent.pairs.append((key, value))
