"""An einsum written out as the calls a porting team writes on a framework without an einsum
kernel (MindSpore 2.10's CPU: mint.einsum "only supports Ascend", ops.einsum "Unsupported op
[Einsum] on CPU"): sums, permutes, reshapes and a (batched) matrix product, by rule from the
equation and the operands' shapes, not per equation.

The rule (what opt_einsum and torch's own CPU einsum do, pairwise):
- labels of one operand that no other operand and not the output name are summed first;
- two or more operands are contracted left to right, pairwise; in each pair every label is
  a batch label (in both, needed later), a contracted one (in both, not needed later), a
  free label of the left or of the right operand;
- the pair becomes left (batch, left free, contracted) @ right (batch, contracted, right
  free), each permuted and reshaped to three dimensions (two without batch labels), the
  product reshaped back to (batch, left free, right free); with nothing contracted (an
  outer product, a scaling) the two are multiplied, broadcast against each other;
- the result is permuted to the output's order.
A broadcast ellipsis dimension of size 1 in one operand of a pair is reshaped away there (the
operand does not vary along it). A label repeated in one operand (a diagonal or a trace,
'ii->i') is refused with the reason: it takes a gather no porting team writes for it.

Pure: the plan is frozen records; `run_plan` runs it with the kernels a caller passes (the
MindSpore route's mint functions, a test's numpy ones)."""
from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any, Callable, Sequence, Union

__all__ = ["Permute", "Reshape", "Sum", "MatMul", "Multiply", "EinsumPlan", "EinsumRefused",
           "EinsumKernels", "parse_equation", "plan_einsum", "run_plan"]

ELLIPSIS = "..."


class EinsumRefused(ValueError):
    """An equation the rule does not write out (the message says why)."""


@dataclass(frozen=True)
class Permute:
    source: int                       # the slot read (operands first, then each step's result)
    dims: tuple[int, ...]


@dataclass(frozen=True)
class Reshape:
    source: int
    shape: tuple[int, ...]


@dataclass(frozen=True)
class Sum:
    source: int
    dims: tuple[int, ...]             # summed away (not kept)


@dataclass(frozen=True)
class MatMul:
    left: int
    right: int
    batched: bool                     # three dimensions each (bmm), else two (matmul)


@dataclass(frozen=True)
class Multiply:
    left: int                         # broadcast against each other (same rank)
    right: int


Step = Union[Permute, Reshape, Sum, MatMul, Multiply]


@dataclass(frozen=True)
class EinsumPlan:
    operands: int                     # slots 0 .. operands-1; step i writes slot operands+i
    steps: tuple[Step, ...]
    result: int                       # the slot holding the output
    output_shape: tuple[int, ...]


@dataclass(frozen=True)
class EinsumKernels:
    """What a plan needs from a framework."""
    permute: Callable[[Any, tuple[int, ...]], Any]
    reshape: Callable[[Any, tuple[int, ...]], Any]
    sum: Callable[[Any, tuple[int, ...]], Any]
    bmm: Callable[[Any, Any], Any]
    matmul: Callable[[Any, Any], Any]
    multiply: Callable[[Any, Any], Any]


@dataclass(frozen=True)
class _Equation:
    inputs: tuple[tuple[str, ...], ...]     # each operand's subscripts, ELLIPSIS kept as one
    output: tuple[str, ...] | None          # None: implicit (no '->')


def parse_equation(equation: str) -> _Equation:
    """The equation's subscripts (spaces ignored, as torch and numpy do); refuses what is not
    an einsum equation or repeats a label in one operand."""
    text = equation.replace(" ", "")
    left, arrow, right = text.partition("->")
    if "->" in right:
        raise EinsumRefused(f"einsum equation {equation!r} has more than one '->'")
    inputs = tuple(_subscripts(part, equation) for part in left.split(","))
    output = _subscripts(right, equation) if arrow else None
    for labels in inputs:
        repeated = sorted({l for l in labels if l != ELLIPSIS and labels.count(l) > 1})
        if repeated:
            raise EinsumRefused(
                f"einsum {equation!r} repeats {', '.join(repeated)} in one operand (a "
                f"diagonal or trace): not written out as permute/reshape/matmul")
    if output is not None:
        repeated = sorted({l for l in output if output.count(l) > 1})
        if repeated:
            raise EinsumRefused(f"einsum {equation!r}: output label(s) {', '.join(repeated)} "
                                f"repeated")
        named = {l for labels in inputs for l in labels}
        unknown = [l for l in output if l not in named]
        if unknown:
            raise EinsumRefused(f"einsum {equation!r}: output label(s) {', '.join(unknown)} "
                                f"in no operand")
    return _Equation(inputs, output)


