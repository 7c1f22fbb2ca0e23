r"""Optimistic discounted Q-learning (Wei et al. 2020), a model-free baseline.

Wei, Jafarnia-Jahromi, Luo, Sharma & Jain, "Model-free Reinforcement Learning in
Infinite-horizon Average-reward Markov Decision Processes", ICML 2020, Algorithm 1, as
the authors' code runs it (``bahh723/model-free-rl-algos``, ``agent.py``, class
``OptimisticDiscountedAgent``, lines 59-103). Registered as ``"optimistic_q"``.

With ``H = gamma / (1 - gamma)`` (``agent.py`` line 67; ``gamma = 0.99``, ``c = 1``
are the defaults there and the values ``main.py`` lines 12-20 give to reproduce the
paper), every pair starts at ``Q = Q_hat = H`` and every state at ``V_hat = H``
(lines 77-79). In state ``s`` the agent plays

.. math:: a = \arg\max_{a \in A(s)} \hat Q(s, a)

(the lowest index among ties, ``np.argmax``, line 83), and after observing reward ``r``
and next state ``s'`` it updates, with ``n`` the pair's visits including this one
(lines 86-93):

.. math::

    b = c \sqrt{H / n}, \qquad \alpha = \frac{H + 1}{H + n},

    Q(s, a) \leftarrow (1 - \alpha) Q(s, a) + \alpha (r + \gamma \hat V(s') + b),

    \hat Q(s, a) \leftarrow \min(\hat Q(s, a), Q(s, a)), \qquad
    \hat V(s) \leftarrow \max_{a'} \hat Q(s, a').

``Q`` is averaged with its own previous value (not with ``Q_hat``), and ``V_hat`` is
refreshed at the state just left, ``s``. Under :func:`jaxmdp.simulate` the update of a
round happens at the next round, when ``s'`` is observed: the reward is the difference of
the pair's reward sums (``Observation.reward_sums``) across the round (exact in float64;
in float32 to about ``1e-7`` times the sum), and ``n`` counts the agent's own updates
(initial counts given to the simulator are not updates). The agent always learns from the observed
rewards (it has no model, so ``known_rewards`` does not apply); rewards are assumed to lie
in ``[0, 1]``, which makes ``H`` an upper bound of the discounted values.

**The paper's horizon.** With ``horizon_h=H`` the agent uses that ``H`` and
``gamma = 1 - 1/H`` (the paper's relation; the ``gamma`` option is then not used).
:func:`theory_horizon` gives the theory-driven value
``min(sqrt(sp(v*) T / (S A)), (T / (S A ln(4 T / delta)))^(1/3))``, as the Colosseum
implementation computes it (``colosseum/agent/agents/infinite_horizon/q_learning.py``,
``get_H``, lines 20-44); the paper's bonus is then ``c = 4 sp(v*) sqrt(ln(2 T / delta))``
(Colosseum lines 96-104 write the bonus as ``4 sp sqrt(H / n ln(2 T / delta))``).
``horizon_h`` is a number: the agent is not told ``T`` or the span, so the caller
computes it.

**Colosseum's version differs** (``QLearningContinuous``, same file, lines 84-110): it
averages the *minimised* ``Q_hat`` (``Q_main = (1 - alpha) Q[s, a] + ...`` where its
``Q`` is the running minimum, lines 106-109), refreshes ``V`` at the *next* state ``s'``
(line 110: ``V[s_tp1] = Q[s_tp1].max()``) rather than at ``s``, floors ``alpha`` at
``min_at`` (line 95), uses the theory-driven ``H`` with ``gamma = 1 - 1/H`` by default
(lines 70-77) and the bonus above (with its ``confidence = 0.95`` in the place of
``delta``), and its actor plays uniformly at random among the maximisers of the
minimised ``Q`` (``colosseum/agent/actors/Q_values_actor.py`` line 88).
jaxmdp follows the authors' code.

**Action order.** Ties go to the lowest index, so the initial all-``H`` table makes the
agent play action 0 until it is visited: on StatisticalRL's river-swim (action 0 =
right) that is the optimal action, on jaxmdp's ``riverswim-6`` (action 0 = left) it is
not, and the regret differs a lot between the two numberings of the same MDP.

Example:
    >>> import jaxmdp as jm
    >>> agent = jm.get_agent("optimistic_q")
    >>> agent.name, agent.config.gamma, agent.config.c, agent.config.horizon_h
    ('optimistic_q', 0.99, 1.0, None)
    >>> traj = jm.simulate(jm.envs.make("riverswim-6"), agent, horizon=50,
    ...                    replications=2, progress=False)
    >>> traj.regret.shape
    (2, 50)
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxmdp.agents.options import check_options, option, real
from jaxmdp.agents.protocol import Agent, EnvSpec, Observation

__all__ = ["QConfig", "QState", "optimistic_q_agent", "q_update", "theory_horizon"]


@dataclasses.dataclass(frozen=True)
class QConfig:
    """Options of optimistic Q-learning (every field enters the agent's equality and hash).

    Attributes:
        gamma: discount factor in ``(0, 1)``; ``H = gamma / (1 - gamma)`` when
            ``horizon_h`` is None.
        c: bonus scale ``>= 0``, ``b = c sqrt(H / n)``.
        horizon_h: ``H >= 1`` itself (then ``gamma = 1 - 1/H``), or None.
    """

    gamma: float = option(0.99, real(low=0.0, high=1.0, low_open=True, high_open=True))
    c: float = option(1.0, real(low=0.0))
    horizon_h: float | None = option(None, real(low=1.0, optional=True))

    def __post_init__(self):
        check_options(self)


class QState(NamedTuple):
    """Optimistic Q-learning's state for one replication.

    Attributes:
        q: ``Q[s, a]``, the averaged estimates, ``[S, A]``.
        q_hat: ``Q_hat[s, a]``, the running minimum of ``Q``, ``[S, A]``.
        v_hat: ``V_hat[s]``, ``[S]``.
        visits: the agent's own update counts ``n[s, a]``, int32 ``[S, A]``.
    """

    q: jax.Array
    q_hat: jax.Array
    v_hat: jax.Array
    visits: jax.Array


def horizon_and_gamma(config: QConfig) -> tuple:
    """``(H, gamma)`` of a configuration: ``(gamma / (1 - gamma), gamma)`` (authors'
    ``agent.py`` line 67) or ``(horizon_h, 1 - 1 / horizon_h)`` (the paper); Python floats
    or, for a swept option, traced scalars."""
    if config.horizon_h is None:
        return config.gamma / (1.0 - config.gamma), config.gamma
    return config.horizon_h, 1.0 - 1.0 / config.horizon_h


def theory_horizon(num_states: int, num_actions: int, horizon: int, span: float,
                   delta: float) -> float:
    r"""The theory-driven ``H = min(sqrt(sp T / (S A)), (T / (S A ln(4 T / delta)))^(1/3))``.

    As Colosseum's ``get_H`` computes it for Wei et al.'s algorithm
    (``colosseum/agent/agents/infinite_horizon/q_learning.py`` lines 20-44, exponent
    ``0.333`` there, ``1/3`` here).

    Args:
        num_states: ``S >= 1``.
        num_actions: ``A >= 1``.
        horizon: ``T >= 1``.
        span: ``sp(v*) > 0`` (or an upper bound of it).
        delta: failure probability in ``(0, 1)``.

    Returns:
        ``H`` (a float).

    Raises:
        ValueError: for an argument outside its range, naming it.

    Example:
        >>> round(theory_horizon(6, 2, 10**6, 5.0, 0.05), 3)
        16.606
    """
    for name, value, low in (("num_states", num_states, 1), ("num_actions", num_actions, 1),
                             ("horizon", horizon, 1)):
        if not isinstance(value, numbers.Integral) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    if not (isinstance(span, numbers.Real) and span > 0):
        raise ValueError(f"span must be a positive number, got {span!r}")
    if not (isinstance(delta, numbers.Real) and 0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    sa = num_states * num_actions
    return min(math.sqrt(span * horizon / sa),
               (horizon / (sa * math.log(4 * horizon / delta))) ** (1.0 / 3.0))


def q_update(state: QState, s, a, reward, next_state, horizon_h, gamma, c) -> QState:
    """One update of the authors' ``OptimisticDiscountedAgent.update`` (lines 86-93).

    Args:
        state: the :class:`QState` before the update.
        s: the state the transition left (int scalar).
        a: the action played (int scalar).
        reward: the observed reward (scalar).
        next_state: ``s'`` (int scalar).
        horizon_h: ``H`` (Python float).
        gamma: discount factor (Python float).
        c: bonus scale (Python float).

    Returns:
        The :class:`QState` after the update.

    Example:
        >>> import jax.numpy as jnp
        >>> st = QState(jnp.full((2, 2), 99.0), jnp.full((2, 2), 99.0), jnp.full(2, 99.0),
        ...             jnp.zeros((2, 2), jnp.int32))
        >>> new = q_update(st, 0, 1, 1.0, 1, 99.0, 0.99, 1.0)
        >>> round(float(new.q[0, 1]), 4)  # alpha = 1: r + gamma * 99 + sqrt(99)
        108.9599
        >>> float(new.q_hat[0, 1]), int(new.visits[0, 1])
        (99.0, 1)
    """
    visits = state.visits.at[s, a].add(1)
    n = visits[s, a].astype(state.q.dtype)
    bonus = c * jnp.sqrt(horizon_h / n)
    alpha = (horizon_h + 1.0) / (horizon_h + n)
    target = reward + gamma * state.v_hat[next_state] + bonus
    q_sa = (1.0 - alpha) * state.q[s, a] + alpha * target
    q = state.q.at[s, a].set(q_sa)
    q_hat = state.q_hat.at[s, a].set(jnp.minimum(state.q_hat[s, a], q_sa))
    v_hat = state.v_hat.at[s].set(jnp.max(q_hat[s]))
    return state._replace(q=q, q_hat=q_hat, v_hat=v_hat, visits=visits)


def _init(key, spec: EnvSpec, config: QConfig) -> QState:
    del key
    dtype = jnp.asarray(spec.rewards).dtype
    h, _ = horizon_and_gamma(config)
    S, A = spec.num_states, spec.num_actions
    return QState(jnp.full((S, A), h, dtype), jnp.full((S, A), h, dtype),
                  jnp.full((S,), h, dtype), jnp.zeros((S, A), jnp.int32))


def _step(key, state: QState, obs: Observation, spec: EnvSpec, config: QConfig):
    del key
    h, gamma = horizon_and_gamma(config)
    x = obs.state
    # The update of the previous round's pair with its reward (none at the first round).
    seen = obs.previous_state >= 0
    ps, pa = jnp.maximum(obs.previous_state, 0), jnp.maximum(obs.previous_action, 0)
    reward = jnp.asarray(obs.reward).astype(state.q.dtype)
    updated = q_update(state, ps, pa, reward, x, h, gamma, config.c)
    state = jax.tree.map(lambda new, old: jnp.where(seen, new, old), updated, state)
    mask = jnp.asarray(spec.mask, bool)[x]
    action = jnp.argmax(jnp.where(mask, state.q_hat[x], -jnp.inf)).astype(jnp.int32)
    return action, state


def optimistic_q_agent(*, gamma: float = 0.99, c: float = 1.0,
                       horizon_h: float | None = None) -> Agent:
    """Optimistic discounted Q-learning (Wei et al. 2020, the authors' code), configured.

    Args:
        gamma: discount factor in ``(0, 1)``; ``H = gamma / (1 - gamma)``.
        c: bonus scale ``>= 0``.
        horizon_h: ``H >= 1`` to set ``H`` directly (then ``gamma = 1 - 1/H``, e.g.
            :func:`theory_horizon`), or None.

    Returns:
        The :class:`~jaxmdp.Agent` named ``"optimistic_q"``.

    Raises:
        ValueError: for an option outside its range or of the wrong type, naming it.
    """
    config = QConfig(gamma, c, horizon_h)
    return Agent("optimistic_q", _init, _step, config)
