"""The lines `opbench bisect` prints (runloop/bisect.py BisectResult): what was probed,
then each regression with where it got slower and the intervals that say so."""
from __future__ import annotations

from typing import Mapping

from opbench.runloop.bisect import BisectResult, Estimate, Regression

__all__ = ["bisect_lines"]


def _slower(e: Estimate) -> str:
    """`1.52x slower [1.47, 1.58]`: time here / time in the first, with its interval."""
    return f"{1 / e.ratio:.2f}x [{1 / e.high:.2f}, {1 / e.low:.2f}]"


def _regression_line(r: Regression, envs: tuple[str, ...]) -> str:
    total = f"{_slower(r.total)} slower in {envs[-1]} than in {envs[0]}"
    before, after = envs[r.last_like_first], envs[r.first_slower]
    at = f" ({after}: {_slower(r.at_first_slower)})" if r.at_first_slower else ""
    if r.kind == "undecided":
        return (f"{r.instance}: {total}; the step lies after {before}, at or before {after}: "
                f"a probe in between was too noisy to place")
    if r.kind == "creep":
        return (f"{r.instance}: {total}; CREEP: it got slower first in {after}{at}, after "
                f"{before}, and went on slowing after it")
    where = (f"got slower in {after}" if r.found
             else f"got slower after {before}, at or before {after}")
    return f"{r.instance}: {total}; {where}{at}"


def bisect_lines(result: BisectResult,
                 identities: Mapping[str, str] | None = None) -> list[str]:
    """identities: what each measured environment is, as its probe's record says
    (report/text.side_identity: framework, version, build, interpreter)."""
    envs = result.environments
    probed = ", ".join(envs[k] for k in result.probed)
    n = len(result.probed)
    lines = [f"{len(envs)} environments, {n} probe{'' if n == 1 else 's'} against {envs[0]} "
             f"({probed}); ratios are time in an environment / time in {envs[0]}, with 95% "
             f"intervals"]
    lines += [f"  {env}: {identities[env]}" for env in envs if env in (identities or {})]
    lines.append(f"{len(result.regressions)} slower in {envs[-1]}, "
                 f"{len(result.not_slower)} not")
    steps = [r for r in result.regressions if r.kind == "step"]
    creeps = [r for r in result.regressions if r.kind == "creep"]
    if creeps:
        lines.append(f"creep: {len(creeps)} of the {len(result.regressions)} slowed over "
                     f"more than one environment")
    lines += [_regression_line(r, envs) for r in sorted(
        result.regressions, key=lambda r: (r.first_slower, r.instance))]
    if steps and not creeps:
        lines.append("no creep: each regression's first slower environment holds all of it")
    return lines
