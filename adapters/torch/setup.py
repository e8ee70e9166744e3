"""Build of the glucx Python package.

Nothing is compiled here: the extension glucx._C is a target of the repository's CMake build,
which stages it with the libraries it loads (libglucx.so.0, libglucx_gloo.so.0; the module's
RUNPATH is $ORIGIN). build_ext configures that build if it is not configured yet, builds the
target glucx_torch_package (a no-op when it is up to date) and copies the staged folder into the
package. build_py also puts glucx-startup.pth at the top of the build, so that a wheel (what pip
builds) installs it into site-packages.

Environment:
  GLUCX_BUILD_DIR   the CMake build to use (default <repo>/build; relative to the repository)
  GLUCX_SOURCE_DIR  the repository (default: two folders above this file)
"""

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
REPO = Path(os.environ.get("GLUCX_SOURCE_DIR") or HERE.parent.parent).resolve()
BUILD = (REPO / os.environ.get("GLUCX_BUILD_DIR", "build")).resolve()
STARTUP_PTH = "glucx-startup.pth"


def _repo_version():
    """The project version from the top-level CMakeLists.txt (one source of truth)."""
    top = REPO / "CMakeLists.txt"
    try:
        text = top.read_text()
    except OSError as e:
        raise SystemExit(
            f"glucx setup: cannot read {top} ({e}); set GLUCX_SOURCE_DIR to the glucx repository"
        )
    m = re.search(r"project\(\s*glucx\s+VERSION\s+([0-9.]+)", text)
    if not m:
        raise SystemExit(f"glucx setup: no 'project(glucx VERSION x.y.z' in {top}")
    return m.group(1)


def _cache_value(build, name):
    """A variable of the build's CMakeCache.txt, or None."""
    try:
        text = (build / "CMakeCache.txt").read_text()
    except OSError:
        return None
    m = re.search(r"^%s:[A-Z]+=(.*)$" % re.escape(name), text, re.MULTILINE)
    return m.group(1) if m else None


def _run(cmd):
    print("glucx setup: " + " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True)


def _check_loads(module):
    """Import the staged module in a child interpreter (after torch, as glucx does): an
    unresolved symbol or a missing library shows here, not in the first job."""
    probe = (
        "import importlib.util, sys, torch\n"
        "spec = importlib.util.spec_from_file_location('_C', sys.argv[1])\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", probe, str(module)],
        env=dict(os.environ, GLUCX_DISABLE_HOOK="1"),
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        raise SystemExit(
            f"glucx setup: {module} does not load with {sys.executable} "
            f"(exit status {r.returncode}):\n{r.stderr.strip()}"
        )


class BuildExtFromCMake(build_ext):
    """Builds (or reuses) the repository's CMake build and copies glucx._C and its libraries."""

    def build_extension(self, ext):
        if not (BUILD / "CMakeCache.txt").exists():
            _run(["cmake", "-S", REPO, "-B", BUILD, "-DCMAKE_BUILD_TYPE=RelWithDebInfo"])
        build = ["cmake", "--build", BUILD, "--target", "glucx_torch_package"]
        if "CMAKE_BUILD_PARALLEL_LEVEL" not in os.environ:
            build += ["--parallel", str(os.cpu_count() or 1)]
        _run(build)

        stage = _cache_value(BUILD, "GLUCX_TORCH_STAGE_DIR")
        if not stage:
            raise SystemExit(
                f"glucx setup: the build {BUILD} has no PyTorch extension "
                "(configured with -DGLUCX_BUILD_TORCH=OFF or -DGLUCX_BUILD_GLOO=OFF?)"
            )
        stage = Path(stage)
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        module = stage / ("_C" + suffix)
        if not module.exists():
            found = sorted(p.name for p in stage.glob("_C.*"))
            raise SystemExit(
                f"glucx setup: {module} is missing (found {found or 'nothing'}): the build "
                f"{BUILD} was made for another interpreter than this one ({suffix}); "
                "see GLUCX_PYTHON in its CMakeCache.txt"
            )
        libs = sorted(stage.glob("lib*.so.*"))
        names = {p.name for p in libs}
        for want in ("libglucx.so.0", "libglucx_gloo.so.0"):
            if want not in names:
                raise SystemExit(f"glucx setup: {stage / want} is missing (build {BUILD})")

        _check_loads(module)

        dest = Path(self.get_ext_fullpath(ext.name))
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(module, dest)
        for lib in libs:
            shutil.copy(lib, dest.parent / lib.name)
        print(f"glucx setup: copied {module.name} and {sorted(names)} from {stage}", flush=True)


class BuildPyWithStartupHook(build_py):
    """Also puts glucx-startup.pth at the top of the build (site-packages once installed)."""

    def run(self):
        super().run()
        self.copy_file(str(HERE / STARTUP_PTH), os.path.join(self.build_lib, STARTUP_PTH))

    def get_outputs(self, include_bytecode=True):
        return super().get_outputs(include_bytecode) + [os.path.join(self.build_lib, STARTUP_PTH)]


# Keep setuptools' scratch folders in the CMake build, not in the source tree.
_scratch = BUILD / "adapters" / "torch" / "setuptools"
_scratch.mkdir(parents=True, exist_ok=True)

setup(
    version=_repo_version(),
    packages=["glucx"],
    py_modules=["_glucx_startup", "_glucx_torchrun"],
    ext_modules=[Extension("glucx._C", sources=[])],
    cmdclass={"build_ext": BuildExtFromCMake, "build_py": BuildPyWithStartupHook},
    options={"build": {"build_base": str(_scratch)}, "egg_info": {"egg_base": str(_scratch)}},
    zip_safe=False,
)
