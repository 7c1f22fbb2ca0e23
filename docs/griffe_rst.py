"""A griffe extension for the docs site: the reStructuredText in jaxmdp's docstrings, as
Markdown that mkdocstrings renders.

jaxmdp's docstrings follow optax's template (Google sections) and write maths and
cross-references the Sphinx way. Before mkdocstrings parses a docstring, this extension
rewrites, outside ``>>>`` examples:

* ``:math:`x``` as ``\\(x\\)`` and a ``.. math::`` directive as a ``\\[ ... \\]`` block
  (rendered by MathJax through ``pymdownx.arithmatex``); a directive whose lines are
  aligned (``&``) or broken (``\\\\``) outside an environment is wrapped in
  ``\\begin{aligned} ... \\end{aligned}``, as Sphinx's ``.. math::`` does;
* ``:func:`~jaxmdp.kl_ucb``` (and ``:class:``, ``:meth:``, ``:mod:``, ``:data:``,
  ``:attr:``) as code, linked to the API page when the name is documented there;
* a literal block introduced by ``::`` as a fenced code block;
* a simple table (columns ruled by ``=====  ===``) as a Markdown table;
* an ``Example:`` section title as ``Examples:``, the title griffe renders as examples;
* an ``Args:`` item that documents several parameters at once (``tol, max_steps: ...``)
  as one item per parameter.

A function whose decorator gives it another signature (a ``jax.jit`` of an inner
function) is given the signature of the object Python imports.

Configured in ``mkdocs.yml`` under the python handler's ``extensions``.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import griffe

_API = Path(__file__).resolve().parent / "api"
_ROLE = re.compile(r":(func|class|meth|mod|data|attr|obj|exc):`(~?)([^`]+)`")
_MATH_ROLE = re.compile(r":math:`([^`]+)`")
_MATH_DIRECTIVE = re.compile(r"^(\s*)\.\. math::\s*(.*)$")
_RULE = re.compile(r"^\s*=+( +=+)+\s*$")


_ENTRY = re.compile(r"^::: (\S+)((?:\n[ \t]+.*)*)", flags=re.MULTILINE)


def _documented() -> set[str]:
    """The identifiers rendered by ``::: name`` on the API pages."""
    names = set()
    for page in _API.glob("*.md"):
        names.update(m.group(1) for m in _ENTRY.finditer(page.read_text()))
    return names


def _members_hidden() -> set[str]:
    """The identifiers rendered without their members (``members: false``)."""
    names = set()
    for page in _API.glob("*.md"):
        names.update(m.group(1) for m in _ENTRY.finditer(page.read_text())
                     if "members: false" in m.group(2))
    return names


_HIDDEN = _members_hidden()


class RstToMarkdown(griffe.Extension):
    """Rewrites every loaded docstring from reStructuredText to Markdown."""

    def __init__(self) -> None:
        self.documented = _documented()

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        # ``from jaxmdp.simulate import simulate`` in a package's ``__init__`` makes the
        # name ``jaxmdp.simulate`` the function, but griffe keeps the submodule under it:
        # point such names at the imported object, as Python does. A name imported from
        # a subpackage that imports it in turn (``jaxmdp.policy_iteration`` from
        # ``jaxmdp.planning``, whose ``policy_iteration`` is also a submodule) is followed
        # to where it is defined.
        for name, target in pkg.imports.items():
            member = pkg.members.get(name)
            if member is not None and member.is_module and target != member.path:
                final = _defined_at(pkg, target)
                pkg.set_member(name, griffe.Alias(name, final, parent=pkg))

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.is_function and obj.decorators:
            _runtime_signature(obj)
        if obj.docstring is None and obj.is_attribute and obj.lineno and obj.filepath:
            # A module constant documented the Sphinx way, by ``#:`` lines above it.
            comment = doc_comment(Path(obj.filepath).read_text().splitlines(), obj.lineno)
            if comment:
                obj.docstring = griffe.Docstring(comment, parent=obj)
        if obj.docstring is not None:
            module = obj.module.path if not obj.is_module else obj.path
            obj.docstring.value = convert(obj.docstring.value, module, self.documented)


def _runtime_signature(obj: griffe.Function) -> None:
    """Gives a decorated function the parameters of the object Python imports, when they
    differ from those of its ``def`` (a decorator that builds another function)."""
    import importlib
    import inspect

    try:
        runtime = getattr(importlib.import_module(obj.module.path), obj.name)
        signature = inspect.signature(runtime)
    except (ImportError, AttributeError, TypeError, ValueError):
        return
    if [p.name for p in obj.parameters] == list(signature.parameters):
        return
    kinds = {inspect.Parameter.POSITIONAL_ONLY: griffe.ParameterKind.positional_only,
             inspect.Parameter.POSITIONAL_OR_KEYWORD: griffe.ParameterKind.positional_or_keyword,
             inspect.Parameter.VAR_POSITIONAL: griffe.ParameterKind.var_positional,
             inspect.Parameter.KEYWORD_ONLY: griffe.ParameterKind.keyword_only,
             inspect.Parameter.VAR_KEYWORD: griffe.ParameterKind.var_keyword}
    empty = inspect.Parameter.empty
    obj.parameters = griffe.Parameters(*(
        griffe.Parameter(
            name, kind=kinds[p.kind],
            annotation=None if p.annotation is empty else (
                p.annotation if isinstance(p.annotation, str)
                else inspect.formatannotation(p.annotation)),
            default=None if p.default is empty else repr(p.default))
        for name, p in signature.parameters.items()))


_SECTION = re.compile(r"^(\s*)(Args|Arguments|Parameters|Attributes):\s*$")
_GROUPED = re.compile(r"^(\s*)(\w+(?:,\s*\w+)+):(.*)$")


def _split_grouped_items(lines: list[str]) -> list[str]:
    """``lines`` with each ``Args:`` item that names several parameters (``a, b: text``,
    the names possibly wrapped over lines) written as one item per name."""
    out: list[str] = []
    i, section, items = 0, None, None
    while i < len(lines):
        line = lines[i]
        heading = _SECTION.match(line)
        if heading:
            section, items = len(heading.group(1)), None
            out.append(line)
            i += 1
            continue
        if section is not None and line.strip():
            if _indent(line) <= section:
                section = None
            elif items is None:
                items = _indent(line)
        grouped = None
        if section is not None and line.strip() and _indent(line) == items:
            if re.match(r"^\s*\w+(?:,\s*\w+)*,\s*$", line):
                # The names wrap: join the lines up to the one holding the ":".
                j, joined = i, line.rstrip()
                while ":" not in joined and j + 1 < len(lines):
                    j += 1
                    joined += " " + lines[j].strip()
                if _GROUPED.match(joined):
                    line, i = joined, j
            grouped = _GROUPED.match(line)
        if grouped:
            pad, names, text = grouped.groups()
            rest = []
            while i + 1 < len(lines) and lines[i + 1].strip() and \
                    _indent(lines[i + 1]) > len(pad):
                i += 1
                rest.append(lines[i])
            for name in re.split(r",\s*", names):
                out += [f"{pad}{name}:{text}", *rest]
        else:
            out.append(line)
        i += 1
    return out


def _defined_at(pkg: griffe.Module, path: str, hops: int = 0) -> str:
    """The path where the object imported as ``path`` is defined, following the imports
    of the packages on the way (``jaxmdp.planning.policy_iteration`` is imported by
    ``jaxmdp.planning`` from ``jaxmdp.planning.policy_iteration.policy_iteration``)."""
    parts = path.split(".")
    if parts[0] != pkg.name or hops > 10:
        return path
    owner = pkg
    for part in parts[1:-1]:
        owner = owner.members.get(part)
        if owner is None or owner.is_alias or not owner.is_module:
            return path
    target = owner.imports.get(parts[-1])
    if target and target != path:
        return _defined_at(pkg, target, hops + 1)
    return path


def doc_comment(lines: list[str], lineno: int) -> str:
    """The ``#:`` comment right above line ``lineno`` (1-based) of a source file, without
    its markers: the Sphinx way of documenting a module constant (griffe reads only
    docstrings)."""
    comment: list[str] = []
    i = lineno - 2
    while i >= 0 and lines[i].lstrip().startswith("#:"):
        comment.insert(0, lines[i].lstrip()[2:].strip())
        i -= 1
    return " ".join(comment)


# Environments inside which ``&`` aligns and ``\\\\`` breaks a line.
_ALIGNED = ("aligned", "align", "align\\*", "alignat", "alignedat", "array", "bmatrix",
            "cases", "eqnarray", "gathered", "matrix", "pmatrix", "split", "vmatrix")
_ENVIRONMENT = re.compile(r"\\begin\{(" + "|".join(_ALIGNED) + r")\}.*?\\end\{\1\}",
                          flags=re.DOTALL)
_ALIGNMENT = re.compile(r"(?<!\\)&|\\\\")


def misplaced_alignment(formula: str) -> bool:
    """Whether ``formula`` (TeX) has an alignment ``&`` or a line break ``\\\\`` outside an
    aligned environment: MathJax renders such a formula as a red "Misplaced &"."""
    outside, previous = formula, None
    while outside != previous:
        previous, outside = outside, _ENVIRONMENT.sub("", outside)
    return _ALIGNMENT.search(outside) is not None


_FORMULA = re.compile(r"\\\((.*?)\\\)|\\\[(.*?)\\\]", flags=re.DOTALL)


def formulas(markdown: str) -> list[str]:
    """The TeX of every ``\\( ... \\)`` and ``\\[ ... \\]`` span of ``markdown``."""
    return [m.group(1) if m.group(1) is not None else m.group(2)
            for m in _FORMULA.finditer(markdown)]


def _target(name: str, module: str, documented: set[str]) -> str | None:
    """The documented identifier a role's ``name`` refers to, or None."""
    name = name.rstrip("()")
    last = name.split(".")[-1]
    for candidate in (name, f"jaxmdp.{name}", f"{module}.{name}", f"jaxmdp.{last}"):
        parent = candidate.rpartition(".")[0]
        if candidate in documented:
            return candidate
        # Members of a documented class or module (methods, envs functions) are rendered
        # on its page too.
        if (parent in documented and parent != "jaxmdp" and parent not in _HIDDEN
                and not last.startswith("_")):
            return candidate
    return None


