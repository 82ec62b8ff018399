"""Read-region gold in SWE-Explore's benchmark format, built from the shipped real trajectories: the
line regions a *successful* (resolved) mini-swe-agent run displayed before its first edit.

SWE-Explore builds its read-core regions from several successful repair trajectories of an issue
(regions read by all of them, refined by an LLM). fasbench ships one successful trajectory per
instance, so these files differ from the published benchmark and say so: ``read_core_regions`` =
the regions this one run read; nothing is optional. They exercise the same importer, relocator and
metrics, and give a third gold definition (code that a successful run actually read) beside the
gold patch's hunks and its entities. Regions, from the run's display commands (parsed by
fasbench.shell, following ``cd``), on the base commit's line numbers:

- ``cat F``, ``nl F``, ``less``/``more``/``bat F``: the whole file, ``(F, 1, -1)``;
- ``sed -n 'A,Bp' F`` (also ``Ap``, ``A,+Np``): ``(F, A, B)``;
- ``head -n N F`` / ``head -N F``: ``(F, 1, N)``; ``tail -n N F``: ``(F, -N, -1)`` (SWE-Explore's
  end-relative form); ``grep``/``rg`` output is search, not reading, and is left out.
"""

from __future__ import annotations

import gzip
import json
import posixpath
import re
from pathlib import Path

from fasbench.data.agent_traces import trajectory_dir
from fasbench.data.patches import PatchError, parse_diff
from fasbench.shell import operands, walk
from fasbench.trajectories.agent_paths import ROOT, agent_path
from fasbench.trajectories.first_edit import edits_files
from fasbench.trajectories.raw import load_json, read_actions
from fasbench.trajectories.viewed import viewing

_SED = re.compile(r"^(\d+)(?:,(\+?)(\d+))?p$")
WHOLE = {"cat", "nl", "less", "more", "bat"}


def _regions_of(words: list[str], cwd: str) -> list[list]:
    name = posixpath.basename(words[0])
    args = words[1:]
    if name in WHOLE:
        return [[p, 1, -1] for p in (agent_path(o, cwd) for o in operands(words)) if p]
    if name == "sed" and "-n" in args and not any(a.startswith("-i") for a in args):
        rest = [a for a in args if a != "-n"]
        if len(rest) >= 2:
            m = _SED.match(rest[0].strip("'\""))
            if m:
                a = int(m[1])
                b = a if m[3] is None else (a + int(m[3]) if m[2] else int(m[3]))
                return [[p, a, b] for p in (agent_path(o, cwd) for o in rest[1:]) if p]
    if name in ("head", "tail"):
        n, files, i = 10, [], 0
        while i < len(args):
            a = args[i]
            if a == "-n" and i + 1 < len(args):
                n, i = int(args[i + 1].lstrip("+")) if args[i + 1].lstrip("+").isdigit() else n, i + 2
                continue
            if re.fullmatch(r"-\d+", a) or re.fullmatch(r"-n\d+", a):
                n = int(a.lstrip("-n"))
            elif not a.startswith("-"):
                files.append(a)
            i += 1
        paths = [p for p in (agent_path(f, cwd) for f in files) if p]
        return [[p, 1, n] if name == "head" else [p, -n, -1] for p in paths]
    return []


def read_regions(actions, edited: set[str]) -> list[list]:
    """Regions displayed before the first edit of an ``edited`` file, in order, without repeats;
    files the run wrote itself (reproduction scripts) are left out."""
    out: list[list] = []
    written = viewing(actions, edited).written
    scripts: dict[str, str] = {}
    for a in actions:
        if edits_files(a, edited, scripts, ROOT):
            break
        for s, cwd in walk(a.command, ROOT):
            for op, target in s.redirects:
                if op in (">", ">>"):
                    scripts[target] = s.heredoc or a.command
            for r in _regions_of(s.words, cwd):
                if r not in out and r[0] not in written:
                    out.append(r)
    return out


def explore_records(run: str = "gemini-3-pro", instances: set[str] | None = None) -> list[dict]:
    """SWE-Explore-format records (README "Benchmark Format") of the resolved trajectories of ``run``."""
    d = trajectory_dir(run)
    resolved = json.loads(gzip.decompress((d / "resolved.json.gz").read_bytes()))
    out = []
    for fn in sorted((d / "trajs").glob("*.traj.json*")):
        iid = fn.name.split(".traj.json")[0]
        if not resolved.get(iid) or (instances is not None and iid not in instances):
            continue
        traj = load_json(fn)
        try:
            modified = [x.path for x in parse_diff((traj.get("info") or {}).get("submission") or "") if not x.created]
        except PatchError:
            continue
        regions = read_regions(read_actions(traj), set(modified))
        if not regions:
            continue
        files = list(dict.fromkeys(r[0] for r in regions))
        out.append(
            {
                "instance_id": iid,
                "repo_path": ROOT,
                "repo_dir": None,
                "ground_truth": {
                    "read_core_files": files,
                    "read_core_regions": [{"path": p, "start": s, "end": e} for p, s, e in regions],
                    "read_optional_files_map": {},
                    "read_optional_regions_map": {},
                    "modified_core_files": modified,
                    "main_files": [p for p in files if p in modified],
                },
                "read_step_info": {},
                "meta": {
                    "source": f"fasbench read_regions from one resolved {run} "
                    "mini-swe-agent trajectory (not SWE-Explore's consensus)",
                    "gold_kind": f"one resolved {run} run's reads",
                },
            }
        )
    return out


def write_explore_file(path: str | Path, run: str = "gemini-3-pro", instances: set[str] | None = None) -> int:
    recs = explore_records(run, instances)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return len(recs)
