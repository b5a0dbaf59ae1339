"""The machine facts (per-call floors, ceilings) measured once and kept: keyed by machine,
builds, interpreter, threads and pinning; measured again on a changed key, on
--remeasure-machine and after MAX_AGE; a corrupt file is ignored with a warning."""
from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
from runner_fakes import (OP_COST_S, FakeAdapter, FakeClock, binary_case, case_file,
                          fake_config, fake_session, fake_session_class, load_instances)
from worker_fakes import Spawner

import opbench.runner.session as session_mod
from opbench.config import Sequential, Side
from opbench.config.options import OPTIONS, RunOptions
from opbench.report.text import header_text, run_notes
from opbench.runloop.recorded_run import run
from opbench.runner.machine_facts import (
                                          CACHE_DIR_ENV,
                                          CACHED,
                                          MAX_AGE,
                                          MEASURED,
                                          FactsCache,
                                          cache_dir,
                                          obtain_machine_facts,
                                          )
from opbench.runner.session import Session
from opbench.runner.workers import SharedProcess, SidePair, WorkerPool, batch_of, first_batch

NOW = datetime(2026, 11, 27, 10, 0, tzinfo=timezone.utc)
IDENTITY = {"cpu_model": "fake cpu", "cores": 2, "affinity": [0, 1], "platform": "fake"}


class CountingSession:
    """What obtain_machine_facts asks of a MeasuringSession, counting the measurements."""

    def __init__(self, config, builds=("b1", "b1"), cpus=(1,)):
        self.config = config
        self.overhead = {}
        self.builds, self.cpus = builds, list(cpus)
        self.measured = 0

    def framework_info(self):
        return {name: {"version": "1.0", "build": build, "threads": self.config.threads,
                       "cpus": self.cpus, "processes": 3}
                for name, build in zip(self.config.frameworks, self.builds)}

    def measure_overheads(self):
        self.measured += 1
        self.overhead = {name: {"dispatch_floor_serial_s": 30e-6 * self.measured}
                         for name in self.config.frameworks}
        return self.overhead

    def measure_ceilings(self):
        return {name: {"peak_flops_per_s": 1e9} for name in self.config.frameworks}


def _obtain(session, cache, now=NOW, config=None):
    return obtain_machine_facts(session, config or session.config, cache, now=lambda: now,
                                identity=lambda: dict(IDENTITY))


@pytest.fixture
def cache(tmp_path):
    return FactsCache(tmp_path / "cache")


def test_measured_once_then_read_from_the_cache(cache):
    config = fake_config()
    first = _obtain(CountingSession(config), cache)
    assert first.source == MEASURED and first.measured_utc == NOW.isoformat()
    again = CountingSession(config)
    later = _obtain(again, cache, now=NOW + timedelta(hours=3))
    assert again.measured == 0 and later.source == CACHED
    assert later.measured_utc == first.measured_utc
    # the session's floors are the cached ones: the explanations read them from there
    assert again.overhead == {n: {"dispatch_floor_serial_s": 30e-6} for n in config.frameworks}
    assert later.ceilings == first.ceilings


@pytest.mark.parametrize("change", ["build", "threads", "pinning", "interpreter", "launch"])
def test_a_changed_key_measures_again(cache, change):
    config = fake_config(threads=2)
    _obtain(CountingSession(config), cache)
    session = CountingSession(config)
    if change == "build":            # another framework build in the same version
        session.builds = ("b1", "b2")
    elif change == "threads":
        config = replace(config, threads=1)
        session = CountingSession(config)
    elif change == "pinning":        # the cores the side was pinned to
        session.cpus = [0]
    elif change == "interpreter":
        config = replace(config, target=Side("mindspore", "/opt/other/bin/python"),
                         processes=2)
        session = CountingSession(config)
    elif change == "launch":
        config = replace(config, launch="queued")
        session = CountingSession(config)
    facts = _obtain(session, cache)
    assert session.measured == 1 and facts.source == MEASURED
    assert len(list(cache.directory.glob("machine-facts-*.json"))) == 2


