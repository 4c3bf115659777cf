"""The layers of triple_py.bench, checked from the source (every module parsed with ``ast``).

Floors, lowest first; a module may import its own floor and the floors below it, never one
above::

    base         errors, units, interrupts, limits, ipython      (flat modules)
    workload     what is sent: messages, schemas, reflection, request data, templates,
                 metadata, call setup
    spec         what to run: RunSpec, arm kinds by capability, matrices, SLOs and the
                 capacity table, targets, schedules
    record       what one arm run produces: BenchResult, Latency (and their HTML tables)
    results      the result model (MatrixRun, ArmRun, capacity runs), the results
                 document, frames, summaries, the paired comparison, statistics
    arms         how one arm runs one spec: C load, h2load, grpcio, triple_py's Python API,
                 recorders, the kind -> runner table
    running      rounds of a matrix, run(), servers, capacity search, progress, live view
    distributed  Dask: tasks, the cluster run, exact merges, the workers view
    report       text, CSV, Go bench format, HTML, plots, figures (reads results only:
                 never arms, running or distributed)
    jupyter      notebooks with parameters, the notebook server

Besides: the CLI (``cli``, ``__main__``) may import anything and nothing imports it; the
facade (``__init__``) re-exports; the shims (old flat module names kept for one release)
re-export one module each. No import circles; no imports inside functions except in the CLI
and the facade, or of an optional third-party dependency named in ``OPTIONAL``.

``python tests/unit/test_bench_layers.py [PACKAGE_DIR]`` prints the figures (circles,
arrows, late imports, modules, lines).
"""
from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "triple_py" / "bench"
PACKAGE = "triple_py.bench"

#: The floors, lowest first: floor name -> the first dotted component of its modules.
FLOORS: Sequence[Tuple[str, Tuple[str, ...]]] = (
    ("base", ("errors", "units", "interrupts", "ipython", "limits")),
    ("workload", ("workload",)),
    ("spec", ("spec",)),
    ("record", ("record",)),
    ("results", ("results",)),
    ("arms", ("arms",)),
    ("running", ("running",)),
    ("distributed", ("distributed",)),
    ("report", ("report",)),
    ("jupyter", ("jupyter",)),
)
#: Floors a floor must not import although they are below it.
FORBIDDEN: Mapping[str, Tuple[str, ...]] = {"report": ("arms", "running", "distributed")}
#: The command line: may import anything, late too; only these may import it.
CLI = ("cli", "__main__")
CLI_IMPORTERS = ("__main__",)
#: The facade: re-exports, and imports the pandas/matplotlib-heavy names on first use.
FACADE = ("__init__",)
#: Old flat module names kept for one release: each re-exports the module that replaced it.
SHIMS = ("arms_grpcio", "arms_h2load", "arms_triple_py", "call_setup", "capacity",
         "dask_tasks", "descriptor_repair", "environment", "harness", "html_report",
         "html_tables", "live", "loadgen", "matrix", "matrix_capacity", "merge", "messages",
         "metrics_formats", "notebook", "notebook_server", "paired", "plots", "progress",
         "recorders", "reflection", "request_data", "request_metadata", "result", "runner",
         "schedules", "schema", "server_cpu", "standard_figures", "target", "template",
         "views", "workers_view")
#: Optional third-party packages a function may import (so that ``import triple_py.bench``
#: works on a wheel installed with the ``bench`` extra only: protobuf and numpy).
OPTIONAL = ("pandas", "matplotlib", "numpy", "scipy", "IPython", "distributed", "dask",
            "grpc", "nbformat", "nbclient", "jupyter_client", "traitlets", "kazoo")


@dataclasses.dataclass(frozen=True)
class Import:
    """One import statement's target inside the package."""

    source: str  # importing module, dotted relative to the package ("" for __init__)
    target: str  # imported module, dotted relative to the package
    line: int
    late: bool  # inside a function


