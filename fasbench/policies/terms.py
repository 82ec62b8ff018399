"""Search terms of a problem statement, for the heuristic policy: identifiers (CamelCase, snake_case,
dotted paths), file names and module paths, traceback frames, literal error messages and distinctive
prose words, each with a weight (:func:`extract_terms`); the task inside a tool set's user prompt
(:func:`task_text`)."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

# Identifiers too common to say anything about where a bug lives.
STOP = set(
    """
self cls None True False print import from return def class with as for while if else elif try except
raise assert lambda yield pass break continue and or not is in len str int float list dict set tuple
type object super init __init__ __call__ __name__ __main__ args kwargs kw arg value values key keys items
name names data result results test tests example examples error errors warning file files path line
lines code issue bug fix python version expected actual output input return_value self_ main setup
true false none this that the and when then there should would could using used use get set
numpy np pd plt pandas matplotlib array range open append format join split strip isinstance
getattr setattr hasattr repr string number function method module package class_ obj x y z
""".split()
)
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DOTTED = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\b")
_FILE = re.compile(r"\b[\w./-]*[\w-]+\.(?:py|pyx|pyi|c|h|cfg|toml|ini|txt|rst|js|html|css|json|yaml|yml)\b")
_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>[\w<>]+)')
_ERROR = re.compile(r"\b(?P<exc>[A-Z][A-Za-z]*(?:Error|Exception|Warning))\s*:\s*(?P<msg>[^\n]{6,200})")
_QUOTED = re.compile(r"`([^`\n]{3,80})`|'([^'\n]{4,80})'|\"([^\"\n]{4,80})\"")
_CAMEL = re.compile(r"^[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+$|^[a-z]+[A-Z][A-Za-z0-9]*$")


@dataclass
class Term:
    text: str  # what to search for (an identifier, a file name, or a literal)
    kind: str  # ident | file | frame | error | quoted | module
    weight: float


ENGLISH = set(
    """
about above after again against also although always another anyone anything because been before being
below between both cannot could currently does doing done down during each either else even every
example expected following from further have having here however instead into itself just like made
make many might more most much must need never none nothing only other otherwise over perhaps please
rather really same seems should since some something still such than that their them then there these
they thing think this those though through under unless until used useful user users using very want
what when where whether which while will with within without would your actually already issue issues
problem problems error errors result results return returns value values following works working
description modified last possible correct correctly wrong behaviour behavior case cases change changes
changed default time times simple able instead right look looks seem code line lines file files test
tests testing version versions call calls called support supported documentation docs django python
raise raises raised true false none class method methods function functions object objects type types
name names data allow allows allowed first second third add added adding remove removed fails failed
""".split()
)


def _code_words(query: str) -> set[str]:
    """Words seen in a code context: backticks, code blocks / indented lines, tracebacks, calls,
    attribute access."""
    out: set[str] = set()
    in_block = False
    for line in query.splitlines():
        if line.strip().startswith("```"):
            in_block = not in_block
            continue
        if in_block or line.startswith(("\t", "    ", ">>>", "+", "-")) or _FRAME.search(line):
            out.update(WORD.findall(line))
    for m in re.finditer(r"`([^`\n]+)`", query):
        out.update(WORD.findall(m.group(1)))
    out.update(re.findall(r"\b([A-Za-z_]\w*)\s*\(", query))
    out.update(re.findall(r"\.([A-Za-z_]\w*)", query))
    out.update(re.findall(r"\b([A-Za-z_]\w*)\.[A-Za-z_]", query))
    return out


def _is_ident_worth(w: str, code: set[str] | None = None) -> bool:
    if len(w) < 4 or w.lower() in STOP or w.isdigit():
        return False
    if "_" in w.strip("_") or _CAMEL.match(w):
        return True
    # a plain capitalised or all-caps word is an identifier only where it reads as code
    return code is not None and w in code and (w[0].isupper() or len(w) >= 6) and w.lower() not in ENGLISH


_QUERY_TAGS = (
    ("<user_query>\n", "\n</user_query>"),  # Relace's published user prompt
    ("<query>", "</query>"),
)  # FastContext's released user message


def task_text(user_message: str) -> str:
    """The task inside a tool set's user prompt: between Relace's ``<user_query>`` tags, inside
    FastContext's ``<query>``, or (older fasbench prompts) after ``Task:``; else the whole message."""
    s = user_message
    for start, end in _QUERY_TAGS:
        i = s.find(start)
        if i >= 0:
            j = s.find(end, i + len(start))
            if j >= 0:
                return s[i + len(start) : j]
    if "Task:\n" in s:
        s = s.split("Task:\n", 1)[1]
        cut = s.rfind("\n\nFind the relevant")
        if cut >= 0:
            s = s[:cut]
    return s


