r"""The field's named environments, and :func:`make` to build one by name.

Every environment is a function returning a validated :class:`~jaxmdp.MDP` whose ``R``
holds the *mean* rewards (draw observed rewards around them with
:meth:`~jaxmdp.MDP.with_reward_law`). Each docstring gives the source and every number.
:func:`make` builds one by name (``jm.envs.make("riverswim-6")``), :func:`names` lists the
names and :data:`ENVIRONMENTS` maps each name to a one-line description.

=======================  =====  ===  =========================================
name                     S      A    source
=======================  =====  ===  =========================================
``paper-mdp``            3      2    Cowan, Katehakis & Pirutinsky (2019), sec. 5
``riverswim-6``          6      2    StatisticalRL ``river-swim-6``
``riverswim-25``         25     2    StatisticalRL ``river-swim-25``
``riverswim-osband-6``   6      2    Osband, Russo & Van Roy (2013)
``riverswim-ergodic-6``  6      2    StatisticalRL ``ergo-river-swim-6``
``riverswim-ergodic-25`` 25     2    StatisticalRL ``ergo-river-swim-25``
``grid-2-room``          55     4    StatisticalRL ``grid-2-room``
``grid-4-room``          20     4    StatisticalRL ``grid-4-room``
``sixarms``              7      6    Strehl & Littman (2008)
``garnet-S-A-b``         S      A    GARNET, ``b`` next states per row (seeded)
``random-S-A``           S      A    dense Dirichlet(1) rows (seeded)
=======================  =====  ===  =========================================

**Start state.** Every simulation in jaxmdp starts in state 0, so each environment is
numbered so that its published start state is state 0 (the docstrings say where a
source starts elsewhere).

**Zero transition probabilities.** The paper's parameter space
:math:`\Theta = \{p : p_y > 0 \ \forall y\}` contains no law with a zero entry, but every
named environment except ``paper-mdp`` and ``random-S-A`` has them (RiverSwim moves at
most one state, a grid world at most one cell). What that changes:

* *Planning.* Some stationary policies are multichain (for example "always left" in
  every state of a grid world's left column is closed), so policy iteration must handle
  multichain evaluations; the MDPs themselves are communicating, so the optimal gain is
  the same from every state and :func:`~jaxmdp.solve_average_reward` applies.
* *The lower bound.* :math:`\mathbf{K}_{x,a}` is an infimum over :math:`q \in \Theta`
  and :math:`\Theta` is open, so with :math:`p^a_x \notin \Theta` it is the minimum over
  the closed simplex: the alternative ``q`` may put mass on states ``p`` never reaches
  (a law that moves mass to an unreachable high-value state is as plausible as any in
  :math:`\Theta`), and the minimiser may lie on the boundary (:func:`~jaxmdp.kinf`'s
  boundary case: ``q*`` puts mass only on ``supp(p)`` and the maximisers of ``v``).
  :func:`~jaxmdp.regret_lower_bound` computes exactly this. It is the bound for a
  learner that does *not* know which transitions are impossible, as the paper's agents do
  not; a learner told the support has a larger :math:`\mathbf{K}` (``q`` restricted to
  ``supp(p)``) and a smaller bound.
* *The agents.* Their estimates :math:`(N + 1)/(n + S)` and Dirichlet(N + 1) posterior
  draws are always in :math:`\Theta`, so the indices only ever see positive ``p``, and
  the estimated MDPs they plan on are unichain.

``random_mdp`` and ``garnet`` draw MDPs from an explicit ``jax.random`` key for scaling
studies; both are pure and work under ``jit``/``vmap`` over keys (with ``S``, ``A``,
``b`` static).
"""

from __future__ import annotations

import functools
import itertools
import math
import re

import jax
import jax.numpy as jnp
import numpy as np

from jaxmdp.mdp import MDP

