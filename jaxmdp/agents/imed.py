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
   skeleton, by exact policy iteration warm-started from the previous round's policy
   (the ``planner`` option: by default :func:`~jaxmdp.planning.incremental_planner`,
   whose evaluations update the previous inverse for the one row that changed, ``O(S^2)``
   a round; ``"full"``: :func:`~jaxmdp.planning.exact_planner`, an LU solve of each
   evaluation). The level is the skeleton's best empirical value at ``s``:
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
  step), exactly (policy iteration, not a value-iteration tolerance). Between two rounds
  the model changes in the row of the pair just played (its counts, its reward, and the
  skeleton of its state), so the default planner re-solves incrementally: the same policy
  iteration, with each evaluation by Sherman-Morrison updates of the previous inverse plus
  one step of iterative refinement, and a full re-inversion at round 0 and every
  ``refresh_every`` rounds (:mod:`jaxmdp.planning.incremental`). Both planners visit the
  same policies; the bias may differ from an LU solve in its last bits. Solves that stop
  without converging are counted (``Trajectories.unconverged``).
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

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from jaxmdp.agents.options import boolean, check_options, choice, integer, option
from jaxmdp.agents.protocol import Agent, EnvSpec, Observation
from jaxmdp.agents.rounds import check_planner_options, refresh_round
from jaxmdp.agents.validation import validate_unit_rewards
from jaxmdp.indices.kl import kinf
from jaxmdp.mdp import MDP, bernoulli_joint
from jaxmdp.planning import ModelChange, Planner, Status, incremental_planner

__all__ = [
    "INDICES",
    "IMEDConfig",
    "IMEDState",
    "imed_index",
    "imed_model",
    "imed_rewards_and_skeleton",
    "imed_rl_agent",
    "imed_transitions",
    "observe_transitions",
]


#: The index rules of :func:`imed_index`.
INDICES = ("paper", "statisticalrl", "authors")


@dataclasses.dataclass(frozen=True)
class IMEDConfig:
    """Options of IMED-RL (every field enters the agent's equality and hash).

    Attributes:
        known_rewards: plan with the environment's mean rewards, or learn them (default;
            rewards in ``[0, 1]``).
        index: ``"paper"`` (``n K + ln n``), ``"statisticalrl"`` (``n x + ln n``) or
            ``"authors"`` (``n x + ln x``), ``x = ln B + K`` (:func:`imed_index`).
        planner: the :class:`~jaxmdp.planning.Planner` that solves the skeleton MDP each
            round (default :func:`~jaxmdp.planning.incremental_planner`).
        refresh_every: the incremental planner's re-inversion period (``None``: the
            dtype's default).
    """

    known_rewards: bool = option(False, boolean())
    index: str = option("paper", choice(*INDICES))
    planner: Planner = dataclasses.field(default_factory=incremental_planner)
    refresh_every: int | None = option(None, integer())

    def __post_init__(self):
        check_options(self)


class IMEDState(NamedTuple):
    """IMED-RL's state for one replication.

    Attributes:
        planner: the planner's state: its warm start (the skeleton MDP's last optimal
            policy) and whatever it reuses.
        bias: the last empirical optimal bias ``v_hat``, ``[S]``.
        model: ``p_hat`` of the last round, ``[S, A, S]``.
        visits: ``n`` of the last round (float), ``[S, A]``.
        last: ``(x, a)``, the pair played last (its count row changes before the next
            round), int32 ``[2]``.
        unconverged: rounds whose solve did not converge (status not ``CONVERGED``), int32.
    """

    planner: object
    bias: jax.Array
    model: jax.Array
    visits: jax.Array
    last: jax.Array
    unconverged: jax.Array


def imed_transitions(counts, dtype):
    """``(p_hat [S, A, S], n [S, A])``: the transition model of step 1 and the visits.

    Args:
        counts: ``N[s, a, y]``, ``[S, A, S]``.
        dtype: the float dtype of both.
    """
    S = counts.shape[-1]
    n = jnp.sum(counts, axis=-1).astype(dtype)
    return (counts.astype(dtype) + 1.0 / S) / (n + 1.0)[..., None], n


