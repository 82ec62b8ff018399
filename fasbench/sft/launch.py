"""``python -m fasbench.sft.launch PROFILE [--set key=value ...]`` (or under ``accelerate launch``):
train one SFT profile. The same ``fasbench.sft.train.train`` as ``fasbench sft train`` — one code
path for every profile, the same ``--set`` overrides."""

import argparse

from fasbench.sft.train import load_profile, train


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m fasbench.sft.launch", description=__doc__.split("\n\n")[0])
    ap.add_argument("profile", help="profile name (tiny | cpu | gpu | long_cpu | long_gpu) or a YAML file")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                    help="override a config field (repeatable), as in `fasbench sft train --set`")
    args = ap.parse_args(argv)
    try:
        profile = load_profile(args.profile, sets=args.sets)
    except ValueError as e:  # a config error: one line, exit status 2
        ap.exit(2, f"error: {e}\n")
    print(train(profile))


if __name__ == "__main__":
    main()
