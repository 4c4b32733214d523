#!/usr/bin/env python3
"""nvMatmulHeuristics (NVIDIA's analytic GEMM config heuristic) as a peer of kselect's tile model.

For every shape of two H200 bf16 TN (`rcc`) data sets, ask nvMatmulHeuristics (PyPI
`nvidia-matmul-heuristics`) for its top-k kernel configurations (k = 1, 4, 8, 16), map each onto a
config of kselect's tile engine, and score the pick set with the measured times of those configs:

    efficiency = (time of the best measured tile config of the whole catalogue for the shape)
               / (time of the best measured config among the picks that map)

reported as mean, P10 and min over shapes, split by token regime (n <= 16, 17-128, > 128; framework
orientation: m = out features, n = tokens), next to kselect's tile model (out-of-fold top-1 on the
benchmark data set, the shipped model's top-1 on the held-out LLM test set) and, for context,
cuBLASLt's own pick against the best tile config. Runs on the CPU: nothing is measured here, the
library is given a predefined hardware descriptor instead of a GPU.

Query (what CUTLASS's python/cutlass_library/heuristics_provider.py does): NvMatmulHeuristicsInterfaceEx,
flags PERF_MODEL_BASED_AUTO_TUNING, internal discovery set loaded, a backend of the target, hardware
descriptor H200_SXM, precision "TST" (bf16 A/B, fp32 compute, bf16 D), layout TN_COL_MAJOR (CUTLASS's
"tnn": A row-major m x k, B column-major k x n, C column-major = our rcc = cuBLAS TN), batch as the
shape's. Each k is a separate call with count = k (the top-4 list is not always a prefix of the
top-16 list). Variants (the `variants` of the output):

  cutlass3          target CUTLASS3 (Hopper TMA + wgmma kernels) -> our warp_specialized pipeline
  cutlass2          target CUTLASS (2.x, Ampere-style cp.async + mma.sync) -> our multistage pipeline
  both              the union of both targets' top-k, ranked by nvMatmulHeuristics' own runtime estimate
  cutlass3_catalogue, both_catalogue
                    as above, but with a KERNEL_ADDITIONAL_VALIDITY_CHECK callback that accepts only
                    configs whose CTA tile, split-k, cluster (and CUTLASS 2.x warp layout) are those of a
                    config measured for the shape (the way PyTorch Inductor restricts it to the kernels it
                    has): nvMatmulHeuristics as a ranker of our catalogue. Every pick maps, at most the
                    stage count differs (checked; held to our stage counts it returns nothing).

Mapping of one pick (cta m/n/k, warp tile, split-k, stages, cluster, swizzle) onto the configs measured
for the shape, in the target's pipeline only (decode and small_m have no counterpart):
  candidates: same pipeline, same CTA tile m x n, same split-k; none -> "none" (with the reason);
  the nearest candidate by, in order: tile_k equal, |log2 tile_k ratio|, cluster equal, |stages
  difference|, warp layout equal (cutlass2: warps = cta / warp tile; CUTLASS3's warp tile is not a
  kernel parameter and our WS kernels use tile_m / 64 consumer warpgroups), |log2 swizzle ratio|;
  "exact" when tile_k, cluster, stages (and, cutlass2, the warp layout) are equal, else "approximate"
  with the fields that differ. Raster swizzle / CTA order never break exactness (launch parameters).

Times: data set 1 (`kselect bench --provider tile --rules default`): latency_ms; aborted rows (stopped
at 2 x the best so far) keep their latency, a lower bound, so a pick set whose best mapped config was
aborted gets an upper bound on its efficiency (counted as `best_pick_cut_short`). Data set 2
(kselect.head_to_head `screened` lists): the screened ms, cut-short configs carry their stop time
(flagged when >= 2.99 x the shape's best screened time). Shapes where no pick maps have no efficiency:
they are counted and listed, never scored as 0 or 1, and each figure says over how many shapes it is.

Usage (needs nvidia-matmul-heuristics, pandas, pyarrow, numpy):
  python scripts/peers/nvmmh_compare.py --out data/results/peers/nvmmh_h200.json [--markdown]
  python scripts/peers/nvmmh_compare.py --self-check   # mapping rules + 3 shapes; exit 1 on an error
"""
import argparse
import ctypes
import gzip
import hashlib
import json
import math
import os
import sys
from dataclasses import dataclass

KS = (1, 4, 8, 16)
REGIMES = (("n<=16", lambda n: n <= 16), ("17-128", lambda n: 17 <= n <= 128), (">128", lambda n: n > 128))
FAMILY_PIPELINE = {"cutlass3": "warp_specialized", "cutlass2": "multistage"}
NO_COUNTERPART = ("decode", "small_m")
GPU = "H200_SXM"
PRECISION = "TST"
CUT_SHORT_FACTOR = 2.99

DEFAULT_DATASET = "data/h200/tile_default_bf16_tn_framework.parquet"
DEFAULT_SCREENS = ("/tmp/screen1.json", "/tmp/screen2.json")
DEFAULT_CROSS = "/tmp/cross_eval.json"
DEFAULT_OOF = "models/h200_tile_default_bf16_tn/oof_predictions.csv.gz"


