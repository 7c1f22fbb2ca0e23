r"""TUCRL: the UCRL family with the confidence sets truncated to the states observed so far.

:func:`tucrl_agent` is the UCRL family (:mod:`jaxmdp.agents.ucrl`) with
:class:`TUCRLSets`, which brings its sets, its planner (truncated extended value
iteration, :func:`jaxmdp.planning.tevi`) and its episode rule. The reference is the
authors' code, RonanFR/UCRL at commit ``ecf4acc`` ("Fixed error in TUCRL", 13 December
2018, package ``UCRL``: ``UCRL/tucrl.py``, ``UCRL/Ucrl.py``, ``UCRL/bounds.py``,
``UCRL/evi/tevi.pyx``, ``UCRL/evi/_max_proba.pyx``): TUCRL crashes on every later
``rlexplorer`` branch, and ``ecf4acc`` is the commit whose message fixes it. The paper's
text was not at hand; where the code's stopping test is not a span test (below) the
span test is the default.

With ``t_k`` the episode's first round, ``n = max(1, N_k)``, ``m = max(1, N_k - 1)`` and
``L = ln(2 S A t_k / delta)`` (``Ucrl.py`` lines 264-330, ``bound_type="bernstein"``):

* per-next-state widths ``b = sqrt(14 p_hat (1 - p_hat) L / n) + 49 L / (3 m)`` (``p_hat``
  uniform on untried pairs);
* the reward ``min(1, r_hat + sqrt(14 var L / n) + 49 L / (3 m))``, ``var`` the sample
  variance (sum of squared deviations over ``m``); an untried pair has ``r_hat = 100``
  (``Ucrl.py`` line 143), so reward 1.

**Truncation** (``tucrl.py``, ``solve_optimistic_model``): the states *observed* are those
left at least once before the episode, ``N_k(s) = sum_a N_k(s, a) > 0``, and the current
state. If every state is observed, the sets are Bernstein boxes ``max(0, p_hat - b) <= q
<= p_hat + b`` (lines 141-144 of ``tevi.pyx``). Otherwise every pair has the L1 ball of
radius ``sum_y b(y)`` (the UCRL2 maximiser ``max_proba_purec``: ``min(1, p_hat + radius/2)``
to the best state, the excess removed from the lowest), and the pairs of observed states
with ``max(1, N_k(s, a) - 1) > sqrt(t_k / (S A))`` are *truncated*: their ball is taken
over the observed states only (mass cannot go to an unobserved state; ``p_hat``'s own mass
on unobserved states is dropped, as ``sparse_dot_prod`` does). The other pairs (too few
visits) keep the unobserved states in their ball: optimism about them.

**TEVI** (``tevi.pyx`` lines 169-276): from the previous episode's values, sweeps
``u'(s) = max_a [r_tilde + tau (q . u - u(s))] + u(s)`` with ``tau = 0.9`` (the
aperiodicity factor, ``Ucrl.py`` line 149) and stops when the span of ``u' - u`` over the
*terminal states* is below ``epsilon = 1/sqrt(t_k)`` (``tucrl.py``: the observed states if
every pair of an observed state is truncated, else all states). The published test is
``old_span - new_span < epsilon`` (line 245: the span stops *decreasing*, not the span
itself small); ``published_stop=True`` reproduces it. The published solver caps the
sweeps at ``200 S A`` (line 165) and then raises; here ``max_evi_steps`` caps them and the
episode start counts as unconverged. Ties are broken as published, by a noise ``1e-7
U_a`` per action drawn once per replication (``tevi.pyx`` lines 157-161, 230;
``noisy_ties=True``, the default), or by the lowest action index (``noisy_ties=False``).

**Episodes** (``tucrl.py``, ``_stopping_rule``): the doubling rule, and a new episode
also starts when the current state has not been observed, ``N_k(x) = 0`` (after the
episode's first round).

**Confidence level.** The published learner resets ``delta`` to ``1/sqrt(t_k)`` at every
episode (``Ucrl.py`` line 191); the default keeps the agent's ``delta``,
``published_delta=True`` reproduces the code.

References:
    Fruit, Pirotta & Lazaric, "Near Optimal Exploration-Exploitation in Non-Communicating
    Markov Decision Processes", NeurIPS 2018.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxmdp.agents.episodes import doubling
from jaxmdp.agents.options import boolean, option, real
from jaxmdp.agents.protocol import EnvSpec, Observation
from jaxmdp.agents.ucrl._family import ucrl_variant
from jaxmdp.agents.ucrl._sets import EpisodeStats, UCRLSets, uniform_centre
from jaxmdp.planning import (
    Planner,
    TUCRLBounds,
    l1_truncated_maximise,
    tevi,
    tevi_planner,
)

__all__ = ["TUCRLBounds", "TUCRLSets", "l1_truncated_maximise", "tevi", "tevi_planner",
           "tucrl_agent"]


@dataclasses.dataclass(frozen=True)
class TUCRLSets(UCRLSets):
    """TUCRL's sets, planner and episode rule (:mod:`jaxmdp.agents.ucrl.tucrl`).

    Attributes:
        published_delta: ``delta = 1/sqrt(t_k)`` at every episode (``Ucrl.py`` line 191).
        published_stop: TEVI's published stopping test (``tevi.pyx`` line 245).
        tau: the aperiodicity factor (0.9; in ``(0, 1]``).
        noisy_ties: break ties by a noise ``1e-7 U_a`` per action drawn once per
            replication (``tevi.pyx`` lines 157-161, 230; default), else by the lowest
            index.

    Example:
        >>> import jaxmdp as jm
        >>> jm.get_agent("tucrl").config.sets.published_stop
        False
    """

    published_delta: bool = option(False, boolean())
    published_stop: bool = option(False, boolean())
    tau: float = option(0.9, real(low=0.0, high=1.0, low_open=True))  # Ucrl.py l. 149
    noisy_ties: bool = option(True, boolean())

    def planner(self, *, max_steps: int, warm_start: bool, kernel: str = "xla") -> Planner:
        """:func:`jaxmdp.planning.tevi_planner` with these options (its one loop,
        ``kernel="xla"``)."""
        del kernel  # "xla" (loop_kernels)
        return tevi_planner(tau=self.tau, max_steps=max_steps, warm_start=warm_start,
                            published_stop=self.published_stop)

    def ends_episode(self, state, obs: Observation, action) -> jax.Array:
        """The doubling rule, or an unobserved current state (``tucrl.py``,
        ``_stopping_rule``: ``nb_state_observations[s] > 0``)."""
        x = obs.state
        unobserved = jnp.sum(state.episode_visits[x]) == 0
        return doubling(state.nu, state.episode_visits, x, action) | unobserved

    def draws_action_noise(self) -> bool:
        """With ``noisy_ties``: the noise of the published tie rule."""
        return self.noisy_ties

    def tie_rules(self) -> tuple[str, ...]:
        """``"lowest"`` only: TEVI's ties are TUCRL's own option, ``noisy_ties``."""
        return ("lowest",)

    def confidence(self, stats: EpisodeStats, spec: EnvSpec, delta):
        """``(p_hat, r_tilde, TUCRLBounds)`` of the episode starting at ``t_k`` in
        ``stats.state`` (the state itself counts as observed)."""
        dtype = jnp.asarray(spec.rewards).dtype
        S, A = spec.num_states, spec.num_actions
        t_k = stats.t_k
        _, n, p_hat = uniform_centre(stats.counts, S, dtype)
        visits = jnp.sum(stats.counts, axis=-1)
        m = jnp.maximum(visits - 1, 1).astype(dtype)
        delta = 1.0 / jnp.sqrt(t_k) if self.published_delta else delta
        log_term = jnp.log(2.0 * S * A * t_k / delta)
        width = jnp.sqrt(14.0 * p_hat * (1.0 - p_hat) * (log_term / n)[..., None]) + (
            49.0 * log_term / (3.0 * m))[..., None]
        sums = stats.reward_sums.astype(dtype)
        mean = jnp.where(visits > 0, sums / n, 100.0)  # r_max + 99, Ucrl.py line 143
        var = jnp.maximum(stats.reward_squares.astype(dtype) - sums * sums / n, 0.0) / m
        bonus = jnp.sqrt(14.0 * var * log_term / n) + 49.0 * log_term / (3.0 * m)
        r_tilde = jnp.minimum(1.0, mean + bonus)
        observed = (jnp.sum(visits, axis=-1) > 0).at[stats.state].set(True)
        all_observed = jnp.all(observed)
        explored = (jnp.maximum(1, visits - 1).astype(dtype)
                    > jnp.sqrt(t_k / (S * A))) & observed[:, None]
        truncated = explored & ~all_observed
        under = jnp.sum(observed[:, None] & ~explored)  # not_sufficiently_explored
        terminal = jnp.where(all_observed | (under > 0), True, observed)
        noise = jnp.zeros(A, dtype)
        if self.noisy_ties:
            noise = 1e-7 * stats.action_noise.astype(dtype)
        bounds = TUCRLBounds(jnp.maximum(p_hat - width, 0.0), p_hat + width,
                             jnp.sum(width, axis=-1), truncated, observed, terminal,
                             all_observed, noise)
        return p_hat, r_tilde, bounds


tucrl_agent = ucrl_variant(TUCRLSets, "tucrl", warm_start=True,
                           fixed={"epsilon_rule": "sqrt", "ties": "lowest"})
"""The factory of ``"tucrl"``: TUCRL (:class:`TUCRLSets`, options ``published_delta``,
``published_stop``, ``tau``, ``noisy_ties``) with the family's options
(:class:`~jaxmdp.agents.ucrl.UCRLConfig`) but ``epsilon_rule`` (``"sqrt"``) and ``ties``
(``"lowest"``), default ``warm_start=True`` (the published code)."""
