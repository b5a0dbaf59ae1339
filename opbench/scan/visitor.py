"""Walk one module's AST and emit a ScanRow per framework call.

The walk follows Python's own name binding closely enough for aliases to resolve:
- statements are visited in source order, so `import torch.nn.functional as F` binds `F`
  for what follows;
- function bodies are visited only after the whole enclosing scope (module, class) has been
  visited, as they run after it was executed: a module-level import below a function still
  counts inside it, and `forward` sees the `self.fc = nn.Linear(...)` made in `__init__`
  (a class's `__init__` is visited before its other methods);
- functions do not see class-body names; parameters and assignments shadow outer names.

Three kinds of row:
- a call whose callee resolves through the aliases to a dotted framework name
  (`F.relu(x)` -> torch.nn.functional.relu; `nn.Linear(4, 2)` -> torch.nn.Linear): certain;
- a method call, operator or indexing whose receiver is *believed* to be a tensor
  (`x.sum()`, `a @ b`, `x[mask] = v`): guess=True, with the evidence in guess_reason;
- a bare call of a name that is defined nowhere in the file while the file star-imports a
  framework module: guess=True.
"""
from __future__ import annotations

import ast
import builtins
from typing import NamedTuple

from opbench.scan import operators
from opbench.scan.aliases import (
    INSTANCE,
    LOCAL,
    LOCAL_BINDING,
    PATH,
    TENSOR,
    Binding,
    Scope,
    bind_import,
    bind_import_from,
    framework_of,
)
from opbench.scan.rows import CLASS, FUNCTION, METHOD, SPECIAL, ScanRow
from opbench.scan.source import SourceText
from opbench.scan.tensors import (
    CHAIN_METHODS,
    MODULE_ONLY_METHODS,
    MODULE_TENSOR_ATTRIBUTES,
    NON_TENSOR_METHODS,
    TENSOR_ATTRIBUTES,
    TENSOR_REGISTRATION_METHODS,
    call_result_kind,
    is_tensor_type,
    output_is_tensor,
)

SELF = "self"   # binding kind of a method's first parameter
_BUILTIN_NAMES = frozenset(dir(builtins))
# Methods visited before their siblings: they set up the `self.*` attributes the others use.
_SETUP_METHODS = ("__init__", "setup", "build", "__post_init__")
_NON_METHOD_DECORATORS = ("staticmethod",)


class Evidence(NamedTuple):
    """Why an expression is believed to be a tensor."""
    framework: str
    reason: str           # noun phrase: "the result of torch.randn() (line 3)"
    weak: bool = False    # only a method-name chain (`.float()`) says so
    name: str = ""        # the variable it was read from, if any

    def describe(self, role: str) -> str:
        if self.name:
            return f"{role} `{self.name}` holds {self.reason}"
        return f"{role} is {self.reason}"


def api_type_of(path: str) -> str:
    """function / class / method from the shape of a dotted name (`torch.Tensor.add` is a
    method, `torch.nn.Linear` a class)."""
    parts = path.rsplit(".", 2)
    last = parts[-1]
    if last[:1].isupper():
        return CLASS
    if len(parts) >= 2 and parts[-2][:1].isupper():
        return METHOD
    return FUNCTION


class _PendingFunction(NamedTuple):
    node: ast.FunctionDef | ast.AsyncFunctionDef
    scope: Scope          # the scope the def statement ran in
    is_method: bool


