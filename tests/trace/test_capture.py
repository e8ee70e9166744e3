#!/usr/bin/python3
"""glucx-trace's shared session daemon, and both tools on a full disk.

    test_capture.py --glucx-trace EXE --emit EXE --analyze EXE --source-dir DIR --work DIR
                    [--rounds N] [--stress] CASE

Every case runs in a private mount namespace (the script re-executes itself under
`unshare --mount`) with its own tmpfs on /run and /dev/shm: the LTTng session daemon, its
sockets, LTTng-UST's shared memory and glucx-trace's lock (/run/glucx-trace) are this test's
alone, so session daemons of other jobs on the machine neither disturb it nor are touched by it,
and every mount goes away with the namespace even if the test is killed.

  daemon_shared    ROUNDS rounds of 4 glucx-trace record started at once (each command: emit
                   record 2, then 1 s so sessions overlap): every one exits 0, its DIR/glucx-pids
                   lists its own 2 processes, which recorded exactly the events emit.c documents
                   (checked field by field against values computed here), and every other
                   process in its trace belongs to another command of the round; after each
                   round no session daemon answers, the daemons glucx-trace said it started are
                   gone and its state file is gone.
  daemon_orphan    a glucx-trace that started the daemon is killed with SIGKILL mid-run: the
                   daemon survives it (orphan); the next glucx-trace records normally, destroys
                   the dead one's session (whose trace becomes readable) and stops the orphan.
  daemon_external  a session daemon started outside glucx-trace: 3 glucx-trace at once use it,
                   record their events, and leave it running.
  fulldisk_trace   glucx-trace into a 256 KiB tmpfs: fails, naming DIR and "no space left on
                   device", never "trace written"; glucx-analyze on what was written says the
                   trace is empty/cut (no Babeltrace internals); then fill levels where either
                   the trace is whole and read back complete, or glucx-trace fails as above.
  fulldisk_analyze glucx-analyze writing into a tmpfs with 0, 4, 8, ... KiB free: either it
                   succeeds and every output equals the output of a run on a roomy disk, or it
                   fails naming the output file and "No space left on device" and leaves no
                   output under a final name (an earlier run's outputs stay as they were).
--stress runs `stress-ng --cpu 2` during the case (flakiness check on a loaded machine).
Exit 0 pass, 1 fail, 77 skipped (not root: no namespace, no tmpfs).
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_trace as T  # noqa: E402  (reading traces, the events emit.c records)
from test_trace import Failure, check  # noqa: E402

SKIP = 77
STATE_DIR = "/run/glucx-trace"
WAIT = 180  # s, bound on any one glucx-trace run (a loaded 2-core machine)


# ---- processes --------------------------------------------------------------------------------

def proc_stat(pid):
    """(name, state, starttime) of a process, or None."""
    try:
        s = open("/proc/%d/stat" % pid).read()
    except OSError:
        return None
    name = s[s.index("(") + 1:s.rindex(")")]
    rest = s[s.rindex(")") + 2:].split()
    return name, rest[0], int(rest[19])


def alive(pid, start=None, name=None):
    """Whether pid runs (not a zombie), with that starttime / command name if given."""
    st = proc_stat(pid)
    return (st is not None and st[1] not in "ZXx" and (start is None or st[2] == start) and
            (name is None or st[0] == name))


def stop_process(pid, start):
    """End a process this test started (directly or through glucx-trace), bounded."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not alive(pid, start):
            return
        os.kill(pid, sig)
        deadline = time.monotonic() + 20
        while alive(pid, start) and time.monotonic() < deadline:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
            time.sleep(0.05)


def env_clean():
    e = dict(os.environ)
    e.pop("LD_PRELOAD", None)
    e.pop("GLUCX_TRACE", None)
    e.pop("GLUCX_TRACE_PIDS", None)
    return e


def read_state():
    """glucx-trace's state file: {"daemon": (pid, start) or None, "users": [(pid, start)]}."""
    path = os.path.join(STATE_DIR, "sessiond.state")
    st = {"daemon": None, "users": []}
    if not os.path.exists(path):
        return None
    for line in open(path):
        f = line.split()
        if len(f) == 3 and f[0] == "daemon":
            st["daemon"] = (int(f[1]), int(f[2]))
        elif len(f) == 3 and f[0] == "user":
            st["users"].append((int(f[1]), int(f[2])))
    return st


