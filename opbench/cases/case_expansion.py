"""Sweep expansion: a checked Case's instances, the cross product of its params with every
`$param` substituted and `$input` turned into a Ref, each instance named by a stable id
(`name[k=v,...]`, docs/case-format.md "Instance ids"), and each instance's inputs checked
once substituted: the dtypes and distributions a case may declare, and the input budget and
sweep size (config/limits.py). What is wrong is a CaseError naming the line of the value
that made it so.
"""
from __future__ import annotations

import copy
import itertools
import math
import re
from typing import Any, Mapping, Sequence

from opbench.cases.case_errors import CaseContext, CaseError, short, suggestion
from opbench.cases.case_model import (
                                      ESCAPE,
                                      Case,
                                      CaseInstance,
                                      DistOptions,
                                      FrameworkCall,
                                      InputSpec,
                                      Location,
                                      Ref,
                                      SectionSpec,
                                      ref_name,
                                      )
from opbench.config import limits
from opbench.config.vocabulary import (
                                       CASE_DTYPES,
                                       CASE_INT_DTYPES,
                                       FLOAT_DTYPES,
                                       )

__all__ = ["DEFAULT_DIST_FOR", "DEFAULT_DTYPE", "DISTRIBUTIONS", "DIST_OPTIONS", "DTYPES",
           "FLOAT_ONLY_DISTS", "INT_RANGES", "instances_of"]

# The dtypes a case's input may have (config/vocabulary.py; DTYPES is the name the runner,
# the adapters and the tracer's case writer import it by).
DTYPES = CASE_DTYPES
INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
DEFAULT_DTYPE = "float32"
# Bytes per element of the numpy array an input becomes (bfloat16 is held as float32).
_ITEMSIZE = {"float16": 2, "bfloat16": 4, "float32": 4, "float64": 8, "int32": 4,
             "int64": 8, "bool": 1}

# Distributions and the options each one takes, with their defaults (docs/case-format.md).
DISTRIBUTIONS: Mapping[str, Mapping[str, float]] = {
    "normal": {"mean": 0.0, "std": 1.0},
    "uniform": {"low": 0.0, "high": 1.0},
    # Default 0..9: small non-negative values, valid as indices into any axis of length >= 10.
    "randint": {"low": 0, "high": 10},
    # Bounded away from 0 so log, rsqrt, division and pow stay finite and well conditioned.
    "positive": {"low": 0.1, "high": 1.0},
    "mask": {"p": 0.5},
    "arange": {},
    "permutation": {},
}
DIST_OPTIONS = ("mean", "std", "low", "high", "p")
FLOAT_ONLY_DISTS = ("normal", "uniform", "positive")   # they draw non-integer values
DEFAULT_DIST_FOR = {**{d: "normal" for d in FLOAT_DTYPES},
                    **{d: "randint" for d in CASE_INT_DTYPES}, "bool": "mask"}

# Instance-id rendering of parameter values (see docs/case-format.md, "Instance ids").
_UNSAFE_ID_CHARS = re.compile(r"[^A-Za-z0-9_.+-]")
_EMPTY_LABEL = "empty"
_DISAMBIGUATOR = "~"   # never produced by a rendered value, so `label~N` is always unique


def instances_of(case: Case) -> tuple[list[CaseInstance], list[CaseError]]:
    """The case's instances, and the problems of those that could not be built (each
    instance is built or reported, never half made)."""
    return _Expander(case).instances()


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def _value_labels(values: Sequence[Any]) -> list[str]:
    """Id labels for one param's values: unique, deterministic, filename-safe-ish."""
    labels: list[str] = []
    for position, value in enumerate(values, start=1):
        label = _label(value)
        if label in labels:
            label = f"{label}{_DISAMBIGUATOR}{position}"
        labels.append(label)
    return labels


