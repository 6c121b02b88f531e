"""The vLLM names the course uses, collected from its code (labs, ``course_utils``, ``course_tools``, shell lines, profiles)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from course_tools.notebooks import code_cells
from course_utils.paths import REPO
from course_tools.vllm_api.names import CLASSES, ENDPOINT, ENGINE_ARGS, ENV, FLAG, LABEL, METRIC, SHELL_COMMAND, TYPES, _strs


@dataclass
class Use:
    kind: str                     # module, name, method, kwarg, field, attr, metric, label, env, flag, endpoint
    name: str
    where: set = field(default_factory=set)


class Collector(ast.NodeVisitor):
    """The vLLM names one module (or a lab's code) uses, added to ``uses``; give ``tree`` to visit it."""

    def __init__(self, uses: dict, where: str, tree: ast.Module | None = None):
        self.uses, self.where = uses, where
        self.aliases: dict[str, str] = {}     # local name -> CLASSES key
        self.types: dict[str, str] = {}       # local name -> attribute chain of the vLLM object it holds
        self.loop_strings: dict[str, str] = {}   # loop variable -> its string (for a in ("x", "y"): a pass each)
        self.engine_params = _engine_params(tree) if tree else {}   # function -> index of its x.llm_engine parameter
        self.consts = _module_strings(tree) if tree else {}          # module constant -> the strings in its value
        self.in_command = self.in_metrics = False   # inside a function that builds a vLLM command / reads a metric

    def add(self, kind: str, name: str):
        self.uses.setdefault((kind, name), Use(kind, name)).where.add(self.where)

    # -- scopes and names -------------------------------------------------------------------------
    def visit_FunctionDef(self, node):
        saved = dict(self.types), dict(self.loop_strings), self.in_command, self.in_metrics
        args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
        for a in args:
            self.types.pop(a.arg, None)
        i = self.engine_params.get(node.name)
        if i is not None and i < len(args):
            self.types[args[i].arg] = CLASSES["LLMEngine"]   # def drive(engine, ...) called as drive(llm.llm_engine)
        self.in_command = self._builds_command(node)
        self.in_metrics = any(METRIC.search(s) for s in self._strings(node))
        self.generic_visit(node)
        self.types, self.loop_strings, self.in_command, self.in_metrics = saved

    visit_AsyncFunctionDef = visit_FunctionDef

    def _strings(self, node) -> list[str]:
        """The strings in ``node``, and in the module constants it names (``CPU_ENTRYPOINT``, a compiled pattern)."""
        return _strs(node) + [s for n in ast.walk(node) if isinstance(n, ast.Name) for s in self.consts.get(n.id, [])]

    def _builds_command(self, func) -> bool:
        """Whether ``func`` builds a vLLM command line: a list in it holds "serve" (``vllm serve``) or a
        ``vllm.entrypoints`` module (``python -m vllm.entrypoints.openai.api_server``)."""
        return any(s == "serve" or s.startswith("vllm.entrypoints")
                   for lst in ast.walk(func) if isinstance(lst, ast.List) for e in lst.elts for s in self._strings(e))

    def _set(self, name: str, chain: str | None):
        self.loop_strings.pop(name, None)
        if chain:
            self.types[name] = chain
        else:
            self.types.pop(name, None)

    def visit_Assign(self, node):
        self.generic_visit(node)
        chain = self._chain(node.value)
        for t in node.targets:
            if isinstance(t, ast.Name):
                self._set(t.id, chain)
            elif isinstance(t, (ast.Tuple, ast.List)):
                self._bind(t, None)                                       # a, b = ...: not followed

    def visit_For(self, node):
        self.visit(node.iter)
        strings = _strs(node.iter) if isinstance(node.iter, (ast.Tuple, ast.List)) else []
        for s in strings if strings and isinstance(node.target, ast.Name) else [None]:   # for a in ("x", "y"): a pass each
            self._bind(node.target, node.iter)
            if s:
                self.loop_strings[node.target.id] = s
            for n in node.body + node.orelse:
                self.visit(n)

    def visit_ListComp(self, node):
        saved = dict(self.types)
        for g in node.generators:
            self.visit(g.iter)
            self._bind(g.target, g.iter)
            for cond in g.ifs:
                self.visit(cond)
        for part in ("elt", "key", "value"):
            if hasattr(node, part):
                self.visit(getattr(node, part))
        self.types = saved

    visit_SetComp = visit_GeneratorExp = visit_DictComp = visit_ListComp

    def _bind(self, target, iterable):
        """A loop variable over ``iterable``: an element of its chain; each part of ``zip(a, b)``, ``enumerate(a)``."""
        if isinstance(target, ast.Name):
            chain = self._chain(iterable)
            self._set(target.id, chain + "[]" if chain else None)
        elif isinstance(target, (ast.Tuple, ast.List)):
            f = iterable.func.id if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) else None
            parts = iterable.args if f == "zip" else [None, *iterable.args[:1]] if f == "enumerate" else []
            for i, t in enumerate(target.elts):
                self._bind(t, parts[i] if i < len(parts) else None)

    # -- attribute chains -------------------------------------------------------------------------
    def _chain(self, node) -> str | None:
        """The attribute chain from a vLLM class to ``node`` (``vllm.outputs:RequestOutput.outputs[]``), or None
        where the code does not show that ``node`` holds a vLLM object."""
        if isinstance(node, ast.Name):
            if node.id in self.types:
                return self.types[node.id]
            return CLASSES["LLM"] if node.id == "llm" or node.id.startswith("llm_") else None
        if isinstance(node, ast.Attribute):
            return self._link(node.value, node.attr)
        if isinstance(node, ast.Subscript):
            inner = self._chain(node.value)
            return inner if not inner or isinstance(node.slice, ast.Slice) else inner + "[]"   # x[a:b] is still a list
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in self.aliases:           # LoRAConfig()
                return CLASSES[self.aliases[f.id]]
            if isinstance(f, ast.Name) and f.id == "getattr" and len(node.args) >= 2:
                a = node.args[1]
                attr = a.value if isinstance(a, ast.Constant) else self.loop_strings.get(getattr(a, "id", None))
                probe = "?" if len(node.args) > 2 else ""
                return self._link(node.args[0], attr + probe) if isinstance(attr, str) else None
            inner = self._chain(f) if isinstance(f, ast.Attribute) else None
            return inner + "()" if inner else None
        return None

    def _link(self, owner, attr: str) -> str | None:
        """The chain of ``owner.attr`` (``attr?`` for a probe); for an owner of unknown class, :data:`TYPES`."""
        chain = self._chain(owner)
        if chain:
            return f"{chain}.{attr}"
        return TYPES.get(attr.rstrip("?"))

    def _record(self, node):
        chain = self._chain(node)
        if chain and re.search(r"[.\[]", chain.split(":", 1)[1]):   # a class with at least one link
            self.add("attr", chain)

    def visit_Subscript(self, node):
        if isinstance(node.ctx, ast.Load):
            self._record(node)
        self.generic_visit(node)

    # -- imports, calls, attributes, strings --------------------------------------------------------
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
        if self.in_metrics and fname == "get" and args and args[0] and LABEL.fullmatch(args[0]):
            self.add("label", args[0])                                    # labels.get("running_lora_adapters")
        for kw in node.keywords:
            if kw.arg == "extra_args":                                    # Server(..., extra_args=["--enforce-eager"])
                for s in _strs(kw.value):
                    if FLAG.match(s):
                        self.add("flag", s)
            if kw.arg == "engine_kwargs" and isinstance(kw.value, ast.Dict):   # Ray Serve's LLMConfig -> EngineArgs
                for k in kw.value.keys:
                    if isinstance(k, ast.Constant):
                        self.add("kwarg", f"{ENGINE_ARGS}({k.value})")
        cls = self._class_of_call(f)
        if cls:
            for kw in node.keywords:
                if kw.arg:
                    self.add("kwarg", f"{cls}({kw.arg})")
        self._record(node)
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
        """The class whose methods the calls on ``node`` are checked against: an ``LLM`` (``llm``/``llm_*``,
        the course's naming), or an ``LLMEngine`` for an LLM's engine (``x.llm_engine``, a name bound to one)."""
        chain = self._chain(node)
        if chain in (CLASSES["LLM"], CLASSES["LLMEngine"]):
            return chain
        if chain and re.search(r"\.llm_engine\??$", chain):
            return CLASSES["LLMEngine"]
        return None

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.value.id == "vllm":
            self.add("name", f"vllm:{node.attr}")
        if ENV.fullmatch(node.attr):                                    # envs.VLLM_CPU_KVCACHE_SPACE
            self.add("env", node.attr)
        if isinstance(node.ctx, ast.Load):
            self._record(node)
        self.generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, str):
            for env in ENV.findall(node.value):
                self.add("env", env)
            for ep in ENDPOINT.findall(node.value):
                self.add("endpoint", ep)
            for m in METRIC.findall(node.value):
                self.add("metric", m)
            if self.in_command and FLAG.match(node.value):
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


