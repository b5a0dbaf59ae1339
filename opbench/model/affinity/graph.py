"""The data flow of one captured step, read for patterns: each call's operation (its API's
last name, the spelling differences of the routes folded: torch.Tensor.__rmul__, torch.mul
and mindspore.ops.mul are all "mul"), its tensor operands, and who consumes each output."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from opbench.model.program import Call, Ext, Lit, Ref, exts_in, output_at, refs_in, walk_args
from opbench.model.replay.trainable import loss_calls, loss_of
from opbench.model.steady import StepProgram

__all__ = ["StepGraph", "op_of", "Value"]

Value = Ref | Ext

# Python operators and framework spellings of one operation.
_OP_ALIASES = {
    "__add__": "add", "__radd__": "add", "__iadd__": "add",
    "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul", "multiply": "mul",
    "__truediv__": "div", "divide": "div", "true_divide": "div",
    "__sub__": "sub", "subtract": "sub", "__rsub__": "rsub",
    "__matmul__": "matmul", "mm": "matmul", "bmm": "matmul",
    "__pow__": "pow", "square": "square",
    "reduce_sum": "sum", "reduce_mean": "mean", "swapaxes": "transpose",
    # a 2-D tensor's .T and .mT are its .t() (patterns.py checks the operand is 2-D)
    "T": "t", "t": "t", "mT": "t",
    # a weight's write-back: the primitives' names as the functions' (optimizer_loop.py)
    "Assign": "assign", "AssignSub": "assign_sub",
    # torch's in-place subtraction, spelled `p -= x` or `p.sub_(x)` (optimizer_loop.py)
    "__isub__": "sub_",
}
# Operations whose operands commute (a pattern's operand order is not the script's).
COMMUTATIVE = frozenset({"add", "mul"})


def op_of(api: str) -> str:
    last = api.rsplit(".", 1)[-1]
    return _OP_ALIASES.get(last, last)


@dataclass(frozen=True)
class StepGraph:
    step: StepProgram
    ops: tuple[str, ...]
    consumers: tuple[tuple[int, ...], ...]      # per call: the calls reading its outputs
    # per external id: the calls reading it
    ext_readers: dict[int, tuple[int, ...]] = field(default_factory=dict, compare=False)
    # per backward call: the ids of the externals its loss reads (filled as asked: each is
    # a walk over the step, asked once per write-back of a loop)
    _loss_externals: dict[int, frozenset[int]] = field(default_factory=dict, compare=False,
                                                      repr=False)

    @classmethod
    def of(cls, step: StepProgram) -> StepGraph:
        users: list[list[int]] = [[] for _ in step.calls]
        for call in step.calls:
            for ref in refs_in(call):
                if 0 <= ref.call < len(users) and call.index not in users[ref.call]:
                    users[ref.call].append(call.index)
            if isinstance(call.alias_of, Ref):
                users[call.alias_of.call].append(call.index)
        readers: dict[int, list[int]] = {}
        for call in step.calls:
            for ext in dict.fromkeys(exts_in(call)):
                readers.setdefault(ext.id, []).append(call.index)
        return cls(step, tuple(op_of(c.api) for c in step.calls),
                   tuple(tuple(u) for u in users),
                   {i: tuple(r) for i, r in readers.items()})

    def readers(self, ext: Ext) -> tuple[int, ...]:
        """The calls reading an external tensor, in program order."""
        return self.ext_readers.get(ext.id, ())

    def loss_externals(self, index: int) -> frozenset[int]:
        """The externals the loss of call `index` reads, if it is a backward (the calls its
        loss depends on: replay/trainable.py's walk); empty otherwise."""
        if index not in self._loss_externals:
            loss = loss_of(self.step.calls[index])
            self._loss_externals[index] = frozenset() if loss is None else frozenset(
                e.id for i in loss_calls(self.step.calls, loss)
                for e in exts_in(self.step.calls[i]))
        return self._loss_externals[index]

    def call(self, index: int) -> Call:
        return self.step.calls[index]

    def tensors(self, index: int) -> list[Value]:
        """The call's tensor operands, positional first (a Tensor method's self first)."""
        call = self.step.calls[index]
        return [v for v in walk_args((call.args, tuple(v for _, v in call.kwargs)))
                if isinstance(v, (Ref, Ext))]

    def literals(self, index: int) -> list[Any]:
        call = self.step.calls[index]
        return [v.value for v in walk_args(call.args) if isinstance(v, Lit)]

    def kwarg(self, index: int, *names: str) -> Any:
        for k, v in self.step.calls[index].kwargs:
            if k in names and isinstance(v, Lit):
                return v.value
        return None

    def producer(self, value: Value) -> int | None:
        """The call that made a whole-result Ref (None: an external, or an element)."""
        return value.call if isinstance(value, Ref) and value.path == () else None

    def only_used_by(self, index: int, users: set[int]) -> bool:
        return bool(self.consumers[index]) and set(self.consumers[index]) <= users

    def shape(self, value: Value) -> tuple[int, ...] | None:
        if isinstance(value, Ext):
            return tuple(self.step.externals[value.id].shape)
        node = output_at(self.step.calls[value.call].outputs, value.path)
        return tuple(node[1]) if node and node[0] == "tensor" else None

    def dtype(self, value: Value) -> str | None:
        if isinstance(value, Ext):
            return self.step.externals[value.id].dtype
        node = output_at(self.step.calls[value.call].outputs, value.path)
        return node[2] if node and node[0] == "tensor" else None
