"""`opbench scan --affinity`: each family's naive form is found with its lines, its fixed form
is not; the catalogue; the shipped examples. Static: nothing here imports a framework."""
from __future__ import annotations

import textwrap
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from opbench.scan.affinity import (
                                   AffinityHit,
                                   CatalogueError,
                                   find_affinity,
                                   find_affinity_in_source,
                                   load_families,
                                   parse_families,
                                   )
from opbench.scan.affinity_match import EXPRESSION_KINDS

TORCH_HEADER = "import math\nimport torch\nimport torch.nn.functional as F\n"
MS_HEADER = "import numpy as np\nimport mindspore as ms\nfrom mindspore import mint, nn, ops\n"

# family, naive body, fixed body, (start, end) lines of the naive hit inside the body
# (1 = the body's first line), the replacement expected ("" when not mechanical).
TORCH_PAIRS = [
    ("torch.linear_composed", "y = torch.matmul(x, w.t()) + b",
     "y = F.linear(x, w, b)", (1, 1), "torch.nn.functional.linear(x, w, b)"),
    ("torch.linear_composed", "h = x @ w.T\ny = h + b", "y = F.linear(x, w, b)", (1, 2), ""),
    ("torch.transpose_matmul", "y = x @ w.T", "y = F.linear(x, w)", (1, 1),
     "torch.nn.functional.linear(x, w)"),
    ("torch.gelu_formula",
     "y = 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))",
     'y = F.gelu(x, approximate="tanh")', (1, 1),
     'torch.nn.functional.gelu(x, approximate="tanh")'),
    ("torch.gelu_formula", "y = 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))",
     "y = F.gelu(x)", (1, 1), "torch.nn.functional.gelu(x)"),
    ("torch.silu_formula", "y = x * torch.sigmoid(x)", "y = F.silu(x)", (1, 1),
     "torch.nn.functional.silu(x)"),
    ("torch.softplus_formula", "y = torch.log(1 + torch.exp(x))", "y = F.softplus(x)", (1, 1),
     "torch.nn.functional.softplus(x)"),
    ("torch.rms_norm_composed",
     "variance = x.pow(2).mean(-1, keepdim=True)\ny = x * torch.rsqrt(variance + 1e-6)",
     "y = F.rms_norm(x, (x.shape[-1],), eps=1e-6)", (1, 2), ""),
    ("torch.layer_norm_composed",
     "mu = x.mean(-1, keepdim=True)\nvar = x.var(-1, keepdim=True, unbiased=False)\n"
     "y = (x - mu) / torch.sqrt(var + 1e-5)",
     "y = F.layer_norm(x, (x.shape[-1],))", (1, 3), ""),
    ("torch.softmax_composed", "e = torch.exp(x)\ny = e / e.sum(-1, keepdim=True)",
     "y = torch.softmax(x, -1)", (1, 2), ""),
    ("torch.log_softmax_composed", "y = torch.log(F.softmax(x, dim=-1))",
     "y = F.log_softmax(x, dim=-1)", (1, 1), "F.log_softmax(x, dim=-1)"),
    ("torch.attention_composed",
     "att = q @ k.transpose(-2, -1) / math.sqrt(64)\n"
     "att = att.masked_fill(mask, float('-inf'))\natt = F.softmax(att, dim=-1)\n"
     "att = F.dropout(att, 0.1)\ny = att @ v",
     "y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.1)", (1, 5), ""),
    ("torch.masked_write_index", "x[x < 0] = 0.0", "x = x.masked_fill(x < 0, 0.0)", (1, 1),
     "x.masked_fill_(x < 0, 0.0)"),
    ("torch.masked_write_where", "y = torch.where(x > 0, torch.zeros_like(x), x)",
     "y = x.masked_fill(x > 0, 0)", (1, 1), "x.masked_fill(x > 0, 0)"),
    ("torch.optimizer_loop", "for p in params:\n    p.data -= lr * p.grad",
     "optimizer = torch.optim.SGD(params, lr=lr, foreach=True)\noptimizer.step()", (1, 2), ""),
    ("torch.host_sync_in_loop", "for step in range(9):\n    total += loss(x).item()",
     "total = sum(loss(x) for step in range(9)).item()", (2, 2), ""),
    ("torch.tensor_creation_in_loop", "for s in range(9):\n    y = x * torch.tensor(2.0)",
     "two = torch.tensor(2.0)\nfor s in range(9):\n    y = x * two", (2, 2), ""),
    # made from constants (literals, ALL_CAPS module constants, dtypes): measured since
    # 2026-11-28 as a tensor made once (model/affinity/patterns.py)
    ("torch.tensor_creation_in_loop",
     "for s in range(9):\n    y = x + torch.arange(HIDDEN, dtype=torch.float32)",
     "ramp = torch.arange(HIDDEN, dtype=torch.float32)\nfor s in range(9):\n    y = x + ramp",
     (2, 2), ""),
]

