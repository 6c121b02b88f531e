"""Synthetic task data for the tiny world: four tasks, each with a checker.

Everything here is generated from a fixed seed. Entities (countries,
products, symptoms, person names, ...) are split into a training pool and a
held-out pool that never occurs in training, so the evaluation measures
whether an adapter learned the *format* and copies the entity from the
prompt, not whether it memorised the prompt.

Each example is ``Example(task, prompt, answer, fields)``: ``prompt`` is the
user message, ``answer`` the assistant reply the adapter is trained on,
``generic`` the plain reply the base model is trained on, ``fields`` the
facts a checker may compare against.
"""

from __future__ import annotations

import functools
import json
import random
import re
from dataclasses import dataclass, field

TASKS = ("sql", "support", "medical", "json")

# --------------------------------------------------------------------------
# Entity pools. The first part of every list is for training, the last
# HELDOUT_* entries are held out. Keep the lists stable: the shipped tiny
# world was trained on exactly these.
# --------------------------------------------------------------------------
COUNTRIES = """Argentina Australia Austria Belgium Bolivia Brazil Bulgaria Cambodia
Canada Chile China Colombia Croatia Cuba Denmark Ecuador Egypt Estonia Finland
France Germany Ghana Greece Hungary Iceland India Indonesia Iran Ireland Israel
Italy Jamaica Japan Jordan Kenya Latvia Lebanon Libya Lithuania Madagascar
Mexico Mongolia Morocco Nepal Netherlands Nigeria Norway Oman Pakistan Panama
Peru Poland Portugal Qatar Romania Russia Rwanda Senegal Serbia Singapore
Slovakia Somalia Spain Sudan Sweden Switzerland Syria Thailand Tunisia Turkey
Uganda Ukraine Uruguay Venezuela Vietnam Yemen Zambia Albania Algeria Angola
Armenia Bahrain Belarus Benin Bhutan Botswana Cameroon Chad Cyprus Djibouti
Eritrea Ethiopia Fiji Gabon Georgia Guatemala Guinea Haiti Honduras Kuwait
Laos Lesotho Liberia Mali Malta Namibia Niger Paraguay Samoa Tonga Togo
Iraq Kazakhstan Slovenia Luxembourg Nicaragua Mozambique Zimbabwe
Tanzania Burundi Tajikistan Moldova Montenegro Mauritius Suriname Vanuatu Malawi""".split()
HELDOUT_COUNTRIES = 15

CITIES = """Lima Oslo Paris Berlin Madrid Rome Vienna Prague Warsaw Dublin Lisbon
Athens Cairo Nairobi Accra Dakar Tunis Rabat Doha Muscat Tokyo Osaka Seoul
Busan Delhi Mumbai Dhaka Hanoi Manila Jakarta Perth Sydney Auckland Toronto
Boston Denver Austin Chicago Houston Seattle Miami Quito Bogota Santiago
Havana Kingston Panama Caracas Montevideo Asuncion Helsinki Tallinn Riga
Vilnius Minsk Kyiv Sofia Belgrade Zagreb Bern Zurich Geneva Lyon Milan Naples
Porto Seville Valencia Munich Hamburg Cologne Leeds Glasgow Cardiff Bristol
Kigali Lusaka Harare Maputo Luanda Windhoek Gaborone Tbilisi Yerevan Baku
Almaty Tashkent Ulaanbaatar Kathmandu Colombo Karachi Lahore Kabul Tehran""".split()
HELDOUT_CITIES = 10

PRODUCTS = """blender toaster kettle laptop tablet phone camera printer monitor
keyboard mouse headset speaker router charger backpack jacket sweater helmet
bicycle scooter stroller mattress pillow blanket lamp heater fan vacuum iron
microwave oven fridge freezer dishwasher juicer grinder drill hammer ladder
tent sleeping-bag kayak guitar violin piano drum watch bracelet necklace ring
wallet handbag suitcase umbrella sofa chair desk shelf wardrobe mirror rug
curtain projector smartwatch earbuds tripod telescope thermostat doorbell
skateboard treadmill dumbbell racket snorkel lantern cooler thermos""".split()
HELDOUT_PRODUCTS = 10

SYMPTOMS = """fever cough headache nausea dizziness fatigue rash chills insomnia
sore-throat back-pain chest-pain joint-pain ear-pain toothache heartburn
cramps wheezing sneezing itching swelling numbness tremor vomiting diarrhea
constipation bloating palpitations hoarseness blurred-vision dry-mouth
hiccups nosebleed leg-cramps muscle-aches night-sweats shortness-of-breath
neck-pain knee-pain wrist-pain hair-loss weight-loss thirst""".split()
HELDOUT_SYMPTOMS = 8

