#!/usr/bin/env python3
"""The preloaded cuBLASLt layer under an unmodified PyTorch program: the Llama-3-8B-shaped model
of llama_e2e.py (random bf16 weights, plain torch.nn.functional.linear, cuBLASLt as PyTorch's BLAS
backend), run with libkselect_preload.so in LD_PRELOAD. The program itself never imports kselect:
only this benchmark reaches the layer's mode switch (kselect_layer_set_mode, through ctypes) so
that off, library and select run in one process, interleaved.

  LD_PRELOAD=.../libkselect_preload.so KSELECT_RECORD=DIR/gemms.csv \\
      layer_e2e.py record --out DIR       the application's GEMMs (prefill + decode steps, eager)
  LD_PRELOAD=... KSELECT_SOLUTIONS=S KSELECT_MODEL=M KSELECT_MODE=off KSELECT_STATS=F \\
      layer_e2e.py measure --out DIR      step times per mode: eager and CUDA graphs, prefill and
                                          decode; logits per mode against off; per-call CPU time
  layer_e2e.py baseline --out DIR         the same step times in a process without the layer (or
                                          with it preloaded and nothing set)
  --backend cublaslt | default            PyTorch's BLAS backend (default: plain matmuls reach
                                          cuBLAS's cublasGemmEx, which the layer covers too)
Every mode prints one JSON line last.
"""
import argparse
import ctypes
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import llama_e2e  # noqa: E402  (the model, its sizes and steps)
from torch_timing import wall_ms  # noqa: E402


def layer():
    """The preloaded layer's switch, or None when it is not preloaded."""
    lib = ctypes.CDLL(None)
    try:
        set_mode = lib.kselect_layer_set_mode
    except AttributeError:
        return None
    set_mode.argtypes = [ctypes.c_char_p]
    set_mode.restype = ctypes.c_int
    lib.kselect_layer_flush.restype = ctypes.c_int
    return lib


def switch(lib, mode):
    if lib.kselect_layer_set_mode(mode.encode()) != 0:
        raise SystemExit(f"kselect_layer_set_mode({mode}) failed: see stderr")


def median(values):
    return llama_e2e.median(values)


def model(torch, args):
    """The model, with PyTorch's BLAS backend as asked: "cublaslt", or "default" (plain matmuls
    reach cuBLAS's cublasGemmEx, which the layer covers as well)."""
    if args.backend == "cublaslt":
        torch.backends.cuda.preferred_blas_library("cublaslt")
    return llama_e2e.build(torch, args.layers, llama_e2e.torch_linear(torch))


def mode_record(args):
    import torch
    lib = layer()
    if lib is None:
        raise SystemExit("libkselect_preload.so is not preloaded")
    prefill, decode = model(torch, args)
    switch(lib, "record")
    llama_e2e.run_steps(torch, prefill, decode)
    flushed = lib.kselect_layer_flush()
    return {"mode": "record", "flush": flushed, "record": os.environ.get("KSELECT_RECORD", ""),
            "layers": args.layers, "decode_steps": llama_e2e.DECODE_STEPS}




def graph_ms(torch, g, reps):
    g.replay()
    start, stop = torch.cuda.Event(True), torch.cuda.Event(True)
    start.record()
    for _ in range(reps):
        g.replay()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / reps


def per_call_cost(torch, lib, modes, rounds):
    """F.linear at decode sizes, 1,000 calls: wall and CPU (this thread) time per call, per mode."""
    shapes = [(4096, 4096, 1), (4096, 4096, 8), (14336, 4096, 8), (1024, 4096, 8), (4096, 14336, 64)]
    out = {}
    for m, k, n in shapes:
        w = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        x = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        rows = {mode: {"wall": [], "cpu": []} for mode in modes}
        for r in range(rounds):
            for mode in (modes if r % 2 == 0 else list(reversed(modes))):
                if lib is not None:
                    switch(lib, mode)
                for _ in range(20):
                    torch.nn.functional.linear(x, w)  # decisions made, caches warm
                torch.cuda.synchronize()
                wall0, cpu0 = time.perf_counter(), time.thread_time()
                for _ in range(1000):
                    torch.nn.functional.linear(x, w)
                cpu1 = time.thread_time()
                torch.cuda.synchronize()
                rows[mode]["wall"].append((time.perf_counter() - wall0) * 1e3)  # us per call
                rows[mode]["cpu"].append((cpu1 - cpu0) * 1e3)
        out[f"{m}x{n}x{k}"] = {mode: {"wall_us": median(v["wall"]), "cpu_us": median(v["cpu"])}
                              for mode, v in rows.items()}
    return out


