r"""SCAL and SCAL+: the UCRL family with the bias span capped at ``c`` (ScOpt).

Both are variants of the UCRL family (:mod:`jaxmdp.agents.ucrl`) whose sets
(:class:`SCALSets`, :class:`SCALPlusSets`, siblings under :class:`SpanCappedSets`)
bring their confidence sets *and* their planner, the span-truncated operator
:func:`jaxmdp.planning.scopt_planner`. The
reference is the authors' code, RonanFR/UCRL at commit ``ab64d14`` (branch
``refactoring_and_cleaning``, "Added visdom visualization", 30 April 2019:
``rlexplorer/scal.py``, ``rlexplorer/Ucrl.py``, ``rlexplorer/evi/scopt.pyx``,
``rlexplorer/evi/_lpproba.pyx``), the newest commit whose ``SCAL`` and ``SCALPLUS`` run
with their constructor defaults (the later branch tips ``messinguppppp`` and
``learning_rep`` crash for them; the papers' own text was not at hand, so the code is the
reference and each rule below names its line).

**ScOpt** (``scopt.pyx`` lines 184-408), from ``u`` (warm-started from the previous
episode's values, line 177): with the aperiodicity factor ``tau = 0.9`` (``Ucrl.py`` line
149) each sweep computes

.. math::

    u_3(s) = \max_a \Big[\tilde r(s, a) + \tau \max_{q \in B(s, a)} q \cdot u
    + (1 - \tau) u(s)\Big], \qquad u_2 = \min(u_3, \min u_3 + c / \tau)

(the cap ``c / tau`` on the transformed iterates, line 122), stops when
:math:`\mathrm{sp}(u_2 - u) < \epsilon` (line 268, ``check_end``) with
``epsilon = 1/sqrt(t_k)`` (``Ucrl.py`` line 458: ``r_max / sqrt(iteration + 1)``),
else continues from ``u_2 - u_2(0)`` (lines 392-400, ``relative_vi``). The policy of the
last sweep is greedy where ``u_3(s) < th = min u_3 + c / tau`` and elsewhere *mixes* the greedy
action with the pessimistic one (``argmin_a [0 + tau min_{q in B} q . u + (1 - tau)
u(s)]``, reward 0 with ``augment_reward``, lines 291-335) with the weights that make its
value ``th`` (lines 347-380): ``w_min = (u_3 - th) / (u_3 - u_min)``. Where even the
pessimistic value exceeds ``th`` the published solver returns an error (line 340,
``-21``); here the pessimistic action is played and the episode start counts as
unconverged (``evi_unconverged``).

**Ties** go to the lowest action index by default (``ties="lowest"``; where the
pessimistic and the greedy values are equal, ``isclose``, all the weight goes to the
pessimistic action). The published solver adds a noise ``0.1 min(1e-6, epsilon) U_a`` to
each action's value, ``U_a`` uniform, drawn once per replication (lines 157-166:
``RandomState(random_state)`` created afresh at every call), for the greedy action (line
232), the pessimistic one (line 330) and between them where their values are equal (line
352): ``ties="noise"`` reproduces it (the family's option; in float64, the noise is below
float32's resolution).

**Warm start.** With the family's ``warm_start`` (default, the published code) each
episode starts from the previous one's values. The published solver keeps the values at
the end of the last sweep (it returns at line 390 before copying them, line 392, and the
next call starts from ``u_2 - u_2(0)``, lines 175-177); by default jaxmdp keeps those the
last sweep started from, for which the episode's policy is greedy (one sweep behind:
with ``epsilon = 1/sqrt(t_k)`` most solves run one to four sweeps).
``published_warm_start=True`` keeps the end of the last sweep, as published.

**Episodes.** The doubling rule of the family, tested as the published ``UcrlMdp.learn``
does (``Ucrl.py`` lines 261-263, 164-165): the episode ends after a round whose pair
``(s, a)`` has been played ``max(1, N_k(s, a))`` times in it (with a mixing policy the
action is only known once drawn).

**SCAL's sets** (:class:`SCALSets`; ``Ucrl.py`` lines 307-383, the Bernstein bounds,
``bound_type="bernstein"``, the default of ``SCAL``): with ``n = max(1, N_k)`` and
``L = ln(6 S A n / delta)``, the box ``max(0, p_hat - b) <= q <= p_hat + b``,
``b = sqrt(p_hat (1 - p_hat) L / n) + L / n`` (``LPPROBA_bernstein``, ``_lpproba.pyx``
lines 9-32: lower bounds first, the rest to the highest values), and the reward
``r_hat + sqrt(var L / n) + L / n`` (population variance; ``r_max = 1``), **not** clipped
at 1 (``scal.py`` line 41: ``r_max_vi = int32 max``; rlexplorer's UCRL, which bounds it,
is :mod:`.rlexplorer`). An untried pair has ``p_hat`` uniform, ``r_hat = 0`` and zero
variance (``Ucrl.py`` lines 139-144).

**SCAL+'s sets** (:class:`SCALPlusSets`, ``scal.py`` class ``SCALPLUS``, lines 72-142,
``bound_type="hoeffding"``): no transition set (``beta_p = 0``: ScOpt on the empirical
MDP, "no EVI") with ``p_hat`` pulled towards state 0, ``(N(s, a, .) + e_0) / (N_k + 1)``
for a tried pair (lines 136-142; uniform for an untried one), and the bonus

.. math::

    r_{max} \sqrt{L / n} + c \Big(\sqrt{L / n} + \frac{1}{N_k + 1}\Big)

added to ``r_hat`` (lines 110-121). Its ``known_rewards`` would keep the ``c`` term
(line 121); jaxmdp's ``known_rewards`` replaces the whole optimistic reward, so it is not
offered.

**The confidence level.** The published learners reset ``delta`` to ``1/sqrt(t_k)`` at
every episode (``Ucrl.py`` line 207, ``self.delta = 1 / sqrt(iteration + 1)``), which is
not a confidence level of a fixed-``delta`` analysis: the default keeps ``delta`` fixed
(the agent's ``delta``), ``published_delta=True`` reproduces the code.

**The span bound** ``c`` is ``span_constraint``, default 5 (``examples/multi_runner.py``
line 64 and ``example_toy1.py`` line 107).

References:
    Fruit, Pirotta, Lazaric & Ortner, "Efficient Bias-Span-Constrained
    Exploration-Exploitation in Reinforcement Learning", ICML 2018.
    Qian, Fruit, Pirotta & Lazaric, "Exploration Bonus for Regret Minimization in
    Discrete and Continuous Average Reward MDPs", NeurIPS 2019.
"""

