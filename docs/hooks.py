"""mkdocs hooks of the docs site.

* Serve the repository's ``figures/`` (drawn by ``experiments/``) as ``figures/*.png`` of
  the site, so that the pages show the committed figures without a copy of them under
  ``docs/``.
* Serve MathJax from the ``docs`` extra's MathJax 3 package (``django-static-mathjax``,
  a plain copy of MathJax's files, no Django needed)
  (``javascripts/mathjax/tex-svg.js``), so that formulas render without a network.
* On the API pages, replace the line ``<!-- summary -->`` by a table of the page's
  entries (every ``::: name`` line; for a module rendered with its members, each name of
  its ``__all__``), each linked to its entry, with the first sentence of its docstring.
* On every page, replace a line ``<!-- generated: NAME -->`` by the table ``NAME`` of
  :data:`GENERATED`, built from the package itself: the environments (the registry,
  ``jm.envs.ENVIRONMENTS``, with the numbers ``jaxmdp envs`` prints), the agents
  (``jm.agent_names()``, each agent's reward setting from its configuration) and the
  command-line reference (the ``argparse`` parsers of ``jaxmdp.cli``).

``README.md`` is read on GitHub, not built: it holds a copy of the same tables between
``<!-- generated: NAME -->`` and ``<!-- end: NAME -->``, which ``python docs/hooks.py``
rewrites (``--check``: exit 1 if a copy is out of date; ``tests/test_docs.py`` checks).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import math
import posixpath
import re
import sys
from pathlib import Path

from mkdocs.structure.files import File

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
FIGURES = ROOT / "figures"
README = ROOT / "README.md"
MATHJAX_SCRIPT = "javascripts/mathjax/tex-svg.js"

sys.path.insert(0, str(DOCS))
import griffe_rst  # noqa: E402

_ENTRY = re.compile(r"^::: (\S+)((?:\n[ \t]+.*)*)", flags=re.MULTILINE)


def mathjax_file() -> Path:
    """MathJax's single-file TeX-to-SVG build, from the ``mathjax`` package (the
    ``docs`` extra)."""
    import mathjax

    return Path(mathjax.__file__).resolve().parent / "static" / "mathjax" / "es5" / "tex-svg.js"


def on_startup(command, dirty):
    """The tables import jaxmdp: from this checkout where it is not installed (a bare
    ``mkdocs build`` in a fresh clone). Added here, not when the hooks are loaded: mkdocs
    restores ``sys.path`` after loading them."""
    del command, dirty
    if str(ROOT) not in sys.path:
        sys.path.append(str(ROOT))


def on_files(files, config):
    for figure in sorted(FIGURES.glob("*.png")):
        files.append(File.generated(config, f"figures/{figure.name}",
                                    abs_src_path=str(figure)))
    files.append(File.generated(config, MATHJAX_SCRIPT, abs_src_path=str(mathjax_file())))
    return files


def _object(path: str):
    """The Python object a ``::: path`` entry documents: an attribute of its parent where
    there is one (``jaxmdp.evi`` is the function that ``jaxmdp`` exports), else the module
    of that name."""
    parent, _, name = path.rpartition(".")
    if parent:
        owner = _object(parent)
        if hasattr(owner, name):
            return getattr(owner, name)
        try:  # a function named after its module: jaxmdp.envs.garnet.garnet
            return getattr(importlib.import_module(parent), name)
        except (ImportError, AttributeError):
            pass
    return importlib.import_module(path)


# A period that ends one of these does not end the sentence ("w.r.t. ``P``", "e.g. ``x``",
# "H. Bourel").
_ABBREVIATION = re.compile(r"(?:\b(?:w\.r\.t|e\.g|i\.e|cf|eqs?|sec|Fig|etc|vs|al|resp|approx)"
                           r"|(?<![\w.])[A-Z])\.$")


def first_sentence(paragraph: str) -> str:
    """The first sentence of a docstring's first paragraph (reStructuredText): up to the
    first ``.`` or ``:`` followed by a capital, a backquote or ``*``, outside inline code
    and maths and not after an abbreviation; a final ``:`` becomes ``.``."""
    paragraph = " ".join(paragraph.split())
    for end in re.finditer(r"[.:](?=\s+[A-Z`*])", paragraph):
        head = paragraph[:end.end()]
        if head.count("`") % 2 or (end.group() == "." and _ABBREVIATION.search(head)):
            continue
        return paragraph[:end.start()] + "."
    return paragraph


def _table_math(cell: str) -> str:
    """``cell`` with every ``|`` inside its ``\\( ... \\)`` spans written as ``\\vert`` /
    ``\\Vert``: a bar splits a Markdown table's row before MathJax sees it."""
    return re.sub(r"\\\((.*?)\\\)", lambda m: "\\(" + m.group(1).replace("\\|", "\\Vert ")
                  .replace("|", "\\vert ") + "\\)", cell)


