"""Fake worker processes for tests: a thread serving the real worker loop
(worker_main.serve) over a real pipe, with a Session class of the test's choosing (fake
frameworks on a fake clock). `Spawner` stands in for workers.spawn_worker."""
from __future__ import annotations

import itertools
import threading
from multiprocessing import Pipe

from opbench.runner.worker_main import serve
from opbench.runner.workers import Worker

_pids = itertools.count(50_000)


class Dies(BaseException):
    """Raised inside a fake worker to end its loop as a crash would."""


class FakeProcess:
    def __init__(self):
        self.pid = next(_pids)
        self.returncode = None

    def poll(self):
        return self.returncode

    def wait(self, timeout=None):
        return self.returncode

    def kill(self):
        if self.returncode is None:
            self.returncode = -9


class Spawner:
    """spawn(index, side, python) -> a Worker served by a thread. die_on_extend_in /
    die_on_run_in: worker indexes whose first incarnation of side `die_side` crashes on its
    first instance (for a side worker, the first "forward": in pass 1 for index 1, in a later
    pass for the others), its fake process then reporting exit_code (Popen's: -11 killed by
    SIGSEGV, -9 by SIGKILL, 3 an exit status). fail_after: spawn raises OSError once this
    many workers were started (a machine out of processes). `spawned` lists the indexes
    started, `sides` the (index, side) pairs."""

    def __init__(self, session_class, die_on_extend_in=(), fail_after=None, die_on_run_in=(),
                 exit_code=-11, die_side="mindspore"):
        self.session_class = session_class
        self.die_on = {"extend": set(die_on_extend_in), "run": set(die_on_run_in)}
        self.fail_after = fail_after
        self.exit_code = exit_code
        self.die_side = die_side
        self.spawned = []
        self.sides = []
        self.pythons = []

    def __call__(self, index, side=None, python=None):
        if self.fail_after is not None and len(self.sides) >= self.fail_after:
            raise OSError("cannot start a worker process (fake)")
        parent, child = Pipe()
        process = FakeProcess()
        dies_on: set[str] = set()
        if side in (None, self.die_side):
            dies_on = {request for request, indexes in self.die_on.items() if index in indexes}
            for indexes in self.die_on.values():
                indexes.discard(index)
        base = self.session_class

        class MaybeDying(base):
            def forward_side(self, instance, arrays, name):
                if dies_on and side is not None:
                    raise Dies()
                return super().forward_side(instance, arrays, name)

            def run_instance(self, instance):
                if "run" in dies_on:
                    raise Dies()
                return super().run_instance(instance)

            def extend_instance(self, instance, record, pass_index):
                if "extend" in dies_on:
                    raise Dies()
                return super().extend_instance(instance, record, pass_index)

        def target():
            try:
                serve(child, session_factory=lambda config, **kw: MaybeDying(config, **kw))
            except Dies:
                process.returncode = self.exit_code
            finally:
                child.close()

        threading.Thread(target=target, daemon=True).start()
        if side is None or side == "torch" or not self.sides or self.sides[-1][0] != index:
            self.spawned.append(index)
        self.sides.append((index, side))
        self.pythons.append(python)
        return Worker(parent, process, index, side)