def daemon_answers():
    """Whether a session daemon answers in this namespace (`lttng list` connects to it)."""
    p = subprocess.run(["lttng", "list"], capture_output=True, text=True, timeout=60,
                       env=env_clean())
    return p.returncode == 0


class Cleanup:
    """Session daemons this test caused to run: ended on every path."""

    def __init__(self):
        self.daemons = {}  # pid -> starttime

    def note_started(self, err):
        for m in re.finditer(r"started lttng-sessiond \(pid (\d+)\)", err):
            pid = int(m.group(1))
            st = proc_stat(pid)
            self.daemons.setdefault(pid, st[2] if st else None)
        return [int(m.group(1)) for m in re.finditer(r"started lttng-sessiond \(pid (\d+)\)", err)]

    def run(self):
        st = read_state()
        if st and st["daemon"]:
            self.daemons.setdefault(*st["daemon"])
        for pid, start in self.daemons.items():
            if start is not None and alive(pid, start):
                print("cleanup: stopping lttng-sessiond %d" % pid)
                stop_process(pid, start)


# ---- recording -------------------------------------------------------------------------------

def start_record(a, out_dir, command, err_path, **kw):
    return subprocess.Popen([a.glucx_trace, "record", "-o", out_dir, "--", *command],
                            stdout=subprocess.PIPE, stderr=open(err_path, "w"), text=True,
                            env=env_clean(), **kw)


def finish(p, err_path, what):
    try:
        out, _ = p.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise Failure("%s did not end within %d s" % (what, WAIT))
    return p.returncode, out, open(err_path).read()


def emit_command(a, nprocs, linger_s):
    """emit record NPROCS, then LINGER_S seconds (so that sessions overlap)."""
    return ["sh", "-c", '"$0" record %d && exec sleep %s' % (nprocs, linger_s), a.emit]


def check_own_events(a, d, emit_out, nprocs, where):
    """DIR's process list holds the emit processes, which recorded exactly emit_all()'s events
    (values computed by test_trace.expected_events); returns (listed pids, vpids of the trace)."""
    info = T.kv(emit_out)
    check("pid" in info, "%s: emit did not run: %r" % (where, emit_out))
    events, discarded = T.read_trace(d)
    check(discarded == 0, "%s: %d events discarded" % (where, discarded))
    listed = set(T.pid_lines(os.path.join(d, "glucx-pids")))
    by_pid = {}
    for ev in events:
        if ev["vpid"] in listed:
            by_pid.setdefault(ev["vpid"], []).append(ev)
    check(len(by_pid) == nprocs and int(info["pid"]) in by_pid,
          "%s: events of processes %s, expected %d including emit's %s"
          % (where, sorted(by_pid), nprocs, info["pid"]))
    en = T.Enums(a.source_dir)
    framework = info.get("framework_comm_id") == "core"
    for pid, evs in by_pid.items():
        r = dict(evs[0]["fields"])["rank"]
        want = T.expected_events(r, nprocs, en, framework)
        check([e["name"] for e in evs] == ["glucx:" + n for n, _ in want],
              "%s: pid %d recorded %s" % (where, pid, [e["name"] for e in evs]))
        for ev, (name, fields) in zip(evs, want):
            T.compare_fields(ev["fields"], fields, "%s pid %d %s" % (where, pid, name))
    return listed, {ev["vpid"] for ev in events}


def check_no_daemon_left(started, where):
    bad = [pid for pid in started if alive(pid, name="lttng-sessiond")]
    check(not bad, "%s: lttng-sessiond %s started by glucx-trace still runs" % (where, bad))
    check(read_state() is None, "%s: state file still lists %s" % (where, read_state()))
    check(not daemon_answers(), "%s: a session daemon still answers" % where)


# ---- cases: the shared daemon ------------------------------------------------------------------

