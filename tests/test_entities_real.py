"""Entity gold spot-checked against hand-picked real SWE-bench gold patches, located on their offline
PyPI sdist corpora (downloaded once into the cache; needs PyPI): a method edit, a class-level edit,
a module-level edit, and a patch adding a new function and a new method."""

import pytest
from pypi_fixture import requires_pypi

from fasbench.data.corpus import materialize

pytestmark = requires_pypi


def _gold(by_id, iid):
    t = materialize(by_id[iid], mode="offline")
    e = t.gold.entities
    return t, (e["function"], e["class"], e["module"], e["added"])


@pytest.mark.slow
def test_method_edit(by_id):
    # django-15368: bulk_update's isinstance(attr, Expression) check (hunk placed with fuzz on Django 4.0)
    t, g = _gold(by_id, "django__django-15368")
    f = "django/db/models/query.py"
    assert t.meta["corpus"]["release"] == "4.0"
    assert g == ([f"{f}:QuerySet.bulk_update"], [f"{f}:QuerySet"], [f"{f}:QuerySet"], [])


def test_class_level_edit(by_id):
    # sphinx-8621: KeyboardTransform.pattern, a class attribute: the class, no method
    _, g = _gold(by_id, "sphinx-doc__sphinx-8621")
    f = "sphinx/builders/html/transforms.py"
    assert g == ([], [f"{f}:KeyboardTransform"], [f"{f}:KeyboardTransform"], [])


def test_module_level_edit(by_id):
    # django-15098: the module-level language_code_prefix_re: the file only
    t, g = _gold(by_id, "django__django-15098")
    assert g == ([], [], [], []) and t.gold.entities["file"] == ["django/utils/translation/trans_real.py"]


def test_new_function_and_new_method(by_id):
    # django-15127: adds a top-level update_level_tags (the file only) and MessagesConfig.ready (its class)
    _, g = _gold(by_id, "django__django-15127")
    f = "django/contrib/messages/apps.py"
    assert g == (
        [],
        [f"{f}:MessagesConfig"],
        [f"{f}:MessagesConfig"],
        [f"{f}:update_level_tags", f"{f}:MessagesConfig.ready"],
    )