@dataclasses.dataclass
class Graph:
    """Every module of a package and its imports."""

    root: Path
    package: str
    modules: Dict[str, Path]  # dotted name relative to the package ("__init__", "a.b")
    imports: List[Import]
    late_external: List[Tuple[str, str, int]]  # (module, imported top-level name, line)
    lines: int

    def edges(self) -> Set[Tuple[str, str]]:
        """Distinct module -> module arrows (self-imports left out)."""
        return {(i.source, i.target) for i in self.imports if i.source != i.target}


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def _resolve(graph_modules: Mapping[str, Path], package: str, module: str, is_pkg: bool,
             node: ast.AST) -> List[str]:
    """The package modules an import statement names (relative to the package)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
        out = []
        for name in names:
            if name == package or name.startswith(package + "."):
                out.append(_known(graph_modules, name[len(package) + 1:] or "__init__"))
        return [o for o in out if o]
    assert isinstance(node, ast.ImportFrom)
    if node.level:
        here = [] if module == "__init__" else module.split(".")
        base = here if is_pkg else here[:-1]
        up = node.level - 1
        if up > len(base):
            return []  # beyond the package (e.g. ``from .. import _triple``)
        base = base[:len(base) - up] if up else base
        dotted = ".".join(base + (node.module.split(".") if node.module else []))
    else:
        name = node.module or ""
        if not (name == package or name.startswith(package + ".")):
            return []
        dotted = name[len(package) + 1:]
    out = []
    for alias in node.names:
        sub = f"{dotted}.{alias.name}" if dotted else alias.name
        if sub in graph_modules:
            out.append(sub)
        else:
            found = _known(graph_modules, dotted or "__init__")
            if found:
                out.append(found)
    return out


def _known(modules: Mapping[str, Path], dotted: str) -> Optional[str]:
    while dotted:
        if dotted in modules:
            return dotted
        dotted = dotted.rpartition(".")[0]
    return "__init__" if "__init__" in modules else None


def build_graph(root: Path, package: str) -> Graph:
    """Parses every ``.py`` under ``root`` (the package directory named ``package``)."""
    files = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    modules = {_module_name(root, p) or "__init__": p for p in files}
    imports: List[Import] = []
    late_external: List[Tuple[str, str, int]] = []
    lines = 0
    for name, path in modules.items():
        text = path.read_text(encoding="utf-8")
        lines += text.count("\n")
        tree = ast.parse(text, str(path))
        is_pkg = path.name == "__init__.py"
        for node, late in _walk(tree):
            targets = _resolve(modules, package, name, is_pkg, node)
            for target in dict.fromkeys(targets):
                imports.append(Import(name, target, node.lineno, late))
            if late and not targets:
                if isinstance(node, ast.ImportFrom) and node.level:
                    top = "<relative>"  # a module of the enclosing package, not this one
                elif isinstance(node, ast.ImportFrom):
                    top = (node.module or "").split(".")[0]
                else:
                    top = node.names[0].name.split(".")[0]
                late_external.append((name, top, node.lineno))
    return Graph(root, package, modules, imports, late_external, lines)


def _walk(tree: ast.AST) -> Iterable[Tuple[ast.AST, bool]]:
    """Every import node and whether it sits inside a function."""
    def visit(node: ast.AST, late: bool) -> Iterable[Tuple[ast.AST, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, late
            inner = late or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                               ast.Lambda))
            yield from visit(child, inner)
    yield from visit(tree, False)


def circles(graph: Graph) -> List[List[str]]:
    """Strongly connected components of more than one module (Tarjan), largest first."""
    succ: Dict[str, List[str]] = {m: [] for m in graph.modules}
    for a, b in sorted(graph.edges()):
        succ[a].append(b)
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: Set[str] = set()
    out: List[List[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        work = [(v, iter(succ[v]))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(succ[w])))
                    advanced = True
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))

    for v in graph.modules:
        if v not in index:
            strong(v)
    return sorted(out, key=len, reverse=True)


def floor_of(module: str, floors: Sequence[Tuple[str, Tuple[str, ...]]] = FLOORS
             ) -> Optional[int]:
    """The index of ``module``'s floor, or None (CLI, facade, shim, unplaced)."""
    first = module.split(".")[0]
    for i, (_, tops) in enumerate(floors):
        if first in tops:
            return i
    return None


