"""Layer 4, evaluation: running a policy over tasks (run folders, shards, resume), the one episode table, checkpoints, the runs index; its CLI (layer 6) in ``cli.py``."""
