"""course_utils.tinyworld.tasks: the tiny world's examples are reproducible, the shipped world's own, held-out entities stay
out of training, and the format checks accept answers and reject generic replies."""

import hashlib
import json
import re

import pytest

from course_utils.tinyworld import tasks


def test_examples_are_reproducible():
    a = tasks.make_examples("sql", 20, "train", seed=3)
    b = tasks.make_examples("sql", 20, "train", seed=3)
    assert [e.prompt for e in a] == [e.prompt for e in b]


def test_examples_are_the_ones_the_shipped_tiny_world_was_trained_on():
    """The templates are data walked by one piece of code; refactoring them must not change one byte."""
    h = hashlib.sha256()
    for task in tasks.GENERATORS:
        for split in ("train", "heldout"):
            for e in tasks.make_examples(task, 100, split, 0):
                h.update(repr((e.task, e.prompt, e.answer, e.generic, e.fields, e.skill)).encode())
    assert h.hexdigest() == "0b6f441e75ebe75bbc3b0cfa5dcf00a7cc6524d059a55582a354cf379b16d7b0"


def test_heldout_entities_never_occur_in_training():
    held = {w.lower() for kind in tasks.POOLS for w in tasks.pool(kind, "heldout")}
    for task in tasks.GENERATORS:
        for ex in tasks.make_examples(task, 3000, "train", seed=1234):
            for text in (ex.prompt, ex.answer, ex.generic):
                words = {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z-]*", text)}
                assert not words & held, (task, text, words & held)


@pytest.mark.parametrize("task", tasks.TASKS)
def test_answers_pass_and_generic_replies_fail_the_checker(task):
    for ex in tasks.make_examples(task, 200, "heldout"):
        assert tasks.format_ok(task, ex.answer, ex.fields), ex.answer
        assert not tasks.format_ok(task, ex.generic, ex.fields), ex.generic


def test_sql_checker_wants_the_right_table_and_condition():
    f = {"table": "airports", "column": "country", "value": "Malawi"}
    assert tasks.check_sql("SELECT name FROM airports WHERE country = 'Malawi'", f)
    assert tasks.check_sql("SELECT name FROM airports WHERE country = 'Malwai'", f)  # format right, value misspelt
    assert not tasks.sql_value_exact("SELECT name FROM airports WHERE country = 'Malwai'", f)
    assert tasks.sql_value_exact("SELECT name FROM airports WHERE country = 'Malawi'", f)
    assert not tasks.check_sql("SELECT name FROM orders WHERE country = 'Malawi'", f)
    assert not tasks.check_sql("SELECT name FROM airports WHERE city = 'Malawi'", f)
    assert not tasks.check_sql("SELECT name FROM airports WHERE country = ''", f)


def test_json_answers_parse_with_the_fixed_keys():
    for ex in tasks.make_examples("json", 20, "heldout"):
        assert set(json.loads(ex.answer)) == set(tasks.JSON_KEYS)


def test_unknown_task_is_named():
    with pytest.raises(ValueError, match="unknown task 'poetry'"):
        tasks.make_examples("poetry", 1)