def _assigned_in(obj, path: str) -> str:
    """The ``#:`` comment above the assignment of the constant at ``path`` (in its module
    or the submodule it is imported from), or ``""``."""
    parent, _, name = path.rpartition(".")
    assignment = re.compile(rf"^{re.escape(name)}\s*(?::[^=]*)?=", flags=re.MULTILINE)
    for module_name, module in sorted(sys.modules.items()):
        if not (module_name == parent or module_name.startswith(parent + ".")) or \
                getattr(module, name, None) is not obj:
            continue
        try:
            lines = inspect.getsource(module).splitlines()
        except (OSError, TypeError):
            continue
        for number, line in enumerate(lines, 1):
            if assignment.match(line):
                comment = griffe_rst.doc_comment(lines, number)
                if comment:
                    return comment
    return ""


def _type_alias(obj) -> bool:
    """Whether ``obj`` is a type written as a value (``Callable[[...], ...]``)."""
    return type(obj).__module__ in ("typing", "types", "_collections_abc", "collections.abc")


def _constant(obj, path: str) -> str:
    """What a summary row says of a constant: its ``#:`` comment, else its type or a short
    value (never a long ``repr``)."""
    comment = _assigned_in(obj, path)
    if comment:
        return first_sentence(comment)
    if _type_alias(obj):
        text = re.sub(r"\b(?:typing|collections\.abc|jax|[a-z_]+(?:\.[a-z_]+)+)\.", "",
                      str(obj))
        return f"A type: `{text}`."
    value = repr(obj)
    if len(value) <= 40 and "<" not in value:
        return f"`{value}`"
    size = f" of {len(obj)} {'entry' if len(obj) == 1 else 'entries'}" \
        if hasattr(obj, "__len__") else ""
    return f"A `{type(obj).__name__}`{size}."


def _summary(obj, path: str, module: str, documented: set[str]) -> str:
    """The first sentence of ``obj``'s docstring, as Markdown for one table cell (for a
    constant, its ``#:`` comment or its value)."""
    if inspect.ismodule(obj) or inspect.isclass(obj) or (callable(obj)
                                                         and not _type_alias(obj)):
        text = first_sentence((inspect.getdoc(obj) or "").split("\n\n")[0])
    else:
        text = _constant(obj, path)
    text = griffe_rst.convert(text, module, documented)
    return _table_math(text).replace("|", r"\|")


def shadowed(module, name: str) -> bool:
    """Whether ``module.name`` is a function defined in a submodule of the same name
    (``jaxmdp.envs.garnet`` from ``jaxmdp/envs/garnet.py``): griffe renders the submodule
    under that name, so the function needs an entry of its own."""
    return getattr(getattr(module, name), "__module__", None) == f"{module.__name__}.{name}"


def entries(markdown: str) -> list[tuple[str, bool]]:
    """``(path, members_rendered)`` for each ``::: path`` entry of a page."""
    return [(m.group(1), "members: false" not in m.group(2))
            for m in _ENTRY.finditer(markdown)]


