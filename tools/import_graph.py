"""The package's import graph in figures: modules, modules directly under opbench/, import
loops (every import that runs counts, also one inside a function; not one under
`if TYPE_CHECKING:`) and the longest chain of module imports. `python tools/import_graph.py [--json]`; tests/unit/test_architecture.py holds the
figures to their limits. grimp (import-linter's graph library) reads the imports."""
from __future__ import annotations

import argparse
import json
import sys
from functools import lru_cache

import grimp


def figures(package: str = "opbench") -> dict:
    # An import under `if TYPE_CHECKING:` never runs: it makes no chain and no loop.
    graph = grimp.build_graph(package, include_external_packages=False,
                              exclude_type_checking_imports=True)
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    # strongly connected components (Tarjan): a component of 2+ modules is an import loop
    index, low, stack, on_stack, loops = {}, {}, [], set(), []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in edges[v]:
                loops.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for m in modules:
        if m not in index:
            visit(m)

    # The longest chain on the graph with each loop drawn as one node (a loop has no
    # longest path of its own); a chain counts modules.
    node_of = {m: m for m in modules}
    for loop in loops:
        for m in loop:
            node_of[m] = "{" + " ".join(loop) + "}"
    dag: dict[str, set[str]] = {}
    for m in modules:
        dag.setdefault(node_of[m], set()).update(node_of[w] for w in edges[m]
                                                 if node_of[w] != node_of[m])

    @lru_cache(maxsize=None)
    def chain(node: str) -> tuple[str, ...]:
        best: tuple[str, ...] = ()
        for w in sorted(dag[node]):
            c = chain(w)
            if len(c) > len(best):
                best = c
        return (node,) + best

    longest = max((chain(n) for n in sorted(dag)), key=len)
    top_level = [m for m in modules if m.count(".") == 1 and not graph.find_children(m)]
    return {"modules": len(modules), "imports": sum(len(v) for v in edges.values()),
            "top_level_modules": top_level, "loops": loops,
            "longest_chain": list(longest)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--package", default="opbench")
    args = parser.parse_args(argv)
    found = figures(args.package)
    if args.json:
        print(json.dumps(found, indent=1))
        return 0
    print(f"{found['modules']} modules, {found['imports']} imports")
    print(f"{len(found['top_level_modules'])} modules directly under {args.package}/: "
          + ", ".join(m.split(".", 1)[1] for m in found["top_level_modules"]))
    print(f"{len(found['loops'])} import loops" + "".join(
        "\n  " + " <-> ".join(loop) for loop in found["loops"]))
    if found["longest_chain"]:
        print(f"longest chain: {len(found['longest_chain'])} modules: "
              + " -> ".join(found["longest_chain"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
