#!/usr/bin/python3
"""Trace round-trip tests: glucx-trace record around tests/trace/emit.c, read back with
Babeltrace 2 (the bt2 Python bindings and the babeltrace2 CLI).

    test_trace.py --bin-dir DIR --source-dir DIR --work DIR CASE

CASE: record, levels, discard, rotate, snapshot, off, errors, signal, bench, waits, putwaits, forklock,
concurrent, strings, foreign and names (these four need --analyze; concurrent also --bench).
Every expected value is computed here from the formulas that emit.c documents, not read from the
trace. Exit 0 = pass.
"""
import argparse
import fcntl
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import termios
import time

import bt2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from timescale import scaled  # noqa: E402 - GLUCX_TEST_TIME_SCALE (tests/README.md)
from tracepids import PidListError, own, pid_lines, split, trace_pids  # noqa: E402

TIMEOUT = scaled(60)  # s, for any one command; ctest's timeout is the outer bound


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def run(cmd, env=None, timeout=TIMEOUT):
    e = dict(os.environ)
    e.pop("LD_PRELOAD", None)
    e.pop("GLUCX_TRACE", None)
    if env:
        e.update(env)
    p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def kv(text):
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([a-z0-9_]+)=(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def fresh_dir(path):
    shutil.rmtree(path, ignore_errors=True)
    return path


# ---- reading traces --------------------------------------------------------------------------

def value(field):
    """A bt2 field as plain Python: ints, floats, str, lists; enums as (int, labels)."""
    if isinstance(field, bt2._EnumerationFieldConst):
        return (int(field), tuple(sorted(field.labels)))
    if isinstance(field, bt2._IntegerFieldConst):
        return int(field)
    if isinstance(field, bt2._RealFieldConst):
        return float(field)
    if isinstance(field, bt2._StringFieldConst):
        # by its length: Babeltrace 2.0 may leave an earlier event's value in the buffer of an
        # empty string field (EVENTS.md, "Reading strings")
        return str(field) if len(field) > 0 else ""
    if isinstance(field, bt2._ArrayFieldConst):
        return [value(f) for f in field]
    raise Failure("unexpected field type %s" % type(field).__name__)


def read_trace(path, pids=None):
    """(events, discarded): events as dicts with name, ts (ns from the clock's origin), fields
    (ordered, no _length fields), vpid, vtid, field classes by name. With pids (a set of vpids),
    the events of other processes have only name, ts, vpid and vtid: another job traced at the
    same time may have many, and reading their fields is what takes the time."""
    events, discarded = [], 0
    for msg in bt2.TraceCollectionMessageIterator(path):
        if type(msg) is bt2._DiscardedEventsMessageConst:
            discarded += msg.count if msg.count is not None else 0
        if type(msg) is not bt2._EventMessageConst:
            continue
        ev = msg.event
        ctx = ev.common_context_field
        head = {
            "name": ev.name,
            "ts": msg.default_clock_snapshot.ns_from_origin,
            "vpid": int(ctx["vpid"]) if ctx is not None and "vpid" in ctx else None,
            "vtid": int(ctx["vtid"]) if ctx is not None and "vtid" in ctx else None,
        }
        if pids is not None and head["vpid"] not in pids:
            events.append(head)
            continue
        head["fields"] = [(k, value(v)) for k, v in ev.payload_field.items()
                          if not k.startswith("_")]
        head["classes"] = {k: v.cls for k, v in ev.payload_field.items()}
        head["emf_uri"] = ev.cls.emf_uri
        events.append(head)
    return events, discarded


def own_events(trace_dir, events):
    """The events of the processes trace_dir/glucx-pids lists: those of the recorded command, not
    of another job traced at the same time (LTTng records both in each session)."""
    return own(events, trace_pids(trace_dir))


def babeltrace2_cli(path):
    """Run the babeltrace2 CLI: (event lines, discarded events from its warnings)."""
    rc, out, err = run(["babeltrace2", path])
    check(rc == 0, "babeltrace2 %s failed (%d): %s" % (path, rc, err[-2000:]))
    lines = [l for l in out.splitlines() if " glucx:" in l]
    discarded = sum(int(m) for m in re.findall(r"Tracer discarded (\d+) events?\b", err))
    return lines, discarded


# ---- independent expectations ------------------------------------------------------------------

M64 = (1 << 64) - 1


def comm_id(name, records):
    """EVENTS.md, "Communicator id"."""
    h = 0xcbf29ce484222325

    def feed(data):
        nonlocal h
        for b in data:
            h = ((h ^ b) * 0x100000001b3) & M64

    feed(name.encode())
    feed(b"\0")
    feed(len(records).to_bytes(4, "little"))
    for rec in records:
        feed(len(rec).to_bytes(4, "little"))
        feed(rec)
    h = ((h ^ (h >> 30)) * 0xbf58476d1ce4e5b9) & M64
    h = ((h ^ (h >> 27)) * 0x94d049bb133111eb) & M64
    h ^= h >> 31
    return h if h != 0 else 1


def parse_xmap(path, macro):
    """Entries X(...) of an X-macro list in a C header, as lists of argument strings."""
    lines = open(path).read().splitlines()
    starts = [i for i, l in enumerate(lines) if l.startswith("#define %s(X)" % macro)]
    check(len(starts) == 1, "%s not found in %s" % (macro, path))
    entries = []
    i = starts[0]
    while lines[i].rstrip().endswith("\\") and i + 1 < len(lines):
        i += 1
        e = re.search(r"\bX\((.*)\)", lines[i])
        if e:
            entries.append([x.strip() for x in e.group(1).split(",", 2)])
    check(entries, "no entries in %s" % macro)
    return entries


class Enums:
    """Enumerations from the source headers (X-macro lists): label -> value."""

    def __init__(self, src):
        inc = os.path.join(src, "plugin/include/glucx")
        ids = os.path.join(src, "trace/include/glucx_tp/ids.h")
        self.coll = {e[1]: i for i, e in enumerate(parse_xmap(os.path.join(inc, "glucx.h"),
                                                              "GLUCX_COLL_MAP"))}
        self.dtype = {e[1]: i for i, e in enumerate(parse_xmap(os.path.join(inc, "types.h"),
                                                               "GLUCX_DTYPE_MAP"))}
        self.op = {e[1]: i for i, e in enumerate(parse_xmap(os.path.join(inc, "types.h"),
                                                            "GLUCX_OP_MAP"))}
        self.status = {e[0]: int(e[1]) for e in parse_xmap(os.path.join(inc, "status.h"),
                                                           "GLUCX_STATUS_MAP")}
        self.alg = {e[1]: int(e[2]) for e in parse_xmap(ids, "GLUCX_TP_ALG_MAP")}
        self.alg["none"] = -1
        self.kind = {e[1]: int(e[2]) for e in parse_xmap(ids, "GLUCX_TP_DECISION_MAP")}
        self.site = {e[1]: int(e[2]) for e in parse_xmap(ids, "GLUCX_TP_WAIT_MAP")}
        self.node = {e[1]: int(e[2]) for e in parse_xmap(ids, "GLUCX_TP_NODE_MAP")}

    def e(self, table, label):
        return (getattr(self, table)[label], (label,))


def expected_events(r, n, en, framework_comm):
    """Every event emit.c's emit_all(r, n) records, in order: (name, [(field, value)...])."""
    c = comm_id("glucx-trace-test", [("record-of-rank-%d" % i).encode() for i in range(n)])
    k = r + 1
    nxt, prv = (r + 1) % n, (r + n - 1) % n
    seq = 100 + r
    tag = (1 << 63) | (seq << 32) | (3 << 16) | 0xabc
    head = [("comm_id", c), ("rank", r)]
    xfer = lambda step, peer, link, t, b: head + [("seq", seq), ("step", step), ("peer", peer),
                                                  ("link", link), ("tag", t), ("bytes", b)]
    coll = lambda status: head + [
        ("seq", seq), ("coll", en.e("coll", "allgather")), ("bytes", 8192 * k),
        ("dtype", en.e("dtype", "f32")), ("op", en.e("op", "sum")), ("root", -1),
        ("alg", en.e("alg", "ring")), ("status", en.e("status", status))]
    reduce = head + [("seq", seq), ("bytes", 4096 * k), ("dtype", en.e("dtype", "bf16")),
                     ("op", en.e("op", "max"))]
    wait = lambda status: head + [("site", en.e("site", "coll")), ("seq", seq),
                                  ("req", 0xdeadbeef00 + r), ("nreqs", 2),
                                  ("status", en.e("status", status))]
    fc = c if framework_comm else 0
    fw = [("comm_id", fc), ("rank", r)]
    return [
        ("comm_init", head + [("size", n), ("package", r % 2), ("npackages", min(n, 2)),
                              ("name", "glucx-trace-test"), ("host", "host-%d" % r),
                              ("topo_digest", 0x1234567890abcdef ^ r)]),
        ("link", head + [("link_id", r * n + nxt), ("src", r), ("dst", nxt), ("dim", 1),
                         ("bandwidth_Bps", 1.25e9 * k), ("latency_ns", 1500.5 + r),
                         ("transport", "posix")]),
        ("phys_link", head + [("phys_id", 7 + r), ("dim", 2), ("a_kind", en.e("node", "package")),
                              ("a", r), ("b_kind", en.e("node", "switch")), ("b", 3),
                              ("bandwidth_Bps", 2.5e9 * k), ("latency_ns", 250.25 + r)]),
        ("route", head + [("link", r * n + nxt), ("dst", nxt), ("phys_ids", [20 + r, 7 + r, 30]),
                          ("dirs", [1, 0, 1])]),
        ("select_map", head + [("coll", en.e("coll", "allreduce")),
                               ("lo", [0, 4096, 1 << 20]), ("hi", [4096, 1 << 20, M64]),
                               ("alg", [en.alg["recursive_doubling"], en.alg["rabenseifner"],
                                        en.alg["ring"]]),
                               ("forced", [0, 1, 0])]),
        ("coll_begin", coll("INPROGRESS")),
        ("sched_decision", head + [("seq", seq), ("kind", en.e("kind", "algorithm")),
                                   ("chosen", en.alg["ring"]),
                                   ("alt_ids", [en.alg["ring"], en.alg["recursive_doubling"],
                                                en.alg["bruck"]]),
                                   ("alt_cost_ns", [1000 + r, 25000, 1 << 40]),
                                   ("reason", "selection map")]),
        ("send_begin", xfer(3, nxt, r * n + nxt, tag, 4096 * k)),
        ("recv_begin", xfer(4, -1, -1, tag + (1 << 16), 65536)),
        ("send_end", xfer(3, nxt, r * n + nxt, tag, 4096 * k)),
        ("recv_end", xfer(4, prv, prv * n + r, tag + (1 << 16), 4096 * (prv + 1))),
        ("reduce_begin", reduce),
        ("reduce_end", reduce),
        ("wait_begin", wait("INPROGRESS")),
        ("wait_end", wait("OK")),
        ("coll_end", coll("OK" if r == 0 else "ERR_TIMEOUT")),
        ("error", head + [("status", en.e("status", "ERR_PEER_FAILED")),
                          ("text", "rank %d: peer %d failed during allgather" % (r, nxt))]),
        ("iteration_begin", fw + [("iteration", 5 + r)]),
        ("compute_begin", fw + [("phase", "backward"), ("id", 2)]),
        ("bucket_ready", fw + [("bucket", 3), ("bytes", (1 << 20) * k)]),
        ("compute_end", fw + [("phase", "backward"), ("id", 2)]),
        ("iteration_end", fw + [("iteration", 5 + r)]),
        ("iteration_begin", [("comm_id", 0), ("rank", -1), ("iteration", 999)]),
    ]


def catalog_from_list(glucx_trace):
    rc, out, err = run([glucx_trace, "list"])
    check(rc == 0, "glucx-trace list failed: %s" % err)
    cat = {}
    for line in out.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        parts = line.split()
        cat[parts[0]] = (parts[1], [f.rstrip("[]") for f in parts[2:]])
    return cat


def catalog_from_events_md(path):
    """{event: [fields]} from the '### `name`' sections of EVENTS.md."""
    cat, current = {}, []
    in_events = False
    for line in open(path):
        if line.startswith("## "):
            in_events = line.strip() == "## Events"
            current = []
            continue
        if not in_events:
            continue
        if line.startswith("### "):
            current = re.findall(r"`([a-z_]+)`", line)
            for name in current:
                cat[name] = []
            continue
        m = re.match(r"^\| `([a-zA-Z_]+)` \|", line)
        if m and current:
            for name in current:
                cat[name].append(m.group(1))
    return cat


def format_version(source_dir):
    """The trace format version EVENTS.md defines ("Format version": "... is **N**")."""
    text = open(os.path.join(source_dir, "trace/EVENTS.md")).read()
    m = re.search(r"^## Format version\n(?:.*\n)*?.*current version is \*\*(\d+)\*\*", text,
                  re.M)
    check(m is not None, "EVENTS.md defines no current format version")
    return int(m.group(1))


def compare_fields(got, want, where):
    check([k for k, _ in got] == [k for k, _ in want],
          "%s: fields %s, expected %s" % (where, [k for k, _ in got], [k for k, _ in want]))
    for (k, g), (_, w) in zip(got, want):
        if isinstance(w, float):
            check(isinstance(g, float) and abs(g - w) <= 1e-9 * abs(w),
                  "%s.%s = %r, expected %r" % (where, k, g, w))
        else:
            check(g == w, "%s.%s = %r, expected %r" % (where, k, g, w))


def record(a, out_dir, command, extra=(), env=None):
    rc, out, err = run([a.glucx_trace, "record", "-o", out_dir, *extra, "--", *command], env=env)
    return rc, out, err


# ---- cases -------------------------------------------------------------------------------------

def check_emit_record(events, n, en, framework_comm, info, who):
    """The events of one `emit record n` run (its stdout's key=value lines in info) are exactly
    the sequence emit_all() records, per process (vpid), rank r in the process emit reported
    for it; returns the event names seen."""
    by_pid = {}
    for ev in events:
        check(ev["vpid"] is not None and ev["vtid"] is not None,
              "%s: %s has no vpid/vtid context" % (who, ev["name"]))
        by_pid.setdefault(ev["vpid"], []).append(ev)
    check(len(by_pid) == n, "%s: events from %d processes, expected %d (forked ranks traced?): "
          "%s" % (who, len(by_pid), n, sorted(by_pid)))
    check(int(info["pid"]) in by_pid, "%s: no events from the parent process %s"
          % (who, info["pid"]))
    seen = set()
    for pid, evs in by_pid.items():
        r = dict(evs[0]["fields"])["rank"]
        want = expected_events(r, n, en, framework_comm)
        check(len(evs) == len(want), "%s: pid %d (rank %d): %d events, expected %d: %s"
              % (who, pid, r, len(evs), len(want), [e["name"] for e in evs]))
        for ev, (name, fields) in zip(evs, want):
            check(ev["name"] == "glucx:" + name, "%s: pid %d: %s where %s was expected"
                  % (who, pid, ev["name"], name))
            check(ev["vtid"] == pid, "%s: %s: vtid %d in a single-threaded process %d"
                  % (who, name, ev["vtid"], pid))
            compare_fields(ev["fields"], fields, "%s rank %d %s" % (who, r, name))
            seen.add(name)
        check(pid == int(info["pid"] if r == 0 else info.get("rank%d_pid" % r, -1)),
              "%s: rank %d's events come from pid %d, emit ran it as %s" % (
                  who, r, pid, info["pid"] if r == 0 else info.get("rank%d_pid" % r)))
    return seen


def case_record(a):
    n = 2
    d = fresh_dir(os.path.join(a.work, "record"))
    rc, out, err = record(a, d, [a.emit, "record", str(n)])
    check(rc == 0, "record exited %d: %s" % (rc, err))
    info = kv(out)
    check(info.get("enabled") == "1" and info.get("provider") == "1",
          "tracing not active in the traced program: %s" % out)
    check("0 events discarded" in err, "no loss report in: %s" % err)
    framework_comm = info.get("framework_comm_id") == "core"

    events, discarded = read_trace(d, trace_pids(d))
    check(discarded == 0, "%d events discarded in a small trace" % discarded)
    events = own_events(d, events)  # not those of a job traced at the same time
    en = Enums(a.source_dir)

    seen = check_emit_record(events, n, en, framework_comm, info, "record")

    # the catalog: glucx-trace list, EVENTS.md and the trace agree
    listed = catalog_from_list(a.glucx_trace)
    documented = catalog_from_events_md(os.path.join(a.source_dir, "trace/EVENTS.md"))
    version = format_version(a.source_dir)
    check(set(listed) == seen, "glucx-trace list %s vs recorded %s" % (sorted(listed), sorted(seen)))
    check(set(documented) == seen, "EVENTS.md %s vs recorded %s" % (sorted(documented), sorted(seen)))
    for ev in events:
        name = ev["name"].split(":")[1]
        names = [k for k, _ in ev["fields"]]
        check(listed[name][1] == names, "list fields of %s: %s vs trace %s"
              % (name, listed[name][1], names))
        check(documented[name] == names, "EVENTS.md fields of %s: %s vs trace %s"
              % (name, documented[name], names))
        # every class carries the trace format version in the metadata (EVENTS.md)
        check(ev["emf_uri"] == "glucx-trace-format:%d" % version,
              "%s: model.emf.uri %r, expected the format version %d of EVENTS.md"
              % (name, ev["emf_uri"], version))

    # every enumeration's mappings in the metadata = the source lists
    tables = {"coll": "coll", "dtype": "dtype", "op": "op", "status": "status", "alg": "alg",
              "kind": "kind", "site": "site", "a_kind": "node", "b_kind": "node"}
    checked = set()
    for ev in events:
        for fname, cls in ev["classes"].items():
            if fname in tables and isinstance(cls, bt2._EnumerationFieldClassConst):
                got = {label: [(rg.lower, rg.upper) for rg in m.ranges]
                       for label, m in cls.items()}
                want = {label: [(v, v)] for label, v in getattr(en, tables[fname]).items()}
                check(got == want, "enum %s of %s: %s, expected %s" % (fname, ev["name"], got, want))
                checked.add(fname)
    check(checked == set(tables), "enumerations not seen: %s" % (set(tables) - checked))

    # the babeltrace2 CLI reads the same events (those of this trace's processes: another job
    # traced at the same time is in the trace too)
    lines, cli_discarded = babeltrace2_cli(d)
    lines = own(lines, trace_pids(d), lambda l: int(re.search(r"\bvpid = (\d+)", l).group(1)))
    check(len(lines) == len(events) and cli_discarded == 0,
          "babeltrace2 CLI: %d events, %d discarded; bt2: %d" % (len(lines), cli_discarded,
                                                                  len(events)))
    print("record: %d events from %d processes, all fields as emitted" % (len(events), n))


def names_in(path):
    """The names of the events the recorded command's processes emitted into trace dir path."""
    events, _ = read_trace(path, trace_pids(path))
    return {e["name"].split(":")[1] for e in own_events(path, events)}


def case_levels(a):
    listed = catalog_from_list(a.glucx_trace)
    coll = {name for name, (lvl, _) in listed.items() if lvl == "coll"}
    check(coll and coll != set(listed), "level coll must be a proper subset: %s" % coll)
    d = fresh_dir(os.path.join(a.work, "level-coll"))
    rc, out, err = record(a, d, [a.emit, "record", "2"], ["--level", "coll"])
    check(rc == 0, "record --level coll exited %d: %s" % (rc, err))
    got = names_in(d)
    check(got == coll, "--level coll recorded %s, expected %s" % (sorted(got), sorted(coll)))

    d = fresh_dir(os.path.join(a.work, "events"))
    rc, out, err = record(a, d, [a.emit, "record", "1"],
                          ["--events", "send_begin,glucx:error,bucket_ready"])
    check(rc == 0, "record --events exited %d: %s" % (rc, err))
    got = names_in(d)
    check(got == {"send_begin", "error", "bucket_ready"}, "--events recorded %s" % sorted(got))
    print("levels: coll = %d events, --events exact" % len(coll))


def case_discard(a):
    n, count = 2, 100000
    d = fresh_dir(os.path.join(a.work, "discard"))
    rc, out, err = record(a, d, [a.emit, "burst", str(n), str(count)], ["--buffer-size", "8K"])
    check(rc == 0, "record with tiny buffers exited %d: %s" % (rc, err))
    m = re.search(r"(\d+) events discarded", err)
    check(m is not None, "no discarded-events report: %s" % err)
    reported = int(m.group(1))
    check(reported > 0, "tiny buffers but no discarded event reported: %s" % err)
    pids = trace_pids(d)
    events, discarded = read_trace(d, pids)
    lines, cli_discarded = babeltrace2_cli(d)
    check(discarded == reported and cli_discarded == reported,
          "discarded: glucx-trace %d, bt2 %d, babeltrace2 CLI %d" % (reported, discarded,
                                                                      cli_discarded))
    check(len(lines) == len(events), "CLI %d events vs bt2 %d" % (len(lines), len(events)))
    mine, foreign = split(events, pids)
    lost = burst_losses(mine, burst_procs(kv(out), n), count)
    check_losses("discard", lost, reported, foreign, err)
    print("discard: %d of %d events discarded and reported" % (lost, n * count))


def check_losses(case, lost, reported, foreign, err):
    """The command lost `lost` events (counted from its own); glucx-trace reported `reported`
    discarded. Equal, unless another traced job ran at the same time (its events in the trace,
    `foreign`, or glucx-trace's note about other sessions): LTTng counts discarded events per
    buffer, and the other job's processes share this session's per-user buffers, so its losses
    are in the count too and cannot be told apart."""
    if not foreign and "other glucx-trace session" not in err:
        check(lost == reported, "%s: %d of the command's events are missing from the trace, "
              "glucx-trace reported %d discarded" % (case, lost, reported))
        return
    check(lost <= reported, "%s: %d of the command's events are missing from the trace, only %d "
          "reported discarded" % (case, lost, reported))
    print("%s: another traced job ran at the same time (%d of its events recorded); %d of the %d "
          "discarded events were not the command's" % (case, len(foreign), reported - lost,
                                                       reported))


def burst_procs(info, n):
    """{pid: rank} of an `emit burst n ...` run, from its key=value output."""
    procs = {int(info["pid"]): 0}
    for r in range(1, n):
        check("rank%d_pid" % r in info, "emit did not report rank %d's pid: %s" % (r, info))
        procs[int(info["rank%d_pid" % r])] = r
    return procs


def burst_losses(events, procs, count):
    """How many of the events `emit burst` emitted in the processes procs ({pid: rank}; each
    emitted send_begin of its rank with seq = tag = 0..count-1) are not among the given events;
    fails unless every event is one of these, each once. (A process may have lost all.)"""
    by_pid = {}
    for ev in events:
        by_pid.setdefault(ev["vpid"], []).append(ev)
    check(set(by_pid) <= set(procs), "events of processes %s, emit burst ran %s" % (
        sorted(by_pid), procs))
    for pid, evs in by_pid.items():
        r = procs[pid]
        tags = []
        for ev in evs:
            f = dict(ev["fields"])
            check(ev["name"] == "glucx:send_begin" and f["rank"] == r and f["seq"] == f["tag"],
                  "pid %d: %s %s is not one of emit burst's events of rank %d"
                  % (pid, ev["name"], f, r))
            tags.append(f["tag"])
        check(all(0 <= t < count for t in tags) and len(set(tags)) == len(tags),
              "pid %d (rank %d): tags repeated or outside 0..%d: %s..." % (pid, r, count - 1,
                                                                           sorted(tags)[:8]))
    return len(procs) * count - len(events)


def case_rotate(a):
    """--rotate-size: chunks archived under DIR/archives/, read back as one trace, nothing lost
    at chunk boundaries (recorded + discarded == emitted)."""
    rounds, count = 6, 20000
    d = fresh_dir(os.path.join(a.work, "rotate"))
    out_dir = fresh_dir(os.path.join(a.work, "rotate-out"))
    os.makedirs(out_dir)
    loop = 'for i in $(seq %d); do "$0" burst 1 %d >"$1/$i" || exit 1; sleep %g; done' % (
        rounds, count, scaled(0.7))  # the pause lets LTTng's size check (about 1/s) run
    rc, out, err = record(a, d, ["sh", "-c", loop, a.emit, out_dir],
                          ["--rotate-size", "1M", "--buffer-size", "256K"])
    check(rc == 0, "record --rotate-size exited %d: %s" % (rc, err))
    archives = os.path.join(d, "archives")
    chunks = sorted(os.listdir(archives)) if os.path.isdir(archives) else []
    check(len(chunks) >= 2, "%d rotation chunks under %s (expected >= 2): %s" % (
        len(chunks), archives, err))
    # the process list stays at the top of DIR, outside the chunks
    check(os.path.isfile(os.path.join(d, "glucx-pids")) and
          not any("glucx-pids" in f for _, _, fs in os.walk(archives) for f in fs),
          "glucx-pids not at the top of %s only" % d)
    pids = trace_pids(d)
    per_chunk = [len(own(read_trace(os.path.join(archives, c), pids)[0], pids)) for c in chunks]
    # (the chunk archived at the end may be empty: the command slept after its last burst)
    check(sum(1 for n in per_chunk if n > 0) >= 2, "events in fewer than 2 chunks: %s" % per_chunk)
    events, discarded = read_trace(d, pids)
    events, foreign = split(events, pids)
    check(len(events) == sum(per_chunk), "the whole directory reads %d events, the chunks %d"
          % (len(events), sum(per_chunk)))
    m = re.search(r"(\d+) events discarded", err)
    reported = int(m.group(1)) if m else 0
    check(discarded == reported, "discarded: glucx-trace %d, bt2 %d" % (reported, discarded))
    procs = {}  # each round: one process, rank 0
    for i in range(1, rounds + 1):
        with open(os.path.join(out_dir, str(i))) as f:
            procs.update(burst_procs(kv(f.read()), 1))
    lost = burst_losses(events, procs, count)
    check_losses("rotate", lost, reported, foreign, err)
    print("rotate: %d chunks (%s events), %d discarded, all %d accounted for"
          % (len(chunks), per_chunk, discarded, rounds * count))


def case_snapshot(a):
    """--snapshot: SIGUSR1 writes a snapshot holding the latest events; another at the end.
    The buffers (1 MiB per CPU) hold far fewer than the first burst, and many more than another
    traced job (whose events share them) writes in the moments before a snapshot."""
    first, second = 200000, 100
    d = fresh_dir(os.path.join(a.work, "snapshot"))
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    cmd = [a.glucx_trace, "record", "-o", d, "--snapshot", "--buffer-size", "1M", "--", "sh",
           "-c", '"$0" burst 1 %d >/dev/null && echo emitted && read x && "$0" burst 1 %d'
           ' >/dev/null' % (first, second), a.emit]
    p = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()  # bounded by the command: it prints once, then waits
        check(line.strip() == "emitted", "the traced command did not start: %r" % line)
        p.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + scaled(30)
        seen = ""
        while time.monotonic() < deadline and "snapshot 1 written" not in seen:
            r, _, _ = select.select([p.stderr], [], [], 1.0)
            if r:
                chunk = os.read(p.stderr.fileno(), 4096).decode()
                if chunk == "":
                    break
                seen += chunk
        check("snapshot 1 written" in seen, "no snapshot after SIGUSR1: %s" % seen)
        out, err = p.communicate(input="go\n", timeout=scaled(30))
        err = seen + err
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    check(p.returncode == 0, "record --snapshot exited %d: %s" % (p.returncode, err))
    snaps = sorted(x for x in os.listdir(d) if x.startswith("snapshot-"))
    check(len(snaps) == 2, "expected 2 snapshots (SIGUSR1, end), found %s" % snaps)
    tags = []
    pids = trace_pids(d)  # DIR/glucx-pids is at the top, beside the snapshots
    for s in snaps:
        events = own(read_trace(os.path.join(d, s), pids)[0], pids)
        tags.append([dict(e["fields"])["tag"] for e in events if e["name"] == "glucx:send_begin"])
    # the first snapshot: the latest events of the first burst, not all of it. The ring buffers
    # are per CPU, so if the process moved between CPUs each buffer holds the latest events it
    # saw: in time order the tags rise, and the burst's last event is there.
    t1 = tags[0]
    check(0 < len(t1) < first, "snapshot 1 holds %d of %d events" % (len(t1), first))
    check(t1 == sorted(set(t1)) and t1[-1] == first - 1,
          "snapshot 1 is not the latest events of the burst: tags %s...%s" % (t1[:3], t1[-3:]))
    # the last snapshot ends with the whole second burst
    t2 = tags[1]
    check(t2[-second:] == list(range(second)), "the final snapshot lacks the last burst: %s"
          % t2[-5:])
    print("snapshot: SIGUSR1 kept the latest %d of %d events; the final snapshot has the last "
          "burst" % (len(t1), first))


def case_off(a):
    # compiled in, not requested: no liblttng-ust, no provider, tracing reports off
    rc, out, err = run([a.emit, "maps"])
    info = kv(out)
    check(rc == 0 and info.get("compiled") == "1", "emit maps failed: %s %s" % (out, err))
    check(info["map_lttng_ust"] == "0" and info["map_provider"] == "0",
          "liblttng-ust or the provider mapped without tracing requested: %s" % out)
    check(info["enabled"] == "0" and info["provider"] == "0", "tracing reported on: %s" % out)
    check(info["threads"] == "1", "threads started without tracing requested: %s" % out)
    # compiled out: nothing of LTTng at all
    rc, out, err = run([a.emit_off, "maps"])
    info = kv(out)
    check(rc == 0 and info.get("compiled") == "0", "emit_off maps failed: %s %s" % (out, err))
    check(info["map_any_lttng"] == "0", "LTTng mapped with tracing compiled out: %s" % out)
    # GLUCX_TRACE=1 loads the provider (and with it liblttng-ust) without LD_PRELOAD
    rc, out, err = run([a.emit, "maps"], env={"GLUCX_TRACE": "1",
                                              "LTTNG_UST_REGISTER_TIMEOUT": "0"})
    info = kv(out)
    check(rc == 0 and info["provider"] == "1" and info["map_provider"] == "1" and
          info["map_lttng_ust"] == "1", "GLUCX_TRACE=1 did not load the provider: %s %s"
          % (out, err))
    rc, out, err = run([a.emit, "maps"], env={"GLUCX_TRACE": "1",
                                              "GLUCX_TRACE_PROVIDER": "/nonexistent/p.so",
                                              "LTTNG_UST_REGISTER_TIMEOUT": "0"})
    check(rc == 0 and kv(out)["provider"] == "0" and "/nonexistent/p.so" in err,
          "a wrong GLUCX_TRACE_PROVIDER is not reported: %s %s" % (out, err))
    # libglucx itself does not depend on liblttng-ust
    rc, out, err = run(["readelf", "-d", a.libglucx])
    check(rc == 0 and "NEEDED" in out, "readelf -d %s failed: %s" % (a.libglucx, err))
    check("lttng" not in out, "libglucx has an LTTng dependency:\n%s" % out)
    print("off: no liblttng-ust without tracing requested; provider on GLUCX_TRACE=1")


def case_errors(a):
    d = os.path.join(a.work, "errors")
    fresh_dir(d)
    os.makedirs(os.path.join(d, "full", "x"))
    rc, out, err = record(a, os.path.join(d, "full"), ["true"])
    check(rc == 127 and "not empty" in err, "non-empty -o accepted (%d): %s" % (rc, err))
    rc, out, err = record(a, os.path.join(d, "e1"), ["true"], ["--events", "send_begin,nope"])
    check(rc == 2 and "nope" in err, "unknown event accepted (%d): %s" % (rc, err))
    rc, out, err = run([a.glucx_trace, "record", "-o", os.path.join(d, "e2")])
    check(rc == 2 and "no command" in err, "missing command accepted (%d): %s" % (rc, err))
    rc, out, err = record(a, os.path.join(d, "e3"), ["true"], ["--level", "most"])
    check(rc == 2 and "coll or full" in err, "bad level accepted (%d): %s" % (rc, err))
    rc, out, err = record(a, os.path.join(d, "e4"), ["true"], env={
        "GLUCX_TRACE_PROVIDER": "/nonexistent/provider.so"})
    check(rc == 127 and "/nonexistent/provider.so" in err, "missing provider (%d): %s" % (rc, err))
    # LTTng missing: a liblttng-ctl.so.0 that is not a library
    fake = os.path.join(d, "fake-lib")
    os.makedirs(fake)
    with open(os.path.join(fake, "liblttng-ctl.so.0"), "w") as f:
        f.write("not a library\n")
    rc, out, err = record(a, os.path.join(d, "e5"), ["true"], env={"LD_LIBRARY_PATH": fake})
    check(rc == 127 and "LTTng is not installed" in err and "lttng-tools" in err,
          "missing liblttng-ctl not reported clearly (%d): %s" % (rc, err))
    # no session daemon and none in PATH (only checkable when none runs already)
    if not sessiond_running():
        rc, out, err = record(a, os.path.join(d, "e6"), ["true"], env={"PATH": "/nonexistent"})
        check(rc == 127 and "lttng-sessiond not found" in err and "lttng-tools" in err,
              "missing lttng-sessiond not reported clearly (%d): %s" % (rc, err))
    # the command's exit status is returned, and the session is cleaned up
    rc, out, err = record(a, os.path.join(d, "exit3"), ["sh", "-c", "exit 3"])
    check(rc == 3, "command exit status 3 returned as %d: %s" % (rc, err))
    check("trace written to" in err, "no trace report after a failing command: %s" % err)
    check_sessiond_stopped(err)
    rc, out, err = record(a, os.path.join(d, "noexec"), ["/nonexistent/cmd"])
    check(rc == 127 and "cannot run /nonexistent/cmd" in err, "exec failure (%d): %s" % (rc, err))
    print("errors: all reported clearly")


def sessiond_running():
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = open("/proc/%s/stat" % pid).read()
        except OSError:
            continue
        name, state = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2]
        if name == "lttng-sessiond" and state != "Z":
            return True
    return False