__all__ = [
    "ENVIRONMENTS",
    "garnet",
    "grid_2_room",
    "grid_4_room",
    "grid_world",
    "make",
    "names",
    "paper_mdp",
    "random_mdp",
    "rigged_counts",
    "riverswim",
    "riverswim_ergodic",
    "riverswim_osband",
    "sixarms",
]


def _dtype(dtype) -> np.dtype:
    return jnp.result_type(float) if dtype is None else jnp.dtype(dtype)


def _mdp(P: np.ndarray, R: np.ndarray, dtype) -> MDP:
    dtype = _dtype(dtype)
    return MDP(jnp.asarray(P, dtype=dtype), jnp.asarray(R, dtype=dtype))


# --------------------------------------------------------------------------------------
# The paper's example.

# Section 5, "Comparison of Performance": P[a][x, y] and R[a][x] as printed (a1, a2).
_PAPER_P_A1 = [
    [0.04, 0.69, 0.27],
    [0.88, 0.01, 0.11],
    [0.02, 0.46, 0.52],
]
_PAPER_P_A2 = [
    [0.28, 0.68, 0.04],
    [0.26, 0.33, 0.41],
    [0.43, 0.35, 0.22],
]
_PAPER_R_A1 = [0.13, 0.47, 0.89]
_PAPER_R_A2 = [0.18, 0.71, 0.63]

# Section 5.1, "Algorithm Robustness": the rigged T^a_{x,y} (rows x, columns y).
_RIGGED_T_A1 = [
    [8, 1, 1],
    [1, 1, 8],
    [8, 1, 1],
]
_RIGGED_T_A2 = [
    [1, 1, 8],
    [8, 1, 1],
    [1, 1, 8],
]


def paper_mdp(*, dtype=None) -> MDP:
    r"""The paper's 3-state, 2-action example (section 5), exactly as printed.

    States ``x1, x2, x3`` are indices 0, 1, 2 and actions ``a1, a2`` are 0, 1, so
    ``P[x, a, y]`` = :math:`p^{a}_{x,y}` and ``R[x, a]`` = :math:`r_{x,a}`:

    ====  ===================  ===================  ======  ======
    x     p^{a1}_{x,.}         p^{a2}_{x,.}         r a1    r a2
    ====  ===================  ===================  ======  ======
    x1    0.04, 0.69, 0.27     0.28, 0.68, 0.04     0.13    0.18
    x2    0.88, 0.01, 0.11     0.26, 0.33, 0.41     0.47    0.71
    x3    0.02, 0.46, 0.52     0.43, 0.35, 0.22     0.89    0.63
    ====  ===================  ===================  ======  ======

    All actions are admissible and every entry of ``P`` is positive (the law is in the
    paper's :math:`\Theta`). The paper states the optimal policy is ``(a1, a2, a1)``,
    i.e. ``[0, 1, 0]``. Name: ``paper-mdp``.

    Args:
        dtype: float dtype of ``P`` and ``R``; default float (float64 under x64).

    Returns:
        The validated :class:`~jaxmdp.MDP` with ``P`` of shape ``[3, 2, 3]`` and ``R`` of
        shape ``[3, 2]``.

    Example:
        >>> import jaxmdp as jm
        >>> mdp = jm.envs.paper_mdp()
        >>> mdp.P.shape, mdp.R.shape
        ((3, 2, 3), (3, 2))

    References:
        Cowan, Katehakis & Pirutinsky (2019), "Accelerating the Computation of UCB and
        Related Indices for Reinforcement Learning", section 5.
    """
    P = np.stack([_PAPER_P_A1, _PAPER_P_A2], axis=1)  # [x, a, y]
    R = np.stack([_PAPER_R_A1, _PAPER_R_A2], axis=1)  # [x, a]
    return _mdp(P, R, dtype)


