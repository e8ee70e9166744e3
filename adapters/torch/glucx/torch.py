"""glucx.torch: trace events from PyTorch training, for measuring compute/communication overlap.

    import glucx.torch
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    handle = glucx.torch.instrument(ddp, optimizer)      # one line
    ...train...
    handle.remove()                                      # optional

Run the job under `glucx-trace record -o DIR -- ...` and the trace holds, per rank and training
iteration, the framework events of trace/EVENTS.md next to glucx's own communication events.
Without a trace session the events are not recorded (see "Cost").

The module also exports ShardedDataParallel (glucx/sharded.py, documented there): sharded-parameter
(ZeRO-3 / FSDP-style) data parallelism for CPU training with prefetched all-gathers, and
ScheduledDataParallel (glucx/scheduled.py): data parallelism whose gradient partitions are
synchronised in a priority plan every rank derives identically, with each partition's optimizer
step applied as its allreduce completes and the next forward overlapping the rest.

Events (trace/EVENTS.md; `iteration` is the handle's counter, 0-based):

  iteration_begin(iteration)    the DDP model's forward is called with autograd enabled
  compute_begin/end("forward", 0)
                                the wrapped module's forward (ddp.module): DDP's own work before
                                it (buffer broadcast, bucket rebuild) is in the iteration but not
                                in this phase
  compute_begin("backward", b)  bucket b's share of the backward pass starts: b = 0 when the
                                gradient of the model's output arrives (the backward pass
                                reaches the model), b > 0 right after bucket b-1 was handed to
                                communication
  compute_end("backward", b)    DDP hands gradient bucket b to communication (its comm hook runs)
  bucket_ready(b, bytes)        right after: the bucket's size in bytes (its flat gradient buffer)
  compute_begin("comm:allreduce", b)
                                the bucket's allreduce is launched (just before the call)
  compute_end("comm:allreduce", b)
                                its future completed (emitted by the thread completing it, so on
                                another thread than the begin; pair begin and end by rank, phase
                                and id, not by thread)
  compute_begin/end("optimizer", 0)
                                around optimizer.step(), if an optimizer was given
  iteration_end(iteration)      with an optimizer: when optimizer.step() returns; without one: at
                                the end of the backward pass, after DDP has waited for every
                                bucket and written the averaged gradients. An iteration that
                                reached neither (e.g. no backward) ends when the next one begins
                                or at remove().

"comm:allreduce" is communication, not compute: phases named "comm:..." are framework-level
communication (trace/EVENTS.md), which glucx-analyze counts as communication. The forward passes of
evaluation (autograd disabled) and, under `ddp.no_sync()`, the backward per bucket and the
allreduce events (DDP then communicates nothing) are not recorded.

The events name the process group `process_group` (default: the DDP model's): for a group of
the `glucx` backend they carry its comm id and this process's rank; for any other group (e.g.
"gloo", with or without GLOO_DEVICE_TRANSPORT=UCX) comm id 0 and rank -1, and the rank must be
taken from the process (the vpid context; on Gloo over glucx, the comm_init event of the Gloo
group's communicator with the same vpid names the rank). Passing a small `glucx`-backend group
as `process_group` makes a Gloo job's events carry that group's comm id and rank.

Training results are unchanged: the comm hook this installs does what DDP does without one
(each gradient bucket multiplied by 1 / group size, then allreduce SUM on the DDP model's group,
in place; bitwise the same parameters), or calls the hook given as `comm_hook`. The other hooks
only read.

Cost: whether a session records glucx events is checked once per iteration (at the forward).
While none does, the hooks return after one attribute test (a few microseconds per iteration)
and DDP keeps its own C++ allreduce path: the comm hook is registered only when instrument()
or a later iteration finds a session recording (or at once when `comm_hook` is given), and then
stays (DDP cannot unregister one). With it, each bucket goes through Python: DDP's reducer
copies the gradients into the bucket and the hook multiplies the bucket in a second pass, and
the completion is a Python callback on the backend's thread (about the cost of torch's own
Python allreduce_hook: +0.1-0.2 ms per step for a one-bucket model on this 2-core VM). While a
session records, each event is one call into glucx._C plus the tracepoint (~0.2 us recorded).

Thread-safety: the hooks run on the threads PyTorch runs them on (forward and optimizer on the
caller's thread, backward hooks on the autograd thread, completions on the backend's threads);
the handle's state is guarded by a lock. Instrument a model once; remove() is idempotent.

Errors: instrument() raises TypeError/RuntimeError (see its doc) and installs nothing then. A
failed allreduce raises from loss.backward() as it would without instrumentation (its
compute_end("comm:allreduce") is still recorded). The handle holds the model and optimizer weakly:
dropping them frees them (and their process group) at once, without the garbage collector.
"""