def check_sessiond_stopped(err):
    m = re.search(r"started lttng-sessiond \(pid (\d+)\)", err)
    if m:  # it started one: that process must be gone
        check(not os.path.exists("/proc/%s" % m.group(1)) or
              open("/proc/%s/stat" % m.group(1)).read().split()[2] == "Z",
              "lttng-sessiond %s still runs after glucx-trace ended" % m.group(1))


def case_signal(a):
    d = fresh_dir(os.path.join(a.work, "signal"))
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    cmd = [a.glucx_trace, "record", "-o", d, "--", "sh", "-c",
           '"$0" record 1 && echo emitted && exec sleep %d' % scaled(50), a.emit]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + scaled(30)
        line = ""
        while time.monotonic() < deadline:  # bounded: the command prints "emitted" once traced
            line = p.stdout.readline()
            if line == "" or line.strip() == "emitted":
                break
        check(line.strip() == "emitted", "the traced command did not start")
        p.send_signal(signal.SIGTERM)  # like a job scheduler: glucx-trace forwards it
        out, err = p.communicate(timeout=scaled(30))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    check(p.returncode == 128 + signal.SIGTERM,
          "glucx-trace exited %d after SIGTERM, expected %d: %s" % (p.returncode,
                                                                    128 + signal.SIGTERM, err))
    check("trace written to" in err, "no trace report after SIGTERM: %s" % err)
    check_sessiond_stopped(err)
    got = names_in(d)
    check("comm_init" in got and "error" in got, "events before the signal lost: %s" % sorted(got))
    print("signal: SIGTERM forwarded, session finished, %d event kinds kept" % len(got))
    case_ctrl_c(a)


