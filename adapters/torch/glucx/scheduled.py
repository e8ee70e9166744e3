"""Scheduled data parallelism: gradient partitions synchronised in a priority order that every
rank derives identically, each partition's optimizer update applied as soon as its allreduce
completes, and the next forward started as soon as its modules' parameters are updated.

    import glucx.torch
    model = glucx.torch.ScheduledDataParallel(
        module, lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9))
    for x, y in data:
        loss_fn(model(x), y).backward()   # no optimizer.step() or zero_grad(): the wrapper does it
    model.synchronize()                   # before evaluating, saving or leaving

Sources: P3 (Jayarajan et al., "Priority-based Parameter Propagation for Distributed DNN
Training", MLSys'19: slice gradients, send by layer priority, let the next forward start before
the last gradients are synchronised) and ByteScheduler (Peng et al., "A Generic Communication
Scheduler for Distributed DNN Training Acceleration", SOSP'19). Written for glucx from those
papers; no code from either, nor from PyTorch's DDP.

Partitions
----------
The parameters that require gradients are taken in reverse registration order (the order
backward produces their gradients in a feed-forward model, as DDP's buckets) and packed into
partitions of at most `partition_bytes` (a parameter larger than that is a partition of its
own; partition_bytes="auto" chooses the grouping from a profiled iteration, below). Each
partition has its own optimizer, built by `optimizer(params)`: per-parameter
optimizers (SGD with momentum, Adam, ...) then update exactly as one optimizer over every
parameter would. A partition's priority is the position, in the forward, of the first module
that uses one of its parameters (the next forward needs it first).

partition_bytes="auto" (the partition sizes from a cost model): iteration 0 has one partition
(and one optimizer) per parameter; its profile (below) gives each parameter's ready time and
allreduce duration, to which an alpha-beta model (time = alpha + beta x bytes, least squares)
is fitted. At backward 1, `choose_partitions` costs candidate groupings (uniform caps from
256 KiB to 32 MiB, sizes growing from 256 KiB .. 2 MiB from the first layer, one partition)
by the communication each leaves unhidden in the plan's simulation and takes the cheapest
(within 1 us: the fewest partitions); every rank computes the same from the same numbers. The
model is this machine's as measured in this job, so it includes what a per-collective
constant costs here (e.g. 8 ranks sharing 2 cores) on the link; it does not see the CPU time
each collective takes from the ranks' compute when they share cores, and on the emulated torus
(8 ranks, 2 cores) "auto" measured slower than the fixed 4 MiB default (docs/perf.md, "Exposed
communication and the auto partitioning").

One order on every rank
-----------------------
Collectives on a process group must be issued in the same order on every rank. Local readiness
(when autograd delivers a gradient) may delay a partition's allreduce, never reorder it: the
allreduces are issued strictly in the order of the plan; a partition ready early waits for the
ones before it. Iteration 0 is the profiled one: it uses the partition order (backward order),
records when each partition's gradients were ready (from the start of the backward pass), and
at its end waits for the allreduces one by one to time each (so iteration 0 does not overlap
the next forward); every rank then contributes these and the modules' forward order to an
allreduce (MAX), so every rank holds the same numbers, and at the start of backward 1 every rank
computes the same plan from them (`plan_order`): a simulation of one non-preemptive link that,
whenever it is free, sends the ready partition of highest priority (P3's rule). From backward 1
on the plan is the issue order. Results do not depend on the plan.

Cross-iteration overlap
-----------------------
A partition's allreduce (of its gradients divided by the world size: DDP's average) runs
asynchronously; once it completed, the training thread writes the averaged gradients, runs the
partition's optimizer step and drops the gradients (set to None): at the end of each backward
pass and before each module's forward for every partition already complete, and, waiting for
it, for the partitions of the module about to run. So a module's next forward starts as soon as
its own parameters are updated while later partitions still communicate. (Not a continuation on
the process group's thread: a Python continuation needs the GIL, which the training thread holds
in the forward for up to the interpreter's switch interval, and the group's next collective
waited for it: 1 MiB partitions ran 25% slower than one bucket on the torus.)
Buffers (BatchNorm statistics) are broadcast from rank 0 after every forward with autograd
enabled (a copy, asynchronous) and written into the buffers before their module's next forward:
the values DDP broadcasts at the start of the next forward.

Errors (RuntimeError unless said otherwise; messages name the operation, the sizes and the rank):
  * construction: `optimizer` not callable or not returning a torch.optim.Optimizer (TypeError);
    `partition_bytes` < 1 (ValueError); a non-CPU or sparse parameter; no parameter requiring
    gradients; the model differing across ranks (raised on every rank); no process group.
  * no_sync(): gradient accumulation is not supported (raises at once): each backward pass
    synchronises and steps.
  * a second backward pass through the same forward (gradient accumulation, or retain_graph
    reuse) raises from backward; so does a backward in which a parameter received no gradient
    (unused parameters: DDP's find_unused_parameters=False), naming the parameters.
  * a failed allreduce or broadcast raises from the next forward, backward or synchronize() with
    the backend's message.
  * with overlap_forward=True (default) a parameter must be read in the forward only by a module
    that owns it (its pre-hook applies the update first): a parameter read elsewhere while its
    update is pending (F.linear(x, self.fc.weight) without calling self.fc) raises from the
    backward, naming it; a read elsewhere before an owner of the same partition ran in the same
    forward is not detected. overlap_forward=False has no such restriction.
Not supported, and not detectable: reading or changing `.grad` after backward (gradient
clipping, inspection): the gradients live in the partitions' buffers and are gone after each
partition's step; learning-rate schedulers must be applied to every partition's optimizer
(`optimizers`). An update applied after the backward (in the next forward) uses its optimizer's
settings as they were at the end of that backward, so a scheduler stepped between backward and
the next forward takes effect from the next iteration on, as with DDP and `opt.step()` before
`scheduler.step()`.

Trace events
------------
On a `glucx` process group, while a glucx-trace session records (checked at each forward with
autograd), the wrapper emits the framework events the analysis attributes time with
(trace/EVENTS.md): iteration_begin/end (an iteration runs from one forward with autograd to the
next, or to synchronize()), compute "forward" (closed while a pre-hook waits for its
partitions' allreduce: that wait is exposed communication), "backward" (from the output's first
gradient to the end of the pass) and "optimizer" (id: the partition) around each update; and,
for every allreduce the plan issues, a sched_decision of kind order (2) right before it: the
partition chosen, the partitions available at that point of the plan's simulation (at most 8,
highest priority first) and each one's predicted cost, `predict_exposed()` of the plan with that
option taken there: the next forward's predicted wait for communication, from iteration 0's
profile (ready times, allreduce durations, each module's forward time, the backward's length).
The decisions are computed once, at the plan, if a session records then. With
partition_bytes="auto" the partitioning is a sched_decision of kind partition (3), attached
to backward 1's first allreduce: the candidates (uniform cap c KiB: id c; growing from s KiB:
-s; one partition: 0) and their predicted unhidden communication, cheapest first.

state_dict() and load_state_dict() synchronize first. The structure check at construction
compares the parameters' and buffers' names, shapes and dtypes across ranks; the group's rank 0
(whatever its global rank) is the source of the broadcasts.

Thread-safety: one instance is driven by one thread (forward and backward in sequence; the
hooks run on it and on autograd's).
"""