def test_remeasure_machine_measures_again_and_keeps_the_new_figures(cache):
    config = fake_config()
    _obtain(CountingSession(config), cache)
    session = CountingSession(replace(config, remeasure_machine=True))
    session.measured = 1          # its floors come out twice the first run's
    facts = _obtain(session, cache)
    assert facts.source == MEASURED and session.measured == 2
    reread = _obtain(CountingSession(config), cache, now=NOW + timedelta(minutes=1))
    assert reread.source == CACHED
    assert reread.overhead["torch"]["dispatch_floor_serial_s"] == pytest.approx(60e-6)


def test_facts_older_than_the_age_are_measured_again(cache):
    config = fake_config()
    _obtain(CountingSession(config), cache)
    fresh_enough = CountingSession(config)
    assert _obtain(fresh_enough, cache, now=NOW + MAX_AGE - timedelta(minutes=1)).source \
        == CACHED
    expired = CountingSession(config)
    facts = _obtain(expired, cache, now=NOW + MAX_AGE + timedelta(minutes=1))
    assert facts.source == MEASURED and expired.measured == 1 and not facts.warnings
    # kept again when measured again; a date in the future (a clock set back) is not
    # trusted
    remeasured = NOW + MAX_AGE + timedelta(minutes=1)
    back = CountingSession(config)
    assert _obtain(back, cache, now=remeasured + timedelta(hours=1)).source == CACHED
    assert _obtain(back, cache, now=remeasured - timedelta(days=1)).source == MEASURED


@pytest.mark.parametrize("content", ["{not json", "[]", '{"format": 1}',
                                     '{"format": 1, "key": {}, "measured_utc": "yesterday",'
                                     ' "overhead": {}, "ceilings": {}}',
                                     '{"format": 1, "key": {}, "measured_utc": '
                                     '"2026-11-27T09:00:00+00:00", "overhead": [], '
                                     '"ceilings": {}}'])
def test_a_corrupt_cache_file_is_ignored_with_a_warning(cache, content):
    config = fake_config()
    first = _obtain(CountingSession(config), cache)
    path = next(cache.directory.glob("machine-facts-*.json"))
    path.write_text(content)
    session = CountingSession(config)
    facts = _obtain(session, cache)
    assert facts.source == MEASURED and session.measured == 1
    assert len(facts.warnings) == 1
    assert facts.warnings[0].startswith(f"ignored a corrupt machine-facts cache file {path}")
    assert facts.provenance()["warnings"] == list(facts.warnings)
    # and the file is whole again for the next run
    assert json.loads(path.read_text())["measured_utc"] == first.measured_utc


def test_an_unwritable_cache_is_a_warning_not_an_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    facts = _obtain(CountingSession(fake_config()), FactsCache(blocker / "cache"))
    assert facts.source == MEASURED
    assert "could not keep the machine facts" in facts.warnings[0]


def test_the_cache_directory_follows_the_environment(tmp_path):
    assert cache_dir({CACHE_DIR_ENV: str(tmp_path)}) == tmp_path
    assert cache_dir({"XDG_CACHE_HOME": "/x/cache"}).as_posix() == "/x/cache/opbench"
    assert cache_dir({}).parts[-2:] == (".cache", "opbench")


def test_the_option_is_in_the_one_table():
    spec = next(s for s in OPTIONS if s.field == "remeasure_machine")
    assert spec.flag == "remeasure-machine" and spec.kind is bool and not spec.inherited
    assert RunOptions(remeasure_machine=True).to_config().remeasure_machine
    assert not RunOptions().to_config().remeasure_machine
    # not a measurement setting: records stay as they were
    assert "remeasure_machine" not in RunOptions(remeasure_machine=True).to_config().as_dict()


# ------------------------------------------------------------------- through a recorded run

def _recorded(tmp_path, config, cache):
    instances = load_instances(case_file(tmp_path, binary_case("add")))
    session = fake_session(config)
    return run(instances, config, session=session, facts_cache=cache), session