def case_ctrl_c(a):
    """Ctrl-C in a terminal: the tty sends SIGINT to the whole foreground process group;
    glucx-trace must survive it, not forward it a second time, and finish the trace."""
    d = fresh_dir(os.path.join(a.work, "ctrl-c"))
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    master, slave = pty.openpty()

    def become_tty_owner():  # new session whose controlling terminal is the pty
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    cmd = [a.glucx_trace, "record", "-o", d, "--", "sh", "-c",
           '"$0" record 1 >/dev/null && echo emitted && exec sleep %d' % scaled(50), a.emit]
    p = subprocess.Popen(cmd, env=env, stdin=slave, stdout=slave, stderr=slave,
                         preexec_fn=become_tty_owner)
    os.close(slave)
    output = b""
    try:
        deadline = time.monotonic() + scaled(30)
        while b"emitted" not in output and time.monotonic() < deadline:
            r, _, _ = select.select([master], [], [], 1.0)
            if r:
                try:
                    output += os.read(master, 4096)
                except OSError:
                    break
        check(b"emitted" in output, "the traced command did not start: %r" % output)
        os.write(master, b"\x03")  # the terminal's interrupt character
        deadline = time.monotonic() + scaled(30)
        while p.poll() is None and time.monotonic() < deadline:
            r, _, _ = select.select([master], [], [], 0.5)
            if r:
                try:
                    output += os.read(master, 4096)
                except OSError:
                    pass
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()
        os.close(master)
    text = output.decode(errors="replace")
    check(p.returncode == 128 + signal.SIGINT,
          "glucx-trace exited %d after Ctrl-C, expected %d: %s" % (p.returncode,
                                                                   128 + signal.SIGINT, text))
    check("trace written to" in text, "no trace report after Ctrl-C: %s" % text)
    check_sessiond_stopped(text)
    got = names_in(d)
    check("comm_init" in got, "events before Ctrl-C lost: %s" % sorted(got))
    print("ctrl-c: glucx-trace survived the terminal's SIGINT and finished the trace")


