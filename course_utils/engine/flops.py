"""The arithmetic of "almost free": FLOPs per token of the base projections vs the LoRA products.

Pure Python from a model's ``config.json``; the shapes come from :mod:`course_utils.arch`.
A linear layer ``y = W x`` with ``W`` of shape (d_out, d_in) costs
``2 * d_in * d_out`` FLOPs per token (one multiply and one add per weight).
LoRA adds the shrink ``v = A x`` (A: r x d_in, ``2 * r * d_in``) and the expand
``y += B v`` (B: d_out x r, ``2 * r * d_out``), so per projection it adds the
fraction ``r * (d_in + d_out) / (d_in * d_out)``.

Counted: the seven projections (q, k, v, o, gate, up, down) of every decoder
layer. Not counted: attention scores (grow with context length), the lm_head,
norms, activations. Real kernels run at the padded ``max_lora_rank``, not the
adapter's own rank (the stacked buffers are that wide), so read ``rank`` as
the slot rank the engine was started with.
"""

from __future__ import annotations

from ..arch import PROJECTIONS, arch, projection_shapes

RANKS = (8, 16, 32, 64)


def base_projection_flops(config, targets=PROJECTIONS) -> int:
    """FLOPs per token of the base projections in ``targets``, summed over all layers."""
    shapes = projection_shapes(config)
    return arch(config).layers * sum(2 * shapes[p].d_in * shapes[p].d_out for p in targets)


def lora_flops(config, rank: int, targets=PROJECTIONS) -> dict:
    """FLOPs per token of the shrink and expand products at ``rank`` on ``targets``, all layers."""
    shapes = projection_shapes(config)
    layers = arch(config).layers
    shrink = layers * sum(2 * rank * shapes[p].d_in for p in targets)
    expand = layers * sum(2 * rank * shapes[p].d_out for p in targets)
    return {"shrink": shrink, "expand": expand, "lora": shrink + expand}


def overhead(config, rank: int, targets=PROJECTIONS) -> dict:
    """Base and LoRA FLOPs per token and the fraction LoRA adds to the projections in ``targets``."""
    base = base_projection_flops(config, targets)
    lo = lora_flops(config, rank, targets)
    return {"rank": rank, "base": base, **lo, "fraction": lo["lora"] / base}


def overhead_table(config, ranks=RANKS, targets=PROJECTIONS) -> list[dict]:
    """One row per rank: GFLOPs per token of the base projections, shrink, expand, and the added fraction."""
    rows = []
    for r in ranks:
        o = overhead(config, r, targets)
        rows.append({"秩": r, "基座的 GFLOP/token": round(o["base"] / 1e9, 3),
                     "shrink 的 GFLOP/token": round(o["shrink"] / 1e9, 4),
                     "expand 的 GFLOP/token": round(o["expand"] / 1e9, 4),
                     "LoRA 增加的比例": f"{100 * o['fraction']:.2f}%"})
    return rows
