"""Is an output *right*, not just well-formed? One checker per task, each returning a :class:`Verdict`.

:func:`course_utils.tinyworld.tasks.format_ok` asks whether an output has its task's *format*
(a SELECT on the right table, an apology, a record with five labels, JSON with four keys).
The checkers here ask whether it is the right *answer* for the request, from the Example's
``fields`` (the facts the request states):

* ``sql``: the output is one SELECT statement; it is executed with :mod:`sqlite3` against an
  in-memory database that holds the table the request names (schema from the templates in
  :data:`tasks.SQL_QUERIES`), rows for the asked-for entity and distractor rows; right = it
  runs and returns exactly the rows (names) or the count the request asks for.
* ``json``: ``json.loads`` gives an object with exactly the keys :data:`tasks.JSON_KEYS`, and
  every value equals the stated one (``age`` an int).
* ``medical``: every label of :data:`tasks.MEDICAL_RECORD` occurs once, with the stated value
  (``Plan`` follows from the temperature: see :func:`fields_of`).
* ``support``: an apology (the format check) that names the product exactly and never names it
  misspelt. The replacement's delivery days are drawn at random in training (the prompt does
  not state them), so they are not checked.

Each checker's reason (``Verdict.why``) is short, so the evaluation can show what went wrong.
"""

from __future__ import annotations

import difflib
import itertools
import json
import random
import re
import sqlite3
from dataclasses import dataclass

from . import tasks


@dataclass(frozen=True)
class Verdict:
    right: bool
    why: str  # "正确" when right, else what is wrong ("<field> 是 ..." for a wrong value)

    def __bool__(self) -> bool:
        return self.right


OK = Verdict(True, "正确")


def _wrong(why: str) -> Verdict:
    return Verdict(False, why)


# --------------------------------------------------------------------------
# sql: execute the query against a small database built for the request.
# --------------------------------------------------------------------------
# Every table the templates query, with its columns. Each table has a ``name`` column (or an
# ``id``) so that plausible wrong queries (wrong column, wrong table) run and return wrong
# rows rather than only failing to run.
SQL_SCHEMA = {
    "airports": ("name", "city", "country"),
    "employees": ("name", "department"),
    "products": ("name", "category"),
    "orders": ("id", "product", "country"),
}
# (table, condition column) -> the selected expression, from the templates.
SQL_SELECT = {(table, column): select for _, select, table, column, _ in tasks.SQL_QUERIES}
# Which pool a table column's values come from (for the distractor rows).
_COLUMN_KIND = {"country": "country", "city": "city", "department": "department", "category": "category",
                "product": "product"}
# How many rows the asked-for entity gets in each table. Different per table, so a query on
# the wrong table with the right condition gives a different answer.
_MATCHES = {"airports": 2, "employees": 3, "products": 4, "orders": 5}
_DISTRACTORS = 4  # other entities per condition column, each with its own rows


def _others(kind: str, value: str) -> list[str]:
    """Entities of ``kind`` other than ``value`` (from the whole pool: none may equal the value)."""
    return [w for w in tasks.POOLS[kind][0] if w.lower() != value.lower()]


