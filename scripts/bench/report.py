#!/usr/bin/env python3
"""Merge the outputs of scripts/compare.sh into one table per collective.

Inputs (one directory): glucx_<coll>.<k>.txt (glucx-bench rows), mpi_<coll>.<k>.txt,
gloo_<coll>.<k>.txt (PyTorch Gloo over TCP) and glooucx_<coll>.<k>.txt (PyTorch Gloo over glucx)
("size time_us" rows) for runs k = 1..K, and memcpy.txt ("size GB/s" rows). Comment lines start
with '#'. The time of a size is the median over the K runs. Prints text tables and writes
<dir>/table.md (Markdown, for docs/perf.md): per collective, the library table, then, when the
glooucx files exist, the PyTorch-level table (the same torch.distributed sweep over Gloo's TCP
transport and over glucx; "glucx speedup" = Gloo-TCP time / Gloo-glucx time).

busbw = size / time x factor (allreduce 2(n-1)/n; allgather, alltoall (n-1)/n), the same rule
glucx-bench prints, applied here to every library's time so the columns are comparable.
"""
import argparse
import glob
import os
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
    """The run files <prefix>.<k>.txt in d, by k."""
    files = glob.glob(os.path.join(d, f"{prefix}.*.txt"))
    return sorted(files, key=lambda f: int(f.rsplit(".", 2)[-2]))


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


def fmt_size(b):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= div and b % div == 0:
            return f"{b // div}{unit}"
    return str(b)


def ratio(a, b):
    return a / b if a and b else float("nan")


def table(d, coll, n):
    g, g_all = median_glucx(runs(d, f"glucx_{coll}"))
    m, m_all = median_pairs(runs(d, f"mpi_{coll}"))
    t, t_all = median_pairs(runs(d, f"gloo_{coll}"))
    mc = read_pairs(os.path.join(d, "memcpy.txt"))
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
        if size == 1024:
            summary["lat"] = r_time
        if (1 << 20) <= size <= (16 << 20):
            summary["ompi"].append(r_ompi)
            summary["gloo"].append(r_gloo)
            summary["mem"].append(r_mem)
    # spread of the runs: the ratio of the slowest to the fastest run, worst size, per library
    def spread(all_runs):
        worst = 1.0
        for v in all_runs.values():
            if len(v) > 1 and min(v) > 0:
                worst = max(worst, max(v) / min(v))
        return worst
    summary["spread"] = (spread(g_all), spread(m_all), spread(t_all),
                         max((len(v) for v in g_all.values()), default=0))
    return head, rows, summary


def torch_table(d, coll, n):
    """PyTorch Gloo backend over TCP vs over glucx: rows and summary, or None without data."""
    ucx_files = runs(d, f"glooucx_{coll}")
    if not ucx_files:
        return None
    t, t_all = median_pairs(runs(d, f"gloo_{coll}"))
    u, u_all = median_pairs(ucx_files)
    fac = FACTOR[coll](n)

    def bw(size, us):
        return size / (us * 1e3) * fac if us else float("nan")

    # one ratio: at a given size, TCP time / glucx time is also glucx busbw / TCP busbw
    head = ["size", "Gloo-TCP us", "Gloo-TCP busbw", "Gloo-glucx us", "Gloo-glucx busbw",
            "glucx speedup"]
    rows = []
    summary = {"small": [], "large": []}
    for size in sorted(set(t) | set(u)):
        tt, ut = t.get(size), u.get(size)
        tb, ub = bw(size, tt), bw(size, ut)
        speedup = ratio(tt, ut)
        rows.append([fmt_size(size), f"{tt:.2f}" if tt else "-", f"{tb:.3f}",
                     f"{ut:.2f}" if ut else "-", f"{ub:.3f}", f"{speedup:.2f}"])
        if size <= 4096 and tt and ut:
            summary["small"].append((size, speedup))
        if (1 << 20) <= size <= (16 << 20) and tt and ut:
            summary["large"].append((size, speedup))

    def spread(all_runs):
        worst = 1.0
        for v in all_runs.values():
            if len(v) > 1 and min(v) > 0:
                worst = max(worst, max(v) / min(v))
        return worst
    summary["spread"] = (spread(t_all), spread(u_all),
                         max((len(v) for v in u_all.values()), default=0))
    return head, rows, summary


def torch_verdicts(s, coll):
    """Targets (allreduce only): <= 4 KiB latency at least 10x lower over glucx than over Gloo
    TCP; 1-16 MiB busbw at least 3x higher."""
    target = coll == "allreduce"

    def verdict(ok, text):
        return f" {text}: {'met' if ok else 'NOT met'}" if target else ""

    lines = []
    if s["small"]:
        worst = min(s["small"], key=lambda x: x[1])
        lines.append(f"<= 4 KiB time Gloo-TCP/Gloo-glucx min = {worst[1]:.2f} (at "
                     f"{fmt_size(worst[0])}), max = {max(r for _, r in s['small']):.2f}"
                     + verdict(worst[1] >= 10.0, "(target >= 10)"))
    if s["large"]:
        worst = min(s["large"], key=lambda x: x[1])
        lines.append(f"1-16 MiB busbw Gloo-glucx/Gloo-TCP min = {worst[1]:.2f} (at "
                     f"{fmt_size(worst[0])}), max = {max(r for _, r in s['large']):.2f}"
                     + verdict(worst[1] >= 3.0, "(target >= 3)"))
    t, u, k = s["spread"]
    if k > 1:
        lines.append(f"run-to-run spread over {k} runs (slowest/fastest, worst size): Gloo-TCP "
                     f"{t:.2f}x, Gloo-glucx {u:.2f}x")
    return lines


def render_text(head, rows):
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(head)]
    out = ["  ".join(h.rjust(w) for h, w in zip(head, widths))]
    for r in rows:
        out.append("  ".join(c.rjust(w) for c, w in zip(r, widths)))
    return "\n".join(out)


def render_md(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---:" for _ in head) + "|"]
    for r in rows:
        out.append("| " + " | ".join(r) + " |")
    return "\n".join(out)


def verdicts(s, coll):
    """Summary lines; the targets (docs/perf.md) are defined for allreduce only."""
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


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dir")
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--colls", nargs="+", default=["allreduce"])
    a = p.parse_args()
    md = []
    for coll in a.colls:
        head, rows, s = table(a.dir, coll, a.ranks)
        title = (f"{coll}, float32{' sum' if coll == 'allreduce' else ''}, {a.ranks} ranks "
                 f"(time in us, busbw and memcpy in GB/s)")
        print(f"\n== {title}")
        print(render_text(head, rows))
        for v in verdicts(s, coll):
            print("   " + v)
        md += [f"### {title}", "", render_md(head, rows), ""]
        md += [f"- {v}" for v in verdicts(s, coll)] + [""]
        tt = torch_table(a.dir, coll, a.ranks)
        if tt is None:
            continue
        head, rows, s = tt
        title = (f"PyTorch {coll} (torch.distributed, gloo backend), float32"
                 f"{' sum' if coll == 'allreduce' else ''}, {a.ranks} ranks: Gloo's TCP transport "
                 f"vs glucx (GLOO_DEVICE_TRANSPORT=UCX) (time in us, busbw in GB/s)")
        print(f"\n== {title}")
        print(render_text(head, rows))
        for v in torch_verdicts(s, coll):
            print("   " + v)
        md += [f"### {title}", "", render_md(head, rows), ""]
        md += [f"- {v}" for v in torch_verdicts(s, coll)] + [""]
    with open(os.path.join(a.dir, "table.md"), "w") as f:
        f.write("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
