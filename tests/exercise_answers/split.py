"""Split the readers' answers into a tuning half and a held-out half (issue 54), once, with a fixed seed.

    python3 tests/exercise_answers/split.py      # writes split.json next to this file; the same every time

Each answer is named ``<reader>/<exercise>/<n>`` (its place in that reader's list). Per exercise, the right
answers and the wrong ones are each shuffled with a seed made of SEED, the exercise and the label, and the
first half (rounded down) of each goes to ``heldout``. The judge may be tuned on ``tuning`` only. An answer
never moves between halves; answers added later get a split of their own, recorded beside this one.

``TUNING_ONLY``: (reader, exercise) pairs whose answers were written after seeing an example that gives the
answer away (the prompt of readers a, b and c showed 32768 and "32 KiB" as examples of the file's format,
which is 02.kv_page's answer): all of them go to ``tuning``. Readers d, e and f answered 02.kv_page only, with
a prompt that showed no value; their answers are split like every other exercise's.

``BATCH_2``: readers g, h and i (2026-12-07, against the labs of 6df96dc), written after the judge had been tuned on
batch 1's tuning half, by three new sessions in the same three voices. They get a split of their own, with the seed
``f"{SEED}-2"``, so batch 1's split is unchanged; their held-out half measures the judge as it stood when they were
added (the commit that added them changed nothing else).

A label changed after the split says so in the reader's file (``"relabelled"``, why) and keeps the label it was split
under (``"right_when_split"``), so that the split stays the one made.
"""

import json
import random
from pathlib import Path

HERE = Path(__file__).parent
SEED = 54
READERS = ("a", "b", "c", "d", "e", "f")
BATCH_2 = ("g", "h", "i")
# BATCH_3: readers j, k and l (2026-12-07), Lab 05's 练习 2 only (the function lora_linear the student writes), written
# before its judge existed, from the lab's skeleton and docstring; split with the seed f"{SEED}-3".
BATCH_3 = ("j", "k", "l")
# BATCH_4: readers m, n and o (2026-12-07), Lab 08's 练习 2 only (08.other: a prediction, "更高"/"更低"/"差不多"), from
# the lab's cells 0-26 before any run of them was recorded; each wrote what its predictions mean, and they were labelled
# right when that is what the recorded run measured (lower). Split with the seed f"{SEED}-4".
BATCH_4 = ("m", "n", "o")
# BATCH_5: voices p, q and r (2026-12-07), Lab 03's 练习 2 only (03.cache_reads, a count of disk reads), written by one
# helper session in the three voices (less independent than one session per voice) from the lab up to the exercise's
# run cell, without its output; split with the seed f"{SEED}-5".
BATCH_5 = ("p", "q", "r")
TUNING_ONLY = {("a", "02.kv_page"), ("b", "02.kv_page"), ("c", "02.kv_page")}


def _split(readers, seed, tuning_only=frozenset()) -> tuple[list[str], list[str]]:
    """(tuning, heldout) names for these readers' answers, half of each exercise's right and wrong ones held out."""
    groups: dict[tuple[str, bool], list[str]] = {}
    tuning: list[str] = []
    heldout: list[str] = []
    for reader in readers:
        data = json.loads((HERE / f"reader_{reader}.json").read_text(encoding="utf-8"))
        for exercise, entry in sorted(data["exercises"].items()):
            for n, answer in enumerate(entry["answers"]):
                name = f"{reader}/{exercise}/{n}"
                if (reader, exercise) in tuning_only:
                    tuning.append(name)
                else:
                    groups.setdefault((exercise, answer.get("right_when_split", answer["right"])), []).append(name)
    for (exercise, right), names in sorted(groups.items()):
        names = sorted(names)
        random.Random(f"{seed}:{exercise}:{right}").shuffle(names)
        half = len(names) // 2
        heldout += names[:half]
        tuning += names[half:]
    return tuning, heldout


def main() -> None:
    tuning, heldout = _split(READERS, SEED, TUNING_ONLY)
    tuning_2, heldout_2 = _split(BATCH_2, f"{SEED}-2")
    tuning_3, heldout_3 = _split(BATCH_3, f"{SEED}-3")
    tuning_4, heldout_4 = _split(BATCH_4, f"{SEED}-4")
    tuning_5, heldout_5 = _split(BATCH_5, f"{SEED}-5")
    split = {"seed": SEED, "readers": list(READERS + BATCH_2 + BATCH_3 + BATCH_4 + BATCH_5),
             "tuning_only": [f"{r}/{e}" for r, e in sorted(TUNING_ONLY)],
             "batches": {"1": list(READERS), "2": list(BATCH_2), "3": list(BATCH_3), "4": list(BATCH_4),
                         "5": list(BATCH_5)},
             "tuning": sorted(tuning + tuning_2 + tuning_3 + tuning_4 + tuning_5),
             "heldout": sorted(heldout + heldout_2 + heldout_3 + heldout_4 + heldout_5)}
    (HERE / "split.json").write_text(json.dumps(split, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"tuning {len(split['tuning'])}, held-out {len(split['heldout'])}")

if __name__ == "__main__":
    main()
