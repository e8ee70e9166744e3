#!/usr/bin/python3
"""glucx-bench --calibrate under GLUCX_TOPOLOGY: alpha/beta per dimension.

Four ranks on this host in two packages faked with GLUCX_HOSTID (topology [FullyConnected,
Ring], npus_count [2, 2]; the file's package p is host "pkg<p>"), started the way torchrun
starts them (RANK, WORLD_SIZE, GLUCX_STORE). Checks, from the file's rules (docs/topology.md):
rank 0's neighbour along dimension 0 is rank 1, along dimension 1 rank 2; the calibration file
has dim0/dim1 alpha and beta, positive and finite; the link classes equal the dimensions
(intra = dimension 0, inter = the only outer dimension); a job started with the file as
GLUCX_CALIBRATION runs. A communicator of 2 ranks placed by job rank (RANK 0 and 2: one per
package) measures dimension 1 only and says dimension 0 was not measured.

usage: test_calibrate_dims.py --bench BUILD/plugin/tools/glucx-bench --work DIR
"""
import argparse
import math
import os
import shutil
import subprocess
import sys

TOPOLOGY = """topology: [FullyConnected, Ring]
npus_count: [2, 2]
bandwidth: [50, 1]
latency: [500, 10000]
"""

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def launch(bench, work, name, job_ranks, args, extra_env=None):
    """Start one process per job rank; @return (exit codes, rank 0's stdout, stderr texts)."""
    store = os.path.join(work, name + "-store")
    shutil.rmtree(store, ignore_errors=True)
    scale = float(os.environ.get("GLUCX_TEST_TIME_SCALE", "1") or 1)
    timeout_ms = int(60000 * max(scale, 1))
    procs = []
    for i, job in enumerate(job_ranks):
        env = dict(os.environ)
        for k in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMI_SIZE", "PMIX_RANK", "SLURM_PROCID"):
            env.pop(k, None)
        env.update({"RANK": str(job), "WORLD_SIZE": "4", "GLUCX_STORE": "file:" + store,
                    "GLUCX_TOPOLOGY": os.path.join(work, "topo.yaml"),
                    "GLUCX_HOSTID": "pkg%d" % (job // 2)})
        if len(job_ranks) != 4:
            # a communicator smaller than the file: glucx-bench takes its rank and size from
            # PMI_RANK/PMI_SIZE (RANK unset), glucx places it by its job rank from PMIX_RANK
            for k in ("RANK", "WORLD_SIZE"):
                env.pop(k)
            env.update({"PMI_RANK": str(i), "PMI_SIZE": str(len(job_ranks)),
                        "PMIX_RANK": str(job)})
        if extra_env:
            env.update(extra_env)
        procs.append(subprocess.Popen([bench, *args, "--timeout-ms", str(timeout_ms)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=timeout_ms / 1000 * 3)
        except subprocess.TimeoutExpired:
            for q in procs:
                if q.poll() is None:
                    q.kill()
            o, e = p.communicate()
        outs.append((p.returncode, o, e))
    return [o[0] for o in outs], outs[0][1], [o[2] for o in outs]


def read_calibration(path):
    values = {}
    with open(path) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                k, v = line.split()
                values[k] = float(v)
    return values


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    with open(os.path.join(a.work, "topo.yaml"), "w") as f:
        f.write(TOPOLOGY)
    cal = os.path.join(a.work, "cal.txt")
    codes, out, errs = launch(a.bench, a.work, "full", [0, 1, 2, 3], ["--calibrate", cal])
    check(codes == [0, 0, 0, 0], f"calibration exit codes {codes}: {errs}")
    print(out)
    check("dim 0  FullyConnected" in out and "measured between rank 0 and rank 1" in out,
          "dimension 0 measured against rank 1")
    check("dim 1  Ring" in out and "measured between rank 0 and rank 2" in out,
          "dimension 1 measured against rank 2")
    v = read_calibration(cal) if os.path.exists(cal) else {}
    for k in ("dim0.alpha_ns", "dim0.beta_ns_per_byte", "dim1.alpha_ns", "dim1.beta_ns_per_byte"):
        check(k in v and math.isfinite(v[k]) and v[k] > 0, f"{k} = {v.get(k)}")
    check("dim2.alpha_ns" not in v, "no dimension 2")
    if all(k in v for k in ("intra.alpha_ns", "dim0.alpha_ns", "inter.beta_ns_per_byte",
                            "dim1.beta_ns_per_byte")):
        check(v["intra.alpha_ns"] == v["dim0.alpha_ns"], "intra = dimension 0")
        check(v["inter.beta_ns_per_byte"] == v["dim1.beta_ns_per_byte"], "inter = dimension 1")
    # the file is accepted as GLUCX_CALIBRATION by a job on the same topology
    codes, out, errs = launch(a.bench, a.work, "use", [0, 1, 2, 3],
                              ["-b", "8", "-e", "64K", "--iters", "2"],
                              {"GLUCX_CALIBRATION": cal})
    check(codes == [0, 0, 0, 0] and "wrong elements in total: 0 (OK)" in out,
          f"job with the calibration: {codes} {errs}")
    # a smaller communicator: job ranks 0 and 2, one per package
    cal2 = os.path.join(a.work, "cal2.txt")
    codes, out, errs = launch(a.bench, a.work, "half", [0, 2], ["--calibrate", cal2])
    check(codes == [0, 0], f"2-rank calibration: {codes} {errs}")
    print(out)
    check("dim 0  FullyConnected not measured" in out, "dimension 0 not measured with 2 ranks")
    check("dim 1  Ring" in out and "measured between rank 0 and rank 1" in out,
          "dimension 1 against comm rank 1 (job rank 2)")
    v2 = read_calibration(cal2) if os.path.exists(cal2) else {}
    check("dim1.alpha_ns" in v2 and "dim0.alpha_ns" not in v2, f"cal2 keys: {sorted(v2)}")
    print("failures:", len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
