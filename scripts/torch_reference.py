#!/usr/bin/env python3
"""PyTorch reference run of a dpbench config.

Reads the same YAML config as dpbench (same keys, same defaults, same
`--set` overrides and `sweep:` expansion, first sweep key outermost) and, for
every sweep point, trains the equivalent PyTorch program:

    TeacherDataset (randn rows, y = x W*^T + b* + noise)
      -> DataLoader(batch_size, shuffle, drop_last, num_workers, ...)
      -> nn.Linear(features, out_features)   (nn.DataParallel on CUDA)
      -> MSELoss -> SGD(lr)

Each measured epoch is timed with time.perf_counter; `wait` is the time spent
blocked in the DataLoader iterator's next(), `copy` the host-to-device copy
(CUDA only), `compute` forward + loss + backward + optimiser step. Warmup
epochs run first and are left out. Results are written in dpbench's JSON
schema so scripts/compare.py can put the two side by side.

The data is NOT bit-identical to dpbench's (torch's RNG is used), so losses
agree in magnitude and trend, not digit for digit.

Run it with an interpreter that has torch, e.g. Debian's:
    /usr/bin/python3 scripts/torch_reference.py configs/tutorial.yaml --out ref.json
"""

import argparse
import datetime
import itertools
import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

PROG = "torch_reference"
MAX_SAFE_INT = 2**53 - 1
CONFIG_STR = 256  # dpbench's longest string value, including the NUL
MAX_DEVICES = 64
MAX_SWEEP_KEYS = 8
MAX_SWEEP_VALUES = 64


class ConfigError(Exception):
    """A config that dpbench would refuse too."""


# ---- config keys: mirrors dpbench's key table (src/config.c) ----------------

# path: (type, default text, min, max, choices)
KEYS = {
    "name": ("string", "tutorial", 1, CONFIG_STR - 1, None),
    "seed": ("int", "0", 0, MAX_SAFE_INT, None),
    "dataset.kind": ("enum", "random", 0, 0, ["random"]),
    "dataset.length": ("int", "100", 1, 10**9, None),
    "dataset.features": ("int", "5", 1, 1 << 20, None),
    "dataset.noise": ("float", "0.01", 0, 1e6, None),
    "dataset.sample_cost_us": ("float", "0", 0, 1e6, None),
    "model.out_features": ("int", "2", 1, 1 << 16, None),
    "loader.batch_size": ("int", "30", 1, 1 << 24, None),
    "loader.shuffle": ("bool", "true", 0, 0, None),
    "loader.drop_last": ("bool", "false", 0, 0, None),
    "loader.num_workers": ("int", "0", 0, 256, None),
    "loader.prefetch_factor": ("int", "2", 1, 1024, None),
    "loader.pin_memory": ("bool", "false", 0, 0, None),
    "loader.persistent_workers": ("bool", "false", 0, 0, None),
    "loader.async_copy": ("bool", "false", 0, 0, None),
    "loader.copy_depth": ("int", "2", 1, 64, None),
    "train.epochs": ("int", "1", 1, 10**7, None),
    "train.warmup_epochs": ("int", "0", 0, 10**7, None),
    "train.lr": ("float", "0.01", 0, 1e6, None),
    "parallel.device": ("enum", "cpu", 0, 0, ["cpu", "cuda", "auto"]),
    "parallel.replicas": ("int", "1", 1, 1024, None),
    "parallel.devices": ("int_list", "[]", 0, 1023, None),
    "report.trace": ("bool", "false", 0, 0, None),
    "report.format": ("enum", "text", 0, 0, ["text", "json", "csv"]),
    "report.out": ("string", "", 0, CONFIG_STR - 1, None),
}
SECTIONS = ["dataset", "model", "loader", "train", "parallel", "report"]
UNSWEEPABLE = {"parallel.devices", "report.format", "report.out", "name"}
INT_RE = re.compile(r"^\s*[+-]?[0-9]+$")
FLOAT_RE = re.compile(r"^\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$")


