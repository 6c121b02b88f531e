"""Recordings travel between machines: machine-specific paths become $REPO / $MODELS / $HOME and back."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..paths import REPO, models_dir


def _roots() -> list[tuple[str, str]]:
    return [(str(REPO), "$REPO"), (str(models_dir()), "$MODELS"), (str(Path.home()), "$HOME")]


def portable(obj: Any) -> Any:
    """The same structure with machine-specific paths replaced by $REPO / $MODELS / $HOME."""
    if isinstance(obj, str):
        for root, token in _roots():
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
        for root, token in _roots():
            obj = obj.replace(token, root)
        return obj
    if isinstance(obj, dict):
        return {k: localize(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [localize(v) for v in obj]
    return obj


# A checkout's absolute path in front of its data folders (and Lab 08's adapter), wherever the clone lives.
_REPO_PATH = re.compile(r"(?:/[^/\"\s\\]+)+?(?=/(?:data/(?:tiny|configs)|build/lab08)/)")


def portable_body(body) -> str:
    """An HTTP request body with the checkout's location taken out (adapter paths differ between clones)."""
    if body is None:
        return ""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    return _REPO_PATH.sub("$REPO", body)