from __future__ import annotations

import abc
import dataclasses

import jax
import jax.numpy as jnp

from jaxmdp.agents.episodes import doubling
from jaxmdp.agents.options import boolean, option, real
from jaxmdp.agents.protocol import EnvSpec, Observation
from jaxmdp.agents.ucrl._family import ucrl_variant
from jaxmdp.agents.ucrl._sets import EpisodeStats, UCRLSets, empirical
from jaxmdp.agents.ucrl.rlexplorer import rlexplorer_bernstein
from jaxmdp.planning import (
    BoxBounds,
    ConfidenceSet,
    Planner,
    Solution,
    scopt,
    scopt_mixture,
    scopt_noise,
    scopt_planner,
)

__all__ = ["SCALPlusSets", "SCALSets", "SpanCappedSets", "scal_agent", "scal_plus_agent",
           "scopt", "scopt_mixture", "scopt_planner"]


@dataclasses.dataclass(frozen=True)
class SpanCappedSets(UCRLSets):
    """The abstract base of SCAL's and SCAL+'s sets: ScOpt's planner, its mixing policy,
    the doubling rule tested after each round and the published ``delta``.

    Attributes:
        span_constraint: the span bound ``c`` (5; positive, finite).
        published_delta: reset ``delta`` to ``1/sqrt(t_k)`` at every episode
            (``Ucrl.py`` line 207) instead of the agent's fixed ``delta``.
        tau: the aperiodicity factor (0.9, ``Ucrl.py`` line 149; in ``(0, 1]``).
        published_warm_start: with ``warm_start``, start each episode from the values at
            the end of the previous episode's last sweep (``scopt.pyx`` lines 175-177,
            390-392) instead of those that sweep started from.
    """

    span_constraint: float = option(5.0, real(low=0.0, low_open=True))
    published_delta: bool = option(False, boolean())
    tau: float = option(0.9, real(low=0.0, high=1.0, low_open=True))  # Ucrl.py l. 149
    published_warm_start: bool = option(False, boolean())

    @abc.abstractmethod
    def confidence(self, stats: EpisodeStats, spec: EnvSpec, delta):
        """``(p_hat, r_tilde, BoxBounds)`` of the episode."""

    def planner(self, *, max_steps: int, warm_start: bool, kernel: str = "xla") -> Planner:
        """:func:`jaxmdp.planning.scopt_planner` with this ``c``, ``tau`` and warm start
        (its one loop, ``kernel="xla"``)."""
        del kernel  # "xla" (loop_kernels)
        return scopt_planner(self.span_constraint, tau=self.tau, max_steps=max_steps,
                             warm_start=warm_start, warm_from_end=self.published_warm_start)

    def ends_episode(self, state, obs: Observation, action) -> jax.Array:
        """The doubling rule on the pair played at the previous round (``Ucrl.py`` lines
        261-263 and 164-165: tested after each round)."""
        del action
        return doubling(state.nu, state.episode_visits, obs.previous_state,
                        obs.previous_action)

    def mixes(self) -> bool:
        """True: where the cap binds, the policy mixes two actions."""
        return True

    def mixture(self, model: ConfidenceSet, solution: Solution):
        """The mixing policy of :func:`jaxmdp.planning.scopt_mixture` at the solution's
        values (with the model's tie noise, if any)."""
        dtype = solution.bias.dtype
        rewards = jnp.asarray(model.rewards, dtype)
        noise = None
        if model.tie_noise is not None:
            noise = scopt_noise(jnp.asarray(model.tie_noise, dtype),
                                jnp.asarray(model.epsilon, dtype))
        action, weight, _ = scopt_mixture(rewards, model.radius, model.mask, solution.bias,
                                          self.span_constraint, self.tau, noise)
        return action, weight

    def tie_rules(self) -> tuple[str, ...]:
        """``"lowest"`` and the published ``"noise"`` (a mixing policy re-samples no
        tied law)."""
        return ("lowest", "noise")

    def delta_k(self, t_k, delta):
        """The episode's confidence level: ``1/sqrt(t_k)`` with ``published_delta``, else
        ``delta``."""
        return 1.0 / jnp.sqrt(t_k) if self.published_delta else delta


