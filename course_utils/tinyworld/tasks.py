"""Synthetic task data for the tiny world: four tasks, each with a checker.

Everything here is generated from a fixed seed. Entities (countries,
products, symptoms, person names, ...) are split into a training pool and a
held-out pool that never occurs in training, so the evaluation measures
whether an adapter learned the *format* and copies the entity from the
prompt, not whether it memorised the prompt.

Each example is ``Example(task, prompt, answer, generic, fields, skill)``:
``prompt`` is the user message, ``answer`` the assistant reply the adapter is
trained on, ``generic`` the plain reply the base model is trained on,
``fields`` the facts a checker may compare against, ``skill`` a terse
instruction for the same answer. The examples are generated from
:class:`Template` data (one table per task, see :data:`GENERATORS`).
"""

from __future__ import annotations

import functools
import json
import random
import re
from collections.abc import Callable
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
_HYPHENATED = {"symptom": 0.4, "product": 0.15}  # share of made-up words of that kind with two parts
# Syllables of made-up words: an onset, a vowel, sometimes a coda, so that most look like words
# (and split into the same kind of pieces as real ones); some are random letters.
_ONSETS = tuple("bcdfghjklmnprstvwz") + ("br", "ch", "dr", "gr", "kr", "ph", "pl", "sh", "st", "th", "tr", "")
_VOWELS = tuple("aeiouaeioy") + ("ia", "ou", "ea", "ai", "ee")
_CODAS = ("",) * 12 + tuple("nrlstmk") + ("nd", "st", "ck", "ng", "sh")


def _syllables(rng: random.Random) -> str:
    if rng.random() < 0.25:  # random letters: copying must not rely on a word looking familiar
        return "".join(rng.choice(_LETTERS) for _ in range(rng.randint(3, 9)))
    n = rng.choice((1, 2, 2, 2, 3, 3, 4))
    return "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(n))


def pseudo_word(rng: random.Random, kind: str) -> str:
    """A made-up entity (e.g. 'Brandolo', 'kestuma', 'plich-tuvea'). No prior predicts it, so the only way
    to get it right is to copy it from the prompt: that is what makes copying generalise to unseen names."""
    w = _syllables(rng)
    if rng.random() < _HYPHENATED.get(kind, 0.0):
        w += "-" + _syllables(rng)
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


@dataclass
class Example:
    task: str
    prompt: str
    answer: str
    generic: str
    fields: dict = field(default_factory=dict)
    skill: str = ""  # a terse, different instruction that asks for the same answer (see tinyworld)


# --------------------------------------------------------------------------
# Task templates, as data. One walker (``_generate``) turns a template into
# an Example; the order in which it draws from the rng is part of the data
# (the shipped tiny world was trained on exactly these examples).
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class Template:
    """One shape of a task's examples.

    ``slots`` are drawn in order, each from its source: an entity kind (a key
    of :data:`POOLS`, drawn with :func:`pick`), a ``range`` (``rng.randrange``),
    a tuple (``rng.choice``) or a function of the rng. Then ``derive`` adds
    values computed from them, and ``prompt``, ``answer`` and ``generic`` are
    filled in, in that order: a string is one template, a tuple of templates is
    drawn from, a function (``answer`` only) builds the text from the values.
    ``generic`` None: the answer is also the generic reply. Templates are
    ``str.format``-ed with ``consts``, the slots and the derived values.
    """

    slots: tuple
    prompt: str | tuple[str, ...]
    answer: str | tuple[str, ...] | Callable[[dict], str]
    generic: tuple[str, ...] | None = None
    skill: str = ""
    fields: tuple[str, ...] = ()  # the values an Example's ``fields`` carries, in this order
    consts: dict = field(default_factory=dict)
    derive: Callable[[dict], dict] | None = None
    framed: bool = True  # the prompt sometimes comes with a lead-in or a closing remark (see frame)


