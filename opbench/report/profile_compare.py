"""Views of `opbench profile show|compare` (opbench/profiles/compare.py): each side's step
split, the APIs by time lost with each side's kernels, the APIs with no counterpart, the
extra work (casts, layout changes, fallbacks). Terminal (rich) and Markdown; the JSON is
the records' as_dict."""
from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from opbench.profiles.compare import (ApiRow, ApiSide, ProfileComparison, ProfileSummary,
                                      SideInfo, UnmatchedApi)
from opbench.trace.units import format_ns

__all__ = ["side_line", "render_compare_terminal", "render_compare_markdown",
           "render_show_terminal", "render_show_markdown"]

_KERNELS_SHOWN = 3      # kernel names per cell: the heaviest; the JSON lists them all
# CUDA kernel names are C++ signatures of up to ~1000 characters (a direct_copy_kernel_cuda
# instantiation: 980); the views cut them, the JSON keeps them whole.
_NAME_CHARS = 60


def _short(name: str) -> str:
    return name if len(name) <= _NAME_CHARS else name[:_NAME_CHARS - 3] + "..."


def _time(seconds: float | None) -> str:
    return "-" if seconds is None else format_ns(seconds * 1e9)


def _signed(seconds: float) -> str:
    return ("-" if seconds < 0 else "+") + format_ns(abs(seconds) * 1e9)


def _share(part: float, whole: float) -> str:
    return f"{part / whole:.0%}" if whole > 0 else "-"


def side_line(label: str, s: SideInfo) -> str:
    extra = ", ".join(f"{w.launches} {w.kind} ({_time(w.time_s)})" for w in s.extra) or "none"
    return (f"{label}: {s.framework}, {s.source}, {'+'.join(s.devices)} ({s.path}): span "
            f"{_time(s.span_s)} = kernels {_time(s.kernel_s)} ({_share(s.kernel_s, s.span_s)})"
            f" + host {_time(s.host_s)} ({_share(s.host_s, s.span_s)}) + idle "
            f"{_time(s.idle_s)} ({_share(s.idle_s, s.span_s)}); {s.launches} kernel launches;"
            f" extra work: {extra}")


def _labels(c: ProfileComparison) -> tuple[str, str]:
    return (f"A {c.sides[0].framework} (reference)", f"B {c.sides[1].framework}")


def _kernels(side: ApiSide) -> str:
    shown = [f"{_short(k.name)} x{k.launches}" + (f" [{k.kind}]" if k.kind else "")
             for k in side.kernels[:_KERNELS_SHOWN]]
    more = len(side.kernels) - _KERNELS_SHOWN
    return ", ".join(shown) + (f" +{more}" if more > 0 else "")


def _lines(c: ProfileComparison) -> list[str]:
    labels = _labels(c)
    lines = [side_line(labels[i], s) for i, s in enumerate(c.sides)]
    lines.append(f"{len(c.apis)} APIs joined; time lost = B kernel time - A kernel time; "
                 f"unmatched: {len(c.unmatched_of(0))} APIs only in A, "
                 f"{len(c.unmatched_of(1))} only in B")
    return lines + list(c.notes) + [f"{labels[i]}: {n}" for i, s in enumerate(c.sides)
                                    for n in s.notes]


_HEADERS = ["API", "by", "calls A", "calls B", "kernels A", "kernels B", "lost",
            "A's kernels", "B's kernels"]


def _cells(r: ApiRow) -> list[str]:
    a, b = r.sides
    return [r.api, r.joined_by, str(a.calls), str(b.calls), _time(a.kernel_s),
            _time(b.kernel_s), _signed(r.lost_s), _kernels(a), _kernels(b)]


_UNMATCHED_HEADERS = ["only in", "API", "calls", "kernels", "kernel names", "why"]


def _unmatched_cells(u: UnmatchedApi) -> list[str]:
    return ["AB"[u.side], u.api, str(u.usage.calls), _time(u.usage.kernel_s),
            _kernels(u.usage), u.reason]


