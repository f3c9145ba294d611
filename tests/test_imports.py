"""The package's floor plan, checked against its imports.

Modules import one another without a circle, imports under `if TYPE_CHECKING:` and inside
functions included (a circle held open by either breaks as soon as someone moves the import).
Packages import only the packages below them in `LAYERS` (docs/development.md draws the same
table): the CLI above the conductor (pipeline/), the conductor above every worker, and the
foundations at the bottom. Kinds of prompt are named by the registry's constants, not by
strings of their own.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "generator"

# Top to bottom: each room may import the rooms after it, never one before it. A room is a
# package of generator/ or, for the foundations, one module lying loose in generator/.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("__main__",),
    ("cli",),
    ("pipeline",),
    ("publish",),
    ("deliver",),
    ("ask",),
    ("edition",),
    ("prompts",),
    ("archive",),
    ("evidence",),
    ("synthesis",),
    ("fetch",),
    ("config",),
    ("marks",),
    ("store",),
    ("kinds", "ports"),
    ("papers", "completions"),
    ("errors", "deadline"),
    ("text",),
    ("generator",),  # the package itself: its version
)
FOUNDATIONS = {"__main__", "kinds", "ports", "papers", "completions", "errors", "deadline"}


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The package's modules `path` imports, at run time or for type checking alone."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    name = _module(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            prefix = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                target = f"{prefix}.{alias.name}"
                found.add(target if target in modules else prefix)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m in modules and m != name}


def _graph() -> dict[str, set[str]]:
    paths = {_module(p): p for p in PACKAGE.rglob("*.py")}
    return {name: _imports(path, set(paths)) for name, path in paths.items()}


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_no_module_imports_itself_back() -> None:
    graph = _graph()
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


def test_every_package_imports_only_the_packages_below_it() -> None:
    rank = {room: level for level, rooms in enumerate(LAYERS) for room in rooms}
    graph = _graph()
    unknown = sorted({_room(m) for m in graph} - set(rank))
    assert unknown == [], "place each new package or loose module in LAYERS"
    upward = sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                    if _room(a) != _room(b) and rank[_room(a)] >= rank[_room(b)])
    assert upward == []


# Rooms that must never import another, though it lies below them: what the site keeps is
# read from records alone, never by talking to the model.
NEVER = {("archive", "synthesis")}


def test_no_room_imports_what_it_must_never() -> None:
    graph = _graph()
    crossing = sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                      if (_room(a), _room(b)) in NEVER)
    assert crossing == []


def test_at_most_ten_modules_lie_loose_in_the_package() -> None:
    loose = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert len(loose) <= 10, loose
    assert set(loose) - {"__init__"} <= FOUNDATIONS


def _kind_literals(path: Path, names: set[str]) -> list[int]:
    """Lines where a kind's name is spelled as a string in a place that means a kind: compared
    with a `kind`, given as `kind=`, or looked up in a registry or a by-kind mapping."""
    tree = ast.parse(path.read_text(encoding="utf-8"))

    def named(node: ast.AST) -> bool:
        return isinstance(node, ast.Constant) and node.value in names

    def about_kind(node: ast.AST) -> bool:
        text = ast.unparse(node).rstrip("]'\"")
        return (text.endswith("kind") or text.endswith("kinds") or "registry" in text
                or text.endswith("structured"))

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(about_kind(n) for n in
                                                 (node.left, *node.comparators)):
            for side in (node.left, *node.comparators):
                elements = side.elts if isinstance(side, ast.Tuple | ast.Set | ast.List) \
                    else [side]
                lines += [n.lineno for n in elements if named(n)]
        elif isinstance(node, ast.keyword) and node.arg == "kind" and named(node.value):
            lines.append(node.value.lineno)
        elif isinstance(node, ast.Subscript) and about_kind(node.value) and named(node.slice):
            lines.append(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "get" and about_kind(node.func.value)
              and node.args and named(node.args[0])):
            lines.append(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "make" and len(node.args) > 2 and named(node.args[2])):
            lines.append(node.lineno)  # a request builder's `ctx.make(name, title, kind, ...)`
    return lines


def test_kinds_are_named_by_the_registrys_constants() -> None:
    from generator import kinds

    names = {value for key, value in vars(kinds).items() if key.isupper()
             and isinstance(value, str) and key not in {"EDITION_PAGES"}}
    assert {"research_map", "evidence", "judge", "ask"} <= names
    spelled = {str(p.relative_to(PACKAGE)): lines for p in sorted(PACKAGE.rglob("*.py"))
               if p != PACKAGE / "kinds.py" and (lines := _kind_literals(p, names))}
    assert len(spelled) <= 3, spelled


def test_the_environment_is_read_in_one_module() -> None:
    """The CLI reads the process's environment (`cli/common.py: environment`) and gives it to
    whatever needs it; deploy's child git process inherits it, which is not a reading."""
    readers = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                     if "os.environ" in (text := p.read_text(encoding="utf-8"))
                     or "getenv(" in text)
    assert readers == ["cli/common.py", "publish/deploy.py"]