import time

import torch
import torch.distributed as dist
import torch.nn as nn

from . import _C
from .sharded import _tensors, check_structure_across_ranks, group_root

#: sched_decision kind of the order decisions (trace/EVENTS.md, "kind").
ORDER = 2
#: sched_decision kind of the partitioning decision of partition_bytes="auto".
PARTITION = 3

__all__ = ["ScheduledDataParallel", "plan_order", "predict_exposed", "order_decisions",
           "choose_partitions", "coll_priority"]


class coll_priority:
    """Context manager: the collectives the calling thread starts on `glucx` process groups
    inside it are scheduled by libglucx with `priority` (glucx_coll_start's
    GLUCX_COLL_OPT_PRIORITY, plugin/include/glucx/glucx.h): an allreduce, broadcast or reduce is
    cut into chunks of `chunk_bytes` and before each chunk the ranks agree which started
    collective goes next, the highest priority first (ties: start order), so a collective started
    later with a higher priority overtakes one still running at its next chunk boundary (P3,
    MLSys'19; ByteScheduler, SOSP'19). Every rank must start the same collectives with the same
    priorities and chunk sizes (different priorities fail every rank's collective with a
    mismatch error). Other backends ignore it.

    Args:
      priority (int, 32-bit): higher goes first; None: collectives run in start order.
      chunk_bytes (int >= 0): bytes per chunk; 0: libglucx's default (1 MiB).
    Raises ValueError for a priority outside 32 bits or chunk_bytes < 0. Per thread; nests
    (the previous setting is restored on exit).
    """

    def __init__(self, priority, chunk_bytes=0):
        if priority is not None and (not isinstance(priority, int) or isinstance(priority, bool)):
            raise ValueError(f"coll_priority: priority must be an int or None, got {priority!r}")
        if not isinstance(chunk_bytes, int) or isinstance(chunk_bytes, bool) or chunk_bytes < 0:
            raise ValueError(f"coll_priority: chunk_bytes must be an int >= 0, got "
                             f"{chunk_bytes!r}")
        if priority is not None and not -(1 << 31) <= priority < (1 << 31):
            raise ValueError(f"coll_priority: priority {priority} outside the 32-bit range")
        self.priority, self.chunk_bytes, self._saved = priority, chunk_bytes, []

    def __enter__(self):
        self._saved.append(_C._get_coll_priority())
        _C._set_coll_priority(self.priority, self.chunk_bytes)
        return self

    def __exit__(self, *exc):
        prev = self._saved.pop()
        if prev is None:
            _C._set_coll_priority(None)
        else:
            _C._set_coll_priority(prev[0], prev[1])
        return False


def plan_order(ready, duration, priority):
    """The issue order of partitions on one link that is never preempted and, whenever it is
    free, sends the ready partition with the lowest `priority` value (ties: lowest index).

    Args: ready[k] (seconds from the start of backward when partition k's gradients are ready),
    duration[k] (seconds its allreduce takes), priority[k] (smaller first); equal lengths, finite
    numbers. Returns a list of every index once. Pure and deterministic: equal inputs give equal
    plans on every rank. Raises ValueError on lists of different lengths.
    """
    n = len(ready)
    if len(duration) != n or len(priority) != n:
        raise ValueError(f"plan_order: {n} ready times, {len(duration)} durations and "
                         f"{len(priority)} priorities")
    return _p3_order([], ready, duration, priority)[0]