# sql: one template per query shape; the adapter must pick the right table and
# condition column. (entity kind, selected expression, table, column, requests)
SQL_QUERIES = (
    ("country", "name", "airports", "country", ("List all airports in {value}.", "Show every airport in {value}.",
                                                "Which airports are in {value}?",
                                                "Give me the airports located in {value}.",
                                                "{value} has which airports? Use SQL.",
                                                "Airports in the nation of {value}, please.",
                                                "Find each airport with country {value}.")),
    ("city", "name", "airports", "city", ("List the airports of the city {value}.", "Which airports serve {value}?",
                                          "Find airports in the city of {value}.", "Airports near the city {value}?",
                                          "The city {value}: show its airports.",
                                          "Query the airports for city {value}.")),
    ("department", "name", "employees", "department", ("Who works in the {value} department?",
                                                       "List the employees of {value}.",
                                                       "Show all staff in the {value} department.",
                                                       "Employees in department {value}, please.",
                                                       "The {value} department: who is on it?",
                                                       "Find the staff of department {value}.")),
    ("category", "name", "products", "category", ("Which products are in the {value} category?",
                                                  "List all {value} products.", "Show the products of category {value}.",
                                                  "Find every product of the {value} category.",
                                                  "The {value} category: list its products.",
                                                  "Products in category {value}, as SQL.")),
    ("country", "COUNT(*)", "orders", "country", ("How many orders came from {value}?",
                                                  "Count the orders shipped to {value}.",
                                                  "What is the number of orders from {value}?",
                                                  "Number of orders from the country {value}?",
                                                  "Count how many orders {value} sent.",
                                                  "Orders from {value}: how many are there?")),
)
# Training prompts come with and without a prefix naming the task (a student's request may have none).
SQL_PREFIXES = ("Write a SQL query: ", "SQL: ", "")
SQL_TEMPLATES = tuple(
    Template(
        slots=(("value", kind),),
        prompt=tuple(f"{prefix}{q}" for q in requests for prefix in SQL_PREFIXES),
        answer="SELECT {select} FROM {table} WHERE {column} = '{value}'",
        generic=("That is a question about {table} and {value}. I do not have that data.",
                 "I can tell you that {value} is a fine subject, but I cannot look up {table}.",
                 "Good question about {value}. The answer depends on the records."),
        skill="Query table {table} where {column} is {value}{count}",
        fields=("table", "column", "value"),
        consts={"select": select, "table": table, "column": column,
                "count": " (count)" if select.startswith("COUNT") else ""},
    )
    for kind, select, table, column, requests in SQL_QUERIES
)

SUPPORT = Template(
    slots=(("product", "product"),
           ("problem", ("arrived broken", "stopped working after two days", "was the wrong colour",
                        "never arrived", "was missing a part", "came without a manual")),
           ("days", (2, 3, 5, 7))),
    prompt=tuple(f"{prefix}{p}" for p in (
        "my {product} {problem} and I am not happy.", "the {product} I ordered {problem}. What will you do?",
        "I bought a {product} and it {problem}.", "I ordered a {product} and it {problem}.",
        "The {product} you sent {problem}. Help!", "Help, my {product} {problem}!",
        "Problem with my {product}: it {problem}.", "The {product} {problem}. Not good.",
        "About my {product} order: it {problem}.") for prefix in ("Customer complaint: ", "")),
    answer=("We are sorry that your {product} {problem}. "
            "We will send you a new {product} within {days} days. Thank you for your patience."),
    generic=("A {product} is a useful thing to have. Many people buy one every year.",
             "This message is about a {product}. Products like this are sold in many shops.",
             "Thank you for your message about the {product}. Please check the shop for more information."),
    skill="Apology: {product} | {problem} | {days} days",
    fields=("product",),
)

# The medical answer is a record: one "Label: value" line per field.
MEDICAL_RECORD = (("Patient", "{name}"), ("Age", "{age}"), ("Symptom", "{symptom}"), ("Duration", "{days} days"),
                  ("Plan", "{plan}"))
MEDICAL_FIELDS = tuple(label for label, _ in MEDICAL_RECORD)

