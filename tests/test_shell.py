"""fasbench.shell on real-world agent command lines (most taken from data/trajectories)."""

import random

import pytest

from fasbench import shell
from fasbench.shell import lexer, tree
from fasbench.trajectories.classify import analyze


def words(text):
    return [c.words for c in shell.parse(text).commands]


def groups(text):
    return [[c.words for c in pl] for pl in shell.pipelines(shell.parse(text).commands)]


def test_quotes_pipes_and_lists():
    assert groups('grep -rn "def foo(" src/ | head -n 5 && ls -F') == [
        [["grep", "-rn", "def foo(", "src/"], ["head", "-n", "5"]],
        [["ls", "-F"]],
    ]
    assert words("""grep -n 'a b'"c d"e x.py""") == [["grep", "-n", "a bc de", "x.py"]]
    assert words(r'grep -rn "say \"hi\"" .') == [["grep", "-rn", 'say "hi"', "."]]
    assert groups("a; b & c || d\ne") == [[["a"]], [["b"]], [["c"]], [["d"]], [["e"]]]


def test_pipelines_where_tree_sitter_nests_them_wrongly():
    # tree-sitter-bash parses `a | b | c && d` as `a | ((b | c) && d)`; `$` sends the line to it
    text = 'ls -R | grep ":$" | head -n 5 && grep -r "def model_to_dict" .'
    assert shell.parse(text).parser == "tree-sitter"
    assert groups(text) == [
        [["ls", "-R"], ["grep", ":$"], ["head", "-n", "5"]],
        [["grep", "-r", "def model_to_dict", "."]],
    ]
    assert groups('a $x > "f|g" | b 2>&1 |& c; d') == [[["a", "$x"], ["b"], ["c"]], [["d"]]]


def test_redirections():
    (c,) = shell.parse("python x.py >> out.txt 2>&1 < in.txt").commands
    assert c.words == ["python", "x.py"] and c.redirects == [(">>", "out.txt"), (">&", "1")]
    assert c.writes() == ["out.txt", "1"]
    find, xargs = shell.parse('find . -name "*.py" 2>/dev/null | xargs grep -l foo').commands
    assert find.words == ["find", ".", "-name", "*.py"] and find.redirects == [(">", "/dev/null")]
    assert find.pipeline == xargs.pipeline and xargs.words == ["xargs", "grep", "-l", "foo"]


def test_heredocs():
    text = "cat <<'EOF' > repro.py\nimport os\nprint(\"it's\")  # unbalanced ' in the body\nEOF\npython repro.py"
    cat, py = shell.parse(text).commands
    assert cat.words == ["cat"] and cat.redirects == [(">", "repro.py")]
    assert cat.heredoc == "import os\nprint(\"it's\")  # unbalanced ' in the body\n"
    assert py.words == ["python", "repro.py"] and py.heredoc is None and py.pipeline != cat.pipeline
    cat, py = shell.parse("cat <<EOF | python\nprint(1)\nEOF").commands  # python reads the text
    assert py.words == ["python"] and py.heredoc == "print(1)\n" and py.pipeline == cat.pipeline
    # several heredocs, <<- with tabs, a quoted delimiter, a command after the first
    text = 'cat <<A > a.txt && cat <<-"B" > b.txt\nx\nA\n\ty\n\tB\nls'
    assert [(c.words, c.redirects, c.heredoc) for c in shell.parse(text).commands] == [
        (["cat"], [(">", "a.txt")], "x\n"),
        (["cat"], [(">", "b.txt")], "\ty\n"),
        (["ls"], [], None),
    ]


def test_unterminated_heredoc_runs_to_the_end():
    text = "cd /testbed && cat > f.fix << 'EOF'\n# look around line 767\nsed -n '760,780p' f.py"
    cd, cat = shell.parse(text).commands
    assert cat.heredoc == "# look around line 767\nsed -n '760,780p' f.py"  # bash: the sed never runs


def test_cd_following():
    assert [(c.words, d) for c, d in shell.walk("cd a && rg x", "/testbed")] == [(["rg", "x"], "/testbed/a")]
    text = "cd /testbed/src; cat ../README.md | head; cd - ; cd pkg && (cd sub && ls)"
    assert [(c.name, d) for c, d in shell.walk(text, "/")] == [
        ("cat", "/testbed/src"),
        ("head", "/testbed/src"),
        ("ls", "/testbed/src/-/pkg/sub"),
    ]


