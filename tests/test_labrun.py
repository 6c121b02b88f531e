"""The lab runner (make run, make record, make bench-labs) on tiny notebooks in a temp folder."""

from __future__ import annotations

import json

import pytest
from nbclient.exceptions import CellExecutionError
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from course_tools import labrun, notebooks
from course_tools import stale

RECORDS = """\
import json, os, pathlib
p = pathlib.Path(os.environ["COURSE_RECORDINGS_DIR"]) / os.environ["COURSE_PROFILE"] / "rec.json"
p.parent.mkdir(parents=True, exist_ok=True)
p.write_text(json.dumps({"provenance": {"mode": os.environ["COURSE_MODE"], "record": os.environ["COURSE_RECORD"]}}))
print("recorded")"""


def notebook(path, *sources):
    nb = new_notebook(cells=[new_markdown_cell("# 标题")] + [new_code_cell(s) for s in sources])
    nb.metadata.kernelspec = {"display_name": "Python 3", "language": "python", "name": "python3"}
    notebooks.write(nb, path)
    return path


@pytest.mark.slow
def test_run_executes_each_cell_in_the_notebooks_folder_and_writes_nbconverts_format(tmp_path, monkeypatch):
    lab = notebook(tmp_path / "labs" / "x.ipynb", "import os\nprint(os.getcwd())",
                   "print(os.environ['LABRUN_SEEN'], '中文')", "1 + 1")
    monkeypatch.setenv("LABRUN_SEEN", "seen")
    assert labrun.main(["run", "--output-dir", str(tmp_path / "build"), str(lab)]) == 0
    out = tmp_path / "build" / "x.ipynb"
    cells = notebooks.read(out).cells
    assert [c.outputs[0].get("text") for c in cells[1:3]] == [f"{lab.parent}\n", "seen 中文\n"]
    assert cells[3].outputs[0].data["text/plain"] == "2" and cells[3].execution_count == 3
    assert "iopub.execute_input" in cells[1].metadata.execution                    # nbconvert's timing metadata
    text = out.read_text(encoding="utf-8")
    assert text.startswith('{\n "cells": [\n  {\n') and "中文" in text and text.endswith("}\n")
    assert notebooks.read(lab).cells[1].outputs == []                               # the lab itself is untouched


@pytest.mark.slow
def test_a_failing_cell_stops_the_run_and_writes_nothing(tmp_path):
    lab = notebook(tmp_path / "x.ipynb", "raise ValueError('boom')", "print('never')")
    with pytest.raises(CellExecutionError, match="boom"):
        labrun.execute(lab, tmp_path / "out" / "x.ipynb")
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_record_stamps_what_a_lab_recorded_and_skips_a_lab_that_recorded_nothing(tmp_path, monkeypatch, capsys):
    recs = tmp_path / "recordings"
    monkeypatch.setenv("COURSE_RECORDINGS_DIR", str(recs))
    (recs / "tiny").mkdir(parents=True)
    (recs / "tiny" / "norec.json").write_text('{"provenance": {}}')                # an old recording goes first
    labs = [notebook(tmp_path / "labs" / "rec.ipynb", RECORDS), notebook(tmp_path / "labs" / "norec.ipynb", "1")]
    assert labrun.main(["record", "--profile", "tiny", "--output-dir", str(tmp_path / "out"), *map(str, labs)]) == 0
    said = capsys.readouterr().out
    assert "skipped: " in said and "norec.ipynb does not run live on profile tiny" in said
    assert not (recs / "tiny" / "norec.json").exists() and not (tmp_path / "out" / "norec.ipynb").exists()
    out = tmp_path / "out" / "rec.ipynb"
    prov = json.loads((recs / "tiny" / "rec.json").read_text())["provenance"]
    assert prov == {"mode": "live", "record": "1", "code_hash": stale.lab_code_hash(out),
                    "outputs_hash": stale.outputs_hash(out)}
    assert stale.problems(out, "tiny") == []


WRITES = """\
import os, pathlib, time
time.sleep({sleep})
p = pathlib.Path(os.environ["COURSE_RECORDINGS_DIR"]) / os.environ["COURSE_PROFILE"] / "{name}.json"
p.parent.mkdir(parents=True, exist_ok=True)
p.write_text('{{"provenance": {{}}}}')"""
QUOTES = """\
import os, pathlib
d = pathlib.Path(os.environ["COURSE_RECORDINGS_DIR"]) / os.environ["COURSE_PROFILE"]
assert (d / "a.json").is_file() and (d / "b.json").is_file(), "a lab that quotes the others ran before them"
(d / "06_self_test.json").write_text('{"provenance": {}}')"""


@pytest.mark.slow
def test_record_with_jobs_runs_labs_side_by_side_and_the_quoting_lab_last(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COURSE_RECORDINGS_DIR", str(tmp_path / "recordings"))
    labs = [notebook(tmp_path / "labs" / "06_self_test.ipynb", QUOTES),      # first in the list, run last
            notebook(tmp_path / "labs" / "a.ipynb", WRITES.format(sleep=2, name="a")),
            notebook(tmp_path / "labs" / "b.ipynb", WRITES.format(sleep=2, name="b"))]
    assert labrun.main(["record", "--profile", "tiny", "--jobs", "2", "--output-dir", str(tmp_path / "out"),
                        *map(str, labs)]) == 0
    said = capsys.readouterr().out
    assert "(2 running)" in said                                             # a and b side by side
    assert said.index("== started 06_self_test") > max(said.index("   a: "), said.index("   b: "))
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["06_self_test.ipynb", "a.ipynb", "b.ipynb"]


@pytest.mark.slow
def test_record_with_jobs_stops_the_others_when_a_lab_fails(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COURSE_RECORDINGS_DIR", str(tmp_path / "recordings"))
    labs = [notebook(tmp_path / "labs" / "bad.ipynb", "raise ValueError('planted')"),
            notebook(tmp_path / "labs" / "slow.ipynb", WRITES.format(sleep=120, name="slow"))]
    with pytest.raises(SystemExit, match=r"recording .*bad.ipynb failed \(exit 1\): stopping the 1 lab"):
        labrun.main(["record", "--profile", "tiny", "--jobs", "2", "--output-dir", str(tmp_path / "out"),
                     *map(str, labs)])
    assert "planted" in capsys.readouterr().out
    assert not (tmp_path / "out" / "slow.ipynb").exists()
