"""The answer checkers (right, not just format) and the held-out phrasings they are applied to."""

import json
import re

import pytest

from course_utils.tinyworld import checkers, tasks
from course_tools.tinyworld import phrasings

AIRPORTS = {"table": "airports", "column": "country", "value": "Tanzania"}
ORDERS = {"table": "orders", "column": "country", "value": "Malawi"}


def right(task, output, fields):
    v = checkers.check(task, output, fields)
    assert isinstance(v, checkers.Verdict) and v.why
    return v.right


# ---------------------------------------------------------------- template answers pass
@pytest.mark.parametrize("task", tasks.TASKS)
@pytest.mark.parametrize("split", ["train", "heldout"])
def test_template_answers_are_right_and_generic_replies_are_not(task, split):
    for ex in tasks.make_examples(task, 200, split, seed=5):
        for fields in (ex.fields, checkers.fields_of(ex)):
            assert right(task, ex.answer, fields), (ex.answer, checkers.check(task, ex.answer, fields))
            assert not right(task, ex.generic, fields), ex.generic


@pytest.mark.parametrize("family", sorted(phrasings.FAMILIES))
@pytest.mark.parametrize("task", tasks.TASKS)
def test_reworded_reference_answers_are_right(task, family):
    for ex in phrasings.make_reworded(task, 200, seed=3, family=family):
        assert right(task, ex.answer, ex.fields), (ex.prompt, ex.answer, checkers.check(task, ex.answer, ex.fields))
        assert tasks.format_ok(task, ex.answer, ex.fields)  # and in the trained format


# ---------------------------------------------------------------- sql
def test_sql_runs_the_query():
    assert right("sql", "SELECT name FROM airports WHERE country = 'Tanzania'", AIRPORTS)
    assert right("sql", "SELECT name FROM airports WHERE country = 'Tanzania';", AIRPORTS)
    assert right("sql", "select name from airports where country='Tanzania' order by name", AIRPORTS)
    assert right("sql", "SELECT COUNT(*) FROM orders WHERE country = 'Malawi'", ORDERS)


# Wrong answers per task, each with the words its verdict must give (one test for all: test_wrong_answers_fail).
SQL_WRONG = [
    ("SELECT name FROM airports WHERE country = 'Taniania'", "一行也没返回"),  # misspelt entity
    ("SELECT name FROM airports WHERE country = 'tanzania'", "一行也没返回"),  # wrong case
    ("SELECT name FROM airports WHERE city = 'Tanzania'", "一行也没返回"),  # wrong column
    ("SELECT name FROM employees WHERE department = 'Tanzania'", "一行也没返回"),  # wrong table
    ("SELECT name FROM orders WHERE country = 'Tanzania'", "运行不了"),  # table has no such column
    ("SELECT name FROM airports", "行"),  # extra rows
    ("SELECT name FROM airports WHERE country = 'Tanzania' OR 1 = 1", "行"),
    ("SELECT * FROM airports WHERE country = 'Tanzania'", "列"),
    ("SELECT COUNT(*) FROM airports WHERE country = 'Tanzania'", "行"),  # a count, not the airports
    ("SELECT name FROM airports WHERE country = 'Tanzania'; DROP TABLE airports", "运行不了"),
    ("SELECT name FROM airports WHERE country = 'Tanzania", "不完整"),
    ("DELETE FROM airports WHERE country = 'Tanzania'", "不是 SELECT"),
    ("Here is the query: SELECT name FROM airports WHERE country = 'Tanzania'", "不是 SELECT"),
    ("That is a question about airports and Tanzania. I do not have that data.", "不是 SELECT"),
]


@pytest.mark.parametrize("query", [
    "SELECT name FROM orders WHERE country = 'Malawi'",  # rows, not the count
    "SELECT COUNT(*) FROM airports WHERE country = 'Malawi'",  # count of the wrong table
    "SELECT COUNT(*) FROM orders WHERE country = 'Malwai'",  # a count of 0
    "SELECT COUNT(*) FROM orders",
])
def test_sql_wrong_counts_fail(query):
    assert not right("sql", query, ORDERS)