import threading
import warnings
import weakref

import torch
import torch.distributed as dist

from . import _C
from .priority_hook import PriorityHookState, priority_comm_hook, priority_hook
from .scheduled import (ScheduledDataParallel, choose_partitions, coll_priority, order_decisions,
                        plan_order, predict_exposed)
from .sharded import ShardedDataParallel

__all__ = ["instrument", "Instrumentation", "trace_enabled", "ShardedDataParallel",
           "ScheduledDataParallel", "plan_order", "predict_exposed", "order_decisions",
           "PriorityHookState", "priority_hook", "priority_comm_hook", "choose_partitions",
           "coll_priority"]

_ENGINE = torch.autograd.Variable._execution_engine

#: Phase name of a bucket's allreduce, launch to completion (communication: EVENTS.md).
COMM_PHASE = "comm:allreduce"


def trace_enabled():
    """Whether a trace session records glucx events now (False when the tracing provider is not
    loaded, e.g. outside `glucx-trace record`). Thread-safe."""
    return _C.trace_enabled()


def _tensors(obj, out, depth=0):
    """The tensors in a forward's output (tensors, lists, tuples, dicts; 8 levels at most)."""
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif depth < 8 and isinstance(obj, (list, tuple)):
        for x in obj:
            _tensors(x, out, depth + 1)
    elif depth < 8 and isinstance(obj, dict):
        for x in obj.values():
            _tensors(x, out, depth + 1)
    return out