def _role(match: re.Match, module: str, documented: set[str]) -> str:
    kind, tilde, name = match.groups()
    shown = name.split(".")[-1] if tilde else name
    if kind in ("func", "meth") and not shown.endswith(")"):
        shown += "()"
    # Module-level constants have no docstring and so no entry to link to.
    target = None if kind == "data" else _target(name, module, documented)
    return f"[`{shown}`][{target}]" if target else f"`{shown}`"


def _inline(line: str, module: str, documented: set[str]) -> str:
    line = _MATH_ROLE.sub(lambda m: "\\(" + m.group(1) + "\\)", line)
    return _ROLE.sub(lambda m: _role(m, module, documented), line)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _block(lines: list[str], start: int, base: int) -> tuple[list[str], int]:
    """The indented block after line ``start - 1`` (deeper than ``base``), dedented, and
    the index of the first line after it."""
    end = start
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > base):
        end += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return textwrap.dedent("\n".join(lines[start:end])).strip("\n").split("\n"), end


def _table(lines: list[str], start: int) -> tuple[list[str], int]:
    """A simple RST table starting at the rule ``lines[start]``, as Markdown rows."""
    rule = lines[start]
    pad = _indent(rule)
    spans = [m.span() for m in re.finditer(r"=+", rule)]
    rows, rules, i = [], 0, start
    while i < len(lines) and lines[i].strip():
        if _RULE.match(lines[i]):
            rules += 1
            if rules == 2:
                rows.append(None)
        else:
            starts = [a for a, _ in spans]
            ends = [*starts[1:], None]
            rows.append([lines[i][a:b].strip().replace("|", r"\|")
                         for a, b in zip(starts, ends, strict=True)])
        i += 1
    out = []
    for row in rows:
        if row is None:
            out.append(" " * pad + "|" + "|".join("---" for _ in spans) + "|")
        else:
            out.append(" " * pad + "| " + " | ".join(row) + " |")
    return out, i


