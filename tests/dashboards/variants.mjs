// Report variants for the dashboard's browser test.
//
// makeHostile(report): a copy in which every free-text string ends in HOSTILE (closing script
// tag, an element with an event handler, quotes, an ampersand, a line separator), which must reach
// the page as literal text. Strings whose values the schema fixes (enums, comm ids) stay as they
// are, so the variant is still a valid report; it is also marked partial with hostile reasons and
// discarded events, and its first iteration is incomplete.

export const HOSTILE = ' </script><script>window.__glucxInjected=1</script>' +
  '<img src=x onerror="window.__glucxInjected=1"> "q" \'s\' &amp; \u2028end';

const FIXED = new Set(['bottleneck', 'iteration_source', 'kind', 'source', 'saving_source', 'comm_id']);

function walk(v, key) {
  if (typeof v === 'string') return FIXED.has(key) ? v : v + HOSTILE;
  if (Array.isArray(v)) return v.map((x) => walk(x, key));
  if (v && typeof v === 'object') {
    const out = {};
    for (const [k, x] of Object.entries(v)) out[k] = walk(x, k);
    return out;
  }
  return v;
}

export function makeHostile(report) {
  const r = walk(report, '');
  r.trace.partial = true;
  r.trace.partial_reasons = [`rank 3 ends early: truncated trace${HOSTILE}`, `"quoted" reason & more${HOSTILE}`];
  r.trace.discarded_events = 1234;
  r.trace.discarded_packets = 2;
  r.trace.warnings = [`clock offset of host node-b estimated from 3 messages${HOSTILE}`];
  if (r.iterations && r.iterations.length) r.iterations[0].complete = false;
  if (r.links && r.links.length > 1) {
    r.links[1].announced = false;
    r.links[1].bandwidth_Bps = null;
    r.links[1].utilisation = null;
    r.links[1].efficiency = null;
  }
  return r;
}

// makeFailed(report): the example as a run that failed in its last iteration: the verdict names
// the failure (bottleneck 'failed', no per-iteration cost) as glucx-analyze writes it when the
// trace has an error event or a coll_end that is not OK (analysis/METRICS.md, "Verdict").
export function makeFailed(report) {
  const r = JSON.parse(JSON.stringify(report));
  const comm = (r.trace.comms && r.trace.comms.length) ? r.trace.comms[0].comm_id : '0x1';
  r.verdict = {
    sentence: 'The run failed at 1.25 s: rank 2 reported ERR_MISMATCH: allreduce: 4100 bytes from ' +
      'rank 2, 4096 expected (seq 40, peer 2).',
    bottleneck: 'failed',
    subject: 'rank 2',
    cost_ns: 0,
    share: 0,
    failure: { time_ns: 1250000000, event: 'error', comm_id: comm, rank: 2, status: 'ERR_MISMATCH',
      text: 'allreduce: 4100 bytes from rank 2, 4096 expected (seq 40, peer 2).' },
  };
  return r;
}

// makeLarge(report): a bigger run built from the example, for pagination and drawing at scale:
// `iterations` copies of the iterations (shifted in time), 16 ranks with a full mesh of links
// whose utilisation is a deterministic function of (src, dst), and the collectives and decisions
// repeated to `calls` each. Values are arbitrary but self-consistent in shape (schema-valid).
export function makeLarge(report, iterations = 150, calls = 3000) {
  const r = JSON.parse(JSON.stringify(report));
  const its = report.iterations;
  const period = its.length > 1 ? its[1].start_ns - its[0].start_ns : 30000000;
  const shift = (t, k) => t + k * period * its.length;
  r.iterations = [];
  for (let i = 0; i < iterations; i++) {
    const src = its[i % its.length];
    const k = Math.floor(i / its.length);
    const it = JSON.parse(JSON.stringify(src));
    it.index = i;
    it.start_ns = shift(src.start_ns, k);
    it.end_ns = shift(src.end_ns, k);
    for (const rk of it.ranks) { rk.start_ns = shift(rk.start_ns, k); rk.end_ns = shift(rk.end_ns, k); }
    for (const g of it.critical_path.segments) { g.start_ns = shift(g.start_ns, k); g.end_ns = shift(g.end_ns, k); }
    r.iterations.push(it);
  }
  const n = 16;
  const proto = report.links[0];
  r.links = [];
  let id = 0;
  for (let a = 0; a < n; a++) {
    for (let b = 0; b < n; b++) {
      if (a === b) continue;
      const u = ((a * 7 + b * 3) % 11) / 10;
      r.links.push(Object.assign({}, proto, { link_id: id++, src: a, dst: b, dim: (a ^ b) & 1,
        utilisation: u, bytes: Math.round(u * 1e8), critical_path_share: u / 4 }));
    }
  }
  // physical links: the model without a topology file for hosts a (ranks 0-7) and b (8-15):
  // a dimension-0 link per pair of ranks of a host, then one uplink per host to switch 0
  const pproto = report.physical_links[0];
  // per direction: a to b carries 60% of the bytes at the link's of_nominal (the larger), b to a
  // the rest at half of it; utilisation scales with the bytes, the link's the larger
  const dirs = (a, b, bytes, ofn, util) => [
    { from: a, to: b, bytes: Math.round(0.6 * bytes), messages: 3, busy_ns: pproto.busy_ns,
      achieved_Bps: ofn * pproto.bandwidth_Bps, of_nominal: ofn, utilisation: util },
    { from: b, to: a, bytes: bytes - Math.round(0.6 * bytes), messages: 2, busy_ns: pproto.busy_ns,
      achieved_Bps: ofn / 2 * pproto.bandwidth_Bps, of_nominal: ofn / 2, utilisation: util * 2 / 3 },
  ];
  r.physical_links = [];
  let pid = 0;
  for (let h = 0; h < 2; h++) {
    for (let a = 8 * h; a < 8 * h + 8; a++) {
      for (let b = a + 1; b < 8 * h + 8; b++) {
        const u = ((a * 5 + b) % 9) / 10;
        const ea = { kind: 'rank', index: a }, eb = { kind: 'rank', index: b };
        r.physical_links.push(Object.assign({}, pproto, { phys_id: pid++, dim: 0,
          a: ea, b: eb, utilisation: u, busy_share: u, of_nominal: u / 2, bytes: Math.round(u * 1e8),
          messages: 5, critical_path_share: u / 8, directions: dirs(ea, eb, Math.round(u * 1e8), u / 2, u) }));
      }
    }
  }
  for (let h = 0; h < 2; h++) {
    const ea = { kind: 'package', index: h }, eb = { kind: 'switch', index: 0 };
    r.physical_links.push(Object.assign({}, pproto, { phys_id: pid++, dim: 1,
      a: ea, b: eb, utilisation: 0.95, busy_share: 0.95, of_nominal: 0.8, bytes: 9e8, messages: 5,
      critical_path_share: 0.3, directions: dirs(ea, eb, 9e8, 0.8, 0.95) }));
  }
  const comm = r.trace.comms[0];
  comm.size = n;
  comm.ranks = Array.from({ length: n }, (_, i) => ({ rank: i, host: `node-${i < 8 ? 'a' : 'b'}`, package: 0, vpid: 5000 + i }));
  r.trace.ranks_expected = n;
  r.trace.ranks_seen = Array.from({ length: n }, (_, i) => i);
  const rep = (list) => Array.from({ length: calls }, (_, i) => Object.assign({}, list[i % list.length], { seq: i }));
  r.collectives = rep(report.collectives);
  r.decisions = rep(report.decisions);
  return r;
}

