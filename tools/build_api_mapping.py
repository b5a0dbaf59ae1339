"""Regenerate opbench/data/api_mapping.yaml from the installed torch and MindSpore.

Run:  GLOG_v=3 python tools/build_api_mapping.py [--out PATH] [--report]

How an entry is decided
-----------------------
1. Candidates: public torch functions, torch.nn.functional functions, torch.Tensor methods
   (including the arithmetic/comparison dunders a user writes as `a + b`), torch.nn modules,
   torch.linalg / torch.special / torch.fft functions and torch.optim optimizers.
2. Counterpart: the first MindSpore name that exists, searched in the order a MindSpore user
   would reach for it: the `mindspore.mint` mirror of the same namespace (mint mirrors torch),
   then the other mint namespaces, then `mindspore.ops` / `mindspore.nn`. Hand-checked entries
   in `mapping_overrides.py` replace the search for names whose counterpart is spelled
   differently, has different semantics, or does not exist.
3. Status: parameter names (and defaults, where both sides give them) come from
   `inspect.signature`; for builtins from torch's ATen schemas (the source of its Python
   bindings) or from the signature lines that open both frameworks' docstrings (one line per
   overload); for classes with a (*args, **kwargs) constructor from the docstring's `Args:`.
   Equal names and defaults -> `same`. MindSpore accepting extra (optional or legacy
   overload) arguments on top of torch's -> still `same`, with a note. Anything else ->
   `differs`, with a note naming the parameters. A hand-written override note wins.
4. CPU routes: mint names verified to have no CPU kernel in MindSpore 2.10 get the CPU
   alternative appended to their note and listed under `alternatives` (`CPU_ROUTES` in
   mapping_overrides.py); MindSpore's other spellings of the same API (`ALSO_NAMED`: `ops.tanh`
   for mint's tanh) are listed there too, so MindSpore code calling them maps back to torch.
5. Names that are neither found nor covered by an override are left out: the file lists only
   decided entries, so `none` always comes from a reviewed override.

The YAML is the reviewed artifact: regenerate, read the diff, commit.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

os.environ.setdefault("GLOG_v", "3")  # MindSpore's glog chatter on import

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mapping_overrides import (  # noqa: E402
    ALSO_NAMED, CPU_ROUTES, EXTRA_TORCH_NAMES, OVERRIDES, SKIP_TORCH_NAMES)

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "opbench" / "data" / "api_mapping.yaml"

# Parameters that never make two APIs differ for a user: the receiver, torch's `out=` buffer
# (MindSpore has no out= anywhere; noting it on every function would drown the real notes),
# and torch's layout/pin_memory/memory_format/requires_grad factory knobs.
IGNORED_PARAMS = frozenset({
    "self", "out", "layout", "pin_memory", "memory_format", "requires_grad", "device",
    "generator",
    # torch's deprecated loss arguments (replaced by `reduction` since torch 0.4) and private
    # knobs: no user of a current torch passes them.
    "size_average", "reduce", "_stacklevel",
    # torch.optim implementation switches (foreach/fused kernels, CUDA graphs, higher-order
    # gradients): they choose how the update runs, not what it computes.
    "foreach", "fused", "capturable", "differentiable",
})

# Defaults never compared: torch's factory `dtype=None` means "the default dtype" (float32),
# which is what MindSpore writes out as `dtype=mstype.float32`.
UNCOMPARED_DEFAULTS = frozenset({"dtype"})

BASE_CLASS_NAMES = frozenset({"torch.nn.modules.module.Module", "mindspore.nn.cell.Cell"})

ATEN_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}

TORCH_DUNDERS = (
    "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__", "__mul__", "__rmul__",
    "__imul__", "__truediv__", "__rtruediv__", "__itruediv__", "__floordiv__", "__rfloordiv__",
    "__mod__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__neg__", "__abs__",
    "__invert__", "__and__", "__or__", "__xor__", "__lshift__", "__rshift__", "__eq__",
    "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__getitem__", "__setitem__", "__len__",
    "__bool__", "__float__", "__int__",
)


@dataclass
class Entry:
    torch: str
    mindspore: str | None
    kind: str
    status: str
    note: str = ""
    basis: str = ""   # how the status was decided; printed by --report, not written
    alternatives: tuple[str, ...] = ()


# --------------------------------------------------------------------------- name resolution

def resolve(dotted: str) -> Any | None:
    """Import the longest importable module prefix of `dotted`, then getattr the rest."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # noqa: BLE001 - any import failure means "not this prefix"
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def public_names(module_path: str, keep: Callable[[Any], bool]) -> list[str]:
    module = resolve(module_path)
    names = []
    for name in dir(module):
        if name.startswith("_"):
            continue
        try:
            obj = getattr(module, name)
        except Exception:  # noqa: BLE001 - lazy attributes may raise on access
            continue
        if keep(obj):
            names.append(f"{module_path}.{name}")
    return names


