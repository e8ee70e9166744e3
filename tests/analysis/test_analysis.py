#!/usr/bin/python3
"""glucx-analyze on real traced runs with known answers, and on damaged traces.

    test_analysis.py --glucx-trace EXE --analyze EXE --gt EXE --schema FILE --plugin-dir DIR
                     --events-md FILE --work DIR [--emit EXE] CASE

Ground truth (values measured by gt_run itself, never read from the trace):
  straggler   rank 2 sleeps before each allreduce: it must be stragglers[0] and the verdict's
              subject, with mean lateness within 10% of its measured mean sleep.
  overlap     rank 0 computes inside a started allreduce: its overlap share must be the measured
              compute time over the measured collective span, within 5 percentage points; the
              compute phase has an empty name.
  bytes       ring allreduce: every link's bytes equal the ring's volume computed here.
  failed      rank 2 straggles for 4 iterations, then calls an allreduce with one element more:
              the verdict says the run failed, when (within the failing call's measured window,
              after rank 2's measured sleeps) and with the first error's rank, status and text
              as that rank got them; no straggler sentence; the stragglers list still has rank 2.
Diff of two runs (glucx-analyze diff, METRICS.md "Diff of two runs"):
  diff        the two example reports: the iteration-time difference, its phases, collectives and
              physical links recomputed here from the reports; bad inputs (missing, not JSON,
              not a report, neither report nor trace, three runs, an unwritable output) refused
              naming the file; diff.json against analysis/diff.schema.json; diff.html carries
              diff.json (with --template: the build has a dashboard), --no-html and a missing or
              broken template (a warning, exit 0) leave it out.
  diff_trace  two traces analysed in one process first: the same run twice differs by nothing.
Robustness (each: a clear message, a report marked partial where one is possible):
  missing, nontrace, empty, truncated, discarded, unknown_version; plugin_cli: the same sink
  through `babeltrace2 --plugin-path`, given the trace's glucx-pids (parameter pid-file), agrees
  with glucx-analyze; merge: two traces with different UUIDs analysed together.
  pidfiles: each trace directory's glucx-pids (glucx-trace's process list) filters its own
  events only: a rank's pid removed from one of two merged traces' lists leaves out exactly that
  process's events (counted here with bt2; plus those of any other job traced at the same time,
  counted the same way), the other trace is untouched; found from a trace subdirectory too;
  without the files everything is analysed as before.
Trace format version (trace/EVENTS.md, "Format version"; copies of a recorded trace whose
metadata is edited in place):
  format_current  every glucx event class carries EVENTS.md's version; read with no warning.
  format_missing  no version: the same report plus one warning naming the trace and what may be
                  misread.
  format_newer    a newer version: refused by glucx-analyze (status 2) and by the babeltrace2
                  CLI plugin, naming both versions; no report written.
  format_older    format 2 (format 3 without physical links): read, with one warning naming the
                  trace and that the report has no physical links.
Physical links (analysis/METRICS.md, "Physical links"; need --bench), 4 ranks started as
separate processes (RANK, WORLD_SIZE, GLUCX_STORE) each with its own GLUCX_HOSTID, running a
ring allgather of S bytes per rank set (4 calls: 1 warm-up, 3 timed; ring pairs r -> r+1 carry
3/4 S per call) plus glucx-bench's own small collectives (timings, barrier):
  phys_torus  GLUCX_TOPOLOGY: a 2x2 torus of 1-rank packages. The routes of every ordered pair
              and the direction of each hop, derived here by hand from docs/topology.md, are the
              trace's route events; per physical link, and per direction of it, the report's
              bytes equal the sum of the report's rank-pair bytes over the pairs whose hand route
              crosses it (that way), and lie between the ring's volume over those pairs and that
              plus the bench's small traffic; link endpoints, dimensions and nominal values are
              the file's; busy time lies between the largest and the sum of the crossing pairs'
              busy times; of_nominal per direction is its bytes / busy / nominal, the link's the
              larger direction's (the ring crosses links 0 and 2 both ways).
  phys_hosts  no file, two hosts of two ranks: the model glucx assumes (a link per rank pair of
              a host, an uplink per host to one switch; docs/topology.md), checked the same way.
Clocks across hosts (analysis/METRICS.md, "Clocks across hosts"):
  clock       two ranks, each under its own glucx-trace (two traces, as two hosts), a small
              allreduce every 21 ms for about 21 s; copies of rank 1's trace whose metadata clock
              is shifted by -50 ms, -3 ms, +50 ms and skewed by +150 and -120 ppm (frequency and
              offset rewritten, the exact shift and drift computed from them): each offset within
              the report's stated bound of the known one, the bound at most the link's median
              one-way latency (measured on the unshifted pair), each drift within 5 % and its
              bound, no causality violation left; the traces as recorded (one machine's clock)
              are consistent: nothing corrected, no receive moved; and the +50 ms copy with
              another hostname put in one directory with rank 0's trace: one argument, two hosts.
Every report.json is validated against the schema. Exit 0 pass, 77 skip.
"""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import time
import sys

import jsonschema

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from timescale import scaled  # noqa: E402 - GLUCX_TEST_TIME_SCALE (tests/README.md)
from tracepids import PidListError, trace_pids  # noqa: E402

SKIP = 77


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def run(cmd, timeout=scaled(90), env=None, ok=True):
    e = dict(os.environ)
    e.pop("GLUCX_TRACE", None)
    if env:
        e.update(env)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e)
    if ok:
        check(p.returncode == 0, "%s failed (rc %d):\n%s\n%s" % (cmd, p.returncode,
                                                                 p.stdout[-3000:], p.stderr[-3000:]))
    return p


def record(a, name, cmd, extra=()):
    d = os.path.join(a.work, name, "trace")
    shutil.rmtree(os.path.dirname(d), ignore_errors=True)
    os.makedirs(os.path.dirname(d))
    run([a.glucx_trace, "record", "-o", d, *extra, "--", *cmd])
    return d


def gt(a, mode):
    work = os.path.join(a.work, mode)
    store = os.path.join(a.work, mode + "-store")
    shutil.rmtree(store, ignore_errors=True)
    os.makedirs(store)
    truth = os.path.join(a.work, mode + "-truth.txt")
    if os.path.exists(truth):
        os.unlink(truth)
    d = record(a, mode, [a.gt, mode, store, truth])
    t = {}
    with open(truth) as f:
        for line in f:
            k, v = line.strip().split("=")
            t[k] = int(v)
    return d, t


def analyze(a, trace, name, expect_rc=0):
    out = os.path.join(a.work, name, "report")
    shutil.rmtree(out, ignore_errors=True)
    p = run([a.analyze, trace, "-o", out, "--no-html"], ok=False)
    check(p.returncode == expect_rc, "glucx-analyze rc %d (expected %d):\n%s\n%s"
          % (p.returncode, expect_rc, p.stdout, p.stderr))
    if expect_rc != 0:
        return p, None
    rep = load_report(a, out)
    return p, rep


def load_report(a, out):
    with open(os.path.join(out, "report.json")) as f:
        rep = json.load(f)
    with open(a.schema) as f:
        jsonschema.validate(rep, json.load(f), cls=jsonschema.Draft202012Validator)
    with open(os.path.join(out, "timeline.json")) as f:
        tl = json.load(f)
    check(isinstance(tl.get("traceEvents"), list), "timeline.json has no traceEvents list")
    with open(os.path.join(out, "report.txt")) as f:
        txt = f.read()
    check(rep["verdict"]["sentence"] in txt, "report.txt does not start with the verdict")
    return rep


def case_straggler(a):
    d, t = gt(a, "straggler")
    _, rep = analyze(a, d, "straggler")
    check(not rep["trace"]["partial"], "complete run reported partial: %s" % rep["trace"]["partial_reasons"])
    check(rep["summary"]["iteration_source"] == "markers", "iterations not from markers")
    check(rep["summary"]["iterations"] == 8, "expected 8 iterations, got %d" % rep["summary"]["iterations"])
    s = rep["stragglers"]
    check(s and s[0]["rank"] == t["straggler_rank"], "straggler %s, expected rank %d" % (s[:1], t["straggler_rank"]))
    lat, want = s[0]["mean_lateness_ns"], t["delay_ns"]
    check(abs(lat - want) <= 0.10 * want, "mean lateness %d ns, measured delay %d ns (+-10%%)" % (lat, want))
    check(rep["verdict"]["bottleneck"] == "straggler" and rep["verdict"]["subject"] == "rank 2",
          "verdict does not name rank 2: %s" % rep["verdict"]["sentence"])
    # the others' late-sender wait covers most of the delay in each iteration
    for r in rep["ranks"]:
        if r["rank"] != 2:
            check(r["wait_late_sender_ns"] >= 0.5 * 8 * want,
                  "rank %d late-sender wait %d ns, expected most of 8 x %d" % (r["rank"], r["wait_late_sender_ns"], want))
    print("straggler: rank %d, mean lateness %.2f ms vs measured %.2f ms" % (s[0]["rank"], lat / 1e6, want / 1e6))


def case_overlap(a):
    d, t = gt(a, "overlap")
    _, rep = analyze(a, d, "overlap")
    r0 = [r for r in rep["ranks"] if r["rank"] == 0][0]
    want = t["compute_inside_ns"] / t["span_ns"]
    got = r0["overlap_share"]
    check(got is not None and abs(got - want) <= 0.05,
          "rank 0 overlap share %s, measured %.3f (+-5 pp)" % (got, want))
    check(r0["compute_ns"] >= 0.9 * t["compute_inside_ns"],
          "compute %d ns, measured %d ns: the empty phase name was not read" % (r0["compute_ns"], t["compute_inside_ns"]))
    print("overlap: reported %.3f, measured %.3f" % (got, want))


def case_bytes(a):
    d, t = gt(a, "bytes")
    _, rep = analyze(a, d, "bytes")
    n, size, count = t["n"], t["bytes"], t["count"]
    ring = {}
    chunk = size // n
    for r in range(n):
        ring[(r, (r + 1) % n)] = count * 2 * (n - 1) * chunk
    comm = [c for c in rep["trace"]["comms"] if c["name"] == "bytes"][0]["comm_id"]
    links = {(l["src"], l["dst"]): l for l in rep["links"] if l["comm_id"] == comm}
    # the ring moves data to one neighbour; which one is the implementation's choice
    fwd = all(links.get((r, (r + 1) % n), {}).get("bytes", 0) >= chunk for r in range(n))
    exp = ring if fwd else {((s + 1) % n, s): v for (s, _), v in ring.items()}
    barrier = [g for g in rep["collective_groups"] if g["comm_id"] == comm and g["coll"] == "barrier"]
    for k, l in links.items():
        want = exp.get(k, 0)
        # the closing barrier sends zero-byte messages only
        check(l["bytes"] == want, "link %d->%d carried %d bytes, the ring moves %d" % (k[0], k[1], l["bytes"], want))
    check(barrier, "the barrier is missing from collective_groups")
    # every send has its receive, also the ring's segments that share (seq, step) (FIFO match)
    check(rep["trace"]["unmatched_sends"] == 0 and rep["trace"]["unmatched_recvs"] == 0,
          "unmatched sends %d / receives %d in a complete trace" % (
              rep["trace"]["unmatched_sends"], rep["trace"]["unmatched_recvs"]))
    check(len([l for l in links.values() if l["announced"]]) == n * (n - 1), "not every link announced")
    print("bytes: %d links checked" % len(links))


# ---- physical links -----------------------------------------------------------------------------

PHYS_N = 4
PHYS_S = 64 * 1024  # allgather bytes (the whole output, as glucx-bench counts them)
PHYS_CALLS = 4  # --warmup 1 --iters 3
PHYS_AUX = 4096  # bound on glucx-bench's other traffic per rank pair (timings, error counts)

