#!/usr/bin/env python3
"""Convolution networks with kselect.torch against one of PyTorch's cuDNN modes (#47).

  conv_bench.py --out DIR --mode default|benchmark [--nets resnet50,convnext_t,vae_decoder]

Two variants of the same network and weights in one process, toggled between rounds (the code
never changes):
  default or benchmark  PyTorch with torch.backends.cudnn.benchmark False (cuDNN's heuristic
                        pick) or True (cuDNN times engines per new shape)
  kselect               kselect.torch.enable(): every channels-last bf16 convolution, forward
                        and both backward passes, by the shipped cuDNN models with their top 5
                        timed at first use
PyTorch's two modes need a process each: PyTorch keeps one cuDNN plan per shape whichever mode
made it, so the mode that meets a shape first decides it for both (seen on the device: with
benchmark toggled after the default had run, its "search" took 22 ms and its steps equalled the
default's). kselect bypasses that cache, so it can share either process.
Per network: training step (forward + backward, batch 32; not for the VAE decoder), inference
(batch 1 and 32, eager and CUDA graphs). First steps: PyTorch's mode first, then kselect's, each
on shapes it has not met (kselect: its decisions and timing; benchmark: cuDNN's search). Every
convolution layer's output, input gradient and weight gradient are compared with PyTorch's
(layer check), and the whole step's. The networks are torchvision's ResNet-50 and
ConvNeXt-T architectures with random weights and a latent-diffusion (SD-style) VAE decoder
written out below, channels-last bf16. Prints a table last; JSON in DIR/conv_bench.json.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import kselect.torch as kt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_timing import rel_diff, wall_ms  # noqa: E402

DT = torch.bfloat16
CL = torch.channels_last
VARIANTS = ("default", "kselect")  # main() puts the process's PyTorch mode first


def log(*args):
    print(*args, flush=True)


def use(variant):
    if variant != "kselect":
        torch.backends.cudnn.benchmark = variant == "benchmark"
    (kt.enable if variant == "kselect" else kt.disable)()


# --------------------------------------------------------------------------- VAE decoder
class ResBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(32, cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.n2, self.c2 = nn.GroupNorm(32, cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x):
        h = self.c1(F.silu(self.n1(x)))
        h = self.c2(F.silu(self.n2(h)))
        return self.skip(x) + h


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm, self.qkv, self.out = nn.GroupNorm(32, c), nn.Conv2d(c, 3 * c, 1), nn.Conv2d(c, c, 1)

    def forward(self, x):
        b, c, h, w = x.shape
        q, k, v = self.qkv(self.norm(x)).reshape(b, 3, c, h * w).transpose(-1, -2).unbind(1)
        a = F.scaled_dot_product_attention(q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1)).squeeze(1)
        return x + self.out(a.transpose(-1, -2).reshape(b, c, h, w).contiguous(memory_format=CL))


class VaeDecoder(nn.Module):
    """Stable Diffusion's VAE decoder layout: 4 latent channels -> 3, 8x upsampling."""

    def __init__(self, ch=(512, 512, 256, 128)):
        super().__init__()
        self.conv_in = nn.Conv2d(4, ch[0], 3, padding=1)
        self.mid = nn.Sequential(ResBlock(ch[0], ch[0]), Attention(ch[0]), ResBlock(ch[0], ch[0]))
        ups, cin = [], ch[0]
        for i, cout in enumerate(ch):
            blocks = [ResBlock(cin, cout), ResBlock(cout, cout), ResBlock(cout, cout)]
            cin = cout
            if i < len(ch) - 1:
                blocks += [nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(cout, cout, 3, padding=1)]
            ups.append(nn.Sequential(*blocks))
        self.up = nn.Sequential(*ups)
        self.norm, self.conv_out = nn.GroupNorm(32, ch[-1]), nn.Conv2d(ch[-1], 3, 3, padding=1)

    def forward(self, z):
        return self.conv_out(F.silu(self.norm(self.up(self.mid(self.conv_in(z))))))


def build(name):
    import torchvision

    if name == "resnet50":
        net, shape = torchvision.models.resnet50(), (3, 224, 224)
    elif name == "convnext_t":
        net, shape = torchvision.models.convnext_tiny(), (3, 224, 224)
    else:
        net, shape = VaeDecoder(), (4, 64, 64)
    return net.to(device="cuda", dtype=DT, memory_format=CL), shape



