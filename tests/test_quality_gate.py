"""quality.gate and quality.missed_targets on made-up tables (the live run is tests/test_tiny_world.py)."""

from course_tools.tinyworld import quality as q


def _table(**change):
    """A table that scores exactly the measured counts, with ``change`` = {measure: {task: rows}} applied."""
    table = {}
    for task in ("sql", "support", "medical", "json"):
        t = {"adapter_format": 1.0, "base_format": 0.0, "base_right": 0.0, "vllm_equals_hf": 1.0,
             "reworded_format": 1.0, "reworded2_format": 1.0}
        for measure, counts in q.MEASURED.items():
            t[measure] = change.get(measure, {}).get(task, counts[task]) / q.ROWS
        table[task] = t
    return table


def test_the_measured_world_passes_and_the_margin_is_allowed():
    assert q.gate(_table()) == []
    low = {task: q.floor("adapter_right", task) for task in q.MEASURED["adapter_right"]}
    assert q.gate(_table(adapter_right=low)) == []


def test_one_row_under_a_floor_fails_and_names_it():
    json_floor = q.floor("reworded2_right", "json")
    misses = q.gate(_table(reworded2_right={"json": json_floor - 1}))
    assert misses == [f"json: reworded2_right {json_floor - 1}/{q.ROWS} < floor {json_floor}/{q.ROWS}"]


def test_bad_format_and_an_answering_base_fail():
    table = _table()
    table["sql"]["adapter_format"] = 0.9
    table["support"]["base_right"] = 0.2
    misses = q.gate(table)
    assert f"sql: adapter_format 45/{q.ROWS} < floor 49/{q.ROWS}" in misses
    assert any(m.startswith("support: the bare base answers") for m in misses)


def test_missed_targets_say_by_how_much():
    table = _table()
    table["sql"]["adapter_right"] = 0.86
    missed = q.missed_targets(table)
    assert "sql: adapter_right 86%, target 90% (-4 points)" in missed
    table = {t: {**v, "adapter_format": 1.0, "adapter_right": 1.0, "reworded_right": 1.0, "reworded2_right": 1.0}
             for t, v in table.items()}
    assert q.missed_targets(table) == []
