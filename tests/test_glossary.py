"""The glossary (labs/glossary.md) and the labs use the same words: no listed variant appears in lab
prose or in the self-test's generated text, and every glossary term is used by some lab."""

from __future__ import annotations

import re
from pathlib import Path

from course_tools import notebooks

REPO = Path(__file__).resolve().parents[1]
GLOSSARY = REPO / "labs" / "glossary.md"
LABS = sorted((REPO / "labs").glob("[0-9]*.ipynb"))


def glossary() -> list[dict]:
    rows = []
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0] not in ("术语", "---"):
            rows.append({"term": cells[0], "english": cells[1],
                         "variants": [v.strip() for v in re.split(r"[、,]", cells[2]) if v.strip()],
                         "line": cells[3]})
    return rows


def lab_text(lab: Path) -> str:
    """The prose a student reads: markdown cells, and text outputs (the self-test writes its answers there)."""
    out = []
    for c in notebooks.read(lab).cells:
        if c.cell_type == "markdown":
            out.append(c.source)
        else:
            out += [notebooks.output_text(o, ("text/html",)) for o in c.get("outputs", [])]
    return "\n".join(out)


def test_the_glossary_has_its_entries():
    rows = glossary()
    assert len(rows) >= 20 and all(r["english"] and r["line"] for r in rows)


def test_no_lab_uses_a_variant_the_glossary_replaces():
    found = []
    for lab in LABS:
        text = lab_text(lab)
        for r in glossary():
            for v in r["variants"]:
                if v in text:
                    found.append(f"{lab.name}: {v!r} (say {r['term']!r})")
    assert not found, "\n".join(found)


def test_every_glossary_term_is_used_by_a_lab():
    text = "\n".join(lab_text(lab) for lab in LABS)
    unused = [r["term"] for r in glossary()
              if not any(part.strip() in text for part in re.split(r"\s*/\s*", r["term"]))]
    assert not unused, f"glossary terms no lab uses: {unused}"
