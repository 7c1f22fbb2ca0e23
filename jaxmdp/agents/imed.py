r"""IMED-RL: indexed minimum empirical divergence for average-reward MDPs.

Pesquerel & Maillard, "IMED-RL: Regret optimal learning of ergodic Markov decision
processes", NeurIPS 2022. Registered as ``"imed_rl"``.

At every round, in the current state ``s``:

1. **Model.** ``p_hat[s, a] = (N[s, a, .] + 1/S) / (n[s, a] + 1)`` and, when rewards are
   learned (default; rewards in ``[0, 1]``), ``r_hat[s, a] = (sum r + 1/2) / (n + 1)``
   (known rewards: the true means).
2. **Skeleton.** ``S_hat(s') = {a in A(s') : n[s', a] >= ln(max_b n[s', b])^2}`` at every
   state (all admissible actions while ``max_b n <= 1``; never empty, since the most
   played action is in it).
3. **Empirical value.** The optimal bias ``v_hat`` of the model restricted to the
   skeleton, by exact policy iteration (:func:`jaxmdp.policy_iteration`) warm-started from
   the previous round's policy. The level is the skeleton's best empirical value at ``s``:
   ``mu_hat = max_{a in S_hat(s)} r_hat[s, a] + p_hat[s, a] . v_hat``.
4. **Index.** For every admissible ``a``: ``H(s, a) = n[s, a] K(s, a) + ln n[s, a]`` with
   ``K(s, a) = inf{KL(F_hat || G) : E_G[reward + v_hat(next)] >= mu_hat}`` over laws ``G``
   of (reward, next state): with learned rewards the joint law of (reward in {0, 1}, next
   state), ``F_hat = ((1 - r_hat) p_hat, r_hat p_hat)`` on values ``(v_hat, 1 + v_hat)``
   (:func:`jaxmdp.kinf` on ``2S`` outcomes; the Bernoulli law is the extreme ``[0, 1]``
   law of its mean, as in the paper's semi-bounded model with upper bound 1); with known
   rewards ``K = kinf(p_hat, v_hat, mu_hat - r)``. Actions at the level have ``K = 0`` and
   ``H = ln n``; an action that cannot reach the level (``K = +inf``) has ``H = +inf``.
5. **Action.** ``argmin_a H(s, a)`` over all admissible actions (the skeleton shapes only
   the empirical value and the level, so an under-sampled action can still be played and
   join the skeleton).

Choices where the paper leaves things open:

* **Zero counts / the empirical model.** The paper's empirical law is undefined at
  ``n = 0`` and has zeros (multichain empirical MDPs, whose bias is not unique). Here each
  pair carries one pseudo-observation spread uniformly over the next states and a reward
  of 1/2: ``p_hat`` has full support, every policy is unichain, ``v_hat`` is unique, and
  ``p_hat`` differs from the empirical law by ``O(1/n)``. ``K`` is taken for that law over
  all laws on the ``S`` states (the unknown-support case).
* **Untried actions** have ``H = ln 0 = -inf`` and are played first.
* **Planning** happens every round (the paper recomputes the empirical value at every
  step), exactly (policy iteration, not a value-iteration tolerance).
* **Ties**: ``argmin`` takes the lowest action index; policy improvement keeps the
  current action within its tolerance, else the lowest index.
* The skeleton threshold uses ``max_b n[s, b]`` (not the state's visits ``n[s]``).

The StatisticalRL implementation (``learners``, ``IMED_RL.py``) differs: it forces every
action of a state once (least played first, random ties) before using the index, runs
value iteration to a ``1e-3`` tolerance every round, takes the level over all actions
(``IMED_RL.py`` lines 147-148), keeps the empirical reward distribution (not the
Bernoulli extreme) plus a pseudo-observation at 1/2 (its atom at 1 has weight zero, line
96), solves ``x`` by a bounded scalar minimiser and plays ``n x + ln n`` (line 178;
``index="statisticalrl"``).
The authors' repository (``fabienpesquerel/IMED-RL``, ``learners/discreteMDPs/IRL.py``)
has the same model, skeleton and forcing; there the index of an action below the level
is ``n x + ln x`` with ``x = max E log(B - (value - mu_hat) y)`` over
``y in [0, B / (B - mu_hat) - 0.01]``, ``B = 1 + max v_hat`` (``x`` is ``ln B`` plus a
``K``-like dual value; ``index="authors"``), where ours has ``n K + ln n``. With
``index="statisticalrl"`` or ``"authors"`` only the index changes; the other differences
above stay.

Example:
    >>> import jaxmdp as jm
    >>> jm.get_agent("imed_rl").config.known_rewards
    False
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxmdp.agents.protocol import Agent, EnvSpec, Observation
from jaxmdp.agents.validation import validate_unit_rewards
from jaxmdp.indices.kl import kinf
from jaxmdp.mdp import bernoulli_joint
from jaxmdp.planning.policy_iteration import policy_iteration

__all__ = ["INDICES", "IMEDConfig", "IMEDState", "imed_index", "imed_model", "imed_rl_agent"]


class IMEDConfig(NamedTuple):
    """Options of IMED-RL (static).

    Attributes:
        known_rewards: plan with the environment's mean rewards, or learn them (default;
            rewards in ``[0, 1]``).
        index: ``"paper"`` (``n K + ln n``), ``"statisticalrl"`` (``n x + ln n``) or
            ``"authors"`` (``n x + ln x``), ``x = ln B + K`` (:func:`imed_index`).
    """

    known_rewards: bool = False
    index: str = "paper"


class IMEDState(NamedTuple):
    """IMED-RL's state for one replication.

    Attributes:
        policy: the skeleton MDP's last optimal policy (the next warm start), int32 ``[S]``.
        bias: the last empirical optimal bias ``v_hat``, ``[S]``.
    """

    policy: jax.Array
    bias: jax.Array


def imed_model(counts, reward_sums, rewards, mask, *, known_rewards: bool):
    """The model, skeleton and visits of step 1-2 (module docstring).

    Args:
        counts: ``N[s, a, y]``, ``[S, A, S]``.
        reward_sums: sums of observed rewards, ``[S, A]``.
        rewards: the known mean rewards ``[S, A]`` (their dtype is used).
        mask: admissible actions, bool ``[S, A]``.
        known_rewards: use ``rewards`` (static), else ``r_hat``.

    Returns:
        ``(p_hat [S, A, S], r_hat [S, A], skeleton bool [S, A], n [S, A])``.
    """
    dtype = jnp.asarray(rewards).dtype
    S = counts.shape[-1]
    n = jnp.sum(counts, axis=-1).astype(dtype)
    p_hat = (counts.astype(dtype) + 1.0 / S) / (n + 1.0)[..., None]
    r_hat = jnp.asarray(rewards) if known_rewards else (
        (reward_sums.astype(dtype) + 0.5) / (n + 1.0))
    top = jnp.max(jnp.where(mask, n, 0.0), axis=-1, keepdims=True)
    skeleton = mask & (n >= jnp.log(jnp.maximum(top, 1.0)) ** 2)
    return p_hat, r_hat, skeleton, n


#: The index rules of :func:`imed_index`.
INDICES = ("paper", "statisticalrl", "authors")


def imed_index(p_hat, r_hat, n, bias, level, known_rewards: bool, index: str = "paper"):
    """The index ``H(s, a)`` of the actions of one state (module docstring, step 4).

    ``index="paper"``: ``H = n K + ln n``. The published codes maximise
    ``E log(B - (V - mu_hat) y)`` over ``y`` with ``B = 1 + span(v_hat)`` (the upper
    bound of ``V = reward + v_hat(next)`` when ``min v_hat = 0``), whose maximum is
    ``x = ln B + K`` (``log(B - D y) = ln B + log(1 - D y / B)``: the Honda-Takemura dual
    of ``K`` with upper bound ``B``), and play below the level
    ``"statisticalrl"``: ``H = n x + ln n`` (StatisticalRL ``IMED_RL.py`` lines 146,
    178: an extra ``n ln B``) or ``"authors"``: ``H = n x + ln x``
    (``fabienpesquerel/IMED-RL``, ``IRL.py`` line 179); actions at the level get
    ``ln n`` (``IMED_RL.py`` line 153). ``K`` is jaxmdp's (the Bernoulli extreme reward
    law, exact dual); the published codes bound ``y`` by ``B / (B - mu_hat) - 0.01`` and
    use the observed reward values with an atom at 1/2.

    Args:
        p_hat: ``[A, S]`` model rows of the state.
        r_hat: ``[A]`` rewards (known or estimated).
        n: ``[A]`` visits.
        bias: ``v_hat``, ``[S]``.
        level: ``mu_hat``, scalar.
        known_rewards: static; divergence over the next state only.
        index: ``"paper"``, ``"statisticalrl"`` or ``"authors"`` (static).

    Returns:
        ``[A]`` indices: ``-inf`` for untried actions, ``+inf`` where ``K`` is infinite.
    """
    if known_rewards:
        divergence = jax.vmap(kinf, in_axes=(0, None, 0))(p_hat, bias, level - r_hat)
    else:
        joint, values = bernoulli_joint(p_hat, r_hat, bias)
        divergence = jax.vmap(kinf, in_axes=(0, None, None))(joint, values, level)
    tried = n > 0
    safe_n = jnp.where(tried, n, 1.0)
    if index == "paper":
        value = jnp.where(divergence > 0, safe_n * divergence, 0.0) + jnp.log(safe_n)
    else:
        x = jnp.log(1.0 + jnp.max(bias) - jnp.min(bias)) + divergence
        below = (r_hat + p_hat @ bias) < level
        tail = jnp.log(safe_n) if index == "statisticalrl" else jnp.log(x)
        value = jnp.where(below, safe_n * x + tail, jnp.log(safe_n))
    return jnp.where(tried, value, -jnp.inf)


def _init(key, spec: EnvSpec, config: IMEDConfig) -> IMEDState:
    del key, config
    policy = jnp.argmax(jnp.asarray(spec.mask, bool), axis=1).astype(jnp.int32)
    return IMEDState(policy, jnp.zeros(spec.num_states, jnp.asarray(spec.rewards).dtype))


def _step(key, state: IMEDState, obs: Observation, spec: EnvSpec, config: IMEDConfig):
    del key
    mask = jnp.asarray(spec.mask, bool)
    p_hat, r_hat, skeleton, n = imed_model(obs.counts, obs.reward_sums, spec.rewards, mask,
                                           known_rewards=config.known_rewards)
    solution = policy_iteration(p_hat, r_hat, skeleton, state.policy)
    bias = solution.bias
    x = obs.state
    values = r_hat[x] + p_hat[x] @ bias
    level = jnp.max(jnp.where(skeleton[x], values, -jnp.inf))
    index = imed_index(p_hat[x], r_hat[x], n[x], bias, level, config.known_rewards,
                       config.index)
    admissible = mask[x]
    action = jnp.argmin(jnp.where(admissible, index, jnp.inf))
    action = jnp.where(admissible[action], action, jnp.argmax(admissible)).astype(jnp.int32)
    return action, IMEDState(solution.policy.astype(jnp.int32), bias)


def imed_rl_agent(*, known_rewards: bool = False, index: str = "paper") -> Agent:
    """IMED-RL (Pesquerel & Maillard 2022), configured.

    Args:
        known_rewards: plan with the environment's mean rewards; default False (learned
            rewards in ``[0, 1]``; ``validate`` rejects means outside ``[0, 1]`` and
            Gaussian rewards).
        index: ``"paper"`` (``n K + ln n``, default), ``"statisticalrl"`` (the
            StatisticalRL ``IMED_RL.py`` index ``n x + ln n``) or ``"authors"`` (the
            authors' ``IRL.py`` index ``n x + ln x``), ``x = ln(1 + span v_hat) + K``
            (:func:`imed_index`).

    Returns:
        The :class:`~jaxmdp.Agent` named ``"imed_rl"``.

    Raises:
        ValueError: for an option of the wrong type, naming it.
    """
    if not isinstance(known_rewards, bool):
        raise ValueError(f"known_rewards must be a bool, got {known_rewards!r}")
    if index not in INDICES:
        raise ValueError(f"index must be one of {list(INDICES)}, got {index!r}")
    return Agent("imed_rl", _init, _step, IMEDConfig(known_rewards, index),
                 validate_unit_rewards)
