#!/usr/bin/env python3
"""Train a small CNN or a ResNet-18 (--model) on scikit-learn's handwritten digits with
DistributedDataParallel (or glucx's scheduled or sharded data parallelism, --mode).

The example job of glucx (`make demo` runs it with the CNN, `make demo-cluster` with the ResNet-18
on the emulated torus): any of the three communication paths, unchanged.

    # the glucx backend (glucx's own collective algorithms)
    .venv/bin/torchrun --nproc-per-node 4 examples/train_digits.py --backend glucx
    # PyTorch's Gloo backend on Gloo's TCP transport
    .venv/bin/torchrun --nproc-per-node 4 examples/train_digits.py --backend gloo
    # PyTorch's Gloo backend on glucx's UCX transport (no code change)
    GLOO_DEVICE_TRANSPORT=UCX .venv/bin/torchrun --nproc-per-node 4 examples/train_digits.py \\
        --backend gloo
    # the same training with glucx's data-parallel wrappers instead of DDP (either backend)
    .venv/bin/torchrun --nproc-per-node 4 examples/train_digits.py --mode scheduled
    .venv/bin/torchrun --nproc-per-node 4 examples/train_digits.py --mode sharded
    # a ResNet-18 (11.2 M parameters, BatchNorm) instead of the small CNN, in any mode
    .venv/bin/torchrun --nproc-per-node 8 examples/train_digits.py --model resnet18 --batch-size 8
    # traced, then explained
    build/trace/glucx-trace record -o out/trace -- .venv/bin/torchrun --nproc-per-node 4 \\
        examples/train_digits.py
    build/analysis/glucx-analyze out/trace -o out/report

Data: sklearn.datasets.load_digits (1797 8x8 grey images of the digits 0-9, shipped with
Debian's python3-sklearn), pixel values scaled to [0, 1], split 75/25 with a fixed seed and
stratified by class. Each rank trains on its DistributedSampler shard; the test set is split
across ranks and the correct counts are summed with an all_reduce.

Models (--model):
  cnn       (default) DigitsCNN: two 3x3 convolutions, a max-pool, two linear layers (38 K
            parameters, 150 KiB) on the 8x8 images; Adam, lr 0.01.
  resnet18  torchvision's resnet18(num_classes=10) with a 1-channel first convolution (random
            weights, no download): 11.2 M parameters (43 MiB) and 20 BatchNorm layers, whose
            buffers every mode keeps equal to rank 0's (DDP and both glucx wrappers broadcast
            them at each forward). The images are upsampled once to 32x32 (bilinear); the
            ImageNet stem (7x7 stride-2 convolution, 3x3 stride-2 max-pool) brings them back
            to 8x8 before layer1, which keeps a step on CPU cheap (about 0.22 s forward,
            backward and step at batch 8 on one core); Adam, lr 0.001; each rank's short last
            batch of an epoch is dropped. In scheduled mode the gradients go in the wrapper's
            default 4 MiB partitions (the CNN's: 64 KiB).

Without torchrun (no RANK in the environment) the script runs as a single rank.
Prints a progress bar (rank 0, on a terminal), the loss per epoch and the test accuracy;
`--json FILE` writes the final numbers for scripts and tests; `--min-accuracy A` makes the exit
status 1 when the accuracy ends below A.
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", choices=["glucx", "gloo"], default="glucx",
                   help="torch.distributed backend (default glucx); with gloo, "
                        "GLOO_DEVICE_TRANSPORT=UCX selects glucx's transport")
    p.add_argument("--mode", choices=["ddp", "scheduled", "sharded"], default="ddp",
                   help="ddp: DistributedDataParallel (default); scheduled: "
                        "glucx.torch.ScheduledDataParallel (gradient partitions in a priority "
                        "plan, each stepped when synchronised, overlapping the next forward); "
                        "sharded: glucx.torch.ShardedDataParallel (ZeRO-3 style shards)")
    p.add_argument("--model", choices=list(MODELS), default="cnn",
                   help="cnn: the small CNN on 8x8 images (default); resnet18: torchvision's "
                        "ResNet-18 on the images upsampled to 32x32 (see the module's help)")
    p.add_argument("--epochs", type=int, default=6, help="passes over the training set")
    p.add_argument("--batch-size", type=int, default=16, help="samples per rank and step")
    p.add_argument("--lr", type=float, default=None,
                   help="Adam learning rate (default: 0.01 for cnn, 0.001 for resnet18)")
    p.add_argument("--max-steps", type=int, default=0,
                   help="stop after this many steps in all (0: no limit); for quick runs")
    p.add_argument("--workers", type=int, default=0, help="DataLoader worker processes")
    p.add_argument("--seed", type=int, default=0, help="seed of the split and the model")
    p.add_argument("--no-instrument", action="store_true",
                   help="do not add glucx's DDP trace hooks (glucx.torch.instrument)")
    p.add_argument("--json", metavar="FILE", help="write the final loss and accuracy (rank 0)")
    p.add_argument("--min-accuracy", type=float, default=0.0,
                   help="exit with status 1 if the test accuracy ends below this (0-1)")
    return p.parse_args()


class DigitsCNN(nn.Module):
    """Two 3x3 convolutions (16 and 32 channels), one 2x2 max-pool, two linear layers."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return self.fc2(x)