@dataclasses.dataclass(frozen=True)
class SCALSets(SpanCappedSets):
    """SCAL's sets (:mod:`jaxmdp.agents.ucrl.scal`): Bernstein boxes and an optimistic
    reward not clipped at 1; the options of :class:`SpanCappedSets`.

    Example:
        >>> import jaxmdp as jm
        >>> jm.get_agent("scal", span_constraint=2.0).config.sets.span_constraint
        2.0
    """

    def confidence(self, stats: EpisodeStats, spec: EnvSpec, delta):
        """``(p_hat, r_tilde, BoxBounds)`` of the episode:
        :func:`~jaxmdp.agents.ucrl.rlexplorer.rlexplorer_bernstein`, the reward not
        bounded."""
        return rlexplorer_bernstein(stats, spec, self.delta_k(stats.t_k, delta))


@dataclasses.dataclass(frozen=True)
class SCALPlusSets(SpanCappedSets):
    """SCAL+'s model and bonus (:mod:`jaxmdp.agents.ucrl.scal`): the empirical model
    pulled towards state 0 (a box of zero width) and the exploration bonus; the options
    of :class:`SpanCappedSets`.

    Example:
        >>> import jaxmdp as jm
        >>> jm.get_agent("scal_plus").config.sets.span_constraint
        5.0
    """

    def confidence(self, stats: EpisodeStats, spec: EnvSpec, delta):
        """``(p_smoothed, r_hat + bonus, BoxBounds(p_smoothed, p_smoothed))``."""
        dtype = jnp.asarray(spec.rewards).dtype
        S, A = spec.num_states, spec.num_actions
        visits, n, _, mean, _ = empirical(stats, dtype, untried_var=0.0)
        tried = visits > 0
        pulled = (stats.counts.astype(dtype) + jax.nn.one_hot(0, S, dtype=dtype)) / (
            visits.astype(dtype) + 1.0)[..., None]
        p = jnp.where(tried[..., None], pulled, jnp.asarray(1.0 / S, dtype))
        beta = jnp.sqrt(jnp.log(6.0 * S * A * n / self.delta_k(stats.t_k, delta)) / n)
        bonus = beta + self.span_constraint * (beta + 1.0 / (visits.astype(dtype) + 1.0))
        return p, mean + bonus, BoxBounds(p, p)


scal_agent = ucrl_variant(SCALSets, "scal", warm_start=True, fixed={"epsilon_rule": "sqrt"})
"""The factory of ``"scal"``: SCAL (:class:`SCALSets`, options ``span_constraint``,
``published_delta``, ``tau``, ``published_warm_start``) with the family's options
(:class:`~jaxmdp.agents.ucrl.UCRLConfig`) but ``epsilon_rule`` (``"sqrt"``), default
``warm_start=True`` (the published code) and ``ties="lowest"`` (``"noise"``: the
published draw)."""

scal_plus_agent = ucrl_variant(SCALPlusSets, "scal_plus", warm_start=True,
                               fixed={"epsilon_rule": "sqrt", "known_rewards": False})
"""The factory of ``"scal_plus"``: SCAL+ (:class:`SCALPlusSets`) as ``"scal"``; rewards
are learned (no ``known_rewards``: the published one keeps the ``c`` term)."""