def test_sql_database_is_read_only_and_bounded():
    v = checkers.check("sql", "SELECT name FROM pragma_table_info('airports')", AIRPORTS)
    assert not v.right
    runaway = ("SELECT a.name FROM airports a, airports b, airports c, airports d, airports e, airports f, "
               "airports g WHERE a.country = 'Tanzania'")
    assert "运行不了" in checkers.check("sql", runaway, AIRPORTS).why


def test_sql_database_holds_the_entity_and_distractors():
    con, expected = checkers.build_database(AIRPORTS)
    countries = {c for (c,) in con.execute("SELECT DISTINCT country FROM airports")}
    assert "Tanzania" in countries and len(countries) > 1
    assert len(expected) == 2
    assert con.execute("SELECT COUNT(*) FROM airports WHERE city = 'Tanzania'").fetchone() == (0,)


# ---------------------------------------------------------------- json
JSON_FIELDS = {"name": "Elif", "age": 29, "job": "musician", "city": "Kathmandu"}


JSON_WRONG = [
    ('{"name": "Elif", "age": 29, "job": "musician", "city": "Kathmandu"', "不是合法的 JSON"),
    ('["Elif", 29, "musician", "Kathmandu"]', "不是对象"),
    ('{"name": "Elif", "age": 29, "job": "musician"}', "键是"),
    ('{"name": "Elif", "age": 29, "job": "musician", "city": "Kathmandu", "x": 1}', "键是"),
    ('{"name": "Elfi", "age": 29, "job": "musician", "city": "Kathmandu"}', "name 是"),
    ('{"name": "Elif", "age": 92, "job": "musician", "city": "Kathmandu"}', "age 是"),
    ('{"name": "Elif", "age": "29", "job": "musician", "city": "Kathmandu"}', "不是整数"),
    ('{"name": "Elif", "age": 29, "job": "musican", "city": "Kathmandu"}', "job 是"),
    ('{"name": "Elif", "age": 29, "job": "musician", "city": "Katmandu"}', "city 是"),
]


def test_json_right_answer_in_any_key_order():
    assert right("json", '{"city": "Kathmandu", "job": "musician", "age": 29, "name": "Elif"}', JSON_FIELDS)


# ---------------------------------------------------------------- medical
MED_FIELDS = {"name": "Isla", "age": 43, "symptom": "wrist-pain", "days": 5, "temp": "38.4",
              "plan": "review in 2 days"}
MED_OK = "Patient: Isla\nAge: 43\nSymptom: wrist-pain\nDuration: 5 days\nPlan: review in 2 days"


MED_WRONG = [(MED_OK.replace(old, new), why) for old, new, why in [
    ("Patient: Isla\n", "", "没有 Patient"),
    ("Plan: review in 2 days", "", "没有 Plan"),
    ("Patient: Isla", "Patient: Isal", "Patient 是"),
    ("Age: 43", "Age: 34", "Age 是"),
    ("wrist-pain", "knee-pain", "Symptom 是"),
    ("5 days", "6 days", "Duration 是"),
    ("review in 2 days", "rest and fluids", "Plan 是"),
    ("Age: 43\n", "Age: 43\nAge: 44\n", "2 次"),
]]


def test_medical_right_answer():
    assert right("medical", MED_OK, MED_FIELDS)
    bare = {k: MED_FIELDS[k] for k in ("name", "age", "symptom", "days")}  # tasks' fields: no temperature
    assert right("medical", MED_OK.replace("review in 2 days", "rest and fluids"), bare)
    assert not right("medical", MED_OK.replace("review in 2 days", "go home"), bare)


def test_fields_of_reads_the_temperature_from_every_training_prompt_shape():
    seen = set()
    for ex in tasks.make_examples("medical", 300, "heldout", seed=2):
        f = checkers.fields_of(ex)
        assert f["temp"] in ex.prompt and f["plan"] in ex.answer
        seen.add(ex.prompt.removeprefix("Clinical note: ").split()[0][:3])
    assert len(seen) >= 4


