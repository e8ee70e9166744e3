#!/usr/bin/env python3
"""Merge the outputs of scripts/compare.sh into tables, and check the issue-15 targets.

Inputs (one directory): glucx_<coll>.<k>.txt (glucx-bench rows), mpi_<coll>.<k>.txt,
gloo_<coll>.<k>.txt (PyTorch Gloo over TCP), glooucx_<coll>.<k>.txt (PyTorch Gloo over glucx) and
glucxpg_<coll>.<k>.txt (PyTorch's glucx backend) ("size time_us" rows) for runs k = 1..K,
memcpy.<k>.txt (or one memcpy.txt; "size GB/s" rows), protocol.txt (compare.sh's protocol
header, '# key: value' lines) and ddp/ddp_<variant>.<k>.json (ddp_resnet.py --all --out). Comment
lines start with '#'. The time of a size is the median over the K runs (statistics.median: the
mean of the two middle runs when K is even); a DDP variant's step time is the median over its runs
of each run's median step.

usage: report.py DIR --ranks N [--colls C ...] [--part tables|targets|all] [--loaded]
                 [--protocol-runs K]
  --part tables   (default all) per collective the library table, then the PyTorch-level table
                  (Gloo TCP, Gloo over glucx, glucx backend); prints text and writes DIR/table.md
  --part targets  the issue-15 targets (below), each with the measured ratio and met / NOT met,
                  as Markdown on stdout
  --loaded        the run was under a background load (compare.sh --load): selects the loaded
                  targets; without it the run counts as quiet
  --protocol-runs the protocol's minimum number of runs (default 5); fewer runs in a table or
                  target are flagged "BELOW PROTOCOL"

busbw = size / time x factor (allreduce 2(n-1)/n; allgather, alltoall (n-1)/n), the same rule
glucx-bench prints, applied here to every library's time so the columns are comparable. At one
size, glucx busbw / Open MPI busbw = Open MPI time / glucx time.

Targets (issue 15), each from this run's medians, nothing else:
  small    1-4 KiB allreduce, allgather, alltoall: glucx time / Open MPI time, the worst (largest)
           over the sizes, <= 1.5 loaded, <= 1.2 quiet
  busbw    allgather and alltoall at 64 KiB-16 MiB: glucx busbw / Open MPI busbw, the worst
           (smallest) over the sizes, >= 1.0 (quiet and loaded)
  pytorch  all_reduce <= 4 KiB: Gloo TCP time / Gloo-over-glucx time and Gloo TCP time /
           glucx-backend time, each the worst (smallest) over the sizes, >= 10 (loaded runs only)
  ddp      DDP ResNet-18 step on the glucx backend / no-communication floor (nocomm) <= 1.10
           (quiet runs only)
A target whose range is not fully measured says "incomplete" (with the ratio over what was
measured); one whose data are missing says "not measured"; one defined for the other load
condition says "n/a".
"""
import argparse
import glob
import json
import os
import re
import statistics
import sys

FACTOR = {
    "allreduce": lambda n: 2.0 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
}


def read_pairs(path):
    rows = {}
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            parts = line.split()
            try:
                rows[int(parts[0])] = float(parts[1])
            except (ValueError, IndexError):
                pass
    return rows


def read_glucx(path):
    """size -> (time_us, algo, wrong) from glucx-bench's table."""
    rows = {}
    if not os.path.exists(path):
        return rows
    cols = None
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                toks = line[1:].split()
                if toks[:2] == ["size", "count"]:
                    cols = toks
                continue
            if cols is None or not line.strip():
                continue
            vals = line.split()
            if len(vals) != len(cols):
                continue
            row = dict(zip(cols, vals))
            rows[int(row["size"])] = (float(row["time"]), row["algo"], row["#wrong"])
    return rows


