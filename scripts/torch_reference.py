#!/usr/bin/python3
"""PyTorch reference run of a dpbench config, on dpbench's own bytes.

`dpbench --export DIR` writes, for every run point, the resolved config, the
dataset, the initial parameters and every epoch's sample order (the layout is
in README.md, "Exported runs"). This script reads that export and trains the
equivalent PyTorch program on it:

    Dataset over the exported x, y  ->  DataLoader(batch_size, drop_last,
    num_workers, ...) with a sampler that yields the exported order
      -> nn.Linear(features, out_features) with the exported initial params
         (torch.chunk over the replicas and torch.cat on the CPU, as
         nn.DataParallel scatters and gathers; nn.DataParallel on CUDA)
      -> nn.MSELoss -> optim.SGD(lr)

So the two must end at the same parameters up to float rounding, and
scripts/compare.py checks that they do.

Labelled datasets (dataset.kind idx, cifar10, folder) are exported without
their samples: this script reads the same files with its own small Dataset
classes, as a torchvision user's loop does (numpy for idx and cifar10 into
memory, PIL per image for folders, each sample a PIL image through the
configured transforms: Resize + CenterCrop, RandomCrop with padding,
RandomHorizontalFlip, ToTensor, Normalize) and trains with
nn.CrossEntropyLoss (the one-hot targets as class probabilities). Its random
crops and flips are dpbench's own, read from the export's augment.npy (each
sample's crop offsets and flip in each epoch), so both train on the same
pixels. Each epoch is timed with
time.perf_counter: `wait` is the time blocked in the DataLoader iterator's
next(), `copy` the host-to-device copy (CUDA only), `compute` forward + loss
+ backward + optimiser step. Warmup epochs run first and are left out.
Results are written in dpbench's JSON schema.

    torch_reference.py --config configs/tutorial.yaml [--set K=V]... [--sweep K=V1,V2]...
    torch_reference.py configs/tutorial.yaml ...      (the same, positional)
    torch_reference.py --export-dir DIR               (an existing export)

With a config, it runs `dpbench --export` itself into a temporary directory
(the binary from --dpbench, default ./dpbench), so the config is read,
checked and expanded by dpbench alone. Run it with an interpreter that has
torch and numpy, e.g. Debian's /usr/bin/python3 (python3-torch).
"""

import argparse
import datetime
import gzip
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

PROG = "torch_reference"
EXPORT_FORMAT = 1  # the export layout this script reads

import pyreq

np, torch = pyreq.require("numpy", "torch")


class RunError(Exception):
    """A point that cannot be run; exit status 2 with this message."""


# ---- the export ---------------------------------------------------------------

def dpbench_export(binary, config, sets, sweeps, dest):
    """Runs `dpbench --export dest` with the config and overrides; returns
    (exit status, dpbench's stderr)."""
    cmd = [binary, "--export", dest]
    if config:
        cmd += ["--config", config]
    for s in sets:
        cmd += ["--set", s]
    for s in sweeps:
        cmd += ["--sweep", s]
    try:
        out = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    except OSError as e:
        return 2, "%s: cannot run %s: %s (build it with make, or give --dpbench PATH)\n" % (
            PROG, binary, e.strerror)
    return out.returncode, out.stderr


