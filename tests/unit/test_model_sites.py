"""A call's source site (opbench/model/capture/sites.py): the first frame outside the
frameworks and opbench, with the lines its call expression spans; sites round-trip through
the program's JSON. A FAKE torch module (a file name under /fake/torch/) stands for the
framework: its frames are skipped like the real one's."""
from __future__ import annotations

import sys
import types

from opbench.model.capture.sites import SiteFinder
from opbench.model.program import Call, Program, Site


def _framework_function(finder: SiteFinder):
    """A function whose code lives under the fake torch package (a framework frame) and
    asks for the site from inside, as the observer does from inside the tracer."""
    source = "def framework_call(x):\n    return inner(x)\n\ndef inner(x):\n" \
             "    return finder.find()\n"
    namespace = {"finder": finder}
    exec(compile(source, "/fake/torch/nn/functional.py", "exec"), namespace)
    return namespace["framework_call"]


def test_the_site_is_the_user_frame_and_spans_every_line_of_the_call(monkeypatch):
    fake = types.ModuleType("torch")
    fake.__file__ = "/fake/torch/__init__.py"
    monkeypatch.setitem(sys.modules, "torch", fake)
    finder = SiteFinder()
    framework_call = _framework_function(finder)
    first = sys._getframe().f_lineno + 1
    site = framework_call(
        1,
    )
    assert site == Site(__file__, first, first + 2)


def test_a_one_line_call_is_one_line(monkeypatch):
    fake = types.ModuleType("torch")
    fake.__file__ = "/fake/torch/__init__.py"
    monkeypatch.setitem(sys.modules, "torch", fake)
    finder = SiteFinder()
    framework_call = _framework_function(finder)
    line = sys._getframe().f_lineno + 1
    site = framework_call(1)
    assert (site.file, site.first_line, site.last_line) == (__file__, line, line)


def test_a_framework_imported_after_the_first_call_is_skipped_from_then_on(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    finder = SiteFinder()
    framework_call = _framework_function(finder)
    before = framework_call(1)
    assert before.file == "/fake/torch/nn/functional.py"     # not a framework yet
    fake = types.ModuleType("torch")
    fake.__file__ = "/fake/torch/__init__.py"
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert framework_call(1).file == __file__


def test_a_site_round_trips_through_the_program_json():
    call = Call(index=0, framework="torch", api="torch.matmul", kind="function",
                replay_api="torch.matmul", args=(), kwargs=(), outputs=("none",),
                duration_ns=5, start_ns=0, site=Site("/src/model.py", 10, 12))
    program = Program(framework="torch", version="x", threads=1, launch="blocking",
                      device="cpu", timing="serial", calls=(call, call.__class__(
                          **{**call.__dict__, "index": 1, "site": None})), externals=())
    back = Program.from_json(program.to_json())
    assert back.calls[0].site == Site("/src/model.py", 10, 12)
    assert back.calls[1].site is None
