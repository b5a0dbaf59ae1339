"""`opbench trace`: which framework APIs a program calls, with which shapes, and how long each
takes, without editing the program. See docs/trace.md.

    with opbench.trace(nested=False, sync="serial") as t:
        model(x)
    print(t.table(sort_by="total", group_by_shape=True))
"""
from __future__ import annotations

from .emit import EmitReport, Skipped
from .events import ASYNC, SERIAL, CallEvent, Signature, TensorSpec
from .recorder import TraceData
from .summary import SummaryRow
from .tracer import TraceError, Tracer, trace

__all__ = ["trace", "Tracer", "TraceError", "TraceData", "CallEvent", "Signature", "TensorSpec",
           "SummaryRow", "EmitReport", "Skipped", "SERIAL", "ASYNC"]