def read_json(path):
    """A JSON file of the export; RunError when it is missing or malformed."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise RunError("%s: cannot read: %s" % (path, e.strerror)) from None
    except ValueError as e:
        raise RunError("%s: not valid JSON: %s" % (path, e)) from None


def read_export(folder):
    """The export's manifest: its base config and one entry per point, each
    with its resolved config and its folder."""
    manifest = read_json(os.path.join(folder, "export.json"))
    if not isinstance(manifest, dict) or manifest.get("format") != EXPORT_FORMAT:
        raise RunError("%s/export.json: not a dpbench export of format %d"
                       % (folder, EXPORT_FORMAT))
    for p in manifest["points"]:
        p["path"] = os.path.join(folder, p["dir"])
        p["config"] = read_json(os.path.join(p["path"], "config.json"))
    return manifest


def load_array(point, name):
    """One .npy array of a point."""
    path = os.path.join(point["path"], name)
    try:
        return np.load(path)
    except (OSError, ValueError) as e:
        raise RunError("%s: cannot read: %s" % (path, e)) from None


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


class ExportedDataset(torch.utils.data.Dataset):
    """The exported samples, one (x, y) row per index, with the configured
    per-sample cost spent in __getitem__ (emulated decode work)."""

    def __init__(self, x, y, cost_iters):
        self.x, self.y, self.cost_iters = x, y, cost_iters

    def __len__(self):
        return self.x.shape[0]

    def __getitem__(self, i):
        if self.cost_iters:
            cost_loop(self.cost_iters, float(i))
        return self.x[i], self.y[i]


class ExportedOrder(torch.utils.data.Sampler):
    """Yields epoch `epoch`'s exported sample order; the DataLoader's batch
    sampler cuts it into consecutive batches (drop_last as configured). With
    `keyed`, each index comes as (epoch, index), for datasets whose samples
    change with the epoch (random transforms)."""

    def __init__(self, orders, keyed=False):
        self.orders, self.epoch, self.keyed = orders, 0, keyed

    def __iter__(self):
        order = self.orders[self.epoch].tolist()
        return iter([(self.epoch, i) for i in order] if self.keyed else order)

    def __len__(self):
        return self.orders.shape[1]


class SplitRecorder(torch.nn.Module):
    """Wraps the model and logs (device index, rows) of every forward call.

    nn.DataParallel's replicas share this module's plain attributes, so every
    replica appends to the same list (list.append is atomic)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.calls = []

    def forward(self, x):
        self.calls.append((x.device.index if x.is_cuda else -1, x.shape[0]))
        return self.inner(x)


# ---- labelled datasets: the files themselves, torchvision's way ----------------

class ImageTransform:
    """torchvision's Resize(N) + CenterCrop(N), RandomCrop(N, padding=P),
    RandomHorizontalFlip(), ToTensor(), Normalize(mean, std) on a PIL image,
    as the config's transform section asks; returns the flat (C*H*W) tensor.
    The random choices are dpbench's: `choices` (epochs, length, 3) holds
    each sample's crop offsets (top, left) in the padded image and its flip."""

    def __init__(self, tf, channels, choices):
        self.resize, self.crop, self.pad = tf["resize"], tf["crop"], tf["pad"]
        self.hflip = tf["hflip"]
        mean = tf["mean"] or [0.0]
        std = tf["std"] or [1.0]
        self.mean = np.array(mean * channels if len(mean) == 1 else mean, np.float32)[:, None, None]
        self.std = np.array(std * channels if len(std) == 1 else std, np.float32)[:, None, None]
        self.choices = choices
        if (self.crop or self.hflip) and choices is None:
            raise RunError("transform.crop/hflip: the export has no augment.npy (the random "
                           "choices); export it again with this dpbench")

    def __call__(self, img, epoch, index):
        if self.resize:
            n = self.resize
            w, h = img.size
            if w <= h:
                size = (n, int(n * h / w))
            else:
                size = (int(n * w / h), n)
            img = img.resize(size, Image.BILINEAR)
            left, top = round((size[0] - n) / 2.0), round((size[1] - n) / 2.0)
            img = img.crop((left, top, left + n, top + n))
        arr = np.asarray(img)
        if arr.ndim == 2:
            arr = arr[:, :, None]
        if self.crop or self.hflip:
            top, left, flip = (int(v) for v in self.choices[epoch, index])
        if self.crop:  # RandomCrop(crop, padding=pad) at dpbench's offsets
            p, c = self.pad, self.crop
            if p:
                arr = np.pad(arr, ((p, p), (p, p), (0, 0)))
            arr = arr[top:top + c, left:left + c]
        if self.hflip and flip:
            arr = arr[:, ::-1]
        x = arr.transpose(2, 0, 1).astype(np.float32) / 255.0  # ToTensor
        x = (x - self.mean) / self.std                          # Normalize
        return torch.from_numpy(np.ascontiguousarray(x).reshape(-1))


