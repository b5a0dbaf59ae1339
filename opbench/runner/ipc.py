"""What a parent and its worker processes say to each other: one frozen record per request,
two replies (`Ok`, `Failed`), the one place they are serialised to and from the socket
(`send`, `receive`), the one dispatcher (`Dispatcher`: a table from request type to
handler) that worker_main.py and side_server.py answer through, and a worker process's loop
(`answer_requests`, on the socket its parent passed: `connection_from_fd`).

A new message is a record here (its fields are its arguments; `doing` is what the worker is
doing while it answers, for the message when it dies on it), a handler in the table of the
process that answers it (worker_main.WorkerServer, or side_server.SideServer for a side's
per-instance work, or model/replay/main.ReplayServer for a model's replay), and a
`Worker.call(TheRequest(...))` in the parent (workers.py; the model's replay processes:
model/impact/processes.py). Nothing else changes: the socket, the serialisation and the
error replies are here.

Serialisation: pickle (protocol 5) over a multiprocessing Connection's byte messages, as the
verb tuples were before. The records carry numpy arrays (outputs, gradients), RunConfigs and
CaseInstances, which pickle handles as they are. Measured here (`python
tools/ipc_round_trip.py --trips 2000 --blocks 15`, under the CPU lock, 2026-11-27: medians of
15 blocks of round trips to a forked echo process): a side's Sample 44 us against its tuple's
30 us (1.45x; block ratios 0.98-1.71: a frozen dataclass pickles ~3 us slower than a tuple,
each way), a Forward answered with a 64x64 output 0.99x, an Extend with a 4-measurement
record 0.99x. Against a sample's 10 ms (config DEFAULT_MIN_SAMPLE_TIME_S) that is ~0.1% of a
run's wall time and none of any sample: each sample is timed inside its side's process.

This module imports only the standard library: a process that serves requests imports it
before any framework.
"""
from __future__ import annotations

import os
import pickle
import socket
import traceback as traceback_mod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping

if TYPE_CHECKING:  # annotations only: the records hold these, ipc needs none of them
    from opbench.cases.case_files import CaseInstance
    from opbench.config import RunConfig

__all__ = [
    "Request", "Open", "OpenSide", "Overheads", "Ceilings", "CheckApis", "Run", "Extend",
    "Close", "Forward", "Backward", "Sample", "RunWarmUp", "SyncCost", "PeakMemory",
    "ProfileCall",
    "SideInfo", "SideOverheads", "SideCeilings", "SideCheckApis", "SIDE_REQUESTS",
    "REPLAY_PROBE", "REPLAY_TIME", "ReplayStep", "ReplayResult", "ReplayPaired",
    "PairedResult",
    "Reply", "Ok", "Failed", "ForwardDone", "BackwardDone", "OperatorFailed",
    "UnreadableMessage", "send", "receive", "connection_from_fd", "Dispatcher",
    "answer_requests", "activity", "wire_fingerprint"]

# Lines of traceback a Failed reply carries: enough to find the failing call in a worker's
# code without pickling a whole framework's stack.
TRACEBACK_LIMIT = 8
# pickle's newest protocol (5, Python 3.8+): numpy arrays go in without an extra copy.
PICKLE_PROTOCOL = pickle.HIGHEST_PROTOCOL


class Request:
    """A request to a worker process. `doing` says what the worker is doing while it answers
    ("{id}": the request's instance; "{current}": the instance a side worker holds, which its
    timing requests do not name)."""

    doing: ClassVar[str] = "answering a request"

    @property
    def instance_id(self) -> str | None:
        """The id of the instance the request is about, if it names one."""
        return None


class _AboutInstance(Request):
    """A request that names its instance (a field `instance`)."""

    instance: "CaseInstance"

    @property
    def instance_id(self) -> str | None:
        return self.instance.id


# -- a worker's requests (worker_main.WorkerServer) ----------------------------------------

@dataclass(frozen=True)
class Open(Request):
    """Set both frameworks up in one Session; -> framework info. `watch_pids`: every worker
    of the run, whose threads the settle before a sample watches."""

    doing: ClassVar[str] = "starting its frameworks"
    config: "RunConfig"
    watch_pids: tuple[int, ...]
    process_index: int


@dataclass(frozen=True)
class OpenSide(Request):
    """Set framework `framework` up alone; -> its info and this interpreter's. The side's
    requests (below) follow."""

    doing: ClassVar[str] = "starting its framework"
    config: "RunConfig"
    framework: str
    process_index: int