def summary_table(markdown: str) -> str:
    documented = griffe_rst._documented()
    rows = ["| name | description |", "|---|---|"]
    for path, members in entries(markdown):
        obj = _object(path)
        names = [(path, obj)]
        if inspect.ismodule(obj) and members:
            names += [(f"{path}.{name}", getattr(obj, name))
                      for name in getattr(obj, "__all__", [])
                      if inspect.isfunction(getattr(obj, name))
                      and not shadowed(obj, name)]
        for name, member in names:
            parent = name.rpartition(".")[0]
            # jm.NAME and the agent factories by their name; the rest with their module
            # (envs.make, planning.ModelChange, bench.run_bench, agents.paper).
            shown = (name.rpartition(".")[2] if not inspect.ismodule(member) and (
                parent == "jaxmdp" or parent.startswith("jaxmdp.agents."))
                else name.removeprefix("jaxmdp."))
            module = member.__name__ if inspect.ismodule(member) else getattr(
                member, "__module__", "jaxmdp")
            rows.append(f"| [`{shown}`][{name}] | "
                        f"{_summary(member, name, module, documented)} |")
    return "\n".join(rows)


# --- Tables built from the package --------------------------------------------------------

#: What each registered agent is, by name, in the order the tables list them. A name that
#: ``jm.agent_names()`` returns and this table lacks is listed last with no description,
#: and ``tests/test_docs.py`` fails until it has one.
AGENT_DESCRIPTIONS: dict[str, str] = {
    "ucb": "MDP-UCB (Burnetas & Katehakis 1997): r + `kl_ucb`(p̂, v̂, ln t / n)",
    "olp": "OLP (Tewari & Bartlett 2008): r + `l1_ucb`(p̂, v̂, √(2 ln t / n))",
    "dmed": "MDP-DMED (Cowan, Katehakis & Pirutinsky 2019): rates ln t / K̃ − n, K̃ from "
            "`kinf`",
    "ps": "MDP-PS (Cowan, Katehakis & Pirutinsky 2019): r + Q·v̂, Q ~ Dirichlet(N + 1)",
    "ucrl2": "UCRL2 (Jaksch, Ortner & Auer 2010)",
    "kl_ucrl": "KL-UCRL (Filippi, Cappé & Garivier 2010)",
    "ucrl2b": "UCRL2B (Fruit, Pirotta & Lazaric 2020), StatisticalRL's constants",
    "ucrl3": "UCRL3 (Bourel, Maillard & Talebi 2020); `lazy=True`: `UCRL3_lazy`",
    "ucrl_rlexplorer": "UCRL as rlexplorer computes it (RonanFR/UCRL `UcrlMdp`): Bernstein "
                       "boxes, reward bounded by 1, δ_k = 1/√t_k, noise ties",
    "scal": "SCAL (Fruit, Pirotta, Lazaric & Ortner 2018), bias span at most "
            "`span_constraint`",
    "scal_plus": "SCAL+ (Qian, Fruit, Pirotta & Lazaric 2019)",
    "tucrl": "TUCRL (Fruit, Pirotta & Lazaric 2018), for weakly communicating MDPs",
    "tsde": "TSDE (Ouyang, Gagrani, Nayyar & Jain 2017), posterior sampling",
    "psrl": "PSRL as in StatisticalRL (TSDE's posterior, UCRL2's episodes, exact planning)",
    "imed_rl": "IMED-RL (Pesquerel & Maillard 2022)",
    "med_rl": "MED-RL (StatisticalRL `MED_RL.py`: the MED rule on IMED-RL's model)",
    "optimistic_q": "optimistic Q-learning (Wei et al. 2020), model-free, the authors' "
                    "defaults",
}


def _cell(text: str) -> str:
    return str(text).replace("|", r"\|")


def _factory_entry(name: str, documented: set[str]) -> str | None:
    """The documented identifier of the factory registered as ``name``, or None."""
    from jaxmdp.agents import agent_factory

    factory = agent_factory(name)
    factory = getattr(factory, "func", factory)  # functools.partial(paper_agent, "ucb")
    last = getattr(factory, "__name__", "")
    found = sorted(path for path in documented if path.rpartition(".")[2] == last)
    return found[0] if found else None


