"""Committed labs and their recordings belong together (nbdev-style check).

``make record`` runs each lab live and then stamps its recording with the hash
of the notebook's code cells and of its outputs (``--stamp``). If someone
edits a lab's code without re-recording, or edits outputs by hand, the hashes
differ and the check names the lab and the command that fixes it. (That the
recorded outputs still match what the code produces *now* is checked by
``make test-live``, which reruns every lab.)

    python -m course_utils.replay.stale labs/*.ipynb                    # check (make test-stale)
    python -m course_utils.replay.stale --stamp --profile tiny labs/X.ipynb   # after recording
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

from ..paths import REPO
from .session import recording_path

SHIPPED_PROFILE = "tiny"


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


def stamp(notebook: Path, profile: str) -> Path:
    """After a recording run: stamp the recording with the hashes of the notebook it came from."""
    notebook = Path(notebook)
    path = recording_path(profile, notebook.stem)
    data = json.loads(path.read_text())
    data["provenance"]["code_hash"] = lab_code_hash(notebook)
    data["provenance"]["outputs_hash"] = outputs_hash(notebook)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return path


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
    ap = argparse.ArgumentParser(description="Check (or stamp) that labs and their recordings belong together.")
    ap.add_argument("notebooks", nargs="+", type=Path)
    ap.add_argument("--stamp", action="store_true", help="stamp the recordings after `make record`")
    ap.add_argument("--profile", default=os.environ.get("COURSE_PROFILE", SHIPPED_PROFILE))
    args = ap.parse_args(argv)
    if args.stamp:
        for nb in args.notebooks:
            print(f"stamped {stamp(nb, args.profile).relative_to(REPO)}")
        return 0
    found = [p for nb in args.notebooks for p in problems(nb, args.profile)]
    for p in found:
        print("STALE:", p)
    if not found:
        print(f"{len(args.notebooks)} lab(s): notebooks and recordings are in sync")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
