"""Every profile-dependent branch in the labs' cells, and the suite that takes each side.

Coverage cannot see notebook cells, so this file is their ledger: each ``if`` in a lab's code cells that tests the
profile (``prof.skips(...)``, ``prof.hardware``, ``prof.batch_invariant``, ...) and each ``cu.start(...,
cpu_only=...)`` is listed with the suite that runs its CPU side and the one that runs its GPU side, or why only a
real GPU can. The first test fails when a lab gains a branch not listed here (or loses one that is). The second
checks, in the labs ``make test-rehearsal`` records (a GPU-shaped profile), that the GPU side did run.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from course_tools import notebooks

REPO = Path(__file__).resolve().parent.parent
LABS = sorted((REPO / "labs").glob("[0-9]*.ipynb"))
REHEARSAL = REPO / "build" / "rehearsal" / "labs"
BRANCH = re.compile(r"^\s*(if|elif)\b.*\bprof\.(skips|hardware|batch_invariant|tiny_world|name|rehearsed)\b"
                    r"|\bcpu_only\s*=")

LIVE, REHEARSED = "make test-live (tiny)", "make test-rehearsal (hardware cuda, vLLM on CPU)"
# The tiny-base demonstrations: test-live runs them; the rehearsal takes the GPU profiles' side (Profile.skips:
# the step is skipped with a message and the lab goes on without it, as on a 4090).
TINY_BASE = {"true": LIVE, "false": REHEARSED, "evidence": "rehearsal 配置跳过这一步（"}

# (lab, the branch line stripped of its comment) -> {side: the suite that takes it}; "evidence": text the
# GPU side prints, looked for in the rehearsal's recorded lab.
BRANCHES = {
    ("01", 'if not prof.skips("the sibling-base demonstration"):'): TINY_BASE,
    ("01", 'if not prof.skips("the fingerprint check"):'): TINY_BASE,
    ("01", 'if prof.hardware == "cpu":'): {
        "true": LIVE, "false": REHEARSED, "evidence": "上跳过这次运行：这个 bug 只在 vLLM 的 CPU LoRA 算子里"},
    ("03", 'if not prof.skips("the rank sweep"):'): TINY_BASE,
    ("03", 'if not prof.skips("the rank sweep figure"):'): TINY_BASE,
    ("05", 'if prof.hardware == "cpu":'): {"true": LIVE, "false": REHEARSED, "evidence": "一致程度："},
    ("08", 'if prof.name == "tiny":'): {
        "true": LIVE, "false": REHEARSED, "evidence": "三分钟的目标是给 tiny 配置定的"},
    ("07", 'prof = cu.start("07_scale_out", cpu_only=('): {
        "live": LIVE, "read mode with the notice": f"{REHEARSED} (the record loop skips it); tests/test_scale.py",
        "evidence": None},
}


def _branches() -> set[tuple[str, str]]:
    found = set()
    for nb in LABS:
        for src in notebooks.code_cells(nb):
            for line in src.splitlines():
                if BRANCH.search(line):
                    found.add((nb.name[:2], line.split("#")[0].strip()))
    return found


def test_every_profile_dependent_branch_in_a_lab_is_listed_with_its_suites():
    found = _branches()
    assert found - set(BRANCHES) == set(), "a lab branch on the profile that this ledger does not list"
    assert set(BRANCHES) - found == set(), "a listed branch that no lab has any more"
    for sides in BRANCHES.values():
        taken = {k: v for k, v in sides.items() if k != "evidence"}
        assert len(taken) == 2 and all(taken.values()), "each side names its suite (or why only a GPU runs it)"


def _outputs(nb: Path) -> str:
    return "\n".join(notebooks.output_text(o, ("text/plain",))
                     for c in notebooks.read(nb).cells for o in c.get("outputs", []))


@pytest.mark.skipif(os.environ.get("COURSE_CHECK_REHEARSAL") != "1",
                    reason="make test-rehearsal runs it on the labs it just recorded into build/rehearsal/labs")
def test_the_rehearsal_took_the_gpu_sides():
    for (lab, line), sides in BRANCHES.items():
        nb = next(REHEARSAL.glob(f"{lab}_*.ipynb"), None)
        if sides.get("evidence") is None:
            if "cpu_only" in line:
                assert nb is None, f"Lab {lab} runs on CPU only: the rehearsal's record loop must skip it"
            continue
        assert nb is not None and sides["evidence"] in _outputs(nb), f"Lab {lab}: {line} did not take its GPU side"
