"""How wide opbench's consoles draw: the terminal's width on a terminal; $COLUMNS when set
(also for piped output, so `COLUMNS=100 opbench ... | less` is 100 columns wide); else a
fixed width for CI logs and files."""
from __future__ import annotations

import os
from typing import IO, Mapping

# Piped output without $COLUMNS (CI logs, files) gets a wide fixed width: rich's 80-column
# default would fold every table.
PIPED_WIDTH = 180


def console_width(stream: IO, environ: Mapping[str, str] | None = None) -> int | None:
    """The width to give rich's Console for `stream` (None: let rich ask the terminal)."""
    environ = os.environ if environ is None else environ
    columns = environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        if stream.isatty():
            return None
    except (AttributeError, ValueError):   # a closed or unusual stream
        pass
    return PIPED_WIDTH
