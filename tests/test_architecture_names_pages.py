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

import pytest
from test_architecture import expect_clean, parsed, rel, source_files

SAFE_CALLS = frozenset({"safe_name", "name_key", "child", "claim"})
DATA_FIELDS = frozenset(
    {
        "id",
        "task_id",
        "trace_id",
        "instance_id",
        "policy",
        "repo",
        "base_commit",
        "run_name",
        "arm",
        "session_id",
        "trajectory_id",
    }
)
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
    ("fasbench/base/untrusted.py", "f'/proc/{pid}/status'"): "a process id (an integer)",
    ("fasbench/evaluation/episode_pool.py", "f'/proc/{pid}/stat'"): "a process id (an integer)",
    ("fasbench/data/importers.py", "checkout"): "checkout_names(task)[1]: the name safe_name made (corpus_cache.py)",
    ("fasbench/data/perturb.py", "cand"): "name_<word>: a Python identifier of the corpus and a word of WORDS",
    ("fasbench/policies/rag.py", "f"): "a file name os.walk found in the corpus folder (a real entry, not from data)",
    (
        "fasbench/training/profiles.py",
        "f'{kind.prefix}_{name_or_path}.yaml'",
    ): "the user's own command-line argument, which may be any path (read as one just above)",
}


def _fname(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _data_in(node: ast.AST) -> str | None:
    """What makes ``node`` a name from data (None when nothing does); a SAFE_CALLS call is not entered."""
    if isinstance(node, ast.Call) and _fname(node) in SAFE_CALLS:
        return None
    if isinstance(node, ast.JoinedStr) and any(isinstance(v, ast.FormattedValue) for v in node.values):
        if any(
            isinstance(v, ast.FormattedValue) and _data_in(v.value) != "safe"
            for v in node.values
            if not (isinstance(v.value, ast.Call) and _fname(v.value) in SAFE_CALLS)
        ):
            return "an f-string"
    if isinstance(node, ast.Attribute) and node.attr in DATA_FIELDS:
        return f"the data field .{node.attr}"
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value in DATA_FIELDS:
        return f"the data field [{node.slice.value!r}]"
    if (
        isinstance(node, ast.Call)
        and _fname(node) == "get"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value in DATA_FIELDS
    ):
        return f"the data field .get({node.args[0].value!r})"
    # a call's arguments are its own business (its result is what is joined); the callee is read:
    # ``task.repo.strip("/")`` joins the data field .repo
    for ch in [node.func] if isinstance(node, ast.Call) else ast.iter_child_nodes(node):
        why = _data_in(ch)
        if why:
            return why
    return None


PATH_CTORS = frozenset({"Path", "PurePath", "PurePosixPath", "PosixPath"})


def _joined_parts(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return [node.right]
    if isinstance(node, ast.Call) and _fname(node) in JOIN_CALLS:
        return list(node.args)
    if isinstance(node, ast.Call) and (
        _fname(node) in PATH_CTORS
        or _fname(node) == "join"
        and isinstance(node.func, ast.Attribute)
        and ast.unparse(node.func.value) in ("os.path", "path", "posixpath")
    ):
        return list(node.args[1:])  # Path(out, name), os.path.join(out, name): the parts after the first
    if (
        isinstance(node, ast.Call)
        and _fname(node) == "open"
        and node.args
        and isinstance(node.args[0], ast.JoinedStr)
        and any(isinstance(v, ast.Constant) and "/" in str(v.value) for v in node.args[0].values)
    ):
        return [node.args[0]]  # open(f"{out}/{name}.json"): a join spelt as an f-string
    return []


def _assigned(tree: ast.AST) -> dict[str, list[ast.AST]]:
    """name -> the expressions assigned to it in the module (``name = tr.trace_id`` then ``out / name``)."""
    out: dict[str, list[ast.AST]] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Name):
                    out.setdefault(t.id, []).append(n.value)
    return out


def _data_in_part(part: ast.AST, assigned: dict[str, list[ast.AST]]) -> str | None:
    """:func:`_data_in`, also through a ``str.format`` of a constant and one assignment of a bare name."""
    why = _data_in(part)
    if why:
        return why
    if (
        isinstance(part, ast.Call)
        and _fname(part) == "format"
        and isinstance(part.func, ast.Attribute)
        and isinstance(part.func.value, ast.Constant)
        and any(_data_in(a) or isinstance(a, ast.Name) for a in part.args)
    ):
        return "a str.format"
    if isinstance(part, ast.Name):
        for v in assigned.get(part.id, []):
            why = _data_in(v)
            if why:
                return f"{why} (through {part.id} = ...)"
    return None


def check_data_paths(files: list[Path] | None = None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in files if files is not None else source_files().values():
        r = rel(p) if files is None else p.name
        if r == PATHS_MODULE:
            continue
        tree = parsed(p)[0]
        assigned = _assigned(tree)
        for node in ast.walk(tree):
            for part in _joined_parts(node):
                why = _data_in_part(part, assigned)
                if why and (r, ast.unparse(part)) not in PATH_JOIN_ALLOWED:
                    out.setdefault(r, []).append(
                        f"line {node.lineno}: {ast.unparse(node)[:90]} joins {why} "
                        "(name it through fasbench.base.paths.safe_name/child/name_key/Names)"
                    )
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
    f.write_text(
        "def a(out, tr, task, root_dir, slug):\n"
        "    (out / f'{tr.trace_id}.json').write_text('')\n"
        "    return root_dir() / 'worktrees' / f'{slug}@{task.base_commit[:12]}', out / task.id\n"
        "def b(out, tr):\n"
        "    return child(out, tr.trace_id, '.json'), out / 'work' / name_key(tr.task_id)\n"
    )
    found = check_data_paths([f])
    assert sorted(x.split(":")[0] for x in found["old.py"]) == ["line 2", "line 3", "line 3"], found


NAME_EVASIONS = {  # ways around the first version of the rule (issue 36's red team): each must be caught
    "os.path.join": "import os\ndef a(out, tr):\n    open(os.path.join(out, tr.trace_id + '.json'), 'w')\n",
    "Path(out, name)": "from pathlib import Path\ndef a(out, tr):\n    Path(out, tr.trace_id).write_text('')\n",
    "open of an f-string": "def a(out, tr):\n    open(f'{out}/{tr.trace_id}.json', 'w')\n",
    "a local variable": "def a(out, tr):\n    name = tr.trace_id\n    return out / name\n",
    "str.format": "def a(out, tr):\n    return out / '{}.json'.format(tr.trace_id)\n",
    "os.makedirs": "import os\ndef a(out, t):\n    os.makedirs(os.path.join(out, t.id))\n",
}


@pytest.mark.parametrize("src", NAME_EVASIONS.values(), ids=NAME_EVASIONS.keys())
def test_the_names_rule_catches_the_evasions(tmp_path, src):
    f = tmp_path / "m.py"
    f.write_text(src, encoding="utf-8")
    assert check_data_paths([f]).get("m.py"), src


# ---------------------------------------------------------------------------------------------
# pages escaped by construction (issue 36 item 6)

MARKUP_MODULE = "fasbench/base/markup.py"
# (file, the expression as ast.unparse writes it) -> why it builds no HTML from data
HTML_ALLOWED = {
    (
        "fasbench/stats/figures.py",
        "f'<sup>{piece}</sup>'",
    ): "re-wraps a plotly title's own subtitle line (already built by html()) into narrower <sup> pieces",
}
HTML_TAGS = (
    "a",
    "b",
    "i",
    "br",
    "div",
    "span",
    "td",
    "th",
    "tr",
    "table",
    "pre",
    "code",
    "p",
    "h1",
    "h2",
    "h3",
    "h4",
    "ul",
    "li",
    "details",
    "summary",
    "style",
    "script",
    "label",
    "input",
    "small",
    "html",
    "head",
    "body",
    "title",
    "meta",
    "img",
    "sub",
    "sup",
    "iframe",
    "svg",
    "em",
    "strong",
    "u",
    "s",
    "hr",
    "ol",
    "dl",
    "dt",
    "dd",
    "thead",
    "tbody",
    "tfoot",
    "caption",
    "col",
    "colgroup",
    "form",
    "button",
    "textarea",
    "select",
    "option",
    "object",
    "embed",
    "link",
    "base",
    "frame",
    "frameset",
    "marquee",
    "math",
    "noscript",
    "template",
    "font",
    "center",
    "section",
    "article",
    "header",
    "footer",
    "nav",
    "main",
    "figure",
    "figcaption",
    "canvas",
    "video",
    "audio",
    "source",
    "blockquote",
    "q",
    "abbr",
    "kbd",
    "mark",
    "dialog",
)
TAG = re.compile(r"<(?:/|!doctype\b)?(?:" + "|".join(HTML_TAGS) + r")(?=[\s>/])", re.IGNORECASE)


def _tagged(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(TAG.search(node.value))


def _module_constants(tree: ast.Module) -> set[str]:
    return {
        t.id
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
        for t in n.targets
        if isinstance(t, ast.Name)
    }


def _tagged_constants(tree: ast.Module) -> set[str]:
    """Module constants whose string holds an HTML tag (``T = '<td>{}</td>'`` then ``T.format(x)``)."""
    return {
        t.id
        for n in tree.body
        if isinstance(n, ast.Assign) and _tagged(n.value)
        for t in n.targets
        if isinstance(t, ast.Name)
    }


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
        tagged_names = _tagged_constants(tree)
        specs = {id(v.format_spec) for v in ast.walk(tree) if isinstance(v, ast.FormattedValue) and v.format_spec}

        def tagged(n: ast.AST, tagged_names=tagged_names) -> bool:
            return _tagged(n) or isinstance(n, ast.Name) and n.id in tagged_names

        def bad(n: ast.AST, why: str, r: str = r) -> None:
            if (r, ast.unparse(n)) in HTML_ALLOWED:
                return
            out.setdefault(r, []).append(
                f"line {n.lineno}: {why}: {ast.unparse(n)[:80]} (build it with fasbench.base.markup.html/join)"
            )

        for n in ast.walk(tree):
            if (
                isinstance(n, ast.JoinedStr)
                and any(isinstance(v, ast.FormattedValue) for v in n.values)
                and any(_tagged(v) for v in n.values)
            ):
                bad(n, "an f-string with an HTML tag")
            elif (
                isinstance(n, ast.JoinedStr)
                and id(n) not in specs
                and any(
                    isinstance(a, ast.Constant)
                    and isinstance(a.value, str)
                    and a.value.endswith(("<", "</"))
                    and isinstance(b, ast.FormattedValue)
                    for a, b in zip(n.values, n.values[1:])
                )
            ):
                bad(n, "an f-string whose tag name is a value")
            elif isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) and tagged(n.left):
                bad(n, "% formatting of HTML")
            elif isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add) and (tagged(n.left) or tagged(n.right)):
                other = n.right if tagged(n.left) else n.left
                if not (
                    isinstance(other, ast.Constant)
                    or isinstance(other, ast.Call)
                    and _fname(other) in ("html", "join")
                    or isinstance(other, ast.BinOp)
                    and isinstance(other.op, ast.Add)
                ):
                    bad(n, "HTML joined with + to a value")
            elif (
                isinstance(n, ast.Call)
                and _fname(n) == "format"
                and isinstance(n.func, ast.Attribute)
                and tagged(n.func.value)
            ):
                bad(n, "str.format of HTML")
            elif (
                isinstance(n, (ast.List, ast.Tuple))
                and any(tagged(e) for e in n.elts)
                and not all(
                    isinstance(e, ast.Constant) or isinstance(e, ast.Call) and _fname(e) in ("html", "join")
                    for e in n.elts
                )
            ):
                bad(n, "HTML pieces listed with a value (joined after)")
            elif (
                isinstance(n, ast.Call)
                and _fname(n) in ("Template", "Environment")
                and any(tagged(a) for a in [*n.args, *(k.value for k in n.keywords)])
                and not any(
                    k.arg == "autoescape" and not (isinstance(k.value, ast.Constant) and not k.value.value)
                    for k in n.keywords
                )
            ):
                bad(n, "a jinja2 HTML template without autoescape")
            elif isinstance(n, ast.Call) and _fname(n) == "html" and isinstance(n.func, ast.Name):
                t = n.args[0] if n.args else None
                if not (
                    isinstance(t, ast.Constant)
                    and isinstance(t.value, str)
                    or isinstance(t, ast.Name)
                    and t.id in consts
                ):
                    bad(n, "html() with a template that is not a literal")
            elif isinstance(n, ast.Call) and _fname(n) == "Markup" and n.args:
                bad(n, "Markup() outside fasbench.base.markup")
    return out


def test_pages_are_built_only_by_the_renderer():
    expect_clean(check_html_building(), "HTML built outside fasbench.base.markup (issue 36 item 6)")


def test_the_html_rule_catches_the_compare_table_of_issue_36(tmp_path):
    """widgets.py's compare table before: ``f"<td ...>{f.format(r[c])}</td>"`` with a trace's policy."""
    f = tmp_path / "old.py"
    f.write_text(
        "def t(cols, r, name, tpl):\n"
        "    a = ''.join(f\"<td style='padding:0 8px'>{f.format(r[c])}</td>\" for c, f in cols)\n"
        "    b = '<b>' + name\n"
        "    c = '<div>%s</div>' % name\n"
        "    d = html(tpl, name)\n"
        "    e = html('<td>{}</td>', name) + html('<br>')\n"
        "    return a, b, c, d, e, f'<final_answer>{name}</final_answer>'\n"
    )
    found = check_html_building([f])
    assert sorted(x.split(":")[0] for x in found["old.py"]) == ["line 2", "line 3", "line 4", "line 5"], found


HTML_EVASIONS = {  # ways around the first version of the rule (issue 36's red team): each must be caught
    "a list joined": "def a(name):\n    return ''.join(['<td>', name, '</td>'])\n",
    "a template constant": "T = '<td>{}</td>'\ndef a(name):\n    return T.format(name)\n",
    "a tag constant +": "OPEN = '<b>'\ndef a(name):\n    return OPEN + name\n",
    "a tag the list lacked": "def a(name):\n    return f'<marquee>{name}</marquee>'\n",
    "a tag name from a value": "def a(tag, name):\n    return f'<{tag}>{name}</{tag}>'\n",
    "jinja2 without autoescape": "import jinja2\ndef a(name):\n    return jinja2.Template('<b>{{ n }}</b>').render(n=name)\n",
}


@pytest.mark.parametrize("src", HTML_EVASIONS.values(), ids=HTML_EVASIONS.keys())
def test_the_html_rule_catches_the_evasions(tmp_path, src):
    f = tmp_path / "m.py"
    f.write_text(src, encoding="utf-8")
    assert check_html_building([f]).get("m.py"), src