def check(graph: Graph, floors: Sequence[Tuple[str, Tuple[str, ...]]] = FLOORS,
          forbidden: Mapping[str, Tuple[str, ...]] = FORBIDDEN, cli: Sequence[str] = CLI,
          cli_importers: Sequence[str] = CLI_IMPORTERS, facade: Sequence[str] = FACADE,
          shims: Sequence[str] = SHIMS, optional: Sequence[str] = OPTIONAL) -> List[str]:
    """Every broken rule, one line each, naming file:line."""
    problems: List[str] = []
    names = [n for n, _ in floors]

    def where(module: str, line: int) -> str:
        return f"{graph.modules[module].relative_to(graph.root.parent)}:{line}"

    exempt = set(cli) | set(facade) | set(shims)
    for module in graph.modules:
        if module not in exempt and floor_of(module, floors) is None:
            problems.append(f"{where(module, 1)}: {module} is on no floor (nor CLI, facade "
                            f"or shim)")
    for imp in graph.imports:
        if imp.source == imp.target:
            continue
        if imp.target in cli and imp.source not in cli_importers:
            problems.append(f"{where(imp.source, imp.line)}: {imp.source} imports the CLI "
                            f"({imp.target})")
        if imp.late and imp.source not in set(cli) | set(facade):
            problems.append(f"{where(imp.source, imp.line)}: import of {imp.target} inside "
                            f"a function")
        src, dst = floor_of(imp.source, floors), floor_of(imp.target, floors)
        if src is None or dst is None:
            continue
        if dst > src:
            problems.append(f"{where(imp.source, imp.line)}: {imp.source} ({names[src]}) "
                            f"imports {imp.target} ({names[dst]}), a higher floor")
        elif names[dst] in forbidden.get(names[src], ()):
            problems.append(f"{where(imp.source, imp.line)}: {imp.source} ({names[src]}) "
                            f"must not import {imp.target} ({names[dst]})")
    for module, top, line in graph.late_external:
        if module in cli or module in facade or top in optional:
            continue
        problems.append(f"{where(module, line)}: import of {top} inside a function (not an "
                        f"optional dependency)")
    for comp in circles(graph):
        problems.append(f"{where(comp[0], 1)}: import circle of {len(comp)} modules: "
                        f"{', '.join(comp)}")
    return problems


def figures(graph: Graph) -> Dict[str, object]:
    """The measures: circles and their sizes, floors used, arrows, late imports, size."""
    late_pkg = [i for i in graph.imports if i.late]
    return {
        "modules": len(graph.modules),
        "lines": graph.lines,
        "circles": [len(c) for c in circles(graph)],
        "floors": len({floor_of(m) for m in graph.modules} - {None}),
        "arrows": len(graph.edges()),
        "late_package_imports": len(late_pkg),
        "late_triple_py_imports": len(late_pkg) + len(
            [1 for _, top, _ in graph.late_external if top in ("<relative>", "triple_py")]),
        "late_imports_all": len(late_pkg) + len(graph.late_external),
        "late_package_imports_outside_cli_facade": len(
            [i for i in late_pkg if i.source not in CLI + FACADE]),
    }


# -- the tests -----------------------------------------------------------------------------

def test_bench_keeps_its_layers() -> None:
    problems = check(build_graph(BENCH, PACKAGE))
    assert not problems, "\n".join(problems)


def test_every_floor_is_a_package_and_shims_are_small() -> None:
    for _, tops in FLOORS[1:]:
        for top in tops:
            assert (BENCH / top / "__init__.py").is_file(), f"{top}/ is not a package"
    for shim in SHIMS:
        path = BENCH / f"{shim}.py"
        assert path.is_file(), f"shim {shim}.py is missing (old module path)"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        body = [n for n in tree.body if not (isinstance(n, ast.Expr)
                                             and isinstance(n.value, ast.Constant))]
        assert body and all(isinstance(n, ast.ImportFrom) or (
            isinstance(n, ast.Assign) and [getattr(t, "id", "") for t in n.targets]
            == ["__all__"]) or _is_main_block(n) for n in body), \
            f"{shim}.py: a shim only re-exports (docstring, imports, __all__, and for a " \
            f"former ``python -m`` module its ``__main__`` block)"
        assert ast.get_docstring(tree) and "moved" in ast.get_docstring(tree).lower(), \
            f"{shim}.py: its docstring says where the code now lives"


