r"""Environments of the SCAL, TUCRL, StatisticalRL and Wei et al. experiments.

Each function builds one environment from its published source file, with the source's
parameters by default and its action order; states keep the source's numbers (every
source here starts in state 0). Rewards lie in ``[0, 1]``; where a source uses costs
the docstring states the rescaling.

========================  =====  =  ============================================
name                      S      A  source
========================  =====  =  ============================================
``toy3d-1``               3      2  rlexplorer ``Toy3D_1`` (SCAL, Fruit et al. 2018)
``toy3d-2``               3      2  rlexplorer ``Toy3D_2`` (SCAL)
``toy3d-weak``            3      2  rlexplorer ``Toy3D_1(delta=0)`` (TUCRL runs)
``threestate``            3      2  StatisticalRL ``three-state``
``nasty``                 7      2  StatisticalRL ``nasty``
``jumpriverswim-6``       6      2  Wei et al. (2020) ``JumpRiverSwimEnv``
``randommdp-wei``         6      2  Wei et al. (2020) ``RandomMDPEnv`` (seed 3)
========================  =====  =  ============================================

**rlexplorer branch.** The toys are read from ``RonanFR/UCRL`` branch
``refactoring_and_cleaning`` (commit ``ab64d14``, ``rlexplorer/envs/toys/toy.py``): the
branch on which rlexplorer's UCRL, SCAL and SCALPLUS run with their defaults. Lines
55-149 (``Toy3D_1``, ``Toy3D_2``) are the same on the newer tips ``learning_rep`` and
``messinguppppp`` and in the older package ``UCRL/envs/toys/toy.py`` of commit
``ecf4acc`` (the commit with the TUCRL that runs); only ``compute_max_gain`` differs.

**Weakly communicating.** ``toy3d-weak`` has a state that no policy reaches from state 0
(state 1). Its optimal gain is the same from every state (state 1 leads to state 0), so
:func:`~jaxmdp.solve_average_reward` and the gaps are defined, but its diameter is
infinite: :func:`jaxmdp.hardness` reports ``diameter = inf``.
"""

from __future__ import annotations

import numpy as np

from jaxmdp.envs._common import as_mdp, check_probability
from jaxmdp.mdp import MDP

__all__ = ["jump_riverswim", "nasty", "random_mdp_wei", "three_state", "toy3d_1", "toy3d_2",
           "toy3d_weak"]


def _with_mask(P: np.ndarray, R: np.ndarray, mask: np.ndarray, dtype) -> MDP:
    """The MDP of ``P``, ``R`` with inadmissible rows set to the row of action 0
    (never played; any law would do) and reward 0."""
    P = np.where(mask[..., None], P, P[:, :1, :])
    R = np.where(mask, R, 0.0)
    mdp = as_mdp(P, R, dtype)
    return MDP(mdp.P, mdp.R, mask)


def toy3d_1(delta: float = 0.99, *, dtype=None) -> MDP:
    r"""rlexplorer's ``Toy3D_1``, the three-state toy of the SCAL experiments.

    States 0 and 1 have one action (0), state 2 two (``state_actions = [[0], [0], [0,
    1]]``, line 58). Transitions and mean rewards (lines 68-85, ``r_max = 1``):

    * state 0: to 1 w.p. ``delta``, to 2 w.p. ``1 - delta``; reward 0;
    * state 1: to 0; reward 1/3;
    * state 2, action 0: to 0 w.p. ``1 - delta``, to 1 w.p. ``delta``; reward 2/3;
    * state 2, action 1: stays in 2; reward 2/3.

    Start state 0 (line 102). Optimal gain 2/3 (stay in state 2). The source draws
    Bernoulli rewards of these means with ``stochastic_reward=True`` (lines 94-97;
    :meth:`~jaxmdp.MDP.with_reward_law` ``("bernoulli")``), their means otherwise
    (line 120, the default).

    Source: ``RonanFR/UCRL`` at ``ab64d14``, ``rlexplorer/envs/toys/toy.py`` lines
    55-106 (the default ``delta = 0.99``, line 56).

    Args:
        delta: the transition probability ``delta`` in ``[0, 1]``.
        dtype: float dtype; default float (float64 under x64).

    Returns:
        The :class:`~jaxmdp.MDP`, ``P`` of shape ``[3, 2, 3]`` (``mask[0, 1]`` and
        ``mask[1, 1]`` False).

    Raises:
        ValueError: for ``delta`` outside ``[0, 1]``, naming it.
    """
    delta = check_probability("delta", delta)
    P = np.zeros((3, 2, 3))
    R = np.zeros((3, 2))
    P[0, 0] = [0.0, delta, 1.0 - delta]
    P[1, 0] = [1.0, 0.0, 0.0]
    R[1, 0] = 1.0 / 3.0
    P[2, 0] = [1.0 - delta, delta, 0.0]
    R[2, 0] = 2.0 / 3.0
    P[2, 1] = [0.0, 0.0, 1.0]
    R[2, 1] = 2.0 / 3.0
    mask = np.array([[True, False], [True, False], [True, True]])
    return _with_mask(P, R, mask, dtype)