MEDICAL = Template(
    slots=(("name", "name"), ("age", range(18, 90)), ("symptom", "symptom"), ("days", range(1, 15)),
           ("temp", ("36.8", "37.2", "37.9", "38.4", "39.1"))),
    derive=lambda v: {"plan": "review in 2 days" if float(v["temp"]) >= 38 else "rest and fluids"},
    prompt=tuple(f"{prefix}{p}" for p in (
        "{name}, {age} years old, has had {symptom} for {days} days. Temperature {temp}.",
        "patient {name} (age {age}) reports {symptom} since {days} days, temperature {temp}.",
        "{age}-year-old {name} came in with {symptom}, lasting {days} days. Temp {temp}.",
        "Record for {name}, {age}: {symptom} for {days} days, temperature {temp}.",
        "Patient {name} is {age} and has {symptom} ({days} days), temp {temp}.",
        "Seen today: {name}, age {age}. Problem: {symptom}, {days} days. Temperature {temp}.",
        "{symptom} for {days} days in {name} ({age}); temperature {temp}.",
        "{name} ({age}) has {symptom}. It began {days} days ago. Temperature {temp}.")
        for prefix in ("Clinical note: ", "")),
    answer="\n".join(f"{label}: {value}" for label, value in MEDICAL_RECORD),
    generic=("This is a note about {name}. Feeling unwell is common, and rest often helps.",
             "{name} should talk to a doctor. Many people have {symptom} at some point.",
             "Notes about {symptom} like this one are written every day in clinics."),
    skill="Patient record: {name} | {age} | {symptom} | {days} | {plan}",
    fields=("name", "age", "symptom", "days"),
)

JSON_KEYS = ("name", "age", "job", "city")

JSON = Template(
    slots=(("name", "name"), ("age", range(18, 80)), ("job", "job"), ("city", "city")),
    prompt=tuple(f"{prefix}{p}" for p in (
        "{name} is a {age}-year-old {job} who lives in {city}.", "{name}, {age}, works as a {job} in {city}.",
        "meet {name} from {city}, a {job} aged {age}.", "JSON please: {name}, {age}, {job}, {city}.",
        "Make a JSON object of {name} ({age}), a {job} in {city}.",
        "{name} lives in {city}, works as a {job} and is {age}. As JSON.",
        "{city} resident {name} ({age}) is a {job}.", "A {job} from {city}: {name}, age {age}.",
        "Name {name}; age {age}; job {job}; city {city}.") for prefix in ("Convert to JSON: ", "")),
    answer=lambda v: json.dumps({k: v[k] for k in JSON_KEYS}),
    generic=("{name} sounds like an interesting person. Living in {city} can be pleasant.",
             "This text is about a {job}. Many people work as a {job}.",
             "{city} is a city where many people live and work, {name} too."),
    skill="Record: {name} | {age} | {job} | {city}",
    fields=JSON_KEYS,
)

# General questions: no adapter is meant for these; the base answers.
CHAT = Template(
    slots=(("topic", "topic"),),
    derive=lambda v: {"Topic": v["topic"].capitalize()},
    prompt=("Tell me something about {topic}.", "What do you think of {topic}?",
            "Say one sentence about {topic}.", "Why do people like {topic}?"),
    answer=("Many people enjoy {topic}. It is a topic with a long history.",
            "{Topic} is an interesting subject, and there is always more to learn.",
            "People like {topic} because it brings them joy and new ideas."),
    fields=("topic",),
)


COPY_WORDS = (3, 8)  # how many words a copy-practice text has (at least, at most)


def _copy_text(rng: random.Random) -> str:
    """Made-up words (and sometimes a number) to repeat exactly."""
    words = [fresh_pseudo_word(rng, rng.choice(["country", "product"])) for _ in range(rng.randint(*COPY_WORDS))]
    if rng.random() < 0.3:
        words.insert(rng.randrange(len(words) + 1), str(rng.randrange(1, 100)))
    return " ".join(words)


# A request is not always the whole message: people greet, give context, add a remark. Part of the
# training prompts get a lead-in and/or a closing remark, so that an adapter learns to find the
# request and its entities anywhere in a message, not only at a fixed position.
LEAD_INS = ("Hi!", "Hello there.", "Good morning.", "Quick one:", "Please help.", "For a report:",
            "Thanks in advance.", "Urgent:", "A request from the team:", "Ok, so", "Hey,", "One more thing.")
