"""torch's in-place masked_fill_, scatter_add_, clamp_ and index_add_ in MindSpore, as a port writes them on
MindSpore 2.10's CPU build: the out-of-place function that has a CPU kernel, written back
into the receiver (training_routes.write_back).

The API mapping's route (routes.py `_via_mapping`: the in-place method, then its
out-of-place twin written back) fails for both: Tensor.masked_fill_ has no CPU kernel
("The kernel InplaceMaskedFillScalar unregistered"), and its twin Tensor.masked_fill, run
right after in the same process, reported the same error (the failed launch's error is
raised again; Tensor.masked_fill alone runs); Tensor.scatter_add_ and Tensor.scatter_add
have none ("InplaceScatterAdd", "ScatterAddExt unregistered"). Together 10.4% of
masking_indexing_inplace.py's traced time (docs/model.md). ops.masked_fill and
ops.tensor_scatter_elements(reduction="add") run (checked here on 64x128 float32)."""
from __future__ import annotations

from typing import Any, Callable

from opbench.model.program import Call, Lit
from opbench.model.replay.call_arguments import bound, literal
from opbench.model.replay.route import Route, Unmapped
from opbench.model.replay.training_routes import write_back

__all__ = ["INPLACE_TORCH_TO_MINDSPORE"]


def _ms_masked_fill_(call: Call) -> Route | Unmapped:
    v = bound(call, ["self", "mask", "value"])
    if v.mask is None or v.value is None:
        return Unmapped("Tensor.masked_fill_ without a mask and a value")

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        masked_fill = resolve("mindspore.ops.masked_fill")

        def masked_fill_(x: Any, mask: Any, value: Any) -> Any:
            return write_back(x, masked_fill(x, mask, value))
        return masked_fill_
    return Route("mindspore.ops.masked_fill + assign (in place, as torch)", make,
                 (v.self, v.mask, v.value))


def _ms_scatter_add_(call: Call) -> Route | Unmapped:
    """x.scatter_add_(dim, index, src): torch reads src only where index has elements (src
    may be larger); tensor_scatter_elements takes updates of index's shape, so a larger src
    is cut to it first, as a port would."""
    v = bound(call, ["self", "dim", "index", "src"])
    dim = literal(v.dim)
    if not isinstance(dim, int) or any(getattr(v, n) is None or isinstance(getattr(v, n), Lit)
                                       for n in ("index", "src")):
        return Unmapped("Tensor.scatter_add_ without a dim, an index tensor and a src tensor")

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        scatter = resolve("mindspore.ops.tensor_scatter_elements")

        def scatter_add_(x: Any, index: Any, src: Any) -> Any:
            if tuple(src.shape) != tuple(index.shape):
                src = src[tuple(slice(0, n) for n in index.shape)]
            return write_back(x, scatter(x, index, src, dim, "add"))
        return scatter_add_
    return Route("mindspore.ops.tensor_scatter_elements(reduction='add') + assign "
                 "(in place, as torch's scatter_add_)", make, (v.self, v.index, v.src))


def _ms_clamp_(call: Call) -> Route | Unmapped:
    """x.clamp_(min, max): no InplaceClampScalar kernel; the twin Tensor.clamp, tried after
    it, failed with that kernel's error in one run of masking_indexing_inplace.py of two
    (1.7% of its traced time): ops.clamp, written back, never tries the in-place kernel."""
    v = bound(call, ["self", "min", "max"])
    if v.min is None and v.max is None:
        return Unmapped("Tensor.clamp_ without a min or a max")
    bounds = (v.min or Lit(None), v.max or Lit(None))

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        clamp = resolve("mindspore.ops.clamp")
        return lambda x, low, high: write_back(x, clamp(x, low, high))
    return Route("mindspore.ops.clamp + assign (in place, as torch)", make,
                 (v.self,) + bounds)


def _ms_index_add_(call: Call) -> Route | Unmapped:
    """x.index_add_(dim, index, source, alpha=1): no InplaceIndexAddExt kernel on CPU, and
    the twin Tensor.index_add refuses torch's int64 index ("indices type must be a type of
    {Tensor[Int32]}"): 8.5% of moe_topk_index_add.py's traced time. The twin with the index
    as int32 (what a port passes), written back; the cast is in the measured call."""
    v = bound(call, ["self", "dim", "index", "source", "alpha"])
    dim, alpha = literal(v.dim), literal(v.alpha, 1) if v.alpha is not None else 1
    if not isinstance(dim, int) or not isinstance(alpha, (int, float)) \
            or any(getattr(v, n) is None or isinstance(getattr(v, n), Lit)
                   for n in ("index", "source")):
        return Unmapped("Tensor.index_add_ without a dim, an index tensor, a source tensor "
                        "and a number alpha")

    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        import mindspore

        def index_add_(x: Any, index: Any, source: Any) -> Any:
            if alpha != 1:
                source = source * alpha
            return write_back(x, x.index_add(dim, index.astype(mindspore.int32), source))
        return index_add_
    return Route("mindspore.Tensor.index_add (int32 index) + assign (in place, as torch)",
                 make, (v.self, v.index, v.source))


INPLACE_TORCH_TO_MINDSPORE: dict[str, Callable[[Call], Route | Unmapped]] = {
    "torch.Tensor.clamp_": _ms_clamp_,
    "torch.Tensor.index_add_": _ms_index_add_,
    "torch.Tensor.masked_fill_": _ms_masked_fill_,
    "torch.Tensor.scatter_add_": _ms_scatter_add_,
}