@dataclass(frozen=True)
class TileConfig:
    pipeline: str
    tile: tuple     # m, n, k
    warps: tuple    # m, n, k
    stages: int
    split_k: int
    cluster: tuple  # m, n
    swizzle: int

    def name(self):
        t, w = self.tile, self.warps
        return (f"{self.pipeline} {t[0]}x{t[1]}x{t[2]} w{w[0]}x{w[1]}x{w[2]} s{self.stages} sk{self.split_k}"
                f" cl{self.cluster[0]}x{self.cluster[1]} sw{self.swizzle}")


class Shape:
    def __init__(self, m, n, k, batch, source):
        self.m, self.n, self.k, self.batch, self.source = m, n, k, batch, source
        self.times = {}          # TileConfig -> (ms, cut_short)
        self.ours_top1_ms = None
        self.cublaslt_pick_ms = None

    def label(self):
        return f"{self.m}x{self.n}x{self.k}" + (f"x{self.batch}" if self.batch != 1 else "")

    def best_ms(self):
        return min(t for t, _ in self.times.values())

    def regime(self):
        return next(name for name, pred in REGIMES if pred(self.n))


# ----------------------------------------------------------------------------------------- data
def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def load_dataset(path):
    import pandas as pd
    cols = ["problem_key", "m", "n", "k", "batch", "layout", "dtype_a", "dtype_c", "pipeline", "tile_m",
            "tile_n", "tile_k", "warp_m", "warp_n", "warp_k", "stages", "split_k", "cluster_m", "cluster_n",
            "swizzle", "latency_ms", "is_valid", "aborted", "config_key"]
    df = pd.read_parquet(path, columns=cols)
    assert (df["layout"] == "rcc").all() and (df["dtype_a"] == "bf16").all() and (df["dtype_c"] == "bf16").all()
    shapes, by_key = [], {}
    for pk, g in df.groupby("problem_key", sort=False):
        r0 = g.iloc[0]
        s = Shape(int(r0.m), int(r0.n), int(r0.k), int(r0.batch), "dataset")
        s.problem_key = pk
        s.config_by_key = {}
        for r in g.itertuples(index=False):
            if not r.is_valid and not r.aborted:
                continue  # no figure at all (none in this file)
            c = TileConfig(r.pipeline, (int(r.tile_m), int(r.tile_n), int(r.tile_k)),
                           (int(r.warp_m), int(r.warp_n), int(r.warp_k)), int(r.stages), int(r.split_k),
                           (int(r.cluster_m), int(r.cluster_n)), int(r.swizzle))
            assert c not in s.times, f"duplicate config {c} for {pk}"
            s.times[c] = (float(r.latency_ms), bool(r.aborted))
            s.config_by_key[r.config_key] = c
        shapes.append(s)
        by_key[pk] = s
    return shapes, by_key


def tile_config_from_json(c):
    return TileConfig(c["pipeline"], tuple(c["tile"]), tuple(c["warps"]), int(c["stages"]), int(c["split_k"]),
                      tuple(c["cluster"]), int(c["swizzle"]))


def load_test(screens, cross_path):
    cross = json.load(open(cross_path))
    ce = {}
    for r in cross["results"]:
        p = r["problem"]
        ce[(p["m"], p["n"], p["k"], p["batch"])] = r
    shapes = []
    for path in screens:
        for r in json.load(open(path))["results"]:
            p = r["problem"]
            assert p["layout"] == "rcc" and p["dtype_a"] == "bf16" and p["dtype_c"] == "bf16", p
            s = Shape(p["m"], p["n"], p["k"], p["batch"], "test")
            overall = min(e["ms"] for e in r["screened"])
            for e in r["screened"]:
                if e["config"]["provider"] != "tile":
                    continue
                c = tile_config_from_json(e["config"])
                assert c not in s.times, f"duplicate config {c} in {path}"
                s.times[c] = (float(e["ms"]), e["ms"] >= CUT_SHORT_FACTOR * overall)
            x = ce[(s.m, s.n, s.k, s.batch)]
            s.ours_top1_ms = float(x["challenger_top_ms"])
            s.cublaslt_pick_ms = float(x["pick_ms"])
            # the model's top-1 is one of the screened tile configs
            assert s.ours_top1_ms >= s.best_ms() - 1e-12, s.label()
            assert any(abs(t - s.ours_top1_ms) < 1e-12 for t, _ in s.times.values()), s.label()
            shapes.append(s)
    keys = [(s.m, s.n, s.k, s.batch) for s in shapes]
    assert len(set(keys)) == len(keys) == len(ce), "screened shapes and cross_eval differ"
    return shapes


def load_oof(path, by_key):
    """kselect.oof_predictions 2: config keys once, then per problem its fold and index,prediction."""
    opener = gzip.open if path.endswith(".gz") else open
    configs, current, picks = [], None, {}
    best = {}
    with opener(path, "rt") as f:
        header = f.readline().strip()
        assert header == "# kselect.oof_predictions 2", header
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("config,"):
                configs.append(line.split(",", 2)[2].strip('"'))
            elif line.startswith("problem,"):
                current = line.split('"')[1]
            else:
                i, pred = line.split(",")
                pred = float(pred)
                if current in by_key and (current not in best or pred > best[current][0]):
                    best[current] = (pred, configs[int(i)])
    for pk, (_, ck) in best.items():
        s = by_key[pk]
        c = s.config_by_key.get(ck)
        assert c is not None, f"OOF pick {ck} not measured for {pk}"
        s.ours_top1_ms = s.times[c][0]
        picks[pk] = c
    return picks