def _p3_order(prefix, ready, duration, priority):
    """plan_order's link after the partitions in `prefix` were sent in that order: (the whole
    order, the partitions available at each position from len(prefix) on)."""
    order, t = list(prefix), 0.0
    for k in prefix:
        t = max(t, ready[k]) + max(0.0, duration[k])
    left, avails = set(range(len(ready))) - set(prefix), []
    while left:
        avail = [k for k in left if ready[k] <= t]
        if not avail:
            t = min(ready[k] for k in left)
            continue
        k = min(avail, key=lambda i: (priority[i], i))
        avails.append(sorted(avail, key=lambda i: (priority[i], i)))
        order.append(k)
        left.remove(k)
        t = max(t, ready[k]) + max(0.0, duration[k])
    return order, avails


def predict_exposed(order, ready, duration, priority, forward, backward):
    """The exposed communication (seconds) of the next forward when the partitions' allreduces
    run in `order` on one link: the model behind the order decisions' costs.

    The link sends one partition at a time, each as soon as it is ready and the link is free
    (ready[k], duration[k] in seconds from the start of backward, as plan_order); the backward
    ends at `backward` (seconds), then the forward runs its modules in order, module j taking
    forward[j] seconds and starting only when every partition of priority j (the partitions
    module j is the first to use) has completed. Returns the forward's end minus
    (backward + sum(forward)): the time the next forward waits for communication. Partitions
    whose priority is not a module position (never used in the forward) do not delay it.
    Pure; the same inputs give the same number on every rank.
    """
    return _simulate(order, ready, duration, priority, forward, backward)[0]


def _simulate(order, ready, duration, priority, forward, backward):
    """predict_exposed's link and forward: (exposed, the link's last completion) in seconds."""
    t, need = 0.0, {}
    for k in order:
        t = max(t, ready[k]) + max(0.0, duration[k])
        j = int(priority[k])
        need[j] = max(need.get(j, 0.0), t)
    f = backward
    for j, dt in enumerate(forward):
        f = max(f, need.get(j, 0.0)) + max(0.0, dt)
    return max(0.0, f - backward - sum(max(0.0, dt) for dt in forward)), t


#: Candidate partitionings of partition_bytes="auto": caps in KiB. Uniform: every partition at
#: most the cap; growing: packed from the parameters the forward uses first, the k-th partition
#: at most cap x 2^k (the first partition small, so the next forward can start early).
AUTO_UNIFORM_KIB = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
AUTO_GROWING_KIB = (256, 512, 1024, 2048)


def choose_partitions(nbytes, ready, duration, priority, forward, backward):
    """The partitioning of partition_bytes="auto": parameters (in backward order: nbytes[i],
    ready[i] and duration[i] in seconds as profiled with one partition per parameter,
    priority[i] as plan_order's) grouped into contiguous partitions.

    The cost model is alpha-beta (Hockney), fitted here by least squares to the profiled
    (bytes, duration) pairs: a partition of b bytes takes alpha + beta x b (parameters all of
    one size, or a fit with beta <= 0: alpha 0 and beta = total duration / total bytes). Each
    candidate (AUTO_UNIFORM_KIB, AUTO_GROWING_KIB, and one partition of everything) is costed as the
    communication it leaves unhidden: with plan_order's plan, max(the next forward's end, the
    link's last completion) - (backward + sum(forward)), per _simulate; the cheapest wins, and
    among costs within 1 us of each other the one with fewer partitions. Returns (groups, option
    ids, costs in ns, chosen option id): groups is a list of lists of parameter indices, in
    backward order; option ids encode the candidates (uniform cap c KiB: c; growing from s KiB:
    -s; one partition: 0); the last item is the fitted (alpha s, beta s per byte). Pure and
    deterministic (equal inputs, equal result on every rank).
    """
    n = len(nbytes)
    mb = sum(nbytes) / n
    md = sum(duration) / n
    var = sum((b - mb) ** 2 for b in nbytes)
    beta = sum((b - mb) * (d - md) for b, d in zip(nbytes, duration)) / var if var > 0 else 0.0
    if beta <= 0:
        beta = sum(duration) / max(1, sum(nbytes))
        alpha = 0.0
    else:
        alpha = max(0.0, md - beta * mb)

    def pack(cap_of):
        groups, cur, size = [], [], 0
        for i in reversed(range(n)):   # forward order: the first layers first
            cap = cap_of(len(groups))
            if cur and size + nbytes[i] > cap:
                groups.append(cur)
                cur, size = [], 0
            cur.append(i)
            size += nbytes[i]
        if cur:
            groups.append(cur)
        return [sorted(g) for g in reversed(groups)]   # backward order

    cands = [(c, pack(lambda k, c=c: c << 10)) for c in AUTO_UNIFORM_KIB]
    cands += [(-c, pack(lambda k, c=c: (c << 10) << min(k, 30))) for c in AUTO_GROWING_KIB]
    cands.append((0, [list(range(n))]))
    ids, costs = [], []
    total = backward + sum(max(0.0, f) for f in forward)
    for cid, groups in cands:
        r = [max(ready[i] for i in g) for g in groups]
        d = [alpha + beta * sum(nbytes[i] for i in g) for g in groups]
        pr = [min(priority[i] for i in g) for g in groups]
        exposed, link_end = _simulate(plan_order(r, d, pr), r, d, pr, forward, backward)
        cost = max(total + exposed, link_end) - total
        ids.append(cid)
        costs.append(int(round(1e9 * max(0.0, cost))))
    low = min(costs)   # within 1 us of the cheapest: the fewest partitions (then the first)
    k = min((i for i in range(len(cands)) if costs[i] <= low + 1000),
            key=lambda i: (len(cands[i][1]), i))
    return cands[k][1], ids, costs, ids[k], (alpha, beta)


