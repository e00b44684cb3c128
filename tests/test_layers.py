"""Imports run one way: each first-party package imports only the layers below it, and no modules import in
a circle.

Every `import X` and `from X import Y` of every .py file under the packages is counted, wherever it is: at
the top, inside a function, or under `if TYPE_CHECKING:` (a type-only import still ties the layers
together). Relative imports are resolved against the importing module. Imports built from strings
(importlib) are not seen.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# The layers, bottom to top: stores < prompts < nodes < graphs < hopgraph. evals sits beside them and reads
# only stores and prompts; benchmarks is a consumer on top of everything. A package may always import itself;
# nothing but hopgraph (and benchmarks, tests, scripts) imports hopgraph.
ANYTHING = frozenset({"stores", "prompts", "nodes", "graphs", "evals", "hopgraph"})
MAY_IMPORT: dict[str, frozenset[str]] = {
    "stores": frozenset(),
    "prompts": frozenset({"stores"}),
    "nodes": frozenset({"stores", "prompts"}),
    "graphs": frozenset({"stores", "prompts", "nodes"}),
    "evals": frozenset({"stores", "prompts"}),
    "hopgraph": frozenset({"stores", "prompts", "nodes", "graphs", "evals"}),
    "benchmarks": ANYTHING,
}
FIRST_PARTY = frozenset(MAY_IMPORT)


@dataclass(frozen=True)
class Import:
    importer: str  # dotted module name, e.g. "graphs.naive.graph"
    imported: str  # dotted first-party module (or package) it imports, e.g. "nodes.state"
    where: str  # path:line


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    """Every first-party module (packages by their __init__), recursively: dotted name -> file."""
    found: dict[str, Path] = {}
    for package in sorted(FIRST_PARTY):
        for path in sorted((REPO / package).rglob("*.py")):
            found[_module_name(path)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path], root: Path = REPO) -> Iterator[Import]:
    """The first-party imports of one module, each resolved to the deepest module it names."""
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(name, alias.name, where)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: `from . import x` in a package is the package itself
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                yield Import(name, submodule if submodule in modules else target, where)


def _first_party_imports() -> list[Import]:
    modules = _modules()
    return [
        found
        for name, path in modules.items()
        for found in _imports(name, path, modules)
        if found.imported.split(".")[0] in FIRST_PARTY
    ]


def test_every_import_runs_down_the_layers() -> None:
    offending = []
    for found in _first_party_imports():
        importer, imported = found.importer.split(".")[0], found.imported.split(".")[0]
        if imported != importer and imported not in MAY_IMPORT[importer]:
            allowed = ", ".join(sorted(MAY_IMPORT[importer])) or "nothing first-party"
            offending.append(
                f"{found.importer} -> {found.imported} ({importer} may import only {allowed}) [{found.where}]"
            )
    assert not offending, "imports against the layer order:\n" + "\n".join(sorted(set(offending)))


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(edges[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return sorted(components)


def test_no_modules_import_in_a_circle() -> None:
    """Module granularity: a package counts as its __init__, and importing a.b.c is an edge to a.b.c only."""
    edges: dict[str, set[str]] = {name: set() for name in _modules()}
    via: dict[tuple[str, str], str] = {}
    for found in _first_party_imports():
        if found.imported in edges and found.imported != found.importer:
            edges[found.importer].add(found.imported)
            via.setdefault((found.importer, found.imported), found.where)
    lines = []
    for component in _cycles(edges):
        members = set(component)
        lines.append("cycle among " + ", ".join(component) + ":")
        lines += [f"  {a} -> {b} [{via[a, b]}]" for a in component for b in sorted(edges[a] & members)]
    assert not lines, "import cycles:\n" + "\n".join(lines)


def test_the_checker_resolves_relative_and_nested_imports(tmp_path: Path) -> None:
    """The resolution the two tests rely on, on a made-up package: relative, function-level, TYPE_CHECKING."""
    package = tmp_path / "graphs" / "naive"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from . import graph\n")
    (package / "graph.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from ..registry import METHODS\n"
        "from .state import State\n"
        "if TYPE_CHECKING:\n"
        "    from hopgraph.api import build_graph\n"
        "def f():\n"
        "    import nodes.state\n"
    )
    modules = {"graphs.naive": package / "__init__.py", "graphs.naive.graph": package / "graph.py"}
    modules |= {"graphs.naive.state": package / "state.py", "graphs.registry": package / "registry.py"}
    init = {i.imported for i in _imports("graphs.naive", modules["graphs.naive"], modules, tmp_path)}
    graph = {
        i.imported for i in _imports("graphs.naive.graph", modules["graphs.naive.graph"], modules, tmp_path)
    }
    assert init == {"graphs.naive.graph"}
    assert graph == {"typing", "graphs.registry", "graphs.naive.state", "hopgraph.api", "nodes.state"}
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
