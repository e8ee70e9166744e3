#!/usr/bin/env python3
"""glucx-cluster tests on a 2x2 torus of packages with 2 ranks per package (torus2x2.yaml).

usage: test_cluster.py CASE --tool GLUCX_CLUSTER --topology YAML [--topology-json FIXTURE]
       [--bench GLUCX_BENCH] [--name NAME]

The cluster is built from the YAML file (glucx-cluster runs `glucx-info --topology YAML --json`,
the C model); the expectations come from the same model's JSON.

CASE:
  plan       (no root) the plan's routes agree with the model: every route's first hop is the
             neighbour across its first link, and a model whose route cannot be realised by
             destination routing is refused with a message naming the route; the hand-written
             FIXTURE equals what glucx-info makes of YAML
  lifecycle  up/down: after down no namespace, interface, mount, process or state of the cluster
             remains, also after a `run` killed with SIGKILL mid-job, after an `up` killed
             part-way and without the state file; down twice is fine
  hosts      hosts are distinct: hostname, boot_id, /dev/shm and CLOCK_MONOTONIC offset
  run        the variables every rank gets, the first failing rank's status with the others
             stopped, --timeout, SIGTERM forwarded; no rank left behind
  routes     a glucx-bench job over all hosts is correct, and no byte leaves its route: a TCP
             stream and a glucx broadcast from package 0 to 3 (two hops) are counted on exactly
             the links and directions of the routes 0->3 (data) and 3->0 (ACKs)
  trace      (Switch topology) `run --trace DIR`: one trace per host in DIR/<host>/, each from
             the host's own session daemon, with only that host's ranks and its hostname
  mpirun     (Switch topology) mpirun in host 0 with `glucx-cluster exec` as its rsh agent
             starts glucx-bench ranks in every host
  accounting (trace + analysis) the report's bytes per physical link equal what the link's
             interfaces counted less the TCP/IP headers, within 2%: a traced alltoall over all
             hosts; per link, the payload is the two ends' transmitted bytes less 66 bytes per
             packet (Ethernet 14 + IPv4 20 + TCP 32 with the timestamp option: the counters count
             a GSO/TSO packet once, with one set of headers, so offloads need no correction;
             pure ACKs are all headers), retransmitted segments (nstat TcpRetransSegs in every
             host) are allowed for at one MSS each
  bottleneck (trace + analysis) a link degraded to a quarter of its rate while a traced
             alltoall runs is the bottleneck physical link the verdict names
  volume     (trace + analysis) the bytes each physical link carries, per direction, for every
             call of each topology-aware algorithm (allreduce hierarchical, torus, torus_rotated;
             allgather, reduce-scatter, broadcast, reduce and alltoall hierarchical) and of the
             flat ring, from the trace's
             sends and routes, equal the algorithm's analytic volume exactly: per (rank, peer)
             pair derived here from the model's shape (packages, lines, the dimension order each
             local rank takes), summed over the model's routes
  torch      (trace + analysis, the venv's python) the glucx torch.distributed backend on the
             torus, a script with no glucx-specific call (torch_job.py: all_reduce, all_gather,
             all_gather_into_tensor, _all_gather_base, reduce_scatter, reduce_scatter_tensor,
             all_to_all_single) gets exact results on every rank, and every collective call in
             the trace ran the algorithm glucx-info's selection map names for its size on this
             topology, which for allreduce, allgather and reduce-scatter is a topology-aware one
  diff       (trace + analysis, --job diff_job) `glucx-analyze diff` of two pairs of runs that
             differ in one known thing, large against run-to-run noise: an outer link degraded to
             a quarter of its rate in B (the diff's cause is that physical link, its top link
             contributor, busier in B), and GLUCX_TUNE forcing the flat ring allreduce in B (the
             cause is the allreduce's algorithm change, its top collective contributor, from the
             selection map's algorithm to ring; both runs with every outer link at a quarter of
             its rate, so that the network, not the 2 cores, sets the pace), each over 20 % of
             the iteration (run-to-run noise is a few %, printed from two runs with the same
             settings, whose diff names no algorithm change); in every diff the
             phases add up to the iteration-time difference and the ranks' terms too (every
             iteration is complete); the inputs are the traces (the diff analyses them first)
  fault      one rank killed (SIGKILL) in the middle of a 64 MiB ring allgather over all hosts,
             another host each of 4 rounds: every survivor ends at once with the failure naming
             the dead rank, none aborts in UCX, none hangs, no rank is left behind
  shaping    every link end has a tbf at the link's rate; degrade/restore change both ends; a
             link degraded to a quarter carries a stream slower than an untouched one (ratio
             only, never an absolute time); degrade/restore while a job runs; error messages of
             bad calls

The cluster cases need root and `ip netns` (exit 77, ctest's skip, otherwise) and always run
`down` at the end, also on failure. Each uses its own cluster NAME.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from timescale import scaled  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
STREAM = os.path.join(HERE, "..", "..", "scripts", "bench", "tcp_stream.py")
# Bytes a link direction may carry that are not the job's: ARP (42-byte frames, a request and a
# reply per neighbour and a few re-checks). IPv6 is off in the cluster, so no neighbour discovery.
NOISE_BYTES = 4096

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}", flush=True)
    return cond


def run(cmd, timeout=60, check_rc=True, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=scaled(timeout), **kw)
    if check_rc and p.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` exited with {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


class Cluster:
    def __init__(self, tool, name, topology):
        self.tool, self.name, self.topology = tool, name, topology

    def __call__(self, *args, **kw):
        return run([self.tool, *args[:1], "--name", self.name, *args[1:]], **kw)

    def up(self):
        return self("up", "--topology", self.topology)

    def down(self):
        return self("down")

    def exec(self, host, command, **kw):
        return run([self.tool, "exec", "--name", self.name, host, command], **kw)

    def links(self):
        return json.loads(self("links", "--json").stdout)


def directional_bytes(links):
    """{(link id, 'ab'|'ba'): bytes sent} from each end's tx counter."""
    out = {}
    for l in links["links"]:
        a, b = l["ends"]
        out[(l["id"], "ab")] = a["tx_bytes"]
        out[(l["id"], "ba")] = b["tx_bytes"]
    return out


def netns_inodes(name):
    """The inodes of cluster NAME's network namespaces (while it is up)."""
    d = "/run/netns"
    return {os.stat(os.path.join(d, n)).st_ino for n in os.listdir(d) if n.startswith(f"{name}-")}


def processes_in(inodes):
    out = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and os.stat(f"/proc/{pid}/ns/net").st_ino in inodes:
                out.append(int(pid))
        except OSError:
            pass
    return out


def leftovers(name, inodes=()):
    """What of cluster NAME is visible from the root namespace: namespaces, interfaces, mounts,
    processes in its namespaces (inodes, taken while it was up) or with its marker, state."""
    found = [f"process {pid} in the cluster's network namespaces" for pid in processes_in(inodes)]
    mine = {os.getpid(), os.getppid()}
    ns = run(["ip", "netns", "list"]).stdout
    found += [f"netns {l.split()[0]}" for l in ns.splitlines() if l.startswith(f"{name}-")]
    for l in json.loads(run(["ip", "-j", "link", "show"]).stdout):
        if l["ifname"].startswith(name):
            found.append(f"interface {l['ifname']}")
    with open("/proc/self/mountinfo") as f:
        found += [f"mount {l.split()[4]}" for l in f if f"/{name}-" in l or f"/{name}/" in l]
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) in mine:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if f"GLUCX_CLUSTER_HOLDER={name}\0".encode() in env or \
                f"--name\0{name}\0".encode() in cmdline:
            shown = cmdline.replace(b"\0", b" ").decode(errors="replace")
            found.append(f"process {pid}: {shown}")
    if os.path.exists(f"/run/glucx-cluster/{name}"):
        found.append(f"state /run/glucx-cluster/{name}")
    if os.path.isdir("/run/glucx-cluster") and not os.listdir("/run/glucx-cluster"):
        found.append("an empty /run/glucx-cluster")
    return found


# ---- cases ------------------------------------------------------------------------------------


def model(args):
    """The C model's JSON of the YAML file (glucx-info, next to glucx-cluster)."""
    info = os.path.join(os.path.dirname(args.tool), "glucx-info")
    return json.loads(run([info, "--topology", args.topology, "--json"]).stdout)


