"""Turn what a trace saw into case YAML (docs/case-format.md) for both frameworks.

One case per (API, tensor shapes, dtypes) seen. The other framework's call comes from the API
mapping; what cannot become a case (no mapping, arguments YAML cannot hold, module calls,
unsupported dtypes) is listed in the file's header comment instead.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import yaml

from opbench.cases.case_files import DTYPES
from opbench.config.vocabulary import FLOAT_DTYPES
from opbench.frameworks.apimap import ApiMapping
from opbench.trace.events import (
                                  FUNCTION,
                                  MODULE,
                                  PRIMITIVE,
                                  TENSOR_METHOD,
                                  TIMING_NOTES,
                                  CallStats,
                                  Literal,
                                  Sequence,
                                  Signature,
                                  StatsKey,
                                  TensorSpec,
                                  )
from opbench.trace.mapping_fit import call_fits
from opbench.trace.recorder import TraceData
from opbench.trace.signature import format_signature, opaque_in, tensors_in

FRAMEWORK_PREFIX = {"torch": "torch.", "mindspore": "mindspore."}
TENSOR_API_PREFIX = {"torch": "torch.Tensor.", "mindspore": "mindspore.Tensor."}
OTHER = {"torch": "mindspore", "mindspore": "torch"}
CASE_NAME_PREFIX = "trace"
CASE_TAG = "traced"
# Integer inputs are zeros: a trace records shapes and dtypes, not values, and 0 is a valid
# index into any non-empty dimension (integer tensors in models are mostly indices).
INT_INPUT = {"dist": "randint", "low": 0, "high": 1}

# Operators whose outputs are random or uninitialised: their cases compare shape and dtype
# only (docs/case-format.md `compare: shape`), or every run would report a mismatch.
RANDOM_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "rand", "rand_like", "randn", "randn_like",
    "randint", "randint_like", "randperm", "bernoulli", "bernoulli_", "multinomial", "normal",
    "normal_", "poisson", "uniform", "uniform_", "random_", "exponential_", "geometric_",
    "cauchy_", "log_normal_", "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
    "feature_alpha_dropout", "rrelu", "gumbel_softmax", "kaiming_uniform_", "kaiming_normal_",
    "xavier_uniform_", "xavier_normal_", "trunc_normal_", "orthogonal_", "sparse_"})

REASON_MODULE = ("a module call needs constructor arguments and weights, which a case cannot "
                 "hold (trace with nested=True to see the functions it calls)")
REASON_PRIMITIVE = "a primitive instance carries constructor attributes a case cannot hold"


@dataclass(frozen=True)
class Skipped:
    framework: str
    api: str
    inputs: str
    calls: int
    reason: str

    def line(self) -> str:
        return f"{self.api}({self.inputs}) x{self.calls}: {self.reason}"


@dataclass
class EmitReport:
    path: str
    cases: list[dict[str, Any]] = field(default_factory=list)     # written, runnable
    drafts: list[dict[str, Any]] = field(default_factory=list)    # written commented out
    skipped: list[Skipped] = field(default_factory=list)
    written: bool = False


def case_api(framework: str, api: str) -> str:
    """Dotted name to the case file's spelling: Tensor methods as 'Tensor.name'."""
    prefix = TENSOR_API_PREFIX[framework]
    return "Tensor." + api[len(prefix):] if api.startswith(prefix) else api


def op_name(api: str) -> str:
    """'torch.nn.functional.softmax' -> 'softmax'; 'torch.Tensor.__add__' -> 'add'."""
    last = api.rsplit(".", 1)[-1]
    if last.startswith("__") and last.endswith("__") and len(last) > 4:
        last = last[2:-2]
    return last


@dataclass
class EmittedCase:
    case: dict[str, Any]
    draft: str | None = None     # why it is written commented out (needs a person), else None
    note: str | None = None      # a mapping difference this call does not touch


