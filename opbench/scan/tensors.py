"""What the scan treats as "recognisably a tensor" and as "a framework module object".

Every rule here is a heuristic: code is never run, so a tensor is only ever inferred. Rows that
rest on these rules carry guess=True and a reason. The rules are documented in docs/scan.md;
keep the two in step.
"""
from __future__ import annotations

from opbench.scan.aliases import INSTANCE, TENSOR, framework_of

# Namespaces whose lowercase functions return tensors (torch.randn, F.relu, mint.add, ops.mul).
# The top-level `mindspore` namespace is not here: most of its functions configure the runtime
# (set_context, load_checkpoint) rather than compute; its tensor makers are listed explicitly.
TENSOR_FUNCTION_NAMESPACES = frozenset({
    "torch", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special",
    "torch.nn.init",
    "mindspore.ops", "mindspore.ops.functional", "mindspore.mint",
    "mindspore.mint.nn.functional", "mindspore.mint.linalg", "mindspore.mint.special",
    "mindspore.numpy",
})
EXTRA_TENSOR_FUNCTIONS = frozenset({"mindspore.tensor", "mindspore.from_numpy"})

# Functions inside those namespaces that return something other than a tensor (flags, dtypes,
# context managers, decorators, transforms of functions).
NON_TENSOR_FUNCTIONS = frozenset({
    "no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "autocast",
    "manual_seed", "seed", "initial_seed", "save", "load", "device", "compile", "jit",
    "vmap", "grad", "value_and_grad", "jacfwd", "jacrev", "vjp", "jvp", "constexpr",
    "numel", "allclose", "equal", "typename", "result_type", "promote_types", "can_cast",
    "broadcast_shapes", "finfo", "iinfo", "cond", "export", "calculate_gain",
    "sym_int", "sym_float", "sym_max", "sym_min", "sym_not", "sym_ite",
    # MindSpore functions returning shapes, ranks, dtypes and sizes (tuples / Python values).
    "shape", "rank", "dtype", "size", "typeof",
})
# Name prefixes of predicates, getters/setters and private helpers.
NON_TENSOR_PREFIXES = ("is_", "set_", "get_", "use_", "are_", "_")

# Classes that construct tensors (torch.Tensor, torch.FloatTensor, nn.Parameter, ms.Parameter).
TENSOR_CLASS_NAMES = frozenset({"Tensor", "Parameter", "COOTensor", "CSRTensor"})

# Namespaces whose classes build callable framework objects: calling one gives tensors.
MODULE_CLASS_NAMESPACES = ("torch.nn", "mindspore.nn", "mindspore.mint.nn", "mindspore.ops")

# Framework objects whose output is not a tensor: MindSpore primitives returning a shape
# tuple, a rank, a size or a dtype.
NON_TENSOR_OUTPUT_CLASSES = frozenset({"Shape", "DType", "Rank", "Size", "IsInstance",
                                       "IsSubClass"})

# Tensor methods whose result is not a tensor (Python numbers, lists, numpy arrays, None).
NON_TENSOR_METHODS = frozenset({
    "item", "tolist", "numpy", "asnumpy", "size", "dim", "ndimension", "numel", "nelement",
    "element_size", "stride", "storage", "untyped_storage", "storage_offset", "data_ptr",
    "get_device", "backward", "register_hook", "tobytes", "equal", "allclose", "has_names",
    "dim_order", "__len__", "__bool__", "__int__", "__float__", "__index__",
})

# Attributes of a tensor that are tensors themselves.
TENSOR_ATTRIBUTES = frozenset({
    "T", "mT", "H", "mH", "data", "grad", "real", "imag", "values", "indices",
})
# Attributes of a framework module object that are tensors (`self.fc.weight`).
MODULE_TENSOR_ATTRIBUTES = frozenset({"weight", "bias"})

# Method names that in practice mark their result as a tensor even when the receiver is
# unknown: dtype/device casts and autograd plumbing. nn.Module shares some of them (`cuda`,
# `float`), so evidence from this list is weak: see MODULE_ONLY_METHODS.
CHAIN_METHODS = frozenset({
    "cuda", "cpu", "float", "half", "double", "bfloat16", "long", "int", "bool",
    "detach", "contiguous", "unsqueeze", "permute", "masked_fill", "clone", "requires_grad_",
})

# Methods of nn.Module / nn.Cell that tensors do not have: after a weak chain
# (`model.cuda().eval()`) they say the receiver was a module, so no Tensor row is made.
MODULE_ONLY_METHODS = frozenset({
    "eval", "train", "parameters", "named_parameters", "buffers", "named_buffers",
    "children", "named_children", "modules", "named_modules", "state_dict",
    "load_state_dict", "zero_grad", "apply", "register_buffer", "register_parameter",
    "register_module", "add_module", "register_forward_hook", "register_forward_pre_hook",
    "register_full_backward_hook", "forward", "extra_repr", "construct", "set_train",
    "trainable_params", "get_parameters", "to_float", "compile",
})

# `self.register_buffer("name", tensor)` makes `self.name` a tensor.
TENSOR_REGISTRATION_METHODS = frozenset({"register_buffer", "register_parameter"})


def _in_namespace(namespace: str, prefixes: tuple[str, ...]) -> bool:
    return any(namespace == p or namespace.startswith(p + ".") for p in prefixes)


def call_result_kind(path: str) -> str | None:
    """What calling the framework API `path` gives: TENSOR, INSTANCE (a module/primitive
    object) or None (unknown or not a tensor)."""
    namespace, _, name = path.rpartition(".")
    if not name:
        return None
    if name[0].isupper():
        if name in TENSOR_CLASS_NAMES or name.endswith("Tensor"):
            return TENSOR
        return INSTANCE if _in_namespace(namespace, MODULE_CLASS_NAMESPACES) else None
    if path in EXTRA_TENSOR_FUNCTIONS:
        return TENSOR
    if (namespace in TENSOR_FUNCTION_NAMESPACES and name not in NON_TENSOR_FUNCTIONS
            and not name.startswith(NON_TENSOR_PREFIXES)):
        return TENSOR
    return None


def is_tensor_type(path: str) -> bool:
    """Is `path` (a resolved annotation) a framework tensor type?"""
    name = path.rpartition(".")[2]
    return framework_of(path) is not None and (name in TENSOR_CLASS_NAMES
                                               or name.endswith("Tensor"))


def output_is_tensor(class_path: str) -> bool:
    """Does calling an object built from the framework class `class_path` give a tensor?"""
    return class_path.rpartition(".")[2] not in NON_TENSOR_OUTPUT_CLASSES