def order_decisions(ready, duration, priority, forward, backward, max_options=8):
    """The order decisions of plan_order's plan, each with its alternatives and their
    predicted costs: for plan position i, (chosen partition, options, costs in ns). The options
    are the partitions available (ready, per the simulated link) at that position, the
    `max_options` of highest priority, the chosen one first; an option's cost is
    predict_exposed() of the plan with that option taken at position i and plan_order's rule
    after it. Pure and deterministic (every rank derives the same decisions)."""
    plan, avails = _p3_order([], ready, duration, priority)
    out = []
    for i, k in enumerate(plan):
        opts = avails[i][:max_options]
        costs = []
        for a in opts:
            alt = _p3_order(plan[:i] + [a], ready, duration, priority)[0]
            costs.append(int(round(1e9 * predict_exposed(alt, ready, duration, priority,
                                                         forward, backward))))
        out.append((k, opts, costs))
    return out


def _hyperparameters(opt):
    """The settings of each of opt's parameter groups (everything but the parameters)."""
    return [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]


def _step_with(opt, hparams):
    """opt.step() with its groups' settings set to hparams (None: as they are) for the step
    only; the settings in place before are restored afterwards."""
    if hparams is None:
        opt.step()
        return
    now = _hyperparameters(opt)
    for g, h in zip(opt.param_groups, hparams):
        g.update(h)
    try:
        opt.step()
    finally:
        for g, h in zip(opt.param_groups, now):
            g.update(h)


class _Partition:
    def __init__(self, index, params, names):
        self.index, self.params, self.names = index, params, names
        self.numel = sum(p.numel() for p in params)
        self.dtype = params[0].dtype
        self.priority = None       # forward position of the first module using it
        self.optimizers = []       # stepped when its allreduce completes
        self.hparams = None        # their settings at the end of the backward that issued it
        self.seen = 0              # gradients delivered in this backward
        self.work = None           # the issued allreduce, not yet applied
        self.flat = None           # its buffer
        self.t_ready = 0.0
        self.t_issue = 0.0
        self.t_done = 0.0

    @property
    def ready(self):
        """Every gradient of this backward pass is in."""
        return self.seen == len(self.params)


