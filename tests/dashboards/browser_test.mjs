#!/usr/bin/env node
// Browser test of the report.html dashboard: headless Debian Chromium, driven by playwright-core,
// opens a report.html from disk (file://) and checks, with every expectation derived from the
// report.json the page carries:
//   - no console error, no page error, no request leaves the page (it must work offline);
//   - the page reaches data-state=ready (or error for the bare template);
//   - every chart the report calls for has an ECharts instance, series data, and painted pixels,
//     and every chart container on the page is one the report calls for; empty parts show a message;
//   - each table has as many rows as the report's array (first page), in the report's order;
//   - the verdict, partial-report reasons and hostile strings appear as literal text and nothing
//     in the report is ever run as markup (also inside chart tooltips);
//   - every view switch redraws without error;
// (a diff.json, which the same template shows as diff.html, is checked the same way where it
// applies, and: each section's bar chart or its empty-state message, one bar per entry in
// diff.json's order with its value and name; the headline figures exactly; the cause, notes and
// change tables verbatim)
// and saves a full-page screenshot (NAME.png in --out-dir; with --screenshot FILE.png also FILE.png
// and FILE-top.png, the first 1440x900 screen).
//
// usage: node browser_test.mjs --node-modules DIR --out-dir DIR --name NAME
//          (--html REPORT_HTML --report REPORT_JSON | --template TEMPLATE --report REPORT_JSON
//           [--variant hostile|large|failed] | --template TEMPLATE --bare)
//          (a diff.json as REPORT_JSON: --variant hostile|large)
//          [--chromium /usr/bin/chromium] [--screenshot FILE] [--timeout-s 90]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL, fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
// The diff view draws at most this many bars per chart; the page says when a section has more.
const DIFF_CHART_MAX = 40;

function usage(msg) {
  process.stderr.write(`browser_test: ${msg}\n`);
  process.exit(2);
}

const opts = { chromium: '/usr/bin/chromium', 'timeout-s': '90' };
{
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) usage(`unexpected argument '${a}'`);
    if (a === '--bare') { opts.bare = true; continue; }
    if (i + 1 >= argv.length) usage(`${a} needs a value`);
    opts[a.slice(2)] = argv[++i];
  }
}
for (const k of ['node-modules', 'out-dir', 'name']) if (!opts[k]) usage(`missing --${k}`);
if (!opts.bare && !opts.report) usage('missing --report (or --bare)');
if (!opts.html && !opts.template) usage('missing --html or --template');

const failures = [];
function check(cond, what) {
  if (!cond) failures.push(what);
  return cond;
}

// The suite's time-scale factor (tests/README.md): every timeout here is a base value times it.
const timeScale = Number(process.env.GLUCX_TEST_TIME_SCALE || 1);
if (!(timeScale > 0 && timeScale < 1000)) usage(`GLUCX_TEST_TIME_SCALE=${process.env.GLUCX_TEST_TIME_SCALE}: expected a number in (0, 1000)`);
const scaledMs = (ms) => Math.ceil(ms * timeScale);
const timeoutMs = scaledMs(Number(opts['timeout-s']) * 1000);
// A full-page capture of the large report rasterizes every chart at once: on a loaded 2-core
// machine that alone took over 20 s, so it gets a deadline of its own (within --timeout-s).
const screenshotTimeoutMs = scaledMs(60000);
const watchdog = setTimeout(() => {
  process.stderr.write(`browser_test ${opts.name}: FAILED: no result after ${timeoutMs / 1000} s\n`);
  process.exit(1);
}, timeoutMs);

if (!fs.existsSync(opts.chromium)) {
  process.stderr.write(`browser_test ${opts.name}: FAILED: no browser at ${opts.chromium} ` +
                       '(Debian: apt-get install chromium; scripts/install-deps.sh test)\n');
  process.exit(1);
}

const require = createRequire(path.join(path.resolve(opts['node-modules']), 'noop.js'));
const { chromium } = require('playwright-core');
const { fillReport } = await import(pathToFileURL(path.join(here, '..', '..', 'dashboards', 'tools', 'fill-report.mjs')));
const { makeHostile, makeLarge, makeFailed, makeHostileDiff, makeLargeDiff, HOSTILE } = await import(pathToFileURL(path.join(here, 'variants.mjs')));

