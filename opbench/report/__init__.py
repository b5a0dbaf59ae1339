"""Views of records, for people: terminal (rich), Markdown, HTML, the gate's Markdown and
JUnit, history plots and live progress. Reads records; measures and decides nothing.

  console        How wide opbench's consoles draw: the terminal's width on a terminal; $COLUMNS
                 when set (also for piped output, so `COLUMNS=100 opbench
  dashboard_v3   `--v3`: a results record or the history as the PyTorch benchmark dashboard's
                 v3 JSON lines
  gate_junit     JUnit XML for CI test panels: one <testcase> per instance
  gate_markdown  The gate's Markdown summary, shaped for a CI job summary ($GITHUB_STEP_SUMMARY
                 and the like): the outcome and exit code first, then every baseline-hygiene
                 note, then the instances worst first (regressions by size), passes folded away
  history_plot   `opbench history --plot`: an operator's ratio over recorded runs, as a
                 PNG/SVG/PDF
  html           The HTML report: one static file, offline (inline SVG plots, inline script, no
                 CDN)
  markdown       The Markdown view of a results record (a CI job summary, a pull-request
                 comment)
  progress       Live progress for the commands that run cases (`run`, `compare`, `check`,
                 `gate`) and for `trace`: on a terminal a rich progress bar with the current
                 instance and an ETA; elsewhere (CI logs, files, pipes) one plain line per
                 instance, since a redrawn bar there is noise
  terminal       The terminal view of a results record: rich tables of every instance, the per-
                 call floors, the largest kernel gaps, the top causes and the notes (text
                 pieces: text.py)
  text           The text every view of a results record shares: formatted times and ratios, the
                 rows and their order, the header, the notes and the summary line (the views:
                 terminal.py, markdown.py, html.py)
"""
