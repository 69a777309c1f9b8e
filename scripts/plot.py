#!/usr/bin/python3
"""Charts of dpbench (or torch_reference.py) results.

    plot.py RESULT.json [RESULT.json ...] -o OUT.png [--kind time|breakdown|both]

`time`: median epoch time per sweep point, min-max as error bars, one bar
per result file (dpbench next to PyTorch, say). `breakdown`: for each file,
stacked bars of where the mean epoch went: compute, the copies not hidden
behind it, waiting for data (only as much as the epoch has left once the
first two are counted: time that overlapped is stacked once), and other
(what the epoch spent outside them, e.g. starting loader workers), so a
bar is never taller than its epoch. `both` (the default) draws the two in
one PNG.

Needs matplotlib (Debian: python3-matplotlib, i.e. run it with /usr/bin/python3).
"""

import argparse
import os
import sys

import dpresult
import pyreq

matplotlib = pyreq.require("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

PROG = "plot"
PARTS = [("compute", "compute (fwd+bwd+step)", "#1b9e77"),
         ("copy", "copy to device, not hidden", "#7570b3"),
         ("wait", "wait (loader), not overlapped", "#d95f02"),
         (None, "other", "#bdbdbd")]
SERIES_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2"]


BadInput = dpresult.BadResult


def load(path):
    """Reads a result file; returns (series name, runs)."""
    doc = dpresult.read(path)
    version = str((doc.get("dpbench") or {}).get("version", "?"))
    if version.startswith("torch-"):
        name = "PyTorch %s" % version[len("torch-"):]
    else:
        name = "dpbench %s" % version
    backend = doc["runs"][0].get("backend")
    if backend:
        name += " (%s)" % backend
    # a sweep point not run again ("same_as": K) shows run K's measurement
    runs = [dict(doc["runs"][r["same_as"]], point=r.get("point", ""),
                 overrides=r.get("overrides", {})) if "same_as" in r else r
            for r in doc["runs"]]
    return name, runs


def point_label(run):
    """A sweep point's label, one key=value per line so it fits under a bar."""
    return (run.get("point") or "(base)").replace(" ", "\n")


def pick_unit(max_seconds):
    """(scale, unit) that keeps the axis numbers readable."""
    if max_seconds < 1e-3:
        return 1e6, "\u00b5s"
    if max_seconds < 10:
        return 1e3, "ms"
    return 1.0, "s"


def value_text(v):
    """A bar's value label: no exponent notation for big numbers."""
    return "%.0f" % v if v >= 100 else "%.3g" % v


def mean(values):
    return sum(values) / len(values) if values else 0.0


def draw_time(ax, series, points, log):
    """Grouped bars of the median epoch time, min-max error bars."""
    medians = [r["summary"]["median_seconds"] for _, runs in series for r in runs
               if r["summary"].get("median_seconds")]
    if not medians:
        ax.text(0.5, 0.5, "no measured epoch", ha="center", transform=ax.transAxes)
        return
    scale, unit = pick_unit(max(medians))
    if log is None:  # automatic: log when the bars differ by more than 30x
        log = max(medians) / min(medians) > 30
    width = 0.8 / len(series)
    for i, (name, runs) in enumerate(series):
        by_label = {point_label(r): r for r in runs}
        xs, ys, lo, hi = [], [], [], []
        for x, p in enumerate(points):
            s = by_label.get(p, {}).get("summary") or {}
            if not s.get("median_seconds"):
                continue
            m = s["median_seconds"] * scale
            xs.append(x - 0.4 + width * (i + 0.5))
            ys.append(m)
            lo.append(m - s.get("min_seconds", s["median_seconds"]) * scale)
            hi.append(s.get("max_seconds", s["median_seconds"]) * scale - m)
        bars = ax.bar(xs, ys, width * 0.9, yerr=[lo, hi], capsize=4, label=name,
                      color=SERIES_COLORS[i % len(SERIES_COLORS)], error_kw={"elinewidth": 1})
        ax.bar_label(bars, labels=[value_text(y) for y in ys], padding=2, fontsize=8)
    if log:
        ax.set_yscale("log")
        ax.set_ylabel("median epoch time (%s, log scale)" % unit)
    else:
        ax.set_ylabel("median epoch time (%s)" % unit)
        ax.set_ylim(top=ax.get_ylim()[1] * 1.12)  # room for the value labels
    ax.set_title("Median epoch time per point (bars: min-max over measured epochs)")
    ax.set_xticks(range(len(points)))
    ax.set_xticklabels(points, fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def exposed(epoch):
    """An epoch's parts as they add up: compute, the copies' time not hidden
    behind compute, and the wait for data the epoch had left after both."""
    seconds = epoch.get("seconds") or 0.0
    compute = min(epoch.get("compute_seconds") or 0.0, seconds)
    copy = (epoch.get("copy_seconds") or 0.0) * (1 - (epoch.get("overlap") or 0.0))
    copy = min(copy, seconds - compute)
    wait = min(epoch.get("wait_seconds") or 0.0, seconds - compute - copy)
    return {"compute": compute, "copy": copy, "wait": wait, "seconds": seconds}


def draw_breakdown(ax, name, runs, points):
    """Stacked bars of where the mean epoch went, each part counted once."""
    by_label = {point_label(r): r for r in runs}
    totals = {}
    for p in points:
        eps = [exposed(e) for e in (by_label.get(p) or {}).get("epochs") or []]
        totals[p] = {k: mean([e[k] for e in eps]) for k in ("compute", "copy", "wait", "seconds")}
    scale, unit = pick_unit(max([t["seconds"] for t in totals.values()] + [1e-9]))
    bottom = [0.0] * len(points)
    for key, label, color in PARTS:
        if key:
            vals = [totals[p][key] * scale for p in points]
        else:  # other: the epoch minus the three measured parts
            vals = [max(0.0, totals[p]["seconds"] * scale - b) for p, b in zip(points, bottom)]
        ax.bar(range(len(points)), vals, 0.6, bottom=bottom, label=label, color=color)
        bottom = [b + v for b, v in zip(bottom, vals)]
    for x, p in enumerate(points):
        if totals[p]["seconds"] > 0:
            ax.text(x, bottom[x], value_text(totals[p]["seconds"] * scale), ha="center",
                    va="bottom", fontsize=8)
    ax.set_ylim(top=max(bottom + [1e-12]) * 1.15)
    ax.set_ylabel("mean epoch time (%s)" % unit)
    ax.set_title("Where an epoch's time goes: %s" % name)
    ax.set_xticks(range(len(points)))
    ax.set_xticklabels(points, fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def plot(series, kind, out, log, title):
    """Draws the requested charts into one PNG."""
    points = []
    for _, runs in series:
        for r in runs:
            if point_label(r) not in points:
                points.append(point_label(r))
    rows = (1 if kind in ("time", "both") else 0) + (len(series) if kind != "time" else 0)
    lines = max(p.count("\n") + 1 for p in points)
    width = max(8.0, 1.7 * len(points) * max(1, len(series) / 1.5) + 2.5)
    fig, axes = plt.subplots(rows, 1, figsize=(width, rows * (3.4 + 0.25 * lines)),
                             squeeze=False)
    axes = [a[0] for a in axes]
    if kind in ("time", "both"):
        draw_time(axes.pop(0), series, points, log)
    if kind != "time":
        for ax, (name, runs) in zip(axes, series):
            draw_breakdown(ax, name, runs, points)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    folder = os.path.dirname(os.path.abspath(out))
    tmp = os.path.join(folder, ".%s.tmp" % os.path.basename(out))
    fig.savefig(tmp, dpi=110, format=os.path.splitext(out)[1][1:].lower() or "png")
    plt.close(fig)
    os.replace(tmp, out)


def main(argv=None):
    p = argparse.ArgumentParser(prog="plot.py", description=__doc__.split("\n\n")[0])
    p.add_argument("results", nargs="+", metavar="RESULT.json",
                   help="dpbench or torch_reference.py JSON results")
    p.add_argument("-o", "--out", required=True, metavar="OUT.png", help="PNG to write")
    p.add_argument("--kind", choices=["time", "breakdown", "both"], default="both")
    scale = p.add_mutually_exclusive_group()
    scale.add_argument("--log", dest="log", action="store_true", default=None,
                       help="log scale for the time chart (default: when bars differ > 30x)")
    scale.add_argument("--linear", dest="log", action="store_false", help="linear scale")
    p.add_argument("--title", help="title over the whole figure")
    args = p.parse_args(argv)
    try:
        series = [load(path) for path in args.results]
    except BadInput as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 2
    names = [n for n, _ in series]
    series = [(n if names.count(n) == 1 else "%s [%s]" % (n, os.path.basename(path)), runs)
              for (n, runs), path in zip(series, args.results)]
    try:
        plot(series, args.kind, args.out, args.log, args.title)
    except OSError as e:
        print("%s: cannot write %s: %s" % (PROG, args.out, e.strerror), file=sys.stderr)
        return 1
    print("%s: wrote %s" % (PROG, args.out), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