# --------------------------------------------------------------------------- signatures

@dataclass(frozen=True)
class Signature:
    params: tuple[str, ...]            # in order, ignored params removed
    defaults: tuple[tuple[str, str], ...]  # (name, normalized default text)


# A signature line starts at column 0 (examples and their printed output are indented).
_SIG_START = re.compile(
    r"^(?:\.\.\s+(?:method|function|py:function)::\s*)?(?:[\w.]+\.)?(?P<name>\w+)\(")


def _split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


_DTYPE_ALIASES = {"long": "int64", "int": "int32", "float": "float32", "half": "float16",
                  "double": "float64"}


def _normalize_default(text: str) -> str:
    """Spelling-independent default text: 2 == 2.0 == 2.00, 1e-8 == 1e-08,
    torch.long == torch.int64 == mindspore.int64, "x" == 'x'."""
    text = text.strip().replace('"', "'").replace(" ", "")
    list_match = re.fullmatch(r"[\[(](.*)[\])]", text)
    if list_match:
        items = {_normalize_default(i) for i in _split_top_level(list_match.group(1))}
        if not items:
            return "None"  # ATen's `int[2] stride=[]` means "unset", as None does in Python
        if len(items) == 1:
            return items.pop()  # [0, 0] and 0 both mean "0 on every spatial dim"
        return text
    try:
        number = float(text)
    except ValueError:
        pass
    else:
        return str(int(number)) if number.is_integer() else repr(number)
    for prefix in ("torch.", "mindspore.", "mstype.", "ms."):
        if text.startswith(prefix):
            tail = text[len(prefix):]
            return "dtype:" + _DTYPE_ALIASES.get(tail, tail)
    return text


def _from_arg_text(arg_text: str) -> Signature | None:
    params, defaults = [], []
    for part in _split_top_level(arg_text):
        if part in ("*", "/") or part.startswith("**"):
            continue
        part = part.lstrip("*")
        name, _, default = part.partition("=")
        name = name.split(":")[0].strip()
        if not re.fullmatch(r"\w+", name):
            return None  # not a parseable signature line (prose that happens to match)
        if name in IGNORED_PARAMS:
            continue
        params.append(name)
        if default:
            defaults.append((name, _normalize_default(default)))
    return Signature(tuple(params), tuple(defaults))


def _from_inspect(obj: Any) -> Signature | None:
    if inspect.isclass(obj) and _inherits_base_init(obj):
        return Signature((), ())  # e.g. nn.Sigmoid(): constructed without arguments
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    kinds = {p.kind for p in sig.parameters.values()}
    named = [p for p in sig.parameters.values()
             if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in IGNORED_PARAMS]
    if not named and (inspect.Parameter.VAR_POSITIONAL in kinds
                      or inspect.Parameter.VAR_KEYWORD in kinds):
        return None  # an overload dispatcher: (*args, **kwargs) says nothing
    defaults = tuple((p.name, _normalize_default(_default_text(p.default))) for p in named
                     if p.default is not inspect.Parameter.empty)
    return Signature(tuple(p.name for p in named), defaults)