# ----------------------------------------------------------------------------------------- nvMMH
class Nvmmh:
    """One NvMatmulHeuristicsInterfaceEx + backend per (target, constrained): the Python wrapper keeps
    one callback reference per interface, so two callbacks on one interface would free the first."""

    def __init__(self, gpu=GPU):
        import nvMatmulHeuristics as nv
        self.nv = nv
        self.gpu = gpu
        self.layout = nv.NvMatmulHeuristicsMatmulLayout.TN_COL_MAJOR
        self.targets = {"cutlass3": nv.NvMatmulHeuristicsTarget.CUTLASS3,
                        "cutlass2": nv.NvMatmulHeuristicsTarget.CUTLASS}
        self.inst = {}
        self.discovery = {}
        self.accept = {}
        self.cache = {}

    def _instance(self, family, constrained):
        key = (family, constrained)
        if key in self.inst:
            return self.inst[key]
        nv = self.nv
        lh = nv.NvMatmulHeuristicsInterfaceEx(backend=self.targets[family],
                                              flags=nv.NvMatmulHeuristicsFlags.PERF_MODEL_BASED_AUTO_TUNING,
                                              load_discovery_implicitly=True,
                                              gpu=nv.NvMatmulHeuristicsNvidiaGpu[self.gpu])
        self.discovery[family] = bool(lh.loadInternalDiscoverySet(self.layout, precision=PRECISION))
        backend = lh.createBackend(self.targets[family])
        if constrained:
            def check(kc_ptr, _problem_ptr, key=key):
                return 1 if nvmmh_key(kc_ptr.contents, family) in self.accept[key] else 0
            lh.setBackendCallbackProperty(
                backend, nv.NvMatmulHeuristicsBackendPropertyCallbackKind.KERNEL_ADDITIONAL_VALIDITY_CHECK, check)
        self.inst[key] = (lh, backend)
        return self.inst[key]

    def query(self, family, shape, count, accept=None):
        """Top-`count` configs as dicts, in the library's order; accept: set of nvmmh_key tuples."""
        constrained = accept is not None
        ck = (family, constrained, shape.m, shape.n, shape.k, shape.batch, count,
              frozenset(accept) if constrained else None)
        if ck in self.cache:
            return self.cache[ck]
        lh, backend = self._instance(family, constrained)
        if constrained:
            self.accept[(family, True)] = accept
        problem = lh.makeNvMatmulHeuristicsProblem(shape.m, shape.n, shape.k, self.layout, shape.batch)
        out = []
        for r in lh.getEx(problem, count, backend, precision=PRECISION):
            kc = r["nvmmhKernelConfiguration"]
            out.append({"family": family, "cta": list(kc.cta), "warp": list(kc.warp), "instr": list(kc.instr),
                        "split_k": int(kc.splitK), "stages": int(kc.loadStages), "swizzle": int(kc.gridSwizzle),
                        "cta_order": int(kc.ctaOrder), "cluster": list(kc.cluster),
                        "est_runtime_s": float(r["runtime"])})
        self.cache[ck] = out
        return out

    def version_string(self):
        lib = ctypes.CDLL(self.nv.nvMatmulHeuristics.WHEEL_LIB_PATH_)
        buf = ctypes.create_string_buffer(256)
        lib.nvMatmulHeuristicsGetVersionString(buf, 256)
        return buf.value.decode()


def nvmmh_key(kc, family):
    """The fields the catalogue restriction fixes, from a ctypes nvmmhKernelConfiguration: CTA tile,
    split-k, cluster and, CUTLASS 2.x only, the warp tile m x n (CUTLASS3's warp tile is no kernel
    parameter: our WS kernels use tile_m / 64 consumer warpgroups whatever it says). Not the stages:
    nvMatmulHeuristics fills shared memory (7 stages of 128x128x64 on CUTLASS3, 8 of 64x64x64 on
    CUTLASS 2.x, like CUTLASS 3's StageCountAutoCarveout) and returns nothing when held to ours, so the
    stages map to the nearest measured count, as for free picks."""
    key = (kc.cta[0], kc.cta[1], kc.cta[2], kc.splitK, kc.cluster[0], kc.cluster[1])
    return key + ((kc.warp[0], kc.warp[1]) if family == "cutlass2" else ())