def runs(d, prefix):
    """The run files <prefix>.<k>.txt in d (k a positive integer), by k."""
    pat = re.compile(re.escape(prefix) + r"\.([0-9]+)\.txt$")
    found = []
    for f in glob.glob(os.path.join(d, f"{glob.escape(prefix)}.*.txt")):
        m = pat.search(os.path.basename(f))
        if m:
            found.append((int(m.group(1)), f))
    return [f for _, f in sorted(found)]


def median_pairs(files):
    per = {}
    for f in files:
        for size, t in read_pairs(f).items():
            per.setdefault(size, []).append(t)
    return {s: statistics.median(v) for s, v in per.items()}, per


def median_glucx(files):
    per, first = {}, {}
    for f in files:
        for size, (t, alg, wrong) in read_glucx(f).items():
            per.setdefault(size, []).append(t)
            first.setdefault(size, (alg, wrong))
    return {s: (statistics.median(v), *first[s]) for s, v in per.items()}, per


def memcpy_medians(d):
    """size -> median GB/s over memcpy.<k>.txt (or the one memcpy.txt of older runs)."""
    files = runs(d, "memcpy") or [os.path.join(d, "memcpy.txt")]
    return median_pairs(files)[0]


def nruns(all_runs):
    """The smallest number of runs behind any size's median (0 without data)."""
    return min((len(v) for v in all_runs.values()), default=0)


def fmt_size(b):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= div and b % div == 0:
            return f"{b // div}{unit}"
    return str(b)


def ratio(a, b):
    return a / b if a and b else float("nan")


def spread(all_runs):
    """The ratio of the slowest to the fastest run at the worst size (1.0 for one run)."""
    worst = 1.0
    for v in all_runs.values():
        if len(v) > 1 and min(v) > 0:
            worst = max(worst, max(v) / min(v))
    return worst


def table(d, coll, n):
    g, g_all = median_glucx(runs(d, f"glucx_{coll}"))
    m, m_all = median_pairs(runs(d, f"mpi_{coll}"))
    t, t_all = median_pairs(runs(d, f"gloo_{coll}"))
    mc = memcpy_medians(d)
    fac = FACTOR[coll](n)

    def bw(size, us):
        return size / (us * 1e3) * fac if us else float("nan")

    head = ["size", "glucx us", "glucx busbw", "algo", "OMPI us", "OMPI busbw", "Gloo us",
            "Gloo busbw", "glucx/OMPI time", "glucx/OMPI busbw", "glucx/Gloo busbw",
            "memcpy GB/s", "glucx busbw/memcpy"]
    rows = []
    summary = {"lat": None, "ompi": [], "gloo": [], "mem": []}
    for size in sorted(set(g) | set(m) | set(t)):
        gt, alg, _ = g.get(size, (None, "-", "-"))
        mt, tt, mbw = m.get(size), t.get(size), mc.get(size)
        gb, mb, tb = bw(size, gt), bw(size, mt), bw(size, tt)
        r_time, r_ompi, r_gloo = ratio(gt, mt), ratio(gb, mb), ratio(gb, tb)
        r_mem = ratio(gb, mbw)
        rows.append([fmt_size(size), f"{gt:.2f}" if gt else "-", f"{gb:.3f}", alg,
                     f"{mt:.2f}" if mt else "-", f"{mb:.3f}", f"{tt:.2f}" if tt else "-",
                     f"{tb:.3f}", f"{r_time:.2f}", f"{r_ompi:.2f}", f"{r_gloo:.2f}",
                     f"{mbw:.2f}" if mbw else "-", f"{r_mem:.2f}"])
        if size == 1024 and gt and mt:
            summary["lat"] = r_time
        if (1 << 20) <= size <= (16 << 20):
            summary["ompi"].append(r_ompi)
            summary["gloo"].append(r_gloo)
            summary["mem"].append(r_mem)
    summary["spread"] = (spread(g_all), spread(m_all), spread(t_all),
                         max((len(v) for v in g_all.values()), default=0))
    summary["runs"] = {"glucx": nruns(g_all), "OpenMPI": nruns(m_all), "GlooTCP": nruns(t_all)}
    return head, rows, summary


