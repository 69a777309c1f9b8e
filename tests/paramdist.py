#!/usr/bin/python3
"""Did two dpbench runs learn the same thing, up to float32 rounding?

    paramdist.py RESULT.json REFERENCE.json

For the shell tests' equivalences (W ranks = 1 process, DDP on the emulated
GPU = the cpu, 2 hosts = 1 process): the relative L2 distance of the final
parameters, ||a - b|| / ||b||, against tests/testutil.h's order_bound (the
same model, written for Python in scripts/compare.py: 10 u sqrt(steps)
sqrt(batch + features + 2)), from the reference's config. Each
measured epoch's loss is held to the same bound relative to the reference's,
and its accuracy to one sample. Prints "dist D bound B"; exits 1 when a check
fails (saying which), 2 when a file is not a result.
"""

import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from compare import run_bound  # noqa: E402  (scripts/ is not a package)


def flat(run):
    p = run["final_params"]
    return p["weight"] + p["bias"]


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        a, b = (json.load(open(p))["runs"][0] for p in argv[1:3])
        pa, pb = flat(a), flat(b)
    except (OSError, ValueError, KeyError, IndexError) as e:
        print("paramdist: cannot read a result: %s" % e, file=sys.stderr)
        return 2
    bound = run_bound(b)
    if len(pa) != len(pb) or not pb:
        print("paramdist: %d parameters vs %d" % (len(pa), len(pb)), file=sys.stderr)
        return 1
    d2 = sum((x - y) ** 2 for x, y in zip(pa, pb))
    dist = math.sqrt(d2 / sum(y * y for y in pb))  # NaN compares false below
    print("dist %.3g bound %.3g" % (dist, bound))
    bad = [] if dist <= bound else ["parameters %.3g apart (relative L2)" % dist]
    if len(a["epochs"]) != len(b["epochs"]):
        bad.append("%d epochs vs %d" % (len(a["epochs"]), len(b["epochs"])))
    for k, (ea, eb) in enumerate(zip(a["epochs"], b["epochs"])):
        if not abs(ea["loss"] - eb["loss"]) <= bound * eb["loss"]:
            bad.append("epoch %d loss %.9g vs %.9g" % (k + 1, ea["loss"], eb["loss"]))
        acc_a, acc_b = ea.get("accuracy"), eb.get("accuracy")
        if (acc_a is not None or acc_b is not None) and not (
                acc_a is not None and acc_b is not None
                and abs(acc_a - acc_b) * eb["samples"] <= 1 + 1e-9):
            bad.append("epoch %d accuracy %s vs %s" % (k + 1, acc_a, acc_b))
    if bad:
        print("paramdist: %s (bound %.3g)" % ("; ".join(bad), bound), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