def rigged_counts() -> jax.Array:
    r"""The robustness test's rigged initial transition counts (section 5.1).

    ``counts[x, a, y]`` = :math:`T^a_{x,y}`, the number of observed transitions from
    ``x`` to ``y`` under ``a``: 10 per state-action pair, 60 in all. Estimated as
    ``(N + 1) / (n + S)`` they make ``(a2, a1, a1)`` (``[1, 0, 0]``) the estimated
    optimal policy, as the paper reports.

    Returns:
        int32 array of shape ``[3, 2, 3]`` (integer counts; cast before dividing if you
        need a particular float dtype).

    Example:
        >>> import jaxmdp as jm
        >>> int(jm.envs.rigged_counts().sum())
        60
    """
    return jnp.asarray(np.stack([_RIGGED_T_A1, _RIGGED_T_A2], axis=1), dtype=jnp.int32)


# --------------------------------------------------------------------------------------
# RiverSwim.

_LEFT, _RIGHT = 0, 1  # RiverSwim's actions


def _check_chain_length(n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"n must be a Python int >= 2, got {n!r}")
    return int(n)


def _check_probability(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) or not (
        0.0 <= float(value) <= 1.0
    ):
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
    return float(value)


def _chain(n: int, right_row, left_row, reward_left: float, reward_right: float):
    """P and R of a RiverSwim chain from per-state rows (left, stay, right) of each action."""
    P = np.zeros((n, 2, n))
    for s in range(n):
        for a, row in ((_LEFT, left_row(s)), (_RIGHT, right_row(s))):
            back, stay, forward = row
            if back:
                P[s, a, s - 1] += back
            if forward:
                P[s, a, s + 1] += forward
            P[s, a, s] += stay
    R = np.zeros((n, 2))
    R[0, _LEFT] = reward_left
    R[n - 1, _RIGHT] = reward_right
    return P, R


def riverswim(n: int = 6, *, reward_left: float = 0.005, reward_right: float = 1.0,
              dtype=None) -> MDP:
    r"""RiverSwim as in the StatisticalRL code (``river-swim-6``, ``river-swim-25``).

    A chain of ``n`` states; the agent starts at the left bank, state 0. Actions
    ``0 = left`` (with the current) and ``1 = right`` (against it):

    * left moves to :math:`\max(s - 1, 0)` with probability 1;
    * right from 0 goes to 1 w.p. 0.4 and stays w.p. 0.6; from :math:`0 < s < n - 1`
      goes right w.p. 0.4, left w.p. 0.05 and stays w.p. 0.55; from :math:`n - 1` goes
      left w.p. 0.05 and stays w.p. 0.95;
    * rewards: ``R[0, left] = reward_left`` (0.005), ``R[n - 1, right] =
      reward_right`` (1; 0.99 for ``riverswim-25``), all others 0.

    Names: ``riverswim-6`` (``n = 6``, ``reward_right = 1``) and ``riverswim-25``
    (``n = 25``, ``reward_right = 0.99``), the source's parameters for ``river-swim-6``
    and ``river-swim-25``. The optimal policy is "always right".

    Source: ``StatisticalRL/environments``,
    ``src/statisticalrl_environments/MDPs_discrete/envs/RiverSwim.py`` (class
    ``RiverSwim``) with the parameters of ``register.py`` (``rightProbaright=0.4,
    rightProbaLeft=0.05, rewardL=0.005``); the StatisticalRL learners
    (``StatisticalRL/learners``) run on these environments. The source numbers its
    actions the other way round (``0 = right, 1 = left``); here ``0 = left`` as in
    the issue this module implements and in Osband et al. (2013). Start state 0 as in
    the source. (Strehl & Littman (2008), who introduced RiverSwim, use other
    probabilities and rewards and start in state 1 or 2.)

    Args:
        n: number of states, a Python int ``>= 2``.
        reward_left: mean reward of ``left`` in state 0.
        reward_right: mean reward of ``right`` in state ``n - 1``.
        dtype: float dtype; default float (float64 under x64).

    Returns:
        The :class:`~jaxmdp.MDP`, ``P`` of shape ``[n, 2, n]``, all actions admissible.

    Example:
        >>> import jaxmdp as jm
        >>> mdp = jm.envs.riverswim(6)
        >>> [round(float(p), 6) for p in mdp.P[2, 1, 1:4]]
        [0.05, 0.55, 0.4]
    """
    n = _check_chain_length(n)

    def right_row(s):
        if s == 0:
            return 0.0, 0.6, 0.4
        if s == n - 1:
            return 0.05, 0.95, 0.0
        return 0.05, 0.55, 0.4

    def left_row(s):
        return (0.0, 1.0, 0.0) if s == 0 else (1.0, 0.0, 0.0)

    return _mdp(*_chain(n, right_row, left_row, reward_left, reward_right), dtype)


