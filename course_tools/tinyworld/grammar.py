"""Requests built from parts: the adapters' training prompts in many wordings, not a few templates.

A reader types a request in their own words. An adapter trained on eight sentence shapes learns
the shapes (and where in them the entity sits), not what is asked. Here a request is composed:
a verb or a question, the thing asked for (with synonyms), the condition, a hint about the output,
the facts in any order, each fact in one of several forms, a greeting before and a remark after,
sometimes lower case or without a final stop. The same ``fields`` and ``answer`` as
:func:`tasks.make_examples` come with it, so the same checkers apply.

The grammar is data: a dict of symbols, each a tuple of alternatives; ``<name>`` in an
alternative is expanded recursively (:func:`expand`), ``{slot}`` is filled with a value after.
It was written on 2026-12-04 after both held-out phrasing families in :mod:`.phrasings` were
committed. Parts combine freely, so now and then they spell out a held-out sentence; such a
request is drawn again (:func:`_unseen`: the held-out sets stay unseen by training), and
``tests/test_grammar.py`` checks that no held-out phrasing occurs in any training prompt.
"""

from __future__ import annotations

import functools
import json
import random
import re

from course_utils.tinyworld import tasks
from course_tools.tinyworld import phrasings
from course_utils.tinyworld.checkers import plan_for

_SYMBOL = re.compile(r"<(\w+)>")


def expand(grammar: dict[str, tuple[str, ...]], text: str, rng: random.Random) -> str:
    """``text`` with every ``<symbol>`` replaced by one of its alternatives, recursively."""
    while (m := _SYMBOL.search(text)):
        text = text[:m.start()] + rng.choice(grammar[m.group(1)]) + text[m.end():]
    return " ".join(text.split())


# Said before or after any request (a superset of tasks.LEAD_INS / tasks.TAILS, in other words too).
COMMON = {
    "lead": tasks.LEAD_INS + ("Hi,", "Hello,", "Good afternoon.", "Hey there!", "Dear team,", "Sorry to bother you.",
                              "I have a request.", "Can you help me?", "Question for you:", "So,", "Right,",
                              "Hi again.", "Morning!", "Hello!", "One thing:"),
    "tail": tasks.TAILS + ("Thanks a lot.", "Thank you so much!", "Best regards.", "ASAP please.", "Let me know.",
                           "Thanks in advance!", "Kind regards.", "Appreciated.", "Cheers!", "Thanks again.",
                           "No rush.", "Have a nice day."),
    "please": ("please", "kindly", "if you can", "thanks"),
}

# ---------------------------------------------------------------------------- sql
_SQL_COMMON = {
    **COMMON,
    "show": ("List", "Show", "Show me", "Give me", "Find", "Get", "Return", "Fetch", "Select", "Pull up", "Look up",
             "I need", "I want", "I would like", "Please list", "Please show", "Can you list", "Could you show me",
             "Can you find", "Could you get me", "Write a query that lists", "Write SQL to get",
             "Query", "Display", "Retrieve", "Tell me"),
    "hint": ("as SQL", "in SQL", "using SQL", "with a SQL query", "as a query", "via SQL", "in one query"),
    "hint_s": ("Use SQL.", "SQL please.", "Answer in SQL.", "I need the query.", "Write the SQL.", "SQL only.",
               "Give me the query.", "(SQL)", "Just the query.", "As a SELECT."),
    "sql_word": ("SQL:", "Write a SQL query:", "SQL query:", "Query:", "Database question:", "For the database:"),
}

