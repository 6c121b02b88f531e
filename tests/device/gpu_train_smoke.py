"""GPU smoke test of the course's adapter-training path (run on a machine with CUDA; not part of `make test`).

Builds a random Qwen2 with the depth and width of Qwen2.5-0.5B (24 layers,
hidden 896, 14 heads, 2 KV heads) around the tiny world's tokenizer, then
trains two of the course adapters on it with the exact code path the AutoDL
setup uses (``gpu_adapters.train_all``: bf16, CUDA, gradient checkpointing,
the base's chat template), reloads each adapter with peft and generates.

    python tests/device/gpu_train_smoke.py [--steps 40] [--out DIR]
"""

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM  # noqa: E402

from course_tools.gpu import train_adapters as gpu_adapters  # noqa: E402
from course_utils.profiles import TINY  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp()))
    args = ap.parse_args()
    print("torch", torch.__version__, "| cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0))
    base = args.out / "base"
    tok = AutoTokenizer.from_pretrained(TINY / "base")
    cfg = Qwen2Config(vocab_size=len(tok), hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                      num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=512,
                      tie_word_embeddings=True, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    Qwen2ForCausalLM(cfg).to(torch.bfloat16).save_pretrained(base)
    tok.save_pretrained(base)
    gpu_adapters.check_gpu("cuda")
    tcfg = gpu_adapters.train_config(steps=args.steps)
    torch.cuda.reset_peak_memory_stats()
    t0 = time.time()
    done = gpu_adapters.train_all(args.out / "models", ["sql", "medical"], tcfg, base, device="cuda",
                                  dtype="bfloat16")
    print(f"trained {sorted(done)} in {time.time() - t0:.1f} s, peak GPU memory "
          f"{torch.cuda.max_memory_allocated() / 2**30:.2f} GiB")
    from peft import PeftModel

    model = Qwen2ForCausalLM.from_pretrained(base, dtype=torch.bfloat16).cuda()
    for task, path in done.items():
        conf = json.loads((path / "adapter_config.json").read_text())
        peft_model = PeftModel.from_pretrained(model, path)
        ids = tok.apply_chat_template([{"role": "user", "content": "Write a SQL query: List all airports in Malawi."}],
                                      add_generation_prompt=True, return_tensors="pt", return_dict=True).to("cuda")
        out = peft_model.generate(**ids, max_new_tokens=8, do_sample=False)
        print(f"{task}: r={conf['r']} targets={conf['target_modules']} base={conf['base_model_name_or_path']} "
              f"generated {out.shape[1] - ids['input_ids'].shape[1]} tokens")
        model = peft_model.unload()
    for m in (args.out / "models").rglob("manifest.json"):
        print("manifest:", m.read_text()[:400])
    shutil.rmtree(args.out, ignore_errors=True)
    print("GPU SMOKE OK")


if __name__ == "__main__":
    main()