TORCH_COLS = (("gloo", "Gloo-TCP"), ("glooucx", "Gloo-glucx"), ("glucxpg", "glucx-backend"))


def torch_table(d, coll, n):
    """PyTorch level: Gloo TCP, Gloo over glucx, the glucx backend; rows and summary, or None
    when neither glucx path has data."""
    med, all_runs = {}, {}
    for prefix, _ in TORCH_COLS:
        med[prefix], all_runs[prefix] = median_pairs(runs(d, f"{prefix}_{coll}"))
    if not med["glooucx"] and not med["glucxpg"]:
        return None
    fac = FACTOR[coll](n)

    def bw(size, us):
        return f"{size / (us * 1e3) * fac:.3f}" if us else "-"

    # at a given size, TCP time / glucx-path time is also glucx-path busbw / TCP busbw
    head = ["size"]
    for _, name in TORCH_COLS:
        head += [f"{name} us", f"{name} busbw"]
    head += ["TCP / Gloo-glucx time", "TCP / glucx-backend time"]
    rows = []
    summary = {"small": {"glooucx": [], "glucxpg": []}, "large": {"glooucx": [], "glucxpg": []}}
    for size in sorted(set().union(*[set(v) for v in med.values()])):
        tt = med["gloo"].get(size)
        row = [fmt_size(size)]
        for prefix, _ in TORCH_COLS:
            x = med[prefix].get(size)
            row += [f"{x:.2f}" if x else "-", bw(size, x)]
        for prefix in ("glooucx", "glucxpg"):
            x = med[prefix].get(size)
            r = ratio(tt, x)
            row.append(f"{r:.2f}" if tt and x else "-")
            if tt and x and size <= 4096:
                summary["small"][prefix].append((size, r))
            if tt and x and (1 << 20) <= size <= (16 << 20):
                summary["large"][prefix].append((size, r))
        rows.append(row)
    summary["spread"] = {p: spread(all_runs[p]) for p, _ in TORCH_COLS}
    summary["runs"] = {name: nruns(all_runs[p]) for p, name in TORCH_COLS if all_runs[p]}
    return head, rows, summary


def torch_verdicts(s, coll):
    """Summary lines of the PyTorch-level table (the targets are in targets())."""
    lines = []
    for prefix, name in TORCH_COLS[1:]:
        if s["small"][prefix]:
            worst = min(s["small"][prefix], key=lambda x: x[1])
            lines.append(f"<= 4 KiB time Gloo-TCP/{name} min = {worst[1]:.2f} (at "
                         f"{fmt_size(worst[0])}), max = "
                         f"{max(r for _, r in s['small'][prefix]):.2f}")
        if s["large"][prefix]:
            worst = min(s["large"][prefix], key=lambda x: x[1])
            lines.append(f"1-16 MiB busbw {name}/Gloo-TCP min = {worst[1]:.2f} (at "
                         f"{fmt_size(worst[0])}), max = "
                         f"{max(r for _, r in s['large'][prefix]):.2f}")
    k = max(s["runs"].values(), default=0)
    if k > 1:
        lines.append("run-to-run spread (slowest/fastest, worst size): " + ", ".join(
            f"{name} {s['spread'][p]:.2f}x" for p, name in TORCH_COLS if p in s["spread"]
            and name in s["runs"]))
    return lines


def render_text(head, rows):
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(head)]
    out = ["  ".join(h.rjust(w) for h, w in zip(head, widths))]
    for r in rows:
        out.append("  ".join(c.rjust(w) for c, w in zip(r, widths)))
    return "\n".join(out)


def render_md(head, rows, align="---:"):
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(align for _ in head) + "|"]
    for r in rows:
        out.append("| " + " | ".join(r) + " |")
    return "\n".join(out)