@dataclass(frozen=True)
class Overheads(Request):
    """-> each framework's dispatch floor and sync cost."""

    doing: ClassVar[str] = "measuring its dispatch floors"


@dataclass(frozen=True)
class Ceilings(Request):
    """-> each framework's memory bandwidth and peak FLOP/s."""

    doing: ClassVar[str] = "measuring the machine's ceilings"


@dataclass(frozen=True)
class CheckApis(Request):
    """-> a message for every API of `instances` that does not resolve."""

    doing: ClassVar[str] = "checking the cases' APIs"
    instances: tuple["CaseInstance", ...]


@dataclass(frozen=True)
class Run(_AboutInstance):
    """Check, calibrate, take the first share of rounds; -> the raw record."""

    doing: ClassVar[str] = "running {id}"
    instance: "CaseInstance"


@dataclass(frozen=True)
class Extend(_AboutInstance):
    """Another share of rounds at the record's loop count; -> the record extended."""

    doing: ClassVar[str] = "running {id}"
    instance: "CaseInstance"
    record: dict[str, Any]
    pass_index: int


@dataclass(frozen=True)
class Close(Request):
    """Answered Ok(None), then the worker exits."""

    doing: ClassVar[str] = "closing"


# -- a side's requests (side_server.SideServer, once OpenSide set the side up) ------------
# `which` is protocol.FORWARD or BACKWARD: the instance's call, or its forward+backward.

@dataclass(frozen=True)
class Forward(_AboutInstance):
    """Run the instance once, holding it ready for timing; -> ForwardDone | OperatorFailed."""

    doing: ClassVar[str] = "running {id}"
    instance: "CaseInstance"


@dataclass(frozen=True)
class Backward(_AboutInstance):
    """Its gradients against the reference's output; -> BackwardDone | OperatorFailed."""

    doing: ClassVar[str] = "running {id}"
    instance: "CaseInstance"
    reference_output: Any


@dataclass(frozen=True)
class Sample(Request):
    """-> (seconds for `loops` calls, this process's CPU seconds or None), re-warmed first
    (measure.rewarm) when `rewarm_first`: one request where the side changes."""

    doing: ClassVar[str] = "timing {current}"
    which: str
    loops: int
    mode: str
    rewarm_first: bool = False


@dataclass(frozen=True)
class RunWarmUp(Request):
    """-> measure.WarmUp (calls made, steady per-call seconds)."""

    doing: ClassVar[str] = "timing {current}"
    which: str
    mode: str
    warmup_time_s: float


@dataclass(frozen=True)
class SyncCost(Request):
    """-> seconds one sync costs."""

    doing: ClassVar[str] = "timing {current}"
    which: str


@dataclass(frozen=True)
class PeakMemory(Request):
    """-> this side's peak_memory entry for the instance it holds."""

    doing: ClassVar[str] = "timing {current}"


@dataclass(frozen=True)
class ProfileCall(Request):
    """-> this side's profile entry (runner/profiling.py) for the call it holds: `which`
    run again under its framework's profiler in `mode`, as many calls as `loops` allows."""

    doing: ClassVar[str] = "profiling {current}"
    which: str
    mode: str
    loops: int


@dataclass(frozen=True)
class SideInfo(Request):
    """-> this side's framework info."""

    doing: ClassVar[str] = "describing its framework"


@dataclass(frozen=True)
class SideOverheads(Request):
    """-> this side's dispatch floor and sync cost."""

    doing: ClassVar[str] = "measuring its dispatch floors"


@dataclass(frozen=True)
class SideCeilings(Request):
    """-> this side's memory bandwidth and peak FLOP/s."""

    doing: ClassVar[str] = "measuring the machine's ceilings"


@dataclass(frozen=True)
class SideCheckApis(Request):
    """-> a message for every API of `instances` this side cannot resolve."""

    doing: ClassVar[str] = "checking the cases' APIs"
    instances: tuple["CaseInstance", ...]


# The requests a side worker's SideServer answers (after OpenSide).
SIDE_REQUESTS: tuple[type[Request], ...] = (
    Forward, Backward, Sample, RunWarmUp, SyncCost, PeakMemory, ProfileCall,
    SideInfo, SideOverheads, SideCeilings, SideCheckApis)


