"""Held-out phrasings: the four tasks' requests worded in ways training never uses.

The training prompts (:mod:`course_utils.tinyworld.tasks`) come from a few fixed sentence
shapes, each behind a fixed prefix ("Write a SQL query:", "Customer complaint:", "Clinical
note:", "Convert to JSON:"). The family here is separate: other sentence shapes and verbs, no
training prefix, and only held-out entities (:func:`tasks.pool` ``"heldout"``), so both the
wording and the entity are unseen. Each request carries the same kind of ``fields`` as its
task's training examples (plus, for medical, ``temp`` and ``plan``), so the same checkers
(:mod:`course_utils.tinyworld.checkers`) apply, and a reference ``answer`` in the trained
format. ``tests/test_checkers.py`` checks that no skeleton here matches a training prompt.

Fixed before any change to training, so that no experiment is tuned to them: do not edit
them to make a model look better.
"""

from __future__ import annotations

import json
import random

from . import tasks
from .checkers import plan_for

# sql: (table, condition column) -> requests; {value} is the entity. The entity kind and the
# selected expression come from tasks.SQL_QUERIES.
SQL_PHRASINGS = {
    ("airports", "country"): (
        "Which airports does {value} have?",
        "I need every airport situated anywhere in {value}, as SQL.",
        "{value} - what are the names of its airports? Answer with a query.",
        "Get the airport names for the country {value}.",
    ),
    ("airports", "city"): (
        "What airports can I fly into at {value}?",
        "Select the airport names whose city is {value}.",
        "Flying to {value} soon: which airports are there?",
    ),
    ("employees", "department"): (
        "Name everyone on the {value} team.",
        "Query for the people employed in {value}.",
        "Which employees belong to {value}?",
    ),
    ("products", "category"): (
        "What do we sell under {value}?",
        "Fetch the names of items filed under {value}.",
        "I am looking for everything we stock in {value}; write the query.",
    ),
    ("orders", "country"): (
        "Tally the orders whose country is {value}.",
        "Customers in {value} placed how many orders? Write it in SQL.",
        "Give me the order count for {value} as a query.",
    ),
}

SUPPORT_PHRASINGS = (
    "My new {product} showed up and it {problem}. Please sort this out.",
    "Hello, I am writing because the {product} from your shop {problem}.",
    "Your store sent me a {product} that {problem}. I want this fixed.",
    "Why is it that my {product} {problem}? This is unacceptable.",
    "So disappointed: the {product} {problem}, and nobody answers my emails.",
)
# Problems in new words (training uses a fixed six); they read after "it" / "that" / "the X".
SUPPORT_PROBLEMS = ("arrived cracked", "does not turn on", "broke on the first day", "came in the wrong size",
                    "is missing its cable", "was badly scratched")

MEDICAL_PHRASINGS = (
    "Please summarise this visit: {name} is {age}; {symptom} started {days} days ago; measured {temp} degrees.",
    "{name}, aged {age}, complains of {symptom} for the past {days} days. Fever check: {temp}.",
    "Write up the record. Patient {name} ({age} y) with {symptom}, a {days}-day history, thermometer reads {temp}.",
    "Triage: {age} y/o {name}, {days} days of {symptom}, body temp {temp}.",
)
MEDICAL_TEMPS = ("36.8", "37.2", "37.9", "38.4", "39.1")

JSON_PHRASINGS = (
    "Turn this into a JSON object: {name}, a {job} based in {city}, is {age}.",
    "Please give me JSON for {job} {name}, {age} years of age, living in {city}.",
    "{name} ({age}) earns a living in {city} as a {job}. Output that as JSON.",
    "I need a JSON record. Person: {name}; occupation: {job}; home town: {city}; age: {age}.",
)

PHRASINGS = {
    "sql": tuple(p for ps in SQL_PHRASINGS.values() for p in ps),
    "support": SUPPORT_PHRASINGS,
    "medical": MEDICAL_PHRASINGS,
    "json": JSON_PHRASINGS,
}

_KIND = {(table, column): kind for kind, _, table, column, _ in tasks.SQL_QUERIES}
_SELECT = {(table, column): select for _, select, table, column, _ in tasks.SQL_QUERIES}


def _heldout(rng: random.Random, kind: str) -> str:
    return rng.choice(tasks.pool(kind, "heldout"))


def _sql(rng: random.Random) -> tasks.Example:
    table, column = rng.choice(sorted(SQL_PHRASINGS))
    value = _heldout(rng, _KIND[table, column])
    prompt = rng.choice(SQL_PHRASINGS[table, column]).format(value=value)
    answer = f"SELECT {_SELECT[table, column]} FROM {table} WHERE {column} = '{value}'"
    return tasks.Example("sql", prompt, answer, "", {"table": table, "column": column, "value": value})


def _support(rng: random.Random) -> tasks.Example:
    product, problem, days = _heldout(rng, "product"), rng.choice(SUPPORT_PROBLEMS), rng.choice((2, 3, 5, 7))
    prompt = rng.choice(SUPPORT_PHRASINGS).format(product=product, problem=problem)
    answer = (f"We are sorry that your {product} {problem}. "
              f"We will send you a new {product} within {days} days. Thank you for your patience.")
    return tasks.Example("support", prompt, answer, "", {"product": product})


def _medical(rng: random.Random) -> tasks.Example:
    v = {"name": _heldout(rng, "name"), "age": rng.randrange(18, 90), "symptom": _heldout(rng, "symptom"),
         "days": rng.randrange(2, 15), "temp": rng.choice(MEDICAL_TEMPS)}
    v["plan"] = plan_for(v["temp"])
    prompt = rng.choice(MEDICAL_PHRASINGS).format(**v)
    answer = "\n".join(f"{label}: {value.format(**v)}" for label, value in tasks.MEDICAL_RECORD)
    return tasks.Example("medical", prompt, answer, "", v)


def _json(rng: random.Random) -> tasks.Example:
    v = {"name": _heldout(rng, "name"), "age": rng.randrange(18, 80), "job": _heldout(rng, "job"),
         "city": _heldout(rng, "city")}
    prompt = rng.choice(JSON_PHRASINGS).format(**v)
    return tasks.Example("json", prompt, json.dumps({k: v[k] for k in tasks.JSON_KEYS}), "", v)


_MAKERS = {"sql": _sql, "support": _support, "medical": _medical, "json": _json}


def make_reworded(task: str, n: int, seed: int = 0) -> list[tasks.Example]:
    """``n`` requests of ``task`` in held-out phrasings with held-out entities, reproducible from ``seed``.

    Each is an :class:`tasks.Example` whose ``answer`` is the right reply in the trained format
    (``generic`` and ``skill`` are empty)."""
    if task not in _MAKERS:
        raise ValueError(f"no held-out phrasings for task {task!r}; expected one of {', '.join(_MAKERS)}")
    rng = random.Random(f"reworded-{task}-{seed}")
    return [_MAKERS[task](rng) for _ in range(n)]
