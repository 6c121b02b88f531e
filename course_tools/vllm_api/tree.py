"""A vLLM source tree (the folder that holds ``vllm/``), read as text and AST, never imported."""

from __future__ import annotations

import ast
import builtins
import re
from functools import lru_cache
from pathlib import Path

from course_tools.vllm_api.names import CLASSES, ENGINE_ARGS, LABEL, LINK, METRIC, SEQUENCES, _strs, _targets


def _top_level(tree):
    """A module's top-level statements, with those under a top-level ``if``/``try`` (``if TYPE_CHECKING:``)."""
    for node in tree.body:
        yield node
        if isinstance(node, (ast.If, ast.Try)):
            yield from node.body


def _unwrap(expr):
    """An annotation without quotes and without None: ``"X"`` -> X, ``X | None`` and ``Optional[X]`` -> X; of a
    union (``A | B``, ``Union[A, B]``) its first member."""
    while True:
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            expr = ast.parse(expr.value, mode="eval").body
        elif isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitOr):
            none = isinstance(expr.left, ast.Constant) and expr.left.value is None
            expr = expr.right if none else expr.left
        elif isinstance(expr, ast.Subscript) and getattr(expr.value, "id", None) in ("Optional", "Union"):
            members = expr.slice.elts if isinstance(expr.slice, ast.Tuple) else [expr.slice]
            expr = next(m for m in members if not (isinstance(m, ast.Constant) and m.value is None))
        else:
            return expr


def _element(expr):
    """The element annotation of a sequence annotation (``list[X]``, ``Sequence[X]``, ``tuple[X, ...]``), else None."""
    expr = _unwrap(expr)
    if isinstance(expr, ast.Subscript):
        name = expr.value.id if isinstance(expr.value, ast.Name) else getattr(expr.value, "attr", None)
        if name in SEQUENCES:
            return expr.slice.elts[0] if isinstance(expr.slice, ast.Tuple) else expr.slice
    return None


