"""Runs a job script unchanged and reports the transport's counters when the interpreter exits.

usage (as the launcher's training script): stats_runner.py JOB.py JOB_ARGS...
The job runs as __main__ via runpy, exactly as if the launcher had started it. Before that, this
runner imports nothing but the standard library, so whatever makes GLOO_DEVICE_TRANSPORT=UCX work
must come from the interpreter's start-up (the package's start-up hook), not from an import done
here or in the job. Only at exit (atexit) does it import glucx, to read glucx.stats() — the
counters are process-wide and live in the already-loaded library, so reading them late sees every
byte the job moved.

Writes, in $TORCH_SUITE_OUT: pid<RANK> at start (so the harness can kill a hung worker by pid)
and exit<RANK>.json at exit: exit status, sys.executable and sys.prefix, whether glucx was
already imported before the job started, glucx.stats() (or the import error).
"""
import atexit
import json
import os
import runpy
import sys
import traceback

OUT = os.environ["TORCH_SUITE_OUT"]
RANK = os.environ.get("RANK", "?")
STATE = {"exit": None, "executable": sys.executable, "prefix": sys.prefix, "pid": os.getpid(),
         "glucx_imported_before_job": "glucx" in sys.modules}

with open(os.path.join(OUT, f"pid{RANK}"), "w") as f:
    f.write(str(os.getpid()))


def _report():
    try:
        import glucx

        STATE["stats"] = {k: v for k, v in glucx.stats().items()}
    except Exception as e:  # noqa: B902 - reported to the test
        STATE["stats"] = None
        STATE["stats_error"] = f"{type(e).__name__}: {e}"
    with open(os.path.join(OUT, f"exit{RANK}.json"), "w") as f:
        json.dump(STATE, f)


atexit.register(_report)
job = sys.argv[1]
sys.argv = sys.argv[1:]
try:
    runpy.run_path(job, run_name="__main__")
    STATE["exit"] = 0
except SystemExit as e:
    STATE["exit"] = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    raise
except BaseException:
    STATE["exit"] = 1
    STATE["error"] = traceback.format_exc()
    raise
