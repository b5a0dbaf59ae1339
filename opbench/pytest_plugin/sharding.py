"""--opbench-shard K/N in pytest: the case items of shard K, chosen exactly as `opbench run
--shard K/N` chooses instances (opbench/shard.py), so both front doors split a library the
same way. Other items (plain tests next to the cases) are not case instances and are left
alone in every shard."""
from __future__ import annotations

from dataclasses import replace

import pytest

from opbench.cases.shard import assign, case_key, shard_info
from opbench.pytest_plugin.collect import CaseItem
from opbench.pytest_plugin.run_state import RunState


def shard_items(items: list[pytest.Item],
                state: RunState) -> tuple[list[pytest.Item], list[pytest.Item]]:
    """(items kept, case items deselected); records the shard in the state's RunConfig."""
    shard = state.options.shard
    cases = [item for item in items if isinstance(item, CaseItem)]
    shard_of = assign([case_key(item.instance) for item in cases], shard.count)
    dropped = [item for item in cases if shard_of[case_key(item.instance)] != shard.index]
    state.run_config = replace(state.run_config,
                               shard=shard_info(shard, [item.instance for item in cases]))
    gone = set(map(id, dropped))
    return [item for item in items if id(item) not in gone], dropped
