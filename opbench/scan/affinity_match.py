"""The `ast` matchers of `opbench scan --affinity`: where a code base writes by hand what its
framework has one cheaper call for (the families are in opbench/data/affinity_families.yaml).

Nothing is imported or run. Names resolve through scan/aliases.py's import bindings. Data flow
inside a block is approximated by names: a name assigned earlier in the same block stands for
its assigned expression (followed up to EXPAND_DEPTH assignments back), so
`e = torch.exp(x); y = e / e.sum(-1, keepdim=True)` is one softmax. A method call on anything
that is not a non-framework import (`np.exp`) is taken as a tensor method: a heuristic, which
is why every hit is a suggestion to measure, never a verdict.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Callable, Iterator

from opbench.scan.aliases import PATH, Scope, bind_import, bind_import_from, framework_of
from opbench.scan.source import SourceText

# How many assignments back a name is followed. Attention written out is three statements
# (scores, probabilities, output) plus a mask and a dropout in between: five covers it.
EXPAND_DEPTH = 5
# Tensor creation from host data (a host-to-device copy).
_CREATION = frozenset({"torch.tensor", "torch.as_tensor", "torch.from_numpy",
                       "mindspore.Tensor", "mindspore.tensor", "mindspore.common.tensor.Tensor",
                       "mindspore.Tensor.from_numpy"})
# Tensors made from constants: the same tensor every iteration when every argument is one
# (_constant_argument); `torch.zeros(x.shape)` reads a step value and is not listed.
_CONSTANT_CREATION = frozenset({
    "torch.arange", "torch.ones", "torch.zeros", "torch.full",
    "mindspore.ops.arange", "mindspore.ops.ones", "mindspore.ops.zeros", "mindspore.ops.fill",
    "mindspore.ops.full", "mindspore.mint.ones", "mindspore.mint.zeros", "mindspore.mint.full"})
_DTYPE_NAME = re.compile(r"^(u?int\d+|float\d+|bfloat16|bool_?|complex\d+|half|float|double|long)$")
_HOST_SYNC_METHODS = frozenset({"item", "cpu", "numpy", "asnumpy"})
_MASK_FUNCS = frozenset({"isnan", "isinf", "eq", "ne", "gt", "lt", "ge", "le", "logical_not",
                         "logical_and", "logical_or", "isclose", "isfinite"})
_MATMUL_FUNCS = frozenset({"matmul", "mm", "bmm"})
# In-place updates of a weight: increments (the value is the step) and overwrites (the value
# is the new weight, so it must read the weight itself: `set_data(Tensor(loaded[name]))` in a
# loading loop is no optimizer).
_INCREMENT_METHODS = frozenset({"sub_", "add_", "addcmul_", "addcdiv_"})
_OVERWRITE_METHODS = frozenset({"copy_", "set_data", "assign_value"})
_INCREMENT_FUNCS = frozenset({"assign_sub", "assign_add"})
_OVERWRITE_FUNCS = frozenset({"assign"})
_GELU_TANH_CONSTANT = 0.044715


@dataclass(frozen=True)
class Match:
    """One family matched in one statement (or a loop)."""
    kind: str
    framework: str
    start_line: int
    end_line: int
    api_type: str
    written: str            # the text matched, one line
    fields: tuple[tuple[str, str], ...] = ()   # template values where the swap is mechanical


@dataclass(frozen=True)
class _Def:
    value: ast.expr
    stmt: ast.stmt
    env: dict            # the names visible when it was assigned (for `a = f(a)` chains)


class _Context:
    """The file-level facts: import bindings and which frameworks the file imports."""

    def __init__(self, tree: ast.Module, source: SourceText):
        self.source = source
        self.scope = Scope(None, "module")
        self.plain_imports: set[str] = set()
        self.frameworks: list[str] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found = bind_import(self.scope, node)
                for alias in node.names:
                    if not framework_of(alias.name):
                        self.plain_imports.add(alias.asname or alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom):
                found = bind_import_from(self.scope, node)
                if not found:
                    self.plain_imports.update(a.asname or a.name for a in node.names)
            else:
                continue
            self.frameworks += [f for f in sorted(found) if f not in self.frameworks]

    def path(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            binding = self.scope.names.get(node.id)
            return binding.path if binding is not None and binding.kind == PATH else None
        if isinstance(node, ast.Attribute):
            base = self.path(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def op(self, node: ast.AST) -> tuple[str, str, ast.expr | None] | None:
        """(operation name, framework or "", operand) of a call: `torch.exp(x)` ->
        ("exp", "torch", x); `x.exp()` -> ("exp", "", x); None for anything else."""
        if not isinstance(node, ast.Call):
            return None
        path = self.path(node.func)
        if path:
            first = node.args[0] if node.args else None
            return path.rsplit(".", 1)[-1], framework_of(path) or "", first
        func = node.func
        if isinstance(func, ast.Attribute):
            receiver = func.value
            if isinstance(receiver, ast.Name) and receiver.id in self.plain_imports:
                return None   # np.exp(x), math.log(y): not a tensor method
            return func.attr, "", receiver
        return None


class _Block:
    """One statement list being read in order, with its names' assignments."""

    def __init__(self, ctx: _Context, env: dict):
        self.ctx = ctx
        self.env = env
        self.used: list[ast.stmt] = []    # statements expanded in the current match attempt

    def expand(self, node: ast.expr | None) -> ast.expr | None:
        """The expression a name stands for (the name itself when it was not assigned here)."""
        return self.expand_in(node, self.env)[0]

    def expand_in(self, node: ast.expr | None, env: dict,
                  depth: int = EXPAND_DEPTH) -> tuple[ast.expr | None, dict]:
        """`expand` from the names visible in `env`; also returns the names visible there."""
        while isinstance(node, ast.Name) and node.id in env and depth > 0:
            found: _Def = env[node.id]
            self.used.append(found.stmt)
            node, env, depth = found.value, found.env, depth - 1
        return node, env

    def contains(self, node: ast.AST | None, test: Callable[[ast.AST], bool],
                 env: dict | None = None, depth: int = EXPAND_DEPTH) -> bool:
        """Is there a node passing `test` in `node`, following names to their assignments?"""
        if node is None:
            return False
        env = self.env if env is None else env
        for child in ast.walk(node):
            if test(child):
                return True
            if isinstance(child, ast.Name) and child.id in env and depth > 0:
                found: _Def = env[child.id]
                self.used.append(found.stmt)
                if self.contains(found.value, test, found.env, depth - 1):
                    return True
        return False

    def op_name(self, node: ast.AST | None) -> str | None:
        found = self.ctx.op(node) if node is not None else None
        return found[0] if found else None