def _inherits_base_init(cls: type) -> bool:
    """True when the class's __init__ is the framework base class's (torch.nn.Module,
    mindspore.nn.Cell), whose own parameters (auto_prefix, flags) are not the layer's."""
    for klass in cls.__mro__:
        if "__init__" in vars(klass):
            return f"{klass.__module__}.{klass.__qualname__}" in BASE_CLASS_NAMES
    return False


def _default_text(value: Any) -> str:
    # A function default (activation=F.relu) compares by name, not by its repr's address.
    if callable(value) and hasattr(value, "__name__"):
        return repr(value.__name__)
    return repr(value)


def _from_docstring(obj: Any, short_name: str) -> list[Signature]:
    doc = inspect.getdoc(obj) or ""
    found = []
    for line in doc.splitlines():
        match = _SIG_START.match(line)
        if not match or match.group("name") != short_name:
            continue
        arg_text = _balanced_prefix(line[match.end():])
        if arg_text is None:
            continue
        sig = _from_arg_text(arg_text)
        if sig is not None:
            found.append(sig)
    return found


def _balanced_prefix(text: str) -> str | None:
    """The text up to the `)` closing an already-open `(`; None if it never closes."""
    depth = 1
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return text[:i]
    return None


def _unwrap(obj: Any) -> Any:
    """MindSpore wraps some mint functions in a checking closure (`_check_jit_view_...`)
    whose own signature is (*args, **kwargs); the wrapped function is its only callable cell."""
    seen = 0
    while obj is not None and seen < 3:
        wrapped = getattr(obj, "__wrapped__", None)
        if wrapped is None:
            cells = [c.cell_contents for c in (getattr(obj, "__closure__", None) or ())
                     if callable(getattr(c, "cell_contents", None))]
            wrapped = cells[0] if len(cells) == 1 and inspect.isfunction(cells[0]) else None
        if wrapped is None:
            return obj
        obj, seen = wrapped, seen + 1
    return obj


def _from_aten_schema(torch_name: str) -> list[Signature]:
    """torch builtins without a docstring (torch.relu, torch.batch_norm, ...) still have their
    ATen schema; the Python binding calls the schema's `self` `input` for free functions."""
    import torch
    short = torch_name.rsplit(".", 1)[1]
    is_method = torch_name.startswith("torch.Tensor.")
    try:
        schemas = torch._C._jit_get_schemas_for_operator(f"aten::{short}")
    except RuntimeError:
        return []
    found = []
    for schema in schemas:
        if not schema.arguments or any(
                arg.alias_info is not None and arg.alias_info.is_write
                for arg in schema.arguments if arg.name != "self"):
            continue  # an out= variant: its extra arguments are output buffers
        if str(schema.arguments[0].type) not in ("Tensor", "Tensor[]"):
            continue  # TorchScript list/scalar overloads, not user-visible
        params, defaults = [], []
        for arg in schema.arguments:
            name = arg.name
            if name == "self":
                if is_method:
                    continue
                name = "input"
            if name in IGNORED_PARAMS:
                continue
            params.append(name)
            if arg.default_value is not None:
                default = arg.default_value
                if name == "reduction" and isinstance(default, int):
                    default = ATEN_REDUCTIONS[default]  # ATen stores the enum as an int
                defaults.append((name, _normalize_default(repr(default))))
        found.append(Signature(tuple(params), tuple(defaults)))
    return found


def signatures(obj: Any, short_name: str, full_name: str) -> list[Signature]:
    obj = _unwrap(obj)
    sig = _from_inspect(obj)
    if sig is not None:
        return [sig]
    if full_name.startswith("torch."):
        # torch's builtins are generated from the ATen schemas, so the schema's argument names
        # are the real keyword names; the hand-written docstrings sometimes drift from them
        # (Tensor.div's doc says `value`, the binding accepts `other`).
        found = _from_aten_schema(full_name)
        if found:
            return found
    found = _from_docstring(obj, short_name)
    if not found and inspect.isclass(obj):
        found = _from_args_section(obj)
    return found


