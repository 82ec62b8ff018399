"""The README is a map of folders: every package of fasbench/ has a row pointing at its own README,
and that README names every module in it (fasbench/README.md the modules at the top of the package);
every link of the map resolves; the two commands are the README's and CI's."""

from __future__ import annotations

import re

from fasbench.base.paths import repo_root

ROOT = repo_root()


def packages() -> list:
    return sorted(p.parent for p in (ROOT / "fasbench").rglob("__init__.py") if "__pycache__" not in p.parts)


def unnamed_modules(pkg, readme_text: str) -> list[str]:
    """The modules of ``pkg`` (its own .py files but __init__.py) its README does not name as
    ``name.py`` (a word of its own: ``calls.py`` is not named by ``bash_calls.py``)."""
    return [
        m.name
        for m in sorted(pkg.glob("*.py"))
        if m.name != "__init__.py" and not re.search(rf"(?<![\w/]){re.escape(m.name)}\b", readme_text)
    ]


def map_problems() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    out = []
    for pkg in packages():
        rel = pkg.relative_to(ROOT).as_posix()
        own = pkg / "README.md"
        if not own.exists():
            out.append(f"{rel}/ has no README.md")
            continue
        if f"]({rel}/README.md)" not in readme:
            out.append(f"README.md's map has no row pointing at {rel}/README.md")
        out += [f"{rel}/README.md does not name {m}" for m in unnamed_modules(pkg, own.read_text())]
    top = (ROOT / "fasbench" / "README.md").read_text()
    out += [
        f"fasbench/README.md does not name the package {name}/"
        for name in (p.relative_to(ROOT / "fasbench").as_posix() for p in packages()[1:])
        if f"`{name}/`" not in top
    ]
    for link in re.findall(r"\]\(([^)#:]+)\)", readme):
        if not (ROOT / link).exists():
            out.append(f"README.md links to {link}, which does not exist")
    return out


def test_the_readme_maps_every_package_and_each_package_readme_names_its_modules():
    assert not map_problems(), "\n".join(map_problems())


def test_the_map_check_fails_on_an_unnamed_module(tmp_path):
    (tmp_path / "calls.py").write_text("")
    (tmp_path / "bash_calls.py").write_text("")
    assert unnamed_modules(tmp_path, "| `bash_calls.py` | ... |") == ["calls.py"]
    assert unnamed_modules(tmp_path, "`calls.py` and `bash_calls.py`") == []


def test_the_two_commands_and_ci():
    readme = (ROOT / "README.md").read_text()
    assert (
        "make run    # the main job: every notebook top to bottom with its CPU defaults; figures to figures/\n"
        "make test   # the whole test suite, notebooks included\n"
    ) in readme
    assert re.search(r"^make test$", (ROOT / ".ci" / "run").read_text(), re.M)
    assert (ROOT / "figures" / "README.md").exists() and (ROOT / "CHANGELOG.md").exists()
    assert (ROOT / "benchmarks" / "README.md").exists()