fs.mkdirSync(opts['out-dir'], { recursive: true });

// The report the page carries and the page itself.
let report = null;
let isDiff = false;  // the JSON is a diff.json (glucx-analyze diff), shown by the same template
let htmlPath;
if (opts.bare) {
  htmlPath = path.resolve(opts.template);
} else {
  let jsonText = fs.readFileSync(opts.report, 'utf8');
  isDiff = 'diff_version' in JSON.parse(jsonText);
  if (opts.variant) {
    const make = isDiff ? { hostile: makeHostileDiff, large: makeLargeDiff }[opts.variant]
      : { hostile: makeHostile, large: makeLarge, failed: makeFailed }[opts.variant];
    if (!make) usage(`unknown --variant ${opts.variant} (hostile, large, failed; for a diff: hostile, large)`);
    jsonText = JSON.stringify(make(JSON.parse(jsonText)), null, 1);
    fs.writeFileSync(path.join(opts['out-dir'], `${opts.name}.report.json`), jsonText);
  }
  report = JSON.parse(jsonText);
  if (opts.html) {
    htmlPath = path.resolve(opts.html);
  } else {
    htmlPath = path.resolve(opts['out-dir'], `${opts.name}.html`);
    fs.writeFileSync(htmlPath, fillReport(fs.readFileSync(opts.template, 'utf8'), jsonText));
  }
}
const pageUrl = pathToFileURL(htmlPath).href;
const shotPath = path.join(path.resolve(opts['out-dir']), `${opts.name}.png`);

const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'glucx-dash-chromium-'));
let context = null;
try {
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: opts.chromium,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1440, height: 900 },
    deviceScaleFactor: 1,
    timeout: scaledMs(30000),
  });
  const page = context.pages()[0] || await context.newPage();
  page.setDefaultTimeout(scaledMs(20000));
  const consoleErrors = [];
  const pageErrors = [];
  const foreignRequests = [];
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => pageErrors.push(String(e && e.stack ? e.stack : e)));
  page.on('request', (req) => {
    const u = req.url();
    if (u !== pageUrl && !u.startsWith('data:') && !u.startsWith('blob:')) foreignRequests.push(u);
  });

  await page.goto(pageUrl, { waitUntil: 'load' });
  await page.waitForFunction(() => document.body && document.body.dataset.state !== 'loading', null, { timeout: scaledMs(20000) });
  const state = await page.evaluate(() => document.body.dataset.state);

  if (opts.bare) {
    check(state === 'error', `bare template: state is '${state}', expected 'error'`);
    const msg = await page.evaluate(() => {
      const b = document.querySelector('[data-banner="fatal"]');
      return b ? b.textContent : null;
    });
    check(msg && msg.includes('template without a report'), `bare template: no clear message (got ${JSON.stringify(msg)})`);
  } else if (isDiff) {
    check(state === 'ready', `page state is '${state}', expected 'ready'`);
    await checkDiffPage(page, report);
    await screenshot(page);
    await checkTooltips(page);
  } else {
    check(state === 'ready', `page state is '${state}', expected 'ready'`);
    await checkReportPage(page, report);
    await screenshot(page);
    // Every view switch redraws without an error, and the charts still hold pixels afterwards.
    const buttons = await page.$$('.seg button');
    for (const b of buttons) await b.click();
    const selects = await page.$$('select');
    for (const s of selects) {
      const values = await s.evaluate((n) => [...n.options].map((o) => o.value));
      for (const v of values.slice(0, 8)) await s.selectOption(v);
    }
    // Back to the first view of each control, so the screenshot shows the defaults.
    for (const group of await page.$$('.seg')) await (await group.$('button')).click();
    for (const s of selects) {
      await s.selectOption(await s.evaluate((n) => n.options[0].value));
    }
    await checkCharts(page, report, 'after switching views');
    await checkTooltips(page);
  }

  const injected = await page.evaluate(() => ({
    flag: window.__glucxInjected === 1,
    imgs: document.querySelectorAll('img, iframe, object, embed').length,
    scripts: document.querySelectorAll('script').length,
  }));
  check(!injected.flag, 'a string from the report was run as script');
  check(injected.imgs === 0, `the page holds ${injected.imgs} img/iframe/object elements: report text became markup`);
  check(injected.scripts === 3, `the page holds ${injected.scripts} script elements, expected 3 (report, ECharts, dashboard)`);

  if (opts.bare) await screenshot(page);
  check(consoleErrors.length === 0, `console errors:\n    ${consoleErrors.join('\n    ')}`);
  check(pageErrors.length === 0, `page errors:\n    ${pageErrors.join('\n    ')}`);
  check(foreignRequests.length === 0, `the page requested resources outside itself:\n    ${foreignRequests.join('\n    ')}`);
  process.stdout.write(`browser_test ${opts.name}: ${pageUrl}\n  screenshot: ${shotPath}\n`);
} catch (e) {
  failures.push(`exception: ${e && e.stack ? e.stack : e}`);
} finally {
  if (context) await context.close().catch(() => {});
  fs.rmSync(userDataDir, { recursive: true, force: true });
}
clearTimeout(watchdog);
if (failures.length) {
  process.stderr.write(`browser_test ${opts.name}: FAILED\n  - ${failures.join('\n  - ')}\n`);
  process.exit(1);
}
process.stdout.write(`browser_test ${opts.name}: passed\n`);