_ARGS_ITEM = re.compile(r"^    (\w+)(?: \(|:)")


def _from_args_section(cls: type) -> list[Signature]:
    """Classes whose __init__ is (*args, **kwargs) (MindSpore's nn.LSTM, nn.Adagrad, ...)
    still document their constructor arguments in the docstring's `Args:` section."""
    lines = (inspect.getdoc(cls) or "").splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "Args:")
    except StopIteration:
        return []
    params = []
    for line in lines[start + 1:]:
        if line and not line.startswith(" "):
            break  # the next section (Inputs:, Outputs:, ...) starts at column 0
        match = _ARGS_ITEM.match(line)
        # `dtype` here is the parameter dtype, a factory keyword torch takes too (undocumented).
        if match and match.group(1) not in IGNORED_PARAMS and match.group(1) != "dtype":
            params.append(match.group(1))
    return [Signature(tuple(params), ())] if params else []


def compare(torch_name: str, torch_obj: Any, ms_name: str, ms_obj: Any) -> tuple[str, str, str]:
    """(status, note, basis) from the parameter lists of both sides."""
    torch_short, ms_short = torch_name.rsplit(".", 1)[1], ms_name.rsplit(".", 1)[1]
    t_sigs = signatures(torch_obj, torch_short, torch_name)
    m_sigs = signatures(ms_obj, ms_short, ms_name)
    if not t_sigs or not m_sigs:
        missing = "torch" if not t_sigs else "MindSpore"
        if torch_short.startswith("__"):
            return "same", "", "operator dunder: fixed arity"
        # Said in the file, so a reader knows this `same` rests on the name alone.
        return "same", (f"{missing} signature not introspectable; `same` assumed from the "
                        f"matching name"), f"unverified: no {missing} signature"
    t_names = _param_union(t_sigs)
    m_names = _param_union(m_sigs)
    only_t = [n for n in t_names if n not in m_names]
    only_m = [n for n in m_names if n not in t_names]
    notes = []
    if only_t or only_m:
        notes.append(_rename_note(only_t, only_m))
    extra_only = bool(only_m) and not only_t
    t_defaults, m_defaults = _default_map(t_sigs), _default_map(m_sigs)
    changed = [f"{n}={t_defaults[n]} vs {m_defaults[n]}" for n in t_defaults
               if n in m_defaults and n not in UNCOMPARED_DEFAULTS
               and t_defaults[n] != m_defaults[n]]
    if changed:
        notes.append("defaults differ (torch vs MindSpore): " + ", ".join(changed))
    if extra_only and len(notes) == 1:
        # Every torch-style call also works in MindSpore (its extra arguments are optional or
        # belong to a legacy overload), so the user calls it the same way.
        return "same", notes[0], "signature"
    if notes:
        return "differs", "; ".join(notes), "signature"
    return "same", "", "signature"


def _param_union(sigs: list[Signature]) -> list[str]:
    names: list[str] = []
    for sig in sigs:
        for name in sig.params:
            if name not in names:
                names.append(name)
    return names


def _default_map(sigs: list[Signature]) -> dict[str, str]:
    # Only defaults that every overload agrees on: overloads legitimately differ.
    seen: dict[str, set[str]] = {}
    for sig in sigs:
        for name, default in sig.defaults:
            seen.setdefault(name, set()).add(default)
    return {name: next(iter(vals)) for name, vals in seen.items() if len(vals) == 1}


def _rename_note(only_t: list[str], only_m: list[str]) -> str:
    if only_t and only_m:
        return (f"argument names differ: torch ({', '.join(only_t)}) vs MindSpore "
                f"({', '.join(only_m)})")
    if only_t:
        return f"MindSpore lacks torch argument(s): {', '.join(only_t)}"
    return f"MindSpore also accepts: {', '.join(only_m)}"


# --------------------------------------------------------------------------- counterparts