# 2x2 torus of 1-rank packages: [FullyConnected, Ring, Ring], npus_count [1, 2, 2]. Package p has
# coordinates (p % 2, p // 2) in dimensions 1 and 2. Links (docs/topology.md): dimension 0 has
# none (one rank per package); dimension 1 (a Ring of 2 is one link per line): link 0 joins
# packages 0-1, link 1 joins 2-3; dimension 2: link 2 joins 0-2, link 3 joins 1-3.
TORUS_YAML = """topology: [FullyConnected, Ring, Ring]
npus_count: [1, 2, 2]
bandwidth: [50, 1, 2]
latency: [500, 10000, 20000]
"""
TORUS_LINKS = {0: (1, 0, 1), 1: (1, 2, 3), 2: (2, 0, 2), 3: (2, 1, 3)}  # id: (dim, pkg a, pkg b)
TORUS_NOMINAL = {1: (1e9, 10000.0), 2: (2e9, 20000.0)}  # dim: (bytes/s, ns)
# dimension-order routes: dimension 1 first, then 2 (e.g. 0 -> 3: link 0 to package 1, then
# link 3 to package 3; 3 -> 0: link 1 to package 2, then link 2 to package 0)
TORUS_ROUTES = {(0, 1): [0], (1, 0): [0], (2, 3): [1], (3, 2): [1],
                (0, 2): [2], (2, 0): [2], (1, 3): [3], (3, 1): [3],
                (0, 3): [0, 3], (3, 0): [1, 2], (1, 2): [0, 2], (2, 1): [1, 3]}
# the direction of each hop (0: from the link's package a to b, 1: from b to a), walking from
# the sender's package: 0 -> 3 goes 0 to 1 on link 0 (a to b), 1 to 3 on link 3 (a to b);
# 3 -> 0 goes 3 to 2 on link 1 (b to a), 2 to 0 on link 2 (b to a); 1 -> 2 goes 1 to 0 on
# link 0 (b to a), 0 to 2 on link 2 (a to b); 2 -> 1 goes 2 to 3 on link 1 (a to b), 3 to 1 on
# link 3 (b to a). One hop: a to b from the lower package.
TORUS_DIRS = {(0, 1): [0], (1, 0): [1], (2, 3): [0], (3, 2): [1],
              (0, 2): [0], (2, 0): [1], (1, 3): [0], (3, 1): [1],
              (0, 3): [0, 0], (3, 0): [1, 1], (1, 2): [1, 0], (2, 1): [0, 1]}


def phys_record(a, name, hosts, topology=None):
    """Record glucx-bench's ring allgather on PHYS_N ranks started as separate processes, rank r
    with GLUCX_HOSTID=hosts[r] (and GLUCX_TOPOLOGY=topology). Returns the trace directory."""
    check(a.bench, "case %s needs --bench" % name)
    store = os.path.join(a.work, name + "-store")
    shutil.rmtree(store, ignore_errors=True)
    os.makedirs(store)
    bench = [a.bench, "--coll", "allgather", "--algo", "ring", "-b", str(PHYS_S), "-e",
             str(PHYS_S), "--warmup", "1", "--iters", "3", "--check", "0", "--name", name]
    lines = ["pids=''"]
    for r in range(PHYS_N):
        env = {"RANK": r, "WORLD_SIZE": PHYS_N, "GLUCX_STORE": "file:" + store,
               "GLUCX_HOSTID": hosts[r]}
        if topology:
            env["GLUCX_TOPOLOGY"] = topology
        lines.append("env %s %s >/dev/null & pids=\"$pids $!\"" % (
            " ".join("%s='%s'" % kv for kv in env.items()), " ".join(bench)))
    lines.append("rc=0; for p in $pids; do wait $p || rc=1; done; exit $rc")
    return record(a, name, ["/bin/sh", "-c", "\n".join(lines)])


def trace_routes(trace):
    """({(src, dst): [physical link ids]}, {(src, dst): [directions]}) from the route events of
    the recorded command (bt2)."""
    import bt2
    pids = trace_pids(trace)
    out, dirs = {}, {}
    for msg in bt2.TraceCollectionMessageIterator(trace):
        if type(msg) is bt2._EventMessageConst and msg.event.name == "glucx:route" and \
                int(msg.event.common_context_field["vpid"]) in pids:
            f = msg.event.payload_field
            key = (int(f["rank"]), int(f["dst"]))
            check(key not in out, "two route events for %s" % (key,))
            out[key] = [int(x) for x in f["phys_ids"]]
            dirs[key] = [int(x) for x in f["dirs"]]
    return out, dirs


def check_physical(rep, name, routes, dirs, ends, nominal):
    """The report's physical links of communicator `name` against the hand-derived `routes`
    ({(src, dst): [ids]}), their directions `dirs` ({(src, dst): [0 a to b, 1 b to a]}), `ends`
    ({id: (dim, (kind, index), (kind, index))}) and `nominal` ({id: (bytes/s, ns)})."""
    comm = [c for c in rep["trace"]["comms"] if c["name"] == name][0]["comm_id"]
    pairs = {(l["src"], l["dst"]): l for l in rep["links"] if l["comm_id"] == comm}
    phys = {l["phys_id"]: l for l in rep["physical_links"] if l["comm_id"] == comm}
    check(sorted(phys) == sorted(ends), "physical links %s, expected %s" % (sorted(phys), sorted(ends)))
    ring = {(r, (r + 1) % PHYS_N) for r in range(PHYS_N)}
    per_pair = PHYS_CALLS * (PHYS_N - 1) * PHYS_S // PHYS_N  # ring allgather bytes of one pair
    for pid, l in phys.items():
        dim, ea, eb = ends[pid]
        check(l["announced"] and l["dim"] == dim and (l["a"]["kind"], l["a"]["index"]) == ea and
              (l["b"]["kind"], l["b"]["index"]) == eb,
              "physical link %d: dim %s, ends %s - %s; expected %d, %s - %s"
              % (pid, l["dim"], l["a"], l["b"], dim, ea, eb))
        bw, lat = nominal[pid]
        check(abs(l["bandwidth_Bps"] - bw) <= 1e-6 * bw and abs(l["latency_ns"] - lat) <= 1e-6 * max(lat, 1),
              "physical link %d: nominal %s B/s %s ns, expected %s, %s"
              % (pid, l["bandwidth_Bps"], l["latency_ns"], bw, lat))
        crossing = [k for k, hops in routes.items() if pid in hops]
        want = sum(pairs[k]["bytes"] for k in crossing if k in pairs)
        check(l["bytes"] == want, "physical link %d carried %d bytes; its pairs %s carried %d"
              % (pid, l["bytes"], crossing, want))
        low = per_pair * len([k for k in crossing if k in ring])
        check(low <= l["bytes"] <= low + PHYS_AUX * len(crossing),
              "physical link %d carried %d bytes; the ring allgather puts %d on it (pairs %s)"
              % (pid, l["bytes"], low, crossing))
        busy = [pairs[k]["busy_ns"] for k in crossing if k in pairs]
        check(max(busy + [0]) <= l["busy_ns"] <= sum(busy),
              "physical link %d busy %d ns, its pairs' busy times %s" % (pid, l["busy_ns"], busy))
        if l["busy_ns"] > 0:
            check(abs(l["achieved_Bps"] - l["bytes"] / l["busy_ns"] * 1e9) <= 1e-6 * l["achieved_Bps"],
                  "physical link %d: achieved %s" % (pid, l["achieved_Bps"]))
        # per direction: the pairs whose hand route crosses the link that way
        check(len(l["directions"]) == 2, "physical link %d: directions %s" % (pid, l["directions"]))
        dir_of = []
        dur = rep["trace"]["duration_ns"]
        for d, x in enumerate(l["directions"]):
            fr, to = (ea, eb) if d == 0 else (eb, ea)
            check((x["from"]["kind"], x["from"]["index"]) == fr and (x["to"]["kind"], x["to"]["index"]) == to,
                  "physical link %d direction %d: %s -> %s, expected %s -> %s" % (pid, d, x["from"], x["to"], fr, to))
            way = [k for k, hops in routes.items() for h, dd in zip(hops, dirs[k]) if h == pid and dd == d]
            want = sum(pairs[k]["bytes"] for k in way if k in pairs)
            check(x["bytes"] == want, "physical link %d direction %d carried %d bytes; its pairs %s carried %d"
                  % (pid, d, x["bytes"], way, want))
            low = per_pair * len([k for k in way if k in ring])
            check(low <= x["bytes"] <= low + PHYS_AUX * len(way),
                  "physical link %d direction %d carried %d bytes; the ring allgather puts %d on it (pairs %s)"
                  % (pid, d, x["bytes"], low, way))
            check(x["messages"] == sum(pairs[k]["messages"] for k in way if k in pairs),
                  "physical link %d direction %d: %d messages" % (pid, d, x["messages"]))
            busy = [pairs[k]["busy_ns"] for k in way if k in pairs]
            check(max(busy + [0]) <= x["busy_ns"] <= min(sum(busy), l["busy_ns"]),
                  "physical link %d direction %d busy %d ns, its pairs' busy times %s, the link's %d"
                  % (pid, d, x["busy_ns"], busy, l["busy_ns"]))
            if x["busy_ns"] > 0:
                ach = x["bytes"] / x["busy_ns"] * 1e9
                check(abs(x["achieved_Bps"] - ach) <= 1e-6 * ach and
                      abs(x["of_nominal"] - ach / bw) <= 1e-9 + 1e-6 * ach / bw,
                      "physical link %d direction %d: achieved %s, of nominal %s"
                      % (pid, d, x["achieved_Bps"], x["of_nominal"]))
                dir_of.append(ach / bw)
            else:
                check(x["of_nominal"] is None, "physical link %d direction %d: of_nominal %s without busy time"
                      % (pid, d, x["of_nominal"]))
            check(abs(x["utilisation"] - x["bytes"] / (bw * dur / 1e9)) <= 1e-9 + 1e-6 * x["utilisation"],
                  "physical link %d direction %d: utilisation %s" % (pid, d, x["utilisation"]))
        check(l["bytes"] == sum(x["bytes"] for x in l["directions"]) and
              l["messages"] == sum(x["messages"] for x in l["directions"]),
              "physical link %d: totals %d B, %d messages; directions %s" % (pid, l["bytes"], l["messages"], l["directions"]))
        if dir_of:
            check(abs(l["of_nominal"] - max(dir_of)) <= 1e-9 + 1e-6 * max(dir_of),
                  "physical link %d: of_nominal %s, its directions' %s" % (pid, l["of_nominal"], dir_of))
        else:
            check(l["of_nominal"] is None, "physical link %d: of_nominal %s, no busy direction" % (pid, l["of_nominal"]))
        check(abs(l["utilisation"] - max(x["utilisation"] for x in l["directions"])) <= 1e-12,
              "physical link %d: utilisation %s, not its directions' larger" % (pid, l["utilisation"]))
    v = rep["verdict"]
    if v["bottleneck"] == "link":
        top = max(phys.values(), key=lambda l: l["critical_path_ns"])
        check(v.get("physical_link", {}).get("phys_id") is not None and
              phys[v["physical_link"]["phys_id"]]["critical_path_ns"] == top["critical_path_ns"],
              "the verdict names %s, not a physical link with the most critical-path time %d"
              % (v.get("physical_link"), top["critical_path_ns"]))
    return phys