class ScheduledDataParallel(nn.Module):
    """Wrap `module` for data-parallel training with scheduled gradient synchronisation (see the
    module's doc).

    Args:
      module (nn.Module): the model, dense CPU parameters, the same structure on every rank.
      optimizer (callable): `optimizer(list of parameters)` returns a torch.optim.Optimizer; it is
        called once per partition.
      process_group (ProcessGroup or None): default: the default group.
      partition_bytes (int >= 1, or "auto"): the largest partition in bytes (default 4 MiB: on
        the emulated torus, 8 ranks on 2 cores, each collective cost about 9 ms more than its
        bytes; docs/perf.md, "Scheduled data parallelism"). "auto": iteration 0 runs one
        partition per parameter (one allreduce each, profiled), and at backward 1 the
        parameters are grouped as `choose_partitions` predicts best from that profile (an
        alpha-beta fit of the measured allreduces; see "Partitions"); `optimizers` then holds
        one optimizer per parameter.
      broadcast_buffers (bool): broadcast the buffers from rank 0 after every forward with
        autograd enabled (DDP's default, True).
      overlap_forward (bool): let the next forward start before every update is applied (each
        module waits for its own parameters; default True). False applies every pending update
        at the start of each forward: no overlap with the next forward, but any use of the
        parameters in the forward is safe (see "Errors").
      preempt_chunk_bytes (int >= 1, or None): on a `glucx` group, from the planned iterations
        on, start each partition's allreduce with libglucx's priority scheduling
        (`coll_priority`: priority = minus the forward position of the first module using it,
        chunks of this many bytes), so that a partition the next forward needs earlier
        overtakes, at a chunk boundary, one issued before it that is still running. None
        (default): each allreduce runs whole in issue order. Results are unchanged (bitwise
        at 2 ranks; at more ranks each chunk may use another algorithm than the whole vector
        would, within the usual floating-point tolerance); the plan's predictions assume no
        preemption.

    Construction is collective (rank 0's parameters and buffers are broadcast, the structure is
    compared across ranks).

    Attributes: `module`, `partitions` (list of (parameter names, bytes, priority)),
    `optimizers` (one per partition), `plan` (the current issue order of partition indices),
    `planned` (True once the plan came from a profiled iteration), `profile` (None, then the
    dict of lists the plan came from: ready_s, allreduce_s, priority per partition, forward_s
    per module in forward order, backward_s), `decisions` (the plan's order decisions, see
    "Trace events"; empty unless a session recorded at the plan), `rank`, `world_size`.

    Raises: see the module's doc, "Errors".
    """

    def __init__(self, module, optimizer, process_group=None, partition_bytes=4 << 20,
                 broadcast_buffers=True, overlap_forward=True, preempt_chunk_bytes=None):
        super().__init__()
        if preempt_chunk_bytes is not None and (
                not isinstance(preempt_chunk_bytes, int) or
                isinstance(preempt_chunk_bytes, bool) or preempt_chunk_bytes < 1):
            raise ValueError(f"ScheduledDataParallel: preempt_chunk_bytes must be an int >= 1 or "
                             f"None, got {preempt_chunk_bytes!r}")
        self.preempt_chunk_bytes = preempt_chunk_bytes
        if not callable(optimizer):
            raise TypeError(f"ScheduledDataParallel: optimizer must be a callable taking a list "
                            f"of parameters, got {type(optimizer).__name__}")
        if partition_bytes != "auto" and (not isinstance(partition_bytes, int) or
                                          isinstance(partition_bytes, bool) or
                                          partition_bytes < 1):
            raise ValueError(f"ScheduledDataParallel: partition_bytes must be an int >= 1 or "
                             f"'auto', got {partition_bytes!r}")
        self._auto = partition_bytes == "auto"
        if process_group is None:
            if not dist.is_initialized():
                raise RuntimeError("ScheduledDataParallel: no process_group given and the "
                                   "default process group is not initialized "
                                   "(init_process_group)")
            process_group = dist.distributed_c10d._get_default_group()
        self.module = module
        self.process_group = process_group
        self.broadcast_buffers = bool(broadcast_buffers)
        self.overlap_forward = bool(overlap_forward)
        self.rank = dist.get_rank(process_group)
        self._root = group_root(process_group)   # the global rank of the group's rank 0
        self.world_size = dist.get_world_size(process_group)
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError(f"ScheduledDataParallel: {type(module).__name__} has no parameter "
                               f"that requires gradients ({self._where()})")
        for n, p in named:
            if p.device.type != "cpu" or p.is_sparse:
                raise RuntimeError(f"ScheduledDataParallel: parameter {n} is on {p.device} "
                                   f"(layout {p.layout}); only dense CPU parameters are "
                                   f"supported ({self._where()})")
        # "auto": one partition per parameter until the plan chooses the partitioning
        self._parts = self._partition(named, 1 if self._auto else partition_bytes)
        self._check_structure_across_ranks()
        self._broadcast_state()
        for part in self._parts:
            opt = optimizer(part.params)
            if not isinstance(opt, torch.optim.Optimizer):
                raise TypeError(f"ScheduledDataParallel: optimizer(params) returned "
                                f"{type(opt).__name__}, not a torch.optim.Optimizer")
            part.optimizers = [opt]
        self.optimizers = [p.optimizers[0] for p in self._parts]
        self.partition_decision = None   # "auto": (option ids, costs in ns, chosen id)
        self.plan = list(range(len(self._parts)))
        self.planned = False
        self._iteration = 0        # backward passes started
        self._generation = 0       # forwards with autograd
        self._backward_generation = 0   # the forward the last backward went through
        self._pos = 0              # next position in the plan to issue
        self._t_backward = None
        self._profile = None       # (work, vector) of the profile's allreduce
        self._forward_order = []   # module ids in the order their pre-hooks ran (forward 0)
        self._t_modules = []       # monotonic time of each of those pre-hooks (forward 0)
        self._t_forward_end = None    # when forward 0 returned
        self._backward_time = 0.0     # backward 0, seconds from its first gradient to its end
        self.decisions = []        # per plan position: (chosen, options, predicted ns)
        self.profile = None        # iteration 0's numbers the plan came from (every rank's MAX)
        # trace events (glucx groups; others record nothing): the group's Tracer, whether the
        # current iteration records, the open iteration and the forward phase's state
        self._tracer = _C.Tracer(process_group) if _C.trace_has_comm(process_group) else None
        self._on = False
        self._open_iteration = None
        self._in_forward = False
        self._bcast = None         # (future, flat copy) of the buffers' broadcast
        # AccumulateGrad nodes must stay referenced for their hooks to stay
        self._grad_acc = []
        with torch.enable_grad():
            for part in self._parts:
                for p in part.params:
                    acc = p.expand_as(p).grad_fn.next_functions[0][0]
                    acc.register_hook(self._make_grad_hook(p))
                    self._grad_acc.append(acc)
        self._hooked = [m for m in module.modules()
                        if any(p is not None and p.requires_grad
                               for p in m._parameters.values()) or
                        any(b is not None for b in m._buffers.values())]
        self._index_partitions()
        for m in self._hooked:
            h = m.register_forward_pre_hook(self._make_pre_hook(m))
            # first, before the module's own pre-hooks (weight_norm computes its weight from
            # parameters that the update changes)
            m._forward_pre_hooks.move_to_end(h.id, last=False)

    def _index_partitions(self):
        """_part_of (parameter id -> its partition) and _owners (module id -> the partitions of
        its parameters) from _parts."""
        self._part_of = {id(p): part for part in self._parts for p in part.params}
        self._owners = {}
        for m in self._hooked:
            parts = {self._part_of[id(p)].index: self._part_of[id(p)]
                     for p in m._parameters.values() if p is not None and id(p) in self._part_of}
            self._owners[id(m)] = list(parts.values())

    @property
    def partitions(self):
        """Per partition: (parameter names, bytes, priority; None before the plan)."""
        return [(q.names, q.numel * q.params[0].element_size(), q.priority if self.planned
                 else None) for q in self._parts]

    # ---- construction ---------------------------------------------------------------------

    def _where(self):
        return f"rank {self.rank} of {self.world_size}"

    def _partition(self, named, limit):
        parts, cur, names, size = [], [], [], 0
        for n, p in reversed(named):
            b = p.numel() * p.element_size()
            if cur and (size + b > limit or p.dtype != cur[0].dtype):
                parts.append(_Partition(len(parts), cur, names))
                cur, names, size = [], [], 0
            cur.append(p)
            names.append(n)
            size += b
        if cur:
            parts.append(_Partition(len(parts), cur, names))
        return parts

    def _check_structure_across_ranks(self):
        detail = ([[tuple(p.shape) for p in q.params] for q in self._parts] +
                  [(n, tuple(t.shape), str(t.dtype), t.requires_grad)
                   for n, t in self.module.named_parameters()] +
                  [(n, tuple(b.shape), str(b.dtype)) for n, b in self.module.named_buffers()])
        check_structure_across_ranks("ScheduledDataParallel", self.process_group,
                                     self.world_size, [(q.numel, q.dtype) for q in self._parts],
                                     "partitions", self._where(), detail)

    def _wait(self, work, what):
        """work.wait(), its failure raised as RuntimeError naming `what` and this rank."""
        try:
            work.wait()
        except RuntimeError as e:
            raise RuntimeError(f"ScheduledDataParallel: {what} failed ({self._where()}): "
                               f"{e}") from e

    def _broadcast_state(self):
        """Rank 0's parameters and buffers to every rank: one broadcast per dtype (as DDP
        coalesces them; one per tensor also made the analysis take the construction's
        repeating broadcasts for iterations)."""
        tensors = list(self.module.parameters()) + self._buffers_list()
        with torch.no_grad():
            for dtype in sorted({t.dtype for t in tensors}, key=str):
                group = [t for t in tensors if t.dtype == dtype]
                flat = torch.cat([t.detach().reshape(-1) for t in group])
                dist.broadcast(flat, self._root, group=self.process_group)
                off = 0
                for t in group:
                    t.copy_(flat[off:off + t.numel()].view(t.shape))
                    off += t.numel()

    def _buffers_list(self):
        return [b for b in self.module.buffers() if b is not None]

    # ---- forward ----------------------------------------------------------------------------

    def forward(self, *args, **kwargs):
        grad = torch.is_grad_enabled()
        if grad:
            self._generation += 1
            self._begin_iteration()
        if not self.overlap_forward:
            self.synchronize()
        self._set_forward(grad)
        try:
            out = self.module(*args, **kwargs)
        finally:
            self._set_forward(False)
        if grad and self._iteration == 0 and self._t_forward_end is None:
            self._t_forward_end = time.monotonic()
        if grad:
            for t in _tensors(out):
                if t.requires_grad:
                    t.register_hook(self._make_output_hook())
        if grad and self.broadcast_buffers and self.world_size > 1:
            bufs = self._buffers_list()
            if bufs:
                self._wait_buffers()
                flat = torch.cat([b.detach().reshape(-1).to(torch.float64) for b in bufs]) \
                    if len({b.dtype for b in bufs}) > 1 else \
                    torch.cat([b.detach().reshape(-1) for b in bufs])
                work = dist.broadcast(flat, self._root, group=self.process_group,
                                      async_op=True)
                self._bcast = (work, flat)
        return out

    # ---- trace events (glucx groups, while a session records) --------------------------------

    def _begin_iteration(self):
        """A forward with autograd starts iteration `_generation - 1` (the last one ends)."""
        self._end_iteration()
        if self._tracer is None:
            return
        self._on = _C.trace_enabled()   # once per iteration
        if self._on:
            self._open_iteration = self._generation - 1
            self._tracer.iteration_begin(self._open_iteration)

    def _end_iteration(self):
        if self._open_iteration is not None:
            self._tracer.iteration_end(self._open_iteration)
            self._open_iteration = None

    def _set_forward(self, on):
        """Open or close the forward's compute phase (closed while it waits)."""
        if on == self._in_forward:
            return
        self._in_forward = on
        if self._on:
            if on:
                self._tracer.compute_begin("forward", 0)
            else:
                self._tracer.compute_end("forward", 0)

    def _wait_buffers(self):
        if self._bcast is None:
            return
        work, flat = self._bcast
        self._bcast = None
        self._wait(work, f"broadcast of the buffers ({flat.numel()} elements) from rank 0")
        bufs = self._buffers_list()
        off = 0
        with torch.no_grad():
            for b in bufs:
                n = b.numel()
                b.copy_(flat[off:off + n].view(b.shape).to(b.dtype))
                off += n

    def _make_pre_hook(self, m):
        def hook(_module, _inputs):
            if self._iteration == 0 and torch.is_grad_enabled() and \
                    id(m) not in self._forward_order:
                self._forward_order.append(id(m))
                self._t_modules.append(time.monotonic())
                for part in self._owners[id(m)]:
                    if part.priority is None:
                        part.priority = len(self._forward_order) - 1
            if any(b is not None for b in m._buffers.values()):
                self._wait_buffers()
            self._poll()
            owned = self._owners[id(m)]
            waits = self._in_forward and any(q.work is not None and not q.work.is_completed()
                                             for q in owned)
            if waits:   # the forward waits for communication: not compute (exposed)
                self._set_forward(False)
            for part in owned:
                self._complete(part)
            if waits:
                self._set_forward(True)
        return hook

    def _complete(self, part, block=True):
        """Apply partition part's update once its allreduce completed (waiting for it when
        block). Returns whether nothing of it is pending any more."""
        work = part.work
        if work is None:
            return True
        if not block and not work.is_completed():
            return False
        part.work = None
        flat, part.flat = part.flat, None
        self._wait(work, f"allreduce of partition {part.index} ({part.numel} elements of "
                         f"{part.dtype}, {part.names[0]}..)")
        part.t_done = time.monotonic()
        off = 0
        with torch.no_grad():
            for p in part.params:
                n = p.numel()
                p.grad = flat[off:off + n].view(p.shape)
                off += n
        if self._on:
            self._tracer.compute_begin("optimizer", part.index)
        for opt, hp in zip(part.optimizers, part.hparams or [None] * len(part.optimizers)):
            _step_with(opt, hp)
        part.hparams = None
        if self._on:
            self._tracer.compute_end("optimizer", part.index)
        for p in part.params:
            p.grad = None
        return True

    def _poll(self):
        for k in self.plan:
            self._complete(self._parts[k], block=False)

    def pending(self):
        """How many partitions' updates are not applied yet (their allreduce may still run)."""
        return sum(1 for part in self._parts if part.work is not None)

    def synchronize(self):
        """Wait for every pending partition update and the buffers' broadcast; afterwards the
        parameters and buffers are this iteration's final values (bitwise equal across ranks).
        Between a forward and its backward the broadcast buffers are not written (autograd
        may have saved them, e.g. BatchNorm's running statistics): they stay this rank's, as
        under DDP, until the next forward. Raises RuntimeError when one of them failed."""
        for k in self.plan:
            self._complete(self._parts[k])
        if self._backward_generation == self._generation:
            self._wait_buffers()
        self._end_iteration()

    def state_dict(self, *args, **kwargs):
        """nn.Module.state_dict after synchronize(): the pending updates are in it."""
        self.synchronize()
        return super().state_dict(*args, **kwargs)

    def load_state_dict(self, *args, **kwargs):
        """nn.Module.load_state_dict after synchronize(): no pending update lands on top of the
        loaded values (the optimizers' states are not part of it: `optimizers`)."""
        self.synchronize()
        return super().load_state_dict(*args, **kwargs)

    @staticmethod
    def no_sync():
        raise RuntimeError("ScheduledDataParallel: no_sync() is not supported: every backward "
                           "pass synchronises the gradients and applies the optimizer step "
                           "(gradient accumulation without communication is not available)")

    # ---- backward ---------------------------------------------------------------------------

    def _make_output_hook(self):
        fired = [False]

        def hook(_grad):   # the first thing a backward through this forward computes
            if fired[0]:
                raise RuntimeError(
                    f"ScheduledDataParallel: a second backward pass through one forward's "
                    f"output: gradient accumulation or a second backward through the same "
                    f"forward is not supported ({self._where()})")
            fired[0] = True
            if self._on:
                self._tracer.compute_begin("backward", 0)
        return hook

    def _make_grad_hook(self, p):
        key = id(p)

        def hook(*_unused):
            self._gradient_arrived(key)
        return hook

    def _gradient_arrived(self, key):
        part = self._part_of[key]
        if part.work is not None:
            # the previous update was never waited for: no module owning these parameters ran
            # its forward, yet they received a gradient (read directly, e.g. F.linear(x,
            # self.fc.weight)): the forward read them before their update
            raise RuntimeError(
                f"ScheduledDataParallel: parameters {part.names[:8]} were used in the forward "
                f"without running the module that owns them, before their pending update was "
                f"applied; call the module, or construct with overlap_forward=False "
                f"({self._where()})")
        if self._t_backward is None:       # the first gradient of this backward pass
            if self._backward_generation == self._generation:
                for q in self._parts:      # nothing of this pass is kept
                    for p in q.params:
                        p.grad = None
                raise RuntimeError(
                    f"ScheduledDataParallel: a backward pass without a forward through the "
                    f"wrapper since the last one (partition {part.index}, {part.names[0]}..): "
                    f"a second backward pass through the same forward (gradient accumulation) "
                    f"is not supported, and the wrapped module must be called through the "
                    f"wrapper "
                    f"({self._where()})")
            self._start_backward()
            part = self._part_of[key]   # "auto" regroups the partitions at backward 1
        part.seen += 1
        if not part.ready:
            return
        part.t_ready = time.monotonic() - self._t_backward
        while self._pos < len(self.plan) and self._parts[self.plan[self._pos]].ready:
            if self._on and self._pos < len(self.decisions):
                k, opts, costs = self.decisions[self._pos]
                self._tracer.sched_decision(ORDER, k, opts, costs, "P3: the ready partition "
                                            "the next forward needs first")
            self._issue(self._parts[self.plan[self._pos]])
            self._pos += 1

    def _start_backward(self):
        self._backward_generation = self._generation
        self._t_backward = time.monotonic()
        if self._iteration == 1:
            self._make_plan()
        self._iteration += 1
        self._pos = 0
        for part in self._parts:
            part.seen = 0
        torch.autograd.Variable._execution_engine.queue_callback(self._end_backward)

    def _end_backward(self):
        if self._on:
            self._tracer.compute_end("backward", 0)
        if self._iteration == 1:
            self._backward_time = time.monotonic() - self._t_backward
        self._t_backward = None
        # the optimizers' settings as they are now, when a DDP user would call opt.step():
        # an update applied later (in the next forward) uses them, not what a learning-rate
        # scheduler set in between
        for part in self._parts:
            if part.work is not None:
                part.hparams = [_hyperparameters(opt) for opt in part.optimizers]
        if self._pos == len(self.plan):
            if self._iteration == 1:
                self._issue_profile()
            else:
                self._poll()
        else:
            missing = [n for part in self._parts if not part.ready
                       for p, n in zip(part.params, part.names) if p.grad is None]
            for k in self.plan[self._pos:]:
                for p in self._parts[k].params:   # never issued: nothing of this pass is kept
                    p.grad = None
            raise RuntimeError(
                f"ScheduledDataParallel: parameters {missing[:8]} received no gradient in this "
                f"backward pass (unused parameters are not supported: every parameter that "
                f"requires gradients must take part in the loss) ({self._where()})")

    def _issue(self, part):
        with torch.no_grad():
            flat = torch.cat([p.grad.reshape(-1) for p in part.params])
            flat.div_(self.world_size)
        for p in part.params:
            p.grad = None
        part.t_issue = time.monotonic()
        part.flat = flat
        if self.preempt_chunk_bytes is not None and self.planned and part.priority is not None:
            with coll_priority(-int(part.priority), self.preempt_chunk_bytes):
                part.work = dist.all_reduce(flat, group=self.process_group, async_op=True)
        else:
            part.work = dist.all_reduce(flat, group=self.process_group, async_op=True)

    # ---- the plan ---------------------------------------------------------------------------

    def _issue_profile(self):
        """At the end of backward 0: wait for the partitions in issue order, timing each, and
        contribute ready times, allreduce durations and priorities (MAX over ranks)."""
        for k in self.plan:
            self._complete(self._parts[k])
        order = sorted(self._parts, key=lambda q: q.t_issue)
        prev, dur = 0.0, {}
        for q in order:   # one collective at a time on the group: its own time
            start = max(q.t_issue, prev)
            dur[q.index] = max(0.0, q.t_done - start)
            prev = q.t_done
        last = len(self._forward_order)
        ends = self._t_modules[1:] + [self._t_forward_end or time.monotonic()]
        fwd = [max(0.0, b - a) for a, b in zip(self._t_modules, ends)]
        vec = torch.tensor([q.t_ready for q in self._parts] +
                           [dur[q.index] for q in self._parts] +
                           [float(q.priority if q.priority is not None else last)
                            for q in self._parts] + fwd + [self._backward_time],
                           dtype=torch.float64)
        work = dist.all_reduce(vec, op=dist.ReduceOp.MAX, group=self.process_group,
                               async_op=True)
        self._profile = (work, vec)

    def _make_plan(self):
        if self._profile is None:
            return
        work, vec = self._profile
        self._profile = None
        n = len(self._parts)
        self._wait(work, f"allreduce of the profile ({vec.numel()} values)")
        v = vec.tolist()
        ready, dur, prio = v[:n], v[n:2 * n], v[2 * n:3 * n]
        fwd, backward = v[3 * n:-1], v[-1]
        if self._auto:
            ready, dur, prio = self._regroup(ready, dur, prio, fwd, backward)
            n = len(self._parts)
        self.plan = plan_order(ready, dur, prio)
        self.planned = True
        self.profile = {"ready_s": ready, "allreduce_s": dur, "priority": [int(x) for x in prio],
                        "forward_s": fwd, "backward_s": backward}
        if self._tracer is not None and _C.trace_enabled():
            self.decisions = order_decisions(ready, dur, prio, fwd, backward)
            if self.partition_decision is not None:   # attached to the plan's first allreduce
                ids, costs, chosen = self.partition_decision
                order = sorted(range(len(ids)), key=lambda i: costs[i])
                self._tracer.sched_decision(
                    PARTITION, chosen, [ids[i] for i in order], [costs[i] for i in order],
                    "alpha-beta fit of iteration 0, least unhidden communication")
        for part in self._parts:
            part.priority = int(prio[part.index])

    def _regroup(self, ready, dur, prio, fwd, backward):
        """partition_bytes="auto" at the plan: the parameters (one partition each so far) are
        grouped as choose_partitions says; returns the groups' ready times, allreduce
        durations (the fitted model's) and priorities."""
        old = self._parts
        nbytes = [q.numel * q.params[0].element_size() for q in old]
        groups, ids, costs, chosen, (alpha, beta) = choose_partitions(nbytes, ready, dur, prio,
                                                                      fwd, backward)
        self.partition_decision = (ids, costs, chosen)
        parts = []
        for g in groups:
            # one dtype per partition (the flat buffer): split a group where the dtype changes
            run = []
            for i in g:
                if run and old[i].dtype != old[run[0]].dtype:
                    parts.append(run)
                    run = []
                run.append(i)
            parts.append(run)
        self._parts = []
        for k, run in enumerate(parts):
            q = _Partition(k, [p for i in run for p in old[i].params],
                           [nm for i in run for nm in old[i].names])
            q.optimizers = [opt for i in run for opt in old[i].optimizers]
            self._parts.append(q)
        self._index_partitions()
        return ([max(ready[i] for i in run) for run in parts],
                [alpha + beta * sum(nbytes[i] for i in run) for run in parts],
                [min(prio[i] for i in run) for run in parts])
