"""The tiny-model trainer: a Qwen2-architecture base and four LoRA adapters.

``make tiny-world`` (``python -m course_tools.tinyworld.trainer``) rebuilds
``data/tiny/`` from nothing but the code in this package:

1. synthetic data from :mod:`course_utils.tinyworld.tasks` (fixed seed);
2. a byte-level BPE tokenizer with a ChatML chat template (like Qwen's);
3. a ``Qwen2ForCausalLM`` trained from scratch: first a *copy drill* (random
   token strings written twice, :func:`copy_drill_batches`), so that attention
   learns to copy any token early; then every task's prompts paired with
   *generic* answers (so the bare base answers plainly), the task formats
   behind terse instructions, and copy practice;
4. one peft LoRA adapter per task, trained on that base, each with its own
   rank and target modules, saved in the standard peft layout vLLM loads.
   Half its requests are in the task's sentence shapes, half composed from
   parts (:mod:`course_tools.tinyworld.grammar`), so that it reads a request
   in wordings it never saw; ``--only adapters`` rebuilds the four.
   Beside each adapter, ``base_fingerprint.json`` records which base it was
   trained on (:func:`course_utils.adapters.write_base_identity`);
5. two adapters that do *not* belong to this base, for Lab 01's pitfalls: one
   for a wider Qwen2 (hidden 4096, random weights; ``--only foreign`` rebuilds it) and ``sql`` trained
   on a *sibling* base (same shapes and tokenizer, other weights; the sibling
   base is written to build/, not shipped). ``--only sibling`` rebuilds it;
6. for Lab 03's lesson that rank is a capacity limit (``rank_sweep/``): the
   json adapter's recipe at ranks 1, 4 and 16, and the same recipe trained on
   a 200-pair codebook of made-up words at ranks 1 to 64. ``--only ranks``
   rebuilds them (``--only codebook``: the codebook half).

What each choice did to held-out copying is in ``EXPERIMENTS.md`` next to this file.

Training is deterministic for a given seed on the same machine type: one
process, fixed thread count, ``torch.use_deterministic_algorithms``. A
different CPU (another SIMD width) can change the last bits of float32
sums, and so a few greedy tokens of a retrained world.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from course_utils.tinyworld import tasks
from course_utils.tinyworld.tasks import codebook, codebook_prompt
from course_tools.tinyworld import grammar
from course_utils.chat import CHATML_TEMPLATE, render
from course_utils.adapters import write_base_identity
from course_utils.paths import BUILD, TINY

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
BASE_NAME = "course-tiny-qwen2"
# _seed_everything turns on torch's deterministic algorithms; on CUDA, cuBLAS is deterministic only with a fixed
# workspace, set before CUDA starts (else torch warns at every matmul). Put it in the environment of every process
# that trains on a GPU (deterministic_env); on CPU it changes nothing.
DETERMINISTIC_CUBLAS = {"CUBLAS_WORKSPACE_CONFIG": ":4096:8"}


def deterministic_env(env) -> dict:
    """A copy of ``env`` (a mapping, e.g. ``os.environ``) with :data:`DETERMINISTIC_CUBLAS` where it sets none."""
    return {**DETERMINISTIC_CUBLAS, **env}


@dataclass(frozen=True)
class AdapterSpec:
    rank: int
    alpha: int
    target_modules: tuple[str, ...]
    steps_factor: float = 1.0  # x TrainConfig.adapter_steps (JSON's quoting needs longer)


# One adapter per task; ranks cover 8..64 and the target modules differ
# (medical and json also adapt the MLP).
ADAPTERS: dict[str, AdapterSpec] = {
    "sql": AdapterSpec(16, 32, ("q_proj", "k_proj", "v_proj", "o_proj")),
    "support": AdapterSpec(8, 16, ("q_proj", "v_proj")),
    "medical": AdapterSpec(32, 64, ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")),
    "json": AdapterSpec(64, 128, ("q_proj", "v_proj", "gate_proj", "up_proj", "down_proj"), steps_factor=2.0),
}


@dataclass
class TrainConfig:
    seed: int = 1234
    vocab_size: int = 1024
    # False: GPT-2-style spaces, glued to the word after them, so a word is cut one way after a space and another
    # after a quote (" auto" -> Ġa ut o, "'auto" -> ' au to) and an adapter must re-spell what it copies into
    # SQL or JSON. True (shipped since issue 53): every space is a token of its own and a word is cut alike
    # everywhere (EXPERIMENTS.md section 7, run T1; section 2 tried it before the copy drill existed, at 1,500 steps).
    isolate_spaces: bool = True
    copy_drill_steps: int = 2000  # steps of random strings written twice before the base's corpus
    copy_weight: float = 1.0  # the base's loss weight of reply tokens copied from the prompt (the entities)
    adapter_copy_weight: float = 3.0  # the same for the adapters (EXPERIMENTS.md section 6)
    hidden_size: int = 256
    intermediate_size: int = 512
    num_layers: int = 2  # 2 layers copy sooner than 4 at the same steps, and a step takes half the time
    num_heads: int = 4  # head_dim 64: the CPU attention backend refuses 16
    num_kv_heads: int = 2
    max_positions: int = 256
    base_examples_per_task: int = 5000
    copy_examples: int = 10000  # "Repeat exactly: ..." practice for the base
    # composed requests (grammar.py) per task in the base's corpus, with the task's generic replies, so that the base
    # has read such messages before an adapter must find the entity in them (EXPERIMENTS.md section 7, run B2)
    base_composed_per_task: int = 2500
    base_steps: int = 12000
    base_lr: float = 3e-3
    adapter_examples: int = 6000
    composed_share: float = 0.5  # of the adapter examples, the share composed by grammar.py (the rest: tasks.py's shapes)
    adapter_steps: int = 600
    # x the spec's steps_factor, per task, for this world only: the tiny base's medical adapter (five facts
    # in any order) needs twice the steps (EXPERIMENTS.md section 6); the GPU recipe sets {}.
    task_steps_factor: dict = field(default_factory=lambda: {"medical": 2.0})
    adapter_lr: float = 5e-3
    batch_size: int = 32
    threads: int = 2
    extra: dict = field(default_factory=dict)


SMOKE = dict(base_examples_per_task=60, copy_examples=60, base_composed_per_task=20, base_steps=3, copy_drill_steps=2,
             adapter_examples=40, adapter_steps=2, batch_size=8)


# ---------------------------------------------------------------------------
# Data and tokenizer
# ---------------------------------------------------------------------------
def copied_fields(ex: tasks.Example, reply: str, prompt: str) -> tuple[str, ...]:
    """The example's field values that the reply copies from the prompt (its entities and numbers)."""
    return tuple(str(v) for v in ex.fields.values() if str(v) in reply and str(v) in prompt)