def verdicts(s, coll):
    """Summary lines; the targets of this table's earlier issue (docs/perf.md) are defined for
    allreduce only."""
    target = coll == "allreduce"

    def verdict(ok, text):
        return f" {text}: {'met' if ok else 'NOT met'}" if target else ""

    lines = []
    if s["lat"] is not None:
        lines.append(f"1 KiB latency glucx/OpenMPI = {s['lat']:.2f}"
                     + verdict(s["lat"] <= 1.5, "(target <= 1.5)"))
    if s["ompi"]:
        lo = min(s["ompi"])
        lines.append(f"1-16 MiB busbw glucx/OpenMPI min = {lo:.2f}, max = {max(s['ompi']):.2f}"
                     + verdict(lo >= 1.0, "(target >= 1.0)"))
    if s["gloo"]:
        lo = min(s["gloo"])
        lines.append(f"1-16 MiB busbw glucx/GlooTCP min = {lo:.2f}, max = {max(s['gloo']):.2f}"
                     + verdict(lo >= 4.0, "(target >= 4.0)"))
    if s.get("spread") and s["spread"][3] > 1:
        g, m, t, k = s["spread"]
        lines.append(f"run-to-run spread over {k} runs (slowest/fastest, worst size): glucx "
                     f"{g:.2f}x, OpenMPI {m:.2f}x, GlooTCP {t:.2f}x")
    if s["mem"]:
        lines.append(f"1-16 MiB glucx busbw / memcpy bandwidth: {min(s['mem']):.2f} .. "
                     f"{max(s['mem']):.2f}")
    return lines


def read_protocol(d):
    """compare.sh's protocol header (protocol.txt) as 'key: value' lines, [] without it."""
    try:
        with open(os.path.join(d, "protocol.txt")) as f:
            return [ln[1:].strip() for ln in f if ln.startswith("#") and ln[1:].strip()]
    except OSError:
        return []


def short_protocol(proto):
    """One line for a table header from protocol.txt's lines: the load (its command), the
    pinning policy, and the 1-minute load averages before the load, at the first run and at the
    last record."""
    kv = {}
    for ln in proto:
        key, _, val = ln.partition(": ")
        kv[key] = val
    parts = []
    if "load" in kv:
        parts.append("load: " + kv["load"].split(" (PID")[0])
    if "pinning" in kv:
        parts.append("pinning: " + kv["pinning"].split(":")[0])
    avgs = [(k[len("load average "):], v) for k, v in kv.items() if k.startswith("load average")]
    if avgs:
        one = []
        for k, v in avgs:  # "before the load: 0.1 0.2 0.3; at the first run: 0.4 0.5 0.6"
            for piece in (k + ": " + v).split("; "):
                when, _, nums = piece.rpartition(": ")
                if nums.split():
                    one.append(f"{when} {nums.split()[0]}")
        parts.append("1-min load average " + ", ".join(one))
    return "; ".join(parts)


def runs_caption(counts, protocol_runs):
    """'runs (median): glucx 5, OpenMPI 5' plus the BELOW PROTOCOL flag when any is short."""
    have = {k: v for k, v in counts.items() if v}
    text = "runs per size (median): " + ", ".join(f"{k} {v}" for k, v in have.items())
    low = min(have.values(), default=0)
    if low < protocol_runs:
        text += f" -- BELOW PROTOCOL ({low} < {protocol_runs} runs)"
    return text


# ---- issue-15 targets ---------------------------------------------------------------------------

def grid(lo, hi):
    """The sweep's sizes (powers of two from 1 KiB, as compare.sh's default --min) in [lo, hi]."""
    out, s = [], 1024
    while s <= hi:
        if s >= lo:
            out.append(s)
        s *= 2
    return out


def in_range(common, lo, hi, n):
    """The measured sizes in [lo, hi] and the grid points of [lo, hi] with no measured size.
    A size rounded down to a multiple of n elements (allgather, alltoall with n ranks) counts
    for its grid point."""
    sizes = sorted(s for s in common if lo - 4 * n < s <= hi)
    missing = [p for p in grid(lo, hi) if not any(p - 4 * n < s <= p for s in sizes)]
    return sizes, missing


