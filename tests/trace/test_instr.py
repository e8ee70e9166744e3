#!/usr/bin/python3
"""Instrumentation tests: real glucx runs under `glucx-trace record`, read back with Babeltrace 2.

    test_instr.py --glucx-trace EXE --bench EXE [--venv-python PY --torch-libs DIR] --work DIR CASE

CASE:
  c2, c4   glucx-bench with N forked ranks: ring allreduce (forced; 64 KiB to 4 MiB, so
           segmented) and allgather. Checks every event kind is there, every *_begin has its
           *_end, each blocking collective wait holds the send/recv ends of its requests and no
           end lies in another's wait, collectives agree across ranks, one sched_decision per
           collective consistent with coll_begin, every send matches one receive by (comm, seq,
           step, sender, receiver) with equal bytes, and the bytes each rank sends per
           collective equal the algorithm's volume (computed here).
  torch    a 2-rank PyTorch job over the Gloo shim (GLOO_DEVICE_TRANSPORT=UCX, the venv's
           interpreter, this build's libglucx preloaded): its transfers appear as send/recv
           events that match across ranks, with seq/step as EVENTS.md defines them for Gloo slots.

Every expected value is computed here from the run's parameters, never read from the trace.
Exit 0 = pass, 77 = skipped (prints why).
"""
import argparse
import collections
import os
import shutil
import socket
import subprocess
import sys
import textwrap

import bt2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from timescale import scaled  # noqa: E402 - GLUCX_TEST_TIME_SCALE (tests/README.md)
from ports import free_port  # noqa: E402 - below the ephemeral range (tests/support/ports.py)
from tracepids import PidListError, trace_pids  # noqa: E402

TIMEOUT = scaled(50)  # s, for the traced command
SKIP = 77
COLL_COUNT = 11  # glucx_coll_t values (EVENTS.md)
ALLREDUCE, ALLGATHER = 0, 1
ALG = {"ring": 0, "recursive_doubling": 1, "bruck": 3, "linear": 5}
SITE_COLL = 2  # wait site inside a collective algorithm (EVENTS.md, enum site)
SLOT_BIT = 1 << 47
STEP_CONFIRM = 0xFFE0


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def probe_venv(venv_python):
    """Whether the venv can run the framework jobs: (why not, or None; whether its torch has
    the "glucx" backend). Used by the DDP and ScheduledDataParallel instrumentation tests."""
    if not os.path.exists(venv_python):
        return "no venv interpreter (%s): run `make venv`" % venv_python, False
    probe = subprocess.run(
        [venv_python, "-c", "import torch.distributed as d, glucx, glucx.torch; "
         "print(int(hasattr(d.Backend, 'GLUCX')))"], capture_output=True, text=True,
        timeout=scaled(60))
    if probe.returncode != 0:
        return "the venv has no glucx.torch (stale? run `make venv`):\n" + probe.stderr, False
    return None, probe.stdout.strip() == "1"


def plain(field):
    if isinstance(field, bt2._EnumerationFieldConst) or isinstance(field, bt2._IntegerFieldConst):
        return int(field)
    if isinstance(field, bt2._RealFieldConst):
        return float(field)
    if isinstance(field, bt2._StringFieldConst):
        # by its length: Babeltrace 2.0 may leave an earlier event's value in the buffer of an
        # empty string field (EVENTS.md, "Reading strings")
        return str(field) if len(field) > 0 else ""
    if isinstance(field, bt2._ArrayFieldConst):
        return [plain(f) for f in field]
    raise Failure("unexpected field type %s" % type(field).__name__)


def read_events(path):
    """The events of the command glucx-trace recorded into path (the processes its glucx-pids
    lists: not those of another job traced at the same time), in trace order, as dicts: name
    (without "glucx:"), ts (ns), vpid, vtid, fields."""
    pids = trace_pids(path)
    out, discarded = [], 0
    for msg in bt2.TraceCollectionMessageIterator(path):
        if type(msg) is bt2._DiscardedEventsMessageConst:
            discarded += msg.count or 0
        if type(msg) is not bt2._EventMessageConst:
            continue
        ev = msg.event
        ctx = ev.common_context_field
        ids = {c: int(ctx[c]) if ctx is not None and c in ctx else None for c in ("vpid", "vtid")}
        if ids["vpid"] not in pids:
            continue  # another job's: its fields are not even read
        d = {k: plain(v) for k, v in ev.payload_field.items() if not k.startswith("_")}
        d["ev"] = ev.name.split(":", 1)[1]
        d["ts"] = msg.default_clock_snapshot.ns_from_origin
        d.update(ids)
        out.append(d)
    check(discarded == 0, "%d events discarded: the checks below would mis-pair" % discarded)
    return out