def case_daemon_shared(a, cleanup):
    n = 4
    starts = 0
    for rnd in range(a.rounds):
        work = T.fresh_dir(os.path.join(a.work, "shared", "round-%d" % rnd))
        os.makedirs(work)
        procs = []
        for i in range(n):
            d = os.path.join(work, "t%d" % i)
            errp = os.path.join(work, "t%d.err" % i)
            procs.append((d, errp, start_record(a, d, emit_command(a, 2, "1"), errp)))
        results = [finish(p, errp, "round %d glucx-trace %d" % (rnd, i))
                   for i, (d, errp, p) in enumerate(procs)]
        started = []
        for i, (rc, out, err) in enumerate(results):
            started += cleanup.note_started(err)
            check(rc == 0, "round %d: glucx-trace %d exited %d:\n%s" % (rnd, i, rc, err))
            check("already running" not in err, "round %d: %s" % (rnd, err))
        lists, vpids = [], []
        for i, ((d, _, _), (rc, out, err)) in enumerate(zip(procs, results)):
            listed, seen = check_own_events(a, d, out, 2, "round %d trace %d" % (rnd, i))
            lists.append(listed)
            vpids.append(seen)
        for i in range(n):
            others = set().union(*[lists[j] for j in range(n) if j != i])
            check(not (lists[i] & others), "round %d: trace %d's processes %s listed by another"
                  % (rnd, i, lists[i] & others))
            stray = vpids[i] - lists[i] - others
            check(not stray, "round %d: trace %d holds events of processes %s of no command"
                  % (rnd, i, sorted(stray)))
        check(started, "round %d: no glucx-trace said it started the session daemon" % rnd)
        check_no_daemon_left(started, "round %d" % rnd)
        starts += len(started)
    print("daemon_shared: %d rounds of %d glucx-trace at once, all exited 0 with their own "
          "events; %d daemons started, each stopped by the last user" % (a.rounds, n, starts))


def wait_line(p, text, what, timeout=60):
    deadline = time.monotonic() + timeout
    out = ""
    while time.monotonic() < deadline:
        line = p.stdout.readline()
        if line == "":
            break
        out += line
        if line.strip() == text:
            return out
    raise Failure("%s: %r not printed within %d s: %r" % (what, text, timeout, out))


def case_daemon_orphan(a, cleanup):
    work = T.fresh_dir(os.path.join(a.work, "orphan"))
    os.makedirs(work)
    dead_dir, errp = os.path.join(work, "killed"), os.path.join(work, "killed.err")
    cmd = ["sh", "-c", '"$0" record 1 && echo emitted && exec sleep 120', a.emit]
    p = start_record(a, dead_dir, cmd, errp, start_new_session=True)
    try:
        out = wait_line(p, "emitted", "the traced command")
        err = open(errp).read()
        started = cleanup.note_started(err)
        check(len(started) == 1, "the first glucx-trace did not start the daemon: %s" % err)
        daemon = started[0]
        st = read_state()
        me = proc_stat(p.pid)
        check(st and st["daemon"] and st["daemon"][0] == daemon and
              st["users"] == [(p.pid, me[2])],
              "state while recording: %s (daemon %d, user %d)" % (st, daemon, p.pid))
        os.killpg(p.pid, signal.SIGKILL)  # glucx-trace and its command; the daemon has its own
    finally:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        p.wait(timeout=60)
    dstart = cleanup.daemons[daemon]
    check(alive(daemon, dstart), "the daemon %d did not survive its glucx-trace" % daemon)

    d, errp2 = os.path.join(work, "next"), os.path.join(work, "next.err")
    rc, out2, err2 = finish(start_record(a, d, [a.emit, "record", "2"], errp2), errp2, "next")
    cleanup.note_started(err2)
    check(rc == 0, "the next glucx-trace exited %d:\n%s" % (rc, err2))
    check("using lttng-sessiond (pid %d), left running by a glucx-trace that is gone" % daemon
          in err2, "the orphan daemon was not adopted:\n%s" % err2)
    check(re.search(r"destroyed session glucx-trace-%d-\d+" % p.pid, err2),
          "the killed glucx-trace's session was not destroyed:\n%s" % err2)
    check_own_events(a, d, out2, 2, "next trace")
    check(not alive(daemon, dstart), "the orphan daemon %d still runs" % daemon)
    check_no_daemon_left([daemon], "after the next glucx-trace")
    # destroying the dead one's session closed its trace: its command's events are readable
    check_own_events(a, dead_dir, out, 1, "killed glucx-trace's trace")
    print("daemon_orphan: glucx-trace %d killed; the next one adopted lttng-sessiond %d, "
          "closed the dead session and stopped the daemon" % (p.pid, daemon))