def _subscripts(part: str, equation: str) -> tuple[str, ...]:
    labels: list[str] = []
    rest = part
    while rest:
        if rest.startswith(ELLIPSIS):
            if ELLIPSIS in labels:
                raise EinsumRefused(f"einsum {equation!r}: two ellipses in one operand")
            labels.append(ELLIPSIS)
            rest = rest[len(ELLIPSIS):]
        elif rest[0].isascii() and rest[0].isalpha():
            labels.append(rest[0])
            rest = rest[1:]
        else:
            raise EinsumRefused(f"einsum {equation!r}: {rest[0]!r} is not a subscript "
                                f"(letters and '...')")
    return tuple(labels)


def plan_einsum(equation: str, shapes: Sequence[Sequence[int]]) -> EinsumPlan:
    """The steps computing einsum(equation, *operands) for operands of these shapes."""
    parsed = parse_equation(equation)
    if len(parsed.inputs) != len(shapes):
        raise EinsumRefused(f"einsum {equation!r} names {len(parsed.inputs)} operand(s), "
                            f"the call passes {len(shapes)}")
    operands = [_labelled(slot, labels, tuple(int(n) for n in shape), equation)
                for slot, (labels, shape) in enumerate(zip(parsed.inputs, shapes))]
    sizes = _sizes(operands, equation)
    output = _output_labels(parsed, operands)
    builder = _Builder(len(shapes))
    current = operands[0]
    for position in range(1, len(operands)):
        later = set(output).union(*(set(o.labels) for o in operands[position + 1:]))
        current = builder.contract(current, operands[position], later)
    current = builder.sum_labels(current, [l for l in current.labels if l not in output])
    current = builder.permute(current, output)
    return EinsumPlan(len(shapes), tuple(builder.steps), current.slot,
                      tuple(sizes[l] for l in output))


@dataclass(frozen=True)
class _Value:
    slot: int                         # where the plan holds it
    labels: tuple[str, ...]           # one per dimension; ellipsis dimensions as '.0', '.1'
    shape: tuple[int, ...]


def _labelled(slot: int, labels: tuple[str, ...], shape: tuple[int, ...], equation: str
              ) -> _Value:
    """An operand with one label per dimension: the ellipsis' dimensions named from the
    right ('.0' the last), so operands broadcast as numpy aligns them."""
    explicit = len(labels) - (ELLIPSIS in labels)
    if len(shape) < explicit or (ELLIPSIS not in labels and len(shape) != explicit):
        raise EinsumRefused(f"einsum {equation!r}: subscripts {''.join(labels)!r} for an "
                            f"operand of shape {shape}")
    names: list[str] = []
    for label in labels:
        if label == ELLIPSIS:
            covered = len(shape) - explicit
            names += [f".{k}" for k in reversed(range(covered))]
        else:
            names.append(label)
    return _Value(slot, tuple(names), shape)


def _sizes(operands: list[_Value], equation: str) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for operand in operands:
        for label, size in zip(operand.labels, operand.shape):
            known = sizes.get(label)
            if known is None or known == 1:
                sizes[label] = size
            elif size not in (known, 1):
                raise EinsumRefused(f"einsum {equation!r}: {_shown(label)} is {known} in one "
                                    f"operand and {size} in another")
    return sizes


def _shown(label: str) -> str:
    return f"an ellipsis dimension ({label})" if label.startswith(".") else f"label {label}"


def _output_labels(parsed: _Equation, operands: list[_Value]) -> tuple[str, ...]:
    """The output's labels: as written, the ellipsis' widest span where it stands; implicit
    (no '->'): the ellipsis' dimensions, then the labels named once, sorted (torch and numpy
    alike)."""
    span = max((sum(l.startswith(".") for l in o.labels) for o in operands), default=0)
    dots = tuple(f".{k}" for k in reversed(range(span)))
    if parsed.output is None:
        counts: dict[str, int] = {}
        for labels in parsed.inputs:
            for label in labels:
                if label != ELLIPSIS:
                    counts[label] = counts.get(label, 0) + 1
        return dots + tuple(sorted(l for l, n in counts.items() if n == 1))
    out: list[str] = []
    for label in parsed.output:
        out += dots if label == ELLIPSIS else [label]
    return tuple(out)