def case_bench(a):
    iters = str(a.bench_iters)
    rows = []
    rc, out, err = run([a.emit, "bench", iters])
    check(rc == 0, "bench failed: %s" % err)
    rows.append(("no provider", kv(out)))
    rc, out, err = run([a.emit, "bench", iters], env={"GLUCX_TRACE": "1",
                                                     "LTTNG_UST_REGISTER_TIMEOUT": "0"})
    check(rc == 0, "bench failed: %s" % err)
    rows.append(("provider, no session", kv(out)))
    d = fresh_dir(os.path.join(a.work, "bench"))
    rc, out, err = record(a, d, [a.emit, "bench", iters],
                          ["--events", "send_begin", "--buffer-size", "256M"])
    check(rc == 0, "bench under glucx-trace failed: %s" % err)
    rows.append(("session, send_begin recorded", kv(out)))
    m = re.search(r"(\d+) events discarded", err)
    check(m is not None, "no loss report: %s" % err)
    for label, r in rows:
        for key in ("bench_loop_ns", "bench_idle_site_ns", "bench_send_begin_site_ns"):
            check(key in r, "%s: %s missing" % (label, key))
            float(r[key])
    check(rows[0][1]["bench_send_begin_enabled"] == "0" and
          rows[1][1]["bench_send_begin_enabled"] == "0" and
          rows[2][1]["bench_send_begin_enabled"] == "1", "enabled flags wrong: %s" % rows)
    check(rows[1][1]["provider"] == "1", "GLUCX_TRACE=1 did not load the provider")
    print("%-30s %12s %14s %18s" % ("bench (%s iterations)" % iters, "loop ns", "idle site ns",
                                    "send_begin site ns"))
    for label, r in rows:
        print("%-30s %12s %14s %18s" % (label, r["bench_loop_ns"], r["bench_idle_site_ns"],
                                        r["bench_send_begin_site_ns"]))
    print("bench: discarded during the recorded run: %s" % m.group(1))

def record_two_ranks(a, case, mode):
    """Record `emit MODE STORE` (two forked ranks, emit.c) under glucx-trace: (its key=value
    output, {rank: pid}, the recorded events of its own processes)."""
    d = fresh_dir(os.path.join(a.work, case))
    store = fresh_dir(os.path.join(a.work, case + "-store"))
    rc, out, err = record(a, d, [a.emit, mode, store])
    check(rc == 0, "record emit %s exited %d: %s\n%s" % (mode, rc, out, err))
    info = kv(out)
    check(info.get("enabled") == "1", "tracing not active in the traced program: %s" % out)
    pid = {0: int(info["pid"]), 1: int(info["%s_rank1_pid" % mode])}
    events, discarded = read_trace(d, trace_pids(d))
    check(discarded == 0, "%d events discarded in a small trace" % discarded)
    return info, pid, own_events(d, events)


