"""The 4090 budget counts what each lab's recording shows, minus the cells that skip on a GPU."""

import json

from course_tools import budget, notebooks
from course_utils.paths import RECORDINGS

LABS = budget.LABS


def _recorded(lab: str, kind: str) -> int:
    calls = json.loads((RECORDINGS / "tiny" / f"{lab}.json").read_text())["calls"]
    return sum(c["kind"] == kind for c in calls)


def test_counts_come_from_the_recordings_without_the_tiny_only_cells():
    lab03 = budget.lab_work(LABS / "03_rank_and_max_loras.ipynb")
    assert lab03.skipped_on_gpu > 0                                   # section 7 needs the tiny base
    assert lab03.engine_starts == _recorded("03_rank_and_max_loras", "LLM") - 1
    lab04 = budget.lab_work(LABS / "04_server_lab.ipynb")
    failed = _recorded("04_server_lab", "server_start") - lab04.server_starts
    assert failed == 1 and lab04.engine_starts == 0          # the port clash fails before vLLM loads anything
    lab05 = budget.lab_work(LABS / "05_source_tour.ipynb")
    assert lab05.host_loads == 2 and 15 < lab05.written_gb < 16   # peft check + merge; the merged bf16 copy
    assert budget.lab_work(LABS / "06_self_test.ipynb").seconds() == 0


def test_the_estimate_is_the_stated_formula_and_every_constant_can_be_overridden(capsys):
    w = budget.LabWork("x", engine_starts=2, server_starts=1, steps=400)
    assert w.seconds(engine_start=60, server_extra=10, step=0.01) == 2 * 60 + 70 + 4
    assert budget.main(["--price", "3", "--engine-start", "60"]) == 0
    out = capsys.readouterr().out
    assert "按你的价格" in out and "每次起引擎 60 秒" in out and "都没有在 4090 上实测" in out


def test_the_readme_table_is_what_the_script_computes():
    import re

    readme = (budget.REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("### 预算", 1)[1].split("\n## ", 1)[0]
    shown = {m[0]: (int(m[1]), int(m[2]), float(m[3]))
             for m in re.findall(r"^\| (0\d) \| (\d+) \| (\d+) \| ([\d.]+) \|$", section, re.MULTILINE)}
    t = budget.table()
    computed = {row[0][:2]: (row[1], row[2], row[5]) for row in t.itertuples(index=False)}
    assert shown == computed, "README's budget table is stale: run `python -m course_tools.budget` and copy it"


def test_the_readme_setup_table_is_what_the_script_computes():
    import re

    readme = (budget.REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("### 预算", 1)[1].split("\n## ", 1)[0]
    shown = re.findall(r"^\| [^|]+ \| ([^|]+) \| [否是] \| ([\d.]+) \|$", section, re.MULTILINE)
    t = budget.setup_table()
    computed = [(row[1], f"{row[3]}") for row in t.itertuples(index=False)]
    assert [s[1] for s in shown] == [c[1] for c in computed], "README's setup table is stale"
    assert shown[1][0].strip() == computed[1][0] and shown[2][0].strip() == computed[2][0]


def test_setup_counts_each_adapters_own_steps():
    from course_tools.tinyworld.trainer import ADAPTERS

    work = budget.setup_table().iloc[2]["工作量"]
    assert work == "300 + 300 + 300 + 600 步" and ADAPTERS["json"].steps_factor == 2.0


def test_each_lab_opens_with_its_cost_box():
    """Issue 55: right after its title, each lab says what it costs here and on a 4090; the box is generated from
    the recordings (`make cost-boxes`, run by `make record`), so it cannot drift from them."""
    for nb_path in sorted(budget.LABS.glob("[0-9]*.ipynb")):
        cell = notebooks.read(nb_path).cells[1]
        assert budget.COST_BOX_TAG in cell.metadata.get("tags", []), f"{nb_path.name}: no cost box after the title"
        assert cell.source == budget.cost_box(nb_path), f"{nb_path.name}: cost box out of date: run `make cost-boxes`"
        assert "分钟" in cell.source and ("¥" in cell.source or "不占 GPU" in cell.source or "什么都不启动" in cell.source)
