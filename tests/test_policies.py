"""Search policies on a real small corpus (the installed `requests` source, hand-checked gold)."""

from __future__ import annotations

import shutil

import pytest

from fasbench.harness import Limits, run_episode
from fasbench.policies import make_policy, parse_spec
from fasbench.policies.heuristic import HeuristicPolicy, extract_terms
from fasbench.policies.rag import RagPolicy, chunk_python, load_chunks
from fasbench.policies.toy import make_corpus, package_source, toy_tasks
from fasbench.stats.metrics import file_prf
from fasbench.tools import TOOLSETS


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = make_corpus(tmp_path_factory.mktemp("toy"))
    return toy_tasks(root)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))


def recall(tr, task) -> float:
    return file_prf(tr.report.files if tr.report else {}, task.gold.edited, task.root).recall


@pytest.mark.parametrize("toolset", TOOLSETS)
def test_heuristic_finds_gold_files(toy, toolset):
    pol = make_policy("heuristic:turns=3")
    traces = [run_episode(t, pol, toolset, Limits(max_turns=6)) for t in toy]
    assert all(tr.stop_reason == "reported" and tr.n_turns <= 3 for tr in traces)
    assert all(len(tr.turns[0].calls) > 1 for tr in traces)  # parallel first turn
    assert sum(recall(tr, t) for tr, t in zip(traces, toy)) / len(toy) >= 0.8
    # ranges come from the evidence: every reported file has line ranges
    assert all(rs for tr in traces for rs in tr.report.files.values())


def test_heuristic_reports_on_final_turn(toy):
    tr = run_episode(toy[0], make_policy("heuristic:turns=6"), "relace", Limits(max_turns=2))
    assert tr.stop_reason == "reported" and tr.n_turns == 2


@pytest.mark.slow
def test_heuristic_is_stochastic_with_temperature(toy):
    def calls(pol, task):
        tr = run_episode(task, pol, "relace")
        return [(c.name, c.arguments) for t in tr.turns for c in t.calls]

    t = toy[2]
    same = [calls(HeuristicPolicy(temperature=1.0, seed=3), t) for _ in range(2)]
    assert same[0] == same[1]  # a seed fixes the draw
    draws = {str(calls(HeuristicPolicy(temperature=1.0, seed=s), t)) for s in range(6)}
    assert len(draws) > 1  # different seeds, different rollouts
    greedy = {str(calls(HeuristicPolicy(temperature=0.0, seed=s), t)) for s in range(3)}
    assert len(greedy) == 1  # temperature 0 ignores the seed


def test_extract_terms_from_traceback_and_prose():
    q = (
        'TooManyRedirects raised\n  File "/x/requests/sessions.py", line 3, in resolve_redirects\n'
        "requests.exceptions.TooManyRedirects: Exceeded 30 redirects.\nSee django.utils.text.slugify()"
    )
    terms = {(t.text, t.kind) for t in extract_terms(q)}
    assert ("resolve_redirects", "ident") in terms
    assert ("sessions.py", "file") in terms
    assert ("TooManyRedirects", "ident") in terms
    assert ("django/utils/text.py", "module") in terms


@pytest.mark.parametrize("toolset", TOOLSETS)
def test_bm25_one_shot(toy, toolset):
    pol = make_policy("bm25:k=3")
    pol.prepare(toy)
    traces = [run_episode(t, pol.bind(t), toolset) for t in toy]
    assert all(tr.n_turns == 1 and tr.stop_reason == "reported" and 1 <= len(tr.report.files) <= 3 for tr in traces)
    assert sum(recall(tr, t) for tr, t in zip(traces, toy)) >= 3