def _same(a: ast.AST | None, b: ast.AST | None) -> bool:
    return a is not None and b is not None and ast.dump(a) == ast.dump(b)


def _number(node: ast.AST) -> float | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
            and not isinstance(node.value, bool):
        return float(node.value)
    return None


def _swaps_last_two(call: ast.Call, operand: ast.expr | None) -> bool:
    """`swapaxes(-2, -1)`, `transpose(x, (1, 0))`, `permute(0, 1, 3, 2)`: a transpose of the
    last two axes only (what MatMul's transpose_b does); `(0, 2, 1, 3)` is a head reshuffle."""
    args = [a for a in call.args if a is not operand]
    if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
        args = args[0].elts
    numbers = [_number(a) for a in args]
    if None in numbers or len(numbers) < 2:
        return False
    if len(numbers) == 2 and sorted(numbers) == [-2.0, -1.0]:
        return True
    rank = len(numbers)
    expected = list(range(rank - 2)) + [rank - 1, rank - 2]
    return numbers == [float(n) for n in expected]


def _root_name(node: ast.AST) -> str | None:
    """The name an attribute / call chain starts from: `np.exp(a).item` -> "np"."""
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _scalar_fill(node: ast.AST) -> bool:
    """A constant fill value: 0, -1e9, float('-inf'), -math.inf."""
    if _number(node) is not None:
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float":
        return True
    return isinstance(node, ast.Attribute) and node.attr in ("inf", "nan")


