"""The steps a script marked with `opbench.model.step()`: which stretches of its calls are the
steady state. One rule for `opbench model` (model/steady.py) and `opbench trace compare`.

A mark opens a step; the steps are the stretches between marks. With several steps the first
is the warm-up and is left out. Nothing closes the last step: it runs to the end of the
calls and holds whatever the script did after its loop (an evaluation, saving). When it
starts with the calls of the step before it, it is cut to that step's length.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable, Sequence

__all__ = ["MarkedSteps", "marked_steps"]


@dataclass(frozen=True)
class MarkedSteps:
    steady: tuple[tuple[int, int], ...]    # [start, end) of each steady step
    warmup: tuple[int, int] | None         # the first step, left out, when there are several
    after_loop: int                        # calls cut from the end of the last step

    @property
    def notes(self) -> list[str]:
        return ([] if self.warmup else ["one marked step only: it is measured cold"]) + (
            [f"{self.after_loop} calls after the last marked step (after the loop) are left "
             f"out"] if self.after_loop else [])


def marked_steps(marks: Sequence[int], count: int,
                 key: Callable[[int], Hashable]) -> MarkedSteps | None:
    """The steps of `count` calls given the positions of the marks (a mark at position p
    opens a step before call p). `key(i)` says what must be equal for call i of one step to
    be the same call as in another. None when the marks enclose no call."""
    bounds = [m for m in marks if m < count] + [count]
    steps = [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]
    if not steps:
        return None
    steps, after_loop = _trim_last_step(steps, key)
    if len(steps) > 1:
        return MarkedSteps(tuple(steps[1:]), steps[0], after_loop)
    return MarkedSteps(tuple(steps), None, after_loop)


def _trim_last_step(steps: list[tuple[int, int]], key: Callable[[int], Hashable]
                    ) -> tuple[list[tuple[int, int]], int]:
    if len(steps) < 2:
        return steps, 0
    (prev_start, prev_end), (last_start, last_end) = steps[-2], steps[-1]
    length = prev_end - prev_start
    if last_end - last_start <= length:
        return steps, 0
    if not all(key(prev_start + i) == key(last_start + i) for i in range(length)):
        return steps, 0
    return steps[:-1] + [(last_start, last_start + length)], last_end - last_start - length
