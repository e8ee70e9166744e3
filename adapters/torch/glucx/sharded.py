"""Sharded-parameter data parallelism (ZeRO-3 / FSDP style) for CPU training on torch 1.13.

    import glucx.torch
    model = glucx.torch.ShardedDataParallel(module, process_group=None, prefetch=1)
    opt = torch.optim.Adam(model.parameters())       # the parameters are this rank's shards
    loss = loss_fn(model(x_local), y_local)
    loss.backward()                                  # gradients reduce-scattered and averaged
    opt.step()

Sources: ZeRO stage 3 (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion
Parameter Models", SC'20) and PyTorch FSDP (Zhao et al., "PyTorch FSDP: Experiences on Scaling
Fully Sharded Data Parallel", VLDB'23). Written for glucx from those papers; no code from
PyTorch's FSDP or DeepSpeed. PyTorch 1.13's own FSDP refuses CPU-only execution.

Units and shards
----------------
The parameters are grouped in units: by default each direct child of `module` that has
parameters (an nn.Sequential's layers, say), or the modules given as `units`. A unit's
parameters (all of one dtype) are concatenated in the order of `unit.named_modules()` and each
module's `_parameters`, padded with zeros to a multiple of the group size W, and cut into W equal
contiguous shards of S = ceil(N / W) elements (N = the unit's parameter count); rank r keeps
shard r as a 1-D nn.Parameter (`flat_shards[i]`, S elements). `model.parameters()` yields only
these shards: an optimizer built on them updates this rank's 1/W of the model, its state (Adam's
moments) is sharded the same way. The original nn.Parameter objects are removed from the unit's
modules; their names become plain tensor attributes set only while the unit runs.

Forward and prefetch
--------------------
Before a unit's forward (a forward pre-hook) its full flat parameters (W*S elements) are
all-gathered from the shards and the unit's parameter names are bound to views of that buffer;
after its forward (a forward hook) the names are unbound. With `prefetch=k` (k >= 1), the
pre-hook of the unit at position i in the unit list also issues the gathers of the units i+1 ..
i+k before waiting for unit i's gather, so they run on the group's thread while unit i computes;
`prefetch=0` issues each gather in its own unit's pre-hook and waits for it at once. The order
assumed for prefetching is the unit list's order; units that run in another order still get
the right parameters (a unit whose gather was not issued issues it when it runs), only the
overlap is lost. Every rank issues the same gathers in the same order, so the collectives
match across ranks as long as every rank runs the same forward.

Memory trade-off. Default (reshard_after_forward=False): the gathered buffer is not freed and
gathered again for backward. After the forward it is referenced only by the autograd graph (the
tensors the unit's operations saved for backward, e.g. a Linear's weight) and is freed when the
unit's backward has run; a unit whose operations save no parameter frees it right after its
forward. So between iterations and under torch.no_grad() a rank holds 1/W of the parameters,
during a training forward/backward up to the full parameters of the units whose backward has
not run yet (like FSDP's SHARD_GRAD_OP / ZeRO-2 for that window), and each iteration moves 1x
the parameters in all-gathers plus 1x in reduce-scatters.

With reshard_after_forward=True (ZeRO-3, FSDP's FULL_SHARD): after a unit's forward the storage
of its gathered buffer is released (resized to 0; the views autograd saved keep pointing at it)
and tensor hooks are put on the unit's output tensors. When the gradient of an output arrives --
the unit's backward is next -- the storage is given back and all-gathered again (with
`prefetch=k`, also the next k units in reverse forward order, so their re-gathers overlap this
unit's backward), then waited for. Peak parameter memory is then about one unit (plus the
prefetched ones) instead of the model, for 2x the parameters in all-gathers per iteration. The
re-gather writes through an alias of the storage with its own version counter, so autograd's
check of saved tensors is not triggered. Results are bitwise the same in both modes. A unit none
of whose outputs requires grad is not resharded.

Backward
--------
When autograd has the gradient of a unit's full flat buffer (all its parameters' gradients
summed in), it issues its reduce-scatter (SUM) at once (asynchronous), so the reduce-scatters
of later units overlap the backward of earlier ones. At the end of the backward pass (an autograd
final callback) every reduce-scatter is waited for, divided by W (DDP's average over ranks) and
written to (or, if one exists, added to) the shard's `.grad`. The padding's gradient is zero.

Collectives used: all_gather_into_tensor and reduce_scatter_tensor (c10d's _allgather_base /
_reduce_scatter_base), which the `glucx` backend implements (on a topology with packages its
selection picks the hierarchical, fast-link-offloading allgather rows for them), plus broadcast
and all_gather (list) at construction. ProcessGroupGloo in torch 1.13 implements neither
_allgather_base nor reduce_scatter: on a "gloo" group the gathers use all_gather into views of
the flat buffer and the reduce-scatter is an all_reduce of the full gradient of which each rank
keeps its shard (W times the reduce-scatter's receive volume; same results).

Buffers: at construction the parameters and buffers of rank 0 are broadcast to every rank (DDP's
default), and with `broadcast_buffers=True` (default, as DDP) the buffers (BatchNorm running
statistics) are broadcast from rank 0 at the start of every forward with autograd enabled.

Errors (RuntimeError unless said otherwise; the message names the operation, the sizes and the
rank):
  * construction: a parameter reachable from two units (shared/tied between units); parameters
    of `module` in no unit; a unit of mixed dtypes, a non-CPU, sparse or frozen
    (requires_grad=False) parameter; no unit with parameters; `prefetch` < 0 (ValueError); the
    model's unit structure (unit count or parameter counts) differing across ranks (raised on
    every rank, naming the ranks that differ); no process group and no default group.
  * no_sync(): gradient accumulation without communication is not supported (raises at once).
  * backward: a unit that ran in the forward but received no gradient (unused parameters) is
    reported at the end of the backward pass, naming the unit; a backward through the graph of an
    earlier forward than the latest one (several forwards, then one backward) is refused.
  * a failed collective raises from forward or backward with the backend's message.
Gradient accumulation over several forward/backward pairs without zeroing the gradients works
as with DDP (each backward communicates, the averaged gradients are added).

Thread-safety: one ShardedDataParallel is driven by one thread (its forward, backward and
optimizer step in sequence, as DDP); the hooks run on the forward's thread and on autograd's.
Two instances may run on different threads on different process groups.
"""