def case_daemon_external(a, cleanup):
    work = T.fresh_dir(os.path.join(a.work, "external"))
    os.makedirs(work)
    log = open(os.path.join(work, "sessiond.log"), "w")
    ext = subprocess.Popen(["lttng-sessiond", "--no-kernel"], stdout=log, stderr=log,
                           stdin=subprocess.DEVNULL, env=env_clean(), start_new_session=True)
    ext_start = proc_stat(ext.pid)[2]
    try:
        deadline = time.monotonic() + 60
        while not daemon_answers():
            check(ext.poll() is None, "lttng-sessiond exited %s" % ext.returncode)
            check(time.monotonic() < deadline, "lttng-sessiond did not answer within 60 s")
            time.sleep(0.2)
        procs = []
        for i in range(3):
            d, errp = os.path.join(work, "t%d" % i), os.path.join(work, "t%d.err" % i)
            procs.append((d, errp, start_record(a, d, emit_command(a, 2, "0.5"), errp)))
        for i, (d, errp, p) in enumerate(procs):
            rc, out, err = finish(p, errp, "glucx-trace %d" % i)
            check(rc == 0, "glucx-trace %d exited %d:\n%s" % (i, rc, err))
            check(not cleanup.note_started(err), "glucx-trace %d started a daemon:\n%s" % (i, err))
            check_own_events(a, d, out, 2, "trace %d" % i)
        check(alive(ext.pid, ext_start) and ext.poll() is None,
              "the daemon started outside glucx-trace was stopped")
        check(read_state() is None, "glucx-trace recorded a daemon it did not start: %s"
              % read_state())
        check(daemon_answers(), "the outside daemon no longer answers")
    finally:
        stop_process(ext.pid, ext_start)
        ext.wait(timeout=60)
    print("daemon_external: 3 glucx-trace used lttng-sessiond %d and left it running" % ext.pid)


# ---- cases: full disk ---------------------------------------------------------------------------

class Tmpfs:
    """A tmpfs of SIZE mounted on a fresh directory; unmounted on every path."""

    def __init__(self, path, size):
        self.path = T.fresh_dir(path)
        os.makedirs(path)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", path],
                       check=True, timeout=60)

    def fill(self, leave_bytes):
        """A filler file that leaves about LEAVE_BYTES free."""
        sv = os.statvfs(self.path)
        free = sv.f_bfree * sv.f_frsize
        with open(os.path.join(self.path, "filler"), "wb") as f:
            f.write(b"\0" * max(0, free - leave_bytes))

    def free(self):
        sv = os.statvfs(self.path)
        return sv.f_bfree * sv.f_frsize

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        subprocess.run(["umount", self.path], timeout=60)
        return False


INTERNALS = ("comp-addr", "cc-", "params-addr", "so-handle", "status=ERROR")


def check_clear(text, where):
    for s in INTERNALS:
        check(s not in text, "%s: Babeltrace internals in the message (%r):\n%s" % (where, s, text))


def analyze_damaged(a, trace, out, where):
    """glucx-analyze on a trace a full disk damaged: refused or partial, said plainly."""
    p = subprocess.run([a.analyze, trace, "-o", out, "--no-html", "--no-progress"],
                       capture_output=True, text=True, timeout=WAIT, env=env_clean())
    check_clear(p.stderr, where)
    if p.returncode == 2:
        check(re.search(r"metadata is (empty|truncated|cut)", p.stderr) and "full" in p.stderr,
              "%s: refused without saying the metadata is empty/cut by a full disk:\n%s"
              % (where, p.stderr))
        check(not any(os.path.exists(os.path.join(out, f)) for f in OUTPUTS),
              "%s: outputs written for an unreadable trace" % where)
    else:
        check(p.returncode == 0, "%s: glucx-analyze exited %d:\n%s" % (where, p.returncode,
                                                                          p.stderr))
        rep = json.load(open(os.path.join(out, "report.json")))
        reasons = " ".join(rep["trace"]["partial_reasons"])
        check(rep["trace"]["partial"] and re.search(r"empty \(0 bytes\)|ends inside a packet",
                                                     reasons),
              "%s: report not partial for an empty/cut stream: %s" % (where, reasons))
    return p


