"""Record both frameworks' signatures of every function and tensor method the API mapping
names, as data for the framework-free test over the whole mapping
(tests/unit/test_model_arguments.py: each mapped call with only its required arguments, and
with every default spelled out, replays or is refused with a reason).

Run:  GLOG_v=3 python tools/record_api_signatures.py [--out PATH]

torch: a Python function's own signature (inspect: every parameter, kind and default, the
private and deprecated ones included, as its function mode forwards them), else the first
overload tools/build_api_mapping.py reads (ATen schema or docstring: names and defaults).
MindSpore: the parameter names tools/build_api_mapping.py reads, and whether it takes
**kwargs (then any keyword is accepted). A default that is not a plain value (a dtype
object, a function) is recorded as {"other": its repr}.
"""
from __future__ import annotations

import argparse
import ast
import inspect
import json
import os
import sys
import types
from pathlib import Path
from typing import Any

os.environ.setdefault("GLOG_v", "3")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import build_api_mapping as builder  # noqa: E402
from opbench.frameworks.apimap import load_mapping  # noqa: E402

DEFAULT_OUT = (Path(__file__).resolve().parent.parent / "tests" / "unit" / "fixtures"
               / "api_signatures.json")
ROUTED_KINDS = ("function", "functional", "tensor_method")
_PLAIN = (type(None), bool, int, float, str)
_KINDS = {inspect.Parameter.POSITIONAL_ONLY: "positional",
          inspect.Parameter.POSITIONAL_OR_KEYWORD: "either",
          inspect.Parameter.KEYWORD_ONLY: "keyword",
          inspect.Parameter.VAR_POSITIONAL: "var_positional",
          inspect.Parameter.VAR_KEYWORD: "var_keyword"}


def _default(value: Any) -> Any:
    if value is inspect.Parameter.empty:
        return {"required": True}
    if isinstance(value, _PLAIN):
        return {"value": value}
    return {"other": repr(value)}


def _text_default(text: str) -> Any:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return {"other": text}
    return {"value": value} if isinstance(value, _PLAIN) else {"other": text}


def torch_signature(name: str) -> dict[str, Any] | None:
    obj = builder.resolve(name)
    if obj is None:
        return None
    if isinstance(obj, types.FunctionType):
        try:
            sig = inspect.signature(obj)
        except (TypeError, ValueError):
            sig = None
        if sig is not None:
            params = [[p.name, _KINDS[p.kind], _default(p.default)]
                      for p in sig.parameters.values()
                      if not (name.startswith("torch.Tensor.") and p.name == "self")]
            return {"python_function": True, "params": params}
    found = builder.signatures(obj, name.rsplit(".", 1)[1], name)
    if not found:
        return None
    first = found[0]
    defaults = dict(first.defaults)
    params = [[p, "either", _text_default(defaults[p]) if p in defaults else {"required": True}]
              for p in first.params]
    return {"python_function": False, "params": params}


def mindspore_signature(name: str) -> dict[str, Any] | None:
    obj = builder.resolve(name)
    if obj is None:
        return None
    found = builder.signatures(obj, name.rsplit(".", 1)[1], name)
    var_keyword = False
    try:
        var_keyword = any(p.kind == p.VAR_KEYWORD
                          for p in inspect.signature(builder._unwrap(obj)).parameters.values())
    except (TypeError, ValueError):
        pass
    if not found:
        return {"params": None, "var_keyword": var_keyword}
    names: list[str] = []
    for sig in found:
        names += [p for p in sig.params if p not in names]
    return {"params": names, "var_keyword": var_keyword}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    out = Path(parser.parse_args().out)
    torch_side: dict[str, Any] = {}
    ms_side: dict[str, Any] = {}
    for entry in load_mapping().entries:
        if entry.kind not in ROUTED_KINDS or entry.status == "none" or not entry.mindspore:
            continue
        torch_side[entry.torch] = torch_signature(entry.torch)
        for name in (entry.mindspore, *entry.alternatives):
            if name not in ms_side:
                ms_side[name] = mindspore_signature(name)
    import mindspore
    import torch
    data = {"torch_version": torch.__version__, "mindspore_version": mindspore.__version__,
            "torch": torch_side, "mindspore": ms_side}
    out.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    known = sum(v is not None for v in torch_side.values())
    print(f"wrote {out}: {known} of {len(torch_side)} torch signatures, "
          f"{sum(bool(v and v['params'] is not None) for v in ms_side.values())} of "
          f"{len(ms_side)} MindSpore ones")
    return 0


if __name__ == "__main__":
    sys.exit(main())