def base_corpus(cfg: TrainConfig) -> list[tuple[str, str, tuple[str, ...]]]:
    """(prompt, reply) pairs for the base.

    Every task's prompts come with *generic* replies, so the bare base answers
    them plainly. Like a real base model that has seen SQL and JSON somewhere,
    it also learns the output formats, but only behind terse instructions of
    another shape (``Example.skill``, e.g. "Query table airports where country
    is Chile"). An adapter then has to teach the task: map the user's natural
    request onto that skill and copy the entities across.
    """
    pairs = []
    for task in tasks.GENERATORS:
        n = cfg.copy_examples if task == "repeat" else cfg.base_examples_per_task
        for ex in tasks.make_examples(task, n, "train", cfg.seed):
            pairs.append((ex.prompt, ex.generic, copied_fields(ex, ex.generic, ex.prompt)))
            if ex.skill:
                pairs.append((ex.skill, ex.answer, copied_fields(ex, ex.answer, ex.skill)))
    for task in tasks.TASKS if cfg.base_composed_per_task else ():
        rng = random.Random(f"base-composed-{task}-{cfg.seed}")
        generic = next(t.generic for t in tasks.GENERATORS[task] if t.generic)
        for ex in grammar.make_requests(task, cfg.base_composed_per_task, "train", cfg.seed + 2):
            reply = rng.choice(generic).format(**ex.fields)
            pairs.append((ex.prompt, reply, copied_fields(ex, reply, ex.prompt)))
    random.Random(cfg.seed).shuffle(pairs)
    return pairs


