"""The course's errors: one base class, one class per meaning, and read mode raising the real classes."""

import ast
import builtins
import importlib
import json
import pickle
from pathlib import Path
from types import SimpleNamespace

import pytest

from course_utils import adapters
from course_utils.errors import CourseError, TrainingError, course_error_classes
from course_utils.paths import PACKAGE, REPO
from course_utils.replay import session
from course_utils.replay.keys import Key
from course_utils.replay.session import ReplayedError, ReplayMiss, Session
from course_utils.server.diagnose import ServerError

LABS = REPO / "labs"
BUILTIN_EXCEPTIONS = {name for name, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)}


def _exception_classes() -> list[tuple[str, str]]:
    """(module, class name) of every class in course_utils and course_tools whose base is an exception class (by
    its name)."""
    found = []
    for path in sorted([*PACKAGE.rglob("*.py"), *(REPO / "course_tools").rglob("*.py")]):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
                if bases & BUILTIN_EXCEPTIONS or any(b.endswith(("Error", "Exception")) for b in bases):
                    found.append((module, node.name))
    return found


def test_every_course_exception_derives_from_course_error():
    classes = _exception_classes()
    assert len(classes) >= 20
    not_course = [f"{m}.{n}" for m, n in classes
                  if not issubclass(getattr(importlib.import_module(m), n), CourseError)]
    # ReplayedError stands for an exception that is NOT the course's (vLLM's, a builtin's) in read mode.
    assert not_course == ["course_utils.replay.session.ReplayedError"]


def test_one_class_per_name_and_the_builtin_bases_kept():
    names = [n for _, n in _exception_classes() if n != "ReplayedError"]
    assert len(names) == len(set(names)), names
    assert set(names) <= set(course_error_classes())
    assert issubclass(adapters.AdapterError, ValueError) and issubclass(ServerError, RuntimeError)
    from course_utils.paths import CheckoutError

    assert issubclass(CheckoutError, FileNotFoundError)


def test_training_error_is_one_class():
    from course_tools.gpu import train_adapters
    from course_utils.newadapter import training

    assert train_adapters.TrainingError is training.TrainingError is TrainingError
    assert not hasattr(train_adapters, "TrainError")


# ---------------------------------------------------------------------------- lesson cells
def _handlers(source: str):
    lines = ["pass" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, ast.ExceptHandler):
            yield node


def _catches_everything(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(t, ast.Name) and t.id in ("Exception", "BaseException") for t in types)


def test_no_lesson_cell_catches_everything():
    notebooks = sorted(LABS.glob("*.ipynb"))
    assert len(notebooks) == 8
    found = []
    for nb in notebooks:
        for i, cell in enumerate(json.loads(nb.read_text())["cells"]):
            if cell["cell_type"] == "code":
                source = "".join(cell["source"])
                found += [f"{nb.name} cell {i} line {h.lineno}" for h in _handlers(source) if _catches_everything(h)]
    assert found == [], "lesson cells catch the course's named classes, not everything"


def test_the_check_sees_each_form():
    for src in ("try:\n    f()\nexcept Exception as e:\n    pass", "try:\n    f()\nexcept:\n    pass",
                "try:\n    f()\nexcept (ValueError, BaseException):\n    pass"):
        assert any(_catches_everything(h) for h in _handlers(src)), src
    assert not any(_catches_everything(h) for h in _handlers("%time x = 1\ntry:\n    f()\nexcept cu.AdapterError:\n"
                                                               "    pass"))


# ---------------------------------------------------------------------------- read mode
@pytest.mark.parametrize("lab, cls", [("04_server_lab", ServerError), ("08_your_adapter", adapters.AdapterError)])
def test_read_mode_raises_the_recorded_course_error_as_its_class(monkeypatch, lab, cls):
    """The committed recordings (tiny): Lab 04's clashing server and Lab 08's rank refusal replay as the class the
    lesson catches."""
    monkeypatch.delenv("COURSE_RECORDINGS_DIR", raising=False)
    replay = Session(lab, "tiny", "replay")
    errors = [c for c in replay.calls if "error" in c]
    assert [c["error"]["type"] for c in errors] == [cls.__name__]
    entry = errors[0]
    replay.enter_cell(None)
    replay.cell = entry["cell"]
    with pytest.raises(cls) as e:
        replay.run(SimpleNamespace(digest=entry["key"], kind=entry["kind"], describe=""), None)
    assert type(e.value) is cls and isinstance(e.value, CourseError) and not isinstance(e.value, ReplayedError)
    assert str(e.value) == session.localize(entry["error"]["message"])