def edit_distance(a, b):
    """Levenshtein distance between two short strings."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j - 1] + (ca != cb), prev[j] + 1, cur[j - 1] + 1))
        prev = cur
    return prev[-1]


def unknown_key(path):
    """The error for an unknown key, with the closest known key if any."""
    leaf = path.rsplit(".", 1)[-1]
    best, best_d = None, None
    for k in KEYS:
        d = 0 if k.rsplit(".", 1)[-1] == leaf else edit_distance(path, k)
        if best_d is None or d < best_d:
            best, best_d = k, d
    if best_d is not None and best_d <= 4:
        return ConfigError("unknown key '%s' (did you mean %s?)" % (path, best))
    return ConfigError("unknown key '%s' (dpbench --help-config lists the keys)" % path)


def parse_value(path, text):
    """Parses the text of one value for key `path`, as dpbench does."""
    kind, _, lo, hi, choices = KEYS[path]
    shown = repr(text) if len(text) <= 40 else "%r... (%d bytes)" % (text[:40], len(text))
    if kind == "int":
        if not INT_RE.match(text):
            raise ConfigError("%s: expected an integer, found %s" % (path, shown))
        x = int(text)
        if not lo <= x <= hi:
            raise ConfigError("%s: expected an integer in [%d, %d], found %d" % (path, lo, hi, x))
        return x
    if kind == "bool":
        if text.lower() in ("true", "yes", "on", "1"):
            return True
        if text.lower() in ("false", "no", "off", "0"):
            return False
        raise ConfigError("%s: expected true or false, found %s" % (path, shown))
    if kind == "float":
        if not FLOAT_RE.match(text):
            raise ConfigError("%s: expected a number, found %s" % (path, shown))
        x = float(text)
        if not math.isfinite(x):
            raise ConfigError("%s: expected a finite number, found %s" % (path, shown))
        if not lo <= x <= hi:
            raise ConfigError("%s: expected a number in [%g, %g], found %g" % (path, lo, hi, x))
        return x
    if kind == "string":
        if not lo <= len(text.encode()) <= hi:
            raise ConfigError("%s: expected a string of %d to %d bytes, found %d bytes"
                              % (path, lo, hi, len(text.encode())))
        return text
    if kind == "enum":
        if text not in choices:
            raise ConfigError("%s: expected one of %s, found %s" % (path, "|".join(choices), shown))
        return text
    # int_list: "[0, 1, 1]", "0,1,1" or ""
    inner = text.strip()
    if inner.startswith("[") and inner.endswith("]"):
        inner = inner[1:-1]
    ids = []
    for tok in inner.split(","):
        if not tok.strip():
            continue
        if len(ids) == MAX_DEVICES:
            raise ConfigError("%s: at most %d ids" % (path, MAX_DEVICES))
        if not INT_RE.match(tok) or not lo <= int(tok) <= hi:
            raise ConfigError("%s: expected an integer in [%d, %d], found %r"
                              % (path, lo, hi, tok.strip()))
        ids.append(int(tok))
    return ids


def value_text(value):
    """A value as dpbench prints it in point labels and overrides."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "%g" % value
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def default_config():
    """A config dict (path -> value) holding every key's default."""
    return {path: parse_value(path, spec[1]) for path, spec in KEYS.items()}


def set_key(cfg, path, text):
    """Sets one key from text; refuses unknown keys and bad values."""
    if path not in KEYS:
        raise unknown_key(path)
    cfg[path] = parse_value(path, text)


def scalar_text(path, node):
    """The text of a YAML scalar (or, for parallel.devices, a list of scalars)."""
    if isinstance(node, str):
        return node
    if isinstance(node, list) and KEYS[path][0] == "int_list":
        if not all(isinstance(v, str) for v in node):
            raise ConfigError("%s: expected a list of integers" % path)
        return ",".join(node)
    raise ConfigError("%s: expected a scalar value, found a %s"
                      % (path, "list" if isinstance(node, list) else "mapping"))


def add_sweep_key(sweep, key, values):
    """Appends `key` with its value texts to the sweep list, checking both."""
    if key not in KEYS:
        raise unknown_key(key)
    if key in UNSWEEPABLE:
        raise ConfigError("sweep: key %s cannot be swept" % key)
    if any(k == key for k, _ in sweep):
        raise ConfigError("sweep: key %s given twice" % key)
    if len(sweep) == MAX_SWEEP_KEYS:
        raise ConfigError("sweep: at most %d keys" % MAX_SWEEP_KEYS)
    if not values:
        raise ConfigError("sweep: %s: expected at least one value" % key)
    if len(values) > MAX_SWEEP_VALUES:
        raise ConfigError("sweep: %s: at most %d values" % (key, MAX_SWEEP_VALUES))
    for v in values:
        try:
            parse_value(key, v)
        except ConfigError as e:
            raise ConfigError("sweep: %s" % e) from None
    sweep.append((key, list(values)))


