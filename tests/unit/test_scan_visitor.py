"""Alias resolution, scoping and tensor heuristics of the scan, on small sources."""
from __future__ import annotations

import textwrap

import pytest

from opbench.scan import scan_source
from opbench.scan.visitor import api_type_of


def apis(source: str) -> list[tuple[int, str, bool]]:
    return [(r.line, r.api, r.guess) for r in scan_source(textwrap.dedent(source), "m.py")]


@pytest.mark.parametrize("imports, call, api", [
    ("import torch", "torch.nn.functional.relu(x)", "torch.nn.functional.relu"),
    ("import torch.nn.functional as F", "F.relu(x)", "torch.nn.functional.relu"),
    ("import torch.nn.functional", "torch.nn.functional.relu(x)", "torch.nn.functional.relu"),
    ("from torch import nn", "nn.ReLU()", "torch.nn.ReLU"),
    ("from torch.nn import functional as F", "F.relu(x)", "torch.nn.functional.relu"),
    ("from torch.nn.functional import relu", "relu(x)", "torch.nn.functional.relu"),
    ("import mindspore as ms", "ms.ops.add(x, y)", "mindspore.ops.add"),
    ("from mindspore import ops, mint", "mint.add(x, y)", "mindspore.mint.add"),
    ("from mindspore import ops, mint", "ops.add(x, y)", "mindspore.ops.add"),
    ("import mindspore.mint.nn.functional as MF", "MF.relu(x)",
     "mindspore.mint.nn.functional.relu"),
    ("from mindspore import Tensor", "Tensor([1])", "mindspore.Tensor"),
])
def test_import_alias_forms(imports, call, api):
    assert apis(f"{imports}\n{call}\n") == [(2, api, False)]


def test_non_framework_imports_resolve_to_nothing():
    assert apis("""
        import numpy as np
        import torchvision
        from . import torch
        from .torch import nn
        np.zeros(3)
        torchvision.models.resnet18()
        torch.zeros(3)
        nn.Linear(2, 2)
    """) == []


def test_assignment_aliases_follow_the_value():
    assert apis("""
        import torch
        F = torch.nn.functional
        act = F.gelu
        act(x)
    """) == [(5, "torch.nn.functional.gelu", False)]


def test_function_body_sees_an_import_made_later_at_module_level():
    assert apis("""
        def f(x):
            return torch.sigmoid(x)
        import torch
    """) == [(3, "torch.sigmoid", False)]


def test_parameters_and_local_assignments_shadow_aliases():
    assert apis("""
        import torch
        from mindspore import ops
        def f(torch, x):
            return torch.zeros(x)
        def g(x):
            ops = x.registry
            return ops.add(x)
        torch.ones(1)
    """) == [(9, "torch.ones", False)]


def test_failed_optional_import_does_not_erase_the_alias():
    assert apis("""
        try:
            import torch
        except ImportError:
            torch = None
        torch.zeros(1)
    """) == [(6, "torch.zeros", False)]


def test_def_replaces_an_imported_name():
    assert apis("""
        from torch.nn.functional import relu
        def relu(x):
            return x
        relu(1)
    """) == []


def test_methods_do_not_see_class_body_names():
    assert apis("""
        class C:
            import torch as t
            def m(self):
                return t.zeros(1)
            x = t.ones(1)
    """) == [(6, "torch.ones", False)]


def test_function_local_import():
    assert apis("""
        def f():
            import mindspore.numpy as mnp
            return mnp.zeros(3)
        mnp.zeros(3)
    """) == [(4, "mindspore.numpy.zeros", False)]


def test_tensor_method_needs_evidence_of_a_tensor():
    rows = scan_source(textwrap.dedent("""
        import torch
        def f(a, b: torch.Tensor):
            a.sum()
            b.sum()
            c = torch.randn(3)
            c.abs().sum()
            c.tolist().count(1)
            c = [1, 2]
            c.count(1)
    """), "m.py")
    found = [(r.line, r.api) for r in rows]
    assert found == [(5, "torch.Tensor.sum"), (6, "torch.randn"), (7, "torch.Tensor.abs"),
                     (7, "torch.Tensor.sum"), (8, "torch.Tensor.tolist")]
    by_line = {r.line: r for r in rows if r.api_type == "method"}
    assert by_line[5].guess_reason == "receiver `b` holds a parameter annotated torch.Tensor"
    assert by_line[8].guess_reason == ("receiver `c` holds the result of torch.randn() "
                                       "(line 6)")


@pytest.mark.parametrize("annotation", [
    "torch.Tensor", "Tensor", "Optional[Tensor]", "Tensor | None", "'torch.Tensor'",
    "typing.Optional[torch.Tensor]", "Union[int, Tensor]",
])
def test_tensor_annotations(annotation):
    source = f"""
        import typing
        from typing import Optional, Union
        import torch
        from torch import Tensor
        def f(x: {annotation}):
            return x.exp()
    """
    assert apis(source) == [(7, "torch.Tensor.exp", True)]


