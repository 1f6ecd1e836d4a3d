"""The package's imports point one way, with no cycle: the layers and their rules.

    log/        the records and the ModelLog container: imports only log/
    capture/    the tracer, writes records: imports log/
    graph/      networkx graphs of the records: imports log.records only (never the ModelLog)
    store/      files (save, load, ONNX, pandas): imports log/
    compare/    two logs side by side: imports log/
    widget/     the Jupyter widget and the HTML page: imports any layer above
    lens_widget (the package's __init__): the public names; only users import it

One more rule makes a log's methods work without an upward import at load time: each
method named in `log.model_log.FACADE` imports, inside its own body, the one module that
table names for it (`log.graph()` -> graph.unrolled, `log.save()` -> store.save, ...). The
monitor (`capture.monitor.Monitor`, whose save, to_tensorboard and widget live above it)
has a FACADE table of its own, under the same rule.
No other import from a layer above is allowed anywhere, at module level, under
TYPE_CHECKING or in a function body; these facade imports run only when the method is
called, so they are left out of the cycle check.

Read from the source with ast, so imports inside functions and under TYPE_CHECKING count
too: hiding a cycle in a function body or a type-only import still fails here.
"""

import ast
import importlib
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "lens_widget"


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@dataclass(frozen=True)
class Import:
    target: str  # a lens_widget module
    scope: str  # "" at module level, else the enclosing function, as "Class.method"


def imported_modules(path: Path, name: str, known: set[str]) -> set[Import]:
    """Every lens_widget module `path` (module `name`) imports, at any depth of its tree."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[Import] = set()

    def visit(node: ast.AST, scope: list[str], in_function: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inner = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            for child in ast.iter_child_nodes(node):
                visit(child, [*scope, node.name], in_function or inner)
            return
        targets: list[str] = []
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
        where = ".".join(scope) if in_function else ""
        found.update(
            Import(t, where) for t in targets if t == "lens_widget" or t.startswith("lens_widget.")
        )
        for child in ast.iter_child_nodes(node):
            visit(child, scope, in_function)

    visit(ast.parse(path.read_text(), str(path)), [], False)
    return found


# module -> the class whose FACADE table (in that module) names its upward imports
FACADE_CLASSES = {
    "lens_widget.log.model_log": "ModelLog",
    "lens_widget.capture.monitor.monitor": "Monitor",
}


def facade(root: Path, module: str = "lens_widget.log.model_log") -> dict[str, str]:
    """`module`'s FACADE as written in the source: method -> module it imports."""
    path = root.joinpath(*module.split(".")[1:]).with_suffix(".py")
    if not path.exists():
        return {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "FACADE" for t in node.targets
        ):
            return ast.literal_eval(node.value)
    return {}


def is_facade_import(importer: str, found: Import, tables: dict[str, dict[str, str]]) -> bool:
    """A facade class's method importing, in its body, the one module its FACADE names."""
    owner = FACADE_CLASSES.get(importer)
    if owner is None or not found.scope.startswith(f"{owner}."):
        return False
    return tables[importer].get(found.scope.removeprefix(f"{owner}.")) == found.target


def import_graph(root: Path = PACKAGE) -> nx.DiGraph:
    """Modules and the imports that run when they load (facade imports left out)."""
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    tables = {module: facade(root, module) for module in FACADE_CLASSES}
    graph = nx.DiGraph()
    graph.add_nodes_from(files)
    for name, path in files.items():
        for found in imported_modules(path, name, set(files)):
            if found.target != name and not is_facade_import(name, found, tables):
                graph.add_edge(name, found.target)
    return graph


