"""Device names: parsing "cpu" / "cuda:1" / "ascend" and the "not here" message."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from opbench.frameworks.base import DeviceUnavailable

CPU = "cpu"
CUDA = "cuda"
ASCEND = "ascend"
DEVICE_KINDS = (CPU, CUDA, ASCEND)
# Names users type from habit in one framework or the other; they mean the same hardware.
DEVICE_ALIASES = {"gpu": CUDA, "npu": ASCEND}


@dataclass(frozen=True)
class DeviceSpec:
    kind: str                 # one of DEVICE_KINDS
    index: int | None = None  # None: the framework's default device of that kind (index 0)

    @property
    def index_or_default(self) -> int:
        return 0 if self.index is None else self.index

    def __str__(self) -> str:
        return self.kind if self.index is None else f"{self.kind}:{self.index}"


def parse_device(device: str) -> DeviceSpec:
    """"cuda:1" -> DeviceSpec("cuda", 1). Raises DeviceUnavailable for a malformed name."""
    text = device.strip().lower()
    kind, sep, index_text = text.partition(":")
    kind = DEVICE_ALIASES.get(kind, kind)
    expected = "expected cpu, cuda, cuda:N, ascend or ascend:N"
    if kind not in DEVICE_KINDS:
        raise DeviceUnavailable(f"unknown device {device!r}: {expected}")
    if not sep:
        return DeviceSpec(kind)
    if kind == CPU:
        raise DeviceUnavailable(f"device {device!r}: cpu takes no index; {expected}")
    if not index_text.isdigit():
        raise DeviceUnavailable(f"device {device!r}: the index must be a non-negative integer; "
                                f"{expected}")
    return DeviceSpec(kind, int(index_text))


def absent_device_message(framework: str, requested: DeviceSpec | str, reason: str,
                          available: Iterable[str]) -> str:
    """'torch: cuda:1 is not available here (...); devices here: cpu, cuda:0'."""
    return (f"{framework}: {requested} is not available here ({reason}); "
            f"devices here: {', '.join(available)}")


def indexed(kind: str, count: int) -> list[str]:
    """["cuda:0", "cuda:1"] for count 2."""
    return [f"{kind}:{i}" for i in range(count)]
