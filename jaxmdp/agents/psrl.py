r"""TSDE: posterior sampling for average reward with dynamic episodes.

Ouyang, Gagrani, Nayyar & Jain, "Learning Unknown Markov Decision Processes: A Thompson
Sampling Approach", NeurIPS 2017, Algorithm 1. Registered as ``"tsde"``.

At the start of episode ``k`` (round ``t_k``) the agent draws an MDP from its posterior,

* transitions ``P~[s, a] ~ Dirichlet(1 + N_{t_k}(s, a, .))`` for every pair (uniform prior),
* rewards, when learned (``known_rewards=False``, rewards in ``[0, 1]``),
  ``R~[s, a] ~ Beta(1 + sum r, 1 + n - sum r)`` (the Bernoulli model's posterior under a
  uniform prior), else the known means,

solves it exactly (:func:`jaxmdp.policy_iteration`, warm-started from the previous
episode's policy; Dirichlet draws are positive so every policy is unichain) and plays its
optimal policy until the episode ends. Episode ``k`` ends at the first round ``t`` with

    ``t > t_k + T_{k-1}``   or   ``N_t(s, a) > 2 N_{t_k}(s, a)`` for some ``(s, a)``,

where ``N_t(s, a)`` counts the visits of ``(s, a)`` before round ``t`` and
``T_{k-1} = t_k - t_{k-1}`` is the previous episode's length: an episode is at most one
round longer than the previous one, and ends the round after a pair's count more than
doubles (the round after the first visit of a pair never visited before the episode).
That round starts episode ``k + 1``. The paper initialises ``t = 1, t_0 = 0``, so
``T_0 = 1``; here ``t_0 = initial_round - 1`` (``initial_round`` is 1 without initial
counts, whose transitions count in ``N``), so again ``T_0 = 1`` and the first episode
lasts at most 2 rounds.

Conventions the paper leaves open: the prior is uniform (Dirichlet(1), Beta(1, 1));
``N`` includes any initial counts given to the simulator; ties in the sampled MDP's
policy improvement keep the current action, else the lowest action index (they have
probability zero).

**Batching.** Each replication starts its episodes at its own rounds; under ``vmap`` a
``lax.cond`` on a batched predicate runs the planning branch for every replication at
every round. The option ``batching`` chooses the episode-start conditional:

* ``"compact"`` (default): a ``custom_vmap`` rule that gathers the replications starting
  an episode into blocks of ``chunk`` and plans only those (a ``while_loop`` over
  blocks; zero iterations when none starts), then scatters the new states back. A round
  costs planning for ``ceil(m / chunk) * chunk`` replications when ``m`` start an episode
  (with 1,000 replications some replication starts an episode at nearly every round, so
  a rule that plans the whole batch whenever any needs it would plan at every round).
* ``"any"``: :func:`jaxmdp.agents.batching.cond_any`, which skips planning for the whole
  batch when no replication starts an episode and otherwise plans every replication.
* ``"cond"``: a plain ``lax.cond`` (plans every replication at every round under vmap).

All three give the same trajectories (each replication's plan depends only on its own
data and key).

Example:
    >>> import jaxmdp as jm
    >>> agent = jm.get_agent("tsde")
    >>> agent.name, agent.config.known_rewards
    ('tsde', False)
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax
from jax.custom_batching import custom_vmap

from jaxmdp.agents import Agent, EnvSpec, Observation, register_agent
from jaxmdp.agents.batching import cond_any
from jaxmdp.agents.paper import _gamma, _validate
from jaxmdp.planning import policy_iteration

__all__ = [
    "BATCHINGS",
    "TSDEConfig",
    "TSDEState",
    "cond_compact",
    "episode_ends",
    "sample_mdp",
    "tsde_agent",
    "validate_unit_rewards",
]

#: Episode-start conditionals (see the module docstring).
BATCHINGS = ("compact", "any", "cond")


class TSDEConfig(NamedTuple):
    """Options of TSDE (all static).

    Attributes:
        known_rewards: plan with the environment's mean rewards, or learn them (default;
            rewards in ``[0, 1]``, Beta posterior).
        batching: ``"compact"`` (default), ``"any"`` or ``"cond"`` (module docstring).
        chunk: block size of ``"compact"`` (replications planned per block).
    """

    known_rewards: bool = False
    batching: str = "compact"
    chunk: int = 16


class TSDEState(NamedTuple):
    """TSDE's state for one replication.

    Attributes:
        policy: the current episode's policy, int32 ``[S]``.
        episode_start: ``t_k``, the round the current episode started, int32.
        previous_length: ``T_{k-1}``, the previous episode's length, int32.
        start_visits: ``N_{t_k}(s, a)``, visits at the episode's start, int32 ``[S, A]``.
        episodes: ``k``, the number of episodes started, int32.
    """

    policy: jax.Array
    episode_start: jax.Array
    previous_length: jax.Array
    start_visits: jax.Array
    episodes: jax.Array


def _broadcast(leaf, batched: bool, size: int):
    return leaf if batched else jnp.broadcast_to(leaf, (size,) + jnp.shape(leaf))


def cond_compact(pred: jax.Array, true_fn: Callable[..., Any], false_fn: Callable[..., Any],
                 *operands: Any, chunk: int = 16) -> Any:
    """``true_fn(*operands) if pred else false_fn(*operands)``; compacted under vmap.

    For one replication this is ``lax.cond``. Under ``vmap`` with a batched ``pred`` it
    runs ``false_fn`` for the whole batch, then ``true_fn`` only for the elements whose
    ``pred`` is True, gathered in blocks of ``chunk`` (a ``while_loop`` over
    ``ceil(sum(pred) / chunk)`` blocks, none when no element needs it), and scatters their
    results back. Each element's result is the one ``lax.cond`` gives it.

    Args:
        pred: bool scalar.
        true_fn: the costly branch; same output structure, shapes and dtypes as
            ``false_fn``.
        false_fn: the cheap branch.
        *operands: pytrees passed to both branches.
        chunk: elements per block of ``true_fn`` under vmap (static, positive).

    Returns:
        The selected branch's output.
    """

    @custom_vmap
    def branch(pred, *operands):
        return lax.cond(pred, true_fn, false_fn, *operands)

    @branch.def_vmap
    def _rule(axis_size, in_batched, pred, *operands):
        pred_batched, *operands_batched = in_batched
        pred = _broadcast(pred, pred_batched, axis_size)
        operands = jax.tree_util.tree_map(
            lambda leaf, b: _broadcast(leaf, b, axis_size), tuple(operands),
            tuple(operands_batched))
        out = jax.vmap(lambda ops: false_fn(*ops))(operands)
        block = min(chunk, axis_size)
        blocks = -(-axis_size // block)
        # Indices of the elements to update, in order; the padding is out of range.
        order = jnp.nonzero(pred, size=blocks * block, fill_value=axis_size)[0]
        count = jnp.sum(pred.astype(jnp.int32))

        def body(carry):
            i, out = carry
            index = lax.dynamic_slice(order, (i * block,), (block,))
            safe = jnp.minimum(index, axis_size - 1)
            picked = jax.tree_util.tree_map(lambda leaf: leaf[safe], operands)
            new = jax.vmap(lambda ops: true_fn(*ops))(picked)
            out = jax.tree_util.tree_map(
                lambda o, n: o.at[index].set(n, mode="drop"), out, new)
            return i + 1, out

        _, out = lax.while_loop(lambda c: c[0] * block < count, body, (jnp.int32(0), out))
        return out, jax.tree_util.tree_map(lambda _: True, out)

    return branch(pred, *operands)


def _dirichlet_rows(key, alpha):
    """One Dirichlet(alpha[s, a]) draw per row, ``[S, A, S]`` (exact Gamma draws)."""
    g = _gamma(key, alpha)
    return g / jnp.sum(g, axis=-1, keepdims=True)


def _beta(key, a, b):
    g = _gamma(key, jnp.stack([a, b]))
    return g[0] / (g[0] + g[1])


def sample_mdp(key, counts, reward_sums, rewards, *, known_rewards: bool):
    """A draw ``(P~, R~)`` from TSDE's posterior (module docstring).

    Args:
        key: PRNG key.
        counts: ``N[s, a, y]``, ``[S, A, S]``.
        reward_sums: sums of observed rewards, ``[S, A]``.
        rewards: the known mean rewards ``[S, A]`` (their dtype is used).
        known_rewards: use ``rewards`` (static), else draw from the Beta posterior.

    Returns:
        ``(P~ [S, A, S], R~ [S, A])``.
    """
    dtype = jnp.asarray(rewards).dtype
    transition_key, reward_key = jax.random.split(key)
    P = _dirichlet_rows(transition_key, counts.astype(dtype) + 1.0)
    if known_rewards:
        return P, jnp.asarray(rewards)
    n = jnp.sum(counts, axis=-1).astype(dtype)
    sums = reward_sums.astype(dtype)
    R = _beta(reward_key, 1.0 + sums, 1.0 + jnp.maximum(n - sums, 0.0))
    return P, R


def _init(key, spec: EnvSpec, config: TSDEConfig) -> TSDEState:
    del key
    S, A = spec.num_states, spec.num_actions
    policy = jnp.argmax(jnp.asarray(spec.mask, bool), axis=1).astype(jnp.int32)
    # t_0 = initial_round - 1 and T_{-1} = 0: the first round starts episode 1, T_0 = 1.
    return TSDEState(policy=policy,
                     episode_start=jnp.int32(spec.initial_round - 1),
                     previous_length=jnp.int32(0),
                     start_visits=jnp.zeros((S, A), jnp.int32),
                     episodes=jnp.int32(0))


def episode_ends(t, visits, state: TSDEState) -> jax.Array:
    """TSDE's stopping rule at round ``t``: ``t > t_k + T_{k-1}`` or some count doubled.

    Args:
        t: the round, int32 scalar.
        visits: ``N_t(s, a)``, visits before round ``t``, ``[S, A]``.
        state: the agent's :class:`TSDEState`.

    Returns:
        bool scalar: round ``t`` starts a new episode.
    """
    too_long = t > state.episode_start + state.previous_length
    doubled = jnp.any(visits > 2 * state.start_visits)
    return too_long | doubled


def _step(key, state: TSDEState, obs: Observation, spec: EnvSpec, config: TSDEConfig):
    visits = jnp.sum(obs.counts, axis=-1).astype(jnp.int32)
    t = jnp.asarray(obs.t, jnp.int32)
    new = episode_ends(t, visits, state)

    # custom_vmap functions cannot close over traced values: everything is an operand.
    def start(key, state, counts, reward_sums, visits, t, rewards, mask):
        P, R = sample_mdp(key, counts, reward_sums, rewards,
                          known_rewards=config.known_rewards)
        policy = policy_iteration(P, R, mask, state.policy).policy
        return TSDEState(policy=policy.astype(jnp.int32), episode_start=t,
                         previous_length=t - state.episode_start, start_visits=visits,
                         episodes=state.episodes + 1)

    def keep(key, state, *_):
        return state

    operands = (key, state, obs.counts, obs.reward_sums, visits, t,
                jnp.asarray(spec.rewards), jnp.asarray(spec.mask, bool))
    if config.batching == "compact":
        state = cond_compact(new, start, keep, *operands, chunk=config.chunk)
    elif config.batching == "any":
        state = cond_any(new, start, keep, *operands)
    else:
        state = lax.cond(new, start, keep, *operands)
    return state.policy[obs.state], state


def _check_config(config: TSDEConfig) -> None:
    if not isinstance(config.known_rewards, bool):
        raise ValueError(f"known_rewards must be a bool, got {config.known_rewards!r}")
    if config.batching not in BATCHINGS:
        raise ValueError(f"batching must be one of {list(BATCHINGS)}, got {config.batching!r}")
    c = config.chunk
    if isinstance(c, bool) or not isinstance(c, numbers.Integral) or c <= 0:
        raise ValueError(f"chunk must be a positive integer, got {c!r}")


def tsde_agent(*, known_rewards: bool = False, batching: str = "compact",
               chunk: int = 16) -> Agent:
    """TSDE (Ouyang et al. 2017), configured.

    Args:
        known_rewards: plan with the environment's mean rewards; default False (learned
            rewards in ``[0, 1]`` with a Beta posterior; ``validate`` rejects means
            outside ``[0, 1]``).
        batching: episode-start conditional under vmap: ``"compact"`` (default),
            ``"any"`` or ``"cond"`` (module docstring); the trajectories are the same.
        chunk: replications planned per block with ``"compact"``.

    Returns:
        The :class:`~jaxmdp.Agent` named ``"tsde"``.

    Raises:
        ValueError: for an option of the wrong type or value, naming it.
    """
    config = TSDEConfig(known_rewards, batching, int(chunk) if isinstance(
        chunk, numbers.Integral) and not isinstance(chunk, bool) else chunk)
    _check_config(config)
    return Agent("tsde", _init, _step, config, validate_unit_rewards)


def validate_unit_rewards(spec: EnvSpec, config) -> None:
    """Learned rewards (``config.known_rewards=False``) model rewards in ``[0, 1]``.

    Raises:
        ValueError: for the Gaussian reward law, or a mean reward outside ``[0, 1]``.
    """
    if not config.known_rewards and spec.reward_law == "gaussian":
        raise ValueError("known_rewards=False models rewards in [0, 1], got the 'gaussian' "
                         "reward law (use known_rewards=True)")
    _validate(spec, config)


register_agent("tsde", tsde_agent)