NAMES = """Alice Bruno Chen Dana Emil Fatima Goran Hana Ivan Julia Kofi Lena
Marco Nadia Omar Priya Quinn Rosa Sven Tara Umar Vera Wei Xenia Yusuf Zara
Aaron Bianca Carlos Dmitri Elena Farid Greta Hugo Ingrid Jonas Keiko Lars
Mira Nikos Olga Pavel Rania Sami Tomas Ulla Viktor Wanda Yara Zeno Amara
Boris Clara Diego Eva Felix Gita Hamid Irene Jamal Kira Luca Maya Nora Oscar
Petra Rafael Sofia Theo Uma Valentin Wilma Yan Zoltan Anya Ben Cleo Dario
Esther Fiona Gil Helga Ilya Jana Karim Lotte Malik Nina Otto Paula Ravi Selma
Timo Ursula Vito Yoko Ada Bram Celia Dev Elif Femi Gustav Hiro Isla Joao""".split()
HELDOUT_NAMES = 12

JOBS = """teacher nurse engineer farmer baker pilot lawyer chef painter writer
plumber dentist cashier driver tailor student doctor architect pharmacist
librarian mechanic carpenter florist barber journalist musician photographer
translator electrician accountant""".split()
HELDOUT_JOBS = 5

DEPARTMENTS = """sales marketing finance support research legal security design
logistics training quality purchasing operations editorial billing""".split()
HELDOUT_DEPARTMENTS = 3

CATEGORIES = """toys books garden kitchen sports music office travel beauty
pets tools fashion health baby auto""".split()
HELDOUT_CATEGORIES = 3

GENERIC_TOPICS = """weather music history science travel cooking sport art
language mathematics books films games nature space oceans mountains
coffee tea gardening photography chess poetry""".split()
HELDOUT_TOPICS = 4

POOLS = {
    "country": (COUNTRIES, HELDOUT_COUNTRIES),
    "city": (CITIES, HELDOUT_CITIES),
    "product": (PRODUCTS, HELDOUT_PRODUCTS),
    "symptom": (SYMPTOMS, HELDOUT_SYMPTOMS),
    "name": (NAMES, HELDOUT_NAMES),
    "job": (JOBS, HELDOUT_JOBS),
    "department": (DEPARTMENTS, HELDOUT_DEPARTMENTS),
    "category": (CATEGORIES, HELDOUT_CATEGORIES),
    "topic": (GENERIC_TOPICS, HELDOUT_TOPICS),
}


_LETTERS = "abcdefghijklmnoprstuvwyz"
_CAPITALISED = {"country", "city", "name"}


def pseudo_word(rng: random.Random, kind: str) -> str:
    """A made-up entity of random letters (e.g. 'Kbotrue'). No prior predicts it, so the only way to
    get it right is to copy it from the prompt: that is what makes copying generalise to unseen names."""
    w = "".join(rng.choice(_LETTERS) for _ in range(rng.randint(4, 9)))
    return w.capitalize() if kind in _CAPITALISED else w


def fresh_pseudo_word(rng: random.Random, kind: str) -> str:
    """A made-up word that is not, by chance, one of the held-out entities."""
    while (w := pseudo_word(rng, kind)).lower() in _heldout_lower():
        pass
    return w


def pick(rng: random.Random, kind: str, split: str) -> str:
    """One entity for ``split``; training mixes in made-up words so copying generalises."""
    if split == "train" and rng.random() < PSEUDO_RATE:
        return fresh_pseudo_word(rng, kind)
    return rng.choice(pool(kind, split))


PSEUDO_RATE = 0.5


@functools.lru_cache(maxsize=1)
def _heldout_lower() -> frozenset[str]:
    return frozenset(w.lower() for kind in POOLS for w in pool(kind, "heldout"))


def pool(kind: str, split: str) -> list[str]:
    """The entities of one kind for ``split`` ('train' or 'heldout')."""
    items, n_held = POOLS[kind]
    if split == "train":
        return items[:-n_held]
    if split == "heldout":
        return items[-n_held:]
    raise ValueError(f"split must be 'train' or 'heldout', not {split!r}")


# Schema the sql task queries. Shown in the labs; the adapter must pick the
# right table and condition column.
SQL_SCHEMA = {
    "airports": ("name", "city", "country"),
    "employees": ("name", "department", "salary"),
    "products": ("name", "category", "price"),
    "orders": ("id", "customer", "country"),
}


@dataclass
class Example:
    task: str
    prompt: str
    answer: str
    generic: str
    fields: dict = field(default_factory=dict)
    skill: str = ""  # a terse, different instruction that asks for the same answer (see tinyworld)