class StrictLoader(yaml.BaseLoader):
    """BaseLoader that refuses a key repeated within one mapping, as dpbench
    does (plain PyYAML keeps the last one silently)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key is not None and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, "duplicate key %s" % key, key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def load_config(path):
    """Loads a dpbench YAML file: returns (config dict, sweep list).

    YAML is read with PyYAML's BaseLoader, which keeps every scalar as text, so
    values go through the same parsing rules as dpbench's libyaml reader
    ("yes" and "1" are booleans for boolean keys only, and so on)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.load(f, Loader=StrictLoader)
    except OSError as e:
        raise ConfigError("%s: cannot open config: %s" % (path, e.strerror)) from None
    except yaml.YAMLError as e:
        raise ConfigError("%s: malformed YAML: %s" % (path, " ".join(str(e).split()))) from None
    if doc is None or doc == "":
        raise ConfigError("%s: empty config: expected a mapping of keys" % path)
    if not isinstance(doc, dict):
        raise ConfigError("%s: the document must be a mapping of keys" % path)
    cfg, sweep = default_config(), []
    try:
        for key, node in doc.items():
            if key == "sweep":
                if not isinstance(node, dict):
                    raise ConfigError("sweep: expected a mapping of key: [values]")
                for skey, vals in node.items():
                    vals = [vals] if isinstance(vals, str) else vals
                    if not isinstance(vals, list) or not all(isinstance(v, str) for v in vals):
                        raise ConfigError("sweep: %s: expected a list of values" % skey)
                    add_sweep_key(sweep, skey, vals)
            elif key in SECTIONS:
                if not isinstance(node, dict):
                    raise ConfigError("%s: expected a mapping of %s.* keys" % (key, key))
                for sub, val in node.items():
                    full = "%s.%s" % (key, sub)
                    if full not in KEYS:
                        raise unknown_key(full)
                    set_key(cfg, full, scalar_text(full, val))
            else:
                if key not in KEYS:
                    raise unknown_key(key)
                set_key(cfg, key, scalar_text(key, node))
    except ConfigError as e:
        raise ConfigError("%s: %s" % (path, e)) from None
    return cfg, sweep


def apply_cli(cfg, sweep, sets, sweeps):
    """Applies --set key=value and --sweep key=v1,v2 (which replaces the
    file's list for that key, as dpbench does)."""
    for arg in sets:
        key, eq, val = arg.partition("=")
        if not eq or not key:
            raise ConfigError("--set %s: expected path=value" % arg)
        try:
            set_key(cfg, key, val)
        except ConfigError as e:
            raise ConfigError("--set %s: %s" % (arg, e)) from None
    for arg in sweeps:
        key, eq, vals = arg.partition("=")
        if not eq or not key or not vals:
            raise ConfigError("--sweep %s: expected key=v1,v2,..." % arg)
        sweep[:] = [(k, v) for k, v in sweep if k != key]
        try:
            add_sweep_key(sweep, key, [v for v in vals.split(",") if v])
        except ConfigError as e:
            raise ConfigError("--sweep: %s" % e) from None


def validate(cfg):
    """The cross-key checks dpbench makes before running a point."""
    devices = cfg["parallel.devices"]
    if devices:
        if cfg["parallel.device"] == "cpu":
            raise ConfigError("parallel.devices: device ids need parallel.device: cuda (or auto); "
                              "on the cpu use parallel.replicas")
        if cfg["parallel.replicas"] not in (1, len(devices)):
            raise ConfigError("parallel.replicas: %d disagrees with parallel.devices (%d ids); "
                              "give one or the other" % (cfg["parallel.replicas"], len(devices)))
    if cfg["loader.drop_last"] and cfg["loader.batch_size"] > cfg["dataset.length"]:
        raise ConfigError("loader.batch_size: %d is larger than dataset.length %d with "
                          "drop_last: true, so an epoch has no batch"
                          % (cfg["loader.batch_size"], cfg["dataset.length"]))
    if cfg["dataset.length"] * (cfg["dataset.features"] + cfg["model.out_features"]) > 1e12:
        raise ConfigError("dataset: %d x %d is too large to generate"
                          % (cfg["dataset.length"], cfg["dataset.features"]))