def case_plan(args):
    with open(args.topology_json) as f:
        topo = json.load(f)
    real = model(args)
    for key in sorted(set(topo) | set(real)):
        if key != "file":
            check(topo.get(key) == real.get(key), f"fixture {args.topology_json} and glucx-info "
                  f"--topology {args.topology} differ in '{key}'")
    p = run([args.tool, "plan", "--name", args.name, "--topology-json", args.topology_json,
             "--json"])
    plan = json.loads(p.stdout)
    # independent: the neighbour across each outer link, from the model's link list
    ends = {l["id"]: (l["a"], l["b"]) for l in topo["links"] if l["dimension"] > 0}
    routes = {(r["src"], r["dst"]): r["links"] for r in topo["package_routes"]}
    addr_of = {}
    for l in plan["links"]:
        for e in l["ends"]:
            addr_of[(l["id"], e.get("package"))] = e["addr"]
    check(len(plan["hosts"]) == topo["packages"], f"{len(plan['hosts'])} hosts")
    idents = [h["ident"] for h in plan["hosts"]]
    check(len(set(idents)) == len(idents), f"identity addresses not distinct: {idents}")
    for h in plan["hosts"]:
        s = h["package"]
        check(len(h["routes"]) == topo["packages"] - 1, f"host {s}: {len(h['routes'])} routes")
        for r in h["routes"]:
            first = routes[(s, r["dst"])][0]
            a, b = ends[first]
            nb = b if a == s else a
            check(s in (a, b), f"route {s}->{r['dst']}: link {first} does not touch {s}")
            check(r["dev"] == f"l{first}", f"route {s}->{r['dst']}: dev {r['dev']}, link {first}")
            check(r["via"] == addr_of[(first, nb)],
                  f"route {s}->{r['dst']}: via {r['via']}, package {nb}'s end of link {first} "
                  f"is {addr_of[(first, nb)]}")
            check(r["dst_addr"] == idents[r["dst"]], f"route {s}->{r['dst']}: {r['dst_addr']}")
    # a route 0->3 over [4, 6] leaves package 1 over link 6, which does not touch it
    bad = dict(topo)
    bad["package_routes"] = [dict(r, links=[4, 6]) if (r["src"], r["dst"]) == (0, 3) else r
                             for r in topo["package_routes"]]
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"{args.name}-bad-{os.getpid()}.json")
    with open(path, "w") as f:
        json.dump(bad, f)
    try:
        p = run([args.tool, "plan", "--name", args.name, "--topology-json", path],
                check_rc=False)
    finally:
        os.unlink(path)
    check(p.returncode == 1, f"bad route: exit status {p.returncode}, expected 1")
    check("route 0->3" in p.stderr and "Traceback" not in p.stderr,
          f"bad route: message does not name route 0->3: {p.stderr!r}")
    # a bad topology file: glucx-info's message (file, line, field), status 1, no traceback
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"{args.name}-bad-{os.getpid()}.yaml")
    with open(path, "w") as f:
        f.write("topology: [FullyConnected, Ring]\nnpus_count: [2, 2]\n"
                "bandwidth: [50, fast]\nlatency: [500, 1000]\n")
    try:
        p = run([args.tool, "plan", "--name", args.name, "--topology", path], check_rc=False)
    finally:
        os.unlink(path)
    check(p.returncode == 1 and f"{path}:3" in p.stderr and "bandwidth" in p.stderr
          and "Traceback" not in p.stderr, f"bad YAML: status {p.returncode}, {p.stderr!r}")


