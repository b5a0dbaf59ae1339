"""The Markdown view of a results record (a CI job summary, a pull-request comment)."""
from __future__ import annotations

from opbench.gapmap.analysis import analyse, ceilings_lines
from opbench.report.text import (
    describe_inputs,
    fmt_ratio,
    fmt_time,
    header_text,
    kernel_gap_headers,
    kernel_gap_rows,
    problem_text,
    rows,
    sorted_rows,
    summary_line,
)
from opbench.report.inside_text import PROFILE_HEADERS, profile_cause_lines, profile_rows
from opbench.results.records import RunRecord

__all__ = ["render_markdown"]


def render_markdown(record: RunRecord, limit: int | None = None) -> str:
    ref, tgt = record.config.reference, record.config.target
    gap = analyse(record)
    out = [f"### opbench: {tgt} against {ref}", "", header_text(record), ""]
    if gap.headlines:
        out += ["**Top causes of the SLOW verdicts**", ""]
        out += [f"- {line}" for line in gap.headlines] + [""]
    gap_rows = kernel_gap_rows(record, gap.kernel_gaps())
    if gap_rows:
        headers = kernel_gap_headers(record)
        out += ["**Largest kernel gaps** (size sweeps; kernel ratio = target / reference "
                "marginal throughput)", "", "| " + " | ".join(headers) + " |",
                "|---|---|" + "---:|" * (len(headers) - 2)]
        out += ["| `" + row[0] + "` | " + " | ".join(row[1:]) + " |" for row in gap_rows]
        out.append("")
    inside = profile_rows(record)
    if inside:
        out += ["**Inside each call** (--profile: the frameworks' own profilers; host = the "
                "timed call less its kernels)", "",
                "| " + " | ".join(PROFILE_HEADERS) + " |", "|---|---|---|---:|---:|---:|---|---|"]
        out += ["| `" + row[0] + "` | " + " | ".join(row[1:]) + " |" for row in inside]
        out += [""] + [f"- {line}" for line in profile_cause_lines(record)] + [""]
    ceilings = ceilings_lines(record)
    if ceilings:
        out += ["**Machine ceilings** (per framework, the run's threads)", ""]
        out += [f"- {line}" for line in ceilings] + [""]
    out += [f"Ratio = {ref} time / {tgt} time (below 1: {tgt} slower), with 95% interval.", "",
            f"| instance | inputs | mode | {ref} | {tgt} | ratio [95% CI] | threshold | "
            f"verdict |", "|---|---|---|---:|---:|---:|---:|---|"]
    for n, (inst, key, m) in enumerate(sorted_rows(record)):
        if limit is not None and n >= limit:
            out.append(f"| ... | {len(list(rows(record))) - limit} more rows | | | | | | |")
            break
        if m is None:
            out.append(f"| `{inst.id}` | {describe_inputs(inst)} | - | - | - | - | - | "
                       f"**{inst.verdict}** {problem_text(inst)[:200]} |")
            continue
        out.append(f"| `{inst.id}` | {describe_inputs(inst)} | {key} | "
                   f"{fmt_time(m.median_s(ref))} | {fmt_time(m.median_s(tgt))} | "
                   f"{fmt_ratio(m)} | {m.threshold:g} | **{m.verdict}** |")
    out += ["", summary_line(record), ""]
    return "\n".join(out)