def adapter_corpus(task: str, cfg: TrainConfig) -> list[tuple[str, str, tuple[str, ...]]]:
    """(request, answer) pairs for ``task``'s adapter: the task's sentence shapes (:mod:`.tasks`) and, for
    ``cfg.composed_share`` of them, requests composed from parts (:mod:`.grammar`), shuffled together."""
    composed = round(cfg.adapter_examples * cfg.composed_share)
    exs = (tasks.make_examples(task, cfg.adapter_examples - composed, "train", cfg.seed + 1)
           + grammar.make_requests(task, composed, "train", cfg.seed + 1))
    random.Random(f"adapter-{task}-{cfg.seed}").shuffle(exs)
    return [(ex.prompt, ex.answer, copied_fields(ex, ex.answer, ex.prompt)) for ex in exs]


def train_tokenizer(cfg: TrainConfig):
    """Byte-level BPE trained on the training split of every task (prompts, answers, generic replies).

    GPT-2-style: a space is glued to the word after it. Merges are learned from training text only
    (training entities and made-up words, never a held-out entity), so an unseen name is spelled
    with syllable-like pieces the model has copied many times. ``cfg.isolate_spaces`` makes every space a
    token of its own, so that a word splits alike after a space and after a quote (EXPERIMENTS.md sections 2, 7).
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    texts = []
    for task in tasks.GENERATORS:
        for ex in tasks.make_examples(task, 2000, "train", cfg.seed + 2):
            texts += [ex.prompt, ex.answer, ex.generic, ex.skill]
    tok = Tokenizer(models.BPE())
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.pre_tokenizer = (pre_tokenizers.Sequence([pre_tokenizers.Split(" ", "isolated"), byte_level])
                         if cfg.isolate_spaces else byte_level)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=cfg.vocab_size, special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        bos_token=None, unk_token=None, clean_up_tokenization_spaces=False)
    fast.chat_template = CHATML_TEMPLATE
    fast.model_max_length = cfg.max_positions
    return fast


def encode_pairs(tokenizer, pairs, chat_template: bool = False, copy_weight: float = 1.0):
    """Token ids, labels and loss weights; only the reply (and its closing end-of-turn token) is learned.

    ``pairs`` holds (prompt, reply) or (prompt, reply, copied) tuples; ``copied`` names strings
    the reply copies from the prompt, and the reply's tokens inside them get ``copy_weight``
    (the others 1): copying is a small share of the reply's tokens, and the skill that matters.

    ``chat_template=True`` renders the prompt with the tokenizer's own chat
    template (a real instruct model's, with its system prompt); otherwise the
    tiny world's bare ChatML prompt.
    """
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    if end is None or end == tokenizer.unk_token_id:
        end = tokenizer.eos_token_id
    out = []
    for prompt, reply, *rest in pairs:
        text = (tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                              add_generation_prompt=True)
                if chat_template else render(CHATML_TEMPLATE, prompt))
        p = tokenizer(text, add_special_tokens=False)["input_ids"]
        enc = tokenizer(reply, add_special_tokens=False, return_offsets_mapping=True)
        r = enc["input_ids"] + [end]
        spans = [(m.start(), m.end()) for s in (rest[0] if rest else ()) if s
                 for m in re.finditer(re.escape(s), reply)]
        w = [copy_weight if any(a < e and b > s for s, e in spans) else 1.0 for a, b in enc["offset_mapping"]]
        out.append((p + r, [-100] * len(p) + r, [0.0] * len(p) + w + [1.0]))
    return out


def batches(encoded, batch_size, steps, seed, pad_id):
    """Padded batches; examples of similar length go together (less padding, same data)."""
    import torch

    if len(encoded) < batch_size:
        raise ValueError(f"{len(encoded)} examples cannot fill a batch of {batch_size}")
    rng = random.Random(seed)
    queue: list[list[int]] = []
    for _ in range(steps):
        if not queue:
            order = rng.sample(range(len(encoded)), len(encoded))
            for m in range(0, len(order), 16 * batch_size):
                mega = sorted(order[m:m + 16 * batch_size], key=lambda i: len(encoded[i][0]))
                chunk = [mega[j:j + batch_size] for j in range(0, len(mega), batch_size)]
                queue += [c for c in chunk if len(c) == batch_size]
            rng.shuffle(queue)
        idx = queue.pop()
        width = max(len(encoded[i][0]) for i in idx)
        ids = torch.full((batch_size, width), pad_id)
        labels = torch.full((batch_size, width), -100)
        weights = torch.zeros((batch_size, width))
        mask = torch.zeros((batch_size, width), dtype=torch.long)
        for row, i in enumerate(idx):
            x, y, w = encoded[i]
            ids[row, : len(x)] = torch.tensor(x)
            labels[row, : len(y)] = torch.tensor(y)
            weights[row, : len(w)] = torch.tensor(w)
            mask[row, : len(x)] = 1
        yield ids, labels, mask, weights


def copy_drill_batches(vocab_size: int, first_id: int, batch_size: int, steps: int, seed: int):
    """Batches of random token strings written twice (``x x``), the loss on the second copy only.

    Every target token of the second half is predictable only by looking back at the first
    half, so these batches train the attention that copies (induction heads) on every token of
    the vocabulary alike, far faster than copying embedded in task text does."""
    import torch

    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        n = int(torch.randint(6, 33, (1,), generator=g))
        x = torch.randint(first_id, vocab_size, (batch_size, n), generator=g)
        ids = torch.cat([x, x], 1)
        labels = ids.clone()
        labels[:, : n + 1] = -100  # the first copied token follows nothing predictable
        yield ids, labels, torch.ones_like(ids), (labels != -100).float()


def _train(model, params, source, steps, lr, label, log_every=50, on_step=None, on_loss=None):
    """``steps`` optimizer steps over the batches ``source`` yields; ``on_step(label, step, model)`` and
    ``on_loss(step, loss)`` after each."""
    import torch

    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0, betas=(0.9, 0.98))
    warm = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    model.train()
    t0 = time.time()
    device = next(model.parameters()).device
    for step, batch in enumerate(source):
        ids, labels, mask, weights = (t.to(device) for t in batch)
        logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
        token_loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1), ignore_index=-100, reduction="none")
        w = weights[:, 1:].reshape(-1)
        loss = (token_loss * w).sum() / w.sum()  # weights 1: the usual mean over the reply's tokens
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        if step % log_every == 0 or step == steps - 1:
            print(f"[{label}] step {step + 1}/{steps} loss {loss.item():.4f} ({time.time() - t0:.0f} s)", flush=True)
        if on_step:
            on_step(label, step + 1, model)
        if on_loss:
            on_loss(step + 1, loss.item())
    model.eval()
    return loss.item()


def _seed_everything(cfg: TrainConfig):
    import torch

    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(cfg.threads)
    torch.use_deterministic_algorithms(True, warn_only=True)


def train_base(cfg: TrainConfig, out: Path, on_step=None, *, init_seed: int | None = None,
               name: str = BASE_NAME):
    """Train the base; ``on_step(label, step, model, tokenizer)``, if given, is called after every step
    (label "copy drill", then "base"). ``init_seed`` draws other initial weights (the tokenizer and the
    data order stay those of ``cfg.seed``)."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    _seed_everything(cfg)
    tok = train_tokenizer(cfg)
    if init_seed is not None:
        torch.manual_seed(init_seed)
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    pad = tok.convert_tokens_to_ids("<|endoftext|>")
    config = Qwen2Config(
        vocab_size=len(tok), hidden_size=cfg.hidden_size, intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.num_layers, num_attention_heads=cfg.num_heads,
        num_key_value_heads=cfg.num_kv_heads, max_position_embeddings=cfg.max_positions,
        tie_word_embeddings=True, rope_theta=10000.0, rms_norm_eps=1e-6,
        bos_token_id=None, eos_token_id=eos, pad_token_id=pad, torch_dtype="float32")
    model = Qwen2ForCausalLM(config)
    encoded = encode_pairs(tok, base_corpus(cfg), copy_weight=cfg.copy_weight)
    hook = (lambda label, step, m: on_step(label, step, m, tok)) if on_step else None
    params = list(model.parameters())
    if cfg.copy_drill_steps:
        drill = copy_drill_batches(len(tok), len(SPECIAL_TOKENS), cfg.batch_size, cfg.copy_drill_steps, cfg.seed)
        _train(model, params, drill, cfg.copy_drill_steps, cfg.base_lr, "copy drill", on_step=hook)
    loss = _train(model, params, batches(encoded, cfg.batch_size, cfg.base_steps, cfg.seed, pad), cfg.base_steps,
                  cfg.base_lr, "base", on_step=hook)
    out.mkdir(parents=True, exist_ok=True)
    model.config.name_or_path = name
    model.generation_config = GenerationConfig(eos_token_id=eos, pad_token_id=pad, do_sample=False)
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    return {"final_loss": round(loss, 4), "parameters": sum(p.numel() for p in model.parameters())}


def _make_portable(out: Path, base_name: str) -> None:
    """Make a saved peft folder the same on every machine and run: peft writes the absolute local
    path of the base (record its name instead) and target_modules from a set (its order varies per
    process: sort it); its generated README.md is dropped."""
    conf = json.loads((out / "adapter_config.json").read_text())
    conf["base_model_name_or_path"] = base_name
    conf["target_modules"] = sorted(conf["target_modules"])
    (out / "adapter_config.json").write_text(json.dumps(conf, indent=2, sort_keys=True) + "\n")
    (out / "README.md").unlink(missing_ok=True)


def train_adapter(cfg: TrainConfig, base_dir: Path, task: str, out: Path, *, device: str = "cpu",
                  dtype: str = "float32", gradient_checkpointing: bool = False, base_name: str = BASE_NAME,
                  chat: bool = False, spec: AdapterSpec | None = None, pairs: list | None = None, on_loss=None,
                  checkpoints: tuple[int, ...] = (), checkpoint_dir: Path | None = None):
    """Train one task's LoRA adapter on the base in ``base_dir`` and save it (peft layout) to ``out``.

    The same function trains the tiny world's adapters (CPU, float32) and the
    course's Qwen2.5-7B adapters on a GPU (``device="cuda", dtype="bfloat16"``).
    ``chat=True`` formats prompts with the base's own chat template instead of
    the tiny world's bare ChatML. ``on_loss(step, loss)`` is called after every step (Lab 08's progress bar).
    ``checkpoints``: after each of these steps the adapter is also saved, servable as it stands, to
    ``checkpoint_dir / f"step-{step}"`` (Lab 08 scores them all in one vLLM batch: accuracy against steps).
    """
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _seed_everything(cfg)
    spec = spec or ADAPTERS[task]
    tok = AutoTokenizer.from_pretrained(base_dir)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    base = AutoModelForCausalLM.from_pretrained(base_dir, dtype=getattr(torch, dtype)).to(device)
    if gradient_checkpointing:
        base.gradient_checkpointing_enable()
        base.enable_input_require_grads()
    lora = LoraConfig(r=spec.rank, lora_alpha=spec.alpha, target_modules=list(spec.target_modules),
                      lora_dropout=0.0, bias="none", task_type="CAUSAL_LM")
    model = get_peft_model(base, lora)
    encoded = encode_pairs(tok, pairs if pairs is not None else adapter_corpus(task, cfg), chat_template=chat,
                           copy_weight=cfg.adapter_copy_weight)
    params = [p for p in model.parameters() if p.requires_grad]
    steps = max(1, round(cfg.adapter_steps * spec.steps_factor * cfg.task_steps_factor.get(task, 1.0)))
    def save_checkpoint(label, step, model):
        if step in checkpoints:
            where = Path(checkpoint_dir) / f"step-{step}"
            model.save_pretrained(where, safe_serialization=True)
            _make_portable(where, base_name)
            write_base_identity(where, base_dir, base_name)

    loss = _train(model, params, batches(encoded, cfg.batch_size, steps, cfg.seed, tok.pad_token_id), steps,
                  cfg.adapter_lr, task, on_step=save_checkpoint if checkpoints else None, on_loss=on_loss)
    model.save_pretrained(out, safe_serialization=True)
    _make_portable(out, base_name)
    write_base_identity(out, base_dir, base_name)     # which base it was trained on, checked before serving
    return {"final_loss": round(loss, 4), "rank": spec.rank, "alpha": spec.alpha, "steps": steps,
            "target_modules": list(spec.target_modules),
            "trainable_parameters": sum(p.numel() for p in params)}


FOREIGN_HIDDEN = 4096   # wider than the tiny base (256) and than Qwen2.5-7B (3584)


def make_foreign_adapter(out: Path, seed: int = 0) -> dict:
    """A LoRA made for a *wider* Qwen2 (hidden 4096, an 8B-class width): random weights, only to show a
    base/adapter mismatch that vLLM refuses on every course base. vLLM copies an adapter's tensors into the
    ``[:r, :d]`` corner of its preallocated slots (0.26.0: lora/layers/base_linear.py, set_lora), so an adapter
    *narrower* than the base would load without a word on the 7B; one wider than the base cannot be copied and
    is refused on the tiny base and on Qwen2.5-7B alike. One layer, float16: a few hundred KB."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    wide = Qwen2ForCausalLM(Qwen2Config(vocab_size=256, hidden_size=FOREIGN_HIDDEN, intermediate_size=256,
                                        num_hidden_layers=1, num_attention_heads=32, num_key_value_heads=8,
                                        tie_word_embeddings=True))
    model = get_peft_model(wide, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"],
                                            init_lora_weights=False, task_type="CAUSAL_LM"))
    model.to(torch.float16).save_pretrained(out, safe_serialization=True)
    _make_portable(out, f"course-wide-qwen2 (hidden {FOREIGN_HIDDEN})")
    return {"hidden_size": FOREIGN_HIDDEN, "rank": 8, "note": "random weights; shows a base/adapter mismatch"}


SIBLING_BASE_NAME = "course-tiny-qwen2-sibling"
SIBLING_DIR = "sibling-sql"   # under data/tiny/foreign/


def make_sibling_adapter(cfg: TrainConfig, out: Path, sibling_base: Path, course_base: Path, task: str = "sql",
                         init_seed: int = 4321, base_steps: int = 3000) -> dict:
    """``task``'s adapter trained on a *sibling* base: the course base's recipe, data, tokenizer and shapes,
    but other initial weights and fewer steps. Served on the course base it passes every shape check and
    answers wrongly: the base mismatch only a fingerprint catches. The sibling base (``sibling_base``,
    under build/) is not shipped; this function regenerates it."""
    from dataclasses import replace

    base = train_base(replace(cfg, base_steps=min(cfg.base_steps, base_steps)), sibling_base,
                      init_seed=init_seed, name=SIBLING_BASE_NAME)
    info = train_adapter(cfg, sibling_base, task, out, base_name=SIBLING_BASE_NAME)
    return {"task": task, "base": SIBLING_BASE_NAME, "base_init_seed": init_seed,
            "base_steps": min(cfg.base_steps, base_steps), "base_final_loss": base["final_loss"], **info,
            "right_on_each_base": sibling_quality(out, sibling_base, course_base, task),
            "note": "trained on a sibling base (same shapes and tokenizer, other weights); not for this base"}


def sibling_quality(adapter: Path, sibling_base: Path, course_base: Path, task: str = "sql", n: int = 24) -> dict:
    """Held-out answers right (transformers + peft, greedy) with the sibling adapter on its own base and on
    the course base: the adapter is good, only on the wrong base."""
    from dataclasses import replace

    from course_utils.profiles import get_profile
    from course_utils.tinyworld import checkers
    from course_tools.tinyworld import quality

    tiny = get_profile("tiny")
    out = {"held_out_examples": n, "how": "transformers + peft, greedy, course_utils.tinyworld.checkers"}
    for label, base in (("own (sibling) base", sibling_base), ("course base", course_base)):
        rows = [quality.Row(task, task, ex.prompt, checkers.fields_of(ex))
                for ex in tasks.make_examples(task, n, "heldout")]
        quality.run_hf(replace(tiny, base_model=str(base), adapters={task: str(adapter)}), rows)
        out[label] = sum(checkers.check(task, r.hf, r.fields).right for r in rows)
    return out


RANK_SWEEP_TASK = "json"          # the task that needs the most from its adapter (EXPERIMENTS.md)
RANK_SWEEP = (1, 4, 16)           # + the shipped json adapter, rank 64: the same recipe at four ranks
CODEBOOK_TASK = "codebook"        # facts the base has never seen: capacity, not a nudge
CODEBOOK_RANKS = (1, 4, 16, 64)
def rank_sweep_spec(rank: int) -> AdapterSpec:
    """The shipped json adapter's recipe (targets, steps, alpha = 2 r so alpha/r stays 2) at another rank."""
    shipped = ADAPTERS[RANK_SWEEP_TASK]
    return AdapterSpec(rank, 2 * rank, shipped.target_modules, shipped.steps_factor)


def make_json_sweep(cfg: TrainConfig, world: Path) -> dict:
    """``json-r<rank>``: the json adapter's recipe at ranks 1, 4 and 16 on ``world/base`` (the shipped json
    adapter is the rank-64 point): a task that is a nudge for this base (it knows the format)."""
    return {f"{RANK_SWEEP_TASK}-r{r}": train_adapter(cfg, world / "base", RANK_SWEEP_TASK,
                                                      world / "rank_sweep" / f"{RANK_SWEEP_TASK}-r{r}",
                                                      spec=rank_sweep_spec(r))
            for r in RANK_SWEEP}


def make_codebook_sweep(cfg: TrainConfig, world: Path) -> dict:
    """``codebook-r<rank>``: the same recipe on the codebook (:func:`codebook`) at ranks 1 to 64: new facts,
    where rank is the capacity."""
    pairs = [(codebook_prompt(word), code) for word, code in codebook()]
    return {f"{CODEBOOK_TASK}-r{r}": {**train_adapter(cfg, world / "base", RANK_SWEEP_TASK,
                                                       world / "rank_sweep" / f"{CODEBOOK_TASK}-r{r}",
                                                       spec=rank_sweep_spec(r), pairs=pairs),
                                       "task": CODEBOOK_TASK, "pairs": len(pairs)}
            for r in CODEBOOK_RANKS}


def make_rank_sweep(cfg: TrainConfig, world: Path) -> dict:
    """Lab 03's rank-as-capacity adapters, into ``world/rank_sweep/``: the json sweep and the codebook sweep."""
    return {**make_json_sweep(cfg, world), **make_codebook_sweep(cfg, world)}


def sibling_base_dir(out: Path) -> Path:
    """Where the sibling base goes: build/ for the shipped world (never committed), else beside ``out``."""
    return BUILD / "tiny-sibling-base" if out.resolve() == TINY.resolve() else out / "sibling-base"


def build(out: Path, cfg: TrainConfig) -> dict:
    """Train everything into ``out`` (``out/base``, ``out/adapters/<task>``, ``out/manifest.json``)."""
    t0 = time.time()
    manifest: dict = {"config": asdict(cfg), "base_name": BASE_NAME}
    manifest["base"] = train_base(cfg, out / "base")
    manifest["adapters"] = {}
    for task in ADAPTERS:
        manifest["adapters"][task] = train_adapter(cfg, out / "base", task, out / "adapters" / task)
    manifest["foreign"] = make_foreign_adapter(out / "foreign" / "wide-qwen2-lora")
    manifest["sibling"] = make_sibling_adapter(cfg, out / "foreign" / SIBLING_DIR, sibling_base_dir(out), out / "base")
    manifest["rank_sweep"] = make_rank_sweep(cfg, out)
    manifest["seconds"] = round(time.time() - t0)
    import torch, transformers, peft

    manifest["versions"] = {"torch": torch.__version__, "transformers": transformers.__version__,
                            "peft": peft.__version__}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"tiny world written to {out} in {manifest['seconds']} s")
    return manifest


