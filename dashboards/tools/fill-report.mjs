#!/usr/bin/env node
// Reference implementation of how glucx-analyze fills the dashboard template: the one marker
// @GLUCX_REPORT_JSON@ is replaced by the report's JSON text with every '<' written as \u003c
// (so no '</script>' or '<!--' can appear inside the <script type="application/json"> element;
// '<' only occurs inside JSON strings, where \u003c means the same character).
// The JSON text is copied as it is, not re-serialised: integers beyond 2^53 keep every digit.
//
// usage: node fill-report.mjs TEMPLATE REPORT_JSON OUT_HTML
import fs from 'node:fs';

const MARKER = '@GLUCX_REPORT_JSON@';

export function fillReport(template, jsonText) {
  const first = template.indexOf(MARKER);
  if (first < 0 || template.indexOf(MARKER, first + 1) >= 0) {
    throw new Error(`template must contain ${MARKER} exactly once`);
  }
  JSON.parse(jsonText);  // throws on a malformed report
  const escaped = jsonText.replace(/</g, '\\u003c');
  return template.slice(0, first) + escaped + template.slice(first + MARKER.length);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [templatePath, jsonPath, outPath] = process.argv.slice(2);
  if (!outPath) {
    process.stderr.write('usage: node fill-report.mjs TEMPLATE REPORT_JSON OUT_HTML\n');
    process.exit(2);
  }
  try {
    const html = fillReport(fs.readFileSync(templatePath, 'utf8'), fs.readFileSync(jsonPath, 'utf8'));
    fs.writeFileSync(outPath, html);
  } catch (e) {
    process.stderr.write(`fill-report: ${templatePath} + ${jsonPath} -> ${outPath}: ${e.message}\n`);
    process.exit(1);
  }
}