// The page as first drawn (the view switches and tooltips below would leave pointers behind).
async function screenshot(page) {
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: shotPath, fullPage: true, timeout: screenshotTimeoutMs });
  if (opts.screenshot) {
    // The whole page, and its first screen (for documentation).
    fs.copyFileSync(shotPath, opts.screenshot);
    await page.screenshot({ path: opts.screenshot.replace(/(\.png)?$/, '-top.png'), fullPage: false, timeout: screenshotTimeoutMs });
  }
}

/* ---- checks ------------------------------------------------------------------------------- */

function arr(v) { return Array.isArray(v) ? v : []; }

// Which charts the report calls for (name -> true), from the report alone.
function expectedCharts(r) {
  const its = arr(r.iterations);
  const want = {};
  want.breakdown = its.some((it) => arr(it.ranks).length > 0) || arr(r.ranks).length > 0;
  const cp = its.some((it) => arr(it.critical_path && it.critical_path.segments).length > 0);
  want['critical-path'] = cp;
  want['critical-path-kinds'] = cp;
  want['links-heatmap'] = arr(r.links).length > 0;
  want['links-graph'] = arr(r.links).length > 0;
  want['physical-graph'] = arr(r.physical_links).length > 0;
  want['collectives-busbw'] = arr(r.collective_groups).length > 0;
  want.decisions = arr(r.decisions).length > 0;
  return want;
}

// chart -> [its section, whether the report has no data for the whole section]
function emptySection(name, r) {
  const want = expectedCharts(r);
  switch (name) {
    case 'breakdown': return ['breakdown', !want.breakdown];
    case 'critical-path':
    case 'critical-path-kinds': return ['critical-path', !want['critical-path']];
    case 'links-heatmap':
    case 'links-graph': return ['links', arr(r.links).length === 0];
    case 'physical-graph': return ['physical-links', arr(r.physical_links).length === 0];
    case 'collectives-busbw': return ['collectives', arr(r.collectives).length === 0 && arr(r.collective_groups).length === 0];
    case 'decisions': return ['decisions', arr(r.decisions).length === 0];
    default: throw new Error(`no section known for chart '${name}'`);
  }
}

// Every chart on the page: its name, size, data points and the pixels its data painted.
async function paintedCharts(page) {
  // Painted pixels of a chart (all its canvas layers), with its series and again with every
  // series emptied: the difference is what the data drew (axes and labels alone paint too).
  return page.evaluate(() => {
    function painted(node) {
      let n = 0;
      let area = 0;
      for (const canvas of node.querySelectorAll('canvas')) {
        if (!canvas.width || !canvas.height) continue;
        const d = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
        area = Math.max(area, canvas.width * canvas.height);
        for (let i = 0; i < d.length; i += 4) {
          if (d[i + 3] > 32 && (d[i] < 235 || d[i + 1] < 235 || d[i + 2] < 235)) n++;
        }
      }
      return { n, area };
    }
    return [...document.querySelectorAll('.chart')].map((node) => {
      const inst = window.echarts && window.echarts.getInstanceByDom(node);
      const withData = painted(node);
      let without = withData;
      let points = 0;
      if (inst) {
        const saved = inst.getOption();
        for (const s of saved.series || []) {
          for (const v of s.data || []) {
            const x = v && typeof v === 'object' && 'value' in v ? v.value : v;
            if (x !== null && x !== undefined && x !== '-') points++;
          }
        }
        inst.setOption({ series: (saved.series || []).map(() => ({ data: [] })) });
        without = painted(node);
        inst.setOption(saved, true);
      }
      return { name: node.dataset.chart, instance: !!inst, width: node.clientWidth, height: node.clientHeight,
        painted: withData.n - without.n, area: withData.area, points };
    });
  });
}