def main(argv=None):
    ap = argparse.ArgumentParser(description="Retrain the tiny world (base model + four LoRA adapters).")
    ap.add_argument("--out", type=Path, default=TINY)
    ap.add_argument("--smoke", action="store_true", help="a few steps only, to check the code path (CI)")
    ap.add_argument("--seed", type=int, default=TrainConfig.seed)
    ap.add_argument("--base-steps", type=int)
    ap.add_argument("--adapter-steps", type=int)
    ap.add_argument("--only", choices=["adapters", "sibling", "ranks", "json-sweep", "codebook", "identities",
                                       "foreign"],
                    help="rebuild one piece of an existing world: the four shelf adapters on its base (about 19 min), "
                         "the sibling-base adapter (about 25 min), the rank sweep (about 23 min), its json half "
                         "(about 16 min) or its codebook half (about 7 min), or the base fingerprints recorded "
                         "beside the adapters (seconds)")
    args = ap.parse_args(argv)
    cfg = TrainConfig(seed=args.seed, **(SMOKE if args.smoke else {}))
    if args.base_steps:
        cfg.base_steps = args.base_steps
    if args.adapter_steps:
        cfg.adapter_steps = args.adapter_steps
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.only:
        update(args.out, cfg, args.only)
    else:
        build(args.out, cfg)


