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
"""

from __future__ import annotations

import importlib
import inspect
import posixpath
import re
import sys
from pathlib import Path

from mkdocs.structure.files import File

DOCS = Path(__file__).resolve().parent
FIGURES = DOCS.parent / "figures"
MATHJAX_SCRIPT = "javascripts/mathjax/tex-svg.js"

sys.path.insert(0, str(DOCS))
import griffe_rst  # noqa: E402

_ENTRY = re.compile(r"^::: (\S+)((?:\n[ \t]+.*)*)", flags=re.MULTILINE)


def mathjax_file() -> Path:
    """MathJax's single-file TeX-to-SVG build, from the ``mathjax`` package (the
    ``docs`` extra)."""
    import mathjax

    return Path(mathjax.__file__).resolve().parent / "static" / "mathjax" / "es5" / "tex-svg.js"


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


def _summary(obj, module: str, documented: set[str]) -> str:
    """The first sentence of ``obj``'s docstring, as Markdown for one table cell (for a
    constant, its value)."""
    if not (inspect.ismodule(obj) or inspect.isclass(obj) or callable(obj)):
        value = repr(obj)
        return f"`{value if len(value) <= 60 else value[:57] + '...'}`".replace("|", r"\|")
    doc = inspect.getdoc(obj) or ""
    paragraph = " ".join(doc.split("\n\n")[0].split())
    end = re.search(r"[.:](?=\s+[A-Z`*])", paragraph)
    if end and end.end() < len(paragraph):
        paragraph = paragraph[:end.start()] + "."
    return griffe_rst.convert(paragraph, module, documented).replace("|", r"\|")


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
            rows.append(f"| [`{shown}`][{name}] | {_summary(member, module, documented)} |")
    return "\n".join(rows)


def on_page_markdown(markdown, page, config, files):
    if "<!-- summary -->" in markdown:
        markdown = markdown.replace("<!-- summary -->", summary_table(markdown))
    return markdown


def on_post_page(output, page, config):
    # The footer's link to the contributing page, relative to this page.
    target = posixpath.relpath("contributing/", page.url.rpartition("/")[0] or ".")
    return output.replace('href="@CONTRIBUTING@"', f'href="{target}/"')
