"""Hand-checked mapping entries, applied by build_api_mapping.py over the introspected ones.

Each override is keyed by the torch name and may give:
  mindspore: the counterpart (None: no equivalent), checked to resolve at build time
  status:    same | differs | none; omitted -> decided from the signatures as usual
  note:      replaces the generated note (say *how* the APIs differ, and what to use instead)
  kind:      only where the automatic kind is wrong

Notes were checked against torch 2.13 / MindSpore 2.10 on CPU (calls made, outputs compared)
or against the frameworks' own docstrings; keep them short and factual.
"""
from __future__ import annotations

SDPA_NOTE = (
    "no portable equivalent: mindspore.ops.flash_attention_score is Ascend-only; on CPU/GPU "
    "compose softmax(q @ k.transpose(-2, -1) * scale + mask) @ v (see cases/attention.yaml)")

OVERRIDES: dict[str, dict] = {
    # ---- tensors, seeds, autodiff, execution: the framework plumbing a port touches first
    "torch.tensor": {"mindspore": "mindspore.tensor",
                     "note": "also mindspore.Tensor(ndarray); no device= or pin_memory="},
    "torch.from_numpy": {"mindspore": "mindspore.from_numpy",
                         "note": "shares memory with the array, as in torch"},
    "torch.manual_seed": {"mindspore": "mindspore.manual_seed", "status": "same"},
    "torch.compile": {
        "mindspore": "mindspore.jit", "status": "differs",
        "note": "mindspore.jit compiles a function or Cell to a static graph (jit_level, "
                "backend options); torch.compile's mode/backend/fullgraph have no counterpart"},
    "torch.no_grad": {
        "mindspore": None, "status": "none", "kind": "class",
        "note": "not needed: MindSpore differentiates functions explicitly (mindspore.grad, "
                "mindspore.value_and_grad), so nothing is recorded outside them; "
                "mindspore.ops.stop_gradient cuts one branch"},
    "torch.autograd.grad": {
        "mindspore": "mindspore.grad", "status": "differs",
        "note": "transforms a function: mindspore.grad(fn, grad_position=...)(*inputs) returns "
                "gradients of fn's output, instead of taking already-computed outputs"},
    "torch.set_num_threads": {
        "mindspore": "mindspore.device_context.cpu.op_tuning.threads_num", "status": "differs",
        "note": "kernel threads for CPU ops; set it before the first operator runs (MindSpore's "
                "default is 25 threads regardless of core count)"},
    "torch.cuda.synchronize": {
        "mindspore": "mindspore.runtime.synchronize", "status": "differs",
        "note": "synchronizes the current device; on CPU in PyNative mode it logs an error, use "
                "mindspore.graph.api._pynative_executor.sync() to drain the op queue"},
    "torch.Tensor.size": {
        "mindspore": "mindspore.Tensor.shape", "status": "differs",
        "note": "MindSpore's Tensor.size is a property holding the element count (torch's "
                "numel()); torch's x.size() / x.size(d) is x.shape / x.shape[d]"},
    "torch.Tensor.detach": {
        "mindspore": "mindspore.ops.stop_gradient", "status": "differs",
        "note": "a function, not a method: ops.stop_gradient(x); MindSpore tensors carry no "
                "autograd graph to detach from"},
    "torch.Tensor.backward": {
        "mindspore": None, "status": "none",
        "note": "no tape: take gradients with mindspore.grad(fn)(*inputs) or "
                "mindspore.value_and_grad"},
    "torch.Tensor.cuda": {
        "mindspore": None, "status": "none",
        "note": "tensors are placed on the context device (mindspore.set_device); "
                "Tensor.to / Tensor.move_to move them explicitly"},
    "torch.Tensor.cpu": {
        "mindspore": None, "status": "none",
        "note": "use Tensor.asnumpy() to read values on the host, or Tensor.move_to('CPU')"},

    # ---- semantics that differ under the same name (checked by calling both)
    "torch.Tensor.median": {
        "mindspore": "mindspore.Tensor.median", "status": "differs",
        "note": "x.median() without dim: torch returns the global median (0-d); MindSpore "
                "reduces the last dimension and returns (values, indices)"},
    "torch.Tensor.max": {
        "mindspore": "mindspore.Tensor.max", "status": "differs",
        "note": "max() and max(dim, keepdim) match torch; there is no max(other) overload "
                "(use maximum); legacy overload max(axis, keepdims, initial, where, "
                "return_indices) is deprecated"},
    "torch.Tensor.min": {
        "mindspore": "mindspore.Tensor.min", "status": "differs",
        "note": "min() and min(dim, keepdim) match torch; there is no min(other) overload "
                "(use minimum); legacy overload min(axis, keepdims, initial, where, "
                "return_indices) is deprecated"},
    "torch.topk": {
        "mindspore": "mindspore.mint.topk", "status": "same",
        "note": "torch documents dim=None and MindSpore dim=-1; both mean the last dimension"},
    "torch.Tensor.topk": {"mindspore": "mindspore.Tensor.topk", "status": "same"},
    "torch.amax": {
        "mindspore": "mindspore.mint.amax", "status": "same",
        "note": "default dim is () in MindSpore and None in torch: both reduce every dimension"},
    "torch.amin": {
        "mindspore": "mindspore.mint.amin", "status": "same",
        "note": "default dim is () in MindSpore and None in torch: both reduce every dimension"},
    "torch.Tensor.softmax": {
        "mindspore": "mindspore.Tensor.softmax", "status": "differs",
        "note": "the method's argument is `axis` (x.softmax(axis=-1)); positional calls match; "
                "mindspore.mint.softmax(x, dim) takes `dim`"},
    "torch.nn.functional.rms_norm": {
        "mindspore": "mindspore.ops.rms_norm", "status": "differs",
        "note": "ops.rms_norm(x, gamma, epsilon=1e-6) returns (y, rstd), normalizes over "
                "gamma's trailing dims, and has no CPU kernel in MindSpore 2.10; on CPU "
                "compose x * rsqrt(mean(x*x, -1, keepdim=True) + eps) * weight"},
    "torch.rms_norm": {
        "mindspore": "mindspore.ops.rms_norm", "status": "differs",
        "note": "see torch.nn.functional.rms_norm: returns (y, rstd), no CPU kernel"},
    "torch.nn.RMSNorm": {
        "mindspore": None, "status": "none",
        "note": "no module; compose x * rsqrt(mean(x*x, -1, keepdim=True) + eps) * weight in "
                "a Cell (mindspore.ops.rms_norm exists for Ascend/GPU)"},
    "torch.nn.functional.scaled_dot_product_attention": {
        "mindspore": None, "status": "none", "note": SDPA_NOTE},
    "torch.nn.functional.conv_transpose1d": {
        "mindspore": None, "status": "none",
        "note": "no functional form; use mindspore.nn.Conv1dTranspose, or conv_transpose2d on "
                "an input with a unit height dimension"},
    "torch.nn.functional.max_pool1d": {
        "mindspore": None, "status": "none",
        "note": "no functional form; use max_pool2d on x.unsqueeze(-2) (kernel (1, k)), or "
                "mindspore.nn.MaxPool1d"},
    "torch.nn.functional.instance_norm": {
        "mindspore": None, "status": "none",
        "note": "no functional form; group_norm with num_groups = channels computes the same "
                "statistics, or use mindspore.nn.InstanceNorm2d"},
    "torch.nn.functional.embedding_bag": {
        "mindspore": None, "status": "none",
        "note": "compose mint.nn.functional.embedding and a sum/mean over the bag dimension"},
    "torch.nn.EmbeddingBag": {
        "mindspore": None, "status": "none",
        "note": "compose mint.nn.Embedding and a sum/mean over the bag dimension"},
    "torch.nn.functional.pairwise_distance": {
        "mindspore": None, "status": "none",
        "note": "compose mint.norm(x1 - x2 + eps, p, dim=-1)"},
    "torch.nn.PairwiseDistance": {
        "mindspore": None, "status": "none",
        "note": "compose mint.norm(x1 - x2 + eps, p, dim=-1) in a Cell"},
    "torch.nn.functional.bilinear": {
        "mindspore": None, "status": "none",
        "note": "compose mint.einsum('bi,oij,bj->bo', x1, weight, x2) + bias"},
    "torch.nn.Bilinear": {
        "mindspore": None, "status": "none",
        "note": "compose mint.einsum('bi,oij,bj->bo', x1, weight, x2) + bias in a Cell"},
    "torch.nn.functional.local_response_norm": {
        "mindspore": "mindspore.ops.lrn", "status": "differs",
        "note": "TensorFlow-style parameters: depth_radius = (size - 1) / 2, alpha is not "
                "divided by size (torch's alpha / size), bias is torch's k"},
    "torch.nn.LocalResponseNorm": {
        "mindspore": "mindspore.nn.LRN", "status": "differs",
        "note": "TensorFlow-style parameters: depth_radius = (size - 1) / 2, alpha is not "
                "divided by size (torch's alpha / size), bias is torch's k"},
    "torch.nn.Softplus": {
        "mindspore": None, "status": "none",
        "note": "no module in mint.nn / nn; call mint.nn.functional.softplus(x, beta, "
                "threshold) in a Cell"},

    "torch.cond": {
        "mindspore": None, "status": "none",
        "note": "torch.cond is data-dependent control flow (pred, true_fn, false_fn); "
                "mindspore.ops.cond is the matrix condition number, unrelated. MindSpore "
                "graphs take a plain Python `if` under mindspore.jit"},
    "torch.embedding": {
        "mindspore": "mindspore.mint.nn.functional.embedding", "status": "differs",
        "note": "ATen-level torch.embedding(weight, indices) takes the table first; "
                "mint.nn.functional.embedding(input, weight) takes the indices first, like "
                "torch.nn.functional.embedding"},

    "torch.permute": {
        "mindspore": "mindspore.mint.permute", "status": "differs",
        "note": "dims must be a tuple: MindSpore 2.10 rejects a list (TypeError), torch takes "
                "both; x.permute(0, 2, 3, 1) works in both"},
    "torch.tile": {
        "mindspore": "mindspore.mint.tile", "status": "differs",
        "note": "dims must be a tuple: MindSpore 2.10 rejects a list (TypeError), torch takes "
                "both; x.tile(2, 1) works in both"},

    # ---- containers and base classes
    "torch.nn.Module": {
        "mindspore": "mindspore.nn.Cell", "status": "differs",
        "note": "forward() is construct(); parameters come from trainable_params() / "
                "get_parameters(); train()/eval() are set_train(True/False)"},
    "torch.nn.Sequential": {
        "mindspore": "mindspore.nn.SequentialCell", "status": "differs",
        "note": "takes a list (or OrderedDict) of Cells, or Cells as arguments"},
    "torch.nn.ModuleList": {"mindspore": "mindspore.nn.CellList", "status": "differs",
                            "note": "same list behaviour, different name"},
    "torch.nn.ModuleDict": {"mindspore": "mindspore.nn.CellDict", "status": "differs",
                            "note": "same dict behaviour, different name"},
    "torch.nn.Parameter": {
        "mindspore": "mindspore.Parameter", "status": "differs", "kind": "class",
        "note": "Parameter(default_input, name=None, requires_grad=True); every Parameter in "
                "a Cell needs a unique name (given automatically for attributes)"},
    "torch.nn.ConvTranspose1d": {
        "mindspore": "mindspore.nn.Conv1dTranspose", "status": "differs",
        "note": "has_bias (default False) instead of bias (default True); pad_mode "
                "('same' by default, 'valid', 'pad') decides padding, torch pads explicitly; "
                "group instead of groups; no output_padding"},
    "torch.nn.ConvTranspose3d": {
        "mindspore": "mindspore.nn.Conv3dTranspose", "status": "differs",
        "note": "has_bias (default False) instead of bias (default True); pad_mode "
                "('same' by default, 'valid', 'pad') decides padding; group instead of groups"},
    "torch.nn.LeakyReLU": {
        "mindspore": "mindspore.nn.LeakyReLU", "status": "differs",
        "note": "the slope is `alpha` (default 0.2) where torch has negative_slope (default "
                "0.01); the functional mint.nn.functional.leaky_relu takes negative_slope=0.01"},
}

# torch names the automatic candidate lists miss (not found by dir() of the scanned modules).
EXTRA_TORCH_NAMES: tuple[str, ...] = (
    "torch.autograd.grad",
    "torch.cuda.synchronize",
    "torch.nn.Parameter",
    "torch.nn.functional.scaled_dot_product_attention",
)

# torch names kept out on purpose: internal helpers that happen to be public attributes.
SKIP_TORCH_NAMES: frozenset[str] = frozenset()
