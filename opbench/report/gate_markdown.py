"""The gate's Markdown summary, shaped for a CI job summary ($GITHUB_STEP_SUMMARY and
the like): the outcome and exit code first, then every baseline-hygiene note, then the
instances worst first (regressions by size), passes folded away."""
from __future__ import annotations

from typing import Any

from opbench.gate.decision import GateVerdict
from opbench.gate.evaluate import GateResult, InstanceResult

__all__ = ["OUTCOME", "render_markdown", "pct", "ratio_text"]

OUTCOME = {0: "PASS", 1: "FAIL: regression", 3: "INCONCLUSIVE"}
_ICON = {GateVerdict.PASS: "✅", GateVerdict.REGRESSION: "❌", GateVerdict.BROKEN: "💥",
         GateVerdict.INCONCLUSIVE: "❔", GateVerdict.MISSING: "⚠️", GateVerdict.NEW: "🆕"}
# Rows beyond this many passes go into a folded <details> block: a job summary is read on
# one screen, and the passes are the part nobody needs to scroll through.
_MAX_OPEN_ROWS = 50


def pct(change: float | None) -> str:
    return "-" if change is None else f"{(change - 1.0) * 100:+.1f}%"


def ratio_text(ratio: tuple[float, float, float] | None) -> str:
    return "-" if ratio is None else f"{ratio[0]:.3g} [{ratio[1]:.3g}, {ratio[2]:.3g}]"


def _change_cell(inst: InstanceResult, attribute: str) -> str:
    cells = []
    for m in inst.measurements:
        if m.decision is None:
            continue
        path = getattr(m.decision.last, attribute)
        if path is None:
            continue
        e = path.estimate
        prefix = f"{m.key}: " if len(inst.measurements) > 1 else ""
        cells.append(f"{prefix}{pct(e.change)} [{pct(e.ci_low)}, {pct(e.ci_high)}]")
    return "<br>".join(cells) or "-"


def _escape(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _row(inst: InstanceResult) -> str:
    name = f"`{inst.id}`" + (f" (was `{inst.baseline_id}`)" if inst.renamed else "")
    stage = " (re-measured)" if inst.remeasured else ""
    cells = [f"{_ICON[inst.verdict]} {inst.verdict.value}{stage}", name,
             _escape(inst.decided_by or "-"),
             _change_cell(inst, "ratio"), _change_cell(inst, "target_time"),
             _change_cell(inst, "reference_time"),
             f"{inst.current_verdict or '-'} {ratio_text(inst.current_ratio)}",
             ratio_text(inst.baseline_ratio),
             f"{inst.min_effect:.0%}" + (" (noise floor)" if inst.raised_by_noise else "")]
    return "| " + " | ".join(cells) + " |"


_HEADER = ("| gate | instance | decided by | ratio change | target time change | "
           "reference time change | now: verdict, ratio [95% CI] | baseline ratio | "
           "min effect |\n|---|---|---|---|---|---|---|---|---|")


def render_markdown(result: GateResult, title: str = "opbench gate") -> str:
    code = result.exit_code
    counts = {k: v for k, v in result.counts().items() if v}
    lines = [f"## {title}: {OUTCOME.get(code, code)} (exit {code})", "",
             ", ".join(f"{n} {k}" for k, n in counts.items()) or "no instances", ""]
    if not result.same_machine:
        lines += ["Different machine from the baseline: regressions are judged on the "
                  "torch-normalised ratio only.", ""]
    lines += ["Changes are current vs baseline; below 0% the target (MindSpore) got slower, "
              "relative to the reference (ratio) or in absolute time. A regression needs the "
              "95% interval below 0% and a drop of at least the min effect.", ""]
    if result.notes:
        lines += ["### Baseline hygiene", ""]
        lines += [f"- **{n.kind}**: {_escape(n.message)}" for n in result.notes]
        lines.append("")
    ordered = result.worst_first()
    problems = [i for i in ordered if i.verdict is not GateVerdict.PASS]
    passes = [i for i in ordered if i.verdict is GateVerdict.PASS]
    if problems:
        lines += ["### Needs attention (worst first)", "", _HEADER]
        lines += [_row(i) for i in problems]
        lines.append("")
        lines += ["<details><summary>reasons</summary>", ""]
        lines += [f"- `{i.id}`: {_escape(i.reason)}" for i in problems]
        lines += ["", "</details>", ""]
    slow = result.slow_now()
    if slow:
        lines += [f"### Slower than the reference now ({len(slow)})", "",
                  "The cross-framework verdict of this run: the whole interval of "
                  "torch time / MindSpore time is below the threshold" +
                  (" (fails the gate: --fail-on-slow)." if result.settings.fail_on_slow
                   else " (reported, does not fail the gate)."), ""]
        lines += [f"- `{i.id}`: {ratio_text(i.current_ratio)}" for i in
                  sorted(slow, key=lambda i: i.current_ratio or (0.0,))]
        lines.append("")
    if passes:
        fold = len(problems) + len(passes) > _MAX_OPEN_ROWS or bool(problems)
        if fold:
            lines += [f"<details><summary>{len(passes)} passed</summary>", ""]
        else:
            lines += ["### Passed", ""]
        lines += [_HEADER] + [_row(i) for i in passes] + [""]
        if fold:
            lines += ["</details>", ""]
    lines += ["Exit codes: 0 pass, 1 regression (or broken case), 2 usage/setup error, "
              "3 inconclusive (noisy or missing cases, nothing regressed).", ""]
    return "\n".join(lines)
