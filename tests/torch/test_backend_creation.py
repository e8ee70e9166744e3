"""Creating `glucx` groups: which network interface they use, and how creation fails.

One 2-rank launch (backend_jobs.group_creation) with UCX_TLS=tcp,self, so that glucx reaches every
peer over a network device and ProcessGroupGlucx.peer_transport() names it ("tcp/lo"). Each case
sets GLOO_SOCKET_IFNAME (read at each group creation, as ProcessGroupGloo does) and makes a group:

* lo, another interface of this host, a list of both, unset: the group works, and every peer is
  reached over the named interface(s); unset means the interface holding the address this host's
  name resolves to (loopback if it resolves to nothing a socket can bind), computed here from
  `ip -j addr` and the resolver, independently of glucx;
* nosuch0 on every rank, and on one rank only: new_group raises on every rank at once (well
  before the group's timeout), naming the interface and GLOO_SOCKET_IFNAME; the others name the
  rank that could not join;
* the same missing interface on the Gloo path (GLOO_DEVICE_TRANSPORT=UCX, backend "gloo"): the
  same message, from the same code (glucx::gloo::ChooseNetDevices);
* a new_group that rank 1 never joins: the others' RuntimeError says what glucx waited for,
  without PyTorch's C++ backtrace; and an operation whose result copy fails inside PyTorch raises
  glucx's text and PyTorch's reason, without the backtrace.

The netns test (test_gloo_ucx_netns.py) shows between two emulated hosts that the named interface
carries the traffic, for both backends.
"""
import ipaddress
import json
import re
import shutil
import socket
import subprocess

import pytest

import backend_harness
import backend_jobs

TIMEOUT_S = 60  # of every group made by a case: failures must come long before it
PROMPT_S = 20  # "at once": a failure that waited for the timeout would take 60 s
SHORT_TIMEOUT_S = 4  # the group rank 1 never joins
BACKTRACE = ("frame #", "Exception raised from")


def host_interfaces():
    """{interface: [addresses]} of the interfaces that have an IPv4 or IPv6 address."""
    if shutil.which("ip") is None:
        pytest.skip("needs iproute2 (ip) to list this host's interfaces")
    out = subprocess.run(["ip", "-j", "addr", "show"], check=True, capture_output=True,
                         text=True, timeout=30).stdout
    found = {}
    for link in json.loads(out):
        addrs = [a["local"] for a in link.get("addr_info", [])
                 if a.get("family") in ("inet", "inet6") and "local" in a]
        if addrs:
            found[link["ifname"]] = addrs
    return found


def hostname_interface(interfaces):
    """The interface PyTorch's Gloo would use with GLOO_SOCKET_IFNAME unset: the first address
    of this host's name that a socket can bind to, else 127.0.0.1; loopback addresses are "lo"."""
    chosen = "127.0.0.1"
    try:
        infos = socket.getaddrinfo(socket.gethostname(), None, type=socket.SOCK_STREAM)
    except socket.gaierror:
        infos = []
    for family, kind, proto, _, addr in infos:
        try:
            with socket.socket(family, kind, proto) as s:
                s.bind(addr)
            chosen = addr[0]
            break
        except OSError:
            continue
    if ipaddress.ip_address(chosen.split("%")[0]).is_loopback:
        return "lo"
    for name, addrs in interfaces.items():
        if chosen in addrs:
            return name
    raise AssertionError(f"{socket.gethostname()} resolves to {chosen}, on no interface of "
                         f"{interfaces}")


@pytest.fixture(scope="module")
def setup():
    backend_harness.glucx_importable_or_fail()
    if backend_harness.BACKEND != "glucx":
        pytest.skip("glucx's own group creation (peer_transport, GLOO_SOCKET_IFNAME handling)")
    interfaces = host_interfaces()
    others = [n for n in interfaces if n != "lo"]
    return {"interfaces": interfaces, "other": others[0] if others else None,
            "unset": hostname_interface(interfaces)}


def cases(setup):
    """(name, {rank: GLOO_SOCKET_IFNAME}, backend, expected interfaces or None for a failure)."""
    other = setup["other"]
    both = {0: "lo", 1: "lo"}
    c = [("lo", both, "glucx", {"lo"})]
    if other:
        c.append(("other", {0: other, 1: other}, "glucx", {other}))
        c.append(("list", {0: f"{other},lo", 1: f"{other},lo"}, "glucx", {other, "lo"}))
    c.append(("unset", {}, "glucx", {setup["unset"]}))
    missing = backend_jobs.MISSING_IFACE
    c.append(("missing/all", {0: missing, 1: missing}, "glucx", None))
    c.append(("missing/one", {0: "lo", 1: missing}, "glucx", None))
    c.append(("gloo/lo", both, "gloo", {"lo"}))
    c.append(("gloo/missing", {0: missing, 1: missing}, "gloo", None))
    return c


@pytest.fixture(scope="module")
def job(setup, tmp_path_factory):
    out = tmp_path_factory.mktemp("backend-creation")
    spec = [(n, v, b) for n, v, b, _ in cases(setup)]
    return backend_harness.spawn(
        "group_creation", 2, str(out),
        params={"timeout_s": TIMEOUT_S, "short_timeout_s": SHORT_TIMEOUT_S, "cases": spec},
        timeout_s=120 + TIMEOUT_S, extra_env={"UCX_TLS": "tcp,self"})