# ---------------------------------------------------------------- support
SUP = {"product": "lantern"}
SUP_OK = "We are sorry that your lantern arrived broken. We will send you a new lantern within 3 days. Thank you."


SUPPORT_WRONG = [
    ("We are sorry for the trouble. We will send you a replacement soon.", "没有提到"),
    ("We are sorry that your lantren arrived broken. We will send you a new lantren within 3 days.", "没有提到"),
    ("We are sorry that your lantern arrived broken. We will send you a new lanturn within 3 days.", "拼错"),
    ("We are sorry that your cooler arrived broken. We will send you a new cooler within 3 days.", "没有提到"),
    ("Thank you for your message about the lantern. Please check the shop.", "道歉"),
    ("A lantern is a useful thing to have.", "道歉"),
]


def test_support_right_answers():
    assert right("support", SUP_OK, SUP)
    assert right("support", "I'm so sorry your Lantern broke. A new lantern is on its way.", SUP)


# ---------------------------------------------------------------- wrong answers of every task
@pytest.mark.parametrize("task, fields, output, why", [
    (task, fields, output, why)
    for task, fields, wrong in (("sql", AIRPORTS, SQL_WRONG), ("json", JSON_FIELDS, JSON_WRONG),
                                ("medical", MED_FIELDS, MED_WRONG), ("support", SUP, SUPPORT_WRONG))
    for output, why in wrong])
def test_wrong_answers_fail(task, fields, output, why):
    v = checkers.check(task, output, fields)
    assert not v.right and why in v.why, (output, v)


# ---------------------------------------------------------------- held-out phrasings
def _skeleton_regex(template: str) -> re.Pattern:
    parts = re.split(r"\{\w+\}", template)
    return re.compile("(.+?)".join(re.escape(p) for p in parts), re.IGNORECASE)


def _tokens(template: str) -> list[str]:
    return re.findall(r"<s>|[a-z]+", re.sub(r"\{\w+\}", " <s> ", template.lower()))


def _literal_ngrams(template: str, n: int = 4) -> set[tuple]:
    t = _tokens(template)
    return {g for g in zip(*(t[i:] for i in range(n))) if sum(w != "<s>" for w in g) >= 2}


def _training_prompt_templates() -> list[str]:
    out = []
    for task in tasks.TASKS:
        for t in tasks.GENERATORS[task]:
            out += [t.prompt] if isinstance(t.prompt, str) else list(t.prompt)
    framed = [f"{lead} {p}" for lead in tasks.LEAD_INS for p in out] + [f"{p} {tail}" for tail in tasks.TAILS for p in out]
    return out + framed


@pytest.mark.parametrize("family", sorted(phrasings.FAMILIES))
@pytest.mark.parametrize("task", tasks.TASKS)
def test_no_heldout_phrasing_matches_a_training_prompt(task, family):
    train = [ex.prompt for ex in tasks.make_examples(task, 2000, "train")]
    for template in phrasings.FAMILIES[family][task]:
        rx = _skeleton_regex(template)
        hits = [p for p in train if rx.fullmatch(p)]
        assert not hits, (template, hits[:3])
    reworded = {ex.prompt for ex in phrasings.make_reworded(task, 500, family=family)}
    assert not reworded & set(train)


@pytest.mark.parametrize("family", sorted(phrasings.FAMILIES))
def test_heldout_phrasings_share_no_four_word_run_with_training_templates(family):
    train = set().union(*(_literal_ngrams(t) for t in _training_prompt_templates()))
    for task, templates in phrasings.FAMILIES[family].items():
        for template in templates:
            shared = _literal_ngrams(template) & train
            assert not shared, (task, template, shared)
            assert not any(template.startswith(p) for p in ("Write a SQL query:", "Customer complaint:",
                                                             "Clinical note:", "Convert to JSON:"))


