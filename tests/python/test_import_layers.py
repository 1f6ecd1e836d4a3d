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

Core and features. In each layer the core is the modules at the top of its folder; each
optional feature is a subfolder, with the same name in every layer where it has files
(capture/offload/, widget/monitor/, store/monitor/, log/monitor/...):

    a feature's folder may import the core of its layer and the layers below, and its own
    feature's folders in the layers below (widget/monitor/ -> log/monitor/);
    the core imports no feature: features attach through `Feature` hooks (capture), the
    request table and the facade tables. The few core modules that compose features (the
    session building the recorder with the features a trace's options ask for, the widget
    class made of its feature mixins, the protocol re-exporting each feature's shapes) are
    named in SEAMS, each with the features it composes and why;
    features do not import each other, except a pair FEATURE_PAIRS names with its reason.

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


def feature_of(path: Path, root: Path) -> str | None:
    """The feature a file belongs to (the subfolder of its layer it is in), or None: the core."""
    parts = path.relative_to(root).parts  # ("capture", "offload", "offload.py")
    return parts[1] if len(parts) >= 3 else None


def import_graph(root: Path = PACKAGE) -> nx.DiGraph:
    """Modules and the imports that run when they load (facade imports left out)."""
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    tables = {module: facade(root, module) for module in FACADE_CLASSES}
    graph = nx.DiGraph()
    graph.add_nodes_from(
        (name, {"feature": feature_of(path, root)}) for name, path in files.items()
    )
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


# Core modules that compose features: module -> {feature: why it imports that feature}.
SEAMS: dict[str, dict[str, str]] = {
    "lens_widget.capture.session": dict.fromkeys(
        ("backward", "dispatch", "distributed", "interventions", "offload", "timing"),
        "the composition root: builds the Recorder with the Feature each option asks for",
    ),
    **dict.fromkeys(
        ("lens_widget.capture.trace", "lens_widget.capture.tracing"),
        dict.fromkeys(
            ("distributed", "interventions", "offload"),
            "the options a trace takes (a DDP wrapper, intervene=, offload=), checked up front",
        ),
    ),
    "lens_widget.widget.lens_widget": {
        "monitor": "LensWidget is made of its feature mixins: from_monitor",
        "ranks": "LensWidget is made of its feature mixins: from_logs",
        "offload": "offload= is checked when the widget is made, before it traces",
    },
    **dict.fromkeys(
        ("lens_widget.widget.ablation", "lens_widget.widget.model_reruns"),
        {"interventions": "an ablation is a re-run with an intervention"},
    ),
    "lens_widget.widget.protocol": dict.fromkeys(
        ("monitor", "ranks"), "the contract table: protocol.ts's shapes, each feature's re-exported"
    ),
    "lens_widget.widget.graph_protocol": {"ranks": "a distributed log's node facts in the payload"},
    "lens_widget.widget.request_protocol": {
        "monitor": "the monitor's replies in the request table"
    },
}

# Features that import each other: (importer's feature, imported feature) -> why. None today.
FEATURE_PAIRS: dict[tuple[str, str], str] = {}


def feature_rule(graph: nx.DiGraph, importer: str, imported: str) -> str | None:
    """Why the import breaks the core/feature rule, or None."""
    src, dst = graph.nodes[importer].get("feature"), graph.nodes[imported].get("feature")
    if dst is None or src == dst or importer == "lens_widget":  # the package names them all
        return None
    if src is None:
        if dst in SEAMS.get(importer, {}):
            return None
        return f"the core imports no feature ({dst}/); name it in SEAMS if it composes it"
    if (src, dst) in FEATURE_PAIRS:
        return None
    return f"feature {src}/ imports feature {dst}/; FEATURE_PAIRS names no such pair"


def violations(graph: nx.DiGraph) -> list[str]:
    found = [f"{a} -> {b}: {why}" for a, b in graph.edges if (why := forbidden(a, b)) is not None]
    found += [
        f"{a} -> {b}: {why}"
        for a, b in graph.edges
        if (why := feature_rule(graph, a, b)) is not None
    ]
    found += [" -> ".join([*cycle, cycle[0]]) for cycle in nx.simple_cycles(graph)]
    return found


def test_the_package_has_no_import_cycle_and_no_upward_import():
    graph = import_graph()
    assert "lens_widget.log.model_log" in graph and graph.number_of_edges() > 20
    assert violations(graph) == []


def test_each_layer_has_its_features_in_folders_and_the_seams_are_real():
    """The feature folders the layout promises exist, and every seam or pair named here is an
    import the code makes: a stale exception would widen the rule unseen."""
    graph = import_graph()
    features = {(m.split(".")[1], f) for m, f in graph.nodes(data="feature") if f}
    assert {
        ("capture", name)
        for name in ("backward", "offload", "dispatch", "distributed", "monitor", "interventions")
    } | {("widget", "monitor"), ("widget", "ranks"), ("log", "monitor"), ("store", "monitor")} <= (
        features
    )
    made = {(a, graph.nodes[b]["feature"]) for a, b in graph.edges}
    assert {(m, f) for m, table in SEAMS.items() for f in table} <= made
    made_pairs = {(graph.nodes[a]["feature"], graph.nodes[b]["feature"]) for a, b in graph.edges}
    assert set(FEATURE_PAIRS) <= made_pairs


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
    # the core and its features: a seam SEAMS names, features on the core and on their own
    # feature's folders below
    "capture/tensor_book.py": "",
    "capture/session.py": "from lens_widget.capture.offload.offload import Offload\n",
    "capture/offload/__init__.py": "",
    "capture/offload/offload.py": "from lens_widget.capture.tensor_book import TensorBook\n",
    "capture/monitor/__init__.py": "",
    "capture/monitor/monitor.py": "from lens_widget.capture.trace import trace\n",
    "log/monitor/__init__.py": "",
    "log/monitor/history.py": "from lens_widget.log.model_log import ModelLog\n",
    "widget/monitor/__init__.py": "",
    "widget/monitor/view.py": (
        "from lens_widget.log.monitor.history import StepHistory\n"
        "from lens_widget.capture.monitor.monitor import Monitor\n"
        "from lens_widget.widget.view import x\n"
    ),
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
        # the core reaching out to a feature: at module level, in a function, across layers
        (
            "capture/tensor_book.py",
            "from lens_widget.capture.offload.offload import Offload\n",
            "the core imports no feature (offload/)",
        ),
        (
            "capture/tensor_book.py",
            "def f():\n    from lens_widget.capture.monitor import monitor\n",
            "the core imports no feature (monitor/)",
        ),
        ("widget/view.py", "import lens_widget.capture.offload.offload\n", "the core imports no"),
        # a seam names the features its module composes, no other
        (
            "capture/session.py",
            "from lens_widget.capture.monitor.monitor import Monitor\n",
            "the core imports no feature (monitor/)",
        ),
        # features importing each other, in one layer or across layers, unnamed
        (
            "capture/offload/offload.py",
            "from lens_widget.capture.monitor.monitor import Monitor\n",
            "feature offload/ imports feature monitor/",
        ),
        (
            "widget/monitor/view.py",
            "from lens_widget.capture.offload import offload\n",
            "feature monitor/ imports feature offload/",
        ),
    ],
)
def test_the_checker_catches_cycles_and_upward_imports(tmp_path, name, extra, expected):
    files = dict(LAYOUT)
    files[name] += extra
    found = violations(import_graph(write(tmp_path, files)))
    assert any(expected in v for v in found), found


def test_a_pair_of_features_the_test_names_may_import_each_other(tmp_path, monkeypatch):
    files = dict(LAYOUT)
    files["capture/offload/offload.py"] += "from lens_widget.capture.monitor import monitor\n"
    root = write(tmp_path, files)
    assert any("FEATURE_PAIRS names no such pair" in v for v in violations(import_graph(root)))
    monkeypatch.setitem(FEATURE_PAIRS, ("offload", "monitor"), "a reason")
    assert violations(import_graph(root)) == []
