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

    # mint and ops have no isin; mindspore.numpy's runs on CPU (checked: 2 x 3 int64 against
    # two stop tokens, invert both ways), written out as ops.equal over an added axis and a
    # sum, as opbench's replay writes torch.isin (model/replay/routes.py). The note by hand:
    # the signatures' note mixed torch's three overloads (elements/test_element/element)
    "torch.isin": {
        "mindspore": "mindspore.numpy.isin", "status": "differs",
        "note": "argument names differ: torch (elements) vs MindSpore (element); MindSpore "
                "lacks torch argument(s): assume_unique"},

    # ---- semantics that differ under the same name (checked by calling both)
    "torch.Tensor.median": {
        "mindspore": "mindspore.Tensor.median", "status": "differs",
        "note": "x.median() without dim: torch returns the global median (0-d); MindSpore "
                "reduces the last dimension and returns (values, indices)"},
    "torch.Tensor.max": {
        "mindspore": "mindspore.Tensor.max", "status": "differs",
        "note": "max() and max(dim, keepdim) match torch; there is no max(other) overload "
                "(use maximum); legacy overload max(axis, keepdims, initial, where, "
                "return_indices) is deprecated; keywords as torch's: dim, keepdim"},
    "torch.Tensor.min": {
        "mindspore": "mindspore.Tensor.min", "status": "differs",
        "note": "min() and min(dim, keepdim) match torch; there is no min(other) overload "
                "(use minimum); legacy overload min(axis, keepdims, initial, where, "
                "return_indices) is deprecated; keywords as torch's: dim, keepdim"},
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
                "mindspore.mint.softmax(x, dim) takes `dim`; argument names differ: torch "
                "(dim) vs MindSpore (axis)"},
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

    "torch.nn.functional.multi_head_attention_forward": {
        "mindspore": "mindspore.ops.function.nn_func.multi_head_attention_forward",
        "kind": "functional",
        "note": "the functional behind mindspore.nn.MultiheadAttention (not exported from "
                "mindspore.ops): same positional signature, no need_weights (always returns "
                "the averaged weights as the second output)"},

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

