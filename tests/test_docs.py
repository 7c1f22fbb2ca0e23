"""The documentation runs: every ``>>>`` example in the package's docstrings (doctest over
every module found by walking ``jaxmdp`` with :mod:`pkgutil`), and the Python code blocks
of every tutorial page under ``docs/tutorials/`` (concatenated per page and executed in a
fresh namespace, in a temporary working directory); and the API reference's coverage:
every public name has an entry on the pages of ``docs/api/``."""

import doctest
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import jax
import pytest

import jaxmdp
import jaxmdp.agents

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = ROOT / "docs" / "tutorials"
API = ROOT / "docs" / "api"

# Modules that are not imported for their doctests: ``python -m jaxmdp`` runs the command
# line when imported.
NOT_IMPORTED = {"jaxmdp.__main__"}

# Modules whose docstring examples are known to fail, with the reason. Strict: once an
# example is fixed its module must leave this list.
KNOWN_BROKEN: dict[str, str] = {}


def _module_names() -> list[str]:
    names = ["jaxmdp"]
    for info in pkgutil.walk_packages(jaxmdp.__path__, prefix="jaxmdp."):
        if info.name not in NOT_IMPORTED:
            names.append(info.name)
    return sorted(names)


def _modules_with_examples() -> list[str]:
    finder = doctest.DocTestFinder()
    found = []
    for name in _module_names():
        module = importlib.import_module(name)
        if any(test.examples for test in finder.find(module, name)):
            found.append(name)
    return found


MODULES = _modules_with_examples()


def test_walk_finds_the_package_modules():
    # The walk must see the package's modules, so that moving a module cannot silently
    # drop its examples from this test.
    names = _module_names()
    assert "jaxmdp.mdp" in names and "jaxmdp.simulate" in names
    assert any(name.startswith("jaxmdp.indices.") for name in names)
    assert len(MODULES) >= 5


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.xfail(reason=KNOWN_BROKEN[name], strict=True))
        if name in KNOWN_BROKEN
        else name
        for name in MODULES
    ],
)
def test_docstring_examples_run(name):
    # float64, as tests/conftest.py sets (a test run earlier on this worker may have left
    # jax_enable_x64 off: set it again rather than depend on the order of the tests).
    jax.config.update("jax_enable_x64", True)
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    report: list[str] = []
    # Each example runs in a copy of its module's globals, as ``python -m doctest`` does.
    for test in doctest.DocTestFinder().find(module, name):
        if test.examples:
            runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)[-6000:]


# --- API reference ---------------------------------------------------------------------
# Like optax's docs/ext/coverage_check.py: every public name must have an entry on the API
# pages. An entry is a ``::: path`` line of docs/api/*.md; a module rendered with its
# members (no ``members: false`` option) documents the names of its ``__all__`` too. A
# name is covered by an entry of its own path or of the same object under another path
# (``jaxmdp.evi`` is ``jaxmdp.planning.evi``). mkdocs build --strict fails on an entry
# whose object is gone; this catches the converse.
_ENTRY = re.compile(r"^::: (\S+)((?:\n[ \t]+.*)*)", flags=re.MULTILINE)
SUBPACKAGES = ("envs", "planning", "analysis", "agents")


def _resolve(path: str):
    """The object at ``path``: an attribute of its parent where there is one (``jaxmdp.evi``
    is the function that ``jaxmdp`` exports), else the module of that name."""
    parent, _, name = path.rpartition(".")
    if parent:
        owner = _resolve(parent)
        if hasattr(owner, name):
            return getattr(owner, name)
        try:  # a function named after its module: jaxmdp.envs.garnet.garnet
            return getattr(importlib.import_module(parent), name)
        except (ImportError, AttributeError):
            pass
    return importlib.import_module(path)


def _api_entries() -> tuple[set[str], set[int]]:
    """The documented paths and the ids of the documented functions, classes and modules."""
    paths, ids = set(), set()
    for page in API.glob("*.md"):
        for match in _ENTRY.finditer(page.read_text()):
            path, options = match.group(1), match.group(2)
            obj = _resolve(path)
            paths.add(path)
            ids.add(id(obj))
            if inspect.ismodule(obj) and "members: false" not in options:
                for name in getattr(obj, "__all__", []):
                    member = getattr(obj, name)
                    # A function defined in a submodule of its own name (envs.garnet) is
                    # rendered as that submodule: it needs an entry of its own.
                    if getattr(member, "__module__", None) != f"{obj.__name__}.{name}":
                        paths.add(f"{path}.{name}")
                        ids.add(id(member))
    return paths, ids


def _public(module) -> list[tuple[str, object]]:
    """``module.__all__`` (deprecated names, served by ``jaxmdp.__getattr__`` from its
    table, are not in it)."""
    names = [f"{module.__name__}.{name}" for name in getattr(module, "__all__", [])]
    return [(path, _resolve(path)) for path in names]