# (table, column) -> the symbols of one query. "noun": what is asked for; "cond": the condition
# after the noun; "front": the condition fronted ("In X, ..."); "ask": whole questions.
SQL_GRAMMAR = {
    ("airports", "country"): {
        "noun": ("airports", "the airports", "all airports", "every airport", "all the airports", "airport names",
                 "the names of the airports", "the airports there are"),
        "cond": ("in {value}", "located in {value}", "in the country {value}", "in the country of {value}",
                 "of {value}", "across {value}", "within {value}", "whose country is {value}",
                 "where the country is {value}", "with country {value}", "anywhere in {value}",
                 "that {value} has", "for the country {value}", "in the nation {value}"),
        "front": ("In {value}", "For {value}", "For the country {value}", "Country {value}", "{value}",
                  "Regarding {value}", "About {value}"),
        "ask": ("Which airports are <cond>?", "What airports are there <cond>?", "What are the airports <cond>?",
                "How about the airports <cond>?", "Does {value} have airports? List them.",
                "Which airports does the country {value} have?", "What are the names of the airports <cond>?"),
        "short": ("the airports", "its airports", "which airports exist", "the airport names", "all airports"),
    },
    ("airports", "city"): {
        "noun": ("airports", "the airports", "all airports", "every airport", "airport names", "the airport names",
                 "the names of the airports"),
        "cond": ("in the city {value}", "in the city of {value}", "of the city {value}", "serving {value}",
                 "that serve {value}", "near the city {value}", "around the city of {value}",
                 "whose city is {value}", "where the city is {value}", "with city {value}",
                 "for the city {value}", "at the city {value}", "in {value} city", "that serve the city {value}"),
        "front": ("In the city {value}", "For the city {value}", "City {value}", "The city of {value}",
                  "Regarding the city {value}", "{value} (a city)"),
        "ask": ("Which airports serve {value}?", "What airports are there <cond>?", "Which airports are <cond>?",
                "What are the airports <cond>?", "Which airports does the city {value} have?",
                "Where can I land <cond>? List the airports."),
        "short": ("the airports", "its airports", "the airport names", "which airports serve it"),
    },
    ("employees", "department"): {
        "noun": ("employees", "the employees", "all employees", "the staff", "all staff", "staff members",
                 "the people", "everyone", "the workers", "the names of the employees", "personnel",
                 "team members", "the staff names"),
        "cond": ("in the {value} department", "of the {value} department", "in department {value}",
                 "working in {value}", "who work in {value}", "in {value}", "from the {value} department",
                 "on the {value} team", "in the {value} team", "of department {value}",
                 "whose department is {value}", "where the department is {value}", "assigned to {value}",
                 "with department {value}", "working for the {value} department"),
        "front": ("In the {value} department", "For department {value}", "Department {value}",
                  "The {value} department", "About the {value} team", "{value} department"),
        "ask": ("Who works in the {value} department?", "Who is in department {value}?",
                "Which employees are <cond>?", "Who are the employees <cond>?", "Who is on the {value} team?",
                "Which people work in {value}?", "Who belongs to the {value} department?"),
        "short": ("who works there", "its staff", "the employees", "everyone on it", "the names of its people"),
    },
    ("products", "category"): {
        "noun": ("products", "the products", "all products", "every product", "items", "the items", "all items",
                 "product names", "the names of the products", "goods", "the articles", "everything"),
        "cond": ("in the {value} category", "in category {value}", "of the {value} category",
                 "of category {value}", "under {value}", "listed under {value}", "in {value}",
                 "whose category is {value}", "where the category is {value}", "with category {value}",
                 "categorised as {value}", "in the {value} section", "of type {value}", "from the {value} range"),
        "front": ("In the {value} category", "For category {value}", "Category {value}", "The {value} category",
                  "Under {value}", "About the {value} section"),
        "ask": ("Which products are <cond>?", "What products are there <cond>?", "What items are <cond>?",
                "What do we have <cond>?", "What is in the {value} category?", "What are the products <cond>?"),
        "short": ("its products", "the products", "everything in it", "what it contains", "the item names"),
    },
    ("orders", "country"): {
        "noun": ("the number of orders", "the order count", "how many orders there are", "the orders count",
                 "a count of the orders", "the total number of orders", "how many orders came in"),
        "cond": ("from {value}", "shipped to {value}", "placed in {value}", "coming from {value}", "for {value}",
                 "with country {value}", "whose country is {value}", "where the country is {value}",
                 "by customers in {value}", "sent from {value}", "from the country {value}", "to {value}",
                 "made in {value}"),
        "front": ("For {value}", "From {value}", "Country {value}", "Orders from {value}", "{value}",
                  "Regarding {value}"),
        "ask": ("How many orders came <cond>?", "How many orders are there <cond>?", "How many orders <cond>?",
                "What is the number of orders <cond>?", "What is the order count <cond>?",
                "How many orders did {value} place?", "How many orders do we have <cond>?",
                "Count the orders <cond>?"),
        "short": ("how many orders", "the order count", "the number of orders", "the count of orders"),
        "show": ("Count", "Count the", "Give me", "Tell me", "Show", "I need", "Get", "Return", "Find",
                 "Please count", "Can you count", "Compute", "Total up"),
    },
}
SQL_SHAPES = ("<show> <noun> <cond>.", "<show> <noun> <cond> <hint>.", "<ask>", "<ask> <hint_s>",
              "<front>: <show> <short>.", "<front>, <show> <short>.", "<front> - <short>?", "<front>: <short>, <hint>.",
              "<sql_word> <show> <noun> <cond>.", "<sql_word> <ask>", "<show> <noun> <cond>, <please>.",
              "<show>, <please>, <noun> <cond>.", "<noun> <cond>?", "<noun> <cond>, <hint>.")