def devices(transport):
    """"tcp/eth0, tcp/lo" -> {"eth0", "lo"}."""
    found = set()
    for lane in transport.split(","):
        tl, _, dev = lane.strip().partition("/")
        assert tl == "tcp" and dev, f"not a TCP lane: {transport!r}"
        found.add(dev)
    return found


def test_default_group_uses_the_named_interface(job):
    for r, rec in job.assert_ok("default-group/info").items():
        assert rec["ifname"] == "lo" and rec["all_reduce_ok"], rec
        assert rec["transports"] and all(devices(t) == {"lo"}
                                         for t in rec["transports"].values()), (r, rec)


@pytest.mark.parametrize("name", ["lo", "other", "list", "unset", "gloo/lo"])
def test_interface_is_used(setup, job, name):
    spec = {c[0]: c for c in cases(setup)}
    if name not in spec:
        pytest.skip(f"this host has no interface with an address besides lo: {setup}")
    _, values, kind, want = spec[name]
    for r, rec in job.assert_ok(f"case/{name}").items():
        assert not rec["raised"], f"rank {r}: new_group raised: {rec['detail']}"
        assert rec["all_reduce_ok"], (r, rec)
        if kind != "glucx":
            continue  # ProcessGroupGloo does not say which device it uses (see the netns test)
        assert rec["transports"], (r, rec)
        for peer, t in rec["transports"].items():
            got = devices(t)
            # a list: UCX may use some or all of the listed devices, never another one
            assert got and got <= want, (f"rank {r} reaches rank {peer} over {t!r}; "
                                         f"GLOO_SOCKET_IFNAME={values.get(r)!r} allows {want}")
            if len(want) == 1:
                assert got == want, (r, peer, t, want)


def _check_failure(rec, r, words):
    assert rec["raised"], f"rank {r}: new_group returned although it should fail: {rec}"
    assert rec["error_type"] == "RuntimeError", (r, rec)
    msg = rec["detail"]
    for w in words:
        assert w in msg, f"rank {r}: the error does not name {w!r}: {msg}"
    for b in BACKTRACE:
        assert b not in msg, f"rank {r}: the error carries a C++ backtrace: {msg}"
    assert rec["elapsed_s"] < PROMPT_S, (
        f"rank {r}: failing took {rec['elapsed_s']:.1f} s (group timeout {TIMEOUT_S} s): {msg}")


@pytest.mark.parametrize("name", ["missing/all", "gloo/missing"])
def test_missing_interface_fails_every_rank_naming_it(job, name):
    for r, rec in job.assert_ok(f"case/{name}").items():
        _check_failure(rec, r, [f"'{backend_jobs.MISSING_IFACE}'", backend_jobs.IFNAME])


def test_missing_interface_on_one_rank_fails_every_rank_at_once(job):
    """Rank 1 names a missing interface, rank 0 a good one: rank 1 raises naming it, and rank 0
    does not wait for rank 1 until its timeout: it raises at once naming rank 1 and the reason."""
    recs = job.assert_ok("case/missing/one")
    _check_failure(recs[1], 1, [f"'{backend_jobs.MISSING_IFACE}'", backend_jobs.IFNAME])
    _check_failure(recs[0], 0, ["rank 1 could not join", f"'{backend_jobs.MISSING_IFACE}'",
                                backend_jobs.IFNAME])


def test_groups_work_after_failed_creations(job):
    job.assert_ok("after/default-group")
    job.assert_ok("after/new-group")


def test_new_group_timeout_message_has_no_backtrace(job):
    """Rank 1 never calls new_group: rank 0's new_group raises RuntimeError after the group's
    timeout, saying what it waited for (glucx's text), without a C++ backtrace."""
    rec = job.assert_ok("timeout/error", ranks=[0])[0]
    msg = rec["detail"]
    assert rec["error_type"] == "RuntimeError", rec
    assert "glucx" in msg and "rank 1" in msg and "to publish its address" in msg, msg
    # Gloo's wording, as PyTorch's own tests match timeouts (distributed_test.py,
    # _test_barrier_timeout)
    assert re.search(" (Timed out|closed|timeout) ", msg), msg
    for b in BACKTRACE:
        assert b not in msg, f"the error carries a C++ backtrace:\n{msg}"
    assert 0.8 * SHORT_TIMEOUT_S <= rec["elapsed_s"] < 3 * SHORT_TIMEOUT_S, rec


def test_op_error_message_has_no_backtrace(job):
    """An error PyTorch raises inside the backend (a result copy that fails at completion) comes
    out of wait() as RuntimeError with glucx's text and PyTorch's message, without the backtrace
    c10::Error::what() carries."""
    job.assert_ok("op-error/raises")
    rec = job.assert_ok("op-error/error", ranks=[0])[0]
    msg = rec["detail"]
    assert rec["error_type"] == "RuntimeError", rec
    assert "glucx allgather on rank 0 of 2" in msg and "output tensors failed" in msg, msg
    assert "exceeds dimension size" in msg, msg  # PyTorch's own reason, kept
    for b in BACKTRACE:
        assert b not in msg, f"the error carries a C++ backtrace:\n{msg}"


def test_job_exits(job):
    job.assert_ok("exiting")
    job.assert_clean_exit()
