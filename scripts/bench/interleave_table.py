#!/usr/bin/env python3
"""Table of an interleave.sh output directory (docs/perf.md, "Allgather and alltoall").

usage: interleave_table.py OUT [REF]
  OUT  directory written by scripts/bench/interleave.sh
  REF  variant the others are compared with (default: the first name in sorted order)
Prints the load-average range of the runs, then a markdown table: per size the median time (us)
of REF over its runs, and for every other variant its median time and the busbw ratio
variant/REF (= REF's median time / the variant's; busbw is size/time times a factor equal for
both), above 1 meaning the variant is faster. Exit status 2 on a usage error.
"""
import collections
import os
import statistics
import sys


def fmt_size(s):
    return "%dM" % (s >> 20) if s >= 1 << 20 else "%dK" % (s >> 10) if s >= 1024 else str(s)


def main(argv):
    if len(argv) not in (2, 3) or not os.path.isdir(argv[1]):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    out = argv[1]
    data = collections.defaultdict(lambda: collections.defaultdict(list))
    for f in sorted(os.listdir(out)):
        name, _, rnd = f.rpartition(".")
        if not name or not rnd.isdigit():
            continue
        with open(os.path.join(out, f)) as fh:
            for line in fh:
                p = line.split()
                if len(p) == 2:
                    data[name][int(p[0])].append(float(p[1]))
    names = sorted(data)
    if not names:
        print("no results in %s" % out, file=sys.stderr)
        return 2
    ref = argv[2] if len(argv) == 3 else names[0]
    if ref not in data:
        print("no variant %s in %s" % (ref, out), file=sys.stderr)
        return 2
    loads = []
    with open(os.path.join(out, "load")) as fh:
        loads = [float(l.split()[2]) for l in fh if len(l.split()) >= 3]
    if loads:
        print("load average (1 min) before the runs: %.2f-%.2f, median %.2f, %d runs" %
              (min(loads), max(loads), statistics.median(loads), len(loads)))
    others = [n for n in names if n != ref]
    print("| size | %s us | %s |" % (ref, " | ".join("%s us | %s/%s busbw" % (n, n, ref)
                                                    for n in others)))
    print("|---:|---:|%s" % ("---:|---:|" * len(others)))
    for s in sorted(data[ref]):
        m = statistics.median(data[ref][s])
        row = "| %s | %.2f |" % (fmt_size(s), m)
        for n in others:
            v = data[n].get(s)
            row += " %.2f | %.2f |" % (statistics.median(v), m / statistics.median(v)) if v \
                else " - | - |"
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
