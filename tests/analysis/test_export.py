#!/usr/bin/env python3
"""glucx-analyze export: ASTRA-sim network and system files from a report and a topology file.

usage: test_export.py --analyze BUILD/analysis/glucx-analyze --torus tests/cluster/torus2x2.yaml
                      --work DIR

Reports are written by hand here, so every expected value follows from the test's own input:
the exported algorithm of each kind is the one with the most time, its implementation follows
the mapping documented in analysis/README.md ("Export to ASTRA-sim"), kinds ASTRA-sim's system
layer lacks are listed as not exported with their call counts, and bad input fails with a
message that names the file.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from topofile import read_yaml_lists  # noqa: E402

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)
    return cond


def run(a, args, env=None):
    e = dict(os.environ)
    e.pop("GLUCX_TOPOLOGY", None)
    e.pop("GLUCX_CALIBRATION", None)
    e.update(env or {})
    return subprocess.run([a.analyze, "export"] + args, capture_output=True, text=True,
                          timeout=60, env=e)


def coll(c, alg, nbytes, time_ns, ranks=8):
    return {"comm_id": "0x1", "seq": 0, "coll": c, "algorithm": alg, "bytes": nbytes,
            "ranks": ranks, "start_ns": 0, "end_ns": time_ns, "time_ns": time_ns,
            "span_ns": time_ns, "algbw_Bps": None, "busbw_Bps": None, "status": "OK"}


def write_report(path, colls, name="glucx-analyze"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"schema_version": 1, "tool": {"name": name, "version": "test"},
                   "collectives": colls}, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--analyze", required=True)
    ap.add_argument("--torus", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)

    MiB = 1 << 20
    # allreduce: 3 x 16 MiB torus_rotated (450 ms) against 100 small rings (100 ms);
    # allgather: hierarchical 4 MiB (60 ms) against bruck (50 ms); alltoall: pairwise and its
    # v form counted together (30 + 40 ms) against bruck (50 ms); no reduce-scatter;
    # broadcast and a Gloo slot are not exportable
    colls = ([coll("allreduce", "torus_rotated", 16 * MiB, 150_000_000)] * 3 +
             [coll("allreduce", "ring", 1024, 1_000_000)] * 100 +
             [coll("allgather", "hierarchical", 4 * MiB, 60_000_000),
              coll("allgatherv", "bruck", 4 * MiB, 50_000_000),
              coll("alltoall", "pairwise", MiB, 30_000_000),
              coll("alltoallv", "pairwise", MiB, 40_000_000),
              coll("alltoall", "bruck", MiB, 50_000_000),
              coll("broadcast", "binomial", MiB, 5_000_000),
              coll("broadcast", "binomial", MiB, 5_000_000),
              coll("allreduce", "gloo", MiB, 999_000_000_000)])
    rdir = os.path.join(a.work, "run")
    write_report(os.path.join(rdir, "report.json"), colls)
    out = os.path.join(a.work, "out")
    p = run(a, [rdir, "-o", out, "--topology", a.torus])
    check(p.returncode == 0, f"export exits 0: {p.returncode} {p.stderr}")
    if p.returncode == 0:
        # network.yml: the topology file's four lists, same values
        want, got = read_yaml_lists(a.torus), read_yaml_lists(os.path.join(out, "network.yml"))
        for k in ("topology", "npus_count", "bandwidth", "latency"):
            if k == "topology":
                ok = [v.strip('"') for v in want[k]] == got.get(k)
            else:
                ok = [float(v) for v in want[k]] == [float(v) for v in got.get(k, [])]
            check(ok, f"network.yml {k}: {got.get(k)} vs the file's {want[k]}")
        ndims = len(want["topology"])
        with open(os.path.join(out, "system.json")) as f:
            sysj = json.load(f)
        with open(os.path.join(out, "export.json")) as f:
            exp = json.load(f)
        per_dim = ["direct"] + ["ring"] * (ndims - 1)
        check(sysj["all-reduce-implementation"] == per_dim,
              f"allreduce: torus_rotated per dimension {sysj['all-reduce-implementation']}")
        check(sysj["all-gather-implementation"] == per_dim,
              f"allgather: hierarchical per dimension {sysj['all-gather-implementation']}")
        check(sysj["all-to-all-implementation"] == ["oneDirect"],
              f"alltoall: pairwise (70 ms with its v form) over bruck (50 ms) "
              f"{sysj['all-to-all-implementation']}")
        # 16 MiB in 1 MiB chunks, at most 8; rotated: Themis
        check(sysj["active-chunks-per-dimension"] == 8 and sysj["preferred-dataset-splits"] == 8,
              f"chunks in flight {sysj['active-chunks-per-dimension']}")
        check(sysj["inter-dimension-scheduling"] == "themis", "rotated rows: themis")
        check(sysj["scheduling-policy"] == "FIFO", "FIFO: collectives run in issue order")
        check(abs(sysj["local-mem-bw"] - 1 / 0.1) < 1e-9, f"local-mem-bw {sysj['local-mem-bw']}")
        k = exp["kinds"]
        ar = k["all-reduce-implementation"]
        check(ar["exported"] == "torus_rotated" and ar["median_bytes"] == 16 * MiB and
              ar["chunks_in_flight"] == 8, f"allreduce entry {ar}")
        algs = {x["algorithm"]: x for x in ar["algorithms"]}
        check(set(algs) == {"torus_rotated", "ring"} and algs["ring"]["calls"] == 100 and
              algs["torus_rotated"]["time_ns"] == 450_000_000,
              f"allreduce algorithms counted {ar['algorithms']}")
        a2a = {x["algorithm"]: x for x in k["all-to-all-implementation"]["algorithms"]}
        check(a2a["pairwise"]["calls"] == 2 and a2a["pairwise"]["time_ns"] == 70_000_000,
              f"alltoallv counted with alltoall {a2a}")
        check(k["all-gather-implementation"]["chunks_in_flight"] == 1,
              "allgather: 4 MiB is one 4 MiB chunk")
        rs = k["reduce-scatter-implementation"]
        check(rs["source"].startswith("not in the run") and rs["algorithms"] == [],
              f"reduce-scatter not in the run: {rs}")
        ne = exp["not_exported"]
        check(ne.get("broadcast", {}).get("calls") == 2 and "no such collective" in
              ne["broadcast"]["reason"], f"broadcast not exported: {ne}")
        check(ne.get("allreduce", {}).get("calls") == 1 and "Gloo" in ne["allreduce"]["reason"],
              f"Gloo slot not exported: {ne}")

    # a calibration file's copy rate sets local-mem-bw; the report named by its file
    cal = os.path.join(a.work, "cal.txt")
    with open(cal, "w") as f:
        f.write("copy_ns_per_byte 0.25\n")
    out2 = os.path.join(a.work, "out2")
    p = run(a, [os.path.join(rdir, "report.json"), "-o", out2],
            {"GLUCX_TOPOLOGY": a.torus, "GLUCX_CALIBRATION": cal})
    if check(p.returncode == 0, f"export with GLUCX_TOPOLOGY/CALIBRATION: {p.stderr}"):
        with open(os.path.join(out2, "system.json")) as f:
            check(abs(json.load(f)["local-mem-bw"] - 4.0) < 1e-9, "local-mem-bw from copy 0.25")

    # only flat algorithms in the run: one implementation over all ranks, no chunks
    flat = os.path.join(a.work, "flat", "report.json")
    write_report(flat, [coll("allreduce", "ring", MiB, 10), coll("allgather", "ring", MiB, 10),
                        coll("reduce_scatter", "halving", MiB, 10)])
    p = run(a, [flat, "-o", os.path.join(a.work, "out3"), "--topology", a.torus])
    if check(p.returncode == 0, f"flat export: {p.stderr}"):
        with open(os.path.join(a.work, "out3", "system.json")) as f:
            s3 = json.load(f)
        check(s3["all-reduce-implementation"] == ["oneRing"] and
              s3["reduce-scatter-implementation"] == ["oneHalvingDoubling"] and
              s3["active-chunks-per-dimension"] == 1 and
              s3["inter-dimension-scheduling"] == "baseline", f"flat system.json {s3}")

    # bad input: exit status, and the message names what is wrong
    notjson = os.path.join(a.work, "notjson.json")
    with open(notjson, "w") as f:
        f.write("{ not json")
    other = os.path.join(a.work, "other", "report.json")
    write_report(other, [], name="something-else")
    lacking = os.path.join(a.work, "lacking", "report.json")
    write_report(lacking, [{"coll": "allreduce", "algorithm": "ring"}])
    big = os.path.join(a.work, "big", "report.json")
    write_report(big, [coll("allreduce", "ring", MiB, 10, ranks=16)])
    badtopo = os.path.join(a.work, "bad.yaml")
    with open(badtopo, "w") as f:
        f.write("topology: [Ring]\nnpus_count: [0]\nbandwidth: [1]\nlatency: [1]\n")
    afile = os.path.join(a.work, "afile")
    with open(afile, "w") as f:
        f.write("x")
    missing = os.path.join(a.work, "missing.json")
    cases = [
        ([missing, "-o", out, "--topology", a.torus], 1, [missing]),
        ([notjson, "-o", out, "--topology", a.torus], 1, [notjson, "JSON"]),
        ([other, "-o", out, "--topology", a.torus], 1, [other, "something-else"]),
        ([lacking, "-o", out, "--topology", a.torus], 1, [lacking, "collectives[0]"]),
        ([big, "-o", out, "--topology", a.torus], 1, [big, "16 ranks", "has 8"]),
        ([flat, "-o", out, "--topology", badtopo], 1, [badtopo]),
        ([flat, "-o", out, "--topology", a.torus, "--calibration", missing], 1, [missing]),
        ([flat, "-o", os.path.join(afile, "sub"), "--topology", a.torus], 1, [afile]),
        ([flat, "-o", out], 2, ["--topology"]),
        ([flat, "--topology", a.torus], 2, ["-o DIR"]),
        ([flat, "-o", out, "--topology", a.torus, "--bogus"], 2, ["--bogus"]),
    ]
    for args, rc, words in cases:
        p = run(a, args)
        check(p.returncode == rc, f"{args}: exit {p.returncode}, want {rc} ({p.stderr.strip()})")
        for w in words:
            check(w in p.stderr, f"{args}: message lacks '{w}': {p.stderr.strip()}")

    if FAILS:
        print(f"failures: {len(FAILS)}")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
