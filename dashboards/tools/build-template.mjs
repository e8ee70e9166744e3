#!/usr/bin/env node
// Builds the self-contained dashboard template (report-template.html) from src/report.html by
// inlining src/report.css, Apache ECharts (dist/echarts.min.js from node_modules) and
// src/report.js. The result has no external resource and exactly one @GLUCX_REPORT_JSON@ marker,
// which glucx-analyze replaces with report.json (see fill-report.mjs).
//
// usage: node build-template.mjs --src DIR --node-modules DIR --glucx-version V --out FILE
import fs from 'node:fs';
import path from 'node:path';

const MARKER = '@GLUCX_REPORT_JSON@';

function fail(msg) {
  process.stderr.write(`build-template: ${msg}\n`);
  process.exit(1);
}

function parseArgs(argv) {
  const want = new Set(['--src', '--node-modules', '--glucx-version', '--out']);
  const args = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!want.has(argv[i]) || i + 1 >= argv.length) {
      fail(`bad argument '${argv[i]}' (usage: --src DIR --node-modules DIR --glucx-version V --out FILE)`);
    }
    args[argv[i].slice(2)] = argv[i + 1];
  }
  for (const k of want) {
    if (!(k.slice(2) in args)) fail(`missing ${k}`);
  }
  return args;
}

function read(file) {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (e) {
    fail(`cannot read ${file}: ${e.message}`);
  }
}

function count(haystack, needle) {
  let n = 0;
  for (let i = haystack.indexOf(needle); i >= 0; i = haystack.indexOf(needle, i + needle.length)) n++;
  return n;
}

// Text placed inside <script> or <style> must not end the element early, open an HTML comment
// (which changes how </script> is parsed) or carry the report marker.
function checkInline(name, text, endTag) {
  const lower = text.toLowerCase();
  for (const bad of [endTag, '<!--', '<script', MARKER.toLowerCase()]) {
    if (lower.includes(bad)) fail(`${name} contains '${bad}' and cannot be inlined in <${endTag.slice(2)}>`);
  }
  return text;
}

// Replace the one placeholder `token` in `html` (function replacer: no '$' patterns).
function put(html, token, text) {
  const n = count(html, token);
  if (n !== 1) fail(`src/report.html must contain ${token} exactly once (found ${n})`);
  return html.replace(token, () => text);
}

const args = parseArgs(process.argv.slice(2));
const echartsDir = path.join(args['node-modules'], 'echarts');
const echartsPkg = JSON.parse(read(path.join(echartsDir, 'package.json')));
const echartsJs = read(path.join(echartsDir, 'dist', 'echarts.min.js'));
// The NOTICE goes into an HTML comment ('--' may not appear there).
const notice = read(path.join(echartsDir, 'NOTICE')).replace(/--/g, '- -').trim();

let html = read(path.join(args.src, 'report.html'));
html = put(html, '<!--glucx:notice-->',
           `<!--\nThis page includes Apache ECharts ${echartsPkg.version} (Apache License 2.0,\n` +
           `https://www.apache.org/licenses/LICENSE-2.0) and its dependencies zrender (BSD-3-Clause)\n` +
           `and tslib (0BSD).\n\n${notice}\n-->`);
html = put(html, '%GLUCX_VERSION%', args['glucx-version']);
html = put(html, '%ECHARTS_VERSION%', echartsPkg.version);
html = put(html, '<!--glucx:css-->',
           `<style>\n${checkInline('src/report.css', read(path.join(args.src, 'report.css')), '</style')}</style>`);
html = put(html, '<!--glucx:echarts-->',
           `<script>\n${checkInline('echarts.min.js', echartsJs, '</script')}\n</script>`);
html = put(html, '<!--glucx:js-->',
           `<script>\n${checkInline('src/report.js', read(path.join(args.src, 'report.js')), '</script')}</script>`);

const markers = count(html, MARKER);
if (markers !== 1) fail(`the template must contain ${MARKER} exactly once (found ${markers})`);
const slot = `<script id="glucx-report" type="application/json">${MARKER}</script>`;
if (count(html, slot) !== 1) fail(`the marker must stand alone in ${slot}`);
// Our own sources load nothing from outside (the browser test also watches every request).
for (const f of ['report.html', 'report.css', 'report.js']) {
  const text = read(path.join(args.src, f));
  if (/<(script|link|img|iframe)\b[^>]*\b(src|href)\s*=|@import|url\(\s*['"]?(https?:)?\/\//i.test(text)) {
    fail(`src/${f} refers to an external resource: everything must be inlined`);
  }
}

const tmp = `${args.out}.tmp${process.pid}`;
fs.writeFileSync(tmp, html);
fs.renameSync(tmp, args.out);
