r"""The UCRL family: UCRL2, KL-UCRL, UCRL2B and UCRL3, one agent with variants as data.

Every agent of the family is :func:`ucrl_family_agent` with one :class:`UCRLConfig`; a
variant is the ``sets`` value of that config, which brings the episode's confidence sets
(``confidence``) and EVI's inner maximisation (``ball``): :class:`UCRL2Sets`,
:class:`KLUCRLSets`, :class:`UCRL2BSets`, :class:`UCRL3Sets`. A new variant (SCAL, TUCRL,
...) is a new ``sets`` value; no code of the family changes.

UCRL2 and KL-UCRL play in *episodes*. Episode ``k`` starts at round ``t_k`` with the visits
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
the least-visited maximisers and re-draw the action at every step (ours: lowest index, as
specified; ``ties="random_least_visited"`` reproduces theirs, ``UCRL2.py`` lines 91-96,
144), warm-start EVI from the previous episode's values (ours: ``u_0 = 0``, Jaksch et al.;
``warm_start=True`` reproduces theirs) and cap EVI at 1000 iterations (UCRL2 stops after
1001 sweeps, ``UCRL2.py`` lines 83, 106; KL-UCRL after 1002, ``KLUCRL.py`` lines 178-208:
``max_evi_steps=1001`` / ``1002`` reproduces them); their KL-UCRL finds
``nu`` with a bisection that moves the wrong way (``KLUCRL.py`` line 128: ``nu = max u +
10^7``, so ``q`` is nearly ``p_hat``), which ``search_up_bug=True`` reproduces.

**UCRL2B** and **UCRL3** (:func:`ucrl2b_agent`, :func:`ucrl3_agent`) share these episodes
and this batching, with per-next-state bounds (:mod:`jaxmdp.agents.confidence`) and the
``"box"`` set of :func:`jaxmdp.evi` and UCRL3's (:mod:`.ucrl3_support`); their defaults follow the
StatisticalRL code (random least-visited ties, ``1/t_k``, warm start).

**Batching.** A replication plans only when its episode starts, a rare event that differs
between replications; under ``vmap`` a plain ``lax.cond`` on it would run EVI for every
replication at every round. The family's default ``cond="chunked"``
(:func:`~.batching.cond_chunked`) runs no EVI in a round where no replication starts an
episode, and in a round where ``m`` do, runs EVI on those ``m`` only, ``c`` at a time
(``ceil(m / c)`` passes of one compiled copy of the planner, the last one padded), with
``c = sets.episode_chunk`` (1, :class:`EVISets`). A pass costs in proportion to its rows,
padded ones included, and at 100 replications a round holds one start or fewer on
average (UCRL2 with the StatisticalRL options on RiverSwim-25: 53 episodes per
replication in 10⁴ rounds, 0.53 starts per round), so wider passes mostly plan padding.
Where many start in the same round (T = 2,000 at 1,000 replications: 20 to 150 per
round) passes of 8 run 1.2-1.3x faster; a variant that plans 8 per pass is a subclass
of its sets with ``episode_chunk = 8`` (measurements: ``docs/measurements/baselines.md``,
"Planning passes"). ``cond="compact"``
(:func:`~.batching.cond_compact`) gathers them instead into one batch of 4, 16, 64 or 256
replications (the smallest that holds them, among those at most half the batch) or else
the whole batch (one compiled copy of EVI per size); ``cond="cond_any"`` plans the whole
batch in such rounds; ``cond="lax"`` plans it every round. For UCRL2 on RiverSwim-6 all
four give the same trajectories (tested). A row's plan does not depend on the other rows
of its pass, but its last bits can depend on the pass's width (XLA compiles a batch of
one or eight rows to different kernels): the chunk is fixed per variant, so a
replication's run does not depend on the others' episode starts, and a run with another
``episode_chunk`` can part from it at an exact tie (UCRL2 on RiverSwim-25 and grid-4-room,
also in float64). KL-UCRL's default is ``cond="compact"``: its planning is not bitwise
independent of the planning batch (with ``"chunked"`` its trajectories at 1,000
replications on riverswim-6 differ from ``"compact"``'s in the last bits). With
``search_up_bug=True`` its maximiser is a closed form, the two give the same trajectories
(tested), and the default is ``"chunked"``: an episode start whose EVI runs to its cap
then holds a pass of one replication, not a bucket of up to half the batch.

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

import dataclasses
import functools
import math
import numbers
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmdp.agents.batching import (
    check_cond,
    cond_compact,
    episode_cond,
    masked_elementwise,
)
from jaxmdp.agents.confidence import (
    ucrl2b_reward_upper,
    ucrl2b_transition_box,
    ucrl3_reward_upper,
    ucrl3_transition_bounds,
)
from jaxmdp.agents.protocol import Agent, EnvSpec, Observation
from jaxmdp.agents.ucrl3_support import UCRL3_BALL, UCRL3_KEY_SUMS_BALL, UCRL3Bounds
from jaxmdp.mdp import check_unit_rewards
from jaxmdp.planning import ConfidenceSet, ModelChange, Planner, Status, evi_planner
from jaxmdp.planning.evi import BoxBounds

__all__ = [
    "TIES",
    "EVISets",
    "KLUCRLSets",
    "UCRL2BSets",
    "UCRL2Sets",
    "UCRL3Sets",
    "UCRLConfig",
    "UCRLState",
    "kl_ucrl_constants",
    "replay_episodes",
    "ucrl2b_agent",
    "ucrl3_agent",
    "ucrl_agent",
    "ucrl_family_agent",
]

EPSILON_RULES = ("sqrt", "t")
#: Tie rules of the episode's policy (see :class:`UCRLConfig`).
TIES = ("lowest", "random_least_visited", "random_most_visited")


class UCRLConfig(NamedTuple):
    """Options of every agent of the UCRL family (all static).

    A variant of the family is its ``sets``: a hashable value (a frozen dataclass of the
    variant's own options) with

    * ``ball``: the inner maximisation of extended value iteration, a ``ball`` of
      :func:`jaxmdp.evi` (a name, or an :class:`~jaxmdp.planning.InnerMaximisation`);
    * ``confidence(counts, reward_sums, reward_squares, t_k, spec, config)``: the
      episode's ``(p_hat, r_tilde, radius)`` from the visits so far (``counts``
      ``[S, A, S]``, reward sums and sums of squares ``[S, A]``, the float round
      ``t_k``), ``radius`` in the form ``ball`` reads; a variant whose sets depend on
      the state the episode starts in (or on the agent's state) brings
      ``confidence_at(..., config, current, agent_state)`` instead.

    and optionally the hooks of :class:`EVISets` (``planner``, ``stochastic``,
    ``mixture``, ``ends_episode``, ``noisy_ties``), whose defaults apply where a
    ``sets`` value has none.

    :func:`ucrl_family_agent` turns a ``sets`` value into an agent; :class:`UCRL2Sets`,
    :class:`KLUCRLSets`, :class:`UCRL2BSets` and :class:`UCRL3Sets` are the family's.

    Attributes:
        sets: the variant's confidence sets (above).
        known_rewards: plan with the environment's mean rewards (no reward radius) or
            learn them (default: these baselines learn rewards, in ``[0, 1]``).
        delta: the confidence parameter, in ``(0, 1)``.
        epsilon_rule: EVI's span tolerance: ``"sqrt"`` (``1/sqrt(t_k)``, Jaksch et al.)
            or ``"t"`` (``1/t_k``, the StatisticalRL code's rule).
        max_evi_steps: the most EVI sweeps per episode start.
        cond: how episode starts are batched (:data:`jaxmdp.agents.batching.CONDS`):
            ``"chunked"`` (plan only the replications that start one,
            ``sets.episode_chunk`` (1) at a time),
            ``"compact"`` (plan only those, gathered into one bucket-sized batch),
            ``"cond_any"`` (no planning in rounds where no replication starts one; the
            whole batch plans in the others) or ``"lax"`` (a plain ``lax.cond``: the
            whole batch plans every round).
        ties: ``"lowest"`` (the lowest action index among the exact maximisers of EVI's
            last sweep, fixed for the episode) or ``"random_least_visited"`` (the
            StatisticalRL ``learners`` rule, ``UCRL2.py`` lines 91-96 and 144: the exact
            maximisers, then the least visited of them by ``N_k``, stored as a uniform law
            and re-sampled at every step); ``"random_most_visited"`` keeps the most
            visited instead (``UCRL3_lazy``, ``UCRL3.py`` line 425).
        warm_start: start each episode's EVI from the previous episode's values (the
            StatisticalRL code, ``UCRL2.py`` line 78) instead of zeros (Jaksch et al.).
    """

    sets: Any
    known_rewards: bool = False
    delta: float = 0.05
    epsilon_rule: str = "sqrt"
    max_evi_steps: int = 10_000
    cond: str = "chunked"
    ties: str = "lowest"
    warm_start: bool = False

    @property
    def ball(self):
        """The ``ball`` of :func:`jaxmdp.evi` that the variant's sets need."""
        return self.sets.ball

    @property
    def planner(self) -> Planner:
        """The agent's planner: extended value iteration over ``ball``, from zeros (or,
        with ``warm_start``, from the previous episode's values), with the cycle
        detection of :func:`jaxmdp.evi` where ``sets`` has a ``cycle_memory``."""
        return _hook(self.sets, "planner")(max_steps=self.max_evi_steps,
                                           warm_start=self.warm_start)


class UCRLState(NamedTuple):
    """State of one replication (the same fields for every variant and option).

    Attributes:
        policy: ``pi_k``, int32 ``[S]``.
        episode_visits: ``N_k(s, a)``, the visits before the episode started, int32
            ``[S, A]``.
        nu: ``nu_k(s, a)``, the visits within the episode, int32 ``[S, A]``.
        t_k: the round the episode started, int32.
        episodes: episodes started so far, int32.
        evi_steps: EVI sweeps so far (all episodes), int32.
        evi_unconverged: episode starts whose EVI stopped at ``max_evi_steps``, int32.
        choices: the actions the episode's policy draws from in each state (the tied
            maximisers kept by ``ties``), bool ``[S, A]``; unused with ``ties="lowest"``.
        reward_squares: sums of squared observed rewards of each pair, ``[S, A]`` (the
            empirical variances of UCRL2B and UCRL3; rewards of initial counts are not
            seen and do not enter).
        last_pair: the pair played at the previous round, int32 ``[2]``.
        last_sum: the reward sum of ``last_pair`` before that round, scalar.
        values: the last EVI values (the next warm start with ``warm_start``), ``[S]``.
        mix_action: the other action of a mixing policy (``sets.stochastic``), int32
            ``[S]``.
        mix_weight: the probability of playing ``mix_action`` instead of ``policy``,
            ``[S]`` (zeros for a deterministic policy).
        action_noise: a fixed noise per action, drawn once, ``[A]`` (zeros unless the
            variant breaks ties with it, ``sets.noisy_ties``).
    """

    policy: jax.Array
    episode_visits: jax.Array
    nu: jax.Array
    t_k: jax.Array
    episodes: jax.Array
    evi_steps: jax.Array
    evi_unconverged: jax.Array
    choices: jax.Array
    reward_squares: jax.Array
    last_pair: jax.Array
    last_sum: jax.Array
    values: jax.Array
    mix_action: jax.Array
    mix_weight: jax.Array
    action_noise: jax.Array

    @property
    def unconverged(self) -> jax.Array:
        """Planning solves that did not converge (``evi_unconverged``), int32."""
        return self.evi_unconverged


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


class EVISets:
    """What every ``sets`` value of the family shares unless it says otherwise: planning
    by extended value iteration over its ``ball`` and a deterministic episode policy.

    A variant that plans otherwise (SCAL's span-truncated operator,
    :mod:`jaxmdp.agents.scal`) brings its own ``planner``; one whose policy mixes two
    actions per state sets ``stochastic`` and brings ``mixture``; one with another episode
    rule (TUCRL's, :mod:`jaxmdp.agents.tucrl`) brings ``ends_episode``.
    """

    #: Whether the episode's policy mixes two actions (``mixture``).
    stochastic: ClassVar[bool] = False
    #: Whether the replication draws a fixed noise per action (``UCRLState.action_noise``)
    #: for its planner to break ties with.
    noisy_ties: ClassVar[bool] = False
    #: Iterates EVI remembers to detect a cycle (``cycle_memory`` of :func:`jaxmdp.evi`;
    #: 0: none).
    cycle_memory: ClassVar[int] = 0
    #: Replications whose episode starts plan together under ``cond="chunked"`` (the
    #: ``chunk`` of :func:`~jaxmdp.agents.batching.cond_chunked`). A pass costs in
    #: proportion to its rows (padded ones included), and at 100 replications a round
    #: holds about one start or fewer, so the family plans its starts one at a time.
    episode_chunk: ClassVar[int] = 1

    def planner(self, *, max_steps: int, warm_start: bool) -> Planner:
        """Extended value iteration over ``ball`` (:func:`jaxmdp.planning.evi_planner`)."""
        return evi_planner(self.ball, max_steps=max_steps, warm_start=warm_start,
                           cycle_memory=_hook(self, "cycle_memory"))

    def ends_episode(self, state, x, action) -> jax.Array:
        """Whether the round in state ``x`` starts a new episode (after the first): the
        doubling rule of Jaksch et al. (Figure 1) for the pair ``(x, action)`` about to be
        played, ``nu_k(x, a) >= max(1, N_k(x, a))``."""
        return state.nu[x, action] >= jnp.maximum(1, state.episode_visits[x, action])

    def mixture(self, model: ConfidenceSet, solution):
        """``(other_action [S], weight [S])``: with probability ``weight[s]`` the policy
        plays ``other_action[s]`` instead of ``solution.policy[s]``; None: never."""
        del model, solution


def _hook(sets, name: str):
    """The variant's ``name`` (a method or flag of :class:`EVISets`), or the family's
    default where ``sets`` has none."""
    if hasattr(sets, name):
        return getattr(sets, name)
    default = getattr(EVISets, name)
    return default.__get__(sets) if callable(default) else default


def uniform_centre(counts, num_states: int, dtype):
    """``(tried, n, p_hat)``: ``n = max(1, N_k)`` and ``p_hat`` uniform on untried pairs."""
    visits = jnp.sum(counts, axis=-1)
    tried = visits > 0
    n = jnp.maximum(visits, 1).astype(dtype)
    p_hat = jnp.where(tried[..., None], counts.astype(dtype) / n[..., None],
                      jnp.asarray(1.0 / num_states, dtype))
    return tried, n, p_hat


@dataclasses.dataclass(frozen=True)
class UCRL2Sets(EVISets):
    """UCRL2's sets (Jaksch, Ortner & Auer 2010, Figure 1): the L1 ball of radius
    ``sqrt(14 S ln(2 A t_k / delta) / n)`` around ``p_hat`` (uniform on untried pairs)
    and the reward ``min(1, r_hat + sqrt(7 ln(2 S A t_k / delta) / (2 n)))``."""

    ball: ClassVar[str] = "l1"

    def confidence(self, counts, reward_sums, reward_squares, t_k, spec: EnvSpec, config):
        """``(p_hat, r_tilde, radius)`` of the episode starting at ``t_k``."""
        del reward_squares
        dtype = jnp.asarray(spec.rewards).dtype
        S, A = spec.num_states, spec.num_actions
        _, n, p_hat = uniform_centre(counts, S, dtype)
        radius = jnp.sqrt(14.0 * S * jnp.log(2.0 * A * t_k / config.delta) / n)
        bonus = jnp.sqrt(7.0 * jnp.log(2.0 * S * A * t_k / config.delta) / (2.0 * n))
        return p_hat, jnp.minimum(reward_sums.astype(dtype) / n + bonus, 1.0), radius


@dataclasses.dataclass(frozen=True)
class KLUCRLSets(EVISets):
    """KL-UCRL's sets (Filippi, Cappé & Garivier 2010): the KL ball of radius ``C_P / n``
    (``+inf`` on untried pairs, centred on uniform) and the reward ``r_hat + sqrt(C_R /
    n)``, :func:`kl_ucrl_constants`.

    Attributes:
        search_up_bug: the StatisticalRL ``KLUCRL.py`` maximiser, bug included (ball
            ``"kl_published"``; untried pairs keep a zero ``p_hat`` and radius ``C_P``,
            lines 180-189).
    """

    search_up_bug: bool = False

    @property
    def ball(self) -> str:
        """``"kl"``, or ``"kl_published"`` with ``search_up_bug``."""
        return "kl_published" if self.search_up_bug else "kl"

    def confidence(self, counts, reward_sums, reward_squares, t_k, spec: EnvSpec, config):
        """``(p_hat, r_tilde, radius)`` of the episode starting at ``t_k``."""
        del reward_squares
        dtype = jnp.asarray(spec.rewards).dtype
        S, A = spec.num_states, spec.num_actions
        tried, n, p_hat = uniform_centre(counts, S, dtype)
        C_P, C_R = kl_ucrl_constants(S, A, t_k, config.delta)
        radius = jnp.where(tried, C_P / n, jnp.inf)
        bonus = jnp.sqrt(C_R / n)
        if self.search_up_bug:  # KLUCRL.py lines 180-189: zeros, C_P / max(1, N)
            p_hat = counts.astype(dtype) / n[..., None]
            radius = C_P / n
        return p_hat, reward_sums.astype(dtype) / n + bonus, radius


def _empirical(counts, reward_sums, reward_squares, dtype):
    """``(visits, n, p_hat, mean, var)``: the empirical laws and the reward's mean and
    population variance (``+inf`` for an untried pair), ``n = max(1, N_k)``."""
    visits = jnp.sum(counts, axis=-1)
    n = jnp.maximum(visits, 1).astype(dtype)
    p_hat = counts.astype(dtype) / n[..., None]
    mean = reward_sums.astype(dtype) / n
    var = jnp.where(visits > 0, jnp.maximum(reward_squares / n - mean * mean, 0.0), jnp.inf)
    return visits, n, p_hat, mean, var


@dataclasses.dataclass(frozen=True)
class UCRL2BSets(EVISets):
    """UCRL2B's sets (:func:`ucrl2b_agent`): empirical-Bernstein boxes (:class:`BoxBounds`).

    Attributes:
        c_sqrt: the factor of the square-root term of both widths (2).
        c_lin: the factor of the linear term ``L / n`` (6).
        delta_split: ``delta' = delta / (delta_split S A)`` (18).
    """

    c_sqrt: float = 2.0
    c_lin: float = 6.0
    delta_split: float = 18.0
    ball: ClassVar[str] = "box"

    def confidence(self, counts, reward_sums, reward_squares, t_k, spec: EnvSpec, config):
        """``(p_hat, r_tilde, BoxBounds)`` of the episode starting at ``t_k``."""
        del t_k
        dtype = jnp.asarray(spec.rewards).dtype
        S, A = spec.num_states, spec.num_actions
        _, n, p_hat, mean, var = _empirical(counts, reward_sums, reward_squares, dtype)
        d = config.delta / (self.delta_split * S * A)
        log_term = jnp.log(n / d)
        lower, upper = ucrl2b_transition_box(p_hat, n[..., None], log_term[..., None],
                                             self.c_sqrt, self.c_lin)
        r_tilde = ucrl2b_reward_upper(mean, var, n, log_term, self.c_sqrt, self.c_lin)
        return p_hat, r_tilde, BoxBounds(lower, upper)


@dataclasses.dataclass(frozen=True)
class UCRL3Sets(EVISets):
    """UCRL3's sets (:func:`ucrl3_agent`): time-uniform bounds on the empirical support and
    the near-optimistic support recomputed at every sweep (:class:`UCRL3Bounds`).

    The bounds are bisections (64 steps, or the published search with
    ``bisection_tol``); off the empirical support the bound is ``upper_out``, one per
    pair, so the ``[S, A, S]`` bisections run on the seen transitions only
    (:func:`jaxmdp.agents.batching.masked_elementwise`: same values, a cost that follows
    the number of seen transitions).

    Attributes:
        lazy: ``UCRL3_lazy``'s EVI: no ``kappa`` (the support grows while the outside
            value exceeds the inside one).
        key_sums: the published support computation (never extends the support).
        bisection_tol: ``None`` (exact bounds) or the published bisection's width.
    """

    lazy: bool = False
    key_sums: bool = False
    bisection_tol: float | None = None
    #: EVI's cycle detection (:func:`jaxmdp.evi`): the near-optimistic support, recomputed
    #: at every sweep, can alternate between two sets and keep EVI from converging; the
    #: iterates then repeat bit for bit (periods 2 to 8 on grid-4-room), and the sweeps
    #: up to ``max_evi_steps`` are skipped with the same result.
    cycle_memory: ClassVar[int] = 16

    @property
    def ball(self):
        """UCRL3's near-optimistic sets, or with the published support (``key_sums``)."""
        return UCRL3_KEY_SUMS_BALL if self.key_sums else UCRL3_BALL

    def confidence(self, counts, reward_sums, reward_squares, t_k, spec: EnvSpec, config):
        """``(p_hat, r_tilde, UCRL3Bounds)`` of the episode starting at ``t_k``."""
        del t_k
        dtype = jnp.asarray(spec.rewards).dtype
        S, A = spec.num_states, spec.num_actions
        visits, n, p_hat, mean, var = _empirical(counts, reward_sums, reward_squares, dtype)
        d = config.delta / (S * A * (3 + 3 * S))  # UCRL3.py line 13
        support = counts > 0
        # The bounds are bisections, needed on the empirical support only (the rest is
        # `upper_out`): computed on the pairs' seen transitions alone.
        lower, upper = masked_elementwise(
            functools.partial(ucrl3_transition_bounds, delta=d,
                              bisection_tol=self.bisection_tol),
            support, p_hat, jnp.broadcast_to(visits[..., None], p_hat.shape).astype(dtype))
        _, upper_out = ucrl3_transition_bounds(jnp.zeros_like(n), visits, d,
                                               bisection_tol=self.bisection_tol)
        r_tilde = ucrl3_reward_upper(mean, var, visits, d)
        if self.lazy:
            kappa = jnp.full((S, A), jnp.inf, dtype)
        else:  # UCRL3.py lines 301, 305: 10 span(u) / Nkmax^(2/3) |empirical support|
            top = jnp.max(visits).astype(dtype)
            kappa = 10.0 / top ** (2.0 / 3.0) * jnp.sum(support, axis=-1).astype(dtype)
        bounds = UCRL3Bounds(jnp.where(support, lower, 0.0), jnp.where(support, upper, 0.0),
                             upper_out, support, kappa)
        return p_hat, r_tilde, bounds


def _confidence(counts, reward_sums, reward_squares, t, spec: EnvSpec, config: UCRLConfig,
                current=None, agent_state=None):
    """``(p_hat, r_tilde, radius, epsilon)`` of the episode starting at round ``t``."""
    dtype = jnp.asarray(spec.rewards).dtype
    t_k = jnp.asarray(t).astype(dtype)
    epsilon = 1.0 / (jnp.sqrt(t_k) if config.epsilon_rule == "sqrt" else t_k)
    at_state = getattr(config.sets, "confidence_at", None)
    if at_state is None:
        p_hat, r_tilde, radius = config.sets.confidence(counts, reward_sums, reward_squares,
                                                        t_k, spec, config)
    else:
        p_hat, r_tilde, radius = at_state(counts, reward_sums, reward_squares, t_k, spec,
                                          config, current, agent_state)
    if config.known_rewards:
        r_tilde = jnp.asarray(spec.rewards, dtype)
    return p_hat, r_tilde, radius, epsilon


def tied_choices(p_opt, r_tilde, u, mask, visits, ties: str):
    """The actions the episode's policy draws from: the exact maximisers of
    ``r_tilde + q_opt . u``, then the least (``"random_least_visited"``) or most
    (``"random_most_visited"``) visited of them (``UCRL2.py`` lines 91-96), bool
    ``[S, A]``."""
    q = jnp.where(mask, r_tilde + jnp.einsum("sax,x->sa", p_opt, u), -jnp.inf)
    tied = q == jnp.max(q, axis=-1, keepdims=True)
    v = visits if ties == "random_least_visited" else -visits
    v = jnp.where(tied, v, jnp.iinfo(jnp.int32).max)
    return tied & (v == jnp.min(v, axis=-1, keepdims=True))


def _new_episode(counts, reward_sums, t, x, state: UCRLState, spec: EnvSpec,
                 config: UCRLConfig) -> UCRLState:
    p_hat, r_tilde, radius, epsilon = _confidence(counts, reward_sums, state.reward_squares,
                                                  t, spec, config, current=x,
                                                  agent_state=state)
    planner = config.planner
    mask = jnp.asarray(spec.mask, bool)
    model = ConfidenceSet(p_hat, r_tilde, radius, mask, epsilon)
    result, values = planner.update(state.values, ModelChange(model))
    visits = jnp.sum(counts, axis=-1).astype(jnp.int32)
    mix_action, mix_weight = state.mix_action, state.mix_weight
    if _hook(config.sets, "stochastic"):
        mix_action, mix_weight = config.sets.mixture(model, result)
    if config.ties == "lowest":
        choices = state.choices
    else:
        mask = mask | ~jnp.any(mask, axis=-1, keepdims=True)
        choices = tied_choices(result.q_opt, r_tilde.astype(result.bias.dtype), result.bias,
                               mask, visits, config.ties)
    return state._replace(
        policy=result.policy,
        episode_visits=visits,
        nu=jnp.zeros_like(state.nu),
        t_k=jnp.asarray(t, jnp.int32),
        episodes=state.episodes + 1,
        evi_steps=state.evi_steps + result.num_steps,
        evi_unconverged=state.evi_unconverged
        + (result.status != Status.CONVERGED).astype(jnp.int32),
        choices=choices,
        values=values.astype(state.values.dtype),
        mix_action=mix_action.astype(jnp.int32),
        mix_weight=mix_weight.astype(state.mix_weight.dtype),
    )


def _keep(counts, reward_sums, t, x, state: UCRLState, mask, rewards) -> UCRLState:
    del counts, reward_sums, t, x, mask, rewards
    return state


def _init(key, spec: EnvSpec, config: UCRLConfig) -> UCRLState:
    S, A = spec.num_states, spec.num_actions
    zero = jnp.zeros((), jnp.int32)
    dtype = jnp.asarray(spec.rewards).dtype
    noise = jnp.zeros(A, dtype)
    if _hook(config.sets, "noisy_ties"):
        noise = jax.random.uniform(key, (A,), dtype)
    return UCRLState(policy=jnp.zeros(S, jnp.int32),
                     episode_visits=jnp.zeros((S, A), jnp.int32),
                     nu=jnp.zeros((S, A), jnp.int32), t_k=zero, episodes=zero,
                     evi_steps=zero, evi_unconverged=zero,
                     choices=jnp.ones((S, A), bool),
                     reward_squares=jnp.zeros((S, A), dtype),
                     last_pair=jnp.zeros(2, jnp.int32),
                     last_sum=jnp.zeros((), dtype),
                     values=jnp.zeros(S, dtype),
                     mix_action=jnp.zeros(S, jnp.int32),
                     mix_weight=jnp.zeros(S, dtype),
                     action_noise=noise)


def _draw_keys(key, ties: str):
    """The keys of the round's two draws: ``split(key)``, or ``key`` twice with
    ``ties="lowest"``."""
    return (key, key) if ties == "lowest" else jax.random.split(key)


def _categorical(key, which, choices):
    key = jax.random.split(key)[which]  # the key of _draw_keys(key, ties)[which]
    return jax.random.categorical(key, jnp.where(choices, 0.0, -jnp.inf)).astype(jnp.int32)


def _only_choice(key, which, choices):
    del key, which
    return jnp.argmax(choices).astype(jnp.int32)


def _draw(key, which: int, state: UCRLState, x, config, draw=True):
    """The action at ``x``: the policy's, or a uniform draw among the tied choices with the
    key ``_draw_keys(key, config.ties)[which]``.

    A draw among one choice is that choice (the Gumbel draw of an action of logit
    ``-inf`` never wins), so the draw, and the split of ``key``, run only where ``draw``
    holds and ``x`` has two choices or more (:func:`~.batching.cond_compact`: under
    ``vmap`` on the replications that need it, in the rounds where some do), with the same
    result bit for bit."""
    if config.ties == "lowest":
        return state.policy[x]
    choices = state.choices[x]
    return cond_compact(draw & (jnp.sum(choices, dtype=jnp.int32) > 1), _categorical,
                        _only_choice, key, jnp.int32(which), choices)


def _step(key, state: UCRLState, obs: Observation, spec: EnvSpec, config: UCRLConfig):
    x = obs.state
    # The reward of the previous round, from the change of its pair's reward sum.
    px, pa = state.last_pair[0], state.last_pair[1]
    reward = obs.reward_sums[px, pa] - state.last_sum
    state = state._replace(reward_squares=state.reward_squares.at[px, pa].add(
        jnp.where(obs.step > 0, reward * reward, 0.0)))
    action = _draw(key, 0, state, x, config)
    start = (obs.step == 0) | _hook(config.sets, "ends_episode")(state, x, action)

    def plan(counts, reward_sums, t, x, state, mask, rewards):
        # The environment's arrays are operands, not closed over: they may be tracers,
        # which cond_any's custom_vmap cannot close over.
        return _new_episode(counts, reward_sums, t, x, state,
                            spec._replace(mask=mask, rewards=rewards), config)

    state = episode_cond(config.cond, chunk=_hook(config.sets, "episode_chunk"))(
        start, plan, _keep, obs.counts, obs.reward_sums, obs.t, x, state, spec.mask,
        spec.rewards)
    if _hook(config.sets, "stochastic"):
        second = _draw_keys(key, config.ties)[1]
        other = jax.random.uniform(second, dtype=state.mix_weight.dtype) < state.mix_weight[x]
        action = jnp.where(other, state.mix_action[x], state.policy[x])
    elif config.ties == "lowest":
        action = state.policy[x]
    else:
        action = jnp.where(start, _draw(key, 1, state, x, config, draw=start), action)
    return action, state._replace(
        nu=state.nu.at[x, action].add(1),
        last_pair=jnp.stack([x, action]).astype(jnp.int32),
        last_sum=obs.reward_sums[x, action].astype(state.last_sum.dtype))


def values_planner(solve, *, warm_start: bool, recentre: bool = False) -> Planner:
    """A :class:`~jaxmdp.planning.Planner` whose state is the last solution's values.

    ``update`` calls ``solve(model, u0)`` (``model`` the change's
    :class:`~jaxmdp.planning.ConfidenceSet`, ``u0`` in its dtype) with ``u0`` the previous
    values (minus their entry at state 0 when ``recentre``) if ``warm_start``, else zeros,
    and keeps the solution's ``bias``. The planners of SCAL and TUCRL are this with their
    own ``solve``.
    """

    def init(model: ConfidenceSet):
        return jnp.zeros(jnp.shape(model.p_hat)[0], jnp.asarray(model.p_hat).dtype)

    def update(state, change: ModelChange):
        model = change.model
        if not warm_start:
            u0 = jnp.zeros_like(state)
        else:
            u0 = state - state[0] if recentre else state
        solution = solve(model, u0.astype(jnp.asarray(model.p_hat).dtype))
        return solution, solution.bias

    return Planner(init, update)


def check_bool(name: str, value) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be a bool, got {value!r}")


def _check_config(config: UCRLConfig) -> None:
    check_bool("known_rewards", config.known_rewards)
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
    check_cond(config.cond)
    if config.ties not in TIES:
        raise ValueError(f"ties must be one of {list(TIES)}, got {config.ties!r}")
    check_bool("warm_start", config.warm_start)
    if _hook(config.sets, "stochastic") and config.ties != "lowest":
        raise ValueError(f"ties must be 'lowest' for a variant with a mixing policy, "
                         f"got {config.ties!r}")


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


def ucrl_family_agent(name: str, sets, *, known_rewards: bool = False, delta: float = 0.05,
                      epsilon_rule: str = "sqrt", max_evi_steps: int = 10_000,
                      cond: str = "chunked", ties: str = "lowest",
                      warm_start: bool = False) -> Agent:
    """An agent of the UCRL family with the confidence sets ``sets`` (:class:`UCRLConfig`).

    The family's episodes (the doubling rule), extended value iteration over ``sets``'s
    ball, its ties and batching; a new variant is a ``sets`` value and nothing else.

    Args:
        name: the agent's name.
        sets: the variant: a hashable value with ``ball`` and ``confidence`` (see
            :class:`UCRLConfig`), e.g. :class:`UCRL2Sets`.
        known_rewards: plan with the true mean rewards (default False: learn them; then
            rewards must lie in ``[0, 1]``).
        delta: confidence parameter in ``(0, 1)``.
        epsilon_rule: ``"sqrt"`` (EVI stops at span ``< 1/sqrt(t_k)``) or ``"t"``
            (``< 1/t_k``).
        max_evi_steps: the most EVI sweeps per episode start (positive int).
        cond: episode-start batching (:class:`UCRLConfig`).
        ties: one of :data:`TIES` (:class:`UCRLConfig`).
        warm_start: start each episode's EVI from the previous values.

    Returns:
        The :class:`~jaxmdp.Agent`.

    Raises:
        ValueError: for an option of the wrong type or value, naming it.

    Example:
        >>> from jaxmdp.agents.ucrl import UCRL2Sets, ucrl_family_agent
        >>> ucrl_family_agent("my_ucrl2", UCRL2Sets(), delta=0.1).config.ball
        'l1'
    """
    config = UCRLConfig(sets, known_rewards, delta, epsilon_rule, max_evi_steps, cond, ties,
                        warm_start)
    _check_config(config)
    return Agent(name, _init, _step, config, _validate)


def ucrl_agent(name: str, *, known_rewards: bool = False, delta: float = 0.05,
               epsilon_rule: str = "sqrt", max_evi_steps: int = 10_000,
               cond: str | None = None, ties: str = "lowest",
               warm_start: bool = False, search_up_bug: bool = False) -> Agent:
    """UCRL2 (``"ucrl2"``) or KL-UCRL (``"kl_ucrl"``), configured (:mod:`jaxmdp.agents.ucrl`).

    Args:
        name: ``"ucrl2"`` or ``"kl_ucrl"``.
        known_rewards: plan with the true mean rewards (default False: learn them; then
            rewards must lie in ``[0, 1]``).
        delta: confidence parameter in ``(0, 1)`` (default 0.05).
        epsilon_rule: ``"sqrt"`` (EVI stops at span ``< 1/sqrt(t_k)``, default) or
            ``"t"`` (``< 1/t_k``).
        max_evi_steps: the most EVI sweeps per episode start (positive int).
        cond: ``"chunked"``, ``"compact"``, ``"cond_any"`` or ``"lax"`` (see
            :mod:`jaxmdp.agents.ucrl`); default ``"chunked"`` for UCRL2 and for KL-UCRL
            with ``search_up_bug``, ``"compact"`` for KL-UCRL.
        ties: ``"lowest"`` (default) or ``"random_least_visited"`` (the StatisticalRL
            rule, re-sampled at every step; :class:`UCRLConfig`).
        warm_start: start each episode's EVI from the previous values (default False:
            from zeros, Jaksch et al.; True: the StatisticalRL code).
        search_up_bug: KL-UCRL only: reproduce the StatisticalRL ``KLUCRL.py`` maximiser
            with its bug (line 128 finds ``nu`` by ``search_up`` on a decreasing function,
            so ``nu = max u + 10^7`` and ``q`` is nearly ``p_hat``; untried pairs keep a
            zero ``p_hat``; ``ball="kl_published"`` of :func:`jaxmdp.evi`). Default False:
            the exact maximiser.

    Returns:
        The :class:`~jaxmdp.Agent`.

    Raises:
        ValueError: for an unknown name or an option of the wrong type or value.
    """
    if name not in ("ucrl2", "kl_ucrl"):
        raise ValueError(f"name must be one of ['ucrl2', 'kl_ucrl'], got {name!r}")
    check_bool("search_up_bug", search_up_bug)
    if cond is None:  # the exact KL ball's planning depends on its batch (module docstring)
        cond = "compact" if name == "kl_ucrl" and not search_up_bug else "chunked"
    if search_up_bug and name != "kl_ucrl":
        raise ValueError(f"search_up_bug applies to 'kl_ucrl' only, got name {name!r}")
    sets = UCRL2Sets() if name == "ucrl2" else KLUCRLSets(search_up_bug)
    return ucrl_family_agent(name, sets, known_rewards=known_rewards, delta=delta,
                             epsilon_rule=epsilon_rule, max_evi_steps=max_evi_steps,
                             cond=cond, ties=ties, warm_start=warm_start)


def ucrl2b_agent(*, known_rewards: bool = False, delta: float = 0.05,
                 epsilon_rule: str = "t", max_evi_steps: int = 10_000,
                 cond: str = "chunked", ties: str = "random_least_visited",
                 c_sqrt: float = 2.0, c_lin: float = 6.0,
                 delta_split: float = 18.0, warm_start: bool = True) -> Agent:
    r"""UCRL2B (Fruit, Pirotta & Lazaric 2020) as in the StatisticalRL ``learners`` code.

    UCRL2's episodes (the doubling rule) and extended value iteration, with a box of
    empirical-Bernstein bounds around every transition probability and a Bernstein
    reward bound (:mod:`jaxmdp.agents.confidence`; ``UCRL2B.py`` lines 59-76). With
    ``n = max(1, N_k(s, a))``, ``delta' = delta / (delta_split S A)`` and
    ``L = ln(n / delta')``:

    .. math::

        \hat p \pm \Big(c_{\sqrt{}} \sqrt{\hat p (1 - \hat p) L / n} + c_{lin} L / n\Big)
        \cap [0, 1], \qquad
        \tilde r = \min\Big(1, \hat r + c_{\sqrt{}} \sqrt{\widehat{\mathrm{var}}\,
        L / n} + c_{lin} L / n\Big),

    ``var`` the population variance of the observed rewards (``+inf`` for an untried
    pair: reward 1). The inner maximisation of EVI is the exact box maximiser
    (:func:`jaxmdp.planning.evi.box_maximise`: lower bounds first, the remaining mass to
    the highest values up to their upper bounds; the published code stops that loop once
    less than ``1e-8`` is left, ``UCRL2B.py`` line 101). EVI stops at span ``< 1/t_k``
    (``epsilon_rule="t"``); ties as the published code by default
    (``ties="random_least_visited"``) and warm-started from the previous episode's values
    (``warm_start=True``). Departures: EVI stops on ``sp(u_{i+1} - u_i)`` (the published
    code takes the span of ``|u_{i+1} - u_i|``) and sorts the states at every sweep (the
    published first sweep uses the identity order, line 113).

    The other public versions use other constants (rlexplorer ``UCRL/Ucrl.py``
    lines 258-287 and Colosseum ``ucrl2.py`` lines 240-308:
    ``sqrt(14 var ell / n) + 49 ell / (3 max(1, N - 1))``, ``ell = ln(2 S A (t + 1) /
    delta)``); ``c_sqrt``, ``c_lin`` and ``delta_split`` change StatisticalRL's.

    Args:
        known_rewards: plan with the true mean rewards (default False: learn them).
        delta: confidence parameter in ``(0, 1)``.
        epsilon_rule: ``"t"`` (default) or ``"sqrt"``.
        max_evi_steps: the most EVI sweeps per episode start.
        cond: episode-start batching (:class:`UCRLConfig`).
        ties: ``"random_least_visited"`` (default), ``"random_most_visited"`` or
            ``"lowest"``.
        c_sqrt: factor of the square-root terms (2).
        c_lin: factor of the linear terms (6).
        delta_split: the split of ``delta`` over ``S A`` pairs and bounds (18).
        warm_start: start each episode's EVI from the previous values (default, as the
            published code), else from zeros.

    Returns:
        The :class:`~jaxmdp.Agent` named ``"ucrl2b"``.

    Raises:
        ValueError: for an option of the wrong type or value, naming it: among others a
            ``c_sqrt`` or ``c_lin`` that is negative or not finite, or a ``delta_split``
            that is not positive.

    Example:
        >>> import jaxmdp as jm
        >>> jm.get_agent("ucrl2b").config.sets.c_lin
        6.0
    """
    for option, v in (("c_sqrt", c_sqrt), ("c_lin", c_lin), ("delta_split", delta_split)):
        if (isinstance(v, bool) or not isinstance(v, numbers.Real)
                or not math.isfinite(v) or v < 0 or (option == "delta_split" and v <= 0)):
            raise ValueError(f"{option} must be a non-negative finite number"
                             f"{' (positive)' if option == 'delta_split' else ''}, got {v!r}")
    return ucrl_family_agent("ucrl2b", UCRL2BSets(c_sqrt, c_lin, delta_split),
                             known_rewards=known_rewards, delta=delta,
                             epsilon_rule=epsilon_rule, max_evi_steps=max_evi_steps,
                             cond=cond, ties=ties, warm_start=warm_start)


def ucrl3_agent(*, lazy: bool = False, key_sums: bool = False,
                bisection_tol: float | None = None, known_rewards: bool = False,
                delta: float = 0.05, epsilon_rule: str = "t", max_evi_steps: int = 1_000,
                cond: str = "chunked", ties: str | None = None,
                warm_start: bool | None = None) -> Agent:
    r"""UCRL3 (Bourel, Maillard & Talebi 2020) as in the StatisticalRL ``learners`` code.

    UCRL2's episodes (the doubling rule, ``UCRL3.py`` line 361) with UCRL3's
    time-uniform bounds (:mod:`jaxmdp.agents.confidence`: per-transition
    Bernstein / sub-Gaussian bounds with peeling, empirical-Bernstein and
    Hoeffding-Laplace reward bounds, ``delta`` split over ``S A (3 + 3 S)``), and
    extended value iteration over the near-optimistic sets
    (:func:`jaxmdp.agents.ucrl3_support.near_optimistic_support`, recomputed at every sweep; the
    inner maximum is the box maximiser on that support, ``max_proba``, lines 264-290),
    stopped at span ``< 1/t_k`` and at most 1000 sweeps (lines 318-325; the published
    loop stops on ``itera > max_iter`` with ``itera`` from 0, i.e. after 1002 sweeps:
    ``max_evi_steps=1002`` reproduces it).

    The support, recomputed from every sweep's values, can alternate between sets (on
    grid-4-room at some episode starts, with the default support and with the published
    one alike, lines 300-305 recomputing it at every sweep too), and EVI then runs to
    its cap; the published code does the same and prints "No convergence" (line 324).
    The iterates then repeat bit for bit with a short period, which EVI detects
    (``cycle_memory`` of :func:`jaxmdp.evi`, 16 iterates): it returns the result of
    the full ``max_evi_steps`` sweeps, ``num_steps`` included, without running them.

    * ``lazy=False`` (``UCRL3``): the support grows while the outside value exceeds
      ``min(kappa, inside value)``, ``kappa = 10 span(u) / N_max^(2/3) |empirical
      support|`` (lines 301, 305); ties to the least visited maximisers (line 313).
    * ``lazy=True`` (``UCRL3_lazy``, the class the StatisticalRL experiment scripts run
      under the name "UCRL3"): no ``kappa`` (line 410) and ties to the *most* visited
      maximisers (line 425). Departure: the published lazy EVI recomputes the supports
      every 5 sweeps after the first 5 (lines 412-414); here every sweep (the same
      fixed point; only the sweep at which the tolerance is met can differ).
    * ``key_sums=True`` reproduces the published support computation, which sums the
      keys of a dict where it means its values (lines 175, 193) and therefore never
      extends the support beyond the empirical one plus the state of highest value.
      The default follows the definition (``key_sums=False``).
    * The transition bounds are the exact ends of their intervals (64 bisection steps);
      ``bisection_tol=1e-4`` reproduces the published bisection, which is up to ``1e-4``
      less optimistic. Fed the published learner's own data (3 runs of ``T = 3,000``,
      121 episode starts of ``UCRL3_lazy``), the exact bounds changed the chosen policy at
      2 episode starts.

    EVI starts from the previous episode's values (``warm_start``, default for
    ``UCRL3``; ``UCRL3_lazy`` in effect starts from zeros, lines 433-437, the default with
    ``lazy=True``) and stops on ``sp(u_{i+1} - u_i)`` (published: ``sp(|u_{i+1} - u_i|)``;
    the warm start is the values at the start of the last sweep, the published code's
    those at its end). Rewards are learned by
    default; their empirical variance comes from the squares of the observed rewards
    (initial counts' rewards are not seen and count as zero variance).

    Args:
        lazy: ``UCRL3_lazy`` (see above).
        key_sums: the published support (see above).
        bisection_tol: ``None`` (exact bounds, default) or the published ``1e-4``.
        known_rewards: plan with the true mean rewards (default False: learn them).
        delta: confidence parameter in ``(0, 1)``.
        epsilon_rule: ``"t"`` (default) or ``"sqrt"``.
        max_evi_steps: the most EVI sweeps per episode start (1000).
        cond: episode-start batching (:class:`UCRLConfig`).
        ties: default ``"random_least_visited"`` (``"random_most_visited"`` with
            ``lazy=True``); or ``"lowest"``.
        warm_start: start each episode's EVI from the previous values; default True
            (``UCRL3``), False with ``lazy=True`` (``UCRL3_lazy``).

    Returns:
        The :class:`~jaxmdp.Agent` named ``"ucrl3"``.

    Raises:
        ValueError: for an option of the wrong type or value, naming it: among others a
            ``lazy`` or ``key_sums`` that is not a bool, or a ``bisection_tol`` that is
            neither None nor in ``(0, 1)``.

    Example:
        >>> import jaxmdp as jm
        >>> jm.get_agent("ucrl3", lazy=True).config.ties
        'random_most_visited'
    """
    if ties is None:
        ties = "random_most_visited" if lazy is True else "random_least_visited"
    if warm_start is None:
        warm_start = lazy is not True
    check_bool("lazy", lazy)
    check_bool("key_sums", key_sums)
    b = bisection_tol
    if b is not None and (isinstance(b, bool) or not isinstance(b, numbers.Real)
                          or not 0 < b < 1):
        raise ValueError(f"bisection_tol must be None or a number in (0, 1), got {b!r}")
    return ucrl_family_agent("ucrl3", UCRL3Sets(lazy, key_sums, bisection_tol),
                             known_rewards=known_rewards, delta=delta,
                             epsilon_rule=epsilon_rule, max_evi_steps=max_evi_steps,
                             cond=cond, ties=ties, warm_start=warm_start)


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
