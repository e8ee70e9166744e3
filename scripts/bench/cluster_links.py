#!/usr/bin/env python3
"""Shaped links of glucx-cluster against their configured rates (docs/perf.md, "Emulated
cluster"). Needs root. From the build tree:

    sudo scripts/bench/cluster_links.py --build build [--rates 100mbit,1gbit,4gbit,10gbit,20gbit]

On the 2x2 torus of tests/cluster/torus2x2.json (cluster name glxbench), for each rate R:
link 4 (package 0 - package 1) is shaped to R (`glucx-cluster degrade`), then
  - glucx: glucx-bench broadcast between one rank in host 0 and one in host 1 (the size chosen
    so that one call takes ~0.5 s at R), algbw = bytes / time of a call;
  - raw TCP: scripts/bench/tcp_stream.py, one stream of ~1 s at R from host 0 to host 1.
Then the two-hop route 0 -> 3 (links 4 and 7) with link 4 at 2 Gbit/s and link 7 at 500 Mbit/s,
and the wall time of `up` and `down` (median of 5). Rates are given in payload bytes: a link's
rate counts every byte of the frame (Ethernet, IP and TCP headers: 66 of every 1514 bytes with
an MTU of 1500 and timestamps), so TCP payload can reach at most 95.6% of R.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NAME = "glxbench"


def rate_Bps(text):
    m = re.fullmatch(r"([0-9.]+)([kmg])bit", text)
    return float(m.group(1)) * {"k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)] / 8


def sh(*cmd, **kw):
    p = subprocess.run(list(cmd), capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"cluster_links: `{' '.join(cmd)}` exited with {p.returncode}:\n{p.stderr}")
    return p


def glucx_bcast(tool, bench, hosts, nbytes):
    p = sh(tool, "run", "--name", NAME, "--hosts", hosts, "--ranks-per-host", "1",
           "--timeout", "300", "--", bench, "--coll", "broadcast", "-b", str(nbytes), "-e",
           str(nbytes), "--iters", "3", "--warmup", "1", "--check", "0")
    rows = [l.split() for l in p.stdout.splitlines() if l.strip() and not l.startswith("#")]
    return float(rows[0][7]) * 1e9  # algbw, GB/s


def tcp_stream(tool, src, dst, nbytes):
    stream = os.path.join(HERE, "tcp_stream.py")
    recv = subprocess.Popen([tool, "exec", "--name", NAME, dst, "python3", stream, "recv",
                             "5009"], stdout=subprocess.PIPE, text=True)
    assert recv.stdout.readline().strip() == "listening"
    sh(tool, "exec", "--name", NAME, src, f"python3 {stream} send {NAME}-h{dst} 5009 {nbytes}")
    return json.loads(recv.communicate(timeout=300)[0])["Bps"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build tree")
    ap.add_argument("--rates", default="100mbit,1gbit,2gbit,4gbit,6gbit,10gbit,1000gbit",
                    help="rates of link 4 (1000gbit: in effect unshaped, the machine's ceiling)")
    args = ap.parse_args()
    tool = os.path.join(args.build, "plugin", "tools", "glucx-cluster")
    bench = os.path.join(args.build, "plugin", "tools", "glucx-bench")
    topo = os.path.join(ROOT, "tests", "cluster", "torus2x2.json")
    ups, downs = [], []
    for _ in range(5):
        t0 = time.monotonic()
        sh(tool, "up", "--name", NAME, "--topology-json", topo)
        ups.append(time.monotonic() - t0)
        t0 = time.monotonic()
        sh(tool, "down", "--name", NAME)
        downs.append(time.monotonic() - t0)
    print(f"up (4 hosts, 4 links): median {statistics.median(ups):.2f} s, "
          f"max {max(ups):.2f} s; down: median {statistics.median(downs):.2f} s, "
          f"max {max(downs):.2f} s")
    sh(tool, "up", "--name", NAME, "--topology-json", topo)
    try:
        print(f"{'rate':>8} {'R MB/s':>8} {'glucx MB/s':>10} {'of R':>6} {'tcp MB/s':>9} "
              f"{'of R':>6}")
        for r in args.rates.split(","):
            R = rate_Bps(r)
            sh(tool, "degrade", "--name", NAME, "4", "--rate", r)
            g = glucx_bcast(tool, bench, "0,1", min(128 << 20, max(1 << 20, int(R * 0.5))))
            t = tcp_stream(tool, "0", "1", min(2 << 30, max(4 << 20, int(R))))
            print(f"{r:>8} {R / 1e6:8.1f} {g / 1e6:10.1f} {g / R:6.1%} {t / 1e6:9.1f} "
                  f"{t / R:6.1%}", flush=True)
        sh(tool, "degrade", "--name", NAME, "4", "--rate", "2gbit")
        sh(tool, "degrade", "--name", NAME, "7", "--rate", "500mbit")
        R = rate_Bps("500mbit")
        g = glucx_bcast(tool, bench, "0,3", int(R * 0.5))
        t = tcp_stream(tool, "0", "3", int(R))
        print(f"two hops 0->3 (link 4 at 2gbit, link 7 at 500mbit): glucx {g / 1e6:.1f} MB/s "
              f"({g / R:.1%} of 500mbit), tcp {t / 1e6:.1f} MB/s ({t / R:.1%})")
    finally:
        sh(tool, "down", "--name", NAME)


if __name__ == "__main__":
    sys.exit(main())