def case_waits(a):
    """emit p2pwait (emit.c documents the phases): real point-to-point waits of a 2-rank
    communicator. EVENTS.md, wait_begin: a wait whose requests are complete on entry records no
    wait events, but its messages' send_end/recv_end are still recorded; a wait that blocks
    records wait_begin/wait_end, and the recv_end of the message it completed lies between them
    on the same thread."""
    none = 0xffffffff  # GLUCX_TP_SEQ_NONE
    nbytes, phases = 64, (1, 2, 3, 4)  # emit.c: P2PW_BYTES, one message per phase, tag = phase
    info, pid, events = record_two_ranks(a, "waits", "p2pwait")
    req = {p: int(info["p2pwait_req_%d" % p]) for p in phases}
    en = Enums(a.source_dir)
    st_ok, st_inprogress = en.status["OK"], en.status["INPROGRESS"]
    site_request, site_any = en.site["request"], en.site["wait_any"]

    inits = [e for e in events if e["name"] == "glucx:comm_init" and
             dict(e["fields"])["name"] == "p2pwait"]
    check(sorted((e["vpid"], dict(e["fields"])["rank"]) for e in inits) ==
          sorted((pid[r], r) for r in (0, 1)), "comm_init of p2pwait: %s" % inits)
    cid = dict(inits[0]["fields"])["comm_id"]
    check(all(dict(e["fields"])["comm_id"] == cid for e in inits), "ranks disagree on comm_id")

    def plain(f):
        return {k: (v[0] if isinstance(v, tuple) else v) for k, v in f}

    def timeline(r):
        """rank r's events of the communicator, in order, each with the index of the wait
        (0, 1, ... in order of wait_begin) open on its thread when it was recorded, or None."""
        out, open_, nwaits = [], {}, 0
        for e in events:
            f = plain(e["fields"])
            if e["vpid"] != pid[r] or f.get("comm_id") != cid:
                continue
            name = e["name"].split(":")[1]
            if name == "wait_begin":
                check(e["vtid"] not in open_, "rank %d: wait_begin inside a wait" % r)
                open_[e["vtid"]] = nwaits
                nwaits += 1
            inside = open_.get(e["vtid"])
            if name == "wait_end":
                check(e["vtid"] in open_, "rank %d: wait_end without a wait_begin" % r)
                del open_[e["vtid"]]
            out.append((name, f, e["vtid"], inside))
        check(not open_, "rank %d: a wait_begin without wait_end" % r)
        return out

    def ends(tl, r, kind):
        """{phase: (vtid, wait index)} of the one send_end/recv_end of each phase's message."""
        got = {}
        for name, f, vtid, inside in tl:
            if name != kind:
                continue
            p = f["seq"]
            check(p in phases and p not in got, "rank %d: unexpected or repeated %s %s"
                  % (r, kind, f))
            check(f["tag"] == p and f["peer"] == 1 - r and f["bytes"] == nbytes and
                  f["step"] == 0, "rank %d: %s of phase %d: %s (want tag %d, peer %d, %d bytes, "
                  "step 0)" % (r, kind, p, f, p, 1 - r, nbytes))
            got[p] = (vtid, inside)
        check(sorted(got) == list(phases), "rank %d: %s of phases %s, want %s"
              % (r, kind, sorted(got), list(phases)))
        return got

    def waits_of(tl):
        return [(name, f["site"], f["seq"], f["req"], f["nreqs"], f["status"], vtid)
                for name, f, vtid, _ in tl if name in ("wait_begin", "wait_end")]

    # rank 1: only the waits of phases 2 (request) and 4 (wait_any) block
    tl1 = timeline(1)
    main1 = pid[1]  # the ranks are single-threaded callers: main thread's vtid = pid
    want = [("wait_begin", site_request, none, req[2], 1, st_inprogress, main1),
            ("wait_end", site_request, none, req[2], 1, st_ok, main1),
            ("wait_begin", site_any, none, req[4], 1, st_inprogress, main1),
            ("wait_end", site_any, none, req[4], 1, st_ok, main1)]
    got = waits_of(tl1)
    check(got == want, "rank 1 wait events (name, site, seq, req, nreqs, status, vtid):\n  %s\n"
          "expected (phases 1 and 3 wait on complete requests; 2 and 4 block):\n  %s"
          % ("\n  ".join(map(str, got)), "\n  ".join(map(str, want))))
    recv = ends(tl1, 1, "recv_end")
    for p, where in ((1, None), (2, 0), (3, None), (4, 1)):
        vtid, inside = recv[p]
        check(vtid == main1, "rank 1: recv_end of phase %d on thread %d, not %d" % (p, vtid, main1))
        check(inside == where, "rank 1: recv_end of phase %d %s, expected %s" % (
            p, "outside any wait" if inside is None else "inside wait %d" % inside,
            "outside any wait" if where is None else "inside wait %d (site %s)" % (
                where, ("request", "wait_any")[where])))

    # rank 0: its waits on sends the receiver already has find them complete: no wait events,
    # and each send_end is still recorded (by that wait), outside any wait
    tl0 = timeline(0)
    check(not waits_of(tl0), "rank 0 waited only on complete sends but recorded wait events: %s"
          % waits_of(tl0))
    sent = ends(tl0, 0, "send_end")
    check(all(v == (pid[0], None) for v in sent.values()), "rank 0 send_end: %s" % sent)
    print("waits: rank 1 recorded exactly the 2 blocking waits, each around its recv_end; "
          "waits on complete requests recorded none, their send/recv ends kept")


def case_putwaits(a):
    """emit putwait (emit.c documents the phases): window puts are traced as sends (send_begin at
    post, send_end when observed complete), each message a window wait takes as a receive
    (recv_begin and recv_end, bytes = window size and message length), both with seq = the slot
    and step = the message's position in the FIFO of (sender, receiver, slot), so the analysis
    pairs them on (comm, seq, step, sender, receiver); only the window wait that blocks is
    recorded (site window, req = the window), with the second placement inside it."""
    none = 0xffffffff
    nbytes, window, slot = 64, 4096, 9  # emit.c: P2PW_BYTES, PUTW_WINDOW, PUTW_SLOT
    info, pid, events = record_two_ranks(a, "putwaits", "putwait")
    win = int(info["putwait_window"])
    en = Enums(a.source_dir)
    check("window" in en.site, "ids.h has no wait site 'window': %s" % en.site)
    inits = [e for e in events if e["name"] == "glucx:comm_init" and
             dict(e["fields"])["name"] == "putwait"]
    check(len(inits) == 2, "comm_init of putwait: %s" % inits)
    cid = dict(inits[0]["fields"])["comm_id"]

    def plain(f):
        return {k: (v[0] if isinstance(v, tuple) else v) for k, v in f}

    def mine(r, names):
        """rank r's events of names in order, each with whether a wait was open on its thread"""
        got, open_ = [], set()
        for e in events:
            f = plain(e["fields"])
            if e["vpid"] != pid[r] or f.get("comm_id") != cid:
                continue
            name = e["name"].split(":")[1]
            if name == "wait_begin":
                open_.add(e["vtid"])
            if name in names:
                got.append((name, f, e["vtid"] in open_ and name not in ("wait_begin",)))
            if name == "wait_end":
                open_.discard(e["vtid"])
        return got

    xfer = ("send_begin", "send_end", "recv_begin", "recv_end")
    sends = [(n, f) for n, f, _ in mine(0, xfer)]
    check([n for n, _ in sends] == ["send_begin", "send_begin", "send_end", "send_end"],
          "rank 0 events: %s" % sends)
    for n, f in sends:
        check(f["tag"] == slot and f["seq"] == slot and f["peer"] == 1 and f["bytes"] == nbytes
              and f["link"] == 1, "rank 0 %s: %s" % (n, f))
    check([f["step"] for _, f in sends] == [0, 1, 0, 1], "rank 0 steps: %s" % sends)
    check(not mine(0, ("wait_begin", "wait_end")), "rank 0 recorded waits on complete puts")

    recvs = mine(1, xfer + ("wait_begin", "wait_end"))
    names = [n for n, _, _ in recvs]
    check(names == ["recv_begin", "recv_end", "wait_begin", "recv_begin", "recv_end", "wait_end"],
          "rank 1 events: %s" % names)
    for n, f, inside in recvs:
        if n.startswith("recv"):
            check(f["tag"] == slot and f["seq"] == slot and f["peer"] == 0 and f["link"] == 1 and
                  f["bytes"] == (window if n == "recv_begin" else nbytes),
                  "rank 1 %s: %s" % (n, f))
        else:
            check(f["site"] == en.site["window"] and f["seq"] == none and f["req"] == win and
                  f["nreqs"] == 1 and f["status"] == en.status["INPROGRESS" if n == "wait_begin"
                                                               else "OK"],
                  "rank 1 %s: %s (window %d)" % (n, f, win))
    check([f["step"] for n, f, _ in recvs if n == "recv_end"] == [0, 1],
          "rank 1 placement steps: %s" % recvs)
    check([inside for n, _, inside in recvs if n == "recv_end"] == [False, True],
          "rank 1: the first placement must be outside any wait, the second inside the blocking "
          "one: %s" % recvs)
    # the keys the analysis pairs on
    skeys = sorted((f["seq"], f["step"], 0, 1) for n, f in sends if n == "send_end")
    rkeys = sorted((f["seq"], f["step"], 0, 1) for n, f, _ in recvs if n == "recv_end")
    check(skeys == rkeys, "puts %s and placements %s do not pair" % (skeys, rkeys))
    print("putwaits: 2 puts traced as sends, 2 placements as receives with matching "
          "(seq, step); one blocking window wait around the second placement")


def with_fork_helper(env):
    """env plus LTTng's fork helper preloaded, as glucx-trace record runs a command; like
    glucx-trace, lets a sanitized program start with a preloaded library before its ASan runtime
    (verify_asan_link_order=0), which ASan otherwise refuses."""
    asan = ":".join(o for o in (os.environ.get("ASAN_OPTIONS", ""), "verify_asan_link_order=0")
                    if o)
    return dict(env, LD_PRELOAD="liblttng-ust-fork.so.1", ASAN_OPTIONS=asan)