def case_phys_torus(a):
    topo = os.path.join(a.work, "torus.yaml")
    with open(topo, "w") as f:
        f.write(TORUS_YAML)
    d = phys_record(a, "phys_torus", ["torus-host-%d" % r for r in range(PHYS_N)], topo)
    got, got_dirs = trace_routes(d)
    check(got == TORUS_ROUTES, "routes in the trace %s, derived by hand %s" % (got, TORUS_ROUTES))
    check(got_dirs == TORUS_DIRS, "directions in the trace %s, derived by hand %s" % (got_dirs, TORUS_DIRS))
    _, rep = analyze(a, d, "phys_torus")
    ends = {i: (dim, ("package", x), ("package", y)) for i, (dim, x, y) in TORUS_LINKS.items()}
    nominal = {i: TORUS_NOMINAL[dim] for i, (dim, _, _) in TORUS_LINKS.items()}
    phys = check_physical(rep, "phys_torus", TORUS_ROUTES, TORUS_DIRS, ends, nominal)
    check(phys[3]["bytes"] < phys[0]["bytes"] // 100,
          "link 3 (packages 1-3) is on no ring pair's route but carried %d bytes" % phys[3]["bytes"])
    # the ring's pairs cross link 0 both ways (0 -> 1 a to b, 1 -> 2 b to a), link 1 (2 -> 3,
    # 3 -> 0) and link 2 (1 -> 2, 3 -> 0) too: each direction carries one pair's share
    per_pair = PHYS_CALLS * (PHYS_N - 1) * PHYS_S // PHYS_N
    for pid in (0, 1, 2):
        for x in phys[pid]["directions"]:
            check(per_pair <= x["bytes"] <= per_pair + 2 * PHYS_AUX,
                  "link %d: direction %s -> %s carried %d bytes, expected one ring pair's %d"
                  % (pid, x["from"], x["to"], x["bytes"], per_pair))
    print("phys_torus: %s" % {i: [x["bytes"] for x in l["directions"]] for i, l in sorted(phys.items())})


def case_phys_hosts(a):
    # hosts A = ranks 0, 1 (package 0), B = ranks 2, 3 (package 1). Links: 0 = ranks 0-1,
    # 1 = ranks 2-3 (dimension 0), 2 = package 0 - switch 0, 3 = package 1 - switch 0
    # (dimension 1). Inside a host the pair's link; between hosts the sender's uplink, then the
    # receiver's.
    d = phys_record(a, "phys_hosts", ["phys-host-A", "phys-host-A", "phys-host-B", "phys-host-B"])
    pkg = [0, 0, 1, 1]
    # Directions: a pair's link from the lower rank (a) to the higher (b) is 0; between hosts out
    # of the sender's package to the switch (a to b, 0), then in from the switch (b to a, 1).
    routes, dirs = {}, {}
    for s in range(PHYS_N):
        for t in range(PHYS_N):
            if s != t:
                routes[(s, t)] = [pkg[s]] if pkg[s] == pkg[t] else [2 + pkg[s], 2 + pkg[t]]
                dirs[(s, t)] = [0 if s < t else 1] if pkg[s] == pkg[t] else [0, 1]
    got, got_dirs = trace_routes(d)
    check(got == routes, "routes in the trace %s, expected %s" % (got, routes))
    check(got_dirs == dirs, "directions in the trace %s, expected %s" % (got_dirs, dirs))
    _, rep = analyze(a, d, "phys_hosts")
    comm = [c for c in rep["trace"]["comms"] if c["name"] == "phys_hosts"][0]["comm_id"]
    pairs = {(l["src"], l["dst"]): l for l in rep["links"] if l["comm_id"] == comm}
    # nominal values: the link classes' (the rank-pair links announce them): inside a host the
    # pair's; an uplink has the between-host bandwidth and half its latency
    intra, inter = pairs[(0, 1)], pairs[(0, 2)]
    nominal = {0: (intra["bandwidth_Bps"], intra["latency_ns"]),
               1: (intra["bandwidth_Bps"], intra["latency_ns"]),
               2: (inter["bandwidth_Bps"], inter["latency_ns"] / 2),
               3: (inter["bandwidth_Bps"], inter["latency_ns"] / 2)}
    ends = {0: (0, ("rank", 0), ("rank", 1)), 1: (0, ("rank", 2), ("rank", 3)),
            2: (1, ("package", 0), ("switch", 0)), 3: (1, ("package", 1), ("switch", 0))}
    phys = check_physical(rep, "phys_hosts", routes, dirs, ends, nominal)
    print("phys_hosts: %s" % {i: [x["bytes"] for x in l["directions"]] for i, l in sorted(phys.items())})


STATUS = {0: "OK", -1: "ERR_INVALID_ARG", -2: "ERR_NO_MEMORY", -3: "ERR_TRANSPORT",
          -4: "ERR_TIMEOUT", -5: "ERR_PEER_FAILED", -6: "ERR_MISMATCH", -7: "ERR_ABORTED",
          -8: "ERR_UNSUPPORTED", -9: "ERR_TRUNCATED", -10: "ERR_STORE"}


def case_failed(a):
    store = os.path.join(a.work, "failed-store")
    shutil.rmtree(store, ignore_errors=True)
    os.makedirs(store)
    out = os.path.join(a.work, "failed-truth")
    for r in range(3):
        if os.path.exists("%s.%d" % (out, r)):
            os.unlink("%s.%d" % (out, r))
    d = record(a, "failed", [a.gt, "fail", store, out])
    truth = {}
    for r in range(3):
        with open("%s.%d" % (out, r)) as f:
            head, _, text = f.read().partition("text=")
        t = dict(line.split("=", 1) for line in head.split())
        truth[r] = {"status": STATUS.get(int(t["status"]), t["status"]), "t0": int(t["t0_ns"]),
                    "t1": int(t["t1_ns"]), "slept": int(t["slept_ns"]), "text": text.rstrip("\n")}
    failed = {r for r, t in truth.items() if t["status"] != "OK"}
    check(failed, "no rank saw the mismatched allreduce fail: %s" % truth)
    _, rep = analyze(a, d, "failed")
    v = rep["verdict"]
    f = v.get("failure")
    check(v["bottleneck"] == "failed" and f, "verdict of a failed run: %s" % v)
    check(v["sentence"].startswith("The run failed at ") and "straggler" not in v["sentence"],
          "verdict sentence: %s" % v["sentence"])
    # the first error, as the rank that had it got it from glucx_last_error()
    r = f["rank"]
    check(r in failed and f["event"] == "error", "failure names rank %s (%s); ranks that failed: %s"
          % (r, f["event"], sorted(failed)))
    check(f["status"] == truth[r]["status"] and f["text"] == truth[r]["text"],
          "failure %s %r, rank %d got %s %r" % (f["status"], f["text"], r, truth[r]["status"],
                                                truth[r]["text"]))
    check(("rank %d reported %s: %s" % (r, f["status"], truth[r]["text"].rstrip(". "))) in v["sentence"],
          "sentence does not name rank %d's error: %s" % (r, v["sentence"]))
    # when: inside the failing call (CLOCK_REALTIME as measured by the ranks, 20 ms for the
    # tracer's clock offset), and after the 4 iterations in which rank 2 slept
    at = rep["trace"]["start_ns"] + f["time_ns"]
    lo, hi = min(t["t0"] for t in truth.values()), max(t["t1"] for t in truth.values())
    check(lo - 20000000 <= at <= hi + 20000000,
          "failure at %d, the failing call ran in [%d, %d]" % (at, lo, hi))
    check(f["time_ns"] >= truth[2]["slept"],
          "failure at %d ns from the start, before rank 2's %d ns of sleep" % (f["time_ns"], truth[2]["slept"]))
    # the rest of the report stays: the iterations before the failure name rank 2 the straggler
    check(rep["summary"]["iterations"] >= 4, "iterations: %d" % rep["summary"]["iterations"])
    check(rep["stragglers"] and rep["stragglers"][0]["rank"] == 2,
          "stragglers of the iterations before the failure: %s" % rep["stragglers"][:2])
    print("failed: %s" % v["sentence"][:200])


def case_missing(a):
    store = os.path.join(a.work, "missing-store")
    shutil.rmtree(store, ignore_errors=True)
    os.makedirs(store)
    d = record(a, "missing", [a.gt, "missing", store, os.path.join(a.work, "missing-truth.txt")])
    p, rep = analyze(a, d, "missing")
    check(rep["trace"]["partial"], "a trace without rank 3 is not marked partial")
    check(3 in rep["trace"]["missing_ranks"], "missing_ranks %s lacks 3" % rep["trace"]["missing_ranks"])
    check(any("rank 3" in r for r in rep["trace"]["partial_reasons"]), "no reason names rank 3")
    check("PARTIAL" in p.stderr, "glucx-analyze did not say the report is partial")


def case_nontrace(a):
    d = os.path.join(a.work, "nontrace", "dir")
    shutil.rmtree(os.path.dirname(d), ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "notes.txt"), "w") as f:
        f.write("not a trace\n")
    p, _ = analyze(a, d, "nontrace", expect_rc=2)
    check("not a trace" in p.stderr and d in p.stderr, "unclear message: %s" % p.stderr)
    p, _ = analyze(a, os.path.join(a.work, "does-not-exist"), "nontrace2", expect_rc=2)
    check("cannot read trace" in p.stderr, "unclear message: %s" % p.stderr)


def diff_run(a, name, inputs, expect_rc=0, out=None):
    """`glucx-analyze diff INPUTS -o OUT`: (process, diff.json or None)."""
    out = out or os.path.join(a.work, name, "out")
    if os.path.isdir(out):
        shutil.rmtree(out)
    if not os.path.exists(os.path.dirname(out)):
        os.makedirs(os.path.dirname(out))
    p = run([a.analyze, "diff", *inputs, "-o", out], ok=False)
    check(p.returncode == expect_rc, "glucx-analyze diff rc %d (expected %d):\n%s\n%s"
          % (p.returncode, expect_rc, p.stdout, p.stderr))
    if expect_rc != 0:
        return p, None
    with open(os.path.join(out, "diff.json")) as f:
        d = json.load(f)
    with open(os.path.join(os.path.dirname(a.schema), "diff.schema.json")) as f:
        jsonschema.validate(d, json.load(f))
    with open(os.path.join(out, "diff.txt")) as f:
        text = f.read()
    check(text.startswith("glucx-analyze diff") and ("Cause: " + d["cause"]["sentence"]) in text,
          "diff.txt does not name the cause: %s" % text[:500])
    return p, d