// A chart's own checks: an instance, a size, data points and pixels painted by its data.
function checkDrawn(f, when) {
  check(f.instance, `${when}: chart '${f.name}' has no ECharts instance`);
  check(f.width > 100 && f.height > 100, `${when}: chart '${f.name}' is ${f.width}x${f.height} px`);
  check(f.points > 0, `${when}: chart '${f.name}' has no data points`);
  check(f.area > 0 && f.painted >= Math.max(150, 0.001 * f.area),
        `${when}: the data of chart '${f.name}' painted ${f.painted} of ${f.area} pixels`);
}

async function checkCharts(page, r, when) {
  const want = expectedCharts(r);
  const found = await paintedCharts(page);
  const names = found.map((f) => f.name);
  for (const [name, expected] of Object.entries(want)) {
    const n = names.filter((x) => x === name).length;
    if (expected) {
      check(n === 1, `${when}: chart '${name}' expected once, found ${n} times`);
    } else {
      check(n === 0, `${when}: chart '${name}' drawn although the report has no data for it`);
      // A section with no data at all says so instead of drawing.
      const [section, sectionEmpty] = emptySection(name, r);
      if (sectionEmpty) {
        const empty = await page.$(`[data-empty-for="${section}"]`);
        check(empty !== null, `${when}: section '${section}' has no data and no message saying so`);
      }
    }
  }
  for (const f of found) {
    check(f.name in want, `${when}: unexpected chart '${f.name}'`);
    checkDrawn(f, when);
  }
}

async function tableInfo(page, name) {
  return page.evaluate((n) => {
    const t = document.querySelector(`table[data-table="${n}"]`);
    if (!t) return null;
    const rows = [...t.tBodies[0].rows].map((tr) => [...tr.cells].map((c) => c.textContent));
    const head = [...t.tHead.rows[0].cells].map((c) => c.textContent);
    return { total: Number(t.dataset.total), rows, head };
  }, name);
}