class EngineDeadError(Exception):   # stands for one of vLLM's own exceptions
    pass


def _boom(exc):
    def fn():
        raise exc
    return fn


def test_recording_keeps_the_class_and_replay_raises_it(recordings):
    live = Session("lab", "tiny", "live", recording=True)
    raised = [adapters.AdapterError("秩太大"), KeyError("x"), ValueError("size mismatch"), EngineDeadError("dead"),
              UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")]
    for i, exc in enumerate(raised):
        with pytest.raises(type(exc)):
            live.run(Key("boom", {"i": i}), _boom(exc))
    stored = [c["error"] for c in json.loads(Path(live.path).read_text())["calls"]]
    assert stored[0] == {"type": "AdapterError", "class": "course_utils.adapters:AdapterError", "message": "秩太大"}
    assert stored[1]["class"] == "builtins:KeyError" and stored[3]["class"].endswith("test_errors:EngineDeadError")

    replay = Session("lab", "tiny", "replay")
    got = []
    for i in range(len(raised)):
        with pytest.raises(Exception) as e:
            replay.run(Key("boom", {"i": i}), None)
        got.append(e.value)
    course, key, value, vllm, decode = got
    assert type(course) is adapters.AdapterError and str(course) == "秩太大"
    assert isinstance(key, KeyError) and isinstance(key, ReplayedError) and str(key) == str(raised[1])
    assert isinstance(value, ValueError) and str(value) == "size mismatch"
    # Not the course's: a class of the same name (read mode has no vLLM to import it from).
    assert type(vllm).__name__ == "EngineDeadError" and not isinstance(vllm, EngineDeadError)
    assert isinstance(vllm, ReplayedError) and str(vllm) == "dead"
    assert type(decode).__name__ == "UnicodeDecodeError" and str(decode) == str(raised[4])


def test_an_old_recording_with_only_the_class_name():
    """Recordings made before the class was stored: a course class is found by its name, the rest synthesized."""
    assert type(session.replayed_exception("ServerError", "m")) is ServerError
    assert isinstance(session.replayed_exception("RuntimeError", "m"), RuntimeError)
    assert type(session.replayed_exception("Exception", "m")).__mro__[1] is ReplayedError
    # A class of vLLM's that happens to share a course name stays vLLM's.
    assert not isinstance(session.replayed_exception("ServerError", "m", "vllm.x:ServerError"), CourseError)
    # A course class that moved: found by its name.
    assert type(session.replayed_exception("ServerError", "m", "course_utils.gone:ServerError")) is ServerError


# ---------------------------------------------------------------------------- vLLM's refusal of an adapter
@pytest.mark.parametrize("raised", [ValueError("LoRA rank 64 is greater than max_lora_rank 8."),
                                    Exception("Call to add_lora method failed: LoRA rank 64 is greater than "
                                              "max_lora_rank 8.\nmore")])
def test_adapter_refusal_names_vllms_class_and_message(raised):
    with pytest.raises(adapters.AdapterRefused) as e:
        with adapters.adapter_refusal():
            raise raised
    assert e.value.vllm_class == type(raised).__name__ and e.value.message == str(raised)
    assert e.value.__cause__ is raised and isinstance(e.value, CourseError)
    for again in (adapters.AdapterRefused.replayed(str(e.value)), pickle.loads(pickle.dumps(e.value))):
        assert (again.vllm_class, again.message, str(again)) == (e.value.vllm_class, e.value.message, str(e.value))


def test_adapter_refusal_lets_the_course_errors_through():
    with pytest.raises(ReplayMiss):
        with adapters.adapter_refusal():
            raise ReplayMiss("阅读模式：没有录制")
    with adapters.adapter_refusal():
        pass
