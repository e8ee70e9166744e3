"""`torchrun` for the environment the glucx package is installed in (its console script).

It runs torch.distributed.run with this environment's interpreter, so the workers see the
packages of the venv (Debian's /usr/bin/torchrun runs /usr/bin/python3, which does not).

PyTorch 1.13's launcher only knows the underscore spelling of its options (--nproc_per_node,
--master_port, ...); later releases also take the dashed spelling (--nproc-per-node), which the
glucx documentation uses. This launcher takes both: before the training script, an option
whose dashed spelling the launcher does not know but whose underscore spelling it does is
rewritten. Arguments from the training script on are passed through untouched. It also works
around PyTorch 1.13's launcher bug on Python 3.11 (see _glucx_startup.fix_std_parsing).
"""

import sys


def normalize(argv, parser):
    """Return argv with dashed launcher options rewritten to the spelling @p parser knows.

    argv: the launcher's arguments (without the program name); parser: torch.distributed.run's
    argparse parser. Stops at the first positional argument (the training script) or "--".
    """
    known = getattr(parser, "_option_string_actions", None)
    if not known:
        return list(argv)
    out = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--" or not arg.startswith("-"):
            out.extend(argv[i:])
            break
        name, eq, value = arg.partition("=")
        if name.startswith("--") and name not in known:
            underscored = "--" + name[2:].replace("-", "_")
            if underscored in known:
                name = underscored
        out.append(name + eq + value)
        action = known.get(name)
        if action is not None and not eq and action.nargs != 0 and i + 1 < len(argv):
            out.append(argv[i + 1])  # the option's value, e.g. "2" or a path: leave it alone
            i += 1
        i += 1
    return out


def main():
    import _glucx_startup

    _glucx_startup.fix_std_parsing()  # also when GLUCX_DISABLE_HOOK is set (see there)
    from torch.distributed import run

    args = sys.argv[1:]
    try:
        args = normalize(args, run.get_args_parser())
    except Exception:  # noqa: BLE001 -- a launcher without the rewrite is still a launcher
        pass
    return run.main(args)


if __name__ == "__main__":
    sys.exit(main())