def _agent_factories() -> list[tuple[str, object]]:
    """Every public ``*_agent`` function of the modules of ``jaxmdp.agents``."""
    found = []
    for info in pkgutil.iter_modules(jaxmdp.agents.__path__, prefix="jaxmdp.agents."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (name.endswith("_agent") and not name.startswith("_")
                    and inspect.isfunction(obj) and obj.__module__ == info.name):
                found.append((f"{info.name}.{name}", obj))
    return found


def _public_names() -> list[tuple[str, object]]:
    names = _public(jaxmdp)
    for sub in SUBPACKAGES:
        names += _public(importlib.import_module(f"jaxmdp.{sub}"))
    return names + _agent_factories()


def _covered(path: str, obj, paths: set[str], ids: set[int]) -> bool:
    named = inspect.ismodule(obj) or inspect.isclass(obj) or callable(obj)
    return path in paths or (named and id(obj) in ids)


def test_every_public_name_has_an_api_entry():
    paths, ids = _api_entries()
    missing = [path for path, obj in _public_names() if not _covered(path, obj, paths, ids)]
    assert not missing, f"public names without an entry in docs/api/: {missing}"


def test_each_object_is_rendered_on_one_page():
    # mkdocs-autorefs refuses (a warning, fatal under --strict) two primary anchors for one
    # object: a guide page links to the API entry rather than rendering it again.
    pages: dict[str, list[str]] = {}
    for page in sorted((ROOT / "docs").rglob("*.md")):
        for match in _ENTRY.finditer(page.read_text()):
            pages.setdefault(match.group(1), []).append(str(page.relative_to(ROOT)))
    twice = {path: where for path, where in pages.items() if len(where) > 1}
    assert pages and not twice, f"objects rendered on more than one page: {twice}"


def test_the_coverage_check_sees_the_public_names():
    # The check must fail for a public name without an entry, and see every agent factory
    # (the factories of the paper's four agents and of the baselines), so that it cannot
    # pass by finding nothing to check.
    paths, ids = _api_entries()
    names = dict(_public_names())
    assert {"jaxmdp.kl_ucb", "jaxmdp.envs.make", "jaxmdp.planning.evi_planner",
            "jaxmdp.agents.paper.paper_agent", "jaxmdp.agents.psrl.tsde_agent",
            "jaxmdp.agents.qlearning.optimistic_q_agent"} <= set(names)
    assert not _covered("jaxmdp.not_documented", lambda: None, paths, ids)
    assert _covered("jaxmdp.solve_average_reward", jaxmdp.solve_average_reward, paths, ids)

def test_a_deprecated_name_warns_with_its_removal_version_and_resolves(monkeypatch):
    # The table holds only names of released versions (none yet); one entry is enough to
    # check the module __getattr__ that serves it.
    assert jaxmdp._DEPRECATIONS == {}
    monkeypatch.setitem(jaxmdp._DEPRECATIONS, "OldSolution", ("planning.Solution", "0.3.0"))
    with pytest.warns(DeprecationWarning, match=r"jaxmdp\.OldSolution is deprecated and will "
                                                r"be removed in jaxmdp 0\.3\.0; use "
                                                r"jaxmdp\.planning\.Solution"):
        assert jaxmdp.OldSolution is jaxmdp.planning.Solution
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchName'"):
        jaxmdp.NoSuchName  # noqa: B018


# --- Tutorials -------------------------------------------------------------------------
# A page's ```python blocks run in order, concatenated, in one fresh namespace. A block
# right after a line ``<!-- requires: jaxmdp.X.y ... -->`` runs only when those names
# exist in this checkout (for a page written against an API another change adds); the
# page's other blocks still run, and the test is then reported as skipped, naming them.
_BLOCK = re.compile(
    r"(?:<!-- requires: (?P<requires>[^>]*?) -->\s*\n)?^```python\n(?P<code>.*?)^```\s*$",
    flags=re.MULTILINE | re.DOTALL,
)


def _exists(dotted: str) -> bool:
    module, *attributes = dotted.split(".")
    obj = importlib.import_module(module)
    for attribute in attributes:
        if not hasattr(obj, attribute):
            return False
        obj = getattr(obj, attribute)
    return True


def _blocks(page: Path) -> list[tuple[list[str], str]]:
    return [((m.group("requires") or "").split(), m.group("code"))
            for m in _BLOCK.finditer(page.read_text())]


PAGES = sorted(TUTORIALS.glob("*.md"))


def test_tutorial_pages_are_found():
    assert len(PAGES) >= 5
    assert all(_blocks(page) for page in PAGES), "a tutorial page without Python code"


@pytest.mark.parametrize("page", PAGES, ids=[page.stem for page in PAGES])
def test_tutorial_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, missing = [], []
    for requires, block in _blocks(page):
        absent = [name for name in requires if not _exists(name)]
        if absent:
            missing += absent
        else:
            code.append(block)
    namespace = {"__name__": "__main__"}
    exec(compile("\n".join(code), str(page), "exec"), namespace)
    if missing:
        pytest.skip(f"blocks need {', '.join(sorted(set(missing)))}, not in this checkout")
