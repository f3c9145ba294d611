"""The package's modules import one another without a circle, in-function imports included
(a circle held open by an import inside a function breaks as soon as someone moves it)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "generator"


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The package's modules `path` imports at run time (not under `if TYPE_CHECKING:`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(block.test) for node in ast.walk(block)}
    name = _module(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            prefix = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                target = f"{prefix}.{alias.name}"
                found.add(target if target in modules else prefix)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m in modules and m != name}


def test_no_module_imports_itself_back() -> None:
    paths = {_module(p): p for p in PACKAGE.rglob("*.py")}
    graph = {name: _imports(path, set(paths)) for name, path in paths.items()}
    circles = []
    for start in graph:  # a path from a module's imports back to it is a circle
        stack: list[tuple[str, tuple[str, ...]]] = [(start, (start,))]
        seen: set[str] = set()
        while stack:
            at, trail = stack.pop()
            for nxt in graph[at]:
                if nxt == start:
                    circles.append(" -> ".join((*trail, start)))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, (*trail, nxt)))
    assert circles == []
