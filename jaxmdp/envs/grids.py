r"""Grid worlds: layouts with walls and slip, open rooms of any size, FrozenLake.

Each function returns a validated :class:`~jaxmdp.MDP` of mean rewards; its docstring
gives the source and every number.
"""

from __future__ import annotations

import numpy as np

from jaxmdp.envs._common import as_mdp, check_int, check_probability
from jaxmdp.mdp import MDP

__all__ = ["frozen_lake", "grid_2_room", "grid_4_room", "grid_world", "open_grid"]


# --------------------------------------------------------------------------------------
# Grid worlds.

# Grid actions 0 = up, 1 = down, 2 = left, 3 = right (the source's order): (row, column)
# step of each, and the two perpendicular actions of each.
_MOVES = ((-1, 0), (1, 0), (0, -1), (0, 1))
_PERPENDICULAR = ((2, 3), (2, 3), (0, 1), (0, 1))

# StatisticalRL twoRoomMap(9, 11) and fourRoomMap(7, 7) with start [1, 1] and goal
# [7, 9] / [5, 5] ('#' wall, 'S' start, 'G' goal, '.' free).
_TWO_ROOM = (
    "###########",
    "#S........#",
    "#.........#",
    "#.........#",
    "#####.#####",
    "#.........#",
    "#.........#",
    "#........G#",
    "###########",
)
_FOUR_ROOM = (
    "#######",
    "#S....#",
    "#..#..#",
    "#.##.##",
    "#.....#",
    "#..#.G#",
    "#######",
)


def grid_world(layout, *, slip: float = 0.1, goal_reward: float = 0.99,
               dtype=None) -> MDP:
    r"""A grid world with walls, slippery moves and a goal that returns to the start.

    ``layout`` is a sequence of equal-length strings: ``#`` a wall, ``.`` a free cell,
    ``S`` the start (one) and ``G`` the goal (one). States are the non-wall cells: the
    start is state 0 and the others follow in row-major order (the source numbers all
    free cells in row-major order, which agrees whenever the start comes first, as in
    both published maps). Actions ``0 = up, 1 = down, 2 = left, 3 = right``. Outside the
    goal, an action moves in its direction w.p. :math:`1 - 3\,\mathrm{slip}` (0.7), in
    each perpendicular direction w.p. ``slip`` (0.1), never backwards, and stays w.p.
    ``slip`` (0.1); a move into a wall stays instead. Rewards are 0 except in the goal,
    where every action pays ``goal_reward`` (0.99) and moves to the start w.p. 1.

    This is the ``GridWorld`` of the StatisticalRL code
    (``StatisticalRL/environments``,
    ``src/statisticalrl_environments/MDPs_discrete/envs/GridWorld/gridworld.py``, its
    ``massmap`` with ``slippery=0.1``, ``rewardStd=0``, a single start state).

    Args:
        layout: the map, a sequence of strings (rows, top first).
        slip: probability of each perpendicular move and of staying, in ``[0, 1/3]``.
        goal_reward: mean reward of every action in the goal.
        dtype: float dtype; default float (float64 under x64).

    Returns:
        The :class:`~jaxmdp.MDP`, ``P`` of shape ``[S, 4, S]`` with ``S`` the number of
        non-wall cells, all actions admissible.
    """
    rows = [str(row) for row in layout]
    if not rows or len({len(row) for row in rows}) != 1:
        raise ValueError(f"layout must be non-empty rows of equal length, got {rows!r}")
    bad = set("".join(rows)) - set("#.SG")
    if bad:
        raise ValueError(f"layout may only contain '#', '.', 'S', 'G', got {sorted(bad)}")
    for mark in "SG":
        count = "".join(rows).count(mark)
        if count != 1:
            raise ValueError(f"layout must contain exactly one {mark!r}, got {count}")
    if isinstance(slip, bool) or not isinstance(slip, (int, float)) or not (
        0.0 <= slip <= 1.0 / 3.0
    ):
        raise ValueError(f"slip must be in [0, 1/3], got {slip!r}")

    cells = [(i, j) for i, row in enumerate(rows) for j, c in enumerate(row) if c != "#"]
    start = next(cell for cell in cells if rows[cell[0]][cell[1]] == "S")
    goal = next(cell for cell in cells if rows[cell[0]][cell[1]] == "G")
    cells.remove(start)
    cells.insert(0, start)
    index = {cell: k for k, cell in enumerate(cells)}

    def target(cell, action):
        i, j = cell[0] + _MOVES[action][0], cell[1] + _MOVES[action][1]
        inside = 0 <= i < len(rows) and 0 <= j < len(rows[0])
        return index[(i, j)] if inside and rows[i][j] != "#" else index[cell]

    S = len(cells)
    P = np.zeros((S, 4, S))
    R = np.zeros((S, 4))
    for cell, s in index.items():
        for a in range(4):
            if cell == goal:
                P[s, a, 0] = 1.0
                R[s, a] = goal_reward
                continue
            P[s, a, target(cell, a)] += 1.0 - 3.0 * slip
            for side in _PERPENDICULAR[a]:
                P[s, a, target(cell, side)] += slip
            P[s, a, s] += slip
    return as_mdp(P, R, dtype)