def _candidates(torch_name: str) -> list[str]:
    """MindSpore names to try, in the order a MindSpore user would reach for them."""
    short = torch_name.rsplit(".", 1)[1]
    if torch_name.startswith("torch.Tensor."):
        return [f"mindspore.Tensor.{short}"]
    if torch_name.startswith("torch.nn.functional."):
        return [f"mindspore.mint.nn.functional.{short}", f"mindspore.mint.{short}",
                f"mindspore.ops.{short}"]
    for sub in ("linalg", "special", "fft"):
        if torch_name.startswith(f"torch.{sub}."):
            return [f"mindspore.mint.{sub}.{short}", f"mindspore.ops.{short}"]
    if torch_name.startswith("torch.optim."):
        return [f"mindspore.mint.optim.{short}", f"mindspore.nn.{short}"]
    if torch_name.startswith("torch.nn."):
        return [f"mindspore.mint.nn.{short}", f"mindspore.nn.{short}"]
    return [f"mindspore.mint.{short}", f"mindspore.mint.nn.functional.{short}",
            f"mindspore.ops.{short}"]


def kind_of(torch_name: str, obj: Any) -> str:
    if torch_name.startswith("torch.Tensor."):
        return "tensor_method"
    if torch_name.startswith("torch.nn.functional."):
        return "functional"
    if inspect.isclass(obj):
        import torch
        return "module" if issubclass(obj, torch.nn.Module) else "class"
    return "function"


def decide(torch_name: str) -> Entry | None:
    entry = _decide(torch_name)
    if entry is not None and entry.mindspore in CPU_ROUTES:
        text = CPU_ROUTES[entry.mindspore]
        route = f"no CPU kernel in MindSpore 2.10; CPU route: {text}"
        entry.note = f"{entry.note}; {route}" if entry.note else route
        alternative = _MINDSPORE_NAME.search(text)
        if alternative:
            if resolve(alternative.group(0)) is None:
                raise SystemExit(f"CPU route of {entry.mindspore}: {alternative.group(0)} "
                                 "does not resolve")
            entry.alternatives = (alternative.group(0),)
    if entry is not None and torch_name in ALSO_NAMED:
        for name in ALSO_NAMED[torch_name]:
            if resolve(name) is None:
                raise SystemExit(f"ALSO_NAMED {torch_name}: {name} does not resolve")
        entry.alternatives = entry.alternatives + tuple(
            n for n in ALSO_NAMED[torch_name] if n not in entry.alternatives)
    return entry


_MINDSPORE_NAME = re.compile(r"mindspore(?:\.[A-Za-z_]\w*)+")


def _decide(torch_name: str) -> Entry | None:
    torch_obj = resolve(torch_name)
    if torch_obj is None:
        raise SystemExit(f"{torch_name}: does not resolve in torch {_version('torch')}")
    kind = kind_of(torch_name, torch_obj)
    override = OVERRIDES.get(torch_name)
    if override is not None:
        ms_name = override.get("mindspore")
        if ms_name is not None and resolve(ms_name) is None:
            raise SystemExit(f"override {torch_name}: {ms_name} does not resolve")
        status = override.get("status")
        note = override.get("note", "")
        basis = "override"
        if status is None:  # override names the counterpart; signatures decide the status
            status, auto_note, basis = compare(
                torch_name, torch_obj, ms_name, resolve(ms_name))
            note = note or auto_note
        return Entry(torch_name, ms_name, override.get("kind", kind), status, note, basis)
    for ms_name in _candidates(torch_name):
        ms_obj = resolve(ms_name)
        if ms_obj is None or not callable(ms_obj):
            continue
        status, note, basis = compare(torch_name, torch_obj, ms_name, ms_obj)
        return Entry(torch_name, ms_name, kind, status, note, basis)
    return None


def _version(module: str) -> str:
    return getattr(resolve(module), "__version__", "?")


# --------------------------------------------------------------------------- candidates