# MindSpore 2.10 names whose CPU kernel is missing, checked by calling each on CPU (float32,
# then float16) and syncing: "The kernel XExt unregistered", "Ascend only", ... The value
# says what runs on CPU instead; the build appends it to the entry's note and lists its first
# `mindspore.*` name as the entry's alternative (so MindSpore code calling it maps back to
# torch). The mapping stays device-neutral (mint is still the torch-like spelling); cases/
# use the CPU route.
CPU_ROUTES: dict[str, str] = {
    "mindspore.mint.addcmul": "mindspore.ops.addcmul",
    "mindspore.mint.nn.functional.gelu": "mindspore.ops.gelu",
    "mindspore.mint.nn.functional.leaky_relu": "mindspore.ops.leaky_relu (slope `alpha`)",
    "mindspore.mint.nn.functional.elu": "mindspore.ops.elu",
    "mindspore.mint.nn.functional.mish": "mindspore.ops.mish",
    "mindspore.mint.nn.functional.relu6": "mindspore.ops.relu6",
    "mindspore.mint.nn.functional.logsigmoid": "mindspore.ops.logsigmoid",
    "mindspore.mint.nn.functional.selu": "mindspore.ops.selu",
    "mindspore.mint.nn.functional.hardtanh": "mindspore.ops.hardtanh",
    "mindspore.mint.argmax": "mindspore.ops.argmax",
    # "The kernel FullLike unregistered" (mint); ops.full_like runs (hf_t5_training.py's
    # relative-position buckets)
    "mindspore.mint.full_like": "mindspore.ops.full_like",
    # "The kernel OnesLikeExt / ZerosLikeExt / Clone unregistered" (4x5 float32)
    "mindspore.mint.ones_like": "mindspore.ops.ones_like",
    "mindspore.mint.zeros_like": "mindspore.ops.zeros_like",
    "mindspore.Tensor.clone": "mindspore.Tensor.copy",
    "mindspore.mint.argmin": "mindspore.ops.argmin (`axis`)",
    "mindspore.mint.std": "mindspore.ops.std (`axis`; ddof=1 for torch's default)",
    "mindspore.mint.var": "mindspore.ops.var (`axis`; ddof=1 for torch's default)",
    "mindspore.mint.norm": "mindspore.ops.norm",
    "mindspore.mint.linalg.vector_norm": "mindspore.ops.norm",
    "mindspore.mint.logsumexp": "mindspore.ops.logsumexp",
    "mindspore.mint.cumsum": "mindspore.ops.cumsum (`axis`)",
    "mindspore.mint.topk": "mindspore.ops.topk",
    "mindspore.mint.sort": "mindspore.ops.sort (`axis`)",
    "mindspore.mint.argsort": "mindspore.ops.argsort (`axis`)",
    "mindspore.mint.nn.functional.log_softmax": "mindspore.ops.log_softmax (`axis`)",
    "mindspore.mint.median": "mindspore.ops.median (`axis`; no float16 kernel)",
    "mindspore.mint.stack": "mindspore.ops.stack (`axis`)",
    # no Roll kernel in any namespace; a port concatenates two slices, as opbench's replay
    # does (model/replay/routes.py)
    "mindspore.mint.roll": "written out as mint.cat of two mint.narrow slices (no CPU roll "
                           "kernel in any namespace)",
    "mindspore.mint.tril": "mindspore.ops.tril",
    "mindspore.mint.index_select": "mindspore.ops.index_select",
    "mindspore.mint.scatter_add":
        "mindspore.ops.tensor_scatter_elements(input, index, src, axis, reduction='add')",
    "mindspore.mint.nn.functional.embedding":
        "ops.gather(weight, ids, 0), as nn.Embedding does (ops.embedding has no CPU kernel "
        "either)",
    "mindspore.mint.nn.functional.pad": "mindspore.ops.pad",
    "mindspore.mint.index_add": "mindspore.ops.index_add(x, int32 indices, y, axis)",
    "mindspore.mint.addmm": "mindspore.ops.addmm",
    # "einsum only supports Ascend" (mint), "Unsupported op [Einsum] on CPU" (ops): no
    # einsum runs on CPU; a port writes it out, as opbench's replay does (einsum_route.py)
    "mindspore.mint.einsum": "written out as sums, permutes, reshapes and a bmm, matmul or "
                             "broadcast multiply in mint (ops.einsum has no CPU kernel either)",
    "mindspore.mint.baddbmm": "mindspore.ops.baddbmm",
    "mindspore.mint.nn.functional.conv1d": "mindspore.ops.conv1d (pad_mode='pad' to pad)",
    "mindspore.mint.nn.functional.conv2d": "mindspore.ops.conv2d (pad_mode='pad' to pad)",
    "mindspore.mint.nn.functional.conv_transpose2d":
        "the nn.Conv2dTranspose Cell (no functional form runs on CPU)",
    "mindspore.mint.nn.functional.max_pool2d": "mindspore.ops.max_pool2d",
    "mindspore.mint.nn.functional.avg_pool2d":
        "mindspore.ops.avg_pool2d (its stride defaults to 1, torch's to kernel_size)",
    "mindspore.mint.nn.functional.avg_pool1d":
        "mindspore.ops.avg_pool1d (its stride defaults to 1, torch's to kernel_size)",
    "mindspore.mint.nn.functional.adaptive_avg_pool2d": "mindspore.ops.adaptive_avg_pool2d",
    "mindspore.mint.nn.functional.batch_norm": "mindspore.ops.batch_norm",
    "mindspore.mint.nn.functional.layer_norm":
        "the nn.LayerNorm Cell, or mint.nn.functional.group_norm(x2d, 1, weight, bias) on "
        "[tokens, hidden] rows (ops.layer_norm fails the same way)",
    # no functional form runs (LinalgVectorNorm missing); a port divides by the clamped
    # norm, as opbench's replay does (model/replay/routes.py)
    "mindspore.mint.nn.functional.normalize": "written out as x / clamp(ops.norm(x, p, dim, "
                                              "keepdim=True), min=eps) (no functional form "
                                              "runs: LinalgVectorNorm missing)",
    "mindspore.mint.nn.functional.cross_entropy": "mindspore.ops.cross_entropy",
    "mindspore.mint.nn.functional.mse_loss": "mindspore.ops.mse_loss",
    "mindspore.mint.nn.functional.l1_loss": "mindspore.ops.l1_loss",
    "mindspore.mint.nn.functional.kl_div": "mindspore.ops.kl_div",
    "mindspore.mint.nn.functional.dropout": "mindspore.ops.dropout",
    "mindspore.mint.nn.functional.dropout2d": "mindspore.ops.dropout2d",
    "mindspore.mint.nn.functional.one_hot": "mindspore.ops.one_hot (`depth`)",
    "mindspore.mint.repeat_interleave": "mindspore.ops.repeat_interleave (`axis`)",
    "mindspore.mint.nn.functional.unfold": "mindspore.ops.unfold",
    "mindspore.mint.nn.functional.fold": "mindspore.ops.fold",
    "mindspore.mint.atan2": "mindspore.ops.atan2",
    "mindspore.mint.outer": "mindspore.ops.outer",
    "mindspore.mint.mm": "mindspore.ops.mm",
    "mindspore.mint.mv": "mindspore.ops.mv",
    "mindspore.mint.dot": "mindspore.ops.inner (ops.dot wants rank >= 2)",
    "mindspore.mint.count_nonzero": "mindspore.ops.count_nonzero (`axis`, int32 result)",
    "mindspore.mint.bernoulli": "mindspore.ops.bernoulli(input, p=probabilities)",
    "mindspore.mint.rand_like": "mindspore.ops.rand_like",
    "mindspore.mint.randn_like": "mindspore.ops.randn_like",
    "mindspore.mint.multinomial": "mindspore.ops.multinomial (replacement defaults to True)",
    "mindspore.mint.randperm": "mindspore.ops.randperm",
    "mindspore.mint.normal": "none checked",
    "mindspore.mint.randint_like": "none checked",
    "mindspore.ops.rms_norm": "none; compose x * rsqrt(mean(x * x, -1) + eps) * weight",
    # mint.nn modules fail on CPU with the same missing kernels; the legacy mindspore.nn
    # Cells run there (checked), with their own constructor arguments (pad_mode, has_bias).
    "mindspore.mint.nn.Conv1d": "the mindspore.nn.Conv1d Cell (pad_mode, has_bias=False)",
    "mindspore.mint.nn.Conv2d": "the mindspore.nn.Conv2d Cell (pad_mode, has_bias=False)",
    "mindspore.mint.nn.ConvTranspose2d": "the mindspore.nn.Conv2dTranspose Cell",
    "mindspore.mint.nn.LayerNorm": "the mindspore.nn.LayerNorm Cell",
    "mindspore.mint.nn.GELU": "the mindspore.nn.GELU Cell",
    "mindspore.mint.nn.Embedding": "the mindspore.nn.Embedding Cell (int32 ids)",
    "mindspore.mint.nn.BatchNorm1d": "the mindspore.nn.BatchNorm1d Cell",
    "mindspore.mint.nn.BatchNorm2d": "the mindspore.nn.BatchNorm2d Cell",
    "mindspore.mint.nn.MaxPool2d": "the mindspore.nn.MaxPool2d Cell",
    "mindspore.mint.nn.AvgPool2d": "the mindspore.nn.AvgPool2d Cell",
    "mindspore.mint.nn.AvgPool1d": "the mindspore.nn.AvgPool1d Cell",
    "mindspore.mint.nn.AdaptiveAvgPool2d": "the mindspore.nn.AdaptiveAvgPool2d Cell",
    "mindspore.mint.nn.LogSoftmax": "the mindspore.nn.LogSoftmax Cell",
    "mindspore.mint.nn.CrossEntropyLoss": "the mindspore.nn.CrossEntropyLoss Cell",
    "mindspore.mint.nn.MSELoss": "the mindspore.nn.MSELoss Cell",
    "mindspore.mint.nn.L1Loss": "the mindspore.nn.L1Loss Cell",
    "mindspore.mint.nn.KLDivLoss": "the mindspore.nn.KLDivLoss Cell",
    "mindspore.mint.nn.Mish": "the mindspore.nn.Mish Cell",
    "mindspore.mint.nn.ELU": "the mindspore.nn.ELU Cell",
    "mindspore.mint.nn.ReLU6": "the mindspore.nn.ReLU6 Cell",
    "mindspore.mint.nn.SELU": "the mindspore.nn.SeLU Cell",
    "mindspore.mint.nn.Hardtanh": "the mindspore.nn.Hardtanh Cell",
    "mindspore.mint.nn.LogSigmoid": "the mindspore.nn.LogSigmoid Cell",
    "mindspore.mint.nn.ZeroPad2d": "the mindspore.nn.ZeroPad2d Cell",
    "mindspore.mint.nn.ConstantPad2d": "the mindspore.nn.ConstantPad2d Cell",
    "mindspore.mint.nn.ReflectionPad2d": "the mindspore.nn.ReflectionPad2d Cell",
    "mindspore.mint.nn.ReplicationPad2d": "the mindspore.nn.ReplicationPad2d Cell",
    "mindspore.mint.nn.Unfold": "none (mindspore.nn.Unfold fails kernel selection too)",
}