def check_physical(ev, cid, n):
    """One host, no topology file: the physical model of EVENTS.md ("phys_link") is one package,
    fully connected: a link per pair of ranks, ids in pair order (0,1), (0,2), .., (1,2), ..,
    announced once by the lower rank with the link class's nominal values, and the route of
    every ordered pair is its pair's link alone, crossed from the lower rank (endpoint a) to the
    higher (direction 0) or back (1)."""
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    phys = sorted((e for e in ev["phys_link"] if e["comm_id"] == cid), key=lambda e: e["phys_id"])
    check([e["phys_id"] for e in phys] == list(range(len(pairs))),
          "phys_link ids of %x: %s, expected each of 0..%d once" %
          (cid, [e["phys_id"] for e in phys], len(pairs) - 1))
    link_of = {(e["src"], e["dst"]): e for e in ev["link"] if e["comm_id"] == cid}
    for e, (i, j) in zip(phys, pairs):
        check(e["dim"] == 0 and e["a_kind"] == 0 and e["b_kind"] == 0 and (e["a"], e["b"]) == (i, j)
              and e["rank"] == i, "phys_link %d of %x: %s, expected ranks %d-%d announced by %d"
              % (e["phys_id"], cid, e, i, j, i))
        ln = link_of[(i, j)]
        check(e["bandwidth_Bps"] == ln["bandwidth_Bps"] and e["latency_ns"] == ln["latency_ns"],
              "phys_link %s: nominal values differ from link %s" % (e, ln))
    routes = {(e["rank"], e["dst"]): e for e in ev["route"] if e["comm_id"] == cid}
    want = {(s, t) for s in range(n) for t in range(n) if s != t}
    check(set(routes) == want and len([e for e in ev["route"] if e["comm_id"] == cid]) == len(want),
          "routes of %x: %s, expected one per ordered pair" % (cid, sorted(routes)))
    for (s, t), e in routes.items():
        check(e["link"] == s * n + t and e["phys_ids"] == [pairs.index((min(s, t), max(s, t)))]
              and e["dirs"] == [0 if s < t else 1],
              "route %d->%d of %x: %s" % (s, t, cid, e))


def record(a, out_dir, cmd, env=None):
    shutil.rmtree(out_dir, ignore_errors=True)
    e = dict(os.environ)
    e.pop("GLUCX_TRACE", None)
    if env:
        e.update(env)
    p = subprocess.run([a.glucx_trace, "record", "-o", out_dir, "--", *cmd], env=e,
                       capture_output=True, text=True, timeout=TIMEOUT + 10)
    check(p.returncode == 0, "traced command failed (rc %d):\n%s\n%s"
          % (p.returncode, p.stdout[-3000:], p.stderr[-3000:]))
    return p


def by_name(evs):
    d = collections.defaultdict(list)
    for e in evs:
        d[e["ev"]].append(e)
    return d


