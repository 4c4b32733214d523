#!/usr/bin/env python3
"""GPU check of the Python module: kselect.torch.selector_linear(x, w, selector) against PyTorch.

For nn.Linear shapes of decode and prefill (bf16, and fp16 for one), computes y = x @ w.T through
kselect (selection + kselect_gemm_run on torch's current stream) and compares it with an fp32
reference (x.float() @ w.float().T): max |y - ref| / max(|ref|, rms(ref)) per shape, bound 1.6e-2
for bf16 and 2e-3 for fp16 outputs (verify.h's element tolerances). Also runs one shape on a
non-default stream and a 3-D input. Prints one line per shape and exits non-zero on any failure.

Needs torch with CUDA and the kselect module: `pip install .` in the repository, or
PYTHONPATH=python KSELECT_LIBRARY=<build>/lib/libkselect_c.so.
    python3 scripts/device/python_check.py [--model models/h200_cublaslt_default_bf16_tn]
"""

import argparse
import os
import sys
import time

import torch

import kselect
import kselect.torch

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MODEL = os.path.join(HERE, "..", "..", "models", "h200_cublaslt_default")

# (tokens, in_features, out_features, dtype): Llama-3-8B projections at decode and prefill, a
# ragged token count, a shape no tile divides.
SHAPES = [
    (1, 4096, 4096, torch.bfloat16),
    (16, 4096, 4096, torch.bfloat16),
    (16, 4096, 14336, torch.bfloat16),
    (16, 14336, 4096, torch.bfloat16),
    (7, 4096, 11008, torch.bfloat16),
    (2048, 4096, 14336, torch.bfloat16),
    (2048, 14336, 4096, torch.bfloat16),
    (333, 1000, 3000, torch.bfloat16),
    (128, 4096, 4096, torch.float16),
]
TOLERANCE = {torch.bfloat16: 1.6e-2, torch.float16: 2e-3}


def max_rel_error(y, ref):
    ref = ref.float()
    rms = ref.pow(2).mean().sqrt()
    error = (y.float() - ref).abs() / torch.maximum(ref.abs(), rms)
    if not torch.isfinite(y).all():
        return float("inf")
    return error.max().item()


def check(selector, tokens, in_features, out_features, dtype, stream=None, batch_dims=()):
    generator = torch.Generator(device="cuda").manual_seed(tokens * 7919 + in_features)
    x = torch.randn(
        *batch_dims, tokens, in_features, device="cuda", dtype=dtype, generator=generator
    )
    w = torch.randn(out_features, in_features, device="cuda", dtype=dtype, generator=generator)
    w /= in_features**0.5
    stream = stream or torch.cuda.current_stream()
    with torch.cuda.stream(stream):
        y = kselect.torch.selector_linear(x, w, selector)
        ref = x.float() @ w.float().T
    stream.synchronize()
    selection = selector.select(out_features, x.numel() // in_features, in_features,
                                dtype={torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype])
    # Time it against torch's own nn.functional.linear on the same stream.
    times = {}
    for name, fn in (("kselect", lambda: kselect.torch.selector_linear(x, w, selector)),
                     ("torch", lambda: torch.nn.functional.linear(x, w))):
        with torch.cuda.stream(stream):
            for _ in range(3):
                fn()
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(20):
                fn()
            stop.record()
        stop.synchronize()
        times[name] = start.elapsed_time(stop) / 20
    error = max_rel_error(y, ref)
    ok = tuple(y.shape) == (*batch_dims, tokens, out_features) and error <= TOLERANCE[dtype]
    print(f"{'PASS' if ok else 'FAIL'} tokens={tokens:5d} in={in_features:5d} "
          f"out={out_features:5d} {str(dtype).replace('torch.', ''):8s} batch_dims={batch_dims} "
          f"max rel err {error:.3e} "
          f"(tol {TOLERANCE[dtype]:.1e})  {selection.decided_by}: {selection[0].name}  "
          f"kselect {times['kselect']:.4f} ms, torch {times['torch']:.4f} ms")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=DEFAULT_MODEL)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to check")
        return 1
    print(f"kselect {kselect.version()} from {kselect.library_path()}, torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()}")
    started = time.time()
    selector = kselect.Selector(args.model, top_k=3)
    print(f"opened {args.model} in {time.time() - started:.2f} s")
    failed = 0
    for tokens, in_features, out_features, dtype in SHAPES:
        failed += not check(selector, tokens, in_features, out_features, dtype)
    failed += not check(selector, 64, 4096, 4096, torch.bfloat16, stream=torch.cuda.Stream())
    failed += not check(selector, 32, 4096, 4096, torch.bfloat16, batch_dims=(2,))
    # Bad input raises KselectError or a Python error, never crashes.
    try:
        kselect.torch.selector_linear(torch.zeros(4, 8, device="cuda", dtype=torch.bfloat16),
                             torch.zeros(8, 9, device="cuda", dtype=torch.bfloat16), selector)
        print("FAIL mismatched shapes were accepted")
        failed += 1
    except ValueError as e:
        print(f"PASS mismatched shapes raise: {e}")
    print(f"{'all passed' if failed == 0 else f'{failed} failed'} in {time.time() - started:.1f} s")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