MS_PAIRS = [
    ("mindspore.linear_composed", "y = ops.matmul(x, w) + b",
     "y = mint.nn.functional.linear(x, w, b)", (1, 1),
     "mindspore.mint.nn.functional.linear(x, w.T, b)"),
    ("mindspore.transpose_matmul", "y = ops.matmul(x, ops.transpose(w, (1, 0)))",
     "y = ops.MatMul(transpose_b=True)(x, w)", (1, 1),
     "mindspore.ops.MatMul(transpose_b=True)(x, w)"),
    ("mindspore.transpose_matmul", "y = mint.matmul(q, k.swapaxes(-2, -1))",
     "y = ops.BatchMatMul(transpose_b=True)(q, k)", (1, 1),
     "mindspore.ops.BatchMatMul(transpose_b=True)(q, k)"),
    ("mindspore.gelu_formula", "y = 0.5 * x * (1.0 + ops.erf(x / 1.4142135))",
     "y = ops.gelu(x)", (1, 1), "mindspore.ops.gelu(x)"),
    ("mindspore.silu_formula", "y = x * ops.sigmoid(x)", "y = mint.nn.functional.silu(x)",
     (1, 1), "mindspore.mint.nn.functional.silu(x)"),
    ("mindspore.softplus_formula", "y = ops.log(1 + ops.exp(x))",
     "y = mint.nn.functional.softplus(x)", (1, 1), "mindspore.mint.nn.functional.softplus(x)"),
    ("mindspore.rms_norm_composed",
     "y = x * ops.rsqrt(ops.mean(ops.pow(x, 2), -1, keep_dims=True) + 1e-6)",
     "y = ops.rms_norm(x, gamma, 1e-6)[0]", (1, 1), ""),
    ("mindspore.layer_norm_composed",
     "mu = ops.mean(x, -1, keep_dims=True)\nvar = x.var(-1, keepdims=True)\n"
     "y = (x - mu) * ops.rsqrt(var + 1e-5)",
     "y = mint.nn.functional.layer_norm(x, (x.shape[-1],))", (1, 3), ""),
    ("mindspore.softmax_composed", "e = ops.exp(x)\ny = e / ops.sum(e, -1, keepdim=True)",
     "y = ops.softmax(x, -1)", (1, 2), ""),
    ("mindspore.log_softmax_composed", "y = ops.log(ops.softmax(x, -1))",
     "y = ops.log_softmax(x, -1)", (1, 1), "ops.log_softmax(x, -1)"),
    ("mindspore.attention_composed",
     "scores = mint.matmul(q, k.swapaxes(-2, -1)) * 0.125\n"
     "y = mint.matmul(mint.softmax(scores, dim=-1), v)",
     "y = ops.flash_attention_score(q, k, v, 8, scalar_value=0.125)", (1, 2), ""),
    ("mindspore.masked_write_index", "x[ops.isnan(x)] = 0.0",
     "x = ops.masked_fill(x, ops.isnan(x), 0.0)", (1, 1),
     "x = mindspore.ops.masked_fill(x, ops.isnan(x), 0.0)"),
    ("mindspore.masked_write_where", "y = ops.where(x > 0, x, 0.0)",
     "y = ops.masked_fill(x, x <= 0, 0.0)", (1, 1), "mindspore.ops.masked_fill(x, ~(x > 0), 0.0)"),
    ("mindspore.optimizer_loop",
     "for p, g in zip(params, grads):\n    ops.assign(p, p - lr * g)",
     "optimizer = nn.SGD(params, learning_rate=lr)\noptimizer(grads)", (1, 2), ""),
    ("mindspore.host_sync_in_loop", "for step in range(9):\n    losses.append(loss(x).asnumpy())",
     "losses = [loss(x) for step in range(9)]", (2, 2), ""),
    ("mindspore.route_max_pool2d", "y = ops.max_pool2d(x, 2, 2)",
     "y = nn.MaxPool2d(2, 2)(x)", (1, 1), ""),
    ("mindspore.tensor_creation_in_loop",
     "for step in range(9):\n    y = x * ms.Tensor(np.ones(3))",
     "ones = ms.Tensor(np.ones(3))\nfor step in range(9):\n    y = x * ones", (2, 2), ""),
    ("mindspore.tensor_creation_in_loop",
     "for step in range(9):\n    y = x * ops.fill(ms.float32, (HIDDEN,), 1.5)",
     "gain = ops.fill(ms.float32, (HIDDEN,), 1.5)\nfor step in range(9):\n    y = x * gain",
     (2, 2), ""),
]


