"""Where each pytest-xdist worker may measure: its own CPU cores, or its own device.

Timing under `pytest --benchmark -n N` is honest only when no worker's sample contains
another worker's work. Measured here (DESIGN.md): one framework's leftover threads in the
other's sample made it 5-1000x slower; two workers on shared cores would do that to each
other all the time. So every worker gets a disjoint share of the machine:
  - CPU target: a disjoint set of physical cores (logical CPUs that are SMT siblings of one
    core go to the same worker: siblings share the core's execution units, so a worker on
    one sibling slows the other). Every worker gets the same number of cores, so every
    worker's thread count - and so its configuration - is the same (`opbench merge` joins
    only parts measured alike); cores that do not divide evenly stay unused.
  - device target (cuda, ascend): one device per worker, through the framework's
    visible-devices variable set before the frameworks are imported, so inside the worker
    its device is device 0. Host-side dispatch still runs on the CPU, so each worker also
    gets its own cores when there are enough; otherwise its cores are left unpinned and
    the placement says so.
With more workers than cores (or devices) there is no such plan: PlacementError says why,
and the plugin refuses the timing.

Pure: the machine's facts (allowed CPUs, SMT siblings, visible devices) come in as
arguments; `machine_cpus`, `smt_siblings` and `visible_devices` read the real ones.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from opbench.config import Placement

__all__ = ["PlacementError", "VISIBLE_DEVICES_ENV", "plan", "partition_cores", "physical_cores",
           "visible_devices", "machine_cpus", "smt_siblings", "worker_index"]

# The variable each framework reads to choose its devices (torch's CUDA, and MindSpore's
# and torch_npu's Ascend runtime), set per worker to its one device.
VISIBLE_DEVICES_ENV = {"cuda": "CUDA_VISIBLE_DEVICES", "ascend": "ASCEND_RT_VISIBLE_DEVICES"}
# Device nodes a driver creates per device, to count them when no variable lists them.
_DEVICE_NODE = {"cuda": re.compile(r"^nvidia(\d+)$"), "ascend": re.compile(r"^davinci(\d+)$")}
_WORKER_ID = re.compile(r"^gw(\d+)$")


class PlacementError(ValueError):
    """No isolating placement exists; the message says why, for a usage error."""


def worker_index(worker: str) -> int:
    """0 for gw0. Raises PlacementError for an id pytest-xdist does not make."""
    match = _WORKER_ID.match(worker or "")
    if not match:
        raise PlacementError(f"{worker!r} is not a pytest-xdist worker id (gw0, gw1, ...)")
    return int(match.group(1))


def physical_cores(cpus: Iterable[int],
                   siblings: Callable[[int], Iterable[int]]) -> list[tuple[int, ...]]:
    """The allowed logical CPUs grouped by physical core (SMT siblings together), in CPU
    order."""
    allowed = sorted(set(cpus))
    groups: list[tuple[int, ...]] = []
    placed: set[int] = set()
    for cpu in allowed:
        if cpu in placed:
            continue
        group = tuple(sorted({cpu, *(s for s in siblings(cpu) if s in allowed)}))
        placed.update(group)
        groups.append(group)
    return groups


def partition_cores(cores: Sequence[tuple[int, ...]], workers: int) -> list[tuple[int, ...]]:
    """Disjoint, equal shares of the physical cores, one per worker, in order."""
    if workers < 1:
        raise PlacementError("at least one worker")
    if workers > len(cores):
        raise PlacementError(
            f"{workers} workers but {len(cores)} CPU cores: workers would share cores, and a "
            f"worker's samples would hold another worker's work (timing a framework next to "
            f"busy threads made it 5-1000x slower here). Use -n {len(cores)} or fewer, or "
            f"time on devices (--opbench-device cuda|ascend, one device per worker)")
    per = len(cores) // workers
    return [tuple(cpu for core in cores[i * per:(i + 1) * per] for cpu in core)
            for i in range(workers)]


def plan(workers: int, device: str, cpus: Iterable[int],
         siblings: Callable[[int], Iterable[int]] = lambda cpu: (cpu,),
         devices: Sequence[str] = ()) -> list[Placement]:
    """One Placement per worker (gw0..gw{workers-1}). `device` is the run's --device;
    `devices` the physical device ids available for its kind (visible_devices). Raises
    PlacementError when workers would share cores (CPU) or devices."""
    cores = physical_cores(cpus, siblings)
    kind = device.split(":", 1)[0]
    if kind == "cpu":
        shares = partition_cores(cores, workers)
        per = len(cores) // workers
        return [Placement(f"gw{i}", share, "cpu", per) for i, share in enumerate(shares)]
    if kind not in VISIBLE_DEVICES_ENV:
        raise PlacementError(f"device {device!r}: only cpu, cuda and ascend can be split "
                             f"between workers")
    if ":" in device:
        raise PlacementError(f"--device {device} names one device, which {workers} workers "
                             f"would share; give the kind only ({kind}) and each worker gets "
                             f"its own")
    if workers > len(devices):
        raise PlacementError(
            f"{workers} workers but {len(devices)} {kind} device(s) ({', '.join(devices) or 'none'}"
            f" visible): workers would share a device and time each other's kernels. Use "
            f"-n {len(devices)} or fewer")
    try:
        shares: list[tuple[int, ...] | None] = list(partition_cores(cores, workers))
        per: int | None = len(cores) // workers
    except PlacementError:
        # the device isolates the kernels; host-side dispatch shares the cores
        shares, per = [None] * workers, None
    var = VISIBLE_DEVICES_ENV[kind]
    return [Placement(f"gw{i}", shares[i], f"{kind}:0", per, devices[i], {var: devices[i]})
            for i in range(workers)]


# -- the real machine ----------------------------------------------------------------------

def machine_cpus() -> set[int]:
    """The logical CPUs this process may run on (its affinity, which a container or
    `taskset` narrows), else all."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


def smt_siblings(cpu: int, sys_dir: Path = Path("/sys/devices/system/cpu")) -> set[int]:
    """The logical CPUs sharing `cpu`'s physical core (Linux sysfs; just `cpu` elsewhere)."""
    try:
        text = (sys_dir / f"cpu{cpu}" / "topology" / "thread_siblings_list").read_text()
    except OSError:
        return {cpu}
    found: set[int] = set()
    for part in text.strip().split(","):
        if "-" in part:
            low, high = part.split("-")
            found.update(range(int(low), int(high) + 1))
        elif part.strip():
            found.add(int(part))
    return found or {cpu}


def visible_devices(kind: str, environ: Mapping[str, str] = os.environ,
                    dev_dir: Path = Path("/dev")) -> list[str]:
    """The device ids of `kind` this machine offers: the visible-devices variable when it
    is set (it is what the framework would see), else the driver's device nodes."""
    var = VISIBLE_DEVICES_ENV.get(kind)
    if var is None:
        return []
    listed = environ.get(var)
    if listed is not None:
        return [d.strip() for d in listed.split(",") if d.strip()]
    pattern = _DEVICE_NODE[kind]
    try:
        names = [p.name for p in dev_dir.iterdir()]
    except OSError:
        return []
    ids = sorted(int(m.group(1)) for m in map(pattern.match, names) if m)
    return [str(i) for i in ids]