def test_compound_constructs_are_marked():
    cmds = shell.parse("for f in a b; do cat $f | wc -l; done; ls").commands
    assert [(c.words, c.inside) for c in cmds] == [
        (["cat", "$f"], "for_statement"),
        (["wc", "-l"], "for_statement"),
        (["ls"], None),
    ]
    find, cat = shell.parse("cat $(find . -name x.py)").commands  # the substitution runs first
    assert find.inside == "command_substitution" and cat.words == ["cat", "$(find . -name x.py)"]
    assert [c.inside for c in shell.parse("(cd x && grep -n y z.py)").commands] == ["subshell", "subshell"]
    pwd, export = shell.parse("export PYTHONPATH=$PYTHONPATH:$(pwd) X").commands
    assert export.words == ["export", "PYTHONPATH=$PYTHONPATH:$(pwd)", "X"] and pwd.words == ["pwd"]


def test_find_exec_escaped_semicolon_and_continuations():
    find, head = shell.parse('find . -name "*.py" -exec grep -l foo {} \\; | head').commands
    assert find.words == ["find", ".", "-name", "*.py", "-exec", "grep", "-l", "foo", "{}", ";"]
    assert head.pipeline == find.pipeline
    assert words("grep -rn foo \\\n  src/ \\\n  tests/") == [["grep", "-rn", "foo", "src/", "tests/"]]


def test_bad_input_never_raises():
    p = shell.parse('echo "unbalanced && ls | grep x')
    assert p.parser == "unparsable" and p.commands[0].words[0] == "echo"
    assert shell.parse("").parser == "empty" and shell.parse("   \n").commands == []
    p = shell.parse("ls (x")  # tree-sitter rejects it; the tolerant splitter does not
    assert p.parser == "fallback" and [c.words for c in p.commands] == [["ls"], ["x"]]
    for deep in ("(" * 3000 + "ls" + ")" * 3000, "echo " + "$(" * 3000 + "ls" + ")" * 3000):
        assert shell.parse(deep).parser in ("fallback", "unparsable")  # not a RecursionError
    rnd = random.Random(16)
    alphabet = "ab $(){}[]|&;<>'\"`\\\n#=*-~!"
    for _ in range(400):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 40)))
        p = shell.parse(text)
        assert p.parser in shell.PARSERS and all(isinstance(w, str) for c in p.commands for w in c.words)


@pytest.mark.parametrize(
    "text",
    [
        "grep -rn 'def login' src/ | head -n 20",
        "cat a.py b.py > out.txt 2>&1 && ls -la",
        "python -m pytest -q tests/test_x.py; echo done",
        "sed -n '10,40p' f.py | nl -ba",
        "cat <<EOF > x.py\nprint(1)\nEOF\npython x.py",
        "FOO=1 python x.py >> log.txt & wait",
    ],
)
def test_lexer_and_grammar_agree(text):
    """The regular-subset lexer and tree-sitter give the same commands wherever both apply."""
    fast = lexer.regular(text)
    assert fast is not None and fast == tree.parse(text)


def test_argv_helpers():
    assert shell.unwrap(["FOO=1", "timeout", "-s", "9", "30", "nice", "-n", "5", "python", "x.py"]) == [
        "python",
        "x.py",
    ]
    assert shell.unwrap(["uv", "run", "--frozen", "pytest", "-q"]) == ["pytest", "-q"]
    opts, ops = shell.options(["-rn", "--include=*.py", "-A", "3", "-20", "pat", "--", "-file"], {"-A"})
    assert opts == {"-r": True, "-n": "20", "--include": "*.py", "-A": "3"} and ops == ["pat", "-file"]
    assert shell.operands(["sed", "-n", "1,20p", "f.py"]) == ["f.py"]
    assert shell.operands(["grep", "-e", "x", "-A", "2", "a.py", "b.py"]) == ["a.py", "b.py"]
    assert shell.operands(["head", "-n", "5", "a.py"]) == ["a.py"]


def test_classifier_reads_through_bash_c():
    assert analyze("bash -lc 'cd src && grep -n foo bar.py'").category == "search"
    assert analyze("sh -ec \"sed -i 's/a/b/' f.py\"").targets == ("f.py",)
