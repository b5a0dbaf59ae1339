"""Views of a `model` record (opbench/model/impact/record.py ModelRecord): which APIs cost the model
how much of its step time. Terminal (rich), Markdown and one offline HTML page with a bar
chart of the time lost per API and the projected against the traced totals (inline SVG)."""
from __future__ import annotations

import html
import io

from rich.console import Console
from rich.text import Text

from opbench.model.impact.project import MODES_APART
from opbench.model.impact.record import LostRow, ModelRecord, SpeedModes
from opbench.report.suggestions import (render_suggestions_terminal, suggestions_html,
                                        suggestions_markdown)
from opbench.report.text import fmt_time

__all__ = ["model_lines", "render_model_terminal", "render_model_markdown",
           "render_model_html", "DEFAULT_TOP"]

DEFAULT_TOP = 15
# Lines of what was not covered shown before "... and N more".
NOT_COVERED_SHOWN = 8
# Processes whose medians differ by this factor or more (the factor at which impact.py runs
# more of them) are listed: MindSpore's come in modes here (a step of 62 or ~190 ms), which
# the interval alone does not show.
SPREAD_SHOWN = MODES_APART
# A self-check this far from 0 says the capture's process ran at another speed than the
# replay's: a MindSpore transformer capture read its calls 55% above their replay (-55%),
# the port's own fresh runs differing up to 2.1x here.
SELF_CHECK_APART = 0.25