def case_forklock(a):
    """emit forklock (emit.c documents it): fork() while another thread holds LTTng-UST's locks,
    with the provider loaded by GLUCX_TRACE=1 and no session (nothing to connect to, no waiting:
    LTTNG_UST_REGISTER_TIMEOUT=0). Without the provider's fork handlers the child inherits the
    locks and deadlocks at exit (emit kills it after 10 s and fails). Run twice: as libglucx loads
    the provider (the provider guards fork itself), and with LTTng's fork helper preloaded as
    glucx-trace record does (the helper guards fork; the provider must not do it a second time,
    which would deadlock the forking thread on LTTng-UST's non-recursive lock)."""
    env = {"GLUCX_TRACE": "1", "LTTNG_UST_REGISTER_TIMEOUT": "0"}
    helper_env = with_fork_helper(env)
    runs = (("provider only", env, "0", "1"), ("fork helper preloaded", helper_env, "1", "0"))
    for label, e, helper, guard in runs:
        # the process list (GLUCX_TRACE_PIDS) is kept whichever guards fork()
        pid_file = os.path.join(a.work, "forklock-pids-%s" % guard)
        open(pid_file, "w").close()
        e = dict(e, GLUCX_TRACE_PIDS=pid_file)
        try:  # emit bounds the child; the bound here is for a fork() that never returns
            rc, out, err = run([a.emit, "forklock"], env=e, timeout=scaled(25))
        except subprocess.TimeoutExpired:
            raise Failure("%s: emit forklock did not finish in %d s: fork() itself deadlocked in "
                          "the parent (LTTng-UST's fork handling run twice?)" % (label, scaled(25)))
        info = kv(out)
        check(info.get("forklock_child") != "hung",
              "%s: the child forked while LTTng-UST's locks were held deadlocked: %s"
              % (label, err))
        check(rc == 0, "%s: emit forklock exited %d:\n%s%s" % (label, rc, out, err))
        check(info.get("provider") == "1", "%s: GLUCX_TRACE=1 did not load the provider" % label)
        check(info.get("forklock_fork_helper") == helper,
              "%s: liblttng-ust-fork mapped = %s, expected %s" % (
                  label, info.get("forklock_fork_helper"), helper))
        check(info.get("forklock_fork_guard") == guard,
              "%s: the provider's fork guard is %s, expected %s (1: handlers registered, "
              "0: left to the fork helper)" % (label, info.get("forklock_fork_guard"), guard))
        pids = pid_lines(pid_file)
        parent = int(info.get("pid", "0"))
        check(parent in pids and len(set(pids) - {parent}) >= 1,
              "%s: %s should list the parent (pid %d, constructor) and the forked child "
              "(pthread_atfork handler): %s" % (label, pid_file, parent, pids))
        check(info.get("forklock_fork_waited") == "1",
              "%s: fork() returned before the holder released LTTng-UST's locks" % label)
        check(info.get("forklock_child") == "exited" and
              info.get("forklock_child_status") == "0x0",
              "%s: child did not exit 0: %s" % (label, out))
        print("forklock, %s: fork waited %s ms for the held locks, child exited 0 after %s ms"
              % (label, info.get("forklock_fork_ms"), info.get("forklock_child_ms")))


# One job of case_concurrent: /usr/bin/python3 -c JOB NAME SYNC BENCH INFO. Says it records
# (NAME.ready), waits for the other job to record too, runs glucx-bench (2 forked ranks,
# communicator NAME), says it is done (NAME.done) and waits for the other job's bench to end, so
# both benches run while both sessions record. Bounded waits (times SCALE, the last argument).
CONCURRENT_JOB = r"""
import json, os, subprocess, sys, time
name, other, sync, bench, info, scale = sys.argv[1:6] + [float(sys.argv[6])]
def wait_for(path):
    deadline = time.monotonic() + 40 * scale
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            sys.exit("job %s: %s did not appear within %d s" % (name, path, 40 * scale))
        time.sleep(0.02)
open(os.path.join(sync, name + ".ready"), "w").close()
wait_for(os.path.join(sync, other + ".ready"))
p = subprocess.Popen([bench, "--ranks", "2", "--name", name, "--coll", "allreduce",
                      "-b", "1K", "-e", "8K", "-n", "3", "-w", "1", "-T", "%d" % (20000 * scale)],
                     stdout=subprocess.DEVNULL)
rc = p.wait(timeout=40 * scale)
open(os.path.join(sync, name + ".done"), "w").close()
wait_for(os.path.join(sync, other + ".done"))
with open(info, "w") as f:
    json.dump({"pid": os.getpid(), "bench_pid": p.pid, "bench_rc": rc}, f)
sys.exit(rc)
"""


def case_concurrent(a):
    """Two glucx-trace sessions record at the same time (overlap made certain by the jobs'
    handshake): LTTng puts each job's events in both traces. Each DIR/glucx-pids must list
    exactly its own job's processes (the interpreter, glucx-bench and its forked ranks), and
    glucx-analyze on each trace must report only its own communicator and count the other
    job's events as left out. A third, foreign session (another user of the session daemon)
    may record too: only these two jobs' events are checked by name, the left-out counts are
    computed from the trace itself."""
    check(a.bench and a.analyze, "concurrent needs --bench and --analyze")
    base = fresh_dir(os.path.join(a.work, "concurrent"))
    sync = os.path.join(base, "sync")
    os.makedirs(sync)
    tag = "%d" % os.getpid()
    names = {"A": "concA" + tag, "B": "concB" + tag}  # unique: a foreign job cannot use them
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.pop("GLUCX_TRACE", None)
    env.pop("GLUCX_TRACE_PIDS", None)
    procs, dirs, infos = {}, {}, {}
    try:
        for j, o in (("A", "B"), ("B", "A")):
            dirs[j] = os.path.join(base, "trace" + j)
            infos[j] = os.path.join(base, "info" + j + ".json")
            cmd = [a.glucx_trace, "record", "-o", dirs[j], "--level", "coll", "--",
                   sys.executable, "-c", CONCURRENT_JOB, names[j], names[o], sync, a.bench,
                   infos[j], "%g" % scaled(1)]
            procs[j] = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        res = {j: p.communicate(timeout=scaled(100)) for j, p in procs.items()}
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    for j in "AB":
        check(procs[j].returncode == 0, "job %s: glucx-trace exited %d: %s" % (
            j, procs[j].returncode, res[j][1][-3000:]))
    info = {j: json.load(open(infos[j])) for j in "AB"}
    pids = {}
    for j in "AB":
        path = os.path.join(dirs[j], "glucx-pids")
        check(os.path.isfile(path), "job %s: %s missing" % (j, path))
        pids[j] = set(pid_lines(path))
    check(not (pids["A"] & pids["B"]), "the two jobs' pid files share %s" % (pids["A"] & pids["B"]))
    for j, o in (("A", "B"), ("B", "A")):
        events, _ = read_trace(dirs[j])
        comm_vpids = {}
        for ev in events:
            if ev["name"] == "glucx:comm_init":
                comm_vpids.setdefault(dict(ev["fields"])["name"], set()).add(ev["vpid"])
        own, foreign = comm_vpids.get(names[j], set()), comm_vpids.get(names[o], set())
        check(len(own) >= 2, "trace %s: comm_init of %s from %d processes, expected the 2 ranks"
              % (j, names[j], len(own)))
        check(len(foreign) >= 2, "trace %s lacks the other job's comm_init events (%s): the "
              "sessions did not overlap as arranged" % (j, names[o]))
        mine = {info[j]["pid"], info[j]["bench_pid"]}
        ranks = own - mine
        check(len(ranks) >= 1 and ranks <= pids[j],
              "trace %s: forked ranks %s not all listed in %s" % (j, sorted(own), sorted(pids[j])))
        check(own <= pids[j] and mine <= pids[j],
              "trace %s: own processes %s not all listed: %s" % (j, sorted(own | mine),
                                                                 sorted(pids[j])))
        check(not (foreign & pids[j]), "trace %s: the other job's ranks %s are listed in its "
              "glucx-pids %s" % (j, sorted(foreign), sorted(pids[j])))
        # exactly its own processes: the interpreter, glucx-bench and the processes that emitted
        # this job's events
        extra = pids[j] - mine - own
        check(not extra, "trace %s: %s lists processes %s that are neither "
              "the job's interpreter %s, its glucx-bench nor its ranks %s"
              % (j, "glucx-pids", sorted(extra), info[j]["pid"], sorted(own)))
        # the analysis: own communicator only, the left-out events counted from the trace
        left = [ev for ev in events if ev["vpid"] not in pids[j]]
        left_procs = {ev["vpid"] for ev in left}
        out = os.path.join(base, "report" + j)
        rc, sout, serr = run([a.analyze, dirs[j], "-o", out, "--no-html", "--no-progress"])
        check(rc == 0, "glucx-analyze %s exited %d: %s" % (dirs[j], rc, serr))
        rep = json.load(open(os.path.join(out, "report.json")))
        tr = rep["trace"]
        got = sorted(c["name"] for c in tr["comms"])
        want = sorted({dict(ev["fields"])["name"] for ev in events
                       if ev["name"] == "glucx:comm_init" and ev["vpid"] in pids[j]})
        check(got == want and names[j] in got and names[o] not in got,
              "report %s: communicators %s, expected %s" % (j, got, want))
        check(tr["left_out_events"] == len(left) and tr["left_out_processes"] == len(left_procs),
              "report %s: left out %d events of %d processes, the trace has %d events of %d "
              "unlisted processes" % (j, tr["left_out_events"], tr["left_out_processes"],
                                      len(left), len(left_procs)))
        check(tr["events"] == len(events) - len(left), "report %s: %d events analysed, expected "
              "%d - %d" % (j, tr["events"], len(events), len(left)))
        check(tr["pid_files"] == [os.path.realpath(os.path.join(dirs[j], "glucx-pids"))],
              "report %s: pid_files %s" % (j, tr["pid_files"]))
        warn = "%d events of %d processes not listed in the trace's glucx-pids were left out: " \
               "another traced job ran at the same time" % (len(left), len(left_procs))
        check(tr["warnings"] and tr["warnings"][0].startswith(warn),
              "report.json %s: warnings %s lack %r" % (j, tr["warnings"], warn))
        txt = open(os.path.join(out, "report.txt")).read()
        check(("warning: " + warn) in txt, "report.txt %s lacks %r" % (j, warn))
        print("concurrent %s: glucx-pids lists %d processes (interpreter, glucx-bench, %d forked "
              "ranks); the trace holds %d events, %d of %d processes of other jobs left out by "
              "glucx-analyze; communicators reported: %s"
              % (j, len(pids[j]), len(ranks), len(events), len(left), len(left_procs), got))


# ---- strings: empty and non-empty values of every string field survive the trip -------------

STRINGS_N = 64  # events of each class: enough for Babeltrace to reuse its event objects


def string_value(prefix, i, j):
    """emit.c, strings(): S(prefix, j) for event i."""
    if j % 8 in (1, 3, 4, 5):
        return ""
    return "/".join(["%s-%d" % (prefix, i)] * (i % 3 + 1))