def sweep_points(cfg, sweep):
    """Yields (label, overrides, point config) for every sweep point, first key
    outermost; a config without a sweep is one point with an empty label."""
    keys = [k for k, _ in sweep]
    for combo in itertools.product(*[vals for _, vals in sweep]):
        point = dict(cfg)
        for key, text in zip(keys, combo):
            point[key] = parse_value(key, text)
        overrides = {k: value_text(point[k]) for k in keys}
        label = " ".join("%s=%s" % (k, v) for k, v in overrides.items())
        try:
            validate(point)
        except ConfigError as e:
            raise ConfigError("sweep point %s: %s" % (label, e)) from None
        yield label, overrides, point


def config_json(cfg, sweep=None):
    """The config as dpbench's JSON nests it: sections of keys, then `sweep`."""
    root = {}
    for path in KEYS:
        section, dot, leaf = path.partition(".")
        if dot:
            root.setdefault(section, {})[leaf] = cfg[path]
        else:
            root[path] = cfg[path]
    if sweep:
        root["sweep"] = {k: list(v) for k, v in sweep}
    return root


# ---- the PyTorch program ------------------------------------------------------

def cost_loop(iters, a):
    """A dependent chain of float operations: emulated per-sample CPU work."""
    for _ in range(iters):
        a = a * 0.999999 + 1e-7
    return a


def cost_iters_per_us():
    """Calibrates cost_loop: iterations per microsecond, best of 5."""
    iters, best = 20000, float("inf")
    for rep in range(5):
        t0 = time.perf_counter()
        cost_loop(iters, float(rep))
        best = min(best, time.perf_counter() - t0)
    return iters / (best * 1e6)


def make_classes(torch):
    """Builds the Dataset and the split-recording Module (torch is imported
    lazily so --help and config errors do not pay for it)."""

    class TeacherDataset(torch.utils.data.Dataset):
        """The tutorial's RandomDataset plus teacher targets."""

        def __init__(self, length, features, out_features, noise, seed):
            g = torch.Generator().manual_seed(seed)
            w = torch.randn(out_features, features, generator=g) / math.sqrt(features)
            b = torch.randn(out_features, generator=g)
            self.x = torch.randn(length, features, generator=g)
            self.y = self.x @ w.t() + b + noise * torch.randn(length, out_features, generator=g)
            self.cost_iters = 0

        def __len__(self):
            return self.x.shape[0]

        def __getitem__(self, i):
            if self.cost_iters:
                cost_loop(self.cost_iters, float(i))
            return self.x[i], self.y[i]

    class SplitRecorder(torch.nn.Module):
        """Wraps the model and logs (device index, rows) of every forward call.

        nn.DataParallel's replicas share this module's plain attributes, so
        every replica appends to the same list (list.append is atomic)."""

        def __init__(self, inner):
            super().__init__()
            self.inner = inner
            self.calls = []

        def forward(self, x):
            self.calls.append((x.device.index if x.is_cuda else -1, x.shape[0]))
            return self.inner(x)

    return TeacherDataset, SplitRecorder


def pick_device(torch, cfg):
    """Returns (backend name, device ids, note) for a point."""
    want = cfg["parallel.device"]
    devices = cfg["parallel.devices"]
    n = len(devices) if devices else cfg["parallel.replicas"]
    if want == "cpu" or (want == "auto" and not torch.cuda.is_available()):
        return "torch-cpu", None, n
    if not torch.cuda.is_available():
        raise ConfigError("parallel.device cuda: torch sees no CUDA device "
                          "(torch %s, cuda %s)" % (torch.__version__, torch.version.cuda))
    ids = devices if devices else list(range(n))
    count = torch.cuda.device_count()
    bad = [i for i in ids if i >= count]
    if bad:
        raise ConfigError("parallel.devices: torch sees %d CUDA devices, no device %d"
                          % (count, bad[0]))
    if len(set(ids)) != len(ids):
        raise ConfigError("parallel.devices %s: nn.DataParallel cannot put two replicas on one "
                          "device; the PyTorch reference cannot run this point" % ids)
    return "torch-cuda", ids, n


