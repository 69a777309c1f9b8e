#!/usr/bin/python3
"""Checks the GPU targets against what scripts/gpu-bench.sh measured:

1. pinned host-to-device copies of 64 MiB reach at least 90% of the best plain
   cudaMemcpy loop on the same machine (the --h2d-bandwidth table), pageable
   shown beside them;
2. with async_copy, at least 90% of the copy time hides behind compute when a
   batch computes longer than it copies (configs/gpu-overlap.yaml);
3. on the tutorial config, the host spends under 30 us per replica issuing a
   step's device work.

Usage: gpu-targets.py --bandwidth H2D.txt --overlap OVERLAP.json
                      --tutorial TUTORIAL.json [TUTORIAL.json ...]
Prints one line per target (PASS/FAIL with the numbers) and exits 1 if any
target failed or a file could not be read."""

import argparse
import sys

import dpresult

SIZE_64M = 64 << 20


def read_bandwidth(path):
    """(pinned GB/s, pageable GB/s) at 64 MiB and the best plain loop's GB/s."""
    rows, best = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("# best plain cudaMemcpy loop"):
                best = float(line.split(":")[1].split()[0])
            elif not line.startswith("#") and line.strip():
                size, _, pinned, pageable = line.split()[:4]
                rows[int(size)] = (float(pinned), float(pageable))
    if SIZE_64M not in rows or best is None:
        raise dpresult.BadResult("%s: no 64 MiB row or no best-loop line" % path)
    return rows[SIZE_64M] + (best,)


def run_by(doc, key, value):
    """The run of a sweep whose config has key (dotted) equal to value."""
    for run in doc["runs"]:
        node = run["config"]
        for part in key.split("."):
            node = node[part]
        if node == value:
            return run
    raise dpresult.BadResult("no run with %s = %s" % (key, value))


def per_batch(run, field):
    """Seconds of `field` per batch, over the measured epochs."""
    eps = run["epochs"]
    return sum(e[field] for e in eps) / (len(eps) * run["batches_per_epoch"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bandwidth", required=True)
    ap.add_argument("--overlap", required=True)
    ap.add_argument("--tutorial", required=True, nargs="+")
    a = ap.parse_args()
    results = []  # (passed, line)
    try:
        pinned, pageable, best = read_bandwidth(a.bandwidth)
        results.append((pinned >= 0.9 * best,
                        "pinned 64 MiB copy %.2f GB/s = %.0f%% of the best plain cudaMemcpy "
                        "loop (%.2f GB/s), target >= 90%%; pageable %.2f GB/s"
                        % (pinned, 100 * pinned / best, best, pageable)))

        doc = dpresult.read(a.overlap)
        sync, async_ = (run_by(doc, "loader.async_copy", v) for v in (False, True))
        copy_ms = 1e3 * per_batch(sync, "copy_seconds")
        compute_ms = 1e3 * per_batch(sync, "compute_seconds")
        hidden = async_["summary"]["overlap"]
        results.append((hidden is not None and hidden >= 0.9 and compute_ms > copy_ms,
                        "async copy hides %s of the copy time, target >= 90%% (per batch: "
                        "compute %.3f ms, copy %.3f ms; epoch %.2f ms async vs %.2f ms sync)"
                        % ("?" if hidden is None else "%.1f%%" % (100 * hidden), compute_ms,
                           copy_ms, 1e3 * async_["summary"]["median_seconds"],
                           1e3 * sync["summary"]["median_seconds"])))

        for path in a.tutorial:
            for run in dpresult.read(path)["runs"]:
                us = run["summary"].get("host_us_per_step_per_replica")
                results.append((us is not None and us < 30,
                                 "tutorial, %d replica%s%s: host overhead %s per replica per "
                                 "step, target < 30 us"
                                 % (run["replicas"], "" if run["replicas"] == 1 else "s",
                                    " (shared device)" if run["shared_devices"] else "",
                                    "?" if us is None else "%.1f us" % us)))
    except (OSError, ValueError, KeyError, dpresult.BadResult) as e:
        print("gpu-targets: %s" % e, file=sys.stderr)
        return 1
    for ok, line in results:
        print("%s  %s" % ("PASS" if ok else "FAIL", line))
    return 0 if all(ok for ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