def one_hot(label, classes):
    y = torch.zeros(classes)
    y[label] = 1.0
    return y


class ArrayImages(torch.utils.data.Dataset):
    """idx and cifar10: uint8 images (N, H, W[, C]) and labels in memory; each
    sample becomes a PIL image first, as torchvision's MNIST and CIFAR10 do."""

    def __init__(self, images, labels, classes, transform):
        self.images, self.labels, self.classes, self.transform = images, labels, classes, transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, key):
        epoch, i = key
        img = Image.fromarray(self.images[i])
        return self.transform(img, epoch, i), one_hot(int(self.labels[i]), self.classes)


class FolderImages(torch.utils.data.Dataset):
    """ImageFolder: root/<class>/.../<image>, each image read and decoded by
    PIL when its sample loads. The samples in torchvision's order (its
    find_classes and make_dataset): classes the sorted folders of root;
    each class's tree walked by os.walk(followlinks=True), the walk sorted,
    each folder's files sorted, kept by IMG_EXTENSIONS."""

    EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")

    def __init__(self, root, classes, transform):
        names = sorted(e.name for e in os.scandir(root) if e.is_dir())
        self.samples = []
        for k, c in enumerate(names):
            for folder, _, files in sorted(os.walk(os.path.join(root, c), followlinks=True)):
                self.samples += [(os.path.join(folder, f), k) for f in sorted(files)
                                 if f.lower().endswith(self.EXTENSIONS)]
        self.classes, self.transform = classes, transform

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, key):
        epoch, i = key
        path, label = self.samples[i]
        with open(path, "rb") as f:
            img = Image.open(f).convert("RGB")
        return self.transform(img, epoch, i), one_hot(label, self.classes)