def agent_rewards(name: str) -> str:
    """An agent's reward setting by default: ``known`` (configured with
    ``known_rewards=True``), ``learned``, or ``learned only`` (no ``known_rewards``
    option)."""
    import jaxmdp as jm
    from jaxmdp.agents import agent_options

    if "known_rewards" not in agent_options(name):
        return "learned only"
    return "known" if getattr(jm.get_agent(name).config, "known_rewards", False) is True \
        else "learned"


def agents_table(*, links: bool = True) -> str:
    """The registered agents: name (linked to its factory's entry), what it is, its reward
    setting by default."""
    import jaxmdp as jm

    names = jm.agent_names()
    ordered = [n for n in AGENT_DESCRIPTIONS if n in names] + \
        sorted(n for n in names if n not in AGENT_DESCRIPTIONS)
    documented = griffe_rst._documented() if links else set()
    rows = ["| name | agent | rewards by default |", "|---|---|---|"]
    for name in ordered:
        entry = _factory_entry(name, documented) if links else None
        shown = f"[`{name}`][{entry}]" if entry else f"`{name}`"
        rows.append(f"| {shown} | {_cell(AGENT_DESCRIPTIONS.get(name, ''))} | "
                    f"{agent_rewards(name)} |")
    return "\n".join(rows)


_SIZES = re.compile(r"^S(?:=|(?=<=))?(?P<S>[^,]*), A=?(?P<A>[^:]*): (?P<what>.*)$")


def _number(value, spec: str) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and math.isinf(value):
        return "∞"
    text = format(value, spec)
    return text.rstrip("0").rstrip(".") if "." in text and spec.endswith("f") else text


def environment_rows() -> list[dict]:
    """One dict per registered environment name (``jm.envs.names()``): ``name``,
    ``instance`` (a family's listed instance, ``jm.envs.PATTERNS``), ``S``, ``A``,
    ``what`` (its description without the sizes) and the numbers ``jaxmdp envs`` prints
    (``gain``, ``lower_bound``, ``diameter``, ``mixing_time``; None where the shipped
    table has no row)."""
    import jaxmdp as jm
    from jaxmdp import _envs_table

    table = _envs_table.load_table()
    out = []
    for name in jm.envs.names():
        description = jm.envs.ENVIRONMENTS[name]
        sizes = _SIZES.match(description)
        instance = jm.envs.PATTERNS.get(name, name)
        numbers = table.get(name) or {}
        row = dict(name=name, instance=instance,
                   S=numbers.get("S", sizes.group("S") if sizes else ""),
                   A=numbers.get("A", sizes.group("A") if sizes else ""),
                   what=sizes.group("what") if sizes else description)
        for key in ("gain", "lower_bound", "diameter", "mixing_time"):
            row[key] = numbers.get(key)
        out.append(row)
    return out


def environments_table(*, links: bool = True) -> str:
    """The registered environments with their exact hardness: optimal gain, C (the
    Burnetas–Katehakis constant, rewards known), diameter D and mixing time t_mix; a
    family's numbers are those of its listed instance."""
    rows = ["| name | S | A | optimal gain | C | D | t_mix | what it is |",
            "|---|---|---|---|---|---|---|---|"]
    for r in environment_rows():
        name = f"`{r['name']}`" if r["instance"] == r["name"] else \
            f"`{r['name']}` (e.g. `{r['instance']}`)"
        rows.append(f"| {name} | {r['S']} | {r['A']} | {_number(r['gain'], '.6f')} | "
                    f"{_number(r['lower_bound'], '.4g')} | {_number(r['diameter'], '.4g')} | "
                    f"{_number(r['mixing_time'], '.0f')} | {_cell(r['what'])} |")
    return "\n".join(rows)