class _Builder:
    """Appends steps, skipping those that would do nothing (an identity permute, a reshape
    to the same shape): a porting team writes neither."""

    def __init__(self, operands: int) -> None:
        self.operands = operands
        self.steps: list[Step] = []

    def _add(self, step: Step) -> int:
        self.steps.append(step)
        return self.operands + len(self.steps) - 1

    def permute(self, value: _Value, order: Sequence[str]) -> _Value:
        order = tuple(order)
        if order == value.labels:
            return value
        dims = tuple(value.labels.index(l) for l in order)
        return _Value(self._add(Permute(value.slot, dims)), order,
                      tuple(value.shape[d] for d in dims))

    def reshape(self, value: _Value, shape: tuple[int, ...], labels: tuple[str, ...]
                ) -> _Value:
        if shape == value.shape:
            return _Value(value.slot, labels, shape)
        return _Value(self._add(Reshape(value.slot, shape)), labels, shape)

    def sum_labels(self, value: _Value, labels: Sequence[str]) -> _Value:
        if not labels:
            return value
        dims = tuple(value.labels.index(l) for l in labels)
        kept = [d for d in range(len(value.labels)) if d not in dims]
        return _Value(self._add(Sum(value.slot, dims)),
                      tuple(value.labels[d] for d in kept),
                      tuple(value.shape[d] for d in kept))

    def _squeeze(self, value: _Value, labels: Sequence[str]) -> _Value:
        """Size-1 (broadcast) dimensions reshaped away."""
        if not labels:
            return value
        kept = [d for d, l in enumerate(value.labels) if l not in labels]
        return self.reshape(value, tuple(value.shape[d] for d in kept),
                            tuple(value.labels[d] for d in kept))

    def contract(self, left: _Value, right: _Value, later: set[str]) -> _Value:
        left_sizes = dict(zip(left.labels, left.shape))
        right_sizes = dict(zip(right.labels, right.shape))
        # a broadcast dimension (1 here, n there): this operand does not vary along it
        left = self._squeeze(left, [l for l in left.labels if l in right_sizes
                                    and left_sizes[l] == 1 and right_sizes[l] != 1])
        right = self._squeeze(right, [l for l in right.labels if l in left_sizes
                                      and right_sizes[l] == 1 and left_sizes[l] != 1])
        # labels of one side only that nothing later needs: summed first
        left = self.sum_labels(left, [l for l in left.labels
                                      if l not in right.labels and l not in later])
        right = self.sum_labels(right, [l for l in right.labels
                                        if l not in left.labels and l not in later])
        shared = [l for l in left.labels if l in right.labels]
        batch = [l for l in shared if l in later]
        contracted = [l for l in shared if l not in later]
        left_free = [l for l in left.labels if l not in right.labels]
        right_free = [l for l in right.labels if l not in left.labels]
        size = dict(zip(left.labels, left.shape)) | dict(zip(right.labels, right.shape))

        def extent(labels: list[str]) -> int:
            return prod(size[l] for l in labels)

        if not contracted:
            return self._broadcast_product(left, right, batch, left_free, right_free, size)

        batched = bool(batch)
        lead = (extent(batch),) if batched else ()
        a = self.permute(left, batch + left_free + contracted)
        a = self.reshape(a, lead + (extent(left_free), extent(contracted)), a.labels)
        b = self.permute(right, batch + contracted + right_free)
        b = self.reshape(b, lead + (extent(contracted), extent(right_free)), b.labels)
        product = self._add(MatMul(a.slot, b.slot, batched))
        labels = tuple(batch + left_free + right_free)
        flat = _Value(product, labels,
                      lead + (extent(left_free), extent(right_free)))
        return self.reshape(flat, tuple(size[l] for l in labels), labels)


    def _broadcast_product(self, left: _Value, right: _Value, batch: list[str],
                           left_free: list[str], right_free: list[str],
                           size: dict[str, int]) -> _Value:
        """Nothing contracted (an outer product, a scaling, an elementwise product): a
        multiply of the two broadcast against each other, as a port writes it; a matrix
        product over an inner size of 1 would run batch x free 1-wide products."""
        labels = tuple(batch + left_free + right_free)
        a = self.permute(left, batch + left_free)
        a = self.reshape(a, tuple(size[l] for l in batch + left_free) + (1,) * len(right_free),
                         labels)
        b = self.permute(right, batch + right_free)
        b = self.reshape(b, tuple(size[l] for l in batch) + (1,) * len(left_free)
                         + tuple(size[l] for l in right_free), labels)
        shape = tuple(size[l] for l in labels)
        return _Value(self._add(Multiply(a.slot, b.slot)), labels, shape)


def run_plan(plan: EinsumPlan, operands: Sequence[Any], kernels: EinsumKernels) -> Any:
    """The plan's steps on these operands with a framework's kernels."""
    slots = list(operands)
    for step in plan.steps:
        if isinstance(step, Permute):
            slots.append(kernels.permute(slots[step.source], step.dims))
        elif isinstance(step, Reshape):
            slots.append(kernels.reshape(slots[step.source], step.shape))
        elif isinstance(step, Sum):
            slots.append(kernels.sum(slots[step.source], step.dims))
        elif isinstance(step, Multiply):
            slots.append(kernels.multiply(slots[step.left], slots[step.right]))
        else:
            product = kernels.bmm if step.batched else kernels.matmul
            slots.append(product(slots[step.left], slots[step.right]))
    return slots[plan.result]
