"""Any profile opbench reads, the format told from the path.

  a file (.json, .json.gz)               torch.profiler's Chrome/Kineto trace
  a directory with *_ascend_ms/_pt, or   a MindSpore / torch_npu profiler output
  ASCEND_PROFILER_OUTPUT/ or FRAMEWORK/
  a directory of *.pt.trace.json[.gz]    the tensorboard trace handler's output (the
                                         newest trace in it)
"""
from __future__ import annotations

from pathlib import Path

from opbench.profiles.events import Profile, ProfileError
from opbench.profiles.mindspore_output import is_profile_dir, read_mindspore_profile
from opbench.profiles.torch_trace import read_torch_trace

__all__ = ["read_profile"]


def _handler_traces(path: Path) -> list[Path]:
    return sorted((p for p in path.iterdir()
                   if p.name.endswith((".pt.trace.json", ".pt.trace.json.gz"))),
                  key=lambda p: p.stat().st_mtime)


def read_profile(path: str | Path) -> Profile:
    path = Path(path)
    if not path.exists():
        raise ProfileError(f"{path}: no such file or directory")
    if path.is_file():
        return read_torch_trace(path)
    traces = _handler_traces(path)
    if traces and not is_profile_dir(path):
        return read_torch_trace(traces[-1])
    inside = [p for p in path.iterdir() if is_profile_dir(p)]
    if is_profile_dir(path) or inside:
        return read_mindspore_profile(path)
    raise ProfileError(f"{path}: neither a torch.profiler trace (*.json, *.pt.trace.json) nor "
                       "a MindSpore / torch_npu profiler directory (*_ascend_ms, "
                       "ASCEND_PROFILER_OUTPUT/, FRAMEWORK/)")
