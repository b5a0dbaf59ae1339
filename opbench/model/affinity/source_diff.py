"""A unified diff for a mechanical swap: a formula of one operand written as the whole
right-hand side of one assignment on one line (`y = x * torch.sigmoid(x)`), replaced by the
one call with that operand (`y = torch.nn.functional.silu(x)`).

Mechanical means the text alone says what to write: the statement is one line, its value's
outermost operation is the pattern's output call (so nothing around the formula is lost) and
every value it reads, other than the imported modules' names, the module's own top-level
names (a constant like GELU_C) and literals, is one and the same expression (the formula's operand). Anything else (a pattern spread over lines, a
formula inside a larger expression, two operands) gets no diff: its replacement is given as
code only. The replacement's API is spelled with the script's own import of its module
(`F.silu` where the script has `import torch.nn.functional as F`).
"""
from __future__ import annotations

import ast
import difflib
from pathlib import Path

from opbench.model.affinity.patterns import Candidate, NewCall
from opbench.model.program import Lit

__all__ = ["mechanical_diff", "MECHANICAL_FAMILIES"]

# The families whose replacement is one call of the formula's one operand.
MECHANICAL_FAMILIES = frozenset({"silu_formula", "gelu_formula", "softplus_formula",
                                 "softmax_composed", "log_softmax_composed"})
_BINOPS = {ast.Mult: "mul", ast.Div: "div", ast.Add: "add", ast.Sub: "sub", ast.Pow: "pow"}


def _imports(tree: ast.Module) -> dict[str, str]:
    """Module path -> the name the script calls it by."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.name] = alias.asname or alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                names[f"{node.module}.{alias.name}"] = alias.asname or alias.name
    return names


def spelled(api: str, imports: dict[str, str]) -> str:
    """`api` through the longest imported module that prefixes it (the full path if none;
    `import torch.nn.functional` alone binds `torch`, so a dotted import spells itself)."""
    best = ""
    for module in imports:
        if (api == module or api.startswith(module + ".")) and len(module) > len(best):
            best = module
    if not best:
        return api
    alias = imports[best]
    return alias + api[len(best):]


def _op(node: ast.expr) -> str | None:
    if isinstance(node, ast.BinOp):
        return _BINOPS.get(type(node.op))
    if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
        return node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
    return None


def _operands(value: ast.expr, modules: set[str]) -> set[str]:
    """The source of every value the expression reads that is not a callee, a constant or
    a module's name (math.pi, torch.float32)."""
    callees = {id(n.func) for n in ast.walk(value) if isinstance(n, ast.Call)}
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)) \
                and id(node) not in callees:
            root = node
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if not (isinstance(root, ast.Name) and root.id in modules):
                found.add(ast.unparse(node))
            return
        if isinstance(node, ast.Attribute):     # a callee's object: a method's receiver
            visit(node.value)
            return
        for child in ast.iter_child_nodes(node):
            visit(child)
    visit(value)
    return found


def _code(call: NewCall, operand: str, imports: dict[str, str]) -> str | None:
    extra = []
    for arg in call.args[1:]:
        if not isinstance(arg, Lit):
            return None
        extra.append(repr(arg.value))
    for key, arg in call.kwargs:
        if not isinstance(arg, Lit):
            return None
        extra.append(f"{key}={arg.value!r}")
    return f"{spelled(call.api, imports)}({', '.join([operand, *extra])})"


def mechanical_diff(candidate: Candidate, root_op: str, source: str, path: str) -> str:
    """The unified diff of `path` (text `source`) with the swap made, or "" where the swap
    is not mechanical (see above). `root_op`: the pattern's output call's operation."""
    site, kind = candidate.site, candidate.family.split(".", 1)[-1]
    swap = candidate.swaps[0]
    if site is None or site.first_line != site.last_line or kind not in MECHANICAL_FAMILIES \
            or len(swap.new_calls) != 1:
        return ""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ""
    statements = [n for n in ast.walk(tree) if isinstance(n, ast.Assign)
                  and n.lineno == site.first_line and n.end_lineno == site.first_line
                  and len(n.targets) == 1]
    if len(statements) != 1:
        return ""
    value = statements[0].value
    imports = _imports(tree)
    # module names and the module's own constants (GELU_C = math.sqrt(2 / math.pi)) are
    # not the formula's operand
    modules = {name.split(".", 1)[0] for name in imports.values()} | {
        t.id for node in tree.body if isinstance(node, ast.Assign)
        for t in node.targets if isinstance(t, ast.Name)}
    operands = _operands(value, modules)
    if _op(value) != root_op or len(operands) != 1:
        return ""
    code = _code(swap.new_calls[0], operands.pop(), imports)
    if code is None:
        return ""
    lines = source.splitlines(keepends=True)
    line = lines[site.first_line - 1]
    # col offsets are UTF-8 byte offsets
    raw = line.encode("utf-8")
    new_line = (raw[:value.col_offset].decode("utf-8") + code
                + raw[value.end_col_offset:].decode("utf-8"))
    changed = lines[:site.first_line - 1] + [new_line] + lines[site.first_line:]
    name = Path(path).name
    return "".join(difflib.unified_diff(lines, changed, fromfile=f"a/{name}",
                                        tofile=f"b/{name}"))
