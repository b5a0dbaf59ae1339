"""Views of measured affinity suggestions (`opbench model --suggest`, `opbench suggest`):
one table's cells for the terminal, Markdown and HTML, and the CSV with the Ascend affinity
CSV's columns first (affinity_api_call.csv: File, Start Line, End Line, Api Type, Api Call
Name, Affinity Api Name), then what opbench measured."""
from __future__ import annotations

import csv
import html
import io
from typing import Sequence

from rich.console import Console
from rich.table import Table

from opbench.model.impact.record import SuggestionRow
from opbench.report.text import fmt_time

__all__ = ["CSV_COLUMNS", "csv_text", "suggestion_cells", "SUGGESTION_HEADERS",
           "render_suggestions_terminal", "suggestions_markdown", "suggestions_html"]

CSV_COLUMNS = ("File", "Start Line", "End Line", "Api Type", "Api Call Name",
               "Affinity Api Name", "Calls Per Step", "Time Now (s)", "Time After (s)",
               "Saving (s)", "Saving CI Low (s)", "Saving CI High (s)", "Share",
               "Outputs Equal", "Verdict", "Family", "Replacement", "Detail")
SUGGESTION_HEADERS = ("where", "now", "instead", "calls", "saving/step", "95% CI", "share",
                      "outputs", "verdict")


def _where(row: SuggestionRow) -> str:
    lines = (f"{row.start_line}" if row.start_line == row.end_line
             else f"{row.start_line}-{row.end_line}")
    return f"{row.file}:{lines}" if row.file else "?"


def _signed(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return ("-" if seconds < 0 else "") + fmt_time(abs(seconds))


def _outputs(row: SuggestionRow) -> str:
    if row.outputs_equal is None:
        return "-"
    if row.outputs_equal:
        return "equal"
    return "differ" if row.max_difference is None else f"differ ({row.max_difference:.2g})"


def suggestion_cells(row: SuggestionRow) -> list[str]:
    saving = row.saving_s or {}
    ci = (f"[{_signed(saving.get('ci_low'))}, {_signed(saving.get('ci_high'))}]"
          if saving else "-")
    share = f"{row.share:.1%}" if row.share is not None else "-"
    return [_where(row), row.api, row.affinity_api, str(row.calls),
            _signed(saving.get("estimate")), ci, share, _outputs(row), row.verdict]


def render_suggestions_terminal(rows: Sequence[SuggestionRow], console: Console) -> None:
    table = Table(title="Suggestions (same framework, measured in this step)",
                  title_justify="left")
    for i, header in enumerate(SUGGESTION_HEADERS):
        table.add_column(header, justify="left" if i < 3 or i > 6 else "right",
                         overflow="fold")
    for row in rows:
        table.add_row(*suggestion_cells(row))
    console.print(table)
    for row in rows:
        if row.detail and row.verdict not in ("faster", "slower", "no measurable gain here"):
            console.print(f"  {_where(row)}: {row.detail}", style="dim", highlight=False,
                          markup=False)


def suggestions_markdown(rows: Sequence[SuggestionRow]) -> list[str]:
    out = ["#### Suggestions (same framework, measured in this step)", "",
           "| " + " | ".join(SUGGESTION_HEADERS) + " |",
           "|---|---|---|" + "---:|" * 4 + "---|---|"]
    for row in rows:
        cells = suggestion_cells(row)
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return out + [""]


def suggestions_html(rows: Sequence[SuggestionRow]) -> str:
    if not rows:
        return ""
    esc = html.escape
    head = "".join(f"<th>{esc(h)}</th>" for h in SUGGESTION_HEADERS)
    body = "\n".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in suggestion_cells(r))
                     + "</tr>" for r in rows)
    return (f'<section id="suggestions"><h2>Suggestions</h2>'
            f"<table><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table>"
            f"</section>")


def csv_text(rows: Sequence[SuggestionRow]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        saving = row.saving_s or {}

        def value(v: object) -> str:
            return "" if v is None else repr(v) if isinstance(v, float) else str(v)
        writer.writerow([row.file, row.start_line, row.end_line, row.api_type, row.api,
                         row.affinity_api, row.calls, value(row.time_now_s),
                         value(row.time_after_s), value(saving.get("estimate")),
                         value(saving.get("ci_low")), value(saving.get("ci_high")),
                         value(row.share),
                         "" if row.outputs_equal is None else str(row.outputs_equal).lower(),
                         row.verdict, row.family, row.replacement, row.detail])
    return buffer.getvalue()
