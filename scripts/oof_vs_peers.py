#!/usr/bin/env python3
"""Held-out (out-of-fold) selection quality of a trained model against the peer heuristic.

For each problem: the config with the highest out-of-fold predicted TFLOPS is the model's pick;
efficiency = its measured TFLOPS / the best measured TFLOPS (the oracle of the dataset); the peer
pick is the config with peer_rank 1 (cuBLASLt's own heuristic), the peer top-8 the best of ranks
1-8. Prints a Markdown table. Usage: oof_vs_peers.py MODEL_DIR DATASET.parquet
(run with the set-up venv: .deps/venv/bin/python)."""
import os
import math
import sys

import pandas as pd


def main():
    model_dir, data = sys.argv[1], sys.argv[2]
    path = f"{model_dir}/oof_predictions.csv.gz"
    if not os.path.exists(path):
        path = f"{model_dir}/oof_predictions.csv"  # models written before compression
    oof = pd.read_csv(path)
    df = pd.read_parquet(data)
    df = df[df["is_valid"]]
    peers = df[["problem_key", "config_key", "peer_rank", "measured_tflops"]]
    rows = []
    for problem, group in oof.groupby("problem"):
        oracle = group["measured_tflops"].max()
        pick = group.loc[group["oof_predicted_tflops"].idxmax(), "measured_tflops"]
        mine = peers[peers["problem_key"] == problem]
        ranked = mine.dropna(subset=["peer_rank"])
        top1 = ranked[ranked["peer_rank"] == 1]["measured_tflops"]
        top8 = ranked[ranked["peer_rank"] <= 8]["measured_tflops"]
        rows.append({"problem": problem, "model": pick / oracle,
                     "peer_top1": top1.iloc[0] / oracle if len(top1) else math.nan,
                     "peer_top8": top8.max() / oracle if len(top8) else math.nan,
                     "speedup_vs_top1": pick / top1.iloc[0] if len(top1) else math.nan})
    r = pd.DataFrame(rows)

    def stats(col):
        s = r[col].dropna()
        return f"{s.mean() * 100:.2f} % | {s.quantile(0.1) * 100:.2f} % | {s.min() * 100:.2f} %"

    print(f"{len(r)} problems, out-of-fold (shapes held out by GroupKFold)\n")
    print("| selector | mean | P10 | min |\n|---|---|---|---|")
    print(f"| model (OOF) | {stats('model')} |")
    if r["peer_top1"].notna().any():
        print(f"| peer heuristic top-1 | {stats('peer_top1')} |")
        print(f"| best of peer top-8 | {stats('peer_top8')} |")
        s = r["speedup_vs_top1"].dropna()
        geo = math.exp(sum(math.log(x) for x in s) / len(s))
        print(f"\ngeomean speedup of the model's pick over the peer's top-1: {geo:.4f}x "
              f"({(s > 1.005).sum()} faster, {(s < 0.995).sum()} slower, {len(s)} problems)")


if __name__ == "__main__":
    main()
