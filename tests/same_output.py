#!/usr/bin/env python3
"""Two dpbench builds, the same commands: the outputs must agree apart from
what a run measures. Run by `make test-same-output BASE=REV` (it builds REV
beside the tree) after a change meant to keep behaviour, such as a move of
code between files.

    tests/same_output.py OLD_DPBENCH NEW_DPBENCH

Masked: timings and whatever follows from them (the BLAS choice's times, the
bounding stage, noise warnings, verdicts), `date`, `peak_rss_bytes` and
`machine`. Compared exactly: exit statuses, stderr of refused input, the
config echo, splits, losses, final parameters, exported files. The BLAS
library is pinned (parallel.blas=openblas) so the losses are bit for bit.
Prints one line per case and exits 1 on any difference."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

OLD, NEW = sys.argv[1], sys.argv[2]
PIN = ["--set", "parallel.blas=openblas"]
T = "configs/tutorial.yaml"

# JSON keys whose values are timings or follow from them
TIMED = {"date", "peak_rss_bytes", "machine", "seconds", "wait_seconds", "copy_seconds",
         "compute_seconds", "stats", "blas_tune", "blas_threads", "blas_library", "git_commit",
         "warnings", "floor", "samples_per_second", "host_seconds", "hidden_seconds",
         "allreduce_seconds", "copy_bytes", "reads", "read_bytes"}
SUMMARY_KEEP = {"final_loss"}
EPOCH_KEEP = {"epoch", "loss", "samples", "accuracy", "device"}


def mask_json(x, key=""):
    if isinstance(x, dict):
        out = {}
        for k, v in x.items():
            if k in TIMED:
                out[k] = "T"
            elif k == "epochs" and isinstance(v, list):
                out[k] = [{kk: vv for kk, vv in ep.items() if kk in EPOCH_KEEP} for ep in v]
            elif k == "summary":
                out[k] = {kk: (vv if kk in SUMMARY_KEEP else "T") for kk, vv in v.items()}
            else:
                out[k] = mask_json(v, k)
        return out
    if isinstance(x, list):
        return [mask_json(v, key) for v in x]
    return x


WORDS = re.compile(r"\b(input-bound|compute-bound|copy-bound|balanced|faster|slower|same|"
                   r"OpenBLAS|libxsmm)\b")
NUM = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def mask_text(s):
    out = []
    for line in s.splitlines():
        if line.startswith(("# warning:", "# blas:", "# date", "# machine:", "# build:",
                            "# peak RSS", "progress:")):
            continue
        if re.match(r"^# .*(-bound|balanced)", line) or line.startswith("# verdict:"):
            line = "# VERDICT"
        if "In Model" in line or "Outside" in line or line.startswith("#   "):
            out.append(line)  # the splits and the tutorial's lines: exact
            continue
        out.append(re.sub(r" +", " ", NUM.sub("N", WORDS.sub("W", line))))
    return "\n".join(out)


def run(binary, args, cwd):
    p = subprocess.run([binary] + args, cwd=cwd, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def case(name, args, fmt, cwd="."):
    a = run(OLD, args, cwd)
    b = run(NEW, args, cwd)
    if a[0] != b[0]:
        return f"exit {a[0]} vs {b[0]}: {a[2][-300:]} | {b[2][-300:]}"
    if fmt == "json":
        try:
            x, y = mask_json(json.loads(a[1])), mask_json(json.loads(b[1]))
        except ValueError:
            return f"not JSON: {a[2][-300:]} | {b[2][-300:]}"
        if x != y:
            return "JSON differs: " + first_diff(json.dumps(x, indent=1), json.dumps(y, indent=1))
    elif fmt == "text":
        if mask_text(a[1]) != mask_text(b[1]):
            return "stdout differs: " + first_diff(mask_text(a[1]), mask_text(b[1]))
    elif fmt == "csv":
        ha, hb = a[1].splitlines()[:1], b[1].splitlines()[:1]
        if ha != hb or len(a[1].splitlines()) != len(b[1].splitlines()):
            return f"CSV header or rows differ: {ha} vs {hb}"
    elif fmt == "stderr":
        if a[2] != b[2]:
            return "stderr differs: " + first_diff(a[2], b[2])
    return None


def first_diff(x, y):
    xl, yl = x.splitlines(), y.splitlines()
    for i, (p, q) in enumerate(zip(xl, yl)):
        if p != q:
            return f"line {i + 1}: {p!r} vs {q!r}"
    return f"{len(xl)} vs {len(yl)} lines"


def main():
    tmp = tempfile.mkdtemp()
    idx = os.path.join(tmp, "idx")
    subprocess.run([NEW, "--make-dataset", "idx", idx, "--per-class", "20"], check=True,
                   capture_output=True)
    labelled = ["--set", "dataset.kind=idx", "--set",
                f"dataset.path={idx}/train-images-idx3-ubyte", "--set", "train.epochs=2"]
    cases = [
        ("tutorial text", ["-c", T] + PIN, "text"),
        ("tutorial json", ["-c", T, "--format", "json"] + PIN, "json"),
        ("tutorial csv", ["-c", T, "--format", "csv"] + PIN, "csv"),
        ("3 replicas, trace", ["-c", T, "--set", "parallel.replicas=3", "--set",
                               "report.trace=true"] + PIN, "text"),
        ("8 replicas json", ["-c", T, "--set", "parallel.replicas=8", "-f", "json"] + PIN, "json"),
        ("sweep text", ["-c", T, "--sweep", "loader.num_workers=0,1", "--sweep",
                        "loader.prefetch_factor=2,4", "-q"] + PIN, "text"),
        ("sweep json", ["-c", T, "--sweep", "loader.num_workers=0,1", "--sweep",
                        "loader.prefetch_factor=2,4", "-q", "-f", "json"] + PIN, "json"),
        ("repeat json", ["-c", T, "--repeat", "2", "-f", "json"] + PIN, "json"),
        ("emulated json", ["-c", T, "--set", "parallel.device=emulated", "--set",
                           "loader.num_workers=2", "--set", "loader.async_copy=true", "-f",
                           "json"] + PIN, "json"),
        ("emulated text", ["-c", T, "--set", "parallel.device=emulated", "--set",
                           "loader.pin_memory=true"] + PIN, "text"),
        ("labelled json", ["-c", T, "-f", "json"] + labelled + PIN, "json"),
        ("labelled text", ["-c", T] + labelled + PIN, "text"),
        ("floor text", ["-c", T, "--set", "report.floor=true"] + PIN, "text"),
        ("bad key", ["-c", T, "--set", "loader.num_wrkers=2"], "stderr"),
        ("bad range", ["-c", T, "--set", "loader.batch_size=0"], "stderr"),
        ("bad rule", ["-c", T, "--set", "transform.pad=4"], "stderr"),
        ("bad devices", ["-c", T, "--set", "parallel.devices=[0,1]"], "stderr"),
        ("bad comm", ["-c", T, "--set", "parallel.mode=ddp", "--set", "parallel.comm=nccl"],
         "stderr"),
        ("bad usage", ["--frobnicate"], "stderr"),
        ("help", ["--help"], "stderr"),
    ]
    fails = 0
    for name, args, fmt in cases:
        why = case(name, args, fmt)
        print(f"{'ok  ' if not why else 'FAIL'} {name}{': ' + why if why else ''}")
        fails += why is not None
    # compare, on two runs of the new build
    for k in "ab":
        with open(os.path.join(tmp, k + ".json"), "w") as f:
            f.write(run(NEW, ["-c", T, "-f", "json", "--sweep", "loader.num_workers=0,1", "-q"]
                        + PIN, ".")[1])
    for fmt in ("text", "json"):
        why = case("compare " + fmt, ["compare", os.path.join(tmp, "a.json"),
                                      os.path.join(tmp, "b.json"), "--format", fmt], fmt)
        print(f"{'ok  ' if not why else 'FAIL'} compare {fmt}{': ' + why if why else ''}")
        fails += why is not None
    # --export: the files byte for byte
    outs = []
    for b in (OLD, NEW):
        d = os.path.join(tmp, "export-" + str(len(outs)))
        subprocess.run([b, "-c", T, "--sweep", "parallel.replicas=1,3", "--export", d] + PIN,
                       capture_output=True, check=True)
        outs.append({f: open(os.path.join(d, f), "rb").read() for f in sorted(os.listdir(d))
                     if os.path.isfile(os.path.join(d, f))})
    same = outs[0] == outs[1]
    print(f"{'ok  ' if same else 'FAIL'} --export files")
    fails += not same
    shutil.rmtree(tmp)
    print(f"same-output: {len(cases) + 3 - fails} passed, {fails} failed")
    return 1 if fails else 0


sys.exit(main())
