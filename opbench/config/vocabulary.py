"""One vocabulary: the names every layer of opbench shares for frameworks, timing modes,
launch modes and dtypes, spelled once.

Each was spelled out in several modules (the case library, the tracer, the scanner, the
progress display, the model's capture and replay), and one set, the integer dtypes, had two
different contents under one name (`INT_DTYPES`: the case library's (int32, int64) and a
model's five integer widths). They are named apart here by what they are for.

Nothing here imports anything: the tracer imports it inside the user's own interpreter.
"""
from __future__ import annotations

__all__ = ["ADAPTER_FRAMEWORKS", "ASYNC", "CASE_DTYPES", "CASE_INT_DTYPES", "COMPLEX_DTYPES",
           "FLOAT_DTYPES", "FRAMEWORKS", "INTEGER_DTYPES", "MODEL_DTYPES", "MODEL_ONLY_INT_DTYPES", "LAUNCH_BLOCKING", "LAUNCH_MODES", "LAUNCH_QUEUED",
           "MINDSPORE", "MODES", "NUMPY", "SERIAL", "TORCH"]

# -- frameworks ------------------------------------------------------------------------------

TORCH = "torch"
MINDSPORE = "mindspore"
# The frameworks opbench knows by name beyond their adapters: the tracer intercepts them,
# the scanner reads their calls, the API mapping joins them (a third framework there is an
# interceptor and a mapping of its own, ARCHITECTURE.md). The adapters' registry
# (frameworks/__init__.py) has numpy too, a reference for tests.
FRAMEWORKS = (TORCH, MINDSPORE)
NUMPY = "numpy"
# The frameworks opbench has an adapter for (frameworks/__init__.py's registry): the two
# above and numpy (a reference for tests and for an op one side lacks). A case file's
# framework sections, in the order they are read, and what a side may name.
ADAPTER_FRAMEWORKS = (TORCH, MINDSPORE, NUMPY)

# -- timing modes ----------------------------------------------------------------------------

# serial syncs after every call (latency); async launches the loop and syncs once per
# sample (throughput). A measurement key is a mode, perhaps with "+backward".
SERIAL = "serial"
ASYNC = "async"
MODES = (SERIAL, ASYNC)

# -- launch modes ----------------------------------------------------------------------------

# How operators are launched, a process-wide choice made before the first operator:
# "queued": the framework's default. MindSpore's PyNative mode hands every op to a launch
#   queue served by other threads, so a serial measurement (sync after each call) includes
#   that hand-off and its wake-up; on a 2-core CPU that is ~0.8 ms per call, bimodal, and it
#   moves 20-50% between processes. CUDA queues kernels on streams.
# "blocking": each op runs to completion in the call (mindspore.runtime.launch_blocking(),
#   CUDA_LAUNCH_BLOCKING=1): what is left is the op's own host and kernel cost, measured
#   here at ~80 us for a MindSpore CPU add with a 10-90% spread of 78-81 us.
LAUNCH_QUEUED = "queued"
LAUNCH_BLOCKING = "blocking"
LAUNCH_MODES = (LAUNCH_QUEUED, LAUNCH_BLOCKING)

# -- dtypes ----------------------------------------------------------------------------------

# Floating-point dtypes: the ones that take gradients and are drawn from continuous
# distributions.
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
# The integer dtypes a case file may declare for an input (drawn by randint). Both
# frameworks hold them on every device, and the seeded inputs (runner/inputs.py) and
# tolerances cover them; a wider set needs those first.
CASE_INT_DTYPES = ("int32", "int64")
# Every dtype a case file's input may have (the case JSON Schema's enum, in this order).
CASE_DTYPES = (*FLOAT_DTYPES, *CASE_INT_DTYPES, "bool")
# Every integer dtype a framework tensor may have, as a user's model hands them over (token
# ids in int64, masks in uint8, ...): what a model's capture records a value range for, so a
# replay can draw such a tensor from its range. Not all of them are case-file dtypes.
INTEGER_DTYPES = ("int8", "int16", "int32", "int64", "uint8")
# Complex dtypes: what torch.fft and MindSpore's ops.rfft2/irfft2 hand over (both frameworks
# make, compute on and read back complex64/complex128 on CPU: checked on torch 2.13 and
# MindSpore 2.10). Not case-file dtypes: a model's replay makes them, the case library does
# not draw them.
COMPLEX_DTYPES = ("complex64", "complex128")
# The integer widths a model hands over that are not case-file dtypes (a uint8 mask, an
# int8 quantised tensor): both frameworks make them on CPU (torch 2.13, MindSpore 2.10), and
# a replay draws them from the captured range. Before, a tensor of one of them was not
# covered (issue 45: `unknown dtype 'uint8'`).
MODEL_ONLY_INT_DTYPES = tuple(d for d in INTEGER_DTYPES if d not in CASE_INT_DTYPES)
# Every dtype a model's replay can make a tensor of (an external, a stand-in) and compare
# across frameworks: the case library's, the other integer widths and the complex ones.
MODEL_DTYPES = (*CASE_DTYPES, *MODEL_ONLY_INT_DTYPES, *COMPLEX_DTYPES)