class _Matchers:
    """Each `_m_<kind>` takes an expression node and returns (text node, fields) or None."""

    def __init__(self, block: _Block):
        self.b = block
        self.ctx = block.ctx
        self.text = block.ctx.source.segment

    # ---- matmul + bias, transposed operands ---------------------------------------------
    def _matmul_operands(self, node: ast.AST) -> tuple[ast.expr, ast.expr] | None:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return node.left, node.right
        found = self.ctx.op(node)
        if found and found[0] in _MATMUL_FUNCS and found[1] and len(node.args) >= 2:
            return node.args[0], node.args[1]
        return None

    def _is_matmul(self, node: ast.AST) -> bool:
        return self._matmul_operands(node) is not None

    def _transposed(self, node: ast.expr, framework: str) -> ast.expr | None:
        """The untransposed operand of `w.T`, `w.t()` (any framework) or, for MindSpore, also
        `w.transpose(...)`, `w.swapaxes(-2, -1)`, `ops.transpose(w, perm)`."""
        if isinstance(node, ast.Attribute) and node.attr in ("T", "mT"):
            return node.value
        found = self.ctx.op(node)
        if found is None:
            return None
        name, _, operand = found
        if name == "t" and not node.args:
            return operand
        if framework == "mindspore" and name in ("transpose", "swapaxes", "permute") \
                and _swaps_last_two(node, operand):
            return operand
        return None

    def _m_linear_composed(self, node, framework):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)):
            return None
        for product, bias in ((node.left, node.right), (node.right, node.left)):
            operands = self._matmul_operands(self.b.expand(product))
            if operands is None or _number(bias) is not None:
                continue
            x, w = operands
            untransposed = self._transposed(w, "torch")
            weight = self.text(untransposed) if untransposed is not None else f"{self.text(w)}.T"
            mechanical = self.b.expand(product) is product
            fields = (("x", self.text(x)), ("w", weight), ("b", self.text(bias))) \
                if mechanical else ()
            return node, fields
        return None

    def _m_transpose_matmul(self, node, framework):
        operands = self._matmul_operands(node)
        if operands is None:
            return None
        x, w = operands
        untransposed = self._transposed(w, framework)
        if untransposed is None:
            return None
        # A 2-D `.T` / `.t()` is MatMul's operand; any other rank needs BatchMatMul.
        two_d = isinstance(w, ast.Attribute) or self.b.op_name(w) == "t" or any(
            isinstance(a, (ast.Tuple, ast.List)) and len(a.elts) == 2 for a in w.args)
        return node, (("x", self.text(x)), ("w", self.text(untransposed)),
                      ("primitive", "MatMul" if two_d else "BatchMatMul"))

    # ---- activations by formula ---------------------------------------------------------
    def _m_silu_formula(self, node, framework):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
            return None
        for a, b in ((node.left, node.right), (node.right, node.left)):
            found = self.ctx.op(b)
            if found and found[0] == "sigmoid" and _same(found[2], a):
                return node, (("x", self.text(a)),)
        return None

    def _m_softplus_formula(self, node, framework):
        found = self.ctx.op(node)
        if found is None or found[2] is None:
            return None
        name, _, operand = found
        if name == "log1p" and self.b.op_name(operand) == "exp":
            inner = self.ctx.op(operand)[2]
        elif name == "log" and isinstance(operand, ast.BinOp) and isinstance(operand.op, ast.Add):
            pairs = ((operand.left, operand.right), (operand.right, operand.left))
            inner = next((self.ctx.op(e)[2] for one, e in pairs
                          if _number(one) == 1.0 and self.b.op_name(e) == "exp"), None)
        else:
            return None
        return (node, (("x", self.text(inner)),)) if inner is not None else None

    def _m_gelu_formula(self, node, framework):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
            return None
        names = {self.b.op_name(n) for n in ast.walk(node)}
        numbers = {_number(n) for n in ast.walk(node)}
        if "tanh" in names and _GELU_TANH_CONSTANT in numbers:
            cubes = [n.left for n in ast.walk(node) if isinstance(n, ast.BinOp)
                     and isinstance(n.op, ast.Pow) and _number(n.right) == 3.0]
            x = self.text(cubes[0]) if cubes else "x"
            return node, (("x", x), ("approximate", ', approximate="tanh"'))
        if "erf" in names and 0.5 in numbers:
            erf = next(n for n in ast.walk(node) if self.b.op_name(n) == "erf")
            arg = self.ctx.op(erf)[2]
            x = arg.left if isinstance(arg, ast.BinOp) else arg
            return node, (("x", self.text(x) if x is not None else "x"), ("approximate", ""))
        return None

    # ---- norms and softmax --------------------------------------------------------------
    def _squared(self, node: ast.AST) -> bool:
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Pow) and _number(node.right) == 2:
                return True
            if isinstance(node.op, ast.Mult) and _same(node.left, node.right):
                return True
        found = self.ctx.op(node)
        if found and found[0] == "square":
            return True
        return bool(found and found[0] == "pow" and node.args
                    and _number(node.args[-1]) == 2)

    def _mean_of_square(self, node: ast.AST) -> bool:
        found = self.ctx.op(node)
        return bool(found and found[0] == "mean"
                    and self.b.contains(found[2], self._squared))

    def _norm(self, node, framework, want_layer: bool):
        if not isinstance(node, ast.BinOp):
            return None
        if isinstance(node.op, ast.Mult):
            pairs = ((node.left, node.right), (node.right, node.left))
            root = "rsqrt"
        elif isinstance(node.op, ast.Div):
            pairs = ((node.left, node.right),)
            root = "sqrt"
        else:
            return None
        for value, scale in pairs:
            scale = self.b.expand(scale)
            found = self.ctx.op(scale)
            if isinstance(node.op, ast.Div) and (found is None or found[0] != root):
                # (x - mean) / (x.std(-1) + eps): the hand-written LayerNorm of many tutorials
                std = self.b.contains(scale, lambda n: self.b.op_name(n) == "std", depth=1)
                centred = self.b.contains(value, lambda n: isinstance(n, ast.BinOp)
                                          and isinstance(n.op, ast.Sub))
                if want_layer and std and centred:
                    return node, ()
                continue
            if found is None or found[0] != root:
                continue
            variance = self.b.contains(found[2], lambda n: self.b.op_name(n) == "var")
            mean_square = self.b.contains(found[2], self._mean_of_square)
            if not (variance or mean_square):
                continue
            centred = self.b.contains(
                value, lambda n: isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub)
                and self.b.contains(n.right, lambda m: self.b.op_name(m) == "mean")) or variance
            if centred == want_layer:
                return node, ()
        return None

    def _m_rms_norm_composed(self, node, framework):
        return self._norm(node, framework, want_layer=False)

    def _m_layer_norm_composed(self, node, framework):
        return self._norm(node, framework, want_layer=True)

    def _m_softmax_composed(self, node, framework):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)):
            return None
        numerator = self.b.expand(node.left)
        if self.b.op_name(numerator) != "exp":
            return None
        total = self.ctx.op(self.b.expand(node.right))
        if total is None or total[0] != "sum":
            return None
        summed = self.b.expand(total[2])
        return (node, ()) if self.b.op_name(summed) == "exp" else None

    def _m_log_softmax_composed(self, node, framework):
        found = self.ctx.op(node)
        if found is None or found[0] != "log" or found[2] is None:
            return None
        inner = self.b.expand(found[2])
        if self.b.op_name(inner) != "softmax":
            return None
        fields = ()
        # Mechanical only when the softmax is written inside the log, as a framework function.
        if inner is found[2] and isinstance(inner.func, ast.Attribute) \
                and self.ctx.path(inner.func):
            call = self.text(inner)
            head = self.text(inner.func)
            fields = (("log_softmax_call", head[:-len("softmax")] + "log_softmax"
                       + call[len(head):]),)
        return node, fields

    def _m_attention_composed(self, node, framework):
        operands = self._matmul_operands(node)
        if operands is None:
            return None
        found = self._softmax_before(operands[0], self.b.env, EXPAND_DEPTH)
        if found is None:
            return None
        softmax, env = found
        return (node, ()) if self.b.contains(self.ctx.op(softmax)[2], self._is_matmul, env) \
            else None

    def _softmax_before(self, node: ast.expr | None, env: dict,
                        depth: int) -> tuple[ast.Call, dict] | None:
        """The softmax call `node` comes from, through casts, dropout and masking calls
        (`p.to(v.dtype)`, `self.dropout(p)`): their receiver or first argument, tried both."""
        node, env = self.b.expand_in(node, env)
        name = self.b.op_name(node)
        if name == "softmax":
            return node, env
        if name is None or depth == 0:
            return None
        candidates = ([node.func.value] if isinstance(node.func, ast.Attribute) else []) \
            + node.args[:1]
        for candidate in candidates:
            found = self._softmax_before(candidate, env, depth - 1)
            if found is not None:
                return found
        return None

    # ---- masked writes ------------------------------------------------------------------
    def _boolean_mask(self, node: ast.AST | None) -> bool:
        node = self.b.expand(node)
        if isinstance(node, ast.Compare):
            return True
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
            return self._boolean_mask(node.operand)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr)):
            return self._boolean_mask(node.left) or self._boolean_mask(node.right)
        return self.b.op_name(node) in _MASK_FUNCS

    def _m_masked_write_where(self, node, framework):
        found = self.ctx.op(node)
        if found is None or found[0] != "where" or not found[1] or len(node.args) != 3:
            return None
        cond, if_true, if_false = node.args
        for fill, other, negate in ((if_true, if_false, False), (if_false, if_true, True)):
            zeros = self.ctx.op(fill)
            if zeros and zeros[0] == "zeros_like" and _same(zeros[2], other):
                value = "0"
            elif _number(fill) is not None:
                value = self.text(fill)
            else:
                continue
            condition = f"~({self.text(cond)})" if negate else self.text(cond)
            return node, (("x", self.text(other)), ("cond", condition), ("v", value))
        return None