def test_bm25_reports_no_test_file_unless_asked(tmp_path):
    """Agentless's rule (a file or folder named test*): the baseline never spends a slot on a test file,
    however well it matches; ``tests=true`` ranks every file, as before."""
    from fasbench.records import Gold, Task

    root = tmp_path / "corpus"
    body = "def frobnicate_widget(x):\n    return x + 1  # frobnicate the widget\n"
    for rel in ("pkg/widget.py", "tests/test_widget.py", "pkg/testing/helpers.py", "pkg/test_widget_more.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body * (3 if "test" in rel else 1))  # the test files match best
    task = Task(
        id="t",
        query="frobnicate_widget frobnicate widget",
        repo="o/r",
        root=str(root),
        gold=Gold({"pkg/widget.py": []}),
    )
    for spec, want in (
        ("bm25:k=4", {"pkg/widget.py"}),
        (
            "bm25:k=4,tests=true",
            {"pkg/widget.py", "tests/test_widget.py", "pkg/testing/helpers.py", "pkg/test_widget_more.py"},
        ),
    ):
        pol = make_policy(spec)
        pol.prepare([task])
        tr = run_episode(task, pol.bind(task), "relace")
        assert set(tr.report.files) == want, spec


def test_rag_unbound_is_a_clear_error(toy):
    tr = run_episode(toy[0], make_policy("bm25"), "relace")
    assert tr.stop_reason == "policy_error" and "bind" in tr.error


def test_chunks_follow_functions_and_are_cached(toy, tmp_path):
    root = toy[0].root
    src = (package_source() / "auth.py").read_text()
    chunks = chunk_python("requests/auth.py", src)
    names = {c.symbol for c in chunks}
    assert "HTTPDigestAuth.build_digest_header" in names and "_basic_auth_str" in names
    k1, c1 = load_chunks(root)
    k2, c2 = load_chunks(root)
    assert k1 == k2 and c1 == c2 and len(c1) > 100


@pytest.mark.slow
def test_dense_on_a_small_corpus(tmp_path):
    # a few real files keep the embedding step short on CPU
    src = package_source()
    root = tmp_path / "mini"
    (root / "requests").mkdir(parents=True)
    for f in ("auth.py", "hooks.py", "structures.py", "status_codes.py"):
        shutil.copy(src / f, root / "requests" / f)
    task = toy_tasks_like(root)
    pol = RagPolicy(method="dense", k=1)
    tr = run_episode(task, pol.bind(task), "relace")
    assert tr.stop_reason == "reported"
    assert list(tr.report.files) == ["requests/auth.py"]
    hybrid = RagPolicy(method="dense", k=1, prefilter=10)  # dense rerank of BM25's top 10 chunks
    assert list(hybrid.retrieve(root, task.query)) == ["requests/auth.py"]


def toy_tasks_like(root):
    from fasbench.records import Gold, Task

    return Task(
        id="mini-digest",
        query="HTTP digest authentication: the nonce count and qop handling in the digest header are wrong",
        repo="psf/requests",
        root=str(root),
        gold=Gold({"requests/auth.py": []}),
    )


def test_make_policy_errors():
    assert parse_spec("heuristic:turns=3,k=2") == ("heuristic", {"turns": "3", "k": "2"})
    pol = make_policy("heuristic:turns=4,temperature=0.5,seed=7")
    assert (pol.turns, pol.temperature, pol.seed, pol.name) == (4, 0.5, 7, "heuristic:turns=4,temperature=0.5,seed=7")
    with pytest.raises(ValueError, match="unknown policy"):
        make_policy("nope")
    with pytest.raises(ValueError, match="no parameter 'turn'"):
        make_policy("heuristic:turn=3")
    with pytest.raises(ValueError, match="not a valid int"):
        make_policy("heuristic:turns=three")
    with pytest.raises(ValueError, match="key=value"):
        make_policy("bm25:k")
    with pytest.raises(ValueError, match="must be >= 1"):
        make_policy("heuristic:turns=0")


@pytest.mark.parametrize("toolset", TOOLSETS)
def test_heuristic_reads_the_query_out_of_the_published_user_prompt(toolset, tmp_path):
    """The published prompts wrap the query (<user_query> / <query>) in long instructions; the heuristic
    must search for the query's words, not the template's (it reported nothing when it did)."""
    from fasbench.policies.heuristic import task_text
    from fasbench.tools import make_toolset

    q = "parse_header crashes with ValueError\nwhen the value contains ':' <b>"
    assert task_text(make_toolset(toolset, str(tmp_path)).user_prompt(q)) == q


def test_the_registry_names_every_family_with_a_policy_class():
    """One registry (fasbench.policies.POLICIES): each family's class subclasses harness.Policy, says
    how evaluation runs it (backend), and builds from its example spec; an unknown family is one line."""
    from fasbench.harness import Policy
    from fasbench.policies import POLICIES, policy_class

    for name, fam in POLICIES.items():
        cls = policy_class(name)
        assert issubclass(cls, Policy) and cls.backend in ("thread", "serial", "process"), name
        assert parse_spec(fam.example)[0] == name
    assert {n: policy_class(n).backend for n in POLICIES} == {
        "heuristic": "thread",
        "sequential": "thread",
        "bm25": "thread",
        "dense": "thread",
        "openai": "thread",
        "hf": "serial",
    }
    assert make_policy("bm25:k=2").method == "bm25" and make_policy("sequential:per_turn=2").per_turn == 2
    with pytest.raises(ValueError, match="unknown policy 'nope'; choose one of heuristic, sequential"):
        make_policy("nope:k=1")


def test_a_policy_gets_the_protocol_defaults_and_a_duck_typed_one_is_refused(toy):
    """harness.Policy declares the optional members with their defaults; the harness calls them
    directly, so an object that does not subclass Policy is refused in one line."""
    from fasbench.harness import Policy
    from fasbench.records import Reply

    class Quiet(Policy):
        name = "quiet"

        def act(self, messages, tools, *, final):
            return Reply(text="")

    q = Quiet()
    assert q.bind(toy[0]) is q and q.prepare(toy) is None and q.cache_note(toy) is None
    assert q.backend == "process" and q.observes_turns is False
    assert run_episode(toy[0], q, "relace", Limits(max_turns=2)).stop_reason == "max_turns"

    class Duck:
        name = "duck"

        def act(self, messages, tools, *, final):
            return Reply(text="")

    with pytest.raises(TypeError, match="Duck is not a fasbench.harness.Policy: subclass it"):
        run_episode(toy[0], Duck(), "relace", Limits(max_turns=2))


def test_importing_the_registry_does_not_import_the_policies():
    """`fasbench eval --help` lists the registry at every CLI start: the package imports no policy."""
    import subprocess
    import sys

    code = (
        "import sys, fasbench.policies as p; assert p.POLICIES; "
        "print(sorted(m for m in sys.modules if m.startswith('fasbench.') and m not in "
        "('fasbench.policies', 'fasbench.base', 'fasbench.base.specs')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "[]", out.stdout