def _module_strings(tree) -> dict:
    """{name: the strings in its value} for each module-level constant (``CPU_ENTRYPOINT = "vllm.entrypoints..."``)."""
    return {t.id: _strs(node.value) for node in tree.body if isinstance(node, ast.Assign)
            for t in node.targets if isinstance(t, ast.Name)}


def shell_flags(text: str) -> list[str]:
    """The ``--flags`` of the vLLM command lines in shell text (``vllm serve``, ``python -m vllm.entrypoints...``)."""
    lines = text.replace("\\\n", " ").splitlines()
    return [f for line in lines if not line.lstrip().startswith("#") for m in [SHELL_COMMAND.search(line)] if m
            for f in re.findall(r"(?<!\S)--[a-z][a-z0-9-]+", m.group(1))]


def _lab_code(path: Path) -> tuple[str, str]:
    """A lab's code cells as (Python, shell): IPython's ``!`` lines are shell, other magics are neither."""
    lines = [line for cell in code_cells(path) for line in cell.splitlines()]
    python = "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")))
    return python, "\n".join(line.lstrip()[1:] for line in lines if line.lstrip().startswith("!"))


def drop_prefixes(uses: dict) -> dict:
    """Without each attribute chain that a longer chain, used in the same places, goes on from (its links are
    checked there)."""
    chains = {n: use.where for (k, n), use in uses.items() if k == "attr"}
    for n, where in chains.items():
        if any(len(o) > len(n) and o.startswith(n) and o[len(n)] in ".[(" and where <= w for o, w in chains.items()):
            del uses[("attr", n)]
    return uses