def _masked_write_index(stmt: ast.stmt, block: _Block) -> tuple[ast.AST, tuple] | None:
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Subscript) and _scalar_fill(stmt.value)):
        return None
    target = stmt.targets[0]
    if not _Matchers(block)._boolean_mask(target.slice):
        return None
    text = block.ctx.source.segment
    return stmt, (("x", text(target.value)), ("cond", text(target.slice)),
                  ("v", text(stmt.value)))


EXPRESSION_KINDS = ("attention_composed", "log_softmax_composed", "linear_composed",
                    "transpose_matmul", "layer_norm_composed", "rms_norm_composed",
                    "softmax_composed", "gelu_formula", "silu_formula", "softplus_formula",
                    "masked_write_where")


def _update_target(node: ast.AST, ctx: _Context) -> tuple[str, ast.AST, bool] | None:
    """(loop variable updated in place, the update's value, whether it overwrites)."""
    if isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Sub, ast.Add)):
        target = node.target
        if isinstance(target, ast.Attribute) and target.attr == "data":
            target = target.value
        return (target.id, node.value, False) if isinstance(target, ast.Name) else None
    if not isinstance(node, ast.Call) or not node.args:
        return None
    path = ctx.path(node.func)
    if path:
        name = path.rsplit(".", 1)[-1]
        if name in _INCREMENT_FUNCS | _OVERWRITE_FUNCS and len(node.args) >= 2 \
                and isinstance(node.args[0], ast.Name):
            return node.args[0].id, node.args[1], name in _OVERWRITE_FUNCS
        return None
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in _INCREMENT_METHODS | _OVERWRITE_METHODS:
        receiver = func.value
        if isinstance(receiver, ast.Attribute) and receiver.attr == "data":
            receiver = receiver.value
        if isinstance(receiver, ast.Name):
            return receiver.id, node.args[0], func.attr in _OVERWRITE_METHODS
    return None


