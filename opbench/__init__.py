"""opbench: which deep-learning operators are slower than in the reference framework,
by how much, with what confidence, and did the last commit make it worse.

The Python API for scripts and notebooks::

    import opbench
    cases = opbench.load_cases(["cases/"])
    instances = opbench.select([i for c in cases for i in opbench.expand(c)], ops=["softmax"])
    record = opbench.run(instances, opbench.RunConfig(modes=("serial", "async")))
    with opbench.trace(sync="serial") as t:      # time every framework call in a region
        model(x)

Importing opbench never imports torch or MindSpore; they load when a run or trace needs them.
"""
from __future__ import annotations

__version__ = "0.1.0"

from .cases import CaseError, expand, load_cases, select
from .results import read_results
from .runner import RunConfig, Session, run
# The trace() function deliberately shadows the opbench.trace subpackage as an attribute:
# `opbench.trace(...)` is the documented entry point; submodules stay importable by name.
from .trace import trace
from .verdict import Verdict

__all__ = ["__version__", "CaseError", "RunConfig", "Session", "Verdict", "expand",
           "load_cases", "read_results", "run", "select", "trace"]
