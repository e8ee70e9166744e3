"""glucx for PyTorch: the Gloo device "UCX", the torch.distributed backend "glucx", and
libglucx's counters.

Importing this package loads its extension, glucx._C, and registers two things:

* glucx's Gloo transport in PyTorch's Gloo device registry under the name "UCX": Gloo process
  groups then run Gloo's algorithms on glucx's transport with no code change,

      GLOO_DEVICE_TRANSPORT=UCX torchrun --nproc-per-node 4 train.py   # init_process_group("gloo")

* the backend "glucx" (torch.distributed.Backend.register_backend): process groups that run
  libglucx's own collective algorithms,

      dist.init_process_group("glucx")                  # env://, tcp://, file://
      sub = dist.new_group([0, 1], backend="glucx")

The job does not even need to import glucx: the package installs a start-up hook
(glucx-startup.pth, module _glucx_startup) that imports glucx right after torch.distributed is
imported. GLUCX_DISABLE_HOOK=1 turns the hook off (then ``import glucx`` before
init_process_group registers both).

The backend (class ProcessGroupGlucx, a torch.distributed.ProcessGroup usable by
DistributedDataParallel) supports all_reduce, all_reduce_coalesced, all_gather,
_all_gather_base, reduce_scatter, _reduce_scatter_base, all_to_all, all_to_all_single (with and
without splits), broadcast, reduce, gather, scatter, barrier, send, recv and recv from any
source, on CPU tensors of dtype float16, bfloat16, float32, float64, int8, uint8, int32, int64
and bool, with ReduceOp SUM, PRODUCT, MIN, MAX, AVG (floating dtypes) and BAND, BOR, BXOR
(integer and bool dtypes). Semantics:

* Every operation returns at once; the returned Work's wait() and get_future() give the result
  (the Future's value is the list of output tensors). The calling thread is never blocked while
  an operation runs; collectives run in call order on one thread per group.
* Non-contiguous tensors and views are handled (results are copied back into them); tensors
  with no elements are valid; sparse, meta and non-CPU tensors, unsupported dtypes and
  ReduceOps (e.g. BAND on a float tensor, PREMUL_SUM), wrong list lengths and sizes raise
  RuntimeError at the call, naming the operation, the sizes and the rank.
* reduce: only the root's tensor receives the result; the other ranks' tensors are left
  unchanged.
* Sizes or dtypes that differ across ranks, a peer that dies, or a timeout make the operation
  raise RuntimeError on every rank (from wait(), or the Future) within the group's timeout, with
  glucx's message (collective, sizes, peer); the group is then failed, and every later operation
  raises the same error at once (create a new group to go on). A wait(timeout) shorter than the
  operation also fails the group. Messages carry glucx's text, never PyTorch's C++ backtrace.
* A point-to-point message longer than the receive: the recv raises RuntimeError naming both
  lengths and the sender (nothing is written past its tensor) and fails the group on every rank:
  the sender's and the other ranks' next operations on it raise at once with that text. The send
  itself completes or raises, depending on whether it finished before the failure reached it.
* Network interface (between hosts; ranks on one host use shared memory): GLOO_SOCKET_IFNAME,
  read at each group creation; a comma-separated list gives the group's UCX context every listed
  interface as a network device (UCX picks the ones that reach each peer). Unset: the interface
  holding the address this host's name resolves to, else loopback (as ProcessGroupGloo). A
  missing interface makes init_process_group/new_group raise RuntimeError naming it and
  GLOO_SOCKET_IFNAME; the other ranks raise at once too, naming that rank.
* Works inside torch.no_grad() and torch.inference_mode(); thread-safe.

Fork: UCX state does not survive fork(). In a process forked (without exec) while glucx
contexts existed -- a DataLoader worker of the fork start method, say -- every operation on a
group inherited from the parent raises RuntimeError at once, naming the fork and the 'spawn'
and 'forkserver' start methods; creating a group there raises the same way; destroying an
inherited group (destroy_process_group(group), garbage collection) releases nothing and tells
the peers nothing. The parent's groups keep working. For Gloo groups (their worker threads are
not copied by fork either, so PyTorch's ProcessGroupGloo would wait for ever) the package does
this in the child: see _after_fork_in_child. A process forked while no glucx context existed
may create its own groups. fork_check() tells whether this process may use glucx.

The extension and the libraries it loads (libglucx.so.0, libglucx_gloo.so.0) live in this
folder; the extension finds them through its $ORIGIN run path. PyTorch 1.13 reads
GLOO_DEVICE_TRANSPORT once, when the process creates its first Gloo device.

All functions are thread-safe.
"""

import torch as _torch  # noqa: F401  -- load libtorch the way torch does, before the extension

import atexit as _atexit
import ctypes as _ctypes
import os as _os
import sys as _sys

from . import _C

__all__ = ["DEVICE_NAME", "BACKEND_NAME", "ProcessGroupGlucx", "stats", "version",
           "gloo_build_check", "device_registered", "devices_created", "register_backend",
           "backend_registered", "fork_check"]

#: The registry key, i.e. the value of GLOO_DEVICE_TRANSPORT that selects glucx.
DEVICE_NAME = _C.DEVICE_NAME

#: The torch.distributed backend name: init_process_group(BACKEND_NAME).
BACKEND_NAME = "glucx"

#: The backend's process group class (a torch.distributed.ProcessGroup).
ProcessGroupGlucx = _C.ProcessGroupGlucx

#: Version of the bundled libglucx, "MAJOR.MINOR.PATCH".
__version__ = _C.version()


