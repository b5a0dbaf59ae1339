"""opbench: which deep-learning operators are slower than in the reference framework,
by how much, with what confidence, and did the last commit make it worse.

The Python API for scripts and notebooks::

    import opbench
    cases = opbench.load_cases(["cases/"])
    instances = opbench.select([i for c in cases for i in opbench.expand(c)], ops=["softmax"])
    record = opbench.run(instances, opbench.RunConfig(modes=("serial", "async")))
    record.instances[0].measurements["serial"].ratio   # a RunRecord: typed and frozen
    saved = opbench.load_results("run.json")           # the same, from a results file
    with opbench.trace(sync="serial") as t:      # time every framework call in a region
        model(x)

Importing opbench never imports torch or MindSpore; they load when a run or trace needs them.
"""
from __future__ import annotations

from opbench.cases.case_files import CaseError, expand, load_cases, select
from opbench.config import OPBENCH_VERSION as __version__
from opbench.config import RunConfig
from opbench.results.records import RunRecord, load_results
from opbench.runloop.recorded_run import run
from opbench.runner.session import Session

# The trace() function deliberately shadows the opbench.trace subpackage as an attribute:
# `opbench.trace(...)` is the documented entry point; submodules stay importable by name.
from opbench.trace import trace
from opbench.verdicts.rules import Verdict

__all__ = ["__version__", "CaseError", "RunConfig", "RunRecord", "Session", "Verdict", "expand",
           "load_cases", "load_results", "run", "select", "trace"]
