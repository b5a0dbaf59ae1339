"""Children started as `python -m opbench...` import the parent's opbench, never an `opbench/`
folder in the current directory (runner/child_env.py)."""
from __future__ import annotations

import os
import subprocess
import sys

import opbench.runner.spawn as spawn_mod
import opbench.runner.workers as workers_mod
from opbench.runner.child_env import OPBENCH_ROOT, child_environment

WHICH = "import opbench; print(getattr(opbench, 'SHADOW', False))"


def _shadowing_directory(tmp_path):
    shadow = tmp_path / "opbench"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("SHADOW = True\n__version__ = '0'\n", encoding="utf-8")
    return tmp_path


def _imports_shadow(cwd, env) -> bool:
    out = subprocess.run([sys.executable, "-c", WHICH], cwd=cwd, env=env,
                         capture_output=True, text=True, check=True).stdout.strip()
    return out == "True"


def test_the_current_directory_no_longer_shadows_opbench(tmp_path):
    cwd = _shadowing_directory(tmp_path)
    plain = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
    assert _imports_shadow(cwd, plain)             # what a worker did before
    assert not _imports_shadow(cwd, child_environment(with_this_opbench=True))
    assert not _imports_shadow(cwd, child_environment(with_this_opbench=False))


def test_this_interpreters_children_get_this_opbench_first(monkeypatch):
    env = child_environment(True, base={"PYTHONPATH": "/elsewhere"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(OPBENCH_ROOT), "/elsewhere"]
    assert env["PYTHONSAFEPATH"] == "1"
    # another interpreter keeps its own opbench (the interpreter check compares versions)
    assert child_environment(False, base={"PYTHONPATH": "/elsewhere"})["PYTHONPATH"] == \
        "/elsewhere"


def test_a_worker_is_started_with_that_environment(monkeypatch):
    seen = []

    class Stop(Exception):
        pass

    def popen(argv, **kwargs):
        seen.append((argv[0], kwargs["env"]))
        raise Stop

    monkeypatch.setattr(spawn_mod.subprocess, "Popen", popen)
    for python in (None, "/envs/ms29/bin/python"):
        try:
            workers_mod.spawn_worker(1, "mindspore", python)
        except Stop:
            pass
    (here, env_here), (there, env_there) = seen
    assert here == sys.executable and env_here["PYTHONSAFEPATH"] == "1"
    assert env_here["PYTHONPATH"].split(os.pathsep)[0] == str(OPBENCH_ROOT)
    assert there == "/envs/ms29/bin/python" and env_there["PYTHONSAFEPATH"] == "1"
    assert env_there.get("PYTHONPATH") == os.environ.get("PYTHONPATH")