def _walk_no_defs(nodes: list[ast.AST]) -> Iterator[ast.AST]:
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _optimizer_loop(loop: ast.For, ctx: _Context) -> bool:
    names = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    for node in _walk_no_defs(loop.body):
        found = _update_target(node, ctx)
        if found is None or found[0] not in names:
            continue
        target, value, overwrites = found
        reads = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
        if overwrites and target not in reads:
            continue
        mentions_grad = any(isinstance(n, ast.Attribute) and n.attr == "grad"
                            for n in ast.walk(value))
        other_loop_name = any(isinstance(n, ast.Name) and n.id in names - {found[0]}
                              for n in ast.walk(value))
        if mentions_grad or other_loop_name:
            return True
    return False


class _FileMatcher:
    def __init__(self, tree: ast.Module, source: SourceText, routes: dict[str, str]):
        self.ctx = _Context(tree, source)
        self.routes = routes
        self.matches: list[Match] = []
        self.tree = tree

    def run(self) -> list[Match]:
        if self.ctx.frameworks:
            self._block(self.tree.body, {}, in_loop=False)
        return self.matches

    def _framework(self, *frameworks: str) -> str:
        for framework in frameworks:
            if framework:
                return framework
        return self.ctx.frameworks[0]

    def _add(self, kind, framework, first_stmt_line, stmt, api_type, text_node, fields=()):
        self.matches.append(Match(kind, framework, first_stmt_line, stmt.end_lineno, api_type,
                                  self.ctx.source.segment(text_node), tuple(fields)))

    def _block(self, body: list[ast.stmt], env: dict, in_loop: bool) -> dict:
        """Match every statement of `body`; returns the names assigned at its end."""
        env = dict(env)
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._block(stmt.body, {}, in_loop=False)
                continue
            if isinstance(stmt, ast.ClassDef):
                self._block(stmt.body, {}, in_loop=False)
                continue
            block = _Block(self.ctx, env)
            for expr in _header_expressions(stmt):
                self._expressions(expr, stmt, block, in_loop)
            if isinstance(stmt, ast.Assign):
                found = _masked_write_index(stmt, block)
                if found is not None:
                    self._add("masked_write_index", self._framework(), stmt.lineno, stmt,
                              "pattern", found[0], found[1])
            if isinstance(stmt, (ast.For, ast.AsyncFor)) and _optimizer_loop(stmt, self.ctx):
                header = (f"for {self.ctx.source.segment(stmt.target)} in "
                          f"{self.ctx.source.segment(stmt.iter)}: ...")
                self.matches.append(Match("optimizer_loop", self._loop_framework(stmt),
                                          stmt.lineno, stmt.end_lineno, "pattern", header))
            branch_envs = [self._block(child_body, env, in_loop or loops)
                           for child_body, loops in _child_bodies(stmt)]
            _bind(stmt, env, branch_envs)
        return env

    def _loop_framework(self, loop: ast.For) -> str:
        for node in ast.walk(loop):
            if isinstance(node, (ast.Name, ast.Attribute)):
                framework = framework_of(self.ctx.path(node) or "")
                if framework:
                    return framework
        if any(isinstance(n, ast.Attribute) and n.attr == "grad" for n in ast.walk(loop)):
            return "torch"
        return self._framework()

    def _expressions(self, expr: ast.expr, stmt: ast.stmt, block: _Block, in_loop: bool):
        matchers = _Matchers(block)
        covered: set[int] = set()
        for node in ast.walk(expr):    # breadth first: an outer match before the inner ones
            if in_loop:
                self._loop_costs(node, stmt)
            route = self.routes.get(self.ctx.path(node.func)) \
                if isinstance(node, ast.Call) else None
            if route is not None:
                self._add(route, framework_of(self.ctx.path(node.func)), stmt.lineno, stmt,
                          "function", node)
            if id(node) in covered or not isinstance(node, (ast.BinOp, ast.Call)):
                continue
            framework = self._framework(*(found[1] for n in ast.walk(node)
                                          if (found := self.ctx.op(n))))
            for kind in EXPRESSION_KINDS:
                block.used = []
                found = getattr(matchers, f"_m_{kind}")(node, framework)
                if found is None:
                    continue
                first = min([stmt.lineno] + [s.lineno for s in block.used])
                self._add(kind, framework, first, stmt, "pattern" if kind != "masked_write_where"
                          else "function", found[0], found[1])
                covered.update(id(n) for n in ast.walk(node))
                break

    def _loop_costs(self, node: ast.AST, stmt: ast.stmt) -> None:
        if not isinstance(node, ast.Call):
            return
        path = self.ctx.path(node.func)
        if path in _CREATION or (path in _CONSTANT_CREATION and all(
                _constant_argument(a) for a in [*node.args, *(k.value for k in node.keywords)])):
            self._add("tensor_creation_in_loop", framework_of(path), stmt.lineno, stmt,
                      "function", node)
            return
        func = node.func
        if path is None and isinstance(func, ast.Attribute) and func.attr in _HOST_SYNC_METHODS \
                and not node.args and not node.keywords:
            if _root_name(func.value) in self.ctx.plain_imports:
                return    # np.exp(a).item(): numpy's, not a device sync
            framework = "mindspore" if func.attr == "asnumpy" else self._framework()
            self._add("host_sync_in_loop", framework, stmt.lineno, stmt, "method", node)