def test_a_run_records_where_its_facts_came_from_and_every_view_says_so(tmp_path, cache):
    config = fake_config()
    first, _ = _recorded(tmp_path, config, cache)
    assert first.machine_facts.source == MEASURED
    assert "machine facts (per-call floors, ceilings) measured in this run" in \
        header_text(first)
    second, session = _recorded(tmp_path, config, cache)
    assert second.machine_facts.cached
    assert second.overhead == first.overhead and second.ceilings == first.ceilings
    assert session.overhead == {name: o.to_dict() for name, o in first.overhead.items()}
    assert ("read from the cache, measured " + first.machine_facts.measured_utc[:10]) in \
        header_text(second)


def test_a_run_with_a_corrupt_cache_shows_the_warning(tmp_path, cache):
    config = fake_config()
    _recorded(tmp_path, config, cache)
    next(cache.directory.glob("machine-facts-*.json")).write_text("\0garbage")
    record, _ = _recorded(tmp_path, config, cache)
    assert record.machine_facts.source == MEASURED
    assert any(n.startswith("warning: ignored a corrupt machine-facts cache file")
               for n in run_notes(record))


def test_without_a_cache_the_facts_are_measured_every_run(tmp_path):
    record, _ = _recorded(tmp_path, fake_config(), None)
    assert record.machine_facts.source == MEASURED and record.overhead


# ------------------------------------------------------------------- processes when needed

def test_a_sequential_run_starts_its_first_process_alone():
    sequential = fake_config(processes=3, sequential=Sequential(max_processes=6))
    assert list(first_batch(sequential)) == [1]
    assert list(batch_of(2, sequential)) == [2, 3]
    assert list(batch_of(4, sequential)) == [4, 5, 6]
    capped = replace(sequential, sequential=Sequential(max_processes=5))
    assert list(batch_of(4, capped)) == [4, 5]
    # the fixed protocol starts every process at once, as before
    assert list(first_batch(fake_config(processes=3))) == [1, 2, 3]


@pytest.mark.parametrize("placement", [SharedProcess, SidePair])
@pytest.mark.parametrize("slow_far", [True, False])
def test_further_processes_start_only_for_undecided_instances(tmp_path, placement,
                                                              slow_far):
    """`far` (MindSpore 10x slower) is SLOW after process 1: the run ends with the one
    process it started. `even` stays undecided: processes 2 and 3 start at the first look,
    4 to 6 at the fourth, in both pools."""
    config = fake_config(processes=3, sequential=Sequential(max_processes=6))
    if placement is SidePair:
        config = replace(config, target=Side("mindspore", "/fake/python"))
    spawn = Spawner(fake_session_class({"costs": {"mindspore.neg": 10 * OP_COST_S}}))
    far = binary_case("far", torch_api="torch.neg", mindspore_api="mindspore.neg") \
        .replace("args: [$x, $y]", "args: [$x]")
    cases = [far] if slow_far else [far, binary_case("even")]
    instances = load_instances(case_file(tmp_path, *cases))
    pool = WorkerPool(config, spawn=spawn, placement=placement)
    if placement is SidePair:
        pool._check_interpreter = lambda python, framework: None
    pool.open()
    assert sorted(set(spawn.spawned)) == [1]        # at once: process 1 alone
    try:
        record = run(instances, config, session=pool, facts_cache=None)
    finally:
        pool.close()
    assert sorted(set(spawn.spawned)) == ([1] if slow_far else [1, 2, 3, 4, 5, 6])
    assert record.instances[0].sequential.processes == 1


def test_each_framework_launches_a_kernel_when_its_process_opens(monkeypatch):
    """Fixed bug: with the floors read from the cache, the first op a worker timed was its
    first MindSpore op, and a view (reshape 8x16) measured 693 us instead of 4.8 us: MindSpore
    syncs slowly until a kernel has run. Session.open now runs each trivial op once."""
    calls = []

    class Recording(FakeAdapter):
        def trivial_op(self):
            return lambda: calls.append(self.name)

    clock = FakeClock()
    monkeypatch.setattr(session_mod, "get_adapter", lambda name: Recording(name, clock))
    session = Session(fake_config(quiesce=False), clock)
    session.pin_cores = lambda threads: None
    session.open()
    assert calls == ["torch", "mindspore"]