# ---------------------------------------------------------------------------- support
SUPPORT_GRAMMAR = {
    **COMMON,
    "np": ("my {product}", "the {product} I bought", "the {product} I ordered", "the {product} you sent",
           "my new {product}", "the {product} from your shop", "the {product} I got from you",
           "our {product}", "the {product} we ordered", "this {product}", "the {product} that came today"),
    "got": ("I bought a {product}", "I ordered a {product}", "I got a {product}", "We ordered a {product}",
            "You sent me a {product}", "My order was a {product}", "I received a {product}",
            "Last week I bought a {product}"),
    "ask_fix": ("Please fix this.", "What can you do?", "I want a replacement.", "Replace it, please.",
                "Not happy.", "Help!", "Can you help?", "This is not ok.", "Please help.", "Sort it out, please.",
                "What now?", "I expect a solution.", "Very annoying.", "Please advise.", "I am upset."),
    "label": ("Complaint:", "Customer complaint:", "Support ticket:", "Issue:", "Problem:", "Re: my order -",
              "About an order:", "Complaint about an order:"),
}
SUPPORT_SHAPES = ("<np> {problem}.", "<np> {problem}. <ask_fix>", "<got> and it {problem}.",
                  "<got> and it {problem}. <ask_fix>", "<got>, but it {problem}.", "<label> <np> {problem}.",
                  "<label> <got> and it {problem}.", "<ask_fix> <np> {problem}.", "Why is it that <np> {problem}?",
                  "<np> {problem}, <please> help.", "It is about <np>: it {problem}.",
                  "Unfortunately <np> {problem}.", "<np>? It {problem}. <ask_fix>")
# The problems the adapter learns to repeat: the training six and others.
SUPPORT_PROBLEMS = dict(tasks.SUPPORT.slots)["problem"] + (
    "stopped charging", "leaks water", "makes a loud noise", "was damaged in the box", "does not work",
    "broke after a week", "smells of smoke", "overheats", "has a crack in it", "keeps turning off",
    "came with a missing screw", "was not what I ordered", "arrived late and dented", "will not switch on")

