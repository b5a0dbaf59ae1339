"""`opbench model --suggest` and `opbench suggest` as library calls: a captured step (or a
script, captured first) -> the candidates (patterns.py, families from the static scan's
catalogue) -> each measured (measure.py) -> rows sorted by saving."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from opbench.model.affinity.measure import (DEFAULT_SUGGEST_PROCESSES, SuggestSettings,
                                            measure_candidates)
from opbench.config.vocabulary import FRAMEWORKS
from opbench.model.affinity.patterns import Candidate, find_candidates
from opbench.model.impact.processes import (Interpreter, ModelError, interpreter_version,
                                            run_capture, split_command)
from opbench.model.impact.record import SuggestionRow
from opbench.model.program import Program
from opbench.model.affinity.script_step import script_step_region
from opbench.model.steady import (DEFAULT_CAPTURE_STEPS, Region, RegionError, StepProgram,
                                  find_region, step_program)
from opbench.scan.affinity import load_families

__all__ = ["candidates_of", "suggest_for_step", "suggest"]


def candidates_of(step: StepProgram) -> list[Candidate]:
    return find_candidates(step, {(f.framework, f.kind): f for f in load_families()})


def suggest_for_step(program: Program, region: Region, interpreter: Interpreter,
                     work: Path, processes: int = DEFAULT_SUGGEST_PROCESSES,
                     on_progress: Callable[[str], None] = lambda m: None
                     ) -> list[SuggestionRow]:
    """Every candidate of the script's step (the region's period widened to the script's
    step where it is a layer's: script_step.py) measured in the script's framework and
    launch mode."""
    widened = script_step_region(program, region)
    if widened is not region:
        on_progress(widened.note.rsplit("; ", 1)[-1])
    step = step_program(program, widened)
    settings = SuggestSettings(framework=program.framework,
                               launch=program.launch,
                               device=program.device, threads=program.threads,
                               cpus=tuple(program.cpus), processes=processes)
    found = candidates_of(step)
    on_progress(f"{len(found)} candidate swaps in the step")
    return measure_candidates(step, found, settings, interpreter, work, on_progress)


def suggest(command: Sequence[str], processes: int = DEFAULT_SUGGEST_PROCESSES,
            skip_first_calls: int | None = None, workdir: str | Path | None = None,
            on_progress: Callable[[str], None] = lambda m: None) -> list[SuggestionRow]:
    """A script's measured suggestions (`opbench suggest -- python script.py`): captured,
    its steady step found, each candidate swap checked and timed. Raises ModelError for
    what the user must fix."""
    interpreter, words = split_command(command)
    work = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="opbench-suggest-"))
    work.mkdir(parents=True, exist_ok=True)
    program_path = work / "program.json"
    on_progress(f"running the script under the capture in {interpreter.path}")
    status = run_capture(interpreter, words, program_path, 200_000, DEFAULT_CAPTURE_STEPS)
    if not program_path.exists():
        raise ModelError(f"the capture wrote no program (the script's interpreter exited "
                         f"with status {status} before the capture could save anything)")
    program = Program.from_json(json.loads(program_path.read_text(encoding="utf-8")))
    if program.script_status != 0:
        error = f" ({program.script_error})" if program.script_error else ""
        raise ModelError(f"the script exited with status {program.script_status}{error}: "
                         f"nothing was measured. Fix the script and run again")
    if program.framework not in FRAMEWORKS:
        raise ModelError("the script imported neither torch nor MindSpore, or made no call "
                         "of theirs that was recorded")
    interpreter_version(interpreter, (program.framework,))
    try:
        region = find_region(program, skip_first_calls)
    except RegionError as exc:
        raise ModelError(str(exc)) from None
    return suggest_for_step(program, region, interpreter, work, processes, on_progress)