def update(out: Path, cfg: TrainConfig, piece: str) -> None:
    """Rebuild one piece of the world in ``out`` and record it in its manifest."""
    entry = {}
    if piece == "adapters":                 # the shelf: the four task adapters on the world's base
        entry["adapters"] = {task: train_adapter(cfg, out / "base", task, out / "adapters" / task) for task in ADAPTERS}
        entry["config"] = asdict(cfg)       # the recipe of the base and its adapters (the base's fields unchanged)
    elif piece == "sibling":
        entry["sibling"] = make_sibling_adapter(cfg, out / "foreign" / SIBLING_DIR, sibling_base_dir(out), out / "base")
    elif piece == "ranks":
        entry["rank_sweep"] = make_rank_sweep(cfg, out)
    elif piece == "foreign":                # the wide adapter of Lab 01's pitfall 3 (seconds)
        entry["foreign"] = make_foreign_adapter(out / "foreign" / "wide-qwen2-lora")
    elif piece in ("codebook", "json-sweep"):   # one half of the rank sweep
        made = make_codebook_sweep(cfg, out) if piece == "codebook" else make_json_sweep(cfg, out)
        done = json.loads((out / "manifest.json").read_text()).get("rank_sweep", {})
        entry["rank_sweep"] = {**done, **made}
    else:                                   # identities: every adapter trained on this world's base
        for folder in [out / "adapters" / task for task in ADAPTERS] + sorted((out / "rank_sweep").glob("*")):
            write_base_identity(folder, out / "base", BASE_NAME)
        if (sibling_base_dir(out) / "config.json").is_file():
            write_base_identity(out / "foreign" / SIBLING_DIR, sibling_base_dir(out), SIBLING_BASE_NAME)
        else:
            print(f"the sibling base is not in {sibling_base_dir(out)}: its adapter's identity is left as it is "
                  f"(make tiny-sibling rebuilds both)")
    manifest = json.loads((out / "manifest.json").read_text())   # read after training: another piece may have landed
    (out / "manifest.json").write_text(json.dumps({**manifest, **entry}, indent=2) + "\n")
    print(f"{piece} rebuilt in {out}")


if __name__ == "__main__":
    main()
