"""Fail when a committed lab and its recording no longer belong together (nbdev-style check).

``make record`` stamps each recording with the hash of the notebook's code
cells and of its outputs. If someone edits a lab's code without re-recording,
or edits outputs by hand, the hashes differ and this check names the lab and
the command that fixes it. (That the recorded outputs still match what the
code produces *now* is checked by ``make test-live``, which reruns every lab.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..paths import REPO
from .session import lab_code_hash, outputs_hash, recording_path

SHIPPED_PROFILE = "tiny"


def problems(notebook: Path, profile: str = SHIPPED_PROFILE) -> list[str]:
    notebook = Path(notebook)
    rec = recording_path(profile, notebook.stem)
    fix = f"run `make record` (COURSE_PROFILE={profile}) and commit {notebook} with {rec.relative_to(REPO)}"
    if not rec.is_file():
        return [f"{notebook}: no recording {rec.relative_to(REPO)}; {fix}"]
    prov = json.loads(rec.read_text()).get("provenance", {})
    out = []
    if prov.get("code_hash") != lab_code_hash(notebook):
        out.append(f"{notebook}: its code cells changed since it was recorded; {fix}")
    if prov.get("outputs_hash") != outputs_hash(notebook):
        out.append(f"{notebook}: its outputs are not those of the recording run; {fix}")
    return out


def main(argv=None):
    notebooks = [Path(a) for a in (argv if argv is not None else sys.argv[1:])]
    found = [p for nb in notebooks for p in problems(nb)]
    for p in found:
        print("STALE:", p)
    if not found:
        print(f"{len(notebooks)} lab(s): notebooks and recordings are in sync")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
