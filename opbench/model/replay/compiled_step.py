"""A timed step written out as straight-line Python, the way the script wrote it.

Replayer._run's loop costs more per call than the script's own line does: its enumerate, the
plan entry's unpacking, the argument getters' closures and lambdas and the drop loop. On a
captured step of 61 small torch calls (64x64, one thread; tools/replay_overhead.py, one
process, 30 alternated rounds of 20 steps, medians) the loop read 169.5 us a step, this
142.6: 0.44 us a call, which a swap removing k calls was credited k times on top of what
the script saves (docs/model.md, "Suggestions": torch/linear_composed claimed 0.073 ms a
step against 0.043 measured, 0.055 against 0.047 written out). Here the step becomes one
function whose body is its calls:

    v12 = f12(v3, e5, 2, dim=-1)      # call 12's result in a local, as a script holds it
    del v3                            # after its last reader (release.py's plan)
    v13 = results[13] = f13(v12[0])   # a result that must outlive the step, written back

Functions, external tensors and constants are the closure's cells (no list or dict lookup);
results the step reads before it sets them (the last step's, or the probe's for a call the
step does not rerun) are loaded from `results` at the top. Built once from the plan the probe
made; the executor keeps its loop for what this does not express (compile_step returns None).
Pure: no framework, no printing."""
from __future__ import annotations

import keyword
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from opbench.model.program import Ext, Ref, Seq

__all__ = ["StepCall", "CompiledStep", "compile_step", "is_constant"]


@dataclass(frozen=True)
class StepCall:
    """One plan entry of the timed step, as program arguments (not getters)."""
    index: int                          # the call's position: its result is `v{index}`
    fn: Callable[..., Any] | None       # None: a pass-through, the result is args[0] itself
    args: tuple[Any, ...]               # Ref, Ext, Seq or a constant's program argument
    kwargs: tuple[tuple[str, Any], ...] = ()
    label: str = ""                     # what the source's comment names (the route's api)
    grad_mode: bool | None = None       # torch's grad mode set before the call (None: as is)
    drops: tuple[int, ...] = ()         # results let go of right after the call


@dataclass(frozen=True)
class CompiledStep:
    run: Callable[[], None]
    source: str                         # the generated Python, for reading and the tests
    written_back: frozenset[int]        # results the step leaves in `results`
    dropped: frozenset[int]             # results the step sets and lets go of


class _NotExpressible(Exception):
    """A plan entry the generator cannot write as Python (the loop replays the step)."""


# scalars written into the source as literals; anything else is a closure cell holding the
# very object the loop's getter returns (a list literal would make a new list each call)
_INLINE = (bool, int, str, type(None))


def compile_step(calls: Sequence[StepCall], externals: Mapping[int, Any],
                 constant: Callable[[Any], Any], results: list[Any],
                 set_grad: Callable[[bool], Any] | None = None,
                 restore_grad: bool = False) -> CompiledStep | None:
    """The step `calls` (program order) as one function over `results` (the executor's
    list, read for results set before the step and written for those kept past it);
    `constant(arg)` is the executor's value of a constant argument. None when an entry
    cannot be written out."""
    writer = _Writer(externals, constant)
    try:
        body = writer.body(calls, restore_grad)
    except _NotExpressible:
        return None
    cells = {"results": results, **writer.cells}
    if writer.uses_set_grad:
        if set_grad is None:
            return None
        cells["set_grad"] = set_grad
    names = list(cells)
    source = (f"def _make({', '.join(names)}):\n"
              f"    def step():\n"
              + "".join(f"        {line}\n" for line in body)
              + "    return step\n")
    namespace: dict[str, Any] = {}
    exec(compile(source, "<opbench compiled step>", "exec"), namespace)   # noqa: S102
    run = namespace["_make"](*cells.values())
    return CompiledStep(run, source, frozenset(writer.written_back), frozenset(writer.dropped))