def _label(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        if not value:
            return _EMPTY_LABEL
        return "x".join(f"[{_label(v)}]" if isinstance(v, list) else _label(v)
                        for v in value)
    if isinstance(value, dict):
        return "{" + "_".join(f"{_label(k)}={_label(v)}" for k, v in value.items()) + "}"
    text = _UNSAFE_ID_CHARS.sub("_", str(value))
    return text or _EMPTY_LABEL


def _instance_id(case_name: str, labels: Mapping[str, str]) -> str:
    """`name[k1=v1,k2=v2]`, or `name` without params."""
    if not labels:
        return case_name
    return f"{case_name}[{','.join(f'{k}={v}' for k, v in labels.items())}]"


class _Expander:
    """Builds the instances and reports values that are invalid once substituted."""

    def __init__(self, case: Case):
        self.case, self.spec, self.ctx = case, case.spec, CaseContext.of(case)
        self.input_names = tuple(self.spec.inputs)
        self.labels = {name: _value_labels(values) for name, values in case.params.items()}

    def instances(self) -> tuple[list[CaseInstance], list[CaseError]]:
        names = list(self.case.params)
        axes = [range(len(self.case.params[n])) for n in names]
        try:
            limit, budget = limits.max_instances(), limits.input_budget_bytes()
        except limits.LimitError as exc:
            return [], [self.ctx.error((), str(exc))]
        count = math.prod(len(axis) for axis in axes)
        if count > limit:
            sizes = " x ".join(str(len(axis)) for axis in axes)
            return [], [self.ctx.error(("params",), (
                f"the sweep makes {count:,} instances ({sizes}), more than the limit of "
                f"{limit:,}; raise it with --max-instances or {limits.MAX_INSTANCES_ENV} if "
                f"the case really needs them"))]
        instances, problems = [], []
        for combo in itertools.product(*axes):
            chosen = dict(zip(names, combo))
            values = {n: self.case.params[n][i] for n, i in chosen.items()}
            errors: list[CaseError] = []
            inputs = tuple(self._input(name, spec, values, chosen, errors)
                           for name, spec in self.spec.inputs.items())
            calls = {f: self._call(f, section, values)
                     for f, section in self.spec.sections.items()}
            if not errors:
                self._check_budget(inputs, budget, chosen, errors)
            if errors:
                problems.extend(errors)
                continue
            ident = _instance_id(self.case.name, {n: self.labels[n][i] for n, i in chosen.items()})
            instances.append(CaseInstance(id=ident, case=self.case, params=copy.deepcopy(values),
                                          inputs=inputs, calls=calls))
        return instances, problems

    def _check_budget(self, inputs: Sequence[InputSpec], budget: int,
                      chosen: Mapping[str, int], errors: list[CaseError]) -> None:
        """Refuse an instance whose inputs would not fit the memory budget, before anything
        is allocated."""
        sizes = {spec.name: math.prod(spec.shape) * _ITEMSIZE[spec.dtype] for spec in inputs}
        total = sum(sizes.values())
        if total <= budget:
            return
        biggest = max(sizes, key=sizes.get)
        listed = ", ".join(f"{name} {limits.format_size(size)}" for name, size in sizes.items())
        where = {n: self.labels[n][i] for n, i in chosen.items()}
        ident = _instance_id(self.case.name, where)
        errors.append(self.ctx.error(("inputs", biggest), (
            f"instance {ident}: its inputs need {limits.format_size(total)} ({listed}), more "
            f"than the input budget of {limits.format_size(budget)}; raise it with "
            f"--input-budget or {limits.INPUT_BUDGET_ENV} if the machine has the memory")))

    # -- substitution --------------------------------------------------------------------
    def _substitute(self, value: Any, values: Mapping[str, Any], inputs: bool) -> Any:
        if isinstance(value, str):
            if value.startswith(ESCAPE):
                return value[1:]
            ref = ref_name(value)
            if ref is not None and ref in values:
                # Param values are used literally (a value "$x" stays the string "$x"), and
                # copied so no two instances share a mutable list.
                return copy.deepcopy(values[ref])
            if ref is not None and inputs and ref in self.input_names:
                return Ref(ref)
            return value
        if isinstance(value, list):
            return [self._substitute(v, values, inputs) for v in value]
        if isinstance(value, dict):
            return {k: self._substitute(v, values, inputs) for k, v in value.items()}
        return value

    def _call(self, framework: str, section: SectionSpec,
              values: Mapping[str, Any]) -> FrameworkCall:
        output = section.output
        return FrameworkCall(
            framework=framework,
            api=section.api,
            args=tuple(self._substitute(list(section.args or []), values, True)),
            kwargs=self._substitute(dict(section.kwargs or {}), values, True),
            output=tuple(output) if isinstance(output, list) else output,
            location=Location(self.case.file, self.ctx.line((framework, "api"))),
        )

    # -- inputs --------------------------------------------------------------------------
    def _input(self, name: str, spec: Mapping[str, Any], values: Mapping[str, Any],
               chosen: Mapping[str, int], errors: list[CaseError]) -> InputSpec | None:
        base = ("inputs", name)

        def get(key: str, default: Any = None) -> Any:
            return self._substitute(spec[key], values, False) if key in spec else default

        def fail(key: str | None, text: str) -> None:
            path = base + ((key,) if key else ())
            raw_value = spec.get(key) if key else None
            ref = ref_name(raw_value)
            if ref is not None and ref in chosen:
                # The fix belongs to the param value, so point at its line.
                line = self.ctx.line(("params", ref, chosen[ref]))
                errors.append(self.ctx.error(path, f"{text} (from ${ref})", line=line))
            else:
                errors.append(self.ctx.error(path, text))

        shape = get("shape")
        if not (isinstance(shape, list) and all(_is_int(d) and d >= 0 for d in shape)):
            fail("shape", f"{short(shape)} is not a list of non-negative ints")
            shape = []
        dtype = get("dtype", DEFAULT_DTYPE)
        if dtype not in DTYPES:
            fail("dtype", f"{short(dtype)} is not one of {', '.join(DTYPES)}"
                          f"{suggestion(str(dtype), DTYPES)}")
            return None
        dist = get("dist", DEFAULT_DIST_FOR[dtype])
        if dist not in DISTRIBUTIONS:
            fail("dist", f"{short(dist)} is not one of {', '.join(DISTRIBUTIONS)}"
                         f"{suggestion(str(dist), DISTRIBUTIONS)}")
            return None
        options = dict(DISTRIBUTIONS[dist])
        for key in DIST_OPTIONS:
            if key not in spec:
                continue
            if key not in options:
                takes = ", ".join(DISTRIBUTIONS[dist]) or "no options"
                fail(key, f"does not apply to dist '{dist}' (it takes {takes})")
                continue
            value = get(key)
            if not _is_number(value):
                fail(key, f"expected a finite number, got {short(value)}")
                continue
            options[key] = value
        self._check_dist(dist, dtype, shape, DistOptions.of(options), spec, fail)
        requires_grad = spec.get("requires_grad")
        if requires_grad and dtype not in FLOAT_DTYPES:
            fail("requires_grad", f"gradients need a floating dtype, not {dtype}")
        return InputSpec(name=name, shape=tuple(shape), dtype=dtype, dist=dist,
                         options=options, requires_grad=requires_grad)

    @staticmethod
    def _check_dist(dist: str, dtype: str, shape: list, options: DistOptions,
                    spec: Mapping[str, Any], fail) -> None:
        where = "dist" if "dist" in spec else ("dtype" if "dtype" in spec else None)
        if dtype == "bool" and dist != "mask":
            fail(where, f"dtype bool needs dist mask, not '{dist}'")
        elif dist in FLOAT_ONLY_DISTS and dtype not in FLOAT_DTYPES:
            fail(where, f"dist '{dist}' draws fractional values; dtype {dtype} needs "
                        f"randint, arange, permutation or mask")
        if dist == "normal" and options.std < 0:
            fail("std", "must be >= 0")
        if dist in ("uniform", "positive", "randint") and not options.low < options.high:
            fail("high", f"must be greater than low ({options.low})")
        if dist == "positive" and options.low <= 0:
            fail("low", "must be > 0 for dist positive")
        if dist == "randint":
            for key, bound in (("low", options.low), ("high", options.high)):
                if not _is_int(bound):
                    fail(key, f"randint bounds must be integers, got {bound!r}")
            if dtype in INT_RANGES:
                lowest, highest = INT_RANGES[dtype]
                if options.low < lowest or options.high - 1 > highest:
                    fail("high" if options.high - 1 > highest else "low",
                         f"randint range [{options.low}, {options.high}) does not fit "
                         f"{dtype}")
        if dist == "mask" and not 0 <= options.p <= 1:
            fail("p", "must be between 0 and 1")
        if dist == "permutation" and not shape:
            fail("shape", "dist permutation needs at least one dimension")