def toy3d_2(delta: float = 0.005, epsilon: float = 0.001, *, dtype=None) -> MDP:
    r"""rlexplorer's ``Toy3D_2``: ``Toy3D_1`` with a sticky state 1.

    As :func:`toy3d_1` with its ``delta``, except state 1 (lines 142-145): to 0 w.p.
    ``epsilon``, stays w.p. ``1 - epsilon``, reward 3/4.

    Source: ``RonanFR/UCRL`` at ``ab64d14``, ``rlexplorer/envs/toys/toy.py`` lines
    137-149 (defaults ``delta = 0.005``, ``epsilon = 0.001``, line 139).

    Args:
        delta: as for :func:`toy3d_1`.
        epsilon: the probability of leaving state 1, in ``[0, 1]``.
        dtype: float dtype; default float (float64 under x64).

    Returns:
        The :class:`~jaxmdp.MDP`, ``P`` of shape ``[3, 2, 3]``.

    Raises:
        ValueError: for ``delta`` or ``epsilon`` outside ``[0, 1]``, naming it.
    """
    epsilon = check_probability("epsilon", epsilon)
    mdp = toy3d_1(delta, dtype=np.float64)
    P, R = np.array(mdp.P), np.array(mdp.R)
    P[1, 0] = [epsilon, 1.0 - epsilon, 0.0]
    R[1, 0] = 3.0 / 4.0
    return _with_mask(P, R, np.asarray(mdp.mask), dtype)


def toy3d_weak(*, dtype=None) -> MDP:
    r"""The weakly communicating toy of the TUCRL runs: :func:`toy3d_1` with ``delta = 0``.

    State 0 goes to 2, state 2 goes to 0 (action 0) or stays (action 1), state 1 goes to
    0: no policy reaches state 1 from state 0 (or from 2). The optimal gain is 2/3 from
    every state; the diameter is infinite.

    Source: ``RonanFR/UCRL`` at ``ecf4acc``, ``examples/toy3d_slurm.bash`` line 16
    (``DELTA=0.``, the runs of UCRL, SCAL and TUCRL of line 22) and
    ``examples/example_toy1.py`` (``--mdp_delta``, default ``0.``, passed to
    ``Toy3D_1(delta=...)``).

    Args:
        dtype: float dtype; default float (float64 under x64).

    Returns:
        The :class:`~jaxmdp.MDP`, ``P`` of shape ``[3, 2, 3]``.
    """
    return toy3d_1(0.0, dtype=dtype)