def rounds_of(fns, reps, rounds):
    """fns: {variant: callable}; interleaved rounds, rotating order; median ms per variant."""
    times = {v: [] for v in fns}
    names = list(fns)
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for v in order:
            use(v)
            times[v].append(wall_ms(fns[v], reps))
    use(VARIANTS[0])
    return {v: statistics.median(t) for v, t in times.items()}


def layer_check(name, batch):
    """Each convolution layer of the network on the input it meets (at `batch`, so the
    decisions of the runs before are reused): output, input gradient and weight gradient through
    kselect against PyTorch's (relative norm)."""
    net, shape = build(name)
    captured = []
    hooks = [m.register_forward_pre_hook(lambda m, args: captured.append((m, args[0].detach())))
             for m in net.modules() if isinstance(m, nn.Conv2d)]
    g = torch.Generator(device="cuda").manual_seed(5)
    with torch.no_grad():
        net(torch.randn(batch, *shape, device="cuda", dtype=DT, generator=g).to(memory_format=CL))
    for h in hooks:
        h.remove()
    worst = {"y": 0.0, "dx": 0.0, "dw": 0.0}
    bad = []
    for m, x in captured:
        got = {}
        for v in (VARIANTS[0], "kselect"):
            use(v)
            xi = x.clone().requires_grad_()
            w = m.weight.detach().clone().requires_grad_()
            y = F.conv2d(xi, w, None, m.stride, m.padding, m.dilation, m.groups)
            gy = torch.ones_like(y).to(memory_format=CL) / y.numel() ** 0.5
            dx, dw = torch.autograd.grad(y, (xi, w), gy)
            got[v] = (y, dx, dw)
        use(VARIANTS[0])
        for i, key in enumerate(("y", "dx", "dw")):
            e = rel_diff(got["kselect"][i], got[VARIANTS[0]][i])
            worst[key] = max(worst[key], e)
            if e > 2e-2:
                bad.append(f"{key} {tuple(x.shape)} -> {tuple(m.weight.shape)} s{m.stride} p{m.padding} g{m.groups}: {e:.2e}")
    out = {"layers": len(captured), "worst": worst, "over_2e-2": bad}
    log(f"{name} layer check: {out}")
    return out