def _signed(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return ("-" if seconds < 0 else "") + fmt_time(abs(seconds))


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _self_check_apart_line(record: ModelRecord) -> str:
    """Why a self-check reads far from 0. A blocking launch (torch on the CPU) reading low is
    the script's context: with no tracer, a call inside a Hugging Face model's Python took
    1.5-4.2x what it takes back to back (tools/context_effect.py, docs/model.md), and the
    replay runs a step's calls without that Python between them. Otherwise (MindSpore's
    queued launch, or a replay reading high) the processes' speed is the known cause here."""
    traced = record.traced_framework
    projection = record.projected_s.get(traced)
    processes = projection.processes if projection else 0
    if record.self_check < 0 and projection is not None and projection.launch == "blocking":
        return (f"  {traced}'s calls cost more inside the script, between its Python, than in "
                f"the replay's step, where they run back to back (1.5-4x on small calls here, "
                f"measured with no tracer: docs/model.md, \"The self-check's base\"): the "
                f"replay reads low by that, not by a fault")
    return (f"  the traced time is one process's and its replay's {processes} processes ran "
            f"at another speed: {traced}'s speed differs between processes here; judge by the "
            f"projection, not the traced time")


def model_lines(record: ModelRecord) -> list[str]:
    """The lines every view starts with: what ran, the region, the totals, the self-check
    and coverage, what was not covered, the training step and what was measured alone."""
    ref, tgt, traced = record.reference, record.target, record.traced_framework
    region, script = record.region, record.script
    lines = [f"script: {' '.join(record.command)} (in {record.interpreter}), "
             f"{traced} {record.traced_version}, "
             f"{record.threads if record.threads else 'default'} threads"]
    if record.sides:
        lines.append(f"sides: reference {ref} = {record.described(ref)}; target {tgt} = "
                     f"{record.described(tgt)}"
                     + (" (two builds of one framework: every call replayed in both, as "
                        "the script made it)" if record.one_framework else ""))
    if script.status:
        lines.append(f"the script exited with status {script.status}"
                     + (f": {script.error}" if script.error else "")
                     + " (what it ran before is measured)")
    lines.append(f"steady state ({region.rule}): {region.steps} steps of "
                 f"{region.calls_per_step} calls; set-up and warm-up left out: "
                 f"{region.excluded_calls} calls, {fmt_time(region.excluded_s)} traced"
                 + (f" ({region.note})" if region.note else ""))
    totals = [f"{fw} {fmt_time(p.estimate)} [{fmt_time(p.ci_low)}, {fmt_time(p.ci_high)}] "
              f"({p.launch} launch)"
              for fw in (ref, tgt) for p in [record.projected_s.get(fw)] if p]
    lines.append(f"projected time of the {region.steps} steps: " + "; ".join(totals))
    for fw in (ref, tgt):
        p = record.projected_s.get(fw)
        if p and p.modes_apart() >= SPREAD_SHOWN:
            each = ", ".join(fmt_time(v) for v in p.process_medians)
            lines.append(f"  {fw}'s replay processes differ up to {p.modes_apart():.1f}x "
                         f"(each process's median: {each}): it runs in modes here; the "
                         f"projection is the mean step over its {p.processes} processes")
    ratio = record.ratio
    if ratio.ratio is not None:
        interval = (f" [{ratio.ci_low:.3g}, {ratio.ci_high:.3g}]"
                    if ratio.ci_low is not None and ratio.ci_high is not None else "")
        lines.append(f"ratio {ref}/{tgt} {ratio.ratio:.3g}{interval} (below 1: {tgt} slower)")
    if record.self_check is not None:
        base = (f"{fmt_time(record.own_traced_s)}, " if record.own_traced_s is not None
                else "")
        lines.append(f"self-check: {traced}'s replayed calls take {record.self_check * 100:+.0f}"
                     f"% against their traced time ({base}every call it replayed as itself; "
                     f"each call synced in both, as traced)")
        partial = _self_check_scope(record)
        if partial:
            lines.append(partial)
        modes = record.speed_modes
        if modes is not None:
            lines.append(_speed_modes_line(traced, modes))
        if abs(record.self_check) >= SELF_CHECK_APART and not partial:
            lines.append(_self_check_apart_line(record))
    lines.append(f"coverage: {record.coverage * 100:.0f}% of the region's traced time "
                 f"({fmt_time(record.traced_s)}) was replayed in both "
                 f"{'builds' if record.one_framework else 'frameworks'}")
    for fw in (ref, tgt):
        share = record.stand_in_share.get(fw)
        if share:
            lines.append(f"  stand-ins: {share * 100:.1f}% of {fw}'s replayed step (calls it "
                         f"could not run, replaced by outputs of the recorded shape and dtype)")
    for row in record.not_covered[:NOT_COVERED_SHOWN]:
        lines.append(f"  not covered: {row.api} x{row.calls} ({row.share * 100:.1f}%): "
                     f"{row.reason}")
    if len(record.not_covered) > NOT_COVERED_SHOWN:
        lines.append(f"  ... and {len(record.not_covered) - NOT_COVERED_SHOWN} more "
                     f"(see the JSON)")
    for m in record.mismatches[:NOT_COVERED_SHOWN]:
        lines.append(f"  MISMATCH: call {m.call} {m.api} -> {m.mapped_api}: {m.detail}")
    for error in record.errors:
        lines.append(f"  error: {error}")
    training = record.training
    if training:
        lines.append(f"training step: backward {fmt_time(training.backward_traced_s)} traced "
                     f"({training.backward_share * 100:.0f}% of the region), "
                     + ("projected: " + "; ".join(f"{fw}: {how}"
                                                  for fw, how in training.how.items())
                        if training.covered else "NOT projected (see not covered)"))
    if record.isolated.note:
        lines.append(f"measured alone: {record.isolated.note}")
    if record.isolated.seconds:
        lines.append(f"measured alone: signatures holding {record.isolated.share * 100:.0f}% "
                     f"of the region's traced time ({record.isolated.seconds:.0f} s within "
                     f"--budget: the five losing most first, then by traced time); context = "
                     f"time in the model / time alone")
    lost = sum(max(0.0, r.lost_s or 0.0) for r in record.apis)
    lines.append(f"time {tgt} loses where it is slower: {fmt_time(lost)} over the region; "
                 f"APIs by time lost:")
    return lines


def _headers(record: ModelRecord) -> list[str]:
    ref, tgt = record.reference, record.target
    return ["api", "replayed as", "calls", f"{ref} /call", f"{tgt} /call",
            "ratio [95% CI]", "lost [95% CI]", "share", "alone", f"{tgt} context", "cause"]


def _cells(record: ModelRecord, row: LostRow) -> list[str]:
    context = row.context_factor.get(record.target)
    return [row.api, row.mapped_api, str(row.calls), fmt_time(row.reference_s),
            fmt_time(row.target_s),
            f"{_ratio(row.ratio)} [{_ratio(row.ratio_ci[0])}, {_ratio(row.ratio_ci[1])}]",
            f"{_signed(row.lost_s)} [{_signed(row.lost_ci[0])}, {_signed(row.lost_ci[1])}]",
            f"{row.share * 100:.1f}%",
            (f"{_ratio(row.isolated_ratio)} {row.verdict or ''}".strip()
             if row.isolated_ratio is not None else "-"),
            f"{context:.2g}x" if context else "-",
            row.cause or "-"]


def _terminal_rows(record: ModelRecord, top: int) -> list[Text]:
    """The API table for a terminal: each API on a line of its own, whole (`torch.nn.
    functional.scaled_dot_product_attention -> softmax(q @ k^T * scale + mask) @ v
    (mindspore.mint)` is 100 characters), and its figures on the line under it in columns
    with two-line headers. In one rich table of eleven columns the names were folded to a
    few characters a line in 120 columns."""
    headers = [h.split(" ", 1) if " " in h else [h, ""] for h in _headers(record)[2:]]
    rows = [_cells(record, row)[2:] for row in record.apis[:top]]
    widths = [max([len(h[0]), len(h[1])] + [len(r[i]) for r in rows])
              for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) for c, w in zip(cells, widths)).rstrip()

    out = [Text("api -> replayed as", style="bold"),
           Text(line([h[0] for h in headers]), style="bold"),
           Text(line([h[1] for h in headers]), style="bold"),
           Text("-" * max(len(line([h[0] for h in headers])), 18))]
    for row, cells in zip(record.apis[:top], rows):
        name = Text(row.api, style="bold")
        name.append(f" -> {row.mapped_api}", style="default")
        out += [name, Text(line(cells))]
    return out


