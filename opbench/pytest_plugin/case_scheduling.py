"""pytest-xdist scheduling that keeps a case's instances on one worker.

xdist's own way, `--dist loadgroup` with an `xdist_group` mark, works by rewriting each
item's node id in the worker (`item._nodeid = ...@group`); pytest 9 keeps node ids
elsewhere (`Node._id`), so with the pytest this project pins the rewrite is lost and the
groups are silently ignored (measured: add[n=4] and add[n=16] ran on different workers).
`--dist loadscope` is the supported mechanism that needs no rewrite: it sends every
"scope" of node ids to one worker, the scope being the id up to its last `::`. This
scheduler is loadscope with one change: the scope of a case item is its case, read from
the node id (`cases/x.yaml::add.bias[hidden=64]` -> `cases/x.yaml::add.bias`; case names
are `[A-Za-z0-9_.-]+`, so the case is the instance id up to `[`). Other items keep
loadscope's scope. Scopes go to whichever worker is free, so large cases do not queue
behind each other on one worker.
"""
from __future__ import annotations

from typing import Any

from opbench.cases.case_files import CASE_FILE_SUFFIXES


def case_scope(nodeid: str) -> str | None:
    """The case of a case item's node id; None when the id is not a case item's."""
    path, sep, name = nodeid.rpartition("::")
    if not sep or not path.endswith(tuple(CASE_FILE_SUFFIXES)):
        return None
    return f"{path}::{name.split('[', 1)[0]}"


def make_case_scheduler(config: Any, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling

    class CaseScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return case_scope(nodeid) or super()._split_scope(nodeid)

    return CaseScheduling(config, log)