def test_module_objects_give_tensors_and_their_weights_are_tensors():
    assert apis("""
        from mindspore import nn
        class Net(nn.Cell):
            def __init__(self):
                self.dense = nn.Dense(2, 3)
            def construct(self, x):
                y = self.dense(x)
                self.dense.weight.abs()
                return y.relu()
    """) == [(5, "mindspore.nn.Dense", False), (8, "mindspore.Tensor.abs", True),
             (9, "mindspore.Tensor.relu", True)]


def test_tuple_results_and_iteration_over_tensors():
    assert apis("""
        import torch
        values, indices = torch.max(x, 1)
        indices.long()
        for row in values:
            row.norm()
    """) == [(3, "torch.max", False), (4, "torch.Tensor.long", True),
             (6, "torch.Tensor.norm", True)]


def test_chain_rules_need_a_framework_import():
    assert apis("""
        def f(x):
            return x.float().sum()
    """) == []
    assert apis("""
        import mindspore
        def f(x):
            return x.float().sum()
    """) == [(4, "mindspore.Tensor.sum", True)]


@pytest.mark.parametrize("expression, dunder", [
    ("t + 1", "__add__"), ("1 + t", "__add__"), ("t @ t", "__matmul__"), ("-t", "__neg__"),
    ("~t", "__invert__"), ("t > 0", "__gt__"), ("t[0]", "__getitem__"),
])
def test_operator_forms(expression, dunder):
    rows = scan_source(f"import torch\nt = torch.ones(2)\ny = {expression}\n", "m.py")
    special = [r for r in rows if r.api_type == "special"]
    assert [(r.line, r.api, r.call) for r in special] == [
        (3, f"torch.Tensor.{dunder}", expression)]


def test_identity_and_membership_are_not_tensor_operators():
    assert apis("""
        import torch
        t = torch.ones(2)
        t is None
        t in [1]
        not t
    """) == [(3, "torch.ones", False)]


def test_item_assignment_deletion_and_augmented_assignment():
    rows = scan_source(textwrap.dedent("""
        import torch
        t = torch.ones(4)
        t[t > 0] = 0
        del t[0]
        t *= 2
    """), "m.py")
    special = [(r.line, r.api.rsplit(".", 1)[1], r.call) for r in rows
               if r.api_type == "special"]
    assert special == [(4, "__setitem__", "t[t > 0] = 0"), (4, "__gt__", "t > 0"),
                       (5, "__delitem__", "del t[0]"), (6, "__imul__", "t *= 2")]


def test_star_import_guesses_only_names_defined_nowhere():
    assert apis("""
        from mindspore.ops import *
        import os
        def helper():
            pass
        helper()
        os.getcwd()
        print(len([]))
        matmul(a, b)
    """) == [(9, "mindspore.ops.matmul", True)]


def test_calls_inside_lambdas_comprehensions_fstrings_and_decorators():
    assert apis("""
        import torch
        f = lambda x: torch.relu(x)
        ys = [torch.exp(v) for v in range(3)]
        s = f"{torch.zeros(1)}"
        @torch.jit.script
        def g(x):
            return x
        @torch.compile(mode="max-autotune")
        def h(x):
            return x
    """) == [(3, "torch.relu", False), (4, "torch.exp", False), (5, "torch.zeros", False),
             (9, "torch.compile", False)]


def test_strings_and_comments_give_no_rows():
    assert apis('''
        import torch
        # torch.zeros(3)
        """torch.ones(3)"""
        s = "torch.randn(2)"
        b = b"torch.cat(x)"
    ''') == []


@pytest.mark.parametrize("path, kind", [
    ("torch.nn.functional.relu", "function"), ("torch.nn.Linear", "class"),
    ("torch.Tensor.add", "method"), ("mindspore.ops.operations.MatMul", "class"),
    ("torch.nn.Module.__init__", "method"), ("torch", "function"),
])
def test_api_type_from_the_name(path, kind):
    assert api_type_of(path) == kind


def test_deeply_nested_expression_does_not_overflow():
    source = "import torch\ny = " + " + ".join(["torch.ones(1)"] * 1500) + "\n"
    rows = scan_source(source, "m.py")
    assert sum(r.api == "torch.ones" for r in rows) == 1500


def test_multi_line_call_text_and_extent():
    rows = scan_source("import torch\ny = torch.cat(\n    [a,  # first\n     b],\n    dim=0,\n)\n",
                       "m.py")
    assert [(r.line, r.end_line, r.call) for r in rows] == [
        (2, 6, "torch.cat([a, b], dim=0,)")]


def test_class_level_tensor_declaration_types_self_attribute():
    assert apis("""
        from torch import Tensor, nn
        class Linear(nn.Module):
            in_features: int
            weight: Tensor
            def forward(self, x):
                self.in_features.bit_length()
                return self.weight.t()
    """) == [(8, "torch.Tensor.t", True)]


def test_shape_and_dtype_primitives_do_not_give_tensors():
    assert apis("""
        from mindspore import ops
        shape = ops.Shape()
        def f(x):
            s = shape(x)
            n = ops.shape(x)
            return s[0] * n[1]
    """) == [(3, "mindspore.ops.Shape", False), (6, "mindspore.ops.shape", False)]
