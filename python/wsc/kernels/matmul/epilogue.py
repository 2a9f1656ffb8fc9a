"""The matmul's fused epilogue, in registers between the K loop and the
store: C = act(alpha scale_a scale_b acc + bias) + residual, each part optional.

    scale_a, scale_b: fp8 operands' per-tensor scales, f32 tensors of one
                    element read from global memory (kb.broadcast of src[0]
                    into a row vector)
    alpha:          a scalar argument (kb.scalar), set at each launch
    bias[N]:        kb.broadcast along the tile's columns (each thread reads
                    the columns it holds)
    act:            register-tile math (wsc.tile_unary / wsc.tile_binary),
                    element by element, as torch.nn.functional computes it:
                    gelu by erf, gelu_tanh by tanh, silu = x sigmoid(x) with
                    sigmoid(x) = (1 + tanh(x / 2)) / 2
    residual[M, N]: kb.load_tile in the accumulator's layout

Elements outside the bias and the residual read as 0, so a ragged tile
needs no care here: its store is clipped.
"""

from __future__ import annotations

import math

from wsc.builder import GlobalTensor, KernelBuilder, KernelScalar, RegisterTile, Scalar
from wsc.kernels.matmul.config import ACTIVATIONS


def activate(kb: KernelBuilder, x: RegisterTile, name: str) -> RegisterTile:
    """`name`'s activation (ACTIVATIONS) of the f32 tile x."""
    if name == "relu":
        return kb.relu(x)
    if name == "gelu":
        return x * 0.5 * (kb.erf(x * (1 / math.sqrt(2))) + 1.0)
    if name == "gelu_tanh":
        inner = (x + x * x * x * 0.044715) * math.sqrt(2 / math.pi)
        return x * 0.5 * (kb.tanh(inner) + 1.0)
    if name == "silu":
        return x * (kb.tanh(x * 0.5) * 0.5 + 0.5)
    raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {name!r}")


def fused_epilogue(
    kb: KernelBuilder,
    acc: RegisterTile,
    origin: tuple[Scalar, Scalar],
    bias: GlobalTensor | None = None,
    activation: str | None = None,
    residual: GlobalTensor | None = None,
    transpose: bool = False,
    alpha: KernelScalar | None = None,
    scales: tuple[GlobalTensor, GlobalTensor] | None = None,
) -> RegisterTile:
    """act(alpha scale_a scale_b acc + bias) + residual for the tile of C at
    `origin` (row, col); with `transpose` acc holds that tile's transpose
    (C^T = B A^T), so the bias runs down its rows and the residual is read
    transposed."""
    row, col = origin
    shape = list(acc.shape)
    if scales is not None:
        scale_a, scale_b = (kb.broadcast(scale, 0, [shape[0], 1]) for scale in scales)
        acc = acc * (scale_a * scale_b)
    if alpha is not None:
        acc = acc * alpha
    if bias is not None:
        acc = acc + kb.broadcast(bias, col, shape, along="rows" if transpose else "cols")
    if activation is not None:
        acc = activate(kb, acc, activation)
    if residual is not None:
        acc = acc + kb.load_tile(residual, [row, col], shape, transpose=transpose)
    return acc
