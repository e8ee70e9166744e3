#!/usr/bin/python3
"""glucx-info --topology FILE [--json]: the JSON form glucx-cluster reads (format 1).

The 2x2 torus's links and routes are written out by hand here; the Switch case checks the
switch's members and that every package route is a walk of adjacent links. Errors: a malformed
file exits 1 naming file, line and field; --json without --topology exits 2.

usage: test_glucx_info_topology.py --info BUILD/plugin/tools/glucx-info --work DIR
"""
import argparse
import json
import os
import subprocess
import sys

TORUS = """# 2x2 torus, 2 ranks per package
topology: [FullyConnected, Ring, Ring]
npus_count: [2, 2, 2]
bandwidth: [50, 0.125, 0.25]
latency: [500, 10000, 20000]
"""

SWITCH = """topology: [Ring, Ring, Switch]
npus_count: [1, 3, 2]
bandwidth: [10, 1, 2]
latency: [0, 1, 2]
"""

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def run(info, *args):
    return subprocess.run([info, *args], capture_output=True, text=True, timeout=60)


def load(info, work, name, text):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write(text)
    p = run(info, "--topology", path, "--json")
    check(p.returncode == 0, f"{name}: exit {p.returncode}: {p.stderr}")
    return json.loads(p.stdout)


def test_torus(info, work):
    j = load(info, work, "torus.yaml", TORUS)
    check(j["format"] == 1, "format 1")
    check((j["ranks"], j["ranks_per_package"], j["packages"]) == (8, 2, 4), "counts")
    check([d["kind"] for d in j["dimensions"]] == ["FullyConnected", "Ring", "Ring"], "kinds")
    check(j["dimensions"][2]["bandwidth_GBps"] == 0.25, "bandwidth of dimension 2")
    check(j["package_coords"] == [[0, 0], [1, 0], [0, 1], [1, 1]], "package coordinates")
    check(j["switches"] == [], "no switches")
    want = [(0, "rank", 0, 1), (0, "rank", 2, 3), (0, "rank", 4, 5), (0, "rank", 6, 7),
            (1, "package", 0, 1), (1, "package", 2, 3), (2, "package", 0, 2),
            (2, "package", 1, 3)]
    got = [(l["dimension"], l["a_kind"], l["a"], l["b"]) for l in j["links"]]
    check(got == want, f"links: {got}")
    check([l["id"] for l in j["links"]] == list(range(8)), "link ids")
    routes = {(r["src"], r["dst"]): r["links"] for r in j["package_routes"]}
    check(len(routes) == 12, "every ordered pair of packages")
    check(routes[(0, 3)] == [4, 7] and routes[(3, 0)] == [5, 6], f"diagonals: {routes}")
    check(routes[(0, 1)] == [4] and routes[(2, 0)] == [6], "neighbours")


def test_switch(info, work):
    j = load(info, work, "switch.yaml", SWITCH)
    # 6 packages of 1 rank; dimension 1: 2 rings of 3 (6 links); dimension 2: 3 switches of 2
    check(j["packages"] == 6, "packages")
    check(len(j["links"]) == 6 + 6, f"links: {len(j['links'])}")
    check(j["switches"] == [{"switch": s, "dimension": 2, "members": [s, s + 3]}
                            for s in range(3)], f"switches: {j['switches']}")
    links = j["links"]
    for r in j["package_routes"]:
        at = ("package", r["src"])
        for lid in r["links"]:
            l = links[lid]
            ends = [(l["a_kind"], l["a"]), (l["b_kind"], l["b"])]
            check(at in ends, f"route {r}: link {lid} does not touch {at}")
            at = ends[1] if ends[0] == at else ends[0]
        check(at == ("package", r["dst"]), f"route {r} ends at {at}")
    routes = {(r["src"], r["dst"]): r["links"] for r in j["package_routes"]}
    # package 0 -> 5 = coordinates (0,0) -> (2,1): ring 0 -> 2 one step backwards (the wrap
    # link (2,0) of ring 0, id 2), then across switch 2 (links 6..11 are the switches' member
    # links, two per switch): member link of package 2, then of package 5
    check(routes[(0, 5)] == [2, 6 + 2 * 2, 6 + 2 * 2 + 1], f"0 -> 5: {routes[(0, 5)]}")


def test_errors(info, work):
    bad = os.path.join(work, "bad.yaml")
    with open(bad, "w") as f:
        f.write("topology: [Ring, Ring]\nnpus_count: [2, 2]\nbandwidth: [1, -3]\n"
                "latency: [1, 1]\n")
    p = run(info, "--topology", bad, "--json")
    check(p.returncode == 1 and f"{bad}:3: field 'bandwidth'" in p.stderr and p.stdout == "",
          f"bad file: exit {p.returncode}, stderr {p.stderr!r}")
    p = run(info, "--json")
    check(p.returncode == 2 and "--topology" in p.stderr, f"--json alone: {p.returncode}")
    p = run(info, "--topology", os.path.join(work, "missing.yaml"))
    check(p.returncode == 1 and "missing.yaml" in p.stderr, "missing file")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--info", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    for t in (test_torus, test_switch, test_errors):
        t(a.info, a.work)
    print("failures:", len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