def _traced_comm_hook(state, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """The DDP comm hook of instrument(): see Instrumentation._on_bucket."""
    return state._on_bucket(bucket)


class Instrumentation:
    """What instrument() installed on one DDP model; remove() takes it off again.

    Attributes: model and optimizer (properties: the DDP model and the optimizer, or None once
    they are gone), tracer (glucx._C.Tracer of the group the events name), iterations (training
    iterations begun so far).

    References point one way: the model (its hooks and comm hook) and the optimizer (its
    wrapped step) hold this handle; the handle holds them only weakly. So no reference cycle
    keeps a model, and with it a process group, alive until the garbage collector runs, which
    may happen on a backend thread (inside a future callback) where destroying a process group
    aborts the process.
    """

    def __init__(self, ddp_model, optimizer, process_group, comm_hook, comm_state):
        self._model = weakref.ref(ddp_model)
        self._optimizer = weakref.ref(optimizer) if optimizer is not None else None
        self._has_optimizer = optimizer is not None
        self.tracer = _C.Tracer(process_group)
        self.iterations = 0
        self._lock = threading.Lock()
        self._active = True
        self._group = ddp_model.process_group
        self._scale = 1.0 / self._group.size()
        self._user_hook, self._user_state = comm_hook, comm_state
        # the iteration in progress: its number and whether it is recorded
        self._open = None
        self._on = False
        self._sync = False
        self._bwd_open = False  # a compute_begin("backward", b) awaits its end
        self._in_fwd = False  # inside the DDP model's forward of an open iteration
        self._handles = []
        self._step_wrapper = None  # weak reference to the wrapper of optimizer.step
        self._hooked = False  # the comm hook is registered
        self._hook_error = None  # why a late registration failed (bucket events then missing)

    @property
    def model(self):
        return self._model()

    @property
    def optimizer(self):
        return self._optimizer() if self._optimizer is not None else None

    # ---- installation ----------------------------------------------------------------------

    def _install(self, ddp_model, optimizer):
        m = ddp_model
        self._handles = [
            m.register_forward_pre_hook(self._on_ddp_pre),
            m.register_forward_hook(self._on_ddp_post),
            m.module.register_forward_pre_hook(self._on_fwd_pre),
            m.module.register_forward_hook(self._on_fwd_post),
        ]
        # The comm hook replaces DDP's C++ allreduce path by a Python one (a few tens of us per
        # bucket, and one more pass over the gradients for the averaging): register it only
        # when a session records (now, or at the first iteration that finds one), unless the
        # user's own hook must run anyway.
        if self._user_hook is not None or _C.trace_enabled():
            try:
                self._register_comm_hook(m)
            except RuntimeError as e:
                for h in self._handles:
                    h.remove()
                self._handles = []
                raise RuntimeError(
                    "glucx.torch.instrument: cannot register the tracing comm hook on %s (%s); "
                    "DDP takes one comm hook per model: pass yours as instrument(..., "
                    "comm_hook=HOOK, comm_state=STATE) instead of registering it"
                    % (type(m).__name__, e)) from e
        if optimizer is not None:
            opt = optimizer
            orig = opt.step  # bound method, or a wrapper installed on the instance before us
            if getattr(orig, "__self__", None) is opt and hasattr(orig, "__func__"):
                # the class's step: call its function with a weak reference to the optimizer,
                # so the wrapper (an attribute of the optimizer) does not hold the optimizer
                func, ref = orig.__func__, weakref.ref(opt)

                def call(*args, **kwargs):
                    return func(ref(), *args, **kwargs)
                restore = None  # remove() deletes the instance attribute
            else:
                call = restore = orig

            def step(*args, **kwargs):
                return self._on_step(call, args, kwargs)

            # keep markers such as the LR scheduler's _with_counter
            step.__dict__.update(getattr(orig, "__dict__", {}))
            step.__doc__ = getattr(orig, "__doc__", None)
            step._glucx_restore = restore
            self._step_wrapper = weakref.ref(step)
            opt.step = step

    def _register_comm_hook(self, ddp_model):
        ddp_model.register_comm_hook(self, _traced_comm_hook)
        self._hooked = True

    def remove(self):
        """Stop recording and take the hooks off. Idempotent; thread-safe.

        DDP cannot unregister a comm hook: the model keeps this one, which from then on only
        does the plain allreduce (or calls `comm_hook`), recording nothing. optimizer.step is
        restored unless something wrapped it after instrument(); then the wrapper stays and
        records nothing. An iteration in progress is ended."""
        with self._lock:
            if not self._active:
                return
            self._active = False
            self._end_iteration_locked()
        for h in self._handles:
            h.remove()
        self._handles = []
        opt = self.optimizer
        mine = self._step_wrapper() if self._step_wrapper is not None else None
        if opt is not None and mine is not None and opt.__dict__.get("step") is mine:
            if mine._glucx_restore is None:
                del opt.step  # it was the class's method: attribute lookup finds it again
            else:
                opt.step = mine._glucx_restore  # a wrapper that was on the instance before us

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False

    # ---- iterations --------------------------------------------------------------------------

    def _end_iteration_locked(self):
        if self._open is not None:
            if self._on:
                self.tracer.iteration_end(self._open)
            self._open = None
            self._on = False

    def _end_iteration(self, iteration):
        with self._lock:
            if self._open == iteration:
                self._end_iteration_locked()

    def _on_ddp_pre(self, module, inputs):
        self._in_fwd = False
        if not torch.is_grad_enabled():
            return
        with self._lock:
            self._end_iteration_locked()
            if not self._active:
                return
            it = self.iterations
            self.iterations += 1
            self._open = it
            self._on = _C.trace_enabled()  # once per iteration
            if self._on and not self._hooked and self._hook_error is None:
                try:  # between iterations: DDP switches its averaging to the hook cleanly
                    self._register_comm_hook(module)
                except RuntimeError as e:  # e.g. the user registered a comm hook since
                    self._hook_error = str(e)
                    warnings.warn("glucx.torch: no bucket_ready/allreduce events for this "
                                  "model: cannot register the tracing comm hook (%s)" % e)
            self._sync = bool(getattr(module, "require_backward_grad_sync", True))
            self._bwd_open = False
            self._in_fwd = True
            if self._on:
                self.tracer.iteration_begin(it)

    def _on_fwd_pre(self, module, inputs):
        if self._on and self._in_fwd:
            self.tracer.compute_begin("forward", 0)

    def _on_fwd_post(self, module, inputs, output):
        if self._on and self._in_fwd:
            self.tracer.compute_end("forward", 0)

    def _on_ddp_post(self, module, inputs, output):
        if not self._in_fwd:
            return
        self._in_fwd = False
        if not (self._on and self._sync):
            return
        # backward reaches the model when the first gradient of one of its outputs arrives
        outs = [t for t in _tensors(output, []) if t.requires_grad]
        if not outs:
            return
        it = self._open
        fired = []

        def on_grad(grad):
            if not fired and self._open == it and self._on:
                fired.append(True)
                with self._lock:
                    if not self._bwd_open:
                        self._bwd_open = True
                        self.tracer.compute_begin("backward", 0)

        for t in outs:
            t.register_hook(on_grad)

    # ---- gradient buckets ----------------------------------------------------------------

    def _on_bucket(self, bucket):
        """DDP hands bucket `bucket` to communication: end its backward compute, record it,
        launch its allreduce (DDP's averaging, or the user's hook) and record the launch and the
        completion, then start the next bucket's backward compute."""
        on = self._on and self._active
        if on:
            b = bucket.index()
            buf = bucket.buffer()
            tr = self.tracer
            with self._lock:
                if not self._bwd_open:  # backward start not seen (outputs without autograd)
                    tr.compute_begin("backward", b)
                tr.compute_end("backward", b)
                self._bwd_open = False
            tr.bucket_ready(b, buf.numel() * buf.element_size())
            tr.compute_begin(COMM_PHASE, b)
        fut = self._launch(bucket)
        if not on:
            return fut

        def done(f, b=b, tr=tr):
            try:
                return f.value()  # raises if the allreduce failed: DDP then raises it
            finally:
                tr.compute_end(COMM_PHASE, b)

        fut = fut.then(done)
        if not bucket.is_last():
            with self._lock:
                self._bwd_open = True
                tr.compute_begin("backward", b + 1)
        elif not self._has_optimizer:
            # End the iteration after DDP's own end-of-backward callback (queued after this
            # hook returns; it waits for every bucket and writes the gradients): a callback
            # queued now runs before DDP's, and the one it queues runs after it.
            it = self._open

            def after_ddp():
                self._end_iteration(it)

            try:
                _ENGINE.queue_callback(lambda: _ENGINE.queue_callback(after_ddp))
            except RuntimeError:
                pass  # not inside a backward pass (DDP's join): the next forward ends it
        return fut

    def _launch(self, bucket):
        if self._user_hook is not None:
            return self._user_hook(self._user_state, bucket)
        buf = bucket.buffer()
        buf.mul_(self._scale)  # as DDP's reducer does without a comm hook: x * (1 / size)
        fut = dist.all_reduce(buf, group=self._group, async_op=True).get_future()
        return fut.then(lambda f: f.value()[0])

    # ---- optimizer -------------------------------------------------------------------------

    def _on_step(self, orig, args, kwargs):
        on = self._on and self._active and self._open is not None
        if on:
            self.tracer.compute_begin("optimizer", 0)
        try:
            return orig(*args, **kwargs)
        finally:
            if on:
                self.tracer.compute_end("optimizer", 0)
            with self._lock:
                self._end_iteration_locked()


def instrument(ddp_model, optimizer=None, process_group=None, comm_hook=None, comm_state=None):
    """Record iteration, forward/backward/optimizer compute, bucket and allreduce events of a
    DistributedDataParallel model (see this module's documentation for the events and cost).

    Args:
      ddp_model: a torch.nn.parallel.DistributedDataParallel model that has no comm hook yet
        (DDP takes one per model; pass yours as comm_hook). Backends: any that DDP runs on
        ("gloo", with or without GLOO_DEVICE_TRANSPORT=UCX, and "glucx").
      optimizer: optional torch.optim.Optimizer: its step() on this instance is wrapped to
        record the "optimizer" phase and end the iteration.
      process_group: the group the events name (comm id and rank); default the DDP model's.
        Only a `glucx` backend group gives them a comm id and rank (see the module doc).
      comm_hook, comm_state: optional DDP comm hook (hook(state, bucket) -> Future[Tensor]) to
        run instead of DDP's averaging allreduce; its launch and completion are recorded.

    Returns: an Instrumentation handle; handle.remove() stops recording (also a context
    manager).

    Raises: TypeError if ddp_model is not a DistributedDataParallel model or the optimizer has
    no step(); RuntimeError if DDP refuses the comm hook (one is registered already), with
    nothing installed. (If the hook is registered later, at the first iteration a session
    records, and DDP refuses it then, a warning says so and the bucket and allreduce events are
    left out.) Call it from the thread that trains, before or between iterations.
    """
    if not isinstance(ddp_model, torch.nn.parallel.DistributedDataParallel):
        raise TypeError("glucx.torch.instrument: ddp_model must be a "
                        "torch.nn.parallel.DistributedDataParallel, got %s"
                        % type(ddp_model).__name__)
    if optimizer is not None and not callable(getattr(optimizer, "step", None)):
        raise TypeError("glucx.torch.instrument: optimizer %s has no step()"
                        % type(optimizer).__name__)
    if comm_hook is not None and not callable(comm_hook):
        raise TypeError("glucx.torch.instrument: comm_hook must be callable, got %s"
                        % type(comm_hook).__name__)
    pg = process_group if process_group is not None else ddp_model.process_group
    h = Instrumentation(ddp_model, optimizer, pg, comm_hook, comm_state)
    h._install(ddp_model, optimizer)
    return h
