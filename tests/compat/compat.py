"""Build the cached compat venvs and run the Python suite in each (``make test-compat``).

Each pair of the matrix is a pair of files here: ``<pair>.in`` names the stack by hand
(torch, torchvision, transformers, diffusers, timm, peft, accelerate) and ``<pair>.txt`` is
the full pinned set made from it by ``compat.py pin <pair>`` (every package, ``==``). A venv
per pair is built once per machine under ``$LENS_COMPAT_CACHE`` (default
``~/.cache/lens_widget-compat``) from the registry's ordinary wheels and rebuilt only when its
``.txt`` changes (a stamp holds the file's hash). lens_widget itself is not installed there:
the suite imports this checkout (pytest's ``pythonpath = ["."]``).

  python3 tests/compat/compat.py run [PAIR ...]   build what is missing, run tests/python
  python3 tests/compat/compat.py build [PAIR ...] only build
  python3 tests/compat/compat.py pin PAIR         re-resolve <pair>.txt from <pair>.in
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CACHE = Path(os.environ.get("LENS_COMPAT_CACHE", Path.home() / ".cache" / "lens_widget-compat"))
PYTHON = os.environ.get("PYTHON", "python3")
# The registry's torch pulls triton on Linux; an older triton breaks transformers' lazy imports
# on a machine without a GPU, and nothing here needs it, so it is left out of every pin file.
LEFT_OUT = {"triton", "pip", "lens-widget"}
# lens_widget's own extras a compat venv gets, less the notebook hosts (no browser suite runs
# there; playwright stays: the bench smoke tests use it).
EXTRAS = ("test", "compat")
BROWSER_ONLY = {"jupyterlab", "notebook", "marimo", "voila"}


def registry_env() -> dict[str, str]:
    """pip's environment for the package registry's own wheels: the machine's pip config (a
    local CPU torch wheel and local indexes) and a constraints file would otherwise win."""
    env = dict(os.environ)
    for key in ("PIP_FIND_LINKS", "PIP_CONSTRAINT", "PIP_EXTRA_INDEX_URL", "PIP_INDEX_URL"):
        env.pop(key, None)
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def pairs(names: list[str]) -> list[str]:
    known = sorted(p.stem for p in HERE.glob("*.in"))
    for name in names:
        if name not in known:
            sys.exit(f"unknown pair {name!r}; known: {', '.join(known)}")
    return names or known


def venv_of(pair: str) -> Path:
    return CACHE / pair


def pin_hash(pair: str) -> str:
    return hashlib.sha256((HERE / f"{pair}.txt").read_bytes()).hexdigest()


def run(cmd: list[str | Path], **kwargs: object) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, **kwargs)  # type: ignore[arg-type]


def fresh_venv(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    run([PYTHON, "-m", "venv", path])
    return path / "bin" / "python"


def build(pair: str) -> Path:
    """The pair's venv, built from its pin file unless the stamp says it is up to date."""
    if not (HERE / f"{pair}.txt").exists():  # a new pair: resolve it (commit the .txt)
        pin(pair)
    venv = venv_of(pair)
    stamp = venv / ".stamp-pins"
    python = venv / "bin" / "python"
    want = pin_hash(pair)
    if stamp.exists() and stamp.read_text().strip() == want and python.exists():
        return python
    start = time.monotonic()
    python = fresh_venv(venv)
    # The pin file is complete, so no resolver run (and no triton) is needed.
    pip = [python, "-m", "pip", "install", "--no-deps", "-r", HERE / f"{pair}.txt"]
    run(pip, env=registry_env())
    stamp.write_text(want + "\n")
    print(f"[compat] built {pair} in {time.monotonic() - start:.0f} s", flush=True)
    return python


def lens_requirements(skip: set[str]) -> list[str]:
    """lens_widget's dependencies and its test/compat extras, less what the .in file pins."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in EXTRAS:
        wanted += project["optional-dependencies"][extra]
    out = []
    for req in wanted:
        name = req.split(";")[0].split("[")[0]
        for sep in "<>=!~ ":
            name = name.split(sep)[0]
        key = name.lower().replace("_", "-")
        if key not in skip and key not in BROWSER_ONLY:
            out.append(req.split("#")[0].strip())
    return out


def pin(pair: str) -> None:
    """Resolve <pair>.in with lens_widget's requirements; freeze the result as <pair>.txt."""
    source = HERE / f"{pair}.in"
    lines = (line.split("#")[0].strip() for line in source.read_text().splitlines())
    stack = [line for line in lines if line]
    names = {re.split(r"[<>=!~ ]", line)[0].lower().replace("_", "-") for line in stack}
    # Resolved in the pair's own venv, which then stands for the new pin file.
    python = fresh_venv(venv_of(pair))
    env = registry_env()
    run([python, "-m", "pip", "install", *stack, *lens_requirements(names)], env=env)
    run([python, "-m", "pip", "uninstall", "-y", *sorted(LEFT_OUT - {"pip"})], env=env)
    freeze = [python, "-m", "pip", "freeze", "--all"]
    frozen = subprocess.run(freeze, check=True, capture_output=True, text=True, env=env).stdout
    kept = [
        line
        for line in frozen.splitlines()
        if line.split("==")[0].lower().replace("_", "-") not in LEFT_OUT
    ]
    header = (
        f"# Made by `python3 tests/compat/compat.py pin {pair}` from {pair}.in: every package\n"
        "# of the pair's venv (triton left out: not needed on a CPU, and an old one breaks\n"
        "# transformers' lazy imports there). Installed with --no-deps.\n"
    )
    (HERE / f"{pair}.txt").write_text(header + "\n".join(kept) + "\n")
    (venv_of(pair) / ".stamp-pins").write_text(pin_hash(pair) + "\n")
    print(f"[compat] wrote {pair}.txt ({len(kept)} packages)")


def test(pair: str, pytest_args: list[str]) -> int:
    python = build(pair)
    start = time.monotonic()
    # The checkout's lens_widget and model_zoo (pytest's pythonpath), this pair's everything else.
    env = dict(os.environ, LENS_COMPAT_PAIR=pair)
    # A module that fails to import on this pair is reported, and the rest still runs.
    cmd = [str(python), "-m", "pytest", "tests/python", "-q", "-p", "no:cacheprovider", "-rfEs"]
    cmd.append("--continue-on-collection-errors")
    print("+", " ".join(cmd + pytest_args), flush=True)
    code = subprocess.run(cmd + pytest_args, cwd=ROOT, env=env).returncode
    print(f"[compat] {pair}: pytest exit {code} in {time.monotonic() - start:.0f} s", flush=True)
    return code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("run", "build", "pin"))
    parser.add_argument("pairs", nargs="*")
    parser.add_argument("--pytest", default="", help="extra pytest arguments, one string")
    args = parser.parse_args()
    if args.action == "pin":
        for pair in args.pairs:
            pin(pair)
        return 0
    chosen = pairs(args.pairs)
    if args.action == "build":
        for pair in chosen:
            build(pair)
        return 0
    failed = [pair for pair in chosen if test(pair, args.pytest.split())]
    if failed:
        print(f"[compat] failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