# torch names the automatic candidate lists miss (not found by dir() of the scanned modules).
EXTRA_TORCH_NAMES: tuple[str, ...] = (
    "torch.nn.functional.multi_head_attention_forward",
    "torch.autograd.grad",
    "torch.cuda.synchronize",
    "torch.nn.Parameter",
    "torch.nn.functional.scaled_dot_product_attention",
)

# torch names kept out on purpose: internal helpers that happen to be public attributes.
SKIP_TORCH_NAMES: frozenset[str] = frozenset()

# MindSpore's other spellings of a mapped torch API, called by MindSpore code as often as the
# mapped name (mindcv and ports write `ops.tanh`, `ops.abs`, `Tensor.astype`, `ops.assign`):
# listed under the entry's `alternatives`, so a MindSpore script's call maps back to torch and
# the replay may run it. Each was called on CPU in MindSpore 2.10 (float32, 4x5) beside the
# mapped name and gave the same values (copy_ into one Parameter, assign into another). The
# build checks every name resolves.
ALSO_NAMED: dict[str, tuple[str, ...]] = {
    "torch.abs": ("mindspore.ops.abs",),
    "torch.tanh": ("mindspore.ops.tanh",),
    "torch.Tensor.copy_": ("mindspore.ops.assign",),
    "torch.Tensor.to": ("mindspore.Tensor.astype",),
}
