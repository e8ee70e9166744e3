#!/usr/bin/env python3
"""Raw TCP throughput between two hosts of an emulated cluster (glucx-cluster), standard
library only: `tcp_stream.py recv PORT` in one host, `tcp_stream.py send ADDR PORT BYTES` in
another. The receiver prints the bytes it got and its rate (first byte to last) as JSON."""
import json
import socket
import sys
import time


def recv(port):
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("", port))
    srv.listen(1)
    print("listening", flush=True)
    conn, peer = srv.accept()
    total, t0 = 0, None
    buf = bytearray(1 << 20)
    while True:
        n = conn.recv_into(buf)
        if n == 0:
            break
        if t0 is None:
            t0 = time.monotonic()
        total += n
    t1 = time.monotonic()
    print(json.dumps({"bytes": total, "seconds": t1 - (t0 or t1),
                      "Bps": total / (t1 - t0) if t0 and t1 > t0 else 0, "peer": peer[0]}),
          flush=True)


def send(addr, port, nbytes):
    deadline = time.monotonic() + 10
    while True:
        try:
            s = socket.create_connection((addr, port), timeout=10)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    chunk = b"\xa5" * (1 << 20)
    left = nbytes
    while left > 0:
        n = s.send(chunk[:min(left, len(chunk))])
        left -= n
    s.shutdown(socket.SHUT_WR)
    s.recv(1)
    s.close()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "recv":
        recv(int(sys.argv[2]))
    elif len(sys.argv) == 5 and sys.argv[1] == "send":
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit("usage: tcp_stream.py recv PORT | send ADDR PORT BYTES")