def extract_terms(query: str) -> list[Term]:
    """Search terms of a problem statement, strongest first (one per text and kind).

    Kinds: ``ident`` (identifiers; words in the title weigh more), ``file`` (file names),
    ``module`` (path suffixes from dotted names), ``error`` (literal error messages), ``word``
    (distinctive lowercase prose words, matched against file and definition names)."""
    terms: dict[tuple[str, str], float] = defaultdict(float)
    code = _code_words(query)
    lines = [ln for ln in query.splitlines() if ln.strip()]
    title = set(WORD.findall(lines[0])) if lines else set()
    for m in _FRAME.finditer(query):
        p = m.group("path").replace("\\", "/")
        terms[(p.rsplit("/", 1)[-1], "file")] += 1.0
        parts = p.split("/")
        if len(parts) >= 2:
            terms[("/".join(parts[-2:]), "module")] += 1.0
        if m.group("func") != "<module>" and len(m.group("func")) >= 4 and m.group("func") not in STOP:
            terms[(m.group("func"), "ident")] += 1.5
    for m in _ERROR.finditer(query):
        msg = m.group("msg").strip()
        lit = re.split(r"['\"`{}()\[\]%<>]|\d", msg)[0].strip(" .:")
        if len(lit) >= 12 and len(lit.split()) >= 2:
            terms[(lit[:60], "error")] += 2.0
    for m in _FILE.finditer(query):
        f = m.group(0).strip("./")
        if f and not f.startswith("http") and "test" not in f.rsplit("/", 1)[-1]:
            terms[(f.rsplit("/", 1)[-1], "file")] += 1.5
            if "/" in f:
                terms[("/".join(f.split("/")[-2:]), "module")] += 1.5
    for m in _DOTTED.finditer(query):
        parts = m.group(0).split(".")
        if parts[-1] in ("py", "txt", "rst", "com", "org", "html", "io", "net") or parts[0] in ("e", "i"):
            continue
        if len(parts) >= 3:
            for j in (len(parts) - 1, len(parts)):  # a.b.c.func -> a/b/c.py ; a.b.c -> a/b/c.py
                mod = parts[:j]
                if len(mod) >= 2 and all(x.islower() or "_" in x for x in mod):
                    terms[("/".join(mod[-3:]) + ".py", "module")] += 1.0
        for p in parts[1:]:
            if _is_ident_worth(p, code) or (len(p) >= 5 and p.lower() not in STOP and p.lower() not in ENGLISH):
                terms[(p, "ident")] += 1.0 * (1.5 if p in title else 1.0)
    counts: dict[str, int] = defaultdict(int)
    for w in WORD.findall(query):
        counts[w] += 1
    for w, c in counts.items():
        if _is_ident_worth(w, code):
            bonus = (1.8 if w in title else 1.0) * (1.3 if w in code else 1.0)
            terms[(w, "ident")] += (1.0 + 0.25 * min(c - 1, 4)) * bonus
    # distinctive prose words (title first): matched against file and definition names
    prose = []
    for w in WORD.findall(" ".join(lines[:1]) + " " + " ".join(lines[1:6])):
        lw = w.lower().strip("_")
        if len(lw) >= 5 and lw.isalpha() and lw not in ENGLISH and lw not in STOP and lw not in prose:
            prose.append(lw)
    for i, w in enumerate(prose[:8]):
        terms[(w, "word")] += (1.0 if w in {x.lower() for x in title} else 0.6) / (1 + 0.1 * i)
    out = [Term(t, k, w) for (t, k), w in terms.items()]
    out.sort(key=lambda t: -t.weight)
    return out