def read_maybe_gz(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return f.read()


def idx_arrays(images_path):
    """(images (N, rows, cols) uint8, labels (N,)) of an idx pair."""
    labels_path = images_path.replace("images-idx3-ubyte", "labels-idx1-ubyte")
    if not os.path.exists(labels_path):
        labels_path = (labels_path[:-3] if labels_path.endswith(".gz") else labels_path + ".gz")
    raw, lab = read_maybe_gz(images_path), read_maybe_gz(labels_path)
    n, rows, cols = (int.from_bytes(raw[k:k + 4], "big") for k in (4, 8, 12))
    images = np.frombuffer(raw, np.uint8, n * rows * cols, 16).reshape(n, rows, cols)
    return images, np.frombuffer(lab, np.uint8, n, 8)


def cifar_arrays(folder):
    """(images (N, 32, 32, 3) uint8, labels (N,)) of data_batch_1..5.bin."""
    recs = np.concatenate([np.fromfile(os.path.join(folder, "data_batch_%d.bin" % k), np.uint8)
                           .reshape(-1, 3073) for k in range(1, 6)])
    return recs[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1).copy(), recs[:, 0].copy()


Image = None  # PIL.Image, imported by file_dataset: random data does not need it


def file_dataset(point):
    """The Dataset over a labelled kind's files, its samples keyed by (epoch,
    index)."""
    global Image
    Image = pyreq.require("PIL.Image")
    cfg = point["config"]
    ds, kind, classes = cfg["dataset"], cfg["dataset"]["kind"], cfg["model"]["out_features"]
    channels = 1 if kind == "idx" else 3
    augment = os.path.join(point["path"], "augment.npy")
    choices = load_array(point, "augment.npy") if os.path.exists(augment) else None
    tf = ImageTransform(cfg["transform"], channels, choices)
    if kind == "idx":
        return ArrayImages(*idx_arrays(ds["path"]), classes, tf)
    if kind == "cifar10":
        return ArrayImages(*cifar_arrays(ds["path"]), classes, tf)
    return FolderImages(ds["path"], classes, tf)


def build_dataset(point, per_us):
    """The point's Dataset: the exported samples, or a labelled kind's files."""
    cfg = point["config"]
    if not point.get("data"):
        return file_dataset(point)
    x = torch.from_numpy(load_array(point, "x.npy"))
    y = torch.from_numpy(load_array(point, "y.npy"))
    cost_us = cfg["dataset"]["sample_cost_us"]
    cost_iters = max(1, round(cost_us * per_us())) if cost_us > 0 else 0
    return ExportedDataset(x, y, cost_iters)


def pick_device(cfg):
    """Returns (backend name, device ids or None, replicas) for a point."""
    par = cfg["parallel"]
    want, devices = par["device"], par["devices"]
    n = len(devices) if devices else par["replicas"]
    # the emulated device computes on the cpu (only its timing is a GPU's)
    if want in ("cpu", "emulated") or (want == "auto" and not torch.cuda.is_available()):
        return "torch-cpu", None, n
    if not torch.cuda.is_available():
        raise RunError("parallel.device cuda: torch sees no CUDA device (torch %s, cuda %s)"
                       % (torch.__version__, torch.version.cuda))
    ids = devices if devices else list(range(n))
    count = torch.cuda.device_count()
    bad = [i for i in ids if i >= count]
    if bad:
        raise RunError("parallel.devices: torch sees %d CUDA devices, no device %d"
                       % (count, bad[0]))
    if len(set(ids)) != len(ids):
        raise RunError("parallel.devices %s: nn.DataParallel cannot put two replicas on one "
                       "device; the PyTorch reference cannot run this point" % ids)
    return "torch-cuda", ids, n


def make_loader(dataset, sampler, cfg, pin):
    """The DataLoader with the config's knobs (worker-only knobs only with workers)."""
    ld = cfg["loader"]
    kwargs = dict(batch_size=ld["batch_size"], sampler=sampler, drop_last=ld["drop_last"],
                  num_workers=ld["num_workers"], pin_memory=pin)
    if ld["num_workers"] > 0:
        kwargs["prefetch_factor"] = ld["prefetch_factor"]
        kwargs["persistent_workers"] = ld["persistent_workers"]
    return torch.utils.data.DataLoader(dataset, **kwargs)


def build_model(point, device_ids, replicas):
    """Returns (recorder, forward): the Linear with the exported initial
    parameters wrapped in a SplitRecorder, and a function running one batch
    through it with DataParallel's semantics."""
    w0 = torch.from_numpy(load_array(point, "w0.npy"))
    b0 = torch.from_numpy(load_array(point, "b0.npy"))
    lin = torch.nn.Linear(w0.shape[1], w0.shape[0])
    with torch.no_grad():
        lin.weight.copy_(w0)
        lin.bias.copy_(b0)
    recorder = SplitRecorder(lin)
    if device_ids is not None:
        recorder.to(torch.device("cuda", device_ids[0]))
        return recorder, torch.nn.DataParallel(recorder, device_ids=device_ids,
                                               output_device=device_ids[0])

    def forward(x):
        # DataParallel on the CPU: torch.chunk the batch, one replica per chunk
        # (run in turn), outputs concatenated in order. The replicas share the
        # parameters, so backward sums their gradients, as reduce-add does.
        return torch.cat([recorder(chunk) for chunk in torch.chunk(x, replicas)])

    return recorder, forward


def ordered_split(calls, device_ids):
    """Rows per replica, in replica order, from the (device, rows) log.

    CUDA replicas run in threads, so the log is in any order; torch.chunk
    gives non-increasing chunk sizes, so sorting by replica position and then
    by decreasing rows restores the scatter order."""
    if device_ids is None:
        return [rows for _, rows in calls]
    pos = {d: i for i, d in enumerate(device_ids)}
    return [rows for _, rows in sorted(calls, key=lambda c: (pos.get(c[0], 0), -c[1]))]


# dpbench's losses (src/loss.c's table, by the name results carry) and their
# PyTorch modules: a loss dpbench gains needs its line here.
TORCH_LOSSES = {
    "mse": lambda: torch.nn.MSELoss(),
    "cross_entropy": lambda: torch.nn.CrossEntropyLoss(),
}


def make_step(recorder, forward, lr, device_ids, loss="mse"):
    """One training step: forward, loss (one of TORCH_LOSSES), backward, SGD.
    The step returns the batch's loss before the update and its split over
    the replicas."""
    if loss not in TORCH_LOSSES:
        raise SystemExit(f"torch_reference.py: no PyTorch equivalent of dpbench's loss {loss!r} "
                         f"(add it to TORCH_LOSSES)")
    loss_fn = TORCH_LOSSES[loss]()
    opt = torch.optim.SGD(recorder.parameters(), lr=lr)

    def step(x, y):
        recorder.calls.clear()
        loss = loss_fn(forward(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item(), ordered_split(recorder.calls, device_ids)  # item() syncs

    return step


def run_epoch(loader, step, dev, pin):
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


def epoch_result(ep, st):
    """One measured epoch in dpbench's schema."""
    samples, seconds = st["samples"], st["seconds"]
    return {
        "epoch": ep,
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
    }


def run_point(point, per_us, stop):
    """Trains one exported point; returns the run's dict (without label fields).

    `stop` is a one-element list that holds the signal number once SIGINT or
    SIGTERM arrived; a partial epoch is dropped, as dpbench does."""
    cfg = point["config"]
    backend, device_ids, replicas = pick_device(cfg)
    cuda = backend == "torch-cuda"
    dataset = build_dataset(point, per_us)
    orders = load_array(point, "orders.npy")
    recorder, forward = build_model(point, device_ids, replicas)
    step = make_step(recorder, forward, cfg["train"]["lr"], device_ids, cfg["model"]["loss"])
    pin = cuda and cfg["loader"]["pin_memory"]
    sampler = ExportedOrder(orders, keyed=not point.get("data"))
    loader = make_loader(dataset, sampler, cfg, pin)
    dev = torch.device("cuda", device_ids[0]) if cuda else None

    notes = []
    if not cuda and (cfg["loader"]["pin_memory"] or cfg["loader"]["async_copy"]):
        notes.append("pin_memory and async_copy have no effect on the cpu backend")
    if cuda:
        notes.append("batches are copied to cuda:%d with .to() before nn.DataParallel "
                     "scatters them, as the tutorial does" % device_ids[0])
        if cfg["loader"]["async_copy"]:
            notes.append("async_copy is not emulated by the PyTorch reference")

    warmup = cfg["train"]["warmup_epochs"]
    splits, results = [], []
    for ep in range(orders.shape[0]):  # warmup + measured epochs
        if stop[0]:
            break
        sampler.epoch = ep
        try:
            st, ep_splits = run_epoch(loader, step, dev, pin)
        except KeyboardInterrupt:
            stop[0] = stop[0] or signal.SIGINT
            break
        if ep == 0:
            splits = ep_splits
            if cfg["report"]["trace"]:  # the first epoch only: the splits repeat
                print_trace(ep_splits, cfg["dataset"]["features"], cfg["model"]["out_features"])
        if ep >= warmup:
            results.append(epoch_result(ep - warmup + 1, st))

    lin = recorder.inner
    params = {}
    if lin.weight.numel() <= 4096:  # small models only, as dpbench does
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


# ---- DistributedDataParallel (parallel.mode: ddp) ------------------------------

class EpochView(torch.utils.data.Dataset):
    """The dataset in one epoch's exported order: DistributedSampler(shuffle=
    False) over it pads and deals out that permutation exactly as dpbench's
    sampler does with the same permutation."""

    def __init__(self, dataset, order):
        self.dataset, self.order = dataset, order

    def __len__(self):
        return len(self.order)

    def __getitem__(self, i):
        return self.dataset[int(self.order[i])]


def ddp_worker(rank, world, point, cost_iters, port, out_path, threads):
    """One rank: torch.distributed (gloo), DistributedSampler, DDP(nn.Linear),
    MSE, SGD. Rank 0 writes the run (its clock, every rank's samples and
    loss) to out_path."""
    import torch.distributed as dist
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    torch.set_num_threads(threads)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    cfg = point["config"]
    ld = cfg["loader"]
    dataset = ExportedDataset(torch.from_numpy(load_array(point, "x.npy")),
                              torch.from_numpy(load_array(point, "y.npy")), cost_iters)
    orders = load_array(point, "orders.npy")
    w0 = torch.from_numpy(load_array(point, "w0.npy"))
    b0 = torch.from_numpy(load_array(point, "b0.npy"))
    lin = torch.nn.Linear(w0.shape[1], w0.shape[0])
    with torch.no_grad():
        lin.weight.copy_(w0)
        lin.bias.copy_(b0)
    model = torch.nn.parallel.DistributedDataParallel(lin)  # broadcasts rank 0's parameters
    opt = torch.optim.SGD(model.parameters(), lr=cfg["train"]["lr"])
    loss_fn = torch.nn.MSELoss()

    def step(x, y):
        loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()  # DDP's allreduce of the averaged gradient
        opt.step()
        return loss.item(), [x.shape[0]]

    warmup, results, splits = cfg["train"]["warmup_epochs"], [], []
    for ep in range(orders.shape[0]):
        view = EpochView(dataset, orders[ep])
        sampler = torch.utils.data.distributed.DistributedSampler(
            view, num_replicas=world, rank=rank, shuffle=False, drop_last=ld["drop_last"])
        st, ep_splits = run_epoch(make_loader(view, sampler, cfg, False), step, None, False)
        total = torch.tensor([st["samples"], st["loss_sum"]], dtype=torch.float64)
        dist.all_reduce(total)  # the job's samples and loss, outside the timing
        st["samples"], st["loss_sum"] = int(total[0]), float(total[1])
        if ep == 0:  # rows per rank for each step
            rows = [None] * world
            dist.all_gather_object(rows, [r[0] for r in ep_splits])
            splits = [list(step_rows) for step_rows in zip(*rows)]
        if ep >= warmup:
            results.append(epoch_result(ep - warmup + 1, st))
    if rank == 0:
        params = {}
        if lin.weight.numel() <= 4096:
            params = {"weight": lin.weight.detach().flatten().tolist(),
                      "bias": lin.bias.detach().tolist()}
        with open(out_path, "w") as f:
            json.dump({"splits": splits, "epochs": results, "final_params": params,
                       "batches_per_epoch": len(splits)}, f)
    dist.barrier()
    # Tearing gloo down under a live DDP reducer can deadlock in torch 1.13 (the
    # group's destructor joins a thread that waits for the GIL it holds; seen as
    # a rank spinning forever): every rank is done, so leave without teardown.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run_point_ddp(point, per_us, world, threads):
    """A ddp point on `world` CPU processes (torch.multiprocessing, gloo)."""
    import socket
    cfg = point["config"]
    if cfg["parallel"]["device"] == "cuda":
        raise RunError("parallel.mode ddp: the PyTorch reference runs DDP on the cpu (gloo) only")
    if cfg["loader"]["num_workers"] > 0 and cfg["loader"]["persistent_workers"]:
        raise RunError("parallel.mode ddp: persistent_workers is not emulated by the reference "
                       "(its DataLoader is made per epoch over that epoch's order)")
    if world > cfg["dataset"]["length"]:
        raise RunError("--world-size %d: more ranks than samples" % world)
    cost_us = cfg["dataset"]["sample_cost_us"]
    cost_iters = max(1, round(cost_us * per_us())) if cost_us > 0 else 0
    with socket.socket() as sock:  # a free port for the rendezvous
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    fd, out_path = tempfile.mkstemp(prefix="torch-ddp-", suffix=".json")
    os.close(fd)
    try:
        torch.multiprocessing.spawn(ddp_worker, args=(world, point, cost_iters, port, out_path,
                                                      threads), nprocs=world, join=True)
        run = read_json(out_path)
    except torch.multiprocessing.ProcessRaisedException as e:
        raise RunError("a DDP rank failed: %s" % str(e).strip().splitlines()[-1]) from None
    finally:
        os.unlink(out_path)
    run.update({"backend": "torch-cpu", "replicas": 1, "world_size": world,
                "shared_devices": False, "comm": "gloo"})
    return run


# ---- summaries and output -----------------------------------------------------

def verdict(run):
    """dpbench's one-line diagnosis of where an epoch's time went (src/report.c's
    rule: a stage bounds the epoch at >= 60% of it or >= 1.5x the next share,
    the loop's own time counted as a share; else "balanced")."""
    s = run["summary"]
    if not run["epochs"]:
        return "no measured epoch"
    exposed_copy = s["copy_share"]  # no overlap is measured here
    share = [s["wait_share"], exposed_copy, s["compute_share"]]
    share.append(max(0.0, 1.0 - sum(share)))
    top = max(range(4), key=lambda i: share[i])
    nxt = max(share[i] for i in range(4) if i != top)
    if top == 3 or (share[top] < 0.6 and share[top] < 1.5 * nxt):
        return ("balanced: no stage dominates (waiting for data %.0f%%, exposed copies %.0f%%, "
                "DataParallel steps %.0f%%, other %.0f%% of the epoch)" % tuple(100 * x for x in share))
    if top == 0:
        hint = ("loader workers (num_workers > 0)" if run["config"]["loader"]["num_workers"] == 0
                else "more workers or a cheaper sample")
        return ("input-bound: the loop waited %.0f%% of the epoch for data; %s would help"
                % (100 * s["wait_share"], hint))
    if top == 1:
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


def machine():
    """The `machine` block: architecture, cpu model (/proc/cpuinfo's model name:
    x86-64; arm64 has none, and dpbench's own result names its core), cores,
    memory, kernel, CUDA devices."""
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
        "arch": uname.machine,
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


def run_export(manifest, threads, world=1):
    """Trains every exported point; returns the result document. A signal
    stops the run after the current batch with the points done so far."""
    torch.set_num_threads(threads)
    doc = {
        "schema_version": 1,  # dpbench's result schema, one run per point (no rounds)
        "dpbench": {"version": "torch-%s" % torch.__version__, "git_commit": git_commit(),
                    "backends": "torch-cpu torch-cuda" if torch.cuda.is_available()
                    else "torch-cpu"},
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(),
        "config": manifest["config"],
        "interrupted": False,
        "runs": [],
    }
    stop = [0]  # the signal that stopped the run, if any

    def on_signal(signum, frame):
        stop[0] = signum
        raise KeyboardInterrupt

    calibrated = []

    def per_us():
        if not calibrated:
            calibrated.append(cost_iters_per_us())
        return calibrated[0]

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    points = manifest["points"]
    try:
        for i, point in enumerate(points):
            if stop[0]:
                break
            label = point["point"]
            if len(points) > 1:
                print("%s: point %d/%d: %s" % (PROG, i + 1, len(points), label), file=sys.stderr)
            try:
                if point["config"]["parallel"].get("mode") == "ddp":
                    run = run_point_ddp(point, per_us, world, threads)
                else:
                    run = run_point(point, per_us, stop)
            except KeyboardInterrupt:
                stop[0] = stop[0] or signal.SIGINT
                break
            except RunError as e:
                raise RunError("%s%s" % ("sweep point %s: " % label if label else "", e)) from None
            doc["runs"].append(dict({"point": label, "overrides": point["overrides"],
                                     "config": point["config"]}, **run))
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    doc["interrupted"] = bool(stop[0])
    summarize(doc["runs"])
    for run in doc["runs"]:  # dpbench's order of a run's keys: summary, then final_params
        run["final_params"] = run.pop("final_params")
    return doc, stop[0]


def parse_args(argv):
    """The command line."""
    p = argparse.ArgumentParser(
        prog="torch_reference.py",
        description="Train the PyTorch equivalent of a dpbench config on the data, initial "
                    "parameters and sample orders dpbench exports; write dpbench-schema JSON.")
    p.add_argument("positional_config", nargs="?", metavar="CONFIG.yaml",
                   help="dpbench YAML config (same as --config)")
    p.add_argument("-c", "--config", metavar="FILE", help="dpbench YAML config")
    p.add_argument("-s", "--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key, as dpbench --set (repeatable)")
    p.add_argument("-w", "--sweep", dest="sweeps", action="append", default=[],
                   metavar="KEY=V1,V2", help="sweep a key, as dpbench --sweep (repeatable)")
    p.add_argument("--dpbench", metavar="PATH",
                   help="the dpbench binary that exports the run (default ./dpbench, else the "
                        "one next to scripts/)")
    p.add_argument("--export-dir", metavar="DIR",
                   help="read an existing `dpbench --export DIR` instead of running dpbench")
    p.add_argument("--out", metavar="FILE.json", help="write the JSON here (atomically) "
                   "instead of stdout")
    p.add_argument("--world-size", type=int, default=1, metavar="N",
                   help="ranks for parallel.mode: ddp points (torch.distributed with gloo on "
                        "N processes; dpbench's is mpirun's -np)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch.set_num_threads (default 1, as the reference numbers)")
    args = p.parse_args(argv)
    if args.positional_config and args.config:
        p.error("the config is given twice (positional and --config)")
    args.config = args.config or args.positional_config
    if args.export_dir and (args.config or args.sets or args.sweeps or args.dpbench):
        p.error("--export-dir reads an existing export: --config, --set, --sweep and "
                "--dpbench do not apply")
    if args.threads < 1:
        p.error("--threads: expected at least 1")
    if args.world_size < 1:
        p.error("--world-size: expected at least 1")
    if args.out and not os.path.isdir(os.path.dirname(os.path.abspath(args.out))):
        p.error("--out %s: no such directory" % args.out)
    return args


def default_dpbench():
    """./dpbench when there is one, else the binary at the repository root."""
    if os.path.exists("dpbench"):
        return "./dpbench"
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dpbench")


def main(argv=None):
    """Exports (or reads) the run, trains every point, writes the JSON."""
    args = parse_args(argv)
    tmp = None
    try:
        folder = args.export_dir
        if not folder:
            tmp = folder = tempfile.mkdtemp(prefix="dpbench-export-")
            rc, err = dpbench_export(args.dpbench or default_dpbench(), args.config, args.sets,
                                     args.sweeps, folder)
            if rc != 0:  # dpbench said why: a bad config is its to report
                sys.stderr.write(err)
                return rc if rc > 0 else 1
        doc, stopped = run_export(read_export(folder), args.threads, args.world_size)
    except RunError as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 2
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
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
    if stopped:
        print("%s: interrupted by %s; results are partial"
              % (PROG, signal.Signals(stopped).name), file=sys.stderr)
        return 128 + stopped
    return 0


if __name__ == "__main__":
    sys.exit(main())
