"""PyTorch helpers: nn.Linear's product through kselect's selector and dispatch.

torch is imported when a helper is called, not when this module is.
"""

from __future__ import annotations

from ._capi import KselectError
from .selector import GemmProblem, Selector

# torch dtype name -> kselect's type name.
_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


def _torch():
    try:
        import torch
    except ImportError as e:
        raise ImportError("kselect.torch needs PyTorch (pip install torch)") from e
    return torch


def linear(x, w, selector: Selector, bias=None):
    """y = x @ w.T (+ bias), as torch.nn.functional.linear, with the kernel kselect selects.

    x: (..., in_features), w: (out_features, in_features), CUDA tensors of one dtype (bf16, fp16
    or fp32) on the selector's device. The product reaches kselect as cuBLAS's TN ("rcc"): m =
    out_features (A = w, row-major), n = tokens (B = x, column-major in x tokens), k =
    in_features; C is then y, tokens x out_features row-major. Runs on the current stream, with a
    workspace from torch's allocator.
    """
    torch = _torch()
    if not (x.is_cuda and w.is_cuda):
        raise ValueError("kselect.torch.linear needs CUDA tensors")
    if x.device != w.device:
        raise ValueError(f"x is on {x.device}, w on {w.device}")
    if x.device.index != selector.device:
        raise ValueError(
            f"the selector was opened for cuda:{selector.device}, the tensors are on {x.device}"
        )
    if x.dtype != w.dtype:
        raise TypeError(f"x is {x.dtype}, w is {w.dtype}: both must have one dtype")
    dtype = _DTYPES.get(str(x.dtype).replace("torch.", ""))
    if dtype is None:
        raise TypeError(f"kselect.torch.linear takes bfloat16, float16 or float32, not {x.dtype}")
    if w.dim() != 2 or x.dim() < 1 or x.shape[-1] != w.shape[1]:
        raise ValueError(f"shapes {tuple(x.shape)} and {tuple(w.shape)} do not make x @ w.T")

    out_features, in_features = w.shape
    x2 = x.reshape(-1, in_features).contiguous()
    w = w.contiguous()
    tokens = x2.shape[0]
    y = torch.empty((tokens, out_features), dtype=x.dtype, device=x.device)
    if tokens > 0 and out_features > 0:
        if in_features == 0:
            y.zero_()
        else:
            problem = GemmProblem(
                m=out_features, n=tokens, k=in_features, dtype=dtype, layout="rcc"
            )
            # The caching allocator orders the workspace's reuse on this stream after the launch.
            workspace = torch.empty(
                selector.max_workspace_bytes, dtype=torch.uint8, device=x.device
            )
            stream = torch.cuda.current_stream(x.device).cuda_stream
            with torch.cuda.device(x.device):
                selector.gemm(
                    problem,
                    w.data_ptr(),
                    x2.data_ptr(),
                    y.data_ptr(),
                    workspace.data_ptr(),
                    workspace.numel(),
                    stream,
                )
    if bias is not None:
        y.add_(bias)
    return y.reshape(*x.shape[:-1], out_features)


__all__ = ["linear", "KselectError"]