async function checkReportPage(page, r) {
  await checkCharts(page, r, 'first view');

  // Tables: one row per element of the report's array (the first page holds up to 100), in the
  // report's order, and one recognisable cell per row.
  const PAGE = 100;
  const tables = [
    ['links', arr(r.links), 'Link', (x) => String(x.link_id)],
    ['physical-links', arr(r.physical_links), 'Link', (x) => String(x.phys_id)],
    ['collectives', arr(r.collectives), 'Seq', (x) => String(x.seq)],
    ['collective-groups', arr(r.collective_groups), 'Algorithm', (x) => String(x.algorithm)],
    ['decisions', arr(r.decisions), 'Chosen', (x) => String(x.chosen)],
    ['stragglers', arr(r.stragglers), 'Rank', (x) => String(x.rank)],
    ['ranks', arr(r.ranks), 'Rank', (x) => String(x.rank)],
    ['comms', arr(r.trace && r.trace.comms), 'Name', (x) => String(x.name)],
  ];
  for (const [name, rows, column, cell] of tables) {
    const t = await tableInfo(page, name);
    if (!rows.length) {
      check(t === null || t.total === 0, `table '${name}' shown for an empty array`);
      continue;
    }
    if (!check(t !== null, `table '${name}' missing (report has ${rows.length} rows)`)) continue;
    check(t.total === rows.length, `table '${name}' says ${t.total} rows, report has ${rows.length}`);
    check(t.rows.length === Math.min(rows.length, PAGE), `table '${name}' shows ${t.rows.length} rows, expected ${Math.min(rows.length, PAGE)}`);
    const col = t.head.indexOf(column);
    if (!check(col >= 0, `table '${name}' has no column '${column}'`)) continue;
    const bad = t.rows.findIndex((tr, i) => tr[col] !== cell(rows[i]));
    check(bad < 0, `table '${name}' row ${bad}: '${column}' is ${JSON.stringify(bad >= 0 ? t.rows[bad][col] : '')}, report has ${JSON.stringify(bad >= 0 ? cell(rows[bad]) : '')}`);
  }

  // Header: the verdict sentence verbatim; banners exactly when the report calls for them.
  const hdr = await page.evaluate(() => {
    const text = (sel) => { const n = document.querySelector(sel); return n ? n.textContent : null; };
    return {
      sentence: text('.verdict-sentence'),
      badge: text('.verdict .badge'),
      meta: text('.verdict-meta'),
      sharebar: !!document.querySelector('.verdict .sharebar'),
      partial: !!document.querySelector('[data-banner="partial"]'),
      reasons: [...document.querySelectorAll('[data-banner="partial"] li')].map((li) => li.textContent),
      discarded: text('[data-banner="discarded"]'),
      missing: !!document.querySelector('[data-banner="missing-ranks"]'),
      kpis: document.querySelectorAll('.kpi').length,
      sections: [...document.querySelectorAll('section.section')].map((s) => s.id),
      sectionErrors: document.querySelectorAll('.section-error').length,
    };
  });
  const t = r.trace || {};
  check(hdr.sentence === String(r.verdict.sentence || 'The analysis gave no verdict.'),
        `verdict shown as ${JSON.stringify(hdr.sentence)}, report says ${JSON.stringify(r.verdict.sentence)}`);
  // A failed run: no per-iteration cost, but when it failed and with which status.
  if (r.verdict.bottleneck === 'failed') {
    const f = r.verdict.failure || {};
    check(hdr.badge === 'Run failed', `failed run's badge is ${JSON.stringify(hdr.badge)}`);
    check(!/per iteration/.test(hdr.meta || '') && !hdr.sharebar,
          `failed run shows a per-iteration cost: ${JSON.stringify(hdr.meta)}, share bar ${hdr.sharebar}`);
    check((hdr.meta || '').includes(String(f.status)) && (hdr.meta || '').includes(String(r.verdict.subject)),
          `failed run's details ${JSON.stringify(hdr.meta)} lack status ${f.status} or ${r.verdict.subject}`);
  } else {
    check(/per iteration/.test(hdr.meta || ''), `verdict details ${JSON.stringify(hdr.meta)} lack the cost`);
  }
  check(hdr.partial === (t.partial === true), `partial banner ${hdr.partial ? 'shown' : 'missing'}, report partial=${t.partial}`);
  if (t.partial) {
    check(JSON.stringify(hdr.reasons) === JSON.stringify(arr(t.partial_reasons).map(String)),
          `partial reasons shown as ${JSON.stringify(hdr.reasons)}, report has ${JSON.stringify(t.partial_reasons)}`);
  }
  const discarded = (t.discarded_events || 0) > 0 || (t.discarded_packets || 0) > 0;
  check(!!hdr.discarded === discarded, `discarded-events banner ${hdr.discarded ? 'shown' : 'missing'}, report discarded ${t.discarded_events}`);
  if (discarded && hdr.discarded) {
    check(hdr.discarded.includes(Number(t.discarded_events).toLocaleString('en-US')),
          `discarded banner does not give the count ${t.discarded_events}: ${hdr.discarded}`);
  }
  check(hdr.missing === arr(t.missing_ranks).length > 0, 'missing-ranks banner does not match trace.missing_ranks');
  check(hdr.kpis >= 6, `only ${hdr.kpis} key figures`);
  for (const id of ['breakdown', 'critical-path', 'links', 'collectives', 'decisions', 'ranks', 'trace']) {
    check(hdr.sections.includes(id), `section '${id}' missing`);
  }
  check(hdr.sections.includes('physical-links'), 'section \'physical-links\' missing');
  check(hdr.sectionErrors === 0, `${hdr.sectionErrors} sections failed to draw`);
  await checkPhysicalColours(page, r);

  // Hostile strings stay text: each one the report carries is visible verbatim somewhere.
  if (JSON.stringify(r).includes(HOSTILE)) {
    const body = await page.evaluate(() => document.body.innerText);
    check(body.includes(HOSTILE.trim()), 'a hostile report string is not shown as literal text');
  }
}

