"""The interface a job names is the one glucx uses between hosts.

Two emulated hosts: two network namespaces joined by a veth pair (10.231.x.1 and .2, addresses
that exist only inside the namespaces this test creates). Rank 0 runs in one, rank 1 in the
other, each with its own GLUCX_HOSTID and UCX_TLS=tcp,self (processes on one machine would
otherwise find each other's shared memory, which real hosts cannot). The job is plain torch,
once per path: GLOO_DEVICE_TRANSPORT=UCX + init_process_group("gloo"), and
init_process_group("glucx"); then an all_reduce.

* GLOO_SOCKET_IFNAME=<the veth end>: the job succeeds and glucx's log (GLUCX_LOG_LEVEL=info)
  says each rank reaches the other over tcp/<that veth end>.
* GLOO_SOCKET_IFNAME=lo: the peer is not reachable over loopback (each namespace has its own),
  so creation fails on both ranks, promptly, with glucx's message — proof that the named
  interface, not "any interface that works", carries the traffic.
* `glucx` backend, GLOO_SOCKET_IFNAME=lo,<the veth end>: every listed interface is a UCX network
  device of the group, so the job succeeds over the veth end (were only the first entry used, it
  would fail as with lo alone). ProcessGroupGloo instead makes one device per listed interface
  and connects each of them to every peer, so there the lo device fails as above.

Needs root and iproute2 (CI runs as root); skipped with the reason otherwise.
"""
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from gloo_harness import time_scale

JOB = r"""
import os, torch, torch.distributed as dist
dist.init_process_group(os.environ["NETNS_TEST_BACKEND"])
r = dist.get_rank()
t = torch.arange(1000, dtype=torch.float64) + r
dist.all_reduce(t)
want = 2 * torch.arange(1000, dtype=torch.float64) + 1
print("RESULT", "ok" if torch.equal(t, want) else "wrong", flush=True)
"""


def _ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30 * time_scale())


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


# glx-<tree>-<pid>-a/b, and the names of earlier versions of this test (glxa<pid>, glxb<pid>)
_NS_NAME = re.compile(r"^glx(?:-[A-Za-z0-9-]*-(\d+)-[ab]|[ab](\d+))$")