def expected_strings(en, framework_comm):
    """Every event emit.c's strings(STRINGS_N) records, in order: (name, [(field, value)...])."""
    c = comm_id("glucx-trace-test", [("record-of-rank-%d" % i).encode() for i in range(2)])
    head = [("comm_id", c), ("rank", 0)]
    fw = [("comm_id", c if framework_comm else 0), ("rank", 0)]
    out = []
    for i in range(STRINGS_N):
        phase = string_value("x", i, i) and \
            "%s-%d" % ("comm:allreduce" if (i // 8) % 2 == 0 else "forward", i)
        out += [
            ("comm_init", head + [("size", 2), ("package", 0), ("npackages", 1),
                                  ("name", string_value("name", i, i)),
                                  ("host", string_value("host", i, i + 3)),
                                  ("topo_digest", 0x5eed ^ i)]),
            ("link", head + [("link_id", 1), ("src", 0), ("dst", 1), ("dim", 0),
                             ("bandwidth_Bps", 1e9), ("latency_ns", 1000.0),
                             ("transport", string_value("tcp", i, i + 5))]),
            ("sched_decision", head + [("seq", i), ("kind", en.e("kind", "algorithm")),
                                       ("chosen", en.alg["ring"]), ("alt_ids", [en.alg["ring"]]),
                                       ("alt_cost_ns", [100 + i]),
                                       ("reason", string_value("reason", i, i + 6))]),
            ("compute_begin", fw + [("phase", phase), ("id", i)]),
            ("compute_end", fw + [("phase", phase), ("id", i)]),
            ("error", head + [("status", en.e("status", "ERR_TIMEOUT")),
                              ("text", string_value("text", i, i + 1))]),
        ]
    return out


def as_dumped(fields):
    """Expected fields as glucx-analyze --dump-events writes them: enums as their integer, hex
    fields as "0x..." strings."""
    out = {}
    for k, v in fields:
        if isinstance(v, tuple):
            v = v[0]
        if k in ("comm_id", "topo_digest", "tag", "req"):
            v = "0x%x" % v
        out[k] = v
    return out


def case_strings(a):
    """Every string field of every event, empty after non-empty, non-empty after empty and
    several empties in a row (emit.c, strings()), read back exactly: with bt2, in
    glucx-analyze's model (--dump-events) and in its report (compute phases: names on the
    timeline, communication or compute, all paired; error texts in the warnings)."""
    check(a.analyze, "case strings needs --analyze")
    d = fresh_dir(os.path.join(a.work, "strings"))
    rc, out, err = record(a, d, [a.emit, "strings", str(STRINGS_N)])
    check(rc == 0, "record exited %d: %s" % (rc, err))
    info = kv(out)
    check(info.get("enabled") == "1" and info.get("provider") == "1",
          "tracing not active in the traced program: %s" % out)
    en = Enums(a.source_dir)
    want = expected_strings(en, info.get("framework_comm_id") == "core")
    n_empty = sum(1 for _, fs in want for k, v in fs if v == "")
    check(n_empty > 0, "no empty string emitted")

    # 1. Babeltrace 2 (bt2), by the string fields' lengths
    events, discarded = read_trace(d, trace_pids(d))
    check(discarded == 0, "%d events discarded" % discarded)
    events = own_events(d, events)
    check([e["name"] for e in events] == ["glucx:" + n for n, _ in want],
          "bt2 read %d events %s..., expected %d" % (len(events), [e["name"] for e in events[:8]],
                                                     len(want)))
    for i, (ev, (name, fields)) in enumerate(zip(events, want)):
        compare_fields(ev["fields"], fields, "bt2 event %d %s" % (i, name))

    # 2. glucx-analyze's model: every event as the sink fed it to the engine
    rep_dir = os.path.join(a.work, "strings-report")
    shutil.rmtree(rep_dir, ignore_errors=True)
    dump = os.path.join(a.work, "strings-events.jsonl")
    rc, out, err = run([a.analyze, d, "-o", rep_dir, "--no-html", "--dump-events", dump])
    check(rc == 0, "glucx-analyze exited %d: %s" % (rc, err))
    with open(dump) as f:
        dumped = [json.loads(line) for line in f]
    check([e["event"] for e in dumped] == [n for n, _ in want],
          "the analysis read %d events %s..., expected %d"
          % (len(dumped), [e["event"] for e in dumped[:8]], len(want)))
    for i, (ev, (name, fields)) in enumerate(zip(dumped, want)):
        exp = as_dumped(fields)
        got = {k: v for k, v in ev.items() if k not in ("event", "ts", "vpid", "vtid")}
        check(list(got) == list(exp), "analysis event %d %s: fields %s, expected %s"
              % (i, name, list(got), list(exp)))
        for k in exp:
            check(got[k] == exp[k], "analysis event %d %s.%s = %r, expected %r"
                  % (i, name, k, got[k], exp[k]))

    # 3. the report: each compute_begin/end pair is one slice named "<phase> <id>" ("compute <id>"
    # for an empty phase) on the communication row for "comm:" phases, else on the compute row
    # (engine.c: TID_COMPUTE 2, TID_COLL 3); nothing left unpaired; each error text in a warning
    with open(os.path.join(rep_dir, "timeline.json")) as f:
        tl = json.load(f)["traceEvents"]
    got = sorted((e["tid"], e["name"]) for e in tl if e.get("ph") == "X" and e.get("tid") in (2, 3))
    exp = []
    for name, fields in want:
        if name == "compute_begin":
            f = dict(fields)
            exp.append((3 if f["phase"].startswith("comm:") else 2,
                        "%s %d" % (f["phase"] or "compute", f["id"])))
    check(got == sorted(exp), "timeline compute/communication slices differ: %s"
          % sorted(set(got) ^ set(exp))[:6])
    with open(os.path.join(rep_dir, "report.json")) as f:
        report = json.load(f)
    texts = [w.split(" reported ERR_TIMEOUT: ", 1)[1] for w in report["trace"]["warnings"]
             if " reported ERR_TIMEOUT: " in w]
    exp_texts = []  # the report keeps each distinct warning once, in order of first appearance
    for n, fs in want:
        if n == "error" and dict(fs)["text"] not in exp_texts:
            exp_texts.append(dict(fs)["text"])
    check(len(texts) > 8 and texts == exp_texts[:len(texts)],
          "error texts in the report's warnings: %s, expected %s" % (texts[:6], exp_texts[:6]))
    print("strings: %d events (%d empty strings) read back exactly by bt2, the analysis and its "
          "report" % (len(want), n_empty))


# ---- foreign: another traced job records into this trace -------------------------------------

# The recorded command of case_foreign: sh -c FOREIGN_CMD EMIT SYNC ARGS... says the session
# records (SYNC/ready), waits (bounded, 60 s) until the foreign job has run (SYNC/done), then runs
# EMIT ARGS.
FOREIGN_CMD = ('emit=$0; sync=$1; shift; : > "$sync/ready"; i=0; '
               'while [ ! -e "$sync/done" ]; do i=$((i + 1)); '
               '[ $i -gt 1200 ] && { echo "no $sync/done after 60 s" >&2; exit 3; }; sleep 0.05; '
               'done; exec "$emit" "$@"')


def record_beside_foreign(a, d, sync, own_args, foreign_args, extra=()):
    """Record `emit own_args` into d while `emit foreign_args` runs, entirely inside the
    recording, as another traced job: its provider loaded by GLUCX_TRACE=1 with LTTng's fork helper
    preloaded (its forked ranks traced), registered with the session daemon, no glucx-trace and no
    process list of its own. Returns (rc, own stdout, stderr, foreign's key=value output)."""
    fresh_dir(sync)
    os.makedirs(sync)
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "GLUCX_TRACE", "GLUCX_TRACE_PIDS"):
        env.pop(k, None)
    cmd = [a.glucx_trace, "record", "-o", d, *extra, "--", "sh", "-c", FOREIGN_CMD, a.emit, sync,
           *own_args]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not os.path.exists(os.path.join(sync, "ready")) and p.poll() is None and \
                time.monotonic() < deadline:
            time.sleep(0.02)
        check(os.path.exists(os.path.join(sync, "ready")), "the recorded command did not start")
        rc, fout, ferr = run([a.emit, *foreign_args], env=with_fork_helper({
            "GLUCX_TRACE": "1", "LTTNG_UST_REGISTER_TIMEOUT": "30000"}))
        open(os.path.join(sync, "done"), "w").close()
        check(rc == 0, "the foreign emit %s exited %d: %s" % (foreign_args, rc, ferr))
        out, err = p.communicate(timeout=TIMEOUT)
    finally:
        open(os.path.join(sync, "done"), "w").close()
        if p.poll() is None:
            p.kill()
            p.wait()
    finfo = kv(fout)
    check(finfo.get("provider") == "1" and finfo.get("enabled") == "1",
          "the foreign emit did not record into the session (provider %s, enabled %s): %s"
          % (finfo.get("provider"), finfo.get("enabled"), ferr))
    return p.returncode, out, err, finfo


def case_foreign(a):
    """Another traced job runs while this trace records (record_beside_foreign): LTTng puts its
    events in this trace too, and its events are those of the same program, so only their
    processes tell them apart.
      1. `emit record 2` beside a foreign `emit record 2`: the trace holds both jobs' events; read
         through glucx-pids, this command's are exactly case_record's, and the foreign job's are
         exactly its own emit_all() sequences (all recorded: it ran inside the recording);
         glucx-analyze (and the babeltrace2 CLI sink given the pid-file) analyse this command's
         events and count exactly the foreign ones (and any other job's) as left out.
      2. `emit burst 2 N` beside a foreign `emit burst 1 M`, 8 KiB buffers (most events lost):
         each job's losses counted from its own events' tags; with no third job in the trace,
         the two add up exactly to the discarded count glucx-trace reports."""
    check(a.analyze, "case foreign needs --analyze")
    en = Enums(a.source_dir)
    d = fresh_dir(os.path.join(a.work, "foreign"))
    rc, out, err, finfo = record_beside_foreign(a, d, os.path.join(a.work, "foreign-sync"),
                                                ["record", "2"], ["record", "2"])
    check(rc == 0, "record exited %d: %s" % (rc, err))
    info = kv(out)
    framework_comm = info.get("framework_comm_id") == "core"
    events, discarded = read_trace(d)
    check(discarded == 0, "%d events discarded in a small trace" % discarded)
    mine, others = split(events, trace_pids(d))
    check_emit_record(mine, 2, en, framework_comm, info, "own job")
    fpids = {int(finfo["pid"]), int(finfo.get("rank1_pid", -1))}
    check(not (fpids & trace_pids(d)), "the foreign job's processes %s are in glucx-pids %s"
          % (sorted(fpids), sorted(trace_pids(d))))
    theirs = [ev for ev in others if ev["vpid"] in fpids]
    check_emit_record(theirs, 2, en, framework_comm, finfo, "foreign job")
    left_procs = {ev["vpid"] for ev in others}  # the foreign job's and any third job's

    rep = os.path.join(a.work, "foreign-report")
    shutil.rmtree(rep, ignore_errors=True)
    rc, _, aerr = run([a.analyze, d, "-o", rep, "--no-html", "--no-progress"])
    check(rc == 0, "glucx-analyze exited %d: %s" % (rc, aerr))
    reports = {"glucx-analyze": rep}
    if a.plugin_dir:
        cli = os.path.join(a.work, "foreign-report-cli")
        shutil.rmtree(cli, ignore_errors=True)
        rc, _, cerr = run(["babeltrace2", "--plugin-path=" + a.plugin_dir, d, "-c",
                           "sink.glucx.report", "-p", 'output="%s",timeline=false,pid-file="%s"'
                           % (cli, os.path.join(d, "glucx-pids"))])
        check(rc == 0, "babeltrace2 ... sink.glucx.report exited %d: %s" % (rc, cerr[-3000:]))
        reports["the babeltrace2 CLI sink"] = cli
    for who, path in reports.items():
        tr = json.load(open(os.path.join(path, "report.json")))["trace"]
        got = (tr["events"], tr["left_out_events"], tr["left_out_processes"])
        want = (len(mine), len(others), len(left_procs))
        check(got == want, "%s: events, left-out events, left-out processes %s; the trace "
              "holds %s" % (who, got, want))
        check([c["name"] for c in tr["comms"]] == ["glucx-trace-test"] and
              sorted(r["vpid"] for r in tr["comms"][0]["ranks"]) == sorted({e["vpid"]
                                                                           for e in mine}),
              "%s: communicators %s, expected glucx-trace-test of this job's processes" % (
                  who, tr["comms"]))
    print("foreign: own job exact (%d events), the foreign job's %d events (processes %s) and "
          "%d of other jobs left out by glucx-analyze%s" % (
              len(mine), len(theirs), sorted(fpids), len(others) - len(theirs),
              " and the CLI sink" if a.plugin_dir else ""))

    # 2. losses: each job's own, from its events; together exactly the discarded count
    n, count, fcount = 2, 100000, 100000
    d = fresh_dir(os.path.join(a.work, "foreign-discard"))
    rc, out, err, finfo = record_beside_foreign(
        a, d, os.path.join(a.work, "foreign-sync"), ["burst", str(n), str(count)],
        ["burst", "1", str(fcount)], ["--buffer-size", "8K"])
    check(rc == 0, "record with tiny buffers exited %d: %s" % (rc, err))
    m = re.search(r"(\d+) events discarded", err)
    check(m is not None, "no discarded-events report: %s" % err)
    reported = int(m.group(1))
    events, discarded = read_trace(d)
    check(discarded == reported, "discarded: glucx-trace %d, bt2 %d" % (reported, discarded))
    mine, others = split(events, trace_pids(d))
    theirs = [ev for ev in others if ev["vpid"] == int(finfo["pid"])]
    lost = burst_losses(mine, burst_procs(kv(out), n), count)
    flost = burst_losses(theirs, burst_procs(finfo, 1), fcount)
    check(lost > 0, "8 KiB buffers and %d events, but none of the command's lost" % (n * count))
    if len(theirs) == len(others) and "other glucx-trace session" not in err:
        check(lost + flost == reported, "lost: %d of the command's + %d of the foreign job's, "
              "glucx-trace reported %d discarded" % (lost, flost, reported))
    else:  # a third job ran too: its losses are in the count as well
        check(lost + flost <= reported, "lost: %d of the command's + %d of the foreign job's, "
              "only %d reported discarded" % (lost, flost, reported))
    print("foreign: with 8 KiB buffers, %d of the command's %d events and %d of the foreign "
          "job's %d lost; %d discarded reported" % (lost, n * count, flost, fcount, reported))


# ---- names: escaping and length on the way to timeline.json -----------------------------------

NAMES_COMM = 0x6e616d6573000000  # emit.c, names()
NAMES_PHASE_A = "forward.layer1.conv.weight.grad.bucket.0000000000.first"
NAMES_PHASE_B = "forward.layer1.conv.weight.grad.bucket.0000000000.second"


def hostile_names():
    """emit.c, names(): NAME(0..7)."""
    return ["quote\"d", "back\\slash\\", "new\nline", "tab\there", "ctl\x01\x1f",
            "caf\u00e9 \u20ac \U0001f680", "".join(chr(ord("a") + i % 26) for i in range(6000)),
            "}],{\"x\":\""]


def case_names(a):
    """emit names: communicator and phase names that JSON must escape (quote, backslash, newline,
    tab, control characters, non-ASCII UTF-8, 6000 bytes, JSON syntax) and two phases whose names
    share 48 bytes, with the same id, overlapping. bt2 reads every name back exactly; in
    glucx-analyze's report.json and timeline.json (both parsed by Python's json) every
    communicator and phase name is whole, and each phase's slice spans its own begin and end
    (taken from the trace): the two long phases pair by their full names."""
    check(a.analyze, "case names needs --analyze")
    names = hostile_names()
    d = fresh_dir(os.path.join(a.work, "names"))
    rc, out, err = record(a, d, [a.emit, "names"])
    check(rc == 0, "record exited %d: %s" % (rc, err))
    events, discarded = read_trace(d, trace_pids(d))
    check(discarded == 0, "%d events discarded" % discarded)
    events = own_events(d, events)
    inits = [dict(e["fields"]) for e in events if e["name"] == "glucx:comm_init"]
    want_comms = names + ["long-phases"]
    check([f["name"] for f in inits] == want_comms and
          [f["comm_id"] for f in inits] == [NAMES_COMM + k for k in range(len(want_comms))],
          "bt2 read communicator names %r..., expected %r..." % (
              [f["name"][:40] for f in inits], [n[:40] for n in want_comms]))
    # each phase: (name, id) -> (begin ts, end ts), as the trace has them
    spans, opened = [], {}
    for e in events:
        if e["name"] in ("glucx:compute_begin", "glucx:compute_end"):
            f = dict(e["fields"])
            key = (f["phase"], f["id"])
            if e["name"] == "glucx:compute_begin":
                opened[key] = e["ts"]
            else:
                spans.append(("%s %d" % key, opened.pop(key), e["ts"]))
    want_phases = [("%s %d" % (n, k)) for k, n in enumerate(names)] + \
        ["%s 9" % NAMES_PHASE_A, "%s 9" % NAMES_PHASE_B]
    check([s[0] for s in spans] == want_phases and not opened,
          "bt2 read phases %r..., expected %r..." % ([s[0][:40] for s in spans],
                                                     [w[:40] for w in want_phases]))

    rep = os.path.join(a.work, "names-report")
    shutil.rmtree(rep, ignore_errors=True)
    rc, _, aerr = run([a.analyze, d, "-o", rep, "--no-html", "--no-progress"])
    check(rc == 0, "glucx-analyze exited %d: %s" % (rc, aerr))
    with open(os.path.join(rep, "report.json"), encoding="utf-8") as f:
        report = json.load(f)
    got = sorted(c["name"] for c in report["trace"]["comms"])
    check(got == sorted(want_comms), "report.json communicators %r, expected %r" % (
        [g[:40] for g in got], [w[:40] for w in sorted(want_comms)]))
    try:
        with open(os.path.join(rep, "timeline.json"), encoding="utf-8") as f:
            tl = json.load(f)
    except ValueError as ex:
        raise Failure("timeline.json is not JSON: %s" % ex)
    t0 = tl["otherData"]["t0_ns"]
    got = sorted((e["name"], round(e["ts"] * 1000), round(e["dur"] * 1000))
                 for e in tl["traceEvents"] if e.get("ph") == "X" and e.get("tid") == 2)
    want = sorted((name, b - t0, e - b) for name, b, e in spans)
    check(got == want, "timeline compute slices (name, ts, dur) differ: got %r, expected %r" % (
        [(g[0][:60],) + g[1:] for g in got if g not in want],
        [(w[0][:60],) + w[1:] for w in want if w not in got]))
    procs = {e["args"]["name"] for e in tl["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    missing = [n for n in want_comms if "rank 0 (%s)" % n not in procs]
    check(not missing, "timeline.json lacks the processes of communicators %r" % [
        m[:40] for m in missing])
    print("names: %d communicator and %d phase names whole in report.json and timeline.json; "
          "the 48-byte-prefix phases paired by full name" % (len(want_comms), len(want_phases)))


CASES = {"strings": case_strings, "rotate": case_rotate, "snapshot": case_snapshot, "record": case_record, "levels": case_levels, "discard": case_discard, "off": case_off,
         "errors": case_errors, "signal": case_signal, "bench": case_bench,
         "waits": case_waits, "putwaits": case_putwaits, "forklock": case_forklock, "concurrent": case_concurrent,
         "foreign": case_foreign, "names": case_names}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--glucx-trace", required=True)
    p.add_argument("--emit", required=True)
    p.add_argument("--emit-off", required=True)
    p.add_argument("--libglucx", required=True)
    p.add_argument("--source-dir", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--bench-iters", type=int, default=200000)
    p.add_argument("--bench", help="glucx-bench (case concurrent)")
    p.add_argument("--analyze", help="glucx-analyze (cases concurrent, strings, foreign, names)")
    p.add_argument("--plugin-dir", help="the glucx Babeltrace 2 plugin's directory (case foreign: "
                   "the babeltrace2 CLI sink too)")
    p.add_argument("case", choices=sorted(CASES))
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    try:
        CASES[a.case](a)
    except (Failure, PidListError) as e:
        print("FAIL %s: %s" % (a.case, e), file=sys.stderr)
        return 1
    except subprocess.TimeoutExpired as e:
        print("FAIL %s: timed out: %s" % (a.case, e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
