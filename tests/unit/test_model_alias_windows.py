"""An alias whose traced window holds work the capture did not see (nn.TrainOneStepCell's
backward waited for at its grad reducer's Identity) is not covered, with why; an alias of
an alias's cost is covered as before."""
from __future__ import annotations

from opbench.model.impact.alias_windows import ALIAS_WINDOW_NS, alias_windows
from opbench.model.program import Call, Ext, ExternalTensor, Ref
from opbench.model.steady import StepProgram


def _step(traced_ns: list[int], aliases: set[int]) -> StepProgram:
    calls = tuple(Call(index=i, framework="mindspore", api=f"api{i}", kind="function",
                       replay_api=f"api{i}", args=(Ext(0),), kwargs=(),
                       outputs=("tensor", (4,), "float32"), duration_ns=ns, start_ns=0,
                       alias_of=Ref(i - 1) if i in aliases else None)
                  for i, ns in enumerate(traced_ns))
    return StepProgram("mindspore", calls, (ExternalTensor(0, (4,), "float32", "input"),), 3,
                       tuple(traced_ns), (sum(traced_ns),) * 3, tuple(range(len(calls))))


def test_an_alias_holding_a_backwards_wait_is_not_covered_and_says_why():
    """ms_train_one_step_cell.py, 2026-11-28: the Identity's window 4.6 ms of a ~9 ms step."""
    found = alias_windows(_step([2_000_000, 4_600_000, 2_500_000], {1}))
    assert list(found) == [1]
    assert "whose window holds 4.6 ms a step" in found[1]
    assert "no replay runs it" in found[1]


def test_an_alias_at_an_aliass_cost_or_a_small_share_stays_covered():
    assert alias_windows(_step([2_000_000, 25_000, 2_000_000], {1})) == {}      # 0.025 ms
    # over the absolute floor but under 1% of a long step
    assert alias_windows(_step([40_000_000, ALIAS_WINDOW_NS + 1, 40_000_000], {1})) == {}
    # a call that is not an alias is never this rule's
    assert alias_windows(_step([2_000_000, 4_600_000, 2_500_000], set())) == {}