def grid_2_room(*, dtype=None) -> MDP:
    r"""The StatisticalRL ``grid-2-room``: 55 states, 4 actions.

    A 9 x 11 grid (``twoRoomMap(9, 11)``: walls on the border and along row 4 except a
    door at column 5), start ``[1, 1]`` (state 0, top-left), goal ``[7, 9]`` (state 54,
    bottom-right)::

        ###########
        #S........#
        #.........#
        #.........#
        #####.#####
        #.........#
        #.........#
        #........G#
        ###########

    Moves as in :func:`grid_world`: intended 0.7, each perpendicular 0.1, stay 0.1, walls
    block; the goal pays 0.99 under every action and returns to the start. Source:
    ``StatisticalRL/environments``, ``src/statisticalrl_environments/register.py``
    (``"grid-2-room"``: ``sizeX=9, sizeY=11, map_name="2-room", rewardStd=0.0,
    initialSingleStateDistribution=True, start=[1,1], goal=[7,9]``) and
    ``MDPs_discrete/envs/GridWorld/gridworld.py`` (``GridWorld``, ``twoRoomMap``); its
    state numbering (row-major over free cells) is the one used here.

    Args:
        dtype: float dtype; default float (float64 under x64).

    Returns:
        The :class:`~jaxmdp.MDP`, ``P`` of shape ``[55, 4, 55]``.
    """
    return grid_world(_TWO_ROOM, dtype=dtype)


def grid_4_room(*, dtype=None) -> MDP:
    r"""The StatisticalRL ``grid-4-room``: 20 states, 4 actions.

    A 7 x 7 grid (``fourRoomMap(7, 7)``: walls on the border, row 3 and column 3, with
    doors at ``[3, 1]``, ``[3, 4]``, ``[1, 3]`` and ``[4, 3]``), four 2 x 2 rooms, start
    ``[1, 1]`` (state 0), goal ``[5, 5]`` (state 19)::

        #######
        #S....#
        #..#..#
        #.##.##
        #.....#
        #..#.G#
        #######

    Moves, goal reward and state numbering as in :func:`grid_2_room`. Source: the same
    files, with ``"grid-4-room"``: ``sizeX=7, sizeY=7, map_name="4-room", rewardStd=0.0,
    initialSingleStateDistribution=True, start=[1,1], goal=[5,5]`` and ``fourRoomMap``.

    Args:
        dtype: float dtype; default float (float64 under x64).

    Returns:
        The :class:`~jaxmdp.MDP`, ``P`` of shape ``[20, 4, 20]``.
    """
    return grid_world(_FOUR_ROOM, dtype=dtype)




