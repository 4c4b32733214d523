#!/usr/bin/env python3
"""Joins `kselect tile bench` JSON files that together cover a shape set (one call's device time
does not: scripts/device/tile_family_check.sh with SKIP_DONE) into one file, and prints the share
of the set's shapes where the tile engine's best is at or above cuBLASLt's best, by token band
and by regime (issue 18). Shapes no file measured count as below, so the share is a lower bound
when any are left.

  share_compose.py --shapes shapes/wide_framework.csv --out composed.json.gz \
      bench_1.json[=candidates label] ... [composed earlier .json.gz ...]
"""
import argparse
import csv
import gzip
import json
import math
import sys
from collections import defaultdict

BANDS = [(1, 16, "<= 16"), (17, 128, "17-128"), (129, 256, "129-256"), (257, 2048, "257-2048"),
         (2049, 1 << 62, "> 2048")]


def load(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        return json.load(f)


def key_of(p):
    return (int(p["m"]), int(p["n"]), int(p["k"]), int(p.get("batch") or 1))


def band_of(n):
    return next(name for lo, hi, name in BANDS if lo <= n <= hi)


def geomean(values):
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", required=True, help="the shape set's CSV (m,n,k,batch,regime,...)")
    ap.add_argument("--out", required=True, help="composed JSON (.json or .json.gz)")
    ap.add_argument("bench", nargs="+", help="tile bench JSON files, each optionally =label")
    a = ap.parse_args()

    with open(a.shapes) as f:
        shapes = list(csv.DictReader(line for line in f if not line.startswith("#")))
    in_set = {key_of(s): s for s in shapes}
    results, meta, run_ids = {}, None, []
    for spec in a.bench:
        path, _, label = spec.partition("=")
        d = load(path)
        ids = d["run_ids"] if "run_ids" in d else [d["run_id"]]
        run_ids += [i for i in ids if i not in run_ids]
        if meta is None:
            meta = {k: v for k, v in d.items() if k not in ("results", "summary", "run_id",
                                                           "run_ids", "unmeasured")}
        elif meta.get("device_kind") != d.get("device_kind"):
            sys.exit(f"{path}: device kind {d.get('device_kind')}, the first file's is "
                     f"{meta.get('device_kind')}: one composition, one device kind")
        for r in d["results"]:
            k = key_of(r["problem"])
            if k not in in_set:
                sys.exit(f"{path}: {k} is not a shape of {a.shapes}")
            if k in results:
                sys.exit(f"{path}: {k} measured twice (also in run {results[k].get('run_id')})")
            r.setdefault("run_id", d.get("run_id"))
            if label:
                r["candidates"] = label
            results[k] = r

    bands = defaultdict(lambda: {"shapes": 0, "measured": 0, "at_or_above": 0, "ratios": []})
    regimes = defaultdict(lambda: {"measured": 0, "at_or_above": 0, "ratios": []})
    unmeasured = []
    for k, s in in_set.items():
        b = bands[band_of(k[1])]
        b["shapes"] += 1
        r = results.get(k)
        if not r or not r.get("tile_best"):
            unmeasured.append(dict(m=k[0], n=k[1], k=k[2], batch=k[3]))
            continue
        ratio = r["tile_over_cublaslt_best"]
        regime = ".".join(s.get("regime", "").split(".")[:2])
        for t in (b, regimes[regime]):
            t["measured"] += 1
            t["at_or_above"] += ratio >= 1.0
            t["ratios"].append(ratio)

    total = sum(b["shapes"] for b in bands.values())
    wins = sum(b["at_or_above"] for b in bands.values())
    measured = sum(b["measured"] for b in bands.values())
    out = dict(meta or {})
    out.update(run_ids=run_ids, shape_set=a.shapes, shapes=total, measured=measured,
               at_or_above=wins, share_lower_bound=round(wins / total, 4),
               results=[results[k] for k in sorted(results, key=lambda k: (k[1], k[0], k[2]))],
               unmeasured=unmeasured)
    with (gzip.open if a.out.endswith(".gz") else open)(a.out, "wt") as f:
        json.dump(out, f)

    print("| tokens (n) | shapes | measured | at or above | geomean tile / cuBLASLt best |")
    print("|---|---|---|---|---|")
    for _, _, name in BANDS:
        b = bands[name]
        print(f"| {name} | {b['shapes']} | {b['measured']} | {b['at_or_above']} | "
              f"{geomean(b['ratios']):.3f} |")
    print(f"| all | {total} | {measured} | {wins} ({100 * wins / total:.1f} % of the set, "
          f"{100 * wins / max(measured, 1):.1f} % of the measured) | |")
    print("\n| regime | measured | at or above | geomean | within 0.97-1.0 |\n|---|---|---|---|---|")
    for name, t in sorted(regimes.items()):
        near = sum(0.97 <= x < 1.0 for x in t["ratios"])
        print(f"| {name} | {t['measured']} | {t['at_or_above']} | {geomean(t['ratios']):.3f} | "
              f"{near} |")
    print(f"\nwrote {a.out}: {measured} of {total} shapes measured, {len(unmeasured)} not")


if __name__ == "__main__":
    main()
