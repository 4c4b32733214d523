#!/usr/bin/env python3
# Compares two bench JSONL runs of the same shapes config by config: the latency ratio B/A of
# configs timed (not aborted) in both, each run's median CV, and each problem's best latency.
# Used by collect_session.sh to check that cheaper bench settings do not bias the timings.
import json, statistics, sys
def rows(path):
    out = {}
    for line in open(path):
        r = json.loads(line)
        if r["type"] == "measurement" and r["is_valid"] and not r["aborted"]:
            out[json.dumps([r["problem"], r["config"]], sort_keys=True)] = r
    return out
a, b = rows(sys.argv[1]), rows(sys.argv[2])
common = sorted(set(a) & set(b))
ratios = sorted(b[k]["latency_ms"] / a[k]["latency_ms"] for k in common)
q = lambda xs, f: xs[min(len(xs) - 1, int(f * len(xs)))]
print(f"A vs B: {len(common)} configs timed in both; latency B/A median {q(ratios, .5):.4f}, "
      f"P10 {q(ratios, .1):.4f}, P90 {q(ratios, .9):.4f}; median CV A "
      f"{statistics.median(r['cv'] for r in a.values()):.4f}, B "
      f"{statistics.median(r['cv'] for r in b.values()):.4f}")
for p in sorted({json.dumps(r["problem"], sort_keys=True) for r in a.values()}):
    la = [r["latency_ms"] for r in a.values() if json.dumps(r["problem"], sort_keys=True) == p]
    lb = [r["latency_ms"] for r in b.values() if json.dumps(r["problem"], sort_keys=True) == p]
    if la and lb:
        print(f"  m={json.loads(p)['m']}: best A {min(la):.5f} ms, best B {min(lb):.5f} ms")
# Exit status 0 when B may replace A: B's timings agree with A's (median ratio within 1 %, the
# middle 80 % within 3 %) and B's median CV stays under 2 %.
ok = (common and abs(q(ratios, .5) - 1) <= 0.01 and q(ratios, .1) >= 0.97 and q(ratios, .9) <= 1.03
      and statistics.median(r["cv"] for r in b.values()) <= 0.02)
print("B accepted" if ok else "B rejected")
sys.exit(0 if ok else 1)