def case_fulldisk_trace(a, cleanup):
    work = T.fresh_dir(os.path.join(a.work, "fulldisk-trace"))
    os.makedirs(work)
    burst = [a.emit, "burst", "2", "200000"]
    with Tmpfs(os.path.join(work, "mnt"), "256k") as fs:
        d, errp = os.path.join(fs.path, "t"), os.path.join(work, "t.err")
        rc, out, err = finish(start_record(a, d, burst, errp), errp, "glucx-trace")
        cleanup.note_started(err)
        check(rc != 0, "glucx-trace exited 0 on a full disk:\n%s" % err)
        check(d in err and "no space left on device" in err,
              "the message does not name %s and the full disk:\n%s" % (d, err))
        check("trace written" not in err and "0 events discarded" not in err,
              "a failed trace is reported as written:\n%s" % err)
        p = analyze_damaged(a, d, os.path.join(work, "an"), "analyze the full-disk trace")
        print("fulldisk_trace: glucx-trace: %s" % [l for l in err.splitlines()
                                                   if "no space" in l][0][:200])
        print("fulldisk_trace: glucx-analyze (%d): %s" % (p.returncode,
                                                          p.stderr.strip().splitlines()[0][:200]))
    # fill levels: either whole (and read back complete) or a failure that says why
    outcomes = []
    for leave_kib in (0, 16, 48, 96, 160, 320, 640):
        with Tmpfs(os.path.join(work, "mnt"), "4m") as fs:
            fs.fill(leave_kib << 10)
            d, errp = os.path.join(fs.path, "t"), os.path.join(work, "t%d.err" % leave_kib)
            cmd = [a.emit, "burst", "2", "3000"]
            rc, out, err = finish(start_record(a, d, cmd, errp), errp, "glucx-trace")
            cleanup.note_started(err)
            where = "%d KiB free" % leave_kib
            if rc == 0:
                check("trace written" in err, "%s: %s" % (where, err))
                events, discarded = T.read_trace(d)
                own = [e for e in T.own_events(d, events) if e["name"] == "glucx:send_begin"]
                check(len(own) + discarded == 2 * 3000,
                      "%s: glucx-trace exited 0 but the trace holds %d events + %d discarded, "
                      "not %d" % (where, len(own), discarded, 2 * 3000))
                outcomes.append("%s: whole" % where)
            else:
                check(d in err and "no space left on device" in err and
                      "trace written" not in err,
                      "%s: glucx-trace exited %d without naming the full disk:\n%s"
                      % (where, rc, err))
                analyze_damaged(a, d, os.path.join(work, "an%d" % leave_kib), where)
                outcomes.append("%s: ENOSPC" % where)
    check(any("ENOSPC" in o for o in outcomes) and any("whole" in o for o in outcomes),
          "fill levels did not cover both outcomes: %s" % outcomes)
    print("fulldisk_trace: fill levels: %s" % ", ".join(outcomes))


OUTPUTS = ("report.json", "report.txt", "timeline.json", "report.html")


def outputs_of(d):
    got = {}
    for f in OUTPUTS:
        p = os.path.join(d, f)
        if os.path.exists(p):
            got[f] = open(p, "rb").read()
    return got


def comparable(name, data, out_dir):
    """An output with what depends on the output directory (the command line) taken out."""
    if name == "report.json":
        rep = json.loads(data)
        rep.get("tool", {}).pop("command", None)
        return rep
    if name == "report.html":
        return data.replace(out_dir.encode(), b"OUT")
    return data