def check_pairs(ev):
    """Every *_begin has its *_end, on the same thread, after it."""
    # collectives: one begin and one end per (comm, rank, seq), end later
    begins = {(e["comm_id"], e["rank"], e["seq"]): e for e in ev["coll_begin"]}
    ends = {(e["comm_id"], e["rank"], e["seq"]): e for e in ev["coll_end"]}
    check(len(begins) == len(ev["coll_begin"]), "two coll_begin with the same (comm, rank, seq)")
    check(begins.keys() == ends.keys(), "coll_begin without coll_end or the reverse: %s"
          % sorted(set(begins) ^ set(ends))[:5])
    for k, b in begins.items():
        check(ends[k]["ts"] >= b["ts"] and ends[k]["vtid"] == b["vtid"],
              "coll_end of %s before its begin or on another thread" % (k,))
        check(ends[k]["status"] == 0, "collective %s ended with status %d" % (k, ends[k]["status"]))
    # transfers: per (comm, rank, seq, tag), as many ends as begins (a p2p any-source receive
    # learns its peer and step only at the end)
    for kind in ("send", "recv"):
        cb = collections.Counter((e["comm_id"], e["rank"], e["seq"], e["tag"])
                                 for e in ev[kind + "_begin"])
        ce = collections.Counter((e["comm_id"], e["rank"], e["seq"], e["tag"])
                                 for e in ev[kind + "_end"])
        check(cb == ce, "%s_begin/%s_end do not pair: %s" % (kind, kind, (cb - ce) + (ce - cb)))
    # reductions and waits: strictly alternating begin/end per thread
    for fam in ("reduce", "wait"):
        open_ = {}
        for e in sorted(ev[fam + "_begin"] + ev[fam + "_end"], key=lambda x: x["ts"]):
            t = e["vtid"]
            if e["ev"].endswith("begin"):
                check(t not in open_, "%s_begin on thread %s while one is open" % (fam, t))
                open_[t] = e
            else:
                b = open_.pop(t, None)
                check(b is not None, "%s_end on thread %s without a begin" % (fam, t))
                keys = ("comm_id", "rank", "seq") + (("bytes", "dtype", "op") if fam == "reduce"
                                                     else ("site", "nreqs"))
                check(all(b[k] == e[k] for k in keys),
                      "%s_end differs from its begin: %s vs %s" % (fam, b, e))
        check(not open_, "%s_begin without end: %s" % (fam, list(open_.values())[:2]))


def check_coll_wait_ends(evs):
    """EVENTS.md, wait_begin and the note under send_*/recv_*: a collective wait is recorded
    only when it blocks, and the send_end/recv_end of the messages it waited for lie between its
    wait_begin and wait_end, on the same thread. Per thread, in trace order:
      - every site-coll wait holds 1..nreqs send_end/recv_end, all of its own (comm, rank,
        seq); nreqs >= 1. (Fewer than nreqs when it waits again on messages an earlier wait
        already completed, as the ring reduce_scatter's last wait does: one end per message.
        With ends after wait_end, the former order, every wait holds none.)
      - every collective send_end/recv_end lies inside a site-coll wait of its own (comm, rank,
        seq) on its thread, or no wait is open there (the wait that found its requests complete
        recorded no events); the runs have such waits (ends outside any wait).
    Returns (waits, ends inside waits, ends outside waits)."""
    open_ = {}  # vtid -> [wait_begin, ends seen inside]
    waits = inside = outside = 0
    for e in evs:  # trace order = time order
        t = e["vtid"]
        if e["ev"] in ("wait_begin", "wait_end") and e["site"] == SITE_COLL:
            if e["ev"] == "wait_begin":
                check(t not in open_, "wait_begin on thread %s while a wait is open" % t)
                check(e["nreqs"] >= 1, "collective wait on %d requests: %s" % (e["nreqs"], e))
                open_[t] = [e, 0]
                continue
            b, n = open_.pop(t, (None, 0))
            check(b is not None, "wait_end without wait_begin on thread %s: %s" % (t, e))
            check(1 <= n <= b["nreqs"],
                  "collective wait (comm %x rank %d seq %d, %d requests) on thread %s holds %d "
                  "send_end/recv_end between its wait_begin and wait_end, want 1..%d (a blocking "
                  "wait records the ends of the messages it completed inside it)"
                  % (b["comm_id"], b["rank"], b["seq"], b["nreqs"], t, n, b["nreqs"]))
            waits += 1
        elif e["ev"] in ("send_end", "recv_end"):
            w = open_.get(t)
            if w is None:
                outside += 1
                continue
            b = w[0]
            check((e["comm_id"], e["rank"], e["seq"]) == (b["comm_id"], b["rank"], b["seq"]),
                  "%s %s inside the wait of another collective %s" % (e["ev"], e, b))
            w[1] += 1
            inside += 1
        elif e["ev"] in ("wait_begin", "wait_end"):
            check(t not in open_, "%s of site %d inside a collective wait: %s"
                  % (e["ev"], e["site"], e))
    check(not open_, "collective waits without wait_end: %s" % [w[0] for w in open_.values()])
    check(waits > 0 and inside > 0, "no blocking collective wait recorded")
    # and some waits found their requests complete (a pipelined ring's later segments arrive
    # during the wait for an earlier one; eager sends complete when posted): their ends are
    # recorded without wait events. With every wait recorded, none would be outside.
    check(outside > 0, "all %d collective send/recv ends lie inside recorded waits: waits whose "
          "requests were complete on entry were recorded too" % inside)
    return waits, inside, outside


