/* glucx report dashboard: renders the report.json that glucx-analyze put into
 * the script element with id "glucx-report" (schema: analysis/report.schema.json,
 * definitions: analysis/METRICS.md).
 *
 * Every string from the report reaches the page through textContent, attributes or the charts'
 * canvas, never through innerHTML; chart tooltips (which ECharts renders as HTML) escape it.
 * Each section renders on its own: one that fails shows its error and logs it (the browser test
 * fails on any console error), the others still render.
 *
 * window.glucxDashboard (for the browser test and for curious users):
 *   state    'loading' | 'ready' | 'error' (also in document.body.dataset.state)
 *   report   the parsed report
 *   charts   { name: echarts instance }
 *   tables   { name: { total, rendered } }
 */
(function () {
  'use strict';

  const SCHEMA_VERSION = 1;
  // Colours for the parts of an iteration, used by every chart.
  const PART_COLOURS = {
    compute: '#3b6fd8',
    overlap: '#2bb3a3',
    communication: '#f2a03d',
    exposed: '#f2a03d',
    wait: '#e0524a',
    idle: '#b5bdc9',
    transfer: '#8b5cf6',
    other: '#e7eaef',
  };
  const HEAT = ['#fff7e6', '#fed48a', '#fb9b4b', '#e8590c', '#b02a07', '#6b1402'];
  // The colour of t in [0, 1] on the HEAT scale (as the heat map's visual map draws it).
  function heatColour(t) {
    const x = Math.max(0, Math.min(1, t)) * (HEAT.length - 1);
    const i = Math.min(HEAT.length - 2, Math.floor(x));
    const f = x - i;
    const rgb = (h) => [1, 3, 5].map((k) => parseInt(h.slice(k, k + 2), 16));
    const a = rgb(HEAT[i]);
    const b = rgb(HEAT[i + 1]);
    return `rgb(${a.map((v, k) => Math.round(v + (b[k] - v) * f)).join(',')})`;
  }

  const dash = { state: 'loading', report: null, charts: {}, tables: {} };
  window.glucxDashboard = dash;

  /* ---- DOM and formatting helpers -------------------------------------------------------- */

  // el('div', {class: 'x', dataset: {a: 'b'}, onclick: f}, child, 'text', ...)
  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    if (props) {
      for (const [k, v] of Object.entries(props)) {
        if (v === undefined || v === null || v === false) continue;
        if (k === 'class') e.className = v;
        else if (k === 'dataset') Object.assign(e.dataset, v);
        else if (k === 'style') Object.assign(e.style, v);
        else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
        else e.setAttribute(k, v === true ? '' : String(v));
      }
    }
    append(e, children);
    return e;
  }
  function append(parent, children) {
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      parent.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return parent;
  }
  // For the HTML that ECharts tooltips take.
  function esc(s) {
    return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
  }

  // Integers beyond 2^53 (absolute timestamps in ns) arrive as BigInt when the browser gives the
  // reviver the source text; num() turns any value into a Number (or null).
  function num(v) {
    if (typeof v === 'bigint') return Number(v);
    if (typeof v === 'number' && Number.isFinite(v)) return v;
    return null;
  }
  // t - base in ns, exact when both are integers (BigInt-safe).
  function rel(t, base) {
    if (t === null || t === undefined || base === null || base === undefined) return null;
    if (typeof t === 'bigint' || typeof base === 'bigint') {
      const bt = typeof t === 'bigint' ? t : BigInt(Math.round(t));
      const bb = typeof base === 'bigint' ? base : BigInt(Math.round(base));
      return Number(bt - bb);
    }
    return t - base;
  }
  function arr(v) { return Array.isArray(v) ? v : []; }
  function obj(v) { return v && typeof v === 'object' && !Array.isArray(v) ? v : {}; }
  function str(v) { return v === undefined || v === null ? '' : String(v); }

  function sig(x, digits) {
    const a = Math.abs(x);
    if (a >= 100) return x.toFixed(Math.max(0, digits - 3));
    if (a >= 10) return x.toFixed(Math.max(0, digits - 2));
    return x.toFixed(Math.max(0, digits - 1));
  }
  const TIME_UNITS = [[1e9, 's'], [1e6, 'ms'], [1e3, '\u00b5s'], [1, 'ns']];
  function timeUnit(maxNs) {
    for (const [f, u] of TIME_UNITS) if (Math.abs(maxNs) >= f) return { f, u };
    return { f: 1, u: 'ns' };
  }
  function fmtNs(v) {
    const x = num(v);
    if (x === null) return '\u2013';
    if (x === 0) return '0';
    const { f, u } = timeUnit(x);
    return `${sig(x / f, 3)} ${u}`;
  }
  function fmtBytes(v) {
    const x = num(v);
    if (x === null) return '\u2013';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    let y = x;
    while (Math.abs(y) >= 1024 && i < units.length - 1) { y /= 1024; i++; }
    return i === 0 ? `${x} B` : `${sig(y, 3).replace(/\.0+$|(\.\d*[1-9])0+$/, '$1')} ${units[i]}`;
  }
  function fmtBw(v) {
    const x = num(v);
    if (x === null) return '\u2013';
    if (x >= 1e9) return `${sig(x / 1e9, 3)} GB/s`;
    if (x >= 1e6) return `${sig(x / 1e6, 3)} MB/s`;
    if (x >= 1e3) return `${sig(x / 1e3, 3)} kB/s`;
    return `${sig(x, 3)} B/s`;
  }
  function fmtPct(v, digits) {
    const x = num(v);
    if (x === null) return '\u2013';
    const p = x * 100;
    if (p !== 0 && Math.abs(p) < 0.1) return '<0.1%';
    return `${p.toFixed(digits === undefined ? 1 : digits)}%`;
  }
  function fmtInt(v) {
    const x = num(v);
    return x === null ? '\u2013' : x.toLocaleString('en-US');
  }
  function fmtRatio(v) {
    const x = num(v);
    return x === null ? '\u2013' : `${x.toFixed(2)}\u00d7`;
  }
  function plural(n, one, many) { return `${fmtInt(n)} ${n === 1 ? one : (many || one + 's')}`; }

  /* ---- charts ---------------------------------------------------------------------------- */

  const BASE_TEXT = { fontFamily: 'system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "DejaVu Sans", Arial, sans-serif' };
  const TOOLTIP = {
    confine: true,
    backgroundColor: 'rgba(255,255,255,0.97)',
    borderColor: '#dfe4ec',
    textStyle: { color: '#1c2430', fontSize: 12 },
    extraCssText: 'box-shadow: 0 4px 14px rgba(16,24,40,.12); border-radius: 8px;',
  };
  function ttRow(colour, label, value) {
    const dot = colour ? `<span style="display:inline-block;width:9px;height:9px;border-radius:2px;background:${colour};margin-right:6px"></span>` : '';
    return `<div style="display:flex;justify-content:space-between;gap:18px"><span>${dot}${esc(label)}</span><b>${esc(value)}</b></div>`;
  }
  function ttHead(text) { return `<div style="font-weight:600;margin-bottom:4px">${esc(text)}</div>`; }

  const resizeObserver = typeof ResizeObserver === 'function'
    ? new ResizeObserver((entries) => {
      for (const e of entries) {
        const inst = echarts.getInstanceByDom(e.target);
        if (inst) inst.resize();
      }
    })
    : null;

  // Charts drawn while their section is still being built wait here until it is in the page
  // (ECharts measures its container when it initialises).
  const pendingCharts = [];
  function flushCharts() {
    while (pendingCharts.length) pendingCharts.shift()();
  }

  // (Re)draws chart `name` in `node` with `option`.
  function chart(node, name, option) {
    if (!node.isConnected) {
      pendingCharts.push(() => chart(node, name, option));
      return null;
    }
    let inst = echarts.getInstanceByDom(node);
    if (!inst) {
      inst = echarts.init(node, null, { renderer: 'canvas' });
      if (resizeObserver) resizeObserver.observe(node);
    }
    inst.setOption(Object.assign({ animation: false, textStyle: BASE_TEXT }, option), true);
    dash.charts[name] = inst;
    return inst;
  }
  function chartBox(name, cls) {
    return el('div', { class: `chart ${cls || ''}`, dataset: { chart: name }, role: 'img' });
  }
  function emptyBox(name, message) {
    return el('div', { class: 'empty', dataset: { emptyFor: name } }, message);
  }
  // A segmented control: options [[value, label]], calls onChange(value).
  function segmented(options, initial, onChange, label) {
    const box = el('div', { class: 'seg', role: 'group', 'aria-label': label });
    const buttons = options.map(([value, text]) => el('button', {
      type: 'button', 'aria-pressed': String(value === initial), dataset: { value },
      onclick: () => {
        for (const b of buttons) b.setAttribute('aria-pressed', String(b.dataset.value === value));
        onChange(value);
      },
    }, text));
    append(box, buttons);
    return box;
  }

  /* ---- tables ---------------------------------------------------------------------------- */

  // columns: [{label, value(row) -> sortable value, show(row) -> Node|string, num: bool, cls}]
  function table(name, columns, rows, opts) {
    const pageSize = (opts && opts.pageSize) || 100;
    const wrap = el('div', { class: 'table-block' });
    const tbl = el('table', { class: 'data', dataset: { table: name, total: String(rows.length) } });
    const thead = el('thead');
    const tbody = el('tbody');
    const foot = el('div', { class: 'table-foot' });
    let order = rows.slice();
    let page = 0;
    let sortCol = -1;
    let sortDir = 1;
    const ths = columns.map((c, i) => el('th', {
      class: c.num ? 'num' : '', title: c.title || 'Sort',
      onclick: () => {
        sortDir = sortCol === i ? -sortDir : (c.num ? -1 : 1);
        sortCol = i;
        const key = (r) => c.value(r);
        order = rows.slice().sort((a, b) => {
          const x = key(a);
          const y = key(b);
          if (x === y) return 0;
          if (x === null || x === undefined) return 1;
          if (y === null || y === undefined) return -1;
          return (x < y ? -1 : 1) * sortDir;
        });
        ths.forEach((t, j) => { t.className = (columns[j].num ? 'num ' : '') + (j === i ? (sortDir > 0 ? 'sorted-asc' : 'sorted-desc') : ''); });
        page = 0;
        draw();
      },
    }, c.label));
    append(thead, [el('tr', null, ths)]);
    append(tbl, [thead, tbody]);

    function draw() {
      tbody.textContent = '';
      const pages = Math.max(1, Math.ceil(order.length / pageSize));
      const first = page * pageSize;
      const shown = order.slice(first, first + pageSize);
      for (const r of shown) {
        append(tbody, [el('tr', null, columns.map((c) => {
          const content = c.show ? c.show(r) : c.value(r);
          return el('td', { class: [c.num ? 'num' : '', c.cls || ''].join(' ').trim() || null },
            content === null || content === undefined ? '\u2013' : content);
        }))]);
      }
      dash.tables[name] = { total: rows.length, rendered: shown.length };
      tbl.dataset.rendered = String(shown.length);
      foot.textContent = '';
      const desc = rows.length <= pageSize
        ? plural(rows.length, 'row')
        : `rows ${fmtInt(first + 1)}\u2013${fmtInt(first + shown.length)} of ${fmtInt(rows.length)}`;
      append(foot, [el('span', null, desc)]);
      if (pages > 1) {
        append(foot, [el('span', { class: 'pager' },
          el('button', { type: 'button', disabled: page === 0, onclick: () => { page--; draw(); } }, '\u2039 Prev'),
          `page ${page + 1} / ${pages}`,
          el('button', { type: 'button', disabled: page >= pages - 1, onclick: () => { page++; draw(); } }, 'Next \u203a'))]);
      }
    }
    draw();
    append(wrap, [el('div', { class: 'table-wrap' }, tbl), foot]);
    return wrap;
  }

  /* ---- report reading -------------------------------------------------------------------- */

  class ReportError extends Error {}

  function reviver(key, value, context) {
    if (typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value) &&
        context && typeof context.source === 'string' && /^-?\d+$/.test(context.source)) {
      return BigInt(context.source);
    }
    return value;
  }

  function readReport() {
    const node = document.getElementById('glucx-report');
    const text = node ? node.textContent : '';
    if (text.trim() === '@GLUCX_' + 'REPORT_JSON@') {
      throw new ReportError('This is the dashboard template without a report: glucx-analyze writes report.html ' +
                            'with the report inside. Open that file instead.');
    }
    let report;
    try {
      report = JSON.parse(text, reviver);
    } catch (e) {
      throw new ReportError(`The report embedded in this page is not valid JSON (${e.message}).`);
    }
    if (!report || typeof report !== 'object' || Array.isArray(report)) {
      throw new ReportError('The report embedded in this page is not a JSON object.');
    }
    return report;
  }

  /* ---- the parts of an iteration ---------------------------------------------------------- */

  // Splits a breakdown (METRICS.md, per-rank time) into disjoint parts that stack up to its
  // duration: compute alone |C \ M|, overlap |C ∩ M|, exposed communication |M \ C|, waiting outside
  // both |W \ (C ∪ M)| (the rest of the busy time) and idle. Waiting (|W|) may lie inside any of the
  // first three, so it is not a slice of the stack: it is drawn as its own bar beside it.
  const PARTS = [
    ['compute', 'Compute', PART_COLOURS.compute],
    ['overlap', 'Overlap (hidden comm.)', PART_COLOURS.overlap],
    ['exposed', 'Exposed communication', PART_COLOURS.exposed],
    ['other', 'Waiting outside comm.', '#f0a6a1'],
    ['idle', 'Idle', PART_COLOURS.idle],
  ];
  function parts(b) {
    const d = num(b.duration_ns) || 0;
    const compute = num(b.compute_ns) || 0;
    const overlap = Math.min(num(b.overlap_ns) || 0, compute);
    const exposed = num(b.exposed_communication_ns) || 0;
    const idle = num(b.idle_ns) || 0;
    const p = { compute: compute - overlap, overlap, exposed, idle, wait: num(b.wait_ns) || 0 };
    p.other = Math.max(0, d - (p.compute + p.overlap + p.exposed + p.idle));
    return p;
  }
  function breakdownTooltip(title, b) {
    return ttHead(title) +
      ttRow(null, 'Duration', fmtNs(b.duration_ns)) +
      ttRow(PART_COLOURS.compute, 'Compute', fmtNs(b.compute_ns)) +
      ttRow(null, 'Communication', fmtNs(b.communication_ns)) +
      ttRow(PART_COLOURS.overlap, 'Overlap', `${fmtNs(b.overlap_ns)} (${fmtPct(b.overlap_share)} of comm.)`) +
      ttRow(PART_COLOURS.exposed, 'Exposed communication', fmtNs(b.exposed_communication_ns)) +
      ttRow(PART_COLOURS.wait, 'Waiting', fmtNs(b.wait_ns)) +
      ttRow(null, '\u2003late sender', fmtNs(b.wait_late_sender_ns)) +
      ttRow(null, '\u2003late receiver', fmtNs(b.wait_late_receiver_ns)) +
      ttRow(PART_COLOURS.idle, 'Idle', fmtNs(b.idle_ns));
  }

  /* ---- sections -------------------------------------------------------------------------- */

  function section(id, title, sub, navLabel) {
    const s = el('section', { class: 'section', id });
    const head = el('div', { class: 'section-head' }, el('div', null, el('h2', null, title),
      sub ? el('p', { class: 'section-sub' }, sub) : null));
    append(s, [head]);
    s.head = head;
    const nav = document.getElementById('nav');
    if (nav) append(nav, [el('a', { href: `#${id}` }, navLabel || title)]);
    return s;
  }

  function banners(r) {
    const out = [];
    const t = obj(r.trace);
    const p = obj(r.provider);
    if (r.schema_version !== SCHEMA_VERSION) {
      out.push(el('div', { class: 'banner banner-warn', dataset: { banner: 'schema' } },
        el('div', { class: 'banner-title' }, 'Report format not recognised'),
        `This dashboard reads schema version ${SCHEMA_VERSION}; the report says ${str(r.schema_version) || 'nothing'}. ` +
        'Parts of it may not be shown.'));
    }
    if (t.partial) {
      const reasons = arr(t.partial_reasons);
      out.push(el('div', { class: 'banner banner-error', dataset: { banner: 'partial' }, role: 'alert' },
        el('div', { class: 'banner-title' }, 'Partial report'),
        'The trace was incomplete, so some numbers below cover only part of the run or are missing.',
        reasons.length ? el('ul', null, reasons.map((x) => el('li', null, str(x)))) :
          el('div', { class: 'muted' }, 'The analysis gave no reason.')));
    }
    const de = num(t.discarded_events) || 0;
    const dp = num(t.discarded_packets) || 0;
    if (de > 0 || dp > 0) {
      out.push(el('div', { class: 'banner banner-warn', dataset: { banner: 'discarded' } },
        el('div', { class: 'banner-title' }, 'Events were lost while tracing'),
        `The tracer discarded ${plural(de, 'event')} and ${plural(dp, 'packet')} (its buffers were full). ` +
        'Figures that depend on the missing events are less certain; glucx-analyze reports them instead of guessing the pairing.'));
    }
    const missing = arr(t.missing_ranks);
    if (missing.length) {
      out.push(el('div', { class: 'banner banner-warn', dataset: { banner: 'missing-ranks' } },
        el('div', { class: 'banner-title' }, `Missing ${missing.length === 1 ? 'rank' : 'ranks'}`),
        `No events from ${missing.length === 1 ? 'rank' : 'ranks'} ${missing.map(str).join(', ')} ` +
        `(${fmtInt(arr(t.ranks_seen).length)} of ${fmtInt(t.ranks_expected)} seen).`));
    }
    if (p.recognised === false) {
      out.push(el('div', { class: 'banner banner-warn', dataset: { banner: 'provider' } },
        el('div', { class: 'banner-title' }, 'Unknown trace provider version'),
        `The events of provider "${str(p.name)}" (ABI ${p.abi === null || p.abi === undefined ? 'unknown' : str(p.abi)}) ` +
        'do not match a known layout; only the events that matched were analysed.'));
    }
    const notes = [];
    for (const w of arr(t.warnings)) notes.push(str(w));
    if (num(t.unmatched_sends)) notes.push(`${plural(num(t.unmatched_sends), 'send')} without a matching receive`);
    if (num(t.unmatched_recvs)) notes.push(`${plural(num(t.unmatched_recvs), 'receive')} without a matching send`);
    if (num(t.causality_violations)) notes.push(`${plural(num(t.causality_violations), 'message')} received before sent (clock offsets between hosts)`);
    if (arr(p.unknown_events).length) notes.push(`unknown events: ${arr(p.unknown_events).map(str).join(', ')}`);
    if (arr(p.mismatched_events).length) notes.push(`events with unexpected fields: ${arr(p.mismatched_events).map(str).join(', ')}`);
    if (notes.length) {
      out.push(el('div', { class: 'banner banner-info', dataset: { banner: 'warnings' } },
        el('div', { class: 'banner-title' }, notes.length === 1 ? 'Note' : 'Notes'),
        el('ul', null, notes.map((x) => el('li', null, x)))));
    }
    return out;
  }

  const BOTTLENECK_LABEL = {
    straggler: 'Straggler', link: 'Link', exposed_communication: 'Exposed communication', compute: 'Compute',
    decision: 'Schedule decision', idle: 'Idle time', none: 'No bottleneck', failed: 'Run failed',
  };

  function hero(r) {
    const v = obj(r.verdict);
    const s = obj(r.summary);
    const t = obj(r.trace);
    const tot = obj(s.totals);
    const kind = str(v.bottleneck) || 'none';
    const fail = obj(v.failure);
    const share = num(v.share);
    const verdict = el('div', { class: 'verdict', id: 'verdict', dataset: { bottleneck: kind } },
      el('div', { class: 'verdict-top' },
        el('span', { class: 'verdict-label' }, 'Verdict'),
        el('span', { class: `badge badge-${kind.replace(/[^a-z_]/g, '')}` }, BOTTLENECK_LABEL[kind] || kind),
        v.subject ? el('span', { class: 'muted' }, str(v.subject)) : null),
      el('p', { class: 'verdict-sentence' }, str(v.sentence) || 'The analysis gave no verdict.'),
      // A failed run has no per-iteration cost: say when it failed and with what instead.
      kind === 'failed' ? el('div', { class: 'verdict-meta', dataset: { failure: '' } },
        el('span', null, 'Failed at ', el('b', null, fmtNs(fail.time_ns)), ' from the trace start'),
        el('span', null, 'Status ', el('b', null, str(fail.status) || '\u2013')),
        el('span', null, 'First error on ', el('b', null, str(v.subject) || '\u2013'))) :
        el('div', { class: 'verdict-meta' },
          el('span', null, 'Costs ', el('b', null, fmtNs(v.cost_ns)), ' per iteration'),
          el('span', null, el('b', null, fmtPct(share)), ' of the mean iteration'),
          el('span', null, 'Mean iteration ', el('b', null, fmtNs(s.mean_iteration_ns)))),
      share !== null && kind !== 'failed' ? el('div', { class: 'sharebar', title: 'share of the iteration' },
        el('span', { style: { width: `${Math.max(0, Math.min(1, share)) * 100}%` } })) : null);

    const ranksSeen = arr(t.ranks_seen).length;
    const comm = num(tot.communication_ns) || 0;
    const dur = num(tot.duration_ns) || 0;
    const source = { markers: 'from iteration markers', inferred: `inferred (${fmtInt(s.inferred_period)} collectives each)`,
      per_collective: 'one per collective', whole_trace: 'the whole trace', none: 'none found' }[s.iteration_source] ||
      str(s.iteration_source);
    const de = num(t.discarded_events) || 0;
    const k = (label, value, note, bad) => el('div', { class: `kpi${bad ? ' kpi-bad' : ''}` },
      el('div', { class: 'kpi-label' }, label), el('div', { class: 'kpi-value' }, value),
      note ? el('div', { class: 'kpi-note' }, note) : null);
    const kpis = el('div', { class: 'kpis', id: 'kpis' },
      k('Iterations', fmtInt(s.iterations), source),
      k('Mean iteration', fmtNs(s.mean_iteration_ns), s.mean_critical_path_ns !== undefined ? `critical path ${fmtNs(s.mean_critical_path_ns)}` : null),
      k('Ranks', fmtInt(s.ranks), `${fmtInt(ranksSeen)} of ${fmtInt(t.ranks_expected)} traced`, arr(t.missing_ranks).length > 0),
      k('Overlap', fmtPct(tot.overlap_share), 'of communication hidden under compute'),
      k('Exposed comm.', dur ? fmtPct((num(tot.exposed_communication_ns) || 0) / dur) : '\u2013', `of rank time; comm. total ${fmtNs(comm)}`),
      k('Waiting', dur ? fmtPct((num(tot.wait_ns) || 0) / dur) : '\u2013', `late sender ${fmtNs(tot.wait_late_sender_ns)}`),
      k('Events', fmtInt(t.events), de ? `${fmtInt(de)} discarded` : 'none discarded', de > 0),
      k('Trace length', fmtNs(t.duration_ns), arr(t.paths).length > 1 ? `${arr(t.paths).length} trace directories` : null));
    return [el('div', { class: 'hero' }, verdict), kpis];
  }

  // Iteration breakdown: stacked bars per iteration and rank, per iteration (mean rank) or per rank.
  function breakdownSection(r) {
    const s = section('breakdown', 'Iteration breakdown',
      'Where each rank\u2019s time went: compute, communication hidden under compute (overlap), exposed ' +
      'communication, waiting for late peers, and idle time.', 'Breakdown');
    const its = arr(r.iterations);
    const ranks = arr(r.ranks);
    const pairs = its.reduce((n, it) => n + arr(it.ranks).length, 0);
    if (!pairs && !ranks.length) {
      append(s, [emptyBox('breakdown', 'No iterations or ranks were found in this trace, so there is no breakdown to show.')]);
      return s;
    }
    const box = chartBox('breakdown', 'chart-tall');
    const views = [];
    if (pairs) views.push(['pairs', 'Iteration \u00d7 rank']);
    if (its.length) views.push(['iterations', 'Per iteration']);
    if (ranks.length) views.push(['ranks', 'Per rank (all iterations)']);
    let view = pairs && pairs <= 1200 ? 'pairs' : views[views.length > 1 && pairs > 1200 ? 1 : 0][0];
    if (views.length > 1) append(s.head, [segmented(views, view, (v) => { view = v; draw(); }, 'Breakdown view')]);
    append(s, [box]);

    function rows() {
      if (view === 'pairs') {
        const out = [];
        for (const it of its) {
          for (const rk of arr(it.ranks)) {
            out.push({ key: `i${str(it.index)} r${str(rk.rank)}`, label: `r${str(rk.rank)}`, group: num(it.index),
              title: `Iteration ${str(it.index)}, rank ${str(rk.rank)}${it.complete === false ? ' (incomplete)' : ''}`, b: rk });
          }
        }
        return out;
      }
      if (view === 'iterations') {
        return its.map((it) => {
          const n = Math.max(1, arr(it.ranks).length);
          const t = obj(it.totals);
          const mean = {};
          for (const [k, v] of Object.entries(t)) mean[k] = k === 'overlap_share' ? v : (num(v) === null ? v : num(v) / n);
          return { key: `${str(it.index)}`, label: `${str(it.index)}${it.complete === false ? '*' : ''}`, group: null,
            title: `Iteration ${str(it.index)}: mean of ${plural(n, 'rank')}${it.complete === false ? ' (incomplete)' : ''}`, b: mean };
        });
      }
      return ranks.map((rk) => ({ key: `r${str(rk.rank)}`, label: `r${str(rk.rank)}`, group: null,
        title: `Rank ${str(rk.rank)}${rk.host ? ` on ${str(rk.host)}` : ''}, all iterations`, b: rk }));
    }

    function draw() {
      const data = rows();
      const ps = data.map((d) => parts(d.b));
      const max = Math.max(1, ...data.map((d, i) => Math.max(num(d.b.duration_ns) || 0,
        Object.values(ps[i]).reduce((a, x) => a + x, 0))));
      const unit = timeUnit(max);
      const usedParts = PARTS.filter(([k]) => k !== 'other' || ps.some((p) => p.other > 0));
      const series = usedParts.map(([k, label, colour]) => ({
        name: label, type: 'bar', stack: 'time', barMaxWidth: 46, barGap: '8%', itemStyle: { color: colour },
        emphasis: { focus: 'series' }, data: ps.map((p) => p[k] / unit.f), large: data.length > 2000,
      }));
      series.push({ name: 'Waiting (within the above)', type: 'bar', barMaxWidth: 12, itemStyle: { color: PART_COLOURS.wait },
        emphasis: { focus: 'series' }, data: ps.map((p) => p.wait / unit.f), large: data.length > 2000 });
      // Shade every other iteration in the iteration x rank view and name it.
      if (view === 'pairs' && series.length) {
        const areas = [];
        let start = 0;
        for (let i = 1; i <= data.length; i++) {
          if (i === data.length || data[i].group !== data[start].group) {
            areas.push([{ xAxis: data[start].key, name: `iteration ${data[start].group}`,
              itemStyle: { color: areas.length % 2 ? 'rgba(0,0,0,0)' : 'rgba(36,87,197,0.05)' } }, { xAxis: data[i - 1].key }]);
            start = i;
          }
        }
        series[0].markArea = { silent: true, label: { show: areas.length <= 40, position: 'top', color: '#7a8597', fontSize: 11 }, data: areas };
      }
      const many = data.length > 60;
      chart(box, 'breakdown', {
        grid: { left: 64, right: 24, top: 56, bottom: many ? 76 : 40 },
        legend: { top: 0, icon: 'roundRect', itemWidth: 12, itemHeight: 10, textStyle: { color: '#4a5566' } },
        tooltip: Object.assign({ trigger: 'axis', axisPointer: { type: 'shadow' },
          formatter: (items) => {
            const i = items.length ? items[0].dataIndex : -1;
            return i < 0 ? '' : breakdownTooltip(data[i].title, data[i].b);
          } }, TOOLTIP),
        xAxis: { type: 'category', data: data.map((d) => d.key),
          axisLabel: { formatter: (v, i) => data[i] ? data[i].label : v, color: '#4a5566', hideOverlap: true },
          axisTick: { alignWithLabel: true }, name: view === 'iterations' ? 'iteration' : '', nameLocation: 'middle', nameGap: 28 },
        yAxis: { type: 'value', name: unit.u, nameTextStyle: { color: '#7a8597', align: 'right' },
          axisLabel: { color: '#4a5566' }, splitLine: { lineStyle: { color: '#eef1f5' } } },
        dataZoom: many ? [{ type: 'slider', height: 18, bottom: 12, start: 0, end: Math.min(100, 6000 / data.length) }, { type: 'inside' }] : [],
        series,
      });
    }
    draw();
    if (its.some((it) => it.complete === false)) {
      append(s, [el('p', { class: 'section-sub' }, '* incomplete iteration: a rank\u2019s begin or end is missing (truncated trace).')]);
    }
    return s;
  }

  const KIND_COLOURS = {
    compute: PART_COLOURS.compute, communication: PART_COLOURS.communication, wait: PART_COLOURS.wait,
    idle: PART_COLOURS.idle, transfer: PART_COLOURS.transfer,
  };
  const KIND_LABEL = { compute: 'Compute', communication: 'Communication', wait: 'Waiting', idle: 'Idle', transfer: 'Transfer on a link' };

  // The cross-rank critical path of one iteration: a timeline of its segments and their kinds.
  function criticalPathSection(r) {
    const s = section('critical-path', 'Critical path',
      'The chain of dependent work that set each iteration\u2019s length, across ranks: a transfer ' +
      'moves it from the sending rank to the receiving one.', 'Critical path');
    const its = arr(r.iterations).filter((it) => arr(obj(it.critical_path).segments).length > 0);
    if (!its.length) {
      append(s, [emptyBox('critical-path', 'No critical path: the trace has no complete iteration with send/receive dependencies.')]);
      return s;
    }
    const linkById = new Map(arr(r.links).map((l) => [num(l.link_id), l]));
    const sel = el('select', { 'aria-label': 'Iteration' },
      its.map((it, i) => el('option', { value: String(i) },
        `Iteration ${str(it.index)} \u2014 ${fmtNs(obj(it.critical_path).length_ns)}${obj(it.critical_path).truncated ? ' (truncated)' : ''}`)));
    // Start with the longest critical path: the iteration that needs explaining most.
    let current = 0;
    its.forEach((it, i) => { if ((num(obj(it.critical_path).length_ns) || 0) > (num(obj(its[current].critical_path).length_ns) || 0)) current = i; });
    sel.value = String(current);
    sel.addEventListener('change', () => { current = Number(sel.value); draw(); });
    append(s.head, [el('label', { class: 'ctl' }, 'Iteration', sel)]);
    const timeline = chartBox('critical-path', 'chart');
    const kinds = chartBox('critical-path-kinds', 'chart');
    const note = el('p', { class: 'section-sub' });
    const segWrap = el('div');
    append(s, [el('div', { class: 'grid-2' }, el('div', null, timeline), el('div', null, kinds)), note,
      el('details', { class: 'more' }, el('summary', null, 'Segments'), segWrap)]);

    function draw() {
      const it = its[current];
      const cp = obj(it.critical_path);
      const segs = arr(cp.segments);
      const base = it.start_ns;
      const rankSet = new Set();
      for (const g of segs) { rankSet.add(num(g.rank)); if (g.kind === 'transfer' && num(g.peer) !== null) rankSet.add(num(g.peer)); }
      for (const rk of arr(it.ranks)) rankSet.add(num(rk.rank));
      const rankList = [...rankSet].filter((x) => x !== null).sort((a, b) => a - b);
      const rowOf = new Map(rankList.map((rk, i) => [rk, i]));
      const end = Math.max(num(it.duration_ns) || 0, ...segs.map((g) => rel(g.end_ns, base) || 0));
      const unit = timeUnit(end || 1);
      const data = segs.map((g, i) => {
        const a = rel(g.start_ns, base) / unit.f;
        const b = rel(g.end_ns, base) / unit.f;
        const peerRow = g.kind === 'transfer' && num(g.peer) !== null && rowOf.has(num(g.peer)) ? rowOf.get(num(g.peer)) : -1;
        return { value: [rowOf.get(num(g.rank)), a, b, peerRow, i], itemStyle: { color: KIND_COLOURS[g.kind] || '#999' } };
      });
      const segLabel = (g) => {
        const l = num(g.link) !== null ? linkById.get(num(g.link)) : null;
        const where = g.kind === 'transfer'
          ? `rank ${str(g.rank)} \u2192 rank ${str(g.peer)}${l ? ` (link ${str(l.link_id)}, dim ${str(l.dim)}, ${str(l.transport)})` : (g.link !== null && g.link !== undefined ? ` (link ${str(g.link)})` : '')}`
          : `rank ${str(g.rank)}`;
        return `${KIND_LABEL[g.kind] || str(g.kind)} on ${where}`;
      };
      chart(timeline, 'critical-path', {
        grid: { left: 56, right: 20, top: 16, bottom: 46 },
        tooltip: Object.assign({ trigger: 'item', formatter: (p) => {
          const g = segs[p.value[4]];
          return ttHead(segLabel(g)) +
            ttRow(KIND_COLOURS[g.kind], 'Duration', fmtNs(rel(g.end_ns, g.start_ns))) +
            ttRow(null, 'From', `+${fmtNs(rel(g.start_ns, base))}`) +
            ttRow(null, 'To', `+${fmtNs(rel(g.end_ns, base))}`) +
            (g.seq !== null && g.seq !== undefined ? ttRow(null, 'Collective seq', str(g.seq)) : '');
        } }, TOOLTIP),
        xAxis: { type: 'value', min: 0, max: end / unit.f, name: `time since iteration start (${unit.u})`, nameLocation: 'middle',
          nameGap: 28, nameTextStyle: { color: '#7a8597' }, axisLabel: { color: '#4a5566' }, splitLine: { lineStyle: { color: '#eef1f5' } } },
        yAxis: { type: 'category', data: rankList.map((x) => `rank ${x}`), inverse: true, axisLabel: { color: '#4a5566' },
          splitLine: { show: true, lineStyle: { color: '#f1f3f7' } } },
        series: [{
          type: 'custom', name: 'critical path', encode: { x: [1, 2], y: 0 }, data,
          renderItem: (params, api) => {
            const row = api.value(0);
            const p0 = api.coord([api.value(1), row]);
            const p1 = api.coord([api.value(2), row]);
            const h = api.size([0, 1])[1] * 0.46;
            const rect = echarts.graphic.clipRectByRect(
              { x: p0[0], y: p0[1] - h / 2, width: Math.max(2, p1[0] - p0[0]), height: h },
              { x: params.coordSys.x, y: params.coordSys.y, width: params.coordSys.width, height: params.coordSys.height });
            const children = [];
            if (rect) children.push({ type: 'rect', shape: Object.assign({ r: 2 }, rect), style: api.style() });
            const peerRow = api.value(3);
            if (peerRow >= 0) {
              const q = api.coord([api.value(2), peerRow]);
              const dir = q[1] > p1[1] ? 1 : -1;
              children.push({ type: 'line', shape: { x1: p1[0], y1: p1[1], x2: q[0], y2: q[1] - dir * h / 2 },
                style: { stroke: PART_COLOURS.transfer, lineWidth: 1.5, lineDash: [4, 3] } });
              children.push({ type: 'polygon', shape: { points: [[q[0] - 4, q[1] - dir * (h / 2 + 6)], [q[0] + 4, q[1] - dir * (h / 2 + 6)], [q[0], q[1] - dir * h / 2]] },
                style: { fill: PART_COLOURS.transfer } });
            }
            return { type: 'group', children };
          },
        }],
      });

      const byKind = obj(cp.by_kind);
      const length = num(cp.length_ns) || 0;
      const kindNames = Object.keys(byKind).filter((k) => num(byKind[k]) !== null)
        .sort((a, b) => (num(byKind[b]) || 0) - (num(byKind[a]) || 0));
      const kunit = timeUnit(Math.max(1, ...kindNames.map((k) => num(byKind[k]))));
      chart(kinds, 'critical-path-kinds', {
        grid: { left: 120, right: 64, top: 16, bottom: 46 },
        tooltip: Object.assign({ trigger: 'item', formatter: (p) => ttHead(KIND_LABEL[p.name] || p.name) +
          ttRow(KIND_COLOURS[p.name], 'On the critical path', fmtNs(byKind[p.name])) +
          ttRow(null, 'Share of its length', length ? fmtPct(num(byKind[p.name]) / length) : '\u2013') }, TOOLTIP),
        xAxis: { type: 'value', name: `time on the critical path (${kunit.u})`, nameLocation: 'middle', nameGap: 28,
          nameTextStyle: { color: '#7a8597' }, axisLabel: { color: '#4a5566' }, splitLine: { lineStyle: { color: '#eef1f5' } } },
        yAxis: { type: 'category', data: kindNames, inverse: true, axisLabel: { formatter: (k) => KIND_LABEL[k] || k, color: '#4a5566' } },
        series: [{ type: 'bar', barMaxWidth: 22, data: kindNames.map((k) => ({ name: k, value: num(byKind[k]) / kunit.f,
          itemStyle: { color: KIND_COLOURS[k] || '#999', borderRadius: [0, 3, 3, 0] } })),
        label: { show: true, position: 'right', color: '#4a5566', formatter: (p) => (length ? fmtPct(num(byKind[p.name]) / length, 0) : '') } }],
      });

      note.textContent = `Iteration ${str(it.index)}: critical path ${fmtNs(length)} of a ${fmtNs(it.duration_ns)} iteration, ` +
        `${plural(segs.length, 'segment')} across ${plural(rankList.length, 'rank')}.` +
        (cp.truncated ? ' The path is truncated: the trace ends or events are missing before its start.' : '');
      segWrap.textContent = '';
      append(segWrap, [table('critical-path-segments', [
        { label: '#', num: true, value: (g) => segs.indexOf(g) },
        { label: 'Kind', value: (g) => str(g.kind), show: (g) => el('span', null,
          el('span', { class: 'pill', style: { background: KIND_COLOURS[g.kind] || '#ccc', color: '#fff' } }, KIND_LABEL[g.kind] || str(g.kind))) },
        { label: 'Rank', num: true, value: (g) => num(g.rank) },
        { label: 'Peer', num: true, value: (g) => num(g.peer) },
        { label: 'Link', num: true, value: (g) => num(g.link) },
        { label: 'Collective seq', num: true, value: (g) => num(g.seq) },
        { label: 'Start', num: true, value: (g) => rel(g.start_ns, base), show: (g) => `+${fmtNs(rel(g.start_ns, base))}` },
        { label: 'Duration', num: true, value: (g) => rel(g.end_ns, g.start_ns), show: (g) => fmtNs(rel(g.end_ns, g.start_ns)) },
      ], segs, { pageSize: 200 })]);
    }
    draw();
    return s;
  }

  const LINK_METRICS = [
    ['utilisation', 'Utilisation', (l) => num(l.utilisation), (x) => fmtPct(x)],
    ['bytes', 'Bytes', (l) => num(l.bytes), fmtBytes],
    ['achieved', 'Achieved bandwidth', (l) => num(l.achieved_Bps), fmtBw],
    ['critical', 'Critical-path share', (l) => num(l.critical_path_share), (x) => fmtPct(x)],
    ['dim', 'Dimension', (l) => num(l.dim), (x) => `dim ${x}`],
  ];
  const DIM_COLOURS = ['#3b6fd8', '#e8590c', '#2bb3a3', '#8b5cf6', '#d6336c', '#5c940d', '#f2a03d', '#1098ad'];
  // Links drawn on the topology graph at most (the busiest by the chosen metric).
  const GRAPH_MAX_EDGES = 160;

  // Per-link utilisation as a heat map over the topology: a src x dst matrix per communicator.
  function linksSection(r) {
    const s = section('links', 'Links',
      'Every directed link between two ranks (from the link announcements): colour shows how much of the ' +
      'link\u2019s nominal bandwidth the run used; each cell names the link\u2019s torus dimension.', 'Links');
    const links = arr(r.links);
    if (!links.length) {
      append(s, [emptyBox('links', 'No links: the trace has no link announcements and no point-to-point traffic.')]);
      return s;
    }
    const comms = [...new Set(links.map((l) => str(l.comm_id)))];
    const commName = new Map(arr(obj(r.trace).comms).map((c) => [str(c.comm_id), c]));
    let metric = 'utilisation';
    let comm = comms[0];
    const controls = el('div', { class: 'controls' });
    if (comms.length > 1) {
      const sel = el('select', { 'aria-label': 'Communicator' }, comms.map((c) => el('option', { value: c },
        `${commName.has(c) && commName.get(c).name ? `${str(commName.get(c).name)} ` : ''}${c}`)));
      sel.addEventListener('change', () => { comm = sel.value; draw(); });
      append(controls, [el('label', { class: 'ctl' }, 'Communicator', sel)]);
    }
    append(controls, [segmented(LINK_METRICS.map(([k, label]) => [k, label]), metric, (m) => { metric = m; draw(); }, 'Link metric')]);
    append(s.head, [controls]);
    const box = chartBox('links-heatmap', 'chart-tall');
    const graphBox = chartBox('links-graph', 'chart-tall');
    append(s, [el('div', { class: 'grid-2 grid-even' }, el('div', null, box), el('div', null, graphBox))]);

    function draw() {
      const ls = links.filter((l) => str(l.comm_id) === comm);
      const [, metricLabel, metricOf, metricFmt] = LINK_METRICS.find(([k]) => k === metric);
      const rankSet = new Set();
      for (const l of ls) { rankSet.add(num(l.src)); rankSet.add(num(l.dst)); }
      const ranks = [...rankSet].filter((x) => x !== null).sort((a, b) => a - b);
      const idx = new Map(ranks.map((x, i) => [x, i]));
      const hostOf = new Map();
      const c = commName.get(comm);
      for (const rk of arr(c && c.ranks)) hostOf.set(num(rk.rank), str(rk.host));
      const hosts = new Set(hostOf.values());
      const label = (x) => (hosts.size > 1 && hostOf.has(x) ? `r${x} \u00b7 ${hostOf.get(x)}` : `r${x}`);
      // A cell may hold several links (e.g. one per transport): it shows the busiest.
      const cells = new Map();
      for (const l of ls) {
        const key = `${num(l.src)}:${num(l.dst)}`;
        if (!cells.has(key)) cells.set(key, []);
        cells.get(key).push(l);
      }
      // Cells with a value (coloured by the visual map) and cells without one (no nominal
      // bandwidth, say: drawn grey as n/a by a second series).
      const data = [];
      const naData = [];
      let max = 0;
      for (const [key, group] of cells) {
        const [a, b] = key.split(':').map(Number);
        const vals = group.map(metricOf).filter((x) => x !== null);
        const v = vals.length ? Math.max(...vals) : null;
        if (v !== null) max = Math.max(max, v);
        const dims = [...new Set(group.map((l) => str(l.dim)))].join('/');
        (v === null ? naData : data).push({ value: [idx.get(b), idx.get(a), v === null ? 0 : v], na: v === null, dims, group,
          itemStyle: group.some((l) => l.announced === false) ? { borderColor: '#b42318', borderWidth: 2, borderType: 'dashed' } : undefined });
      }
      const cellOf = (p) => (p.seriesIndex === 0 ? data : naData)[p.dataIndex];
      // Cell labels while they fit: value and dimension, then the value alone, then none (the
      // tooltip and the Dimension view still give the dimension).
      const labelMode = ranks.length <= 8 ? 2 : (ranks.length <= 12 ? 1 : 0);
      const isShare = metric === 'utilisation' || metric === 'critical';
      const categorical = metric === 'dim';
      const dimValues = [...new Set(data.map((d) => d.value[2]))].sort((a, b) => a - b);
      const valueMap = categorical
        ? { type: 'piecewise', seriesIndex: 0, orient: 'vertical', right: 8, top: 'middle', textStyle: { color: '#4a5566' },
          categories: dimValues, inRange: { color: dimValues.map((d, i) => DIM_COLOURS[i % DIM_COLOURS.length]) },
          formatter: (v) => `dim ${v}` }
        : { type: 'continuous', seriesIndex: 0, min: 0, max: max > 0 ? max : 1, calculable: true, orient: 'vertical',
          right: 8, top: 'middle', itemHeight: 220, inRange: { color: HEAT },
          formatter: (v) => metricFmt(v), text: [metricLabel, ''], textStyle: { color: '#4a5566' } };
      chart(box, 'links-heatmap', {
        grid: { left: hosts.size > 1 ? 130 : 72, right: 130, top: 20, bottom: 64 },
        tooltip: Object.assign({ trigger: 'item', formatter: (p) => {
          const d = cellOf(p);
          return d.group.map((l) => ttHead(`Link ${str(l.link_id)}: rank ${str(l.src)} \u2192 rank ${str(l.dst)}`) +
            ttRow(null, 'Dimension', str(l.dim)) +
            ttRow(null, 'Transport', str(l.transport) || '\u2013') +
            ttRow(null, 'Nominal bandwidth', fmtBw(l.bandwidth_Bps)) +
            ttRow(null, 'Latency', fmtNs(l.latency_ns)) +
            ttRow(null, 'Bytes', `${fmtBytes(l.bytes)} in ${plural(num(l.messages) || 0, 'message')}`) +
            ttRow(null, 'Busy', `${fmtNs(l.busy_ns)} (${fmtPct(l.busy_share)})`) +
            ttRow(null, 'Achieved', `${fmtBw(l.achieved_Bps)} (${fmtPct(l.efficiency)} of nominal)`) +
            ttRow(null, 'Utilisation', fmtPct(l.utilisation)) +
            ttRow(null, 'On the critical path', `${fmtNs(l.critical_path_ns)} (${fmtPct(l.critical_path_share)})`) +
            (l.announced === false ? '<div style="color:#b42318">carried traffic but was never announced</div>' : '')).join('<hr style="border:0;border-top:1px solid #eee">');
        } }, TOOLTIP),
        xAxis: { type: 'category', data: ranks.map(label), name: 'destination rank', nameLocation: 'middle', nameGap: 30,
          nameTextStyle: { color: '#7a8597' }, splitArea: { show: true, areaStyle: { color: ['#fbfcfe', '#f6f8fb'] } }, axisLabel: { color: '#4a5566' } },
        yAxis: { type: 'category', data: ranks.map(label), inverse: true, name: 'source rank', nameLocation: 'middle',
          nameGap: hosts.size > 1 ? 110 : 46, nameTextStyle: { color: '#7a8597' },
          splitArea: { show: true, areaStyle: { color: ['#fbfcfe', '#f6f8fb'] } }, axisLabel: { color: '#4a5566' } },
        visualMap: [valueMap, { type: 'continuous', seriesIndex: 1, show: false, min: 0, max: 1, inRange: { color: ['#e6e9ee', '#e6e9ee'] } }],
        series: [data, naData].map((cellData, i) => ({
          type: 'heatmap', name: i ? 'n/a' : metricLabel, data: cellData,
          label: { show: labelMode > 0, fontSize: labelMode === 2 ? 12 : 9, lineHeight: 15, color: i ? '#7a8597' : undefined,
            formatter: (p) => {
              const d = cellData[p.dataIndex];
              const v = d.na ? 'n/a' : metricFmt(d.value[2]);
              return labelMode === 2 && !categorical ? `${v}\n{dim|dim ${d.dims}}` : v;
            },
            rich: { dim: { fontSize: 10, color: 'inherit', opacity: 0.75 } } },
          itemStyle: { borderColor: '#fff', borderWidth: 2, borderRadius: 4 },
          emphasis: { itemStyle: { borderColor: '#1c2430', borderWidth: 1.5 } },
        })),
      });
      drawGraph(ls, ranks, hostOf, metricOf, metricFmt, metricLabel, max, categorical ? dimValues : null);
      if (isShare && max > 0 && max < 1) {
        box.title = `The colour scale runs from 0 to the busiest link (${metricFmt(max)}), not to 100%.`;
      } else {
        box.removeAttribute('title');
      }
      scaleNote.textContent = (categorical ? 'Colour: the link\u2019s torus dimension.'
        : `Colour scale: 0 to ${metricFmt(max)} (the highest value among these links).`) +
        ' Cells without a value show n/a; a dashed red border marks a link that carried traffic but was never announced.' +
        (ls.length > GRAPH_MAX_EDGES ? ` The graph shows the ${GRAPH_MAX_EDGES} links with the highest value of ${ls.length}.` : '');
    }
    // The same links drawn over the topology: ranks on a circle (grouped by host), each directed
    // link an arrow coloured like its heat-map cell.
    function drawGraph(allLinks, ranks, hostOf, metricOf, metricFmt, metricLabel, max, dimValues) {
      const ls = allLinks.length <= GRAPH_MAX_EDGES ? allLinks
        : allLinks.slice().sort((a, b) => (metricOf(b) === null ? -1 : metricOf(b)) - (metricOf(a) === null ? -1 : metricOf(a)))
          .slice(0, GRAPH_MAX_EDGES);
      const hosts = [...new Set(ranks.map((x) => hostOf.get(x) || ''))];
      const nodes = ranks.map((x) => ({ id: String(x), name: `r${x}`, category: hosts.indexOf(hostOf.get(x) || ''),
        value: hostOf.get(x) || '' }));
      const edges = ls.map((l) => {
        const v = metricOf(l);
        const t = v === null || !(max > 0) ? null : (dimValues ? 0.5 : v / max);
        // Faint links stay visible: the colour starts a little way into the scale.
        const colour = t === null ? '#b9c0cb'
          : (dimValues ? DIM_COLOURS[dimValues.indexOf(v) % DIM_COLOURS.length] : heatColour(0.12 + 0.88 * t));
        return { source: String(num(l.src)), target: String(num(l.dst)), link: l, v,
          lineStyle: { color: colour, width: t === null ? 1.2 : 1.2 + 5 * t,
            type: l.announced === false || t === null ? 'dashed' : 'solid', opacity: 0.95,
            curveness: num(l.src) < num(l.dst) ? 0.2 : -0.2 } };
      });
      const hostColours = ['#2457c5', '#0f9d8a', '#8b5cf6', '#d6336c', '#5c940d', '#e8590c'];
      chart(graphBox, 'links-graph', {
        tooltip: Object.assign({ trigger: 'item', formatter: (p) => {
          if (p.dataType === 'edge') {
            const l = p.data.link;
            return ttHead(`Link ${str(l.link_id)}: rank ${str(l.src)} \u2192 rank ${str(l.dst)}`) +
              ttRow(null, 'Dimension', str(l.dim)) + ttRow(null, 'Transport', str(l.transport) || '\u2013') +
              ttRow(null, metricLabel, p.data.v === null ? 'n/a' : metricFmt(p.data.v));
          }
          return ttHead(`Rank ${p.data.id}`) + (p.data.value ? ttRow(null, 'Host', p.data.value) : '');
        } }, TOOLTIP),
        legend: hosts.length > 1 ? { bottom: 0, data: hosts.map((h) => h || '(unknown host)'), textStyle: { color: '#4a5566' } } : undefined,
        series: [{
          type: 'graph', layout: 'circular', circular: { rotateLabel: false }, roam: true, top: 40, bottom: hosts.length > 1 ? 48 : 30,
          left: 40, right: 40, symbolSize: ranks.length <= 16 ? 34 : 18, edgeSymbol: ['none', 'arrow'], edgeSymbolSize: [0, 9],
          categories: hosts.map((h, i) => ({ name: h || '(unknown host)', itemStyle: { color: hostColours[i % hostColours.length] } })),
          label: { show: true, position: ranks.length <= 16 ? 'inside' : 'right', color: ranks.length <= 16 ? '#fff' : '#1c2430', fontWeight: 600 },
          emphasis: { focus: 'adjacency', lineStyle: { width: 6 } },
          data: nodes, links: edges,
        }],
      });
    }

    const scaleNote = el('p', { class: 'section-sub' });
    append(s, [scaleNote]);
    draw();

    append(s, [el('h3', null, 'All links'), table('links', [
      { label: 'Link', num: true, value: (l) => num(l.link_id) },
      { label: 'Src \u2192 dst', value: (l) => (num(l.src) || 0) * 1e6 + (num(l.dst) || 0), show: (l) => `${str(l.src)} \u2192 ${str(l.dst)}` },
      { label: 'Dim', num: true, value: (l) => num(l.dim) },
      { label: 'Transport', value: (l) => str(l.transport) },
      { label: 'Nominal', num: true, value: (l) => num(l.bandwidth_Bps), show: (l) => fmtBw(l.bandwidth_Bps) },
      { label: 'Latency', num: true, value: (l) => num(l.latency_ns), show: (l) => fmtNs(l.latency_ns) },
      { label: 'Bytes', num: true, value: (l) => num(l.bytes), show: (l) => fmtBytes(l.bytes) },
      { label: 'Messages', num: true, value: (l) => num(l.messages), show: (l) => fmtInt(l.messages) },
      { label: 'Busy', num: true, value: (l) => num(l.busy_ns), show: (l) => fmtNs(l.busy_ns) },
      { label: 'Achieved', num: true, value: (l) => num(l.achieved_Bps), show: (l) => fmtBw(l.achieved_Bps) },
      { label: 'Efficiency', num: true, value: (l) => num(l.efficiency), show: (l) => fmtPct(l.efficiency) },
      { label: 'Utilisation', num: true, value: (l) => num(l.utilisation), show: (l) => el('span', null, fmtPct(l.utilisation),
        el('span', { class: 'meter' }, el('span', { style: { width: `${Math.min(1, Math.max(0, num(l.utilisation) || 0)) * 100}%` } }))) },
      { label: 'Critical path', num: true, value: (l) => num(l.critical_path_share), show: (l) => `${fmtNs(l.critical_path_ns)} (${fmtPct(l.critical_path_share)})` },
      { label: 'Announced', value: (l) => (l.announced === false ? 0 : 1), show: (l) => (l.announced === false ? el('span', { class: 'bad' }, 'no') : 'yes') },
    ], links)]);
    return s;
  }

  // Physical link metrics (analysis/METRICS.md, "Physical links"): [key, label, value(link), format].
  const PHYS_METRICS = [
    ['busy', 'Busy share', (l) => num(l.busy_share), (x) => fmtPct(x)],
    ['nominal', 'Of nominal', (l) => num(l.of_nominal), (x) => fmtPct(x)],
    ['utilisation', 'Utilisation', (l) => num(l.utilisation), (x) => fmtPct(x)],
    ['critical', 'Critical-path share', (l) => num(l.critical_path_share), (x) => fmtPct(x)],
    ['bytes', 'Bytes', (l) => num(l.bytes), fmtBytes],
  ];
  const NODE_COLOURS = { rank: '#2457c5', package: '#0f9d8a', switch: '#7a8597', unknown: '#b9c0cb' };
  // "rank 3", "package 1", "switch 0" of an endpoint ({kind, index}), or "?" before its announcement.
  function endName(e) {
    const o = obj(e);
    return o.kind === undefined ? '?' : `${str(o.kind)} ${str(o.index)}`;
  }

  // The physical network: its endpoints (ranks, packages, switches) as nodes and every physical
  // link as an edge coloured and sized by the chosen metric (the busiest link darkest), and the
  // table of every physical link.
  function physicalSection(r) {
    const s = section('physical-links', 'Physical links',
      'The network the run crossed (from the phys_link and route events): every message\u2019s bytes are charged ' +
      'to each link on its route, in the direction it crosses it. Links are full duplex: \u201cof nominal\u201d is the ' +
      'busier direction\u2019s achieved rate against the nominal bandwidth per direction. Colour and width show how busy each link was.', 'Physical');
    const links = arr(r.physical_links);
    if (!links.length) {
      append(s, [emptyBox('physical-links', 'No physical links: the trace has no phys_link or route events (recorded before trace format 3, or made by hand).')]);
      return s;
    }
    const comms = [...new Set(links.map((l) => str(l.comm_id)))];
    const commName = new Map(arr(obj(r.trace).comms).map((c) => [str(c.comm_id), c]));
    let metric = PHYS_METRICS[0][0];
    let comm = comms[0];
    const controls = el('div', { class: 'controls' });
    if (comms.length > 1) {
      const sel = el('select', { 'aria-label': 'Communicator (physical links)' }, comms.map((c) => el('option', { value: c },
        `${commName.has(c) && commName.get(c).name ? `${str(commName.get(c).name)} ` : ''}${c}`)));
      sel.addEventListener('change', () => { comm = sel.value; draw(); });
      append(controls, [el('label', { class: 'ctl' }, 'Communicator', sel)]);
    }
    append(controls, [segmented(PHYS_METRICS.map(([k, label]) => [k, label]), metric, (m) => { metric = m; draw(); }, 'Physical link metric')]);
    append(s.head, [controls]);
    const box = chartBox('physical-graph', 'chart-tall');
    const note = el('p', { class: 'section-sub' });
    append(s, [box, note]);

    function draw() {
      const ls = links.filter((l) => str(l.comm_id) === comm);
      const [, metricLabel, metricOf, metricFmt] = PHYS_METRICS.find(([k]) => k === metric);
      const nodeKey = (e) => (obj(e).kind === undefined ? null : `${str(obj(e).kind)}:${str(obj(e).index)}`);
      const nodes = new Map();
      for (const l of ls) {
        for (const e of [l.a, l.b]) {
          const k = nodeKey(e);
          if (k !== null && !nodes.has(k)) nodes.set(k, { id: k, name: endName(e), kind: str(obj(e).kind), index: num(obj(e).index) });
        }
      }
      // Around the circle in the order of a depth-first walk along the links (from the first
      // rank or package, neighbours by kind then number), so that a ring or a torus line is
      // drawn as an arc rather than across the circle.
      const order = { rank: 0, package: 1, switch: 2 };
      const cmp = (x, y) => ((x.kind in order ? order[x.kind] : 3) - (y.kind in order ? order[y.kind] : 3)) || (x.index - y.index);
      const adj = new Map([...nodes.keys()].map((k) => [k, []]));
      for (const l of ls) {
        const a = nodeKey(l.a);
        const b = nodeKey(l.b);
        if (a !== null && b !== null) { adj.get(a).push(nodes.get(b)); adj.get(b).push(nodes.get(a)); }
      }
      const nodeList = [];
      const seen = new Set();
      for (const start of [...nodes.values()].sort(cmp)) {
        const stack = [start];
        while (stack.length) {
          const n = stack.pop();
          if (seen.has(n.id)) continue;
          seen.add(n.id);
          nodeList.push(n);
          for (const m of adj.get(n.id).slice().sort(cmp).reverse()) if (!seen.has(m.id)) stack.push(m);
        }
      }
      let max = 0;
      for (const l of ls) { const v = metricOf(l); if (v !== null) max = Math.max(max, v); }
      const edges = ls.filter((l) => nodeKey(l.a) !== null && nodeKey(l.b) !== null).map((l) => {
        const v = metricOf(l);
        const t = v === null || !(max > 0) ? null : v / max;
        // Faint links stay visible: the colour starts a little way into the scale.
        const colour = t === null ? '#b9c0cb' : heatColour(0.12 + 0.88 * t);
        return { source: nodeKey(l.a), target: nodeKey(l.b), link: l, v, colour,
          lineStyle: { color: colour, width: t === null ? 1.5 : 2 + 7 * t, type: l.announced === false || t === null ? 'dashed' : 'solid',
            opacity: 0.95, curveness: 0 } };
      });
      const kinds = [...new Set(nodeList.map((n) => n.kind))];
      chart(box, 'physical-graph', {
        tooltip: Object.assign({ trigger: 'item', formatter: (p) => {
          if (p.dataType === 'edge') {
            const l = p.data.link;
            return ttHead(`Physical link ${str(l.phys_id)}: ${endName(l.a)} \u2013 ${endName(l.b)}`) +
              ttRow(null, 'Dimension', str(l.dim)) +
              ttRow(null, 'Nominal bandwidth', fmtBw(l.bandwidth_Bps)) +
              ttRow(null, 'Latency', fmtNs(l.latency_ns)) +
              ttRow(null, 'Bytes', `${fmtBytes(l.bytes)} in ${plural(num(l.messages) || 0, 'message')}`) +
              ttRow(null, 'Busy', `${fmtNs(l.busy_ns)} (${fmtPct(l.busy_share)})`) +
              ttRow(null, 'Achieved', `${fmtBw(l.achieved_Bps)} both ways (${fmtPct(l.of_nominal)} of nominal, busier direction)`) +
              arr(l.directions).map((d) => obj(d)).map((d) => ttRow(null, `${endName(d.from)} \u2192 ${endName(d.to)}`,
                `${fmtBytes(d.bytes)}, ${fmtBw(d.achieved_Bps)} (${fmtPct(d.of_nominal)} of nominal)`)).join('') +
              ttRow(null, 'Utilisation', fmtPct(l.utilisation)) +
              ttRow(null, 'On the critical path', `${fmtNs(l.critical_path_ns)} (${fmtPct(l.critical_path_share)})`) +
              (l.announced === false ? '<div style="color:#b42318">on a route but never announced</div>' : '');
          }
          return ttHead(p.data.name);
        } }, TOOLTIP),
        legend: kinds.length > 1 ? { bottom: 0, data: kinds, textStyle: { color: '#4a5566' } } : undefined,
        series: [{
          type: 'graph', layout: 'circular', circular: { rotateLabel: false }, roam: true, top: 30, bottom: kinds.length > 1 ? 48 : 30,
          left: 60, right: 60, symbolSize: nodeList.length <= 24 ? 30 : 16,
          categories: kinds.map((k) => ({ name: k, itemStyle: { color: NODE_COLOURS[k] || NODE_COLOURS.unknown } })),
          label: { show: true, position: 'right', color: '#1c2430', fontWeight: 600 },
          edgeLabel: { show: ls.length <= 24, formatter: (p) => (p.data.v === null ? 'n/a' : metricFmt(p.data.v)), fontSize: 10, color: '#4a5566' },
          emphasis: { focus: 'adjacency' },
          data: nodeList.map((n) => ({ id: n.id, name: n.name, category: kinds.indexOf(n.kind) })),
          links: edges,
        }],
      });
      note.textContent = `Colour and width: ${metricLabel.toLowerCase()}, from 0 to the highest value among these links (${metricFmt(max)}). ` +
        'A dashed grey link has no value (no nominal bandwidth, say); a dashed coloured one was on a route but never announced.';
    }
    draw();

    append(s, [el('h3', null, 'All physical links'), table('physical-links', [
      { label: 'Link', num: true, value: (l) => num(l.phys_id) },
      { label: 'Dim', num: true, value: (l) => num(l.dim) },
      { label: 'Endpoints', value: (l) => `${endName(l.a)} \u2013 ${endName(l.b)}` },
      { label: 'Nominal', num: true, value: (l) => num(l.bandwidth_Bps), show: (l) => fmtBw(l.bandwidth_Bps) },
      { label: 'Latency', num: true, value: (l) => num(l.latency_ns), show: (l) => fmtNs(l.latency_ns) },
      { label: 'Bytes', num: true, value: (l) => num(l.bytes), show: (l) => fmtBytes(l.bytes) },
      { label: 'Messages', num: true, value: (l) => num(l.messages), show: (l) => fmtInt(l.messages) },
      { label: 'Busy', num: true, value: (l) => num(l.busy_ns), show: (l) => `${fmtNs(l.busy_ns)} (${fmtPct(l.busy_share)})` },
      { label: 'Achieved', num: true, value: (l) => num(l.achieved_Bps), show: (l) => fmtBw(l.achieved_Bps) },
      { label: 'Of nominal', num: true, value: (l) => num(l.of_nominal), show: (l) => el('span', null, fmtPct(l.of_nominal),
        el('span', { class: 'meter' }, el('span', { style: { width: `${Math.min(1, Math.max(0, num(l.of_nominal) || 0)) * 100}%` } }))) },
      { label: 'Critical path', num: true, value: (l) => num(l.critical_path_share), show: (l) => `${fmtNs(l.critical_path_ns)} (${fmtPct(l.critical_path_share)})` },
      { label: 'Announced', value: (l) => (l.announced === false ? 0 : 1), show: (l) => (l.announced === false ? el('span', { class: 'bad' }, 'no') : 'yes') },
    ], links)]);
    return s;
  }

  // Collectives: busbw by size and algorithm, the grouped table and every call.
  function collectivesSection(r) {
    const s = section('collectives', 'Collectives',
      'Each collective call (time: last completion minus last arrival; busbw as nccl-tests define it), ' +
      'and the calls grouped by collective, algorithm and size.', 'Collectives');
    const colls = arr(r.collectives);
    const groups = arr(r.collective_groups);
    const base = obj(r.trace).start_ns;
    if (!colls.length && !groups.length) {
      append(s, [emptyBox('collectives', 'No collectives were recognised in this trace.')]);
      return s;
    }
    if (groups.length) {
      const box = chartBox('collectives-busbw', 'chart-short');
      append(s, [box]);
      const algos = [...new Set(groups.map((g) => `${str(g.coll)} \u00b7 ${str(g.algorithm)}`))];
      const palette = ['#3b6fd8', '#e8590c', '#2bb3a3', '#8b5cf6', '#d6336c', '#5c940d', '#f2a03d', '#1098ad'];
      chart(box, 'collectives-busbw', {
        grid: { left: 70, right: 24, top: 40, bottom: 44 },
        legend: { top: 0, icon: 'circle', textStyle: { color: '#4a5566' } },
        tooltip: Object.assign({ trigger: 'item', formatter: (p) => {
          const g = p.data.g;
          return ttHead(`${str(g.coll)} \u00b7 ${str(g.algorithm)} \u00b7 ${fmtBytes(g.bytes)}`) +
            ttRow(null, 'Calls', fmtInt(g.count)) + ttRow(null, 'Mean time', fmtNs(g.mean_time_ns)) +
            ttRow(null, 'Min / max', `${fmtNs(g.min_time_ns)} / ${fmtNs(g.max_time_ns)}`) + ttRow(null, 'busbw', fmtBw(g.busbw_Bps));
        } }, TOOLTIP),
        xAxis: { type: 'log', logBase: 2, name: 'message size', nameLocation: 'middle', nameGap: 28, nameTextStyle: { color: '#7a8597' },
          axisLabel: { formatter: (v) => fmtBytes(v), color: '#4a5566' }, splitLine: { lineStyle: { color: '#eef1f5' } } },
        yAxis: { type: 'value', name: 'busbw (GB/s)', nameTextStyle: { color: '#7a8597', align: 'left' },
          axisLabel: { color: '#4a5566' }, splitLine: { lineStyle: { color: '#eef1f5' } } },
        series: algos.map((a, i) => ({
          name: a, type: 'scatter', symbolSize: (v, p) => 8 + Math.min(14, Math.sqrt(num(p.data.g.count) || 1) * 2),
          itemStyle: { color: palette[i % palette.length], opacity: 0.9 },
          data: groups.filter((g) => `${str(g.coll)} \u00b7 ${str(g.algorithm)}` === a && (num(g.bytes) || 0) > 0)
            .map((g) => ({ value: [num(g.bytes), (num(g.busbw_Bps) || 0) / 1e9], g })),
        })),
      });
      append(s, [el('h3', null, 'By collective, algorithm and size'), table('collective-groups', [
        { label: 'Collective', value: (g) => str(g.coll) },
        { label: 'Algorithm', value: (g) => str(g.algorithm) },
        { label: 'Size', num: true, value: (g) => num(g.bytes), show: (g) => fmtBytes(g.bytes) },
        { label: 'Calls', num: true, value: (g) => num(g.count), show: (g) => fmtInt(g.count) },
        { label: 'Mean time', num: true, value: (g) => num(g.mean_time_ns), show: (g) => fmtNs(g.mean_time_ns) },
        { label: 'Min', num: true, value: (g) => num(g.min_time_ns), show: (g) => fmtNs(g.min_time_ns) },
        { label: 'Max', num: true, value: (g) => num(g.max_time_ns), show: (g) => fmtNs(g.max_time_ns) },
        { label: 'busbw', num: true, value: (g) => num(g.busbw_Bps), show: (g) => fmtBw(g.busbw_Bps) },
        { label: 'Communicator', value: (g) => str(g.comm_id), show: (g) => el('span', { class: 'mono muted' }, str(g.comm_id)) },
      ], groups)]);
    }
    if (colls.length) {
      append(s, [el('h3', null, 'Every call'), table('collectives', [
        { label: 'Seq', num: true, value: (c) => num(c.seq) },
        { label: 'Iter.', num: true, value: (c) => num(c.iteration) },
        { label: 'Collective', value: (c) => str(c.coll) },
        { label: 'Algorithm', value: (c) => str(c.algorithm) },
        { label: 'Size', num: true, value: (c) => num(c.bytes), show: (c) => fmtBytes(c.bytes) },
        { label: 'Type / op', value: (c) => `${str(c.dtype)} ${str(c.op)}`, show: (c) => [c.dtype, c.op].filter((x) => x).map(str).join(' / ') || '\u2013' },
        { label: 'Ranks', num: true, value: (c) => num(c.ranks) },
        { label: 'Start', num: true, value: (c) => rel(c.start_ns, base), show: (c) => `+${fmtNs(rel(c.start_ns, base))}` },
        { label: 'Time', num: true, value: (c) => num(c.time_ns), show: (c) => fmtNs(c.time_ns) },
        { label: 'Span', num: true, value: (c) => num(c.span_ns), show: (c) => fmtNs(c.span_ns) },
        { label: 'Last rank', num: true, value: (c) => num(c.last_rank) },
        { label: 'Lateness', num: true, value: (c) => num(c.lateness_ns), show: (c) => fmtNs(c.lateness_ns) },
        { label: 'algbw', num: true, value: (c) => num(c.algbw_Bps), show: (c) => fmtBw(c.algbw_Bps) },
        { label: 'busbw', num: true, value: (c) => num(c.busbw_Bps), show: (c) => fmtBw(c.busbw_Bps) },
        { label: 'Status', value: (c) => str(c.status), show: (c) => el('span', { class: str(c.status) === 'OK' ? 'good' : 'bad' }, str(c.status)) },
        { label: 'Source', value: (c) => str(c.source), show: (c) => (c.source === 'gloo_slot' ? 'Gloo slot' : c.source === 'coll_events' ? 'events' : str(c.source)) },
      ], colls)]);
    }
    return s;
  }

  // Schedule decisions: the chosen option against the alternatives the cost model priced.
  function decisionsSection(r) {
    const s = section('decisions', 'Schedule decisions',
      'Each choice the scheduler made (algorithm, chunking, ...): the cost model\u2019s prediction for the chosen ' +
      'option and for every alternative, the measured time, and what the best alternative would have saved.', 'Decisions');
    const ds = arr(r.decisions);
    if (!ds.length) {
      append(s, [emptyBox('decisions', 'No schedule decisions were traced (the trace has no decision events).')]);
      return s;
    }
    // One bar group per distinct decision (comm, kind, collective, size, chosen): the chart stays
    // readable when the same decision repeats every iteration.
    const groups = new Map();
    for (const d of ds) {
      const key = [str(d.comm_id), str(d.kind), str(d.coll), str(num(d.bytes)), str(d.chosen)].join('\u0001');
      if (!groups.has(key)) groups.set(key, { d, n: 0, measured: 0, nm: 0, saving: 0, options: new Map() });
      const g = groups.get(key);
      g.n++;
      if (num(d.measured_ns) !== null) { g.measured += num(d.measured_ns); g.nm++; }
      g.saving += num(d.saving_ns) || 0;
      for (const a of arr(d.alternatives)) {
        const o = str(a.option);
        if (!g.options.has(o)) g.options.set(o, { sum: 0, n: 0 });
        if (num(a.predicted_ns) !== null) { g.options.get(o).sum += num(a.predicted_ns); g.options.get(o).n++; }
      }
    }
    const gl = [...groups.values()].sort((a, b) => b.saving - a.saving).slice(0, 24);
    const totalSaving = ds.reduce((a, d) => a + (num(d.saving_ns) || 0), 0);
    const nIt = num(obj(r.summary).iterations) || 0;
    append(s, [el('p', { class: 'section-sub', dataset: { summary: 'decisions' } },
      `${plural(ds.length, 'decision')} in ${plural(groups.size, 'distinct choice')}. ` +
      (totalSaving > 0
        ? `Better choices would have saved ${fmtNs(totalSaving)} in all${nIt ? ` (${fmtNs(totalSaving / nIt)} per iteration)` : ''}.`
        : 'The chosen options were the best the cost model knew of.'))]);
    const box = chartBox('decisions', 'chart');
    append(s, [box]);
    const cats = gl.map((g) => `${str(g.d.coll)} ${fmtBytes(g.d.bytes)}`);
    const optionNames = [...new Set(gl.flatMap((g) => [...g.options.keys()]))];
    // Choices of very different sizes share the chart: a log axis keeps each one readable; it
    // starts a decade below the smallest time so that bars differ visibly.
    const unit = { f: 1 };
    const smallest = Math.min(...gl.flatMap((g) => [...g.options.values()].filter((o) => o.n && o.sum > 0).map((o) => o.sum / o.n)
      .concat(g.nm && g.measured > 0 ? [g.measured / g.nm] : [])));
    const logFloor = Number.isFinite(smallest) ? 10 ** (Math.floor(Math.log10(smallest)) - 1) : 1;
    const palette = ['#9db5e8', '#f5c08a', '#a6dfd6', '#cdb8f5', '#f2a8be', '#c1e09b', '#b8c2d0'];
    const series = optionNames.map((o, i) => ({
      name: `predicted: ${o}`, type: 'bar', barMaxWidth: 26, itemStyle: { color: palette[i % palette.length], borderRadius: [3, 3, 0, 0] },
      data: gl.map((g) => {
        const v = g.options.get(o);
        if (!v || !v.n) return null;
        const chosen = str(g.d.chosen) === o;
        return { value: v.sum / v.n / unit.f, itemStyle: chosen ? { borderColor: '#1c2430', borderWidth: 1.5 } : undefined };
      }),
    }));
    series.push({
      name: 'measured (chosen)', type: 'scatter', symbol: 'diamond', symbolSize: 14, itemStyle: { color: '#e0524a' }, z: 5,
      data: gl.map((g) => (g.nm ? g.measured / g.nm / unit.f : null)),
    });
    chart(box, 'decisions', {
      grid: { left: 64, right: 24, top: 48, bottom: 40 },
      legend: { top: 0, type: 'scroll', textStyle: { color: '#4a5566' } },
      tooltip: Object.assign({ trigger: 'axis', axisPointer: { type: 'shadow' }, formatter: (items) => {
        const g = gl[items[0].dataIndex];
        let h = ttHead(`${str(g.d.kind)}: ${str(g.d.coll)} of ${fmtBytes(g.d.bytes)} (${plural(g.n, 'time')})`) +
          ttRow(null, 'Chosen', str(g.d.chosen)) + ttRow(null, 'Reason', str(g.d.reason) || '\u2013');
        for (const [o, v] of g.options) h += ttRow(null, `predicted ${o}`, v.n ? fmtNs(v.sum / v.n) : '\u2013');
        h += ttRow('#e0524a', 'measured (mean)', g.nm ? fmtNs(g.measured / g.nm) : '\u2013');
        h += ttRow(null, 'saving (all calls)', fmtNs(g.saving));
        return h;
      } }, TOOLTIP),
      xAxis: { type: 'category', data: cats, axisLabel: { color: '#4a5566', interval: 0, hideOverlap: true } },
      yAxis: { type: 'log', logBase: 10, name: 'time (log scale)', min: logFloor, nameTextStyle: { color: '#7a8597', align: 'left' },
        axisLabel: { color: '#4a5566', formatter: (v) => fmtNs(v) }, splitLine: { lineStyle: { color: '#eef1f5' } } },
      series,
    });
    if (groups.size > gl.length) {
      append(s, [el('p', { class: 'section-sub' }, `The chart shows the ${gl.length} distinct choices with the largest saving.`)]);
    }

    append(s, [el('h3', null, 'Every decision'), table('decisions', [
      { label: 'Seq', num: true, value: (d) => num(d.seq) },
      { label: 'Kind', value: (d) => str(d.kind) },
      { label: 'Collective', value: (d) => `${str(d.coll)}\u0001${String(num(d.bytes) || 0).padStart(20, '0')}`,
        show: (d) => `${str(d.coll)} \u00b7 ${fmtBytes(d.bytes)}` },
      { label: 'Chosen', value: (d) => str(d.chosen), show: (d) => el('b', null, str(d.chosen)) },
      { label: 'Reason', value: (d) => str(d.reason), cls: 'wrap', show: (d) => el('span', null, str(d.reason),
        d.ranks_agree === false ? el('span', { class: 'pill bad', title: 'the ranks did not all make this choice' }, ' ranks disagree') : null) },
      { label: 'Alternatives (predicted)', value: (d) => arr(d.alternatives).length, cls: 'wrap', show: (d) => el('span', null,
        arr(d.alternatives).map((a) => el('span', {
          class: `pill${str(a.option) === str(d.best) ? ' pill-best' : ''}${str(a.option) === str(d.chosen) ? ' pill-chosen' : ''}`,
          title: num(a.measured_mean_ns) !== null ? `measured mean ${fmtNs(a.measured_mean_ns)}` : 'not measured in this run',
        }, `${str(a.option)} ${fmtNs(a.predicted_ns)}`))) },
      { label: 'Predicted', num: true, value: (d) => num(d.predicted_ns), show: (d) => fmtNs(d.predicted_ns) },
      { label: 'Measured', num: true, value: (d) => num(d.measured_ns), show: (d) => fmtNs(d.measured_ns) },
      { label: 'Meas./pred.', num: true, value: (d) => num(d.model_ratio), show: (d) => fmtRatio(d.model_ratio) },
      { label: 'Best (predicted)', value: (d) => str(d.best), show: (d) => el('span', null,
        el('span', { class: str(d.best) === str(d.chosen) ? 'good' : 'warn' }, str(d.best)), ` ${fmtNs(d.best_predicted_ns)}`) },
      { label: 'Saving', num: true, value: (d) => num(d.saving_ns), show: (d) => ((num(d.saving_ns) || 0) > 0
        ? el('span', { class: 'bad', title: `from the ${str(d.saving_source) || 'model'}` }, fmtNs(d.saving_ns)) : el('span', { class: 'muted' }, '0')) },
    ], ds)]);
    return s;
  }

  function ranksSection(r) {
    const s = section('ranks', 'Ranks and stragglers',
      'A straggler is a rank whose late arrival at collectives others wait for; lateness is how long after the ' +
      'second-to-last rank it arrived.', 'Ranks');
    const st = arr(r.stragglers);
    const ranks = arr(r.ranks);
    if (!st.length && !ranks.length) {
      append(s, [emptyBox('ranks', 'No per-rank figures: no rank took part in a complete iteration.')]);
      return s;
    }
    append(s, [el('h3', null, 'Stragglers'), st.length ? table('stragglers', [
      { label: 'Rank', num: true, value: (x) => num(x.rank) },
      { label: 'Total lateness', num: true, value: (x) => num(x.lateness_ns), show: (x) => fmtNs(x.lateness_ns) },
      { label: 'Mean lateness', num: true, value: (x) => num(x.mean_lateness_ns), show: (x) => fmtNs(x.mean_lateness_ns) },
      { label: 'Times last', num: true, value: (x) => num(x.times_last), show: (x) => `${fmtInt(x.times_last)}${num(x.collectives) !== null ? ` of ${fmtInt(x.collectives)}` : ''}` },
      { label: 'Others waited', num: true, value: (x) => num(x.others_wait_ns), show: (x) => fmtNs(x.others_wait_ns) },
      { label: 'Share of iteration time', num: true, value: (x) => num(x.share), show: (x) => fmtPct(x.share) },
      { label: 'Communicator', value: (x) => str(x.comm_id), show: (x) => el('span', { class: 'mono muted' }, str(x.comm_id)) },
    ], st) : emptyBox('stragglers', 'No straggler: no rank was regularly the last to arrive.')]);
    if (ranks.length) {
      append(s, [el('h3', null, 'Per rank, all iterations'), table('ranks', [
        { label: 'Rank', num: true, value: (x) => num(x.rank) },
        { label: 'Host', value: (x) => str(x.host) },
        { label: 'Package', num: true, value: (x) => num(x.package) },
        { label: 'Time', num: true, value: (x) => num(x.duration_ns), show: (x) => fmtNs(x.duration_ns) },
        { label: 'Compute', num: true, value: (x) => num(x.compute_ns), show: (x) => fmtNs(x.compute_ns) },
        { label: 'Communication', num: true, value: (x) => num(x.communication_ns), show: (x) => fmtNs(x.communication_ns) },
        { label: 'Overlap', num: true, value: (x) => num(x.overlap_share), show: (x) => fmtPct(x.overlap_share) },
        { label: 'Exposed comm.', num: true, value: (x) => num(x.exposed_communication_ns), show: (x) => fmtNs(x.exposed_communication_ns) },
        { label: 'Waiting', num: true, value: (x) => num(x.wait_ns), show: (x) => fmtNs(x.wait_ns) },
        { label: 'Late sender', num: true, value: (x) => num(x.wait_late_sender_ns), show: (x) => fmtNs(x.wait_late_sender_ns) },
        { label: 'Late receiver', num: true, value: (x) => num(x.wait_late_receiver_ns), show: (x) => fmtNs(x.wait_late_receiver_ns) },
        { label: 'Idle', num: true, value: (x) => num(x.idle_ns), show: (x) => fmtNs(x.idle_ns) },
        { label: 'Lateness', num: true, value: (x) => num(x.lateness_ns), show: (x) => fmtNs(x.lateness_ns) },
      ], ranks)]);
    }
    return s;
  }

  function traceSection(r) {
    const s = section('trace', 'Trace', null, 'Trace');
    const t = obj(r.trace);
    const p = obj(r.provider);
    const tool = obj(r.tool);
    const kv = (pairs) => el('dl', { class: 'kv' }, pairs.filter(([, v]) => v !== null && v !== undefined && v !== '')
      .map(([k, v]) => [el('dt', null, k), el('dd', null, v)]));
    append(s, [el('div', { class: 'grid-2' },
      kv([
        ['Trace directories', arr(t.paths).length ? el('span', null, arr(t.paths).map((x, i) => [i ? el('br') : null, el('code', null, str(x))])) : '\u2013'],
        ['Length', fmtNs(t.duration_ns)],
        ['Events', `${fmtInt(t.events)} read${num(t.events_ignored) ? `, ${fmtInt(t.events_ignored)} ignored` : ''}`],
        ['Discarded', `${plural(num(t.discarded_events) || 0, 'event')}, ${plural(num(t.discarded_packets) || 0, 'packet')}`],
        ['Ranks seen', `${arr(t.ranks_seen).map(str).join(', ') || 'none'} (${fmtInt(t.ranks_expected)} expected)`],
        ['Timeline', r.timeline ? el('span', null, el('code', null, str(r.timeline)), ' \u2014 open it in ui.perfetto.dev or chrome://tracing') : null],
      ]),
      kv([
        ['Provider', `${str(p.name)}${p.abi !== null && p.abi !== undefined ? `, ABI ${str(p.abi)}` : ', ABI unknown'}${p.recognised === false ? ' (not recognised)' : ''}`],
        ['Tracer', str(p.tracer) || '\u2013'],
        ['Analysed by', `${str(tool.name)} ${str(tool.version)} on Babeltrace ${str(tool.babeltrace2_version)}`],
        ['Command', tool.command ? el('code', null, str(tool.command)) : null],
      ]))]);
    const comms = arr(t.comms);
    if (comms.length) {
      append(s, [el('h3', null, 'Communicators'), table('comms', [
        { label: 'Name', value: (c) => str(c.name) },
        { label: 'Id', value: (c) => str(c.comm_id), show: (c) => el('span', { class: 'mono' }, str(c.comm_id)) },
        { label: 'Size', num: true, value: (c) => num(c.size) },
        { label: 'Packages', num: true, value: (c) => num(c.npackages) },
        { label: 'Hosts', value: (c) => [...new Set(arr(c.ranks).map((x) => str(x.host)))].join(', '), cls: 'wrap' },
        { label: 'Gloo shim', value: (c) => (c.gloo ? 1 : 0), show: (c) => (c.gloo ? 'yes' : 'no') },
      ], comms)]);
    }
    return s;
  }

  function footer(r) {
    const f = document.getElementById('footer');
    if (!f) return;
    const tool = obj(r && r.tool);
    const gen = document.querySelector('meta[name="generator"]');
    f.textContent = '';
    const by = r && isDiff(r) ? 'Diff by glucx-analyze diff. ' : `Report by ${str(tool.name) || 'glucx-analyze'} ${str(tool.version)}. `;
    append(f, [r ? by : '',
      `Dashboard: ${gen ? gen.getAttribute('content') : 'glucx'}. Works offline: everything is inside this file.`]);
  }

  /* ---- the diff of two runs (diff.json, glucx-analyze diff) ------------------------------ */

  // The same template shows a diff.json (analysis/diff.schema.json, METRICS.md "Diff of two
  // runs"): glucx-analyze fills it in the same way into diff.html. A diff is told apart from a
  // report by its "diff_version".
  const DIFF_VERSION = 1;
  function isDiff(doc) { return Object.prototype.hasOwnProperty.call(doc, 'diff_version'); }

  const SLOWER = '#e0524a';  // B takes longer than A: the contribution adds to the difference
  const FASTER = '#2bb3a3';  // B takes less time
  const PHASE_LABEL = { compute: 'Compute', exposed_communication: 'Exposed communication', wait: 'Waiting', idle: 'Idle' };
  const CAUSE_LABEL = { collective: 'Algorithm change', workload: 'Different work', decision: 'Schedule decision',
    link: 'Link', rank: 'Rank', phase: 'Phase', none: 'No difference' };

  function fmtDelta(v) {
    const x = num(v);
    if (x === null) return '\u2013';
    return x > 0 ? `+${fmtNs(x)}` : fmtNs(x).replace(/^-/, '\u2212');
  }
  function fmtSharePct(v) {
    const x = num(v);
    if (x === null) return '\u2013';
    return `${x > 0 ? '+' : ''}${fmtPct(x)}`.replace(/^-/, '\u2212');
  }
  function presentNote(e) {
    return e.present === 'a' ? 'only in A' : e.present === 'b' ? 'only in B' : '';
  }

  // One diff section: how its entries are named and which per-side value sits beside the contribution.
  function diffSections(d) {
    const comms = (list) => new Set(list.map((e) => str(e.comm))).size > 1;
    const co = arr(d.collectives);
    const de = arr(d.decisions);
    const rk = arr(obj(d.ranks).entries);
    const links = obj(d.links);
    return [
      { id: 'phases', title: 'Phases', nav: 'Phases', entries: arr(d.phases), value: 'ns', valueLabel: 'time per iteration',
        sub: 'The mean iteration split into compute, exposed communication, waiting and idle time: the four add up to the difference.',
        empty: 'No phases: neither report has the totals the phases come from.',
        label: (e) => PHASE_LABEL[str(e.phase)] || str(e.phase) },
      { id: 'collectives', title: 'Collectives', nav: 'Collectives', entries: co, value: 'time_per_iteration_ns', valueLabel: 'time per iteration',
        sub: 'Time in each collective and size range per iteration. Collectives overlap compute and each other, so these do not add up to the difference.',
        empty: 'No collectives in either run.',
        label: (e) => `${comms(co) ? `${str(e.comm)}: ` : ''}${str(e.coll)} ${str(e.bucket)}`,
        extra: (e) => [['Algorithm', e.algorithm_changed
          ? `${str(obj(e.a).algorithm)} \u2192 ${str(obj(e.b).algorithm)} (changed)` : str(obj(e.a || e.b).algorithm)],
        ['Calls per iteration', `${sideNum(e.a, 'calls_per_iteration')} \u2192 ${sideNum(e.b, 'calls_per_iteration')}`]] },
      { id: 'links', title: links.kind === 'rank_pair' ? 'Links (rank pairs)' : 'Physical links', nav: 'Links',
        entries: arr(links.entries), value: 'busy_ns_per_iteration', valueLabel: 'busy per iteration',
        sub: 'Busy time of each link per iteration. Links are busy in parallel: these do not add up to the difference.',
        empty: 'No links in either run (a report without physical_links or links).',
        label: (e) => str(e.label),
        extra: (e) => [['Bytes per iteration', `${fmtBytes(obj(e.a).bytes_per_iteration)} \u2192 ${fmtBytes(obj(e.b).bytes_per_iteration)}`]] },
      { id: 'decisions', title: 'Schedule decisions', nav: 'Decisions', entries: de, value: 'measured_ns_per_iteration',
        valueLabel: 'measured per iteration',
        sub: 'Measured time of the collectives behind each kind of scheduling decision, per iteration.',
        empty: 'No schedule decisions in either run.',
        label: (e) => `${comms(de) ? `${str(e.comm)}: ` : ''}${str(e.kind)}: ${str(e.coll)} ${str(e.bucket)}`,
        extra: (e) => [['Chosen', e.changed ? `${str(obj(e.a).option)} \u2192 ${str(obj(e.b).option)} (changed)`
          : str(obj(e.a || e.b).option)]] },
      { id: 'ranks', title: 'Ranks', nav: 'Ranks', entries: rk, value: 'iteration_ns', valueLabel: 'iteration time',
        sub: 'Each rank\u2019s term of the mean over ranks; they add up to the difference when every iteration is complete on every rank.',
        empty: 'No ranks matched in the two runs.',
        label: (e) => `${comms(rk) ? `${str(e.comm)}: ` : ''}rank ${str(e.rank)}`,
        extra: (e) => [['Host', `${str(obj(e.a).host) || '\u2013'} \u2192 ${str(obj(e.b).host) || '\u2013'}`]] },
    ];
  }
  function sideNum(side, key) {
    const x = num(obj(side)[key]);
    return x === null ? '\u2013' : sig(x, 3);
  }

  function diffBanners(d) {
    const out = [];
    if (d.diff_version !== DIFF_VERSION) {
      out.push(el('div', { class: 'banner banner-warn', dataset: { banner: 'schema' } },
        el('div', { class: 'banner-title' }, 'Diff format not recognised'),
        `This dashboard reads diff version ${DIFF_VERSION}; the diff says ${str(d.diff_version) || 'nothing'}. Parts of it may not be shown.`));
    }
    const partial = ['a', 'b'].filter((s) => obj(d[s]).partial === true);
    if (partial.length) {
      out.push(el('div', { class: 'banner banner-error', dataset: { banner: 'partial' }, role: 'alert' },
        el('div', { class: 'banner-title' }, partial.length === 2 ? 'Both reports are partial' : `Report ${partial[0].toUpperCase()} is partial`),
        'Its trace was incomplete, so the numbers compared may cover only part of the run.'));
    }
    const notes = arr(d.notes).map(str);
    if (notes.length) {
      out.push(el('div', { class: 'banner banner-warn', dataset: { banner: 'notes' } },
        el('div', { class: 'banner-title' }, notes.length === 1 ? 'Note' : 'Notes'),
        el('ul', null, notes.map((x) => el('li', null, x)))));
    }
    return out;
  }

  function diffHero(d) {
    const it = obj(d.iteration);
    const c = obj(d.cause);
    const kind = str(c.kind) || 'none';
    const ra = obj(d.a);
    const rb = obj(d.b);
    // data-ns: the exact integer of diff.json behind each headline figure
    const fig = (key, value) => el('b', { dataset: { headline: key, ns: str(value) } }, key === 'delta' ? fmtDelta(value) : fmtNs(value));
    const cause = el('div', { class: 'verdict', id: 'verdict', dataset: { cause: kind } },
      el('div', { class: 'verdict-top' },
        el('span', { class: 'verdict-label' }, 'Diff: B minus A'),
        el('span', { class: `badge badge-diff-${kind.replace(/[^a-z_]/g, '')}` }, CAUSE_LABEL[kind] || kind),
        c.subject !== null && c.subject !== undefined ? el('span', { class: 'muted' }, str(c.subject)) : null),
      el('p', { class: 'verdict-sentence diff-cause' }, str(c.sentence) || 'The diff names no cause.'),
      el('div', { class: 'verdict-meta' },
        el('span', null, 'Mean iteration A ', fig('a', it.a_ns)),
        el('span', null, 'B ', fig('b', it.b_ns)),
        el('span', { class: (num(it.delta_ns) || 0) > 0 ? 'bad' : (num(it.delta_ns) || 0) < 0 ? 'good' : '' },
          'Difference ', fig('delta', it.delta_ns), ` (${fmtSharePct(it.delta_share)} of A)`),
        c.kind !== 'none' ? el('span', null, 'Cause contributes ', el('b', null, fmtDelta(c.contribution_ns)),
          ` (${fmtPct(c.share)} of the difference)`) : null));
    const k = (label, value, note, cls) => el('div', { class: `kpi${cls ? ` ${cls}` : ''}` },
      el('div', { class: 'kpi-label' }, label), el('div', { class: 'kpi-value' }, value),
      note ? el('div', { class: 'kpi-note' }, note) : null);
    const run = (r) => `${plural(num(r.iterations) || 0, 'iteration')}, ${plural(num(r.ranks) || 0, 'rank')}`;
    const kpis = el('div', { class: 'kpis', id: 'kpis' },
      k('Run A', fmtNs(it.a_ns), el('span', null, el('code', { class: 'run-label' }, str(ra.label)), el('br'), run(ra))),
      k('Run B', fmtNs(it.b_ns), el('span', null, el('code', { class: 'run-label' }, str(rb.label)), el('br'), run(rb))),
      k('Difference', fmtDelta(it.delta_ns), `${fmtSharePct(it.delta_share)} of A`),
      k('Median (reference)', num(it.median_delta_ns) === null ? '\u2013' : fmtDelta(it.median_delta_ns),
        num(it.median_delta_ns) === null ? 'no median' : `${fmtNs(it.median_a_ns)} \u2192 ${fmtNs(it.median_b_ns)}`));
    const verdicts = el('dl', { class: 'kv' },
      ra.verdict !== undefined ? [el('dt', null, 'Verdict A'), el('dd', null, str(ra.verdict))] : null,
      rb.verdict !== undefined ? [el('dt', null, 'Verdict B'), el('dd', null, str(rb.verdict))] : null);
    return [el('div', { class: 'hero' }, cause), kpis, verdicts.childNodes.length ? el('div', { class: 'section' }, verdicts) : null];
  }

  // A horizontal bar per entry, in the order of diff.json (largest contribution first, at the top).
  function diffSection(d, spec) {
    const id = `diff-${spec.id}`;
    const s = section(id, spec.title, spec.sub, spec.nav);
    const entries = spec.entries;
    if (!entries.length) {
      append(s, [emptyBox(id, spec.empty)]);
      return s;
    }
    const MAX = 40;
    const shown = entries.slice(0, MAX);
    const labels = shown.map(spec.label);
    const box = chartBox(id, 'chart');
    box.style.height = `${Math.max(160, 30 * shown.length + 70)}px`;
    append(s, [box]);
    const values = shown.map((e) => num(e.contribution_ns) || 0);
    const extent = Math.max(1, ...values.map(Math.abs));
    chart(box, id, {
      grid: { left: 16, right: 140, top: 30, bottom: 24, containLabel: true },
      tooltip: Object.assign({ trigger: 'item', formatter: (p) => {
        const e = shown[p.dataIndex];
        let h = ttHead(labels[p.dataIndex]) +
          ttRow(values[p.dataIndex] > 0 ? SLOWER : FASTER, 'Contribution', `${fmtDelta(e.contribution_ns)} per iteration`) +
          ttRow(null, 'Share of the difference', fmtPct(e.share)) +
          ttRow(null, `A: ${spec.valueLabel}`, e.a ? fmtNs(obj(e.a)[spec.value]) : 'absent') +
          ttRow(null, `B: ${spec.valueLabel}`, e.b ? fmtNs(obj(e.b)[spec.value]) : 'absent');
        for (const [k, v] of (spec.extra ? spec.extra(e) : [])) h += ttRow(null, k, v);
        if (presentNote(e)) h += ttRow(null, 'Present', presentNote(e));
        return h;
      } }, TOOLTIP),
      // categories are the entries' positions: labels may repeat (and stay plain text on the canvas)
      yAxis: { type: 'category', inverse: true, data: shown.map((_, i) => String(i)),
        axisLabel: { color: '#4a5566', width: 320, overflow: 'truncate', formatter: (v) => labels[Number(v)] },
        axisTick: { show: false } },
      xAxis: { type: 'value', min: -extent, max: extent, name: 'time per iteration, B \u2212 A',
        nameLocation: 'middle', nameGap: 26, nameTextStyle: { color: '#7a8597' },
        // the symmetric ends are not round numbers: only the ticks between them are labelled
        axisLabel: { color: '#4a5566', showMinLabel: false, showMaxLabel: false, formatter: (v) => fmtDelta(v) },
        splitLine: { lineStyle: { color: '#eef1f5' } } },
      series: [{
        type: 'bar', barMaxWidth: 20,
        data: shown.map((e, i) => ({ value: values[i], name: labels[i],
          itemStyle: { color: values[i] > 0 ? SLOWER : FASTER, borderRadius: 3 } })),
        label: { show: true, position: 'right', color: '#1c2430', fontSize: 11,
          formatter: (p) => `${fmtDelta(values[p.dataIndex])}  ${fmtPct(shown[p.dataIndex].share).replace(/^-/, '\u2212')}` },
      }],
    });
    if (entries.length > shown.length) {
      append(s, [el('p', { class: 'section-sub', dataset: { more: spec.id } },
        `The chart shows the ${shown.length} largest of ${plural(entries.length, 'entry', 'entries')}; diff.json and diff.txt have all.`)]);
    }
    return s;
  }

  // What changed in the configuration: collectives whose algorithms and decisions whose chosen
  // options differ between the runs (a table: names, not magnitudes).
  function diffChangesSection(d) {
    const s = section('diff-changes', 'Algorithm and decision changes',
      'Groups present in both runs whose set of algorithms (or chosen options) differs.', 'Changes');
    const co = arr(d.collectives).filter((e) => e.algorithm_changed === true);
    const de = arr(d.decisions).filter((e) => e.changed === true);
    const counts = (m) => Object.entries(obj(m)).map(([k, v]) => `${k} \u00d7${fmtInt(v)}`).join(', ');
    if (!co.length && !de.length) {
      append(s, [emptyBox('diff-changes', 'No algorithm or decision changed between the runs.')]);
      return s;
    }
    if (co.length) {
      append(s, [el('h3', null, 'Collectives'), table('diff-algorithms', [
        { label: 'Collective', value: (e) => `${str(e.coll)} ${str(e.bucket)}` },
        { label: 'Communicator', value: (e) => str(e.comm) },
        { label: 'Algorithm A', value: (e) => str(obj(e.a).algorithm), show: (e) => el('span', { title: counts(obj(e.a).algorithms) }, str(obj(e.a).algorithm)) },
        { label: 'Algorithm B', value: (e) => str(obj(e.b).algorithm), show: (e) => el('b', { title: counts(obj(e.b).algorithms) }, str(obj(e.b).algorithm)) },
        { label: 'Calls A', value: (e) => counts(obj(e.a).algorithms), cls: 'wrap' },
        { label: 'Calls B', value: (e) => counts(obj(e.b).algorithms), cls: 'wrap' },
        { label: 'Contribution', num: true, value: (e) => num(e.contribution_ns), show: (e) => fmtDelta(e.contribution_ns) },
        { label: 'Share', num: true, value: (e) => num(e.share), show: (e) => fmtPct(e.share) },
      ], co)]);
    }
    if (de.length) {
      append(s, [el('h3', null, 'Schedule decisions'), table('diff-decision-changes', [
        { label: 'Decision', value: (e) => `${str(e.kind)}: ${str(e.coll)} ${str(e.bucket)}` },
        { label: 'Communicator', value: (e) => str(e.comm) },
        { label: 'Chosen A', value: (e) => str(obj(e.a).option), show: (e) => el('span', { title: counts(obj(e.a).chosen) }, str(obj(e.a).option)) },
        { label: 'Chosen B', value: (e) => str(obj(e.b).option), show: (e) => el('b', { title: counts(obj(e.b).chosen) }, str(obj(e.b).option)) },
        { label: 'Contribution', num: true, value: (e) => num(e.contribution_ns), show: (e) => fmtDelta(e.contribution_ns) },
        { label: 'Share', num: true, value: (e) => num(e.share), show: (e) => fmtPct(e.share) },
      ], de)]);
    }
    return s;
  }

  function diffStraggler(d) {
    const st = obj(obj(d.ranks).straggler);
    const one = (x) => (x && typeof x === 'object'
      ? `rank ${str(x.rank)}${x.comm !== undefined ? ` (${str(x.comm)})` : ''}, ${fmtNs(x.lateness_per_iteration_ns)} late per iteration`
      : 'none');
    const rk = obj(d.ranks);
    return el('dl', { class: 'kv', dataset: { straggler: st.changed ? 'changed' : 'same' } },
      el('dt', null, 'Ranks'), el('dd', null, `A ${fmtInt(rk.a_ranks)}, B ${fmtInt(rk.b_ranks)}, ${fmtInt(rk.matched)} matched`),
      el('dt', null, 'Top straggler A'), el('dd', null, one(st.a)),
      el('dt', null, 'Top straggler B'), el('dd', null, one(st.b), st.changed ? el('span', { class: 'pill bad' }, ' changed') : null));
  }

  function diffParts(d) {
    const specs = diffSections(d);
    return [
      () => diffBanners(d),
      () => diffHero(d),
      ...specs.map((spec) => () => {
        const s = diffSection(d, spec);
        if (spec.id === 'ranks') append(s, [el('h3', null, 'Stragglers'), diffStraggler(d)]);
        return s;
      }),
      () => diffChangesSection(d),
    ];
  }

  /* ---- main ------------------------------------------------------------------------------ */

  function fatal(message) {
    const app = document.getElementById('app');
    app.textContent = '';
    append(app, [el('div', { class: 'banner banner-error', role: 'alert', dataset: { banner: 'fatal' } },
      el('div', { class: 'banner-title' }, 'Cannot show this report'), message)]);
  }

  function diffPage(d) {
    dash.view = 'diff';
    document.body.dataset.view = 'diff';
    document.title = `glucx diff \u2014 ${str(obj(d.a).label)} vs ${str(obj(d.b).label)}`;
    const sub = document.querySelector('.brand-sub');
    if (sub) sub.textContent = 'diff of two runs';
    return diffParts(d);
  }

  function reportPage(report) {
    dash.view = 'report';
    document.body.dataset.view = 'report';
    const t = obj(report.trace);
    const paths = arr(t.paths).map(str);
    document.title = `glucx report \u2014 ${paths.length ? paths.join(', ') : 'trace'}${t.partial ? ' (partial)' : ''}`;
    return [
      () => banners(report),
      () => hero(report),
      () => breakdownSection(report),
      () => criticalPathSection(report),
      () => linksSection(report),
      () => physicalSection(report),
      () => collectivesSection(report),
      () => decisionsSection(report),
      () => ranksSection(report),
      () => traceSection(report),
    ];
  }

  function main() {
    const app = document.getElementById('app');
    let report;
    try {
      if (typeof echarts === 'undefined') throw new ReportError('The chart library is missing from this page.');
      report = readReport();
    } catch (e) {
      if (!(e instanceof ReportError)) throw e;
      fatal(e.message);
      footer(null);
      dash.state = 'error';
      document.body.dataset.state = 'error';
      return;
    }
    dash.report = report;
    app.textContent = '';
    // The same page shows a report.json (report.html) or a diff.json (diff.html).
    const parts = isDiff(report) ? diffPage(report) : reportPage(report);
    for (const make of parts) {
      // Build into a detached holder first: a section that throws while being built leaves nothing behind.
      try {
        pendingCharts.length = 0;
        const holder = document.createDocumentFragment();
        append(holder, [make()]);
        app.appendChild(holder);
        flushCharts();
      } catch (e) {
        console.error('glucx dashboard: a section failed:', e);
        append(app, [el('div', { class: 'section' }, el('div', { class: 'section-error' },
          `This part of the report could not be drawn: ${e && e.message ? e.message : String(e)}`))]);
      }
    }
    footer(report);
    dash.state = 'ready';
    document.body.dataset.state = 'ready';
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', main);
  else main();
}());