def conv_percall(name, calls=300, rounds=6):
    """Host time of one eager forward call per distinct conv layer of the network at batch 1
    (synchronised before each call, so the GPU is idle and the figure is the CPU's), kselect
    against PyTorch interleaved; medians in us."""
    net, shape = build(name)
    captured, seen = [], set()

    def hook(m, args):
        key = (tuple(args[0].shape), tuple(m.weight.shape), m.stride, m.padding, m.groups)
        if key not in seen:
            seen.add(key)
            captured.append((m, args[0].detach()))

    hooks = [m.register_forward_pre_hook(hook) for m in net.modules() if isinstance(m, nn.Conv2d)]
    with torch.no_grad():
        net(torch.randn(1, *shape, device="cuda", dtype=DT).to(memory_format=CL))
    for h in hooks:
        h.remove()
    per_layer = []
    with torch.no_grad():
        for m, x in captured:
            for v in VARIANTS:  # decide, warm
                use(v)
                m(x)
            cpu = {v: [] for v in VARIANTS}
            for r in range(rounds):
                for v in (VARIANTS if r % 2 == 0 else VARIANTS[::-1]):
                    use(v)
                    for _ in range(calls // rounds):
                        torch.cuda.synchronize()
                        t0 = time.perf_counter_ns()
                        m(x)
                        cpu[v].append(time.perf_counter_ns() - t0)
            per_layer.append({v: statistics.median(t) / 1e3 for v, t in cpu.items()})
    use(VARIANTS[0])
    ratios = [layer["kselect"] / layer[VARIANTS[0]] for layer in per_layer]
    out = {"layers": len(per_layer), "per_layer_us": per_layer,
           "sum_us": {v: sum(layer[v] for layer in per_layer) for v in VARIANTS},
           "ratio_median": statistics.median(ratios), "ratio_max": max(ratios)}
    log(f"{name} per-call CPU: {out['sum_us']} median ratio {out['ratio_median']:.3f} max {out['ratio_max']:.3f}")
    return out


def decision_costs(decisions):
    """kselect's decisions made during one network: how many, and where their time went."""
    convs = [d for d in decisions if not d["problem"].startswith("m=")]
    return {"decisions": len(decisions), "conv_decisions": len(convs),
            "decide_s": sum(d["decide_ms"] for d in decisions) / 1e3,
            "select_s": sum(d.get("select_ms", 0) for d in decisions) / 1e3,
            "heuristic_s": sum(d.get("heuristic_ms", 0) for d in decisions) / 1e3,
            "can_implement_s": sum(d.get("can_implement_ms", 0) for d in decisions) / 1e3,
            "prepare_s": sum(d.get("prepare_ms", 0) for d in decisions) / 1e3,
            "timing_s": sum(d.get("timing_ms", 0) for d in decisions) / 1e3,
            "slowest": sorted(({"problem": d["problem"], "decide_ms": round(d["decide_ms"]),
                                "select_ms": round(d.get("select_ms", 0)),
                                "heuristic_ms": round(d.get("heuristic_ms", 0)),
                                "can_implement_ms": round(d.get("can_implement_ms", 0)),
                                "timing_ms": round(d.get("timing_ms", 0))} for d in decisions),
                              key=lambda d: -d["decide_ms"])[:5]}


def bench_training(name, rounds):
    net, shape = build(name)
    net.train()
    g = torch.Generator(device="cuda").manual_seed(3)
    x = torch.randn(32, *shape, device="cuda", dtype=DT, generator=g).to(memory_format=CL)
    params = [p for p in net.parameters() if p.requires_grad]

    def step():
        net(x).float().square().mean().backward()
        for p in params:
            p.grad = None

    out = {"first_step_ms": {}}
    # First steps: each variant meets these shapes for the first time (the default first, which
    # also pays cuDNN's and the network's own one-time costs; see the lab note).
    for v in VARIANTS:
        use(v)
        out["first_step_ms"][v] = wall_ms(step, 1)
    grads = {}
    for v in VARIANTS:
        use(v)
        net(x).float().square().mean().backward()
        grads[v] = [p.grad.clone() for p in params]
        for p in params:
            p.grad = None
    use(VARIANTS[0])
    out["grad_rel_diff_max"] = max(rel_diff(a, b) for a, b in zip(grads["kselect"], grads[VARIANTS[0]]))
    out["step_ms"] = rounds_of({v: step for v in VARIANTS}, 3, rounds)
    log(f"{name} train: {out}")
    return out


def bench_inference(name, rounds):
    net, shape = build(name)
    net.eval()
    out = {}
    for batch in (1, 32):
        g = torch.Generator(device="cuda").manual_seed(4)
        x = torch.randn(batch, *shape, device="cuda", dtype=DT, generator=g).to(memory_format=CL)

        @torch.no_grad()
        def run():
            return net(x)

        ref = None
        res = {}
        for v in VARIANTS:  # warm (decides, benchmarks) and compare
            use(v)
            y = run()
            y = run()
            if v == VARIANTS[0]:
                ref = y.float()
            else:
                res[f"{v}_rel_diff"] = rel_diff(y, ref)
        reps = 20 if batch == 1 else 3
        # Eager batch 1 is launch-bound and this host's launch cost wanders by a few % between
        # rounds: three times the rounds (a few ms each).
        res["eager_ms"] = rounds_of({v: run for v in VARIANTS}, reps, rounds * 3 if batch == 1 else rounds)
        graphs = {}
        for v in VARIANTS:
            use(v)
            run()
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                run()
            graphs[v] = graph
        use(VARIANTS[0])
        res["graph_ms"] = rounds_of({v: graphs[v].replay for v in VARIANTS}, reps, rounds)
        del graphs
        out[f"batch{batch}"] = res
        log(f"{name} inference batch {batch}: {res}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--nets", default="resnet50,convnext_t,vae_decoder")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--mode", choices=("default", "benchmark"), default="default")
    ap.add_argument("--percall", action="store_true", help="host time per eager conv call, batch 1")
    ap.add_argument("--train-only", action="store_true", help="the training step alone (no layer "
                    "check, no inference)")
    ap.add_argument("--save-decisions", metavar="DIR", help="kt.save_decisions(DIR) at the end")
    ap.add_argument("--load-decisions", metavar="DIR", help="kt.load_decisions(DIR) first: the "
                    "rankings of an earlier process")
    args = ap.parse_args()
    global VARIANTS
    VARIANTS = (args.mode, "kselect")
    os.makedirs(args.out, exist_ok=True)
    stem = args.mode + ("_reload" if args.load_decisions else "")  # the output files' names
    results = {"mode": args.mode, "device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "cudnn": torch.backends.cudnn.version(), "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
    kt.configure()
    if args.load_decisions:
        kt.load_decisions(args.load_decisions)
        results["loaded_decisions"] = args.load_decisions
    # One-time CUDA, cuBLAS and cuDNN set-up outside every figure.
    warm = nn.Conv2d(8, 8, 3, padding=1, device="cuda", dtype=DT).to(memory_format=CL)
    warm(torch.randn(1, 8, 8, 8, device="cuda", dtype=DT).to(memory_format=CL)).sum().backward()
    for name in args.nets.split(","):
        entry = {}
        decided = len(kt.summary()["decisions"])
        try:
            if name != "vae_decoder":
                entry["train"] = bench_training(name, args.rounds)
                entry["train_decisions"] = decision_costs(kt.summary()["decisions"][decided:])
                log(f"{name} training decisions: {entry['train_decisions']}")
            if not args.train_only:
                entry["layer_check"] = layer_check(name, 1 if name == "vae_decoder" else 32)
                entry["inference"] = bench_inference(name, args.rounds)
            if args.percall and not args.train_only:
                entry["percall"] = conv_percall(name)
        except Exception as e:  # noqa: BLE001 - keep the other networks' figures
            import traceback

            traceback.print_exc()
            entry["error"] = repr(e)
        entry["decisions"] = decision_costs(kt.summary()["decisions"][decided:])
        results[name] = entry
        with open(os.path.join(args.out, f"conv_bench_{stem}.json"), "w") as f:
            json.dump(results, f, indent=1)
    if args.save_decisions:
        start = time.perf_counter()
        results["saved_decision_files"] = kt.save_decisions(args.save_decisions)
        results["save_decisions_s"] = time.perf_counter() - start
        log(f"saved {results['saved_decision_files']} decision files in {results['save_decisions_s']:.2f} s")
    summary = kt.summary()
    results["decision_files"] = summary.get("decision_files")
    results["routed_conv_calls"] = summary["routed_conv_calls"]
    results["passed_through"] = summary["passed_through"]
    with open(os.path.join(args.out, f"conv_bench_{stem}.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(args.out, f"conv_summary_{stem}.json"), "w") as f:
        json.dump(summary, f, indent=1)

    log("\n=== kselect.torch convolutions vs PyTorch (cudnn.benchmark="
        f"{args.mode == 'benchmark'}),", results["device"], "torch", results["torch"], "cuDNN", results["cudnn"])
    p = args.mode
    for name in args.nets.split(","):
        e = results.get(name, {})
        if "train" in e:
            t = e["train"]["step_ms"]
            f = e["train"]["first_step_ms"]
            log(f"{name:>12} train b32: {p} {t[p]:.2f} ms, kselect {t['kselect']:.2f} ms "
                f"({t[p] / t['kselect']:.3f}x); first step {p} {f[p]:.0f} ms, kselect {f['kselect']:.0f} ms; "
                f"grad diff {e['train']['grad_rel_diff_max']:.1e}")
        for b, r in e.get("inference", {}).items():
            for mode in ("eager_ms", "graph_ms"):
                m = r[mode]
                log(f"{name:>12} {b:>7} {mode[:-3]:>5}: {p} {m[p]:.3f} ms, kselect {m['kselect']:.3f} ms "
                    f"({m[p] / m['kselect']:.3f}x)")
        if "percall" in e:
            c = e["percall"]
            log(f"{name:>12} per-call CPU b1: {p} {c['sum_us'][p]:.0f} us, kselect {c['sum_us']['kselect']:.0f} us "
                f"over {c['layers']} layers (ratio median {c['ratio_median']:.3f}, max {c['ratio_max']:.3f})")
        if "decisions" in e:
            c = e["decisions"]
            log(f"{name:>12} decisions: {c['decisions']} in {c['decide_s']:.1f} s (ranking {c['select_s']:.1f} s: "
                f"heuristics {c['heuristic_s']:.1f} s, CanImplement {c['can_implement_s']:.1f} s; "
                f"building {c['prepare_s']:.1f} s, timing {c['timing_s']:.1f} s)")
        if "layer_check" in e:
            c = e["layer_check"]
            log(f"{name:>12} layer check: {c['layers']} layers, worst y {c['worst']['y']:.1e} dx "
                f"{c['worst']['dx']:.1e} dw {c['worst']['dw']:.1e}, {len(c['over_2e-2'])} over 2e-2")
        if "error" in e:
            log(f"{name}: error {e['error']}")
    log(f"routed {summary['routed_conv_calls']} convolution calls, passed through {summary['passed_through']}, "
        f"decisions {len(summary['decisions'])}, deciding {summary['decide_seconds']:.1f} s")


if __name__ == "__main__":
    main()
