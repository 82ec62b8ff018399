"""Golden traces: episodes of the deterministic heuristic policy (and of its calls released two a
turn, for one longer episode) on a tiny repository this script builds itself, one file per registered
tool set (``NAME.json`` for each name of ``fasbench.tools.TOOLSETS``).

Each episode keeps what a change of behaviour would show: the prompt, every turn's text and tool
calls (name, arguments), every observation (text, error flag, what it showed: ``shown``), the report, the stop reason and the
scores of the rewards. Timings, call ids and trace ids are left out; the repository's path is
written as ``<ROOT>``. ``tests/test_golden.py`` replays them through the current code.

Regenerate (after a deliberate change of a tool, prompt, policy or reward, or for a new tool set;
review the diff)::

    PYTHONPATH=. python tests/data/golden/regenerate.py [NAME ...]
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from fasbench.harness import Limits, run_episode
from fasbench.policies import make_policy
from fasbench.records import Gold, Task, Trace
from fasbench.scoring.reward import score_episode
from fasbench.tools import TOOLSETS

HERE = Path(__file__).resolve().parent
LIMITS = dict(max_calls_per_turn=8)
REWARDS = ("relace", "relace-f2", "fastcontext", "f0.5", "line-f1")
MTIME = 1_700_000_000  # fixed modification times (the fastcontext-fork Glob sorts by them)

FILES = {
    "README.md": "# shop\n\nA tiny shop: carts, prices and discounts.\n",
    "shop/__init__.py": "from .cart import Cart\nfrom .pricing import price_with_discount\n",
    "shop/cart.py": (
        "from .pricing import price_with_discount\n\n\n"
        "class Cart:\n"
        '    """A shopping cart of (item, price) pairs."""\n\n'
        "    def __init__(self):\n"
        "        self.items = []\n\n"
        "    def add(self, item, price):\n"
        "        self.items.append((item, price))\n\n"
        "    def total(self, discount_code=None):\n"
        "        subtotal = sum(p for _, p in self.items)\n"
        "        return price_with_discount(subtotal, discount_code)\n"
    ),
    "shop/pricing.py": (
        'DISCOUNTS = {"SPRING": 0.1, "VIP": 0.25}\n\n\n'
        "def price_with_discount(amount, code=None):\n"
        '    """Apply a discount code to an amount; unknown codes are ignored."""\n'
        "    rate = DISCOUNTS.get(code, 0.0)\n"
        "    return round(amount * (1 - rate), 2)\n\n\n"
        'def format_price(amount, currency="EUR"):\n'
        '    return f"{amount:.2f} {currency}"\n'
    ),
    "shop/inventory.py": (
        "class Inventory:\n"
        "    def __init__(self):\n"
        "        self.stock = {}\n\n"
        "    def restock(self, item, count):\n"
        "        self.stock[item] = self.stock.get(item, 0) + count\n\n"
        "    def take(self, item):\n"
        "        if self.stock.get(item, 0) <= 0:\n"
        '            raise KeyError(f"{item} is out of stock")\n'
        "        self.stock[item] -= 1\n"
    ),
    "tests/test_cart.py": (
        "from shop import Cart\n\n\n"
        "def test_total_with_discount():\n"
        "    c = Cart()\n"
        '    c.add("pen", 10.0)\n'
        '    assert c.total("SPRING") == 9.0\n'
    ),
}

TASKS = [
    (
        "discount",
        "The VIP discount code is applied wrongly in price_with_discount; fix the discount rate lookup.",
        {"shop/pricing.py": [[1, 7]]},
    ),
    (
        "stock",
        "Inventory.take raises KeyError with a confusing message when an item is out of stock.",
        {"shop/inventory.py": [[8, 11]]},
    ),
    (
        "cart-total",
        "Cart.total should sum the item prices before applying the discount code.",
        {"shop/cart.py": [[13, 15]], "shop/pricing.py": [[4, 7]]},
    ),
]


def build_repo(base: Path) -> Path:
    """The tiny repository under ``base/repo`` (no git: the tools treat it as a plain folder)."""
    root = base / "repo"
    for i, (rel, text) in enumerate(sorted(FILES.items())):
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        os.utime(p, (MTIME + i, MTIME + i))
    return root


# (task id, policy spec, max_turns): the heuristic on every task, and the heuristic's calls released a few
# a turn (sequential) on one, whose longer episode meets the last-turn note and a turn penalty below 1.
RUNS = [(t[0], "heuristic", 4) for t in TASKS] + [("cart-total", "sequential", 5)]
#: calls a turn of the sequential run: the first of these whose episode meets the last-turn note (two
#: for relace and fastcontext-fork; one for FastContext's released Grep, whose -C 3 context lets the
#: heuristic answer after fewer calls)
PER_TURN = (2, 1)


def tasks(root: Path) -> list[Task]:
    return [Task(id=i, query=q, repo="golden", root=str(root), gold=Gold(edited=g)) for i, q, g in TASKS]


def _norm(x, root: str):
    """``x`` with the repository path written as ``<ROOT>``."""
    if isinstance(x, str):
        return x.replace(root, "<ROOT>")
    if isinstance(x, list):
        return [_norm(v, root) for v in x]
    if isinstance(x, dict):
        return {k: _norm(v, root) for k, v in x.items()}
    return x


def episode_record(task: Task, trace: Trace) -> dict:
    """What the golden file keeps of one episode (no timings, no ids)."""
    root = task.root
    rewards = {}
    for name in REWARDS:
        s = score_episode(name, trace, task)
        rewards[name] = {"score": s.value, "parts": s.parts, "reason": s.reason}
    turns = [
        {
            "notes": [m["content"] for m in t.notes],  # what the harness told the policy before this reply
            "text": t.text,
            "calls": [{"name": c.name, "arguments": c.arguments} for c in t.calls],
            "results": [
                {
                    "output": r.output,
                    "is_error": r.is_error,
                    **({"shown": r.shown.to_dict()} if r.shown is not None else {}),
                }
                for r in t.results
            ],
        }
        for t in trace.turns
    ]
    return _norm(
        {
            "task_id": task.id,
            "max_turns": trace.meta.get("max_turns"),
            "query": task.query,
            "gold": task.gold.edited,
            "toolset": trace.toolset,
            "policy": trace.policy,
            "prompt": trace.prompt,
            "turns": turns,
            "report": trace.report.to_dict() if trace.report is not None else None,
            "stop_reason": trace.stop_reason,
            "error": trace.error,
            "final_note_turn": trace.meta.get("final_note_turn"),
            "rewards": rewards,
        },
        root,
    )


def record(root: Path, toolset: str) -> list[dict]:
    """Run ``RUNS`` with ``toolset``; the episodes as the golden file keeps them."""
    by_id = {t.id: t for t in tasks(root)}
    out = []
    for task_id, policy, max_turns in RUNS:
        for spec in [policy] if policy != "sequential" else [f"sequential:per_turn={n}" for n in PER_TURN]:
            trace = run_episode(by_id[task_id], make_policy(spec), toolset, Limits(max_turns=max_turns, **LIMITS))
            if trace.meta.get("final_note_turn") is not None:
                break
        trace.meta["max_turns"] = max_turns
        out.append(episode_record(by_id[task_id], trace))
    return out


def golden_path(toolset: str, folder: Path = HERE) -> Path:
    return folder / f"{toolset}.json"


def write(root: Path, toolset: str, folder: Path = HERE) -> list[dict]:
    """Record ``toolset``'s golden episodes into ``folder``; the episodes."""
    eps = record(root, toolset)
    golden_path(toolset, folder).write_text(json.dumps(eps, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    return eps


def main(argv: list[str] | None = None) -> int:
    names = list(argv if argv is not None else sys.argv[1:]) or list(TOOLSETS)
    unknown = [n for n in names if n not in TOOLSETS]
    if unknown:
        print(f"unknown tool set(s) {', '.join(unknown)}; registered: {', '.join(TOOLSETS)}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as d:
        root = build_repo(Path(d))
        for ts in names:
            eps = write(root, ts)
            print(
                f"{golden_path(ts)}: {len(eps)} episodes, "
                f"{sum(len(e['turns']) for e in eps)} turns, "
                f"{sum(len(t['calls']) for e in eps for t in e['turns'])} calls"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