def build_database(fields: dict) -> tuple[sqlite3.Connection, list[tuple]]:
    """An in-memory database for one sql request and the rows the right query returns.

    Every table of :data:`SQL_SCHEMA` is filled. In each table that has the asked-for column,
    the asked-for entity (``fields['value']``) occurs in that column (a different number of times
    per table) next to distractor entities of the same kind; nowhere else does the value occur,
    so a query on the wrong column finds nothing. Deterministic from the fields."""
    table, column, value = fields["table"], fields["column"], fields["value"]
    rng = random.Random(f"sql-db-{table}-{column}-{value}")
    con = sqlite3.connect(":memory:")
    serial = iter(range(1, 10**6))
    contents: dict[str, list[tuple]] = {}
    for tab, cols in SQL_SCHEMA.items():
        cond = column if column in cols else next(c for c in cols if c in _COLUMN_KIND)
        entities = rng.sample(_others(_COLUMN_KIND[cond], value), _DISTRACTORS)
        counts = [rng.randint(1, 3) for _ in entities]
        if cond == column:
            entities.insert(0, value)
            counts.insert(0, _MATCHES[tab])
        rows = []
        for ent, n in zip(entities, counts):
            for _ in range(n):
                row = {}
                for c in cols:
                    if c == cond:
                        row[c] = ent
                    elif c == "name":
                        row[c] = f"{tab[:-1]}-{next(serial)}"
                    elif c == "id":
                        row[c] = next(serial)
                    else:
                        row[c] = rng.choice(_others(_COLUMN_KIND[c], value))
                rows.append(tuple(row[c] for c in cols))
        con.execute(f"CREATE TABLE {tab} ({', '.join(cols)})")
        con.executemany(f"INSERT INTO {tab} VALUES ({', '.join('?' * len(cols))})", rows)
        contents[tab] = rows
    cols = SQL_SCHEMA[table]
    hits = [r for r in contents[table] if r[cols.index(column)] == value]
    if SQL_SELECT.get((table, column), "name").upper().startswith("COUNT"):
        expected = [(len(hits),)]
    else:
        expected = [(r[cols.index("name")],) for r in hits]
    return con, expected


_READ_ONLY = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION}


def _authorize(action, *_):
    return sqlite3.SQLITE_OK if action in _READ_ONLY else sqlite3.SQLITE_DENY


def check_sql(output: str, fields: dict) -> Verdict:
    text = output.strip()
    if not re.match(r"(?is)^select\b", text):
        return _wrong("不是 SELECT 语句")
    if not sqlite3.complete_statement(text if text.endswith(";") else text + ";"):
        return _wrong("SQL 语句不完整")
    con, expected = build_database(fields)
    con.set_authorizer(_authorize)  # read-only: SELECT and reading tables, nothing else
    con.set_progress_handler(lambda: 1, 100_000)  # abort a runaway query
    try:
        got = con.execute(text).fetchall()
    except (sqlite3.Error, sqlite3.Warning) as e:  # Warning: more than one statement
        return _wrong(f"运行不了：{e}")
    finally:
        con.close()
    if sorted(got, key=repr) == sorted(expected, key=repr):
        return OK
    if not got:
        return _wrong(f"一行也没返回（问的是 {fields['column']} = {fields['value']!r}）")
    if len(got[0]) != len(expected[0]):
        return _wrong(f"返回 {len(got[0])} 列，应为 {len(expected[0])} 列")
    return _wrong(f"返回 {len(got)} 行 {got[:3]}{'...' if len(got) > 3 else ''}，应为 {len(expected)} 行 "
                  f"{expected[:3]}{'...' if len(expected) > 3 else ''}")


# --------------------------------------------------------------------------
# json: the stated facts, as an object with the fixed keys.
# --------------------------------------------------------------------------
def check_json(output: str, fields: dict) -> Verdict:
    try:
        obj = json.loads(output)
    except ValueError:
        return _wrong("不是合法的 JSON")
    if not isinstance(obj, dict):
        return _wrong(f"是 JSON {type(obj).__name__}，不是对象")
    if set(obj) != set(tasks.JSON_KEYS):
        return _wrong(f"键是 {sorted(obj)}，应为 {sorted(tasks.JSON_KEYS)}")
    for key in tasks.JSON_KEYS:
        want, got = fields[key], obj[key]
        if key == "age":
            if type(got) is not int:
                return _wrong(f"age 是 {got!r}，不是整数")
            want = int(want)
        if got != want:
            return _wrong(f"{key} 是 {got!r}，应为 {want!r}")
    return OK


# --------------------------------------------------------------------------
# medical: one "Label: value" line per field of the record.
# --------------------------------------------------------------------------
PLANS = ("review in 2 days", "rest and fluids")
_TEMP_RE = re.compile(r"(?i)\btemp(?:erature)?\b\D{0,20}?(\d{2}\.\d)")