def _source(header: str, body: str) -> str:
    """The body inside a function, after the header's imports: body line 1 is file line
    header_lines + 2."""
    return header + "def f(x, w, b, q, k, v, mask, params, grads, lr, gamma, loss, total, " \
        "losses):\n" + textwrap.indent(body, "    ") + "\n"


def _hits(header: str, body: str) -> list[AffinityHit]:
    return list(find_affinity_in_source(_source(header, body), "naive.py"))


@pytest.mark.parametrize("header, pairs", [(TORCH_HEADER, TORCH_PAIRS), (MS_HEADER, MS_PAIRS)],
                         ids=["torch", "mindspore"])
def test_at_least_five_families_per_framework(header, pairs):
    assert len({family for family, *_ in pairs}) >= 5


@pytest.mark.parametrize("family, naive, fixed, lines, replacement",
                         [(*p,) for p in TORCH_PAIRS], ids=[p[0] for p in TORCH_PAIRS])
def test_torch_naive_found_fixed_not(family, naive, fixed, lines, replacement):
    _check_pair(TORCH_HEADER, family, naive, fixed, lines, replacement, "torch")


@pytest.mark.parametrize("family, naive, fixed, lines, replacement",
                         [(*p,) for p in MS_PAIRS], ids=[p[0] for p in MS_PAIRS])
def test_mindspore_naive_found_fixed_not(family, naive, fixed, lines, replacement):
    _check_pair(MS_HEADER, family, naive, fixed, lines, replacement, "mindspore")


def _check_pair(header, family, naive, fixed, lines, replacement, framework):
    offset = header.count("\n") + 1         # the def line
    hits = [h for h in _hits(header, naive) if h.family == family]
    assert len(hits) == 1, _hits(header, naive)
    hit = hits[0]
    assert (hit.start_line, hit.end_line) == (lines[0] + offset, lines[1] + offset)
    assert hit.replacement == replacement
    assert hit.framework == framework and hit.measured is False
    assert hit.affinity_api == next(f.affinity_api for f in load_families() if f.id == family)
    assert _hits(header, fixed) == []


def test_hit_is_frozen():
    hit = _hits(TORCH_HEADER, "y = x * torch.sigmoid(x)")[0]
    with pytest.raises(FrozenInstanceError):
        hit.start_line = 3


@pytest.mark.parametrize("body", [
    "y = np.exp(x) / np.exp(x).sum()",           # numpy's softmax: not a tensor method
    "y = np.log(1 + np.exp(x))",
    "for i in range(3):\n    n = np.exp(x).item()",
    "y = x * torch.sigmoid(w)",                    # a gate, not SiLU
    "y = torch.where(x > 0, torch.zeros_like(w), x)",   # zeros of another shape
    "y = torch.matmul(q, k.transpose(1, 2))",      # a strided view in torch: nothing to fuse
    "x[idx] = 0.0",                                # an index, not a mask: cannot tell
    "for i in range(3):\n    y = x + torch.zeros(x.shape)",   # reads a step value
    "for name, p in params.items():\n    p.copy_(loaded[name])",   # weight loading
    "y = x + torch.matmul(x, w) * 2",              # a scaled product: no GEMM epilogue
    "y = x @ w + 1.0",                             # a scalar offset, not a bias vector
])
def test_idiomatic_or_different_code_is_not_a_hit(body):
    assert _hits(TORCH_HEADER + "import numpy as np\n", body) == []


def test_mindspore_head_reshuffle_is_not_a_transpose_matmul():
    body = "y = ops.matmul(q, ops.transpose(k, (0, 2, 1, 3)))"
    assert _hits(MS_HEADER, body) == []


def test_a_file_without_framework_imports_has_no_hits():
    assert find_affinity_in_source("def f(x):\n    return x * sigmoid(x)\n") == ()


def test_a_name_reassigned_by_a_loop_is_not_followed():
    body = "e = torch.exp(x)\nfor e in items:\n    pass\ny = e / e.sum(-1)"
    assert _hits(TORCH_HEADER, body) == []


def test_catalogue_covers_every_matcher_in_both_frameworks():
    families = load_families()
    kinds = set(EXPRESSION_KINDS) | {"masked_write_index", "optimizer_loop",
                                     "host_sync_in_loop", "tensor_creation_in_loop"}
    for framework in ("torch", "mindspore"):
        assert {f.kind for f in families if f.framework == framework
                and not f.route_from} == kinds
    routes = [f for f in families if f.route_from]
    assert routes and all(f.kind.startswith("route_") for f in routes)
    assert all(f.why and f.source and f.pattern and f.affinity_api for f in families)