def _constant_argument(node: ast.AST) -> bool:
    """An argument that is the same every iteration: a literal, a module constant by its
    ALL_CAPS name (HIDDEN), a dtype (torch.float32, ms.float32), or tuples, lists and
    arithmetic of them. A heuristic: the measured swap checks the values."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_constant_argument(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return _constant_argument(node.operand)
    if isinstance(node, ast.BinOp):
        return _constant_argument(node.left) and _constant_argument(node.right)
    if isinstance(node, ast.Name):
        return node.id.isupper()
    return isinstance(node, ast.Attribute) and bool(_DTYPE_NAME.match(node.attr))


def _header_expressions(stmt: ast.stmt) -> list[ast.expr]:
    """The expressions a statement evaluates itself (not those of the blocks it holds)."""
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.iter]
    if isinstance(stmt, (ast.While, ast.If)):
        return [stmt.test]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [item.context_expr for item in stmt.items]
    if isinstance(stmt, ast.Try) or (hasattr(ast, "TryStar") and isinstance(stmt, ast.TryStar)):
        return []
    if isinstance(stmt, ast.Match):
        return [stmt.subject]
    return [child for child in ast.iter_child_nodes(stmt) if isinstance(child, ast.expr)]


def _child_bodies(stmt: ast.stmt) -> list[tuple[list[ast.stmt], bool]]:
    """Nested statement lists, each with whether it runs once per loop iteration."""
    if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
        return [(stmt.body, True), (stmt.orelse, False)]
    bodies = []
    for name in ("body", "orelse", "finalbody"):
        value = getattr(stmt, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            bodies.append((value, False))
    for handler in getattr(stmt, "handlers", []) or []:
        bodies.append((handler.body, False))
    for case in getattr(stmt, "cases", []) or []:
        bodies.append((case.body, False))
    return bodies


def _bind(stmt: ast.stmt, env: dict, branch_envs: list[dict]) -> None:
    """Record `name = value` for later statements. A name assigned inside an `if`, `with` or
    `try` keeps the last assignment a branch made (`if mask is not None: s = s + mask` still
    holds the product `s` came from); a loop variable or any other binding forgets it."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
            and isinstance(stmt.targets[0], ast.Name):
        env[stmt.targets[0].id] = _Def(stmt.value, stmt, dict(env))
        return
    branching = isinstance(stmt, (ast.If, ast.With, ast.AsyncWith, ast.Try))
    for node in _walk_no_defs([stmt]):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            later = [e[node.id] for e in branch_envs
                     if branching and node.id in e and e[node.id] is not env.get(node.id)]
            if later:
                env[node.id] = later[-1]
            else:
                env.pop(node.id, None)


def match_source(text: str, file: str = "<string>",
                 routes: dict[str, str] | None = None) -> list[Match]:
    """Every affinity match in one module's source, in line order; `routes` maps an API path
    to the kind of the route family that marks its calls. Raises SyntaxError."""
    tree = ast.parse(text, filename=file)
    matches = _FileMatcher(tree, SourceText(text), routes or {}).run()
    matches.sort(key=lambda m: (m.start_line, m.end_line, m.kind))
    return matches
