"""Recording a call: the one way a live result is kept for read mode, and found again there.

:func:`recorded` is the decorator every recorded call goes through: the vLLM calls (live in
:mod:`.vllm_calls`, read mode's stand-ins in :mod:`.standin`), the server's start, a curl command,
a load test, a source lookup, a scheduler trace, a timing, a measurement, and any lab helper marked
:func:`replayable`. It is the only caller of :meth:`course_utils.replay.session.Session.run`.

Outside a lab (no session open) a recorded function just runs. Inside one, live, it runs and, under
``make record``, its result is written to the recording; in read mode its body never runs and the
recorded result comes back (or the recorded exception is raised again).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
from pathlib import Path
from typing import Any, Callable

from . import keys
from .keys import Key
from .session import active


def recorded(key: Callable[..., Key], *, encode: Callable[[Any], Any] | None = None,
             decode: Callable[[Any], Any] | None = None, note: Callable[..., dict] | None = None):
    """Decorate ``fn`` so that a lab records its calls and read mode replays them.

    ``key(*args, **kwargs)`` names a call (built with :mod:`course_utils.replay.keys`); ``encode`` turns
    the live result into JSON-able data and ``decode`` turns that back into what the caller expects;
    ``note(*args, **kwargs)`` adds fields to the recorded entry that are not part of the key.
    """
    def decorate(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            session = active()
            if session is None:
                return fn(*args, **kwargs)
            return session.run(key(*args, **kwargs), lambda: fn(*args, **kwargs),
                               encode=encode or _same, decode=decode or _same,
                               note=(lambda: note(*args, **kwargs)) if note else None)

        call.__course_recorded__ = True
        return call

    return decorate


def _same(x):
    return x


def read_mode_only(what: str):
    """The body of a stand-in: read mode answers before it runs, so reaching it means no lab is open."""
    def body(*args, **kwargs):
        raise RuntimeError(f"{what} answers from a lab's recording: call course_utils.start('<lab name>') first")
    return body


# --- lab helpers named by their arguments ------------------------------------------------------------

def _source_digest(fn) -> str:
    try:
        text = inspect.getsource(fn)
    except (OSError, TypeError):     # defined where no source is kept (e.g. a plain `python -c`)
        text = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', repr(fn))}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _key_value(value):
    """What names an argument in a replay key: a function by its source (so an edited one has no recorded
    answer), a course profile by its name and adapter shelf, a path as text."""
    if callable(value):
        return {"source": _source_digest(value)}
    if hasattr(value, "adapters") and hasattr(value, "base_model"):      # a course profile
        return {"profile": value.name, "adapters": sorted(value.adapters)}
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return [_key_value(v) for v in value]
    return value


def replayable(fn):
    """Decorate a lab function whose result read mode should show (a load test, a numeric check).

    Live, the function runs (and its JSON-able result is recorded with ``make record``); in read
    mode the call returns what the same call returned when the lab was recorded. The call is named
    by its arguments: plain values, a function (by its source), a profile (by name and shelf) or a
    path. Outside a lab the function just runs.
    """
    def key(*args, **kwargs) -> Key:
        named = [_key_value(a) for a in args], {k: _key_value(v) for k, v in kwargs.items()}
        try:
            json.dumps(named)
        except TypeError as e:
            raise TypeError(f"{fn.__name__}: a replayable function takes plain arguments (numbers, strings, "
                            f"lists, dicts, functions, profiles, paths) that name the call; pass other objects "
                            f"through the function's closure instead ({e}).") from None
        return keys.call(fn.__name__, *named)

    return recorded(key)(fn)


@recorded(lambda name, llm, fn: keys.measure(getattr(llm, "_course_key", None), name))
def measure(name: str, llm, fn):
    """``fn(llm)`` on a live engine (a memory walk, a block count); in read mode, what it returned when recorded."""
    return fn(llm)


def as_recorded(name: str, value):
    """A lab's editable input (the examples a student types, a knob): the value later cells use.

    Live, ``value`` is used (and kept in the recording under ``name`` with ``make record``). In read mode an
    edited value has no recorded run behind it: the recorded one is returned instead, and the cell says that
    the change was not recorded and how to run it live, so that the cells after it still show the recorded run.
    """
    session = active()
    if session is None:
        return value
    kept = session.fact(f"input:{name}", lambda: value)
    if session.mode != "replay" or _plain(kept) == _plain(value):
        return value
    print(f"阅读模式：{name} 改过了，改过的输入没有录下的运行（not recorded）；下面各格仍显示录制时的 {name}。"
          f"想用自己的 {name} 真的运行，就在能现场运行的环境里（`make setup` 之后；CPU 上用 tiny 模型）"
          f"设 COURSE_MODE=live 再运行这一课。")
    return kept


def _plain(value):
    """``value`` as JSON would keep it (tuples become lists), for comparing with a recorded one."""
    return json.loads(json.dumps(value))
