"""The HTML report: one static file, offline (inline SVG plots, inline script, no CDN).

Top to bottom: the run (date, machine, versions, view), the top causes, the machine
ceilings, the forest plot of every ratio, the largest kernel gaps, the overhead-against-
throughput scatter, the scaling curves, then one table with every instance: each measured
view (serial, async, with backward) side by side, its cause and roofline fractions,
sortable by any column and filtered by a text box.
"""
from __future__ import annotations

import html
from collections import defaultdict
from typing import Any, Mapping, Sequence

from opbench.gapmap.analysis import GapMap, analyse, ceilings_lines
from opbench.gapmap.plots import (
    MAX_SCALING_PLOTS,
    forest_svg,
    overhead_points,
    overhead_throughput_svg,
    scaling_svg,
)
from opbench.results.records import Measurement, PeakMemory, RunRecord

UNIT_AXES = {"bytes": "bytes moved (inputs + outputs)", "flops": "FLOPs"}

# Sorting (click a header; numbers by data-v) and filtering (every word must appear in the
# row). Marks the page ready so a test can tell the script ran.
_SCRIPT = """
(function () {
  var table = document.getElementById('rows');
  var body = table.tBodies[0];
  table.querySelectorAll('th').forEach(function (th, col) {
    th.addEventListener('click', function () {
      var asc = th.dataset.dir !== 'asc';
      th.dataset.dir = asc ? 'asc' : 'desc';
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[col], y = b.cells[col];
        var nx = parseFloat(x.dataset.v), ny = parseFloat(y.dataset.v);
        var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny
              : x.textContent.localeCompare(y.textContent);
        return asc ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
  var filter = document.getElementById('filter');
  filter.addEventListener('input', function () {
    var words = filter.value.toLowerCase().split(/\\s+/).filter(Boolean);
    Array.prototype.forEach.call(body.rows, function (r) {
      var text = r.textContent.toLowerCase();
      r.style.display = words.every(function (w) { return text.indexOf(w) >= 0; })
        ? '' : 'none';
    });
  });
  document.body.dataset.ready = '1';
})();
"""

_STYLE = """
body{font-family:sans-serif;margin:2em;max-width:1200px}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 6px;font-size:12px}
th{background:#f3f3f3;cursor:pointer}.SLOW{color:#cf222e;font-weight:bold}
.PASS{color:#1a7f37}.INCONCLUSIVE{color:#9a6700}.MISMATCH,.ERROR{color:#8250df}
figure{margin:1em 0}figure svg{max-width:100%;height:auto}.meta{color:#555}
"""


def _e(value: Any) -> str:
    return html.escape(str(value))


def _ratio_cell(m: Measurement | None) -> str:
    if m is None:
        return "<td data-v=''>-</td><td>-</td>"
    v = m.verdict
    return (f"<td data-v='{m.ratio:.6g}'>{m.ratio:.3g} [{m.ci_low:.3g}, "
            f"{m.ci_high:.3g}]</td><td class='{_e(v)}'>{_e(v)}</td>")


def _table(record: RunRecord, gap: GapMap) -> str:
    keys = sorted({k for inst in record.instances for k in inst.measurements},
                  key=lambda k: (k.split("+")[0] != "serial", "+" in k, k))
    causes = {(a.instance_id, a.key): a.cause for a in gap.attributions}
    sides = (record.config.reference, record.config.target)
    head = ["instance", "op"] + [h for k in keys for h in (f"ratio {k}", f"verdict {k}")]
    head += [f"{s} time ({keys[0]})" for s in sides] if keys else []
    head += ["cause", f"roofline {sides[0]}", f"roofline {sides[1]}", "peak memory"]
    out = ["<table id='rows'><thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head)
           + "</tr></thead><tbody>"]
    for inst in record.instances:
        ms = inst.measurements
        cells = [f"<td>{_e(inst.id)}</td><td>{_e(inst.op)}</td>"]
        cells += [_ratio_cell(ms.get(k)) for k in keys]
        first = ms.get(keys[0]) if keys else None
        for s in sides if keys else ():
            t = first.median_s(s) if first else None
            cells.append(f"<td data-v='{t or ''}'>{_time(t)}</td>")
        cause = next((c for (iid, _), c in causes.items() if iid == inst.id), "")
        if not ms:
            cause = f"{inst.verdict or ''}: {inst.error or 'outputs differ'}"
        cells.append(f"<td>{_e(cause)}</td>")
        points = gap.roofline.get((inst.id, keys[0]), {}) if keys else {}
        for s in sides:
            p = points.get(s)
            f = p.fraction if p is not None else None
            cells.append(f"<td data-v='{f if f is not None else ''}'>"
                         f"{'-' if p is None else _e(p.text())}</td>")
        cells.append(_memory_cell(inst.peak_memory, sides))
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _memory_cell(memory: Mapping[str, PeakMemory], sides: Sequence[str]) -> str:
    parts = [f"{s} {m.bytes / 2**20:.3g} MiB" for s in sides
             if (m := memory.get(s)) and m.bytes is not None]
    measures = {m.measure for m in memory.values() if m.measure}
    title = "; ".join(sorted(measures))
    return f"<td title='{_e(title)}'>{_e(', '.join(parts)) or '-'}</td>"


def _known(record: Any, key: str) -> Any:
    """The key's value, or '?' when the record lacks it (an older or partial file)."""
    return getattr(record, key) if record.has(key) else "?"