def imed_rewards_and_skeleton(n, reward_sums, rewards, mask, *, known_rewards: bool):
    """``(r_hat [S, A], skeleton bool [S, A])`` of steps 1-2 from the visits ``n``."""
    r_hat = jnp.asarray(rewards) if known_rewards else (
        (reward_sums.astype(n.dtype) + 0.5) / (n + 1.0))
    top = jnp.max(jnp.where(mask, n, 0.0), axis=-1, keepdims=True)
    skeleton = mask & (n >= jnp.log(jnp.maximum(top, 1.0)) ** 2)
    return r_hat, skeleton


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
    p_hat, n = imed_transitions(counts, jnp.asarray(rewards).dtype)
    r_hat, skeleton = imed_rewards_and_skeleton(n, reward_sums, rewards, mask,
                                                known_rewards=known_rewards)
    return p_hat, r_hat, skeleton, n




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
    below = (r_hat + p_hat @ bias) < level
    levels = level - r_hat if known_rewards else jnp.broadcast_to(level, r_hat.shape)
    if index != "paper":
        # These indices use K only below the level: elsewhere the level is put under every
        # value (K = 0 without a root search, and nothing to sum in double precision).
        levels = jnp.where(below, levels, jnp.min(bias) - 1.0)
    if known_rewards:
        divergence = jax.vmap(kinf, in_axes=(0, None, 0))(p_hat, bias, levels)
    else:
        joint, values = bernoulli_joint(p_hat, r_hat, bias)
        divergence = jax.vmap(kinf, in_axes=(0, None, 0))(joint, values, levels)
    tried = n > 0
    safe_n = jnp.where(tried, n, 1.0)
    if index == "paper":
        value = jnp.where(divergence > 0, safe_n * divergence, 0.0) + jnp.log(safe_n)
    else:
        x = jnp.log(1.0 + jnp.max(bias) - jnp.min(bias)) + divergence
        tail = jnp.log(safe_n) if index == "statisticalrl" else jnp.log(x)
        value = jnp.where(below, safe_n * x + tail, jnp.log(safe_n))
    return jnp.where(tried, value, -jnp.inf)


def _init(key, spec: EnvSpec, config: IMEDConfig) -> IMEDState:
    del key
    rewards = jnp.asarray(spec.rewards)
    S, A = spec.num_states, spec.num_actions
    mask = jnp.asarray(spec.mask, bool)
    # The model of zero counts; round 0 rebuilds it from the counts and refreshes the
    # planner.
    p_hat, n = imed_transitions(jnp.zeros((S, A, S), jnp.int32), rewards.dtype)
    planner = config.planner.init(MDP.unchecked(p_hat, rewards, mask))
    return IMEDState(planner, jnp.zeros(S, rewards.dtype), p_hat, n,
                     jnp.zeros(2, jnp.int32), jnp.zeros((), jnp.int32))


def observe_transitions(model, visits, last, counts, refresh):
    """``(p_hat, n)`` of ``counts`` (:func:`imed_transitions`) from those of the last round.

    Only the row of the pair played last (``last = (x, a)``) is recomputed, ``O(S)``, with
    the arithmetic of :func:`imed_transitions` (so bitwise a rebuild); where ``refresh``
    (round 0, and what the agent chooses) everything is rebuilt from ``counts``. Between two
    rounds :func:`jaxmdp.simulate` changes the counts only in that row. Pass an unbatched
    ``refresh`` so that it stays a real branch under ``vmap``.

    Args:
        model: ``p_hat`` of the last round, ``[S, A, S]``.
        visits: ``n`` of the last round (float), ``[S, A]``.
        last: ``(x, a)``, int32 ``[2]``.
        counts: ``N[s, a, y]`` now, ``[S, A, S]``.
        refresh: bool scalar.
    """
    x, a = last[0], last[1]
    dtype = model.dtype
    row = counts[x, a]
    n = jnp.sum(row).astype(dtype)
    model = model.at[x, a].set((row.astype(dtype) + 1.0 / counts.shape[-1]) / (n + 1.0))
    visits = visits.at[x, a].set(n)
    return lax.cond(refresh, lambda _: imed_transitions(counts, dtype), lambda mv: mv,
                    (model, visits))


