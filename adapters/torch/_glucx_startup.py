"""Start-up hook of the glucx package, imported by glucx-startup.pth in site-packages.

It runs in every Python process of the environment, so it only installs an import finder and
returns: no torch, no glucx, nothing else is imported. The finder waits for two modules:

* torch.distributed (``import torch`` imports it): once that import has finished, the hook
  imports glucx, which registers the Gloo device "UCX" (so GLOO_DEVICE_TRANSPORT=UCX works in
  a job that never imports glucx) and the torch.distributed backend "glucx" (so
  init_process_group("glucx") and new_group(backend="glucx") work too).
* torch.distributed.elastic.multiprocessing.api (torchrun, ``python -m torch.distributed.run``):
  on Python 3.11, PyTorch 1.13's Std.from_str("0") returns None (3.11's IntFlag no longer lists
  the zero and multi-bit members when iterated), and every launch with the default
  --redirects/--tee fails in to_map ("'NoneType' object has no attribute 'get'"; PyTorch issue
  #92319, fixed in PyTorch 2.0). When, and only when, that bug is present, the hook replaces
  Std.from_str with one that builds the flag from its number.

Once both have been seen, the finder removes itself.

The hook must never break the job's import of torch: any failure to load glucx is caught. It is
reported (a RuntimeWarning) only when GLOO_DEVICE_TRANSPORT=UCX asks for the device, since
the job's first init_process_group("gloo") will then fail. GLUCX_DISABLE_HOOK=1 (any value but
"" and "0") disables the hook.
"""

import os
import sys


def _disabled():
    return os.environ.get("GLUCX_DISABLE_HOOK", "") not in ("", "0")


def register_device(module=None):
    """Import glucx (which registers the device and the backend); report a failure only if it
    matters."""
    pending = sys.modules.get("glucx")
    if pending is not None and getattr(getattr(pending, "__spec__", None), "_initializing", False):
        return  # torch is being imported by glucx's own import, which goes on to register
    try:
        import glucx

        glucx._on_torch_distributed()
    except Exception as e:  # noqa: BLE001 -- whatever it is, the job's import must go on
        if os.environ.get("GLOO_DEVICE_TRANSPORT", "").upper() == "UCX":
            import warnings

            warnings.warn(
                "glucx: cannot register the Gloo device 'UCX' (%s: %s); with "
                "GLOO_DEVICE_TRANSPORT=UCX, init_process_group('gloo') will fail with "
                "'unsupported gloo device'" % (type(e).__name__, e),
                RuntimeWarning,
                stacklevel=2,
            )


def fix_std_parsing(api=None):
    """Replace Std.from_str of torch.distributed.elastic.multiprocessing.api (@p api, imported
    if None) if it has the Python 3.11 bug described above. Returns True if it was replaced."""
    try:
        if api is None:
            from torch.distributed.elastic.multiprocessing import api
        std = api.Std
        if std.from_str("0") is not None:
            return False
        import re

        value_re = getattr(api, "_VALUE_REGEX", r"^[0123]$")
        mapping_re = getattr(api, "_MAPPING_REGEX", r"^(\d:[0123],)*(\d:[0123])$")

        def from_str(cls, vm):
            if re.match(value_re, vm):
                return cls(int(vm))
            if re.match(mapping_re, vm):
                return {int(r): cls(int(v)) for r, v in (kv.split(":") for kv in vm.split(","))}
            raise ValueError(f"{vm} does not match: <{value_re}> or <{mapping_re}>")

        std.from_str = classmethod(from_str)
        return True
    except Exception:  # noqa: BLE001 -- leave torch as it is
        return False


# module name -> what to run right after that module has been imported
_pending = {
    "torch.distributed": register_device,
    "torch.distributed.elastic.multiprocessing.api": fix_std_parsing,
}


class _Loader:
    """Runs the real loader of a watched module, then its action; puts the real loader back."""

    def __init__(self, loader, action):
        self._loader = loader
        self._action = action

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.loader is self:
            spec.loader = self._loader
        if getattr(module, "__loader__", None) is self:
            module.__loader__ = self._loader
        self._loader.exec_module(module)
        if not _disabled():
            self._action(module)


class _Finder:
    """A sys.meta_path entry that only reacts to the modules in _pending."""

    def find_spec(self, fullname, path=None, target=None):
        action = _pending.pop(fullname, None)
        if action is None:
            return None
        if not _pending:
            _uninstall()
        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None)
            if finder is self or find_spec is None:
                continue
            spec = find_spec(fullname, path, target)
            if spec is None:
                continue
            if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = _Loader(spec.loader, action)
            return spec
        return None


_finder = _Finder()


def _uninstall():
    try:
        sys.meta_path.remove(_finder)
    except ValueError:
        pass


def install():
    """Install the hook (what glucx-startup.pth calls). Never raises."""
    try:
        if _disabled():
            return
        for name in [n for n in _pending if n in sys.modules]:
            _pending.pop(name)(sys.modules[name])
        if _pending and _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)
    except Exception:  # noqa: BLE001 -- a start-up hook must not stop the interpreter
        pass
