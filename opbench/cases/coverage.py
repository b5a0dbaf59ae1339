"""What the case library covers: operators, instances, tags, backward, dtypes."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from rich.table import Table
from rich.text import Text

from opbench.cases.case_files import CaseInstance


@dataclass(frozen=True)
class OperatorCoverage:
    op: str
    instances: int
    backward: bool
    dtypes: tuple[str, ...]
    tags: tuple[str, ...]
    files: tuple[str, ...]


@dataclass(frozen=True)
class Coverage:
    operators: tuple[OperatorCoverage, ...]
    n_instances: int
    dtypes: tuple[str, ...]
    tags: tuple[str, ...]

    @property
    def n_operators(self) -> int:
        return len(self.operators)

    @property
    def n_backward_operators(self) -> int:
        return sum(1 for o in self.operators if o.backward)


def summarize_coverage(instances: Iterable[CaseInstance]) -> Coverage:
    by_op: dict[str, list[CaseInstance]] = defaultdict(list)
    for inst in instances:
        by_op[inst.op].append(inst)
    ops = []
    for op in sorted(by_op):
        insts = by_op[op]
        ops.append(OperatorCoverage(
            op=op, instances=len(insts),
            backward=any(i.case.backward for i in insts),
            dtypes=tuple(sorted({s.dtype for i in insts for s in i.inputs})),
            tags=tuple(sorted({t for i in insts for t in i.case.tags})),
            files=tuple(sorted({i.case.file for i in insts}))))
    return Coverage(operators=tuple(ops), n_instances=sum(o.instances for o in ops),
                    dtypes=tuple(sorted({d for o in ops for d in o.dtypes})),
                    tags=tuple(sorted({t for o in ops for t in o.tags})))


def coverage_table(cov: Coverage) -> Table:
    table = Table(title="Case library coverage", header_style="bold")
    for col in ("operator", "instances", "backward", "dtypes", "tags", "file"):
        # file names, not paths (the library sits deep in site-packages when installed);
        # folded, never cut
        table.add_column(col, justify="right" if col == "instances" else "left",
                         overflow="fold")
    for o in cov.operators:
        # Text(): a path like "lib[v2]/x.yaml" would otherwise be read as rich markup
        table.add_row(Text(o.op), str(o.instances), "yes" if o.backward else "",
                      ", ".join(o.dtypes), ", ".join(o.tags),
                      Text(", ".join(Path(f).name for f in o.files)))
    return table