def test_only_the_console_script_imports_the_cli_from_outside() -> None:
    """Outside triple_py/bench only the console-script entry (triple_py/_cli.py) imports
    the bench CLI."""
    found = []
    for path in sorted((ROOT / "triple_py").rglob("*.py")):
        if BENCH in path.parents or path == ROOT / "triple_py" / "_cli.py":
            continue
        for node, _ in _walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [f"{'.' * node.level}{node.module or ''}.{a.name}" for a in node.names]
            if any(n.endswith("bench.cli") or ".bench.cli." in n or n.endswith("bench.cli.main")
                   for n in names):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, found


_IMPORT_ALL_WITHOUT_OPTIONAL = """
import importlib, pathlib, sys
for name in OPTIONAL:
    sys.modules[name] = None  # as if not installed: importing it raises ImportError
import triple_py.bench
loaded = sorted(n for n in ("pandas", "matplotlib", "scipy") if n in sys.modules
                and sys.modules[n] is not None)
assert not loaded, loaded
root = pathlib.Path(triple_py.bench.__file__).parent
for path in sorted(root.rglob("*.py")):
    parts = [p for p in path.relative_to(root).with_suffix("").parts if p != "__init__"]
    if parts[-1:] != ["__main__"]:
        importlib.import_module(".".join(["triple_py.bench"] + parts))
"""


def test_every_module_imports_without_the_optional_dependencies() -> None:
    """A wheel installed with the ``bench`` extra only (protobuf, numpy) imports every
    module: the optional dependencies are imported inside the functions that need them."""
    optional = [name for name in OPTIONAL if name != "numpy"]
    code = f"OPTIONAL = {optional!r}\n" + _IMPORT_ALL_WITHOUT_OPTIONAL
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]


def _is_main_block(node: ast.stmt) -> bool:
    """``if __name__ == "__main__": raise SystemExit(main())``."""
    return isinstance(node, ast.If) and ast.unparse(node.test) == "__name__ == '__main__'" \
        and ast.unparse(node.body[0]) == "raise SystemExit(main())" and len(node.body) == 1


def _plant(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
    for d in ("low", "high"):
        (pkg / d).mkdir(parents=True)
        (pkg / d / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "a.py").write_text("from ..high import b\n")  # upward
    (pkg / "high" / "b.py").write_text("from . import c\n")
    (pkg / "high" / "c.py").write_text("from .b import x\n")  # b <-> c
    (pkg / "high" / "d.py").write_text(
        "def f():\n    from pkg.low import a\n    import json\n    import pandas\n")
    return pkg


def test_checker_reports_planted_violations(tmp_path: Path) -> None:
    pkg = _plant(tmp_path)
    floors = (("low", ("low",)), ("high", ("high",)))
    problems = check(build_graph(pkg, "pkg"), floors=floors, forbidden={}, cli=(),
                     cli_importers=(), facade=("__init__",), shims=(), optional=("pandas",))
    text = "\n".join(problems)
    assert "pkg/low/a.py:1: low.a (low) imports high.b (high), a higher floor" in text, text
    assert "import circle of 2 modules: high.b, high.c" in text, text
    assert "pkg/high/d.py:2: import of low.a inside a function" in text, text
    assert "pkg/high/d.py:3: import of json inside a function" in text, text
    assert "pandas" not in text, text  # an allowed optional dependency
    assert len(problems) == 4, text


def test_nothing_imports_the_cli(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "cli.py").write_text("X = 1\n")
    (pkg / "a.py").write_text("from .cli import X\n")
    problems = check(build_graph(pkg, "pkg"), floors=(("base", ("a",)),), forbidden={},
                     cli=("cli",), cli_importers=(), facade=("__init__",), shims=(),
                     optional=())
    assert any("a imports the CLI (cli)" in p for p in problems), problems


if __name__ == "__main__":
    where = Path(sys.argv[1]) if len(sys.argv) > 1 else BENCH
    g = build_graph(where, PACKAGE)
    for key, value in figures(g).items():
        print(f"{key}: {value}")
    for comp in circles(g):
        print("circle:", ", ".join(comp))
