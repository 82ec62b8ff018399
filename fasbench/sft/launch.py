"""``python -m fasbench.sft.launch PROFILE`` (or under ``accelerate launch``): train one SFT profile.
The same ``fasbench.sft.train.train`` as ``fasbench sft train`` — one code path for every profile."""

import sys

from fasbench.sft.train import load_profile, train


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        raise SystemExit("usage: python -m fasbench.sft.launch PROFILE_NAME_OR_PATH")
    print(train(load_profile(argv[0])))


if __name__ == "__main__":
    main()
