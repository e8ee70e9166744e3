"""The tests' own reading of a topology file: its bracketed lists, without libglucx's reader.

Imported by path, as timescale.py.
"""
import re


def read_yaml_lists(path):
    """{key: [item strings]} for every `key: [a, b, ...]` line of the file at @path."""
    out = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"^\s*([a-z_]+)\s*:\s*\[(.*)\]", line)
            if m:
                out[m.group(1)] = [v.strip() for v in m.group(2).split(",")]
    return out