# -- a model replay process's request (model/replay/main.py ReplayServer) -----------------
# What kind of replay: PROBE runs the step once (each call's route chosen, its status, its
# outputs' fingerprints); TIME warms up, then times the step and each call.
REPLAY_PROBE, REPLAY_TIME = "probe", "time"


@dataclass(frozen=True)
class ReplayStep(Request):
    """Replay a model's step program (model/steady.StepProgram: opaque to this layer) in
    `framework`, set up as asked (device, threads, launch mode; pinned to `cpus` before the
    framework starts its thread pools); -> ReplayResult. A replay process sets its framework
    up at its first request; later ones must ask for the same set-up."""

    doing: ClassVar[str] = "replaying the model's step"
    framework: str
    program: Any
    kind: str = REPLAY_TIME
    device: str = "cpu"
    threads: int | None = None       # None: the framework's own default
    cpus: tuple[int, ...] = ()       # () : left unpinned
    launch: str | None = None        # "blocking" switches MindSpore's queue off
    routes: Mapping[int, int] | None = None   # call index -> the route the probe chose
    skip: tuple[int, ...] = ()       # calls stood in for without trying them
    samples: int = 5                 # step samples per round
    passes: int = 2                  # per-call passes per round
    rounds: int = 1
    warmup_runs: int = 3
    warmup_s: float = 0.2


@dataclass(frozen=True)
class ReplayResult:
    """What a replay process found (inside Ok): its framework's facts, each call's status
    (model/replay/executor.CallStatus), and the probe's fingerprints or the timings."""

    framework: str
    version: str
    threads: int
    launch: str
    status: tuple[Any, ...]
    pid: int
    fingerprints: tuple[Any, ...] | None = None      # a probe's, one per call
    warmup_runs: int | None = None
    samples_s: tuple[float, ...] = ()                # step samples, every round's
    per_call_s: tuple[tuple[float, ...], ...] = ()   # per call: its latencies
    # MindSpore: the speed probe (model/speed_probe.py) before each round's per-call
    # passes, seconds per probe call; a call's latencies are `passes` per round, in order
    probe_s: tuple[float, ...] = ()


@dataclass(frozen=True)
class ReplayPaired(Request):
    """Two or more step programs of one framework (`opbench model --suggest`: the original
    step and a swapped one) in one replay process, timed interleaved (A B B A ...), each
    program's outputs fingerprinted first when asked; -> PairedResult. Set-up as ReplayStep."""

    doing: ClassVar[str] = "replaying a step and its swap, interleaved"
    framework: str
    programs: tuple[Any, ...]
    fingerprints: bool = True
    device: str = "cpu"
    threads: int | None = None
    cpus: tuple[int, ...] = ()
    launch: str | None = None
    rounds: int = 0                  # at least these rounds (0: only the probe)
    samples: int = 5                 # step samples per program per round
    warmup_runs: int = 3
    warmup_s: float = 0.2
    # and more rounds, an even count, until the timed rounds have taken this long (at most
    # max_rounds): a small step gets as many samples as a large one's time
    min_timed_s: float = 0.0
    max_rounds: int = 1000


@dataclass(frozen=True)
class PairedResult:
    """A ReplayPaired's answer (inside Ok): per program, each call's status, the outputs'
    fingerprints (when asked) and the step samples of every round."""

    framework: str
    launch: str
    pid: int
    status: tuple[tuple[Any, ...], ...]
    fingerprints: tuple[Any, ...]
    samples_s: tuple[tuple[tuple[float, ...], ...], ...] = ()   # per program, per round
    # why the process's C allocator was left in glibc's moving state ("": held;
    # model/replay/allocator.py)
    heap_note: str = ""


# -- replies --------------------------------------------------------------------------------

class Reply:
    """A worker's answer to one request."""


@dataclass(frozen=True)
class Ok(Reply):
    value: Any


@dataclass(frozen=True)
class Failed(Reply):
    """The request raised in the worker (or was not one it answers): the exception's type
    and message, and the worker's traceback for whoever debugs it."""

    message: str
    traceback: str = ""


# The values a side's Forward and Backward answer with (inside Ok): an operator that fails
# in one side is a finding recorded against the instance, not a failed request.

@dataclass(frozen=True)
class ForwardDone:
    output: Any
    inputs_checksum: str


@dataclass(frozen=True)
class BackwardDone:
    gradients: Any


@dataclass(frozen=True)
class OperatorFailed:
    message: str


# -- the one serialisation --------------------------------------------------------------------