def case_diff(a):
    """glucx-analyze diff on the two example reports: the numbers recomputed here from the
    reports (METRICS.md, "Diff of two runs"); bad inputs refused naming the file."""
    ex = os.path.join(os.path.dirname(a.schema), "examples")
    ra, rb = os.path.join(ex, "report.example.json"), os.path.join(ex, "report.straggler.json")
    with open(ra) as f:
        A = json.load(f)
    with open(rb) as f:
        B = json.load(f)
    _, d = diff_run(a, "diff", [ra, rb])
    ta, tb = A["summary"]["mean_iteration_ns"], B["summary"]["mean_iteration_ns"]
    check(d["iteration"]["delta_ns"] == tb - ta, "delta %s" % d["iteration"])

    def phases(r):
        t, T = r["summary"]["totals"], r["summary"]["mean_iteration_ns"]
        D = t["duration_ns"]
        v = {k: T * t[k + "_ns"] / D for k in ("compute", "exposed_communication", "idle")}
        v["wait"] = T - sum(v.values())
        return v
    pa, pb = phases(A), phases(B)
    got = {x["phase"]: x["contribution_ns"] for x in d["phases"]}
    for k in pa:
        check(abs(got[k] - (pb[k] - pa[k])) <= 1, "phase %s: %s, want %.0f" % (k, got[k], pb[k] - pa[k]))
    check(abs(sum(got.values()) - (tb - ta)) <= 4, "phases do not add up: %s" % got)
    order = [abs(x["contribution_ns"]) for x in d["phases"]]
    check(order == sorted(order, reverse=True), "phases not largest first: %s" % order)

    # collectives: both examples list every collective, so the calls inside iterations count
    def colls(r):
        out = {}
        for c in r["collectives"]:
            if c["iteration"] is None:
                continue
            lo = 1 << (c["bytes"].bit_length() - 1) if c["bytes"] else 0
            k = (c["coll"], lo)
            out[k] = out.get(k, 0) + c["time_ns"] / r["summary"]["iterations"]
        return out
    ca, cb = colls(A), colls(B)
    check(d["collectives_counted"] == "in_iterations", "counted %s" % d["collectives_counted"])
    got = {(x["coll"], x["bytes_min"]): x["contribution_ns"] for x in d["collectives"]}
    want = {k: cb.get(k, 0) - ca.get(k, 0) for k in set(ca) | set(cb)}
    check(set(got) == set(want), "collective groups %s, want %s" % (sorted(got), sorted(want)))
    for k in want:
        check(abs(got[k] - want[k]) <= 1, "collectives %s: %s, want %.0f" % (k, got[k], want[k]))

    # physical links: busy per iteration, matched by endpoints
    def links(r):
        n = r["summary"]["iterations"]
        return {(l["dim"], tuple(sorted([(l["a"]["kind"], l["a"]["index"]), (l["b"]["kind"], l["b"]["index"])]))):
                l["busy_ns"] / n for l in r["physical_links"]}
    la, lb = links(A), links(B)
    for x in d["links"]["entries"]:
        k = (x["dim"], tuple(sorted([(x["a_end"]["kind"], x["a_end"]["index"]),
                                      (x["b_end"]["kind"], x["b_end"]["index"])])))
        check(abs(x["contribution_ns"] - (lb.get(k, 0) - la.get(k, 0))) <= 1, "link %s: %s" % (k, x))
    check(len(d["links"]["entries"]) == len(set(la) | set(lb)), "links %d" % len(d["links"]["entries"]))

    # bad inputs: exit 2, the file and what is wrong named
    bad = os.path.join(a.work, "diff", "bad")
    os.makedirs(bad, exist_ok=True)
    missing = os.path.join(bad, "missing.json")
    p, _ = diff_run(a, "diff", [missing, rb], expect_rc=2)
    check(missing in p.stderr and "No such file" in p.stderr, "missing: %s" % p.stderr)
    cut = os.path.join(bad, "cut.json")
    with open(cut, "w") as f:
        f.write('{"schema_version": 1, "summ')
    p, _ = diff_run(a, "diff", [ra, cut], expect_rc=2)
    check(cut in p.stderr and "is not JSON" in p.stderr, "not JSON: %s" % p.stderr)
    p, _ = diff_run(a, "diff", [a.schema, rb], expect_rc=2)  # JSON, but not a report
    check(a.schema in p.stderr and "schema_version" in p.stderr, "wrong schema: %s" % p.stderr)
    p, _ = diff_run(a, "diff", [bad, rb], expect_rc=2)  # a directory: neither report nor trace
    check(bad in p.stderr and "neither a report" in p.stderr, "not a run: %s" % p.stderr)
    p, _ = diff_run(a, "diff", [ra, rb, ra], expect_rc=2)
    check("one run too many" in p.stderr, "three runs: %s" % p.stderr)
    p, _ = diff_run(a, "diff", [ra, rb], expect_rc=1, out=os.path.join(cut, "out"))
    check(cut in p.stderr and "no diff written" in p.stderr, "unwritable output: %s" % p.stderr)

    # diff.html: the dashboard template filled with diff.json as report.html is with report.json
    # (every '<' as \u003c); --no-html skips it; a missing or broken template is a warning
    out = os.path.join(a.work, "diff", "out")
    p, d = diff_run(a, "diff", [ra, rb])
    html_path = os.path.join(out, "diff.html")
    if a.template:
        check(os.path.exists(html_path) and "diff.html" in p.stdout, "no diff.html: %s" % p.stdout)
        with open(os.path.join(out, "diff.json")) as f:
            dj = f.read()
        with open(html_path) as f:
            html = f.read()
        check("@GLUCX_REPORT_JSON@" not in html and dj.replace("<", "\\u003c") in html,
              "diff.html does not carry diff.json")
    for extra, why in ((["--no-html"], None), (["--template", os.path.join(bad, "missing.html")], "not readable"),
                       (["--template", cut], "exactly once")):
        shutil.rmtree(out)
        p = run([a.analyze, "diff", ra, rb, "-o", out] + extra, ok=False)
        check(p.returncode == 0 and os.path.exists(os.path.join(out, "diff.json")),
              "diff %s: rc %d\n%s" % (extra, p.returncode, p.stderr))
        check(not os.path.exists(html_path) and "diff.html" not in p.stdout, "diff %s wrote diff.html" % extra)
        if why:
            check(why in p.stderr and "diff.html not written" in p.stderr, "diff %s: no warning: %s" % (extra, p.stderr))


def case_diff_trace(a):
    """glucx-analyze diff on two traces: each analysed first (in the same process) into
    OUT/report-a and OUT/report-b; the same run twice differs by nothing."""
    d1, _ = gt(a, "straggler")
    p, d = diff_run(a, "diff_trace", [d1, d1])
    out = os.path.join(a.work, "diff_trace", "out")
    for side in "ab":
        with open(os.path.join(out, "report-" + side, "report.json")) as f:
            rep = json.load(f)
        check(rep["stragglers"] and rep["stragglers"][0]["rank"] == 2, "report-%s: %s" % (side, rep["stragglers"]))
    check(d["iteration"]["delta_ns"] == 0 and d["cause"]["kind"] == "none", "same run: %s" % d["cause"])
    check(all(x["contribution_ns"] == 0 for x in d["phases"] + d["collectives"] + d["ranks"]["entries"]),
          "same run, contributions not 0")
    check(d["ranks"]["matched"] == 4 and not d["ranks"]["straggler"]["changed"], "ranks %s" % d["ranks"])
    # a trace against its own report: the same numbers
    _, d = diff_run(a, "diff_trace", [os.path.join(out, "report-a"), d1], out=os.path.join(a.work, "diff_trace", "out2"))
    check(d["iteration"]["delta_ns"] == 0, "report vs trace: %s" % d["iteration"])


def need_emit(a):
    if not a.emit:
        print("trace_emit not built: skipped")
        sys.exit(SKIP)


def case_empty(a):
    need_emit(a)
    d = record(a, "empty", [a.emit, "maps"])
    p, rep = analyze(a, d, "empty")
    check(rep["trace"]["partial"] and rep["trace"]["events"] == 0, "empty trace not partial / has events")
    check(any("empty trace" in r for r in rep["trace"]["partial_reasons"]), "no empty-trace reason")
    check(rep["verdict"]["bottleneck"] == "none", "verdict on an empty trace: %s" % rep["verdict"])