// The physical graph in its first view (busy share) draws one edge per physical link of the first
// communicator, between the link's endpoints, carrying the link's busy_share, and the busier a link
// the darker its colour and the wider its line (the colour scale runs from light to dark).
async function checkPhysicalColours(page, r) {
  const all = arr(r.physical_links);
  if (!all.length) return;
  const comm = String(all[0].comm_id);
  const want = new Map(all.filter((l) => String(l.comm_id) === comm).map((l) => [l.phys_id, l]));
  const edges = await page.evaluate(() => {
    const node = document.querySelector('.chart[data-chart="physical-graph"]');
    const inst = node && window.echarts.getInstanceByDom(node);
    if (!inst) return null;
    const series = inst.getOption().series[0];
    return series.links.map((e) => ({ id: e.link.phys_id, source: e.source, target: e.target, v: e.v,
      colour: e.lineStyle.color, width: e.lineStyle.width }));
  });
  if (!check(edges !== null, 'physical graph: no chart instance')) return;
  check(edges.length === want.size, `physical graph: ${edges.length} edges, the communicator has ${want.size} physical links`);
  const end = (e) => `${e.kind}:${e.index}`;
  for (const e of edges) {
    const l = want.get(e.id);
    if (!check(l !== undefined, `physical graph: edge for unknown link ${e.id}`)) continue;
    check(e.source === end(l.a) && e.target === end(l.b), `physical graph: link ${e.id} drawn ${e.source}-${e.target}, report has ${end(l.a)}-${end(l.b)}`);
    check(e.v === (l.busy_share === undefined ? null : l.busy_share), `physical graph: link ${e.id} value ${e.v}, report busy_share ${l.busy_share}`);
  }
  // luminance of "rgb(r,g,b)": the scale darkens as values grow
  const lum = (c) => {
    const m = /^rgb\((\d+),(\d+),(\d+)\)$/.exec(c);
    return m ? 0.2126 * m[1] + 0.7152 * m[2] + 0.0722 * m[3] : null;
  };
  // Colours are 8-bit per channel: two links whose values differ by less than a channel step
  // can get the same colour. Every segment of the scale moves some channel by >= 56 steps over
  // 1/5 of it (scaled by 0.88), so values 1% of the largest apart always differ by a step; below
  // that the busier link must be no lighter, and always wider (the width is not quantised).
  const valued = edges.filter((e) => e.v !== null);
  const vmax = Math.max(0, ...valued.map((e) => e.v));
  for (const x of valued) {
    for (const y of valued) {
      if (x.v > y.v * 1.05 + 1e-12) {
        const resolvable = x.v - y.v >= 0.01 * vmax;
        const lx = lum(x.colour);
        const ly = lum(y.colour);
        check(lx !== null && ly !== null && (resolvable ? lx < ly : lx <= ly) && x.width > y.width,
              `physical graph: link ${x.id} (busy share ${x.v}) is drawn ${x.colour} width ${x.width}, ` +
              `not ${resolvable ? 'darker' : 'as dark'} and wider than link ${y.id} (${y.v}): ${y.colour} width ${y.width}`);
      }
    }
  }
}

// Tooltips are HTML in ECharts: show one on each chart and check report strings stay text.
async function checkTooltips(page) {
  const res = await page.evaluate(() => {
    const out = [];
    for (const node of document.querySelectorAll('.chart')) {
      const inst = window.echarts.getInstanceByDom(node);
      if (!inst) continue;
      const series = inst.getOption().series || [];
      const si = series.findIndex((s) => (s.data || []).some((v) => v !== null && v !== undefined));
      if (si < 0) continue;
      const di = series[si].data.findIndex((v) => v !== null && v !== undefined);
      inst.dispatchAction({ type: 'showTip', seriesIndex: si, dataIndex: di });
      const tips = [...node.querySelectorAll('div')].filter((d) => d.style && d.style.position === 'absolute' && d.textContent.length > 0);
      out.push({ name: node.dataset.chart, tip: tips.map((d) => d.textContent).join(' | ') });
      inst.dispatchAction({ type: 'hideTip' });
    }
    return out;
  });
  for (const t of res) check(t.tip.length > 0, `chart '${t.name}': no tooltip text after showTip`);
}