def three_state(delta: float = 0.005, *, dtype=None) -> MDP:
    r"""StatisticalRL's ``ThreeState``.

    Actions ``0 = "R"``, ``1 = "L"`` (the source's order). Deterministic rewards
    (``fixed_reward=True``, the default):

    * state 0, both actions: to 1 w.p. ``delta``, to 2 w.p. ``1 - delta``; reward 0;
    * state 1, both actions: to 0; reward 1/3;
    * state 2, action 0: stays; action 1: to 1 w.p. ``delta``, to 0 w.p. ``1 - delta``;
      reward 2/3 for both.

    Start state 0 (line 16). Optimal gain 2/3 (action 0 in state 2).

    Source: ``StatisticalRL/environments``,
    ``src/statisticalrl_environments/MDPs_discrete/envs/ThreeStateMDP.py`` lines 7-92,
    with ``delta = 0.005`` as registered for ``"three-state"`` (``register.py`` line
    274).

    Args:
        delta: the probability ``delta`` in ``[0, 1]``.
        dtype: float dtype; default float (float64 under x64).

    Returns:
        The :class:`~jaxmdp.MDP`, ``P`` of shape ``[3, 2, 3]``.

    Raises:
        ValueError: for ``delta`` outside ``[0, 1]``, naming it.
    """
    delta = check_probability("delta", delta)
    P = np.zeros((3, 2, 3))
    R = np.zeros((3, 2))
    P[0, :] = [0.0, delta, 1.0 - delta]
    P[1, :] = [1.0, 0.0, 0.0]
    R[1, :] = 1.0 / 3.0
    P[2, 0] = [0.0, 0.0, 1.0]
    P[2, 1] = [1.0 - delta, delta, 0.0]
    R[2, :] = 2.0 / 3.0
    return as_mdp(P, R, dtype)


def nasty(delta: float = 0.005, epsilon: float = 0.05, *, dtype=None) -> MDP:
    r"""StatisticalRL's ``Nasty``: two loops of three states behind a hub.

    Actions ``0 = "R"``, ``1 = "L"``. State 0 (the hub, reward 0): action 0 stays w.p.
    ``delta`` and goes to 1 otherwise; action 1 stays w.p. ``delta`` and goes to 4
    otherwise. The loop ``1 -> {2, 0} -> ...``: state 1 goes to 2 or 0 w.p. 1/2 each,
    2 to 3, 3 to 1, reward 0.99. The loop of 4: state 4 goes to 5 or 0 w.p. 1/2 each, 5
    to 6, 6 to 4, reward ``0.99 - epsilon``. Both actions are the same outside the hub.
    Deterministic rewards (``fixed_reward=True``). Start state 0 (line 104).

    Source: ``StatisticalRL/environments``,
    ``src/statisticalrl_environments/MDPs_discrete/envs/ThreeStateMDP.py`` lines 95-275,
    with ``delta = 0.005, epsilon = 0.05`` as registered for ``"nasty"``
    (``register.py`` line 275; the class default is ``epsilon = 0.005``).

    Args:
        delta: the hub's probability of staying, in ``[0, 1]``.
        epsilon: the second loop's reward deficit, in ``[0, 0.99]``.
        dtype: float dtype; default float (float64 under x64).

    Returns:
        The :class:`~jaxmdp.MDP`, ``P`` of shape ``[7, 2, 7]``.

    Raises:
        ValueError: for ``delta`` outside ``[0, 1]`` or ``epsilon`` outside
            ``[0, 0.99]``, naming it.
    """
    delta = check_probability("delta", delta)
    epsilon = check_probability("epsilon", epsilon)
    if epsilon > 0.99:
        raise ValueError(f"epsilon must lie in [0, 0.99] (rewards 0.99 - epsilon >= 0), "
                         f"got {epsilon!r}")
    P = np.zeros((7, 2, 7))
    R = np.zeros((7, 2))
    P[0, 0, 0], P[0, 0, 1] = delta, 1.0 - delta
    P[0, 1, 0], P[0, 1, 4] = delta, 1.0 - delta
    for first, reward in ((1, 0.99), (4, 0.99 - epsilon)):
        P[first, :, first + 1] = 0.5
        P[first, :, 0] = 0.5
        P[first + 1, :, first + 2] = 1.0
        P[first + 2, :, first] = 1.0
        R[first:first + 3, :] = reward
    return as_mdp(P, R, dtype)


def _wei_mdp(costs: np.ndarray, p: np.ndarray, dtype) -> MDP:
    """Wei et al.'s ``(costs [S, A], p [A, S, S'])`` as rewards ``1 - cost`` and
    ``P[s, a, s']``."""
    return as_mdp(np.transpose(p, (1, 0, 2)), 1.0 - costs, dtype)