def check_matching(ev, size_of):
    """Every send matches one receive by (comm, seq, step, sender, receiver), equal bytes."""
    sends = collections.Counter()
    recvs = collections.Counter()
    for e in ev["send_end"]:
        check(0 <= e["peer"] < size_of[e["comm_id"]] and e["peer"] != e["rank"],
              "send to bad peer: %s" % e)
        check(e["link"] == e["rank"] * size_of[e["comm_id"]] + e["peer"], "bad link id: %s" % e)
        sends[(e["comm_id"], e["seq"], e["step"], e["rank"], e["peer"], e["bytes"])] += 1
    for e in ev["recv_end"]:
        check(e["link"] == e["peer"] * size_of[e["comm_id"]] + e["rank"], "bad link id: %s" % e)
        recvs[(e["comm_id"], e["seq"], e["step"], e["peer"], e["rank"], e["bytes"])] += 1
    check(sum(sends.values()) > 0, "no send_end events")
    check(sends == recvs, "sends and receives do not match: only sent %s; only received %s"
          % (list((sends - recvs).items())[:5], list((recvs - sends).items())[:5]))


def check_failed_run(evs, n):
    """The run named "err": its one collective ends UNSUPPORTED (-8) on every rank, and each
    rank records one error event naming the algorithm, after the coll_end."""
    cids = {e["comm_id"] for e in evs if e["ev"] == "comm_init" and e["name"] == "err"}
    check(len(cids) == 1, "comm_init of the failing run: %d communicators" % len(cids))
    cid = cids.pop()
    mine = [e for e in evs if e.get("comm_id") == cid]
    ends = [e for e in mine if e["ev"] == "coll_end" and e["coll"] == ALLGATHER]
    check(sorted(e["rank"] for e in ends) == list(range(n)) and
          all(e["status"] == -8 for e in ends), "coll_end of the failing collective: %s" % ends)
    errs = [e for e in mine if e["ev"] == "error"]
    check(sorted(e["rank"] for e in errs) == list(range(n)), "error events: %s" % errs)
    for e in errs:
        check(e["status"] == -8 and "recursive_doubling" in e["text"] and "allgather" in e["text"],
              "error event does not name the failure: %s" % e)
    seqs = {e["seq"] for e in ends}
    check(not [e for e in mine if e["ev"].startswith("send") and e["seq"] in seqs],
          "the failing collective sent messages")


# ---- C runs ------------------------------------------------------------------------------------