def _self_assigns(method, name: str):
    """The statements in ``method`` that set ``self.<name>``."""
    for st in ast.walk(method):
        if any(isinstance(t, ast.Attribute) and t.attr == name and getattr(t.value, "id", None) == "self"
               for t in _targets(st)):
            yield st


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
        for node in _top_level(tree):
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                return module, node
            if any(isinstance(t, ast.Name) and t.id == name for t in _targets(node)):
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

    def _classes(self, module: str, cls: str, depth: int = 0):
        """(module, ClassDef) of class ``cls`` and of its bases (3 levels), nearest first."""
        found = self._top(module, cls)
        if not found or not isinstance(found[1], ast.ClassDef) or depth > 3:
            return
        yield found
        for base in found[1].bases:
            if isinstance(base, ast.Name):
                yield from self._classes(found[0], base.id, depth + 1)

    def class_members(self, module: str, cls: str) -> set[str]:
        """Names defined in a class body (methods, fields, properties), with its bases'."""
        names = set()
        for _, node in self._classes(module, cls):
            for b in node.body:
                if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(b.name)
                elif isinstance(b, ast.AnnAssign) and isinstance(b.target, ast.Name):
                    names.add(b.target.id)
                elif isinstance(b, ast.Assign):
                    names.update(t.id for t in b.targets if isinstance(t, ast.Name))
        return names

    def _definitions(self, module: str, cls: str, name: str):
        """Where class ``cls`` or a base defines ``name``, as (module, node, method): a def or a class-body field
        (method None), then each ``self.<name> = ...`` in a method."""
        for mod, node in self._classes(module, cls):
            for b in node.body:
                if getattr(b, "name", None) == name or any(getattr(t, "id", None) == name for t in _targets(b)):
                    yield mod, b, None
            for f in node.body:
                if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    for st in _self_assigns(f, name):
                        yield mod, st, f

    def params(self, module: str, qualname: str) -> set[str]:
        """Parameter names of a function or method (``Class.method``; a class means its ``__init__``)."""
        parts = qualname.split(".")
        found = self._top(module, parts[0])
        if not found:
            return set()
        mod, node = found
        if isinstance(node, ast.ClassDef):
            name = parts[1] if len(parts) > 1 else "__init__"
            node = next((d[1] for d in self._definitions(mod, parts[0], name)
                         if isinstance(d[1], (ast.FunctionDef, ast.AsyncFunctionDef))), None)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return set()
        a = node.args
        return {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}

    # -- types, for attribute chains --------------------------------------------------------------
    def _annotation(self, mod: str, node, method, called: bool):
        """What a definition holds, as (module, annotation): a field's annotation, a property's (or a called
        method's) return annotation, the annotated parameter that ``self.x = param`` copies, the class that
        ``self.x = Class(...)`` builds or the return annotation of ``self.x = Class.make(...)``; None if none."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            prop = any(ast.unparse(d).endswith("property") for d in node.decorator_list)
            return (mod, node.returns) if (called or prop) and node.returns is not None else None
        if isinstance(node, ast.AnnAssign):
            return mod, node.annotation
        value = node.value
        if method is not None and isinstance(value, ast.Name):
            a = method.args
            ann = next((x.annotation for x in a.posonlyargs + a.args + a.kwonlyargs if x.arg == value.id), None)
            return (mod, ann) if ann is not None else None
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            found = self._top(mod, value.func.id)
            if found and isinstance(found[1], ast.ClassDef):
                return mod, value.func
            if found and isinstance(found[1], ast.FunctionDef) and found[1].returns is not None:
                return found[0], found[1].returns
        f = value.func if isinstance(value, ast.Call) else None
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):          # self.x = Class.make(...)
            owner = self._class_of(mod, f.value)
            if isinstance(owner, tuple):
                for d in self._definitions(owner[0], owner[1].name, f.attr):
                    typed = self._annotation(*d, called=True)
                    if typed:
                        return typed
        return None

    def _class_of(self, mod: str, expr):
        """The vLLM class an annotation names, (module, ClassDef); None for a type from outside vLLM (``str``,
        ``dict[...]``, ``torch.Tensor``, ``typing.Any``); the name itself when it names nothing."""
        expr = _unwrap(expr)
        if isinstance(expr, ast.Subscript):
            expr = expr.value                                 # Generic[T] -> Generic; list[X] -> list
        if not isinstance(expr, ast.Name):
            return None
        found = self._top(mod, expr.id)
        if found and isinstance(found[1], ast.ClassDef):
            return found
        return expr.id if found is None and not hasattr(builtins, expr.id) else None

    def chain_problem(self, name: str) -> str:
        """What stops an attribute chain (``module:Class.a.b()[].c``) from resolving; '' when nothing does."""
        module, tail = name.split(":", 1)
        cls = re.match(r"\w+", tail).group()
        links = LINK.findall(tail[len(cls):])
        here = (module, ast.Name(cls))
        for i, (attr, probe, call) in enumerate(links):
            mod, expr = here
            if not attr:                                      # []: an element
                expr = _element(expr)
                if expr is None:
                    return ""                                 # of something outside vLLM
                here = (mod, expr)
                continue
            owner = self._class_of(mod, expr)
            if isinstance(owner, str):
                return f"{ast.unparse(expr)} names no class in {mod}"
            if owner is None:
                return ""                                     # an object from outside vLLM: nothing more to check
            defs = list(self._definitions(owner[0], owner[1].name, attr))
            if not defs:
                return "" if probe else f"{owner[1].name} has no {attr}"
            typed = next((t for t in (self._annotation(*d, called=bool(call)) for d in defs) if t), None)
            if typed is None:
                last = i == len(links) - 1
                return "" if last or probe else f"no annotation says what {owner[1].name}.{attr} holds"
            here = typed
        return ""

    # -- what vLLM defines beside its classes ------------------------------------------------------
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

    @lru_cache(maxsize=None)
    def env_names(self) -> frozenset:
        """The variables ``vllm/envs.py`` defines: the keys of its ``environment_variables`` dict and its
        module-level names (``if TYPE_CHECKING: VLLM_HOST_IP: str = ""``)."""
        out = set()
        for node in _top_level(self.ast_of("vllm.envs") or ast.Module(body=[])):
            for t in _targets(node):
                if isinstance(t, ast.Name):
                    out.add(t.id)
                    if t.id == "environment_variables" and isinstance(node.value, ast.Dict):
                        out.update(k.value for k in node.value.keys if isinstance(k, ast.Constant))
        return frozenset(out)

    @lru_cache(maxsize=None)
    def metrics(self) -> tuple[frozenset, frozenset]:
        """(metric names, label names) vLLM defines: every ``"vllm:..."`` string in its source, and the strings in
        the ``label...`` keywords and assignments (``labelnames=[...]``, ``self.labelname_max_lora = "max_lora"``)
        of the files that hold one."""
        names, labels = set(), set()
        for p in sorted((self.root / "vllm").rglob("*.py")):
            text = p.read_text(encoding="utf-8", errors="replace")
            if "vllm:" not in text:
                continue
            tree = ast.parse(text)
            found = {s for s in _strs(tree) if METRIC.fullmatch(s)}
            if not found:
                continue
            names |= found
            for node in ast.walk(tree):
                if isinstance(node, ast.keyword) and node.arg and "label" in node.arg:
                    values = [node.value]
                elif any("label" in (getattr(t, "id", None) or getattr(t, "attr", "")) for t in _targets(node)):
                    values = [node.value] if node.value is not None else []
                else:
                    continue
                labels.update(s for v in values for s in _strs(v) if LABEL.fullmatch(s))
        return frozenset(names), frozenset(labels)

    # -- one check per kind -----------------------------------------------------------------------
    def has(self, kind: str, name: str) -> bool:
        if kind == "module":
            return self.module_file(name) is not None
        if kind in ("name", "method", "field"):
            module, qual = name.split(":")
            parts = qual.split(".")
            found = self._top(module, parts[0])
            if found is None:
                return False
            return len(parts) == 1 or parts[1] in self.class_members(found[0], parts[0])
        if kind == "attr":
            return not self.chain_problem(name)
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
        if kind == "metric":
            return name in self.metrics()[0]
        if kind == "label":
            return name in self.metrics()[1]
        if kind == "env":
            return name in self.env_names()
        if kind == "flag":
            field_name = name[2:].replace("-", "_")
            m, c = ENGINE_ARGS.split(":")
            if field_name in self.class_members(m, c) or field_name in self.frontend_fields():
                return True
            return f'"{name}"' in self.text_under("vllm/entrypoints") + self.text_under("vllm/engine")
        if kind == "endpoint":
            return f'"{name}"' in self.text_under("vllm/entrypoints")
        raise ValueError(kind)