def test_catalogue_errors_name_the_entry_and_keys():
    with pytest.raises(CatalogueError, match=r"entry 1 \(torch.x\): missing keys \['kind'"):
        parse_families([{"id": "torch.x", "framework": "torch"}], "f.yaml")
    good = {k: "v" for k in ("api_type", "pattern", "affinity_api", "template", "why",
                             "source")}
    with pytest.raises(CatalogueError, match="unique"):
        parse_families([dict(good, id="torch.a", framework="torch", kind="b")], "f.yaml")


def test_unparsable_file_is_an_error_not_a_crash(tmp_path):
    (tmp_path / "bad.py").write_text("import torch\ndef f(:\n")
    (tmp_path / "ok.py").write_text("import torch\ny = x * torch.sigmoid(x)\n")
    result = find_affinity([tmp_path])
    assert [h.family for h in result.hits] == ["torch.silu_formula"]
    assert result.errors[0].file.endswith("bad.py") and result.errors[0].line == 2


# What `opbench scan --affinity examples/` finds, each checked by hand (docs/scan.md):
# the host syncs end each timed step on purpose (the clock must not stop before the work);
# nanogpt's and the transformer's attention is written out (nanogpt keeps it beside its SDPA
# variant); the MindSpore transformer multiplies by a transposed key; the two tensor creations
# are weight-loading loops that run once, which the static family cannot tell from a step.
EXAMPLES_EXPECTED = [
    ("bert/run_torch.py", 73, 73, "torch.host_sync_in_loop"),
    ("cnn/mindspore_model.py", 60, 60, "mindspore.tensor_creation_in_loop"),
    ("cnn/run_mindspore.py", 79, 79, "mindspore.host_sync_in_loop"),
    ("cnn/run_torch.py", 63, 63, "torch.host_sync_in_loop"),
    # the functional CNN's hand-written SGD (a per-weight loop: torch.optim.SGD's foreach
    # kernel is its fused form) and its loss.item() ending the step
    ("functional_cnn/run_torch.py", 75, 77, "torch.optimizer_loop"),
    ("functional_cnn/run_torch.py", 78, 78, "torch.host_sync_in_loop"),
    ("nanogpt/run_torch.py", 60, 62, "torch.attention_composed"),
    ("nanogpt/run_torch.py", 163, 163, "torch.host_sync_in_loop"),
    ("resnet/run_torch.py", 107, 107, "torch.host_sync_in_loop"),
    ("transformer/mindspore_model.py", 58, 58, "mindspore.transpose_matmul"),
    ("transformer/mindspore_model.py", 58, 59, "mindspore.attention_composed"),
    ("transformer/mindspore_model.py", 106, 106, "mindspore.tensor_creation_in_loop"),
    ("transformer/run_mindspore.py", 66, 66, "mindspore.host_sync_in_loop"),
    ("transformer/run_torch.py", 56, 56, "torch.host_sync_in_loop"),
    ("transformer/torch_model.py", 41, 42, "torch.attention_composed"),
]


def test_shipped_examples_hits_are_the_listed_ones():
    examples = Path(__file__).resolve().parents[2] / "examples"
    result = find_affinity([examples])
    found = [(str(Path(h.file).relative_to(examples)), h.start_line, h.end_line, h.family)
             for h in result.hits]
    # examples/affinity/ plants the families on purpose: test_affinity_pairs.py checks those
    found = [hit for hit in found if not hit[0].startswith("affinity/")]
    assert found == EXAMPLES_EXPECTED
    assert result.errors == ()


def test_an_assignment_inside_an_if_keeps_the_data_flow():
    # The shape of transformers' eager_attention_forward (gpt2): mask added under an `if`,
    # a cast and a dropout between the softmax and the second matmul.
    body = ("w = torch.matmul(q, k.transpose(-1, -2)) * 0.125\n"
            "if mask is not None:\n    w = w + mask\n"
            "w = F.softmax(w, dim=-1)\nw = w.type(v.dtype)\n"
            "w = F.dropout(w, p=0.1, training=True)\ny = torch.matmul(w, v)")
    hits = _hits(TORCH_HEADER, body)
    offset = TORCH_HEADER.count("\n") + 1
    assert [(h.family, h.start_line - offset, h.end_line - offset) for h in hits] == [
        ("torch.attention_composed", 1, 7)]