def _step(key, state: IMEDState, obs: Observation, spec: EnvSpec, config: IMEDConfig):
    del key
    mask = jnp.asarray(spec.mask, bool)
    # Since the last round only the row of the pair played last changed (and the skeleton
    # of its state); round 0 and every refresh_every-th round rebuild the model and start
    # the planner afresh (obs.step is not batched: a real branch under vmap).
    refresh = refresh_round(obs.step, state.model.dtype, config.refresh_every)
    p_hat, n = observe_transitions(state.model, state.visits, state.last, obs.counts, refresh)
    r_hat, skeleton = imed_rewards_and_skeleton(n, obs.reward_sums, spec.rewards, mask,
                                                known_rewards=config.known_rewards)
    change = ModelChange(MDP.unchecked(p_hat, r_hat, skeleton),
                         (state.last[0], state.last[1]), refresh)
    solution, planner_state = config.planner.update(state.planner, change)
    bias = solution.bias
    x = obs.state
    values = r_hat[x] + p_hat[x] @ bias
    level = jnp.max(jnp.where(skeleton[x], values, -jnp.inf))
    index = imed_index(p_hat[x], r_hat[x], n[x], bias, level, config.known_rewards,
                       config.index)
    admissible = mask[x]
    action = jnp.argmin(jnp.where(admissible, index, jnp.inf))
    action = jnp.where(admissible[action], action, jnp.argmax(admissible)).astype(jnp.int32)
    failed = (solution.status != Status.CONVERGED).astype(jnp.int32)
    return action, IMEDState(planner_state, bias, p_hat, n,
                             jnp.stack([x.astype(jnp.int32), action]),
                             state.unconverged + failed)


def imed_rl_agent(*, known_rewards: bool = False, index: str = "paper",
                  planner: Planner | str = "incremental",
                  refresh_every: int | None = None) -> Agent:
    """IMED-RL (Pesquerel & Maillard 2022), configured.

    Args:
        known_rewards: plan with the environment's mean rewards; default False (learned
            rewards in ``[0, 1]``; ``validate`` rejects means outside ``[0, 1]`` and
            Gaussian rewards).
        index: ``"paper"`` (``n K + ln n``, default), ``"statisticalrl"`` (the
            StatisticalRL ``IMED_RL.py`` index ``n x + ln n``) or ``"authors"`` (the
            authors' ``IRL.py`` index ``n x + ln x``), ``x = ln(1 + span v_hat) + K``
            (:func:`imed_index`).
        planner: a :class:`~jaxmdp.planning.Planner`, or ``"incremental"`` (default,
            :func:`~jaxmdp.planning.incremental_planner`) or ``"full"``
            (:func:`~jaxmdp.planning.exact_planner`, an LU solve per evaluation).
        refresh_every: rounds between rebuilds of the model and re-inversions of the
            incremental planner; ``None`` for the dtype's default
            (:func:`jaxmdp.planning.incremental.default_refresh_every`). Between two
            rounds the agent updates only the row of the pair it played, as
            :func:`jaxmdp.simulate` changes the counts; to drive ``step`` otherwise, use
            ``refresh_every=1``.

    Returns:
        The :class:`~jaxmdp.Agent` named ``"imed_rl"``.

    Raises:
        ValueError: for an option of the wrong type, naming it.
    """
    planner = check_planner_options(planner, refresh_every)
    return Agent("imed_rl", _init, _step, IMEDConfig(known_rewards, index, planner,
                                                     refresh_every),
                 validate_unit_rewards)
