r"""The UCRL family: UCRL2, KL-UCRL, UCRL2B, UCRL3, rlexplorer's UCRL, SCAL, SCAL+ and TUCRL,
variants as data.

Every agent of the family is one algorithm (described below) with one :class:`UCRLConfig`;
a variant is the ``sets`` value of that config, a frozen dataclass deriving from
:class:`UCRLSets` (which declares every hook the family calls), which brings the
episode's confidence sets (``confidence``) and its planner (for :class:`EVISets`,
extended value iteration over its ``ball``): :class:`UCRL2Sets`, :class:`KLUCRLSets`,
:class:`UCRL2BSets`, :class:`UCRL3Sets`, :class:`RlexplorerUCRLSets` (:mod:`.rlexplorer`),
:class:`SCALSets`, :class:`SCALPlusSets` (:mod:`.scal`) and :class:`TUCRLSets`
(:mod:`.tucrl`). A new variant
is a sets class and one registration line,
``register_agent("name", ucrl_variant(MySets, "name"))``; no code of the family changes.

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

**UCRL2B** and **UCRL3** (:class:`UCRL2BSets`, :class:`UCRL3Sets`) share these episodes
and this batching, with per-next-state bounds (:mod:`jaxmdp.agents.confidence`) and the
``"box"`` set of :func:`jaxmdp.evi` and UCRL3's (:data:`jaxmdp.planning.UCRL3_BALL`); their
defaults follow the StatisticalRL code (random least-visited ties, ``1/t_k``, warm
start).

**Batching.** A replication plans only when its episode starts, a rare event that differs
between replications; under ``vmap`` a plain ``lax.cond`` on it would run EVI for every
replication at every round. The family's default ``cond="auto"`` is chosen by the backend
when the agent is built (:func:`~jaxmdp.agents.batching.resolve_cond`): on a CPU
``"chunked"``, on an accelerator ``"cond_any"``. ``cond="chunked"``
(:func:`~jaxmdp.agents.batching.cond_chunked`) runs no EVI in a round where no replication
starts an episode, and in a round where ``m`` do, runs EVI on those ``m`` only, ``c`` at a
time (``ceil(m / c)`` passes of one compiled copy of the planner, the last one padded),
with ``c = episode_chunk`` (an option of every agent of the family). A pass costs in
proportion to its rows, padded ones included, and at 100 replications a round holds one
start or fewer on average (UCRL2 with the StatisticalRL options on RiverSwim-25: 53
episodes per replication in 10⁴ rounds, 0.53 starts per round), so wider passes mostly
plan padding. Where many start in the same round (T = 2,000 at 1,000 replications: 20 to
150 per round) passes of 8 run 1.2-1.3x faster (measurements:
``docs/measurements/baselines.md``, "Planning passes"). So the default
``episode_chunk="auto"`` is fixed by the number of replications of the run
(:meth:`jaxmdp.Agent.for_replications`, applied by :func:`jaxmdp.simulate` and
:func:`jaxmdp.sweep`): 1 below 1,000 replications, 8 from 1,000
(:data:`~jaxmdp.agents.batching.EPISODE_CHUNKS`); a number given is kept. ``cond="compact"``
(:func:`~jaxmdp.agents.batching.cond_compact`) gathers them instead into one batch of 4,
16, 64 or 256 replications (the smallest that holds them, among those at most half the
batch) or else the whole batch (one compiled copy of EVI per size); ``cond="cond_any"``
plans the whole batch in such rounds, in one masked pass where each row stops by its own
rule (on a GPU a pass over the batch costs what one row does, and every trip of EVI's loop
costs a kernel launch and a host wait, so one pass beats many); ``cond="lax"`` plans it
every round. For UCRL2 on RiverSwim-6 all four give the same trajectories (tested). A row's
plan does not depend on the other rows of its pass, but its last bits can depend on the
pass's width (XLA compiles a batch of one or eight rows to different kernels): the chunk is
fixed for a run, so a replication's run does not depend on the others' episode starts
(nor on how the replications are split over MDPs, sweep points or devices), and a run
with another ``episode_chunk`` (or, by ``"auto"``, another number of replications) can
part from it at an exact tie (UCRL2 on RiverSwim-25 and grid-4-room, also in float64).
KL-UCRL's exact KL ball is not bitwise independent of the width of its planning pass
(its trajectories with ``"compact"`` at 1,000 replications on riverswim-6 differ from
``"chunked"``'s in the last bits), so on a CPU its default is the family's fixed pass
width: a run does not depend on the others' episode starts nor on the number of
devices. With ``search_up_bug=True`` its
maximiser is a closed form and ``"chunked"`` and ``"compact"`` give the same trajectories
(tested).

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

from jaxmdp.agents.episodes import replay_episodes
from jaxmdp.agents.ucrl._family import (
    EPSILON_RULES,
    TIES,
    UCRLConfig,
    UCRLState,
    tied_choices,
    ucrl_family_agent,
    ucrl_variant,
)
from jaxmdp.agents.ucrl._sets import EpisodeStats, EVISets, UCRLSets, empirical, uniform_centre
from jaxmdp.agents.ucrl._variants import (
    UCRL3_CYCLE_MEMORY,
    KLUCRLSets,
    UCRL2BSets,
    UCRL2Sets,
    UCRL3Sets,
    kl_ucrl_agent,
    kl_ucrl_constants,
    ucrl2_agent,
    ucrl2b_agent,
    ucrl3_agent,
    ucrl_agent,
)
from jaxmdp.agents.ucrl.rlexplorer import RlexplorerUCRLSets, ucrl_rlexplorer_agent
from jaxmdp.agents.ucrl.scal import (
    SCALPlusSets,
    SCALSets,
    SpanCappedSets,
    scal_agent,
    scal_plus_agent,
)
from jaxmdp.agents.ucrl.tucrl import TUCRLSets, tucrl_agent

__all__ = [
    "EPSILON_RULES",
    "TIES",
    "UCRL3_CYCLE_MEMORY",
    "EVISets",
    "EpisodeStats",
    "KLUCRLSets",
    "RlexplorerUCRLSets",
    "SCALPlusSets",
    "SCALSets",
    "SpanCappedSets",
    "TUCRLSets",
    "UCRL2BSets",
    "UCRL2Sets",
    "UCRL3Sets",
    "UCRLConfig",
    "UCRLSets",
    "UCRLState",
    "empirical",
    "kl_ucrl_agent",
    "kl_ucrl_constants",
    "replay_episodes",
    "scal_agent",
    "scal_plus_agent",
    "tied_choices",
    "tucrl_agent",
    "ucrl2_agent",
    "ucrl2b_agent",
    "ucrl3_agent",
    "ucrl_agent",
    "ucrl_family_agent",
    "ucrl_rlexplorer_agent",
    "ucrl_variant",
    "uniform_centre",
]
