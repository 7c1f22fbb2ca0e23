"""The documentation runs and says what the package does.

* Every ``>>>`` example in the package's docstrings (doctest over every module found by
  walking ``jaxmdp`` with :mod:`pkgutil`) and the Python code blocks of every tutorial page
  under ``docs/tutorials/`` (in order, in one fresh namespace per page, in a temporary
  working directory), each block followed by "prints" and a ``text`` block printing
  that text.
* The API reference's coverage: every public name of every public module has an entry on
  the pages of ``docs/api/``; every summary row is a whole sentence, not a ``repr``.
* Every formula renders: no alignment ``&`` or line break outside an aligned environment.
* The generated pages cover the package: every registered environment and agent, every
  command-line flag; the README's copies of the tables are current, its headline numbers
  are those of the results pages it links.
* ``CITATION.cff`` follows the Citation File Format 1.2.0 and names the package's version;
  the changelog has an Unreleased section and dated releases."""

import ast
import contextlib
import doctest
import functools
import importlib
import inspect
import io
import pkgutil
import re
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import jax
import pytest

import jaxmdp
import jaxmdp.agents
from jaxmdp import cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
TUTORIALS = DOCS / "tutorials"
API = DOCS / "api"
README = ROOT / "README.md"



class _DocsModule:
    """A module of the docs site's build code (``docs/hooks.py``, ``docs/griffe_rst.py``),
    imported on first use: it needs the ``docs`` extra, which the doctests and tutorials do
    not (a test that uses it is skipped without it)."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attribute):
        pytest.importorskip("mkdocs")
        pytest.importorskip("griffe")
        # docs/ is a namespace package of the repository root (pytest's pythonpath).
        return getattr(importlib.import_module(f"docs.{self._name}"), attribute)


hooks = _DocsModule("hooks")
griffe_rst = _DocsModule("griffe_rst")

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
    assert "jaxmdp.mdp" in names and "jaxmdp.runner" in names
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
                for member_path, member in _module_public_names(obj.__name__):
                    name = member_path.rpartition(".")[2]
                    # A function defined in a submodule of its own name (envs.garnet) is
                    # rendered as that submodule, and a member without a docstring (or,
                    # for a constant, a ``#:`` comment) is not rendered: each needs an
                    # entry of its own.
                    if getattr(member, "__module__", None) != f"{obj.__name__}.{name}" \
                            and _rendered_as_member(member, f"{path}.{name}"):
                        paths.add(f"{path}.{name}")
                        ids.add(id(member))
    return paths, ids


def _rendered_as_member(member, path: str) -> bool:
    """Whether mkdocstrings renders ``member`` among its module's members: a function,
    class or module with a docstring, or a constant with a ``#:`` comment
    (``show_if_no_docstring: false``)."""
    if inspect.ismodule(member) or inspect.isclass(member) or inspect.isroutine(member):
        return bool(inspect.getdoc(member))
    return bool(hooks._assigned_in(member, path))


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


def _public_modules() -> list[str]:
    """Every module of the package whose dotted name has no part starting with ``_``."""
    return [name for name in _module_names()
            if not any(part.startswith("_") for part in name.split("."))]


def _module_public_names(name: str) -> list[tuple[str, object]]:
    """A module's public names: its ``__all__``, else the functions and classes defined in
    it whose names do not start with ``_``."""
    module = importlib.import_module(name)
    if hasattr(module, "__all__"):
        return _public(module)
    return [(f"{name}.{key}", value) for key, value in vars(module).items()
            if not key.startswith("_") and (inspect.isfunction(value) or inspect.isclass(value))
            and value.__module__ == name]




@pytest.mark.parametrize("module", _public_modules())
def test_every_public_module_is_documented(module):
    paths, ids = _api_entries()
    missing = [path for path, obj in _module_public_names(module)
               if not _covered(path, obj, paths, ids)]
    assert not missing, f"public names of {module} without an entry in docs/api/: {missing}"


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
    # Every public module is checked, and a constant is covered by an entry of its own or
    # by its module's when it has a ``#:`` comment (``bench.SUITES`` has both kinds).
    modules = _public_modules()
    assert {"jaxmdp.bench", "jaxmdp.runner", "jaxmdp.envs", "jaxmdp.cli"} <= set(modules)
    assert not any(part.startswith("_") for name in modules for part in name.split("."))
    assert "jaxmdp.envs.ENVIRONMENTS" in paths and "jaxmdp.bench.SUITES" in paths

def test_a_deprecated_name_warns_with_its_removal_version_and_resolves(monkeypatch):
    # The table holds names and modules of released versions: the modules that moved
    # (imported under their old names, with a warning); one name is enough to check the
    # module __getattr__ that serves names.
    assert all(old.startswith("agents.") for old in jaxmdp._DEPRECATIONS)
    for old, (new, removed_in) in jaxmdp._DEPRECATIONS.items():
        monkeypatch.delitem(sys.modules, f"jaxmdp.{old}", raising=False)
        with pytest.warns(DeprecationWarning, match=rf"jaxmdp\.{old} is deprecated and will "
                                                    rf"be removed in jaxmdp {removed_in}"):
            module = importlib.import_module(f"jaxmdp.{old}")
        assert module is importlib.import_module(f"jaxmdp.{new}")
    monkeypatch.setitem(jaxmdp._DEPRECATIONS, "OldSolution", ("planning.Solution", "0.3.0"))
    with pytest.warns(DeprecationWarning, match=r"jaxmdp\.OldSolution is deprecated and will "
                                                r"be removed in jaxmdp 0\.3\.0; use "
                                                r"jaxmdp\.planning\.Solution"):
        assert jaxmdp.OldSolution is jaxmdp.planning.Solution
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchName'"):
        jaxmdp.NoSuchName  # noqa: B018


# --- Tutorials -------------------------------------------------------------------------
# A page's ```python blocks run in order in one fresh namespace. A block right after a line
# ``<!-- requires: jaxmdp.X.y ... -->`` runs only when those names exist in this checkout
# (for a page written against an API another change adds); the page's other blocks still
# run, and the test is then reported as skipped, naming them. A block followed by a line
# "prints" and a ```text block must print that text (doctest's comparison: whitespace
# normalised, ``...`` matching anything).
_BLOCK = re.compile(
    r"(?:<!-- requires: (?P<requires>[^>]*?) -->\s*\n)?^```python\n(?P<code>.*?)^```[ \t]*\n"
    r"(?:[ \t]*\n)*(?:prints\b[^\n]*\n(?:[ \t]*\n)*```text\n(?P<expected>.*?)^```)?",
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


def _blocks(page: Path) -> list[tuple[list[str], str, str | None]]:
    """``(requires, code, expected output or None)`` of each Python block of a page."""
    return [((m.group("requires") or "").split(), m.group("code"), m.group("expected"))
            for m in _BLOCK.finditer(page.read_text())]


PAGES = sorted(TUTORIALS.glob("*.md"))


def test_tutorial_pages_are_found():
    assert len(PAGES) >= 5
    assert all(_blocks(page) for page in PAGES), "a tutorial page without Python code"


def test_every_printing_tutorial_says_what_to_expect():
    # A page whose code prints shows what it prints, at least once, in a checked block.
    silent = [page.stem for page in PAGES
              if any("print(" in code for _, code, _ in _blocks(page))
              and not any(expected for _, _, expected in _blocks(page))]
    assert not silent, f"tutorials that print without an expected-output block: {silent}"


@pytest.mark.parametrize("page", PAGES, ids=[page.stem for page in PAGES])
def test_tutorial_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    checker = doctest.OutputChecker()
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    namespace, missing = {"__name__": "__main__"}, []
    for number, (requires, code, expected) in enumerate(_blocks(page), 1):
        absent = [name for name in requires if not _exists(name)]
        if absent:
            missing += absent
            continue
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, f"{page} (block {number})", "exec"), namespace)
        if expected is not None:
            assert checker.check_output(expected, printed.getvalue(), flags), (
                f"block {number} of {page.name} printed\n{printed.getvalue()}\n"
                f"where the page says\n{expected}")
    if missing:
        pytest.skip(f"blocks need {', '.join(sorted(set(missing)))}, not in this checkout")


# --- Formulas ----------------------------------------------------------------------------
# MathJax renders an alignment ``&`` (or a line break ``\\``) outside an aligned
# environment as a red "Misplaced &": every formula of every docstring (as the docs' griffe
# extension converts it), of every page and of every summary table is checked.


def _docstrings() -> list[tuple[str, str, str]]:
    """``(where, module, docstring)`` for the module, class and function docstrings of every
    file of the package (read with :mod:`ast`, so private ones too)."""
    found = []
    for path in sorted((ROOT / "jaxmdp").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(
            ".__init__")
        tree = ast.parse(path.read_text())
        for node in [tree, *ast.walk(tree)]:
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                 ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc:
                    found.append((f"{module}:{getattr(node, 'name', '')}", module, doc))
    return found


def test_docstring_formulas_are_aligned_only_in_aligned_environments():
    documented = griffe_rst._documented()
    docstrings = _docstrings()
    assert len(docstrings) > 300
    bad = [where for where, module, doc in docstrings
           for formula in griffe_rst.formulas(griffe_rst.convert(doc, module, documented))
           if griffe_rst.misplaced_alignment(formula)]
    assert not bad, f"formulas with & or \\\\ outside an aligned environment: {bad}"


def test_page_formulas_are_aligned_only_in_aligned_environments():
    bad = [str(page.relative_to(ROOT)) for page in sorted(DOCS.rglob("*.md"))
           for formula in griffe_rst.formulas(page.read_text())
           if griffe_rst.misplaced_alignment(formula)]
    assert not bad, f"pages with & or \\\\ outside an aligned environment: {bad}"


def test_the_formula_check_and_the_aligned_wrapping():
    # The check fails on the red "Misplaced &" cases and passes aligned ones; a multi-line
    # ``.. math::`` block is wrapped in ``aligned`` (C_G and D_G of indices/gaussian.py).
    assert griffe_rst.misplaced_alignment(r"a &= b, \\ c &= d")
    assert griffe_rst.misplaced_alignment(r"x \\ y")
    assert not griffe_rst.misplaced_alignment(r"\begin{aligned} a &= b \\ c &= d \end{aligned}")
    assert not griffe_rst.misplaced_alignment(r"\{a \& b\} \begin{cases} 1 & x \end{cases}")
    converted = griffe_rst.convert(".. math::\n\n   a &= b, \\\\\n   c &= d.\n")
    (formula,) = griffe_rst.formulas(converted)
    assert formula.strip().startswith(r"\begin{aligned}")
    assert not griffe_rst.misplaced_alignment(formula)
    gaussian = importlib.import_module("jaxmdp.indices.gaussian").__doc__
    both = next(formula for formula in griffe_rst.formulas(
        griffe_rst.convert(gaussian, "jaxmdp.indices.gaussian"))
        if "C_G" in formula and "D_G" in formula)
    assert "&" in both and not griffe_rst.misplaced_alignment(both)


# --- API summary tables ------------------------------------------------------------------
_CUT = re.compile(r"\b(?:w\.r\.t|e\.g|i\.e|cf|eq|sec|resp)\.$")
_REPR = ("functools.partial(", "<function", " object at 0x", " at 0x", "...`")


def _summary_rows() -> list[tuple[str, str, str]]:
    """``(page, name cell, description cell)`` of every row of every summary table."""
    rows = []
    for page in sorted(API.glob("*.md")):
        text = page.read_text()
        if "<!-- summary -->" not in text:
            continue
        for line in hooks.summary_table(text).splitlines()[2:]:
            cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
            assert len(cells) == 2, f"{page.name}: a row that is not two cells: {line}"
            rows.append((page.name, cells[0].strip(), cells[1].strip()))
    return rows


def test_summary_rows_are_whole_sentences():
    rows = _summary_rows()
    assert len(rows) > 100
    bad = []
    for page, name, text in rows:
        opened, closed = text.count("\\("), text.count("\\)")
        if (not text or opened != closed or _CUT.search(text)
                or any(marker in text for marker in _REPR)
                or any(griffe_rst.misplaced_alignment(f) for f in griffe_rst.formulas(text))):
            bad.append(f"{page} {name}: {text!r}")
    assert not bad, "garbled summary rows:\n" + "\n".join(bad)


def test_summary_sentences_and_constants():
    # The sentence ends at a period that is not an abbreviation's, outside inline maths;
    # a constant's row is its ``#:`` comment, or its type or a short value, not a repr.
    assert hooks.first_sentence("Gradient w.r.t. ``P`` and ``R``. More.") == \
        "Gradient w.r.t. ``P`` and ``R``."
    assert hooks.first_sentence("The index :math:`C. X` is. Then") == \
        "The index :math:`C. X` is."
    assert hooks.first_sentence("Returns: The value") == "Returns."
    assert hooks._table_math(r"\(\mathrm{KL}(p\|q) = |x|\)") == \
        r"\(\mathrm{KL}(p\Vert q) = \vert x\vert \)"
    from jaxmdp import bench

    assert hooks._constant(bench.SUITES, "jaxmdp.bench.SUITES") == "The named suites."
    assert hooks._constant(Callable[[int], int], "nowhere.Alias") == \
        "A type: `Callable[[int], int]`."
    assert hooks._constant({"ucb": functools.partial(print)}, "nowhere.TABLE") == \
        "A `dict` of 1 entry."


# --- Tables generated from the package ----------------------------------------------------


def test_generated_tables_list_every_environment_and_agent():
    environments = hooks.environments_table()
    for name in jaxmdp.envs.names():
        assert f"| `{name}`" in environments, f"environment {name!r} missing"
    agents = hooks.agents_table()
    names = jaxmdp.agent_names()
    for name in names:
        assert re.search(rf"^\| (?:\[`{name}`\]\[[\w.]+\]|`{name}`) \|", agents,
                         flags=re.MULTILINE), f"agent {name!r} missing"
    undescribed = sorted(set(names) - set(hooks.AGENT_DESCRIPTIONS))
    assert not undescribed, f"agents without a line in docs/hooks.py AGENT_DESCRIPTIONS: " \
                            f"{undescribed}"
    assert "| `paper-mdp` | 3 | 2 | 0.716029 | 1.132 |" in environments
    assert "| known |" in agents and "| learned |" in agents


def test_pages_show_the_generated_tables():
    for page, blocks in (("index.md", ("agents", "environments")),
                         ("getting-started.md", ("agents", "environments")),
                         ("guide/which-agent.md", ("agents",)), ("cli.md", ("cli",))):
        text = (DOCS / page).read_text()
        for block in blocks:
            assert f"<!-- generated: {block} -->" in text, f"{page} lacks the {block} table"
    rendered = hooks.generate((DOCS / "index.md").read_text())
    assert "<!-- generated:" not in rendered and "| `toy3d-weak` |" in rendered


def test_readme_tables_are_current():
    # README.md holds copies of the generated tables: `python docs/hooks.py` rewrites them.
    text = README.read_text()
    for block in ("agents", "environments"):
        assert f"<!-- generated: {block} -->" in text and f"<!-- end: {block} -->" in text
    assert hooks.readme(text) == text, "README.md's tables are out of date: run " \
                                       "`python docs/hooks.py`"


def test_the_cli_page_lists_every_flag():
    reference = hooks.cli_reference()
    parser = cli._parser()
    sections = dict(re.findall(r"^## `jaxmdp (\w+)`\n(.*?)(?=^## |\Z)", reference,
                               flags=re.MULTILINE | re.DOTALL))
    flags = hooks.flags(parser)
    assert {"run --record-every", "run --reward-law", "run --sigma", "bench --suite",
            "cache --clear"} <= set(flags)
    for flag in flags:
        command, option = flag.split(" ", 1)
        assert re.search(rf"`{re.escape(option)}[` ]", sections[command]), \
            f"jaxmdp {flag} missing from the command-line reference"
    nav = (ROOT / "mkdocs.yml").read_text()
    assert "cli.md" in nav and "changelog.md" in nav


# --- Numbers quoted from the results pages ------------------------------------------------
_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")
_LINK = re.compile(r"\]\((docs/measurements/[\w-]+\.md)(?:#([\w-]+))?\)")


def _slug(title: str) -> str:
    title = re.sub(r"[^\w\s-]", "", title.strip().lower())
    return re.sub(r"[\s]+", "-", title)


def _section(page: str, anchor: str | None) -> str:
    """The text of ``page`` under the heading whose anchor is ``anchor`` (the whole page
    without one), up to the next heading of the same or a higher level."""
    text = (ROOT / page).read_text()
    if not anchor:
        return text
    headings = list(re.finditer(r"^(#+) (.*)$", text, flags=re.MULTILINE))
    for i, heading in enumerate(headings):
        if _slug(heading.group(2)) == anchor:
            level = len(heading.group(1))
            end = next((h.start() for h in headings[i + 1:] if len(h.group(1)) <= level),
                       len(text))
            return text[heading.start():end]
    raise AssertionError(f"{page} has no heading #{anchor}")


def test_readme_numbers_are_those_of_the_results_pages():
    table = README.read_text().split("## Headline measurements", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| ")][1:]
    assert len(rows) >= 8
    for row in rows:
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]]
        result, recorded, link = cells[1], cells[3], _LINK.search(cells[4])
        assert link, f"a README headline row without a results page: {row}"
        section = _section(link.group(1), link.group(2))
        numbers = set(_NUMBER.findall(section))
        missing = [n for n in _NUMBER.findall(result) if n not in numbers]
        assert not missing, f"README numbers {missing} are not on {link.group(0)}: {row}"
        assert recorded in (ROOT / link.group(1)).read_text(), row


def test_the_landing_page_takes_its_run_times_from_the_results_page():
    landing = (DOCS / "index.md").read_text()
    assert '--8<-- "docs/measurements/index.md:run-times"' in landing
    results = (DOCS / "measurements" / "index.md").read_text()
    assert "[start:run-times]" in results and "[end:run-times]" in results
    assert not re.search(r"\d+ min \d+ s", landing), "a run time typed into the landing page"


# --- Citation and changelog ---------------------------------------------------------------
_CFF_KEYS = {"abstract", "authors", "cff-version", "commit", "contact", "date-released",
             "doi", "identifiers", "keywords", "license", "license-url", "message",
             "preferred-citation", "references", "repository", "repository-artifact",
             "repository-code", "title", "type", "url", "version"}
_PERSON_KEYS = {"address", "affiliation", "alias", "city", "country", "email",
                "family-names", "fax", "given-names", "name-particle", "name-suffix",
                "orcid", "post-code", "region", "tel", "website"}
_ENTITY_KEYS = {"address", "alias", "city", "country", "date-end", "date-start", "email",
                "fax", "location", "name", "orcid", "post-code", "region", "tel", "website"}
_URL = re.compile(r"^(https|http|ftp|sftp)://.+")
_DATE = re.compile(r"^[0-9]{4}-(0[1-9]|1[012])-(0[1-9]|[12][0-9]|3[01])$")


def _cff_problems(cff: dict) -> list[str]:
    """Where ``cff`` breaks the Citation File Format 1.2.0 schema (its required keys, the
    keys it allows, the shapes of authors, references, identifiers, dates and URLs)."""
    problems = [f"missing {key}" for key in ("authors", "cff-version", "message", "title")
                if key not in cff]
    problems += [f"unknown key {key}" for key in set(cff) - _CFF_KEYS]
    if cff.get("cff-version") != "1.2.0":
        problems.append("cff-version must be 1.2.0")
    if cff.get("type", "software") not in ("software", "dataset"):
        problems.append("type must be software or dataset")

    def authors(where, people):
        if not isinstance(people, list) or not people:
            return [f"{where}: authors must be a non-empty list"]
        out = []
        for person in people:
            keys = set(person)
            if not (keys <= _PERSON_KEYS or ("name" in keys and keys <= _ENTITY_KEYS)):
                out.append(f"{where}: an author is neither a person nor an entity: {person}")
        return out

    def common(where, work):
        out = []
        for key in ("url", "repository-code", "repository", "license-url"):
            if key in work and not _URL.match(str(work[key])):
                out.append(f"{where}: {key} is not a URL")
        for key in ("date-released", "date-published"):
            if key in work and not _DATE.match(str(work[key])):
                out.append(f"{where}: {key} is not YYYY-MM-DD")
        for identifier in work.get("identifiers", []):
            if identifier.get("type") not in ("doi", "url", "swh", "other") or \
                    not identifier.get("value") or \
                    set(identifier) - {"type", "value", "description"}:
                out.append(f"{where}: bad identifier {identifier}")
        return out

    problems += authors("root", cff.get("authors")) + common("root", cff)
    for i, reference in enumerate(cff.get("references", [])):
        for key in ("authors", "title", "type"):
            if key not in reference:
                problems.append(f"references[{i}]: missing {key}")
        problems += authors(f"references[{i}]", reference.get("authors"))
        problems += common(f"references[{i}]", reference)
        if reference.get("status", "preprint") not in (
                "abstract", "advance-online", "in-preparation", "in-press", "preprint",
                "submitted"):
            problems.append(f"references[{i}]: bad status")
    return problems


def _version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_citation_cff_is_valid_and_names_the_version():
    yaml = pytest.importorskip("yaml")
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert not _cff_problems(cff), _cff_problems(cff)
    assert str(cff["version"]) == _version()
    released = dict(re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\S+)$",
                               (ROOT / "CHANGELOG.md").read_text(), flags=re.MULTILINE))
    if _version() in released:
        assert str(cff["date-released"]) == released[_version()]
    paper = cff["references"][0]
    assert "arXiv:1909.13158" in [i["value"] for i in paper["identifiers"]]
    # The check sees a broken file.
    assert _cff_problems({"cff-version": "1.2.0", "title": "x", "message": "m",
                          "authors": [{"nick": "x"}], "urls": "x"})


def test_bibtex_entries_name_the_version_and_the_paper():
    for page in (README, DOCS / "index.md"):
        text = page.read_text()
        software = re.search(r"@software\{jaxmdp,.*?\n\}", text, flags=re.DOTALL)
        assert software, f"{page.name}: no @software entry"
        assert re.search(rf"version\s*=\s*\{{{re.escape(_version())}\}}", software.group(0))
        paper = re.search(r"@misc\{cowan2019accelerating,.*?\n\}", text, flags=re.DOTALL)
        assert paper and "1909.13158" in paper.group(0) and "arXiv" in paper.group(0)


def test_changelog_has_unreleased_and_dated_releases():
    text = (ROOT / "CHANGELOG.md").read_text()
    sections = re.findall(r"^## (.*)$", text, flags=re.MULTILINE)
    assert sections[0] == "[Unreleased]"
    for section in sections[1:]:
        assert re.fullmatch(r"\[\d+\.\d+\.\d+\] - \d{4}-\d{2}-\d{2}", section), section
    assert '--8<-- "CHANGELOG.md"' in (DOCS / "changelog.md").read_text()