def ordered_split(calls, device_ids):
    """Rows per replica, in replica order, from the (device, rows) log.

    CUDA replicas run in threads, so the log is in any order; torch.chunk
    gives non-increasing chunk sizes, so sorting by replica position and then
    by decreasing rows restores the scatter order."""
    if device_ids is None:
        return [rows for _, rows in calls]
    pos = {d: i for i, d in enumerate(device_ids)}
    return [rows for _, rows in sorted(calls, key=lambda c: (pos.get(c[0], 0), -c[1]))]


def make_loader(torch, dataset, cfg, pin):
    """The DataLoader with the config's knobs (worker-only knobs only with workers)."""
    workers = cfg["loader.num_workers"]
    kwargs = dict(batch_size=cfg["loader.batch_size"], shuffle=cfg["loader.shuffle"],
                  drop_last=cfg["loader.drop_last"], num_workers=workers, pin_memory=pin,
                  generator=torch.Generator().manual_seed(cfg["seed"]))
    if workers > 0:
        kwargs["prefetch_factor"] = cfg["loader.prefetch_factor"]
        kwargs["persistent_workers"] = cfg["loader.persistent_workers"]
    return torch.utils.data.DataLoader(dataset, **kwargs)


def build_model(torch, SplitRecorder, cfg, device_ids, replicas):
    """Returns (recorder, forward): the Linear wrapped in a SplitRecorder, and
    a function running one batch through it with DataParallel semantics."""
    torch.manual_seed(cfg["seed"])
    recorder = SplitRecorder(torch.nn.Linear(cfg["dataset.features"], cfg["model.out_features"]))
    if device_ids is not None:
        recorder.to(torch.device("cuda", device_ids[0]))
        return recorder, torch.nn.DataParallel(recorder, device_ids=device_ids,
                                               output_device=device_ids[0])
    if replicas == 1:
        return recorder, recorder

    def forward(x):
        # DataParallel on the CPU: torch.chunk the batch, one replica per
        # chunk (run in turn), outputs concatenated in order. The replicas
        # share the parameters, so backward sums their gradients.
        return torch.cat([recorder(chunk) for chunk in torch.chunk(x, replicas)])

    return recorder, forward


def run_epoch(torch, loader, step, dev, pin):
    """Runs and times one epoch; returns (epoch stats, per-batch splits).

    wait = blocked in the loader iterator's next() (the final, empty next()
    included: it shuts non-persistent workers down); copy = host-to-device
    copies (CUDA only); compute = step(); the rest of the epoch (starting
    workers in iter()) counts only in `seconds`."""
    st = {"wait": 0.0, "copy": 0.0, "compute": 0.0, "copy_bytes": 0.0, "samples": 0,
          "loss_sum": 0.0}
    splits = []
    t0 = time.perf_counter()
    batches = iter(loader)  # starts the workers unless they persist
    while True:
        tw = time.perf_counter()
        try:
            x, y = next(batches)
        except StopIteration:
            st["wait"] += time.perf_counter() - tw
            break
        st["wait"] += time.perf_counter() - tw
        if dev is not None:
            tc = time.perf_counter()
            x = x.to(dev, non_blocking=pin)
            y = y.to(dev, non_blocking=pin)
            torch.cuda.synchronize(dev)  # else the copy is only queued
            st["copy"] += time.perf_counter() - tc
            st["copy_bytes"] += (x.numel() + y.numel()) * x.element_size()
        tc = time.perf_counter()
        batch_loss, split = step(x, y)
        st["compute"] += time.perf_counter() - tc
        st["samples"] += x.shape[0]
        st["loss_sum"] += batch_loss * x.shape[0]
        splits.append(split)
    st["seconds"] = time.perf_counter() - t0
    return st, splits


def print_trace(splits, features, out_features):
    """The tutorial's In Model / Outside lines for one epoch's batches."""
    for split in splits:
        for r in split:
            print("\tIn Model: input size [%d, %d] output size [%d, %d]"
                  % (r, features, r, out_features), file=sys.stderr)
        rows = sum(split)
        print("Outside: input size [%d, %d] output_size [%d, %d]"
              % (rows, features, rows, out_features), file=sys.stderr)