def convert(text: str, module: str = "jaxmdp", documented: set[str] | None = None) -> str:
    """``text`` (a docstring) with its reStructuredText rewritten as Markdown."""
    documented = documented or set()
    lines = _split_grouped_items(text.split("\n"))
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        pad = " " * _indent(line)
        if stripped == "Example:":
            # optax's template says "Example:"; griffe's Google parser renders the
            # examples (``>>>`` lines as code) only under "Examples:".
            out.append(pad + "Examples:")
            i += 1
            continue
        if stripped.startswith(">>>") or stripped.startswith("..."):
            out.append(line)
            i += 1
            continue
        directive = _MATH_DIRECTIVE.match(line)
        if directive:
            body, i = _block(lines, i + 1, len(directive.group(1)))
            formula = "\n".join(part for part in [directive.group(2), *body] if part.strip())
            if misplaced_alignment(formula):
                formula = "\\begin{aligned}\n" + formula + "\n\\end{aligned}"
            out += ["", pad + r"\[", *(pad + part for part in formula.split("\n")),
                    pad + r"\]", ""]
            continue
        if _RULE.match(line) and i + 1 < len(lines) and lines[i + 1].strip():
            table, i = _table(lines, i)
            out += ["", *table, ""]
            continue
        if stripped.endswith("::") and not stripped.startswith(".."):
            intro = _inline(line.rstrip()[:-2].rstrip(), module, documented)
            if intro.strip():
                out.append(intro + ":")
            start = i + 1
            while start < len(lines) and not lines[start].strip():
                start += 1
            body, i = _block(lines, start, _indent(line))
            code = "\n".join(body)
            try:
                ast.parse(code)
                language = "python"
            except SyntaxError:
                language = "text"
            out += ["", pad + "```" + language, *(pad + part for part in body), pad + "```",
                    ""]
            continue
        out.append(_inline(line, module, documented))
        i += 1
    return "\n".join(out)