def case_lifecycle(args, c):
    t0 = time.monotonic()
    c.up()
    print(f"up: {time.monotonic() - t0:.2f} s")
    check(len(leftovers(c.name)) > 0, "nothing of the cluster visible after up")
    # a run killed with SIGKILL mid-job: its ranks stay behind until `down`
    job = subprocess.Popen([c.tool, "run", "--name", c.name, "--", args.bench, "--coll",
                            "allreduce", "-b", "1M", "-e", "1M", "--iters", "100000",
                            "--timeout-ms", str(int(scaled(120) * 1000))],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    first = job.stdout.readline()  # the header: the ranks are up and connected
    check(first.startswith("# glucx-bench"), f"job did not start: {first!r}")
    time.sleep(0.5)
    job.kill()
    job.wait()
    inodes = netns_inodes(c.name)
    inside = processes_in(inodes)
    print(f"after SIGKILL of run: {len(inside)} processes in the hosts (holders, ranks)")
    check(len(inside) >= 4 + 8, f"only {len(inside)} processes in the hosts after the killed "
          "run: expected the 4 holders and 8 orphaned ranks")
    t0 = time.monotonic()
    c.down()
    print(f"down: {time.monotonic() - t0:.2f} s")
    left = leftovers(c.name, inodes)
    check(not left, f"left after down: {left}")
    p = c.down()
    check(p.returncode == 0, "second down failed")
    check("nothing to remove" in p.stderr, f"second down: {p.stderr!r}")
    # an `up` killed with SIGKILL part-way (wherever it was: holders started, namespaces named,
    # links made or not), then down
    for delay in (0.05, 0.3):
        proc = subprocess.Popen([c.tool, "up", "--name", c.name, "--topology", c.topology],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.kill()
        proc.wait()
        c.down()
        left = leftovers(c.name)
        check(not left, f"left after down of an up killed after {delay} s: {left}")
    # down also works without the state file (a crash right after the namespaces were made)
    c.up()
    inodes = netns_inodes(c.name)
    os.unlink(f"/run/glucx-cluster/{c.name}/state.json")
    c.down()
    left = leftovers(c.name, inodes)
    check(not left, f"left after down without state: {left}")


def case_hosts(args, c):
    c.up()
    state = json.load(open(f"/run/glucx-cluster/{c.name}/state.json"))
    seen = {"hostname": set(), "boot_id": set(), "shm": set()}
    root_boot = open("/proc/sys/kernel/random/boot_id").read().strip()
    mono = {}
    for h in state["hosts"]:
        p = c.exec(h["name"], "hostname; cat /proc/sys/kernel/random/boot_id; "
                   "touch /dev/shm/glxtest-$(hostname); ls /dev/shm; "
                   "python3 -c 'import time; print(time.clock_gettime(time.CLOCK_MONOTONIC))'")
        lines = p.stdout.split()
        hostname, boot_id, mono_s = lines[0], lines[1], float(lines[-1])
        shm = tuple(sorted(lines[2:-1]))
        root_mono = time.clock_gettime(time.CLOCK_MONOTONIC)
        check(hostname == h["name"], f"{h['name']}: hostname {hostname}")
        check(boot_id != root_boot, f"{h['name']}: the root namespace's boot_id")
        check(shm == (f"glxtest-{hostname}",), f"{h['name']}: /dev/shm holds {shm}")
        seen["hostname"].add(hostname)
        seen["boot_id"].add(boot_id)
        # the offset the kernel holds for the holder's time namespace
        with open(f"/proc/{h['holder_pid']}/timens_offsets") as f:
            off = {l.split()[0]: int(l.split()[1]) for l in f}
        mono[h["name"]] = (mono_s - root_mono, off.get("monotonic", 0))
    check(len(seen["hostname"]) == 4, f"hostnames {seen['hostname']}")
    check(len(seen["boot_id"]) == 4, f"boot_ids {seen['boot_id']}")
    check(not any(n.startswith("glxtest-") for n in os.listdir("/dev/shm")),
          "a host's /dev/shm file is visible in the root namespace")
    offsets = [o for _m, o in mono.values()]
    check(len(set(offsets)) == 4 and 0 not in offsets, f"monotonic offsets {offsets}")
    for hn, (measured, off) in mono.items():
        # measured = host clock - root clock, read a few ms apart: the offset within 5 s
        check(abs(measured - off) < scaled(5), f"{hn}: CLOCK_MONOTONIC is {measured:.1f} s "
              f"ahead of the root's, its time namespace says {off} s")
    print(f"monotonic offsets (s): { {k: round(v[0], 1) for k, v in mono.items()} }")


def case_run(args, c):
    """run: the launcher's variables per rank, the first failing rank's status with the others
    stopped, --timeout (124), SIGTERM forwarded (143); no rank left behind in any case."""
    topo = model(args)
    c.up()
    inodes = netns_inodes(c.name)
    holders = len(processes_in(inodes))
    show = ('echo "$(hostname) $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $MASTER_ADDR '
            '$MASTER_PORT $UCX_NET_DEVICES ${GLUCX_STORE:+store}"')
    p = c("run", "--", "sh", "-c", show)
    rows = sorted(l.split() for l in p.stdout.splitlines())
    k, n = topo["ranks_per_package"], topo["ranks"]
    state = json.load(open(f"/run/glucx-cluster/{c.name}/state.json"))
    master = state["hosts"][0]["ident"]
    check(len(rows) == n, f"{len(rows)} ranks printed, want {n}")
    for r in rows:
        rank = int(r[1])
        want = [topo_host(c, rank // k), str(rank), str(n), str(rank % k), str(k), master]
        check(r[:6] == want, f"rank {rank}: {r[:6]}, want {want}")
        check(r[6].isdigit() and r[7:] == ["ident", "store"], f"rank {rank}: {r[6:]}")
    # glucx-info --probe as one rank of the job (GLUCX_TOPOLOGY set by run): shared memory inside
    # a host, tcp over the identity device between hosts, and the model's route per peer
    info = os.path.join(os.path.dirname(args.tool), "glucx-info")
    p = c("run", "--timeout", str(scaled(120)), "--", info, "--probe", timeout=180)
    routes = {(r["src"], r["dst"]): r["links"] for r in topo["package_routes"]}
    pairs = 0
    for line in p.stdout.splitlines():
        if not line.startswith("rank ") or " -> rank " not in line:
            continue
        a, b = int(line.split()[1]), int(line.split()[4].rstrip(":"))
        pa, pb = a // k, b // k
        if pa == pb:
            check("memory" in line and "tcp" not in line, f"same host, not shared memory: {line}")
        else:
            got = line.split("route: ")[-1]
            check(line.split(": ")[1].startswith("tcp/ident"), f"between hosts: {line}")
            check([w.split()[1] for w in got.split(", ")] == [str(x) for x in routes[(pa, pb)]],
                  f"route {pa}->{pb} {routes[(pa, pb)]}: {line}")
        pairs += 1
    check(pairs == n * n, f"--probe printed {pairs} rank pairs, want {n * n}")
    # the first failing rank's status; the others (sleeping 10 min) stopped
    t0 = time.monotonic()
    p = c("run", "--", "sh", "-c", 'if [ "$RANK" = 5 ]; then exit 7; fi; exec sleep 600',
          check_rc=False, timeout=120)
    print(f"failing rank: status {p.returncode} after {time.monotonic() - t0:.1f} s")
    check(p.returncode == 7, f"run with rank 5 failing: status {p.returncode}, want 7")
    check("rank 5 exited with status 7" in p.stderr, f"run: no message on rank 5: {p.stderr!r}")
    check(len(processes_in(inodes)) == holders, "ranks left in the hosts after a failed run")
    p = c("run", "--timeout", "1", "--", "sleep", "600", check_rc=False, timeout=120)
    check(p.returncode == 124, f"run --timeout 1: status {p.returncode}, want 124")
    check(len(processes_in(inodes)) == holders, "ranks left in the hosts after a timeout")
    job = subprocess.Popen([c.tool, "run", "--name", c.name, "--", "sh", "-c",
                            "echo up; exec sleep 600"], stdout=subprocess.PIPE, text=True)
    for _ in range(n):
        job.stdout.readline()  # every rank started
    job.send_signal(signal.SIGTERM)
    rc = job.wait(timeout=scaled(60))
    check(rc == 128 + signal.SIGTERM, f"run after SIGTERM: status {rc}, want 143")
    check(len(processes_in(inodes)) == holders, "ranks left in the hosts after SIGTERM")


def route_directions(topo, src, dst):
    """{(link, 'ab'|'ba')} crossed by the route src->dst, from the model."""
    ends = {l["id"]: (l["a"], l["b"]) for l in topo["links"]}
    routes = {(r["src"], r["dst"]): r["links"] for r in topo["package_routes"]}
    out, at = set(), src
    for lid in routes[(src, dst)]:
        a, b = ends[lid]
        out.add((lid, "ab" if at == a else "ba"))
        at = b if at == a else a
    check(at == dst, f"route {src}->{dst} ends at {at}")
    return out


def expect_only_routes(topo, before, after, src, dst, nbytes, what):
    fwd = route_directions(topo, src, dst)
    back = route_directions(topo, dst, src)
    delta = {k: after[k] - before[k] for k in after}
    print(f"{what}: bytes per (link, direction): {dict(sorted(delta.items()))}")
    for k, v in delta.items():
        if k in fwd:
            check(v >= nbytes, f"{what}: link {k[0]} {k[1]} on route {src}->{dst} carried {v} "
                  f"bytes, less than the {nbytes} sent")
        elif k in back:
            check(NOISE_BYTES < v < nbytes / 10, f"{what}: link {k[0]} {k[1]} on route "
                  f"{dst}->{src} (ACKs) carried {v} bytes")
        else:
            check(v <= NOISE_BYTES, f"{what}: link {k[0]} {k[1]} is on no route of "
                  f"{src}<->{dst} but carried {v} bytes (bound {NOISE_BYTES})")


def case_routes(args, c):
    topo = model(args)
    c.up()
    # a whole job: every collective checked (--check 1), exit status 0
    for coll in ("allreduce", "alltoall"):
        p = c("run", "--timeout", str(scaled(120)), "--", args.bench, "--coll", coll,
              "-b", "1M", "-e", "4M", "--iters", "3", "--warmup", "1",
              "--timeout-ms", str(int(scaled(60) * 1000)), timeout=180)
        print(p.stdout)
        check("# wrong elements in total: 0 (OK)" in p.stdout, f"{coll}: not OK")
        check("tcp/ident" in p.stdout, f"{coll}: no rank pair over tcp/ident")
        check("sysv/memory" in p.stdout or "posix/memory" in p.stdout,
              f"{coll}: ranks of one host not on shared memory")
    links = c.links()
    idents = {i["host"]: i["tx_bytes"] + i["rx_bytes"] for i in links["identity"]}
    check(all(v == 0 for v in idents.values()), f"identity interfaces carried bytes: {idents}")
    total = sum(directional_bytes(links).values())
    check(total > 8 * 2**20, f"the links carried only {total} bytes for the job")
    # a TCP stream from package 0 to package 3 (two hops): exactly routes 0->3 and 3->0
    nbytes = 32 * 2**20
    h0, h3 = topo_host(c, 0), topo_host(c, 3)
    before = directional_bytes(c.links())
    recv = subprocess.Popen([c.tool, "exec", "--name", c.name, h3, "python3", STREAM, "recv",
                             "5001"], stdout=subprocess.PIPE, text=True)
    check(recv.stdout.readline().strip() == "listening", "receiver did not listen")
    c.exec(h0, f"python3 {STREAM} send {h3} 5001 {nbytes}", timeout=120)
    out = json.loads(recv.communicate(timeout=scaled(60))[0])
    check(out["bytes"] == nbytes, f"received {out['bytes']} of {nbytes} bytes")
    after = directional_bytes(c.links())
    expect_only_routes(topo, before, after, 0, 3, nbytes, "tcp stream 0->3")
    # glucx itself: a broadcast from rank 0 (host 0) to rank 1 (host 3)
    before = after
    p = c("run", "--hosts", "0,3", "--ranks-per-host", "1", "--timeout", str(scaled(120)), "--",
          args.bench, "--coll", "broadcast", "-b", "16M", "-e", "16M", "--iters", "2",
          "--warmup", "0", "--check", "1", timeout=180)
    check("# wrong elements in total: 0 (OK)" in p.stdout, "broadcast 0->3: not OK")
    after = directional_bytes(c.links())
    # 2 timed iterations and the check's run of 16 MiB, less the tool's own small messages
    expect_only_routes(topo, before, after, 0, 3, 2 * 16 * 2**20, "glucx broadcast 0->3")


def topo_host(c, p):
    return f"{c.name}-h{p}"


def tc_rates(c, state):
    rates = {}
    for l in state["links"]:
        for e in l["ends"]:
            q = json.loads(run(["tc", "-n", e["netns"], "-j", "qdisc", "show", "dev",
                                e["iface"]]).stdout)
            tbf = [x for x in q if x.get("kind") == "tbf"]
            rates[(l["id"], e["netns"])] = tbf[0]["options"]["rate"] if tbf else None
    return rates


def stream_Bps(c, src, dst, nbytes, port):
    recv = subprocess.Popen([c.tool, "exec", "--name", c.name, dst, "python3", STREAM, "recv",
                             str(port)], stdout=subprocess.PIPE, text=True)
    check(recv.stdout.readline().strip() == "listening", f"receiver in {dst} did not listen")
    c.exec(src, f"python3 {STREAM} send {dst} {port} {nbytes}", timeout=120)
    return json.loads(recv.communicate(timeout=scaled(60))[0])["Bps"]


def case_shaping(args, c):
    topo = model(args)
    c.up()
    state = json.load(open(f"/run/glucx-cluster/{c.name}/state.json"))
    nominal = {l["id"]: l["bandwidth_GBps"] * 1e9 for l in topo["links"] if l["dimension"] > 0}
    for (lid, ns), rate in tc_rates(c, state).items():
        check(rate == nominal[lid], f"link {lid} end {ns}: tbf rate {rate} B/s, "
              f"nominal {nominal[lid]}")
    c("degrade", "4", "--rate", "250mbit")
    for (lid, ns), rate in tc_rates(c, state).items():
        want = 250e6 / 8 if lid == 4 else nominal[lid]
        check(rate == want, f"after degrade 4: link {lid} end {ns}: rate {rate}, want {want}")
    # link 4 (0-1) at a quarter against link 6 (0-2) untouched: a ratio, not a time
    slow = stream_Bps(c, topo_host(c, 0), topo_host(c, 1), 24 * 2**20, 5002)
    fast = stream_Bps(c, topo_host(c, 0), topo_host(c, 2), 24 * 2**20, 5003)
    print(f"stream over degraded link 4: {slow / 1e6:.1f} MB/s, over link 6: {fast / 1e6:.1f} MB/s")
    check(slow < 0.6 * fast, f"degraded link 4 ({slow:.0f} B/s) not slower than link 6 "
          f"({fast:.0f} B/s)")
    c("restore", "4")
    for (lid, ns), rate in tc_rates(c, state).items():
        check(rate == nominal[lid], f"after restore: link {lid} end {ns}: rate {rate}")
    # degrade and restore while a job runs: it completes, correct; the link is nominal again
    job = subprocess.Popen([c.tool, "run", "--name", c.name, "--timeout", str(scaled(120)), "--",
                            args.bench, "--coll", "allreduce", "-b", "1M", "-e", "1M", "--iters",
                            "60", "--warmup", "1", "--timeout-ms", str(int(scaled(60) * 1000))],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    check(job.stdout.readline().startswith("# glucx-bench"), "job under degrade did not start")
    c("degrade", "4", "--rate", "250mbit")
    time.sleep(0.3)
    c("restore", "4")
    out = job.communicate(timeout=scaled(150))[0]
    check(job.returncode == 0 and "# wrong elements in total: 0 (OK)" in out,
          f"job during degrade/restore: status {job.returncode}")
    for (lid, ns), rate in tc_rates(c, state).items():
        check(rate == nominal[lid], f"after restore during a job: link {lid} end {ns}: {rate}")
    # expected errors: one message naming what failed, status 1, no traceback
    for argv, want in ((["degrade", "99", "--rate", "1gbit"], "no outer link 99"),
                       (["degrade", "4", "--rate", "fast"], "rate 'fast'"),
                       (["up", "--topology", args.topology], "exists")):
        p = c(*argv, check_rc=False)
        check(p.returncode == 1 and want in p.stderr and "Traceback" not in p.stderr,
              f"{argv}: status {p.returncode}, stderr {p.stderr!r}")
    p = run([c.tool, "exec", "--name", c.name, "nosuchhost", "true"], check_rc=False)
    check(p.returncode == 1 and "no host 'nosuchhost'" in p.stderr, f"exec: {p.stderr!r}")
    # exec as ssh is called: options before the host, the command as words, its status
    p = run([c.tool, "exec", "--name", c.name, "-x", "-o", "BatchMode=yes", topo_host(c, 2),
             "exit", "3"], check_rc=False)
    check(p.returncode == 3, f"exec with ssh options: status {p.returncode}, want 3")


def trace_ranks(path):
    """(hostname in the metadata, ranks of the comm_init events) of one host's trace."""
    host = None
    for root, _dirs, files in os.walk(path):
        if "metadata" in files:
            with open(os.path.join(root, "metadata"), errors="replace") as f:
                for line in f:
                    if line.strip().startswith("hostname ="):
                        host = line.split('"')[1]
    out = run(["babeltrace2", path], timeout=60).stdout
    ranks = {int(l.split("rank = ")[1].split(",")[0]) for l in out.splitlines()
             if "glucx:comm_init" in l}
    return host, ranks


def case_trace(args, c):
    """On a Switch topology: `run --trace DIR` records each host with its own glucx-trace and
    session daemon into DIR/<host>/, holding only that host's ranks."""
    if not shutil.which("babeltrace2"):
        print("SKIP: babeltrace2 is not installed")
        return 77
    topo = model(args)
    c.up()
    out = tempfile.mkdtemp(prefix=f"{c.name}-trace.")
    try:
        p = c("run", "--trace", out, "--timeout", str(scaled(120)), "--", args.bench, "--coll",
              "allreduce", "-b", "64K", "-e", "256K", "--iters", "2", "--warmup", "1",
              timeout=180)
        check("# wrong elements in total: 0 (OK)" in p.stdout, "traced allreduce: not OK")
        hosts = sorted(os.listdir(out))
        want = [topo_host(c, q) for q in range(topo["packages"])]
        check(hosts == want, f"trace folders {hosts}, want {want}")
        k = topo["ranks_per_package"]
        for q, h in enumerate(want):
            host, ranks = trace_ranks(os.path.join(out, h))
            check(host == h, f"{h}: trace metadata names host {host}")
            check(ranks == set(range(q * k, q * k + k)), f"{h}: trace holds ranks {ranks}")
    finally:
        shutil.rmtree(out, ignore_errors=True)


# Ethernet (14) + IPv4 (20) + TCP with the timestamp option (32): the headers of every frame a
# link end counts (one set per GSO/TSO packet: veth counts the packet before segmentation).
FRAME_HEADERS = 66
MSS = 1448


def retrans_segs(c, topo):
    """Sum over the hosts of the kernel's TcpRetransSegs (nstat's absolute counter)."""
    total = 0
    for q in range(topo["packages"]):
        out = c.exec(topo_host(c, q), "nstat -az TcpRetransSegs", timeout=30).stdout
        for line in out.splitlines():
            if line.startswith("TcpRetransSegs"):
                total += int(line.split()[1])
    return total


def traced_alltoall(args, c, topo, out, degrade=None):
    """`run --trace out` of an alltoall over every host; with @p degrade = link id, that link is
    degraded to a quarter of its rate right after the job started. @return the report."""
    cmd = [c.tool, "run", "--name", c.name, "--trace", out, "--timeout", str(scaled(240)), "--",
           args.bench, "--coll", "alltoall", "-b", "2M", "-e", "2M", "--iters", "6",
           "--warmup", "1", "--timeout-ms", str(int(scaled(120) * 1000))]
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if degrade is not None:
            link = next(l for l in topo["links"] if l["id"] == degrade)
            rate = link["bandwidth_GBps"] / 4
            c("degrade", str(degrade), "--rate", f"{rate}", timeout=30)
        so, se = job.communicate(timeout=scaled(300))
    finally:
        if job.poll() is None:
            job.kill()
            job.communicate()
    check(job.returncode == 0 and "# wrong elements in total: 0 (OK)" in so,
          f"traced alltoall: exit {job.returncode}\n{so}\n{se}")
    analyze = args.analyze
    rep = os.path.join(out, "report")
    hosts = [os.path.join(out, h) for h in sorted(os.listdir(out))]
    run([analyze, *hosts, "-o", rep, "--no-html", "--no-timeline", "--no-progress"], timeout=300)
    with open(os.path.join(rep, "report.json")) as f:
        return json.load(f)


def case_accounting(args, c):
    """Per physical link, the report's bytes equal the interfaces' payload within 2 %."""
    if not shutil.which("babeltrace2"):
        print("SKIP: babeltrace2 is not installed")
        return 77
    topo = model(args)
    c.up()
    out = tempfile.mkdtemp(prefix=f"{c.name}-acct.")
    try:
        before, r0 = c.links(), retrans_segs(c, topo)
        report = traced_alltoall(args, c, topo, out)
        after, r1 = c.links(), retrans_segs(c, topo)
        retrans = r1 - r0
        print(f"retransmitted segments during the job: {retrans}")
        rep = {}
        for l in report.get("physical_links", []):  # one entry per communicator and link
            rep.setdefault(l["phys_id"], {"bytes": 0})["bytes"] += l["bytes"]
        old = {l["id"]: l for l in before["links"]}
        outer = [l for l in topo["links"] if l["dimension"] > 0]
        check(len(outer) > 0 and all(l["id"] in rep for l in outer),
              f"report lists outer links {sorted(rep)}; want every one of {[l['id'] for l in outer]}")
        for l in after["links"]:
            if l["id"] not in rep:
                continue
            payload = 0
            for e_new, e_old in zip(l["ends"], old[l["id"]]["ends"]):
                payload += (e_new["tx_bytes"] - e_old["tx_bytes"]) - \
                    FRAME_HEADERS * (e_new["tx_packets"] - e_old["tx_packets"])
            got = rep[l["id"]]["bytes"]
            slack = 0.02 * max(got, payload) + retrans * MSS
            print(f"link {l['id']} (dimension {l['dimension']}): report {got} bytes, "
                  f"interfaces' payload {payload} bytes ({(payload - got) / max(got, 1):+.3%})")
            check(got > 1 << 20, f"link {l['id']}: only {got} bytes in the report")
            check(abs(payload - got) <= slack,
                  f"link {l['id']}: report {got} bytes vs payload {payload} (slack {slack:.0f})")
    finally:
        shutil.rmtree(out, ignore_errors=True)


def case_bottleneck(args, c):
    """A link degraded to a quarter of its rate during the job is named by the verdict."""
    if not shutil.which("babeltrace2"):
        print("SKIP: babeltrace2 is not installed")
        return 77
    topo = model(args)
    # the outer link with the highest id: ties between equally loaded links go to the lower id,
    # so naming this one is the degrade's doing
    victim = max(l["id"] for l in topo["links"] if l["dimension"] > 0)
    c.up()
    out = tempfile.mkdtemp(prefix=f"{c.name}-bn.")
    try:
        report = traced_alltoall(args, c, topo, out, degrade=victim)
        v = report.get("verdict", {})
        print(f"verdict: {v.get('sentence')}")
        check(v.get("bottleneck") == "link", f"verdict {v.get('bottleneck')}, want link: {v}")
        check((v.get("physical_link") or {}).get("phys_id") == victim,
              f"verdict names physical link {v.get('physical_link')}, want {victim}")
    finally:
        shutil.rmtree(out, ignore_errors=True)


# ---- analytic volume of the topology-aware algorithms (issue 17, part 4) ----------------------
# Written from the algorithms' descriptions (plugin/coll/*/hierarchical.c headers), not from their
# code: the shape is the model's (package = dimension 0, the outer dimensions of size > 1), a
# Ring dimension runs the pipelined ring (every block but one to the right neighbour), any other
# the direct exchange (one block to every other member).


class Shape:
    def __init__(self, topo):
        self.p = topo["ranks_per_package"]
        self.n = topo["ranks"]
        dims = topo["dimensions"]
        coords = topo["package_coords"]
        self.size = [self.p] + [d["size"] for d in dims[1:] if d["size"] > 1]
        self.ring = [dims[0]["kind"] == "Ring"] + [d["kind"] == "Ring" for d in dims[1:]
                                                   if d["size"] > 1]
        outer = [i - 1 for i, d in enumerate(dims) if i > 0 and d["size"] > 1]
        self.line = {}  # (rank, dim) -> ranks of the line, ordered by coordinate
        self.index = {}
        for r in range(self.n):
            k, l = divmod(r, self.p)
            self.line[(r, 0)] = [k * self.p + j for j in range(self.p)]
            self.index[(r, 0)] = l
            for d, c in enumerate(outer, start=1):
                members = [q for q in range(topo["packages"])
                           if all(coords[q][j] == coords[k][j] for j in range(len(coords[k]))
                                  if j != c)]
                members.sort(key=lambda q: coords[q][c])
                self.line[(r, d)] = [q * self.p + l for q in members]
                self.index[(r, d)] = members.index(k)

    def order(self, r, rotated, chunk=0):
        """Outer dimensions in the order rank r's local rank visits them (rotated: from
        1 + (local rank + chunk) mod D on)."""
        nout = len(self.size) - 1
        rot = (r % self.p + chunk) % nout if rotated and nout else 0
        return [1 + (j + rot) % nout for j in range(nout)]


def split(cnt, parts, i):
    q, rem = divmod(cnt, parts)
    return q + (1 if i < rem else 0)


def dim_volume(sh, r, k, cnt, es, rs, vol, direct=False):
    """Bytes r sends to each peer in a reduce-scatter (rs) or allgather of cnt elements along
    dimension k: ring, every block but its own (rs) or but its right neighbour's; direct, the
    peer's block (rs) or its own to every peer."""
    n = sh.size[k]
    if n < 2:
        return
    line, i = sh.line[(r, k)], sh.index[(r, k)]
    if sh.ring[k] and not direct:
        right = line[(i + 1) % n]
        vol[(r, right)] = vol.get((r, right), 0) + (cnt - split(cnt, n, i if rs else (i + 1) % n)) * es
        return
    for j in range(n):
        if j != i:
            vol[(r, line[j])] = vol.get((r, line[j]), 0) + split(cnt, n, j if rs else i) * es


def tree_edges(n, root):
    """[(collector, child, lo, hi)]: the edges of coll/tree.h's tree on [0, n) rooted at root (the
    interval halved, the lower half taking the extra member; the collector keeps its half and
    the member at the same offset in the other, clamped to its last, collects that one; the
    child's subtree is [lo, hi))."""
    edges = []

    def rec(lo, hi, c):
        if hi - lo < 2:
            return
        mid = lo + (hi - lo + 1) // 2
        (clo, chi), (olo, ohi) = ((lo, mid), (mid, hi)) if c < mid else ((mid, hi), (lo, mid))
        d = olo + min(c - clo, ohi - olo - 1)
        edges.append((c, d, olo, ohi))
        rec(clo, chi, c)
        rec(olo, ohi, d)
    rec(0, n, root)
    return edges


def add(vol, r, q, v):
    vol[(r, q)] = vol.get((r, q), 0) + v


def rooted_volume(sh, coll, nbytes, root=0, es=4):
    """{(rank, peer): bytes} of the hierarchical broadcast or reduce (plugin/coll/broadcast/ and
    reduce/hierarchical.c's headers) from/to root. Packages are the file's in order (position k
    = ranks k p .. k p + p - 1); the cross line of local rank l is rank k p + l of every k.
    Across packages the broadcast runs scatter-allgather (the faster at the sizes cluster/volume
    uses: 4 packages and slow links), inside the binomial tree (2 ranks: scatter-allgather never
    wins); the reduce runs the binomial tree in both (at the size cluster/volume uses, 4 KB,
    below where its reduce-scatter + gather pays: 7.8 KB across, 10 KB inside)."""
    vol, p, P = {}, sh.p, sh.n // sh.p
    count, rl, rpos = nbytes // es, root % p, root // p
    cross = [k * p + rl for k in range(P)]
    blk = [split(count, P, i) * es for i in range(P)]
    for pos in range(P):
        pkg = [pos * p + l for l in range(p)]
        for c, d, lo, hi in tree_edges(p, rl):  # inside: the whole vector per edge
            if coll == "broadcast":
                add(vol, pkg[c], pkg[d], count * es)
            else:
                add(vol, pkg[d], pkg[c], count * es)
    if coll == "reduce":
        for c, d, lo, hi in tree_edges(P, rpos):
            add(vol, cross[d], cross[c], count * es)
        return vol
    for c, d, lo, hi in tree_edges(P, rpos):  # scatter: the child's subtree's blocks
        add(vol, cross[c], cross[d], sum(blk[lo:hi]))
    for i in range(P):  # ring allgather: every block but the right neighbour's
        add(vol, cross[i], cross[(i + 1) % P], count * es - blk[(i + 1) % P])
    return vol


def alltoall_volume(sh, nbytes, es=4):
    """{(rank, peer): bytes} of the hierarchical alltoall (alltoall/hierarchical.c's header), the
    pairwise exchange in both phases (the faster at the size cluster/volume uses): inside the
    package P blocks to every other local rank, across p blocks to the same local rank of every
    other package."""
    vol, p, P = {}, sh.p, sh.n // sh.p
    b = nbytes // sh.n
    for r in range(sh.n):
        k, l = divmod(r, p)
        for j in range(p):
            if j != l:
                add(vol, r, k * p + j, P * b)
        for q in range(P):
            if q != k:
                add(vol, r, q * p + l, p * b)
    return vol


def analytic_volume(sh, coll, alg, nbytes, es=4):
    """{(rank, peer): bytes} of one call of coll/alg on nbytes (glucx-bench's size)."""
    if coll in ("broadcast", "reduce"):
        return rooted_volume(sh, coll, nbytes, es=es)
    if coll == "alltoall":
        return alltoall_volume(sh, nbytes, es)
    vol = {}
    for r in range(sh.n):
        if coll == "allreduce" and alg == "ring":
            # ring over the communicator in rank order: reduce-scatter then allgather
            dim = Shape.__new__(Shape)
            dim.size, dim.ring = [sh.n], [True]
            dim.line, dim.index = {(r, 0): list(range(sh.n))}, {(r, 0): r}
            dim_volume(dim, r, 0, nbytes // es, es, 1, vol)
            dim_volume(dim, r, 0, nbytes // es, es, 0, vol)
        elif coll == "allreduce":
            torus, rotated = alg != "hierarchical", alg == "torus_rotated"
            count = nbytes // es
            # torus_rotated: chunks of 1 MiB (1 to 8), chunk c of local rank l starting at
            # outer dimension 1 + (l + c) mod D
            chunks = min(8, max(1, nbytes // (1 << 20))) if rotated else 1
            for c in range(chunks):
                order = [0] + sh.order(r, rotated, c)
                cnt, spans = split(count, chunks, c), []
                for k in order:
                    spans.append(cnt)
                    dim_volume(sh, r, k, cnt, es, 1, vol)
                    if torus or k == 0:  # down into this rank's block
                        i, n = sh.index[(r, k)], sh.size[k]
                        cnt = split(cnt, n, i)
                    else:  # hierarchical: the share's allreduce along k
                        dim_volume(sh, r, k, cnt, es, 0, vol)
                for j in reversed(range(len(order) if torus else 1)):
                    dim_volume(sh, r, order[j], spans[j], es, 0, vol)
        else:  # hierarchical allgather / reduce-scatter: count elements per rank's block
            rs = coll == "reduce_scatter"
            count = nbytes // es // sh.n
            # chunks of 4 MiB of all blocks (1 to 8), chunk c rotated by (local rank + c)
            chunks = min(8, max(1, nbytes // (4 << 20)), max(count, 1))
            for c in range(chunks):
                cnt, G = split(count, chunks, c), 1
                for k in sh.order(r, True, c):
                    dim_volume(sh, r, k, sh.size[k] * G * cnt, es, rs, vol)
                    G *= sh.size[k]
                # the package: one exchange per package position (the reduce-scatter's direct)
                dim_volume(sh, r, 0, sh.size[0] * G * cnt, es, rs, vol, direct=rs)
    return vol


def link_volume(topo, pair_bytes):
    """{(physical link id, 0 a->b | 1 b->a): bytes} of {(rank, peer): bytes} over the model's
    routes (inside a package, the rank link between the two)."""
    p = topo["ranks_per_package"]
    rank_link = {frozenset((l["a"], l["b"])): l for l in topo["links"] if l["a_kind"] == "rank"}
    out = {}
    for (r, q), v in pair_bytes.items():
        if v == 0:
            continue
        if r // p == q // p:
            l = rank_link[frozenset((r, q))]
            hops = [(l["id"], 0 if l["a"] == r else 1)]
        else:
            hops = [(lid, 0 if d == "ab" else 1)
                    for lid, d in route_directions(topo, r // p, q // p)]
        for h in hops:
            out[h] = out.get(h, 0) + v
    return out


def traced_link_volume(events):
    """{(comm, seq): {(phys id, dir): bytes}} from the trace's send_begin and route events."""
    routes = {}
    for e in events:
        if e["event"] == "route":
            routes[(e["comm_id"], e["rank"], e["link"])] = list(zip(e["phys_ids"], e["dirs"]))
    out = {}
    for e in events:
        if e["event"] != "send_begin":
            continue
        per = out.setdefault((e["comm_id"], e["seq"]), {})
        if e["bytes"] == 0:  # (the core's zero-byte confirmation after rooted collectives)
            continue
        for h in routes[(e["comm_id"], e["rank"], e["link"])]:
            per[h] = per.get(h, 0) + e["bytes"]
    return out


def case_volume(args, c):
    """Per physical link and direction, each algorithm's traced bytes equal its analytic
    volume."""
    if not shutil.which("babeltrace2"):
        print("SKIP: babeltrace2 is not installed")
        return 77
    topo = model(args)
    sh = Shape(topo)
    c.up()
    out = tempfile.mkdtemp(prefix=f"{c.name}-vol.")
    want_algs = {"allreduce": ["ring", "hierarchical", "torus", "torus_rotated"],
                 "allgather": ["hierarchical"], "reduce_scatter": ["hierarchical"],
                 "broadcast": ["hierarchical"], "reduce": ["hierarchical"],
                 "alltoall": ["hierarchical"]}
    # sizes that split unevenly into the 8 ranks' shares and the 2x2 torus's blocks
    # (2 chunks of torus_rotated and of the hierarchical allgather and reduce-scatter)
    sizes = {"allreduce": 2200004, "allgather": 8 * 4 * 270001, "reduce_scatter": 8 * 4 * 270001,
             "broadcast": 4 * 1000003, "reduce": 4 * 1001, "alltoall": 8 * 4 * 100003}
    try:
        for coll, algs in want_algs.items():
            tdir = os.path.join(out, coll)
            p = c("run", "--trace", tdir, "--timeout", str(scaled(120)), "--", args.bench,
                  "--validate", "--coll", coll, "-b", str(sizes[coll]), "-e", str(sizes[coll]),
                  "--iters", "2", "--warmup", "1", timeout=scaled(180))
            check("# wrong elements in total: 0 (OK)" in p.stdout, f"{coll}: not OK")
            rep, dump = os.path.join(tdir, "report"), os.path.join(out, f"{coll}.jsonl")
            hosts = [os.path.join(tdir, h) for h in sorted(os.listdir(tdir))]
            run([args.analyze, *hosts, "-o", rep, "--no-html", "--no-timeline", "--no-progress",
                 "--dump-events", dump], timeout=300)
            with open(os.path.join(rep, "report.json")) as f:
                calls = [x for x in json.load(f)["collectives"] if x["coll"] == coll]
            with open(dump) as f:
                traced = traced_link_volume([json.loads(line) for line in f])
            for alg in algs:
                mine = [x for x in calls if x["algorithm"] == alg]
                check(len(mine) >= 3, f"{coll} {alg}: {len(mine)} calls in the trace, want >= 3")
                for x in mine:
                    want = link_volume(topo, analytic_volume(sh, coll, alg, x["bytes"]))
                    got = traced.get((x["comm_id"], x["seq"]), {})
                    check(got == want, f"{coll} {alg} call {x['seq']} ({x['bytes']} bytes): "
                          f"traced bytes per (link, direction) {dict(sorted(got.items()))}, "
                          f"analytic {dict(sorted(want.items()))}")
                if mine:
                    print(f"{coll} {alg}: {len(mine)} calls, per (link, direction): "
                          f"{dict(sorted(want.items()))}")
    finally:
        shutil.rmtree(out, ignore_errors=True)


# 2 MiB allreduces. At the nominal rates the ranks' CPU time (8 ranks, 2 cores) hides much of
# the algorithms' difference (4 MiB: ring ~80 ms per iteration against ~57 ms for the map's
# torus_rotated, shrinking to a few % when the machine is busy), so the ring pair runs with every
# outer link at a quarter of its rate: ~146 ms against ~96 ms, within 1 ms run to run.
DIFF_ITERS, DIFF_BYTES, DIFF_COMPUTE_US = 6, 2 << 20, 2000


def diff_run(args, c, out, env=None, iters=DIFF_ITERS):
    """One traced run of diff_job into @p out (one trace per host); untraced without @p out."""
    trace = ["--trace", out] if out else []
    cmd = [c.tool, "run", "--name", c.name, *trace, "--timeout", str(scaled(120)), "--",
           args.job, str(iters), str(DIFF_BYTES), str(DIFF_COMPUTE_US)]
    p = run(cmd, timeout=180, check_rc=False, env={**os.environ, **(env or {})})
    check(p.returncode == 0, f"diff_job {env or ''}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")


def diff_of(args, a, b, out):
    """`glucx-analyze diff a b -o out` on the two traces; @return diff.json."""
    p = run([args.analyze, "diff", a, b, "-o", out], timeout=300, check_rc=False)
    check(p.returncode == 0, f"diff {a} {b}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    with open(os.path.join(out, "diff.txt")) as f:
        print(f.read())
    with open(os.path.join(out, "diff.json")) as f:
        return json.load(f)


def check_sums(d, what):
    """The phases add up to the iteration-time difference (rounding: 1 ns each), and so do the
    ranks' terms (every iteration complete on every rank of one communicator)."""
    delta = d["iteration"]["delta_ns"]
    phases = sum(x["contribution_ns"] for x in d["phases"])
    check(abs(phases - delta) <= 4, f"{what}: phases add up to {phases}, difference {delta}")
    ranks = sum(x["contribution_ns"] for x in d["ranks"]["entries"])
    check(abs(ranks - delta) <= max(8, 1e-3 * abs(delta)),
          f"{what}: ranks' terms add up to {ranks}, difference {delta}")
    check(d["ranks"]["matched"] == 8, f"{what}: {d['ranks']['matched']} ranks matched, want 8")


def case_diff(args, c):
    """The diff names the one known difference of each pair of runs first."""
    if not shutil.which("babeltrace2"):
        print("SKIP: babeltrace2 is not installed")
        return 77
    topo = model(args)
    outer = {l["id"]: l for l in topo["links"] if l["dimension"] > 0}
    victim = max(outer)
    c.up()
    out = tempfile.mkdtemp(prefix=f"{c.name}-diff.")
    try:
        base, again, slow, qbase, ring = (os.path.join(out, n)
                                          for n in ("base", "again", "slow", "qbase", "ring"))
        diff_run(args, c, None, iters=2)  # the first job after `up` is slower: not compared
        diff_run(args, c, base)
        diff_run(args, c, again)
        degraded = []
        try:
            c("degrade", str(victim), "--rate", f"{outer[victim]['bandwidth_GBps'] / 4}", timeout=30)
            degraded.append(victim)
            diff_run(args, c, slow)
            for lid, l in outer.items():
                if lid != victim:
                    c("degrade", str(lid), "--rate", f"{l['bandwidth_GBps'] / 4}", timeout=30)
                    degraded.append(lid)
            diff_run(args, c, qbase)
            diff_run(args, c, ring, env={"GLUCX_TUNE": "allreduce:0-inf:ring"})
        finally:
            for lid in degraded:
                c("restore", str(lid), timeout=30)

        # (0) the same settings twice: the run-to-run noise, no algorithm change
        # (this machine is shared: one run in several can be much slower, so the noise is
        # printed, not held against the known differences, which must exceed a fixed 20 %)
        d = diff_of(args, base, again, os.path.join(out, "d-noise"))
        print(f"run-to-run noise: {d['iteration']['delta_ns'] / 1e6:+.2f} ms per iteration "
              f"({d['iteration']['delta_share']:+.1%})")
        check(not any(x["algorithm_changed"] for x in d["collectives"]) and
              not any(x["changed"] for x in d["decisions"]), "an algorithm changed in the same settings")
        check(d["cause"]["kind"] not in ("collective", "decision", "workload"),
              f"same settings, cause {d['cause']}")
        check_sums(d, "same settings")

        # (1) a degraded link: the cause is that physical link, the top link contributor
        d = diff_of(args, base, slow, os.path.join(out, "d-link"))
        top = d["links"]["entries"][0] if d["links"]["entries"] else {}
        print(f"degraded link {victim}: {d['cause']['sentence']}")
        check(d["links"]["kind"] == "physical", f"link diff kind {d['links']['kind']}")
        check(d["iteration"]["delta_share"] > 0.2, f"degraded run not 20 % slower: {d['iteration']}")
        check((top.get("a") or {}).get("id") == victim and (top.get("b") or {}).get("id") == victim,
              f"top link contributor {top.get('label')}, want physical link {victim}")
        check(top.get("contribution_ns", 0) > 0, f"top link not busier in B: {top}")
        check(d["cause"]["kind"] == "link" and d["cause"]["subject"] == top.get("label"),
              f"cause {d['cause']}, want physical link {victim}")
        check(not any(x["algorithm_changed"] for x in d["collectives"]),
              "an algorithm changed with the same settings")
        check_sums(d, "degraded link")

        # (2) a forced flat ring (every outer link at a quarter in both runs): the cause is the
        # allreduce's algorithm change
        d = diff_of(args, qbase, ring, os.path.join(out, "d-ring"))
        top = d["collectives"][0] if d["collectives"] else {}
        print(f"forced ring: {d['cause']['sentence']}")
        check(top.get("coll") == "allreduce" and top.get("bytes_min") <= DIFF_BYTES <=
              top.get("bytes_max"), f"top collective contributor {top}")
        check(d["iteration"]["delta_share"] > 0.2, f"ring run not 20 % slower: {d['iteration']}")
        check(top.get("algorithm_changed") is True and top["b"]["algorithm"] == "ring" and
              top["a"]["algorithm"] != "ring", f"top collective's algorithms: {top}")
        check(d["cause"]["kind"] == "collective" and
              d["cause"]["subject"] == f"allreduce {top.get('bucket')}",
              f"cause {d['cause']}, want the allreduce's algorithm change")
        dec = [x for x in d["decisions"] if x["changed"] and x["coll"] == "allreduce"]
        check(len(dec) == 1 and dec[0]["b"]["option"] == "ring",
              f"changed allreduce decisions: {dec}")
        check_sums(d, "forced ring")
    finally:
        shutil.rmtree(out, ignore_errors=True)


def selection_maps(args):
    """{collective: [(lo, hi or None, algorithm)]} of glucx-info --algorithms on the topology."""
    info = os.path.join(os.path.dirname(args.tool), "glucx-info")
    out = json.loads(run([info, "--algorithms", "--topology", args.topology, "--sizes", "1M",
                          "--json"]).stdout)
    return {c["name"]: [(r["lo"], r["hi"], r["algorithm"]) for r in c["ranges"]]
            for c in out["collectives"]}


def selected(maps, coll, nbytes):
    for lo, hi, alg in maps[coll]:
        if lo <= nbytes and (hi is None or nbytes < hi):
            return alg
    return None


def case_torch(args, c):
    """The glucx torch backend on the torus runs the topology-aware algorithms (issue 17,
    part 5), with no change in the script."""
    if not shutil.which("babeltrace2"):
        print("SKIP: babeltrace2 is not installed")
        return 77
    check(args.python and os.access(args.python, os.X_OK),
          f"no venv python at {args.python} (make venv)")
    if failures:
        return 1
    topo = model(args)
    maps = selection_maps(args)
    aware = {"allreduce": ("hierarchical", "torus", "torus_rotated"),
             "allgather": ("hierarchical",), "reduce_scatter": ("hierarchical",)}
    c.up()
    out = tempfile.mkdtemp(prefix=f"{c.name}-torch.")
    sizes = [65536, 1 << 20]
    try:
        p = c("run", "--trace", os.path.join(out, "t"), "--timeout", str(scaled(240)), "--",
              args.python, os.path.join(HERE, "torch_job.py"), *map(str, sizes),
              timeout=scaled(300), check_rc=False)
        print(p.stdout[-3000:])
        check(p.returncode == 0, f"torch job: exit {p.returncode}\n{p.stderr[-3000:]}")
        oks = [l for l in p.stdout.splitlines() if " ok algorithm=" in l]
        check(len(oks) == topo["ranks"] * 7 * len(sizes),
              f"{len(oks)} checked calls, want {topo['ranks'] * 7 * len(sizes)}")
        tdir = os.path.join(out, "t")
        rep = os.path.join(out, "report")
        run([args.analyze, *[os.path.join(tdir, h) for h in sorted(os.listdir(tdir))], "-o", rep,
             "--no-html", "--no-timeline", "--no-progress"], timeout=300)
        with open(os.path.join(rep, "report.json")) as f:
            calls = json.load(f)["collectives"]
        seen = {}
        for x in calls:
            if x["coll"] not in ("allreduce", "allgather", "reduce_scatter", "alltoall"):
                continue
            want = selected(maps, x["coll"], x["bytes"])
            check(x["algorithm"] == want, f"{x['coll']} of {x['bytes']} bytes ran "
                  f"{x['algorithm']}, the selection map says {want}")
            seen.setdefault(x["coll"], set()).add(x["algorithm"])
        print(f"algorithms per collective in the trace: {seen}")
        for coll, algs in aware.items():
            check(seen.get(coll, set()) & set(algs),
                  f"{coll}: ran {seen.get(coll)}, none of the topology-aware {algs}")
    finally:
        shutil.rmtree(out, ignore_errors=True)


def case_mpirun(args, c):
    """Open MPI's mpirun, started in host 0, launches ranks in every host through
    `glucx-cluster exec` as its rsh agent; glucx-bench runs on OMPI_COMM_WORLD_*."""
    mpirun = shutil.which("mpirun")
    if not mpirun:
        print("SKIP: mpirun (Open MPI) is not installed")
        return 77
    topo = model(args)
    c.up()
    work = tempfile.mkdtemp(prefix=f"{c.name}-mpi.")
    try:
        hostfile = os.path.join(work, "hosts")
        k = topo["ranks_per_package"]
        with open(hostfile, "w") as f:
            f.writelines(f"{topo_host(c, q)} slots={k}\n" for q in range(topo["packages"]))
        n = topo["ranks"]
        cmd = (f"GLUCX_STORE=file:{work}/store UCX_NET_DEVICES=ident {mpirun} --allow-run-as-root"
               f" --hostfile {hostfile} -np {n} --mca plm_rsh_agent '{c.tool} exec'"
               f" --mca oob_tcp_if_include ident -x GLUCX_STORE -x UCX_NET_DEVICES -x PATH"
               f" -x LD_LIBRARY_PATH {args.bench} --coll alltoall -b 96K -e 96K --iters 2"
               f" --timeout-ms {int(scaled(60) * 1000)}")
        p = c.exec(topo_host(c, 0), cmd, timeout=180, check_rc=False)
        print(p.stdout, p.stderr)
        check(p.returncode == 0, f"mpirun: exit status {p.returncode}")
        check(f"alltoall, {n} ranks" in p.stdout, f"mpirun: not {n} ranks")
        check("# wrong elements in total: 0 (OK)" in p.stdout, "mpirun alltoall: not OK")
        check("tcp/ident" in p.stdout, "mpirun: no rank pair over tcp/ident")
    finally:
        shutil.rmtree(work, ignore_errors=True)


# fault: the victim of each round (ranks 2k and 2k+1 are host k's): a different host each time
FAULT_VICTIMS = (3, 6, 1, 4)
FAULT_BYTES = 64 << 20
# each rank's job in a fault round: $1 a directory every host sees, $2 the victim, $3 glucx-bench,
# $4 the timeout (ms). The victim waits (bounded) until rank 0 printed the table header (the
# communicator is up, the timed allgathers start), lets them run 1.5 s and kills its own
# glucx-bench with SIGKILL; every script exits 0 so that `run` stops no survivor early.
FAULT_SCRIPT = r"""
d=$1; v=$2; bench=$3; t=$4
"$bench" --coll allgather --algo ring -b %d -e %d --iters 1000 --warmup 0 --timeout-ms "$t" \
    --name fault >"$d/out.$RANK" 2>"$d/err.$RANK" &
pid=$!
if [ "$RANK" = "$v" ]; then
    n=0
    while ! grep -q '^# size' "$d/out.0" 2>/dev/null && [ $n -lt 600 ]; do
        sleep 0.1; n=$((n + 1))
    done
    sleep 1.5
    kill -9 $pid
    wait $pid
    echo killed >"$d/rc.$RANK"
    exit 0
fi
wait $pid
echo $? >"$d/rc.$RANK"
""" % (FAULT_BYTES, FAULT_BYTES)


def case_fault(args, c):
    """fault: one rank killed with SIGKILL in the middle of a 64 MiB ring allgather over all
    hosts, a different host per round: every survivor's glucx-bench ends with status 1 and the
    allgather's failure naming the dead rank (directly or as another rank reported it), none
    aborts (UCX 1.13's TCP transport, transport/ucx.c: ZCOPY_THRESH) and none waits for the
    launcher's timeout; no rank is left in the hosts."""
    topo = model(args)
    c.up()
    inodes = netns_inodes(c.name)
    holders = len(processes_in(inodes))
    n = topo["ranks"]
    tmo_ms = int(scaled(20000))
    for victim in FAULT_VICTIMS:
        d = tempfile.mkdtemp(prefix="glucx-fault-")
        try:
            t0 = time.monotonic()
            p = c("run", "--timeout", str(int(scaled(120))), "--", "bash", "-c", FAULT_SCRIPT, "fault",
                  d, str(victim), args.bench, str(tmo_ms), check_rc=False, timeout=180)
            took = time.monotonic() - t0
            out0 = open(os.path.join(d, "out.0")).read() if victim != 0 else ""
            print(f"victim rank {victim}: run status {p.returncode} after {took:.1f} s", flush=True)
            check(p.returncode == 0, f"victim {victim}: run status {p.returncode}: {p.stderr}")
            check("# size" in out0, f"victim {victim}: the allgathers never started: {out0!r}")
            for r in range(n):
                rc_path = os.path.join(d, f"rc.{r}")
                rc = open(rc_path).read().strip() if os.path.exists(rc_path) else "(none)"
                err = open(os.path.join(d, f"err.{r}")).read()
                if r == victim:
                    check(rc == "killed", f"victim {victim}: not killed ({rc})")
                    continue
                print(f"  rank {r}: status {rc}: {err.strip().splitlines()[-1:] or ''}")
                check(rc == "1", f"victim {victim}: rank {r} ended with status {rc}, want 1 "
                      f"(134: aborted):\n{err}")
                check("Assertion" not in err, f"victim {victim}: rank {r}: UCX assertion:\n{err}")
                want = f"allgather of {FAULT_BYTES} bytes failed: peer failed: "
                named = (f"rank {victim} failed: " in err or f"rank {victim} (pid" in err)
                check(want in err and named,
                      f"victim {victim}: rank {r}: no failure naming rank {victim}:\n{err}")
            check(len(processes_in(inodes)) == holders, f"victim {victim}: ranks left in the hosts")
        finally:
            shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["plan", "lifecycle", "hosts", "run", "routes", "shaping",
                                     "trace", "mpirun", "accounting", "bottleneck", "volume", "torch",
                                     "diff", "fault"])
    ap.add_argument("--tool", required=True)
    ap.add_argument("--topology", required=True, help="topology YAML file")
    ap.add_argument("--topology-json", help="(plan) hand-written JSON of the same topology")
    ap.add_argument("--bench")
    ap.add_argument("--analyze", help="(accounting, bottleneck, volume, diff) glucx-analyze")
    ap.add_argument("--python", help="(torch) the venv's python, with the glucx package")
    ap.add_argument("--job", help="(diff) the diff_job program")
    ap.add_argument("--name", default=f"glxt{os.getpid() % 10000}")
    args = ap.parse_args()
    if args.case == "plan":
        case_plan(args)
    else:
        if os.geteuid() != 0:
            print("SKIP: glucx-cluster needs root (namespaces)")
            return 77
        if subprocess.run(["ip", "netns", "list"], capture_output=True).returncode != 0:
            print("SKIP: `ip netns` is not available")
            return 77
        c = Cluster(args.tool, args.name, args.topology)
        run([c.tool, "down", "--name", c.name])  # a leftover of an earlier, killed run
        try:
            if globals()[f"case_{args.case}"](args, c) == 77:
                return 77
        finally:
            p = run([c.tool, "down", "--name", c.name], check_rc=False)
            check(p.returncode == 0, f"down: {p.stderr}")
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
