"""Scheduled gradient communication inside DDP: a comm hook that cuts DDP's buckets into
partitions and issues their allreduces in a priority plan every rank derives identically (the
within-backward part of ScheduledDataParallel, for users who keep DistributedDataParallel).

    import glucx.torch
    ddp = DistributedDataParallel(module)
    state = glucx.torch.priority_comm_hook(ddp, partition_bytes=1 << 20)
    # train as usual: optimizer.zero_grad(); loss.backward(); optimizer.step()

What it does (P3, Jayarajan et al., MLSys'19: slice gradients, send by layer priority; written
for glucx from the paper):
  * each bucket DDP hands over is divided by the world size (DDP's average) and cut into
    partitions of at most `partition_bytes` (contiguous slices of the bucket's buffer);
  * a partition's priority is its distance from the end of the backward pass: the last
    partition of the last bucket holds the first layers, which the next forward needs first;
  * iterations 0 and 1 issue the partitions in backward order (DDP rebuilds its buckets after
    iteration 0, so iteration 1 is the first with the final layout); iteration 1 is profiled
    (when each partition was ready, how long its allreduce took); at the first bucket of
    iteration 2 every rank contributes its profile to an allreduce (MAX), so all hold the same
    numbers, and from then on the partitions are issued strictly in the order of `plan_order`
    (a simulation of one link that sends the ready partition of highest priority first):
    local readiness may delay a partition, never reorder it, so every rank issues the same
    collectives in the same order;
  * each bucket's future completes when all its partitions' allreduces have.

What it cannot do (PyTorch 1.13's Reducer waits for every bucket's future at the end of
backward): overlap communication with the next forward; for that, use ScheduledDataParallel.
The gain is the reordering inside backward: partitions the next forward needs first are not
queued behind the rest.

Errors (RuntimeError): a bucket layout different from the profiled one once the plan is in use
(DDP rebuilt its buckets again: construct the state anew), raised from backward on every rank
(DDP gives every rank the same layout); a failed allreduce raises from backward with the
backend's message. ValueError: partition_bytes < 1.

Thread-safety: the hook runs on autograd's thread; completion callbacks on the process group's
thread only record times and complete futures.
"""

import time

import torch
import torch.distributed as dist

from .scheduled import plan_order

__all__ = ["PriorityHookState", "priority_hook", "priority_comm_hook"]