class _Writer:
    def __init__(self, externals: Mapping[int, Any], constant: Callable[[Any], Any]):
        self.externals = externals
        self.constant = constant
        self.cells: dict[str, Any] = {}
        self.uses_set_grad = False
        self.written_back: set[int] = set()
        self.dropped: set[int] = set()
        self._bound: set[int] = set()          # results a local holds at this point
        self._loaded: list[int] = []           # results read before the step sets them
        self._constants = 0

    def body(self, calls: Sequence[StepCall], restore_grad: bool) -> list[str]:
        dropped = {j for call in calls for j in call.drops}
        written = {call.index for call in calls}
        keep = written - dropped
        lines: list[str] = []
        for call in calls:
            if call.grad_mode is not None:
                self.uses_set_grad = True
                lines.append(f"set_grad({call.grad_mode})")
            value = self._value(call)
            target = f"v{call.index}"
            if call.index in keep:
                self.written_back.add(call.index)
                target += f" = results[{call.index}]"
                lines.append(f"{target} = {value}" + _comment(call.label))
            elif call.index in call.drops and call.fn is not None:
                # nothing reads it: a statement, as a script writes `x.add_(y)`
                lines.append(value + _comment(call.label))
            elif call.index in call.drops:
                pass                             # a pass-through nothing reads: nothing done
            else:
                lines.append(f"{target} = {value}" + _comment(call.label))
            self._bound.add(call.index)
            gone = [f"v{j}" for j in call.drops if j != call.index]
            if gone:
                lines.append(f"del {', '.join(gone)}")
            self.dropped.update(call.drops)
        if restore_grad:
            self.uses_set_grad = True
            lines.append("set_grad(True)")
        if self.dropped & set(self._loaded):
            # the loop would leave None there for the next step to read; the executor keeps
            # every result read before it is set (_plan_releases), so this is not met
            raise _NotExpressible("a result read before it is set is dropped")
        loads = [f"v{i} = results[{i}]" for i in self._loaded]
        return loads + (lines or ["pass"])

    def _value(self, call: StepCall) -> str:
        args = [self._expression(a) for a in call.args]
        if call.fn is None:
            if len(args) != 1 or call.kwargs:
                raise _NotExpressible(f"a pass-through of {len(args)} arguments")
            return args[0]
        for name, _ in call.kwargs:
            if not name.isidentifier() or keyword.iskeyword(name):
                raise _NotExpressible(f"keyword {name!r}")
        args += [f"{name}={self._expression(v)}" for name, v in call.kwargs]
        fn = f"f{call.index}"
        self.cells[fn] = call.fn
        return f"{fn}({', '.join(args)})"

    def _expression(self, arg: Any) -> str:
        if isinstance(arg, Ref):
            if arg.call not in self._bound:
                self._bound.add(arg.call)
                self._loaded.append(arg.call)
            return f"v{arg.call}" + "".join(f"[{p!r}]" for p in arg.path)
        if isinstance(arg, Ext):
            name = f"e{arg.id}"
            if arg.id not in self.externals:
                raise _NotExpressible(f"external {arg.id}")
            self.cells[name] = self.externals[arg.id]
            return name
        if isinstance(arg, Seq) and not is_constant(arg):
            items = [self._expression(a) for a in arg.items]
            if arg.kind == "list":
                return f"[{', '.join(items)}]"
            return f"({', '.join(items)},)" if len(items) == 1 else f"({', '.join(items)})"
        value = self.constant(arg)
        if type(value) in _INLINE or (type(value) is float and math.isfinite(value)):
            return repr(value)
        name = f"c{self._constants}"
        self._constants += 1
        self.cells[name] = value
        return name


def _comment(label: str) -> str:
    return f"  # {' '.join(label.split())}" if label else ""


def is_constant(arg: Any) -> bool:
    """No Ref or Ext anywhere in it: a value fixed when the plan is made."""
    if isinstance(arg, (Ref, Ext)):
        return False
    if isinstance(arg, Seq):
        return all(is_constant(a) for a in arg.items)
    return True