def case_c(a, n):
    work = os.path.join(a.work, "c%d" % n)
    os.makedirs(work, exist_ok=True)
    # bytes; multiples of 4 * n (f32, n blocks). The ring runs 64 KiB, 256 KiB, 1 MiB, 4 MiB:
    # from 1 MiB on its blocks travel as several segments (GLUCX_COLL_RING_SEG_BYTES, 256 KiB)
    small, big = 64 * 1024, 4 * 1024 * 1024
    bench = [a.bench, "--ranks", str(n), "-n", "2", "-w", "1", "-T", "%d" % scaled(20000)]
    script = " && ".join([
        " ".join(bench + ["--name", "ar", "--coll", "allreduce", "--algo", "ring",
                          "-b", str(small), "-e", str(big), "-f", "4"]),
        " ".join(bench + ["--name", "ag", "--coll", "allgather", "-b", str(small),
                          "-e", str(big), "-f", str(big // small)]),
        # the standalone ring reduce_scatter waits for a step's sends mid-way, then for all
        # sends again: still one send_end per send (check_pairs)
        " ".join(bench + ["--name", "rs", "--coll", "reduce_scatter", "--algo", "ring",
                          "-b", str(small), "-e", str(big), "-f", str(big // small)]),
    ])
    # and one that fails on every rank: recursive doubling allgather needs a power-of-two size
    script += " && { %s >/dev/null 2>&1; test $? -ne 0; }" % " ".join(
        [a.bench, "--ranks", "3", "-n", "1", "-w", "0", "--name", "err", "--coll", "allgather",
         "--algo", "recursive_doubling", "-b", "1K", "-e", "1K"])
    d = os.path.join(work, "trace")
    record(a, d, ["/bin/sh", "-c", script])
    evs = read_events(d)
    check_failed_run(evs, 3)
    err_comm = {e["comm_id"] for e in evs if e["ev"] == "comm_init" and e["name"] == "err"}
    evs = [e for e in evs if e.get("comm_id") not in err_comm]
    ev = by_name(evs)

    for kind in ("comm_init", "link", "phys_link", "route", "select_map", "coll_begin", "coll_end", "sched_decision",
                 "send_begin", "send_end", "recv_begin", "recv_end", "reduce_begin",
                 "reduce_end", "wait_begin", "wait_end"):
        check(ev[kind], "no %s event" % kind)
    check(not ev["error"], "error events in runs that succeeded: %s" % ev["error"][:3])

    # communicators: one comm_init per rank, n-1 links per rank, one select_map per collective
    comms = collections.defaultdict(list)
    for e in ev["comm_init"]:
        comms[e["comm_id"]].append(e)
    names = sorted(v[0]["name"] for v in comms.values())
    check(names == ["ag", "ar", "rs"], "communicators %s, expected ag, ar and rs" % names)
    size_of = {}
    for cid, inits in comms.items():
        check(sorted(e["rank"] for e in inits) == list(range(n)) and
              all(e["size"] == n for e in inits), "comm_init of %x: %s" % (cid, inits))
        size_of[cid] = n
        links = sorted((e["src"], e["dst"]) for e in ev["link"] if e["comm_id"] == cid)
        want = sorted((s, t) for s in range(n) for t in range(n) if s != t)
        check(links == want, "links of %x: %s, want %s" % (cid, links, want))
        for e in ev["link"]:
            if e["comm_id"] == cid:
                check(e["rank"] == e["src"] and e["link_id"] == e["src"] * n + e["dst"] and
                      e["bandwidth_Bps"] > 0, "bad link event %s" % e)
        check_physical(ev, cid, n)
        maps = [e for e in ev["select_map"] if e["comm_id"] == cid]
        check(len(maps) == n * COLL_COUNT, "%d select_map events for %x" % (len(maps), cid))
        for m in maps:
            check(len(m["lo"]) >= 1 and m["lo"][0] == 0 and m["hi"][-1] == 2**64 - 1 and
                  all(m["hi"][i] == m["lo"][i + 1] for i in range(len(m["lo"]) - 1)),
                  "select_map ranges do not tile the sizes: %s" % m)
        first = min(e["ts"] for e in inits)
        check(all(e["ts"] >= first for e in evs if e.get("comm_id") == cid and
                  e["ev"] not in ("comm_init", "link", "phys_link", "route", "select_map")),
              "event before comm_init")

    check_pairs(ev)
    waits, ends_in, ends_out = check_coll_wait_ends(evs)
    ar_comm = [c for c, v in comms.items() if v[0]["name"] == "ar"][0]

    # collectives agree across ranks; one algorithm decision per collective, consistent
    colls = collections.defaultdict(dict)
    for e in ev["coll_begin"]:
        colls[(e["comm_id"], e["seq"])][e["rank"]] = e
    for k, per_rank in colls.items():
        check(sorted(per_rank) == list(range(n)), "collective %s not on every rank" % (k,))
        sig = {(e["coll"], e["bytes"], e["dtype"], e["op"], e["alg"]) for e in per_rank.values()}
        check(len(sig) == 1, "ranks disagree on collective %s: %s" % (k, sig))
    dec = collections.defaultdict(list)
    for e in ev["sched_decision"]:
        dec[(e["comm_id"], e["rank"], e["seq"])].append(e)
    for e in ev["coll_begin"]:
        k = (e["comm_id"], e["rank"], e["seq"])
        ds = [x for x in dec.get(k, []) if x["kind"] == 0]
        check(len(ds) == 1, "collective %s has %d algorithm decisions" % (k, len(ds)))
        x = ds[0]
        check(x["chosen"] == e["alg"] and x["chosen"] in x["alt_ids"],
              "decision %s does not name coll_begin's algorithm %d" % (x, e["alg"]))
        check(len(x["alt_ids"]) == len(x["alt_cost_ns"]) and
              x["alt_cost_ns"] == sorted(x["alt_cost_ns"]), "alternatives not by cost: %s" % x)
        check(x["reason"] in ("selection map", "GLUCX_TUNE", "override"), "reason %r" % x["reason"])
        if e["comm_id"] == ar_comm and e["coll"] == ALLREDUCE and e["bytes"] >= small:
            check(x["reason"] == "override" and e["alg"] == ALG["ring"],
                  "--algo ring collective %s: %s" % (k, x))
    check(len(dec) == len(ev["coll_begin"]), "sched_decision without a collective")
    # the predicted costs depend on (communicator, collective, size) only (libglucx reuses them
    # for a repeated collective): equal for equal keys, growing with the size
    by_size = collections.defaultdict(dict)
    begin_of = {(e["comm_id"], e["rank"], e["seq"]): e for e in ev["coll_begin"]}
    for k, ds in dec.items():
        b = begin_of.get(k)
        for x in ds:
            if b is None or x["kind"] != 0:
                continue
            costs = dict(zip(x["alt_ids"], x["alt_cost_ns"]))
            key = (b["comm_id"], b["rank"], b["coll"])
            old = by_size[key].setdefault(b["bytes"], costs)
            check(old == costs, "collective %s, %d bytes: predicted costs %s, earlier %s"
                  % (key, b["bytes"], costs, old))
    for key, sizes in by_size.items():
        ordered = [sizes[b] for b in sorted(sizes)]
        for lo, hi in zip(ordered, ordered[1:]):
            for alg in set(lo) & set(hi):
                check(hi[alg] >= lo[alg], "collective %s: algorithm %d predicted cheaper for "
                      "more bytes: %s" % (key, alg, ordered))
        if len(ordered) > 1:
            check(any(c != ordered[0] for c in ordered[1:]),
                  "collective %s: the same predicted costs for every size %s" % (key, sorted(sizes)))

    # transfers of collectives carry their collective's seq and the tag layout
    for e in ev["send_begin"] + ev["recv_begin"]:
        check(e["tag"] >> 63 == 1 and (e["tag"] >> 32) & 0xFFFF == e["seq"] & 0xFFFF and
              (e["tag"] >> 16) & 0xFFFF == e["step"], "tag/seq/step disagree: %s" % e)
        check((e["comm_id"], e["seq"]) in colls, "transfer outside any collective: %s" % e)
    check_matching(ev, size_of)

    # volume: bytes each rank sends per collective
    sent = collections.Counter()
    for e in ev["send_end"]:
        if e["step"] < STEP_CONFIRM:
            sent[(e["comm_id"], e["rank"], e["seq"])] += e["bytes"]
    checked = 0
    for e in ev["coll_end"]:
        k = (e["comm_id"], e["rank"], e["seq"])
        b = e["bytes"]
        if b == 0 or b % (4 * n):
            continue
        if e["coll"] == ALLREDUCE and e["alg"] == ALG["ring"]:
            want = 2 * (n - 1) * b // n  # reduce-scatter + allgather of n blocks
        elif e["coll"] == ALLGATHER and e["alg"] in (ALG["ring"], ALG["bruck"], ALG["linear"],
                                                      ALG["recursive_doubling"]):
            want = (n - 1) * b // n  # every other rank's block once
        else:
            continue
        check(sent[k] == want, "collective %s (%s, alg %d, %d bytes) sent %d bytes, want %d"
              % (k, "allreduce" if e["coll"] == ALLREDUCE else "allgather", e["alg"], b,
                 sent[k], want))
        checked += 1
    check(checked >= 2 * n, "only %d collectives had a known volume" % checked)
    print("c%d: %d events, %d collectives, %d volumes checked; %d blocking collective waits "
          "with %d send/recv ends inside, %d ends of waits that did not block"
          % (n, len(evs), len(colls), checked, waits, ends_in, ends_out))


# ---- PyTorch over the Gloo shim ----------------------------------------------------------------

TORCH_JOB = textwrap.dedent("""\
    import datetime, os, sys
    import torch, torch.distributed as dist
    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=PG_TIMEOUT_S))
    t = torch.full((N_AR,), float(rank + 1))
    dist.all_reduce(t)
    assert float(t[0]) == 3.0, float(t[0])
    p = torch.arange(N_P2P, dtype=torch.float32)
    if rank == 0:
        dist.send(p, 1, tag=TAG)
    else:
        q = torch.zeros(N_P2P)
        dist.recv(q, 0, tag=TAG)
        assert torch.equal(p, q)
    dist.barrier()
    dist.destroy_process_group()
    """)


def case_torch(a):
    if not a.venv_python or not os.path.exists(a.venv_python):
        print("skipped: no venv interpreter (%s): run `make venv`" % a.venv_python)
        return SKIP
    work = os.path.join(a.work, "torch")
    os.makedirs(work, exist_ok=True)
    n_ar, n_p2p, tag = 1031, 777, 5
    job = os.path.join(work, "job.py")
    with open(job, "w") as f:
        f.write(TORCH_JOB.replace("N_AR", str(n_ar)).replace("N_P2P", str(n_p2p))
                .replace("TAG", str(tag)).replace("PG_TIMEOUT_S", "%g" % scaled(30)))
    port = free_port()
    preload = ":".join(os.path.join(a.torch_libs, x) for x in ("libglucx.so.0",
                                                              "libglucx_gloo.so.0"))
    # two ranks started by one shell, each waited for by pid; their statuses go to stderr
    script = ("RANK=0 {py} {job} & p0=$!; RANK=1 {py} {job} & p1=$!; wait $p0; s0=$?; "
              "wait $p1; s1=$?; echo \"rank exit statuses: $s0 $s1\" >&2; "
              "test $s0 -eq 0 -a $s1 -eq 0".format(py=a.venv_python, job=job))
    env = {"WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
           "GLOO_DEVICE_TRANSPORT": "UCX", "GLOO_SOCKET_IFNAME": "lo", "LD_PRELOAD": preload}
    d = os.path.join(work, "trace")
    record(a, d, ["/bin/bash", "-c", script], env=env)
    evs = read_events(d)
    ev = by_name(evs)
    inits = ev["comm_init"]
    check(sorted(e["rank"] for e in inits) == [0, 1] and all(e["name"] == "gloo" for e in inits)
          and len({e["comm_id"] for e in inits}) == 1, "comm_init events: %s" % inits)
    cid = inits[0]["comm_id"]
    for kind in ("send_begin", "send_end", "recv_begin", "recv_end"):
        check({e["rank"] for e in ev[kind] if e["comm_id"] == cid} == {0, 1},
              "%s events from the Gloo shim missing on some rank" % kind)
    check(not ev["coll_begin"], "collective events on the Gloo path (Gloo runs its own)")
    check_pairs(ev)
    for e in ev["send_begin"] + ev["recv_begin"]:
        want = (e["tag"] >> 8) & 0xFFFFFFFF if e["tag"] & SLOT_BIT else e["tag"] & 0xFFFFFFFF
        check(e["seq"] == want, "seq %d is not the slot/tag bits of tag %#x" % (e["seq"], e["tag"]))
    check_matching(ev, {cid: 2})
    # the all_reduce moves its bytes in Gloo slots; the user send is tag `tag`, n_p2p floats
    slot_bytes = sum(e["bytes"] for e in ev["send_end"] if e["tag"] & SLOT_BIT)
    check(slot_bytes >= n_ar * 4 // 2, "all_reduce of %d floats sent only %d bytes in Gloo slots"
          % (n_ar, slot_bytes))
    p2p = [e for e in ev["send_end"] if e["tag"] == tag]
    check(len(p2p) == 1 and p2p[0]["rank"] == 0 and p2p[0]["peer"] == 1 and
          p2p[0]["bytes"] == n_p2p * 4 and p2p[0]["seq"] == tag and p2p[0]["step"] == 0,
          "the user send (tag %d, %d bytes): %s" % (tag, n_p2p * 4, p2p))
    # FIFO positions: per (sender, receiver, tag) the steps are 0, 1, ... on each side
    fifo = collections.defaultdict(list)
    for e in ev["send_end"]:
        fifo[(e["rank"], e["peer"], e["tag"])].append(e["step"])
    for k, steps in fifo.items():
        check(sorted(steps) == list(range(len(steps))), "steps of %s: %s" % (k, steps))
    print("torch: %d events, %d messages" % (len(evs), len(ev["send_end"])))
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--glucx-trace", required=True)
    ap.add_argument("--bench", required=True)
    ap.add_argument("--venv-python")
    ap.add_argument("--torch-libs")
    ap.add_argument("--work", required=True)
    ap.add_argument("case", choices=["c2", "c4", "torch"])
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    try:
        if a.case == "torch":
            rc = case_torch(a)
        else:
            case_c(a, int(a.case[1]))
            rc = 0
    except (Failure, PidListError) as e:
        print("FAIL:", e)
        return 1
    if rc == 0:
        print("PASS")
    return rc


if __name__ == "__main__":
    sys.exit(main())
