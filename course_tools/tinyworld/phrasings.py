"""Held-out phrasings: the four tasks' requests worded in ways training never uses.

The training prompts (:mod:`course_utils.tinyworld.tasks`) come from a few fixed sentence
shapes, each behind a fixed prefix ("Write a SQL query:", "Customer complaint:", "Clinical
note:", "Convert to JSON:"). The phrasings here are separate: other sentence shapes and verbs, no
training prefix, and only held-out entities (:func:`tasks.pool` ``"heldout"``), so both the
wording and the entity are unseen. Each request carries the same kind of ``fields`` as its
task's training examples (plus, for medical, ``temp`` and ``plan``), so the same checkers
(:mod:`course_utils.tinyworld.checkers`) apply, and a reference ``answer`` in the trained
format. ``tests/test_checkers.py`` checks that no skeleton here matches a training prompt.

There are two families, written independently of each other: family one (:data:`PHRASINGS`)
and family two (:data:`PHRASINGS_2`, written on 2026-12-04, before the compositional training
grammar), in another style again (casual lower-case chat, a request embedded in context, polite
indirect requests, notes with abbreviations, other clause orders). :data:`FAMILIES` maps 1 and 2
to them, and ``make_reworded(task, n, seed, family=...)`` draws from one (family one by default,
with the same draws as before family two existed). The tests also check that the two families
share no sentence shape.

Both families were fixed before any change to training, so that no experiment is tuned to them:
do not edit them to make a model look better.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from course_utils.tinyworld import tasks
from course_utils.tinyworld.checkers import plan_for

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

def _by_task(sql: dict, support: tuple, medical: tuple, json_: tuple) -> dict[str, tuple[str, ...]]:
    """One family's templates per task (sql's (table, column) groups flattened)."""
    return {"sql": tuple(p for ps in sql.values() for p in ps), "support": support, "medical": medical,
            "json": json_}


PHRASINGS = _by_task(SQL_PHRASINGS, SUPPORT_PHRASINGS, MEDICAL_PHRASINGS, JSON_PHRASINGS)

# ---------------------------------------------------------------------------------------------
# Family two (written 2026-12-04, independently of family one). Same slots and the same answers;
# other sentence shapes. The temperatures are MEDICAL_TEMPS, so the plans are the same two.
# ---------------------------------------------------------------------------------------------
SQL_PHRASINGS_2 = {
    ("airports", "country"): (
        "hey, could you write me a query that pulls up the names of every airport in the country {value}? thx",
        ("planning a route through {value} and wondering which airports it has - "
         "would it be possible to get the sql for their names?"),
        ("i have an airports table with a country column. i'd like the name of each one where the country "
         "is {value}."),
        "sql pls: airport names, country {value}",
    ),
    ("airports", "city"): (
        ("landing in {value} next week and i'm not sure which airport to pick... could you write a query "
         "giving me the names of the airports in that city?"),
        ("Would it be possible to see the name of each airport that serves {value}? I mean the city, "
         "not the country."),
        "city: {value} -> airport names? sql only please",
    ),
    ("employees", "department"): (
        ("hi! i'm new here and trying to figure out who's in {value}. could you write a query that returns "
         "the names of the staff in that department?"),
        "Could you pull the names of our employees whose department is {value}, please?",
        "dept {value} - need a list of names of everyone assigned there (sql)",
        ("For the {value} team offsite I need to know who to invite, so I'd like a query listing "
         "their employee names."),
    ),
    ("products", "category"): (
        "what's in our {value} category? i just need product names back from a query",
        "Would you mind writing SQL that gives me the names of products categorised as {value}?",
        ("I'm restocking the shelves for {value} and would love to know every item name we list under "
         "that category - can you do the query?"),
    ),
    ("orders", "country"): (
        ("our manager wants to know the total number of orders placed from {value} - could you write "
         "the count query?"),
        "Would it be possible to count every order with {value} as its country?",
        "re {value}: total no. of orders in the orders table? sql count pls",
        ("sales review tomorrow and I still don't know how many orders have come in from {value}. "
         "Can you give me a query that counts them?"),
    ),
}

SUPPORT_PHRASINGS_2 = (
    "hi, so i got the {product} yesterday and it {problem}... can someone help me out?",
    "Would it be possible to get a replacement {product}? mine {problem}.",
    ("not happy with your service tbh. paid full price for a {product} from you guys last week and "
     "unfortunately it {problem}, what are my options?"),
    "{product} issue: {problem}. order placed last week, would appreciate a fix asap",
    ("I'm contacting you about a {product} bought on your website, which unfortunately {problem}. "
     "Could you please look into it?"),
)
# Family two's own problems, readable after "it" / "that" / "which" / "mine".
SUPPORT_PROBLEMS_2 = ("came with a dent in it", "makes a loud rattling noise", "fell apart after one use",
                      "has a split down the side", "looks second-hand", "won't power up")

MEDICAL_PHRASINGS_2 = (
    ("hi doc, can you write this up for me? {name} came in today, {age} yrs, been dealing with {symptom} "
     "{days} days now, temp was {temp}"),
    "Pt: {name} / {age}yo / c/o {symptom} x {days}d / T {temp}",
    ("Could you please draft a patient record from this: for the last {days} days {name} ({age}) has been "
     "suffering from {symptom}, and today's temperature reading was {temp}."),
    ("writing up a visit from this morning - {name} ({age}) mentioned having {symptom} the last {days} days. "
     "thermometer said {temp}."),
    "temp {temp} for {name} today - aged {age}, {symptom} that has gone on for {days} days. pls make the record",
)

JSON_PHRASINGS_2 = (
    "can u put this person into json? {name}, {age}, lives out in {city}, {job} by trade",
    ("Would it be possible to get a JSON record for someone I met? They're {age}, they live in {city}, "
     "their job is {job}, and they go by {name}."),
    "adding someone to our contacts db: {name} / {job} / {city} / {age}. could you format that as json?",
    ("I'm filling in a form about a friend of mine from {city} - {name}, who turned {age} this year, "
     "profession {job}. Could I have it in JSON?"),
    "Hey, what would {name}'s info look like in json? job: {job}, {age}, from {city}.",
)

PHRASINGS_2 = _by_task(SQL_PHRASINGS_2, SUPPORT_PHRASINGS_2, MEDICAL_PHRASINGS_2, JSON_PHRASINGS_2)

# family -> task -> templates
FAMILIES = {1: PHRASINGS, 2: PHRASINGS_2}


@dataclass(frozen=True)
class _Family:
    sql: dict
    support: tuple[str, ...]
    problems: tuple[str, ...]
    medical: tuple[str, ...]
    json: tuple[str, ...]
    seed_prefix: str  # the rng of make_reworded is seeded with f"{seed_prefix}-{task}-{seed}"


_FAMILY_DATA = {
    1: _Family(SQL_PHRASINGS, SUPPORT_PHRASINGS, SUPPORT_PROBLEMS, MEDICAL_PHRASINGS, JSON_PHRASINGS, "reworded"),
    2: _Family(SQL_PHRASINGS_2, SUPPORT_PHRASINGS_2, SUPPORT_PROBLEMS_2, MEDICAL_PHRASINGS_2, JSON_PHRASINGS_2,
               "reworded2"),
}

_KIND = {(table, column): kind for kind, _, table, column, _ in tasks.SQL_QUERIES}
_SELECT = {(table, column): select for _, select, table, column, _ in tasks.SQL_QUERIES}


def _heldout(rng: random.Random, kind: str) -> str:
    return rng.choice(tasks.pool(kind, "heldout"))


def _sql(rng: random.Random, fam: _Family) -> tasks.Example:
    table, column = rng.choice(sorted(fam.sql))
    value = _heldout(rng, _KIND[table, column])
    prompt = rng.choice(fam.sql[table, column]).format(value=value)
    answer = f"SELECT {_SELECT[table, column]} FROM {table} WHERE {column} = '{value}'"
    return tasks.Example("sql", prompt, answer, "", {"table": table, "column": column, "value": value})


def _support(rng: random.Random, fam: _Family) -> tasks.Example:
    product, problem, days = _heldout(rng, "product"), rng.choice(fam.problems), rng.choice((2, 3, 5, 7))
    prompt = rng.choice(fam.support).format(product=product, problem=problem)
    answer = (f"We are sorry that your {product} {problem}. "
              f"We will send you a new {product} within {days} days. Thank you for your patience.")
    return tasks.Example("support", prompt, answer, "", {"product": product})


def _medical(rng: random.Random, fam: _Family) -> tasks.Example:
    v = {"name": _heldout(rng, "name"), "age": rng.randrange(18, 90), "symptom": _heldout(rng, "symptom"),
         "days": rng.randrange(2, 15), "temp": rng.choice(MEDICAL_TEMPS)}
    v["plan"] = plan_for(v["temp"])
    prompt = rng.choice(fam.medical).format(**v)
    answer = "\n".join(f"{label}: {value.format(**v)}" for label, value in tasks.MEDICAL_RECORD)
    return tasks.Example("medical", prompt, answer, "", v)


def _json(rng: random.Random, fam: _Family) -> tasks.Example:
    v = {"name": _heldout(rng, "name"), "age": rng.randrange(18, 80), "job": _heldout(rng, "job"),
         "city": _heldout(rng, "city")}
    prompt = rng.choice(fam.json).format(**v)
    return tasks.Example("json", prompt, json.dumps({k: v[k] for k in tasks.JSON_KEYS}), "", v)


_MAKERS = {"sql": _sql, "support": _support, "medical": _medical, "json": _json}


def make_reworded(task: str, n: int, seed: int = 0, family: int = 1) -> list[tasks.Example]:
    """``n`` requests of ``task`` in held-out phrasings with held-out entities, reproducible from ``seed``.

    ``family`` picks the set of phrasings (a key of :data:`FAMILIES`): 1 (the default) is
    :data:`PHRASINGS`, 2 is :data:`PHRASINGS_2`; each family has its own rng stream. Each request
    is an :class:`tasks.Example` whose ``answer`` is the right reply in the trained format
    (``generic`` and ``skill`` are empty)."""
    if task not in _MAKERS:
        raise ValueError(f"no held-out phrasings for task {task!r}; expected one of {', '.join(_MAKERS)}")
    if family not in _FAMILY_DATA:
        raise ValueError(f"no held-out phrasing family {family!r}; expected one of "
                         f"{', '.join(map(str, _FAMILY_DATA))}")
    fam = _FAMILY_DATA[family]
    rng = random.Random(f"{fam.seed_prefix}-{task}-{seed}")
    return [_MAKERS[task](rng, fam) for _ in range(n)]
