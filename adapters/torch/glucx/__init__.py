"""glucx for PyTorch: the Gloo device "UCX" and libglucx's counters.

Importing this package loads its extension, glucx._C, which registers glucx's Gloo transport in
PyTorch's Gloo device registry under the name "UCX". A job then runs its Gloo process groups on
glucx with no code change:

    GLOO_DEVICE_TRANSPORT=UCX torchrun --nproc-per-node 4 train.py   # init_process_group("gloo")

The job does not even need to import glucx: the package installs a start-up hook
(glucx-startup.pth, module _glucx_startup) that imports glucx right after torch.distributed is
imported. GLUCX_DISABLE_HOOK=1 turns the hook off.

The extension and the libraries it loads (libglucx.so.0, libglucx_gloo.so.0) live in this
folder; the extension finds them through its $ORIGIN run path. PyTorch 1.13 reads
GLOO_DEVICE_TRANSPORT once, when the process creates its first Gloo device.

All functions are thread-safe.
"""

import torch as _torch  # noqa: F401  -- load libtorch the way torch does, before the extension

from . import _C

__all__ = ["DEVICE_NAME", "stats", "version", "gloo_build_check", "device_registered",
           "devices_created"]

#: The registry key, i.e. the value of GLOO_DEVICE_TRANSPORT that selects glucx.
DEVICE_NAME = _C.DEVICE_NAME

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


def _on_torch_distributed():
    """Called by the start-up hook (_glucx_startup) right after torch.distributed is imported.

    Importing this package has registered the device already; this is where anything else that
    must happen once torch.distributed exists goes.
    """
    return _C.device_registered()
