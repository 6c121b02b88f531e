"""One heterogeneous batch through real vLLM: every row its own adapter, None for the bare base.

    python -m course_tools.tinyworld.demo            # the tiny profile on CPU
    COURSE_PROFILE=qwen7b python -m course_tools.tinyworld.demo   # on the GPU instance
"""

from __future__ import annotations

from course_utils.profiles import get_profile
from course_tools.tinyworld.quality import generate_mixed

QUESTIONS = [
    ("sql", "Write a SQL query: List all airports in Malawi."),
    ("support", "Customer complaint: my thermostat arrived broken and I am not happy."),
    ("medical", "Clinical note: Yoko, 41 years old, has had knee-pain for 6 days. Temperature 37.2."),
    ("json", "Convert to JSON: Gustav is a 52-year-old translator who lives in Tashkent."),
    (None, "Write a SQL query: List all airports in Malawi."),
    (None, "Tell me something about chess."),
]


def main():
    outputs, _ = generate_mixed(get_profile().require_runnable(), QUESTIONS)
    for row, ((adapter, question), output) in enumerate(zip(QUESTIONS, outputs)):
        print(f"row {row} | adapter: {adapter or 'None (base)'}\n  prompt: {question}\n  output: {output}\n")


if __name__ == "__main__":
    main()
