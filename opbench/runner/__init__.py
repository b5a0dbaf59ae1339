"""Measuring: one instance from seeded numpy inputs through both frameworks, outputs compared,
then timed by the protocol (warm-up, one shared loop count, interleaved rounds), in this
process (session.py) or in worker processes (workers.py), the two behind one Protocol
(protocol.py). Records what happened, judges nothing, prints nothing.

  ceilings     The machine's ceilings as each framework reaches them: memory bandwidth (a large
               copy, and copies that fit L2 and L3) and peak FLOP/s (a large float32 matrix product), measured once per run in
               the process and with the threads the run measures with, so an instance's achieved
               fraction compares it with what the same framework gets from the same cores
  core_use     The cores a side really used: process CPU time over a sample's wall time
  check        Do two frameworks compute the same thing? Compared before any timing: a fast
               wrong answer is a MISMATCH, not a win
  exits        How a worker process ended, in the words a reader needs: `was killed by SIGSEGV
               (signal 11)`, `exited with status 3`
  injection    SELF-TEST FACILITY - never active unless the environment variable below is set
  inputs       Seeded input arrays and comparison tolerances for case instances
  ipc          What a parent and its worker processes say: one frozen record per request, the
               replies, their one serialisation and the one dispatcher
  machine_facts  Per-call floors and ceilings measured once and kept in a user cache directory,
               keyed by machine, builds, interpreter, threads and pinning
  measure      Timing protocol: warm-up, one shared loop count, interleaved rounds, serial or
               async
  memory       Peak memory of one operator call, per framework, with the best measure the device
               has
  pinning      Equal cores in fact: the measuring process pinned to exactly the run's cores
  placement    Where each pytest-xdist worker may measure: its own CPU cores, or its own device
  protocol     The one interface of the two ways of measuring: a Session in this process
               (session.py) and a pool of worker processes that each hold one (workers.py)
  quiesce      Wait until no other thread of the measuring processes is using a core, before a
               sample
  raw_records  The records a run writes for each instance and each of its measurements: their
               shape, and everything computed from their rounds
  session      One case instance measured in this process: numpy inputs, both frameworks,
               outputs compared, then timed
  worker_main  The worker process: one Session (both frameworks) that measures what its parent
               asks
  workers      Measure in fresh worker processes, as pyperf does: each instance's rounds are
               spread over `config.processes` workers
"""
