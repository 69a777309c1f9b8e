#!/usr/bin/python3
"""Puts a dpbench result and a PyTorch reference result side by side.

    compare.py DPBENCH.json TORCH.json [--markdown]

Both files are in dpbench's JSON schema (scripts/torch_reference.py writes
it). Points are matched by their label ("loader.num_workers=2 ..."), or by
position when the labels differ but the counts agree. For every point it
prints the median epoch time of each, their ratio (torch / dpbench, i.e.
dpbench's speedup over PyTorch) with its 95% interval and whether PyTorch is
faster, slower or the same (all four from `dpbench compare DPBENCH.json
TORCH.json`, the one place that statistic lives: docs/statistics.md), the
final loss of each, whether the DataParallel splits are identical, and how
far apart the two trainings ended:

  params_rdiff  the distance of the final parameters (weight and bias as
                one vector) relative to their size: ||a - b|| / ||b|| (L2)
  loss_rdiff    the largest |a - b| / max(|a|, |b|) over the measured
                epochs' losses

torch_reference.py trains on the data, initial parameters and sample orders
dpbench exports, so for the same config the two differ only in the order
their float32 sums are taken (PyTorch's kernels against dpbench's), and each
point must stay within its rounding bound (order_bound below), or within
--tolerance when given. The check applies to points that ran the same
trajectory (same seed, warmup and measured epochs); others show "-".

Exit status: 0 on success; 1 when a point's params_rdiff or loss_rdiff
exceeds the tolerance; 2 when a file cannot be read, is not a dpbench
result, or describes a different workload than the other.
"""

import argparse
import json
import math
import os
import subprocess
import sys

import dpresult

PROG = "compare"
U = 2.0 ** -24  # float32's unit roundoff


def order_bound(steps, batch, features):
    """How far apart (params_rdiff) two float32 trainings of the same linear
    model may end when they sum in different orders: 10 u sqrt(steps)
    sqrt(batch + features + 2). Each step's sums (the gradient over `batch`
    rows, the forward's features + 1 products) move by about sqrt(n) u of
    their terms when reordered, and the update rounds each parameter once;
    steps' roundings are independent (a random walk, sqrt(steps)) and SGD on
    a convex loss does not amplify them; 10: margin over the typical size.
    The same model as tests/testutil.h's order_bound, which says more; the
    tests check that one sample of one batch dropped, duplicated or paired
    with another's target exceeds it 10x or more. The epochs' losses are held
    to it too (measured 10-1000x below the parameters' distance)."""
    return 10 * U * math.sqrt(steps) * math.sqrt(batch + features + 2)


def run_bound(run):
    """order_bound for the trajectory `run` (a dpbench result's run) took."""
    c = run["config"]
    steps = (c["train"]["epochs"] + c["train"]["warmup_epochs"]) * run["batches_per_epoch"]
    batch = c["loader"]["batch_size"] * run.get("world_size", 1)  # ddp: the job's batch
    return order_bound(steps, batch, c["dataset"]["features"])

# Config keys that define the workload; a point is only comparable when these
# agree. Epoch counts, seed, name and report settings may differ.
WORKLOAD = {
    "dataset": None,  # every dataset key
    "model": None,
    "loader": None,
    "parallel": ["replicas", "devices", "mode"],
    "train": ["lr"],
}


class Mismatch(Exception):
    """The two files cannot be compared."""


def load(path):
    """Reads one result file and checks it has dpbench's shape."""
    try:
        doc = dpresult.read(path)
    except dpresult.BadResult as e:
        raise Mismatch(str(e)) from None
    for i, run in enumerate(doc["runs"]):
        if (not isinstance(run, dict) or not isinstance(run.get("summary"), dict)
                or not isinstance(run.get("config"), dict)):
            raise Mismatch("%s: run %d lacks \"summary\" or \"config\"" % (path, i))
    return doc