def plan_for(temp: str | float) -> str:
    """The plan the record states for a temperature (the same rule as :data:`tasks.MEDICAL`)."""
    return PLANS[0] if float(temp) >= 38 else PLANS[1]


def _medical_expected(fields: dict) -> dict[str, str | None]:
    values = dict(fields)
    values.setdefault("plan", None)
    out = {}
    for label, template in tasks.MEDICAL_RECORD:
        try:
            out[label] = template.format(**values)
        except KeyError:
            out[label] = None
    if values["plan"] is None:
        out["Plan"] = None  # unknown: any of PLANS
    return out


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()).lower() == " ".join(b.split()).lower()


def check_medical(output: str, fields: dict) -> Verdict:
    found: dict[str, list[str]] = {}
    for line in output.strip().splitlines():
        if ":" in line:
            label, value = line.split(":", 1)
            found.setdefault(label.strip(), []).append(value.strip())
    for label, want in _medical_expected(fields).items():
        got = found.get(label)
        if not got:
            return _wrong(f"没有 {label} 这一行")
        if len(got) > 1:
            return _wrong(f"{label} 出现了 {len(got)} 次")
        value = got[0]
        if label == "Duration" and want is not None and fields.get("days") == 1 and _same(value, "1 day"):
            continue
        if want is None:  # Plan without the temperature: one of the two plans
            if not any(_same(value, p) for p in PLANS):
                return _wrong(f"Plan 是 {value!r}，不是 {PLANS} 之一")
        elif not _same(value, want):
            return _wrong(f"{label} 是 {value!r}，应为 {want!r}")
    return OK


# --------------------------------------------------------------------------
# support: an apology that names the product, spelt right.
# --------------------------------------------------------------------------
def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z][A-Za-z-]*", text)


# A product is named after one of these words ("your kettle", "a new kettle"); a word there that
# looks like the product but is not it is the product misspelt.
_BEFORE_PRODUCT = {"your", "new", "a", "an", "the", "my", "this", "replacement"}


# Words of the training problems ("was missing a part") stand after "a"/"the" too; they are never the product.
_PROBLEM_WORDS = {w.lower() for problem in dict(tasks.SUPPORT.slots)["problem"] for w in _words(problem)}


def _looks_like(word: str, product: str) -> bool:
    return (word != product and word not in _PROBLEM_WORDS
            and difflib.SequenceMatcher(None, word, product).ratio() >= 0.7)


def check_support(output: str, fields: dict) -> Verdict:
    product = fields["product"].lower()
    if not tasks.check_support(output, fields):
        return _wrong("开头没有道歉")
    words = [w.lower() for w in _words(output)]
    slots = [w for prev, w in itertools.pairwise(words) if prev in _BEFORE_PRODUCT]
    misspelt = [w for w in slots if _looks_like(w, product)]
    if product not in words:
        return _wrong(f"没有提到 {product}" + (f"（写成了 {misspelt[0]!r}）" if misspelt else ""))
    if misspelt:
        return _wrong(f"产品名拼错成了 {misspelt[0]!r}")
    return OK


CHECKERS = {"sql": check_sql, "support": check_support, "medical": check_medical, "json": check_json}


def check(task: str, output: str, fields: dict) -> Verdict:
    """Is ``output`` the right answer to the request ``fields`` describe? A :class:`Verdict`."""
    return CHECKERS[task](output, fields)


def fields_of(example) -> dict:
    """An Example's ``fields`` plus what its prompt states beyond them: for medical, the
    temperature and so the plan (``tasks.MEDICAL`` does not keep them in ``fields``)."""
    fields = dict(example.fields)
    if example.task == "medical" and "plan" not in fields:
        m = _TEMP_RE.search(example.prompt)
        if m:
            fields["temp"] = m.group(1)
            fields["plan"] = plan_for(m.group(1))
    return fields
