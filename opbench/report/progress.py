"""Live progress for the commands that run cases (`run`, `compare`, `check`, `gate`) and for
`trace`: on a terminal a rich progress bar with the current instance and an ETA; elsewhere
(CI logs, files, pipes) one plain line per instance, since a redrawn bar there is noise.

Start-up gets its own words: importing torch and MindSpore takes ~5 s here, and a silent
start looks like a hang. The frameworks are imported inside the adapters (frameworks/), so
the announcement watches the import itself: a finder at the head of `sys.meta_path` that
only notices the first import of each framework and then lets the usual finders do the work.
Fake frameworks (unit tests) import nothing, so nothing is announced for them.
"""
from __future__ import annotations

import importlib.abc
import sys
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from opbench.cases.ids import short_id
from opbench.config.vocabulary import FRAMEWORKS

if TYPE_CHECKING:
    from opbench.results.records import InstanceRecord

# The modules whose first import is worth announcing (each takes seconds): the frameworks'.
FRAMEWORK_MODULES = FRAMEWORKS
# Width of the bar itself: at 100 columns it leaves room for the counts, the times and an id.
BAR_WIDTH = 24


class _ImportAnnouncer(importlib.abc.MetaPathFinder):
    """Calls on_import(name) when one of `names` is about to be imported for the first
    time; finds nothing itself."""

    def __init__(self, names: Sequence[str], on_import: Callable[[str], None]):
        self.pending = set(names)
        self.on_import = on_import

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname in self.pending:
            self.pending.discard(fullname)
            if fullname not in sys.modules:
                self.on_import(fullname)
        return None


@contextmanager
def announcing_imports(on_import: Callable[[str], None],
                       names: Sequence[str] = FRAMEWORK_MODULES) -> Iterator[None]:
    """Within the block, on_import(name) runs as each of `names` starts importing."""
    finder = _ImportAnnouncer(names, on_import)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


def pass_text(measured: int, decided: int) -> str:
    """What a later pass does: every measured instance again, or the undecided ones."""
    if not decided:
        return "more rounds for every measured instance"
    return f"{measured} undecided measured again, {decided} decided"


