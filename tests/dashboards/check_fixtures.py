#!/usr/bin/python3
"""The dashboard test's reports are valid reports: the hand-made empty/partial one and the hostile,
large and failed variants of the analysis example (made by variants.mjs) validate against analysis/report.schema.json,
so the browser test exercises inputs glucx-analyze may really write; likewise its diffs against
analysis/diff.schema.json: the hand-made empty one, and (with --diff-example, glucx-analyze diff's
diff.json of the two example reports) that one and its hostile and large variants.

usage: check_fixtures.py --node NODE --schema SCHEMA --example EXAMPLE --empty EMPTY --variants VARIANTS_MJS
                         --diff-schema DIFF_SCHEMA --diff-empty EMPTY_DIFF [--diff-example DIFF_JSON]
"""
import argparse
import json
import os
import subprocess
import sys

import jsonschema

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from timescale import scaled  # noqa: E402 - GLUCX_TEST_TIME_SCALE (tests/README.md)


def variant_of(args, variant, path):
    """variants.mjs's VARIANT applied to the JSON file PATH."""
    script = ("import(process.argv[1]).then((m) => { const fs = require('fs');"
              f" process.stdout.write(JSON.stringify(m.{variant}(JSON.parse(fs.readFileSync(process.argv[2], 'utf8'))))); }})")
    out = subprocess.run([args.node, "-e", script, "file://" + args.variants, path],
                         check=True, capture_output=True, text=True, timeout=scaled(60)).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser()
    for a in ("--node", "--schema", "--example", "--empty", "--variants", "--diff-schema", "--diff-empty"):
        ap.add_argument(a, required=True)
    ap.add_argument("--diff-example", help="a diff.json written by glucx-analyze diff")
    args = ap.parse_args()
    with open(args.schema, encoding="utf-8") as f:
        schema = json.load(f)
    validator = jsonschema.Draft202012Validator(schema)

    cases = {"empty": json.load(open(args.empty, encoding="utf-8"))}
    for variant in ("makeHostile", "makeLarge", "makeFailed"):
        cases[variant] = variant_of(args, variant, args.example)
    # the diff view's: the hand-written empty diff, glucx-analyze's diff of the two example
    # reports and its hostile and large variants
    with open(args.diff_schema, encoding="utf-8") as f:
        diff_validator = jsonschema.Draft202012Validator(json.load(f))
    diffs = {"empty": json.load(open(args.diff_empty, encoding="utf-8"))}
    if args.diff_example:
        diffs["example"] = json.load(open(args.diff_example, encoding="utf-8"))
        for variant in ("makeHostileDiff", "makeLargeDiff"):
            diffs[variant] = variant_of(args, variant, args.diff_example)

    failed = 0
    for kind, docs, v in (("report", cases, validator), ("diff", diffs, diff_validator)):
        for name, doc in docs.items():
            errors = sorted(v.iter_errors(doc), key=lambda e: list(e.path))
            for e in errors[:10]:
                print(f"{name} {kind}: {'/'.join(map(str, e.path)) or '(root)'}: {e.message}", file=sys.stderr)
            failed += bool(errors)
            print(f"{name} {kind}: {'INVALID' if errors else 'valid'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