def riverswim_osband(n: int = 6, *, dtype=None) -> MDP:
    r"""RiverSwim as in Osband, Russo & Van Roy (2013) (``riverswim-osband-6``).

    Actions ``0 = left``, ``1 = right``; start in state 0. Left moves to
    :math:`\max(s - 1, 0)` with probability 1. Right from 0 goes to 1 w.p. 0.6 and stays
    w.p. 0.4; from :math:`0 < s < n - 1` goes right w.p. 0.35, stays w.p. 0.6 and goes
    left w.p. 0.05; from :math:`n - 1` stays w.p. 0.6 and goes left w.p. 0.4. Rewards
    ``R[0, left] = 5/1000 = 0.005``, ``R[n - 1, right] = 1``, all others 0.

    The paper runs it as an episodic problem (episodes of 20 steps); here it is the same
    chain with the average-reward criterion. Source: Osband, Russo & Van Roy, "(More)
    Efficient Reinforcement Learning via Posterior Sampling", NeurIPS 2013 (the RiverSwim
    figure of its appendix), and the authors' code, ``iosband/TabulaRL``,
    ``src/environment.py``, ``make_riverSwim`` (same numbering of actions and states,
    start state 0).

    Args:
        n: number of states, a Python int ``>= 2`` (the paper uses 6).
        dtype: float dtype; default float (float64 under x64).

    Returns:
        The :class:`~jaxmdp.MDP`, ``P`` of shape ``[n, 2, n]``, all actions admissible.
    """
    n = _check_chain_length(n)

    def right_row(s):
        if s == 0:
            return 0.0, 0.4, 0.6
        if s == n - 1:
            return 0.4, 0.6, 0.0
        return 0.05, 0.6, 0.35

    def left_row(s):
        return (0.0, 1.0, 0.0) if s == 0 else (1.0, 0.0, 0.0)

    return _mdp(*_chain(n, right_row, left_row, 0.005, 1.0), dtype)