def case_truncated(a):
    d, _ = gt(a, "bytes")
    cut = os.path.join(a.work, "truncated", "trace")
    shutil.rmtree(os.path.dirname(cut), ignore_errors=True)
    shutil.copytree(d, cut)
    streams = []
    for root, _, files in os.walk(cut):
        for fn in files:
            if fn.startswith("glucx_") and "index" not in root:
                streams.append(os.path.join(root, fn))
    big = max(streams, key=os.path.getsize)
    size = os.path.getsize(big)
    with open(big, "r+b") as f:
        f.truncate(size // 2 + 7)  # mid-packet
    shutil.rmtree(os.path.join(os.path.dirname(big), "index"), ignore_errors=True)
    p, rep = analyze(a, cut, "truncated")
    check(rep["trace"]["partial"], "truncated trace not marked partial")
    print("truncated: %s" % rep["trace"]["partial_reasons"][:2])
    # metadata cut inside a packet (Babeltrace itself can hang on it): refused at once, clearly
    mcut = os.path.join(a.work, "truncated", "trace-metadata")
    shutil.copytree(d, mcut)
    metas = [os.path.join(r, "metadata") for r, _, f in os.walk(mcut) if "metadata" in f]
    check(metas, "no metadata file in %s" % mcut)
    with open(metas[0], "r+b") as f:
        f.truncate(3000)  # metadata packets are 4096 bytes: inside the first one
    p, _ = analyze(a, mcut, "truncated_metadata", expect_rc=2)
    check("metadata" in p.stderr and "truncated" in p.stderr,
          "no clear message for truncated metadata: %s" % p.stderr)
    print("truncated metadata: refused: %s" % p.stderr.strip().splitlines()[0])


def case_discarded(a):
    need_emit(a)
    d = record(a, "discarded", [a.emit, "burst", "2", "400000"], extra=["--buffer-size", "8K"])
    p, rep = analyze(a, d, "discarded")
    if rep["trace"]["discarded_events"] == 0 and rep["trace"]["discarded_packets"] == 0:
        print("the tracer kept up: nothing discarded, cannot test")
        sys.exit(SKIP)
    check(rep["trace"]["partial"], "discarded events but not partial")
    check(any("discarded" in r for r in rep["trace"]["partial_reasons"]), "no discard reason")


MD_MAGIC = 0x75D11D57  # CTF 1.8 packetized metadata: the header's magic
MD_HEADER = 37  # magic, uuid[16], checksum, content_size, packet_size (bits), 5 one-byte fields


def edit_metadata(path, edit):
    """Rewrite the CTF metadata file path with edit (bytes -> bytes of the same length) applied
    to its text: the contents of its packets joined (a statement that a packet boundary cuts, as
    where the boundaries fall depends on which classes were registered first, is edited whole),
    written back into the same packets, whose sizes stay as they are."""
    data = bytearray(open(path, "rb").read())
    spans, off = [], 0
    if len(data) >= MD_HEADER and struct.unpack_from("<I", data, 0)[0] == MD_MAGIC:
        while off < len(data):
            check(off + MD_HEADER <= len(data) and
                  struct.unpack_from("<I", data, off)[0] == MD_MAGIC,
                  "%s: no metadata packet header at byte %d" % (path, off))
            content_bits, packet_bits = struct.unpack_from("<II", data, off + 24)
            check(MD_HEADER * 8 <= content_bits <= packet_bits and packet_bits % 8 == 0 and
                  off + packet_bits // 8 <= len(data),
                  "%s: bad metadata packet sizes at byte %d" % (path, off))
            spans.append((off + MD_HEADER, off + content_bits // 8))
            off += packet_bits // 8
    else:
        spans = [(0, len(data))]  # plain-text metadata
    text = b"".join(bytes(data[x:y]) for x, y in spans)
    new = edit(text)
    check(len(new) == len(text), "%s: the edit changed the metadata's length" % path)
    pos = 0
    for x, y in spans:
        data[x:y] = new[pos:pos + y - x]
        pos += y - x
    with open(path, "wb") as f:
        f.write(data)


def metadata_text(path):
    """The text of CTF metadata file path: its packets' contents joined (or the file itself)."""
    data = open(path, "rb").read()
    if len(data) < MD_HEADER or struct.unpack_from("<I", data, 0)[0] != MD_MAGIC:
        return data
    out, off = [], 0
    while off < len(data):
        content_bits, packet_bits = struct.unpack_from("<II", data, off + 24)
        out.append(data[off + MD_HEADER:off + content_bits // 8])
        off += packet_bits // 8
    return b"".join(out)


CLOCK_RE = re.compile(rb"clock \{.*?\};", re.S)


def clock_fields(text):
    """(freq, offset_s, offset) of the one clock class in metadata text."""
    blocks = CLOCK_RE.findall(text)
    check(len(blocks) == 1, "expected one clock class in the metadata, found %d" % len(blocks))
    def get(k):  # an absent offset_s is 0 (LTTng writes the whole offset in cycles)
        m = re.search(rb"\b" + k + rb"\s*=\s*(-?\d+)", blocks[0])
        return int(m.group(1)) if m else 0
    return get(b"freq"), get(b"offset_s"), get(b"offset")


def trace_clock(trace):
    """The clock of every metadata file under trace (they must agree): (freq, offset_s, offset)."""
    got = set()
    for root, _, files in os.walk(trace):
        if "metadata" in files:
            got.add(clock_fields(metadata_text(os.path.join(root, "metadata"))))
    check(len(got) == 1, "%s: %d different clocks" % (trace, len(got)))
    return got.pop()


def shifted_copy(src, dst, shift_ns, drift=0.0, t0_ns=0, hostname=None):
    """A copy of trace src whose clock reads L(t) = t + shift_ns + drift' (t - t0_ns) where t
    is what src's clock reads (ns from origin): the clock class's frequency becomes
    round(f / (1 + drift)) (drift' = f / that - 1, returned with the offset at t0_ns) and its
    offset is moved to match; the metadata is written back as plain text (CTF 1.8 allows it).
    hostname: the copy's env hostname instead of src's.
    @return (the offset at t0_ns, drift') the copy has against src, exactly."""
    from fractions import Fraction as F
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    freq, off_s, off = trace_clock(src)
    nf = round(freq / (1 + drift)) if drift else freq
    d = F(freq, nf) - 1
    # src: ns(c) = off_s 1e9 + (off + c) 1e9 / freq; want ns'(c) = ns(c) + shift + d (ns(c) - t0)
    # = K + c 1e9 (1 + d) / freq with K below; ns'(c) = s' 1e9 + (o' + c) 1e9 / nf
    base = off_s * 10**9 + F(off * 10**9, freq)
    k = base + shift_ns + d * (base - t0_ns)
    s2 = k // 10**9  # floor: the remainder fits in one second of the new frequency
    o2 = round((k - s2 * 10**9) * nf / 10**9)
    if o2 >= nf:
        s2, o2 = s2 + 1, o2 - nf
    err = (s2 * 10**9 + F(o2 * 10**9, nf)) - k  # what rounding o2 leaves, < 1 ns
    for root, _, files in os.walk(dst):
        if "metadata" not in files:
            continue
        p = os.path.join(root, "metadata")
        text = metadata_text(p)

        def edit(m):
            b = m.group(0)
            b = re.sub(rb"\bfreq\s*=\s*-?\d+", b"freq = %d" % nf, b)
            b = re.sub(rb"\boffset_s\s*=\s*-?\d+;\s*", b"", b)
            return re.sub(rb"\boffset\s*=\s*-?\d+;", b"offset_s = %d;\n\toffset = %d;" % (s2, o2), b)
        text = CLOCK_RE.sub(edit, text)
        if hostname:
            text = re.sub(rb'(env \{[^}]*\bhostname = ")[^"]*"', lambda m: m.group(1) +
                          hostname.encode() + b'"', text, count=1)
        with open(p, "wb") as f:
            f.write(text)
        idx = os.path.join(root, "index")
        shutil.rmtree(idx, ignore_errors=True)  # packet indexes: Babeltrace reads the streams
    return float(shift_ns + err), float(d)


def message_latencies(dump):
    """One-way latencies (re - sb, ns) of the matched messages of a --dump-events file, per
    direction (src, dst): sends and receives paired in order per (comm, seq, step, src, dst), as
    METRICS.md defines the matching."""
    sends, recvs = {}, {}
    with open(dump) as f:
        for line in f:
            e = json.loads(line)
            if e["event"] == "send_begin" and e["peer"] >= 0:
                sends.setdefault((e["comm_id"], e["seq"], e["step"], e["rank"], e["peer"]),
                                 []).append(e["ts"])
            elif e["event"] == "recv_end" and e["peer"] >= 0:
                recvs.setdefault((e["comm_id"], e["seq"], e["step"], e["peer"], e["rank"]),
                                 []).append(e["ts"])
    lat = {}
    for k, sb in sends.items():
        for x, y in zip(sb, recvs.get(k, [])):
            lat.setdefault((k[3], k[4]), []).append(y - x)
    return lat


def case_clock(a):
    """Two ranks, each under its own glucx-trace (two traces, as two hosts would write), then
    copies of rank 1's trace with its clock shifted and skewed by known amounts (metadata
    rewritten): the estimate must be within its stated bound of the known shift, the bound at
    most the link's typical (median) one-way latency, the drift within 5 %, and no causality
    violation left. A copy of rank 1's trace given rank 0's clock offset shares one clock with
    it: nothing is corrected (consistent); the traces as recorded also share the machine's
    clock, but each LTTng session measured its own offset to the real-time origin, so they may
    disagree by the difference of those measurements (found like a shift when it is larger than
    the messages' latency)."""
    store = os.path.join(a.work, "clock-store")
    shutil.rmtree(store, ignore_errors=True)
    os.makedirs(store)
    truth = os.path.join(a.work, "clock-truth.txt")
    dirs, procs = [], []
    for r in (0, 1):
        d = os.path.join(a.work, "clock-%d" % r, "trace")
        shutil.rmtree(os.path.dirname(d), ignore_errors=True)
        os.makedirs(os.path.dirname(d))
        dirs.append(d)
        e = dict(os.environ)
        e.pop("GLUCX_TRACE", None)
        procs.append(subprocess.Popen([a.glucx_trace, "record", "-o", d, "--", a.gt, "child",
                                       "clock", str(r), store, truth],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      env=e))
    for p in procs:
        so, se = p.communicate(timeout=scaled(120))
        check(p.returncode == 0, "traced clock rank failed (rc %d):\n%s\n%s" % (p.returncode, so, se))
    d0, d1 = dirs
    # the two traces share the machine's clock: their relative offset is their metadata's
    f0, s0, o0 = trace_clock(d0)
    f1, s1, o1 = trace_clock(d1)
    check(f0 == f1 == 10**9, "unexpected clock frequencies %d, %d" % (f0, f1))
    base = (s1 * 10**9 + o1) - (s0 * 10**9 + o0)

    def merged(b, name, dump=None):
        out = os.path.join(a.work, "clock", name)
        shutil.rmtree(out, ignore_errors=True)
        cmd = [a.analyze, d0, b, "-o", out, "--no-html"] + (["--dump-events", dump] if dump else [])
        run(cmd)
        return load_report(a, out)

    # LTTng samples each session's offset of the real-time origin itself: two sessions started
    # together usually agree within microseconds, but a loaded machine (or the real-time clock
    # being slewed) can put them apart by more than a message's latency (CI saw -0.5 ms, so 993
    # receives ended "before" their sends and the merge rightly corrected it). "same-clock" is
    # rank 1's trace with rank 0's offset written in: exactly one clock, nothing to correct;
    # its one-way latencies are the true ones.
    dump = os.path.join(a.work, "clock", "events.jsonl")
    os.makedirs(os.path.dirname(dump), exist_ok=True)
    same = os.path.join(a.work, "clock", "same-clock-trace")
    sc_o, _ = shifted_copy(d1, same, -base)
    check(abs(base + sc_o) < 1, "same-clock copy off by %.3f ns" % (base + sc_o))
    rep = merged(same, "same-clock", dump)
    lat = message_latencies(dump)
    check(set(lat) == {(0, 1), (1, 0)} and all(len(v) >= 1000 for v in lat.values()),
          "messages both ways expected: %s" % {k: len(v) for k, v in lat.items()})
    typical = max(sorted(v)[len(v) // 2] for v in lat.values())
    t0 = rep["clock"]["t0_ns"]
    cases = [("same-clock", 0, 0.0), ("as-recorded", 0, 0.0), ("minus-50ms", -50 * 10**6, 0.0),
             ("minus-3ms", -3 * 10**6 - 123, 0.0), ("plus-50ms", 50 * 10**6, 0.0),
             ("drift-150ppm", 10**6, 150e-6), ("drift-minus-120ppm", -2 * 10**6, -120e-6)]
    # last: one directory holding both hosts (as glucx-cluster run --trace OUT writes), the
    # copy's hostname changed so the two traces name different hosts
    cases.append(("one-directory", 50 * 10**6, 0.0))
    for name, shift, drift in cases:
        if name == "same-clock":
            want_o, want_d = float(base + sc_o), 0.0  # rep: merged above
        elif name == "as-recorded":
            rep = merged(d1, name)
            want_o, want_d = float(base), 0.0
        elif name == "one-directory":
            top = os.path.join(a.work, "clock", "cluster")
            shutil.rmtree(top, ignore_errors=True)
            os.makedirs(top)
            shutil.copytree(d0, os.path.join(top, "a"))
            host0 = re.search(rb'hostname = "([^"]*)"', metadata_text(next(
                os.path.join(r, "metadata") for r, _, f in os.walk(d0) if "metadata" in f))).group(1)
            dt_o, dt_d = shifted_copy(d1, os.path.join(top, "b"), shift, drift, t0,
                                      host0.decode() + "-b")
            out = os.path.join(a.work, "clock", name)
            shutil.rmtree(out, ignore_errors=True)
            run([a.analyze, top, "-o", out, "--no-html"])
            rep = load_report(a, out)
            names = [h["name"] for h in rep["clock"]["hosts"]]
            check(names == ["%s (host %s)" % (top, host0.decode()),
                            "%s (host %s-b)" % (top, host0.decode())],
                  "hosts of one directory: %s" % names)
            want_o, want_d = base * (1 + dt_d) + dt_o, dt_d
        else:
            b = os.path.join(a.work, "clock", name + "-trace")
            dt_o, dt_d = shifted_copy(d1, b, shift, drift, t0)
            rep = merged(b, name)
            # offset at t0 of the copy against rank 0's clock: the recorded one carried along
            want_o, want_d = base * (1 + dt_d) + dt_o, dt_d
        h = rep["clock"]["hosts"][1]
        print("clock %s: offset %.0f ns (want %.0f) +- %.0f, drift %.3f ppm (want %.3f) +- %s, "
              "typical one-way latency %d ns, violations %d -> %d -> %d" % (
                  name, h["offset_ns"], want_o, h["offset_bound_ns"], h["drift_ppm"], want_d * 1e6,
                  h["drift_bound_ppm"], typical, rep["clock"]["violations_before"],
                  rep["clock"]["violations_after_offsets"], rep["clock"]["violations_after"]))
        if name == "same-clock" or (name == "as-recorded"
                                    and rep["clock"]["violations_before"] == 0):
            # one clock: the raw timestamps satisfy every message, so nothing is corrected (the
            # bound still holds the known offset) and no receive moves. As recorded, the
            # sessions' offsets may differ by more than a latency (above): then the known
            # offset must be found as in the shifted cases.
            check(h["status"] == "consistent" and h["offset_ns"] == 0 and h["drift_ppm"] == 0,
                  "%s: status %s offset %s drift %s (%s)" % (name, h["status"], h["offset_ns"],
                                                             h["drift_ppm"], h["note"]))
            check(rep["clock"]["violations_before"] == 0
                  and rep["clock"]["violations_after_offsets"] == 0
                  and rep["clock"]["clc_moved_receives"] == 0,
                  "%s: violations or moved receives on one machine's clock" % name)
        else:
            check(h["status"] == "ok", "%s: status %s (%s)" % (name, h["status"], h["note"]))
        check(abs(h["offset_ns"] - want_o) <= h["offset_bound_ns"],
              "%s: offset %.0f ns, want %.0f within the bound %.0f" % (
                  name, h["offset_ns"], want_o, h["offset_bound_ns"]))
        check(h["offset_bound_ns"] <= typical,
              "%s: bound %.0f ns above the typical one-way latency %d ns" % (
                  name, h["offset_bound_ns"], typical))
        if drift:
            check(abs(h["drift_ppm"] - want_d * 1e6) <= 0.05 * abs(want_d * 1e6),
                  "%s: drift %.3f ppm, want %.3f within 5%%" % (name, h["drift_ppm"], want_d * 1e6))
        check(abs(h["drift_ppm"] - want_d * 1e6) <= h["drift_bound_ppm"],
              "%s: drift %.3f ppm, want %.3f within the bound %.3f" % (
                  name, h["drift_ppm"], want_d * 1e6, h["drift_bound_ppm"]))
        if abs(shift) >= 10**6:
            check(rep["clock"]["violations_before"] > 0, "%s: no violation before" % name)
        check(rep["clock"]["violations_after"] == 0 and rep["trace"]["causality_violations"] == 0,
              "%s: violations left after the merge" % name)
        check(rep["trace"]["unmatched_sends"] == 0 and rep["trace"]["unmatched_recvs"] == 0,
              "%s: unmatched messages" % name)


def case_unknown_version(a):
    d, _ = gt(a, "bytes")
    cp = os.path.join(a.work, "unknown_version", "trace")
    shutil.rmtree(os.path.dirname(cp), ignore_errors=True)
    shutil.copytree(d, cp)
    n = 0
    for root, _, files in os.walk(cp):
        if "metadata" in files:
            def rename(text):  # same length, so the packets stay valid: a renamed field
                nonlocal n
                n += text.count(b" _peer;")
                return text.replace(b" _peer;", b" _pear;")
            edit_metadata(os.path.join(root, "metadata"), rename)
    check(n > 0, "no _peer field found in the metadata to rename")
    p, rep = analyze(a, cp, "unknown_version")
    check(rep["trace"]["partial"] and not rep["provider"]["recognised"], "renamed field not detected")
    check("glucx:send_begin" in rep["provider"]["mismatched_events"], "send_begin not listed as mismatched")
    check(any("provider version" in r for r in rep["trace"]["partial_reasons"]), "no provider-version reason")


def format_version(a):
    """The current trace format version that EVENTS.md defines."""
    text = open(a.events_md).read()
    m = re.search(r"^## Format version\n(?:.*\n)*?.*current version is \*\*(\d+)\*\*", text,
                  re.M)
    check(m is not None, "EVENTS.md defines no current format version")
    return int(m.group(1))


EMF_STMT = re.compile(rb'[ \t]*model\.emf\.uri = "glucx-trace-format:\d+";')


def class_formats(trace):
    """{glucx event class name: its model.emf.uri} over the events of the recorded command (the
    processes the trace's glucx-pids lists) (bt2)."""
    import bt2  # python3-bt2, as tests/trace uses
    pids = trace_pids(trace)
    out = {}
    for msg in bt2.TraceCollectionMessageIterator(trace):
        if type(msg) is bt2._EventMessageConst and msg.event.name.startswith("glucx:") and \
                int(msg.event.common_context_field["vpid"]) in pids:
            out[msg.event.name] = msg.event.cls.emf_uri
    return out


def with_format(a, src, name, version):
    """A copy of the trace src whose glucx event classes carry trace format `version` (None: no
    version), its metadata edited in place at the same length (the packets keep their sizes)."""
    cp = os.path.join(a.work, name, "trace")
    shutil.rmtree(os.path.dirname(cp), ignore_errors=True)
    shutil.copytree(src, cp)
    n = 0
    for root, _, files in os.walk(cp):
        if "metadata" not in files:
            continue
        path = os.path.join(root, "metadata")

        def sub(m):
            nonlocal n
            n += 1
            old = m.group(0)
            if version is None:
                return b" " * len(old)
            new = b'model.emf.uri = "glucx-trace-format:%d";' % version
            check(len(new) <= len(old), "cannot write version %d at the same length" % version)
            return b" " * (len(old) - len(new)) + new
        edit_metadata(path, lambda text: EMF_STMT.sub(sub, text))
    check(n > 0, "no glucx format version found in the metadata of %s" % src)
    want = None if version is None else "glucx-trace-format:%d" % version
    got = class_formats(cp)
    check(got and all(v == want for v in got.values()), "edited classes read %s" % got)
    return cp


def case_format_current(a):
    d, _ = gt(a, "bytes")
    v = format_version(a)
    got = class_formats(d)
    check(got and all(u == "glucx-trace-format:%d" % v for u in got.values()),
          "event classes' format versions %s, expected %d everywhere" % (got, v))
    _, rep = analyze(a, d, "format_current")
    check(not [w for w in rep["trace"]["warnings"] if "format version" in w],
          "version warning on a current trace: %s" % rep["trace"]["warnings"])
    check(not rep["trace"]["partial"], "current trace partial: %s" % rep["trace"]["partial_reasons"])
    print("format_current: %d classes of format %d, read without warning" % (len(got), v))


def case_format_missing(a):
    d, _ = gt(a, "bytes")
    v = format_version(a)
    _, ref = analyze(a, d, "format_missing-ref")
    cp = with_format(a, d, "format_missing", None)
    _, rep = analyze(a, cp, "format_missing")
    ws = [w for w in rep["trace"]["warnings"] if "no trace format version" in w]
    check(len(ws) == 1, "expected one version warning, got %s" % rep["trace"]["warnings"])
    w = ws[0]
    check(os.path.realpath(cp) in w or cp in w, "the warning does not name the trace %s: %s" % (cp, w))
    check("read as format %d" % v in w and "transfer ends after their wait_end" in w,
          "the warning does not say how it was read and what may be wrong: %s" % w)
    with open(os.path.join(a.work, "format_missing", "report", "report.txt")) as f:
        check("warning: " + w in f.read(), "report.txt lacks the version warning")
    # read as the current version: the same numbers
    for k in ("events", "start_ns", "end_ns", "partial"):
        check(rep["trace"][k] == ref["trace"][k], "trace.%s %s, the current trace's %s"
              % (k, rep["trace"][k], ref["trace"][k]))
    check([l["bytes"] for l in rep["links"]] == [l["bytes"] for l in ref["links"]], "link bytes differ")
    check(rep["verdict"]["sentence"] == ref["verdict"]["sentence"], "verdicts differ")
    print("format_missing: read as format %d with: %s" % (v, w))


def case_format_older(a):
    """Format 2 (EVENTS.md: format 3 without phys_link and route events) is read, with one warning
    per trace naming it; the events read are the same."""
    d, _ = gt(a, "bytes")
    v = format_version(a)
    check(v == 3, "case format_older is about format 2 under format 3, EVENTS.md says %d" % v)
    _, ref = analyze(a, d, "format_older-ref")
    cp = with_format(a, d, "format_older", 2)
    _, rep = analyze(a, cp, "format_older")
    ws = [w for w in rep["trace"]["warnings"] if "trace format 2" in w]
    check(len(ws) == 1, "expected one format-2 warning, got %s" % rep["trace"]["warnings"])
    check((os.path.realpath(cp) in ws[0] or cp in ws[0]) and "read as format 3" in ws[0] and
          "no physical links" in ws[0], "the warning does not name the trace and what is missing: %s" % ws[0])
    with open(os.path.join(a.work, "format_older", "report", "report.txt")) as f:
        check("warning: " + ws[0] in f.read(), "report.txt lacks the format-2 warning")
    for k in ("events", "start_ns", "end_ns", "partial"):
        check(rep["trace"][k] == ref["trace"][k], "trace.%s %s, the current trace's %s"
              % (k, rep["trace"][k], ref["trace"][k]))
    check([l["bytes"] for l in rep["links"]] == [l["bytes"] for l in ref["links"]], "link bytes differ")
    print("format_older: read with: %s" % ws[0])


def case_format_newer(a):
    d, _ = gt(a, "bytes")
    v = format_version(a)
    cp = with_format(a, d, "format_newer", v + 1)
    p, _ = analyze(a, cp, "format_newer", expect_rc=2)
    out = os.path.join(a.work, "format_newer", "report")
    for what, proc in (("glucx-analyze", p), ("the babeltrace2 CLI plugin", None)):
        if proc is None:
            bt = shutil.which("babeltrace2")
            if not bt or not a.plugin_dir:
                break
            out = os.path.join(a.work, "format_newer", "report-cli")
            shutil.rmtree(out, ignore_errors=True)
            proc = run([bt, "--plugin-path=" + a.plugin_dir, cp, "-c", "sink.glucx.report", "-p",
                        'output="%s"' % out], ok=False)
            check(proc.returncode != 0, "%s accepted format %d" % (what, v + 1))
        err = proc.stderr
        # glucx-analyze names the trace by its path, the CLI plugin by Babeltrace's trace name
        check("trace format %d" % (v + 1) in err and "format %d" % v in err and
              (cp in err or proc is not p), "%s does not name the trace and both versions "
              "(%d, %d): %s" % (what, v + 1, v, err))
        check(not os.path.exists(os.path.join(out, "report.json")),
              "%s wrote a report for a refused trace" % what)
    print("format_newer: format %d refused: %s" % (v + 1, p.stderr.strip().splitlines()[-1]))


def case_plugin_cli(a):
    d, _ = gt(a, "bytes")
    out = os.path.join(a.work, "plugin_cli", "report")
    shutil.rmtree(os.path.dirname(out), ignore_errors=True)
    bt = shutil.which("babeltrace2")
    if not bt or not a.plugin_dir:
        sys.exit(SKIP)
    # the trace's process list, as glucx-analyze finds it by itself: another job traced at the
    # same time is left out by both
    pid_file = os.path.join(d, "glucx-pids")
    trace_pids(d)  # present and well-formed
    run([bt, "--plugin-path=" + a.plugin_dir, d, "-c", "sink.glucx.report", "-p",
         'output="%s",pid-file="%s"' % (out, pid_file)])
    rep = load_report(a, out)
    # a pid-file that cannot be read fails the sink, naming the file, with no report
    bad_out, bad_pids = os.path.join(a.work, "plugin_cli", "bad"), os.path.join(d, "no-such-pids")
    p = run([bt, "--plugin-path=" + a.plugin_dir, d, "-c", "sink.glucx.report", "-p",
             'output="%s",pid-file="%s"' % (bad_out, bad_pids)], ok=False)
    check(p.returncode != 0 and "pid-file" in p.stderr and bad_pids in p.stderr and
          not os.path.exists(os.path.join(bad_out, "report.json")),
          "an unreadable pid-file: rc %d, %s" % (p.returncode, p.stderr[-2000:]))
    ref_out = os.path.join(a.work, "plugin_cli", "ref")
    run([a.analyze, d, "-o", ref_out, "--no-html"])
    ref = load_report(a, ref_out)
    for k in ("events", "start_ns", "end_ns", "left_out_events", "left_out_processes",
              "pid_files"):
        check(rep["trace"][k] == ref["trace"][k], "CLI and glucx-analyze differ in trace.%s: "
              "%s vs %s" % (k, rep["trace"][k], ref["trace"][k]))
    check([l["bytes"] for l in rep["links"]] == [l["bytes"] for l in ref["links"]], "link bytes differ")
    check(rep["verdict"]["sentence"] == ref["verdict"]["sentence"], "verdicts differ")


def case_merge(a):
    """Two trace directories with different trace UUIDs (as per-host traces have) are merged."""
    d1, _ = gt(a, "bytes")
    d2, _ = gt(a, "straggler")
    _, r1 = analyze(a, d1, "merge-1")
    _, r2 = analyze(a, d2, "merge-2")
    out = os.path.join(a.work, "merge", "report")
    shutil.rmtree(out, ignore_errors=True)
    run([a.analyze, d1, d2, "-o", out, "--no-html"])
    rep = load_report(a, out)
    check(rep["trace"]["events"] == r1["trace"]["events"] + r2["trace"]["events"],
          "merged events %d != %d + %d" % (rep["trace"]["events"], r1["trace"]["events"], r2["trace"]["events"]))
    names = sorted(c["name"] for c in rep["trace"]["comms"])
    check(names == ["bytes", "straggler"], "merged comms %s" % names)
    check(rep["stragglers"] and rep["stragglers"][0]["rank"] == 2, "straggler lost in the merge")


def case_pidfiles(a):
    import bt2  # python3-bt2, as tests/trace uses

    def per_vpid(trace):
        """({vpid: glucx events}, {vpid: [(communicator name, rank, size) of its comm_init]})"""
        counts, inits = {}, {}
        for msg in bt2.TraceCollectionMessageIterator(trace):
            if type(msg) is bt2._EventMessageConst and msg.event.name.startswith("glucx:"):
                v = int(msg.event.common_context_field["vpid"])
                counts[v] = counts.get(v, 0) + 1
                if msg.event.name == "glucx:comm_init":
                    f = msg.event.payload_field
                    inits.setdefault(v, []).append((str(f["name"]), int(f["rank"]),
                                                    int(f["size"])))
        return counts, inits

    dirs = {}
    for mode in ("bytes", "straggler"):
        store = os.path.join(a.work, "pidfiles-" + mode + "-store")
        shutil.rmtree(store, ignore_errors=True)
        os.makedirs(store)
        dirs[mode] = record(a, "pidfiles-" + mode,
                            [a.gt, mode, store, os.path.join(a.work, "pidfiles-truth.txt")])
    d1, d2 = dirs["bytes"], dirs["straggler"]
    files = [os.path.join(d, "glucx-pids") for d in (d1, d2)]
    lists = []
    for f, d in zip(files, (d1, d2)):
        check(os.path.isfile(f), "glucx-trace did not write %s" % f)
        lists.append(trace_pids(d))
    # each trace: the events of the processes its list names (this run's), and those of any other
    # job traced at the same time (LTTng records it in this session too)
    own, foreign = [], []
    for d, mode, pids in ((d1, "bytes", lists[0]), (d2, "straggler", lists[1])):
        counts, inits = per_vpid(d)
        own.append({p: n for p, n in counts.items() if p in pids})
        foreign.append({p: n for p, n in counts.items() if p not in pids})
        # every rank of this run's communicator is a listed process
        ranks = sorted((r, n) for p in own[-1] for name, r, n in inits.get(p, []) if name == mode)
        check(ranks and [r for r, _ in ranks] == list(range(ranks[0][1])),
              "%s: the listed processes %s hold ranks %s of communicator %s" % (
                  d, sorted(pids), ranks, mode))
    c1, c2 = own
    f_events = sum(foreign[0].values()) + sum(foreign[1].values())
    f_procs = len(foreign[0]) + len(foreign[1])  # per trace: a process of both counts twice
    # drop the busiest process of the first trace from its list
    v = max(c1, key=lambda k: (c1[k], k))
    with open(files[0], "w") as fh:
        fh.write("".join("%d\n" % p for p in sorted(lists[0] - {v})))
    out = os.path.join(a.work, "pidfiles", "report")
    shutil.rmtree(out, ignore_errors=True)
    run([a.analyze, d1, d2, "-o", out, "--no-html"])
    rep = load_report(a, out)
    tr = rep["trace"]
    total = sum(c1.values()) + sum(c2.values())
    check(tr["left_out_events"] == c1[v] + f_events and tr["left_out_processes"] == 1 + f_procs,
          "left out %d events of %d processes, expected %d of 1 (pid %d) + %d of %d of another "
          "job" % (tr["left_out_events"], tr["left_out_processes"], c1[v], v, f_events, f_procs))
    check(tr["events"] == total - c1[v], "events %d, expected %d - %d" % (tr["events"], total, c1[v]))
    check(sorted(tr["pid_files"]) == sorted(os.path.realpath(f) for f in files),
          "pid_files %s" % tr["pid_files"])
    check(tr["warnings"][0].startswith("%d events of %d processes not listed" % (
        c1[v] + f_events, 1 + f_procs)), "warning: %s" % tr["warnings"])
    vpids = {r.get("vpid") for c in tr["comms"] for r in c.get("ranks", [])}
    check(v not in vpids, "pid %d left out but still a rank: %s" % (v, tr["comms"]))
    check(sorted(c["name"] for c in tr["comms"]) == ["bytes", "straggler"],
          "comms %s" % [c["name"] for c in tr["comms"]])

    # a trace subdirectory given directly: its glucx-pids is found above it
    sub = None
    for root, _, names in os.walk(d1):
        if "metadata" in names:
            sub = root
    p, rep = analyze(a, sub, "pidfiles-sub")
    check(rep["trace"]["left_out_events"] == c1[v] + sum(foreign[0].values()) and
          rep["trace"]["events"] == sum(c1.values()) - c1[v],
          "from %s: left out %d, events %d" % (sub, rep["trace"]["left_out_events"],
                                               rep["trace"]["events"]))

    # without the files: everything, as before
    for f in files:
        os.unlink(f)
    p, rep = analyze(a, d1, "pidfiles-none")
    tr = rep["trace"]
    everything = sum(c1.values()) + sum(foreign[0].values())
    check(tr["events"] == everything and tr["left_out_events"] == 0 and
          tr["pid_files"] == [] and not any("left out" in w for w in tr["warnings"]),
          "without glucx-pids: events %d of %d, left out %d, files %s"
          % (tr["events"], everything, tr["left_out_events"], tr["pid_files"]))


# ---- glucx-analyze whatif (METRICS.md, "What-if prediction") ---------------------------------

# EVENTS.md's algorithm enumeration (coll_begin/coll_end "alg")
EV_ALGS = ["ring", "recursive_doubling", "rabenseifner", "bruck", "pairwise", "linear",
           "dissemination", "binomial", "scatter_allgather", "reduce_scatter_gather", "halving",
           "hierarchical", "torus", "torus_rotated"]
EV_COLLS = ["allreduce", "allgather", "allgatherv", "reduce_scatter", "alltoall", "alltoallv",
            "broadcast", "reduce", "gather", "scatter", "barrier"]


def wi_run_collectives(report_dir):
    """The run as the test reads it on its own from the report directory: report.json's
    iteration per (comm, seq) and the dump's per-rank coll_begin/coll_end, the call's requested
    algorithms (sched_decision reason "override"). Returns ({(comm, seq): instance}, nprocs)."""
    with open(os.path.join(report_dir, "report.json")) as f:
        rep = json.load(f)
    iters = {(c["comm_id"], c["seq"]): c.get("iteration") for c in rep["collectives"]}
    proc, insts, override = {}, {}, set()
    with open(os.path.join(report_dir, "events.jsonl")) as f:
        for line in f:
            e = json.loads(line)
            if e["event"] == "comm_init":
                proc[(e["comm_id"], e["rank"])] = (e["host"], e["vpid"])
            elif e["event"] == "sched_decision" and e["kind"] == 0 and e["reason"] == "override":
                override.add((e["comm_id"], e["seq"]))
            elif e["event"] in ("coll_begin", "coll_end"):
                k = (e["comm_id"], e["seq"])
                i = insts.setdefault(k, {"coll": e["coll"], "bytes": e["bytes"], "alg": e["alg"],
                                         "b": {}, "e": {}, "iteration": iters.get(k)})
                p = proc[(e["comm_id"], e["rank"])]
                if e["event"] == "coll_begin":
                    i["b"][p] = e["ts"]
                else:
                    i["e"][p] = e["ts"]
                    i["alg"] = e["alg"]
    # times from the earliest begin (trace times near 1e18 ns: exact as Python ints, not as
    # the floats the replay mixes them with)
    t0 = min(t for i in insts.values() for t in i["b"].values())
    for k, i in insts.items():
        i["requested"] = k in override
        i["b"] = {p: t - t0 for p, t in i["b"].items()}
        i["e"] = {p: t - t0 for p, t in i["e"].items()}
    procs = sorted(set(proc.values()))
    return insts, procs


def wi_costs(a, topology, sizes, tune=""):
    """glucx-info --algorithms --json on `topology` at `sizes`: {(coll, alg): {size: ns}} and
    {(coll, size): the selection's algorithm} (GLUCX_TUNE=tune)."""
    p = run([a.info, "--algorithms", "--topology", topology, "--json", "--sizes",
             ",".join(str(x) for x in sizes)], env={"GLUCX_TUNE": tune})
    j = json.loads(p.stdout)
    cost, chosen = {}, {}
    for c in j["collectives"]:
        for alg in c["algorithms"]:
            cost[(c["name"], alg["name"])] = dict(zip(j["sizes"], alg["cost_ns"]))
        for ch in c["chosen"]:
            chosen[(c["name"], ch["size"])] = ch["algorithm"]
    return cost, chosen


def wi_predict(insts, procs, durations):
    """The replay, written here from METRICS.md's rule: each process keeps its measured gap
    between consecutive collectives (its own order by begin time); a collective starts at its
    last arrival and lasts its duration, each rank leaving at its measured share of it. Returns the mean iteration time
    (iterations after the first: end of its last collective minus the previous iteration's)."""
    seqs = {p: sorted((i["b"][p], k) for k, i in insts.items() if p in i["b"]) for p in procs}
    end, arr, pending = {}, {}, {p: 0 for p in procs}
    for p in procs:
        arr[(p, seqs[p][0][1])] = seqs[p][0][0]
    progress = True
    while progress:
        progress = False
        for k, i in insts.items():
            if k in end or not all((p, k) in arr for p in i["b"]):
                continue
            start = max(arr[(p, k)] for p in i["b"])
            end[k] = start + durations[k]
            progress = True
            lastb, meas = max(i["b"].values()), max(i["e"].values()) - max(i["b"].values())
            for p in i["b"]:
                # each rank leaves at its measured share of the time after the last arrival
                share = min(1, max(0, (i["e"][p] - lastb) / meas)) if meas > 0 else 1
                n = [x[1] for x in seqs[p]].index(k)
                if n + 1 < len(seqs[p]):
                    nk = seqs[p][n + 1][1]
                    arr[(p, nk)] = start + durations[k] * share + \
                        max(0, insts[nk]["b"][p] - i["e"][p])
    check(len(end) == len(insts), "the test's replay left collectives out")
    last = {}
    for k, i in insts.items():
        if i["iteration"] is not None and i["iteration"] >= 0:
            last[i["iteration"]] = max(last.get(i["iteration"], 0), end[k])
    its = sorted(last)
    d = [last[its[n]] - last[its[n - 1]] for n in range(1, len(its))]
    return sum(d) / len(d)


def wi_durations(insts, mode, cost_new, chosen, cost_old):
    out = {}
    for k, i in insts.items():
        coll, old_alg = EV_COLLS[i["coll"]], EV_ALGS[i["alg"]]
        alg = old_alg if i["requested"] else chosen[(coll, i["bytes"])]
        new = cost_new[(coll, alg)][i["bytes"]]
        old = cost_old[(coll, old_alg)][i["bytes"]]
        meas = max(i["e"].values()) - max(i["b"].values())
        out[k] = new if mode == "absolute" else meas + new - old if mode == "additive" \
            else meas * new / old
    return out


def wi(a, args, expect_rc=0):
    p = run([a.analyze, "whatif"] + args, ok=False)
    check(p.returncode == expect_rc, "whatif %s: rc %d, expected %d:\n%s\n%s"
          % (args, p.returncode, expect_rc, p.stdout[-2000:], p.stderr[-2000:]))
    return p


def case_whatif(a):
    check(a.info, "case whatif needs --info (glucx-info)")
    topo = os.path.join(a.work, "torus.yaml")
    with open(topo, "w") as f:
        f.write(TORUS_YAML)
    # the same torus with dimension 1 at a quarter of its rate (1 -> 0.25 GB/s)
    slow = os.path.join(a.work, "torus-slow.yaml")
    with open(slow, "w") as f:
        f.write(TORUS_YAML.replace("bandwidth: [50, 1, 2]", "bandwidth: [50, 0.25, 2]"))
    d = phys_record(a, "whatif", ["whatif-host-%d" % r for r in range(PHYS_N)], topo)
    out = os.path.join(a.work, "whatif", "out")
    shutil.rmtree(out, ignore_errors=True)
    wi(a, [d, "--topology", topo, "-o", out])
    rdir = os.path.join(out, "report")
    insts, procs = wi_run_collectives(rdir)
    check(len(procs) == PHYS_N, "processes in the dump: %s" % procs)
    sizes = sorted({i["bytes"] for i in insts.values()})
    cost_t, chosen_t = wi_costs(a, topo, sizes)
    cost_s, chosen_s = wi_costs(a, slow, sizes)

    def got(args):
        o = os.path.join(a.work, "whatif", "o-%d" % len(os.listdir(os.path.join(a.work, "whatif"))))
        wi(a, [rdir] + args + ["-o", o])
        with open(os.path.join(o, "whatif.json")) as f:
            return json.load(f)

    def near(x, y, what):
        check(abs(x - y) <= 2 + 1e-6 * abs(y), "%s: whatif %s, the test %s" % (what, x, y))

    # the same setup, relative: every duration as measured, so the replay gives the run back
    j = got(["--topology", topo])
    want = wi_predict(insts, procs, wi_durations(insts, "relative", cost_t, chosen_t, cost_t))
    near(j["prediction"]["iteration_ns"], want, "same topology, relative")
    near(j["prediction"]["iteration_ns"], j["prediction"]["measured_iteration_ns"],
         "same topology, relative, against the measured iteration")
    # dimension 1 at a quarter: a topology file, and --link-rate on the original
    for mode in ("relative", "absolute", "additive"):
        want = wi_predict(insts, procs, wi_durations(insts, mode, cost_s, chosen_s, cost_t))
        j = got(["--topology", slow, "--from-topology", topo, "--mode", mode])
        near(j["prediction"]["iteration_ns"], want, "slow dimension 1 (file), %s" % mode)
        j2 = got(["--topology", topo, "--link-rate", "dim1=0.25", "--mode", mode])
        near(j2["prediction"]["iteration_ns"], want, "--link-rate dim1=0.25, %s" % mode)
        # 2 Gbit/s is 0.25 GB/s
        j3 = got(["--topology", topo, "--link-rate", "dim1=2gbit", "--mode", mode])
        near(j3["prediction"]["iteration_ns"], want, "--link-rate dim1=2gbit, %s" % mode)
    # the bottleneck's link class: intra (dimension 0) or inter (dimensions 1 and 2), the one
    # whose removal (1e6 GB/s, latency 0) saves the most of that collective's cost, by
    # glucx-info on such files
    j = got(["--topology", slow, "--from-topology", topo])
    bn, bd = j["bottleneck"], j.get("bottleneck_link_class")
    base_cost = cost_s[(bn["coll"], bn["algorithm"])][bn["bytes"]]
    saves = {}
    for cls, dims in (("intra", [0]), ("inter", [1, 2])):
        bw, lat = [50, 0.25, 2], [500, 10000, 20000]
        for dim in dims:
            bw[dim], lat[dim] = 1e6, 0
        free = os.path.join(a.work, "torus-free-%s.yaml" % cls)
        with open(free, "w") as f:
            f.write("topology: [FullyConnected, Ring, Ring]\nnpus_count: [1, 2, 2]\n"
                    "bandwidth: [%r, %r, %r]\nlatency: [%r, %r, %r]\n" % tuple(bw + lat))
        c, _ = wi_costs(a, free, [bn["bytes"]])
        saves[cls] = base_cost - c[(bn["coll"], bn["algorithm"])][bn["bytes"]]
    want = max(saves, key=lambda k: saves[k])
    check(bd and bd["class"] == want and
          abs(bd["share_of_collective"] - saves[want] / base_cost) < 1e-6,
          "bottleneck link class %s, the test: %s saving %s of %s (%s)"
          % (bd, want, saves[want], base_cost, bn))
    # --tune: the allreduce the benchmark does not request, forced to ring (GLUCX_TUNE syntax)
    cost_r, chosen_r = wi_costs(a, topo, sizes, "allreduce:ring")
    want = wi_predict(insts, procs, wi_durations(insts, "absolute", cost_r, chosen_r, cost_t))
    j = got(["--topology", topo, "--tune", "allreduce:ring", "--mode", "absolute"])
    near(j["prediction"]["iteration_ns"], want, "--tune allreduce:ring, absolute")
    check(any(c["coll"] == "allreduce" and c["algorithm"] == "ring" for c in j["collectives"]),
          "--tune allreduce:ring: no allreduce row by ring in %s" % j["collectives"])
    # one link degraded: the ring allgather crosses it, so it cannot get faster
    j = got(["--topology", topo, "--link-rate", "0=0.25", "--mode", "absolute"])
    base = got(["--topology", topo, "--mode", "absolute"])
    check(j["prediction"]["iteration_ns"] > base["prediction"]["iteration_ns"],
          "link 0 at a quarter: %s not above %s" % (j["prediction"]["iteration_ns"],
                                                    base["prediction"]["iteration_ns"]))
    # errors: exit 2, the message naming the argument and its value
    big = os.path.join(a.work, "torus8.yaml")
    with open(big, "w") as f:
        f.write(TORUS_YAML.replace("npus_count: [1, 2, 2]", "npus_count: [2, 2, 2]"))
    for args, text in ((["--link-rate", "99=1"], "no link '99'"),
                       (["--link-rate", "dim7=1"], "no dimension '7'"),
                       (["--link-rate", "0=fast"], "rate 'fast'"),
                       (["--link-rate", "0"], "expected LINK=RATE"),
                       (["--tune", "allreduce:nosuch"], "--tune 'allreduce:nosuch'"),
                       (["--ranks", "x"], "--ranks 'x'"),
                       (["--mode", "both"], "--mode 'both'")):
        p = wi(a, [rdir, "--topology", topo] + args, expect_rc=2)
        check(text in p.stderr, "whatif %s: message %r does not name %r" % (args, p.stderr, text))
    p = wi(a, [rdir, "--topology", big], expect_rc=2)
    check("has 8 ranks, the run 4" in p.stderr and "--ranks 8" in p.stderr,
          "rank mismatch message: %r" % p.stderr)
    p = wi(a, [rdir, "--topology", big, "--ranks", "4"], expect_rc=2)
    check("--ranks 4" in p.stderr, "--ranks against the topology: %r" % p.stderr)
    p = wi(a, [os.path.join(a.work, "nonexistent"), "--topology", topo], expect_rc=2)
    print("whatif: same-topology iteration %d ns (measured %d ns)"
          % (base["prediction"]["iteration_ns"], base["prediction"]["measured_iteration_ns"]))


def case_whatif_scale(a):
    """4096 ranks on a 16x16x16 torus from a hand-written 4-rank run (no trace needed): it runs
    and its time is printed (docs/perf.md), never asserted."""
    w = os.path.join(a.work, "whatif_scale")
    shutil.rmtree(w, ignore_errors=True)
    os.makedirs(os.path.join(w, "report"))
    topo = os.path.join(w, "torus16.yaml")
    with open(topo, "w") as f:
        f.write("topology: [FullyConnected, Ring, Ring, Ring]\nnpus_count: [1, 16, 16, 16]\n"
                "bandwidth: [50, 25, 25, 25]\nlatency: [500, 1000, 1000, 1000]\n")
    small = os.path.join(w, "torus4.yaml")
    with open(small, "w") as f:
        f.write("topology: [FullyConnected, Ring, Ring]\nnpus_count: [1, 2, 2]\n"
                "bandwidth: [50, 25, 25]\nlatency: [500, 1000, 1000]\n")
    # 4 ranks, 50 iterations of compute 1 ms then an allreduce of 64 MiB and an allgather of
    # 1 MiB, each 2 ms as measured
    colls, events, t = [], [], 0
    for r in range(4):
        events.append({"event": "comm_init", "ts": 0, "vpid": 100 + r, "vtid": 100 + r,
                       "comm_id": "0x1", "rank": r, "size": 4, "package": r, "npackages": 4,
                       "name": "scale", "host": "h%d" % r})
    seq = 0
    for it in range(50):
        for coll, nbytes in ((0, 64 << 20), (1, 1 << 20)):
            t += 1000000
            for r in range(4):
                base = {"comm_id": "0x1", "rank": r, "seq": seq, "coll": coll, "bytes": nbytes,
                        "alg": 0, "vpid": 100 + r, "vtid": 100 + r}
                events.append(dict(base, event="coll_begin", ts=t + 1000 * r))
                events.append(dict(base, event="coll_end", ts=t + 2000000))
            colls.append({"comm_id": "0x1", "seq": seq, "iteration": it})
            t += 2000000
            seq += 1
    with open(os.path.join(w, "report", "events.jsonl"), "w") as f:
        for e in events:
            f.write(json.dumps(e) + "\n")
    with open(os.path.join(w, "report", "report.json"), "w") as f:
        json.dump({"schema_version": 1, "collectives": colls}, f)
    for mode in ("relative", "absolute"):
        t0 = time.monotonic()
        p = run([a.analyze, "whatif", os.path.join(w, "report"), "--topology", topo,
                 "--from-topology", small, "--ranks", "4096", "--mode", mode, "-o",
                 os.path.join(w, "out-" + mode)], timeout=scaled(300))
        dt = time.monotonic() - t0
        with open(os.path.join(w, "out-" + mode, "whatif.json")) as f:
            j = json.load(f)
        check(j["ranks"] == 4096 and j["iterations"] == 50,
              "4096 ranks: ranks %s, iterations %s" % (j["ranks"], j["iterations"]))
        check(j["prediction"]["iteration_ns"] > 1000000,
              "4096 ranks: iteration %s ns, below the compute alone" % j["prediction"])
        print("whatif_scale: %s, 4096 ranks on 16x16x16, 100 collectives: %.2f s (iteration "
              "%.3f ms, measured at 4 ranks %.3f ms)" % (mode, dt,
                                                          j["prediction"]["iteration_ns"] / 1e6,
                                                          j["prediction"]["measured_iteration_ns"] / 1e6))
    # a second communicator over ranks 0 and 1 only: not costed (its measured duration kept,
    # counted), and no rank scaling over it (exit 2, naming it)
    with open(os.path.join(w, "report", "events.jsonl"), "a") as f:
        for r in range(2):
            f.write(json.dumps({"event": "comm_init", "ts": 0, "vpid": 100 + r, "vtid": 100 + r,
                                "comm_id": "0x2", "rank": r, "size": 2, "package": r,
                                "npackages": 2, "name": "pair", "host": "h%d" % r}) + "\n")
            base = {"comm_id": "0x2", "rank": r, "seq": 0, "coll": 0, "bytes": 8, "alg": 0,
                    "vpid": 100 + r, "vtid": 100 + r}
            f.write(json.dumps(dict(base, event="coll_begin", ts=t + 1000)) + "\n")
            f.write(json.dumps(dict(base, event="coll_end", ts=t + 5000)) + "\n")
    p = run([a.analyze, "whatif", os.path.join(w, "report"), "--topology", topo, "--ranks",
             "4096", "--mode", "absolute"], ok=False)
    check(p.returncode == 2 and "--ranks 4096: collective allreduce seq 0 of communicator 0x2 "
          "involves 2 of the run's 4 processes" in p.stderr,
          "--ranks over a partial communicator: rc %d, %r" % (p.returncode, p.stderr))
    p = run([a.analyze, "whatif", os.path.join(w, "report"), "--topology", small, "-o",
             os.path.join(w, "out-partial")])
    with open(os.path.join(w, "out-partial", "whatif.json")) as f:
        j = json.load(f)
    check(j["collectives_not_costed"] == 1 and j["collectives_replayed"] == 101,
          "partial communicator: not costed %s of %s" % (j["collectives_not_costed"],
                                                         j["collectives_replayed"]))


def main():
    ap = argparse.ArgumentParser()
    for k in ("glucx-trace", "analyze", "gt", "schema", "events-md", "work"):
        ap.add_argument("--" + k, required=True)
    # the babeltrace2 CLI's plugin directory; left out in a sanitized build, whose plugin module
    # the (unsanitized) CLI cannot load: the cases then check glucx-analyze alone
    ap.add_argument("--plugin-dir")
    ap.add_argument("--emit")
    ap.add_argument("--bench")
    ap.add_argument("--info")  # glucx-info: the whatif cases' independent costs
    # the build's dashboard template (glucx-analyze finds it by itself): diff.html is expected
    ap.add_argument("--template")
    ap.add_argument("case")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    try:
        globals()["case_" + a.case](a)
    except (Failure, PidListError, jsonschema.ValidationError) as e:
        print("FAIL (%s): %s" % (a.case, e))
        return 1
    print("PASS (%s)" % a.case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