def version(doc):
    """"0.1.0 (35cda98)" or "torch-1.13.1 (35cda98)"."""
    tool = doc.get("dpbench") or {}
    return "%s (%s)" % (tool.get("version", "?"), tool.get("git_commit", "?"))


def pair_runs(a, b, path_a, path_b):
    """Matches runs by point label, else by position; returns (pairs, how)."""
    labels_a = [r.get("point", "") for r in a["runs"]]
    labels_b = [r.get("point", "") for r in b["runs"]]
    by_label = {lab: r for lab, r in zip(labels_b, b["runs"])}
    if len(set(labels_a)) == len(labels_a) and all(lab in by_label for lab in labels_a):
        return [(r, by_label[lab]) for lab, r in zip(labels_a, a["runs"])], "point label"
    if len(a["runs"]) == len(b["runs"]):
        return list(zip(a["runs"], b["runs"])), "position (labels differ)"
    raise Mismatch("%s has %d points and %s has %d, and their labels do not match "
                   "(first: %r vs %r)" % (path_a, len(a["runs"]), path_b, len(b["runs"]),
                                         labels_a[0], labels_b[0]))


def workload_diff(ca, cb):
    """The workload keys whose values differ between two point configs."""
    diff = []
    for section, keys in WORKLOAD.items():
        sa, sb = ca.get(section) or {}, cb.get(section) or {}
        for key in keys or sorted(set(sa) | set(sb)):
            if sa.get(key) != sb.get(key):
                diff.append("%s.%s: %r vs %r" % (section, key, sa.get(key), sb.get(key)))
    return diff


def same_trajectory(ca, cb):
    """Whether two point configs train through the same steps: the workload,
    plus the seed (data, initial parameters, orders) and the epoch counts."""
    ta, tb = ca.get("train") or {}, cb.get("train") or {}
    return (ca.get("seed") == cb.get("seed") and
            all(ta.get(k) == tb.get(k) for k in ("warmup_epochs", "epochs")))


def rel_diff(a, b):
    """|a - b| / max(|a|, |b|), 0 when both are 0; inf when either is missing
    or not finite (a NaN must fail the check, not pass it)."""
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    scale = max(abs(a), abs(b))
    return abs(a - b) / scale if scale > 0 else 0.0


def params_rdiff(pa, pb):
    """||a - b|| / ||b|| over every final parameter tensor, as one vector;
    None when either file has no parameters, inf when they do not match or
    a value is not finite (a NaN must fail the check, not pass it)."""
    pa, pb = pa or {}, pb or {}
    names = sorted(set(pa) | set(pb))
    if not names or not all(pa.get(n) and pb.get(n) for n in names):
        return None
    d2 = n2 = 0.0
    for n in names:
        a, b = pa[n], pb[n]
        if len(a) != len(b):
            return math.inf
        if any(v is None or not math.isfinite(v) for v in a + b):
            return math.inf
        d2 += sum((x - y) ** 2 for x, y in zip(a, b))
        n2 += sum(y * y for y in b)
    return math.sqrt(d2 / n2) if n2 > 0 else (0.0 if d2 == 0 else math.inf)


def loss_rdiff(ea, eb):
    """The largest relative difference of the epochs' losses, matched by
    epoch number; None when the runs share no measured epoch."""
    lb = {e.get("epoch"): e.get("loss") for e in eb or []}
    diffs = [rel_diff(e.get("loss"), lb[e.get("epoch")]) for e in ea or [] if e.get("epoch") in lb]
    return max(diffs) if diffs else None


def default_dpbench():
    """./dpbench when there is one, else the binary at the repository root."""
    if os.path.exists("dpbench"):
        return "./dpbench"
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dpbench")


