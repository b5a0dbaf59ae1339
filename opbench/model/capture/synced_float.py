"""A float the script read back from a tensor (`peak = h.abs().max().item()`) and passed to a
later call (`h / peak`): that argument is the sync's result, not a constant.

Recorded as a literal, a replay divided by the captured number whatever its own tensors held,
and a suggestion that keeps the value on the device (the host-sync swap,
model/affinity/patterns.py) could only remove the `.item()`: the division still took a Python
float where the fixed script divides by the tensor, which is what that fix saves in torch
(`h / float` 6.5 us, `h / tensor` 4.8 us, `.item()` 0.19 us a call, 128 x 256, one thread;
docs/model.md, "Why the host-sync claims moved"). A float is told by identity: `.item()`
makes a new Python object, and the same object reaching a call is the read-back value. Only
floats: an int or bool read back (a count, a flag) can size a tensor or steer the script,
and a replay that passes its own drawn value there would change the program's shapes.
MindSpore's `float(t.asnumpy())` makes its float outside any call and is not linked."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

from opbench.model.program import Ref

__all__ = ["SyncedFloats", "SYNC_APIS"]

# the calls whose Python float result is a read-back value
SYNC_APIS = frozenset({"torch.Tensor.item", "mindspore.Tensor.item"})
# Read-backs held at once. Holding a float keeps its id from naming another object; a
# step reads its syncs back within a few calls, and a capture of 200,000 calls that syncs
# each of them holds no more than this.
HELD = 256


class SyncedFloats:
    def __init__(self) -> None:
        self._held: OrderedDict[int, tuple[int, float]] = OrderedDict()

    def note(self, api: str, position: int, result: Any) -> None:
        """Call `position` (`api`) returned `result`: held when a sync returned a float."""
        if type(result) is not float or api not in SYNC_APIS:
            return
        self._held[id(result)] = (position, result)
        self._held.move_to_end(id(result))
        while len(self._held) > HELD:
            self._held.popitem(last=False)

    def ref(self, value: Any) -> Ref | None:
        """The call that read `value` back, as an argument; None for any other value."""
        if type(value) is not float:
            return None
        found = self._held.get(id(value))
        if found is None or found[1] is not value:
            return None
        return Ref(found[0])
