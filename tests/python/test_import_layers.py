"""The package's imports point one way: capture -> log -> graph -> widget, with no cycle.

Read from the source with ast, so imports inside functions and under TYPE_CHECKING count
too: hiding a cycle in a function body or a type-only import still fails here.
"""

import ast
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "lens_widget"


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, name: str, known: set[str]) -> set[str]:
    """Every lens_widget module `path` (module `name`) imports, at any depth of its tree."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from . import x, from ..log import y
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from pkg import sub` imports the submodule when there is one
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        else:
            continue
        found.update(t for t in targets if t == "lens_widget" or t.startswith("lens_widget."))
    return found


def import_graph(root: Path = PACKAGE) -> nx.DiGraph:
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(files)
    for name, path in files.items():
        for target in imported_modules(path, name, set(files)):
            if target != name:
                graph.add_edge(name, target)
    return graph


def layer(module: str) -> str:
    """ "capture", "log", "graph", "widget", or the module's own name for the top files."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "lens_widget"


# (importer, imported) pairs that break the layering, as a rule each edge is checked against.
def forbidden(importer: str, imported: str) -> str | None:
    src, dst = layer(importer), layer(imported)
    if imported == "lens_widget" and importer != "lens_widget":
        return "only users import the package facade"
    if src == "log":
        if dst in ("capture", "widget"):
            return "the log must not import capture or widget"
        if dst == "graph" and importer != "lens_widget.log.model_log":
            return "only log.model_log may import the graph builders"
        if dst == "compare":
            return "the log must not import compare (compare reads logs)"
        if dst == "store" and importer != "lens_widget.log.model_log":
            return "only log.model_log may import the store's writers"
    if src in ("store", "compare") and dst in ("capture", "widget"):
        return f"{src} reads logs only: it must not import capture or widget"
    if src == "graph":
        if dst in ("capture", "widget"):
            return "the graph must not import capture or widget"
        if dst == "log" and imported != "lens_widget.log.records":
            return "the graph reads records only (never the ModelLog)"
    if src == "capture" and dst in ("graph", "widget"):
        return "capture must not import graph or widget"
    return None


def violations(graph: nx.DiGraph) -> list[str]:
    found = [f"{a} -> {b}: {why}" for a, b in graph.edges if (why := forbidden(a, b)) is not None]
    found += [" -> ".join([*cycle, cycle[0]]) for cycle in nx.simple_cycles(graph)]
    return found


def test_the_package_has_no_import_cycle_and_no_upward_import():
    graph = import_graph()
    assert "lens_widget.log.model_log" in graph and graph.number_of_edges() > 20
    assert violations(graph) == []


def test_no_module_of_the_package_imports_ctypes():
    """Lifetimes (a partial log and its exception) rest on weak references, never on reads of
    object memory at raw addresses (issue 25, item 5). torch imports ctypes itself, so the
    package's sources are read: an import, or a module name given as a string."""
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if (
            isinstance(node, ast.Import)
            and any(a.name.split(".")[0] == "ctypes" for a in node.names)
        )
        or (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "ctypes")
        or (isinstance(node, ast.Constant) and node.value == "ctypes")
    ]
    assert len(list(PACKAGE.rglob("*.py"))) > 50 and found == []


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "lens_widget" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "lens_widget"


LAYOUT = {
    "__init__.py": "",
    "capture/__init__.py": "",
    "capture/trace.py": "from lens_widget.log.model_log import ModelLog\n",
    "log/__init__.py": "",
    "log/records.py": "",
    "log/model_log.py": "from lens_widget.graph.unrolled import build\n",
    "graph/__init__.py": "",
    "graph/unrolled.py": "from lens_widget.log.records import OpRecord\n",
    "widget/__init__.py": "",
    "widget/view.py": "from lens_widget.log import model_log\n",
}


def test_the_checker_accepts_the_intended_layout(tmp_path):
    assert violations(import_graph(write(tmp_path, LAYOUT))) == []


@pytest.mark.parametrize(
    ("name", "extra", "expected"),
    [
        # a cycle hidden in a function body
        ("log/records.py", "def f():\n    from lens_widget.log import model_log\n", "->"),
        # an upward import under TYPE_CHECKING
        (
            "log/records.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from lens_widget.capture.trace import x\n",
            "the log must not import capture",
        ),
        ("graph/unrolled.py", "from ..log.model_log import ModelLog\n", "never the ModelLog"),
        ("graph/unrolled.py", "import lens_widget.widget.view\n", "the graph must not"),
        ("capture/trace.py", "from lens_widget.graph import unrolled\n", "capture must not"),
        ("widget/view.py", "import lens_widget as lw\n", "package facade"),
    ],
)
def test_the_checker_catches_cycles_and_upward_imports(tmp_path, name, extra, expected):
    files = dict(LAYOUT)
    files[name] += extra
    found = violations(import_graph(write(tmp_path, files)))
    assert any(expected in v for v in found), found
