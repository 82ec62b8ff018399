"""Architecture rules of issue 36, items 5 and 6, checked with ``ast`` (helpers from test_architecture):

- **Names from data become paths in one place** (``check_data_paths``): outside ``fasbench/base/paths.py``, no
  path join (``a / b``, ``joinpath``, ``with_name``, ``with_suffix``, ``cache_dir``) whose joined part is
  an f-string with a value in it, or reads a data field (``.id``, ``.task_id``, ``.trace_id``, ``.policy``,
  ``.repo``, ``.base_commit``, ...), unless that part goes through ``safe_name``, ``name_key``, ``child``
  or ``Names.claim``. ``PATH_JOIN_ALLOWED`` names the joins of values that are not from data (hex
  digests, integers, fasbench's own constants), each with its reason.
- **Pages escaped by construction** (``check_html_building``): see that function.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from test_architecture import REPO, expect_clean, parsed, rel, source_files

SAFE_CALLS = frozenset({"safe_name", "name_key", "child", "claim"})
DATA_FIELDS = frozenset({"id", "task_id", "trace_id", "instance_id", "policy", "repo", "base_commit", "run_name",
                         "arm", "session_id", "trajectory_id"})
JOIN_CALLS = frozenset({"joinpath", "with_name", "with_suffix", "cache_dir"})
PATHS_MODULE = "fasbench/base/paths.py"

# (file, the joined part as ast.unparse writes it) -> why it is not a name from data
PATH_JOIN_ALLOWED = {
    ("fasbench/scoring/judge.py", "key[:2]"): "the first two hex digits of the request's SHA-256",
    ("fasbench/scoring/judge.py", "f'{key}.json'"): "the request's SHA-256 hex digest",
    ("fasbench/scoring/judge.py", "f'.{key}.{os.getpid()}.tmp'"): "the request's SHA-256 and this process's id",
    ("fasbench/policies/rag.py", "f'emb-{mkey}.npy'"): "a SHA-1 hex digest of the model path",
    ("fasbench/policies/rag.py", "f'.tmp{os.getpid()}-{threading.get_ident()}'"): "process and thread ids",
    ("fasbench/policies/rag.py", "f'bm25.tmp{os.getpid()}-{threading.get_ident()}'"): "process and thread ids",
    ("fasbench/policies/rag.py", "f'{f.stem}.tmp{os.getpid()}.npy'"): "fasbench's own file name and the process id",
    ("fasbench/data/perturb.py", "f'{key}.json'"): "corpus_key: a SHA-256 hex digest of the corpus and spec",
    ("fasbench/data/symbols.py", "f'symbols-k{k}.jsonl'"): "an integer",
    ("fasbench/training/profiles.py", "f'{kind.prefix}_{name_or_path}.yaml'"):
        "the user's own command-line argument, which may be any path (read as one just above)",
}


def _fname(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _data_in(node: ast.AST) -> str | None:
    """What makes ``node`` a name from data (None when nothing does); a SAFE_CALLS call is not entered."""
    if isinstance(node, ast.Call) and _fname(node) in SAFE_CALLS:
        return None
    if isinstance(node, ast.JoinedStr) and any(isinstance(v, ast.FormattedValue) for v in node.values):
        if any(isinstance(v, ast.FormattedValue) and _data_in(v.value) != "safe" for v in node.values
               if not (isinstance(v.value, ast.Call) and _fname(v.value) in SAFE_CALLS)):
            return "an f-string"
    if isinstance(node, ast.Attribute) and node.attr in DATA_FIELDS:
        return f"the data field .{node.attr}"
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value in DATA_FIELDS:
        return f"the data field [{node.slice.value!r}]"
    if isinstance(node, ast.Call) and _fname(node) == "get" and node.args and isinstance(node.args[0], ast.Constant) \
            and node.args[0].value in DATA_FIELDS:
        return f"the data field .get({node.args[0].value!r})"
    # a call's arguments are its own business (its result is what is joined); the callee is read:
    # ``task.repo.strip("/")`` joins the data field .repo
    for ch in [node.func] if isinstance(node, ast.Call) else ast.iter_child_nodes(node):
        why = _data_in(ch)
        if why:
            return why
    return None


def _joined_parts(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return [node.right]
    if isinstance(node, ast.Call) and _fname(node) in JOIN_CALLS:
        return list(node.args)
    return []


def check_data_paths(files: list[Path] | None = None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in files if files is not None else source_files().values():
        r = rel(p) if files is None else p.name
        if r == PATHS_MODULE:
            continue
        for node in ast.walk(parsed(p)[0]):
            for part in _joined_parts(node):
                why = _data_in(part)
                if why and (r, ast.unparse(part)) not in PATH_JOIN_ALLOWED:
                    out.setdefault(r, []).append(f"line {node.lineno}: {ast.unparse(node)[:90]} joins {why} "
                                                 "(name it through fasbench.base.paths.safe_name/child/name_key/Names)")
    return out


def test_names_from_data_become_paths_only_through_fasbench_paths():
    expect_clean(check_data_paths(), "a path joined from a name outside fasbench.base.paths (issue 36 item 5)")


def test_path_join_allowlist_still_needed():
    seen = set()
    for p in source_files().values():
        for node in ast.walk(parsed(p)[0]):
            seen.update((rel(p), ast.unparse(part)) for part in _joined_parts(node))
    assert not set(PATH_JOIN_ALLOWED) - seen, f"remove from PATH_JOIN_ALLOWED: {set(PATH_JOIN_ALLOWED) - seen}"


def test_the_rule_catches_the_joins_issue_36_found(tmp_path):
    """The rule on the old lines: export-atif's ``OUT/<trace_id>.json``, the corpus cache's worktree."""
    f = tmp_path / "old.py"
    f.write_text("def a(out, tr, task, root_dir, slug):\n"
                 "    (out / f'{tr.trace_id}.json').write_text('')\n"
                 "    return root_dir() / 'worktrees' / f'{slug}@{task.base_commit[:12]}', out / task.id\n"
                 "def b(out, tr):\n"
                 "    return child(out, tr.trace_id, '.json'), out / 'work' / name_key(tr.task_id)\n")
    found = check_data_paths([f])
    assert sorted(x.split(":")[0] for x in found["old.py"]) == ["line 2", "line 3", "line 3"], found


# ---------------------------------------------------------------------------------------------
# pages escaped by construction (issue 36 item 6)

MARKUP_MODULE = "fasbench/base/markup.py"
# (file, the expression as ast.unparse writes it) -> why it builds no HTML from data
HTML_ALLOWED = {
    ("fasbench/stats/figures.py", "f'<sup>{piece}</sup>'"):
        "re-wraps a plotly title's own subtitle line (already built by html()) into narrower <sup> pieces",
}
HTML_TAGS = ("a", "b", "i", "br", "div", "span", "td", "th", "tr", "table", "pre", "code", "p", "h1", "h2", "h3",
             "h4", "ul", "li", "details", "summary", "style", "script", "label", "input", "small", "html", "head",
             "body", "title", "meta", "img", "sub", "sup", "iframe", "svg")
TAG = re.compile(r"<(?:/|!doctype\b)?(?:" + "|".join(HTML_TAGS) + r")(?=[\s>/])", re.IGNORECASE)


def _tagged(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(TAG.search(node.value))


def _module_constants(tree: ast.Module) -> set[str]:
    return {t.id for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
            and isinstance(n.value.value, str) for t in n.targets if isinstance(t, ast.Name)}


def check_html_building(files: list[Path] | None = None) -> dict[str, list[str]]:
    """HTML is built only by ``fasbench.base.markup``: outside it, no f-string, ``%`` or ``.format`` of a
    string holding an HTML tag with a value in it, no ``+`` of such a string with anything but a
    constant or a ``html``/``join`` result, ``html(...)`` only with a literal template (or a module
    constant), and no ``Markup(...)`` of anything."""
    out: dict[str, list[str]] = {}
    for p in files if files is not None else source_files().values():
        r = rel(p) if files is None else p.name
        if r == MARKUP_MODULE:
            continue
        tree = parsed(p)[0]
        consts = _module_constants(tree)

        def bad(n: ast.AST, why: str, r: str = r) -> None:
            if (r, ast.unparse(n)) in HTML_ALLOWED:
                return
            out.setdefault(r, []).append(f"line {n.lineno}: {why}: {ast.unparse(n)[:80]} (build it with "
                                         "fasbench.base.markup.html/join)")

        for n in ast.walk(tree):
            if isinstance(n, ast.JoinedStr) and any(isinstance(v, ast.FormattedValue) for v in n.values) \
                    and any(_tagged(v) for v in n.values):
                bad(n, "an f-string with an HTML tag")
            elif isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) and _tagged(n.left):
                bad(n, "% formatting of HTML")
            elif isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add) and (_tagged(n.left) or _tagged(n.right)):
                other = n.right if _tagged(n.left) else n.left
                if not (isinstance(other, ast.Constant) or isinstance(other, ast.Call) and _fname(other) in ("html", "join")
                        or isinstance(other, ast.BinOp) and isinstance(other.op, ast.Add)):
                    bad(n, "HTML joined with + to a value")
            elif isinstance(n, ast.Call) and _fname(n) == "format" and isinstance(n.func, ast.Attribute) \
                    and _tagged(n.func.value):
                bad(n, "str.format of HTML")
            elif isinstance(n, ast.Call) and _fname(n) == "html" and isinstance(n.func, ast.Name):
                t = n.args[0] if n.args else None
                if not (isinstance(t, ast.Constant) and isinstance(t.value, str)
                        or isinstance(t, ast.Name) and t.id in consts):
                    bad(n, "html() with a template that is not a literal")
            elif isinstance(n, ast.Call) and _fname(n) == "Markup" and n.args:
                bad(n, "Markup() outside fasbench.base.markup")
    return out


def test_pages_are_built_only_by_the_renderer():
    expect_clean(check_html_building(), "HTML built outside fasbench.base.markup (issue 36 item 6)")


def test_the_html_rule_catches_the_compare_table_of_issue_36(tmp_path):
    """widgets.py's compare table before: ``f"<td ...>{f.format(r[c])}</td>"`` with a trace's policy."""
    f = tmp_path / "old.py"
    f.write_text("def t(cols, r, name, tpl):\n"
                 "    a = ''.join(f\"<td style='padding:0 8px'>{f.format(r[c])}</td>\" for c, f in cols)\n"
                 "    b = '<b>' + name\n"
                 "    c = '<div>%s</div>' % name\n"
                 "    d = html(tpl, name)\n"
                 "    e = html('<td>{}</td>', name) + html('<br>')\n"
                 "    return a, b, c, d, e, f'<final_answer>{name}</final_answer>'\n")
    found = check_html_building([f])
    assert sorted(x.split(":")[0] for x in found["old.py"]) == ["line 2", "line 3", "line 4", "line 5"], found