def layer(module: str) -> str:
    """ "capture", "log", "graph", "widget", or the module's own name for the top files."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "lens_widget"


# The layers each layer may import (its own included); the package facade is apart.
MAY_IMPORT = {
    "log": {"log"},
    "capture": {"capture", "log"},
    "graph": {"graph", "log"},
    "store": {"store", "log"},
    "compare": {"compare", "log"},
    "widget": {"widget", "log", "capture", "graph", "store", "compare"},
}


def forbidden(importer: str, imported: str) -> str | None:
    """Why the import `importer` -> `imported` breaks the layering, or None."""
    src, dst = layer(importer), layer(imported)
    if imported == "lens_widget" and importer != "lens_widget":
        return "only users import the package facade"
    if src in MAY_IMPORT and dst not in MAY_IMPORT[src]:
        return f"{src}/ must not import {dst}/ (it may import {', '.join(sorted(MAY_IMPORT[src]))})"
    if src == "graph" and dst == "log" and imported != "lens_widget.log.records":
        return "the graph reads records only (never the ModelLog)"
    return None


def violations(graph: nx.DiGraph) -> list[str]:
    found = [f"{a} -> {b}: {why}" for a, b in graph.edges if (why := forbidden(a, b)) is not None]
    found += [" -> ".join([*cycle, cycle[0]]) for cycle in nx.simple_cycles(graph)]
    return found


def test_the_package_has_no_import_cycle_and_no_upward_import():
    graph = import_graph()
    assert "lens_widget.log.model_log" in graph and graph.number_of_edges() > 20
    assert violations(graph) == []


@pytest.mark.parametrize(
    ("module", "methods"),
    [
        (
            "lens_widget.log.model_log",
            {"graph", "rolled_graph", "save", "to_onnx", "to_pandas", "to_html"},
        ),
        ("lens_widget.capture.monitor.monitor", {"save", "to_tensorboard", "widget"}),
    ],
)
def test_each_facade_table_is_its_class_methods_and_their_one_import_each(module, methods):
    """Each method of a FACADE table exists on its class and makes exactly its one import."""
    owner = FACADE_CLASSES[module]
    loaded = importlib.import_module(module)
    table = loaded.FACADE
    assert set(table) == methods
    path = PACKAGE.joinpath(*module.split(".")[1:]).with_suffix(".py")
    made = {
        f.scope.removeprefix(f"{owner}."): f.target
        for f in imported_modules(path, module, set(import_graph()))
        if f.scope
    }
    assert made == table
    assert all(hasattr(getattr(loaded, owner), method) for method in table)


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
    "log/model_log.py": (
        "from lens_widget.log.records import OpRecord\n"
        "FACADE = {'graph': 'lens_widget.graph.unrolled'}\n"
        "class ModelLog:\n"
        "    def graph(self):\n"
        "        from lens_widget.graph.unrolled import build\n"
        "        return build(self)\n"
    ),
    "store/__init__.py": "",
    "store/save.py": "from lens_widget.log.records import OpRecord\n",
    "gc_pause.py": "",
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
            "log/ must not import capture/",
        ),
        ("graph/unrolled.py", "from ..log.model_log import ModelLog\n", "never the ModelLog"),
        ("graph/unrolled.py", "import lens_widget.widget.view\n", "graph/ must not"),
        ("capture/trace.py", "from lens_widget.graph import unrolled\n", "capture/ must not"),
        ("widget/view.py", "import lens_widget as lw\n", "package facade"),
        # the log reaching up at module level, or in a function FACADE does not name
        ("log/model_log.py", "from lens_widget.graph import unrolled\n", "log/ must not"),
        ("log/records.py", "def f():\n    from lens_widget.store import save\n", "log/ must"),
        (
            "log/model_log.py",
            "    def save(self):\n        from lens_widget.store import save\n",
            "log/ must not import store/",
        ),
        # a facade method importing another module than the one FACADE names for it
        (
            "log/model_log.py",
            "    def rolled(self):\n        from lens_widget.graph.unrolled import build\n",
            "log/ must not import graph/",
        ),
        ("store/save.py", "from lens_widget.graph.unrolled import build\n", "store/ must not"),
        ("store/save.py", "from lens_widget.capture import trace\n", "store/ must not"),
        ("graph/unrolled.py", "from lens_widget.store import save\n", "graph/ must not"),
        # a method FACADE does not name
        (
            "log/model_log.py",
            "    def to_csv(self):\n        from lens_widget.store import table\n",
            "log/ must not import store/",
        ),
        # a helper beside the package root, imported from below
        ("log/records.py", "from lens_widget.gc_pause import gc_paused\n", "log/ must not"),
    ],
)
def test_the_checker_catches_cycles_and_upward_imports(tmp_path, name, extra, expected):
    files = dict(LAYOUT)
    files[name] += extra
    found = violations(import_graph(write(tmp_path, files)))
    assert any(expected in v for v in found), found