# ----------------------------------------------------------------------------------------- mapping
def want_warps(pick):
    if pick["family"] != "cutlass2" or not pick["warp"][0] or not pick["warp"][1]:
        return None
    return (pick["cta"][0] // pick["warp"][0], pick["cta"][1] // pick["warp"][1], 1)


def map_pick(pick, catalogue):
    """(status, TileConfig or None, detail): status exact / approximate / none."""
    pipe = FAMILY_PIPELINE[pick["family"]]
    cm, cn, ckk = pick["cta"]
    in_pipe = [c for c in catalogue if c.pipeline == pipe]
    if not in_pipe:
        return "none", None, f"no {pipe} config measured for this shape"
    same_mn = [c for c in in_pipe if c.tile[:2] == (cm, cn)]
    if not same_mn:
        return "none", None, f"CTA {cm}x{cn} not in {pipe}"
    cands = [c for c in same_mn if c.split_k == pick["split_k"]]
    if not cands:
        return "none", None, f"CTA {cm}x{cn} in {pipe} but not with split-k {pick['split_k']}"
    ww = want_warps(pick)
    cl = tuple(pick["cluster"])
    sw = max(1, pick["swizzle"])

    def dist(c):
        return (c.tile[2] != ckk, abs(math.log2(c.tile[2] / ckk)), c.cluster != cl, abs(c.stages - pick["stages"]),
                ww is not None and c.warps != ww, abs(math.log2(max(1, c.swizzle) / sw)), c.stages, c.warps,
                c.swizzle)

    c = min(cands, key=dist)
    diffs = []
    if c.tile[2] != ckk:
        diffs.append("tile_k")
    if c.cluster != cl:
        diffs.append("cluster")
    if c.stages != pick["stages"]:
        diffs.append("stages")
    if ww is not None and c.warps != ww:
        diffs.append("warps")
    if not diffs:
        return "exact", c, ""
    return "approximate", c, ",".join(diffs)


def catalogue_accept_set(family, catalogue):
    """nvmmh_key tuples of the configs of `catalogue` (for the validity callback)."""
    pipe = FAMILY_PIPELINE[family]
    acc = set()
    for c in catalogue:
        if c.pipeline != pipe:
            continue
        key = (c.tile[0], c.tile[1], c.tile[2], c.split_k, c.cluster[0], c.cluster[1])
        if family == "cutlass2":
            key += (c.tile[0] // c.warps[0], c.tile[1] // c.warps[1])
        acc.add(key)
    return acc


def picks_for(nvm, variant, shape, k):
    """nvMatmulHeuristics' top-k for a variant. A catalogue restriction with nothing to accept asks
    nothing: the validity callback is no hard filter, when it rejects every candidate the library
    still returns one config (CUTLASS3: 128x128x64, 7 stages, cluster 1x1)."""
    catalogue = list(shape.times)
    if variant == "cutlass3":
        return nvm.query("cutlass3", shape, k)
    if variant == "cutlass2":
        return nvm.query("cutlass2", shape, k)
    if variant == "both":
        merged = nvm.query("cutlass3", shape, k) + nvm.query("cutlass2", shape, k)
        return sorted(merged, key=lambda p: p["est_runtime_s"])[:k]  # stable: CUTLASS3 first on ties
    if variant.endswith("_catalogue"):
        merged = []
        for family in (("cutlass3", "cutlass2") if variant == "both_catalogue" else ("cutlass3",)):
            accept = catalogue_accept_set(family, catalogue)
            if accept:
                merged += nvm.query(family, shape, k, accept)
        return sorted(merged, key=lambda p: p["est_runtime_s"])[:k]
    raise ValueError(variant)


VARIANTS = ("cutlass3", "cutlass2", "both", "cutlass3_catalogue", "both_catalogue")


def variant_pipelines(variant):
    """Our pipelines a variant's picks can map onto."""
    if variant.startswith("both"):
        return ("warp_specialized", "multistage")
    return (FAMILY_PIPELINE[variant.split("_")[0]],)


# ----------------------------------------------------------------------------------------- scoring
def stats(values):
    v = sorted(x for x in values if x is not None)
    if not v:
        return {"count": 0}
    # P10 with linear interpolation (numpy / pandas default)
    pos = 0.1 * (len(v) - 1)
    lo = math.floor(pos)
    p10 = v[lo] + (v[min(lo + 1, len(v) - 1)] - v[lo]) * (pos - lo)
    return {"count": len(v), "mean": round(sum(v) / len(v), 4), "p10": round(p10, 4), "min": round(v[0], 4)}


def by_regime(shapes, value_of):
    out = {"all": stats([value_of(s) for s in shapes])}
    for name, pred in REGIMES:
        out[name] = stats([value_of(s) for s in shapes if pred(s.n)])
    return out


def evaluate(nvm, shapes, variants=VARIANTS, errors=None):
    """Per variant and k: coverage, efficiency by regime, our top-1 on the same shapes."""
    errors = errors if errors is not None else []
    res = {}
    for variant in variants:
        vres = {}
        for k in KS:
            cov = {"picks": 0, "exact": 0, "approximate": 0, "none": 0, "approximate_fields": {},
                   "none_reasons": {}, "would_map_in_other_pipeline": 0}
            eff, eff_exact, within, cut_short, no_pick, distinct = {}, {}, {}, 0, [], []
            pipes = variant_pipelines(variant)
            for s in shapes:
                picks = picks_for(nvm, variant, s, k)
                if len(picks) > k:
                    errors.append(f"{variant} k={k} {s.label()}: {len(picks)} picks returned")
                mapped, mapped_exact = [], []
                for p in picks:
                    status, c, detail = map_pick(p, list(s.times))
                    cov["picks"] += 1
                    cov[status] += 1
                    if status == "none" and variant.endswith("_catalogue"):
                        errors.append(f"{variant} {s.label()}: catalogue-restricted pick {p} does not map ({detail})")
                    if status == "none":
                        rc = _reason_class(detail)
                        cov["none_reasons"][rc] = cov["none_reasons"].get(rc, 0) + 1
                        other = "multistage" if FAMILY_PIPELINE[p["family"]] == "warp_specialized" else "warp_specialized"
                        if any(x.pipeline == other and x.tile[:2] == tuple(p["cta"][:2]) and x.split_k == p["split_k"]
                               for x in s.times):
                            cov["would_map_in_other_pipeline"] += 1
                        continue
                    # a mapped config must agree on what the rules require
                    if (c.pipeline != FAMILY_PIPELINE[p["family"]] or c.tile[:2] != tuple(p["cta"][:2])
                            or c.split_k != p["split_k"]):
                        errors.append(f"{variant} {s.label()}: pick {p} mapped to {c.name()}")
                    if variant.endswith("_catalogue") and status != "exact" and detail != "stages":
                        errors.append(f"{variant} {s.label()}: catalogue-restricted pick {p} maps {status} "
                                      f"({detail}) to {c.name()}")
                    if status == "approximate":
                        for f in detail.split(","):
                            cov["approximate_fields"][f] = cov["approximate_fields"].get(f, 0) + 1
                    mapped.append(c)
                    if status == "exact":
                        mapped_exact.append(c)
                distinct.append(len(set(mapped)))
                if mapped:
                    t, short = min(s.times[c] for c in mapped)
                    eff[s] = s.best_ms() / t
                    if eff[s] > 1 + 1e-9:
                        errors.append(f"{variant} {s.label()}: efficiency {eff[s]} > 1")
                    within[s] = min(t for c, (t, _) in s.times.items() if c.pipeline in pipes) / t
                    cut_short += short
                else:
                    no_pick.append(s)
                if mapped_exact:
                    eff_exact[s] = s.best_ms() / min(s.times[c][0] for c in mapped_exact)
            scored = [s for s in shapes if s in eff]
            entry = {
                "coverage": cov,
                "shapes": len(shapes),
                "shapes_with_a_mapped_pick": len(scored),
                "shapes_with_no_mapped_pick": {name: sum(1 for s in no_pick if pred(s.n)) for name, pred in REGIMES},
                "mean_distinct_mapped_configs": round(sum(distinct) / len(distinct), 2) if distinct else 0,
                "best_pick_cut_short": cut_short,
                "efficiency": by_regime(scored, lambda s: eff[s]),
                "efficiency_within_target_pipelines": by_regime(scored, lambda s: within[s]),
                "ceiling_same_shapes": by_regime(scored, lambda s: s.best_ms() / min(
                    t for c, (t, _) in s.times.items() if c.pipeline in pipes)),
                "efficiency_exact_picks_only": by_regime([s for s in shapes if s in eff_exact], lambda s: eff_exact[s]),
            }
            if all(s.ours_top1_ms is not None for s in scored):
                entry["ours_top1_same_shapes"] = by_regime(scored, lambda s: s.best_ms() / s.ours_top1_ms)
            if k == 1:
                entry["no_mapped_pick_examples"] = [s.label() for s in no_pick[:12]]
            vres[f"top{k}"] = entry
        res[variant] = vres
    return res


def _reason_class(detail):
    if detail.startswith("no "):
        return "no config of the pipeline measured for the shape"
    if "split-k" in detail:
        return "CTA m x n present, split-k not"
    return detail  # "CTA AxB not in <pipeline>"


def top1_histogram(nvm, shapes, family):
    h = {}
    for s in shapes:
        for p in nvm.query(family, s, 1):
            key = f"cta {p['cta'][0]}x{p['cta'][1]}x{p['cta'][2]} cluster {p['cluster'][0]}x{p['cluster'][1]} sk{p['split_k']}"
            h[key] = h.get(key, 0) + 1
    return dict(sorted(h.items(), key=lambda kv: -kv[1])[:12])  # the 12 most frequent


def catalogue_summary(shapes):
    seen = {}
    for s in shapes:
        for c in s.times:
            seen.setdefault(c.pipeline, set()).add(c)
    out = {}
    for pipe, cs in sorted(seen.items()):
        out[pipe] = {"configs": len(cs),
                     "cta_m_x_n_x_k": sorted({f"{c.tile[0]}x{c.tile[1]}x{c.tile[2]}" for c in cs}),
                     "split_k": sorted({c.split_k for c in cs}), "stages": sorted({c.stages for c in cs}),
                     "clusters": sorted({f"{c.cluster[0]}x{c.cluster[1]}" for c in cs})}
    return out


# ----------------------------------------------------------------------------------------- self-check
def self_check(nvm, dataset_path):
    errors = []
    ws = [TileConfig("warp_specialized", (128, 256, 64), (2, 1, 1), s, 1, (1, 1), sw) for s in (3, 4) for sw in (1, 8)]
    ms = [TileConfig("multistage", (64, 64, 64), (2, 2, 1), 4, sk, (1, 1), 1) for sk in (1, 2, 4, 8)]
    ms += [TileConfig("multistage", (128, 128, 32), w, s, 1, (1, 1), 1) for w in ((2, 2, 1), (4, 2, 1)) for s in (3, 4)]
    cat = ws + ms + [TileConfig("decode", (16, 8, 64), (1, 1, 4), 2, 1, (1, 1), 1)]

    def pick(family, cta, warp, sk, st, cl, sw=1):
        return {"family": family, "cta": list(cta), "warp": list(warp), "split_k": sk, "stages": st,
                "cluster": list(cl), "swizzle": sw}

    cases = [  # (pick, expected status, expected config or None, expected detail)
        (pick("cutlass3", (128, 256, 64), (64, 64, 32), 1, 4, (1, 1), 8), "exact", ws[3], ""),
        (pick("cutlass3", (128, 256, 64), (64, 64, 32), 1, 4, (2, 1)), "approximate", ws[2], "cluster"),
        (pick("cutlass3", (128, 256, 128), (64, 64, 128), 1, 2, (1, 2)), "approximate", ws[0], "tile_k,cluster,stages"),
        (pick("cutlass3", (64, 16, 128), (64, 8, 128), 1, 8, (4, 1)), "none", None, "CTA 64x16 not in warp_specialized"),
        (pick("cutlass3", (128, 256, 64), (64, 64, 32), 2, 4, (1, 1)), "none", None,
         "CTA 128x256 in warp_specialized but not with split-k 2"),
        (pick("cutlass2", (64, 64, 64), (32, 32, 64), 2, 8, (1, 1)), "approximate", ms[1], "stages"),
        (pick("cutlass2", (64, 64, 64), (32, 32, 64), 4, 4, (1, 1)), "exact", ms[2], ""),
        (pick("cutlass2", (128, 128, 32), (32, 64, 32), 1, 3, (1, 1)), "exact", ms[6], ""),
        (pick("cutlass2", (128, 128, 32), (64, 64, 32), 1, 5, (1, 1)), "approximate", ms[5], "stages"),
        (pick("cutlass2", (128, 128, 32), (32, 32, 32), 1, 3, (1, 1)), "approximate", ms[4], "warps"),
        (pick("cutlass2", (16, 8, 64), (16, 8, 64), 1, 2, (1, 1)), "none", None, "CTA 16x8 not in multistage"),
    ]
    for p, want_status, want_cfg, want_detail in cases:
        status, c, detail = map_pick(p, cat)
        if (status, c, detail) != (want_status, want_cfg, want_detail):
            errors.append(f"map_pick({p}) = {status}, {c and c.name()}, {detail!r}; want {want_status}, "
                          f"{want_cfg and want_cfg.name()}, {want_detail!r}")
    status, _, detail = map_pick(pick("cutlass3", (128, 256, 64), (64, 64, 32), 1, 4, (1, 1)), ms)
    if status != "none" or detail != "no warp_specialized config measured for this shape":
        errors.append(f"no-WS catalogue: {status} {detail!r}")
    # catalogue_accept_set agrees with map_pick: accepted picks map, differing at most in stages
    for fam in ("cutlass3", "cutlass2"):
        for key in catalogue_accept_set(fam, cat):
            warp = (key[6], key[7], key[2]) if fam == "cutlass2" else (64, 64, key[2])
            for stages in (2, 4, 7):
                status, _, detail = map_pick(pick(fam, key[:3], warp, key[3], stages, key[4:6]), cat)
                if status == "none" or (status == "approximate" and detail != "stages"):
                    errors.append(f"accept-set key {key} of {fam} with {stages} stages maps {status} {detail}")

    # three real shapes of the data set: decode, mid, prefill
    if nvm is not None:
        shapes, _ = load_dataset(dataset_path)
        want = [(4096, 8, 4096), (4096, 128, 4096), (4096, 4096, 4096)]
        chosen = [s for s in shapes if (s.m, s.n, s.k) in want]
        if len(chosen) != 3:
            chosen = [min(shapes, key=lambda s: s.n), sorted(shapes, key=lambda s: s.n)[len(shapes) // 2],
                      max(shapes, key=lambda s: s.n)]
        res = evaluate(nvm, chosen, errors=errors)
        for variant in VARIANTS:
            for k in KS:
                if res[variant][f"top{k}"]["coverage"]["picks"] == 0:
                    errors.append(f"{variant} top{k}: no config returned for {[s.label() for s in chosen]}")
        for s in chosen:
            print(f"  {s.label():>18}: catalogue best {s.best_ms():.4f} ms")
        print(f"  both_catalogue top-1 efficiency over the 3 shapes: {res['both_catalogue']['top1']['efficiency']['all']}")
    for e in errors:
        print("ERROR:", e, file=sys.stderr)
    print(f"self-check: {len(cases) + 1} mapping cases, {'FAILED' if errors else 'ok'} ({len(errors)} errors)")
    return 1 if errors else 0


# ----------------------------------------------------------------------------------------- report
def fmt(st):
    if not st or st.get("count", 0) == 0:
        return "-"
    return f"{st['mean']:.3f} / {st['p10']:.3f} / {st['min']:.3f} ({st['count']})"


def markdown(out, ks=(1, 4, 16)):
    regs = ("all",) + tuple(n for n, _ in REGIMES)
    lines = []
    for ds in ("test", "dataset"):
        r = out["results"][ds]
        lines.append(f"\n### {r['title']}: {r['shapes']} shapes "
                     f"({', '.join(f'{k} {v}' for k, v in r['shapes_by_regime'].items())})\n")
        lines.append("Efficiency mean / P10 / min (shapes scored).\n")
        lines.append("| selector | " + " | ".join(regs) + " |")
        lines.append("|---|" + "---|" * len(regs))

        def row(name, st):
            lines.append(f"| {name} | " + " | ".join(fmt(st[g]) for g in regs) + " |")
        for name, ref in r["reference"].items():
            row(name, ref)
        for pipes, st in r["ceiling"].items():
            row(f"ceiling: best {pipes} config", st)
        for variant in VARIANTS:
            for k in ks:
                e = r["variants"][variant][f"top{k}"]
                row(f"nvMMH {variant} top-{k}", e["efficiency"])
                if e["shapes_with_a_mapped_pick"] < e["shapes"] and "ours_top1_same_shapes" in e:
                    row("&nbsp;&nbsp;kselect model top-1, same shapes", e["ours_top1_same_shapes"])
        lines.append("\n| variant | k | picks | exact | approx | none | shapes with no mapped pick "
                     "(n<=16 / 17-128 / >128) |")
        lines.append("|---|---|---|---|---|---|---|")
        for variant in VARIANTS:
            for k in KS:
                e = r["variants"][variant][f"top{k}"]
                c = e["coverage"]
                nm = e["shapes_with_no_mapped_pick"]
                lines.append(f"| {variant} | {k} | {c['picks']} | {c['exact']} | {c['approximate']} | {c['none']} | "
                             f"{nm['n<=16']} / {nm['17-128']} / {nm['>128']} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="JSON report to write")
    ap.add_argument("--dataset", default=DEFAULT_DATASET)
    ap.add_argument("--screen", action="append", help=f"head-to-head JSON (default {' '.join(DEFAULT_SCREENS)})")
    ap.add_argument("--cross-eval", default=DEFAULT_CROSS)
    ap.add_argument("--oof", default=DEFAULT_OOF, help="the tile model's out-of-fold predictions")
    ap.add_argument("--gpu", default=GPU, help="NvMatmulHeuristicsNvidiaGpu name (default H200_SXM)")
    ap.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    ap.add_argument("--self-check", action="store_true", help="mapping-rule cases and 3 shapes; exit 1 on an error")
    ap.add_argument("--no-library", action="store_true", help="with --self-check: mapping rules only")
    a = ap.parse_args()

    if a.self_check:
        return self_check(None if a.no_library else Nvmmh(a.gpu), a.dataset)
    screens = a.screen or list(DEFAULT_SCREENS)
    nvm = Nvmmh(a.gpu)

    ds_shapes, by_key = load_dataset(a.dataset)
    have_oof = os.path.exists(a.oof)
    if have_oof:
        load_oof(a.oof, by_key)
    else:
        print(f"warning: {a.oof} missing: no kselect row for the data set", file=sys.stderr)
    test_shapes = load_test(screens, a.cross_eval)

    errors = []
    results = {}
    for name, shapes, title in (("dataset", ds_shapes, "kselect bench tile dataset (framework orientation)"),
                                ("test", test_shapes, "held-out LLM test set (head-to-head screened times)")):
        ref = {}
        if name == "dataset" and have_oof:
            ref["kselect tile model, out-of-fold top-1"] = by_regime(shapes, lambda s: s.best_ms() / s.ours_top1_ms)
        else:
            ref["kselect tile model top-1 (cross_eval challenger_top_ms)"] = by_regime(
                shapes, lambda s: s.best_ms() / s.ours_top1_ms)
            ref["cuBLASLt own pick: best tile ms / pick ms"] = by_regime(
                shapes, lambda s: s.best_ms() / s.cublaslt_pick_ms)
        ceilings = {}
        for pipes in (("warp_specialized",), ("multistage",), ("warp_specialized", "multistage")):
            have = [s for s in shapes if any(c.pipeline in pipes for c in s.times)]
            ceilings[" + ".join(pipes)] = by_regime(have, lambda s: s.best_ms() / min(
                t for c, (t, _) in s.times.items() if c.pipeline in pipes))
        results[name] = {
            "title": title, "shapes": len(shapes),
            "shapes_by_regime": {n: sum(1 for s in shapes if p(s.n)) for n, p in REGIMES},
            "best_tile_config_pipeline_by_regime": _best_pipeline(shapes),
            "reference": ref,
            "ceiling": ceilings,
            "variants": evaluate(nvm, shapes, errors=errors),
            "nvmmh_top1_most_frequent": {f: top1_histogram(nvm, shapes, f) for f in ("cutlass3", "cutlass2")},
        }

    import importlib.metadata as md
    out = {
        "format": "kselect.peer_nvmmh", "format_version": 1,
        "generated_by": "scripts/peers/nvmmh_compare.py",
        "package": {"name": "nvidia-matmul-heuristics", "version": md.version("nvidia-matmul-heuristics"),
                    "library_version_string": nvm.version_string()},
        "query": {
            "api": "NvMatmulHeuristicsInterfaceEx.getEx (nvMatmulHeuristicsGetGemmConfigEx) with a backend of the target",
            "hardware_descriptor": f"predefined NvMatmulHeuristicsNvidiaGpu.{a.gpu} (no GPU on the host)",
            "precision": PRECISION + " (bf16 A/B, fp32 compute, bf16 C/D)",
            "layout": "TN_COL_MAJOR (A row-major m x k, B column-major k x n, C column-major = rcc = cuBLAS TN; "
                      "CUTLASS heuristics_provider's mapping of 'tnn')",
            "flags": "PERF_MODEL_BASED_AUTO_TUNING (as CUTLASS's heuristics_provider)",
            "discovery_set_loaded": nvm.discovery,
            "targets": {"cutlass3": "NVMMH_TARGET_CUTLASS3 -> warp_specialized",
                        "cutlass2": "NVMMH_TARGET_CUTLASS -> multistage"},
            "k": list(KS), "per_k": "one call with count = k per k (lists are not always prefixes of longer ones)",
        },
        "data": {
            "dataset": {"path": a.dataset, "sha256": sha256(a.dataset)},
            "screens": [{"path": p, "sha256": sha256(p)} for p in screens],
            "cross_eval": {"path": a.cross_eval, "sha256": sha256(a.cross_eval)},
            "oof_predictions": ({"path": a.oof, "sha256": sha256(a.oof),
                                 "model": "models/h200_tile_default_bf16_tn (GroupKFold by shape, 5 folds)"}
                                if have_oof else {"path": a.oof, "missing": True}),
            "device": "NVIDIA H200 (all measurements)",
        },
        "variants": {
            "cutlass3": "CUTLASS3 target, free; picks mapped onto warp_specialized",
            "cutlass2": "CUTLASS 2.x target, free; picks mapped onto multistage",
            "both": "union of both targets' top-k ranked by nvMatmulHeuristics' runtime estimate",
            "cutlass3_catalogue": "CUTLASS3 target restricted by a validity callback to configs that map exactly "
                                  "onto the shape's measured warp_specialized configs up to the stage count "
                                  "(CTA tile, split-k, cluster)",
            "both_catalogue": "both targets restricted to the shape's measured configs (CTA tile, split-k, cluster, "
                              "CUTLASS 2.x warp layout), ranked by runtime estimate",
        },
        "mapping_rules": [
            "pipelines: CUTLASS3 (TMA + wgmma, instr 64xNx16) -> warp_specialized; CUTLASS 2.x (cp.async + "
            "mma.sync 16x8x16) -> multistage; decode and small_m (CUDA-core / GEMV-like kernels, tile_m < 64) have "
            "no nvMatmulHeuristics counterpart and are never a mapping target, but stay in the catalogue's best",
            "candidates: same pipeline, same CTA tile m x n, same split-k; none -> unmapped",
            "nearest: tile_k equal, |log2 tile_k ratio|, cluster equal, |stages difference|, warp layout equal "
            "(CUTLASS 2.x: cta / warp tile), |log2 swizzle ratio|",
            "exact: tile_k, cluster, stages and (CUTLASS 2.x) warp layout equal; swizzle / raster order ignored",
            "approximate: mapped with other fields differing (listed in coverage.approximate_fields)",
            "the catalogue is the set of configs measured for that shape (the rule set leaves some out, e.g. no "
            "warp_specialized config when K is not a multiple of 8)",
        ],
        "efficiency": "best measured tile-config time of the whole catalogue (all pipelines) for the shape / "
                      "best measured time among the mapped picks; stats over the shapes with at least one mapped "
                      "pick (count given); shapes with none are counted in shapes_with_no_mapped_pick, never scored. "
                      "efficiency_within_target_pipelines: the same against the best config of the pipelines the "
                      "variant maps onto (ranking quality apart from the catalogue); ceiling: best of those "
                      "pipelines / best of the catalogue (what a perfect ranker restricted to them reaches); "
                      "ours_top1_same_shapes: kselect's tile model on the same shapes",
        "catalogue": catalogue_summary(ds_shapes + test_shapes),
        "results": results,
        "errors": errors,
    }
    if a.out:
        os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
        with open(a.out, "w") as f:
            f.write(compact_json(out) + "\n")
    if a.markdown or not a.out:
        print(markdown(out))
    for e in errors:
        print("ERROR:", e, file=sys.stderr)
    return 1 if errors else 0


def compact_json(obj, indent=0, width=300):
    """JSON indented by one space per level, any value whose one-line form fits `width` on one line."""
    flat = json.dumps(obj)
    if len(flat) + indent <= width or not isinstance(obj, (dict, list)) or not obj:
        return flat
    pad = " " * (indent + 1)
    if isinstance(obj, dict):
        items = [f"{pad}{json.dumps(k)}: {compact_json(v, indent + 1, width)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + compact_json(v, indent + 1, width) for v in obj]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def _best_pipeline(shapes):
    out = {}
    for name, pred in REGIMES:
        h = {}
        for s in shapes:
            if pred(s.n):
                c = min(s.times, key=lambda c: s.times[c][0])
                h[c.pipeline] = h.get(c.pipeline, 0) + 1
        out[name] = h
    return out


if __name__ == "__main__":
    sys.exit(main())