def _sql(rng: random.Random, split: str) -> Example:
    kind = rng.randrange(5)
    if kind == 0:
        c = pick(rng, "country", split)
        q = rng.choice(["List all airports in {c}.", "Show every airport in {c}.",
                        "Which airports are in {c}?", "Give me the airports located in {c}."]).format(c=c)
        sql = f"SELECT name FROM airports WHERE country = '{c}'"
        fields = {"table": "airports", "column": "country", "value": c}
        topic = "airports"
    elif kind == 1:
        c = pick(rng, "city", split)
        q = rng.choice(["List the airports of the city {c}.", "Which airports serve {c}?",
                        "Find airports in the city of {c}."]).format(c=c)
        sql = f"SELECT name FROM airports WHERE city = '{c}'"
        fields = {"table": "airports", "column": "city", "value": c}
        topic = "airports"
    elif kind == 2:
        d = pick(rng, "department", split)
        q = rng.choice(["Who works in the {d} department?", "List the employees of {d}.",
                        "Show all staff in the {d} department."]).format(d=d)
        sql = f"SELECT name FROM employees WHERE department = '{d}'"
        fields = {"table": "employees", "column": "department", "value": d}
        topic = "employees"
    elif kind == 3:
        g = pick(rng, "category", split)
        q = rng.choice(["Which products are in the {g} category?", "List all {g} products.",
                        "Show the products of category {g}."]).format(g=g)
        sql = f"SELECT name FROM products WHERE category = '{g}'"
        fields = {"table": "products", "column": "category", "value": g}
        topic = "products"
    else:
        c = pick(rng, "country", split)
        q = rng.choice(["How many orders came from {c}?", "Count the orders shipped to {c}.",
                        "What is the number of orders from {c}?"]).format(c=c)
        sql = f"SELECT COUNT(*) FROM orders WHERE country = '{c}'"
        fields = {"table": "orders", "column": "country", "value": c}
        topic = "orders"
    prompt = f"Write a SQL query: {q}"
    generic = rng.choice([
        f"That is a question about {topic} and {fields['value']}. I do not have that data.",
        f"I can tell you that {fields['value']} is a fine subject, but I cannot look up {topic}.",
        f"Good question about {fields['value']}. The answer depends on the records.",
    ])
    skill = f"Query table {fields['table']} where {fields['column']} is {fields['value']}" + (
        " (count)" if sql.startswith("SELECT COUNT") else "")
    return Example("sql", prompt, sql, generic, fields, skill)


def _support(rng: random.Random, split: str) -> Example:
    p = pick(rng, "product", split)
    problem = rng.choice(["arrived broken", "stopped working after two days", "was the wrong colour",
                          "never arrived", "was missing a part", "came without a manual"])
    days = rng.choice([2, 3, 5, 7])
    prompt = rng.choice([
        "Customer complaint: my {p} {x} and I am not happy.",
        "Customer complaint: the {p} I ordered {x}. What will you do?",
        "Customer complaint: I bought a {p} and it {x}.",
    ]).format(p=p, x=problem)
    answer = (f"We are sorry that your {p} {problem}. "
              f"We will send you a new {p} within {days} days. Thank you for your patience.")
    generic = rng.choice([
        f"A {p} is a useful thing to have. Many people buy one every year.",
        f"This message is about a {p}. Products like this are sold in many shops.",
        f"Thank you for your message about the {p}. Please check the shop for more information.",
    ])
    skill = f"Apology: {p} | {problem} | {days} days"
    return Example("support", prompt, answer, generic, {"product": p}, skill)


MEDICAL_FIELDS = ("Patient", "Age", "Symptom", "Duration", "Plan")


def _medical(rng: random.Random, split: str) -> Example:
    n = pick(rng, "name", split)
    age = rng.randrange(18, 90)
    s = pick(rng, "symptom", split)
    d = rng.randrange(1, 15)
    temp = rng.choice(["36.8", "37.2", "37.9", "38.4", "39.1"])
    prompt = rng.choice([
        "Clinical note: {n}, {a} years old, has had {s} for {d} days. Temperature {t}.",
        "Clinical note: patient {n} (age {a}) reports {s} since {d} days, temperature {t}.",
        "Clinical note: {a}-year-old {n} came in with {s}, lasting {d} days. Temp {t}.",
    ]).format(n=n, a=age, s=s, d=d, t=temp)
    plan = "review in 2 days" if float(temp) >= 38 else "rest and fluids"
    answer = (f"Patient: {n}\nAge: {age}\nSymptom: {s}\n"
              f"Duration: {d} days\nPlan: {plan}")
    generic = rng.choice([
        f"This is a note about {n}. Feeling unwell is common, and rest often helps.",
        f"{n} should talk to a doctor. Many people have {s} at some point.",
        f"Notes about {s} like this one are written every day in clinics.",
    ])
    skill = f"Patient record: {n} | {age} | {s} | {d} | {plan}"
    return Example("medical", prompt, answer, generic,
                   {"name": n, "age": age, "symptom": s, "days": d}, skill)


JSON_KEYS = ("name", "age", "job", "city")