def case_fulldisk_analyze(a, cleanup):
    work = T.fresh_dir(os.path.join(a.work, "fulldisk-analyze"))
    os.makedirs(work)
    trace, errp = os.path.join(work, "trace"), os.path.join(work, "trace.err")
    rc, out, err = finish(start_record(a, trace, [a.emit, "record", "8"], errp), errp,
                          "glucx-trace")
    cleanup.note_started(err)
    check(rc == 0, "recording the input failed (%d):\n%s" % (rc, err))
    template = os.path.join(work, "template.html")
    with open(template, "w") as f:  # a dashboard template of ~20 KiB: report.html takes pages
        f.write("<html><body><!-- %s -->\n<script>const r = @GLUCX_REPORT_JSON@;</script>"
                "</body></html>\n" % ("x" * 20000))

    def analyze(out_dir):
        return subprocess.run([a.analyze, trace, "-o", out_dir, "--template", template,
                               "--no-progress"], capture_output=True, text=True, timeout=WAIT,
                              env=env_clean())

    ref_dir = os.path.join(work, "ref")
    p = analyze(ref_dir)
    check(p.returncode == 0, "glucx-analyze on a roomy disk failed (%d):\n%s" % (p.returncode,
                                                                                 p.stderr))
    ref = outputs_of(ref_dir)
    check(set(ref) == set(OUTPUTS), "reference outputs: %s" % sorted(ref))
    total = sum(len(v) for v in ref.values())
    old = {f: b"an earlier run's " + f.encode() + b"\n" for f in OUTPUTS}
    failed_files, outcomes = set(), []
    for leave_kib in range(0, (total >> 10) + 40, 4):
        for with_old in (False, True):
            with Tmpfs(os.path.join(work, "mnt"), "1m") as fs:
                out_dir = os.path.join(fs.path, "report")
                os.makedirs(out_dir)
                if with_old:
                    for f, v in old.items():
                        open(os.path.join(out_dir, f), "wb").write(v)
                fs.fill(leave_kib << 10)
                p = analyze(out_dir)
                where = "%d KiB free%s" % (leave_kib, ", earlier outputs" if with_old else "")
                got = outputs_of(out_dir)
                leftovers = [f for f in os.listdir(out_dir) if f not in OUTPUTS]
                check(not leftovers, "%s: left in the output directory: %s" % (where, leftovers))
                check_clear(p.stderr, where)
                if p.returncode == 0:
                    for f in OUTPUTS:
                        check(f in got and comparable(f, got[f], out_dir) ==
                              comparable(f, ref[f], ref_dir),
                              "%s: glucx-analyze exited 0 but %s differs from the reference"
                              % (where, f))
                    outcomes.append("%s: ok" % where)
                    continue
                check(p.returncode == 1, "%s: exit %d:\n%s" % (where, p.returncode, p.stderr))
                m = re.search(r"cannot (?:write|create) (\S+?):? .*No space left on device",
                              p.stderr)
                check(m and m.group(1).startswith(out_dir),
                      "%s: the message does not name an output file and ENOSPC:\n%s"
                      % (where, p.stderr))
                named = os.path.relpath(m.group(1), out_dir)
                failed_files.add(named)
                check(got == (old if with_old else {}),
                      "%s: outputs under their final names after a failure: %s"
                      % (where, {f: len(v) for f, v in got.items()}))
                outcomes.append("%s: failed on %s" % (where, named))
    check(any("ok" in o for o in outcomes) and failed_files,
          "the free space levels did not cover success and failure: %s" % outcomes)
    print("fulldisk_analyze: %d levels; ENOSPC named for %s; e.g. %s" % (
        len(outcomes), sorted(failed_files), "; ".join(outcomes[::6])))


CASES = {"daemon_shared": case_daemon_shared, "daemon_orphan": case_daemon_orphan,
         "daemon_external": case_daemon_external, "fulldisk_trace": case_fulldisk_trace,
         "fulldisk_analyze": case_fulldisk_analyze}


def in_namespace(a):
    """Private /run and /dev/shm (mounts made in this namespace only)."""
    for path in ("/run", "/dev/shm"):
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", path], check=True,
                       timeout=60)
    cleanup = Cleanup()
    stress = None
    if a.stress:
        stress = subprocess.Popen(["stress-ng", "--cpu", "2", "--timeout", "3600", "--quiet"])
    try:
        CASES[a.case](a, cleanup)
    finally:
        if stress is not None:
            stress.terminate()
            stress.wait(timeout=60)
        cleanup.run()


def main():
    p = argparse.ArgumentParser()
    for k in ("glucx-trace", "emit", "analyze", "source-dir", "work"):
        p.add_argument("--" + k, required=True)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--stress", action="store_true")
    p.add_argument("--in-namespace", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("case", choices=sorted(CASES))
    a = p.parse_args()
    a.work = os.path.abspath(a.work)
    if not a.in_namespace:
        if os.geteuid() != 0:
            print("not root: no mount namespace or tmpfs for this test: skipped")
            return SKIP
        os.makedirs(a.work, exist_ok=True)
        cmd = ["unshare", "--mount", "--propagation", "private", "--", sys.executable,
               os.path.abspath(__file__), *sys.argv[1:], "--in-namespace"]
        return subprocess.run(cmd, timeout=3600).returncode
    try:
        in_namespace(a)
    except Failure as e:
        print("FAIL %s: %s" % (a.case, e), file=sys.stderr)
        return 1
    except subprocess.TimeoutExpired as e:
        print("FAIL %s: timed out: %s" % (a.case, e), file=sys.stderr)
        return 1
    print("PASS %s" % a.case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