def jump_riverswim(*, dtype=None) -> MDP:
    r"""Wei et al.'s ``JumpRiverSwimEnv``: RiverSwim with a jump to any state.

    Six states, actions ``0`` (left) and ``1`` (right), as the source orders them. With
    ``e = 0.01 / 6``: action 0 moves left (from 0: stays) w.p. ``1 - 5e`` and to each other
    state w.p. ``e``; action 1 from ``0 < s < 5`` moves right w.p. ``0.3 - 5e``, stays
    w.p. ``0.6 + e`` and moves left w.p. ``0.1 + e``, from 0 stays w.p. ``0.7 + e`` and
    moves right w.p. ``0.3 - 5e``, from 5 moves left w.p. ``0.7 + e`` and stays w.p.
    ``0.3 - 5e``; every other state w.p. ``e`` (lines 119-131). Costs ``c(0, 0) = 0.8``,
    ``c(5, 1) = 0``, all others 1 (lines 112-117).

    **Rewards.** The source's rewards are ``-c`` (line 24); here ``r = 1 - c`` in
    ``[0, 1]`` (``r(0, 0) = 0.2``, ``r(5, 1) = 1``, all others 0): every gain is shifted
    by 1 and regrets are unchanged. Start state 0 (line 65).

    Source: ``bahh723/model-free-rl-algos`` (Wei, Jafarnia-Jahromi, Luo, Sharma & Jain,
    "Model-free reinforcement learning in infinite-horizon average-reward Markov decision
    processes", ICML 2020), ``environment.py`` lines 105-133.

    Args:
        dtype: float dtype; default float (float64 under x64).

    Returns:
        The :class:`~jaxmdp.MDP`, ``P`` of shape ``[6, 2, 6]``.
    """
    e = 1e-2 / 6
    costs = np.array([[0.8, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 0]], float)
    p = np.array([[[1 - 5 * e, e, e, e, e, e],
                   [1 - 5 * e, e, e, e, e, e],
                   [e, 1 - 5 * e, e, e, e, e],
                   [e, e, 1 - 5 * e, e, e, e],
                   [e, e, e, 1 - 5 * e, e, e],
                   [e, e, e, e, 1 - 5 * e, e]],
                  [[.7 + e, .3 - 5 * e, e, e, e, e],
                   [.1 + e, .6 + e, .3 - 5 * e, e, e, e],
                   [e, .1 + e, .6 + e, .3 - 5 * e, e, e],
                   [e, e, .1 + e, .6 + e, .3 - 5 * e, e],
                   [e, e, e, .1 + e, .6 + e, .3 - 5 * e],
                   [e, e, e, e, .7 + e, .3 - 5 * e]]])
    return _wei_mdp(costs, p, dtype)


def random_mdp_wei(seed: int = 3, num_states: int = 6, num_actions: int = 2, *,
                   dtype=None) -> MDP:
    r"""Wei et al.'s ``RandomMDPEnv``: costs uniform on ``{0, 0.1, ..., 1}``, rows
    uniform then normalised, drawn by NumPy's legacy generator.

    With ``rs = numpy.random.RandomState(seed)`` (the stream of ``numpy.random.seed``):
    ``costs = rs.randint(11, size=(S, A)) / 10`` (line 94), then for each action ``a``
    ``m = rs.rand(S, S)`` and ``p[a] = m / m.sum(1)`` (lines 98-101). The defaults are
    the instance the source's ``main.py`` builds (``np.random.seed(3)``, line 40, then
    ``RandomMDPEnv(nb_states=6, nb_actions=2)``, line 113, with nothing drawn between).
    Rewards ``1 - cost`` as for :func:`jump_riverswim`. Start state 0.

    Source: ``bahh723/model-free-rl-algos``, ``environment.py`` lines 82-102 and
    ``main.py`` lines 39-40, 113.

    Args:
        seed: the NumPy seed (default 3).
        num_states: ``S`` (default 6).
        num_actions: ``A`` (default 2).
        dtype: float dtype; default float (float64 under x64).

    Returns:
        The :class:`~jaxmdp.MDP`, ``P`` of shape ``[S, A, S]``.

    Raises:
        ValueError: for a seed or size that is not a non-negative (positive) int.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    for name, value in (("num_states", num_states), ("num_actions", num_actions)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    rs = np.random.RandomState(int(seed))
    costs = rs.randint(11, size=(num_states, num_actions)) / 10.0
    p = np.zeros((num_actions, num_states, num_states))
    for a in range(num_actions):
        m = rs.rand(num_states, num_states)
        p[a] = m / np.sum(m, axis=1)[:, None]
    return _wei_mdp(costs, p, dtype)