def render_model_terminal(record: ModelRecord, console: Console,
                          top: int = DEFAULT_TOP) -> None:
    for line in model_lines(record):
        console.print(Text(line))
    console.print()
    for text in _terminal_rows(record, top):
        # never cut: a name longer than the terminal wraps whole, not folded in a column
        console.print(text, overflow="fold", crop=False)
    for row in record.apis[:top]:
        if row.cause_detail and (row.lost_s or 0) > 0:
            console.print(Text(f"  {row.api}: {row.cause or 'cause'}: {row.cause_detail}",
                               style="dim"))
    if len(record.apis) > top:
        console.print(Text(f"{len(record.apis) - top} more APIs in the JSON (--top to show "
                           f"more)", style="dim"))
    if record.suggestions:
        render_suggestions_terminal(record.suggestions, console)


def render_model_markdown(record: ModelRecord, top: int = DEFAULT_TOP) -> str:
    out = [f"### opbench model: {record.described(record.target)} against "
           f"{record.described(record.reference)}", ""]
    out += [f"- {line}" for line in model_lines(record)] + [""]
    headers = _headers(record)
    out += ["| " + " | ".join(headers) + " |", "|---|---|" + "---:|" * (len(headers) - 2)]
    for row in record.apis[:top]:
        cells = _cells(record, row)
        out.append("| `" + cells[0] + "` | `" + cells[1] + "` | " + " | ".join(cells[2:]) + " |")
    out.append("")
    if record.suggestions:
        out += suggestions_markdown(record.suggestions)
    return "\n".join(out)