def torch_candidates() -> list[str]:
    import torch

    def is_function(obj: Any) -> bool:
        return callable(obj) and not inspect.isclass(obj) and not inspect.ismodule(obj)

    def is_module_class(obj: Any) -> bool:
        return inspect.isclass(obj) and issubclass(obj, torch.nn.Module)

    def is_optimizer(obj: Any) -> bool:
        return inspect.isclass(obj) and issubclass(obj, torch.optim.Optimizer) \
            and obj is not torch.optim.Optimizer

    names: list[str] = []
    names += public_names("torch", is_function)
    names += public_names("torch.nn.functional", is_function)
    names += public_names("torch.linalg", is_function)
    names += public_names("torch.special", is_function)
    names += public_names("torch.fft", is_function)
    names += public_names("torch.nn", is_module_class)
    names += public_names("torch.optim", is_optimizer)
    names += [f"torch.Tensor.{n}" for n in dir(torch.Tensor)
              if not n.startswith("_") and callable(getattr(torch.Tensor, n, None))]
    names += [f"torch.Tensor.{n}" for n in TORCH_DUNDERS]
    names += list(EXTRA_TORCH_NAMES)
    seen: set[str] = set()
    unique = []
    for name in names:
        if name not in seen and name not in SKIP_TORCH_NAMES:
            seen.add(name)
            unique.append(name)
    return unique


def build() -> list[Entry]:
    entries = []
    for torch_name in torch_candidates():
        entry = decide(torch_name)
        if entry is not None:
            entries.append(entry)
    unused = sorted(set(CPU_ROUTES) - {e.mindspore for e in entries})
    if unused:  # a typo in mapping_overrides.py would silently drop a reviewed note
        raise SystemExit(f"CPU_ROUTES names no entry uses: {', '.join(unused)}")
    # torch.nn.functional first: where an ATen-level duplicate (torch.dropout, torch.conv1d)
    # maps to the same MindSpore name, the reverse lookup should find the spelling users write.
    order = {"functional": 0, "function": 1, "tensor_method": 2, "module": 3, "class": 4}
    entries.sort(key=lambda e: (order[e.kind], e.torch))
    return entries


# --------------------------------------------------------------------------- output

HEADER = """\
# torch <-> MindSpore API mapping (loaded by opbench.frameworks.apimap.load_mapping).
# Generated by tools/build_api_mapping.py from torch {torch} and MindSpore {ms}, with the
# hand-checked notes in tools/mapping_overrides.py; regenerate and review the diff.
# status: same    - called the same way: same argument names and defaults
#         differs - note says how: argument names, defaults, semantics, return values
#         none    - no MindSpore equivalent (note says what to use instead)
"""


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_yaml(entries: Iterable[Entry]) -> str:
    lines = [HEADER.format(torch=_version("torch"), ms=_version("mindspore"))]
    current_kind = None
    for e in entries:
        if e.kind != current_kind:
            current_kind = e.kind
            lines.append(f"\n# ---- {current_kind}\n")
        lines.append(f"- torch: {e.torch}\n")
        lines.append(f"  mindspore: {e.mindspore if e.mindspore else 'null'}\n")
        lines.append(f"  kind: {e.kind}\n")
        lines.append(f"  status: {e.status}\n")
        if e.note:
            lines.append(f"  note: {_quote(e.note)}\n")
        if e.alternatives:
            lines.append(f"  alternatives: [{', '.join(e.alternatives)}]\n")
    return "".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--report", action="store_true",
                        help="print how each status was decided (to review unverified ones)")
    options = parser.parse_args(argv)
    entries = build()
    options.out.write_text(to_yaml(entries), encoding="utf-8")
    counts: dict[str, int] = {}
    for e in entries:
        counts[e.status] = counts.get(e.status, 0) + 1
    print(f"wrote {len(entries)} entries to {options.out}: {counts}", file=sys.stderr)
    if options.report:
        for e in entries:
            print(f"{e.basis:32.32} {e.status:8} {e.torch} -> {e.mindspore}  {e.note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