def open_grid(rows: int, cols: int, *, slip: float = 0.1, goal_reward: float = 0.99,
              dtype=None) -> MDP:
    r"""An open ``rows x cols`` room: :func:`grid_world` without inner walls.

    The start is the top-left cell (state 0), the goal the bottom-right cell; states are
    the ``rows * cols`` cells in row-major order. Dynamics and rewards are those of
    :func:`grid_world` (the StatisticalRL ``GridWorld``): an action moves in its
    direction w.p. :math:`1 - 3\,\mathrm{slip}`, in each perpendicular direction w.p.
    ``slip``, stays w.p. ``slip`` (0.1 each by default, the source's ``slippery=0.1``);
    the border blocks; every action in the goal pays ``goal_reward`` (0.99) and returns
    to the start. Name: ``grid-R-C`` (``jm.envs.make("grid-5-8", slip=0.2)``).

    Args:
        rows: number of rows, a Python int ``>= 1``.
        cols: number of columns, a Python int ``>= 1``; ``rows * cols >= 2``.
        slip: probability of each perpendicular move and of staying, in ``[0, 1/3]``.
        goal_reward: mean reward of every action in the goal.
        dtype: float dtype; default float (float64 under x64).

    Returns:
        The :class:`~jaxmdp.MDP`, ``P`` of shape ``[rows * cols, 4, rows * cols]``.

    Raises:
        ValueError: naming ``rows``, ``cols`` or ``slip`` when out of range.

    Example:
        >>> import jaxmdp as jm
        >>> mdp = jm.envs.open_grid(3, 4, slip=0.05)
        >>> mdp.P.shape, round(float(mdp.P[0, 3, 1]), 6)
        ((12, 4, 12), 0.85)
    """
    rows = check_int("rows", rows, 1)
    cols = check_int("cols", cols, 1)
    if rows * cols < 2:
        raise ValueError(f"rows * cols must be >= 2 (a start and a goal), got rows={rows}, "
                         f"cols={cols}")
    inner = [["."] * cols for _ in range(rows)]
    inner[0][0] = "S"
    inner[-1][-1] = "G"
    layout = ["#" * (cols + 2)] + ["#" + "".join(r) + "#" for r in inner] + ["#" * (cols + 2)]
    return grid_world(layout, slip=slip, goal_reward=goal_reward, dtype=dtype)


# FrozenLake actions as Colosseum's FrozenLakeAction (frozen_lake/base.py, lines 41-51):
# 0 = up, 1 = right, 2 = down, 3 = left, as (row, column) steps; a +- 1 (mod 4) are the
# perpendicular directions.
_LAKE_MOVES = ((-1, 0), (0, 1), (1, 0), (0, -1))
_MAX_MAP_DRAWS = 10_000


def _lake_map(size: int, p_frozen: float, seed: int) -> list[str]:
    """A random ``size x size`` lake with a frozen path from ``S`` to ``G`` (gym's rule)."""
    rng = np.random.default_rng(seed)
    for _ in range(_MAX_MAP_DRAWS):
        board = np.where(rng.random((size, size)) < p_frozen, "F", "H")
        board[0, 0], board[-1, -1] = "S", "G"
        seen, stack = {(0, 0)}, [(0, 0)]
        while stack:
            i, j = stack.pop()
            for di, dj in _LAKE_MOVES:
                cell = (i + di, j + dj)
                if (0 <= cell[0] < size and 0 <= cell[1] < size and cell not in seen
                        and board[cell] != "H"):
                    seen.add(cell)
                    stack.append(cell)
        if (size - 1, size - 1) in seen:
            return ["".join(row) for row in board]
    raise ValueError(f"p_frozen={p_frozen} gave no lake with a path from start to goal in "
                     f"{_MAX_MAP_DRAWS} draws of a {size} x {size} map; use a larger p_frozen")