def _bars_svg(record: ModelRecord, top: int) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in record.apis[:top] if r.lost_s is not None][::-1]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, max(2.5, 0.3 * len(rows) + 1.2)),
                                  gridspec_kw={"width_ratios": [3, 1]})

    def end(row: LostRow, i: int) -> float:
        value = row.lost_ci[i]
        return row.lost_s if value is None else value      # 0.0 is an end, not a gap

    ax.barh(range(len(rows)), [r.lost_s * 1e3 for r in rows],
            xerr=[[max(0.0, (r.lost_s - end(r, 0)) * 1e3) for r in rows],
                  [max(0.0, (end(r, 1) - r.lost_s) * 1e3) for r in rows]],
            color="#D55E00", ecolor="#555555")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r.api for r in rows], fontsize=7)
    ax.set_xlabel(f"time lost over the region (ms, 95% interval); negative: "
                  f"{record.target} faster")
    ax.axvline(0, color="#888888", lw=0.6)
    names, totals, lows, highs = ["traced"], [record.traced_s * 1e3], [0.0], [0.0]
    for fw in (record.reference, record.target):
        p = record.projected_s.get(fw)
        if p:
            names.append(f"{fw}\nprojected")
            totals.append(p.estimate * 1e3)
            lows.append(max(0.0, (p.estimate - p.ci_low) * 1e3))
            highs.append(max(0.0, (p.ci_high - p.estimate) * 1e3))
    ax2.bar(range(len(totals)), totals, yerr=[lows, highs],
            color=["#888888", "#0072B2", "#D55E00"][:len(totals)], ecolor="#333333")
    ax2.set_xticks(range(len(totals)))
    ax2.set_xticklabels(names, fontsize=7)
    ax2.set_ylabel("region time (ms)")
    buf = io.StringIO()
    fig.tight_layout()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def render_model_html(record: ModelRecord, top: int = DEFAULT_TOP) -> str:
    esc = html.escape
    rows = "\n".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in _cells(record, r))
                     + "</tr>" for r in record.apis)
    head = "".join(f"<th>{esc(h)}</th>" for h in _headers(record))
    lines = "".join(f"<li>{esc(line)}</li>" for line in model_lines(record))
    title = (f"opbench model: {esc(record.described(record.target))} against "
             f"{esc(record.described(record.reference))}")
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:sans-serif;margin:2em;}} table{{border-collapse:collapse;
font-size:13px}} td,th{{border-bottom:1px solid #ddd;padding:3px 8px;text-align:right}}
td:first-child,td:nth-child(2),th:first-child,th:nth-child(2){{text-align:left}}</style>
</head><body>
<h1>{title}</h1>
<ul>{lines}</ul>
<div style="display:flex;gap:2em;align-items:flex-start;flex-wrap:wrap">
<figure id="lost">{_bars_svg(record, top)}</figure>{suggestions_html(record.suggestions)}
</div>
<table id="apis"><thead><tr>{head}</tr></thead><tbody>
{rows}
</tbody></table>
</body></html>
"""


def _speed_modes_line(traced: str, modes: SpeedModes) -> str:
    """Whether the replay ran in the capture's speed mode (model/impact/mode_match.py)."""
    probes = ", ".join(fmt_time(p) for p in modes.replay_probe_s)
    head = (f"  speed probe: capture {fmt_time(modes.capture_probe_s)} a call, replay rounds "
            f"{probes}; ")
    if modes.rounds_in_capture_mode and modes.self_check_in_capture_mode is not None:
        return (head + f"over the {modes.rounds_in_capture_mode} of {modes.rounds} rounds in "
                f"the capture's mode (within {modes.mode_factor:g}x) the self-check reads "
                f"{modes.self_check_in_capture_mode * 100:+.0f}%")
    return (head + f"no round ran in the capture's mode (within {modes.mode_factor:g}x): "
            f"{traced}'s speed modes differ between the two, and the self-check reads "
            f"them, not a fault")


# Below this share of the region's traced time, the self-check is said to be partial.
SELF_CHECK_WHOLE = 0.99


def _self_check_scope(record: ModelRecord) -> str:
    """What the self-check leaves out, plainly, where the traced framework's replay could not
    run part of the region (a @mindspore.jit-compiled step: no replay has its graph)."""
    if record.own_traced_s is None or record.traced_s <= 0:
        return ""
    share = record.own_traced_s / record.traced_s
    if share >= SELF_CHECK_WHOLE:
        return ""
    traced = record.traced_framework
    why = "; ".join(f"{row.api} x{row.calls} ({row.share * 100:.1f}%): {row.reason}"
                    for row in record.not_covered[:2])
    return (f"  the self-check does not apply to {(1 - share) * 100:.1f}% of the region: "
            f"{traced}'s own replay could not run it" + (f" ({why})" if why else "")
            + f"; it is over the other {share * 100:.1f}% only")

