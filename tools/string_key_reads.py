"""Count string-key reads in the package: `x["key"]` in a load (not an assignment target)
and `x.get("key", ...)`, per module and per 1,000 lines. The measure of issue 22's "records
read by string paths"; `python tools/string_key_reads.py [--top N] [--exclude MODULE ...]`."""
from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path


def reads_in(source: str) -> int:
    count = 0
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
            count += 1
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "get" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            count += 1
    return count


def count(root: Path, exclude: set[str]) -> tuple[dict[str, tuple[int, int]], int, int]:
    per_file = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        reads = 0 if rel in exclude else reads_in(text)
        per_file[rel] = (reads, lines)
    total_reads = sum(r for r, _ in per_file.values())
    total_lines = sum(n for _, n in per_file.values())
    return per_file, total_reads, total_lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(Path(__file__).resolve().parents[1] / "opbench"))
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--exclude", nargs="*", default=[],
                        help="files (opbench/...py) whose reads are not counted")
    args = parser.parse_args(argv)
    per_file, reads, lines = count(Path(args.root), set(args.exclude))
    print(f"{reads} string-key reads in {lines} lines: {1000 * reads / lines:.1f} per 1,000"
          + (f" (not counted: {', '.join(args.exclude)})" if args.exclude else ""))
    for rel, (r, n) in sorted(per_file.items(), key=lambda kv: -kv[1][0])[:args.top]:
        print(f"  {r:4d}  {rel} ({n} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