def speed(binary, path_a, path_b):
    """`dpbench compare A B --format json`: {(run in A, run in B): pair}, and
    a note when it compared nothing (its message)."""
    try:
        out = subprocess.run([binary, "compare", path_a, path_b, "--format", "json"],
                             capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as e:
        return {}, "dpbench compare could not run (%s): no speed ratios" % e
    try:
        doc = json.loads(out.stdout) if out.stdout.strip() else {}
    except ValueError:
        doc = {}
    pairs = {(p["a"]["run"], p["b"]["run"]): p for p in doc.get("pairs", [])}
    note = None
    if out.returncode != 0:
        note = "%s (no speed ratio where it paired nothing)" % out.stderr.strip()
    return pairs, note


def rows_for(pairs, a, b, speeds):
    """One dict per point with the numbers to print."""
    rows = []
    index_a = {id(r): i for i, r in enumerate(a["runs"])}
    index_b = {id(r): i for i, r in enumerate(b["runs"])}
    for ra, rb in pairs:
        diff = workload_diff(ra["config"], rb["config"])
        label = ra.get("point") or "(base)"
        if ra.get("world_size", 1) != rb.get("world_size", 1):  # ddp: mpirun -np / --world-size
            diff.append("world_size: %r vs %r" % (ra.get("world_size", 1), rb.get("world_size", 1)))
        if diff:
            raise Mismatch("point %s: the two runs are different workloads: %s"
                           % (label, "; ".join(diff)))
        ma, mb = ra["summary"].get("median_seconds"), rb["summary"].get("median_seconds")
        same = same_trajectory(ra["config"], rb["config"])
        sp = speeds.get((index_a[id(ra)], index_b[id(rb)])) or {}
        rows.append({
            "point": label,
            "median_a": ma,
            "median_b": mb,
            "ratio": sp.get("ratio"),
            "ci95": sp.get("ci95") or [None, None],
            "verdict": sp.get("verdict", "-"),
            "loss_a": ra["summary"].get("final_loss"),
            "loss_b": rb["summary"].get("final_loss"),
            "splits": "yes" if ra.get("splits") == rb.get("splits") else "no",
            "epochs_a": len(ra.get("epochs") or []),
            "epochs_b": len(rb.get("epochs") or []),
            "params_rdiff": params_rdiff(ra.get("final_params"), rb.get("final_params"))
            if same else None,
            "loss_rdiff": loss_rdiff(ra.get("epochs"), rb.get("epochs")) if same else None,
            "same_trajectory": same,
            "bound": run_bound(ra) if same else None,
        })
    return rows


def num(x, fmt):
    """Formats a number, or "-" for a missing one."""
    return "-" if x is None else fmt % x


def ms(seconds):
    """Seconds to milliseconds, keeping None."""
    return None if seconds is None else 1e3 * seconds


def print_text(rows, a, b, path_a, path_b, how):
    """Fixed-width table; header lines start with '#', units on the second."""
    width = max(24, max(len(r["point"]) for r in rows))
    print("# dpbench: %s  %s" % (version(a), path_a))
    print("# torch:   %s  %s" % (version(b), path_b))
    print("# points matched by %s; ratio = torch / dpbench (dpbench's speedup), its 95%% "
          "interval and torch's verdict from dpbench compare" % how)
    cols = "%-*s %12s %12s %9s %13s %7s %13s %13s %7s %13s %11s"
    print(cols % (width, "# point", "dpbench", "torch", "ratio", "ratio_ci95", "torch",
                  "dpbench_loss", "torch_loss", "splits", "params_rdiff", "loss_rdiff"))
    print(cols % (width, "#", "ms", "ms", "x", "x", "is", "", "", "same", "", ""))
    for r in rows:
        ci = "-" if r["ci95"][0] is None else "%.2f-%.2f" % tuple(r["ci95"])
        print(cols % (width, r["point"], num(ms(r["median_a"]), "%.4g"),
                      num(ms(r["median_b"]), "%.4g"),
                      num(r["ratio"], "%.2f"), ci, r["verdict"], num(r["loss_a"], "%.6g"),
                      num(r["loss_b"], "%.6g"), r["splits"], num(r["params_rdiff"], "%.3g"),
                      num(r["loss_rdiff"], "%.3g")))
    for r in rows:
        if r["epochs_a"] != r["epochs_b"]:
            print("# note: %s: %d measured epochs in dpbench, %d in torch"
                  % (r["point"], r["epochs_a"], r["epochs_b"]))
        if not r["same_trajectory"]:
            print("# note: %s: seed or epoch counts differ: parameters and losses not compared"
                  % r["point"])


def agreement(rows, tolerance):
    """The '# agreement' line and whether every compared point is within its
    tolerance: `tolerance` when given, else the point's rounding bound. The
    line names the point closest to (or furthest past) its tolerance."""
    checked = [(v, tolerance if tolerance is not None else r["bound"], r["point"])
               for r in rows for v in (r["params_rdiff"], r["loss_rdiff"]) if v is not None]
    if not checked:
        return "# agreement: nothing to compare (no common trajectory)", True
    worst, tol, point = max(checked, key=lambda c: c[0] / c[1])
    ok = all(v <= t for v, t, _ in checked)
    how = "tolerance" if tolerance is not None else "rounding bound"
    return ("# agreement: largest relative difference %.3g (%s), %s %.3g: %s"
            % (worst, point, how, tol, "ok" if ok else "EXCEEDED")), ok


def print_markdown(rows, a, b):
    """The same table as Markdown, for a README."""
    print("| point | dpbench %s median (ms) | PyTorch %s median (ms) | torch / dpbench (x) "
          "| PyTorch is | dpbench final loss | PyTorch final loss | same splits | params rdiff "
          "| loss rdiff |"
          % ((a.get("dpbench") or {}).get("version", "?"),
             (b.get("dpbench") or {}).get("version", "?").replace("torch-", "")))
    print("|---|---:|---:|---:|:---:|---:|---:|:---:|---:|---:|")
    for r in rows:
        ci = "" if r["ci95"][0] is None else " (%.1f-%.1f)" % tuple(r["ci95"])
        print("| %s | %s | %s | %s%s | %s | %s | %s | %s | %s | %s |" % (
            r["point"].replace("|", "\\|"), num(ms(r["median_a"]), "%.4g"),
            num(ms(r["median_b"]), "%.4g"), num(r["ratio"], "%.1f"), ci, r["verdict"],
            num(r["loss_a"], "%.4g"), num(r["loss_b"], "%.4g"), r["splits"],
            num(r["params_rdiff"], "%.2g"), num(r["loss_rdiff"], "%.2g")))


def main(argv=None):
    p = argparse.ArgumentParser(prog="compare.py", description=__doc__.split("\n\n")[0])
    p.add_argument("dpbench", metavar="DPBENCH.json", help="result written by dpbench")
    p.add_argument("torch", metavar="TORCH.json", help="result written by torch_reference.py")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--dpbench", dest="dpbench_bin", metavar="PATH",
                   help="the dpbench binary whose `compare` gives the speed ratios (default "
                        "./dpbench, else the one next to scripts/)")
    p.add_argument("--tolerance", type=float, default=None,
                   help="largest relative difference of final parameters and epoch losses "
                        "accepted (default: each point's float32 rounding bound, "
                        "10 u sqrt(steps) sqrt(batch + features + 2))")
    args = p.parse_args(argv)
    try:
        a, b = load(args.dpbench), load(args.torch)
        pairs, how = pair_runs(a, b, args.dpbench, args.torch)
        speeds, note = speed(args.dpbench_bin or default_dpbench(), args.dpbench, args.torch)
        rows = rows_for(pairs, a, b, speeds)
    except Mismatch as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 2
    line, ok = agreement(rows, args.tolerance)
    if args.markdown:
        print_markdown(rows, a, b)
    else:
        print_text(rows, a, b, args.dpbench, args.torch, how)
        print(line)
        if note:
            print("# speed: %s" % note)
    if not ok:
        print("%s: the two trainings differ by more than the tolerance (%s)"
              % (PROG, line.split(": ", 1)[1]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
