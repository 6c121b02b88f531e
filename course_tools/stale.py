"""Committed labs and their recordings belong together (nbdev-style check).

``make record`` runs each lab live and then stamps its recording with the hash
of the notebook's code cells and of its outputs (``--stamp``). If someone
edits a lab's code without re-recording, or edits outputs by hand, the hashes
differ and the check names the lab and the command that fixes it. (That the
recorded outputs still match what the code produces *now* is checked by
``make test-live``, which reruns every lab.)

    python -m course_tools.stale labs/*.ipynb                    # check (make test-stale)
    python -m course_tools.stale --stamp --profile tiny labs/X.ipynb   # after recording

Profiles other than the shipped one (a 4090 recording: ``make record PROFILE=qwen7b``) are recorded
beside the labs, into ``labs/recorded/<profile>/``. ``--other-profiles`` checks those too: a recorded
copy must carry its own recording's outputs (else it fails, like a lab). One whose code is no longer
the lab's is *out of date*: reported plainly, read mode skips it, and it does not fail the check
(re-recording needs that profile's hardware); ``--strict`` makes it fail.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

from nbformat.v4.rwbase import split_lines

from course_tools.notebooks import code_cells, read
from course_utils.paths import RECORDINGS, REPO, short_path
from course_utils.replay.session import recording_path

SHIPPED_PROFILE = "tiny"
RECORDED = REPO / "labs" / "recorded"     # labs/recorded/<profile>/<lab>.ipynb


def lab_code_hash(notebook: Path) -> str:
    """Hash of a notebook's code cells: what the recording was made from."""
    return hashlib.sha256(json.dumps(code_cells(notebook)).encode()).hexdigest()[:16]


def outputs_hash(notebook: Path) -> str:
    """Hash of a notebook's outputs as the file stores them (multi-line text as lists of lines, which the
    recordings' stamps were made from), without execution counts and widget ids."""
    outs = []
    for c in split_lines(read(notebook)).cells:
        if c.cell_type != "code":
            continue
        for o in c.outputs:
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
    fix = f"run `make record PROFILE={profile}` and commit {short_path(notebook)} with {short_path(rec)}"
    if not rec.is_file():
        return [f"{notebook}: no recording {short_path(rec)}; {fix}"]
    prov = json.loads(rec.read_text()).get("provenance", {})
    out = []
    if prov.get("code_hash") != lab_code_hash(notebook):
        out.append(f"{notebook}: its code cells changed since it was recorded; {fix}")
    if prov.get("outputs_hash") != outputs_hash(notebook):
        out.append(f"{notebook}: its outputs are not those of the recording run; {fix}")
    return out


def other_profiles() -> list[str]:
    """Profiles other than the shipped one that have lab recordings (stamped by ``make record``)."""
    out = []
    for folder in sorted(p for p in RECORDINGS.iterdir() if p.is_dir()) if RECORDINGS.is_dir() else []:
        if folder.name == SHIPPED_PROFILE:
            continue
        stamped = [f for f in folder.glob("*.json") if "code_hash" in json.loads(f.read_text()).get("provenance", {})]
        if stamped:
            out.append(folder.name)
    return out


def recorded_copies(profile: str, labs_dir: Path | None = None) -> list[tuple[Path, Path, str]]:
    """(recorded copy, lab, state) for each stamped recording of ``profile``; state is "current",
    "out of date" (the lab's code changed since), "missing" (no recorded copy) or "no lab"."""
    labs_dir, out = labs_dir or REPO / "labs", []
    for rec in sorted(recording_path(profile, "x").parent.glob("*.json")):
        if "code_hash" not in json.loads(rec.read_text()).get("provenance", {}):
            continue
        copy, lab = RECORDED / profile / f"{rec.stem}.ipynb", labs_dir / f"{rec.stem}.ipynb"
        state = ("no lab" if not lab.is_file() else "missing" if not copy.is_file()
                 else "current" if lab_code_hash(copy) == lab_code_hash(lab) else "out of date")
        out.append((copy, lab, state))
    return out


def other_profile_report(strict: bool = False) -> tuple[list[str], list[str]]:
    """(failures, notes) for every non-shipped profile's recorded copies."""
    failures, notes = [], []
    for profile in other_profiles():
        for copy, lab, state in recorded_copies(profile):
            if state == "current":
                failures += problems(copy, profile)
            elif state == "out of date":
                msg = (f"{short_path(copy)}: out of date: {short_path(lab)} changed since profile {profile!r} was recorded; "
                       f"read mode for {profile} skips it until someone runs `make record PROFILE={profile}` "
                       f"(on that profile's hardware) or deletes it")
                (failures if strict else notes).append(msg)
            else:
                failures.append(f"{short_path(copy)}: {state} for the stamped recording of {profile!r} "
                                f"({short_path(recording_path(profile, copy.stem))}); re-record or delete it")
    return failures, notes


def main(argv=None):
    ap = argparse.ArgumentParser(description="Check (or stamp) that labs and their recordings belong together.")
    ap.add_argument("notebooks", nargs="*", type=Path)
    ap.add_argument("--stamp", action="store_true", help="stamp the recordings after `make record`")
    ap.add_argument("--profile", default=os.environ.get("COURSE_PROFILE", SHIPPED_PROFILE))
    ap.add_argument("--other-profiles", action="store_true",
                    help="also check the recorded copies of every other profile (labs/recorded/<profile>/)")
    ap.add_argument("--strict", action="store_true", help="with --other-profiles: out-of-date copies fail")
    ap.add_argument("--current-recorded", action="store_true",
                    help="print '<profile> <copies...>' for each other profile's current recorded copies")
    args = ap.parse_args(argv)
    if args.current_recorded:
        for profile in other_profiles():
            current = [short_path(c) for c, _, state in recorded_copies(profile) if state == "current"]
            if current:
                print(profile, " ".join(current))
        return 0
    if args.stamp:
        for nb in args.notebooks:
            print(f"stamped {short_path(stamp(nb, args.profile))}")
        return 0
    found = [p for nb in args.notebooks for p in problems(nb, args.profile)]
    notes: list[str] = []
    if args.other_profiles:
        more, notes = other_profile_report(args.strict)
        found += more
    for p in found:
        print("STALE:", p)
    for n in notes:
        print("NOTE:", n)
    if not found:
        others = f"; other profiles: {', '.join(other_profiles()) or 'none recorded'}" if args.other_profiles else ""
        print(f"{len(args.notebooks)} lab(s): notebooks and recordings are in sync{others}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
