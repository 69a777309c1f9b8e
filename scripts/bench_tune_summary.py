#!/usr/bin/python3
"""The tables of scripts/bench-tune.sh from the files of one pass.

    bench_tune_summary.py DIR PASS LOAD_BEFORE LOAD_AFTER

Per config: tune's outcome and choice, the sweep's best, the head-to-head
rerun (the median per-round ratio choice / sweep's best, and dpbench
compare's paired ratio with its interval and verdict), the wall times, the
model's accuracy on the raced candidates, the choice against the config as
given interleaved; then the target-AU runs."""
import gzip
import json
import os
import statistics
import sys

out, pas, before, after = sys.argv[1:5]


def load(name):
    path = os.path.join(out, name)
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        return json.load(gzip.open(path + ".gz"))
    return json.load(open(path)) if os.path.exists(path) else None


def knobs(s):
    short = {"num_workers": "w", "prefetch_factor": "p", "persistent_workers": "pers",
             "pin_memory": "pin", "async_copy": "async", "copy_depth": "d"}
    return " ".join(f"{short[k]}={int(v) if isinstance(v, bool) else v}" for k, v in s.items()
                    if k in short)


def per_round_median(run_file):
    d = load(run_file)
    a, b = ({r["round"]: r["median_ms"] for r in run["rounds"]} for run in d["runs"][:2])
    return statistics.median(b[k] / a[k] for k in a if k in b), [b[k] for k in b]


print(f"# dpbench --tune against the exhaustive sweep, {pas} pass")
print(f"# command: {os.environ.get('BENCH_COMMAND', 'scripts/bench-tune.sh')}")
print(f"# load average before {before}, after {after}")
print("# h2h: tune's choice against the sweep's best, interleaved (compare -c): the median of the")
print("#   per-round ratios choice/best (target <= 1.05; on one config <= 1.10 with its interval")
print("#   holding 1), and compare's paired ratio [95% interval] verdict")
print("# wall: tune's wall time / the sweep's (target <= 0.25); model: the median over the raced")
print("#   candidates of |predicted / measured median epoch - 1| (target <= 0.15 on the quiet pass);")
print("#   ratio: the same for the time against the config as given, predicted ratio over the race's")
print("#   paired one (the machine's drift between the profile and the race cancels)")
print("# vs given: the choice against the config as given, interleaved (target under load: never slower);")
print("# rerun: of the choice's head-to-head rounds, how many medians lie in the range tune gave")
head = (f"{'config':<23} {'outcome':<13} {'choice':<32} {'sweep best':<32} {'h2h':>5} "
        f"{'compare [95%] verdict':<29} {'tune s':>7} {'sweep s':>8} {'wall':>5} {'model':>6} {'ratio':>6} "
        f"{'vs given [95%] verdict':<29} rerun")
print(head)
walls = {}
for line in open(os.path.join(out, "walltimes.txt")):
    name, t0, t1, ts, t2 = line.split()
    walls[name] = (float(t1) - float(t0), float(t2) - float(ts))
for name, (tune_s, sweep_s) in walls.items():
    t = load(f"{name}.tune.json")["tune"]
    runs = load(f"{name}.sweep-w0.json")["runs"] + load(f"{name}.sweep.json")["runs"]
    best = min((r for r in runs if "same_as" not in r), key=lambda r: r["summary"]["median_seconds"])
    raced = [tr for tr in t["trials"] if tr["rounds"] > 0 and tr["median_ms"]]
    model = statistics.median(abs(tr["predicted_ms"] / tr["median_ms"] - 1) for tr in raced) if raced else float("nan")
    g = t["trials"][0]["predicted_ms"]
    paired = [abs(tr["predicted_ms"] / g / tr["vs_given"]["ratio"] - 1) for tr in raced[1:]
              if tr.get("vs_given") and tr["vs_given"]["ratio"]]
    model_r = statistics.median(paired) if paired else float("nan")
    h2h, cmp_text, vs_text, rerun = float("nan"), "-", "-", "-"
    if load(f"{name}.h2h.json"):
        p = load(f"{name}.h2h.json")["pairs"][0]
        h2h, choice_rounds = per_round_median(f"{name}.h2h-rounds.json")
        ci = p["ci95"]
        cmp_text = f"{p['ratio']:.3f} [{ci[0] or float('nan'):.3f}, {ci[1] or float('nan'):.3f}] {p['verdict']}"
        v = load(f"{name}.vs-given.json")["pairs"][0]
        vs_text = f"{v['ratio']:.3f} [{v['ci95'][0] or float('nan'):.3f}, {v['ci95'][1] or float('nan'):.3f}] {v['verdict']}"
        if t["rerun_ms"]:
            lo, hi = t["rerun_ms"]
            rerun = f"{sum(lo <= m <= hi for m in choice_rounds)}/{len(choice_rounds)}"
    choice = knobs(t["best"]) if t["best"] else "-"
    print(f"{name:<23} {t['outcome']:<13} {choice:<32} {knobs(best['config']['loader']):<32} "
          f"{h2h:5.3f} {cmp_text:<29} {tune_s:7.1f} {sweep_s:8.1f} {tune_s / sweep_s:5.2f} "
          f"{model:6.3f} {model_r:6.3f} {vs_text:<29} {rerun}")

print()
print("# tune.target_au: the cheapest settings whose AU reaches the target, its measured AU, and the")
print("# cheaper settings raced beside it with theirs (below the target when the choice is right)")
for name in walls:
    t = load(f"{name}.tune-au.json")
    if not t:
        continue
    t = t["tune"]
    if t["best"] is None:
        print(f"{name:<23} {t['target_au']:.2f}  none: {t['statement']}")
        continue
    b = t["trials"][t["best_trial"]]
    cost = lambda s: (s["num_workers"], s["prefetch_factor"], s["persistent_workers"])
    cheaper = [tr for tr in t["trials"] if tr["rounds"] and cost(tr["settings"]) < cost(b["settings"])]
    print(f"{name:<23} {t['target_au']:.2f}  {knobs(b['settings']):<32} AU {b['stats']['au']:.3f}; cheaper: "
          + ("; ".join(f"{knobs(tr['settings'])} AU {tr['stats']['au']:.3f}" for tr in cheaper) or "-"))