def ddp_medians(d):
    """variant -> (median over runs of each run's median step ms, runs) from DIR/ddp/*.json."""
    per = {}
    pat = re.compile(r"^ddp_(.+)\.([0-9]+)\.json$")
    for f in sorted(glob.glob(os.path.join(d, "ddp", "ddp_*.json"))):
        m = pat.match(os.path.basename(f))
        if not m:
            continue
        with open(f) as fh:
            res = json.load(fh)
        per.setdefault(m.group(1), []).append(statistics.median(res["times_ms"]))
    return {v: (statistics.median(x), len(x)) for v, x in per.items()}


def targets(d, colls, n, loaded, protocol_runs):
    """[(target, measured, verdict)] of the issue-15 targets (module doc) from d's medians."""
    out = []
    cond = "loaded" if loaded else "quiet"

    def below(k):
        return f" -- BELOW PROTOCOL ({k} < {protocol_runs} runs)" if k < protocol_runs else ""

    def judge(ok, missing, k):
        v = "met" if ok else "NOT met"
        if missing:
            v = f"incomplete ({'/'.join(fmt_size(p) for p in missing)} not measured); " + \
                f"{v} on the measured sizes"
        return v + below(k)

    limit = 1.5 if loaded else 1.2
    for coll in ("allreduce", "allgather", "alltoall"):
        name = f"1-4 KiB {coll}: glucx time <= {limit}x Open MPI's ({cond})"
        if coll not in colls:
            out.append((name, "-", "not measured (collective not in this run)"))
            continue
        g, g_all = median_glucx(runs(d, f"glucx_{coll}"))
        m, m_all = median_pairs(runs(d, f"mpi_{coll}"))
        sizes, missing = in_range(set(g) & set(m), 1024, 4096, n)
        if not sizes:
            out.append((name, "-", "not measured (no 1-4 KiB sizes of both libraries)"))
            continue
        r = {s: g[s][0] / m[s] for s in sizes}
        worst = max(sizes, key=lambda s: r[s])
        out.append((name, f"worst {r[worst]:.2f}x (at {fmt_size(worst)}; " +
                    ", ".join(f"{fmt_size(s)} {r[s]:.2f}" for s in sizes) + ")",
                    judge(r[worst] <= limit, missing, min(nruns(g_all), nruns(m_all)))))
    for coll in ("allgather", "alltoall"):
        name = f"64 KiB-16 MiB {coll}: glucx busbw >= 1.0x Open MPI's ({cond})"
        if coll not in colls:
            out.append((name, "-", "not measured (collective not in this run)"))
            continue
        g, g_all = median_glucx(runs(d, f"glucx_{coll}"))
        m, m_all = median_pairs(runs(d, f"mpi_{coll}"))
        sizes, missing = in_range(set(g) & set(m), 64 << 10, 16 << 20, n)
        if not sizes:
            out.append((name, "-", "not measured (no 64 KiB-16 MiB sizes of both libraries)"))
            continue
        r = {s: m[s] / g[s][0] for s in sizes}  # busbw ratio = inverse time ratio
        worst = min(sizes, key=lambda s: r[s])
        out.append((name, f"worst {r[worst]:.2f}x (at {fmt_size(worst)}), best "
                    f"{max(r.values()):.2f}x",
                    judge(r[worst] >= 1.0, missing, min(nruns(g_all), nruns(m_all)))))
    t, t_all = median_pairs(runs(d, "gloo_allreduce"))
    for prefix, label in (("glooucx", "Gloo over glucx"), ("glucxpg", "glucx backend")):
        name = f"PyTorch all_reduce <= 4 KiB: {label} >= 10x lower latency than Gloo TCP (loaded)"
        u, u_all = median_pairs(runs(d, f"{prefix}_allreduce"))
        # every measured size up to 4 KiB counts; complete when 1, 2 and 4 KiB are there
        missing = in_range(set(t) & set(u), 1024, 4096, n)[1]
        sizes = sorted(s for s in set(t) & set(u) if s <= 4096)
        if not sizes:
            out.append((name, "-", "not measured"))
            continue
        r = {s: t[s] / u[s] for s in sizes}
        worst = min(sizes, key=lambda s: r[s])
        measured = f"worst {r[worst]:.2f}x (at {fmt_size(worst)}), best {max(r.values()):.2f}x"
        if not loaded:
            out.append((name, measured, "n/a (target for a loaded run; this run is quiet)"))
        else:
            out.append((name, measured, judge(r[worst] >= 10.0, missing,
                                              min(nruns(t_all), nruns(u_all)))))
    ddp = ddp_medians(d)
    name = "DDP ResNet-18 step, glucx backend <= 1.10x the no-communication floor (quiet)"
    if "glucx" in ddp and "nocomm" in ddp:
        r = ddp["glucx"][0] / ddp["nocomm"][0]
        measured = (f"{r:.3f}x ({ddp['glucx'][0]:.1f} ms / {ddp['nocomm'][0]:.1f} ms)")
        if "compute" in ddp:
            measured += f"; {ddp['glucx'][0] / ddp['compute'][0]:.3f}x compute-only"
        if loaded:
            out.append((name, measured, "n/a (target for a quiet run; this run is loaded)"))
        else:
            out.append((name, measured, judge(r <= 1.10, [],
                                              min(ddp["glucx"][1], ddp["nocomm"][1]))))
    else:
        out.append((name, "-", "not measured (needs the DDP variants glucx and nocomm)"))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dir")
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--colls", nargs="+", default=["allreduce"])
    p.add_argument("--part", choices=["tables", "targets", "all"], default="all")
    p.add_argument("--loaded", action="store_true")
    p.add_argument("--protocol-runs", type=int, default=5)
    a = p.parse_args()
    proto = read_protocol(a.dir)
    short = [short_protocol(proto)] if proto else []
    if a.part in ("tables", "all"):
        md = ["Protocol: " + "; ".join(proto), ""] if proto else []

        def emit(title, head, rows, runs, lines):
            """One table to stdout and to table.md: title, caption, rows, verdict lines."""
            cap = [runs_caption(runs, a.protocol_runs)] + short
            print(f"\n== {title}")
            for c in cap:
                print("   " + c)
            print(render_text(head, rows))
            for v in lines:
                print("   " + v)
            md.extend([f"### {title}", "", "; ".join(cap), "", render_md(head, rows), ""])
            md.extend([f"- {v}" for v in lines] + [""])

        for coll in a.colls:
            sum_ = " sum" if coll == "allreduce" else ""
            head, rows, s = table(a.dir, coll, a.ranks)
            emit(f"{coll}, float32{sum_}, {a.ranks} ranks (time in us, busbw and memcpy in GB/s)",
                 head, rows, s["runs"], verdicts(s, coll))
            tt = torch_table(a.dir, coll, a.ranks)
            if tt is None:
                continue
            head, rows, s = tt
            emit(f"PyTorch {coll} (torch.distributed), float32{sum_}, {a.ranks} ranks: Gloo's TCP "
                 f"transport, Gloo over glucx (GLOO_DEVICE_TRANSPORT=UCX), the glucx backend "
                 f"(time in us, busbw in GB/s)", head, rows, s["runs"], torch_verdicts(s, coll))
        with open(os.path.join(a.dir, "table.md"), "w") as f:
            f.write("\n".join(md))
    if a.part in ("targets", "all"):
        rows = targets(a.dir, a.colls, a.ranks, a.loaded, a.protocol_runs)
        print(f"\n### Issue-15 targets ({'loaded' if a.loaded else 'quiet'} run; from this "
              f"run's medians)\n")
        for c in proto:
            print(f"- {c}")
        print()
        print(render_md(["target", "measured", "verdict"], [list(r) for r in rows], "---"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
