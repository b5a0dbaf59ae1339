"""The pytest front door: YAML case files are collected as tests.

    pytest cases/                        both frameworks run each instance once; outputs agree
    pytest --benchmark cases/ -k softmax time them; SLOW and MISMATCH fail, INCONCLUSIVE shows
    pytest --benchmark cases/ --benchmark-save=nightly   (pytest-benchmark's storage)

A thin shell: hooks only, wired to the modules beside it (options, collection, the lazy
Session, outcomes, pytest-benchmark entries, the summary). Loaded by the `pytest11` entry
point of an installed opbench, or by the repository's top-level conftest.py.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Generator

import pytest

from opbench.pytest_plugin import hookspec
from opbench.pytest_plugin.bench_entries import add_benchmark_entries
from opbench.pytest_plugin.collect import CaseFile, CaseItem, apply_limits, is_case_file, state_of
from opbench.pytest_plugin.extras import (
    refuse_unavailable_extras,
    register_tags_for_markers_listing,
)
from opbench.pytest_plugin.options import add_options, plugin_options, xdist_active
from opbench.pytest_plugin.outcome import INCONCLUSIVE
from opbench.pytest_plugin.run_state import RUN_STATE, RunState
from opbench.pytest_plugin.sharding import shard_items
from opbench.pytest_plugin.summary import DEFAULT_MAX_ROWS, summary_lines
from opbench.pytest_plugin.xdist_isolation import (
    WORKER_RECORD_KEY,
    enable_controller_benchmarks,
    is_worker,
    placed_config,
    silence_worker_benchmark_warning,
)
from opbench.results.io import plain_json
from opbench.results.records import InstanceRecord

SUMMARY_TITLE = "opbench"
# The verdict word pytest prints for an inconclusive item (-v) and counts in its final line:
# a category of its own, so it is visible without being a failure.
INCONCLUSIVE_STATUS = ("inconclusive", "I", "INCONCLUSIVE")

_COLLECTOR_NAME = "opbench-records"


class _RecordCollector:
    """Gathers every case item's record from its report, for the summary and the JSON."""

    def __init__(self, state: RunState):
        self.state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = getattr(report, "opbench_record", None)
        if record is not None and report.when == "call":
            self.state.records.append(record)
            if self.state.controller_benchmarks is not None:   # from an xdist worker
                cfg = self.state.run_config
                add_benchmark_entries(self.state.controller_benchmarks,
                                      InstanceRecord.from_dict(record), report.nodeid, cfg)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """pytest-xdist's controller: a worker finished; keep its results record."""
        record = getattr(node, "workeroutput", {}).get(WORKER_RECORD_KEY)
        if record is not None:
            self.state.worker_records[node.gateway.id] = record


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspec)


def pytest_configure(config: pytest.Config) -> None:
    options = plugin_options(config)
    apply_limits(config)
    run_config = options.run_config
    if options.benchmark and xdist_active(config):
        # refused with the reason unless every worker gets cores (or a device) of its own
        run_config, _ = placed_config(config, run_config)
    refuse_unavailable_extras(config)
    register_tags_for_markers_listing(config)

    def make_session(run_config):
        return config.hook.pytest_opbench_make_session(config=config, run_config=run_config)

    state = config.stash[RUN_STATE] = RunState(options, make_session)
    state.run_config = run_config
    config.pluginmanager.register(_RecordCollector(state), _COLLECTOR_NAME)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's controller: a case's instances on one worker when timing (its
    correctness runs keep xdist's own scheduling)."""
    if state_of(config).options.benchmark:
        from opbench.pytest_plugin.case_scheduling import make_case_scheduler

        return make_case_scheduler(config, log)
    return None


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    state = state_of(config)
    if not (state.options.benchmark and xdist_active(config)):
        return
    if is_worker(config):
        silence_worker_benchmark_warning(config.pluginmanager)
    else:
        state.controller_benchmarks = enable_controller_benchmarks(config.pluginmanager)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(RUN_STATE, None)
    if state is not None:
        state.close()
    collector = config.pluginmanager.get_plugin(_COLLECTOR_NAME)
    if collector is not None:
        config.pluginmanager.unregister(collector)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> CaseFile | None:
    if is_case_file(file_path, parent.session.isinitpath(file_path)):
        return CaseFile.from_parent(parent, path=file_path)
    return None


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    state = state_of(config)
    if state.options.shard is not None:
        keep, dropped = shard_items(items, state)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = keep


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, Any, Any]:
    """A case file that does not load is a collection error, but it must not stop the other
    files from running (pytest interrupts a session with collection errors before running
    anything). Its errors are left out of the count pytest checks here and put back after,
    so they still fail the run; errors of other collectors still interrupt as usual."""
    ours = min(state_of(session.config).case_file_errors, session.testsfailed)
    session.testsfailed -= ours
    try:
        return (yield)
    finally:
        session.testsfailed += ours


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Generator[
        None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if isinstance(item, CaseItem) and call.when == "call" and item.record is not None:
        # On the report (not only the item) so the summary also sees results that arrive
        # as serialised reports; plain JSON-able data
        # plain JSON types: under pytest-xdist the report crosses to the controller
        report.opbench_record = plain_json(item.record) if is_worker(item.config) \
            else item.record
        report.opbench_verdict = item.outcome.verdict if item.outcome else None
    return report


def pytest_report_teststatus(report: pytest.TestReport,
                             config: pytest.Config) -> tuple[str, str, str] | None:
    if (report.when == "call" and report.passed
            and getattr(report, "opbench_verdict", None) == INCONCLUSIVE):
        return INCONCLUSIVE_STATUS
    return None


@pytest.hookimpl(tryfirst=True)  # shown even when pytest-benchmark then raises on a regression
def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = state_of(config)
    cfg = state.run_config
    verbose = config.get_verbosity() > 0
    lines = summary_lines([InstanceRecord.from_dict(r) for r in state.records], cfg.reference_name,
                          cfg.target_name, timing=cfg.timing,
                          max_rows=None if verbose else DEFAULT_MAX_ROWS)
    if lines and cfg.timing and state.worker_records:
        # pytest-xdist timing: each worker's set-up and measuring, which bound the speed-up
        from opbench.pytest_plugin.results_file import controller_record
        from opbench.report.text import timing_notes

        lines += timing_notes(controller_record(state, complete=True))
    if not lines:
        return
    terminalreporter.section(SUMMARY_TITLE)
    for line in lines:
        terminalreporter.write_line(line)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = state_of(session.config)
    interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
    if hasattr(session.config, "workerinput"):
        # a pytest-xdist worker: its record goes to the controller, which writes the file
        if state.records:
            from opbench.pytest_plugin.results_file import results_record

            session.config.workeroutput[WORKER_RECORD_KEY] = plain_json(
                results_record(state, complete=not interrupted))
        return
    if state.options.json_path and (state.records or state.worker_records):
        from opbench.pytest_plugin.results_file import write_results

        write_results(state, state.options.json_path, complete=not interrupted)
