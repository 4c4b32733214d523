#!/usr/bin/env python3
"""Shapes of a shape file that no bench file has finished yet (no problem_done record).

    remaining_shapes.py SHAPES.csv --dtype bf16 --ops TN BENCH.jsonl[.xz]|DATA.parquet ... \
        > remaining.csv

A collection spread over several device calls starts each call with the shapes still missing;
the partial problem a call's time limit left is started afresh (its rows are dropped at ingest
with --complete-problems-only). Only the standard library for JSONL (it runs on the device too); a committed dataset (.parquet,
whose problems are all complete when ingested with --one-run-per-problem) needs pandas.
"""
import argparse
import json
import lzma
import sys

# kselect's (dtype, cuBLAS ops) -> the problem record's dtype_a and layout (docs/formats.md:
# layout letters are the memory order of A, B, C; cuBLAS "TN" is "rcc").
LAYOUT_OF_OPS = {"TN": "rcc", "NN": "ccc", "NT": "crc", "TT": "rrc"}
DTYPE_OF_ARG = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8"}


def open_text(path):
    return lzma.open(path, "rt") if path.endswith(".xz") else open(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shapes")
    parser.add_argument("bench_files", nargs="*")
    parser.add_argument("--dtype", default="bf16", choices=sorted(DTYPE_OF_ARG))
    parser.add_argument("--ops", default="TN", choices=sorted(LAYOUT_OF_OPS))
    args = parser.parse_args()
    done = set()
    for path in args.bench_files:
        if path.endswith(".parquet"):
            import pandas  # only for committed datasets (the set-up venv has it)
            columns = ["m", "n", "k", "batch", "dtype", "layout"]
            data = pandas.read_parquet(path, columns=columns).drop_duplicates()
            for row in data.itertuples(index=False):
                done.add((row.m, row.n, row.k, row.batch, row.dtype, row.layout))
            continue
        with open_text(path) as lines:
            for line in lines:
                if '"problem_done"' not in line:
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a torn last line
                p = record["problem"]
                done.add((p["m"], p["n"], p["k"], p["batch"], p["dtype_a"], p["layout"]))
    header, rows, kept = [], [], 0
    with open(args.shapes) as shapes:
        for line in shapes:
            if line.startswith("#") or line.startswith("m,"):
                header.append(line)
                continue
            fields = line.strip().split(",")
            if len(fields) < 3:
                continue
            m, n, k = (int(x) for x in fields[:3])
            batch = int(fields[3]) if len(fields) > 3 and fields[3] else 1
            key = (m, n, k, batch, DTYPE_OF_ARG[args.dtype], LAYOUT_OF_OPS[args.ops])
            if key not in done:
                rows.append(line)
                kept += 1
    sys.stdout.write("".join(header) + "".join(rows))
    print(f"remaining_shapes: {kept} of {kept + len(done)} shapes left "
          f"({len(done)} finished in {len(args.bench_files)} file(s))", file=sys.stderr)


if __name__ == "__main__":
    main()
