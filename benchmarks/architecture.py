"""Architecture figures for a gpumem tree: module sizes, largest functions, import cycles.

Run from the repository root (or give a root): ``python3 benchmarks/architecture.py [ROOT]``.
The figures are the ones issue 18 asks for before and after a redesign; the ``duplicates`` pair
count comes from the separate ``duplicates`` tool and is added when that tool is on PATH.

Import cycles are counted between modules of the ``gpumem`` package, counting every import that
runs (a function-level import hides a cycle from Python, not from a reader; an
``if TYPE_CHECKING:`` import never runs), and between its first-level packages
(``gpumem.sim``, ``gpumem.report``, ...; a top-level module is its own package).
"""

from __future__ import annotations

import ast
import pathlib
import re
import shutil
import subprocess
import sys

SOURCES = ("core/src", "plugins")


def source_files(root: pathlib.Path) -> list[pathlib.Path]:
    """The tracked Python sources of core and the plugins (no build copies, no tests)."""
    out = subprocess.run(
        ["git", "ls-files", "--", *SOURCES], cwd=root, capture_output=True, text=True, check=True
    ).stdout.split()
    return [root / p for p in out if p.endswith(".py") and "/src/" in p]


def module_name(path: pathlib.Path, root: pathlib.Path) -> str:
    rel = path.relative_to(root).parts
    parts = list(rel[rel.index("src") + 1 :])
    parts[-1] = parts[-1][:-3]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_only(tree: ast.Module) -> set[int]:
    """ids of the nodes inside ``if TYPE_CHECKING:`` blocks (imports for annotations only)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def imports_of(tree: ast.Module, module: str, is_package: bool, modules: set[str]) -> set[str]:
    """Every module this file imports at run time, anywhere in it (in a function too),
    resolved to absolute names; ``if TYPE_CHECKING:`` imports do not run and are left out."""
    found: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    skip = _type_only(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            subs = {f"{prefix}.{alias.name}" for alias in node.names}
            found.update(subs)
            if not subs <= modules:  # a name defined in the package, not only its submodules
                found.add(prefix)
    return found


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm; components of more than one node (or a self-loop) are cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def import_graph(root: pathlib.Path) -> dict[str, set[str]]:
    """Module -> the gpumem modules it imports (only edges inside the ``gpumem`` package)."""
    files = [p for p in source_files(root) if "/core/src/gpumem/" in str(p)]
    modules = {module_name(p, root): p for p in files}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        targets = imports_of(tree, name, path.name == "__init__.py", set(modules))
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def package_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    packages: dict[str, set[str]] = {}
    for src, targets in graph.items():
        p = package_of(src)
        packages.setdefault(p, set())
        for t in targets:
            q = package_of(t)
            if q != p and q != "gpumem":  # the package's own __init__ re-exports are not a layer
                packages[p].add(q)
    return packages


def functions(root: pathlib.Path) -> list[tuple[int, str]]:
    out = []
    for path in source_files(root):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                out.append((lines, f"{path.relative_to(root)}:{node.lineno} {node.name}"))
    return sorted(out, reverse=True)


def duplicate_pairs(root: pathlib.Path) -> str:
    if shutil.which("duplicates") is None:
        return "duplicates tool not on PATH"
    text = subprocess.run(
        ["duplicates", "--most", "200", "--seconds", "120", "--repo", str(root)],
        capture_output=True, text=True,
    ).stdout
    return text.splitlines()[0] if text else "no output"


def main(argv: list[str]) -> int:
    root = pathlib.Path(argv[1] if len(argv) > 1 else ".").resolve()
    files = source_files(root)
    sizes = sorted(((len(p.read_text().splitlines()), str(p.relative_to(root))) for p in files),
                   reverse=True)
    total = sum(n for n, _ in sizes)
    print(f"modules: {len(sizes)}, lines: {total}, mean {total / len(sizes):.0f}")
    print("largest modules:")
    for n, name in sizes[:10]:
        print(f"  {n:5d}  {name}")
    print("largest functions:")
    for n, name in functions(root)[:10]:
        print(f"  {n:5d}  {name}")
    graph = import_graph(root)
    cycles = strongly_connected(graph)
    print(f"module import cycles (strongly connected sets): {len(cycles)}")
    for c in cycles:
        print("  " + " <-> ".join(re.sub(r"^gpumem\.", "", m) for m in c))
    pcycles = strongly_connected(package_graph(graph))
    print(f"package import cycles: {len(pcycles)}")
    for c in pcycles:
        print("  " + " <-> ".join(c))
    print("duplicates: " + duplicate_pairs(root))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
