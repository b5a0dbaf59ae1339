"""The HTML report: one offline file with the forest plot, scaling curves, the overhead
scatter and the sortable table; drawn in a real headless browser where one exists."""
import re
import shutil
import subprocess

import numpy as np
import pytest
from gapmap_fakes import sweep_record

from opbench.report.html import render_html
from opbench.results.records import RunRecord
from opbench.runner.ceilings import ceilings_from_times

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


@pytest.fixture(scope="module")
def page():
    rng = np.random.default_rng(11)
    rec = sweep_record(rng, case="add", ref=(2e-6, 20e9), tgt=(30e-6, 5e9))
    rec["instances"] += sweep_record(rng, case="mul", ref=(2e-6, 20e9),
                                     tgt=(300e-6, 18e9))["instances"]
    rec["ceilings"] = {"torch": ceilings_from_times(2**26, 2**27 / 20e9, 1024, 0.05),
                       "mindspore": ceilings_from_times(2**26, 2**27 / 10e9, 1024, 0.1)}
    for inst in rec["instances"]:
        inst["peak_memory"] = {"torch": {"bytes": 2**20, "measure": "rss"},
                               "mindspore": {"bytes": 2**21, "measure": "rss"}}
    return render_html(RunRecord.from_dict(rec))


def test_the_page_holds_every_plot_inline_and_loads_nothing(page):
    for plot in ("forest", "scatter", "scaling"):
        assert re.search(f"data-plot='{plot}'>.*?<svg", page, re.S), plot
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", page)
    # (SVG carries XML namespace URIs, which name things and load nothing)
    assert not re.search(r"""(src|href|url)\s*[=(]\s*["']?https?:""", page)


def test_the_page_leads_with_causes_ceilings_and_the_kernel_gaps(page):
    assert page.index("Top causes of the SLOW verdicts") < page.index("Every instance")
    assert "torch: memory bandwidth 20 GB/s" in page
    assert "<td>add[dtype=float32]</td><td>serial</td>" in page       # a kernel-gap row
    assert "1 MiB" in page and "title='rss'" in page                  # peak memory, measure


def test_the_table_has_a_sortable_value_and_a_cause_per_row(page):
    rows = re.findall(r"<tr><td>(add|mul)\[n=", page)
    assert len(rows) == 6
    assert "kernel throughput" in page and "per-call overhead" in page


def _browser():
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


def test_a_headless_browser_draws_the_plots_and_runs_the_script(page, tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip("no Chromium or Chrome on PATH (Debian: apt-get install chromium; "
                    ".ci/setup installs it)")
    path = tmp_path / "report.html"
    path.write_text(page)
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    dom = subprocess.run(flags + ["--dump-dom", path.as_uri()], capture_output=True,
                         text=True, timeout=120).stdout
    assert 'data-ready="1"' in dom, "the page's script did not run to the end"
    for plot in ("forest", "scatter", "scaling"):
        figure = re.search(f'data-plot="{plot}">(.*?)</figure>', dom, re.S)
        assert figure and figure.group(1).count("<path") >= 10, plot
    shot = tmp_path / "shot.png"
    subprocess.run(flags + [f"--screenshot={shot}", "--window-size=1200,3000", path.as_uri()],
                   capture_output=True, timeout=120)
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)[..., :3]
    drawn = (pixels < 0.9).any(axis=2).mean()
    colored = (np.ptp(pixels, axis=2) > 0.3).mean()    # the sides' blue and orange marks
    assert drawn > 0.02 and colored > 0.001


def test_without_matplotlib_the_page_keeps_its_tables_and_says_how_to_get_plots(monkeypatch):
    import opbench.report.html as report_html

    monkeypatch.setattr(report_html, "plotting_available", lambda: False)
    page = report_html.render_html(RunRecord.from_dict(sweep_record(np.random.default_rng(5))))
    assert "<svg" not in page and "opbench[plot]" in page
    assert "<table id='rows'>" in page