def test_the_two_families_share_no_template_and_no_four_word_run():
    one, two = phrasings.FAMILIES[1], phrasings.FAMILIES[2]
    assert set(one) == set(two) == set(tasks.TASKS)
    ngrams_one = set().union(*(_literal_ngrams(t) for ts in one.values() for t in ts))
    for task in tasks.TASKS:
        assert not set(one[task]) & set(two[task]), task
        for template in two[task]:
            shared = _literal_ngrams(template) & ngrams_one
            assert not shared, (task, template, shared)
            assert not any(_skeleton_regex(t).fullmatch(template) for t in one[task]), template
        for template in one[task]:
            assert not any(_skeleton_regex(t).fullmatch(template) for t in two[task]), template
    assert not set(phrasings.SUPPORT_PROBLEMS) & set(phrasings.SUPPORT_PROBLEMS_2)


@pytest.mark.parametrize("family", sorted(phrasings.FAMILIES))
@pytest.mark.parametrize("task", tasks.TASKS)
def test_reworded_requests_use_heldout_entities_and_training_fields(task, family):
    held = {w for kind in tasks.POOLS for w in tasks.pool(kind, "heldout")}
    train_keys = set(tasks.make_examples(task, 1)[0].fields)
    templates = phrasings.FAMILIES[family][task]
    exs = phrasings.make_reworded(task, 300, seed=1, family=family)
    used = set()
    for ex in exs:
        assert train_keys <= set(ex.fields)
        entities = [v for k, v in ex.fields.items() if k in ("value", "product", "name", "symptom", "job", "city")]
        assert entities and all(e in held for e in entities), ex.fields
        used.add(next(t for t in templates if _skeleton_regex(t).fullmatch(ex.prompt)))
    assert used == set(templates)  # every phrasing occurs


@pytest.mark.parametrize("family", sorted(phrasings.FAMILIES))
def test_reworded_requests_are_reproducible(family):
    a = phrasings.make_reworded("json", 20, seed=4, family=family)
    b = phrasings.make_reworded("json", 20, seed=4, family=family)
    assert [(e.prompt, e.fields) for e in a] == [(e.prompt, e.fields) for e in b]
    assert [e.prompt for e in a] != [e.prompt for e in phrasings.make_reworded("json", 20, seed=5, family=family)]
    with pytest.raises(ValueError, match="poetry"):
        phrasings.make_reworded("poetry", 1, family=family)


def test_family_one_is_the_default_and_families_have_their_own_draws():
    for task in tasks.TASKS:
        default = phrasings.make_reworded(task, 30, seed=2)
        assert [(e.prompt, e.fields) for e in default] == [
            (e.prompt, e.fields) for e in phrasings.make_reworded(task, 30, seed=2, family=1)]
        assert all(any(_skeleton_regex(t).fullmatch(e.prompt) for t in phrasings.PHRASINGS[task]) for e in default)
        two = phrasings.make_reworded(task, 30, seed=2, family=2)
        assert all(any(_skeleton_regex(t).fullmatch(e.prompt) for t in phrasings.PHRASINGS_2[task]) for e in two)
    with pytest.raises(ValueError, match="family"):
        phrasings.make_reworded("json", 1, family=3)


@pytest.mark.parametrize("family", sorted(phrasings.FAMILIES))
def test_json_fields_round_trip(family):
    for ex in phrasings.make_reworded("json", 20, family=family):
        assert json.loads(ex.answer) == {k: ex.fields[k] for k in tasks.JSON_KEYS}


def test_reworded_medical_prompts_state_every_fact():
    for family in phrasings.FAMILIES:
        for ex in phrasings.make_reworded("medical", 100, seed=6, family=family):
            assert ex.fields["temp"] in phrasings.MEDICAL_TEMPS
            for key in ("name", "age", "symptom", "days", "temp"):
                assert str(ex.fields[key]) in ex.prompt, (key, ex.prompt)
