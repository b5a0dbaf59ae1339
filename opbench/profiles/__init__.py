"""Inside the op: the frameworks' own profiles, read and summarised (no framework imported).

One reader per format, every reader returning the same frozen `Profile` (events.py), so a
profile opbench took itself (`--profile`: the framework's profiler run around a measured
call, its files written to a scratch directory) and one a user brings (`opbench profile
show|compare`) go through the same code:

  events.py            Profile, ProfileEvent: a profile as timed events, by category
  torch_trace.py       torch.profiler's Chrome/Kineto trace (export_chrome_trace, the
                       tensorboard trace handler's *.pt.trace.json[.gz]): CPU ops, device
                       kernels with their correlation ids
  mindspore_output.py  a MindSpore (or torch_npu) profiler output directory: CPU
                       FRAMEWORK/cpu_op_* and trace_view.json, Ascend kernel_details.csv,
                       op_statistic.csv
  read.py              the format told from the path, one clear error for anything else
  kinds.py             which kernels are casts, layout changes, fallbacks (by name)
  kernels.py           a profile's kernels: device kernels, or a CPU profile's leaf ops
  call_profile.py      N profiled calls of one callable -> kernels per call (CallProfile)
  split.py             a CallProfile against the timed call: kernel and host time per call,
                       and the cause a profile gives a SLOW row (pure)

Layer: below frameworks/ (whose adapters run the profilers and hand the files here), above
cases/ and config/.
"""