def collect_code(repo: Path = REPO) -> dict:
    """Every vLLM name the labs, ``course_utils/``, ``course_tools/``, ``autodl/*.sh`` and the Makefile use: {(kind, name): Use}."""
    uses: dict = {}
    python = [(str(p.relative_to(repo)), p.read_text(encoding="utf-8")) for p in sorted(
        [*(repo / "course_utils").rglob("*.py"), *(repo / "course_tools").rglob("*.py")]) if "standins" not in p.parts and "vllm_api" not in p.parts]
    labs = [(f"labs/{p.name}", *_lab_code(p)) for p in sorted((repo / "labs").glob("[0-9]*.ipynb"))]
    python += [(where, code) for where, code, _ in labs]
    python += [(f"labs/{p.name}", p.read_text(encoding="utf-8")) for p in sorted((repo / "labs").glob("*.py"))]
    for where, text in python:
        tree = ast.parse(text, filename=where)
        Collector(uses, where, tree).visit(tree)
    shell = [(where, sh) for where, _, sh in labs]
    shell += [(str(p.relative_to(repo)), p.read_text(encoding="utf-8"))
              for p in sorted((repo / "autodl").glob("*.sh")) + [repo / "Makefile"] if p.is_file()]
    for where, text in shell:
        c = Collector(uses, where)
        for f in shell_flags(text):
            c.add("flag", f)
    return drop_prefixes(uses)


def collect(repo: Path = REPO) -> dict:
    """The code's names (:func:`collect_code`) and the profiles' engine settings and environment."""
    uses = collect_code(repo)
    from course_utils import profiles

    for name, make in profiles.PROFILES.items():
        try:
            prof = make()
        except Exception:  # noqa: BLE001 - a profile that cannot be built here names no settings
            continue
        c = Collector(uses, f"profile {name}")
        for k in prof.engine:
            c.add("kwarg", f"{CLASSES['LLM']}({k})")
            c.add("flag", "--" + k.replace("_", "-"))
        for k in prof.env:
            if ENV.fullmatch(k):
                c.add("env", k)
    return uses