class PriorityHookState:
    """State of priority_hook for one DDP model (see the module's doc).

    Args:
      process_group (ProcessGroup or None): the DDP model's group (None: the default group).
      partition_bytes (int >= 1): the largest partition in bytes (default 1 MiB).

    Attributes: `plan` (partition indices in issue order, over the whole backward: bucket 0's
    partitions first), `planned` (True once the plan came from the profile), `layout` (per
    bucket: (index, elements, dtype) of the profiled iteration), `iterations` (backward passes
    seen).
    """

    def __init__(self, process_group=None, partition_bytes=1 << 20):
        if not isinstance(partition_bytes, int) or isinstance(partition_bytes, bool) or \
                partition_bytes < 1:
            raise ValueError(f"PriorityHookState: partition_bytes must be an int >= 1, got "
                             f"{partition_bytes!r}")
        self.process_group = process_group
        self.partition_bytes = partition_bytes
        self.world_size = dist.get_world_size(process_group)
        self.plan = None
        self.planned = False
        self.layout = None
        self.iterations = 0
        self._t0 = 0.0
        self._parts = []      # this iteration's partitions, in backward order
        self._buckets = []    # this iteration's (index, elements, dtype)
        self._pos = 0         # next plan position (or partition, before the plan) to issue

    def _where(self):
        return f"rank {dist.get_rank(self.process_group)} of {self.world_size}"

    # ---- one bucket ----------------------------------------------------------------------

    def on_bucket(self, bucket):
        if bucket.index() == 0:
            self._begin_iteration()
        buf = bucket.buffer()
        buf.div_(self.world_size)
        self._buckets.append((bucket.index(), buf.numel(), buf.dtype))
        k = len(self._buckets) - 1
        if self.planned and (k >= len(self.layout) or self._buckets[k] != self.layout[k]):
            was = self.layout[k] if k < len(self.layout) else "no bucket"
            raise RuntimeError(
                f"priority_hook: DDP's bucket {bucket.index()} ({buf.numel()} elements of "
                f"{buf.dtype}) differs from the profiled layout ({was}): the buckets were "
                f"rebuilt after the plan was made; construct a new PriorityHookState "
                f"({self._where()})")
        step = max(1, self.partition_bytes // max(1, buf.element_size()))
        now = time.monotonic() - self._t0
        futs = []
        for off in range(0, max(1, buf.numel()), step):
            part = {"view": buf[off:off + step], "future": torch.futures.Future(),
                    "ready": now, "issue": None, "done": None}
            self._parts.append(part)
            futs.append(part["future"])
        self._issue_ready()
        return torch.futures.collect_all(futs).then(lambda fut: self._bucket_result(fut, buf))

    @staticmethod
    def _bucket_result(fut, buf):
        for f in fut.value():
            f.value()   # raises the allreduce's failure
        return buf

    def _begin_iteration(self):
        if self.iterations == 2:   # iteration 1 (the first after DDP's rebuild) was profiled
            self._make_plan(self._parts, self._buckets)
        self.iterations += 1
        self._parts, self._buckets, self._pos = [], [], 0
        self._t0 = time.monotonic()

    def _issue_ready(self):
        if not self.planned:   # backward order: everything that arrived, at once
            while self._pos < len(self._parts):
                self._issue(self._parts[self._pos])
                self._pos += 1
            return
        while self._pos < len(self.plan) and self.plan[self._pos] < len(self._parts):
            self._issue(self._parts[self.plan[self._pos]])
            self._pos += 1

    def _issue(self, part):
        part["issue"] = time.monotonic() - self._t0
        work = dist.all_reduce(part["view"], group=self.process_group, async_op=True)

        def done(fut, part=part, t0=self._t0):
            part["done"] = time.monotonic() - t0
            try:
                fut.value()
            except Exception as e:  # noqa: BLE001 - handed to the bucket's future
                part["future"].set_exception(e)
                return
            part["future"].set_result(None)

        work.get_future().then(done)

    # ---- the plan --------------------------------------------------------------------------

    def _make_plan(self, parts, buckets):
        """At the first bucket of iteration 2: iteration 1's profile (its partitions and
        buckets), MAX over the ranks, gives the plan (blocking: one small allreduce, once)."""
        n = len(parts)
        prev, dur = 0.0, []
        for p in parts:   # issued in backward order, one after another on the group
            start = max(p["issue"], prev)
            end = p["done"] if p["done"] is not None else start
            dur.append(max(0.0, end - start))
            prev = max(prev, end)
        vec = torch.tensor([p["ready"] for p in parts] + dur, dtype=torch.float64)
        try:
            dist.all_reduce(vec, op=dist.ReduceOp.MAX, group=self.process_group)
        except RuntimeError as e:
            raise RuntimeError(f"priority_hook: allreduce of the profile ({2 * n} values) "
                               f"failed ({self._where()}): {e}") from e
        v = vec.tolist()
        # priority: the last partition of the backward holds the first layers: 0
        self.plan = plan_order(v[:n], v[n:], [n - 1 - k for k in range(n)])
        self.layout = list(buckets)
        self.planned = True


def priority_hook(state, bucket):
    """DDP comm hook (register with `ddp.register_comm_hook(state, priority_hook)`): bucket
    `bucket` (torch.distributed.GradBucket) averaged over the ranks by partition allreduces in
    `state`'s (PriorityHookState) plan. Returns a torch.futures.Future of the bucket's buffer.
    Raises RuntimeError as the module's doc says."""
    return state.on_bucket(bucket)


def priority_comm_hook(ddp_model, partition_bytes=1 << 20):
    """Register priority_hook on `ddp_model` (a DistributedDataParallel) with a new
    PriorityHookState on its process group; returns the state. Raises RuntimeError when the
    model has a comm hook already (DDP takes one), ValueError for partition_bytes < 1."""
    state = PriorityHookState(ddp_model.process_group, partition_bytes)
    ddp_model.register_comm_hook(state, priority_hook)
    return state
