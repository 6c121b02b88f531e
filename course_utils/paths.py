"""Where things are: the checkout and its data, and the GPU instance's models folder.

Every other module takes its paths from here.

- ``REPO``: the course checkout (``labs/``, ``data/``). With an editable
  install (``pip install -e .``, what ``make setup`` does) it is the folder
  above this package. With a plain ``pip install .`` the package lives in
  site-packages, away from ``data/``: then ``COURSE_REPO`` names the checkout,
  or the checkout is found above the current folder (a notebook's kernel runs
  in ``labs/``). :func:`require_checkout` says what to do when neither works.
- ``models_dir()``: where the GPU profiles' models and adapters live, and
  ``paths.json`` in it, written by the download and training steps.
- ``model_name(folder)``: a model folder's name as clients see it, also for a copy in a hub cache.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from .errors import CourseError

PACKAGE = Path(__file__).resolve().parent


def _is_checkout(folder: Path) -> bool:
    return (folder / "data" / "tiny").is_dir() and (folder / "data" / "configs").is_dir()


def find_repo() -> Path:
    """The course checkout (see the module docstring); the package's parent folder if none is found."""
    if _is_checkout(PACKAGE.parent):
        return PACKAGE.parent
    env = os.environ.get("COURSE_REPO")
    if env:
        return Path(env).resolve()
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if _is_checkout(folder):
            return folder
    return PACKAGE.parent


REPO = find_repo()
DATA = REPO / "data"
TINY = DATA / "tiny"
CONFIGS = DATA / "configs"
RECORDINGS = DATA / "recordings"
BUILD = REPO / "build"          # what the labs and targets write (ignored by git)


def short_path(path) -> str:
    """A path as the page shows it: relative to the checkout, so the same wherever the course is checked out. A path
    from another checkout (a recording made elsewhere) is cut at the course's own folders (``data/tiny``, ``build/
    lab08``); anything else is shown as it is. The one way the course shows a path."""
    p = str(path).replace(str(REPO) + "/", "")     # also inside an argument: ``sql=<checkout>/data/tiny/...``
    m = re.search(r"(?:^|/)((?:data/tiny|build/lab08)/.*)$", p)
    return m.group(1) if m else p


class CheckoutError(CourseError, FileNotFoundError):
    """The course's data folder cannot be found; the message says how to point to it."""


def require_checkout() -> Path:
    """``REPO``, or CheckoutError saying how to point the package at the checkout."""
    if _is_checkout(REPO):
        return REPO
    raise CheckoutError(
        f"course_utils is installed at {PACKAGE}, away from the course checkout, and no checkout was found "
        f"above {Path.cwd()}. Run from inside the checkout, set COURSE_REPO=<path of the checkout>, or "
        f"install it editable: `pip install -e <checkout>`.")


def models_dir() -> Path:
    """Where the GPU profiles' models and adapters live (the AutoDL data disk when present)."""
    env = os.environ.get("COURSE_MODELS_DIR")
    if env:
        return Path(env)
    if Path("/root/autodl-tmp").is_dir():
        return Path("/root/autodl-tmp/course")
    return Path.home() / ".cache" / "multi-lora-course"


def model_name(folder) -> str:
    """The name of the model in ``folder`` as clients see it (the served model name, the ``/v1/models`` id).

    The folder's own name, except where a hub cache names the folder after a revision or escapes the name:
    ``…/models--Qwen--Qwen2.5-7B-Instruct/snapshots/<rev>`` (Hugging Face) and
    ``…/models/Qwen--Qwen2.5-7B-Instruct/snapshots/<rev>`` (ModelScope >= 1.38) give ``Qwen2.5-7B-Instruct``;
    ModelScope's older ``…/Qwen/Qwen2___5-7B-Instruct`` (a dot stored as ``___``) gives the same name back.
    """
    p = Path(folder)
    name = p.name
    if p.parent.name == "snapshots" and "--" in p.parent.parent.name:
        name = p.parent.parent.name.removeprefix("models--").split("--", 1)[1]
    return name.replace("___", ".")


class PathsFileError(CourseError, ValueError):
    """``paths.json`` exists but cannot be read; the message says how to rebuild it."""


def paths_file(folder: Path | None = None) -> Path:
    return Path(folder or models_dir()) / "paths.json"


def read_paths_file(folder: Path | None = None) -> dict:
    """The resolved model and adapter paths (``{}`` before anything was downloaded).

    A file that exists but is not a JSON object raises PathsFileError: a
    broken file must not silently send the GPU profiles to default folders.
    """
    f = paths_file(folder)
    if not f.is_file():
        return {}
    try:
        data = json.loads(f.read_text())
    except ValueError as e:
        raise PathsFileError(
            f"{f} is not valid JSON ({e}). Delete it and rebuild it with "
            f"`python -m course_tools.gpu.download --profile qwen7b --verify-only` "
            f"(it records the complete models it finds).") from None
    if not isinstance(data, dict):
        raise PathsFileError(f"{f} should hold a JSON object, not {type(data).__name__}; delete it and rebuild it "
                             f"with `python -m course_tools.gpu.download --profile qwen7b --verify-only`.")
    return data