def timings(torch, lib, modes, prefill, decode, rounds):
    """Step times per mode, eager and under CUDA graphs, interleaved in rotated order."""
    graphs = {}
    for mode in modes:
        if lib is not None:
            switch(lib, mode)
        for kind, fn in (("prefill", prefill), ("decode", decode)):
            # The layer decides in the eager steps, outside the capture.
            graphs[(mode, kind)] = llama_e2e.capture_graph(torch, fn)
    results = {}
    for how in ("graph", "eager"):
        for kind, fn in (("prefill", prefill), ("decode", decode)):
            reps = (5 if kind == "prefill" else 30) if how == "eager" else (10 if kind == "prefill" else 50)
            times = {mode: [] for mode in modes}
            for r in range(rounds):
                order = modes[r % len(modes):] + modes[:r % len(modes)]
                for mode in order:
                    if how == "graph":
                        times[mode].append(graph_ms(torch, graphs[(mode, kind)], reps))
                    else:
                        if lib is not None:
                            switch(lib, mode)
                        fn()  # one step to decide again after the switch
                        times[mode].append(wall_ms(fn, reps))
            row = {f"{mode}_ms": median(times[mode]) for mode in modes}
            for mode in modes[1:]:
                row[f"{mode}_speedup"] = median([a / b for a, b in zip(times[modes[0]], times[mode])])
            results[f"{how}_{kind}"] = row
    return results


def mode_measure(args):
    import torch
    lib = layer()
    if lib is None:
        raise SystemExit("libkselect_preload.so is not preloaded")
    modes = args.modes.split(",")
    prefill, decode = model(torch, args)
    logits = {}
    with torch.no_grad():
        for mode in modes:
            switch(lib, mode)
            decode()
            logits[mode] = decode().float()
    ref = logits[modes[0]]
    rel = {mode: ((logits[mode] - ref).norm() / ref.norm()).item() for mode in modes[1:]}
    start = time.perf_counter()
    switch(lib, modes[-1])
    prefill()
    decode()
    torch.cuda.synchronize()
    warm_s = time.perf_counter() - start
    results = timings(torch, lib, modes, prefill, decode, args.rounds)
    results["per_call"] = per_call_cost(torch, lib, modes, 5)
    switch(lib, modes[-1])
    lib.kselect_layer_flush()
    return {"mode": "measure", "torch": torch.__version__, "device": torch.cuda.get_device_name(),
            "layers": args.layers, "backend": args.backend, "modes": modes, "logits_rel_diff": rel,
            "first_step_after_switch_s": warm_s, **results}


def mode_baseline(args):
    """Step times with whatever is preloaded left as it is: without the layer, or with it and
    nothing configured (alternating such processes shows what the layer costs when idle)."""
    import torch
    prefill, decode = model(torch, args)
    results = timings(torch, None, ["plain"], prefill, decode, args.rounds)
    results["per_call"] = per_call_cost(torch, None, ["plain"], 5)
    return {"mode": "baseline", "torch": torch.__version__, "layers": args.layers,
            "backend": args.backend, "layer_preloaded": layer() is not None, **results}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["record", "measure", "baseline"])
    parser.add_argument("--out", required=True)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--modes", default="off,library,select")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--backend", choices=["cublaslt", "default"], default="cublaslt",
                        help="PyTorch's BLAS backend (default: plain matmuls go to cuBLAS)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    result = {"record": mode_record, "measure": mode_measure, "baseline": mode_baseline}[
        args.mode](args)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
