#!/usr/bin/python3
"""glucx-bench --validate: every algorithm of a collective, measured against predicted.

Runs glucx-bench --ranks 4 --validate --coll allreduce -b 1K -e 64K --json FILE on this host (one
package: no GLUCX_HOSTID, GLUCX_TOPOLOGY, GLUCX_CALIBRATION) and checks, never the measured
times themselves (a shared machine):
- the column header; every row of the allreduce table (as `glucx-info --algorithms` lists it) at
  every size of the sweep, each with a positive time or reported unsupported (with its reason),
  #wrong 0, and "wrong elements in total: 0 (OK)";
- the predicted times equal the cost functions computed here from the defaults of
  plugin/topo/topo.c for one package (the intra class): ring allreduce
  2(n-1) alpha + 2(n-1)/n m beta + (n-1)/n m gamma and recursive doubling (n a power of two)
  log2(n) (alpha + m beta + m gamma); the text and the JSON agree; error = predicted/time - 1;
- the per-algorithm summary (max |error| at sizes >= 256K) equals the one computed here from the
  rows (a 2-rank run at 256K and 512K), and is n/a where no size reaches 256K;
- an algorithm that declines (allgather recursive_doubling on 3 ranks) is reported unsupported
  and the others run;
- bad combinations exit 2 with a message naming the option; an unwritable --json fails naming it.

usage: test_bench_validate.py --bench BUILD/.../glucx-bench --info BUILD/.../glucx-info --work DIR
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys

# plugin/topo/topo.c: default_cost[GLUCX_LINK_INTRA] and default_gamma_ns_per_byte
INTRA_ALPHA, INTRA_BETA, GAMMA = 1500.0, 0.2, 0.1
COLUMNS = ["size", "count", "type", "redop", "algo", "time", "predicted", "error", "#wrong"]

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)
    return cond


def scale():
    try:
        return max(float(os.environ.get("GLUCX_TEST_TIME_SCALE", "1") or 1), 1.0)
    except ValueError:
        return 1.0


def clean_env():
    env = dict(os.environ)
    for k in ("GLUCX_TUNE", "GLUCX_CALIBRATION", "GLUCX_TOPOLOGY", "GLUCX_HOSTID", "RANK",
              "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK",
              "PMI_SIZE", "GLUCX_STORE"):
        env.pop(k, None)
    return env


def run(prog, args, timeout=None):
    t = timeout if timeout is not None else 600 * scale()
    print("$", prog, " ".join(args), flush=True)
    p = subprocess.run([prog, *args], capture_output=True, text=True, timeout=t, env=clean_env())
    print(p.stdout)
    if p.stderr:
        print(p.stderr, file=sys.stderr)
    return p


def table(info, coll):
    p = subprocess.run([info, "--algorithms"], capture_output=True, text=True, timeout=60,
                       env=clean_env())
    names, cur = [], None
    for line in p.stdout.splitlines():
        if re.match(r"^[a-z_]+:$", line):
            cur = line[:-1]
        elif line.startswith("  ") and cur == coll:
            names.append(line.split()[0])
    return names


def parse_text(out, what):
    """@return ({(algo, size): fields}, {algo: summary text}, notes)"""
    rows, summary, header = {}, {}, False
    unsupported_notes = set()
    for line in out.splitlines():
        if line.startswith("#"):
            cols = line[1:].split()
            if cols == COLUMNS:
                header = True
            m = re.match(r"^# summary: ([a-z0-9_]+): max \|error\| at sizes >= 256K: (.*)$", line)
            if m:
                summary[m.group(1)] = m.group(2)
            m = re.match(r"^# ([a-z0-9_]+) at ([0-9]+) bytes: unsupported: (.+)$", line)
            if m:
                unsupported_notes.add((m.group(1), int(m.group(2))))
            continue
        if not line.strip():
            continue
        check(header, f"{what}: row before the header: {line}")
        f = line.split()
        if not check(len(f) == 9, f"{what}: {len(f)} fields: {line}"):
            continue
        rows[(f[4], int(f[0]))] = f
    check(header, f"{what}: column header {COLUMNS}")
    return rows, summary, unsupported_notes


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def ring_us(n, m):
    return (2 * (n - 1) * INTRA_ALPHA + 2 * (n - 1) / n * m * INTRA_BETA +
            (n - 1) / n * m * GAMMA) / 1e3


def rd_us(n, m):
    lg = int(math.log2(n))
    assert 1 << lg == n
    return lg * (INTRA_ALPHA + m * INTRA_BETA + m * GAMMA) / 1e3


def check_run(what, p, jpath, algs, sizes, n, coll="allreduce"):
    """Common checks of one --validate run; @return the JSON document or None."""
    check(p.returncode == 0, f"{what}: exit {p.returncode}")
    rows, summary, notes = parse_text(p.stdout, what)
    check("# wrong elements in total: 0 (OK)" in p.stdout, f"{what}: no wrong elements")
    try:
        with open(jpath) as f:
            j = json.load(f)
    except (OSError, ValueError) as e:
        check(False, f"{what}: JSON {jpath}: {e}")
        return None
    check(j["format"] == 1 and j["ranks"] == n and j["packages"] == 1 and j["coll"] == coll,
          f"{what}: JSON header")
    check(j["costs"]["bottleneck"] == "intra", f"{what}: one package: the intra class")
    check([a["name"] for a in j["algorithms"]] == algs, f"{what}: JSON algorithms vs the table")
    for a in j["algorithms"]:
        name = a["name"]
        got_sizes = [r["size"] for r in a["results"]]
        check(got_sizes == sizes, f"{what}: {name}: sizes {got_sizes}, expected {sizes}")
        for r in a["results"]:
            f = rows.get((name, r["size"]))
            if not check(f is not None, f"{what}: no text row for {name} at {r['size']}"):
                continue
            check(r["cost_bytes"] == r["size"], f"{what}: {name} at {r['size']}: cost bytes")
            if r["status"] == "unsupported":
                check(f[5] == "unsupported" and (name, r["size"]) in notes and r["note"],
                      f"{what}: {name} at {r['size']}: reported unsupported with a reason")
                continue
            check(r["status"] == "ok", f"{what}: {name} at {r['size']}: status {r['status']}")
            check(r["measured_us"] > 0 and re.fullmatch(r"[0-9]+\.[0-9]{2}", f[5]) is not None,
                  f"{what}: {name} at {r['size']}: a positive time ({f[5]})")
            check(r["wrong"] == 0 and f[8] == "0", f"{what}: {name} at {r['size']}: #wrong 0")
            pred = r["predicted_us"]
            if pred is None:
                check(f[6] == "n/a" and f[7] == "N/A", f"{what}: {name}: n/a prediction")
                continue
            check(abs(float(f[6]) - pred) <= 0.0051, f"{what}: {name} at {r['size']}: text "
                  f"predicted {f[6]} vs JSON {pred}")
            err = (pred / r["measured_us"] - 1) * 100
            check(close(r["error_pct"], err, 1e-9), f"{what}: {name}: error_pct")
            check(abs(float(f[7].rstrip("%")) - err) <= 0.051 + 1e-3 * abs(err),
                  f"{what}: {name} at {r['size']}: text error {f[7]} vs {err}")
            if coll == "allreduce" and name == "ring":
                check(close(pred, ring_us(n, r["size"])),
                      f"{what}: ring at {r['size']}: predicted {pred} vs formula "
                      f"{ring_us(n, r['size'])}")
            if coll == "allreduce" and name == "recursive_doubling" and n & (n - 1) == 0:
                check(close(pred, rd_us(n, r["size"])),
                      f"{what}: recursive_doubling at {r['size']}: predicted {pred} vs formula "
                      f"{rd_us(n, r['size'])}")
        # the summary, recomputed from the rows
        errs = [abs(r["error_pct"]) for r in a["results"]
                if r["status"] == "ok" and r["size"] >= 256 << 10 and r["error_pct"] is not None]
        s = summary.get(name)
        if not check(s is not None, f"{what}: summary line for {name}"):
            continue
        if errs:
            want = f"{max(errs):.1f}% over {len(errs)} size(s)"
            check(s == want and close(a["max_abs_error_pct"], max(errs)),
                  f"{what}: {name}: summary '{s}' vs '{want}'")
        else:
            check(s.startswith("n/a") and a["max_abs_error_pct"] is None,
                  f"{what}: {name}: summary '{s}' should be n/a")
    for name in algs:
        for size in sizes:
            check((name, size) in rows, f"{what}: a row for {name} at {size}")
    return j


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", required=True)
    ap.add_argument("--info", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    timeout_ms = str(int(60000 * scale()))

    allreduce = table(a.info, "allreduce")
    check("ring" in allreduce, f"allreduce table {allreduce}")
    sizes = [1 << k for k in range(10, 17)]  # 1K .. 64K
    jpath = os.path.join(a.work, "allreduce4.json")
    p = run(a.bench, ["--ranks", "4", "--validate", "--coll", "allreduce", "-b", "1K", "-e", "64K",
                      "--timeout-ms", timeout_ms, "--json", jpath])
    check_run("4 ranks 1K-64K", p, jpath, allreduce, sizes, 4)

    # sizes >= 256K: the summary over them (2 ranks, few iterations)
    jpath = os.path.join(a.work, "allreduce2.json")
    p = run(a.bench, ["--ranks", "2", "--validate", "-b", "256K", "-e", "512K", "--iters", "5",
                      "--warmup", "1", "--timeout-ms", timeout_ms, "--json", jpath])
    check_run("2 ranks 256K-512K", p, jpath, allreduce, [256 << 10, 512 << 10], 2)

    # a declining algorithm: allgather recursive doubling needs a power-of-two size
    allgather = table(a.info, "allgather")
    jpath = os.path.join(a.work, "allgather3.json")
    p = run(a.bench, ["--ranks", "3", "--validate", "--coll", "allgather", "-b", "3K", "-e", "6K",
                      "--iters", "5", "--warmup", "1", "--timeout-ms", timeout_ms,
                      "--json", jpath])
    j = check_run("allgather 3 ranks", p, jpath, allgather, [3072, 6144], 3, "allgather")
    if j and "recursive_doubling" in allgather:
        rd = next(x for x in j["algorithms"] if x["name"] == "recursive_doubling")
        check(all(r["status"] == "unsupported" for r in rd["results"]),
              "allgather recursive_doubling on 3 ranks: unsupported")
        check(any(r["status"] == "ok" for x in j["algorithms"] for r in x["results"]),
              "allgather on 3 ranks: the other algorithms ran")

    # --algo restricts the validation to one row
    jpath = os.path.join(a.work, "ring_only.json")
    p = run(a.bench, ["--ranks", "2", "--validate", "--algo", "ring", "-b", "4K", "-e", "4K",
                      "--iters", "5", "--timeout-ms", timeout_ms, "--json", jpath])
    check_run("--algo ring", p, jpath, ["ring"], [4096], 2)

    # errors
    for args, word in ((["--validate", "--put"], "--validate"),
                       (["--validate", "--calibrate", os.path.join(a.work, "c.txt")],
                        "--validate"),
                       (["--json", os.path.join(a.work, "x.json")], "--json"),
                       (["--validate", "--json", ""], "--json")):
        p = run(a.bench, ["--ranks", "2", *args], timeout=60 * scale())
        check(p.returncode == 2 and word in p.stderr, f"{args}: exit {p.returncode}, "
              f"stderr names {word}")
    bad = os.path.join(a.work, "no-such-dir", "v.json")
    p = run(a.bench, ["--ranks", "2", "--validate", "-b", "1K", "-e", "1K", "--iters", "2",
                      "--json", bad])
    check(p.returncode != 0 and f"--json '{bad}'" in p.stderr and "cannot write" in p.stderr,
          f"unwritable --json: exit {p.returncode}")
    print("failures:", len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
