r"""gymnasium both ways: tabular gymnasium environments as MDPs, MDPs as gymnasium envs.

Needs the ``gym`` extra (``pip install "jaxmdp[gym]"``, which installs ``gymnasium``);
gymnasium is imported when a function here is called, not when jaxmdp is.

**From gymnasium** (:func:`from_gymnasium`). A tabular gymnasium environment exposes its
transition table as ``env.unwrapped.P[s][a]``, a list of ``(probability, next_state,
reward, terminated)`` (the ``toy_text`` environments ``FrozenLake-v1``, ``Taxi-v4``,
``CliffWalking-v1`` of gymnasium 1.x; earlier releases call the last two ``Taxi-v3``
and ``CliffWalking-v0``). Episodes end; an average-reward MDP does not, so the
conversion uses the **restart convention**: a transition that terminates the episode
pays its reward and then moves to a state drawn from the initial distribution
(``env.unwrapped.initial_state_distrib``), as ``reset`` would. So

.. math:: P[s, a, \cdot] = \sum_{(p, y, r, \text{term})} p \, (\mathbb{1}[\neg\text{term}]
   \, e_y + \mathbb{1}[\text{term}] \, \mu_0), \qquad
   R[s, a] = \sum_{(p, y, r, \text{term})} p \, r,

with :math:`\mu_0` the initial distribution. The states a terminating transition would
enter (FrozenLake's holes and goal, Taxi's delivered passenger) are then never entered
from the start: the MDP is weakly communicating and its diameter infinite, while its
optimal gain is the same from every state. Time limits (``max_episode_steps``) are not
part of the MDP and are ignored. ``R`` holds the mean reward of each pair; jaxmdp draws
observed rewards around it by the MDP's reward law (``"deterministic"``: the mean), not
jointly with the next state as gymnasium does (FrozenLake pays 1 exactly when it enters
the goal).

**States.** jaxmdp's simulations start in state 0, so states ``0`` and ``s0`` exchange
numbers, where ``s0`` is the lowest-numbered state of positive initial probability
(FrozenLake: 0, CliffWalking: 36, the point masses of their starts; Taxi draws its start
among 300 states, the first of them 1); the other states keep gymnasium's numbers.

**Rewards** must lie in ``[0, 1]`` (the regret bounds and the learned-reward agents
assume it). A table with rewards outside raises ``ValueError`` unless ``rescale=True``,
which maps ``[r_min, r_max]`` (the table's smallest and largest reward) affinely onto
``[0, 1]``: gains become ``(g - r_min) / (r_max - r_min)`` and regrets are divided by
``r_max - r_min``.

**To gymnasium** (:func:`to_gymnasium`). A :class:`gymnasium.Env` with
``Discrete(S)`` observations and ``Discrete(A)`` actions that follows an
:class:`~jaxmdp.MDP`: ``reset(seed=...)`` returns state 0, ``step(a)`` draws the next
state from ``P[s, a]`` and the reward by the MDP's reward law with the environment's
``np_random``; episodes never terminate (``terminated = truncated = False``). It also
exposes ``P`` and ``initial_state_distrib`` in gymnasium's tabular form, so
``from_gymnasium(to_gymnasium(mdp))`` gives ``mdp`` back.

Example:
    >>> import gymnasium
    >>> import jaxmdp as jm
    >>> lake = jm.envs.from_gymnasium(gymnasium.make("FrozenLake-v1"))
    >>> lake.P.shape
    (16, 4, 16)
    >>> env = jm.envs.to_gymnasium(jm.envs.make("riverswim-6"))
    >>> env.reset(seed=0)
    (0, {})
"""

from __future__ import annotations

import numpy as np

from jaxmdp.envs._common import float_dtype
from jaxmdp.mdp import MDP

__all__ = ["from_gymnasium", "to_gymnasium"]


def _gymnasium():
    try:
        import gymnasium
    except ImportError as error:  # pragma: no cover - depends on the installation
        raise ImportError("jaxmdp's gymnasium adapters need gymnasium: "
                          "pip install 'jaxmdp[gym]'") from error
    return gymnasium


def _swap(num_states: int, start: int) -> np.ndarray:
    order = np.arange(num_states)
    order[[0, start]] = order[[start, 0]]
    return order


