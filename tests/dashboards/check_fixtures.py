#!/usr/bin/python3
"""The dashboard test's reports are valid reports: the hand-made empty/partial one and the hostile,
large and failed variants of the analysis example (made by variants.mjs) validate against analysis/report.schema.json,
so the browser test exercises inputs glucx-analyze may really write.

usage: check_fixtures.py --node NODE --schema SCHEMA --example EXAMPLE --empty EMPTY --variants VARIANTS_MJS
"""
import argparse
import json
import os
import subprocess
import sys

import jsonschema

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from timescale import scaled  # noqa: E402 - GLUCX_TEST_TIME_SCALE (tests/README.md)


def main():
    ap = argparse.ArgumentParser()
    for a in ("--node", "--schema", "--example", "--empty", "--variants"):
        ap.add_argument(a, required=True)
    args = ap.parse_args()
    with open(args.schema, encoding="utf-8") as f:
        schema = json.load(f)
    validator = jsonschema.Draft202012Validator(schema)

    cases = {"empty": json.load(open(args.empty, encoding="utf-8"))}
    for variant in ("makeHostile", "makeLarge", "makeFailed"):
        script = ("import(process.argv[1]).then((m) => { const fs = require('fs');"
                  f" process.stdout.write(JSON.stringify(m.{variant}(JSON.parse(fs.readFileSync(process.argv[2], 'utf8'))))); }})")
        out = subprocess.run([args.node, "-e", script, "file://" + args.variants, args.example],
                             check=True, capture_output=True, text=True, timeout=scaled(60)).stdout
        cases[variant] = json.loads(out)
    failed = 0
    for name, doc in cases.items():
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
        for e in errors[:10]:
            print(f"{name}: {'/'.join(map(str, e.path)) or '(root)'}: {e.message}", file=sys.stderr)
        failed += bool(errors)
        print(f"{name} report: {'INVALID' if errors else 'valid'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
