#!/usr/bin/python3
"""glucx-info --algorithms on a topology: the selection map and each algorithm's predicted cost.

Checked, from the JSON form and independently of the tool's own choice:
- every collective lists exactly the rows of its table (as plain `--algorithms` prints them);
- at every shown size the map's choice is the argmin of the printed costs (ties: table order, as
  glucx_select_by_cost), and the map string agrees with the ranges and the choices;
- ring allreduce's printed cost is 2(n-1) alpha + 2(n-1)/n m beta + (n-1)/n m gamma with the
  bottleneck class's costs: the defaults of plugin/topo/topo.c (inter: 8 ranks in 4 packages),
  the nominal costs of tests/cluster/torus2x2.yaml (inter = the slowest outer dimension), or a
  calibration file's (dimension costs over the classes, as a communicator does);
- GLUCX_TUNE forces a range: the forced algorithm is shown, marked tuned / "(tuned)";
- the text form shows the same maps;
- errors (bad --ranks, --packages, --sizes, --topology, --calibration, GLUCX_TUNE, conflicting
  options) exit 2 with a message naming the option and value.

usage: test_info_algorithms.py --info BUILD/plugin/tools/glucx-info --torus tests/cluster/torus2x2.yaml
                               --work DIR
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from topofile import read_yaml_lists  # noqa: E402

# plugin/topo/topo.c: default_cost and default_gamma_ns_per_byte
DEFAULTS = {"self": (50.0, 0.1), "intra": (1500.0, 0.2), "inter": (20000.0, 0.8)}
DEFAULT_GAMMA = 0.1
DEFAULT_COPY = 0.1  # copy_ns_per_byte of plugin/topo/topo.c
DEFAULT_SIZES = [1 << 10, 64 << 10, 1 << 20, 16 << 20]

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)
    return cond


def clean_env(extra=None):
    env = dict(os.environ)
    for k in ("GLUCX_TUNE", "GLUCX_CALIBRATION", "GLUCX_TOPOLOGY", "GLUCX_HOSTID"):
        env.pop(k, None)
    if extra:
        env.update(extra)
    return env


def run(info, args, env=None):
    return subprocess.run([info, *args], capture_output=True, text=True, timeout=120,
                          env=clean_env(env))


def run_json(info, args, env=None, what=""):
    p = run(info, ["--algorithms", *args, "--json"], env)
    if not check(p.returncode == 0, f"{what}: exit {p.returncode}: {p.stderr}"):
        return None
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        check(False, f"{what}: not JSON ({e}): {p.stdout[:200]}")
        return None


def tables(info):
    """{collective: [algorithm names]} from plain `glucx-info --algorithms`."""
    p = run(info, ["--algorithms"])
    check(p.returncode == 0, f"--algorithms: exit {p.returncode}")
    out, cur = {}, None
    for line in p.stdout.splitlines():
        if re.match(r"^[a-z_]+:$", line):
            cur = line[:-1]
            out[cur] = []
        elif line.startswith("  ") and cur is not None:
            out[cur].append(line.split()[0])
    return out


def parse_size(text):
    if text == "inf":
        return None
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1] in mult:
        return int(text[:-1]) * mult[text[-1]]
    return int(text)


def parse_map(text):
    """'0-4K:a 4K-inf:b(tuned)' -> [(lo, hi or None, name, tuned)]"""
    out = []
    for item in text.split():
        m = re.fullmatch(r"([0-9]+[KMG]?)-([0-9]+[KMG]?|inf):([a-z0-9_]+)(\(tuned\))?", item)
        if not check(m is not None, f"map item '{item}' of '{text}'"):
            continue
        out.append((parse_size(m.group(1)), parse_size(m.group(2)), m.group(3),
                    m.group(4) is not None))
    return out


def argmin(costs):
    """Index of the least finite cost, the first in table order on ties; None if none."""
    best = None
    for i, c in enumerate(costs):
        if c is not None and (best is None or c < costs[best]):
            best = i
    return best


def step_cost(npus, kinds, alphas, betas, partner):
    """(alpha, beta) of one step in which every rank r sends a message to partner(r, n) on a
    topology file with FullyConnected/Ring dimensions: the test's own dimension-order routing
    (docs/topology.md, "Routes"): alpha = the longest route's summed link alphas, beta = the
    most loaded link direction's messages times its beta."""
    n, rpp = math.prod(npus), npus[0]
    outer = npus[1:]
    loads = {}
    worst = 0.0
    for r in range(n):
        q = partner(r, n)
        if q is None or q == r:
            continue
        hops = []  # ((dimension, line, frozenset of the two members), (from, to))
        if r // rpp == q // rpp:
            hops.append(((0, r // rpp, frozenset((r % rpp, q % rpp))), (r % rpp, q % rpp)))
        else:
            c, t = [], []
            for pkg, out in ((r // rpp, c), (q // rpp, t)):
                for size in outer:  # innermost fastest
                    out.append(pkg % size)
                    pkg //= size
            for d in range(len(outer)):
                size = outer[d]
                while c[d] != t[d]:
                    if kinds[d + 1] == "FullyConnected":
                        nxt = t[d]
                    else:
                        up, down = (t[d] - c[d]) % size, (c[d] - t[d]) % size
                        nxt = (c[d] + 1) % size if up <= down else (c[d] - 1) % size
                    line = tuple(c[:d] + c[d + 1:])
                    hops.append(((d + 1, line, frozenset((c[d], nxt))), (c[d], nxt)))
                    c[d] = nxt
        worst = max(worst, sum(alphas[key[0]] for key, _ in hops))
        for key, way in hops:
            loads[(key, way)] = loads.get((key, way), 0) + 1
    beta = max((cnt * betas[key[0]] for (key, _), cnt in loads.items()), default=0.0)
    return worst, beta


def xor_partner(d):
    return lambda r, n: (r ^ d) if (r ^ d) < n else None


def shift_partner(d):
    return lambda r, n: (r + d) % n


def ring_allreduce_ns(n, m, alpha, beta, gamma):
    return 2 * (n - 1) * alpha + 2 * (n - 1) / n * m * beta + (n - 1) / n * m * gamma


def close(a, b, rel=1e-9):
    return a is not None and b is not None and abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def check_view(j, what, table, tuned_expected=None):
    """The generic checks on one JSON view; @return {coll: [chosen names]}."""
    tuned_expected = tuned_expected or {}
    chosen_all = {}
    check(j.get("format") == 1, f"{what}: format 1")
    sizes = j["sizes"]
    names = [c["name"] for c in j["collectives"]]
    check(names == list(table), f"{what}: collectives {names} vs the tables {list(table)}")
    for c in j["collectives"]:
        cn = c["name"]
        algs = [a["name"] for a in c["algorithms"]]
        check(algs == table.get(cn), f"{what}: {cn} rows {algs} vs the table {table.get(cn)}")
        for a in c["algorithms"]:
            check(len(a["cost_ns"]) == len(sizes), f"{what}: {cn}/{a['name']}: one cost per size")
        ranges = parse_map(c["map"])
        check([(r[0], r[1], r[2], r[3]) for r in ranges] ==
              [(r["lo"], r["hi"], r["algorithm"], r["tuned"]) for r in c["ranges"]],
              f"{what}: {cn}: map string '{c['map']}' vs ranges {c['ranges']}")
        chosen = []
        for k, size in enumerate(sizes):
            ch = c["chosen"][k]
            check(ch["size"] == size, f"{what}: {cn}: chosen[{k}] is for size {size}")
            # the map's range holding the size, from the printed map string
            in_map = [r for r in ranges if r[0] <= size and (r[1] is None or size < r[1])]
            check(len(in_map) == 1 and in_map[0][2] == ch["algorithm"] and
                  in_map[0][3] == ch["tuned"],
                  f"{what}: {cn} at {size}: chosen {ch} vs map '{c['map']}'")
            forced = tuned_expected.get((cn, size))
            if forced is not None:
                check(ch["algorithm"] == forced and ch["tuned"],
                      f"{what}: {cn} at {size}: GLUCX_TUNE forces {forced}, shown {ch}")
            else:
                costs = [a["cost_ns"][k] for a in c["algorithms"]]
                best = argmin(costs)
                want = algs[best] if best is not None else None
                check(ch["algorithm"] == want and not ch["tuned"],
                      f"{what}: {cn} at {size}: chosen {ch['algorithm']}, argmin of the printed "
                      f"costs {want} ({dict(zip(algs, costs))})")
            chosen.append(ch["algorithm"])
        chosen_all[cn] = chosen
    return chosen_all


def ring_check(j, what, n, alpha, beta, gamma):
    ar = next(c for c in j["collectives"] if c["name"] == "allreduce")
    ring = next((a for a in ar["algorithms"] if a["name"] == "ring"), None)
    if not check(ring is not None, f"{what}: allreduce has a ring row"):
        return
    for k, m in enumerate(j["sizes"]):
        want = ring_allreduce_ns(n, m, alpha, beta, gamma)
        check(close(ring["cost_ns"][k], want),
              f"{what}: ring allreduce at {m}: printed {ring['cost_ns'][k]}, formula {want}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--info", required=True)
    ap.add_argument("--torus", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    table = tables(a.info)
    check("allreduce" in table and "ring" in table.get("allreduce", []), f"tables: {table}")

    # 8 ranks in 4 packages, default costs: the bottleneck is the inter-package class
    base = run_json(a.info, ["--ranks", "8", "--packages", "4"], what="uniform 8/4")
    base_chosen = {}
    if base:
        check((base["ranks"], base["packages"]) == (8, 4), "uniform: 8 ranks, 4 packages")
        check(base["sizes"] == DEFAULT_SIZES, f"default sizes {base['sizes']}")
        check(base["tune"] == "" and base["topology"] is None and base["calibration"] is None,
              "uniform: no tune, topology, calibration")
        for cls, (al, be) in DEFAULTS.items():
            check(base["costs"][cls] == {"alpha_ns": al, "beta_ns_per_byte": be},
                  f"uniform: {cls} costs {base['costs'][cls]}")
        check(base["costs"]["bottleneck"] == "inter", "uniform 8/4: bottleneck inter")
        base_chosen = check_view(base, "uniform 8/4", table)
        ring_check(base, "uniform 8/4", 8, *DEFAULTS["inter"], DEFAULT_GAMMA)

    # one package: the bottleneck is the intra class; chosen sizes from --sizes
    one = run_json(a.info, ["--ranks", "4", "--sizes", "0,100,3000,256K,1G"], what="uniform 4/1")
    if one:
        check(one["sizes"] == [0, 100, 3000, 256 << 10, 1 << 30], f"--sizes {one['sizes']}")
        check(one["packages"] == 1 and one["costs"]["bottleneck"] == "intra",
              "4 ranks, 1 package: bottleneck intra")
        check_view(one, "uniform 4/1", table)
        ring_check(one, "uniform 4/1", 4, *DEFAULTS["intra"], DEFAULT_GAMMA)

    # GLUCX_TUNE forces allreduce at 64K-128K to an algorithm that is not the argmin at 64K
    if base:
        ar = next(c for c in base["collectives"] if c["name"] == "allreduce")
        k64 = base["sizes"].index(64 << 10)
        other = [x["name"] for x in ar["algorithms"] if x["name"] != base_chosen["allreduce"][k64]]
        if check(other, "allreduce has a second algorithm to force"):
            forced = other[0]
            tune = f"allreduce:64K-128K:{forced}"
            t = run_json(a.info, ["--ranks", "8", "--packages", "4"], {"GLUCX_TUNE": tune},
                         what="GLUCX_TUNE")
            if t:
                check(t["tune"] == tune, "the JSON names GLUCX_TUNE")
                tc = check_view(t, "GLUCX_TUNE", table, {("allreduce", 64 << 10): forced})
                tar = next(c for c in t["collectives"] if c["name"] == "allreduce")
                check(f"64K-128K:{forced}(tuned)" in tar["map"], f"tuned map '{tar['map']}'")
                for cn, ch in base_chosen.items():
                    want = list(ch)
                    if cn == "allreduce":
                        want[k64] = forced
                    check(tc.get(cn) == want, f"GLUCX_TUNE changes only allreduce at 64K: {cn}")
            p = run(a.info, ["--algorithms", "--ranks", "8", "--packages", "4"],
                    {"GLUCX_TUNE": tune})
            check(p.returncode == 0 and f"64K-128K:{forced}(tuned)" in p.stdout and
                  "*(tuned)" in p.stdout, f"text form under GLUCX_TUNE: {p.returncode} {p.stderr}")

    # the text form prints the same maps as the JSON form
    if base:
        p = run(a.info, ["--algorithms", "--ranks", "8", "--packages", "4"])
        check(p.returncode == 0, f"text form: exit {p.returncode}")
        for c in base["collectives"]:
            check(f"  map: {c['map']}\n" in p.stdout, f"text form shows the {c['name']} map")
        check(p.stdout.count("*") >= len(base["collectives"]), "text form marks the choices")

    # the 2x2 torus file: 8 ranks, 4 packages, the file's nominal costs
    yl = read_yaml_lists(a.torus)
    bw = [float(v) for v in yl["bandwidth"]]
    lat = [float(v) for v in yl["latency"]]
    npus = [int(v) for v in yl["npus_count"]]
    nranks = math.prod(npus)
    kinds = [v.strip('"') for v in yl["topology"]]
    betas = [1.0 / b for b in bw]
    tor = run_json(a.info, ["--topology", a.torus], what="torus")
    if tor:
        check((tor["ranks"], tor["packages"]) == (nranks, nranks // npus[0]),
              f"torus: {tor['ranks']} ranks, {tor['packages']} packages")
        check(tor["topology"] == a.torus, "torus: the file is named")
        intra = (lat[0], 1.0 / bw[0])
        inter = (max(lat[1:]), max(1.0 / b for b in bw[1:]))
        check(close(tor["costs"]["intra"]["alpha_ns"], intra[0]) and
              close(tor["costs"]["intra"]["beta_ns_per_byte"], intra[1]),
              f"torus: intra = dimension 0 {tor['costs']['intra']}")
        check(close(tor["costs"]["inter"]["alpha_ns"], inter[0]) and
              close(tor["costs"]["inter"]["beta_ns_per_byte"], inter[1]),
              f"torus: inter = the slowest outer dimension {tor['costs']['inter']}")
        check(len(tor["costs"]["dimensions"]) == len(npus), "torus: one cost per dimension")
        check_view(tor, "torus", table)
        # congestion-aware flat costs: the ring's steps r -> r+1 (3 -> 4 crosses two links)
        ring_check(tor, "torus", nranks, *step_cost(npus, kinds, lat, betas, shift_partner(1)),
                   DEFAULT_GAMMA)
        # recursive-doubling allgather: step k sends 2^k blocks to r XOR 2^k (two messages
        # share each link between packages); pairwise alltoall: blocks to r + d, d = 1..n-1
        ag = next(c for c in tor["collectives"] if c["name"] == "allgather")
        rd = next(x for x in ag["algorithms"] if x["name"] == "recursive_doubling")
        a2a = next(c for c in tor["collectives"] if c["name"] == "alltoall")
        pw = next(x for x in a2a["algorithms"] if x["name"] == "pairwise")
        steps = [step_cost(npus, kinds, lat, betas, xor_partner(1 << k))
                 for k in range(int(math.log2(nranks)))]
        check(steps[1][1] == 2 * betas[1], f"torus: two messages share a dimension-1 link {steps}")
        pw_steps = [step_cost(npus, kinds, lat, betas, shift_partner(d)) for d in range(1, nranks)]
        for k, m in enumerate(tor["sizes"]):
            want = sum(al + (1 << i) / nranks * m * be for i, (al, be) in enumerate(steps))
            check(close(rd["cost_ns"][k], want),
                  f"torus: recursive-doubling allgather at {m}: printed {rd['cost_ns'][k]}, routes {want}")
            b = m / nranks
            want = sum(al + b * be for al, be in pw_steps) + b * DEFAULT_COPY
            check(close(pw["cost_ns"][k], want),
                  f"torus: pairwise alltoall at {m}: printed {pw['cost_ns'][k]}, routes {want}")

    # a calibration file over the torus: measured dimensions define the classes
    cal = os.path.join(a.work, "cal.txt")
    with open(cal, "w") as f:
        f.write("intra.alpha_ns 1111\nintra.beta_ns_per_byte 0.3\n"
                "inter.alpha_ns 22222\ninter.beta_ns_per_byte 0.9\n"
                "dim0.alpha_ns 700\ndim0.beta_ns_per_byte 0.05\n"
                "dim1.alpha_ns 7000\ndim1.beta_ns_per_byte 2\n"
                "dim2.alpha_ns 9000\ndim2.beta_ns_per_byte 3\n"
                "gamma_ns_per_byte 0.25\n")
    tc = run_json(a.info, ["--topology", a.torus, "--calibration", cal], what="torus+calibration")
    if tc:
        check(tc["calibration"] == cal, "calibration named")
        check(tc["costs"]["intra"] == {"alpha_ns": 700.0, "beta_ns_per_byte": 0.05},
              f"calibrated intra = dim0 {tc['costs']['intra']}")
        check(tc["costs"]["inter"] == {"alpha_ns": 9000.0, "beta_ns_per_byte": 3.0},
              f"calibrated inter = the slowest measured outer dimension {tc['costs']['inter']}")
        check(all(d["calibrated"] for d in tc["costs"]["dimensions"]), "dimensions calibrated")
        check_view(tc, "torus+calibration", table)
        ring_check(tc, "torus+calibration", nranks,
                   *step_cost(npus, kinds, [700.0, 7000.0, 9000.0], [0.05, 2.0, 3.0],
                              shift_partner(1)), 0.25)
    # a calibration measured on other rates (it records the nominal costs it was measured
    # against): carried to the file's rates, overhead beyond the latency and fraction of the
    # nominal rate kept; dimension 2 measured at the file's own rates stays as measured
    carried = os.path.join(a.work, "cal_carried.txt")
    with open(carried, "w") as f:
        f.write("dim0.alpha_ns 700\ndim0.beta_ns_per_byte 0.05\n"
                "dim1.alpha_ns 7000\ndim1.beta_ns_per_byte 10\n"
                "dim1.nominal_alpha_ns 4000\ndim1.nominal_beta_ns_per_byte 8\n"
                "dim2.alpha_ns 12000\ndim2.beta_ns_per_byte 9\n"
                f"dim2.nominal_alpha_ns {lat[2]!r}\ndim2.nominal_beta_ns_per_byte {1.0 / bw[2]!r}\n")
    tk = run_json(a.info, ["--topology", a.torus, "--calibration", carried], what="carried calibration")
    if tk:
        dims = tk["costs"]["dimensions"]
        want1 = (lat[1] + (7000 - 4000), 10 / 8 * (1.0 / bw[1]))
        check(math.isclose(dims[1]["alpha_ns"], want1[0]) and
              math.isclose(dims[1]["beta_ns_per_byte"], want1[1]),
              f"carried calibration: dim 1 {dims[1]}, want alpha {want1[0]} beta {want1[1]}")
        check(dims[1]["source"] == "calibrated at other rates, carried", f"dim 1 source {dims[1]}")
        check(dims[2]["alpha_ns"] == 12000.0 and dims[2]["beta_ns_per_byte"] == 9.0,
              f"calibration at the file's rates: dim 2 as measured {dims[2]}")
        check(dims[2]["source"] == "calibrated at these rates", f"dim 2 source {dims[2]}")
        check(dims[0]["source"] == "calibrated", f"dim 0 source {dims[0]}")
        inter = max(want1[1], 9.0)
        check(math.isclose(tk["costs"]["inter"]["beta_ns_per_byte"], inter),
              f"carried calibration: inter beta {tk['costs']['inter']} (the slowest dimension's, {inter})")
    # the same file named by GLUCX_CALIBRATION, on a uniform topology: the class costs
    ce = run_json(a.info, ["--ranks", "6", "--packages", "3"], {"GLUCX_CALIBRATION": cal},
                  what="GLUCX_CALIBRATION")
    if ce:
        check(ce["calibration"] == cal, "GLUCX_CALIBRATION named")
        check(ce["costs"]["inter"] == {"alpha_ns": 22222.0, "beta_ns_per_byte": 0.9},
              f"uniform + calibration: inter {ce['costs']['inter']}")
        check_view(ce, "GLUCX_CALIBRATION", table)
        ring_check(ce, "GLUCX_CALIBRATION", 6, 22222.0, 0.9, 0.25)

    # errors: exit 2, the option and the value named
    bad_yaml = os.path.join(a.work, "bad.yaml")
    with open(bad_yaml, "w") as f:
        f.write("topology: [Ring]\nnpus_count: [0]\nbandwidth: [1]\nlatency: [1]\n")
    bad_cal = os.path.join(a.work, "bad_cal.txt")
    with open(bad_cal, "w") as f:
        f.write("intra.alpha_ns -5\n")
    bad_nominal = os.path.join(a.work, "bad_nominal.txt")
    with open(bad_nominal, "w") as f:
        f.write("dim1.nominal_alpha_ns 4000\ndim1.nominal_beta_ns_per_byte 8\n")
    missing = os.path.join(a.work, "missing.yaml")
    errors = [
        (["--ranks", "0"], None, ["--ranks", "'0'"]),
        (["--ranks", "x8"], None, ["--ranks", "'x8'"]),
        (["--ranks", "8", "--packages", "3"], None, ["--packages", "'3'"]),
        (["--ranks", "8", "--packages", "0"], None, ["--packages", "'0'"]),
        (["--ranks", "2", "--packages", "4"], None, ["--packages", "'4'"]),
        (["--ranks", "8", "--sizes", "1K,abc"], None, ["--sizes", "'abc'"]),
        (["--ranks", "8", "--sizes", "1K,,2K"], None, ["--sizes", "'1K,,2K'"]),
        (["--ranks", "8", "--sizes", "-1"], None, ["--sizes", "'-1'"]),
        (["--topology", missing], None, ["--topology", missing]),
        (["--topology", bad_yaml], None, ["--topology", bad_yaml]),
        (["--topology", a.torus, "--ranks", "8"], None, ["--ranks", "'8'"]),
        (["--ranks", "8", "--calibration", missing], None, ["--calibration", missing]),
        (["--ranks", "8", "--calibration", bad_cal], None, ["--calibration", bad_cal]),
        (["--ranks", "8", "--calibration", bad_nominal], None,
         ["--calibration", bad_nominal, "dim1.nominal_alpha_ns"]),
        (["--ranks", "8"], {"GLUCX_CALIBRATION": missing}, ["GLUCX_CALIBRATION", missing]),
        (["--ranks", "8"], {"GLUCX_TUNE": "allreduce:nosuchalg"}, ["GLUCX_TUNE", "nosuchalg"]),
        (["--json"], None, ["--json", "topology"]),
        (["--sizes", "1K"], None, ["--sizes", "topology"]),
        (["--probe"], None, ["--probe"]),
    ]
    for args, env, words in errors:
        p = run(a.info, ["--algorithms", *args], env)
        check(p.returncode == 2 and all(w in p.stderr for w in words),
              f"--algorithms {' '.join(args)} (env {env}): exit {p.returncode}, stderr "
              f"'{p.stderr.strip()}' should name {words}")
    p = run(a.info, ["--packages", "2"])
    check(p.returncode == 2 and "--packages" in p.stderr, "--packages without --algorithms")
    # plain --algorithms is unchanged: the tables, no map
    p = run(a.info, ["--algorithms"])
    check(p.returncode == 0 and "map:" not in p.stdout and "allreduce:" in p.stdout,
          "plain --algorithms prints the tables")
    print("failures:", len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