def stats():
    """libglucx's process-wide counters since it was loaded, as a dict of ints.

    Keys: sends, send_bytes (point-to-point sends posted and their bytes), recvs, recv_bytes
    (receives completed and the bytes they delivered), collectives (collectives started),
    comms (communicators connected). Counters of this process only; a snapshot taken while other
    threads communicate is not a consistent cut.
    """
    return _C.stats()


def version():
    """Version of the libglucx that is loaded, "MAJOR.MINOR.PATCH"."""
    return _C.version()


def gloo_build_check():
    """"" if the libgloo loaded in this process (PyTorch's) is the one glucx's Gloo shim was
    built against (same ELF build id), else the reason it is not. A mismatch makes device
    creation fail: rebuild glucx against the installed libgloo."""
    return _C.gloo_build_check()


def device_registered():
    """Whether PyTorch's Gloo device registry has DEVICE_NAME (it does once glucx is imported,
    unless another copy of glucx registered it first)."""
    return _C.device_registered()


def devices_created():
    """How many Gloo devices glucx's creator has made in this process (one per Gloo process
    group PyTorch creates with GLOO_DEVICE_TRANSPORT=UCX)."""
    return _C.devices_created()


def fork_check():
    """"" if this process may use glucx, else why not: it was forked (without exec) while glucx
    contexts existed in its parent (libglucx's glucx_fork_check())."""
    return _C.fork_check()


# ProcessGroupGloo methods that start work on its threads (PyTorch 1.13's ProcessGroup API).
_GLOO_OPS = ("broadcast", "allreduce", "allreduce_coalesced", "reduce", "allgather",
             "_allgather_base", "allgather_coalesced", "gather", "scatter", "reduce_scatter",
             "_reduce_scatter_base", "alltoall_base", "alltoall", "send", "recv",
             "recv_anysource", "barrier", "monitored_barrier")
# Gloo groups this (forked) process inherited; each also holds a reference never released.
_inherited_gloo = []


def _fence_inherited_gloo_groups(reason):
    """In a forked child that must not use glucx: make every ProcessGroupGloo it inherited raise
    `reason` from each operation instead of queueing work for threads fork did not copy (which
    waits for ever), and keep those groups alive for good (a Python reference that is never
    released), since their destructor would join those threads."""
    c10d = _sys.modules.get("torch.distributed.distributed_c10d")
    cls = getattr(_sys.modules.get("torch.distributed"), "ProcessGroupGloo", None)
    if c10d is None or cls is None:
        return
    found = [pg for pg in list(getattr(c10d, "_pg_map", {})) if isinstance(pg, cls)]
    world = getattr(getattr(c10d, "GroupMember", None), "WORLD", None)
    if isinstance(world, cls) and not any(world is pg for pg in found):
        found.append(world)
    for pg in found:
        _ctypes.pythonapi.Py_IncRef(_ctypes.py_object(pg))
    _inherited_gloo.extend(found)
    if not found or getattr(cls, "_glucx_fenced", False):
        return

    def fence(name, orig):
        def guarded(self, *args, **kwargs):
            if any(self is pg for pg in _inherited_gloo):
                raise RuntimeError(
                    f"glucx: ProcessGroupGloo.{name} (rank {self.rank()} of {self.size()}) on a "
                    f"group created before this process was forked: {reason}")
            return orig(self, *args, **kwargs)

        guarded.__name__ = name
        guarded.__doc__ = getattr(orig, "__doc__", None)
        return guarded

    for name in _GLOO_OPS:
        orig = getattr(cls, name, None)
        if orig is not None:
            setattr(cls, name, fence(name, orig))
    cls._glucx_fenced = True


def _after_fork_in_child():
    """os.register_at_fork(after_in_child=...): nothing unless this process must not use glucx."""
    try:
        reason = _C.fork_check()
        if reason:
            if reason.startswith("fork_check: "):
                reason = reason[len("fork_check: "):]
            _fence_inherited_gloo_groups(reason)
    except Exception:  # noqa: BLE001 -- a fork hook must never break the child
        pass


def _create_process_group(store, rank, size, timeout):
    """The creator registered for backend "glucx": torch.distributed calls it with the group's
    store (a PrefixStore unique to the group), rank, size and timeout (datetime.timedelta) on
    every member rank, and it returns a ProcessGroupGlucx once all ranks have joined.
    Raises RuntimeError if the rendezvous fails or times out, if GLOO_SOCKET_IFNAME names an
    interface this host lacks, or if another rank could not join (naming it and why)."""
    return _C.ProcessGroupGlucx(store, rank, size, timeout)


def backend_registered():
    """Whether torch.distributed knows the backend "glucx" (registered by this or another copy
    of the package)."""
    import torch.distributed as dist

    return "GLUCX" in getattr(dist.Backend, "_plugins", {})


def register_backend():
    """Register the backend "glucx" with torch.distributed.Backend.register_backend, unless it
    is registered already (importing glucx does this; calling it again is harmless).

    Returns True if this call registered it, False if it was already registered or
    torch.distributed is not available in this PyTorch build.
    """
    import torch.distributed as dist

    if not dist.is_available() or backend_registered():
        return False
    dist.Backend.register_backend(BACKEND_NAME, _create_process_group)
    return True


def _on_torch_distributed():
    """Called by the start-up hook (_glucx_startup) right after torch.distributed is imported.

    Importing this package has registered the device and the backend already; this is where
    anything else that must happen once torch.distributed exists goes.
    """
    register_backend()
    return _C.device_registered()


register_backend()
# Before the interpreter finalizes: libglucx's collective threads must stop completing Works
# (freeing tensors and running Future callbacks need the GIL; a native thread asking for it
# while the interpreter finalizes is ended mid-call and the process aborts).
_atexit.register(_C._prepare_for_exit)
_os.register_at_fork(after_in_child=_after_fork_in_child)