def _eta_text(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


class RunProgress:
    """Progress of one run: `starting()` around the frameworks' set-up, then, inside
    `with progress:`, runner.run's on_progress / on_pass (or, under sequential stopping,
    on_look) callbacks.

    live: draw a bar (default: when the console is a terminal)."""

    def __init__(self, console: Console, quiet: bool = False, *, passes: int = 1,
                 stage: str = "", live: bool | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.console = console
        self.quiet = quiet
        self.passes = max(1, passes)
        self.stage = stage
        self.live = console.is_terminal if live is None else live
        self.clock = clock
        self._bar: Progress | None = None
        self._task: Any = None
        self._started_s: float | None = None
        self._finished = 0
        # (when the last pass after the first began, how many instances it measured)
        self._last_pass: tuple[float, int] | None = None

    # ------------------------------------------------------------------ start-up
    @contextmanager
    def starting(self, what: str = "setting up the frameworks",
                 modules: Sequence[str] = FRAMEWORK_MODULES) -> Iterator[None]:
        """Says what the start-up is doing while the block sets the frameworks up, and
        which of `modules` it is importing."""
        if self.quiet:
            yield
            return
        started = self.clock()
        if self.live:
            with self.console.status(f"{what}...") as status:
                with announcing_imports(lambda name: status.update(f"importing {name}..."),
                                        modules):
                    yield
        else:
            self._line(f"{what}...")
            with announcing_imports(lambda name: self._line(f"importing {name}..."), modules):
                yield
        self._line(f"ready in {self.clock() - started:.1f} s")

    # ------------------------------------------------------------------ the run
    def __enter__(self) -> RunProgress:
        if self.live and not self.quiet:
            self._bar = Progress(
                SpinnerColumn(), TextColumn("{task.description}"),
                BarColumn(bar_width=BAR_WIDTH), MofNCompleteColumn(), TimeElapsedColumn(),
                TextColumn("eta"), TimeRemainingColumn(),
                TextColumn("{task.fields[current]}"),
                console=self.console, transient=True)
            self._bar.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
            self._bar = None

    def on_progress(self, i: int, n: int, instance: Any,
                    result: InstanceRecord | None) -> None:
        """runner.run's callback: before (result None) and after each instance of pass 1."""
        if self.quiet:
            return
        if self._started_s is None:
            self._started_s = self.clock()
        name = escape(short_id(instance.id))
        if self._bar is not None and self._task is None:
            self._task = self._bar.add_task(self._description(1), total=n * self.passes,
                                            current="")
        if result is None:
            if self._bar is not None:
                self._bar.update(self._task, current=name)
            else:
                self._line(f"{self._prefix()}\\[{i + 1}/{n}] {name} ...")
            return
        self._finished += 1
        verdict = result.verdict.value if result.verdict else "ERROR"
        if not result.measured and verdict == "PASS":
            verdict = "AGREE"       # a correctness-only run: nothing was timed
        ratios = " ".join(f"{k} {m.ratio:.3g}" for k, m in result.measurements.items())
        line = (f"{self._prefix()}\\[{i + 1}/{n}] {name}: {verdict} {ratios} "
                f"({result.duration_s or 0:.1f} s")
        remaining = n * self.passes - self._finished
        if self._bar is None and remaining and self._finished:
            per_instance = (self.clock() - self._started_s) / self._finished
            line += f"; eta {_eta_text(per_instance * remaining)}"
        self._line(line + ")")
        if self._bar is not None:
            self._bar.update(self._task, advance=1)

    def on_pass(self, pass_index: int, passes: int, measured: int, decided: int) -> None:
        """runner.run's callback before each later pass (no per-instance calls there): how
        many instances it measures again, how many an early stop settled, and an ETA from
        the last pass's time per instance. Under an early stop (decided > 0) the ETA is an
        upper bound: more instances may stop at the next process's end."""
        now = self.clock()
        last = self._last_pass
        self._last_pass = (now, measured)
        if self.quiet:
            return
        if self._bar is not None and self._task is not None:
            total = self._bar.tasks[0].total or 0
            self._bar.update(self._task, completed=total * (pass_index - 1) / passes,
                             description=self._description(pass_index), current="")
        line = f"{self._prefix()}pass {pass_index}/{passes}: {pass_text(measured, decided)}"
        if last is not None and last[1] > 0:
            per_instance_pass = (now - last[0]) / last[1]
            eta = per_instance_pass * measured * (passes - pass_index + 1)
            line += f"; eta {'at most ' if decided else ''}{_eta_text(eta)}"
        self._line(line)

    def on_look(self, process: int, max_processes: int, undecided: int, decided: int,
                eta_s: float) -> None:
        """A sequential run's callback before each process after the first: how many
        instances are settled, how many this process measures again, and how long they
        took in the last one (this process's time, before any fresh worker's start-up;
        a later process measures only what stays undecided, so none is promised)."""
        if self.quiet:
            return
        text = (f"process {process} (of at most {max_processes}): {decided} decided, "
                f"{undecided} undecided measured again; eta {_eta_text(eta_s)} for this "
                f"process")
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, total=undecided, completed=0,
                             description=f"{self._prefix()}process {process}: "
                                         f"{undecided} undecided", current="")
        self._line(f"{self._prefix()}{text}")

    # ------------------------------------------------------------------ helpers
    def _description(self, pass_index: int) -> str:
        parts = [self.stage] if self.stage else []
        if self.passes > 1:
            parts.append(f"pass {pass_index}/{self.passes}")
        return " ".join(parts)

    def _prefix(self) -> str:
        return f"{self.stage} " if self.stage else ""

    def _line(self, text: str) -> None:
        # above the bar when there is one (its console keeps the bar at the bottom)
        target = self._bar.console if self._bar is not None else self.console
        target.print(f"[dim]{text}[/]", highlight=False)


@contextmanager
def activity(console: Console, what: str, count: Callable[[], int] | None = None,
             unit: str = "calls", quiet: bool = False) -> Iterator[None]:
    """A task of unknown length (`opbench trace` running a program): on a terminal a
    spinner with the elapsed time and `count()` so far; elsewhere one line at the start.
    Framework imports inside it are announced either way."""
    if quiet:
        yield
        return
    if not console.is_terminal:
        console.print(f"[dim]{escape(what)}...[/]", highlight=False)
        with announcing_imports(
                lambda name: console.print(f"[dim]importing {name}...[/]", highlight=False)):
            yield
        return
    columns = [SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn()]
    if count is not None:
        columns.append(_CountColumn(count, unit))
    # the traced program keeps its own stdout: the display goes to the console's stream
    with Progress(*columns, console=console, transient=True, redirect_stdout=False,
                  redirect_stderr=False) as bar:
        task = bar.add_task(escape(what), total=None)

        def announce(name: str) -> None:
            bar.update(task, description=f"{escape(what)}: importing {name}...")

        with announcing_imports(announce):
            yield


class _CountColumn(ProgressColumn):
    """`count()` read at every redraw (the tracer's number of recorded calls)."""

    def __init__(self, count: Callable[[], int], unit: str):
        super().__init__()
        self.count, self.unit = count, unit

    def render(self, task: Any) -> Text:
        return Text(f"{self.count()} {self.unit}", style="dim")
