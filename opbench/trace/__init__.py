"""`opbench trace`: which framework APIs a program calls, with which shapes, and how long each
takes, without editing the program. See docs/trace.md.

    with opbench.trace(nested=False, sync="serial") as t:
        model(x)
    print(t.table(sort_by="total", group_by_shape=True))
"""
from __future__ import annotations

from opbench.trace.emit import EmitReport, Skipped
from opbench.trace.events import ASYNC, SERIAL, CallEvent, Signature, TensorSpec
from opbench.trace.recorder import TraceData
from opbench.trace.summary import SummaryRow
from opbench.trace.tracer import TraceError, Tracer, trace

__all__ = ["trace", "Tracer", "TraceError", "TraceData", "CallEvent", "Signature", "TensorSpec",
           "SummaryRow", "EmitReport", "Skipped", "SERIAL", "ASYNC"]
