r"""Chain-like environments: the paper's example, RiverSwim (any length) and SixArms.

Each function returns a validated :class:`~jaxmdp.MDP` of mean rewards; its docstring
gives the source and every number. ``riverswim(n)`` is defined for every ``n >= 2``
(names ``riverswim-N``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmdp.envs._common import as_mdp, check_int, check_probability
from jaxmdp.mdp import MDP

__all__ = [
    "paper_mdp",
    "rigged_counts",
    "riverswim",
    "riverswim_ergodic",
    "riverswim_osband",
    "sixarms",
]


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
_RIGGED_T_A1 = [[8, 1, 1], [1, 1, 8], [8, 1, 1]]
_RIGGED_T_A2 = [[1, 1, 8], [8, 1, 1], [1, 1, 8]]


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
    return as_mdp(P, R, dtype)


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
    return check_int("n", n, 2)


# Rows (left, stay, right) of an action in state 0, in 0 < s < n - 1 and in n - 1.
_RIVERSWIM_RIGHT = ((0.0, 0.6, 0.4), (0.05, 0.55, 0.4), (0.05, 0.95, 0.0))
_OSBAND_RIGHT = ((0.0, 0.4, 0.6), (0.05, 0.6, 0.35), (0.4, 0.6, 0.0))
_RESET_LEFT = ((0.0, 1.0, 0.0), (1.0, 0.0, 0.0), (1.0, 0.0, 0.0))


def _rows(n: int, first, middle, last):
    """The per-state row function: ``first`` in state 0, ``last`` in ``n - 1``, else ``middle``."""
    return lambda s: first if s == 0 else last if s == n - 1 else middle


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

    return as_mdp(*_chain(n, _rows(n, *_RIVERSWIM_RIGHT), _rows(n, *_RESET_LEFT), reward_left,
                         reward_right), dtype)


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

    return as_mdp(*_chain(n, _rows(n, *_OSBAND_RIGHT), _rows(n, *_RESET_LEFT), 0.005, 1.0),
                  dtype)


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
    eps = check_probability("epsilon", epsilon)

    def left_row(s):
        back = 1.0 - eps if s > 0 else 0.0
        forward = eps / 2 if s < n - 1 else 0.0
        return back, 1.0 - back - forward, forward

    return as_mdp(*_chain(n, _rows(n, *_RIVERSWIM_RIGHT), left_row, reward_left, reward_right),
                  dtype)




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
    return as_mdp(P, R, dtype)