class ModuleVisitor:
    """Visits one parsed module; rows accumulate in `.rows` (unsorted)."""

    def __init__(self, file: str, source: SourceText):
        self.file = file
        self.source = source
        self.rows: list[ScanRow] = []
        self.frameworks: set[str] = set()    # frameworks this file imports
        self._pending: list[_PendingFunction] = []
        self._class_methods: list[_PendingFunction] | None = None
        self._binop_evidence: dict[int, Evidence | None] = {}
        self._stmt_handlers = {
            ast.Import: self._import, ast.ImportFrom: self._import_from,
            ast.Assign: self._assign, ast.AnnAssign: self._ann_assign,
            ast.AugAssign: self._aug_assign, ast.For: self._for, ast.AsyncFor: self._for,
            ast.With: self._with, ast.AsyncWith: self._with,
            ast.FunctionDef: self._function_def, ast.AsyncFunctionDef: self._function_def,
            ast.ClassDef: self._class_def, ast.Delete: self._delete,
            ast.Expr: self._expr_stmt, ast.Return: self._expr_stmt,
            ast.Global: self._nothing, ast.Nonlocal: self._nothing, ast.Pass: self._nothing,
            ast.Break: self._nothing, ast.Continue: self._nothing,
        }
        self._expr_handlers = {
            ast.Call: self._call, ast.Attribute: self._attribute, ast.Name: self._nothing,
            ast.Constant: self._nothing, ast.Subscript: self._subscript,
            ast.BinOp: self._binop, ast.UnaryOp: self._unaryop, ast.Compare: self._compare,
            ast.Lambda: self._lambda, ast.ListComp: self._comprehension,
            ast.SetComp: self._comprehension, ast.GeneratorExp: self._comprehension,
            ast.DictComp: self._comprehension, ast.NamedExpr: self._named_expr,
            # Containers and other pass-through forms, spelled out: the generic walk over
            # ast.iter_child_nodes costs more and these are the bulk of the nodes.
            ast.Tuple: self._elements, ast.List: self._elements, ast.Set: self._elements,
            ast.BoolOp: self._bool_op, ast.Dict: self._dict, ast.Starred: self._starred,
            ast.JoinedStr: self._bool_op, ast.FormattedValue: self._formatted_value,
            ast.IfExp: self._if_exp,
        }
        self._stmt_handlers.update({ast.If: self._if, ast.While: self._if})

    # ------------------------------------------------------------------ driving

    def visit_module(self, tree: ast.Module) -> list[ScanRow]:
        self._body(tree.body, Scope(None, "module"))
        # FIFO: a function's nested defs are queued while its body is visited, after it.
        index = 0
        while index < len(self._pending):
            self._function_body(self._pending[index])
            index += 1
        return self.rows

    def _body(self, statements: list[ast.stmt], scope: Scope) -> None:
        for statement in statements:
            self._stmt(statement, scope)

    def _stmt(self, node: ast.stmt, scope: Scope) -> None:
        # Bindings change between statements, never inside an expression's evaluation.
        if self._binop_evidence:
            self._binop_evidence.clear()
        handler = self._stmt_handlers.get(type(node))
        if handler is None:
            self._generic(node, scope)
        else:
            handler(node, scope)

    def _expr(self, node: ast.expr, scope: Scope) -> None:
        handler = self._expr_handlers.get(type(node))
        if handler is None:
            self._generic(node, scope)
        else:
            handler(node, scope)

    def _generic(self, node: ast.AST, scope: Scope) -> None:
        """Statements and expressions with no binding or row of their own (if, while, try,
        match, return, containers, f-strings...): visit what they contain."""
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self._expr(child, scope)
            elif isinstance(child, ast.stmt):
                self._stmt(child, scope)
            elif isinstance(child, ast.ExceptHandler):
                if child.type is not None:
                    self._expr(child.type, scope)
                if child.name:
                    scope.bind(child.name, LOCAL_BINDING)
                self._body(child.body, scope)
            elif not isinstance(child, (ast.expr_context, ast.operator, ast.cmpop,
                                        ast.unaryop, ast.boolop)):
                self._generic(child, scope)

    def _nothing(self, node: ast.AST, scope: Scope) -> None:
        pass

    # ------------------------------------------------------------------ rows

    def _emit(self, node: ast.AST, api: str, api_type: str, *, text_node: ast.AST | None = None,
              reason: str = "") -> None:
        shown = text_node or node
        self.rows.append(ScanRow(
            file=self.file, line=shown.lineno, end_line=shown.end_lineno,
            col=self.source.column(shown), api_type=api_type,
            call=self.source.segment(shown), api=api,
            framework=framework_of(api) or "", guess=bool(reason), guess_reason=reason,
        ))

    def _emit_tensor_special(self, node: ast.AST, dunder: str, evidence: Evidence, role: str,
                             text_node: ast.AST | None = None) -> None:
        self._emit(node, f"{evidence.framework}.Tensor.{dunder}", SPECIAL,
                   text_node=text_node, reason=evidence.describe(role))

    # ------------------------------------------------------------------ resolution

    def resolve_path(self, node: ast.expr, scope: Scope) -> str | None:
        """The full framework name an expression denotes (`F.relu` -> torch.nn.functional.relu),
        or None."""
        attrs: list[str] = []
        while type(node) is ast.Attribute:
            attrs.append(node.attr)
            node = node.value
        if type(node) is not ast.Name:
            return None
        binding = scope.lookup(node.id)
        if binding is None or binding.kind != PATH:
            return None
        if not attrs:
            return binding.path
        return binding.path + "." + ".".join(reversed(attrs))

    def _self_attrs(self, name: str, scope: Scope) -> dict[str, Binding] | None:
        """The `self.*` table if `name` is a method's self parameter (also from a closure)."""
        current: Scope | None = scope
        first = True
        while current is not None:
            if first or current.kind != "class":
                binding = current.names.get(name)
                if binding is not None:
                    return current.self_attrs if binding.kind == SELF else None
            first = False
            current = current.parent
        return None

    def _attribute_binding(self, node: ast.Attribute, scope: Scope) -> Binding | None:
        """What the scan knows about `self.attr`."""
        if type(node.value) is ast.Name:
            attrs = self._self_attrs(node.value.id, scope)
            if attrs is not None:
                return attrs.get(node.attr)
        return None

    def instance_of(self, node: ast.expr, scope: Scope) -> Binding | None:
        """The INSTANCE binding if `node` is a framework module/primitive object."""
        kind = type(node)
        if kind is ast.Name:
            binding = scope.lookup(node.id)
        elif kind is ast.Attribute:
            binding = self._attribute_binding(node, scope)
        elif kind is ast.Call:
            # `nn.ReLU()(x)`: the inner call builds the object.
            path = self.resolve_path(node.func, scope)
            if path is None or call_result_kind(path) != INSTANCE:
                return None
            return Binding(INSTANCE, path, framework_of(path) or "")
        else:
            return None
        return binding if binding is not None and binding.kind == INSTANCE else None

    def _default_framework(self) -> str:
        # A weak chain does not say which framework; a file importing only one decides it.
        return next(iter(self.frameworks)) if len(self.frameworks) == 1 else "torch"

    def evidence(self, node: ast.expr, scope: Scope) -> Evidence | None:
        """Why `node` is believed to evaluate to a tensor, or None."""
        kind = type(node)
        if kind is ast.Name:
            binding = scope.lookup(node.id)
            if binding is not None and binding.kind == TENSOR:
                return Evidence(binding.framework, binding.reason, binding.weak, node.id)
            return None
        if kind is ast.Attribute:
            binding = self._attribute_binding(node, scope)
            if binding is not None:
                if binding.kind == TENSOR:
                    return Evidence(binding.framework, binding.reason, binding.weak,
                                    f"{node.value.id}.{node.attr}")
                if binding.kind == INSTANCE:
                    return None
            if node.attr in TENSOR_ATTRIBUTES:
                return self.evidence(node.value, scope)
            if node.attr in MODULE_TENSOR_ATTRIBUTES:
                owner = self.instance_of(node.value, scope)
                if owner is not None:
                    return Evidence(owner.framework,
                                    f"the .{node.attr} of a {owner.path} object")
            return None
        if kind is ast.Call:
            return self._call_evidence(node, scope)
        if kind is ast.Subscript:
            return self.evidence(node.value, scope)
        if kind is ast.BinOp:
            # `a + b + c + ...` nests to the left; every level asks about its left operand,
            # so remember the answers or long generated sums cost quadratic time.
            key = id(node)
            if key in self._binop_evidence:
                return self._binop_evidence[key]
            found = self.evidence(node.left, scope) or self.evidence(node.right, scope)
            self._binop_evidence[key] = found
            return found
        if kind is ast.UnaryOp and type(node.op) is not ast.Not:
            return self.evidence(node.operand, scope)
        return None

    def _call_evidence(self, node: ast.Call, scope: Scope) -> Evidence | None:
        func = node.func
        path = self.resolve_path(func, scope)
        if path is not None:
            if call_result_kind(path) == TENSOR:
                return Evidence(framework_of(path) or "",
                                f"the result of {path}() (line {node.lineno})")
            return None
        owner = self.instance_of(func, scope)
        if owner is not None:
            if not output_is_tensor(owner.path):
                return None
            return Evidence(owner.framework,
                            f"the output of a {owner.path} object (line {node.lineno})")
        if type(func) is ast.Attribute:
            method = func.attr
            receiver = self.evidence(func.value, scope)
            if receiver is not None:
                if method in NON_TENSOR_METHODS or method.startswith("is_"):
                    return None
                return receiver
            if method in CHAIN_METHODS and self.frameworks:
                return Evidence(self._default_framework(),
                                f"the result of .{method}() (method-name chain)", weak=True)
        return None

    def _tensor_annotation(self, annotation: ast.expr | None, scope: Scope) -> str | None:
        """The tensor type an annotation names (`Tensor`, `Optional[torch.Tensor]`,
        `"ms.Tensor"`, `Tensor | None`), or None."""
        if annotation is None:
            return None
        kind = type(annotation)
        if kind is ast.Constant and isinstance(annotation.value, str):
            try:
                parsed = ast.parse(annotation.value, mode="eval").body
            except SyntaxError:
                return None
            return self._tensor_annotation(parsed, scope)
        if kind is ast.Subscript:
            # `Optional[...]`, `typing.Optional[...]`, `t.Union[...]`: judged by the last name.
            outer = annotation.value
            outer_name = outer.attr if type(outer) is ast.Attribute else getattr(outer, "id", "")
            if outer_name in ("Optional", "Union"):
                inner = annotation.slice
                options = inner.elts if type(inner) is ast.Tuple else [inner]
                for option in options:
                    found = self._tensor_annotation(option, scope)
                    if found:
                        return found
            return None
        if kind is ast.BinOp and type(annotation.op) is ast.BitOr:
            return (self._tensor_annotation(annotation.left, scope)
                    or self._tensor_annotation(annotation.right, scope))
        path = self.resolve_path(annotation, scope)
        return path if path is not None and is_tensor_type(path) else None

    def _value_binding(self, value: ast.expr, scope: Scope) -> Binding:
        """What a name assigned from `value` becomes."""
        path = self.resolve_path(value, scope)
        if path is not None:
            return Binding(PATH, path)             # `relu = F.relu`, `F = torch.nn.functional`
        if type(value) is ast.Call:
            callee = self.resolve_path(value.func, scope)
            if callee is not None and call_result_kind(callee) == INSTANCE:
                return Binding(INSTANCE, callee, framework_of(callee) or "")
        evidence = self.evidence(value, scope)
        if evidence is not None:
            return Binding(TENSOR, framework=evidence.framework, reason=evidence.reason,
                           weak=evidence.weak)
        return LOCAL_BINDING

    # ------------------------------------------------------------------ statements

    def _import(self, node: ast.Import, scope: Scope) -> None:
        self.frameworks |= bind_import(scope, node)

    def _import_from(self, node: ast.ImportFrom, scope: Scope) -> None:
        self.frameworks |= bind_import_from(scope, node)

    def _expr_stmt(self, node: ast.Expr | ast.Return, scope: Scope) -> None:
        if node.value is not None:
            self._expr(node.value, scope)
            if type(node.value) is ast.Call:
                self._registration(node.value, scope)

    def _registration(self, call: ast.Call, scope: Scope) -> None:
        """`self.register_buffer("mean", torch.zeros(3))` makes `self.mean` a tensor."""
        func = call.func
        if (type(func) is not ast.Attribute or func.attr not in TENSOR_REGISTRATION_METHODS
                or type(func.value) is not ast.Name or len(call.args) < 2):
            return
        attrs = self._self_attrs(func.value.id, scope)
        name = call.args[0]
        if attrs is None or type(name) is not ast.Constant or not isinstance(name.value, str):
            return
        evidence = self.evidence(call.args[1], scope)
        if evidence is not None:
            attrs[name.value] = Binding(TENSOR, framework=evidence.framework,
                                        reason=evidence.reason, weak=evidence.weak)

    def _assign(self, node: ast.Assign, scope: Scope) -> None:
        self._expr(node.value, scope)
        binding = self._value_binding(node.value, scope)
        for target in node.targets:
            self._assign_target(target, binding, scope, node)

    def _ann_assign(self, node: ast.AnnAssign, scope: Scope) -> None:
        binding = LOCAL_BINDING
        if node.value is not None:
            self._expr(node.value, scope)
            binding = self._value_binding(node.value, scope)
        if binding.kind == LOCAL:
            tensor_type = self._tensor_annotation(node.annotation, scope)
            if tensor_type:
                binding = Binding(TENSOR, framework=framework_of(tensor_type) or "",
                                  reason=f"a value annotated {tensor_type}")
        self._assign_target(node.target, binding, scope, node)
        if (scope.kind == "class" and binding.kind == TENSOR and type(node.target) is ast.Name
                and node.target.id not in scope.self_attrs):
            # A class-level declaration (`weight: Tensor`, as nn.Linear itself has) types
            # `self.weight` in the methods.
            scope.self_attrs[node.target.id] = binding

    def _assign_target(self, target: ast.expr, binding: Binding, scope: Scope,
                       statement: ast.stmt) -> None:
        kind = type(target)
        if kind is ast.Name:
            scope.bind(target.id, binding)
        elif kind is ast.Tuple or kind is ast.List:
            # `values, indices = torch.max(x, 1)`: the parts of a tensor result are tensors.
            part = binding if binding.kind == TENSOR else LOCAL_BINDING
            for element in target.elts:
                self._assign_target(element, part, scope, statement)
        elif kind is ast.Starred:
            self._assign_target(target.value, LOCAL_BINDING, scope, statement)
        elif kind is ast.Attribute:
            self._expr(target.value, scope)
            if type(target.value) is ast.Name:
                attrs = self._self_attrs(target.value.id, scope)
                if attrs is not None:
                    attrs[target.attr] = binding
        elif kind is ast.Subscript:
            self._expr(target.value, scope)
            self._expr(target.slice, scope)
            evidence = self.evidence(target.value, scope)
            if evidence is not None:
                self._emit_tensor_special(statement, operators.SETITEM, evidence,
                                          "indexed value")
        else:
            self._generic(target, scope)

    def _aug_assign(self, node: ast.AugAssign, scope: Scope) -> None:
        target = node.target
        if type(target) is not ast.Name:
            self._generic(target, scope)
        self._expr(node.value, scope)
        evidence = self.evidence(target, scope)
        dunder = operators.AUGMENTED_DUNDERS.get(type(node.op))
        if evidence is not None and dunder:
            self._emit_tensor_special(node, dunder, evidence, "target")

    def _for(self, node: ast.For | ast.AsyncFor, scope: Scope) -> None:
        self._expr(node.iter, scope)
        evidence = self.evidence(node.iter, scope)
        binding = (Binding(TENSOR, framework=evidence.framework,
                           reason=f"an element of {evidence.reason}", weak=evidence.weak)
                   if evidence is not None else LOCAL_BINDING)
        self._assign_target(node.target, binding, scope, node)
        self._body(node.body, scope)
        self._body(node.orelse, scope)

    def _with(self, node: ast.With | ast.AsyncWith, scope: Scope) -> None:
        for item in node.items:
            self._expr(item.context_expr, scope)
            if item.optional_vars is not None:
                self._assign_target(item.optional_vars, LOCAL_BINDING, scope, node)
        self._body(node.body, scope)

    def _delete(self, node: ast.Delete, scope: Scope) -> None:
        for target in node.targets:
            if type(target) is ast.Subscript:
                self._expr(target.value, scope)
                self._expr(target.slice, scope)
                evidence = self.evidence(target.value, scope)
                if evidence is not None:
                    self._emit_tensor_special(node, operators.DELITEM, evidence,
                                              "indexed value")
            elif type(target) is not ast.Name:
                self._generic(target, scope)

    def _function_def(self, node: ast.FunctionDef | ast.AsyncFunctionDef,
                      scope: Scope) -> None:
        # Decorators and defaults run at definition time, in the enclosing scope.
        for decorator in node.decorator_list:
            self._expr(decorator, scope)
        self._defaults(node.args, scope)
        scope.force_bind(node.name, LOCAL_BINDING)
        pending = _PendingFunction(node, scope, is_method=scope.kind == "class")
        if self._class_methods is not None and scope.kind == "class":
            self._class_methods.append(pending)
        else:
            self._pending.append(pending)

    def _defaults(self, args: ast.arguments, scope: Scope) -> None:
        for default in args.defaults:
            self._expr(default, scope)
        for default in args.kw_defaults:
            if default is not None:
                self._expr(default, scope)

    def _class_def(self, node: ast.ClassDef, scope: Scope) -> None:
        for decorator in node.decorator_list:
            self._expr(decorator, scope)
        for base in node.bases:
            self._expr(base, scope)
        for keyword in node.keywords:
            self._expr(keyword.value, scope)
        class_scope = Scope(scope, "class")
        outer_methods, self._class_methods = self._class_methods, []
        try:
            self._body(node.body, class_scope)
            methods = self._class_methods
        finally:
            self._class_methods = outer_methods
        methods.sort(key=lambda m: m.node.name not in _SETUP_METHODS)   # stable
        self._pending.extend(methods)
        scope.force_bind(node.name, LOCAL_BINDING)

    def _function_body(self, pending: _PendingFunction) -> None:
        node = pending.node
        enclosing = pending.scope
        is_method = pending.is_method and not any(
            getattr(d, "id", None) in _NON_METHOD_DECORATORS for d in node.decorator_list)
        # All methods of one class share the class scope's self_attrs table.
        scope = Scope(enclosing, "function", self_attrs=enclosing.self_attrs)
        positional = node.args.posonlyargs + node.args.args
        for index, arg in enumerate(positional + node.args.kwonlyargs):
            if index == 0 and is_method and arg in positional:
                scope.force_bind(arg.arg, Binding(SELF))
            else:
                self._bind_parameter(arg, scope)
        for arg in (node.args.vararg, node.args.kwarg):
            if arg is not None:
                scope.force_bind(arg.arg, LOCAL_BINDING)
        self._body(node.body, scope)

    def _bind_parameter(self, arg: ast.arg, scope: Scope) -> None:
        tensor_type = self._tensor_annotation(arg.annotation, scope)
        if tensor_type:
            scope.force_bind(arg.arg, Binding(
                TENSOR, framework=framework_of(tensor_type) or "",
                reason=f"a parameter annotated {tensor_type}"))
        else:
            scope.force_bind(arg.arg, LOCAL_BINDING)

    # ------------------------------------------------------------------ expressions

    def _call(self, node: ast.Call, scope: Scope) -> None:
        func = node.func
        self._expr(func, scope)
        for arg in node.args:
            if type(arg) is not ast.Constant:
                self._expr(arg, scope)
        for keyword in node.keywords:
            if type(keyword.value) is not ast.Constant:
                self._expr(keyword.value, scope)

        path = self.resolve_path(func, scope)
        if path is not None:
            self._emit(node, path, api_type_of(path))
            return
        kind = type(func)
        if kind is ast.Attribute:
            receiver = self.evidence(func.value, scope)
            if receiver is not None and not (receiver.weak and func.attr in MODULE_ONLY_METHODS):
                self._emit(node, f"{receiver.framework}.Tensor.{func.attr}", METHOD,
                           reason=receiver.describe("receiver"))
        elif kind is ast.Name:
            name = func.id
            if scope.lookup(name) is None and name not in _BUILTIN_NAMES:
                module = scope.star_module_for(name)
                if module is not None:
                    self._emit(node, f"{module}.{name}", api_type_of(f"{module}.{name}"),
                               reason=f"`{name}` is defined nowhere in this file; "
                                      f"assumed to come from `from {module} import *`")

    def _attribute(self, node: ast.Attribute, scope: Scope) -> None:
        self._expr(node.value, scope)

    def _subscript(self, node: ast.Subscript, scope: Scope) -> None:
        self._expr(node.value, scope)
        self._expr(node.slice, scope)
        if type(node.ctx) is ast.Load:
            evidence = self.evidence(node.value, scope)
            if evidence is not None:
                self._emit_tensor_special(node, operators.GETITEM, evidence, "indexed value")

    def _binop(self, node: ast.BinOp, scope: Scope) -> None:
        self._expr(node.left, scope)
        self._expr(node.right, scope)
        evidence = self.evidence(node.left, scope) or self.evidence(node.right, scope)
        dunder = operators.BINARY_DUNDERS.get(type(node.op))
        if evidence is not None and dunder:
            self._emit_tensor_special(node, dunder, evidence, "operand")

    def _unaryop(self, node: ast.UnaryOp, scope: Scope) -> None:
        self._expr(node.operand, scope)
        dunder = operators.UNARY_DUNDERS.get(type(node.op))
        if dunder:
            evidence = self.evidence(node.operand, scope)
            if evidence is not None:
                self._emit_tensor_special(node, dunder, evidence, "operand")

    def _compare(self, node: ast.Compare, scope: Scope) -> None:
        self._expr(node.left, scope)
        for comparator in node.comparators:
            self._expr(comparator, scope)
        left = node.left
        for op, right in zip(node.ops, node.comparators):
            dunder = operators.COMPARE_DUNDERS.get(type(op))
            if dunder:
                evidence = self.evidence(left, scope) or self.evidence(right, scope)
                if evidence is not None:
                    self._emit_tensor_special(node, dunder, evidence, "operand")
            left = right

    def _lambda(self, node: ast.Lambda, scope: Scope) -> None:
        self._defaults(node.args, scope)
        inner = Scope(scope, "function")
        arguments = node.args
        for arg in arguments.posonlyargs + arguments.args + arguments.kwonlyargs:
            inner.force_bind(arg.arg, LOCAL_BINDING)
        for arg in (arguments.vararg, arguments.kwarg):
            if arg is not None:
                inner.force_bind(arg.arg, LOCAL_BINDING)
        self._expr(node.body, inner)

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp,
                       scope: Scope) -> None:
        inner = Scope(scope, "function")
        for generator in node.generators:
            self._expr(generator.iter, inner)
            evidence = self.evidence(generator.iter, inner)
            binding = (Binding(TENSOR, framework=evidence.framework,
                               reason=f"an element of {evidence.reason}", weak=evidence.weak)
                       if evidence is not None else LOCAL_BINDING)
            self._assign_target(generator.target, binding, inner, generator.target)
            for condition in generator.ifs:
                self._expr(condition, inner)
        if type(node) is ast.DictComp:
            self._expr(node.key, inner)
            self._expr(node.value, inner)
        else:
            self._expr(node.elt, inner)

    def _elements(self, node: ast.Tuple | ast.List | ast.Set, scope: Scope) -> None:
        for element in node.elts:
            if type(element) is not ast.Constant:
                self._expr(element, scope)

    def _bool_op(self, node: ast.BoolOp | ast.JoinedStr, scope: Scope) -> None:
        for value in node.values:
            if type(value) is not ast.Constant:
                self._expr(value, scope)

    def _dict(self, node: ast.Dict, scope: Scope) -> None:
        for key in node.keys:
            if key is not None and type(key) is not ast.Constant:
                self._expr(key, scope)
        for value in node.values:
            if type(value) is not ast.Constant:
                self._expr(value, scope)

    def _starred(self, node: ast.Starred, scope: Scope) -> None:
        self._expr(node.value, scope)

    def _formatted_value(self, node: ast.FormattedValue, scope: Scope) -> None:
        self._expr(node.value, scope)
        if node.format_spec is not None:
            self._expr(node.format_spec, scope)

    def _if_exp(self, node: ast.IfExp, scope: Scope) -> None:
        self._expr(node.test, scope)
        self._expr(node.body, scope)
        self._expr(node.orelse, scope)

    def _if(self, node: ast.If | ast.While, scope: Scope) -> None:
        self._expr(node.test, scope)
        self._body(node.body, scope)
        self._body(node.orelse, scope)

    def _named_expr(self, node: ast.NamedExpr, scope: Scope) -> None:
        self._expr(node.value, scope)
        scope.bind(node.target.id, self._value_binding(node.value, scope))