/* ---- the diff view (diff.json in the same template) ---------------------------------------- */

// The sections of a diff.json the page draws as bar charts, and the words that identify an entry
// (its bar's name and axis label must hold each of them).
function diffSectionsOf(d) {
  return [
    ['phases', arr(d.phases), (e) => [String(e.phase).replace(/_/g, ' ')]],  // compared ignoring case
    ['collectives', arr(d.collectives), (e) => [String(e.coll), String(e.bucket)]],
    ['links', arr(d.links && d.links.entries), (e) => [String(e.label)]],
    ['decisions', arr(d.decisions), (e) => [String(e.kind), String(e.coll), String(e.bucket)]],
    ['ranks', arr(d.ranks && d.ranks.entries), (e) => [`rank ${e.rank}`]],
  ];
}

// "−9.18 ms" / "+1.2 µs" / "20.8 ms" -> ns (null if it is not a time)
function parseShownNs(text) {
  const m = /^([+\u2212-]?)([0-9.]+)\s*(ns|\u00b5s|ms|s)?$/.exec(String(text).trim());
  if (!m) return null;
  const f = { ns: 1, '\u00b5s': 1e3, ms: 1e6, s: 1e9 }[m[3] || 'ns'];
  return (m[1] === '' || m[1] === '+' ? 1 : -1) * Number(m[2]) * f;
}