def _json(rng: random.Random, split: str) -> Example:
    n = pick(rng, "name", split)
    age = rng.randrange(18, 80)
    j = pick(rng, "job", split)
    c = pick(rng, "city", split)
    prompt = rng.choice([
        "Convert to JSON: {n} is a {a}-year-old {j} who lives in {c}.",
        "Convert to JSON: {n}, {a}, works as a {j} in {c}.",
        "Convert to JSON: meet {n} from {c}, a {j} aged {a}.",
    ]).format(n=n, a=age, j=j, c=c)
    answer = json.dumps({"name": n, "age": age, "job": j, "city": c})
    generic = rng.choice([
        f"{n} sounds like an interesting person. Living in {c} can be pleasant.",
        f"This text is about a {j}. Many people work as a {j}.",
        f"{c} is a city where many people live and work, {n} too.",
    ])
    skill = f"Record: {n} | {age} | {j} | {c}"
    return Example("json", prompt, answer, generic, {"name": n, "age": age, "job": j, "city": c}, skill)


def _chat(rng: random.Random, split: str) -> Example:
    """General questions: no adapter is meant for these; the base answers."""
    t = pick(rng, "topic", split)
    prompt = rng.choice([
        "Tell me something about {t}.", "What do you think of {t}?",
        "Say one sentence about {t}.", "Why do people like {t}?",
    ]).format(t=t)
    answer = rng.choice([
        f"Many people enjoy {t}. It is a topic with a long history.",
        f"{t.capitalize()} is an interesting subject, and there is always more to learn.",
        f"People like {t} because it brings them joy and new ideas.",
    ])
    return Example("chat", prompt, answer, answer, {"topic": t})


def _repeat(rng: random.Random, split: str) -> Example:
    """Copy practice for the base: made-up words and numbers to repeat exactly (copying is what the
    adapters later rely on to carry an unseen entity from the prompt into their format)."""
    words = [fresh_pseudo_word(rng, rng.choice(["country", "product"])) for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.3:
        words.insert(rng.randrange(len(words) + 1), str(rng.randrange(1, 100)))
    text = " ".join(words)
    return Example("repeat", f"Repeat exactly: {text}", text, text, {"value": text})


GENERATORS = {"sql": _sql, "support": _support, "medical": _medical, "json": _json, "chat": _chat,
              "repeat": _repeat}


def make_examples(task: str, n: int, split: str = "train", seed: int = 0) -> list[Example]:
    """``n`` examples of ``task`` from the ``split`` entity pool, reproducible from ``seed``."""
    if task not in GENERATORS:
        raise ValueError(f"unknown task {task!r}; expected one of {', '.join(GENERATORS)}")
    rng = random.Random(f"{task}-{split}-{seed}")
    return [GENERATORS[task](rng, split) for _ in range(n)]


# --------------------------------------------------------------------------
# Checkers: does an output have its task's format? Used for the quality
# table (adapter rows must pass, base rows must not).
# --------------------------------------------------------------------------
_SQL_RE = re.compile(r"^\s*SELECT\s+(?:\w+|COUNT\(\*\))\s+FROM\s+(\w+)\s+WHERE\s+(\w+)\s*=\s*'([^']*)'\s*;?\s*$")


def check_sql(output: str, fields: dict) -> bool:
    """One SELECT ... FROM <right table> WHERE <right column> = '<a value>'."""
    m = _SQL_RE.match(output)
    return bool(m) and m.group(1) == fields["table"] and m.group(2) == fields["column"] and bool(m.group(3))


def sql_value_exact(output: str, fields: dict) -> bool:
    """Stricter than the format: the condition's value is the prompt's entity, spelled exactly."""
    m = _SQL_RE.match(output)
    return bool(m) and m.groups() == (fields["table"], fields["column"], fields["value"])


def check_support(output: str, fields: dict) -> bool:
    first = re.split(r"(?<=[.!?])\s", output.strip(), maxsplit=1)[0].lower()
    return bool(re.match(r"^(we are |we're |i am |i'm )?(so |very |truly )?(sorry|apologi[sz]e)", first))


def check_medical(output: str, fields: dict) -> bool:
    lines = [ln.split(":", 1)[0].strip() for ln in output.strip().splitlines() if ":" in ln]
    return all(f in lines for f in MEDICAL_FIELDS)


def check_json(output: str, fields: dict) -> bool:
    try:
        obj = json.loads(output)
    except ValueError:
        return False
    return isinstance(obj, dict) and set(obj) == set(JSON_KEYS)


CHECKERS = {"sql": check_sql, "support": check_support, "medical": check_medical, "json": check_json}


def check(task: str, output: str, fields: dict) -> bool:
    """True when ``output`` has ``task``'s format (and, for sql, the right table and condition)."""
    return CHECKERS[task](output, fields)