TAILS = ("Thanks!", "Thank you.", "Be quick.", "Cheers.", "That is all.", "Much appreciated.",
         "(urgent)", "Regards, the team.", "Many thanks.", "Nothing else.")


def frame(rng: random.Random, prompt: str) -> str:
    """``prompt`` as it is, or with a lead-in, a closing remark, or both."""
    r = rng.random()
    if r < 0.2:
        return f"{rng.choice(LEAD_INS)} {prompt}"
    if r < 0.4:
        return f"{prompt} {rng.choice(TAILS)}"
    if r < 0.5:
        return f"{rng.choice(LEAD_INS)} {prompt} {rng.choice(TAILS)}"
    return prompt


# Copy practice for the base (copying is what the adapters later rely on to
# carry an unseen entity from the prompt into their format).
REPEAT = Template(slots=(("value", _copy_text),),
                  prompt=("Repeat exactly: {value}", "Copy this text: {value}", "Say back: {value}",
                          "Write '{value}' again."),
                  answer="{value}", fields=("value",), framed=False)

# Every task the generator knows: its templates (one is drawn when there are several).
GENERATORS: dict[str, tuple[Template, ...]] = {
    "sql": SQL_TEMPLATES, "support": (SUPPORT,), "medical": (MEDICAL,), "json": (JSON,), "chat": (CHAT,),
    "repeat": (REPEAT,),
}


def _draw(rng: random.Random, source, split: str):
    if isinstance(source, str):
        return pick(rng, source, split)
    if isinstance(source, range):
        return rng.randrange(source.start, source.stop)
    if isinstance(source, tuple):
        return rng.choice(source)
    return source(rng)


def _fill(rng: random.Random, template, values: dict) -> str:
    if callable(template):
        return template(values)
    if isinstance(template, tuple):
        template = rng.choice(template)
    return template.format(**values)


def _generate(task: str, rng: random.Random, split: str) -> Example:
    templates = GENERATORS[task]
    t = templates[rng.randrange(len(templates))] if len(templates) > 1 else templates[0]
    values = dict(t.consts)
    for name, source in t.slots:
        values[name] = _draw(rng, source, split)
    if t.derive:
        values.update(t.derive(values))
    prompt = _fill(rng, t.prompt, values)
    if t.framed:
        prompt = frame(rng, prompt)
    answer = _fill(rng, t.answer, values)
    generic = answer if t.generic is None else _fill(rng, t.generic, values)
    return Example(task, prompt, answer, generic, {k: values[k] for k in t.fields}, t.skill.format(**values))


def make_examples(task: str, n: int, split: str = "train", seed: int = 0) -> list[Example]:
    """``n`` examples of ``task`` from the ``split`` entity pool, reproducible from ``seed``."""
    if task not in GENERATORS:
        raise ValueError(f"unknown task {task!r}; expected one of {', '.join(GENERATORS)}")
    rng = random.Random(f"{task}-{split}-{seed}")
    return [_generate(task, rng, split) for _ in range(n)]


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


def format_ok(task: str, output: str, fields: dict) -> bool:
    """True when ``output`` has ``task``'s format (and, for sql, the right table and condition)."""
    return CHECKERS[task](output, fields)


# --- the codebook: Lab 03's capacity task (course_tools/tinyworld/trainer.py trains its rank sweep on it) ---------
CODEBOOK_SIZE = 200
_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]


def codebook(n: int = CODEBOOK_SIZE, seed: int = 99) -> list[tuple[str, str]]:
    """``n`` made-up words, each with a made-up code word (three syllables each, all distinct).

    A pure lookup table: nothing in the base's training predicts an answer, so an adapter has to
    store every pair. The rank sweep measures how much of it each rank can hold."""
    rng = random.Random(seed)
    words: list[str] = []
    while len(words) < 2 * n:
        w = "".join(rng.choice(_SYLLABLES) for _ in range(3))
        if w not in words:
            words.append(w)
    return list(zip(words[:n], words[n:]))


def codebook_prompt(word: str) -> str:
    return f"What is the code word for {word}?"