def _time(seconds: float | None) -> str:
    from opbench.report.text import fmt_time

    return fmt_time(seconds)


def _forest_rows(record: RunRecord) -> dict[str, list[tuple[str, float, float, float]]]:
    by_key: dict[str, list[tuple[str, float, float, float]]] = defaultdict(list)
    for inst in record.instances:
        for key, m in inst.measurements.items():
            by_key[key].append((inst.id, m.ratio, m.ci_low, m.ci_high))
    return by_key


def plotting_available() -> bool:
    """matplotlib is the optional `plot` extra: without it the page keeps its tables and
    says how to get the plots."""
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


NO_PLOTS = ("<p><i>Plots need matplotlib: pip install 'opbench[plot]', then "
            "<code>opbench report RESULTS.json --html out.html</code>.</i></p>")


def render_html(record: RunRecord) -> str:
    from opbench.report.text import (
        header_text,
        kernel_gap_headers,
        kernel_gap_rows,
        notes_lines,
        problem_lines,
        run_notes,
        summary_line,
    )

    cfg = record.config
    ref, tgt = cfg.reference, cfg.target
    gap = analyse(record)
    env = record.environment
    parts = [f"<h1>opbench: {_e(tgt)} against {_e(ref)}</h1>",
             f"<p class='meta'>run {_e(record.created_utc)} to "
             f"{_e(_known(record, 'finished_utc'))} on {_e(env.cpu_model)} "
             f"({_e(_known(env, 'cpu_count'))} cores, machine {_e(_known(env, 'machine_id'))},"
             f" {_e(env.platform or '')}); python {_e(env.python)}, numpy "
             f"{_e(env.numpy)}</p>",
             f"<p class='meta'>{_e(header_text(record))}</p>",
             f"<p><b>{_e(summary_line(record))}</b></p>"]
    if gap.headlines:
        parts.append("<h2>Top causes of the SLOW verdicts</h2><ul>"
                     + "".join(f"<li>{_e(h)}</li>" for h in gap.headlines) + "</ul>")
    ceilings = ceilings_lines(record)
    if ceilings:
        parts.append("<h2>Machine ceilings</h2><ul>"
                     + "".join(f"<li>{_e(c)}</li>" for c in ceilings) + "</ul>")
    plots = plotting_available()
    if not plots:
        parts.append(NO_PLOTS)
    forest = _forest_rows(record) if plots else {}
    if forest:
        parts.append("<h2>Ratios, worst first</h2><p>Each measurement's ratio with its 95% "
                     "interval; red: SLOW (the whole interval below the threshold), grey: "
                     "inconclusive. Views measured side by side.</p><div style='display:flex;"
                     "gap:1em;align-items:flex-start'>")
        for key, rows in forest.items():
            parts.append(f"<figure class='plot' data-plot='forest'><figcaption>{_e(key)}"
                         f"</figcaption>{forest_svg(rows, cfg.threshold, ref, tgt)}"
                         f"</figure>")
        parts.append("</div>")
    gap_rows = kernel_gap_rows(record, gap.kernel_gaps())
    if gap_rows:
        parts.append("<h2>Largest kernel gaps</h2><table><tr>"
                     + "".join(f"<th>{_e(h)}</th>" for h in kernel_gap_headers(record))
                     + "</tr>" + "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row)
                                         + "</tr>" for row in gap_rows) + "</table>")
    points = overhead_points(gap.sweeps) if plots else []
    if points:
        parts.append("<h2>Per-call overhead against kernel throughput</h2><p>One point per "
                     "size sweep: right of 1, the target pays more per call; below the "
                     "threshold, its kernel is slower per byte or FLOP.</p>"
                     "<figure class='plot' data-plot='scatter'>"
                     + overhead_throughput_svg(points, cfg.threshold, tgt, ref)
                     + "</figure>")
    if gap.sweeps and plots:
        worst = sorted(gap.sweeps, key=lambda s: (s.kernel_ratio is None,
                                                  s.kernel_ratio or 0.0))
        more = len(worst) - MAX_SCALING_PLOTS
        parts.append("<h2>Scaling with size</h2><p>Time per call against work, log-log: "
                     "medians with their errors and the fitted fixed + work / throughput "
                     "lines (dotted: a poor fit, not to be read). Worst kernel ratio first"
                     + (f"; {more} more sweeps are in the JSON" if more > 0 else "")
                     + ".</p><figure class='plot' data-plot='scaling'>"
                     + scaling_svg(worst, UNIT_AXES) + "</figure>")
    parts.append("<h2>Every instance</h2><p>Click a column to sort; type to filter "
                 "(every word must match).</p><input id='filter' placeholder='filter, e.g. "
                 "SLOW float16' size='40'>")
    parts.append(_table(record, gap))
    problems = problem_lines(record)
    if problems:     # why a MISMATCH or ERROR has no figures: as the terminal's Problems
        parts.append("<h2>Problems</h2><ul>"
                     + "".join(f"<li>{_e(p)}</li>" for p in problems) + "</ul>")
    notes = run_notes(record) + list(gap.shared_notes) + notes_lines(record, grouped=True)
    if notes:
        parts.append("<h2>What explains these ratios</h2><ul>"
                     + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>")
    return ("<!doctype html>\n<html><head><meta charset='utf-8'><title>opbench: "
            f"{_e(tgt)} vs {_e(ref)}</title><style>{_STYLE}</style></head><body>"
            + "\n".join(parts) + f"<script>{_SCRIPT}</script></body></html>\n")


__all__ = ["render_html"]
