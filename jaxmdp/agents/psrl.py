r"""TSDE: posterior sampling for average reward with dynamic episodes.

Ouyang, Gagrani, Nayyar & Jain, "Learning Unknown Markov Decision Processes: A Thompson
Sampling Approach", NeurIPS 2017, Algorithm 1. Registered as ``"tsde"``.

At the start of episode ``k`` (round ``t_k``) the agent draws an MDP from its posterior,

* transitions ``P~[s, a] ~ Dirichlet(1 + N_{t_k}(s, a, .))`` for every pair (uniform prior),
* rewards, when learned (``known_rewards=False``, rewards in ``[0, 1]``),
  ``R~[s, a] ~ Beta(1 + sum r, 1 + n - sum r)`` (the Bernoulli model's posterior under a
  uniform prior), else the known means,

solves it exactly (:func:`jaxmdp.policy_iteration`; Dirichlet draws are positive so every
policy is unichain) and plays its optimal policy until the episode ends. Policy iteration
starts from the previous episode's policy improved once against the previous sample's
bias (in the new sample; stored in the state): an optimal policy of the new sample
whatever the start, at fewer evaluations (about 15% less time per step on RiverSwim-6 at
1,000 replications than starting from the previous policy itself).

Episode ``k`` ends at the first round ``t`` with

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
every round. The option ``cond`` chooses the episode-start conditional, with the values
of the UCRL family (:data:`jaxmdp.agents.batching.CONDS`); ``batching`` is another
spelling of it (``batching="any"`` is ``cond="cond_any"``, ``batching="cond"`` is
``cond="lax"``):

* ``"auto"`` (default): ``"chunked"`` on a CPU, ``"cond_any"`` on an accelerator,
  chosen when the agent is built (:func:`jaxmdp.agents.batching.resolve_cond`).
* ``"chunked"``: :func:`jaxmdp.agents.batching.cond_chunked`, a
  ``custom_vmap`` rule that plans only the replications starting an episode,
  ``episode_chunk`` at a time (``ceil(m / c)`` passes of one compiled copy of the
  planner for ``m`` of them: a pass costs in proportion to its rows, padded ones
  included, and at 100 replications a round holds one start or fewer on average; the
  default ``"auto"`` is 1 below 1,000 replications and 8 from 1,000, fixed by
  :func:`jaxmdp.simulate`), and scatters the new states back; nothing is planned when
  none starts. A round costs planning in proportion to ``m`` (with 1,000
  replications some replication starts an episode at nearly every round, so a rule that
  plans the whole batch whenever any needs it would plan at every round). Small passes
  also suit the Gamma draws, whose rejection loop runs until every element of the pass
  is accepted.
* ``"compact"``: :func:`jaxmdp.agents.batching.cond_compact`, which gathers them into one
  batch of 4, 16, 64 or 256 rows (or the whole batch), one compiled copy per size.
* ``"cond_any"``: :func:`jaxmdp.agents.batching.cond_any`, which skips planning for the whole
  batch when no replication starts an episode and otherwise plans every replication.
* ``"lax"``: a plain ``lax.cond`` (plans every replication at every round under vmap).

All four give the same trajectories (each replication's plan depends only on its own
data and key).

Example:
    >>> import jaxmdp as jm
    >>> agent = jm.get_agent("tsde")
    >>> agent.name, agent.config.known_rewards
    ('tsde', False)
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxmdp.agents.batching import CONDS, episode_cond, resolve_cond, resolve_episode_chunk
from jaxmdp.agents.episodes import doubling, tsde_ends
from jaxmdp.agents.options import boolean, check_options, choice, integer, option
from jaxmdp.agents.protocol import Agent, EnvSpec, Observation
from jaxmdp.agents.validation import validate_unit_rewards
from jaxmdp.planning import policy_iteration, warm_start_policy
from jaxmdp.random import beta_shapes, gamma, gamma_and_beta

__all__ = [
    "BATCHINGS",
    "PSRLConfig",
    "PSRLState",
    "TSDEConfig",
    "TSDEState",
    "episode_ends",
    "psrl_agent",
    "sample_mdp",
    "tsde_agent",
]

#: The ``batching`` spelling of each ``cond`` value (see the module docstring).
BATCHINGS = {"chunked": "chunked", "compact": "compact", "any": "cond_any", "cond": "lax"}


@dataclasses.dataclass(frozen=True)
class _SamplingConfig:
    """Options of TSDE and PSRL (every field enters the agent's equality and hash).

    Attributes:
        known_rewards: plan with the environment's mean rewards, or learn them (default;
            rewards in ``[0, 1]``, Beta posterior).
        cond: ``"auto"`` (default: the backend's), ``"chunked"``, ``"compact"``,
            ``"cond_any"`` or ``"lax"`` (module docstring).
        episode_chunk: the replications whose episode starts sample and plan together in
            one pass under ``cond="chunked"``: a positive integer or ``"auto"`` (default:
            fixed by the number of replications of the run; module docstring).
    """

    known_rewards: bool = option(False, boolean())
    cond: str = option("auto", choice(*CONDS))
    episode_chunk: int | str = option("auto", integer(auto=True))

    def __post_init__(self):
        check_options(self)
        object.__setattr__(self, "cond", resolve_cond(self.cond))


@dataclasses.dataclass(frozen=True)
class TSDEConfig(_SamplingConfig):
    """Options of TSDE: ``known_rewards``, ``cond`` and ``episode_chunk`` (:func:`tsde_agent`)."""


@dataclasses.dataclass(frozen=True)
class PSRLConfig(_SamplingConfig):
    """Options of PSRL, the fields of :class:`TSDEConfig`."""


class TSDEState(NamedTuple):
    """TSDE's state for one replication.

    Attributes:
        policy: the current episode's policy, int32 ``[S]``.
        episode_start: ``t_k``, the round the current episode started, int32.
        previous_length: ``T_{k-1}``, the previous episode's length, int32.
        start_visits: ``N_{t_k}(s, a)``, visits at the episode's start, int32 ``[S, A]``.
        episodes: ``k``, the number of episodes started, int32.
        bias: the bias of ``policy`` in the last sampled MDP (zeros before the first),
            float ``[S]``: the next plan starts policy iteration from the greedy policy
            of the new sample against it.
    """

    policy: jax.Array
    episode_start: jax.Array
    previous_length: jax.Array
    start_visits: jax.Array
    episodes: jax.Array
    bias: jax.Array


def sample_mdp(key, counts, reward_sums, rewards, *, known_rewards: bool):
    """A draw ``(P~, R~)`` from TSDE's posterior (module docstring).

    The Gamma draws behind the Dirichlet rows and, with learned rewards, the Beta reward
    means (``G1 / (G1 + G2)``) are one call of the exact sampler
    :func:`jaxmdp.random.gamma` (one rejection loop per plan, not two; shared
    with MDP-PS, :func:`jaxmdp.random.gamma_and_beta`).

    Args:
        key: PRNG key.
        counts: ``N[s, a, y]``, ``[S, A, S]``.
        reward_sums: sums of observed rewards, ``[S, A]``.
        rewards: the known mean rewards ``[S, A]`` (their dtype is used).
        known_rewards: use ``rewards`` (static), else draw from the Beta posterior.

    Returns:
        ``(P~ [S, A, S], R~ [S, A])``.
    """
    R = jnp.asarray(rewards)
    alpha = counts.astype(R.dtype) + 1.0
    if known_rewards:
        g = gamma(key, alpha)
    else:
        g, R = gamma_and_beta(key, alpha,
                              beta_shapes(R, jnp.sum(counts, axis=-1), reward_sums))
    return g / jnp.sum(g, axis=-1, keepdims=True), R


def _init(key, spec: EnvSpec, config: TSDEConfig) -> TSDEState:
    del key
    S, A = spec.num_states, spec.num_actions
    policy = jnp.argmax(jnp.asarray(spec.mask, bool), axis=1).astype(jnp.int32)
    # t_0 = initial_round - 1 and T_{-1} = 0: the first round starts episode 1, T_0 = 1.
    return TSDEState(policy=policy,
                     episode_start=jnp.int32(spec.initial_round - 1),
                     previous_length=jnp.int32(0),
                     start_visits=jnp.zeros((S, A), jnp.int32),
                     episodes=jnp.int32(0),
                     bias=jnp.zeros(S, jnp.asarray(spec.rewards).dtype))


def episode_ends(t, visits, state: TSDEState) -> jax.Array:
    """TSDE's stopping rule at round ``t``: ``t > t_k + T_{k-1}`` or some count doubled.

    Args:
        t: the round, int32 scalar.
        visits: ``N_t(s, a)``, visits before round ``t``, ``[S, A]``.
        state: the agent's :class:`TSDEState`.

    Returns:
        bool scalar: round ``t`` starts a new episode.
    """
    return tsde_ends(t, visits, state.episode_start, state.previous_length,
                     state.start_visits)


def _step(key, state: TSDEState, obs: Observation, spec: EnvSpec, config: TSDEConfig):
    visits = jnp.sum(obs.counts, axis=-1).astype(jnp.int32)
    t = jnp.asarray(obs.t, jnp.int32)
    new = episode_ends(t, visits, state)

    # custom_vmap functions cannot close over traced values: everything is an operand.
    def start(key, state, counts, reward_sums, visits, t, rewards, mask):
        P, R = sample_mdp(key, counts, reward_sums, rewards,
                          known_rewards=config.known_rewards)
        warm = warm_start_policy(P, R, mask, state.bias.astype(P.dtype), state.policy)
        solution = policy_iteration(P, R, mask, warm)
        return TSDEState(policy=solution.policy.astype(jnp.int32), episode_start=t,
                         previous_length=t - state.episode_start, start_visits=visits,
                         episodes=state.episodes + 1,
                         bias=solution.bias.astype(state.bias.dtype))

    def keep(key, state, *_):
        return state

    operands = (key, state, obs.counts, obs.reward_sums, visits, t,
                jnp.asarray(spec.rewards), jnp.asarray(spec.mask, bool))
    state = episode_cond(config.cond, chunk=config.episode_chunk)(new, start, keep, *operands)
    return state.policy[obs.state], state


def _sampling_config(config_type, known_rewards, cond: str, batching: str | None,
                     episode_chunk):
    """The validated config; ``batching`` (if given) is the other spelling of ``cond``."""
    if batching is not None:
        choice(*BATCHINGS)("batching", batching)
        if cond not in ("auto", BATCHINGS[batching]):
            raise ValueError(f"cond and batching name the same option, got cond={cond!r} "
                             f"and batching={batching!r}")
        cond = BATCHINGS[batching]
    return config_type(known_rewards, cond, episode_chunk)


def tsde_agent(*, known_rewards: bool = False, cond: str = "auto",
               batching: str | None = None, episode_chunk: int | str = "auto") -> Agent:
    """TSDE (Ouyang et al. 2017), configured.

    Args:
        known_rewards: plan with the environment's mean rewards; default False (learned
            rewards in ``[0, 1]`` with a Beta posterior; ``validate`` rejects means
            outside ``[0, 1]``).
        cond: episode-start conditional under vmap: ``"auto"`` (default: ``"chunked"``
            on a CPU, ``"cond_any"`` on an accelerator), ``"chunked"``, ``"compact"``,
            ``"cond_any"`` or ``"lax"`` (module docstring); the trajectories
            are the same.
        batching: the same option in its other spelling: ``"chunked"``, ``"compact"``,
            ``"any"`` (``cond="cond_any"``) or ``"cond"`` (``cond="lax"``).
        episode_chunk: replications planned per pass under ``cond="chunked"``
            (default ``"auto"``: by the number of replications of the run).

    Returns:
        The :class:`~jaxmdp.Agent` named ``"tsde"``.

    Raises:
        ValueError: for an option of the wrong type or value, naming it.
    """
    config = _sampling_config(TSDEConfig, known_rewards, cond, batching, episode_chunk)
    return Agent("tsde", _init, _step, config, validate_unit_rewards, resolve_episode_chunk)



class PSRLState(NamedTuple):
    """PSRL's state for one replication.

    Attributes:
        policy: the current episode's policy, int32 ``[S]``.
        episode_visits: ``N_k(s, a)``, visits before the episode started, int32 ``[S, A]``.
        nu: visits within the episode, int32 ``[S, A]``.
        episodes: episodes started so far, int32.
        bias: the bias of ``policy`` in the last sampled MDP (the next warm start), ``[S]``.
    """

    policy: jax.Array
    episode_visits: jax.Array
    nu: jax.Array
    episodes: jax.Array
    bias: jax.Array


def _psrl_init(key, spec: EnvSpec, config: PSRLConfig) -> PSRLState:
    del key, config
    S, A = spec.num_states, spec.num_actions
    policy = jnp.argmax(jnp.asarray(spec.mask, bool), axis=1).astype(jnp.int32)
    return PSRLState(policy=policy, episode_visits=jnp.zeros((S, A), jnp.int32),
                     nu=jnp.zeros((S, A), jnp.int32), episodes=jnp.int32(0),
                     bias=jnp.zeros(S, jnp.asarray(spec.rewards).dtype))


def _psrl_step(key, state: PSRLState, obs: Observation, spec: EnvSpec,
               config: PSRLConfig):
    x = obs.state
    action = state.policy[x]
    new = (obs.step == 0) | doubling(state.nu, state.episode_visits, x, action)

    def start(key, state, counts, reward_sums, rewards, mask):
        P, R = sample_mdp(key, counts, reward_sums, rewards,
                          known_rewards=config.known_rewards)
        warm = warm_start_policy(P, R, mask, state.bias.astype(P.dtype), state.policy)
        solution = policy_iteration(P, R, mask, warm)
        return PSRLState(policy=solution.policy.astype(jnp.int32),
                         episode_visits=jnp.sum(counts, axis=-1).astype(jnp.int32),
                         nu=jnp.zeros_like(state.nu), episodes=state.episodes + 1,
                         bias=solution.bias.astype(state.bias.dtype))

    def keep(key, state, *_):
        return state

    operands = (key, state, obs.counts, obs.reward_sums, jnp.asarray(spec.rewards),
                jnp.asarray(spec.mask, bool))
    state = episode_cond(config.cond, chunk=config.episode_chunk)(new, start, keep, *operands)
    action = state.policy[x]
    return action, state._replace(nu=state.nu.at[x, action].add(1))


def psrl_agent(*, known_rewards: bool = False, cond: str = "auto",
               batching: str | None = None, episode_chunk: int | str = "auto") -> Agent:
    """PSRL as in the StatisticalRL ``learners`` code (``PSRL.py``), planned exactly.

    The posterior is TSDE's (:func:`sample_mdp`: ``Dirichlet(1 + N(s, a, .))`` per
    transition row, ``Beta(1 + sum r, 1 + n - sum r)`` per learned reward, the published
    prior and fractional updates, ``PSRL.py`` lines 20-22, 128-132), drawn with the exact
    sampler of :mod:`jaxmdp.random`; one sample of the whole MDP per episode. Episodes
    follow UCRL2's doubling rule (``PSRL.py`` line 116): a new episode starts when, in the
    current state ``s``, the policy's action ``a`` has been played ``max(1, N_k(s, a))``
    times in the episode. The sample is solved **exactly** (policy iteration, warm-started
    as TSDE's, :func:`jaxmdp.policy_iteration`); the published code runs value iteration
    to a span tolerance of ``1/t`` with random least-visited ties (lines 52-85). Sampled
    rows have full support, so ties have probability zero.

    Args:
        known_rewards: plan with the environment's mean rewards; default False (learned
            rewards in ``[0, 1]`` with a Beta posterior).
        cond: episode-start conditional under vmap (module docstring).
        batching: the same option in its other spelling (:func:`tsde_agent`).
        episode_chunk: replications planned per pass under ``cond="chunked"``
            (default ``"auto"``: by the number of replications of the run).

    Returns:
        The :class:`~jaxmdp.Agent` named ``"psrl"``.

    Raises:
        ValueError: for an option of the wrong type or value, naming it.

    Example:
        >>> import jaxmdp as jm
        >>> jm.get_agent("psrl", batching="any").config.cond
        'cond_any'
    """
    config = _sampling_config(PSRLConfig, known_rewards, cond, batching, episode_chunk)
    return Agent("psrl", _psrl_init, _psrl_step, config, validate_unit_rewards,
                 resolve_episode_chunk)