class UnreadableMessage(ValueError):
    """Bytes arrived that do not unpickle (another opbench's records, a truncated write)."""


def send(conn: Any, message: Request | Reply) -> None:
    """`message` over `conn` (a multiprocessing Connection). Raises what the connection
    raises (OSError, ValueError once closed)."""
    conn.send_bytes(pickle.dumps(message, protocol=PICKLE_PROTOCOL))


def receive(conn: Any) -> Any:
    """The next message from `conn`: a Request or Reply when the other end is opbench's;
    whatever else unpickled is the dispatcher's to refuse. EOFError/OSError when the other
    end is gone; UnreadableMessage when the bytes do not unpickle."""
    data = conn.recv_bytes()
    try:
        return pickle.loads(data)
    except Exception as exc:  # noqa: BLE001 - any unpickling failure is one kind for us
        raise UnreadableMessage(
            f"a message of {len(data)} bytes could not be read ({type(exc).__name__}: "
            f"{exc}); both ends must run the same opbench") from None


def connection_from_fd(fd: int) -> Any:
    """The child's end of the socket pair its parent passed as file descriptor `fd`
    (`python -m opbench.runner.worker_main FD`), as a Connection."""
    from multiprocessing.connection import Connection

    sock = socket.socket(fileno=fd)
    conn = Connection(os.dup(sock.fileno()))
    sock.close()
    return conn


# -- the one dispatcher -------------------------------------------------------------------------

Handler = Callable[[Any], Any]


class Dispatcher:
    """A table from request type to handler: `answer(request)` is the handler's value as
    Ok, or Failed with the exception's message when it raises, or when no handler takes the
    request. Never raises for a request (a worker must outlive a bad one)."""

    def __init__(self, handlers: Mapping[type, Handler]):
        self.handlers = dict(handlers)

    def answer(self, request: Any) -> Reply:
        handler = self.handlers.get(type(request))
        if handler is None:
            return Failed(unknown_request(request, self.handlers))
        try:
            return Ok(handler(request))
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which records it
            return Failed(f"{type(exc).__name__}: {exc}",
                          traceback_mod.format_exc(limit=TRACEBACK_LIMIT))


def unknown_request(request: Any, handlers: Mapping[type, Handler]) -> str:
    """`unknown request 'forward' (a tuple): this process answers Open, OpenSide, ...`."""
    name = type(request).__name__
    shown = repr(request)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    known = ", ".join(sorted(kind.__name__ for kind in handlers))
    return f"unknown request {shown} (a {name}): this process answers {known}"


def activity(request: Request | None, current: str = "?") -> str:
    """`running exp[shape=16x64,dtype=float32]` for Run(instance), and so on: what a worker
    is doing while it answers `request`; `current` is the instance a side worker holds."""
    if request is None:
        return "waiting for its first request"
    return request.doing.format(id=request.instance_id or "?", current=current)


def answer_requests(conn: Any, dispatcher: Dispatcher,
                    after_each: Callable[[], None] = lambda: None) -> int:
    """A worker process's loop: each request from `conn` answered by `dispatcher`, until
    Close (answered first) or the parent goes away; returns the exit status (0). An
    unreadable message is answered Failed and the loop goes on. `after_each` runs after
    every reply but Close's."""
    while True:
        try:
            request = receive(conn)
        except (EOFError, OSError):
            return 0
        except UnreadableMessage as exc:
            request, reply = None, Failed(str(exc))
        else:
            reply = dispatcher.answer(request)
        try:
            send(conn, reply)
        except OSError:       # the parent has gone (closed the pool, or died): stop
            return 0
        if isinstance(request, Close):
            return 0
        after_each()


def wire_fingerprint() -> str:
    """A short digest of the messages' shapes (every record's name and fields, the pickle
    protocol). A side in another interpreter runs that interpreter's opbench: with the same
    version string but other messages (a checkout beside an older install), its worker would
    die on the first request it cannot unpickle. The interpreter probe compares this digest
    first, so the run stops with one message instead (runner/interpreters.py)."""
    import hashlib
    from dataclasses import fields, is_dataclass

    shapes = []
    for name in sorted(__all__):
        value = globals()[name]
        if isinstance(value, type) and is_dataclass(value):
            shapes.append(f"{name}({','.join(f.name for f in fields(value))})")
    shapes.append(f"pickle{PICKLE_PROTOCOL}")
    return hashlib.sha256(";".join(shapes).encode()).hexdigest()[:16]