import contextlib
import zlib

import torch
import torch.distributed as dist
import torch.nn as nn

__all__ = ["ShardedDataParallel"]


def _ceil_div(a, b):
    return -(-a // b)


def _tensors(obj, depth=0):
    """The tensors in a module's output (a tensor, or tuples, lists and dicts of them)."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif depth < 4 and isinstance(obj, (tuple, list)):
        for o in obj:
            yield from _tensors(o, depth + 1)
    elif depth < 4 and isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors(o, depth + 1)


def group_root(group):
    """The global rank of `group`'s rank 0 (torch.distributed's broadcast takes global ranks)."""
    if group is None or group is dist.distributed_c10d._get_default_group():
        return 0
    return dist.distributed_c10d._get_global_rank(group, 0)


def check_structure_across_ranks(who, group, world_size, items, item_word, where, detail=None):
    """Raise RuntimeError on every rank of `group` unless every rank passed the same `items`
    (a list of (element count, dtype)) and the same `detail` (anything with a stable repr, e.g.
    shapes): a collective (one all_gather of 3 int64 per rank). The message names `who`, each
    rank's item count (`item_word`) and parameter count, the ranks that differ from rank 0 and
    `where` (this rank)."""
    crc = zlib.crc32((repr([(n, str(d)) for n, d in items]) + repr(detail)).encode())
    mine = torch.tensor([len(items), sum(n for n, _ in items), crc], dtype=torch.int64)
    every = [torch.zeros_like(mine) for _ in range(world_size)]
    dist.all_gather(every, mine, group=group)
    differ = [r for r, t in enumerate(every) if not torch.equal(t, every[0])]
    if differ:
        desc = ", ".join(f"rank {r}: {int(t[0])} {item_word}, {int(t[1])} parameters"
                         for r, t in enumerate(every))
        raise RuntimeError(f"{who}: the model differs across ranks ({desc}); ranks {differ} "
                           f"differ from rank 0 ({where})")


class _Unit:
    """A unit's bookkeeping: where its parameters live and its shard."""

    def __init__(self, index, name, module, slots, dtype, numel, shard_numel):
        self.index, self.name, self.module = index, name, module
        # slots: [(owner modules (several if the module is reached twice), attribute name,
        #          shape, offset, numel)]
        self.slots = slots
        self.dtype, self.numel, self.shard_numel = dtype, numel, shard_numel
        self.shard = None          # nn.Parameter, set by the owner
        self.pending = None        # (work, full buffer) of an issued gather
        self.full = None           # this forward's gathered buffer (a graph node under grad)
        self.grad_issued = False
        # reshard_after_forward: the graph's buffer, whether its storage is freed, its re-gather
        self.graph_full = None
        self.resharded = False
        self.regather = None


