r"""rlexplorer's UCRL: the published ``UcrlMdp`` (RonanFR/UCRL ``ab64d14``) as a UCRL variant.

:func:`ucrl_rlexplorer_agent` (the agent ``"ucrl_rlexplorer"``) is the UCRL family
(:mod:`jaxmdp.agents.ucrl`) with :class:`RlexplorerUCRLSets`, read line by line from
RonanFR/UCRL at commit ``ab64d14`` (branch ``refactoring_and_cleaning``, 30 April 2019:
``rlexplorer/Ucrl.py``, ``rlexplorer/evi/evi.pyx``, ``rlexplorer/evi/_lpproba.pyx``,
``rlexplorer/evi/_utils.pyx``), the code that SCAL and SCAL+ (:mod:`.scal`) extend. It is
not Jaksch et al.'s UCRL2 (``"ucrl2"``): its sets are Bernstein boxes, its confidence
level shrinks with time, its value iteration has an aperiodicity transform, and it ends
an episode after the round that reaches the doubling threshold. With ``n = max(1, N_k(s,
a))`` and the episode's first round ``t_k`` (jaxmdp's ``t_k`` counts from 1: the
published ``iteration + 1``):

* **Confidence level** ``delta_k = 1 / sqrt(t_k)`` (``Ucrl.py`` line 207, ``self.delta =
  1 / m.sqrt(self.iteration + 1)``; ``published_delta=False`` keeps the agent's ``delta``
  instead).
* **Sets** (``Ucrl.py`` lines 307-383, ``bound_type_p = bound_type_rew = "bernstein"``,
  the constructor's defaults, lines 119-121), with ``L = ln(6 S A n / delta_k)``
  (``L_CONST = 6``, lines 324, 365; ``A`` the largest number of actions of a state): the
  box ``max(0, p_hat - b) <= q <= p_hat + b``, ``b = sqrt(p_hat (1 - p_hat) L / n) + L /
  n`` per next state (lines 364-368; ``LPPROBA_bernstein``, ``_lpproba.pyx`` lines 9-33:
  the lower bounds first, the rest to the states of highest value), and the reward
  bonus ``sqrt(var L / n) + r_max L / n`` with ``var`` the population variance of the
  pair's rewards (lines 325-328, ``alpha_r = 1``, line 37). An untried pair has ``p_hat``
  uniform (line 139), ``r_hat = 0`` and zero variance (lines 143-144).
* **The reward bound.** The optimistic reward is ``min(r_max, r_hat + bonus)`` with
  ``r_max = 1`` (``evi.pyx`` lines 167-168, ``min(tau_max * r_max, ...)`` with
  ``tau_max = 1`` and ``r_max = self.r_max_vi = r_max``, ``Ucrl.py`` lines 33-34, 150,
  456-457): an untried pair, whose bonus ``ln(6 S A / delta_k)`` exceeds 1, gets exactly
  1. SCAL and SCAL+ lift the bound (``scal.py`` lines 41, 89: ``r_max_vi = 2^31 - 1``), so
  ``scal`` with a cap that never binds is *not* this agent: on a weakly communicating
  MDP an untried pair there keeps ``ln(6 S A / delta_k)`` (about 8 at ``t_k = 10^4``).
* **Planning** (``EVI.run``, ``evi.pyx`` lines 94-212): from ``u``, sweeps

  .. math::

      u'(s) = \max_a \Big[\min(1, \tilde r(s, a)) + \tau \max_{q \in B(s, a)} q \cdot u
      + (1 - \tau) u(s)\Big]

  with the aperiodicity factor ``tau = 0.9`` (``Ucrl.py`` line 149; holding times 1 and
  ``tau_opt = 1``, lines 145, 150-151, ``evi.pyx`` 170-174), and stops at the first sweep
  with ``sp(u' - u) < epsilon_k = 1 / sqrt(t_k)`` (``evi.pyx`` line 194, ``check_end``,
  ``_utils.pyx`` lines 27-44; ``Ucrl.py`` line 458, ``r_max / m.sqrt(self.iteration +
  1)``). The policy is the last sweep's greedy one, deterministic. This is
  :func:`jaxmdp.planning.scopt_planner` with ``span_constraint = inf`` (nothing capped).
  The published loop stops with an error after ``10^6`` sweeps (lines 210-212); here
  ``max_evi_steps`` caps it and the episode start counts as unconverged.
* **Warm start**: each episode starts from the values at the end of the previous
  episode's last sweep, ``u' - u'(0)`` (``evi.pyx`` lines 144-146: ``u1 = u2 - u2[0]``,
  and line 197 returns before ``u2`` is copied into ``u1``, line 199); the first from
  zeros (line 57). ``warm_start=False`` starts every episode from zeros.
* **Ties** (``evi.pyx`` lines 131-137, 180): ``ties="noise"``, the default: a noise
  ``0.1 min(1e-6, epsilon_k) U_a`` per action index, ``U_a`` drawn once per replication
  (``RandomState(random_state)`` created afresh at every call, line 133, so the same
  ``U_a`` at every episode); the action of highest value plus noise is kept, with its
  value without noise. ``ties="lowest"``: the lowest index among exact maxima.
* **Episodes** (``Ucrl.py`` lines 255-266, 164-165): the doubling test runs after each
  round, on the pair just played: the episode ends after the round in which
  ``nu_k(s, a)`` reaches ``max(1, N_k(s, a))`` (Jaksch et al. test before playing, on
  the pair about to be played).

The sets' estimates are those of the family: the published learner updates its
transition estimates at episode ends (``Ucrl.py`` lines 279-285) and reads its reward
estimates at episode starts only, so both are the data before ``t_k``.

Example:
    >>> import jaxmdp as jm
    >>> agent = jm.get_agent("ucrl_rlexplorer")
    >>> agent.config.ties, agent.config.warm_start, agent.config.sets.published_delta
    ('noise', True, True)

References:
    Jaksch, Ortner & Auer, "Near-optimal Regret Bounds for Reinforcement Learning",
    JMLR 11, 2010 (UCRL2, whose episodes and optimism this learner keeps).
    Fruit, Pirotta, Lazaric & Ortner, "Efficient Bias-Span-Constrained
    Exploration-Exploitation in Reinforcement Learning", ICML 2018 (SCAL; the code is its
    authors').
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp

from jaxmdp.agents.episodes import doubling
from jaxmdp.agents.options import boolean, option, real
from jaxmdp.agents.protocol import EnvSpec, Observation
from jaxmdp.agents.ucrl._family import ucrl_variant
from jaxmdp.agents.ucrl._sets import EpisodeStats, UCRLSets, empirical, uniform_centre
from jaxmdp.planning import BoxBounds, Planner, scopt_planner

__all__ = ["RlexplorerUCRLSets", "rlexplorer_bernstein", "ucrl_rlexplorer_agent"]


def rlexplorer_bernstein(stats: EpisodeStats, spec: EnvSpec, delta_k):
    """rlexplorer's Bernstein sets (``Ucrl.py`` lines 307-383, ``L_CONST = 6``).

    Args:
        stats: the episode's statistics.
        spec: the environment's spec (``S``, ``A`` and the rewards' dtype).
        delta_k: the episode's confidence level.

    Returns:
        ``(p_hat, r_upper, BoxBounds)``: the centres ``[S, A, S]`` (uniform on untried
        pairs), ``r_hat + sqrt(var L / n) + L / n`` ``[S, A]`` (not bounded) and the box
        ``max(0, p_hat - b) <= q <= p_hat + b``.
    """
    dtype = jnp.asarray(spec.rewards).dtype
    S, A = spec.num_states, spec.num_actions
    _, n, p_hat = uniform_centre(stats.counts, S, dtype)
    _, _, _, mean, var = empirical(stats, dtype, untried_var=0.0)
    log_term = jnp.log(6.0 * S * A * n / delta_k)  # L_CONST = 6, lines 324, 365
    width = jnp.sqrt(p_hat * (1.0 - p_hat) * (log_term / n)[..., None]) + (
        log_term / n)[..., None]
    bounds = BoxBounds(jnp.maximum(p_hat - width, 0.0), p_hat + width)
    return p_hat, mean + jnp.sqrt(var * log_term / n) + log_term / n, bounds


@dataclasses.dataclass(frozen=True)
class RlexplorerUCRLSets(UCRLSets):
    """rlexplorer's ``UcrlMdp`` (:mod:`jaxmdp.agents.ucrl.rlexplorer`): Bernstein boxes,
    the optimistic reward bounded by 1, EVI with the aperiodicity transform warm-started
    from the end of the last sweep, the doubling test after each round.

    Attributes:
        published_delta: ``delta_k = 1/sqrt(t_k)`` at every episode (``Ucrl.py`` line
            207; default), else the agent's fixed ``delta``.
        tau: the aperiodicity factor (0.9, ``Ucrl.py`` line 149; in ``(0, 1]``).

    Example:
        >>> import jaxmdp as jm
        >>> jm.get_agent("ucrl_rlexplorer", published_delta=False).config.delta
        0.05
    """

    published_delta: bool = option(True, boolean())
    tau: float = option(0.9, real(low=0.0, high=1.0, low_open=True))  # Ucrl.py l. 149

    def confidence(self, stats: EpisodeStats, spec: EnvSpec, delta):
        """``(p_hat, min(1, r_upper), BoxBounds)`` of :func:`rlexplorer_bernstein` (the
        reward bound of ``evi.pyx`` lines 167-168)."""
        delta_k = 1.0 / jnp.sqrt(stats.t_k) if self.published_delta else delta
        p_hat, r_upper, bounds = rlexplorer_bernstein(stats, spec, delta_k)
        return p_hat, jnp.minimum(1.0, r_upper), bounds

    def planner(self, *, max_steps: int, warm_start: bool, kernel: str = "xla") -> Planner:
        """:func:`jaxmdp.planning.scopt_planner` with no cap, warm-started from the end
        of the last sweep (``evi.pyx`` lines 144-146, 197-199); its one loop
        (``kernel="xla"``)."""
        del kernel  # "xla" (loop_kernels)
        return scopt_planner(math.inf, tau=self.tau, max_steps=max_steps,
                             warm_start=warm_start, warm_from_end=True)

    def ends_episode(self, state, obs: Observation, action) -> jax.Array:
        """The doubling rule on the pair played at the previous round (``Ucrl.py`` lines
        261-263 and 164-165: tested after each round)."""
        del action
        return doubling(state.nu, state.episode_visits, obs.previous_state,
                        obs.previous_action)

    def tie_rules(self) -> tuple[str, ...]:
        """``"noise"`` (the published rule) and ``"lowest"``."""
        return ("lowest", "noise")


ucrl_rlexplorer_agent = ucrl_variant(RlexplorerUCRLSets, "ucrl_rlexplorer", warm_start=True,
                                     ties="noise", fixed={"epsilon_rule": "sqrt"})
"""The factory of ``"ucrl_rlexplorer"``: rlexplorer's ``UcrlMdp`` (:class:`RlexplorerUCRLSets`,
options ``published_delta``, ``tau``) with the family's options
(:class:`~jaxmdp.agents.ucrl.UCRLConfig`) but ``epsilon_rule`` (``"sqrt"``), default
``ties="noise"`` and ``warm_start=True`` (the published code; ``ties`` also takes
``"lowest"``)."""
