#!/usr/bin/env python3
"""Python users read kselect datasets directly: pyarrow sees the documented schema and metadata,
pandas loads the rows with the values kselect wrote."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

TYPES = {"string": pa.string(), "int64": pa.int64(), "double": pa.float64(), "bool": pa.bool_()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kselect", required=True)
    ap.add_argument("--fixtures", required=True)
    args = ap.parse_args()
    spec = json.loads(subprocess.run([args.kselect, "data", "schema", "--json"], check=True,
                                     capture_output=True, text=True).stdout)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "small.parquet")
        subprocess.run([args.kselect, "ingest",
                        os.path.join(args.fixtures, "kselect", "bench_small.jsonl"), "-o", out],
                       check=True, capture_output=True)
        schema = pq.read_schema(out)
        expected = [(c["name"], TYPES[c["type"]]) for c in spec["columns"]]
        actual = [(f.name, f.type) for f in schema]
        assert actual == expected, f"schema differs:\n{actual}\nvs\n{expected}"
        meta = {k.decode(): v.decode() for k, v in (schema.metadata or {}).items()}
        assert meta["kselect.schema_version"] == spec["schema_version"], meta
        assert json.loads(meta["kselect.sources"])[0]["sha256"], meta
        assert pq.ParquetFile(out).metadata.row_group(0).column(0).compression == "ZSTD"

        df = pd.read_parquet(out)
        assert len(df) == 8, len(df)
        assert int(df["is_valid"].sum()) == 4
        first = df.iloc[0]
        assert (first["m"], first["n"], first["k"]) == (1, 4096, 4096)
        assert abs(first["latency_ms"] - 0.013) < 1e-12
        assert first["duplicates_merged"] == 2
        assert first["device_kind"] == "nvidia-h200" and first["arch"] == "sm_90"
        assert df["provider"].value_counts()["cublaslt"] == 6
        conv = df[df["provider"] == "cudnn"].iloc[0]
        assert conv["conv_direction"] == "fwd" and conv["conv_hi"] == 56
        assert pd.isna(conv["m"])  # a conv row has no GEMM dims
        print(f"pandas {pd.__version__} / pyarrow {pa.__version__}: {len(df)} rows, "
              f"{len(schema)} columns read as documented")

        # An AMD CK Tile streaming log lands in the same documented schema.
        ck = os.path.join(tmp, "ck.parquet")
        subprocess.run([args.kselect, "ingest", os.path.join(args.fixtures, "ck", "tile_good.log"),
                        "--arch", "gfx950", "-o", ck], check=True, capture_output=True)
        ck_schema = pq.read_schema(ck)
        assert [(f.name, f.type) for f in ck_schema] == expected, "CK dataset schema differs"
        ck_df = pd.read_parquet(ck)
        assert set(ck_df["provider"]) == {"ck_tile"}, set(ck_df["provider"])
        assert set(ck_df["arch"]) == {"gfx950"} and set(ck_df["vendor"]) == {"amd"}
        first = ck_df.iloc[0]
        assert (first["m"], first["n"], first["k"]) == (1024, 2048, 512)
        assert (first["tile_m"], first["tile_n"], first["tile_k"]) == (128, 128, 128)
        assert (first["warp_m"], first["warp_n"], first["warp_tile_k"]) == (1, 4, 128)
        assert first["dtype"] == "fp8" and first["layout"] == "rcr" and first["pipeline"] == "compv3"
        mem = ck_df[ck_df["pipeline"] == "mem"]
        assert len(mem) > 0 and mem["pad_m"].all() and mem["pad_k"].all(), "_mem pad fix missing"
        assert (~ck_df["is_valid"]).sum() >= 1, "zero-performance rows must be kept as invalid"
        print(f"CK Tile log: {len(ck_df)} rows read as documented")

        # `kselect features`: the model's feature matrix of the valid candidates, in the spec's
        # order, with the spec in the file's metadata.
        feats = os.path.join(tmp, "ck_features.parquet")
        subprocess.run([args.kselect, "features", "--data", ck, "-o", feats], check=True,
                       capture_output=True)
        f_schema = pq.read_schema(feats)
        f_meta = {k.decode(): v.decode() for k, v in (f_schema.metadata or {}).items()}
        feature_spec = json.loads(f_meta["kselect.feature_spec"])
        names = [f["name"] for f in feature_spec["features"]]
        assert f_schema.names[:7] == ["problem_key", "shape_key", "config_key", "measured_tflops",
                                      "latency_ms", "estimated", "peer_rank"], f_schema.names
        assert f_schema.names[7:] == ["feature." + n for n in names], f_schema.names
        f_df = pd.read_parquet(feats)
        valid = ck_df[ck_df["is_valid"]]
        assert len(f_df) == len(valid), (len(f_df), len(valid))
        assert (f_df["feature.m"] * f_df["feature.n"] * f_df["feature.k"] > 0).all()
        assert sorted(f_df["measured_tflops"]) == sorted(valid["measured_tflops"])
        assert set(f_df["feature.tile_m"]) == set(valid["tile_m"].astype(float))
        print(f"features: {len(f_df)} candidates x {len(names)} features")
    return 0


if __name__ == "__main__":
    sys.exit(main())
