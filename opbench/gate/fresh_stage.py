"""The gate's second stage in a fresh process.

Why a fresh process: most of a ratio's run-to-run noise on a shared CPU machine is an
offset that one process keeps for its whole life (thread placement, allocator state,
where the frameworks' code landed in memory; 2-8% per instance here, docs/gate.md). A
second stage measured in the first stage's process shares that offset, so it cannot
confirm or clear what the first stage saw independently. Replayed on 11 recorded A/A
processes, a second stage from another process gave 0.6% false REGRESSIONs per instance
against 2.2% seen live with a same-process second stage.

The parent writes a small JSON spec (case selection, the exact build_config options, the
ids to re-measure, where to write), runs `python -m opbench.gate.fresh_stage SPEC` and
reads the records back. The child inherits the environment, so a self-test's injected
slowdown (OPBENCH_INJECT_SLOWDOWN) applies to it too. The run-the-child step is a
parameter, so the whole path is unit-tested in-process on fake frameworks.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

__all__ = ["FreshStageError", "StageSpec", "main", "remeasure_in_fresh_process",
           "run_child_process", "run_stage"]

SPEC_VERSION = 1
# What the parent shows of a failed child: its last lines of stderr.
STDERR_TAIL_LINES = 15


class FreshStageError(RuntimeError):
    """The child process failed or wrote nothing usable; the message says why."""


@dataclass(frozen=True)
class StageSpec:
    """Everything the child needs to measure exactly like the parent's first stage."""

    paths: tuple[str, ...]
    ids: tuple[str, ...]
    config_options: dict[str, Any]   # build_config keywords, as the parent resolved them
    output: str
    ops: tuple[str, ...] = ()
    keyword: str | None = None
    tags: tuple[str, ...] = ()
    quiet: bool = False

    def to_json(self) -> str:
        return json.dumps({"version": SPEC_VERSION, **asdict(self)}, indent=1)

    @classmethod
    def from_json(cls, text: str) -> "StageSpec":
        data = json.loads(text)
        if data.pop("version", None) != SPEC_VERSION:
            raise ValueError(f"stage spec version is not {SPEC_VERSION}")
        for key in ("paths", "ids", "ops", "tags"):
            data[key] = tuple(data.get(key) or ())
        return cls(**data)


SessionFactory = Callable[[Any], Any]   # RunConfig -> an unopened Session
ProgressFactory = Callable[[bool], Any]


def run_stage(spec: StageSpec, session_factory: SessionFactory,
              on_progress: Any = None, on_pass: Any = None) -> dict[str, dict[str, Any]]:
    """Measure spec.ids as the first stage did, in this process: {id: instance record}.
    Raises FreshStageError when an id is no longer in the selection (the case files
    changed between the stages)."""
    from ..cli_common import build_config, load_instances
    from ..runner import run_passes

    instances = load_instances(list(spec.paths), spec.ops, spec.keyword, spec.tags)
    by_id = {inst.id: inst for inst in instances}
    missing = [i for i in spec.ids if i not in by_id]
    if missing:
        raise FreshStageError(f"not in the selection any more: {', '.join(missing)}")
    subset = [by_id[i] for i in spec.ids]
    config = build_config(**spec.config_options)
    session = session_factory(config)
    session.open()
    session.measure_overheads()
    records = run_passes(session, subset, [], on_progress=on_progress, on_pass=on_pass)
    return {inst.id: record for inst, record in zip(subset, records)}


def _default_session_factory(config):
    from ..runner import Session
    from .selftest import InjectingSession, injection_from_env

    injection = injection_from_env()
    return InjectingSession(config, injection) if injection else Session(config)


def main(argv: Sequence[str] | None = None,
         session_factory: SessionFactory | None = None) -> int:
    """The child: `python -m opbench.gate.fresh_stage SPEC.json`. Writes {id: record} to
    the spec's output; progress goes to stderr like the parent's; exit 0 on success."""
    from rich.markup import escape

    from ..cli_common import err, pass_printer
    from ..results import write_json_atomic
    from .command import progress_printer

    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        err.print("usage: python -m opbench.gate.fresh_stage SPEC.json")
        return 2
    spec = StageSpec.from_json(Path(args[0]).read_text(encoding="utf-8"))
    from ..frameworks import DeviceUnavailable, FrameworkUnavailable

    try:
        records = run_stage(spec, session_factory or _default_session_factory,
                            on_progress=progress_printer(spec.quiet, "stage 2"),
                            on_pass=pass_printer(spec.quiet))
    except (FreshStageError, FrameworkUnavailable, DeviceUnavailable, ValueError) as exc:
        # ValueError: a bad injection spec or config the parent would have refused already
        err.print(f"error: {escape(str(exc))}", highlight=False)
        return 2
    write_json_atomic(spec.output, records)
    return 0


ChildRunner = Callable[[str], "subprocess.CompletedProcess[str]"]


def run_child_process(spec_path: str) -> "subprocess.CompletedProcess[str]":
    """Run the child with this interpreter. Its progress lines pass through to our stderr
    as it goes; stderr is also kept (tee'd by reading line by line) for an error message."""
    # The environment is inherited: GLOG_v, PYTHONPATH and a self-test's injection apply.
    # The child's stdout (nothing of ours; a framework's stray prints) is dropped so it
    # cannot mix into the gate's table.
    proc = subprocess.Popen([sys.executable, "-m", "opbench.gate.fresh_stage", spec_path],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    kept: list[str] = []
    assert proc.stderr is not None
    try:
        for line in proc.stderr:
            sys.stderr.write(line)
            sys.stderr.flush()
            kept.append(line)
            del kept[:-STDERR_TAIL_LINES]
        proc.wait()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, "", "".join(kept))


def remeasure_in_fresh_process(spec: StageSpec, run_child: ChildRunner | None = None
                               ) -> dict[str, dict[str, Any]]:
    """Stage 2 in a new process: {id: instance record}. spec.output is ignored (a
    temporary file is used). run_child defaults to run_child_process, looked up when
    called (so tests can put an in-process child in its place). Raises FreshStageError
    with the child's last stderr lines when it fails, or when it leaves no records for
    every id."""
    run_child = run_child or run_child_process
    with tempfile.TemporaryDirectory(prefix="opbench-stage2-") as tmp:
        output = os.path.join(tmp, "records.json")
        spec_path = os.path.join(tmp, "spec.json")
        Path(spec_path).write_text(StageSpec(**{**asdict(spec), "output": output}).to_json(),
                                   encoding="utf-8")
        done = run_child(spec_path)
        if done.returncode != 0:
            tail = (done.stderr or "").strip().splitlines()[-STDERR_TAIL_LINES:]
            raise FreshStageError(f"the stage-2 process exited {done.returncode}"
                                  + (": " + " | ".join(tail) if tail else ""))
        try:
            records = json.loads(Path(output).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise FreshStageError(f"the stage-2 process wrote no readable records ({exc})")
    absent = [i for i in spec.ids if not isinstance(records.get(i), Mapping)]
    if absent:
        raise FreshStageError(f"the stage-2 process left out {', '.join(absent)}")
    return {i: records[i] for i in spec.ids}


if __name__ == "__main__":
    sys.exit(main())