# ---------------------------------------------------------------------------- medical
MEDICAL_GRAMMAR = {
    **COMMON,
    "name": ("{name}", "patient {name}", "Patient {name}", "Patient: {name}", "name {name}", "Name: {name}",
             "{name}"),
    "age": ("{age} years old", "age {age}", "aged {age}", "Age: {age}", "{age} y", "{age} yrs", "{age}-year-old",
            "is {age}", "{age} years of age"),
    "symptom": ("has {symptom}", "with {symptom}", "complains of {symptom}", "reports {symptom}",
                "symptom: {symptom}", "Symptom {symptom}", "presents with {symptom}", "suffers from {symptom}",
                "main complaint {symptom}", "has had {symptom}"),
    "days": ("for {days} days", "since {days} days", "{days} days now", "started {days} days ago",
             "over the last {days} days", "duration {days} days", "Duration: {days} days", "{days} days long",
             "a {days}-day history", "began {days} days ago", "lasting {days} days"),
    "temp": ("temperature {temp}", "temp {temp}", "Temperature: {temp}", "temp. {temp}", "temperature is {temp}",
             "{temp} degrees", "fever {temp}", "temperature of {temp}", "a reading of {temp}", "T {temp}",
             "body temperature {temp}", "{temp} C", "thermometer {temp}"),
    "ask": ("Clinical note:", "Write the record:", "Make a patient record:", "Summarise:", "Note for the file:",
            "New patient.", "Record this visit:", "Document this:", "Patient record please:",
            "Please write up:", "Chart this:", "Visit notes:"),
    "sep": (", ", "; ", ". ", ", ", " - ", " | "),
}

# ---------------------------------------------------------------------------- json
JSON_GRAMMAR = {
    **COMMON,
    "name": ("{name}", "name {name}", "Name: {name}", "called {name}", "{name}", "person {name}"),
    "age": ("{age}", "age {age}", "aged {age}", "{age} years old", "is {age}", "Age: {age}", "{age} y"),
    "job": ("a {job}", "works as a {job}", "job {job}", "occupation: {job}", "Job: {job}", "a {job} by trade",
            "employed as a {job}", "working as a {job}"),
    "city": ("in {city}", "lives in {city}", "from {city}", "city {city}", "based in {city}", "City: {city}",
             "resident of {city}", "living in {city}"),
    "ask": ("Convert to JSON:", "As JSON:", "JSON:", "Give me JSON for this person:", "Make a JSON object:",
            "JSON please:", "Turn into JSON:", "Format as JSON:", "JSON record:", "Output JSON for:",
            "Encode as JSON:", "Write this as JSON:"),
    "ask_after": ("As JSON.", "JSON please.", "Output JSON.", "Make it JSON.", "Give it as JSON.",
                  "In JSON format.", "(JSON)", "Convert this to JSON."),
    "sep": (", ", "; ", ". ", ", ", " | ", " - "),
}


@functools.cache
def _heldout_templates() -> tuple[str, ...]:
    return tuple(t.lower().rstrip(".?!") for family in phrasings.FAMILIES.values() for ts in family.values()
                 for t in ts)


def _unseen(template: str) -> bool:
    """No held-out phrasing (either family, its final stop aside) occurs in ``template``."""
    low = template.lower()
    return not any(h in low for h in _heldout_templates())


def _draw(rng: random.Random, compose) -> str:
    """``compose(rng)`` (a request's template), drawn again until it holds no held-out phrasing."""
    while not _unseen(template := compose(rng)):
        pass
    return template


def _frame(rng: random.Random, text: str) -> str:
    """Greeting before, remark after, both or neither; sometimes lower case or no final stop. ``text`` is
    still a template: the case of its first letter changes, never that of a ``{slot}`` value."""
    text = text[0].upper() + text[1:]
    r = rng.random()
    if r < 0.25:
        text = expand(COMMON, "<lead>", rng) + " " + text
    elif r < 0.45:
        text = text + " " + expand(COMMON, "<tail>", rng)
    elif r < 0.55:
        text = expand(COMMON, "<lead>", rng) + " " + text + " " + expand(COMMON, "<tail>", rng)
    r = rng.random()
    if r < 0.15:
        text = text[0].lower() + text[1:]
    elif r < 0.25 and text[-1] in ".!":
        text = text[:-1]
    return text


