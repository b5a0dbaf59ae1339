"""`opbench history --plot`: an operator's ratio over recorded runs, as a PNG/SVG/PDF.

matplotlib is an optional dependency (the `plot` extra): imported here, lazily, with the
Agg backend so it works on a CI runner without a display."""
from __future__ import annotations

import os
from collections import defaultdict
from typing import Sequence

from opbench.results.history import TrendPoint

__all__ = ["PlotUnavailable", "plot_trend", "trend_series"]


class PlotUnavailable(Exception):
    """matplotlib is not installed."""


def trend_series(points: Sequence[TrendPoint]) -> dict[str, list[TrendPoint]]:
    """The lines of a trend: one per instance and mode, and per frameworks' code (versions
    and builds, TrendPoint.frameworks) where the points hold more than one: two builds of
    one version string are two series, not one line through both."""
    several = len({p.frameworks for p in points}) > 1
    series: dict[str, list[TrendPoint]] = defaultdict(list)
    for p in points:
        if p.ratio is not None:
            code = f" {p.frameworks}" if several else ""
            series[f"{p.instance_id} ({p.mode}){code}"].append(p)
    return dict(series)


def plot_trend(points: Sequence[TrendPoint], path: str | os.PathLike, title: str,
               threshold: float | None = None) -> None:
    """One line per (instance, mode): ratio per run with its 95% interval as error bars;
    the x axis is the run (id and commit), so runs without this operator leave no gap."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlotUnavailable("plotting needs matplotlib: pip install 'opbench[plot]'") from None

    runs = sorted({p.run_id for p in points})
    position = {run: i for i, run in enumerate(runs)}
    labels = {}
    for p in points:
        labels[p.run_id] = f"#{p.run_id}" + (f"\n{p.git_commit[:7]}" if p.git_commit else "")
    series = trend_series(points)

    fig, ax = plt.subplots(figsize=(max(6.0, 0.6 * len(runs) + 3), 4.5))
    try:
        for name, pts in sorted(series.items()):
            xs = [position[p.run_id] for p in pts]
            ys = [p.ratio for p in pts]
            low = [p.ratio - (p.ci_low if p.ci_low is not None else p.ratio) for p in pts]
            high = [(p.ci_high if p.ci_high is not None else p.ratio) - p.ratio for p in pts]
            ax.errorbar(xs, ys, yerr=[low, high], marker="o", capsize=3, label=name)
        if threshold is not None:
            ax.axhline(threshold, color="grey", linestyle="--", linewidth=1,
                       label=f"threshold {threshold:g}")
        ax.set_xticks(range(len(runs)), [labels[r] for r in runs], fontsize=7)
        ax.set_yscale("log")
        ax.set_ylabel("ratio reference / target (log; below 1: target slower)")
        ax.set_xlabel("recorded run")
        ax.set_title(title)
        ax.legend(fontsize=7, loc="best")
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
