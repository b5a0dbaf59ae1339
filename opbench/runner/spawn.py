"""The one way opbench starts a Python process of its own: `PYTHON -m MODULE ARGS` in the
child environment (child_env.py), in this interpreter or one a side or command names.

Every child goes through here: the workers and side workers (workers.spawn_worker), the
model's replay processes (a worker whose server is model/replay/main.py's dispatcher), the
model's capture and `opbench trace`'s run of a script in the interpreter its command names.
So what a child inherits (PYTHONSAFEPATH, which opbench it imports, MindSpore's log level)
is decided in one place, and a fix to it is made once.
"""
from __future__ import annotations

import subprocess
import sys
from typing import IO, Any, Mapping, Sequence

from opbench.runner.child_env import child_environment, is_this_interpreter

__all__ = ["spawn_child", "QUIET_MINDSPORE"]

# For a child whose MindSpore chatter would land on a user's terminal beside their script's
# output (the model's capture and replays): glog level 3 keeps its INFO and WARNING lines
# off, errors still show. A default only: a GLOG_v the user set wins.
QUIET_MINDSPORE = {"GLOG_v": "3"}


def spawn_child(module: str, args: Sequence[str] = (), python: str | None = None, *,
                this_opbench: bool | None = None, env_defaults: Mapping[str, str] = {},
                pass_fds: Sequence[int] = (),
                stdin: Any = subprocess.DEVNULL, stdout: IO[Any] | int | None = None,
                stderr: IO[Any] | int | None = None) -> subprocess.Popen:
    """`python -m module args` started (this interpreter when `python` is None). The
    environment is this process's (with `env_defaults` where it sets none), the current
    directory kept off the child's sys.path, and this opbench first on its PYTHONPATH when
    `this_opbench` (default: only for this interpreter, named or not; another keeps its own
    installed opbench, which its interpreter check compared). stdout/stderr: inherited when
    None; stdin: none unless given (None: this terminal's)."""
    if this_opbench is None:
        this_opbench = is_this_interpreter(python)
    env = child_environment(with_this_opbench=this_opbench)
    for key, value in env_defaults.items():
        env.setdefault(key, value)
    return subprocess.Popen([python or sys.executable, "-m", module, *args],
                            pass_fds=tuple(pass_fds), stdin=stdin, stdout=stdout,
                            stderr=stderr, env=env)