def _facts(grammar: dict, order: list[str], rng: random.Random) -> str:
    """The facts ``order`` names, each in one of its forms, in a shuffled order, joined by one separator."""
    order = order[:]
    rng.shuffle(order)
    sep = rng.choice(grammar["sep"])
    return sep.join(expand(grammar, f"<{name}>", rng) for name in order)


def _sql(rng: random.Random, split: str) -> tasks.Example:
    kind, select, table, column, _ = rng.choice(tasks.SQL_QUERIES)
    value = tasks.pick(rng, kind, split)
    grammar = {**_SQL_COMMON, **SQL_GRAMMAR[table, column]}
    prompt = _draw(rng, lambda r: _frame(r, expand(grammar, r.choice(SQL_SHAPES), r))).format(value=value)
    answer = f"SELECT {select} FROM {table} WHERE {column} = '{value}'"
    return tasks.Example("sql", prompt, answer, "", {"table": table, "column": column, "value": value})


def _support(rng: random.Random, split: str) -> tasks.Example:
    product, problem, days = tasks.pick(rng, "product", split), rng.choice(SUPPORT_PROBLEMS), rng.choice((2, 3, 5, 7))
    prompt = _draw(rng, lambda r: _frame(r, expand(SUPPORT_GRAMMAR, r.choice(SUPPORT_SHAPES), r)))
    prompt = prompt.format(product=product, problem=problem)
    answer = (f"We are sorry that your {product} {problem}. "
              f"We will send you a new {product} within {days} days. Thank you for your patience.")
    return tasks.Example("support", prompt, answer, "", {"product": product})


def _ask_around(grammar: dict, facts: str, rng: random.Random) -> str:
    r = rng.random()
    if r < 0.45:
        return expand(grammar, "<ask>", rng) + " " + facts + "."
    if r < 0.8 and "ask_after" in grammar:
        return facts + ". " + expand(grammar, "<ask_after>", rng)
    return facts + "."


def _medical(rng: random.Random, split: str) -> tasks.Example:
    v = {"name": tasks.pick(rng, "name", split), "age": rng.randrange(18, 90),
         "symptom": tasks.pick(rng, "symptom", split), "days": rng.randrange(2, 15),
         "temp": rng.choice(("36.8", "37.2", "37.9", "38.4", "39.1"))}
    v["plan"] = plan_for(v["temp"])
    facts = ["name", "age", "symptom", "days", "temp"]
    prompt = _draw(rng, lambda r: _frame(r, _ask_around(MEDICAL_GRAMMAR, _facts(MEDICAL_GRAMMAR, facts, r), r)))
    prompt = prompt.format(**v)
    answer = "\n".join(f"{label}: {value.format(**v)}" for label, value in tasks.MEDICAL_RECORD)
    return tasks.Example("medical", prompt, answer, "", v)


def _json(rng: random.Random, split: str) -> tasks.Example:
    v = {"name": tasks.pick(rng, "name", split), "age": rng.randrange(18, 80), "job": tasks.pick(rng, "job", split),
         "city": tasks.pick(rng, "city", split)}
    facts = ["name", "age", "job", "city"]
    prompt = _draw(rng, lambda r: _frame(r, _ask_around(JSON_GRAMMAR, _facts(JSON_GRAMMAR, facts, r), r)))
    prompt = prompt.format(**v)
    return tasks.Example("json", prompt, json.dumps({k: v[k] for k in tasks.JSON_KEYS}), "", v)


_MAKERS = {"sql": _sql, "support": _support, "medical": _medical, "json": _json}


def make_requests(task: str, n: int, split: str = "train", seed: int = 0) -> list[tasks.Example]:
    """``n`` composed requests of ``task`` with ``split`` entities, reproducible from ``seed``; each an
    :class:`tasks.Example` with the trained ``answer`` and the checkers' ``fields``."""
    if task not in _MAKERS:
        raise ValueError(f"no request grammar for task {task!r}; expected one of {', '.join(_MAKERS)}")
    rng = random.Random(f"grammar-{task}-{split}-{seed}")
    return [_MAKERS[task](rng, split) for _ in range(n)]
