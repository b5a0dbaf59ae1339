"""capture/synced_float.py: a float a host sync returned, reaching a later call, is that
call's Ref, told by identity; any other value (an equal float made elsewhere, an int read
back, a float from another call) stays a literal."""
from __future__ import annotations

from opbench.model.capture.synced_float import HELD, SyncedFloats
from opbench.model.program import Ref


def test_the_same_float_object_is_the_sync_s_ref():
    synced = SyncedFloats()
    peak = float("3.25")
    synced.note("torch.Tensor.item", 7, peak)
    assert synced.ref(peak) == Ref(7)
    assert synced.ref(float("3.25")) is None          # equal, but not what the sync returned
    assert synced.ref(3) is None and synced.ref("3.25") is None


def test_only_a_sync_s_float_is_held():
    synced = SyncedFloats()
    count, other = 12, float("0.5")
    synced.note("torch.Tensor.item", 1, count)        # an int can size a tensor: a literal
    synced.note("torch.Tensor.mean", 2, other)        # not a read-back
    assert synced.ref(count) is None and synced.ref(other) is None
    value = float("1.5")
    synced.note("mindspore.Tensor.item", 3, value)
    assert synced.ref(value) == Ref(3)


def test_the_oldest_read_backs_are_let_go_past_the_limit():
    synced = SyncedFloats()
    values = [float(i) + 0.5 for i in range(HELD + 10)]
    for i, v in enumerate(values):
        synced.note("torch.Tensor.item", i, v)
    assert synced.ref(values[0]) is None and synced.ref(values[9]) is None
    assert synced.ref(values[10]) == Ref(10) and synced.ref(values[-1]) == Ref(HELD + 9)
