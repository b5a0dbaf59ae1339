"""YAML case files as pytest collectors, case instances as pytest items.

Which YAML files are case files: those given on the command line, and any *.yaml / *.yml
whose text has a top-level `cases:` key. Other YAML in a repository (CI workflows, configs)
is left alone, and a file that does not even parse is still recognised by that line, so its
error is reported instead of silently skipped.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterator

import pytest

from opbench.cases.case_files import (
    CASE_FILE_SUFFIXES,
    CaseError,
    CaseInstance,
    expand,
    load_case_file,
)
from opbench.pytest_plugin.bench_entries import add_benchmark_entries, benchmark_session
from opbench.pytest_plugin.outcome import Outcome, judge
from opbench.results.records import InstanceRecord
from opbench.pytest_plugin.run_state import RUN_STATE, RunState

# `cases:` at the start of a line: the top-level key of the case format.
_TOP_LEVEL_CASES = re.compile(r"^cases[ \t]*:", re.MULTILINE)
# pytest's own markers: a case tag with one of these names would change how the item runs
# (`skip` would skip it), so such a tag is only a -k keyword, never a marker.
RESERVED_MARKERS = frozenset({"skip", "skipif", "xfail", "parametrize", "usefixtures",
                              "filterwarnings", "tryfirst", "trylast", "benchmark"})


def is_case_file(path: Path, given_on_command_line: bool) -> bool:
    if path.suffix not in CASE_FILE_SUFFIXES:
        return False
    if given_on_command_line:
        return True
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return bool(_TOP_LEVEL_CASES.search(text))


def apply_limits(config: pytest.Config) -> None:
    """--opbench-max-instances / --opbench-input-budget, for the loader (opbench/config/limits.py
    reads them from the environment)."""
    from opbench.config.options import OptionError, apply_limit_options

    try:
        apply_limit_options(config.getoption("opbench_max_instances"),
                            config.getoption("opbench_input_budget"))
    except OptionError as exc:
        # name the option as pytest spells it
        raise pytest.UsageError(f"opbench: {str(exc).replace('--', '--opbench-', 1)}") \
            from None


def display_path(path: Path, base: Path) -> str:
    """The path as messages show it: relative to where pytest was started when inside it."""
    try:
        return os.path.relpath(path, base) if path.is_relative_to(base) else str(path)
    except ValueError:   # another drive on Windows
        return str(path)


def state_of(config: pytest.Config) -> RunState:
    return config.stash[RUN_STATE]


class CaseFailed(Exception):
    """An instance's verdict fails the item; str() is the whole readable report."""


class CaseFile(pytest.File):
    """One case file; its items are the expanded instances, in file order."""

    def collect(self) -> Iterator[CaseItem]:
        # Relative to the working directory, which is what load_case_file resolves it against
        file = display_path(self.path, Path.cwd())
        try:
            cases = load_case_file(file)
            expanded = [(case, expand(case)) for case in cases]
        except CaseError as exc:
            state_of(self.config).case_file_errors += 1
            # CollectError's message is shown as is, without a traceback
            raise self.CollectError(str(exc)) from None
        for case, instances in expanded:
            for tag in case.tags:
                _register_marker(self.config, tag)
            for instance in instances:
                yield CaseItem.from_parent(self, name=instance.id, instance=instance)


def _register_marker(config: pytest.Config, tag: str) -> None:
    # Registered before use, so --strict-markers accepts it; pytest re-reads the marker list
    # when it meets an unknown name.
    if tag not in RESERVED_MARKERS:
        config.addinivalue_line("markers", f"{tag}: opbench case tag")


class CaseItem(pytest.Item):
    """One case instance. Without --benchmark: both frameworks run once and the outputs must
    agree. With it: timed, and the ratio's verdict decides."""

    def __init__(self, *, instance: CaseInstance, **kwargs: Any):
        super().__init__(**kwargs)
        self.instance = instance
        self.record: dict[str, Any] | None = None
        self.outcome: Outcome | None = None
        for tag in instance.case.tags:
            if tag in RESERVED_MARKERS:
                self.extra_keyword_matches.add(tag)
            else:
                self.add_marker(tag)
        # -k matches the op too (a case named `reshape.heads` is op `reshape`)
        self.extra_keyword_matches.add(instance.case.op)
        if state_of(self.config).options.benchmark:
            # pytest-benchmark's --benchmark-only / --benchmark-skip look for this name
            self.fixturenames = ("benchmark",)

    def runtest(self) -> None:
        state = state_of(self.config)
        config = state.run_config
        self.record = state.run(self.instance)
        record = InstanceRecord.from_dict(self.record)
        self.outcome = outcome = judge(record, config.reference_name, config.target_name)
        if state.options.benchmark:
            self._add_benchmark_entries(record)
        if outcome.inconclusive:
            self.add_report_section("call", "opbench", outcome.message)
        if outcome.failed:
            raise CaseFailed(outcome.message)

    def _add_benchmark_entries(self, record: InstanceRecord) -> None:
        session = benchmark_session(self.config.pluginmanager)
        if session is not None:
            add_benchmark_entries(session, record, self.nodeid, state_of(self.config).run_config)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> Any:
        if isinstance(excinfo.value, CaseFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.instance.case.line - 1, f"opbench case {self.name}"