// makeHostileDiff(diff): a copy of a diff.json (analysis/diff.schema.json) in which every
// free-text string (run labels and verdicts, names, link labels, the cause, notes) ends in
// HOSTILE; enums the schema fixes stay. A collective group and a decision group get a changed
// algorithm / chosen option (hostile names; made present in both runs if needed) so the changes
// tables are drawn, both runs are partial, and two notes are added (one about mismatched ranks).
const DIFF_FIXED = new Set(['present', 'phase', 'kind', 'statistic', 'collectives_counted']);

function walkDiff(v, key) {
  if (typeof v === 'string') return DIFF_FIXED.has(key) ? v : v + HOSTILE;
  if (Array.isArray(v)) return v.map((x) => walkDiff(x, key));
  if (v && typeof v === 'object') {
    const out = {};
    for (const [k, x] of Object.entries(v)) out[k] = walkDiff(x, k);
    return out;
  }
  return v;
}

export function makeHostileDiff(diff) {
  const d = walkDiff(diff, '');
  d.a.partial = true;
  d.b.partial = true;
  d.notes = d.notes.concat([`rank counts differ: A has 4 ranks, B has 8; 4 are matched${HOSTILE}`,
    `"quoted" note & more${HOSTILE}`]);
  // a group of one run only gets the other run's side copied (schema-valid, if not computed)
  const inBoth = (e) => {
    if (!e.a) e.a = JSON.parse(JSON.stringify(e.b));
    if (!e.b) e.b = JSON.parse(JSON.stringify(e.a));
    e.present = 'both';
    return e;
  };
  if (d.collectives.length) {
    const e = inBoth(d.collectives.find((x) => x.present === 'both') || d.collectives[0]);
    e.algorithm_changed = true;
    e.b.algorithm = `recursive_doubling${HOSTILE}`;
    e.b.algorithms = { [`recursive_doubling${HOSTILE}`]: 3 };
  }
  if (d.decisions.length) {
    const e = inBoth(d.decisions.find((x) => x.present === 'both') || d.decisions[0]);
    e.changed = true;
    e.b.option = `other${HOSTILE}`;
    e.b.chosen = { [`other${HOSTILE}`]: 3 };
  }
  return d;
}

// makeLargeDiff(diff): a diff whose ranks section has 64 entries (16 per rank of the original,
// numbered 0..63, contributions still largest first), more than the chart draws (40).
export function makeLargeDiff(diff) {
  const d = JSON.parse(JSON.stringify(diff));
  const src = d.ranks.entries;
  if (!src.length) return d;
  const out = [];
  for (let i = 0; i < 64; i++) {
    const e = JSON.parse(JSON.stringify(src[i % src.length]));
    e.rank = i;
    e.contribution_ns = Math.round(src[0].contribution_ns * (64 - i) / 64);
    e.share = d.iteration.delta_ns ? e.contribution_ns / d.iteration.delta_ns : null;
    out.push(e);
  }
  d.ranks.entries = out;
  d.ranks.a_ranks = 64;
  d.ranks.b_ranks = 64;
  d.ranks.matched = 64;
  return d;
}
