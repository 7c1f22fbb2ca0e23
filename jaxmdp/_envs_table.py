"""The table ``jaxmdp envs`` prints, computed once and shipped in ``envs_table.json``.

Each row is one named environment (a pattern name stands for one instance of it, see
:data:`jaxmdp.envs.PATTERNS`) and each column one number about it, all computed by one function,
:func:`measures`, with jaxmdp's float64 solvers. Computing them takes one compiled solver
program per environment shape (about a minute on a slow 2-core machine), so the numbers
are computed once by ``python -m jaxmdp._envs_table`` (which rewrites
``jaxmdp/envs_table.json``) and the listing only reads them: it compiles nothing. A test
recomputes every row with :func:`measures` and compares it with the file at the stated
tolerances, so a change to an environment or to a solver that moves a number fails until
the file is regenerated.

To add a column: add a :class:`Column` to :data:`COLUMNS`, compute its value in
:func:`measures` under the same key, and run ``python -m jaxmdp._envs_table``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from importlib import resources
from pathlib import Path
from typing import NamedTuple

#: The file the listing reads, next to this module.
TABLE_FILE = "envs_table.json"



class Column(NamedTuple):
    """One column of the listing.

    Attributes:
        key: the key of the value in :func:`measures` and in the JSON rows.
        title: the column's header.
        width: the printed width.
        spec: the format spec of a value (``"d"``, ``".6f"``, ``".4g"``).
        description: what the number is.
        rtol: relative tolerance of the check against a recomputation (0: exact).
        atol: absolute tolerance of that check.
    """

    key: str
    title: str
    width: int
    spec: str
    description: str
    rtol: float = 0.0
    atol: float = 0.0


#: The columns, in printed order. Values are floats unless the spec is ``"d"``.
COLUMNS: tuple[Column, ...] = (
    Column("S", "S", 4, "d", "number of states"),
    Column("A", "A", 3, "d", "number of actions"),
    Column("gain", "gain", 10, ".6f", "optimal gain (jaxmdp.solve_average_reward)",
           rtol=1e-9, atol=1e-12),
    Column("lower_bound", "lower bound C", 14, ".4g",
           "regret lower-bound constant, rewards known (jaxmdp.regret_lower_bound)",
           rtol=1e-8, atol=1e-12),
    Column("diameter", "diameter", 9, ".4g",
           "diameter D, max expected hitting time (jaxmdp.hardness; inf: not communicating)",
           rtol=1e-8, atol=1e-12),
    Column("bias_span", "bias span", 10, ".4g", "span of the optimal bias (jaxmdp.hardness)",
           rtol=1e-8, atol=1e-12),
    Column("mixing_time", "t_mix", 6, ".0f",
           "mixing time t_mix(1/4) of the optimal policy's chain (jaxmdp.hardness; inf: "
           "periodic or beyond the cap)"),
    Column("min_gap", "min gap", 9, ".4g",
           "smallest positive gap Delta(x, a) (jaxmdp.hardness; inf: every action optimal)",
           rtol=1e-7, atol=1e-12),
)


def instance(name: str) -> str:
    """The environment name listed for ``name`` (a pattern's instance, else ``name``).

    Example:
        >>> from jaxmdp import _envs_table
        >>> _envs_table.instance("garnet-S-A-b"), _envs_table.instance("riverswim-6")
        ('garnet-100-4-5', 'riverswim-6')
    """
    from jaxmdp.envs import PATTERNS

    return PATTERNS.get(name, name)


def measures(mdp) -> dict[str, int | float]:
    """Every column's value for one MDP, with jaxmdp's solvers.

    Run under float64 (``jax_enable_x64``) for the shipped table's precision.

    Args:
        mdp: a :class:`jaxmdp.MDP` with ``S`` states and ``A`` actions.

    Returns:
        A dict with one entry per :data:`COLUMNS` key: ``S`` and ``A`` (ints), and the
        fields of :func:`jaxmdp.hardness` (one compiled program per ``S``, ``A``):
        ``gain``, the optimal gain (:func:`jaxmdp.solve_average_reward`),
        ``lower_bound``, the Burnetas–Katehakis constant ``sum Delta / K`` for learners
        told the mean rewards (:func:`jaxmdp.regret_lower_bound`), ``diameter``,
        ``bias_span``, ``mixing_time`` and ``min_gap`` (floats; ``inf`` where the
        measure is infinite).

    Example:
        >>> import jaxmdp as jm
        >>> from jaxmdp import _envs_table
        >>> row = _envs_table.measures(jm.envs.make("riverswim-6"))
        >>> row["S"], row["A"], round(row["gain"], 4)
        (6, 2, 0.875)
    """
    from jaxmdp.analysis.hardness import hardness

    measured = hardness(mdp)
    return {"S": int(mdp.num_states), "A": int(mdp.num_actions),
            **{key: float(getattr(measured, key)) for key in
               ("gain", "lower_bound", "diameter", "bias_span", "mixing_time", "min_gap")}}


def compute_row(name: str) -> dict[str, int | float | str]:
    """The row of one name of :data:`jaxmdp.envs.ENVIRONMENTS`: its instance and
    :func:`measures` of it.

    Example:
        >>> from jaxmdp import _envs_table
        >>> _envs_table.compute_row("paper-mdp")["instance"]
        'paper-mdp'
    """
    from jaxmdp import envs

    listed = instance(name)
    return {"instance": listed, **measures(envs.make(listed))}


def compute_table(names=None) -> dict:
    """The whole table: ``{"columns": [...], "rows": {name: row}}`` over ``names``
    (default every name of :data:`jaxmdp.envs.ENVIRONMENTS`)."""
    from jaxmdp import envs

    names = envs.names() if names is None else list(names)
    return {"generated_by": "python -m jaxmdp._envs_table (float64)",
            "columns": [column.key for column in COLUMNS],
            "rows": {name: compute_row(name) for name in names}}


def table_path() -> Path:
    """The shipped table's path (``jaxmdp/envs_table.json``)."""
    return Path(str(resources.files("jaxmdp").joinpath(TABLE_FILE)))


def load_table(path: str | Path | None = None) -> dict[str, dict]:
    """The shipped rows, ``{name: row}``; empty when the file is missing.

    Args:
        path: the JSON file; default :func:`table_path`.

    Returns:
        The rows by environment name.

    Example:
        >>> from jaxmdp import _envs_table
        >>> _envs_table.load_table()["riverswim-6"]["S"]
        6
    """
    path = Path(path) if path is not None else table_path()
    if not path.is_file():
        return {}
    return json.loads(path.read_text())["rows"]


def rows(names, table: dict[str, dict] | None = None) -> list[dict]:
    """The rows of ``names``: from the shipped table, or computed with :func:`compute_row`
    for a name the table lacks or a row without every column (that compiles the
    solvers; the shipped table has every name).

    Example:
        >>> from jaxmdp import _envs_table
        >>> [row["instance"] for row in _envs_table.rows(["riverswim-6", "random-S-A"])]
        ['riverswim-6', 'random-10-4']
    """
    table = load_table() if table is None else table
    out = []
    for name in names:
        row = table.get(name)
        if (row is None or row.get("instance") != instance(name)
                or any(column.key not in row for column in COLUMNS)):
            row = compute_row(name)
        out.append(row)
    return out


def format_header() -> str:
    """The listing's header line (name and the columns; each row's description is on
    the line under it)."""
    cells = "".join(f" {column.title:>{column.width}s}" for column in COLUMNS)
    return f"{'name':22s}{cells}"


def format_row(row: dict, description: str) -> str:
    """One entry of the listing: the numbers on one line (``inf`` and ``nan`` printed as
    such), the description indented on the next."""
    cells = []
    for column in COLUMNS:
        value = row[column.key]
        if column.spec != "d" and isinstance(value, float) and math.isnan(value):
            cells.append(f" {'nan':>{column.width}s}")
        else:
            cells.append(f" {value:{column.width}{column.spec}}")
    return f"{row['instance']:22s}{''.join(cells)}\n    {description}"


def main(argv=None) -> int:
    """``python -m jaxmdp._envs_table [--out PATH]``: recompute and write the table."""
    parser = argparse.ArgumentParser(description="Recompute jaxmdp/envs_table.json with "
                                                 "jaxmdp's float64 solvers.")
    parser.add_argument("--out", type=Path, default=None,
                        help="where to write (default: the package's envs_table.json)")
    args = parser.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    from jaxmdp._cache import enable_compilation_cache

    enable_compilation_cache()
    table = compute_table()
    out = args.out if args.out is not None else table_path()
    out.write_text(json.dumps(table, indent=1) + "\n")
    print(f"wrote {len(table['rows'])} rows to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
