r"""The UCRL family: UCRL2 and KL-UCRL, batched with :func:`~.batching.cond_any`.

Both agents play in *episodes*. Episode ``k`` starts at round ``t_k`` with the visits
``N_k(s, a)`` of every pair so far (the simulator's counts, initial counts included) and
the empirical estimates

* ``p_hat(s, a) = N(s, a, .) / N_k(s, a)`` for a tried pair; **uniform** ``1/S`` for an
  untried one (``N_k = 0``: its ball is the whole simplex, see below);
* ``r_hat(s, a) = (sum of rewards of (s, a)) / max(1, N_k(s, a))`` (learned rewards), or
  the environment's mean rewards with ``known_rewards=True`` (no reward radius).

It solves the optimistic MDP by extended value iteration (:func:`jaxmdp.evi`, from
``u_0 = 0``; ties to the lowest action index) stopped at span ``< epsilon_k``, with
``epsilon_k = 1/sqrt(t_k)`` (``epsilon_rule="sqrt"``, Jaksch et al.) or ``1/t_k``
(``"t"``, the rule of the StatisticalRL ``learners`` code), and plays the greedy
policy ``pi_k`` until, in the current state ``s_t``, the visits of ``(s_t, pi_k(s_t))``
*within the episode* reach ``max(1, N_k(s_t, pi_k(s_t)))`` (the doubling rule, Jaksch et
al. Figure 1); then a new episode starts at that round. The first episode starts at the
first played round (``Observation.step == 0``) in state 0.

**UCRL2** (Jaksch, Ortner & Auer 2010, Figure 1), with ``n = max(1, N_k(s, a))``:

* reward radius ``sqrt(7 ln(2 S A t_k / delta) / (2 n))``; optimistic reward
  ``min(1, r_hat + radius)``;
* L1 radius of the transition ball ``sqrt(14 S ln(2 A t_k / delta) / n)``.

For an untried pair the L1 radius is at least ``sqrt(14 ln 40) > 7 >= 2`` (``S, A >= 1``,
``t_k >= 1``, ``delta <= 1``), so the ball contains the whole simplex whatever its centre
*on* the simplex: uniform is one such centre. (A zero row is *not* one: the exact L1
maximiser of :func:`jaxmdp.evi` moves mass within ``p_hat`` and would keep an all-zero
row at value 0; with a uniform row it puts all the mass on the best state, the value
``max u`` that the whole simplex gives.)

**KL-UCRL** (Filippi, Cappé & Garivier 2010, "Optimism in reinforcement learning and
Kullback-Leibler divergence", Allerton; arXiv:1004.5229): the same algorithm with the
transition ball ``{q : KL(p_hat(s, a) || q) <= C_P / n}`` (the inner maximum is
:func:`jaxmdp.kl_ucb`, solved exactly, via :func:`jaxmdp.evi` with ``ball="kl"``) and the
optimistic reward ``r_hat + sqrt(C_R / n)``, with the constants of the paper's regret
theorem (Theorem 1 there, the values its proof needs):

* ``B = ln(2 e S^2 A ln(T) / delta)``,
* ``C_P = S (B + ln(B + 1/ln T) (1 + 1/(B + 1/ln T)))``,
* ``C_R = ln(4 S A ln(T) / delta) / 1.99``.

The paper's ``T`` is the horizon; jaxmdp uses ``T = max(2, t_k)`` instead (anytime: the
agent is not told the horizon), as the StatisticalRL ``learners`` KL-UCRL does (its
``distances``: ``max(2, t)``, and ``Cr = sqrt(ln(...) / 1.99)`` as the factor of
``1/sqrt(n)``, the same radius); H. Bourel's ``UCRL_implementation`` (``KL_UCRL.py``,
the UCRL3 paper's experiments) has the same constants and ``max(2, t)``, and calls them
those of the paper's proofs. (The paper's text was not available to check them against.)
An untried pair gets radius ``+inf`` with a uniform
centre, i.e. the whole simplex (value ``max u``): the limit of ``C_P / N`` as ``N -> 0``,
and what Filippi et al.'s maximiser (their section 3.2) gives for an empty ``p_hat``
(all the mass on ``argmax u``). The reward is not clipped at 1 (the paper's
``r_hat + sqrt(C_R / n)``; the StatisticalRL code does not clip either).

Where public implementations differ (as far as read): the StatisticalRL ``learners``
UCRL2/KL-UCRL stop EVI at ``1/t`` (our ``epsilon_rule="t"``), break ties uniformly among
the least-visited maximisers (ours: lowest index, as specified), warm-start EVI from the
previous episode's values (ours: ``u_0 = 0``, Jaksch et al.) and cap EVI at 1000 sweeps.

**Batching.** A replication plans only when its episode starts, a rare event that differs
between replications; under ``vmap`` a plain ``lax.cond`` on it would run EVI for every
replication at every round. UCRL2's default ``cond="chunked"``
(:func:`~.batching.cond_chunked`) runs no EVI in a round where no replication starts an
episode, and in a round where ``m`` do, runs EVI on those ``m`` only, 8 at a time
(``ceil(m / 8)`` passes of one compiled copy of the planner). ``cond="compact"``
(:func:`~.batching.cond_compact`) gathers them instead into one batch of 4, 16, 64 or 256
replications (the smallest that holds them, among those at most half the batch) or else
the whole batch (one compiled copy of EVI per size); ``cond="cond_any"`` plans the whole
batch in such rounds; ``cond="lax"`` plans it every round. For UCRL2 all four give the
same trajectories (tested). KL-UCRL's default stays ``cond="compact"``: its planning is
not bitwise independent of the planning batch (with ``"chunked"`` its trajectories at
1,000 replications on riverswim-6 differed from ``"compact"``'s), so the default keeps
its trajectories as they were.

Example:
    >>> import jaxmdp as jm
    >>> agent = jm.get_agent("ucrl2")
    >>> agent.name, agent.config.delta, agent.config.known_rewards
    ('ucrl2', 0.05, False)

References:
    Jaksch, Ortner & Auer, "Near-optimal Regret Bounds for Reinforcement Learning",
    JMLR 11, 2010, Figure 1, Figure 2, Proposition 18.
    Filippi, Cappé & Garivier, "Optimism in Reinforcement Learning and Kullback-Leibler
    Divergence", Allerton 2010, Algorithm 1 and Theorem 1.
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmdp.agents.batching import cond_any, cond_chunked, cond_compact
from jaxmdp.agents.protocol import Agent, EnvSpec, Observation, register_agent
from jaxmdp.analysis.lower_bound import check_unit_rewards
from jaxmdp.planning import ConfidenceSet, ModelChange, Planner, Status, evi_planner

__all__ = [
    "UCRL_AGENTS",
    "UCRLConfig",
    "UCRLState",
    "kl_ucrl_constants",
    "replay_episodes",
    "ucrl_agent",
]

#: Agent name -> the confidence ball of :func:`jaxmdp.evi`.
UCRL_AGENTS = {"ucrl2": "l1", "kl_ucrl": "kl"}

EPSILON_RULES = ("sqrt", "t")
CONDS = ("chunked", "compact", "cond_any", "lax")

class UCRLConfig(NamedTuple):
    """Options of UCRL2 and KL-UCRL (all static).

    Attributes:
        ball: ``"l1"`` (UCRL2) or ``"kl"`` (KL-UCRL); set by the agent's name.
        known_rewards: plan with the environment's mean rewards (no reward radius) or
            learn them (default: these baselines learn rewards, in ``[0, 1]``).
        delta: the confidence parameter, in ``(0, 1)``.
        epsilon_rule: EVI's span tolerance: ``"sqrt"`` (``1/sqrt(t_k)``, Jaksch et al.)
            or ``"t"`` (``1/t_k``, the StatisticalRL code's rule).
        max_evi_steps: the most EVI sweeps per episode start.
        cond: how episode starts are batched: ``"chunked"`` (UCRL2's default; plan
            only the replications that start one, 8 at a time), ``"compact"``
            (KL-UCRL's default; plan only those, gathered into one bucket-sized batch),
            ``"cond_any"`` (no planning in rounds where no replication starts one; the
            whole batch plans in the others) or ``"lax"`` (a plain ``lax.cond``: the
            whole batch plans every round).
    """

    ball: str = "l1"
    known_rewards: bool = False
    delta: float = 0.05
    epsilon_rule: str = "sqrt"
    max_evi_steps: int = 10_000
    cond: str = "chunked"

    @property
    def planner(self) -> Planner:
        """The agent's planner: extended value iteration over ``ball``, from zeros."""
        return evi_planner(self.ball, max_steps=self.max_evi_steps)


class UCRLState(NamedTuple):
    """State of one replication.

    Attributes:
        policy: ``pi_k``, int32 ``[S]``.
        episode_visits: ``N_k(s, a)``, the visits before the episode started, int32
            ``[S, A]``.
        nu: ``nu_k(s, a)``, the visits within the episode, int32 ``[S, A]``.
        t_k: the round the episode started, int32.
        episodes: episodes started so far, int32.
        evi_steps: EVI sweeps so far (all episodes), int32.
        evi_unconverged: episode starts whose EVI stopped at ``max_evi_steps``, int32.
    """

    policy: jax.Array
    episode_visits: jax.Array
    nu: jax.Array
    t_k: jax.Array
    episodes: jax.Array
    evi_steps: jax.Array
    evi_unconverged: jax.Array


def kl_ucrl_constants(num_states: int, num_actions: int, t, delta):
    r"""KL-UCRL's ``(C_P, C_R)`` at round ``t`` (Filippi et al. 2010, Theorem 1).

    ``B = ln(2 e S^2 A ln T / delta)``, ``C_P = S (B + ln(B + 1/ln T)(1 + 1/(B + 1/ln T)))``,
    ``C_R = ln(4 S A ln T / delta) / 1.99`` with ``T = max(2, t)``. Works on NumPy or
    JAX scalars (``t`` may be traced).
    """
    xp = jnp if isinstance(t, jax.Array) else np
    log_t = xp.log(xp.maximum(t, 2.0))
    S, A = num_states, num_actions
    B = xp.log(2.0 * math.e * S * S * A * log_t / delta)
    c = B + 1.0 / log_t
    C_P = S * (B + xp.log(c) * (1.0 + 1.0 / c))
    C_R = xp.log(4.0 * S * A * log_t / delta) / 1.99
    return C_P, C_R


def _confidence(counts, reward_sums, t, spec: EnvSpec, config: UCRLConfig):
    """``(p_hat, r_tilde, radius, epsilon)`` of the episode starting at round ``t``."""
    dtype = jnp.asarray(spec.rewards).dtype
    S, A = spec.num_states, spec.num_actions
    visits = jnp.sum(counts, axis=-1)
    tried = visits > 0
    n = jnp.maximum(visits, 1).astype(dtype)
    p_hat = jnp.where(tried[..., None], counts.astype(dtype) / n[..., None],
                      jnp.asarray(1.0 / S, dtype))
    t_k = jnp.asarray(t).astype(dtype)
    delta = config.delta
    if config.ball == "l1":
        radius = jnp.sqrt(14.0 * S * jnp.log(2.0 * A * t_k / delta) / n)
        bonus = jnp.sqrt(7.0 * jnp.log(2.0 * S * A * t_k / delta) / (2.0 * n))
    else:
        C_P, C_R = kl_ucrl_constants(S, A, t_k, delta)
        radius = jnp.where(tried, C_P / n, jnp.inf)
        bonus = jnp.sqrt(C_R / n)
    if config.known_rewards:
        r_tilde = jnp.asarray(spec.rewards, dtype)
    else:
        r_hat = reward_sums.astype(dtype) / n
        r_tilde = r_hat + bonus
        if config.ball == "l1":
            r_tilde = jnp.minimum(r_tilde, 1.0)
    epsilon = 1.0 / (jnp.sqrt(t_k) if config.epsilon_rule == "sqrt" else t_k)
    return p_hat, r_tilde, radius, epsilon


def _new_episode(counts, reward_sums, t, state: UCRLState, spec: EnvSpec,
                 config: UCRLConfig) -> UCRLState:
    p_hat, r_tilde, radius, epsilon = _confidence(counts, reward_sums, t, spec, config)
    planner = config.planner
    model = ConfidenceSet(p_hat, r_tilde, radius, spec.mask, epsilon)
    result, _ = planner.update(planner.init(model), ModelChange(model))
    return UCRLState(
        policy=result.policy,
        episode_visits=jnp.sum(counts, axis=-1).astype(jnp.int32),
        nu=jnp.zeros_like(state.nu),
        t_k=jnp.asarray(t, jnp.int32),
        episodes=state.episodes + 1,
        evi_steps=state.evi_steps + result.num_steps,
        evi_unconverged=state.evi_unconverged
        + (result.status != Status.CONVERGED).astype(jnp.int32),
    )


def _keep(counts, reward_sums, t, state: UCRLState, mask, rewards) -> UCRLState:
    del counts, reward_sums, t, mask, rewards
    return state


def _init(key, spec: EnvSpec, config: UCRLConfig) -> UCRLState:
    del key, config
    S, A = spec.num_states, spec.num_actions
    zero = jnp.zeros((), jnp.int32)
    return UCRLState(policy=jnp.zeros(S, jnp.int32),
                     episode_visits=jnp.zeros((S, A), jnp.int32),
                     nu=jnp.zeros((S, A), jnp.int32), t_k=zero, episodes=zero,
                     evi_steps=zero, evi_unconverged=zero)


def _step(key, state: UCRLState, obs: Observation, spec: EnvSpec, config: UCRLConfig):
    del key
    x = obs.state
    action = state.policy[x]
    start = (obs.step == 0) | (
        state.nu[x, action] >= jnp.maximum(1, state.episode_visits[x, action]))

    def plan(counts, reward_sums, t, state, mask, rewards):
        # The environment's arrays are operands, not closed over: they may be tracers,
        # which cond_any's custom_vmap cannot close over.
        return _new_episode(counts, reward_sums, t, state,
                            spec._replace(mask=mask, rewards=rewards), config)

    branch = {"chunked": cond_chunked, "compact": cond_compact, "cond_any": cond_any,
              "lax": lax.cond}[config.cond]
    state = branch(start, plan, _keep, obs.counts, obs.reward_sums, obs.t, state,
                   spec.mask, spec.rewards)
    action = state.policy[x]
    return action, state._replace(nu=state.nu.at[x, action].add(1))


def _check_config(config: UCRLConfig) -> None:
    if not isinstance(config.known_rewards, bool):
        raise ValueError(f"known_rewards must be a bool, got {config.known_rewards!r}")
    d = config.delta
    if (isinstance(d, bool) or not isinstance(d, numbers.Real)
            or not 0.0 < float(d) < 1.0):
        raise ValueError(f"delta must be a number in (0, 1), got {d!r}")
    if config.epsilon_rule not in EPSILON_RULES:
        raise ValueError(f"epsilon_rule must be one of {list(EPSILON_RULES)}, "
                         f"got {config.epsilon_rule!r}")
    m = config.max_evi_steps
    if isinstance(m, bool) or not isinstance(m, numbers.Integral) or m <= 0:
        raise ValueError(f"max_evi_steps must be a positive integer, got {m!r}")
    if config.cond not in CONDS:
        raise ValueError(f"cond must be one of {list(CONDS)}, got {config.cond!r}")


def _validate(spec: EnvSpec, config: UCRLConfig) -> None:
    """Learned rewards need a law on ``[0, 1]``: means in ``[0, 1]``, not Gaussian."""
    if config.known_rewards:
        return
    if spec.reward_law == "gaussian":
        raise ValueError("known_rewards=False in the UCRL family assumes rewards in [0, 1], "
                         "got the 'gaussian' reward law (use known_rewards=True)")
    check_unit_rewards(spec.rewards, spec.mask,
                       "known_rewards=False in the UCRL family assumes rewards in [0, 1]",
                       " (use known_rewards=True)")


def ucrl_agent(name: str, *, known_rewards: bool = False, delta: float = 0.05,
               epsilon_rule: str = "sqrt", max_evi_steps: int = 10_000,
               cond: str | None = None) -> Agent:
    """UCRL2 (``"ucrl2"``) or KL-UCRL (``"kl_ucrl"``), configured (module docstring).

    Args:
        name: ``"ucrl2"`` or ``"kl_ucrl"``.
        known_rewards: plan with the true mean rewards (default False: learn them; then
            rewards must lie in ``[0, 1]``).
        delta: confidence parameter in ``(0, 1)`` (default 0.05).
        epsilon_rule: ``"sqrt"`` (EVI stops at span ``< 1/sqrt(t_k)``, default) or
            ``"t"`` (``< 1/t_k``).
        max_evi_steps: the most EVI sweeps per episode start (positive int).
        cond: ``"chunked"``, ``"compact"``, ``"cond_any"`` or ``"lax"`` (see the module
            docstring); default ``"chunked"`` for UCRL2, ``"compact"`` for KL-UCRL.

    Returns:
        The :class:`~jaxmdp.Agent`.

    Raises:
        ValueError: for an unknown name or an option of the wrong type or value.
    """
    if name not in UCRL_AGENTS:
        raise ValueError(f"name must be one of {list(UCRL_AGENTS)}, got {name!r}")
    if cond is None:
        cond = "chunked" if name == "ucrl2" else "compact"
    config = UCRLConfig(UCRL_AGENTS[name], known_rewards, delta, epsilon_rule,
                        max_evi_steps, cond)
    _check_config(config)
    return Agent(name, _init, _step, config, _validate)


def replay_episodes(states, actions, num_states: int, num_actions: int,
                    initial_counts=None):
    """Episode starts of UCRL-type agents, recovered from their paths (NumPy).

    Replays the doubling rule on recorded paths (``simulate(..., record_path=True)``):
    round ``t`` starts an episode if it is the first one, or if the current state ``s``
    was visited in the current episode with action ``a`` and the episode's visits of
    ``(s, a)`` reached ``max(1, N_k(s, a))``. (If ``s`` was not visited in the episode,
    ``nu(s, pi(s)) = 0`` and the rule cannot fire, so the path determines every start.)

    Args:
        states: int ``[R, T]`` states of each round.
        actions: int ``[R, T]`` actions of each round.
        num_states: ``S``.
        num_actions: ``A``.
        initial_counts: optional ``[S, A, S]`` counts before the first round.

    Returns:
        ``(starts, stationary)``: bool ``[R, T]``, True where a round starts an episode;
        bool ``[R]``, True where every episode played one action per state (a stationary
        policy within each episode).
    """
    states = np.asarray(states)
    actions = np.asarray(actions)
    R, T = states.shape
    rows = np.arange(R)
    visits = np.zeros((R, num_states, num_actions), np.int64)
    if initial_counts is not None:
        visits += np.asarray(initial_counts).sum(-1).astype(np.int64)
    episode_visits = np.zeros_like(visits)
    nu = np.zeros_like(visits)
    played = np.full((R, num_states), -1)
    starts = np.zeros((R, T), bool)
    stationary = np.ones(R, bool)
    for t in range(T):
        s, a = states[:, t], actions[:, t]
        previous = played[rows, s]
        seen = previous >= 0
        old = np.where(seen, previous, 0)
        fire = seen & (nu[rows, s, old] >= np.maximum(1, episode_visits[rows, s, old]))
        start = fire | (t == 0)
        if start.any():
            episode_visits[start] = visits[start]
            nu[start] = 0
            played[start] = -1
        starts[:, t] = start
        previous = played[rows, s]
        stationary &= (previous < 0) | (previous == a)
        played[rows, s] = a
        nu[rows, s, a] += 1
        visits[rows, s, a] += 1
    return starts, stationary


for _name in UCRL_AGENTS:
    register_agent(_name, lambda _n=_name, **options: ucrl_agent(_n, **options))
