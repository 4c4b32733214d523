#!/usr/bin/env python3
"""A Llama-architecture model in plain PyTorch (random weights, bf16) for the tuning workflow's
end-to-end check (#20): capture its GEMM trace, run PyTorch TunableOp on it, and time prefill and
decode steps with its linear layers in plain PyTorch and dispatched through kselect's library.

Dimensions are Llama 3 8B's (hidden 4096, 32 heads, 8 KV heads, MLP 14336, vocab 128256) with
fewer layers (the GEMM shapes are the same in every layer). Serving shape: a batch of 8 sequences,
prefill 256 tokens each (GEMM n = 2048 tokens), then 128 decode steps of one token each (n = 8): a
chat-like request whose answer is half as long as its prompt. The logits are computed for the last
token of each sequence only, as inference engines do.

  llama_e2e.py capture  --out DIR      cuBLASLt trace of prefill + decode steps (eager)
  llama_e2e.py tunableop --out DIR     PyTorch TunableOp tuning of the same steps
  llama_e2e.py e2e --model M [--library L] [--time-top-k K] --out DIR
                                       step times, plain PyTorch vs kselect, CUDA graphs
                                       (M may be a cross-provider model: cuBLASLt + tile engine)
Every mode prints one JSON line last.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

HIDDEN, HEADS, KV_HEADS, MLP, VOCAB = 4096, 32, 8, 14336, 128256
HEAD_DIM = HIDDEN // HEADS
BATCH, PROMPT, DECODE_STEPS = 8, 256, 128
# Other architectures' dimensions (--dims), for traces the tuner was not developed on:
# hidden, heads, KV heads, MLP, vocabulary.
DIMS = {
    "llama3-8b": (4096, 32, 8, 14336, 128256),
    "qwen2.5-14b": (5120, 40, 8, 13824, 152064),
    "mistral-7b": (4096, 32, 8, 14336, 32000),
}


def build(torch, layers, linear_fn):
    """The model's step functions over static buffers, with every x @ W.T through linear_fn."""
    dev, dt = "cuda", torch.bfloat16
    g = torch.Generator(device=dev).manual_seed(1)

    def weight(out_f, in_f):
        return (torch.randn(out_f, in_f, device=dev, dtype=dt, generator=g) / math.sqrt(in_f))

    params = []
    for _ in range(layers):
        params.append(
            dict(
                q=weight(HIDDEN, HIDDEN), k=weight(KV_HEADS * HEAD_DIM, HIDDEN),
                v=weight(KV_HEADS * HEAD_DIM, HIDDEN), o=weight(HIDDEN, HIDDEN),
                gate=weight(MLP, HIDDEN), up=weight(MLP, HIDDEN), down=weight(HIDDEN, MLP),
                n1=torch.ones(HIDDEN, device=dev, dtype=dt),
                n2=torch.ones(HIDDEN, device=dev, dtype=dt),
            )
        )
    embed = torch.randn(VOCAB, HIDDEN, device=dev, dtype=dt, generator=g) * 0.02
    lm_head = weight(VOCAB, HIDDEN)
    norm = torch.ones(HIDDEN, device=dev, dtype=dt)
    max_len = PROMPT + DECODE_STEPS + 1
    k_cache = [torch.zeros(BATCH, KV_HEADS, max_len, HEAD_DIM, device=dev, dtype=dt)
               for _ in range(layers)]
    v_cache = [torch.zeros_like(k_cache[0]) for _ in range(layers)]
    inv_freq = 1.0 / (500000.0 ** (torch.arange(0, HEAD_DIM, 2, device=dev).float() / HEAD_DIM))

    def rms(x, w):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)).to(dt) * w

    def rope(x, pos):  # x: (B, H, T, D), pos: (T,)
        f = torch.outer(pos.float(), inv_freq)
        cos, sin = f.cos().to(dt), f.sin().to(dt)
        x1, x2 = x[..., ::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), -1).flatten(-2)

    def forward(tokens, pos, mask):
        """tokens: (B, T); pos: (T,) positions; mask: additive (1, 1, T, max_len)."""
        b, t = tokens.shape
        h = embed[tokens]
        for i, p in enumerate(params):
            x = rms(h, p["n1"])
            q = linear_fn(x, p["q"]).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)
            k = linear_fn(x, p["k"]).view(b, t, KV_HEADS, HEAD_DIM).transpose(1, 2)
            v = linear_fn(x, p["v"]).view(b, t, KV_HEADS, HEAD_DIM).transpose(1, 2)
            q, k = rope(q, pos), rope(k, pos)
            k_cache[i].index_copy_(2, pos, k)
            v_cache[i].index_copy_(2, pos, v)
            kk = k_cache[i].repeat_interleave(HEADS // KV_HEADS, 1)
            vv = v_cache[i].repeat_interleave(HEADS // KV_HEADS, 1)
            a = torch.nn.functional.scaled_dot_product_attention(q, kk, vv, attn_mask=mask)
            h = h + linear_fn(a.transpose(1, 2).reshape(b, t, HIDDEN), p["o"])
            x = rms(h, p["n2"])
            m = torch.nn.functional.silu(linear_fn(x, p["gate"])) * linear_fn(x, p["up"])
            h = h + linear_fn(m, p["down"])
        last = rms(h[:, -1, :], norm)
        return linear_fn(last, lm_head)  # (B, VOCAB): the logits of the last token

    # Static inputs, so steps can be captured as CUDA graphs and replayed.
    prompt = torch.randint(0, VOCAB, (BATCH, PROMPT), device=dev, generator=g)
    prompt_pos = torch.arange(PROMPT, device=dev)
    prompt_mask = torch.full((1, 1, PROMPT, max_len), float("-inf"), device=dev, dtype=dt)
    prompt_mask[0, 0, :, :PROMPT] = torch.triu(
        torch.full((PROMPT, PROMPT), float("-inf"), device=dev, dtype=dt), 1)
    step_token = torch.randint(0, VOCAB, (BATCH, 1), device=dev, generator=g)
    step_pos = torch.tensor([PROMPT], device=dev)
    step_mask = torch.full((1, 1, 1, max_len), float("-inf"), device=dev, dtype=dt)
    step_mask[..., : PROMPT + 1] = 0

    def prefill():
        return forward(prompt, prompt_pos, prompt_mask)

    def decode():
        return forward(step_token, step_pos, step_mask)

    return prefill, decode


def torch_linear(torch):
    return lambda x, w: torch.nn.functional.linear(x, w)


def capture_graph(torch, fn):
    """A CUDA graph of one step, after two eager steps (kernels prepared, decisions made,
    modules loaded outside the capture)."""
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g


def run_steps(torch, prefill, decode):
    prefill()
    for _ in range(DECODE_STEPS):
        decode()
    torch.cuda.synchronize()


def mode_capture(args):
    # cuBLASLt reads its logging settings when it loads: set them before torch does.
    os.environ["CUBLASLT_LOG_LEVEL"] = "2"
    os.environ["CUBLASLT_LOG_FILE"] = os.path.join(args.out, "cublaslt_trace.log")
    import torch
    torch.backends.cuda.preferred_blas_library("cublaslt")
    prefill, decode = build(torch, args.layers, torch_linear(torch))
    start = time.time()
    run_steps(torch, prefill, decode)
    return {"mode": "capture", "seconds": time.time() - start, "torch": torch.__version__,
            "trace": os.environ["CUBLASLT_LOG_FILE"], "layers": args.layers,
            "prefill_tokens": BATCH * PROMPT, "decode_tokens": BATCH, "decode_steps": DECODE_STEPS}


def mode_tunableop(args):
    os.environ["PYTORCH_TUNABLEOP_ENABLED"] = "1"
    os.environ["PYTORCH_TUNABLEOP_TUNING"] = "1"
    os.environ["PYTORCH_TUNABLEOP_FILENAME"] = os.path.join(args.out, "tunableop_results%d.csv")
    import torch
    torch.backends.cuda.preferred_blas_library("cublaslt")
    prefill, decode = build(torch, args.layers, torch_linear(torch))
    start = time.time()
    run_steps(torch, prefill, decode)  # every new GEMM is tuned on its first call
    tuned_s = time.time() - start
    # Results are written when the process exits (write_file is gone from torch 2.11's API).
    if hasattr(torch.cuda.tunable, "write_file"):
        torch.cuda.tunable.write_file()
    start = time.time()
    run_steps(torch, prefill, decode)  # the same steps with the tuning done
    plain_s = time.time() - start
    return {"mode": "tunableop", "torch": torch.__version__,
            "results": os.path.join(args.out, "tunableop_results0.csv"),
            "tuning_s": max(tuned_s - plain_s, 0.0), "first_run_s": tuned_s,
            "second_run_s": plain_s}


def median(values):
    values = sorted(values)
    n = len(values)
    return values[n // 2] if n % 2 else 0.5 * (values[n // 2 - 1] + values[n // 2])


def mode_e2e(args):
    import torch
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
    import kselect
    import kselect.torch as ktorch

    selector = kselect.Selector(args.model, solution_library=args.library or None, top_k=4,
                                first_stage_candidates=64, time_top_k=args.time_top_k)
    shapes = set()  # (m, n, k) of every GEMM the kselect variant ran

    def kselect_linear(x, w):
        shapes.add((w.shape[0], x.numel() // x.shape[-1], w.shape[1]))
        return ktorch.selector_linear(x, w, selector)

    variants = {"pytorch": torch_linear(torch), "kselect": kselect_linear}
    # One model per variant, the same weights (the generator is seeded the same way).
    steps = {name: build(torch, args.layers, fn) for name, fn in variants.items()}
    # The two variants must compute the same thing.
    with torch.no_grad():
        ref = steps["pytorch"][1]()
        out = steps["kselect"][1]()
        rel = ((out.float() - ref.float()).norm() / ref.float().norm()).item()
    graphs = {}
    for name, (prefill, decode) in steps.items():
        for kind, fn in (("prefill", prefill), ("decode", decode)):
            graphs[(name, kind)] = capture_graph(torch, fn)
    results = {}
    for kind in ("prefill", "decode"):
        times = {name: [] for name in variants}
        reps = 10 if kind == "prefill" else 50
        for r in range(args.rounds):
            order = list(variants) if r % 2 == 0 else list(reversed(list(variants)))
            for name in order:
                g = graphs[(name, kind)]
                g.replay()  # warm
                start, stop = torch.cuda.Event(True), torch.cuda.Event(True)
                start.record()
                for _ in range(reps):
                    g.replay()
                stop.record()
                stop.synchronize()
                times[name].append(start.elapsed_time(stop) / reps)
        ratios = [a / b for a, b in zip(times["pytorch"], times["kselect"])]
        results[kind] = {
            "pytorch_ms": median(times["pytorch"]),
            "kselect_ms": median(times["kselect"]),
            "speedup": median(ratios),
            "rounds": args.rounds,
        }
    # What runs for each GEMM after the warm-up (first-use timings settled): one more call each.
    dispatched = {}
    for m, n, k in sorted(shapes):
        w = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        x = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        y = torch.empty(n, m, device="cuda", dtype=torch.bfloat16)
        ws = torch.empty(selector.max_workspace_bytes, dtype=torch.uint8, device="cuda")
        info = selector.gemm(kselect.GemmProblem(m=m, n=n, k=k), w.data_ptr(), x.data_ptr(),
                             y.data_ptr(), ws.data_ptr(), ws.numel(),
                             torch.cuda.current_stream().cuda_stream)
        dispatched[f"{m}x{n}x{k}"] = f"{info.config_name} (rank {info.rank})"
    torch.cuda.synchronize()
    results["dispatched"] = dispatched
    # Eager prefill too (the host-side cost of dispatch through Python shows here).
    eager = {name: [] for name in variants}
    for r in range(5):
        for name in variants:
            torch.cuda.synchronize()
            start = time.time()
            steps[name][0]()
            torch.cuda.synchronize()
            eager[name].append((time.time() - start) * 1e3)
    results["prefill_eager"] = {n: median(v) for n, v in eager.items()}
    return {"mode": "e2e", "torch": torch.__version__, "device": torch.cuda.get_device_name(),
            "layers": args.layers, "batch": BATCH, "prompt": PROMPT,
            "decode_logits_rel_diff": rel, "library": args.library, "model": args.model,
            "time_top_k": args.time_top_k,
            **results}


def main():
    global HIDDEN, HEADS, KV_HEADS, MLP, VOCAB, HEAD_DIM, BATCH
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["capture", "tunableop", "e2e"])
    parser.add_argument("--out", required=True)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--model", default="models/h200_cublaslt_default_bf16_tn")
    parser.add_argument("--library", default="")
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--time-top-k", type=int, default=0,
                        help="the selector's time_top_k (a cross-provider model times both "
                             "providers' candidates at first use)")
    parser.add_argument("--dims", choices=sorted(DIMS), default="llama3-8b",
                        help="the architecture's dimensions (default Llama 3 8B)")
    parser.add_argument("--batch", type=int, default=BATCH,
                        help="sequences: decode GEMMs have n = batch, prefill n = batch x 256")
    args = parser.parse_args()
    HIDDEN, HEADS, KV_HEADS, MLP, VOCAB = DIMS[args.dims]
    HEAD_DIM = HIDDEN // HEADS
    BATCH = args.batch
    os.makedirs(args.out, exist_ok=True)
    result = {"capture": mode_capture, "tunableop": mode_tunableop, "e2e": mode_e2e}[args.mode](
        args)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
