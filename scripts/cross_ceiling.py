#!/usr/bin/env python3
"""Offline bounds for cross-provider selection on the 174 held-out LLM shapes (#18).

Joins, per shape (m, n, k), two measurements that each time cuBLASLt's own pick in their run:
  --eval   `kselect eval --json --model <cuBLASLt model> --data
            data/h200/cublaslt_default_bf16_tn_framework_test.parquet` (cuBLASLt's default
            catalogue, interleaved with the pick),
  --cross  `kselect tile cross --json` on data/h200/head_to_head_holdout_framework_screened.json.gz
            (every tile config screened beside the pick),
and prints geomeans over the pick of: the cuBLASLt model alone and with its top 2 timed, the tile
model's top or the model's pick timed together, and the ceiling (the best of both providers).
Each figure is a speedup over the pick within its own run, so drift between the runs cancels to
first order.
"""
import argparse
import json
import math
import re


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eval", required=True, help="kselect eval --json output")
    ap.add_argument("--cross", required=True, help="kselect tile cross --json output")
    args = ap.parse_args()
    cross = {}
    for r in json.load(open(args.cross))["results"]:
        p = r["problem"]
        cross[(p["m"], p["n"], p["k"])] = r
    rows = {}
    for p in json.load(open(args.eval))["problems"]:
        m = re.match(r"m=(\d+) n=(\d+) k=(\d+)", p["problem"])
        rows[tuple(map(int, m.groups()))] = p
    shapes = sorted(set(rows) & set(cross))
    if not shapes:
        raise SystemExit("cross_ceiling: the two files share no shape")
    figures = {"model alone": [], "model top 2 timed": [], "tile top + model top 2 timed": [],
               "ceiling (best of both)": []}
    for s in shapes:
        e, x = rows[s], cross[s]
        pick = e["peer_top1_efficiency"]
        alone = e["efficiency"] / pick
        top2 = e["model_top2_timed_efficiency"] / pick
        tile_top = x["pick_ms"] / x["challenger_top_ms"] if x.get("challenger_top_ms") else 0
        tile_best = x["pick_ms"] / x["best_ms"] if x.get("best_ms") else 0
        figures["model alone"].append(alone)
        figures["model top 2 timed"].append(top2)
        figures["tile top + model top 2 timed"].append(max(tile_top, top2))
        figures["ceiling (best of both)"].append(max(1 / pick, tile_best))
    print(f"{len(shapes)} shapes; geomean over cuBLASLt's pick (all / n <= 16 / n > 16)")
    for name, values in figures.items():
        decode = [v for s, v in zip(shapes, values) if s[1] <= 16]
        rest = [v for s, v in zip(shapes, values) if s[1] > 16]
        print(f"  {name:30s} {geomean(values):.4f} / {geomean(decode):.4f} / {geomean(rest):.4f}")


if __name__ == "__main__":
    main()