def _subcommands(parser: argparse.ArgumentParser):
    """``(name, help, parser)`` of each subcommand, in order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name) or sub.description or "", sub


def flags(parser: argparse.ArgumentParser) -> list[str]:
    """Every option string of ``parser`` and of its subcommands (``"run --horizon"``),
    help aside."""
    out = []
    for name, _, sub in _subcommands(parser):
        for action in sub._actions:
            if not isinstance(action, argparse._HelpAction):
                out += [f"{name} {option}" for option in action.option_strings]
    return out


def _option(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    takes = action.nargs != 0
    value = ""
    if takes:
        value = (" {" + ",".join(map(str, action.choices)) + "}" if action.choices
                 else f" {action.metavar or action.dest.upper()}")
    return ", ".join(f"`{option}{value}`" for option in action.option_strings)


def _default(action: argparse.Action) -> str:
    if action.required:
        return "required"
    default = action.default
    if default is None or default is False or default == argparse.SUPPRESS or \
            action.nargs == 0:
        return ""
    return f"`{default}`"


def cli_reference(*, links: bool = True) -> str:
    """Markdown for every subcommand of ``jaxmdp``: what it does, its usage line and a
    table of its options (default, help), from the parsers themselves."""
    import os

    from jaxmdp import cli

    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "90"
    try:
        parser = cli._parser()
        out = [f"`jaxmdp` (also `python -m jaxmdp`): {parser.description}", "",
               "```text", parser.format_usage().strip(), "```", "",
               _cell(parser.epilog or "")]
        for name, help_text, sub in _subcommands(parser):
            out += ["", f"## `jaxmdp {name}`", "", _cell(help_text[:1].upper() + help_text[1:])
                    + ".", "", "```text", sub.format_usage().strip(), "```"]
            for group in sub._action_groups:
                actions = [a for a in group._group_actions
                           if not isinstance(a, argparse._HelpAction)]
                if not actions:
                    continue
                if group.title not in ("options", "optional arguments",
                                       "positional arguments"):
                    out += ["", f"**{group.title[:1].upper() + group.title[1:]}.** "
                                + _cell(group.description or "")]
                out += ["", "| option | default | what it does |", "|---|---|---|"]
                out += [f"| {_option(a)} | {_default(a)} | {_cell(a.help or '')} |"
                        for a in actions]
    finally:
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns
    return "\n".join(out)


#: The generated blocks, by the name in ``<!-- generated: NAME -->``.
GENERATED = {"agents": agents_table, "environments": environments_table,
             "cli": cli_reference}
_MARKER = re.compile(r"^<!-- generated: ([\w-]+) -->$", flags=re.MULTILINE)


def generate(markdown: str) -> str:
    """``markdown`` with each line ``<!-- generated: NAME -->`` replaced by its block."""
    return _MARKER.sub(lambda m: GENERATED[m.group(1)](), markdown)


def readme(text: str) -> str:
    """``text`` (the README) with the copy between ``<!-- generated: NAME -->`` and
    ``<!-- end: NAME -->`` rewritten (without the site's links)."""
    def block(m: re.Match) -> str:
        name = m.group(1)
        return (f"<!-- generated: {name} -->\n{GENERATED[name](links=False)}\n"
                f"<!-- end: {name} -->")
    return re.sub(r"<!-- generated: ([\w-]+) -->\n.*?<!-- end: \1 -->", block, text,
                  flags=re.DOTALL)


def on_page_markdown(markdown, page, config, files):
    if "<!-- summary -->" in markdown:
        markdown = markdown.replace("<!-- summary -->", summary_table(markdown))
    return generate(markdown)


def on_post_page(output, page, config):
    # The footer's link to the contributing page, relative to this page.
    target = posixpath.relpath("contributing/", page.url.rpartition("/")[0] or ".")
    return output.replace('href="@CONTRIBUTING@"', f'href="{target}/"')


if __name__ == "__main__":
    # python docs/hooks.py [--check]: rewrite README.md's generated tables (or check them).
    current = README.read_text()
    updated = readme(current)
    if "--check" in sys.argv[1:]:
        sys.exit(0 if updated == current else 1)
    README.write_text(updated)