def resnet18_digits():
    """torchvision's ResNet-18 for 10 classes whose first convolution takes 1 channel (grey
    32x32 images); everything else as torchvision builds it."""
    import torchvision

    model = torchvision.models.resnet18(num_classes=10)
    model.conv1 = nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3, bias=False)
    return model


# --model: (constructor, input side in pixels, default Adam learning rate, scheduled mode's
# partition_bytes; None: the wrapper's default, 4 MiB)
MODELS = {
    "cnn": (DigitsCNN, 8, 0.01, 64 << 10),   # the CNN's 150 KiB of parameters: 3 partitions
    "resnet18": (resnet18_digits, 32, 0.001, None),
}


def load_data(seed, side=8):
    """(train, test) TensorDatasets of (N, 1, side, side) float images and int64 labels: the 8x8
    images, upsampled (bilinear) once here when side is larger."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    if side != x.shape[-1]:
        x = F.interpolate(x, size=(side, side), mode="bilinear", align_corners=False)
    y = torch.tensor(digits.target, dtype=torch.int64)
    idx_train, idx_test = train_test_split(list(range(len(y))), test_size=0.25,
                                           random_state=seed, stratify=digits.target)
    return (TensorDataset(x[idx_train], y[idx_train]), TensorDataset(x[idx_test], y[idx_test]))


class Progress:
    """A progress bar on rank 0's terminal (tqdm when installed); silent elsewhere."""

    def __init__(self, total, enabled):
        self.bar = None
        self.total, self.done, self.enabled = total, 0, enabled and sys.stderr.isatty()
        if self.enabled:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, unit="step", file=sys.stderr, leave=False)
            except ImportError:
                pass

    def update(self, loss):
        self.done += 1
        if self.bar is not None:
            self.bar.set_postfix(loss="%.3f" % loss, refresh=False)
            self.bar.update(1)
        elif self.enabled:
            width = 30
            filled = width * self.done // max(self.total, 1)
            sys.stderr.write("\r[%s%s] %d/%d loss %.3f" % ("#" * filled, "." * (width - filled),
                                                         self.done, self.total, loss))
            sys.stderr.flush()

    def close(self):
        if self.bar is not None:
            self.bar.close()
        elif self.enabled:
            sys.stderr.write("\r" + " " * 70 + "\r")
            sys.stderr.flush()


def evaluate(model, test, rank, world):
    """Test accuracy over the whole test set: each rank scores test[rank::world], all_reduce
    sums the counts."""
    if hasattr(model, "synchronize"):   # scheduled: apply the partitions still in flight
        model.synchronize()
    model.eval()
    x, y = test.tensors
    with torch.no_grad():
        pred = model(x[rank::world]).argmax(dim=1)
    counts = torch.tensor([(pred == y[rank::world]).sum().item(), len(pred)], dtype=torch.int64)
    dist.all_reduce(counts)
    model.train()
    return counts[0].item() / counts[1].item()


