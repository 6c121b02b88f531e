"""Read a function, class or dataclass of the installed vLLM: its source, trimmed to what a lab reads, its fields,
a ``Literal``'s values (live only: :mod:`.source` records what this returns, and read mode replays it).

:func:`locate` looks a name up by module and qualified name with :mod:`inspect` and says plainly when it is not
there ("这个 vLLM 版本里没有 ...（在 ... 里找过）"), naming the members of that module that use the name instead, or
the other module it moved to. A module that does not import here (a GPU-only kernel module on CPU) is read as a
file with :mod:`ast`. Nothing here imports vLLM at module level.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import inspect
import textwrap
from pathlib import Path
from typing import Iterable

from .source import Located


# ---------------------------------------------------------------------------
# Trimming
# ---------------------------------------------------------------------------

def _docstring_ranges(text: str) -> list[tuple[int, int, str, int]]:
    """(first line, last line, first docstring line, column) of each def/class docstring, 1-based."""
    tree = ast.parse(textwrap.dedent(text))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                summary = first.value.value.strip().splitlines()[0] if first.value.value.strip() else ""
                out.append((first.lineno, first.end_lineno, summary, first.col_offset))
    return out


def strip_docstrings(text: str) -> str:
    """The same source with every docstring cut to its first line (``\"\"\"Summary ...\"\"\"``)."""
    lines = text.splitlines()
    indent = len(text) - len(text.lstrip(" ")) if text.startswith(" ") else 0
    for start, end, summary, col in sorted(_docstring_ranges(text), reverse=True):
        if start == end:
            continue
        pad = " " * (col + indent)
        short = summary.replace('"""', "'''")
        lines[start - 1:end] = [f'{pad}"""{short} ..."""']
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def _class_parts(cls_source: str, members: Iterable[str] | None, fields_only: bool) -> str:
    """The class header plus the chosen members (in the order given), or its body up to the first method."""
    lines = cls_source.splitlines()
    tree = ast.parse(textwrap.dedent(cls_source))
    node = tree.body[0]
    assert isinstance(node, ast.ClassDef)
    if isinstance(node.body[0], ast.Expr):  # the class docstring stays
        doc_lines = lines[node.body[0].lineno - 1:node.body[0].end_lineno]
    else:
        doc_lines = []
    header = lines[:node.body[0].lineno - 1] + doc_lines
    defs = {n.name: n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if fields_only:
        first_def = min((min([n.lineno] + [d.lineno for d in n.decorator_list]) for n in defs.values()),
                        default=len(lines) + 1)
        kept = lines[:first_def - 1]
        while kept and not kept[-1].strip():
            kept.pop()
        return "\n".join(kept + ["    ..."]) + "\n"
    chunks = []
    for name in members or ():
        n = defs.get(name)
        if n is None:
            continue
        start = min([n.lineno] + [d.lineno for d in n.decorator_list])
        chunks.append("\n".join(lines[start - 1:n.end_lineno]))
    return "\n".join(header) + "\n    ...\n\n" + "\n\n    ...\n\n".join(chunks) + "\n"


# ---------------------------------------------------------------------------
# Locating
# ---------------------------------------------------------------------------

def _relative_file(path: str | None) -> str:
    if not path:
        return ""
    parts = Path(path).parts
    for top in ("vllm", "course_utils", "tests", "peft", "transformers"):
        if top in parts:
            i = len(parts) - 1 - parts[::-1].index(top)
            return "/".join(parts[i:])
    return Path(path).name


def _resolve(obj, qualname: str):
    for part in qualname.split("."):
        obj = inspect.getattr_static(obj, part)
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, property):
        obj = obj.fget
    return obj


def _related(mod, qualname: str) -> list[str]:
    """Members of the class (or module) named by ``qualname`` minus its last part that use that last part."""
    owner_name, _, attr = qualname.rpartition(".")
    owner = mod
    try:
        if owner_name:
            owner = _resolve(mod, owner_name)
    except AttributeError:
        owner = mod
    found = []
    for name, member in vars(owner).items():
        fn = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
        fn = fn.fget if isinstance(fn, property) else fn
        if not (inspect.isfunction(fn) or inspect.isclass(fn)):
            continue
        try:
            src = inspect.getsource(fn)
        except (OSError, TypeError):
            continue
        if attr in src:
            found.append(f"{owner_name + '.' if owner_name else ''}{name}")
    return found


def locate(module: str, qualname: str, members: Iterable[str] | None = None, fields_only: bool = False,
           docstrings: str = "short", also_in: Iterable[str] = ()) -> Located:
    """Find ``qualname`` in ``module`` of the installed package and return its source.

    ``members``: for a class, show only these methods (after the class line and
    docstring). ``fields_only``: for a dataclass, show its body up to the first
    method. ``docstrings``: "short" cuts every docstring to its first line,
    "keep" leaves them. ``also_in``: other modules to look in when the name is not in
    ``module`` (then the status is "moved"). A name found nowhere gives status
    "missing" and a note; nothing is raised, so a lab can go on.
    """
    try:
        mod = importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - any import failure is reported, not raised
        return _locate_in_file(module, qualname, members, fields_only, docstrings,
                               f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}")
    where, obj = module, None
    try:
        obj = _resolve(mod, qualname)
    except AttributeError:
        for other in also_in:
            try:
                obj = _resolve(importlib.import_module(other), qualname)
                where = other
                break
            except Exception:  # noqa: BLE001
                continue
    if obj is None:
        related = _related(mod, qualname)
        attr = qualname.rpartition(".")[2]
        tail = (f"；那里用到 `{attr}` 的成员：{', '.join(related)}" if related else "")
        return Located(module, qualname, "missing", related=related,
                       file=_relative_file(getattr(mod, "__file__", "")),
                       note=f"这个 vLLM 版本里没有 {qualname}（在 {module} 里找过）{tail}")
    try:
        src_lines, lineno = inspect.getsourcelines(obj)
    except (OSError, TypeError) as exc:
        return Located(module, qualname, "missing", note=f"这个 vLLM 版本里没有 {qualname} 的源码"
                       f"（在 {module} 里找过；{exc}）")
    src = textwrap.dedent("".join(src_lines))
    if inspect.isclass(obj) and (members or fields_only):
        src = _class_parts(src, members, fields_only)
    if docstrings == "short":
        src = strip_docstrings(src)
    status, note = "found", ""
    if where != module:
        status = "moved"
        note = f"挪了位置（moved）：这个 vLLM 版本的 {module} 里没有 {qualname}，在 {where} 里找到了"
    return Located(module, qualname, status, src, _relative_file(inspect.getsourcefile(obj)), lineno, note,
                   found_in=where)


def _locate_in_file(module, qualname, members, fields_only, docstrings, import_error: str) -> Located:
    """When a module does not import on this machine (a GPU-only kernel module on CPU, say), read its
    file with :mod:`ast` instead of running it."""
    missing = Located(module, qualname, "missing",
                      note=f"这个 vLLM 版本里没有 {qualname}（在 {module} 里找过：这个模块在这里 import 不了"
                           f"（{import_error}），也找不到它的文件）")
    try:
        spec = importlib.util.find_spec(module)
    except Exception:  # noqa: BLE001
        return missing
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return missing
    text = Path(spec.origin).read_text()
    lines = text.splitlines()
    nodes = ast.parse(text).body
    node = None
    for part in qualname.split("."):
        node = next((n for n in nodes if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                     and n.name == part), None)
        if node is None:
            return Located(module, qualname, "missing", file=_relative_file(spec.origin),
                           note=f"这个 vLLM 版本里没有 {qualname}（在 {module} 的文件里找过："
                                f"这个模块在这里 import 不了）")
        nodes = node.body
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
    src = textwrap.dedent("\n".join(lines[start - 1:node.end_lineno]) + "\n")
    if isinstance(node, ast.ClassDef) and (members or fields_only):
        src = _class_parts(src, members, fields_only)
    if docstrings == "short":
        src = strip_docstrings(src)
    return Located(module, qualname, "found", src, _relative_file(spec.origin), start,
                   note=f"没有 import，直接读的文件（这里 import 会失败：{import_error}）",
                   found_in=module)


def dataclass_fields(module: str, qualname: str, names: Iterable[str] | None = None) -> list[dict]:
    """Fields of a dataclass read at run time: name, declared type, default, the value a default
    instance has after its checks (``__post_init__``), and the field's docstring (first sentence)."""
    mod = importlib.import_module(module)
    cls = _resolve(mod, qualname)
    docs = _attribute_docs(cls)
    instance = cls()
    rows = []
    for f in dataclasses.fields(cls):
        if names is not None and f.name not in names:
            continue
        default = f.default
        if default is dataclasses.MISSING:
            default = "（必填）"
        elif hasattr(default, "default") and type(default).__name__ == "FieldInfo":  # pydantic Field(...)
            default = default.default
        after = getattr(instance, f.name, None)
        rows.append({"字段": f.name, "类型": _type_name(f.type), "默认值": _plain(default),
                     "__post_init__ 之后的值": _plain(after), "vLLM 的说明": docs.get(f.name, "")})
    if names is not None:
        order = list(names)
        rows.sort(key=lambda r: order.index(r["字段"]))
    return rows


def literal_values(module: str, name: str) -> list:
    """The values of a ``typing.Literal[...]`` alias (e.g. ``MaxLoRARanks``) in the installed package."""
    import typing  # noqa: PLC0415

    return list(typing.get_args(getattr(importlib.import_module(module), name)))


def _attribute_docs(cls) -> dict[str, str]:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return {}
    body = tree.body[0].body
    docs = {}
    for a, b in zip(body, body[1:]):
        if (isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name) and isinstance(b, ast.Expr)
                and isinstance(b.value, ast.Constant) and isinstance(b.value.value, str)):
            docs[a.target.id] = " ".join(b.value.value.split()).split(". ")[0].rstrip(".")
    return docs


def _type_name(t) -> str:
    s = t if isinstance(t, str) else getattr(t, "__name__", None) or repr(t)
    return str(s).replace("typing.", "")


def _plain(v):
    if isinstance(v, (int, float, str, bool, type(None))):
        return v
    return repr(v)


def signature_of(module: str, qualname: str) -> str:
    """``name(args...)`` of a function in the installed package."""
    obj = _resolve(importlib.import_module(module), qualname)
    text = str(inspect.signature(obj)).replace("torch.Tensor", "Tensor")
    return f"{qualname}{text}"
