r"""MED-RL: the minimum empirical divergence rule of Honda & Takemura applied to MDPs.

The rule of StatisticalRL's ``learners``
(``src/statisticalrl_learners/MDPs_discrete/MED_RL.py``, class ``MEDRL``, at commit
``6fd6743``), registered as ``"med_rl"``. That repository cites no paper for it (its
``README.md`` lists the name "MED-RL" only); it is the randomised MED policy of Honda &
Takemura (2011) -- play arm ``a`` with probability proportional to
``exp(-n_a K_inf)`` -- put on IMED-RL's model (Pesquerel & Maillard 2022,
:mod:`jaxmdp.agents.imed`): the class is the repository's ``IMEDRL`` (``IMED_RL.py``
lines 62-187) with two lines changed, the index below the level ``n x + ln x`` (line 127,
where ``IMED_RL.py`` line 178 has ``n x + ln n``) and the action drawn with probability
proportional to ``exp(-index)`` (line 136, where ``IMED_RL.py`` line 186 plays
``randamin``). At every round, in the current state ``s`` (line numbers of
``MED_RL.py``):

1. **Model** (lines 26-27, 77-78): ``p_hat[s, a] = (N[s, a, .] + 1/S) / (n[s, a] + 1)``
   and ``r_hat[s, a] = (sum r + 1/2) / (n[s, a] + 1)``
   (:func:`jaxmdp.agents.imed.imed_model`). The reward law of a pair is the empirical
   law of its observed rewards plus one pseudo-observation at ``1/2`` and an atom at
   ``1`` of weight zero (line 45, ``{1: 0, 0.5: 1}``; lines 80-83 count the observed
   values).
2. **Skeleton** (lines 85-87): ``{a : n[s, a] >= ln(max_b n[s, b])^2}`` (all actions
   while ``max_b n <= 1``).
3. **Forcing** (lines 91-92, 130-131): while some action of ``s`` is untried, play the
   least played action of ``s`` (``randamin``: uniformly among the untried ones); the
   value ``phi`` is not updated on such rounds.
4. **Empirical value** (lines 49-67, 133): relative value iteration on the skeleton MDP,
   warm-started from the last ``phi``: Jacobi sweeps ``phi'(y) = max_{a in skeleton(y)}
   r_hat + p_hat . phi``, ``phi' <- phi' - min phi'``, until ``max |phi - phi'| <
   epsilon = 1e-3`` or ``3000`` sweeps (defaults of line 13).
5. **Level** (lines 95-98): ``B = 1 + max phi`` (``max_reward = 1``),
   ``q_a = r_hat + p_hat . phi``, ``mu = max_a q_a`` over all actions of ``s`` (not only
   the skeleton), ``u = B / (B - mu) - 0.01``.
6. **Index** (lines 100-127): ``H_a = ln n_a`` when ``q_a >= mu``; else ``H_a = n_a x_a +
   ln x_a`` with ``x_a = max_{y in [0, u]} E log(B - (V - mu) y)``, ``V = reward +
   phi(next)`` under ``p_hat`` times the reward law of step 1.
7. **Action** (line 136, ``utils.py`` lines 66-72 ``randexp``): ``a`` with probability
   ``exp(-H_a) / sum_b exp(-H_b)`` (drawn as ``jax.random.categorical`` of ``-H``).

How jaxmdp computes what the published code computes:

* ``x_a``: with ``lam = y / B``, ``E log(B - (V - mu) y) = ln B + E log(1 + lam (mu -
  V))``, whose maximum over ``lam in [0, 1 / (B - mu)]`` is ``K_inf`` (Honda & Takemura's
  dual; :func:`jaxmdp.kinf` on the ``3S`` outcomes of (reward atom, next state), whose
  largest value is ``B``). Line 98 stops ``y`` at ``u``, ``lam`` at ``1/(B - mu) -
  0.01/B``: where the maximiser lies beyond, the objective is taken at that end. The
  published code maximises with ``scipy.optimize.minimize_scalar(method='bounded')``
  (Brent, ``xatol = 1e-5``; line 124); jaxmdp's solve is exact to rounding.
* **Observed reward values** come from the reward sums: with the ``"deterministic"`` law
  every observation of a pair is its mean ``sum r / n``; with the ``"bernoulli"`` law
  ``sum r`` ones and ``n - sum r`` zeros. The Gaussian law is rejected (its observed
  values are not kept).
* **Known rewards** (``known_rewards=True``; the published class always learns): ``r_hat``
  is the true mean and the reward law a point mass at it.
* **Admissible actions**: forcing, the level and the sampling run over ``A(s)`` (the
  published class has all actions admissible).

Example:
    >>> import jaxmdp as jm
    >>> jm.get_agent("med_rl").config
    MEDConfig(known_rewards=False, epsilon=0.001, max_steps=3000)

References:
    Honda & Takemura, "An asymptotically optimal policy for finite support models in the
    multiarmed bandit problem", Machine Learning 85(3), 2011. Pesquerel & Maillard,
    "IMED-RL: Regret optimal learning of ergodic Markov decision processes", NeurIPS 2022.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from jaxmdp.agents.imed import imed_model
from jaxmdp.agents.options import boolean, check_options, integer, option, real
from jaxmdp.agents.protocol import Agent, EnvSpec, Observation
from jaxmdp.agents.validation import validate_unit_rewards
from jaxmdp.indices.kl import kinf_solve
from jaxmdp.mdp import check_unit_rewards

__all__ = ["MEDConfig", "MEDState", "med_index", "med_rl_agent", "med_value_iteration"]

#: ``u = B / (B - mu) - Y_MARGIN`` (``MED_RL.py`` line 98).
Y_MARGIN = 1e-2


@dataclasses.dataclass(frozen=True)
class MEDConfig:
    """Options of MED-RL (every field enters the agent's equality and hash).

    Attributes:
        known_rewards: plan with the environment's mean rewards, or learn them (default).
        epsilon: value iteration's stopping threshold on ``max |phi - phi'|``.
        max_steps: value iteration's cap on sweeps.
    """

    known_rewards: bool = option(False, boolean())
    epsilon: float = option(1e-3, real(low=0.0, low_open=True))
    max_steps: int = option(3000, integer())

    def __post_init__(self):
        check_options(self)


class MEDState(NamedTuple):
    """MED-RL's state for one replication.

    Attributes:
        phi: the last empirical value (``min phi = 0``), ``[S]``.
    """

    phi: jax.Array


def med_value_iteration(p_hat, r_hat, skeleton, phi, *, epsilon: float, max_steps: int):
    """Relative value iteration of ``MED_RL.py`` lines 49-67 (module docstring, step 4).

    Args:
        p_hat: ``[S, A, S]``.
        r_hat: ``[S, A]``.
        skeleton: bool ``[S, A]``, never empty in a row.
        phi: the warm start, ``[S]``.
        epsilon: stop when ``max |phi - phi'| < epsilon`` (static).
        max_steps: or after this many sweeps (static).

    Returns:
        The last sweep's ``phi'`` (``min = 0``), ``[S]``.
    """

    def cond(carry):
        steps, _, change = carry
        return (change >= epsilon) & (steps < max_steps)

    def body(carry):
        steps, phi, _ = carry
        values = jnp.where(skeleton, r_hat + p_hat @ phi, -jnp.inf)
        new = jnp.max(values, axis=-1)
        new = new - jnp.min(new)
        return steps + 1, new, jnp.max(jnp.abs(phi - new))

    inf = jnp.asarray(jnp.inf, phi.dtype)
    return lax.while_loop(cond, body, (jnp.int32(0), phi, inf))[1]


def med_index(p_hat, r_hat, n, phi, reward_values, reward_weights, mask):
    """The index ``H`` of the actions of one state (module docstring, steps 5-6).

    Args:
        p_hat: ``[A, S]`` model rows of the state.
        r_hat: ``[A]`` rewards (known or estimated).
        n: ``[A]`` visits, all positive on admissible actions.
        phi: ``[S]``, ``min phi = 0``.
        reward_values: ``[A, K]`` reward atoms of each action.
        reward_weights: ``[A, K]`` their probabilities (rows sum to 1).
        mask: admissible actions, bool ``[A]``.

    Returns:
        ``[A]``: ``ln n`` at the level, ``n x + ln x`` below it.
    """
    bound = 1.0 + jnp.max(phi)
    q = r_hat + p_hat @ phi
    level = jnp.max(jnp.where(mask, q, -jnp.inf))
    # (reward atom k, next state i) outcomes: probability p_hat[i] w[k], value phi[i] + r[k]
    joint = (p_hat[:, :, None] * reward_weights[:, None, :]).reshape(p_hat.shape[0], -1)
    values = (phi[None, :, None] + reward_values[:, None, :]).reshape(p_hat.shape[0], -1)
    solution = jax.vmap(kinf_solve, in_axes=(0, 0, None))(joint, values, level)
    cap = 1.0 / (bound - level) - Y_MARGIN / bound  # y <= u, lam = y / B
    at_cap = jnp.sum(joint * jnp.log1p(cap * (level - values)), axis=-1)
    divergence = jnp.where(solution.multiplier > cap, at_cap, solution.value)
    x = jnp.log(bound) + divergence
    safe_n = jnp.where(n > 0, n, 1.0)
    below = safe_n * x + jnp.log(jnp.where(x > 0, x, 1.0))
    return jnp.where(q >= level, jnp.log(safe_n), below)


def _reward_law(reward_sums, n, rewards, *, known_rewards: bool, reward_law: str):
    """Atoms ``[S, A, 3]`` and weights of each pair's reward law (module docstring)."""
    half, one = jnp.full_like(n, 0.5), jnp.ones_like(n)
    if known_rewards:
        values = jnp.stack([rewards, half, one], axis=-1)
        weights = jnp.stack([one, 0 * n, 0 * n], axis=-1)
        return values, weights
    sums = reward_sums.astype(n.dtype)
    if reward_law == "bernoulli":  # sums ones and n - sums zeros
        low, low_weight, high_weight = 0 * n, n - sums, sums
    else:  # every observation is the mean
        low, low_weight, high_weight = sums / jnp.where(n > 0, n, 1.0), n, 0 * n
    values = jnp.stack([low, half, one], axis=-1)
    weights = jnp.stack([low_weight, one, high_weight], axis=-1) / (n + 1.0)[..., None]
    return values, weights


def _init(key, spec: EnvSpec, config: MEDConfig) -> MEDState:
    del key, config
    return MEDState(jnp.zeros(spec.num_states, jnp.asarray(spec.rewards).dtype))


def _step(key, state: MEDState, obs: Observation, spec: EnvSpec, config: MEDConfig):
    mask = jnp.asarray(spec.mask, bool)
    rewards = jnp.asarray(spec.rewards)
    p_hat, r_hat, skeleton, n = imed_model(obs.counts, obs.reward_sums, rewards, mask,
                                           known_rewards=config.known_rewards)
    x = obs.state
    untried = mask[x] & (n[x] == 0)
    forcing = jnp.any(untried)
    phi = med_value_iteration(p_hat, r_hat, skeleton, state.phi, epsilon=config.epsilon,
                              max_steps=config.max_steps)
    phi = jnp.where(forcing, state.phi, phi)
    values, weights = _reward_law(obs.reward_sums[x], n[x], rewards[x],
                                  known_rewards=config.known_rewards,
                                  reward_law=spec.reward_law)
    index = med_index(p_hat[x], r_hat[x], n[x], phi, values, weights, mask[x])
    logits = jnp.where(forcing, jnp.where(untried, 0.0, -jnp.inf),
                       jnp.where(mask[x], -index, -jnp.inf))
    action = jax.random.categorical(key, logits).astype(jnp.int32)
    return action, MEDState(phi)


def _validate(spec: EnvSpec, config: MEDConfig) -> None:
    validate_unit_rewards(spec, config)
    if config.known_rewards:  # B = 1 + max phi bounds reward + phi (max_reward = 1)
        check_unit_rewards(spec.rewards, spec.mask, "MED-RL's bound B = 1 + max phi "
                           "(MED_RL.py line 95) needs rewards in [0, 1]", "")


def med_rl_agent(*, known_rewards: bool = False, epsilon: float = 1e-3,
                 max_steps: int = 3000) -> Agent:
    """MED-RL (StatisticalRL ``MED_RL.py``), configured.

    Args:
        known_rewards: plan with the environment's mean rewards (a point-mass reward law);
            default False (learned, ``"deterministic"`` or ``"bernoulli"`` rewards in
            ``[0, 1]``).
        epsilon: value iteration's threshold (``MED_RL.py`` line 13: ``1e-3``).
        max_steps: value iteration's cap on sweeps (line 13: ``3000``).

    Returns:
        The :class:`~jaxmdp.Agent` named ``"med_rl"``.

    Raises:
        ValueError: for an option of the wrong type or value, naming it.
    """
    return Agent("med_rl", _init, _step, MEDConfig(known_rewards, epsilon, max_steps),
                 _validate)