def _sweep_stale():
    """Delete the namespaces (and root-namespace veth ends) of runs of this test whose process is
    gone: a run killed at its deadline (SIGKILL) never reaches its own teardown."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                         timeout=30 * time_scale()).stdout
    for line in out.splitlines():
        name = line.split()[0] if line.split() else ""
        m = _NS_NAME.match(name)
        if m and not _alive(int(m.group(1) or m.group(2))):
            subprocess.run(["ip", "netns", "del", name], capture_output=True,
                           timeout=30 * time_scale())
    links = subprocess.run(["ip", "-o", "link", "show", "type", "veth"], capture_output=True,
                           text=True, timeout=30 * time_scale()).stdout
    for m in re.finditer(r"^\d+: gv[ab](\d+)[@:]", links, re.M):
        if not _alive(int(m.group(1))):
            subprocess.run(["ip", "link", "del", f"gva{m.group(1)}"], capture_output=True,
                           timeout=30 * time_scale())


@pytest.fixture
def two_hosts(tmp_path):
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 to create network namespaces")
    _sweep_stale()
    tag = str(os.getpid())  # the whole pid: _sweep_stale tells a dead run's names by it
    # namespaces name the worktree too (several checkouts may run this test at once)
    tree = re.sub(r"[^A-Za-z0-9-]", "", os.path.basename(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))[:40]
    ns = (f"glx-{tree}-{tag}-a", f"glx-{tree}-{tag}-b")
    dev = (f"gva{tag}", f"gvb{tag}")
    subnet = 10 + os.getpid() % 200
    addrs = (f"10.231.{subnet}.1", f"10.231.{subnet}.2")
    created = []
    try:
        for n in ns:
            _ip("netns", "add", n)
            created.append(n)
        _ip("link", "add", dev[0], "type", "veth", "peer", "name", dev[1])
        for n, d, a in zip(ns, dev, addrs):
            _ip("link", "set", d, "netns", n)
            _ip("-n", n, "addr", "add", f"{a}/30", "dev", d)
            _ip("-n", n, "link", "set", d, "up")
            _ip("-n", n, "link", "set", "lo", "up")
        yield {"ns": ns, "dev": dev, "addrs": addrs, "dir": tmp_path}
    finally:
        for n in created:  # deleting a namespace deletes its veth end, and so the pair
            subprocess.run(["ip", "netns", "del", n], capture_output=True,
                           timeout=30 * time_scale())
        # a pair still in the root namespace (setup failed before moving it)
        subprocess.run(["ip", "link", "del", dev[0]], capture_output=True,
                       timeout=30 * time_scale())


BACKENDS = ["gloo", "glucx"]


def _run(hosts, ifnames, port, backend):
    job = hosts["dir"] / "job.py"
    job.write_text(JOB)
    procs, logs = [], []
    for rank in range(2):
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GLOO_DEVICE_TRANSPORT": "UCX",
            "NETNS_TEST_BACKEND": backend,
            "GLOO_SOCKET_IFNAME": ifnames[rank],
            "MASTER_ADDR": hosts["addrs"][0],
            "MASTER_PORT": str(port),
            "RANK": str(rank),
            "WORLD_SIZE": "2",
            "GLUCX_HOSTID": f"emulated-host-{rank}",
            "GLUCX_LOG_LEVEL": "info",
            "GLUCX_TIMEOUT_MS": str(int(20000 * time_scale())),
            "UCX_TLS": "tcp,self",
        }
        log = open(hosts["dir"] / f"rank{rank}.log", "w+")
        logs.append(log)
        procs.append(subprocess.Popen(
            ["ip", "netns", "exec", hosts["ns"][rank], "env", *[f"{k}={v}" for k, v in env.items()],
             sys.executable, str(job)], stdout=log, stderr=subprocess.STDOUT))
    start = time.monotonic()
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(timeout=max(1.0, 90 * time_scale() - (time.monotonic() - start))))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            codes.append(None)
    outs = []
    for log in logs:
        log.seek(0)
        outs.append(log.read())
        log.close()
    return codes, outs, time.monotonic() - start


@pytest.mark.parametrize("backend", BACKENDS)
def test_named_interface_carries_the_traffic(two_hosts, backend):
    codes, outs, _ = _run(two_hosts, two_hosts["dev"], 29000 + os.getpid() % 500, backend)
    for rank in range(2):
        assert codes[rank] == 0, f"rank {rank} exited {codes[rank]}:\n{outs[rank]}"
        assert "RESULT ok" in outs[rank], outs[rank]
        peer = 1 - rank
        m = re.search(rf"rank {rank} reaches rank {peer} over (\S+)", outs[rank])
        assert m, f"glucx did not log rank {rank}'s transport:\n{outs[rank]}"
        assert m.group(1) == f"tcp/{two_hosts['dev'][rank]}", outs[rank]


@pytest.mark.parametrize("backend", BACKENDS)
def test_interface_that_cannot_reach_the_peer_fails_promptly(two_hosts, backend):
    codes, outs, took = _run(two_hosts, ("lo", "lo"), 29500 + os.getpid() % 400, backend)
    for rank in range(2):
        assert codes[rank] not in (0, None), f"rank {rank} exited {codes[rank]}:\n{outs[rank]}"
        assert "RESULT" not in outs[rank]
        assert "glucx" in outs[rank] and "rank" in outs[rank], outs[rank]
    # well within the 20 s glucx timeout: an unreachable address fails at connect
    assert took < 60 * time_scale(), f"took {took:.1f} s"


def test_glucx_backend_uses_every_listed_interface(two_hosts):
    ifnames = tuple(f"lo,{d}" for d in two_hosts["dev"])
    codes, outs, _ = _run(two_hosts, ifnames, 28500 + os.getpid() % 500, "glucx")
    for rank in range(2):
        assert codes[rank] == 0, f"rank {rank} exited {codes[rank]}:\n{outs[rank]}"
        assert "RESULT ok" in outs[rank], outs[rank]
        m = re.search(rf"rank {rank} reaches rank {1 - rank} over (.+)$", outs[rank], re.M)
        assert m, f"glucx did not log rank {rank}'s transport:\n{outs[rank]}"
        assert m.group(1).strip() == f"tcp/{two_hosts['dev'][rank]}", outs[rank]