class _GatherFn(torch.autograd.Function):
    """Identity on the autograd graph from a unit's shard to its gathered full buffer: the
    backward hands the full buffer's gradient to the owner, which reduce-scatters it and writes
    the shard's .grad itself at the end of the backward pass (so this returns no gradient)."""

    @staticmethod
    def forward(ctx, shard, owner, index, generation):  # noqa: D401
        ctx.owner, ctx.index, ctx.generation = owner, index, generation
        return owner._wait_gather(index)

    @staticmethod
    def backward(ctx, grad_full):
        ctx.owner._unit_grad_ready(ctx.index, ctx.generation, grad_full)
        return None, None, None, None


class ShardedDataParallel(nn.Module):
    """Wrap `module` for sharded-parameter data-parallel training (see the module's doc).

    Args:
      module (nn.Module): the model, on CPU, the same structure on every rank. Its parameters are
        replaced by this rank's flat shards; its buffers stay (broadcast from rank 0).
      process_group (ProcessGroup or None): the group over which to shard (default: the default
        group). Its size W is the number of shards.
      prefetch (int >= 0): how many following units' all-gathers are in flight while a unit
        computes; 0 turns prefetching off. Results do not depend on it.
      units (list of nn.Module or None): the units, each a submodule of `module`, no two sharing
        a parameter, together holding every parameter of `module` (default: the direct children
        of `module` that have parameters).
      broadcast_buffers (bool): broadcast the buffers from rank 0 at every forward with autograd
        enabled (DDP's default, True).
      reshard_after_forward (bool): free each unit's gathered parameters right after its forward
        and all-gather them again just before its backward (ZeRO-3's memory; see "Memory
        trade-off"); default False: the autograd graph keeps them until the unit's backward.

    Construction is collective (every rank of the group must construct the same model).

    Attributes: `module` (the wrapped module), `flat_shards` (nn.ParameterList, one 1-D shard per
    unit), `unit_names` (the units' qualified names), `shard_sizes` (S per unit), `unit_sizes`
    (N per unit, without padding), `rank`, `world_size`, `prefetch`, `prefetched_gathers` (how
    many all-gathers were issued ahead of their unit, i.e. by prefetching, since construction),
    `regathered` (re-gathers for backward with reshard_after_forward, since construction).

    Raises: see the module's doc, "Errors".
    """

    def __init__(self, module, process_group=None, prefetch=1, units=None,
                 broadcast_buffers=True, reshard_after_forward=False):
        super().__init__()
        if not isinstance(prefetch, int) or prefetch < 0:
            raise ValueError(f"ShardedDataParallel: prefetch must be an int >= 0, got {prefetch!r}")
        if process_group is None:
            if not dist.is_initialized():
                raise RuntimeError("ShardedDataParallel: no process_group given and the default "
                                   "process group is not initialized (init_process_group)")
            process_group = dist.distributed_c10d._get_default_group()
        self.module = module
        self.process_group = process_group
        self.prefetch = prefetch
        self.broadcast_buffers = broadcast_buffers
        self.reshard_after_forward = bool(reshard_after_forward)
        self.rank = dist.get_rank(process_group)
        self.world_size = dist.get_world_size(process_group)
        self._backend = dist.get_backend(process_group)
        self._base_ops = self._backend != "gloo"   # ProcessGroupGloo 1.13 lacks both base ops
        self._units = self._find_units(module, units)
        self._check_structure_across_ranks()
        self.flat_shards = nn.ParameterList()
        self._shard_units(module)
        self.unit_names = [u.name for u in self._units]
        self.shard_sizes = [u.shard_numel for u in self._units]
        self.unit_sizes = [u.numel for u in self._units]
        self._generation = 0
        self.prefetched_gathers = 0
        self._in_forward = False
        self._callback_queued = False
        self._rs_pending = []      # (unit, work, output shard buffer, full-size buffer)
        self._ran = []             # units that ran in the current forward (with autograd)
        self.regathered = 0        # re-gathers for backward (reshard_after_forward)
        for u in self._units:
            u.module.register_forward_pre_hook(self._make_pre_hook(u))
            u.module.register_forward_hook(self._make_post_hook(u))

    # ---- construction ---------------------------------------------------------------------

    def _where(self):
        return f"rank {self.rank} of {self.world_size}"

    def _find_units(self, module, units):
        names = {id(m): n for n, m in module.named_modules()}
        if units is None:
            mods = [(n, m) for n, m in module.named_children()
                    if any(True for _ in m.parameters())]
        else:
            mods = []
            for m in units:
                if id(m) not in names:
                    raise RuntimeError(f"ShardedDataParallel: unit {type(m).__name__} is not a "
                                       f"submodule of the wrapped module ({self._where()})")
                mods.append((names[id(m)] or "<root>", m))
        if not mods:
            raise RuntimeError(f"ShardedDataParallel: no unit with parameters in "
                               f"{type(module).__name__} ({self._where()})")
        owner_of = {}  # id(param) -> unit name
        out = []
        for index, (uname, umod) in enumerate(mods):
            params = {}   # id -> [param, [(module, attr)]]
            order = []
            for _, sub in umod.named_modules():
                for attr, p in sub._parameters.items():
                    if p is None:
                        continue
                    if id(p) not in params:
                        params[id(p)] = [p, []]
                        order.append(id(p))
                    params[id(p)][1].append((sub, attr))
            offset, slots, dtype = 0, [], None
            for pid in order:
                p, owners = params[pid]
                prefix = names.get(id(owners[0][0]), "?")
                pname = f"{prefix}.{owners[0][1]}" if prefix else owners[0][1]
                if pid in owner_of:
                    raise RuntimeError(
                        f"ShardedDataParallel: parameter {pname} (shape {tuple(p.shape)}) is "
                        f"shared between units {owner_of[pid]} and {uname}; parameters shared "
                        f"between units are not supported (put the modules sharing it in one "
                        f"unit) ({self._where()})")
                owner_of[pid] = uname
                if p.device.type != "cpu" or p.is_sparse:
                    raise RuntimeError(f"ShardedDataParallel: parameter {pname} is on "
                                       f"{p.device} (layout {p.layout}); only dense CPU "
                                       f"parameters are supported ({self._where()})")
                if not p.requires_grad:
                    raise RuntimeError(f"ShardedDataParallel: parameter {pname} (shape "
                                       f"{tuple(p.shape)}) has requires_grad=False; frozen "
                                       f"parameters are not supported ({self._where()})")
                if dtype is None:
                    dtype = p.dtype
                elif p.dtype != dtype:
                    raise RuntimeError(f"ShardedDataParallel: unit {uname} mixes dtypes "
                                       f"{dtype} and {p.dtype} (parameter {pname}); one dtype "
                                       f"per unit is supported ({self._where()})")
                slots.append((owners, tuple(p.shape), offset, p.numel(), p))
                offset += p.numel()
            if not slots:
                raise RuntimeError(f"ShardedDataParallel: unit {uname} has no parameters "
                                   f"({self._where()})")
            out.append(_Unit(index, uname, umod, slots, dtype, offset,
                             _ceil_div(offset, self.world_size)))
        for n, p in module.named_parameters():
            if id(p) not in owner_of:
                raise RuntimeError(f"ShardedDataParallel: parameter {n} (shape {tuple(p.shape)}) "
                                   f"of the wrapped module is in no unit; pass units= covering "
                                   f"every parameter ({self._where()})")
        return out

    def _check_structure_across_ranks(self):
        check_structure_across_ranks("ShardedDataParallel", self.process_group, self.world_size,
                                     [(u.numel, u.dtype) for u in self._units], "units",
                                     self._where())

    def _shard_units(self, module):
        pg, w, r = self.process_group, self.world_size, self.rank
        with torch.no_grad():
            for u in self._units:
                full = torch.zeros(w * u.shard_numel, dtype=u.dtype)
                for _, _, off, n, p in u.slots:
                    full[off:off + n].copy_(p.reshape(-1))
                dist.broadcast(full, group_root(pg), group=pg)   # rank 0's (DDP's default)
                shard = nn.Parameter(full[r * u.shard_numel:(r + 1) * u.shard_numel].clone())
                u.shard = shard
                self.flat_shards.append(shard)
                slots = []
                for owners, shape, off, n, _ in u.slots:
                    for sub, attr in owners:
                        del sub._parameters[attr]
                        object.__setattr__(sub, attr, None)
                    slots.append((owners, shape, off, n))
                u.slots = slots
            for b in module.buffers():
                dist.broadcast(b, group_root(pg), group=pg)

    # ---- collectives ----------------------------------------------------------------------

    def _issue_gather(self, u, ahead=False):
        if u.pending is not None or u.full is not None:
            return
        if ahead:
            self.prefetched_gathers += 1
        full = torch.empty(self.world_size * u.shard_numel, dtype=u.dtype)
        src = u.shard.detach()
        if self._base_ops:
            work = dist.all_gather_into_tensor(full, src, group=self.process_group, async_op=True)
        else:
            work = dist.all_gather(list(full.view(self.world_size, u.shard_numel).unbind(0)),
                                   src, group=self.process_group, async_op=True)
        u.pending = (work, full)

    def _wait_gather(self, index):
        u = self._units[index]
        work, full = u.pending
        u.pending = None
        try:
            work.wait()
        except Exception as e:  # noqa: BLE001 -- re-raised with the unit and sizes
            raise RuntimeError(f"ShardedDataParallel: all-gather of unit {u.name} ({u.numel} "
                               f"parameters, shard {u.shard_numel} x {self.world_size} ranks, "
                               f"{u.dtype}) failed on {self._where()}: {e}") from e
        return full

    def _issue_reduce_scatter(self, u, grad_full):
        grad_full = grad_full.contiguous()
        if grad_full.numel() != self.world_size * u.shard_numel:
            raise RuntimeError(f"ShardedDataParallel: gradient of unit {u.name} has "
                               f"{grad_full.numel()} elements, expected "
                               f"{self.world_size * u.shard_numel} ({self._where()})")
        if self._base_ops:
            out = torch.empty(u.shard_numel, dtype=grad_full.dtype)
            work = dist.reduce_scatter_tensor(out, grad_full, op=dist.ReduceOp.SUM,
                                              group=self.process_group, async_op=True)
            self._rs_pending.append((u, work, out, grad_full))
        else:
            buf = grad_full.clone()
            work = dist.all_reduce(buf, op=dist.ReduceOp.SUM, group=self.process_group,
                                   async_op=True)
            s = u.shard_numel
            self._rs_pending.append((u, work, buf[self.rank * s:(self.rank + 1) * s], buf))

    # ---- hooks ----------------------------------------------------------------------------

    def _bind(self, u, full):
        for owners, shape, off, n in u.slots:
            view = full[off:off + n].view(shape)
            for sub, attr in owners:
                object.__setattr__(sub, attr, view)

    def _unbind(self, u):
        for owners, _, _, _ in u.slots:
            for sub, attr in owners:
                object.__setattr__(sub, attr, None)

    def _make_pre_hook(self, u):
        def pre_hook(_module, _inputs):
            if not self._in_forward:
                raise RuntimeError(f"ShardedDataParallel: unit {u.name} was called outside the "
                                   f"wrapper's forward; call the ShardedDataParallel model "
                                   f"({self._where()})")
            if u.full is not None and u.resharded:   # the unit runs again in this forward
                self._regather(u, wait=True)
            if u.full is None:
                self._issue_gather(u)
                for v in self._units[u.index + 1:u.index + 1 + self.prefetch]:
                    self._issue_gather(v, ahead=True)
                if torch.is_grad_enabled():
                    u.full = _GatherFn.apply(u.shard, self, u.index, self._generation)
                    self._ran.append(u)
                else:
                    u.full = self._wait_gather(u.index)
            self._bind(u, u.full)
            return None

        return pre_hook

    def _make_post_hook(self, u):
        def post_hook(_module, _inputs, output):
            self._unbind(u)
            if self.reshard_after_forward and u.full is not None and u.full.requires_grad:
                gen = self._generation
                hooked = 0
                for t in _tensors(output):
                    if t.requires_grad:
                        t.register_hook(lambda _g, u=u, gen=gen: self._pre_backward(u, gen))
                        hooked += 1
                if hooked:
                    u.graph_full = u.full
                    u.full.detach().storage().resize_(0)
                    u.resharded = True
            return None

        return post_hook

    def _regather(self, u, wait):
        """Give a resharded unit's graph buffer its storage back and all-gather into it through
        an alias with its own version counter (autograd's saved views see no in-place write)."""
        if u.regather is None:
            full = u.full if u.full is not None else u.graph_full
            n = self.world_size * u.shard_numel
            storage = full.detach().storage()
            storage.resize_(n)
            # a tensor on the same storage with its own version counter: a backend that writes
            # through copy_ (ProcessGroupGloo's all_gather) must not bump the counter of the
            # views autograd saved
            buf = torch.empty(0, dtype=u.dtype).set_(storage, 0, (n,))
            src = u.shard.detach()
            if self._base_ops:
                work = dist.all_gather_into_tensor(buf, src, group=self.process_group,
                                                   async_op=True)
            else:
                work = dist.all_gather(list(buf.view(self.world_size, u.shard_numel).unbind(0)),
                                       src, group=self.process_group, async_op=True)
            u.regather = work
            self.regathered += 1
        if wait:
            work, u.regather = u.regather, None
            try:
                work.wait()
            except Exception as e:  # noqa: BLE001 -- re-raised with the unit and sizes
                raise RuntimeError(f"ShardedDataParallel: re-gather for backward of unit "
                                   f"{u.name} ({u.numel} parameters, shard {u.shard_numel} x "
                                   f"{self.world_size} ranks) failed on {self._where()}: "
                                   f"{e}") from e
            u.resharded = False

    def _pre_backward(self, u, generation):
        """Tensor hook on a unit's outputs: their gradient is ready, the unit's backward is
        next. Re-gather its parameters (and issue the re-gathers of the `prefetch` units whose
        backward comes next, in reverse forward order) before it runs."""
        if generation != self._generation:
            raise RuntimeError(f"ShardedDataParallel: backward through the graph of an earlier "
                               f"forward (forward {generation}, latest {self._generation}) for "
                               f"unit {u.name}; several forwards before one backward (gradient "
                               f"accumulation over forwards) is not supported ({self._where()})")
        if not u.resharded:
            return None
        if u.regather is None:
            self._regather(u, wait=False)
        order = list(reversed(self._ran))
        if u in order and self.prefetch:
            i = order.index(u)
            for v in order[i + 1:i + 1 + self.prefetch]:
                if v.resharded and v.regather is None and v.graph_full is not None:
                    self._regather(v, wait=False)
        self._regather(u, wait=True)
        return None

    def forward(self, *inputs, **kwargs):
        """Run the wrapped module's forward on this rank's inputs (gathering each unit's
        parameters as it runs). Collective: every rank must call it, with the same units
        running in the same order. Raises RuntimeError if a collective fails or, with autograd
        enabled, a unit did not run (unused parameters)."""
        if self._rs_pending:
            # a backward that raised before its end: its reduce-scatters were issued on every
            # rank alike; finish them, keep nothing
            stale, self._rs_pending = self._rs_pending, []
            for _, work, _, _ in stale:
                try:
                    work.wait()
                except Exception:  # noqa: BLE001 -- the backward already raised
                    pass
        self._callback_queued = False
        for u in self._units:
            if u.regather is not None:      # issued for a backward that never came
                work, u.regather = u.regather, None
                try:
                    work.wait()
                except Exception:  # noqa: BLE001 -- that backward already raised
                    pass
            u.graph_full, u.resharded = None, False
        grad = torch.is_grad_enabled()
        if grad and self.broadcast_buffers:
            for b in self.module.buffers():
                dist.broadcast(b, group_root(self.process_group), group=self.process_group)
        self._generation += 1
        self._ran = []
        self._in_forward = True
        failed = True
        try:
            out = self.module(*inputs, **kwargs)
            failed = False
        finally:
            self._in_forward = False
            self._end_forward(quiet=failed)
        if grad:
            missing = [u.name for u in self._units if u not in self._ran]
            if missing:
                raise RuntimeError(f"ShardedDataParallel: units {missing} did not run in the "
                                   f"forward; unused parameters are not supported "
                                   f"({self._where()})")
            for u in self._units:
                u.grad_issued = False
        return out

    def _end_forward(self, quiet):
        """Unbind every unit, drop this forward's buffers (the graph, if any, keeps what backward
        needs) and wait for gathers that were prefetched for units that did not run (every rank
        issued them alike). quiet: the forward is raising already; do not mask its error."""
        for u in self._units:
            self._unbind(u)
            u.full = None
            if u.pending is not None:
                try:
                    self._wait_gather(u.index)
                except RuntimeError:
                    if not quiet:
                        raise

    def _unit_grad_ready(self, index, generation, grad_full):
        u = self._units[index]
        if generation != self._generation:
            raise RuntimeError(f"ShardedDataParallel: backward through the graph of an earlier "
                               f"forward (forward {generation}, latest {self._generation}) for "
                               f"unit {u.name}; several forwards before one backward (gradient "
                               f"accumulation over forwards) is not supported ({self._where()})")
        if u.grad_issued:
            raise RuntimeError(f"ShardedDataParallel: a second backward through unit {u.name} "
                               f"of the same forward (retain_graph) is not supported "
                               f"({self._where()})")
        u.grad_issued = True
        u.graph_full = None     # the graph frees the parameters when the unit's nodes are done
        if not self._callback_queued:
            self._callback_queued = True
            torch.autograd.Variable._execution_engine.queue_callback(self._finish_backward)
        self._issue_reduce_scatter(u, grad_full)

    def _finish_backward(self):
        self._callback_queued = False
        pending, self._rs_pending = self._rs_pending, []
        errors = []
        for u, work, out, _ in pending:
            try:
                work.wait()
            except Exception as e:  # noqa: BLE001 -- all waited for, then the first raised
                errors.append(f"reduce-scatter of unit {u.name} ({u.numel} parameters, shard "
                              f"{u.shard_numel} x {self.world_size} ranks) failed: {e}")
                continue
            g = out.div(self.world_size)
            with torch.no_grad():
                if u.shard.grad is None:
                    u.shard.grad = g
                else:
                    u.shard.grad.add_(g)
        if errors:
            raise RuntimeError(f"ShardedDataParallel ({self._where()}): " + "; ".join(errors))
        missing = [u.name for u in self._ran if not u.grad_issued]
        if missing:
            raise RuntimeError(f"ShardedDataParallel: units {missing} ran in the forward but "
                               f"received no gradient in the backward (unused parameters, or "
                               f"outputs not in the loss); not supported: every rank must "
                               f"reduce-scatter every unit ({self._where()})")

    # ---- unsupported ----------------------------------------------------------------------

    @contextlib.contextmanager
    def no_sync(self):
        """Not supported: raises RuntimeError at once (gradient accumulation without
        communication would need the full unsharded gradients on every rank)."""
        raise RuntimeError(f"ShardedDataParallel: no_sync() is not supported (gradient "
                           f"accumulation without communication; {sum(self.unit_sizes)} "
                           f"parameters in {len(self._units)} units) ({self._where()})")
        yield  # pragma: no cover

    def gathered_parameters(self):
        """Collective: the full parameters, as {qualified name in `module`: tensor} (copies),
        gathered from every rank's shards. Every rank must call it."""
        out = {}
        names = {id(m): n for n, m in self.module.named_modules()}
        for u in self._units:
            full = torch.empty(self.world_size * u.shard_numel, dtype=u.dtype)
            src = u.shard.detach()
            if self._base_ops:
                dist.all_gather_into_tensor(full, src, group=self.process_group)
            else:
                dist.all_gather(list(full.view(self.world_size, -1).unbind(0)), src,
                                group=self.process_group)
            for owners, shape, off, n in u.slots:
                for sub, attr in owners:
                    prefix = names.get(id(sub), "")
                    key = f"{prefix}.{attr}" if prefix else attr
                    out[key] = full[off:off + n].view(shape).clone()
        return out