def riverswim_ergodic(n: int = 6, *, epsilon: float = 0.001, reward_left: float = 0.005,
                      reward_right: float = 0.99, dtype=None) -> MDP:
    r"""The ergodic RiverSwim of the StatisticalRL code (``riverswim-ergodic-6``).

    :func:`riverswim` with a leaky ``left``, so that every stationary policy is ergodic
    (one recurrent class, all states): left from :math:`s > 0` goes left w.p.
    :math:`1 - \varepsilon`, right w.p. :math:`\varepsilon/2` (if :math:`s < n - 1`) and
    stays otherwise (:math:`\varepsilon/2`, or :math:`\varepsilon` in :math:`n - 1`);
    left from 0 goes to 1 w.p. :math:`\varepsilon/2` and stays w.p.
    :math:`1 - \varepsilon/2`; :math:`\varepsilon = 0.001`. Right is as in
    :func:`riverswim` (0.4 / 0.05 / 0.55; 0.4 / 0.6 from 0; 0.05 / 0.95 from
    :math:`n - 1`). Rewards ``R[0, left] = 0.005``, ``R[n - 1, right] = 0.99``, all
    others 0. Actions ``0 = left``, ``1 = right``; start in state 0. Rows still have zero
    entries (no move spans two states), so the laws are not in the paper's
    :math:`\Theta` either.

    Names: ``riverswim-ergodic-6`` and ``riverswim-ergodic-25``. Source:
    ``StatisticalRL/environments``,
    ``src/statisticalrl_environments/MDPs_discrete/envs/RiverSwim.py`` (class
    ``ErgodicRiverSwim``) with the parameters of ``register.py`` (``ergo-river-swim-6``
    and ``ergo-river-swim-25``: ``rightProbaright=0.4, rightProbaLeft=0.05,
    rewardL=0.005, rewardR=0.99, ergodic=0.001``), the environments Pesquerel & Maillard
    use for IMED-RL, which assumes ergodicity. As for :func:`riverswim`, the source
    numbers its actions ``0 = right, 1 = left``.

    Args:
        n: number of states, a Python int ``>= 2``.
        epsilon: the leak :math:`\varepsilon` of ``left``, in ``[0, 1]``.
        reward_left: mean reward of ``left`` in state 0.
        reward_right: mean reward of ``right`` in state ``n - 1``.
        dtype: float dtype; default float (float64 under x64).

    Returns:
        The :class:`~jaxmdp.MDP`, ``P`` of shape ``[n, 2, n]``, all actions admissible.
    """
    n = _check_chain_length(n)
    eps = _check_probability("epsilon", epsilon)

    def right_row(s):
        if s == 0:
            return 0.0, 0.6, 0.4
        if s == n - 1:
            return 0.05, 0.95, 0.0
        return 0.05, 0.55, 0.4

    def left_row(s):
        back = 1.0 - eps if s > 0 else 0.0
        forward = eps / 2 if s < n - 1 else 0.0
        return back, 1.0 - back - forward, forward

    return _mdp(*_chain(n, right_row, left_row, reward_left, reward_right), dtype)


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
    return _mdp(P, R, dtype)


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

    Moves as in :func:`grid_world`: intended 0.7, each perpendicular 0.1, stay 0.1, walls
    block; the goal pays 0.99 under every action and returns to the start. Source:
    ``StatisticalRL/environments``, ``src/statisticalrl_environments/register.py``
    (``"grid-4-room"``: ``sizeX=7, sizeY=7, map_name="4-room", rewardStd=0.0,
    initialSingleStateDistribution=True, start=[1,1], goal=[5,5]``) and
    ``MDPs_discrete/envs/GridWorld/gridworld.py`` (``GridWorld``, ``fourRoomMap``); its
    state numbering (row-major over free cells) is the one used here.

    Args:
        dtype: float dtype; default float (float64 under x64).

    Returns:
        The :class:`~jaxmdp.MDP`, ``P`` of shape ``[20, 4, 20]``.
    """
    return grid_world(_FOUR_ROOM, dtype=dtype)


# --------------------------------------------------------------------------------------
# SixArms.

_SIXARMS_REACH = (1.0, 0.15, 0.10, 0.05, 0.03, 0.01)
_SIXARMS_REWARDS = (50.0, 133.0, 300.0, 800.0, 1660.0, 6000.0)


def sixarms(*, dtype=None) -> MDP:
    r"""SixArms of Strehl & Littman (2008): 7 states, 6 actions, rewards scaled to [0, 1].

    State 0 is the hub (the start). From 0, action ``i`` (``i = 0, ..., 5``) moves to arm
    state ``i + 1`` w.p. ``(1, 0.15, 0.10, 0.05, 0.03, 0.01)[i]`` and stays in 0
    otherwise, reward 0. In arm state 1 the actions ``0, 1, 2, 3, 5`` stay with reward
    50 and action 4 returns to 0 (reward 0). In arm state ``j = 2, ..., 6`` action
    ``j - 1`` stays with reward ``(133, 300, 800, 1660, 6000)[j - 2]`` and every other
    action returns to 0 (reward 0). All transitions are deterministic except those from
    the hub. Rewards are divided by 6000, so ``R[1, a] = 50/6000`` for ``a != 4``,
    ``R[j, j - 1] = (133, 300, 800, 1660, 6000)[j - 2] / 6000`` and all others 0. The
    optimal policy goes to arm 6 (action 5 in the hub) and stays (action 5): gain 1.

    Source: Strehl & Littman, "An analysis of model-based Interval Estimation for Markov
    Decision Processes", J. Comput. Syst. Sci. 74(8):1309-1331, 2008, the SixArms
    figure, which gives each transition as (action, probability, reward) and starts in
    state 0; the unscaled rewards are 50, 133, 300, 800, 1660, 6000. The action labels
    follow the widely used transcription of that figure (``generate_arms`` for
    mushroom-rl's ``FiniteMDP``; ``SixArms`` in several public repositories). The
    scaling to [0, 1] is this module's.

    Args:
        dtype: float dtype; default float (float64 under x64).

    Returns:
        The :class:`~jaxmdp.MDP`, ``P`` of shape ``[7, 6, 7]``.
    """
    P = np.zeros((7, 6, 7))
    R = np.zeros((7, 6))
    for i, reach in enumerate(_SIXARMS_REACH):
        P[0, i, i + 1] = reach
        P[0, i, 0] = 1.0 - reach
    scale = _SIXARMS_REWARDS[-1]
    for a in range(6):
        if a == 4:
            P[1, a, 0] = 1.0
        else:
            P[1, a, 1] = 1.0
            R[1, a] = _SIXARMS_REWARDS[0] / scale
    for j in range(2, 7):
        for a in range(6):
            if a == j - 1:
                P[j, a, j] = 1.0
                R[j, a] = _SIXARMS_REWARDS[j - 1] / scale
            else:
                P[j, a, 0] = 1.0
    return _mdp(P, R, dtype)


# --------------------------------------------------------------------------------------
# Random MDPs.


def _check_sizes(**sizes: int) -> None:
    for name, value in sizes.items():
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive Python int, got {value!r}")


def _uniforms(key: jax.Array, shapes: tuple[tuple[int, ...], ...], dtype) -> list[jax.Array]:
    """Independent Uniform[tiny, 1) arrays of the given shapes from one draw.

    One ``jax.random.uniform`` call (instead of one per array) keeps compilation short.
    """
    sizes = [math.prod(shape) for shape in shapes]
    flat = jax.random.uniform(
        key, (sum(sizes),), dtype=dtype, minval=jnp.finfo(dtype).tiny, maxval=1
    )
    parts = jnp.split(flat, list(itertools.accumulate(sizes))[:-1])
    return [part.reshape(shape) for part, shape in zip(parts, shapes, strict=True)]


def random_mdp(key: jax.Array, S: int, A: int, *, dtype=None) -> MDP:
    r"""A random dense MDP: Dirichlet(1, ..., 1) rows, Uniform(0, 1) rewards.

    Each row ``P[x, a]`` is uniform on the simplex (normalised exponentials), and every
    entry is positive and every policy is unichain (irreducible). Name: ``random-S-A``
    (for example ``random-10-4``), seeded by :func:`make`'s ``seed``.

    Args:
        key: a ``jax.random`` key.
        S: number of states (static Python int).
        A: number of actions (static Python int).
        dtype: float dtype; default float (float64 under x64).

    Returns:
        An :class:`~jaxmdp.MDP` built with :meth:`~jaxmdp.MDP.unchecked` (valid by
        construction, so it can be drawn inside ``jit``/``vmap``), all actions admissible.

    Example:
        >>> import jax
        >>> import jaxmdp as jm
        >>> mdps = jax.vmap(lambda k: jm.envs.random_mdp(k, 10, 4))(
        ...     jax.random.split(jax.random.key(0), 8))
        >>> mdps.P.shape
        (8, 10, 4, 10)
    """
    _check_sizes(S=S, A=A)
    P, R = _random_mdp_arrays(key, S=int(S), A=int(A), dtype=_dtype(dtype))
    return MDP.unchecked(P, R)


@functools.partial(jax.jit, static_argnames=("S", "A", "dtype"))
def _random_mdp_arrays(key, *, S, A, dtype):
    u_p, u_r = _uniforms(key, ((S, A, S), (S, A)), dtype)
    weights = -jnp.log(u_p)  # Exp(1), strictly positive since u < 1
    P = weights / jnp.sum(weights, axis=-1, keepdims=True)
    return P, u_r


def garnet(key: jax.Array, S: int, A: int, b: int, *, dtype=None) -> MDP:
    r"""A GARNET MDP: each row supported on ``b`` distinct random next states.

    For every ``(x, a)`` a uniformly random subset of ``b`` next states is drawn and the
    row is Dirichlet(1, ..., 1) on it (the classic "b - 1 uniform cut points" weights);
    rewards are Uniform(0, 1). With small ``b`` some policies may be multichain; the
    planner then reports a singular evaluation (see
    :func:`~jaxmdp.policy_iteration`). Name: ``garnet-S-A-b`` (for example
    ``garnet-100-4-10``), seeded by :func:`make`'s ``seed``.

    Args:
        key: a ``jax.random`` key.
        S: number of states (static Python int).
        A: number of actions (static Python int).
        b: branching factor, ``1 <= b <= S`` (static Python int).
        dtype: float dtype; default float (float64 under x64).

    Returns:
        An :class:`~jaxmdp.MDP` (built unchecked, valid by construction), all actions
        admissible, with exactly ``b`` positive entries in each row of ``P``.

    Example:
        >>> import jax
        >>> import jaxmdp as jm
        >>> mdp = jm.envs.garnet(jax.random.key(0), 100, 4, 5)
        >>> int((mdp.P[0, 0] > 0).sum())
        5
    """
    _check_sizes(S=S, A=A, b=b)
    if b > S:
        raise ValueError(f"b must satisfy 1 <= b <= S = {S}, got b = {b}")
    P, R = _garnet_arrays(key, b, S=int(S), A=int(A), dtype=_dtype(dtype))
    return MDP.unchecked(P, R)


@functools.partial(jax.jit, static_argnames=("S", "A", "dtype"))
def _garnet_arrays(key, b, *, S, A, dtype):
    scores, u_p, u_r = _uniforms(key, ((S, A, S), (S, A, S), (S, A)), dtype)
    # A uniformly random b-subset per row: the b smallest of S i.i.d. uniforms.
    ranks = jnp.argsort(jnp.argsort(scores, axis=-1), axis=-1)
    weights = jnp.where(ranks < b, -jnp.log(u_p), 0)  # Exp(1) on the support
    P = weights / jnp.sum(weights, axis=-1, keepdims=True)
    return P, u_r


# --------------------------------------------------------------------------------------
# The registry.

#: Every name :func:`make` accepts, with a one-line description (S, A, source).
#: ``garnet-S-A-b`` and ``random-S-A`` are patterns: replace ``S``, ``A``, ``b`` by
#: positive integers (``garnet-100-4-10``).
ENVIRONMENTS: dict[str, str] = {
    "paper-mdp": "S=3, A=2: the paper's example (Cowan, Katehakis & Pirutinsky 2019, "
                 "section 5)",
    "riverswim-6": "S=6, A=2: RiverSwim, r(5, right) = 1 (StatisticalRL river-swim-6)",
    "riverswim-25": "S=25, A=2: RiverSwim, r(24, right) = 0.99 (StatisticalRL "
                    "river-swim-25)",
    "riverswim-osband-6": "S=6, A=2: RiverSwim of Osband, Russo & Van Roy (2013)",
    "riverswim-ergodic-6": "S=6, A=2: ergodic RiverSwim, leak 0.001 (StatisticalRL "
                           "ergo-river-swim-6)",
    "riverswim-ergodic-25": "S=25, A=2: ergodic RiverSwim, leak 0.001 (StatisticalRL "
                            "ergo-river-swim-25)",
    "grid-2-room": "S=55, A=4: two-room grid world, slip 0.1 (StatisticalRL grid-2-room)",
    "grid-4-room": "S=20, A=4: four-room grid world, slip 0.1 (StatisticalRL grid-4-room)",
    "sixarms": "S=7, A=6: SixArms, rewards / 6000 (Strehl & Littman 2008)",
    "garnet-S-A-b": "S, A: GARNET, b random next states per row, Dirichlet(1) weights, "
                    "Uniform(0, 1) rewards (seed=)",
    "random-S-A": "S, A: dense Dirichlet(1) rows, Uniform(0, 1) rewards (seed=)",
}

_FIXED = {
    "paper-mdp": paper_mdp,
    "riverswim-6": functools.partial(riverswim, 6),
    "riverswim-25": functools.partial(riverswim, 25, reward_right=0.99),
    "riverswim-osband-6": functools.partial(riverswim_osband, 6),
    "riverswim-ergodic-6": functools.partial(riverswim_ergodic, 6),
    "riverswim-ergodic-25": functools.partial(riverswim_ergodic, 25),
    "grid-2-room": grid_2_room,
    "grid-4-room": grid_4_room,
    "sixarms": sixarms,
}

_PATTERNS = {
    "garnet-S-A-b": (re.compile(r"garnet-(\d+)-(\d+)-(\d+)"), garnet),
    "random-S-A": (re.compile(r"random-(\d+)-(\d+)"), random_mdp),
}


def names() -> list[str]:
    """The names :func:`make` accepts (the keys of :data:`ENVIRONMENTS`).

    ``garnet-S-A-b`` and ``random-S-A`` stand for their instances (``garnet-100-4-10``).

    Example:
        >>> import jaxmdp as jm
        >>> "riverswim-6" in jm.envs.names()
        True
    """
    return list(ENVIRONMENTS)


def _unknown(name) -> ValueError:
    return ValueError(f"unknown environment name {name!r}; known names: "
                      f"{', '.join(names())} (S, A, b positive integers)")


def make(name: str, *, seed=0, dtype=None) -> MDP:
    """Builds the named environment.

    Args:
        name: one of :func:`names`: a fixed name (``"riverswim-6"``, ``"grid-4-room"``,
            ...) or an instance of a pattern, ``"garnet-S-A-b"`` (``"garnet-100-4-10"``)
            or ``"random-S-A"`` (``"random-10-4"``).
        seed: for the patterns, an int seed or a ``jax.random`` key (default 0); the MDP is
            ``garnet(jax.random.key(seed), S, A, b)`` or ``random_mdp(...)``. Ignored by
            fixed names.
        dtype: float dtype; default float (float64 under x64).

    Returns:
        The :class:`~jaxmdp.MDP`.

    Raises:
        ValueError: for an unknown name (the message lists the known ones) or invalid
            sizes.

    Example:
        >>> import jaxmdp as jm
        >>> jm.envs.make("riverswim-6").P.shape
        (6, 2, 6)
        >>> jm.envs.make("garnet-20-3-4", seed=1).P.shape
        (20, 3, 20)
    """
    if not isinstance(name, str):
        raise _unknown(name)
    if name in _FIXED:
        return _FIXED[name](dtype=dtype)
    for pattern, build in _PATTERNS.values():
        match = pattern.fullmatch(name)
        if match:
            key = seed
            if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
                key = jax.random.key(int(seed))
            elif not (isinstance(seed, jax.Array)
                      and (jnp.issubdtype(seed.dtype, jax.dtypes.prng_key)
                           or seed.shape == (2,))):
                raise ValueError(f"seed must be an int or a jax.random key, got {seed!r}")
            return build(key, *(int(g) for g in match.groups()), dtype=dtype)
    raise _unknown(name)