def from_gymnasium(env, *, rescale: bool = False, initial_distribution=None,
                   dtype=None) -> MDP:
    """The average-reward MDP of a tabular gymnasium environment (module docstring).

    Args:
        env: a gymnasium environment (wrapped or not) with ``Discrete`` observation and
            action spaces whose ``unwrapped`` has the table ``P[s][a]``.
        rescale: map the table's rewards affinely onto ``[0, 1]`` (default False: rewards
            outside ``[0, 1]`` raise).
        initial_distribution: the restart law ``[S]``; default
            ``env.unwrapped.initial_state_distrib``.
        dtype: float dtype; default float (float64 under x64).

    Returns:
        The :class:`~jaxmdp.MDP`, ``P`` of shape ``[S, A, S]``, states ``0`` and the first
        start state exchanged (module docstring); an action missing from ``P[s]`` is inadmissible
        (``mask[s, a]`` False, its row zero).

    Raises:
        ValueError: for an environment without a tabular ``P`` or ``Discrete`` spaces,
            an initial distribution that is missing or not a distribution over the ``S``
            states, or, with ``rescale=False``, a reward outside ``[0, 1]`` (the message
            names the pair and the value).

    Example:
        >>> import gymnasium
        >>> import jaxmdp as jm
        >>> lake = jm.envs.from_gymnasium(gymnasium.make("FrozenLake-v1"))
        >>> [round(float(p), 4) for p in lake.P[14, 2, [0, 10, 14]]]  # 1/3 to the goal
        [0.3333, 0.3333, 0.3333]
    """
    gymnasium = _gymnasium()
    Discrete = gymnasium.spaces.Discrete
    if not isinstance(getattr(env, "observation_space", None), Discrete) or not isinstance(
            getattr(env, "action_space", None), Discrete):
        raise ValueError(f"env must have Discrete observation and action spaces, got "
                         f"{getattr(env, 'observation_space', None)!r} and "
                         f"{getattr(env, 'action_space', None)!r}")
    if not isinstance(rescale, bool):
        raise ValueError(f"rescale must be a bool, got {rescale!r}")
    inner = env.unwrapped
    table = getattr(inner, "P", None)
    if not isinstance(table, dict):
        raise ValueError(f"env.unwrapped must expose its transition table P[s][a] as a "
                         f"dict, got {type(table).__name__} for {type(inner).__name__}")
    S, A = int(env.observation_space.n), int(env.action_space.n)
    if initial_distribution is None:
        initial_distribution = getattr(inner, "initial_state_distrib", None)
        if initial_distribution is None:
            raise ValueError(f"{type(inner).__name__} has no initial_state_distrib: pass "
                             f"initial_distribution=, got None")
    mu0 = np.asarray(initial_distribution, np.float64)
    if mu0.shape != (S,) or np.any(mu0 < 0) or abs(mu0.sum() - 1.0) > 1e-9:
        raise ValueError(f"initial_distribution must be a distribution over the {S} states, "
                         f"got {initial_distribution!r}")
    P = np.zeros((S, A, S))
    R = np.zeros((S, A))
    mask = np.zeros((S, A), bool)
    low, high = np.inf, -np.inf
    for s in range(S):
        for a in range(A):
            mask[s, a] = a in table[s]  # an action missing from the table is inadmissible
            for probability, y, reward, terminated in table[s].get(a, ()):
                if terminated:
                    P[s, a] += probability * mu0
                else:
                    P[s, a, y] += probability
                R[s, a] += probability * reward
                if not rescale and not 0.0 <= reward <= 1.0:
                    raise ValueError(
                        f"rewards must lie in [0, 1], got reward {reward!r} on "
                        f"(state {s}, action {a}) -> {y} with rescale=False; pass "
                        f"rescale=True to map the table's rewards onto [0, 1]")
                low, high = min(low, reward), max(high, reward)
    if rescale:
        R = (R - low) / (high - low) if high > low else np.zeros_like(R)
    start = int(np.flatnonzero(mu0)[0])
    if start != 0:
        order = _swap(S, start)
        P = P[order][:, :, order]
        R = R[order]
        mask = mask[order]
    dtype = float_dtype(dtype)
    return MDP(P.astype(dtype), R.astype(dtype), mask)


def to_gymnasium(mdp: MDP):
    """A :class:`gymnasium.Env` that follows ``mdp`` (module docstring).

    Args:
        mdp: one (unbatched) :class:`~jaxmdp.MDP`.

    Returns:
        The environment: ``reset(seed=None, options=None) -> (0, {})``,
        ``step(action) -> (next_state, reward, False, False, {})``; an inadmissible
        action raises ``ValueError``.

    Raises:
        ValueError: for a batched MDP.

    Example:
        >>> import jaxmdp as jm
        >>> env = jm.envs.to_gymnasium(jm.envs.make("riverswim-6"))
        >>> _ = env.reset(seed=1)
        >>> state, reward, terminated, truncated, info = env.step(0)
        >>> state, reward, terminated
        (0, 0.005, False)
    """
    gymnasium = _gymnasium()
    if not isinstance(mdp, MDP):
        raise ValueError(f"mdp must be a jaxmdp.MDP, got {type(mdp).__name__}")
    if np.ndim(mdp.P) != 3:
        raise ValueError(f"mdp must be one MDP, got a batch with P of shape {mdp.P.shape}")
    P = np.asarray(mdp.P, np.float64)
    R = np.asarray(mdp.R, np.float64)
    mask = np.asarray(mdp.mask, bool)
    law, sigma = mdp.reward_law, float(mdp.reward_sigma)
    S, A = R.shape
    cumulative = np.cumsum(P, axis=-1)

    class MDPEnv(gymnasium.Env):
        """A jaxmdp MDP behind the gymnasium interface (see :func:`to_gymnasium`)."""

        metadata = {"render_modes": []}

        def __init__(self):
            self.observation_space = gymnasium.spaces.Discrete(S)
            self.action_space = gymnasium.spaces.Discrete(A)
            self.initial_state_distrib = np.eye(S)[0]
            self.P = {s: {a: [(float(P[s, a, y]), y, float(R[s, a]), False)
                              for y in np.flatnonzero(P[s, a])]
                          for a in range(A) if mask[s, a]} for s in range(S)}
            self.mdp = mdp
            self.s = 0

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.s = 0
            return self.s, {}

        def step(self, action):
            a = int(action)
            if not (0 <= a < A and mask[self.s, a]):
                raise ValueError(f"action must be admissible in state {self.s}, got "
                                 f"{action!r}")
            s = self.s
            y = min(int(np.searchsorted(cumulative[s, a], self.np_random.random(),
                                        side="right")), S - 1)
            if law == "bernoulli":
                reward = float(self.np_random.random() < R[s, a])
            elif law == "gaussian":
                reward = float(R[s, a] + sigma * self.np_random.standard_normal())
            else:
                reward = float(R[s, a])
            self.s = y
            return y, reward, False, False, {}

    return MDPEnv()
