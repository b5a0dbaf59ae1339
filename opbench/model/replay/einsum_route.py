"""torch.einsum in MindSpore: mint.einsum (the API mapping's counterpart), then, where it has
no kernel, the einsum written out as a porting team writes it (einsum_plan.py: sums,
permutes, reshapes, a bmm / matmul or a broadcast multiply), with mint functions that have
CPU kernels in MindSpore 2.10 (each checked there: mint.permute, reshape, sum, bmm, matmul,
mul, and their gradients). MindSpore 2.10's CPU build has no einsum in any namespace
(mint.einsum: "einsum only supports Ascend"; ops.einsum: "Unsupported op [Einsum] on CPU"):
24% of mha_einsum_padding_inference.py's traced time was not covered for it."""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from opbench.model.program import Call, Lit
from opbench.model.replay.einsum_plan import (EinsumKernels, EinsumPlan, EinsumRefused,
                                              parse_equation, plan_einsum, run_plan)
from opbench.model.replay.route import Route, Unmapped

__all__ = ["EINSUM_WRITTEN_OUT", "einsum_route"]

EINSUM_WRITTEN_OUT = "einsum as permute/reshape/bmm (mindspore.mint)"


def einsum_route(call: Call, mapped: Route | Unmapped) -> Route | Unmapped:
    """The mapping's route (`mapped`: mint.einsum), the written-out einsum after it."""
    equation = call.args[0].value if call.args and isinstance(call.args[0], Lit) else None
    operands = call.args[1:]
    written_out = Route(EINSUM_WRITTEN_OUT, _written_out(equation), operands)
    if isinstance(mapped, Unmapped):
        return written_out
    return replace(mapped, fallbacks=mapped.fallbacks + (written_out,))


def _written_out(equation: Any) -> Callable[[Callable[[str], Any]], Callable[..., Any]]:
    def make(resolve: Callable[[str], Any]) -> Callable[..., Any]:
        if not isinstance(equation, str):
            raise EinsumRefused("einsum in sublist form (operand, [0, 1], ...): not written "
                                "out")
        parse_equation(equation)          # a diagonal is refused here, before any call
        kernels = mindspore_kernels(resolve)
        # planned once per operand shapes, as a port's code is written once: the timed calls
        # run the steps only
        plans: dict[tuple, EinsumPlan] = {}

        def einsum(*operands: Any) -> Any:
            if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
                operands = tuple(operands[0])       # torch.einsum('ij,jk', [a, b])
            shapes = tuple(tuple(int(n) for n in o.shape) for o in operands)
            plan = plans.get(shapes)
            if plan is None:
                plan = plans[shapes] = plan_einsum(equation, shapes)
            return run_plan(plan, operands, kernels)
        return einsum
    return make


def mindspore_kernels(resolve: Callable[[str], Any]) -> EinsumKernels:
    permute, reshape = resolve("mindspore.mint.permute"), resolve("mindspore.mint.reshape")
    total = resolve("mindspore.mint.sum")
    return EinsumKernels(permute=permute, reshape=reshape,
                         sum=lambda x, dims: total(x, dims),
                         bmm=resolve("mindspore.mint.bmm"),
                         matmul=resolve("mindspore.mint.matmul"),
                         multiply=resolve("mindspore.mint.mul"))

