#!/usr/bin/env python3
"""Drift of bench timings (issue 21): the same (problem, config) timed twice.

usage: drift_compare.py RUN_A.jsonl[.gz] RUN_B.jsonl[.gz] [--json OUT]
       drift_compare.py --within RUN.jsonl[.gz]

Across runs, for every (problem, config) timed validly (not aborted) in both, it compares
  raw         the median of the run's timings of the pair;
  interleaved latency / reference_latency_ms (the problem's drift reference timed in batches
              interleaved with the row's, `kselect bench --interleave-reference`);
  level       latency / the median of all the problem's reference times in the run, which
              cancels a problem's clock or memory level and adds little noise of its own;
and reports the share of pairs within 2 % (all pairs, and large GEMMs: problems whose best config
passes 500 TFLOP/s in run A), how often both runs name the same best config, the efficiency run
A's best scores in run B, and each run's clocks, power and temperature.
--within compares the first and second timing of each pair inside one run (the confirmation
pass, e.g. --confirm-top 100000 --confirm-rounds 1): noise of one measurement, without drift.
"""
import argparse, gzip, json, statistics, sys


def rows_of(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        for line in f:
            line = line.strip()
            if line:
                r = json.loads(line)
                if r.get("type") == "measurement":
                    yield r


def load(path):
    """Per problem: {config: [(latency, last reference), ...] in run order}, reference times,
    best TFLOP/s; and the GPU state of every row."""
    problems, state = {}, []
    for r in rows_of(path):
        if not r["is_valid"] or r["aborted"]:
            continue
        p = problems.setdefault(json.dumps(r["problem"], sort_keys=True),
                                {"pairs": {}, "refs": [], "ref_config": None, "tflops": 0})
        c = json.dumps(r["config"], sort_keys=True)
        if r.get("is_drift_reference"):
            p["ref_config"] = c
        if r.get("reference_latency_ms", 0) > 0:
            p["refs"].append(r["reference_latency_ms"])
        p["pairs"].setdefault(c, []).append((r["latency_ms"], r.get("reference_latency_ms", 0)))
        p["tflops"] = max(p["tflops"], r["tflops"])
        m = r.get("method", {})
        state.append((m.get("sm_clock_min_mhz", 0), m.get("power_w", 0), m.get("temperature_c", 0)))
    return problems, state


def within(items, tol=0.02):
    return sum(abs(x - 1) <= tol for x in items) / len(items) if items else float("nan")


def p95(items):
    d = sorted(abs(x - 1) for x in items)
    return d[int(0.95 * (len(d) - 1))] if d else float("nan")


def report(name, ratios):
    res = {k: {"pairs": len(v), "within_2pct": within(v), "within_1pct": within(v, 0.01),
               "p95_abs_dev": p95(v), "median_ratio": statistics.median(v) if v else None}
           for k, v in ratios.items()}
    print(f"  {name}: " + "; ".join(
        f"{k} {100 * r['within_2pct']:.1f} % within 2 % (P95 |dev| {100 * r['p95_abs_dev']:.2f} %, "
        f"median {r['median_ratio'] or 0:.4f}, {r['pairs']} pairs)" for k, r in res.items()))
    return res


def state_line(name, st):
    clk = sorted(s[0] for s in st if s[0] > 0)
    pw = [s[1] for s in st if s[1] > 0]
    tp = [s[2] for s in st if s[2] > 0]
    if clk:
        print(f"  run {name}: SM clock P10/median {clk[len(clk) // 10]}/{statistics.median(clk)} MHz, "
              f"power median {statistics.median(pw):.0f} W, temperature max {max(tp)} C")
    return {"sm_clock_p10": clk[len(clk) // 10] if clk else 0,
            "power_median_w": statistics.median(pw) if pw else 0,
            "temperature_max_c": max(tp) if tp else 0}


def compare_runs(path_a, path_b):
    a, sa = load(path_a)
    b, sb = load(path_b)
    out = {"run_a": path_a, "run_b": path_b, "classes": {}}
    classes = {"all": {"raw": [], "interleaved": [], "level": []},
               "large": {"raw": [], "interleaved": [], "level": []}}
    same_best, eff = 0, []
    common_problems = sorted(set(a) & set(b))
    for p in common_problems:
        pa, pb = a[p], b[p]
        level_a = statistics.median(pa["refs"]) if pa["refs"] else None
        level_b = statistics.median(pb["refs"]) if pb["refs"] else None
        common = sorted(set(pa["pairs"]) & set(pb["pairs"]))
        for c in common:
            ta = statistics.median(t for t, _ in pa["pairs"][c])
            tb = statistics.median(t for t, _ in pb["pairs"][c])
            for cls in ("all", "large") if pa["tflops"] >= 500 else ("all",):
                classes[cls]["raw"].append(tb / ta)
                if c != pa["ref_config"] and c != pb["ref_config"]:
                    ra = [t / r for t, r in pa["pairs"][c] if r > 0]
                    rb = [t / r for t, r in pb["pairs"][c] if r > 0]
                    if ra and rb:
                        classes[cls]["interleaved"].append(statistics.median(rb) / statistics.median(ra))
                    if level_a and level_b:
                        classes[cls]["level"].append((tb / level_b) / (ta / level_a))
        if common:
            med = lambda run, c: statistics.median(t for t, _ in run[p]["pairs"][c])
            best_a = min(common, key=lambda c: med(a, c))
            best_b = min(common, key=lambda c: med(b, c))
            same_best += best_a == best_b
            eff.append(med(b, best_b) / med(b, best_a))
    print(f"drift {path_a} -> {path_b}: {len(common_problems)} problems in both")
    for cls, ratios in classes.items():
        out["classes"][cls] = report(cls, ratios)
    out["same_best"], out["problems"] = same_best, len(eff)
    out["a_best_efficiency_in_b_mean"] = statistics.mean(eff) if eff else None
    if eff:
        print(f"  same best config in {same_best} of {len(eff)} problems; run A's best scores "
              f"{100 * statistics.mean(eff):.2f} % mean in run B")
    out["state_a"], out["state_b"] = state_line("A", sa), state_line("B", sb)
    return out


def compare_within(path):
    run, st = load(path)
    classes = {"all": {"raw": [], "interleaved": []}, "large": {"raw": [], "interleaved": []}}
    ref_cv = []
    for p in run.values():
        refs = p["refs"]
        if len(refs) >= 3:
            ref_cv.append(statistics.stdev(refs) / statistics.mean(refs))
        for c, timings in p["pairs"].items():
            if c == p["ref_config"] or len(timings) < 2:
                continue
            (t1, r1), (t2, r2) = timings[0], timings[1]
            for cls in ("all", "large") if p["tflops"] >= 500 else ("all",):
                classes[cls]["raw"].append(t2 / t1)
                if r1 > 0 and r2 > 0:
                    classes[cls]["interleaved"].append((t2 / r2) / (t1 / r1))
    print(f"within {path}: first vs second timing of each pair in the run")
    out = {"run": path, "classes": {cls: report(cls, r) for cls, r in classes.items()}}
    if ref_cv:
        print(f"  reference timings per problem: median CV {100 * statistics.median(ref_cv):.2f} %, "
              f"max {100 * max(ref_cv):.2f} % ({len(ref_cv)} problems)")
    out["state"] = state_line("", st)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--within", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.within:
        out = [compare_within(r) for r in args.runs]
    elif len(args.runs) == 2:
        out = compare_runs(*args.runs)
    else:
        ap.error("two runs to compare, or --within RUN...")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