def _table(title: str, headers: list[str], rows: list[list[str]], right: set[int]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, header_style="bold", title=title, title_justify="left")
    for n, header in enumerate(headers):
        table.add_column(header, justify="right" if n in right else "left", overflow="fold")
    for cells in rows:
        table.add_row(*cells)
    return table


def _more(console: Console, shown: int, total: int, what: str) -> None:
    if shown < total:
        console.print(Text(f"{total - shown} more {what} in the JSON (--top to show more)",
                           style="dim"))


def render_compare_terminal(c: ProfileComparison, console: Console,
                            top: int | None = None) -> None:
    for line in _lines(c):
        console.print(Text(line))
    rows = c.apis[:top] if top else c.apis
    console.print(_table("APIs by time lost", _HEADERS, [_cells(r) for r in rows],
                         {2, 3, 4, 5, 6}))
    _more(console, len(rows), len(c.apis), "joined APIs")
    unmatched = c.unmatched[:top] if top else c.unmatched
    if unmatched:
        console.print(_table("APIs with no counterpart", _UNMATCHED_HEADERS,
                             [_unmatched_cells(u) for u in unmatched], {2, 3}))
        _more(console, len(unmatched), len(c.unmatched), "unmatched APIs")


def _markdown_table(headers: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |",
           "|" + "".join("---:|" if n in right else "---|" for n in range(len(headers)))]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"
            for cells in rows]
    return out


def render_compare_markdown(c: ProfileComparison) -> str:
    out = ["### opbench profile compare", ""] + [f"- {line}" for line in _lines(c)] + [""]
    out += _markdown_table(_HEADERS, [_cells(r) for r in c.apis], {2, 3, 4, 5, 6}) + [""]
    if c.unmatched:
        out += ["APIs with no counterpart:", ""]
        out += _markdown_table(_UNMATCHED_HEADERS, [_unmatched_cells(u) for u in c.unmatched],
                               {2, 3}) + [""]
    return "\n".join(out)


_SHOW_API_HEADERS = ["API", "names", "calls", "kernels", "host", "kernel names"]
_SHOW_KERNEL_HEADERS = ["kernel", "kind", "launches", "time", "share of kernels"]


def _show_tables(s: ProfileSummary, top: int | None) -> tuple[list[list[str]], list[list[str]]]:
    apis = s.apis[:top] if top else s.apis
    kernels = s.kernels[:top] if top else s.kernels
    total = sum(k.time_s for k in s.kernels)
    return ([[key, ", ".join(_short(n) for n in u.names), str(u.calls), _time(u.kernel_s),
              _time(u.host_s), _kernels(u)] for key, u in apis],
            [[_short(k.name), k.kind or "", str(k.launches), _time(k.time_s),
              _share(k.time_s, total)] for k in kernels])


def render_show_terminal(s: ProfileSummary, console: Console, top: int | None = None) -> None:
    console.print(Text(side_line("profile", s.side)))
    for note in s.side.notes:
        console.print(Text(note, style="dim"))
    apis, kernels = _show_tables(s, top)
    console.print(_table("top kernels", _SHOW_KERNEL_HEADERS, kernels, {2, 3, 4}))
    _more(console, len(kernels), len(s.kernels), "kernels")
    console.print(_table("APIs by kernel time", _SHOW_API_HEADERS, apis, {2, 3, 4}))
    _more(console, len(apis), len(s.apis), "APIs")


def render_show_markdown(s: ProfileSummary, top: int | None = None) -> str:
    apis, kernels = _show_tables(s, top)
    out = ["### opbench profile show", "", f"- {side_line('profile', s.side)}"]
    out += [f"- {note}" for note in s.side.notes] + [""]
    out += _markdown_table(_SHOW_KERNEL_HEADERS, kernels, {2, 3, 4}) + [""]
    out += _markdown_table(_SHOW_API_HEADERS, apis, {2, 3, 4}) + [""]
    return "\n".join(out)
