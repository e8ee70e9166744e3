"""TCP ports for test servers that another process binds (PyTorch's TCPStore, torchrun).

A port the kernel handed out for a bind to port 0 and that was then closed is in the ephemeral
range (/proc/sys/net/ipv4/ip_local_port_range): any socket bound to port 0 or connecting in the
meantime — UCX's TCP interfaces and listeners, Gloo's pairs, other tests running in parallel —
can get it before the server binds it ("Address already in use", seen in torch/backend). A port
below that range is never handed out by the kernel, so only another explicit choice can take it;
choosing at random among some 20,000 of them and checking it binds makes that unlikely.

Imported by path, as timescale.py.
"""
import os
import random
import socket
import time


def _ephemeral_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
            return lo, hi
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def _binds(port):
    """Whether nobody holds @port on the wildcard addresses (IPv6 dual-stack covers IPv4 too;
    TCPStore binds both)."""
    families = [(socket.AF_INET, ("0.0.0.0", port))]
    if socket.has_ipv6:
        families.append((socket.AF_INET6, ("::", port)))
    for family, addr in families:
        try:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.bind(addr)
        except OSError:
            if family == socket.AF_INET6 and not os.path.exists("/proc/net/if_inet6"):
                continue  # no IPv6 on this host
            return False
    return True


def free_port():
    """A TCP port below the ephemeral range that nothing holds now. Raises RuntimeError when
    200 random candidates were all taken."""
    lo, hi = _ephemeral_range()
    first, last = (10000, lo - 1) if lo > 11000 else (hi + 1, 65535)
    if last - first < 1000:
        first, last = 1024, 65535
    rng = random.Random(os.getpid() * 1000003 + time.monotonic_ns())
    for _ in range(200):
        port = rng.randint(first, last)
        if _binds(port):
            return port
    raise RuntimeError(f"free_port: 200 random ports in [{first}, {last}] were all in use")