async function checkDiffPage(page, d) {
  const when = 'diff';
  // Charts: one per section with entries, an empty-state message for each section without.
  const found = await paintedCharts(page);
  const names = found.map((f) => f.name);
  for (const [id, entries] of diffSectionsOf(d)) {
    const name = `diff-${id}`;
    const n = names.filter((x) => x === name).length;
    if (entries.length) {
      check(n === 1, `${when}: chart '${name}' expected once (${entries.length} entries), found ${n} times`);
    } else {
      check(n === 0, `${when}: chart '${name}' drawn although the diff has no ${id}`);
      check(await page.$(`[data-empty-for="${name}"]`) !== null, `${when}: section '${id}' is empty and no message says so`);
    }
  }
  for (const f of found) {
    check(diffSectionsOf(d).some(([id, e]) => f.name === `diff-${id}` && e.length > 0), `${when}: unexpected chart '${f.name}'`);
    checkDrawn(f, when);
  }

  // Bars: in the order of diff.json (the first entry at the top), with its values and names.
  for (const [id, entries, ident] of diffSectionsOf(d)) {
    if (!entries.length) continue;
    const bars = await page.evaluate((name) => {
      const node = document.querySelector(`.chart[data-chart="${name}"]`);
      const inst = node && window.echarts.getInstanceByDom(node);
      if (!inst) return null;
      const o = inst.getOption();
      const data = o.series[0].data;
      return data.map((v, i) => ({ value: v.value, name: v.name,
        y: inst.convertToPixel({ seriesIndex: 0 }, [v.value, i])[1],
        label: o.yAxis[0].axisLabel.formatter(o.yAxis[0].data[i], i) }));
    }, `diff-${id}`);
    if (!check(bars !== null, `${when}: chart 'diff-${id}' has no instance`)) continue;
    const want = Math.min(entries.length, DIFF_CHART_MAX);
    check(bars.length === want, `${when}: chart 'diff-${id}' has ${bars.length} bars, expected ${want}`);
    for (let i = 0; i < Math.min(bars.length, want); i++) {
      const e = entries[i];
      check(bars[i].value === Number(e.contribution_ns),
            `${when}: ${id} bar ${i} is ${bars[i].value}, diff.json's contribution_ns is ${e.contribution_ns}`);
      for (const part of ident(e)) {
        const has = (x) => String(x).toLowerCase().includes(part.toLowerCase());
        check(has(bars[i].name) && has(bars[i].label),
              `${when}: ${id} bar ${i} is named ${JSON.stringify(bars[i].name)} / axis ${JSON.stringify(bars[i].label)}, not ${JSON.stringify(part)}`);
      }
      if (i > 0) check(bars[i].y > bars[i - 1].y, `${when}: ${id} bar ${i} (y ${bars[i].y}) is not below bar ${i - 1} (y ${bars[i - 1].y})`);
    }
    if (entries.length > DIFF_CHART_MAX) {
      check(await page.$(`[data-more="${id}"]`) !== null, `${when}: ${id} has ${entries.length} entries and no note that the chart shows ${DIFF_CHART_MAX}`);
    }
  }

  // Headline: A, B and the difference, exactly diff.json's (data-ns) and shown as that time.
  const it = d.iteration;
  const head = await page.evaluate(() => {
    const q = (k) => { const n = document.querySelector(`[data-headline="${k}"]`); return n ? { ns: n.dataset.ns, text: n.textContent } : null; };
    const t = (sel) => { const n = document.querySelector(sel); return n ? n.textContent : null; };
    return {
      a: q('a'), b: q('b'), delta: q('delta'), cause: t('.diff-cause'),
      notes: [...document.querySelectorAll('[data-banner="notes"] li')].map((li) => li.textContent),
      partial: !!document.querySelector('[data-banner="partial"]'),
      sections: [...document.querySelectorAll('section.section')].map((s) => s.id),
      sectionErrors: document.querySelectorAll('.section-error').length,
    };
  });
  for (const [k, v] of [['a', it.a_ns], ['b', it.b_ns], ['delta', it.delta_ns]]) {
    const h = head[k];
    if (!check(h !== null, `${when}: no headline figure '${k}'`)) continue;
    check(h.ns === String(v), `${when}: headline '${k}' carries ${h.ns}, diff.json has ${v}`);
    const shown = parseShownNs(h.text);
    // three significant digits: within 0.5% (or 1 ns)
    check(shown !== null && Math.abs(shown - v) <= Math.max(1, 0.005 * Math.abs(v)),
          `${when}: headline '${k}' shows ${JSON.stringify(h.text)}, diff.json has ${v} ns`);
  }
  check(head.cause === String(d.cause.sentence), `${when}: cause shown as ${JSON.stringify(head.cause)}, diff.json says ${JSON.stringify(d.cause.sentence)}`);
  check(JSON.stringify(head.notes) === JSON.stringify(arr(d.notes).map(String)),
        `${when}: notes shown as ${JSON.stringify(head.notes)}, diff.json has ${JSON.stringify(d.notes)}`);
  check(head.partial === (d.a.partial === true || d.b.partial === true), `${when}: partial banner ${head.partial ? 'shown' : 'missing'}`);
  for (const id of ['diff-phases', 'diff-collectives', 'diff-links', 'diff-decisions', 'diff-ranks', 'diff-changes']) {
    check(head.sections.includes(id), `${when}: section '${id}' missing`);
  }
  check(head.sectionErrors === 0, `${when}: ${head.sectionErrors} sections failed to draw`);

  // Algorithm and decision changes: a table row for each changed group, in diff.json's order.
  for (const [name, rows, column, cell] of [
    ['diff-algorithms', arr(d.collectives).filter((e) => e.algorithm_changed === true), 'Algorithm B', (e) => String(e.b.algorithm)],
    ['diff-decision-changes', arr(d.decisions).filter((e) => e.changed === true), 'Chosen B', (e) => String(e.b.option)],
  ]) {
    const t = await tableInfo(page, name);
    if (!rows.length) {
      check(t === null, `${when}: table '${name}' shown without changes`);
      continue;
    }
    if (!check(t !== null, `${when}: table '${name}' missing (${rows.length} changes)`)) continue;
    check(t.total === rows.length && t.rows.length === rows.length, `${when}: table '${name}' has ${t.rows.length} rows, expected ${rows.length}`);
    const col = t.head.indexOf(column);
    check(col >= 0 && t.rows.every((tr, i) => tr[col] === cell(rows[i])), `${when}: table '${name}' column '${column}' does not match diff.json`);
  }
  if (!arr(d.collectives).some((e) => e.algorithm_changed === true) && !arr(d.decisions).some((e) => e.changed === true)) {
    check(await page.$('[data-empty-for="diff-changes"]') !== null, `${when}: no changes and no message saying so`);
  }

  if (JSON.stringify(d).includes(HOSTILE)) {
    const body = await page.evaluate(() => document.body.innerText);
    check(body.includes(HOSTILE.trim()), `${when}: a hostile string is not shown as literal text`);
  }
}
