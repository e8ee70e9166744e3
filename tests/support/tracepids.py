"""The events of a glucx-trace recording that belong to its own command.

LTTng-UST records every traced process of the user in each session, so a trace may also hold
the events of another traced job running at the same time (another test, a user's job).
`glucx-trace record -o DIR` lists the recorded command's processes in DIR/glucx-pids (EVENTS.md,
"Concurrent jobs"); glucx-analyze leaves out the events of the processes it does not list, and the
tests that read traces themselves (bt2, the babeltrace2 CLI) do the same through this module.

Shared by the Python test suites (tests/trace, tests/analysis, tests/demo): import it after
putting this directory on sys.path.
"""
import os
import re

PIDS_FILE = "glucx-pids"


class PidListError(Exception):
    """A process list that is missing or not in the format EVENTS.md gives."""


def pid_lines(path):
    """The pids of a glucx-pids file, in file order; every line must be "<decimal pid>\\n"."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise PidListError("cannot read the process list %s: %s" % (path, e.strerror))
    if text and not text.endswith("\n"):
        raise PidListError("%s does not end with a newline: %r" % (path, text[-80:]))
    lines = text.splitlines()
    for line in lines:
        if re.fullmatch(r"[1-9][0-9]*", line) is None:
            raise PidListError("%s: bad line %r" % (path, line))
    return [int(line) for line in lines]


def trace_pids(trace_dir):
    """The set of processes of the command recorded into trace_dir (glucx-trace record's -o DIR).
    A recording without its process list, or with an empty one, is an error: nothing could tell
    its events from another job's."""
    path = os.path.join(trace_dir, PIDS_FILE)
    pids = set(pid_lines(path))
    if not pids:
        raise PidListError("%s lists no process: glucx-trace did not record the command's pids"
                           % path)
    return pids


def split(events, pids, vpid=lambda ev: ev["vpid"]):
    """(own, foreign): the events whose process (vpid(event)) pids lists, and the others, each
    in the given order."""
    own, foreign = [], []
    for ev in events:
        (own if vpid(ev) in pids else foreign).append(ev)
    return own, foreign


def own(events, pids, vpid=lambda ev: ev["vpid"]):
    """The events whose process (vpid(event)) pids lists, in the given order."""
    return split(events, pids, vpid)[0]
