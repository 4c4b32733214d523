#!/usr/bin/env python3
"""kselect inside PyTorch against PyTorch itself, side by side in one process (issue 42's figures).

  torch_bench.py --out DIR [--layers 8] [--train-layers 4] [--sections percall,prepare,...]

Sections, in this order (each writes DIR/torch_bench.json's key of its name; a table is printed last):
  check    results of F.linear / backward / bmm through kselect against PyTorch, and the
           fall-through cases (fp32, strides, alignment, empty)
  percall  CPU time per eager F.linear call (median of 1,000, routing on vs off, interleaved, each
           call after a synchronize so a full launch queue never blocks it) and GPU time (20
           calls in a CUDA graph, median of 5 replays), the nine Llama-3-8B projections at 1,
           8, 64 and 2,048 tokens
  model    the model's decode step (8 sequences x 1 token) and prefill (8 x 256 tokens): eager,
           CUDA graphs and torch.compile(fullgraph=True), kselect on vs off, interleaved rounds;
           logits compared
  train    a training step (forward + backward, 4 layers, 2,048 tokens), on vs off, gradients
           compared
  prepare  kselect.torch.prepare() of the Llama-3-8B-shaped model from no decisions (token
           counts 1-256 and 2,048, each decision timed at first use), the warm-up it takes
The model is Llama 3 8B's layer (hidden 4096, 32 heads, 8 KV heads, MLP 14336, vocabulary 128256)
with random bf16 weights in nn.Linear modules, so the switch (kselect.torch.enable) reaches it
unchanged: kselect's routing is toggled between rounds, not the code.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import kselect.torch as kt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_timing import rel_diff, wall_ms  # noqa: E402

HIDDEN, HEADS, KV_HEADS, MLP, VOCAB = 4096, 32, 8, 14336, 128256
HEAD_DIM = HIDDEN // HEADS
BATCH, PROMPT = 8, 256
DT = torch.bfloat16
PROJECTIONS = {  # name: (out_features, in_features), nn.Linear's weight shape
    "q": (HIDDEN, HIDDEN), "k": (KV_HEADS * HEAD_DIM, HIDDEN), "v": (KV_HEADS * HEAD_DIM, HIDDEN),
    "qkv": (HIDDEN + 2 * KV_HEADS * HEAD_DIM, HIDDEN), "o": (HIDDEN, HIDDEN), "gate": (MLP, HIDDEN),
    "up": (MLP, HIDDEN), "down": (HIDDEN, MLP), "lm_head": (VOCAB, HIDDEN),
}


def log(*args):
    print(*args, flush=True)


def routing(on):
    (kt.enable if on else kt.disable)()


class Layer(torch.nn.Module):
    def __init__(self, max_len):
        super().__init__()
        lin = lambda o, i: torch.nn.Linear(i, o, bias=False, device="cuda", dtype=DT)  # noqa: E731
        self.q, self.k, self.v = lin(HIDDEN, HIDDEN), lin(KV_HEADS * HEAD_DIM, HIDDEN), lin(KV_HEADS * HEAD_DIM, HIDDEN)
        self.o = lin(HIDDEN, HIDDEN)
        self.gate, self.up, self.down = lin(MLP, HIDDEN), lin(MLP, HIDDEN), lin(HIDDEN, MLP)
        self.n1 = torch.nn.RMSNorm(HIDDEN, device="cuda", dtype=DT)
        self.n2 = torch.nn.RMSNorm(HIDDEN, device="cuda", dtype=DT)
        self.max_len = max_len
        if max_len:
            self.register_buffer("kc", torch.zeros(BATCH, KV_HEADS, max_len, HEAD_DIM, device="cuda", dtype=DT))
            self.register_buffer("vc", torch.zeros(BATCH, KV_HEADS, max_len, HEAD_DIM, device="cuda", dtype=DT))

    def forward(self, h, pos=None, mask=None):
        b, t, _ = h.shape
        x = self.n1(h)
        q = self.q(x).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)
        k = self.k(x).view(b, t, KV_HEADS, HEAD_DIM).transpose(1, 2)
        v = self.v(x).view(b, t, KV_HEADS, HEAD_DIM).transpose(1, 2)
        if self.max_len:  # inference: a static KV cache, an explicit mask
            self.kc.index_copy_(2, pos, k)
            self.vc.index_copy_(2, pos, v)
            a = F.scaled_dot_product_attention(q, self.kc, self.vc, attn_mask=mask, enable_gqa=True)
        else:  # training: causal attention over the sequence
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        h = h + self.o(a.transpose(1, 2).reshape(b, t, HIDDEN))
        x = self.n2(h)
        return h + self.down(F.silu(self.gate(x)) * self.up(x))


class Model(torch.nn.Module):
    def __init__(self, layers, max_len=0, head=True):
        super().__init__()
        self.layers = torch.nn.ModuleList(Layer(max_len) for _ in range(layers))
        self.norm = torch.nn.RMSNorm(HIDDEN, device="cuda", dtype=DT)
        self.lm_head = torch.nn.Linear(HIDDEN, VOCAB, bias=False, device="cuda", dtype=DT) if head else None
        with torch.no_grad():
            for p in self.parameters():
                if p.dim() == 2:
                    p.normal_(0, 1 / math.sqrt(p.shape[1]))

    def forward(self, h, pos=None, mask=None):
        for layer in self.layers:
            h = layer(h, pos, mask)
        if self.lm_head is None:
            return self.norm(h)
        return self.lm_head(self.norm(h[:, -1, :]))  # the last token's logits


def inference_steps(model, max_len):
    g = torch.Generator(device="cuda").manual_seed(7)
    prompt = torch.randn(BATCH, PROMPT, HIDDEN, device="cuda", dtype=DT, generator=g)
    prompt_pos = torch.arange(PROMPT, device="cuda")
    prompt_mask = torch.full((1, 1, PROMPT, max_len), float("-inf"), device="cuda", dtype=DT)
    prompt_mask[0, 0, :, :PROMPT] = torch.triu(torch.full((PROMPT, PROMPT), float("-inf"), device="cuda", dtype=DT), 1)
    step = torch.randn(BATCH, 1, HIDDEN, device="cuda", dtype=DT, generator=g)
    step_pos = torch.tensor([PROMPT], device="cuda")
    step_mask = torch.full((1, 1, 1, max_len), float("-inf"), device="cuda", dtype=DT)
    step_mask[..., : PROMPT + 1] = 0

    @torch.no_grad()
    def prefill():
        return model(prompt, prompt_pos, prompt_mask)

    @torch.no_grad()
    def decode():
        return model(step, step_pos, step_mask)

    return prefill, decode



def side_by_side(fns, reps, rounds):
    """fns: {variant: (routing_on, callable)}; interleaved rounds, alternating order. Returns
    per-variant median ms and the median of per-round ratios off/on."""
    times = {name: [] for name in fns}
    for r in range(rounds):
        order = list(fns) if r % 2 == 0 else list(reversed(list(fns)))
        for name in order:
            on, fn = fns[name]
            routing(on)
            times[name].append(wall_ms(fn, reps))
    routing(False)
    names = list(fns)
    ratios = [a / b for a, b in zip(times[names[0]], times[names[1]])]
    return {**{f"{n}_ms": statistics.median(v) for n, v in times.items()},
            "speedup": statistics.median(ratios), "rounds": rounds}


# ----------------------------------------------------------------------------------- sections
def section_check(results):
    out = {}
    g = torch.Generator(device="cuda").manual_seed(1)
    for dtype in (torch.bfloat16, torch.float16):
        for tokens in (1, 8, 300):
            x = torch.randn(tokens, 4096, device="cuda", dtype=dtype, generator=g, requires_grad=True)
            w = (torch.randn(1024, 4096, device="cuda", dtype=dtype, generator=g) / 64).requires_grad_()
            grads = {}
            for on in (False, True):
                routing(on)
                y = F.linear(x, w)
                y.float().square().sum().backward()
                grads[on] = (y.detach(), x.grad.clone(), w.grad.clone())
                x.grad = w.grad = None
            routing(False)
            key = f"{str(dtype)[6:]}_t{tokens}"
            out[key] = {n: rel_diff(grads[True][i], grads[False][i]) for i, n in enumerate(("y", "dx", "dw"))}
    p = torch.randn(16, 128, 64, device="cuda", dtype=DT, generator=g)
    q = torch.randn(16, 64, 256, device="cuda", dtype=DT, generator=g)
    ref = torch.bmm(p, q)
    with kt.enabled():
        out["bmm"] = {"y": rel_diff(torch.bmm(p, q), ref)}
        out["explicit_linear"] = {"y": rel_diff(kt.linear(p[0], q[0].t()), F.linear(p[0], q[0].t()))}
    results["check"] = out
    results["check_summary"] = {k: v for k, v in kt.summary().items() if k != "decisions"}
    worst = max(v for d in out.values() for v in d.values())
    log(f"check: worst relative difference {worst:.2e}")


def section_prepare(results, model):
    kt.configure()  # no decisions yet
    counts = list(range(1, 257)) + [2048]
    report = kt.prepare(model, counts)
    results["prepare"] = report
    log(f"prepare: {report}")


def section_percall(results, calls=1000, rounds=5):
    out = {}
    g = torch.Generator(device="cuda").manual_seed(2)
    per_round = calls // rounds
    for name, (out_f, in_f) in PROJECTIONS.items():
        w = torch.randn(out_f, in_f, device="cuda", dtype=DT, generator=g) / math.sqrt(in_f)
        for tokens in (1, 8, 64, 2048):
            x = torch.randn(tokens, in_f, device="cuda", dtype=DT, generator=g)
            for on in (True, False):  # decide, warm
                routing(on)
                F.linear(x, w)
            cpu = {True: [], False: []}
            for r in range(rounds):
                for on in ((True, False) if r % 2 == 0 else (False, True)):
                    routing(on)
                    for _ in range(per_round):
                        torch.cuda.synchronize()
                        t0 = time.perf_counter_ns()
                        F.linear(x, w)
                        cpu[on].append(time.perf_counter_ns() - t0)
            # GPU time without the CPU's share: 20 calls as one CUDA graph per variant.
            graphs = {}
            for on in (True, False):
                routing(on)
                graphs[on] = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graphs[on]):
                    for _ in range(20):
                        F.linear(x, w)
            gpu = {True: [], False: []}
            for r in range(rounds):
                for on in ((True, False) if r % 2 == 0 else (False, True)):
                    graphs[on].replay()
                    start, stop = torch.cuda.Event(True), torch.cuda.Event(True)
                    start.record()
                    graphs[on].replay()
                    stop.record()
                    stop.synchronize()
                    gpu[on].append(start.elapsed_time(stop) / 20 * 1e3)
            del graphs
            routing(False)
            key = f"{name}_n{tokens}"
            out[key] = {
                "m": out_f, "n": tokens, "k": in_f,
                "cpu_us_kselect": statistics.median(cpu[True]) / 1e3,
                "cpu_us_torch": statistics.median(cpu[False]) / 1e3,
                "gpu_us_kselect": statistics.median(gpu[True]),
                "gpu_us_torch": statistics.median(gpu[False]),
            }
            o = out[key]
            o["cpu_ratio"] = o["cpu_us_kselect"] / o["cpu_us_torch"]
            o["gpu_speedup"] = o["gpu_us_torch"] / o["gpu_us_kselect"]
    results["percall"] = out
    ratios = [o["cpu_ratio"] for o in out.values()]
    log(f"percall: cpu ratio median {statistics.median(ratios):.3f}, max {max(ratios):.3f}")


def section_model(results, model, max_len, rounds):
    prefill, decode = inference_steps(model, max_len)
    out = {}
    routing(False)
    ref = decode().float()
    routing(True)
    got = decode().float()
    routing(False)
    out["decode_logits_rel_diff"] = rel_diff(got, ref)
    out["eager_decode"] = side_by_side({"torch": (False, decode), "kselect": (True, decode)}, 20, rounds)
    out["eager_prefill"] = side_by_side({"torch": (False, prefill), "kselect": (True, prefill)}, 3, rounds)
    log(f"model eager: {out['eager_decode']}, {out['eager_prefill']}")
    graphs = {}
    for on in (False, True):
        routing(on)
        for kind, fn in (("decode", decode), ("prefill", prefill)):
            fn()
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                fn()
            graphs[(on, kind)] = graph
    routing(False)
    for kind, reps in (("decode", 50), ("prefill", 5)):
        out[f"graph_{kind}"] = side_by_side({"torch": (False, graphs[(False, kind)].replay),
                                             "kselect": (True, graphs[(True, kind)].replay)}, reps, rounds)
    log(f"model graphs: {out['graph_decode']}, {out['graph_prefill']}")
    del graphs
    start = time.perf_counter()
    compiled = {kind: torch.compile(fn, fullgraph=True) for kind, fn in (("decode", decode), ("prefill", prefill))}
    for on in (False, True):
        routing(on)
        for fn in compiled.values():
            fn()
    torch.cuda.synchronize()
    out["compile_seconds"] = time.perf_counter() - start
    routing(False)
    for kind, reps in (("decode", 20), ("prefill", 3)):
        out[f"compile_{kind}"] = side_by_side({"torch": (False, compiled[kind]), "kselect": (True, compiled[kind])},
                                              reps, rounds)
    log(f"model compiled: {out['compile_decode']}, {out['compile_prefill']}")
    results["model"] = out


def section_train(results, layers, rounds):
    model = Model(layers, head=False)
    g = torch.Generator(device="cuda").manual_seed(9)
    x = torch.randn(BATCH, PROMPT, HIDDEN, device="cuda", dtype=DT, generator=g)
    params = [p for p in model.parameters() if p.requires_grad]

    def step():
        loss = model(x).float().square().mean()
        loss.backward()
        for p in params:
            p.grad = None
        return loss

    grads = {}
    for on in (False, True):
        routing(on)
        model(x).float().square().mean().backward()
        grads[on] = [p.grad.clone() for p in params]
        for p in params:
            p.grad = None
    routing(False)
    out = {"grad_rel_diff_max": max(rel_diff(a, b) for a, b in zip(grads[True], grads[False]))}
    prep = kt.prepare(model, [BATCH * PROMPT], backward=True)
    out["prepare"] = prep
    out["step"] = side_by_side({"torch": (False, step), "kselect": (True, step)}, 3, rounds)
    results["train"] = out
    log(f"train: {out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--train-layers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--sections", default="check,percall,model,train,prepare")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    sections = args.sections.split(",")
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "cuda": torch.version.cuda,
               "library": kt.library_path(), "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
    kt.configure()
    max_len = PROMPT + 2
    model = Model(args.layers, max_len)
    # prepare runs last: it starts from no decisions (configure() drops them).
    steps = [("check", lambda: section_check(results)),
             ("percall", lambda: section_percall(results)),
             ("model", lambda: section_model(results, model, max_len, args.rounds)),
             ("train", lambda: section_train(results, args.train_layers, args.rounds)),
             ("prepare", lambda: section_prepare(results, model))]
    for name, fn in steps:
        if name not in sections:
            continue
        start = time.perf_counter()
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - keep the other sections' figures
            import traceback

            traceback.print_exc()
            results[f"{name}_error"] = repr(e)
        results[f"{name}_seconds"] = time.perf_counter() - start
        with open(os.path.join(args.out, "torch_bench.json"), "w") as f:
            json.dump(results, f, indent=1)
    summary = kt.summary()
    with open(os.path.join(args.out, "torch_summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    results["routed_calls"] = summary["routed_calls"]
    results["passed_through"] = summary["passed_through"]
    with open(os.path.join(args.out, "torch_bench.json"), "w") as f:
        json.dump(results, f, indent=1)

    log("\n=== kselect.torch vs PyTorch,", results["device"], "torch", results["torch"])
    if "percall" in results:
        log(f"{'GEMM':>14} {'cpu us ks':>9} {'cpu us pt':>9} {'ratio':>6} {'gpu us ks':>9} {'gpu us pt':>9} {'speedup':>7}")
        for key, o in results["percall"].items():
            log(f"{key:>14} {o['cpu_us_kselect']:9.2f} {o['cpu_us_torch']:9.2f} {o['cpu_ratio']:6.3f} "
                f"{o['gpu_us_kselect']:9.2f} {o['gpu_us_torch']:9.2f} {o['gpu_speedup']:7.3f}")
    if "prepare" in results:
        log(f"prepare: {results['prepare']}")
    if "model" in results:
        for key, o in results["model"].items():
            if isinstance(o, dict):
                log(f"{key:>16}: torch {o['torch_ms']:.3f} ms, kselect {o['kselect_ms']:.3f} ms, speedup {o['speedup']:.4f}")
        log(f"decode logits rel diff {results['model']['decode_logits_rel_diff']:.2e}")
    if "train" in results:
        o = results["train"]["step"]
        log(f"train step: torch {o['torch_ms']:.2f} ms, kselect {o['kselect_ms']:.2f} ms, speedup {o['speedup']:.4f}; "
            f"grad rel diff max {results['train']['grad_rel_diff_max']:.2e}")
    log(f"routed {summary['routed_calls']}, passed through {summary['passed_through']}, "
        f"decisions {len(summary['decisions'])}, deciding {summary['decide_seconds']:.1f} s")


if __name__ == "__main__":
    main()
