"""The gap map's plots as inline SVG (matplotlib): a forest plot of ratios, scaling curves
per sweep, and fixed cost against throughput. SVG text goes straight into the HTML page,
so the report is one file that works offline, and the plots stay sharp when zoomed.

matplotlib is the optional `plot` extra (already used for history plots); it is imported
here only, on the Agg backend, never at package import.
"""
from __future__ import annotations

import io
import math
from typing import Mapping, Sequence

from opbench.gapmap.sweep import Sweep

# Per-side colours, reference then target (colour-blind safe pair).
COLORS = ("#0072B2", "#D55E00")
# Small multiples beyond this many make a page nobody scrolls: the worst sweeps are drawn.
MAX_SCALING_PLOTS = 48
SCALING_COLUMNS = 4
FOREST_ROW_IN = 0.16


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    _pyplot().close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]          # drop the XML prolog and DOCTYPE


def forest_svg(rows: Sequence[tuple[str, float, float, float]], threshold: float,
               reference: str, target: str) -> str:
    """rows: (label, ratio, ci_low, ci_high), drawn worst (lowest) at the top."""
    plt = _pyplot()
    rows = sorted(rows, key=lambda r: r[1])
    fig, ax = plt.subplots(figsize=(9, max(2.5, FOREST_ROW_IN * len(rows) + 1)))
    ys = list(range(len(rows)))[::-1]
    for y, (_, ratio, low, high) in zip(ys, rows):
        color = COLORS[1] if high < threshold else ("#555555" if low < threshold else COLORS[0])
        ax.plot([low, high], [y, y], color=color, lw=1.2)
        ax.plot([ratio], [y], "o", color=color, ms=3)
    ax.axvline(threshold, color="#cf222e", ls="--", lw=1, label=f"threshold {threshold:g}")
    ax.axvline(1.0, color="#888888", lw=0.6)
    ax.set_xscale("log")
    ax.set_yticks(ys)
    ax.set_yticklabels([r[0] for r in rows], fontsize=6)
    ax.set_ylim(-1, len(rows))
    ax.set_xlabel(f"ratio = {reference} time / {target} time (95% interval; below 1: "
                  f"{target} slower)")
    ax.legend(loc="lower right", fontsize=7)
    ax.grid(axis="x", which="both", alpha=0.3)
    return _svg(fig)


def scaling_svg(found: Sequence[Sweep], units: Mapping[str, str]) -> str:
    """Time per call against work, log-log, both sides' medians with their errors and
    fitted lines (dashed where the fit is not OK: drawn, but not to be read)."""
    plt = _pyplot()
    found = list(found)[:MAX_SCALING_PLOTS]
    rows = math.ceil(len(found) / SCALING_COLUMNS)
    fig, axes = plt.subplots(rows, SCALING_COLUMNS, figsize=(11, 2.4 * rows), squeeze=False)
    for ax in axes.flat[len(found):]:
        ax.set_visible(False)
    for ax, sweep in zip(axes.flat, found):
        work = [p.work for p in sweep.points]
        grid = [work[0] * (work[-1] / work[0]) ** (i / 40) for i in range(41)]
        for color, side in zip(COLORS, (sweep.reference, sweep.target)):
            fit = sweep.fits[side]
            ax.errorbar(work, [p.time_s[side] * 1e6 for p in sweep.points],
                        yerr=[p.error_s[side] * 1e6 for p in sweep.points], fmt="o", ms=3,
                        color=color, label=side)
            line = [(fit.fixed_s + fit.per_unit_s * w) * 1e6 for w in grid]
            ax.plot(grid, [v if v > 0 else float("nan") for v in line], color=color, lw=1,
                    ls="-" if fit.status == "ok" else ":")
        ax.set_xscale("log")
        ax.set_yscale("log")
        title = sweep.name + ("" if sweep.key == "serial" else f" ({sweep.key})")
        if sweep.kernel_ratio is not None:
            title += f"\nkernel ratio {sweep.kernel_ratio:.2g}"
        ax.set_title(title, fontsize=7)
        ax.set_xlabel(units.get(sweep.unit, sweep.unit), fontsize=6)
        ax.set_ylabel("us per call", fontsize=6)
        ax.tick_params(labelsize=6)
    if found:
        axes.flat[0].legend(fontsize=6)
    fig.tight_layout()
    return _svg(fig)


def overhead_throughput_svg(points: Sequence[tuple[str, float, float]], threshold: float,
                            target: str, reference: str) -> str:
    """points: (label, fixed-cost ratio target/reference, kernel ratio). Right of 1: the
    target pays more per call; below the threshold: its kernel is slower per unit of work."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 5))
    xs = [p[1] for p in points]
    ys = [p[2] for p in points]
    ax.scatter(xs, ys, s=14, color=COLORS[1], alpha=0.8)
    worst = sorted(points, key=lambda p: p[2])[:8]
    for label, x, y in worst:
        ax.annotate(label, (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.axhline(threshold, color="#cf222e", ls="--", lw=1, label=f"threshold {threshold:g}")
    ax.axvline(1.0, color="#888888", lw=0.6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"fixed cost per call: {target} / {reference}")
    ax.set_ylabel(f"kernel ratio (marginal throughput {target} / {reference})")
    ax.legend(fontsize=7)
    ax.grid(which="both", alpha=0.3)
    return _svg(fig)


def overhead_points(found: Sequence[Sweep]) -> list[tuple[str, float, float]]:
    """Sweeps with a kernel ratio and positive fixed costs on both sides."""
    out: list[tuple[str, float, float]] = []
    for s in found:
        ref, tgt = s.fits[s.reference].fixed_s, s.fits[s.target].fixed_s
        if s.kernel_ratio is not None and ref > 0 and tgt > 0:
            out.append((s.name, tgt / ref, s.kernel_ratio))
    return out


__all__ = ["forest_svg", "scaling_svg", "overhead_throughput_svg", "overhead_points",
           "MAX_SCALING_PLOTS"]