def main():
    args = parse_args()
    if "RANK" not in os.environ:  # plain `python train_digits.py`: one rank
        os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                          MASTER_PORT=os.environ.get("MASTER_PORT", "29533"))
    torch.set_num_threads(1)  # one core per rank: ranks usually outnumber cores here
    if args.backend == "glucx":
        import glucx  # noqa: F401 -- registers the backend (the start-up hook does it too)
    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    transport = os.environ.get("GLOO_DEVICE_TRANSPORT", "TCP") if args.backend == "gloo" else "-"

    build, side, default_lr, partition_bytes = MODELS[args.model]
    lr = default_lr if args.lr is None else args.lr
    torch.manual_seed(args.seed)
    train, test = load_data(args.seed, side)
    sampler = DistributedSampler(train, num_replicas=world, rank=rank, shuffle=True,
                                 seed=args.seed)
    # resnet18: no short last batch (BatchNorm after layer4 sees 1x1 maps: one image is one
    # value per channel, which BatchNorm refuses in training)
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler,
                        num_workers=args.workers, persistent_workers=args.workers > 0,
                        drop_last=args.model == "resnet18")
    opt = None   # scheduled: one optimizer per partition, stepped by the wrapper
    if args.mode == "ddp":
        model = DDP(build())
        opt = torch.optim.Adam(model.parameters(), lr=lr)
    elif args.mode == "scheduled":
        import glucx.torch

        kw = {} if partition_bytes is None else {"partition_bytes": partition_bytes}
        model = glucx.torch.ScheduledDataParallel(
            build(), lambda params: torch.optim.Adam(params, lr=lr), **kw)
    else:
        import glucx.torch

        model = glucx.torch.ShardedDataParallel(build(), prefetch=1)
        opt = torch.optim.Adam(model.parameters(), lr=lr)
    handle = None
    if not args.no_instrument and args.mode == "ddp":
        try:
            import glucx.torch

            handle = glucx.torch.instrument(model, opt)
        except ImportError as e:  # plain PyTorch without glucx: train untraced
            if rank == 0:
                print("train_digits: no glucx.torch (%s); DDP hooks not added" % e)

    steps_per_epoch = len(loader)
    total = steps_per_epoch * args.epochs
    if args.max_steps > 0:
        total = min(total, args.max_steps)
    if rank == 0:
        print("train_digits: %d ranks, %s, %s, backend %s%s, %d training / %d test images, "
              "%d steps" % (world, args.model, args.mode, args.backend,
                 "" if transport == "-" else " (transport %s)" % transport,
                 len(train), len(test), total), flush=True)
    bar = Progress(total, rank == 0)
    step, loss_first, loss_last, t0 = 0, None, None, time.monotonic()
    for epoch in range(args.epochs):
        if step >= total:
            break
        sampler.set_epoch(epoch)
        running, batches = 0.0, 0
        for x, y in loader:
            if step >= total:
                break
            if opt is not None:
                opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            if opt is not None:
                opt.step()
            running += loss.item()
            batches += 1
            step += 1
            bar.update(loss.item())
        epoch_loss = torch.tensor([running, batches], dtype=torch.float64)
        dist.all_reduce(epoch_loss)  # mean over every rank's batches
        mean = epoch_loss[0].item() / max(epoch_loss[1].item(), 1)
        loss_first = mean if loss_first is None else loss_first
        loss_last = mean
        acc = evaluate(model, test, rank, world)
        if rank == 0:
            bar.close()
            print("epoch %d: loss %.4f  test accuracy %.2f%%" % (epoch + 1, mean, 100 * acc),
                  flush=True)
            bar = Progress(total - step, rank == 0)
    bar.close()
    elapsed = time.monotonic() - t0
    acc = evaluate(model, test, rank, world)
    if handle is not None:
        handle.remove()
    if rank == 0:
        print("final test accuracy %.2f%% after %d steps in %.1f s (%.1f ms/step)"
              % (100 * acc, step, elapsed, 1000 * elapsed / max(step, 1)), flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"accuracy": acc, "loss_first_epoch": loss_first,
                           "loss_last_epoch": loss_last, "steps": step, "ranks": world,
                           "backend": args.backend, "transport": transport, "mode": args.mode,
                           "model": args.model, "seconds": elapsed}, f, indent=1)
    dist.destroy_process_group()
    if acc < args.min_accuracy:
        if rank == 0:
            print("train_digits: accuracy %.4f is below --min-accuracy %.4f"
                  % (acc, args.min_accuracy), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