def build_cases(data: TraceData, mapping: ApiMapping) -> tuple[list[EmittedCase], list[Skipped]]:
    groups: dict[tuple[str, str, str, tuple[TensorSpec, ...]], list[tuple[int, CallStats]]] = {}
    skipped: list[Skipped] = []
    for key, stats in sorted(data.stats.items(), key=lambda item: item[0].signature):
        signature = data.signatures[key.signature]
        if key.kind in (MODULE, PRIMITIVE):
            reason = REASON_MODULE if key.kind == MODULE else REASON_PRIMITIVE
            skipped.append(_skip(key, signature, stats.calls, reason))
            continue
        if key.kind not in (FUNCTION, TENSOR_METHOD):
            continue
        groups.setdefault((key.framework, key.api, key.kind, tuple(tensors_in(signature))),
                          []).append((key.signature, stats))

    emitted: list[EmittedCase] = []
    seen_bodies: set[str] = set()
    per_op: dict[str, int] = {}
    for (framework, api, kind, specs), members in groups.items():
        total_calls = sum(s.calls for _, s in members)
        key = StatsKey(framework, api, kind, members[0][0])
        first = data.signatures[members[0][0]]
        bad_dtypes = sorted({s.dtype for s in specs if s.dtype not in DTYPES})
        if bad_dtypes:
            skipped.append(_skip(key, first, total_calls,
                                 f"dtype {', '.join(bad_dtypes)} is not a case-file dtype"))
            continue
        entry = mapping.lookup(framework, api)
        if entry is None:
            skipped.append(_skip(key, first, total_calls,
                                 f"no entry in the API mapping for the {OTHER[framework]} side"))
            continue
        if entry.status == "none" or entry.mindspore is None:
            skipped.append(_skip(key, first, total_calls,
                                 f"no MindSpore equivalent: {entry.note}"))
            continue
        usable = [(sig_id, s) for sig_id, s in members
                  if not any(True for _ in opaque_in(data.signatures[sig_id]))
                  and s.failed < s.calls]
        if not usable:
            kinds = sorted({o.type_name for sig_id, _ in members
                            for o in opaque_in(data.signatures[sig_id])})
            reason = (f"arguments a case file cannot hold ({', '.join(kinds)})" if kinds
                      else "every call failed when traced")
            skipped.append(_skip(key, first, total_calls, reason))
            continue
        # The most frequent argument set (first seen on ties) stands for this shape group.
        sig_id, stats = max(usable, key=lambda member: (member[1].calls, -member[0]))
        signature = data.signatures[sig_id]
        inputs: dict[str, dict[str, Any]] = {}
        args = [_yaml_value(v, inputs) for v in signature.args]
        kwargs = {k: _yaml_value(v, inputs) for k, v in signature.kwargs}
        body = {**({"inputs": inputs} if inputs else {}),
                "torch": _call(case_api("torch", entry.torch), args, kwargs),
                "mindspore": _call(case_api("mindspore", entry.mindspore), args, kwargs)}
        body_key = repr(body)
        if body_key in seen_bodies:      # both frameworks traced the same call
            continue
        seen_bodies.add(body_key)
        op = op_name(entry.torch)
        per_op[op] = per_op.get(op, 0) + 1
        mean_ns = stats.total_ns / stats.calls
        case = {"name": f"{CASE_NAME_PREFIX}_{op}_{per_op[op]}", "op": op, "tags": [CASE_TAG],
                "description": f"{api}({format_signature(signature)}) seen {total_calls}x in "
                               f"a {framework} trace, mean {mean_ns / 1e3:.3g} us "
                               f"({data.timing} timing)",
                **body}
        if op in RANDOM_OPS:
            case["compare"] = "shape"
        fits, problem = call_fits(entry, framework, kwargs)
        emitted.append(EmittedCase(case, draft=None if fits else problem,
                                   note=entry.note if entry.status == "differs" and fits
                                   else None))
    return emitted, skipped


def render_yaml(data: TraceData, emitted: list[EmittedCase], skipped: list[Skipped]) -> str:
    active = [e for e in emitted if e.draft is None]
    drafts = [e for e in emitted if e.draft is not None]
    lines = ["# Cases emitted by `opbench trace`: one per (API, input shapes, dtypes) a program "
             "called.",
             f"# Times seen when traced were taken in {TIMING_NOTES[data.timing]}.",
             "# Input values are random (a trace records shapes and dtypes, not values); "
             "integer inputs are zeros.",
             "# The other framework's call comes from the API mapping (opbench/data/"
             "api_mapping.yaml)."]
    if drafts:
        lines.append(f"# {len(drafts)} draft case(s) at the end are commented out: the mapping "
                     f"says the other framework's call differs; fix the call and uncomment.")
    if skipped:
        lines.append(f"# Not emitted ({len(skipped)} call signatures):")
        lines.extend(f"#   {s.framework}: {s.line()}" for s in skipped)
    lines.append("cases:")
    for item in active:
        if item.note:
            lines.append(f"  # mapping differs, but not in a way this call uses: {item.note}")
        lines.extend("  " + line for line in _dump(item.case))
    for item in drafts:
        lines.append(f"  # DRAFT - mapping differs: {item.draft}")
        lines.extend("  # " + line for line in _dump(item.case))
    return "\n".join(lines) + "\n"


def _call(api: str, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    return {"api": api, "args": args, **({"kwargs": kwargs} if kwargs else {})}


def _dump(case: dict[str, Any]) -> list[str]:
    text = yaml.dump([case], Dumper=_NoAliasDumper, sort_keys=False, default_flow_style=None,
                     allow_unicode=True, width=100)
    return text.rstrip("\n").split("\n")


class _NoAliasDumper(yaml.SafeDumper):
    """Both framework sections share one args list; write it out twice, not as &id/*id."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def emit_cases(data: TraceData, path: str | os.PathLike[str],
               mapping: ApiMapping | None = None) -> EmitReport:
    """Write the cases to `path`. Nothing is written when no call can become a runnable case
    (a case file without cases is not valid)."""
    if mapping is None:
        from opbench.frameworks.apimap import load_mapping
        mapping = load_mapping()
    emitted, skipped = build_cases(data, mapping)
    report = EmitReport(path=os.fspath(path), cases=[e.case for e in emitted if e.draft is None],
                        drafts=[e.case for e in emitted if e.draft is not None],
                        skipped=skipped)
    if report.cases:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(render_yaml(data, emitted, skipped))
        report.written = True
    return report


def _skip(key: StatsKey, signature: Signature, calls: int, reason: str) -> Skipped:
    return Skipped(key.framework, key.api, format_signature(signature), calls, reason)


def _yaml_value(value: Any, inputs: dict[str, dict[str, Any]]) -> Any:
    if isinstance(value, TensorSpec):
        name = f"x{len(inputs)}"
        spec: dict[str, Any] = {"shape": list(value.shape), "dtype": value.dtype}
        if value.dtype in FLOAT_DTYPES:
            spec["dist"] = "normal"
        elif value.dtype == "bool":
            spec["dist"] = "mask"
        else:
            spec.update(INT_INPUT)
        inputs[name] = spec
        return f"${name}"
    if isinstance(value, Literal):
        if isinstance(value.value, str) and value.value.startswith("$"):
            return "$" + value.value     # "$$text" is the literal "$text"
        return value.value
    if isinstance(value, Sequence):
        return [_yaml_value(v, inputs) for v in value.items]
    raise ValueError(f"not expressible in a case file: {value!r}")  # filtered out before


__all__ = ["emit_cases", "build_cases", "render_yaml", "EmitReport", "EmittedCase", "Skipped"]
