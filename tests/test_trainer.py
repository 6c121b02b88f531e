"""The tiny-world trainer's pieces that decide what the model learns (no training here)."""

import pytest

from course_utils.paths import TINY
from course_utils.tinyworld import tasks
from course_tools.tinyworld import trainer

torch = pytest.importorskip("torch")


def test_copy_drill_writes_each_string_twice_and_learns_only_the_copy():
    for ids, labels, mask, weights in trainer.copy_drill_batches(100, 3, 4, 5, seed=0):
        n = ids.shape[1] // 2
        assert torch.equal(ids[:, :n], ids[:, n:])
        assert ids.min() >= 3 and ids.max() < 100  # never a special token
        assert (labels[:, : n + 1] == -100).all() and torch.equal(labels[:, n + 1:], ids[:, n + 1:])
        assert torch.equal(weights, (labels != -100).float()) and mask.all()
    a = [b[0] for b in trainer.copy_drill_batches(100, 3, 4, 3, seed=1)]
    b = [b[0] for b in trainer.copy_drill_batches(100, 3, 4, 3, seed=1)]
    assert all(torch.equal(x, y) for x, y in zip(a, b))


def test_copied_names_what_the_reply_takes_from_the_prompt():
    ex = tasks.make_examples("json", 1, "heldout", seed=0)[0]
    copied = trainer.copied_fields(ex, ex.answer, ex.prompt)
    assert set(copied) == {str(v) for v in ex.fields.values()}
    assert trainer.copied_fields(ex, "nothing here", ex.prompt) == ()


def test_isolated_spaces_cut_a_word_alike_after_a_space_and_after_a_quote():
    """The old tokenizer (spaces glued to the next word) cut "auto" one way in the request and another in the SQL it
    becomes; with ``isolate_spaces`` (shipped since issue 53) the pieces are the same, and text decodes to itself."""
    def pieces(tok, text, word):
        ids = tok(text)["input_ids"]
        return next(tok.convert_ids_to_tokens(ids[i:j]) for i in range(len(ids)) for j in range(i + 1, len(ids) + 1)
                    if tok.decode(ids[i:j]) == word)   # the shortest run of tokens that spells the word

    glued = trainer.train_tokenizer(trainer.TrainConfig(isolate_spaces=False))
    assert glued.convert_ids_to_tokens(glued(" auto")["input_ids"])[0].startswith("Ġ")
    alone = trainer.train_tokenizer(trainer.TrainConfig(isolate_spaces=True))
    for word in ["auto", "hair-loss", "operations"]:
        assert pieces(alone, f"category {word}.", word) == pieces(alone, f"category = '{word}'", word)
    assert pieces(glued, "category auto.", " auto") != ["Ġ"] + pieces(glued, "category = 'auto'", "auto")
    text = "Say back:  two  spaces, 'quoted' and \"double\"."
    assert alone.decode(alone(text)["input_ids"]) == text


@pytest.mark.skipif(not (TINY / "base" / "tokenizer.json").is_file(), reason="needs the shipped tokenizer")
def test_copied_tokens_get_the_copy_weight_and_prompt_tokens_none():
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(TINY / "base")
    prompt, reply = "Convert to JSON: Zuko, 30, baker, Lima.", '{"name": "Zuko", "age": 30, "job": "baker", "city": "Lima"}'
    (ids, labels, w), = trainer.encode_pairs(tok, [(prompt, reply, ("Zuko", "30", "baker", "Lima"))], copy_weight=3.0)
    assert len(ids) == len(labels) == len(w)
    n_prompt = labels.count(-100)
    assert w[:n_prompt] == [0.0] * n_prompt and set(w[n_prompt:]) == {1.0, 3.0}
    heavy = tok.decode([t for t, x in zip(ids, w) if x == 3.0])
    assert heavy.replace(" ", "") == "Zuko30bakerLima"
    (_, _, plain), = trainer.encode_pairs(tok, [(prompt, reply)])
    assert set(plain[n_prompt:]) == {1.0}


@pytest.mark.slow
def test_an_experiment_trains_a_base_and_its_adapters_and_measures_them(tmp_path):
    """course_tools.tinyworld.experiment (EXPERIMENTS.md section 7), on a few steps: a changed recipe field reaches
    the base's corpus, the four adapters are trained on that base, and every measure is there for every task."""
    pytest.importorskip("peft")
    from course_tools.tinyworld import experiment

    changes = {**trainer.SMOKE, "base_composed_per_task": 5}
    result = experiment.run("smoke", changes, threads=1, out=tmp_path, n=2)
    assert result["config"]["base_composed_per_task"] == 5
    assert sorted(result["adapters"]) == sorted(trainer.ADAPTERS)
    assert all((tmp_path / "smoke" / "adapters" / t / "adapter_config.json").is_file() for t in tasks.TASKS)
    for task in tasks.TASKS:
        assert {"adapter_right", "reworded_right", "reworded2_right", "base_right"} <= set(result["table"][task])
        assert 0.0 <= result["base_copy"][task] <= 1.0
    assert (tmp_path / "smoke" / "result.json").is_file() and experiment.summary_line(result).startswith("smoke")