def run_point(torch, classes, dataset, cfg, stop):
    """Trains one sweep point; returns the run's dict (without label fields).

    `stop` is a one-element list that holds the signal number once SIGINT or
    SIGTERM arrived; a partial epoch is dropped, like dpbench does."""
    _, SplitRecorder = classes
    backend, device_ids, replicas = pick_device(torch, cfg)
    cuda = backend == "torch-cuda"
    features, out_features = cfg["dataset.features"], cfg["model.out_features"]
    recorder, forward = build_model(torch, SplitRecorder, cfg, device_ids, replicas)
    loss_fn = torch.nn.MSELoss()
    opt = torch.optim.SGD(recorder.parameters(), lr=cfg["train.lr"])
    pin = cuda and cfg["loader.pin_memory"]
    loader = make_loader(torch, dataset, cfg, pin)
    dev = torch.device("cuda", device_ids[0]) if cuda else None

    def step(x, y):
        """One training step; returns (batch loss before the update, split)."""
        recorder.calls.clear()
        loss = loss_fn(forward(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item(), ordered_split(recorder.calls, device_ids)  # item() syncs

    notes = []
    if not cuda and (cfg["loader.pin_memory"] or cfg["loader.async_copy"]):
        notes.append("pin_memory and async_copy have no effect on the cpu backend")
    if cuda:
        notes.append("batches are copied to cuda:%d with .to() before nn.DataParallel "
                     "scatters them, as the tutorial does" % device_ids[0])
        if cfg["loader.async_copy"]:
            notes.append("async_copy is not emulated by the PyTorch reference")

    warmup, epochs = cfg["train.warmup_epochs"], cfg["train.epochs"]
    splits, results = [], []
    for ep in range(warmup + epochs):
        if stop[0]:
            break
        try:
            st, ep_splits = run_epoch(torch, loader, step, dev, pin)
        except KeyboardInterrupt:
            stop[0] = stop[0] or signal.SIGINT
            break
        if ep == 0:
            splits = ep_splits
        if cfg["report.trace"]:
            print_trace(ep_splits, features, out_features)
        if ep < warmup:
            continue
        samples, seconds = st["samples"], st["seconds"]
        results.append({
            "epoch": ep - warmup + 1,
            "seconds": seconds,
            "samples_per_second": samples / seconds,
            "loss": st["loss_sum"] / samples if samples else None,
            "wait_seconds": st["wait"],
            "copy_seconds": st["copy"],
            "compute_seconds": st["compute"],
            "copy_bytes": st["copy_bytes"],
            "copy_gbps": st["copy_bytes"] / st["copy"] / 1e9 if st["copy"] > 0 else None,
            "overlap": None,
            "host_seconds": None,  # the step computes on the host: no separate issue time
            "samples": samples,
        })

    lin = recorder.inner
    params = {}
    if out_features * features <= 4096:  # small models only, as dpbench does
        params = {"weight": lin.weight.detach().cpu().flatten().tolist(),
                  "bias": lin.bias.detach().cpu().tolist()}
    return {
        "backend": backend,
        "replicas": replicas,
        "shared_devices": False,
        "batches_per_epoch": len(loader),
        **({"notes": "; ".join(notes)} if notes else {}),
        "splits": splits,
        "epochs": results,
        "final_params": params,
    }


# ---- summaries and output -----------------------------------------------------

def verdict(run):
    """dpbench's one-line diagnosis of where an epoch's time went."""
    s = run["summary"]
    if not run["epochs"]:
        return "no measured epoch"
    exposed_copy = s["copy_share"]  # no overlap is measured here
    if s["wait_share"] >= exposed_copy and s["wait_share"] >= s["compute_share"]:
        hint = ("loader workers (num_workers > 0)" if run["config"]["loader"]["num_workers"] == 0
                else "more workers or a cheaper sample")
        return ("input-bound: the loop waited %.0f%% of the epoch for data; %s would help"
                % (100 * s["wait_share"], hint))
    if exposed_copy >= s["compute_share"]:
        return ("copy-bound: host-to-device copies took %.0f%% of the epoch; %s"
                % (100 * exposed_copy, "pinned memory would speed them up"
                   if run["config"]["loader"]["async_copy"]
                   else "async_copy would hide them behind compute"))
    return "compute-bound: DataParallel steps took %.0f%% of the epoch" % (100 * s["compute_share"])


def summarize(runs):
    """Adds dpbench's `summary` block to every run (speedup is vs the first)."""
    base = None  # the first run's median
    for run in runs:
        eps = run["epochs"]
        s = dict.fromkeys(["median_seconds", "min_seconds", "max_seconds", "samples_per_second",
                           "wait_share", "copy_share", "compute_share", "overlap", "copy_gbps",
                           "host_us_per_step", "host_us_per_step_per_replica",
                           "final_loss", "speedup"])
        if eps:
            t = [e["seconds"] for e in eps]
            total = sum(t)
            copy = sum(e["copy_seconds"] for e in eps)
            s["median_seconds"] = statistics.median(t)
            s["min_seconds"], s["max_seconds"] = min(t), max(t)
            s["samples_per_second"] = eps[0]["samples"] / s["median_seconds"]
            s["wait_share"] = sum(e["wait_seconds"] for e in eps) / total
            s["copy_share"] = copy / total
            s["compute_share"] = sum(e["compute_seconds"] for e in eps) / total
            if copy > 0:
                s["copy_gbps"] = sum(e["copy_bytes"] for e in eps) / copy / 1e9
            s["final_loss"] = eps[-1]["loss"]
            if run is runs[0]:
                base = s["median_seconds"]
            if base:
                s["speedup"] = base / s["median_seconds"]
        run["summary"] = s
        s["verdict"] = verdict(run)


def git_commit():
    """Short commit of the checkout this script lives in, or "unknown"."""
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=5, cwd=os.path.dirname(os.path.abspath(__file__)))
        return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def machine(torch):
    """The `machine` block: cpu model, cores, memory, kernel, CUDA devices."""
    cpu = "unknown cpu"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    uname = os.uname()
    devices = ""
    if torch.cuda.is_available():
        devices = "; ".join("%d: %s" % (i, torch.cuda.get_device_name(i))
                            for i in range(torch.cuda.device_count()))
    return {
        "cpu": cpu,
        "cores": os.sysconf("SC_NPROCESSORS_ONLN"),
        "memory_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
        "kernel": "%s %s" % (uname.sysname, uname.release),
        "devices": devices,
    }


def finite_or_none(obj):
    """Replaces NaN/inf floats by None so the JSON stays standard."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [finite_or_none(v) for v in obj]
    return obj


def write_atomic(path, text):
    """Writes text to path via a temporary file in the same directory."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def print_table(doc, threads, out=sys.stderr):
    """The short text summary: one line per point."""
    c = doc["config"]
    print("# %s %s  config: %s  threads: %d  date: %s" % (PROG, doc["dpbench"]["version"],
          c.get("name"), threads, doc["date"]), file=out)
    print("# data: %d x %d -> %d, batch %d, workers %d" % (
        c["dataset"]["length"], c["dataset"]["features"], c["model"]["out_features"],
        c["loader"]["batch_size"], c["loader"]["num_workers"]), file=out)
    fmt = "%-48s %10s %10s %10s %12s %6s %12s %8s"
    print(fmt % ("# point", "median", "min", "max", "samples/s", "wait", "loss", "speedup"),
          file=out)
    print(fmt % ("#", "ms", "ms", "ms", "", "%", "", "x"), file=out)
    for run in doc["runs"]:
        s = run["summary"]
        if s["median_seconds"] is None:
            print("%-48s (no measured epoch)" % (run["point"] or "(base)"), file=out)
            continue
        print("%-48s %10.4f %10.4f %10.4f %12.0f %6.0f %12.6g %8.2f" % (
            run["point"] or "(base)", 1e3 * s["median_seconds"], 1e3 * s["min_seconds"],
            1e3 * s["max_seconds"], s["samples_per_second"], 100 * s["wait_share"],
            s["final_loss"] if s["final_loss"] is not None else float("nan"), s["speedup"]),
            file=out)
    if doc["interrupted"]:
        print("# interrupted: results are partial", file=out)


def parse_args(argv):
    """The command line."""
    p = argparse.ArgumentParser(
        prog="torch_reference.py",
        description="Run the PyTorch equivalent of a dpbench config and write dpbench-schema JSON.")
    p.add_argument("config", help="dpbench YAML config")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key (repeatable)")
    p.add_argument("--sweep", dest="sweeps", action="append", default=[], metavar="KEY=V1,V2",
                   help="sweep a key over values (repeatable; replaces the file's list)")
    p.add_argument("--out", metavar="FILE.json", help="write the JSON here (atomically) "
                   "instead of stdout")
    p.add_argument("--threads", type=int, default=1,
                   help="torch.set_num_threads (default 1, as the reference numbers)")
    return p.parse_args(argv)


def main(argv=None):
    """Loads the config, runs every point, prints the table, writes the JSON."""
    args = parse_args(argv)
    try:
        cfg, sweep = load_config(args.config)
        apply_cli(cfg, sweep, args.sets, args.sweeps)
        validate(cfg)
        points = list(sweep_points(cfg, sweep))
    except ConfigError as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 2
    if args.threads < 1:
        print("%s: --threads: expected at least 1" % PROG, file=sys.stderr)
        return 2
    if args.out and not os.path.isdir(os.path.dirname(os.path.abspath(args.out))):
        print("%s: --out %s: no such directory" % (PROG, args.out), file=sys.stderr)
        return 2

    try:
        import torch  # after the config checks: importing torch takes a second
    except ImportError:
        print("%s: this interpreter (%s) has no torch; run with one that has it, e.g. "
              "/usr/bin/python3 with Debian's python3-torch" % (PROG, sys.executable),
              file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    classes = make_classes(torch)
    TeacherDataset = classes[0]
    if cfg["parallel.device"] == "auto":
        if torch.cuda.is_available():
            cfg["parallel.device"] = "cuda"
        else:
            print("%s: parallel.device auto: using cpu (torch sees no CUDA device)" % PROG,
                  file=sys.stderr)
            cfg["parallel.device"] = "cpu"
        points = list(sweep_points(cfg, sweep))

    doc = {
        "dpbench": {"version": "torch-%s" % torch.__version__, "git_commit": git_commit(),
                    "backends": "torch-cpu torch-cuda" if torch.cuda.is_available()
                    else "torch-cpu"},
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(torch),
        "config": config_json(cfg, sweep),
        "interrupted": False,
        "runs": [],
    }
    stop = [0]  # the signal that stopped the run, if any

    def on_signal(signum, frame):
        stop[0] = signum
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    dataset, data_key, per_us = None, None, None
    for i, (label, overrides, point) in enumerate(points):
        if stop[0]:
            break
        key = tuple(point[k] for k in ("seed", "dataset.length", "dataset.features",
                                       "dataset.noise", "model.out_features"))
        try:
            if key != data_key:  # one dataset per distinct data config
                dataset = TeacherDataset(point["dataset.length"], point["dataset.features"],
                                         point["model.out_features"], point["dataset.noise"],
                                         point["seed"])
                data_key = key
            dataset.cost_iters = 0
            if point["dataset.sample_cost_us"] > 0:
                per_us = per_us or cost_iters_per_us()
                dataset.cost_iters = max(1, round(point["dataset.sample_cost_us"] * per_us))
            if len(points) > 1:
                print("%s: point %d/%d: %s" % (PROG, i + 1, len(points), label), file=sys.stderr)
            run = run_point(torch, classes, dataset, point, stop)
        except KeyboardInterrupt:
            stop[0] = stop[0] or signal.SIGINT
            break
        except ConfigError as e:
            print("%s: %s%s" % (PROG, "sweep point %s: " % label if label else "", e),
                  file=sys.stderr)
            return 2
        doc["runs"].append(dict({"point": label, "overrides": overrides,
                                 "config": config_json(point)}, **run))
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    doc["interrupted"] = bool(stop[0])
    summarize(doc["runs"])
    # dpbench's order of a run's keys: summary before final_params
    doc["runs"] = [dict({k: v for k, v in r.items() if k != "final_params"},
                        final_params=r["final_params"]) for r in doc["runs"]]
    print_table(doc, args.threads)
    text = json.dumps(finite_or_none(doc), indent=2) + "\n"
    try:
        if args.out:
            write_atomic(args.out, text)
            print("%s: results written to %s" % (PROG, args.out), file=sys.stderr)
        else:
            sys.stdout.write(text)
            sys.stdout.flush()
    except OSError as e:
        print("%s: cannot write %s: %s" % (PROG, args.out or "stdout", e.strerror or e),
              file=sys.stderr)
        return 1
    if stop[0]:
        print("%s: interrupted by %s; results are partial"
              % (PROG, signal.Signals(stop[0]).name), file=sys.stderr)
        return 128 + stop[0]
    return 0


if __name__ == "__main__":
    sys.exit(main())