def frozen_lake(size: int = 4, *, p_frozen: float = 0.8, slip: float = 0.25, seed: int = 0,
                layout=None, dtype=None) -> MDP:
    r"""A continuing, slippery FrozenLake, following Colosseum's ``FrozenLakeContinuous``.

    A ``size x size`` lake of frozen cells ``F``, holes ``H``, the start ``S`` (top
    left) and the goal ``G`` (bottom right). Actions ``0 = up, 1 = right, 2 = down,
    3 = left``. From a frozen cell an action moves in its direction w.p.
    :math:`1 - 2\,\mathrm{slip}` (0.5) and in each perpendicular direction (``a - 1``
    and ``a + 1`` mod 4) w.p. ``slip`` (0.25); a move off the lake stays in place and a
    move into a hole returns to the start. Every action in the goal returns to the start
    w.p. 1. The reward is 1 for entering the goal and 0 otherwise, so ``R[x, a]`` is the
    probability that ``a`` enters the goal from ``x``. States are the non-hole cells
    reachable from the start (the start is state 0, the others in row-major order);
    holes are never occupied.

    Without ``layout`` the lake is random, drawn by ``seed`` as gym's
    ``generate_random_map(size, p_frozen)`` does (each cell frozen w.p. ``p_frozen``,
    redrawn until a frozen path joins start and goal; Colosseum builds its lakes with
    that function, ``frozen_lake/base.py`` lines 285-292), with NumPy's
    ``default_rng(seed)``, so the maps are not gym's for the same seed. Name:
    ``frozenlake-N`` (``jm.envs.make("frozenlake-8", seed=3)``).

    Source: Colosseum (Conserva & Rauber 2022; files at commit 981b344),
    ``colosseum/mdp/frozen_lake/base.py``: ``_next_positions`` (lines 145-161:
    clamped moves, holes and the goal return to the start),
    ``_get_next_nodes_parameters`` (lines 163-172: 0.5 intended, 0.25 to each of
    ``a - 1`` and ``a + 1``), ``_get_reward_distribution`` (lines 174-179: the goal
    reward, 1 in the deterministic case, for a next cell ``G``) and start ``(0, 0)``
    (line 209). Returning to the start from holes and the goal is what makes it
    continuing (Colosseum's ``FrozenLakeContinuous``); here the directions are
    geometric on the printed map (Colosseum's left/right act on its transposed,
    flipped display), the rewards are the means, and ``slip`` generalises the fixed
    0.25 (``slip = 0`` is Colosseum's non-slippery lake).

    Args:
        size: side of the lake, a Python int ``>= 2`` (ignored with ``layout``).
        p_frozen: probability that a random cell is frozen, in ``(0, 1]``.
        slip: probability of each perpendicular move, in ``[0, 1/2]``.
        seed: the map's seed, a Python int (ignored with ``layout``).
        layout: an explicit lake, a sequence of equal-length strings over ``SFHG`` with
            one ``S`` and one ``G``; ``None`` draws one.
        dtype: float dtype; default float (float64 under x64).

    Returns:
        The :class:`~jaxmdp.MDP`, ``P`` of shape ``[S, 4, S]``.

    Raises:
        ValueError: naming ``size``, ``p_frozen``, ``slip``, ``seed`` or ``layout``
            when invalid.

    Example:
        >>> import jaxmdp as jm
        >>> lake = jm.envs.frozen_lake(layout=["SFFF", "FHFH", "FFFH", "HFFG"])
        >>> lake.P.shape, round(float(lake.R[10, 1]), 6)
        ((12, 4, 12), 0.5)
    """
    slip = check_probability("slip", slip)
    if slip > 0.5:
        raise ValueError(f"slip must be in [0, 1/2], got {slip!r}")
    if layout is None:
        size = check_int("size", size, 2)
        p_frozen = check_probability("p_frozen", p_frozen)
        if p_frozen == 0:
            raise ValueError(f"p_frozen must be in (0, 1], got {p_frozen!r}")
        seed = check_int("seed", seed, 0)
        layout = _lake_map(size, p_frozen, seed)
    rows = [str(row) for row in layout]
    if not rows or len({len(row) for row in rows}) != 1 or set("".join(rows)) - set("SFHG"):
        raise ValueError(f"layout must be non-empty rows of equal length over 'SFHG', "
                         f"got {rows!r}")
    for mark in "SG":
        if "".join(rows).count(mark) != 1:
            raise ValueError(f"layout must contain exactly one {mark!r}, got {rows!r}")
    height, width = len(rows), len(rows[0])
    start = next((i, j) for i in range(height) for j in range(width) if rows[i][j] == "S")

    def step(cell, action):
        if rows[cell[0]][cell[1]] == "G":
            return start
        i = min(max(cell[0] + _LAKE_MOVES[action][0], 0), height - 1)
        j = min(max(cell[1] + _LAKE_MOVES[action][1], 0), width - 1)
        return start if rows[i][j] == "H" else (i, j)

    def successors(cell, action):
        if rows[cell[0]][cell[1]] == "G":
            return ((start, 1.0),)
        sides = ((action - 1) % 4, (action + 1) % 4)
        return ((step(cell, action), 1.0 - 2 * slip),
                *((step(cell, side), slip) for side in sides))

    # States: the cells reachable from the start along moves of positive probability.
    seen, stack = {start}, [start]
    while stack:
        cell = stack.pop()
        for a in range(4):
            for nxt, prob in successors(cell, a):
                if prob > 0 and nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
    cells = [start] + sorted(seen - {start})
    index = {cell: k for k, cell in enumerate(cells)}
    S = len(cells)
    P = np.zeros((S, 4, S))
    R = np.zeros((S, 4))
    for cell, s in index.items():
        for a in range(4):
            for nxt, prob in successors(cell, a):
                if prob == 0:
                    continue
                P[s, a, index[nxt]] += prob
                if rows[cell[0]][cell[1]] != "G" and rows[nxt[0]][nxt[1]] == "G":
                    R[s, a] += prob
    return as_mdp(P, R, dtype)
