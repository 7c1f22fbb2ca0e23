r"""The UCRL family's EVI-planned variants: UCRL2, KL-UCRL, UCRL2B and UCRL3.

Each variant is its sets (a frozen dataclass deriving from :class:`~jaxmdp.agents.ucrl.EVISets`, its
fields the variant's options) and one factory made by :func:`~jaxmdp.agents.ucrl.ucrl_variant`,
registered in :mod:`jaxmdp.agents`.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxmdp.agents.batching import masked_elementwise
from jaxmdp.agents.confidence import (
    ucrl2b_reward_upper,
    ucrl2b_transition_box,
    ucrl3_reward_upper,
    ucrl3_transition_bounds,
)
from jaxmdp.agents.options import boolean, option, real
from jaxmdp.agents.protocol import Agent, EnvSpec
from jaxmdp.agents.ucrl._family import ucrl_variant
from jaxmdp.agents.ucrl._sets import EpisodeStats, EVISets, empirical, uniform_centre
from jaxmdp.planning import (
    UCRL3_BALL,
    UCRL3_KEY_SUMS_BALL,
    BoxBounds,
    Planner,
    UCRL3Bounds,
    evi_planner,
)

__all__ = [
    "KLUCRLSets",
    "UCRL2BSets",
    "UCRL2Sets",
    "UCRL3Sets",
    "kl_ucrl_agent",
    "kl_ucrl_constants",
    "ucrl2_agent",
    "ucrl2b_agent",
    "ucrl3_agent",
    "ucrl_agent",
]

#: EVI's cycle detection for UCRL3 (:func:`jaxmdp.evi`'s ``cycle_memory``): the
#: near-optimistic support, recomputed at every sweep, can alternate between two sets and
#: keep EVI from converging; the iterates then repeat bit for bit (periods 2 to 8 on
#: grid-4-room), and the sweeps up to ``max_evi_steps`` are skipped with the same result.
UCRL3_CYCLE_MEMORY = 16


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


@dataclasses.dataclass(frozen=True)
class UCRL2Sets(EVISets):
    """UCRL2's sets (Jaksch, Ortner & Auer 2010, Figure 1): the L1 ball of radius
    ``sqrt(14 S ln(2 A t_k / delta) / n)`` around ``p_hat`` (uniform on untried pairs)
    and the reward ``min(1, r_hat + sqrt(7 ln(2 S A t_k / delta) / (2 n)))``. No options
    of its own: the agent ``"ucrl2"`` has the family's (:class:`~jaxmdp.agents.ucrl.UCRLConfig`).

    Example:
        >>> import jaxmdp as jm
        >>> agent = jm.get_agent("ucrl2")
        >>> agent.name, agent.config.delta, agent.config.known_rewards
        ('ucrl2', 0.05, False)
    """

    @property
    def ball(self) -> str:
        """``"l1"``."""
        return "l1"

    def confidence(self, stats: EpisodeStats, spec: EnvSpec, delta):
        """``(p_hat, r_tilde, radius)`` of the episode."""
        dtype = jnp.asarray(spec.rewards).dtype
        S, A = spec.num_states, spec.num_actions
        _, n, p_hat = uniform_centre(stats.counts, S, dtype)
        radius = jnp.sqrt(14.0 * S * jnp.log(2.0 * A * stats.t_k / delta) / n)
        bonus = jnp.sqrt(7.0 * jnp.log(2.0 * S * A * stats.t_k / delta) / (2.0 * n))
        return p_hat, jnp.minimum(stats.reward_sums.astype(dtype) / n + bonus, 1.0), radius


@dataclasses.dataclass(frozen=True)
class KLUCRLSets(EVISets):
    """KL-UCRL's sets (Filippi, Cappé & Garivier 2010): the KL ball of radius ``C_P / n``
    (``+inf`` on untried pairs, centred on uniform) and the reward ``r_hat + sqrt(C_R /
    n)``, :func:`kl_ucrl_constants`.

    The batching is the family's (``cond="auto"``: on a CPU one replication per
    planning pass, so that a run does not depend on the others', nor on the number of
    devices: the exact KL ball's planning is not bitwise independent of the width of its
    pass, :mod:`jaxmdp.agents.ucrl`).

    Attributes:
        search_up_bug: the StatisticalRL ``KLUCRL.py`` maximiser with its bug (line 128
            finds ``nu`` by ``search_up`` on a decreasing function, so ``nu = max u +
            10^7`` and ``q`` is nearly ``p_hat``; ball ``"kl_published"``; untried pairs
            keep a zero ``p_hat`` and radius ``C_P``, lines 180-189). Default False: the
            exact maximiser.
    """

    search_up_bug: bool = option(False, boolean())

    @property
    def ball(self) -> str:
        """``"kl"``, or ``"kl_published"`` with ``search_up_bug``."""
        return "kl_published" if self.search_up_bug else "kl"

    def confidence(self, stats: EpisodeStats, spec: EnvSpec, delta):
        """``(p_hat, r_tilde, radius)`` of the episode."""
        dtype = jnp.asarray(spec.rewards).dtype
        S, A = spec.num_states, spec.num_actions
        tried, n, p_hat = uniform_centre(stats.counts, S, dtype)
        C_P, C_R = kl_ucrl_constants(S, A, stats.t_k, delta)
        radius = jnp.where(tried, C_P / n, jnp.inf)
        bonus = jnp.sqrt(C_R / n)
        if self.search_up_bug:  # KLUCRL.py lines 180-189: zeros, C_P / max(1, N)
            p_hat = stats.counts.astype(dtype) / n[..., None]
            radius = C_P / n
        return p_hat, stats.reward_sums.astype(dtype) / n + bonus, radius


@dataclasses.dataclass(frozen=True)
class UCRL2BSets(EVISets):
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
    (:func:`jaxmdp.planning.box_maximise`: lower bounds first, the remaining mass to
    the highest values up to their upper bounds; the published code stops that loop once
    less than ``1e-8`` is left, ``UCRL2B.py`` line 101). The agent ``"ucrl2b"`` stops EVI
    at span ``< 1/t_k`` (``epsilon_rule="t"``), breaks ties as the published code
    (``ties="random_least_visited"``) and warm-starts EVI from the previous episode's
    values (``warm_start=True``) by default. Departures: EVI stops on ``sp(u_{i+1} -
    u_i)`` (the published code takes the span of ``|u_{i+1} - u_i|``) and sorts the
    states at every sweep (the published first sweep uses the identity order, line 113).

    The other public versions use other constants (rlexplorer ``UCRL/Ucrl.py``
    lines 258-287 and Colosseum ``ucrl2.py`` lines 240-308:
    ``sqrt(14 var ell / n) + 49 ell / (3 max(1, N - 1))``, ``ell = ln(2 S A (t + 1) /
    delta)``); ``c_sqrt``, ``c_lin`` and ``delta_split`` change StatisticalRL's.

    Attributes:
        c_sqrt: the factor of the square-root term of both widths (2; non-negative).
        c_lin: the factor of the linear term ``L / n`` (6; non-negative).
        delta_split: ``delta' = delta / (delta_split S A)`` (18; positive).

    Example:
        >>> import jaxmdp as jm
        >>> jm.get_agent("ucrl2b").config.sets.c_lin
        6.0
    """

    c_sqrt: float = option(2.0, real(low=0.0))
    c_lin: float = option(6.0, real(low=0.0))
    delta_split: float = option(18.0, real(low=0.0, low_open=True))

    @property
    def ball(self) -> str:
        """``"box"``."""
        return "box"

    def confidence(self, stats: EpisodeStats, spec: EnvSpec, delta):
        """``(p_hat, r_tilde, BoxBounds)`` of the episode."""
        dtype = jnp.asarray(spec.rewards).dtype
        S, A = spec.num_states, spec.num_actions
        _, n, p_hat, mean, var = empirical(stats, dtype, untried_var=jnp.inf)
        d = delta / (self.delta_split * S * A)
        log_term = jnp.log(n / d)
        lower, upper = ucrl2b_transition_box(p_hat, n[..., None], log_term[..., None],
                                             self.c_sqrt, self.c_lin)
        r_tilde = ucrl2b_reward_upper(mean, var, n, log_term, self.c_sqrt, self.c_lin)
        return p_hat, r_tilde, BoxBounds(lower, upper)


@dataclasses.dataclass(frozen=True)
class UCRL3Sets(EVISets):
    r"""UCRL3 (Bourel, Maillard & Talebi 2020) as in the StatisticalRL ``learners`` code.

    UCRL2's episodes (the doubling rule, ``UCRL3.py`` line 361) with UCRL3's
    time-uniform bounds (:mod:`jaxmdp.agents.confidence`: per-transition
    Bernstein / sub-Gaussian bounds with peeling, empirical-Bernstein and
    Hoeffding-Laplace reward bounds, ``delta`` split over ``S A (3 + 3 S)``), and
    extended value iteration over the near-optimistic sets
    (:func:`jaxmdp.planning.near_optimistic_support`, recomputed at every sweep; the
    inner maximum is the box maximiser on that support, ``max_proba``, lines 264-290),
    stopped at span ``< 1/t_k`` and at most 1000 sweeps (lines 318-325; the published
    loop stops on ``itera > max_iter`` with ``itera`` from 0, i.e. after 1002 sweeps:
    ``max_evi_steps=1002`` reproduces it).

    The bounds are bisections (64 steps, or the published search with
    ``bisection_tol``); off the empirical support the bound is ``upper_out``, one per
    pair, so the ``[S, A, S]`` bisections run on the seen transitions only
    (:func:`jaxmdp.agents.batching.masked_elementwise`: same values, a cost that follows
    the number of seen transitions).

    The support, recomputed from every sweep's values, can alternate between sets (on
    grid-4-room at some episode starts, with the default support and with the published
    one alike, lines 300-305 recomputing it at every sweep too), and EVI then runs to
    its cap; the published code does the same and prints "No convergence" (line 324).
    The iterates then repeat bit for bit with a short period, which EVI detects
    (``cycle_memory`` of :func:`jaxmdp.evi`, :data:`UCRL3_CYCLE_MEMORY` iterates): it
    returns the result of the full ``max_evi_steps`` sweeps, ``num_steps`` included,
    without running them.

    EVI starts from the previous episode's values (``warm_start``, default for
    ``UCRL3``; ``UCRL3_lazy`` in effect starts from zeros, lines 433-437, the default with
    ``lazy=True``) and stops on ``sp(u_{i+1} - u_i)`` (published: ``sp(|u_{i+1} - u_i|)``;
    the warm start is the values at the start of the last sweep, the published code's
    those at its end). Rewards are learned by default; their empirical variance comes from
    the squares of the observed rewards (initial counts' rewards are not seen and count
    as zero variance).

    Attributes:
        lazy: ``UCRL3_lazy`` (the class the StatisticalRL experiment scripts run under
            the name "UCRL3"): no ``kappa`` (line 410; the support grows while the
            outside value exceeds the inside one) and ties to the *most* visited
            maximisers (line 425: default ``ties="random_most_visited"``, else
            ``"random_least_visited"``, line 313), EVI from zeros by default. Departure:
            the published lazy EVI recomputes the supports every 5 sweeps after the first
            5 (lines 412-414); here every sweep (the same fixed point; only the sweep at
            which the tolerance is met can differ). Without it (``UCRL3``) the support
            grows while the outside value exceeds ``min(kappa, inside value)``,
            ``kappa = 10 span(u) / N_max^(2/3) |empirical support|`` (lines 301, 305).
        key_sums: reproduce the published support computation, which sums the keys of a
            dict where it means its values (lines 175, 193) and therefore never extends
            the support beyond the empirical one plus the state of highest value. The
            default follows the definition.
        bisection_tol: ``None`` (the exact ends of the bounds' intervals, 64 bisection
            steps; default) or the published bisection's width ``1e-4``, up to ``1e-4``
            less optimistic. Fed the published learner's own data (3 runs of
            ``T = 3,000``, 121 episode starts of ``UCRL3_lazy``), the exact bounds changed
            the chosen policy at 2 episode starts.

    Example:
        >>> import jaxmdp as jm
        >>> jm.get_agent("ucrl3", lazy=True).config.ties
        'random_most_visited'
    """

    lazy: bool = option(False, boolean())
    key_sums: bool = option(False, boolean())
    bisection_tol: float | None = option(None, real(low=0.0, high=1.0, low_open=True,
                                                    high_open=True, optional=True),
                                         kind="structure")

    @property
    def ball(self):
        """UCRL3's near-optimistic sets, or with the published support (``key_sums``)."""
        return UCRL3_KEY_SUMS_BALL if self.key_sums else UCRL3_BALL

    def planner(self, *, max_steps: int, warm_start: bool, kernel: str = "xla") -> Planner:
        """EVI over :attr:`ball` with cycle detection (:data:`UCRL3_CYCLE_MEMORY`)."""
        return evi_planner(self.ball, max_steps=max_steps, warm_start=warm_start,
                           cycle_memory=UCRL3_CYCLE_MEMORY, kernel=kernel)

    def family_defaults(self):
        """``ties`` and ``warm_start`` as ``UCRL3`` (least visited, warm) or, with
        ``lazy``, ``UCRL3_lazy`` (most visited, from zeros)."""
        return {"ties": "random_most_visited" if self.lazy else "random_least_visited",
                "warm_start": not self.lazy}

    def confidence(self, stats: EpisodeStats, spec: EnvSpec, delta):
        """``(p_hat, r_tilde, UCRL3Bounds)`` of the episode."""
        dtype = jnp.asarray(spec.rewards).dtype
        S, A = spec.num_states, spec.num_actions
        visits, n, p_hat, mean, var = empirical(stats, dtype, untried_var=jnp.inf)
        d = delta / (S * A * (3 + 3 * S))  # UCRL3.py line 13
        support = stats.counts > 0
        # The bounds are bisections, needed on the empirical support only (the rest is
        # `upper_out`): computed on the pairs' seen transitions alone.
        # (d is an operand, not closed over: it may be traced, a swept option.)
        lower, upper = masked_elementwise(
            functools.partial(ucrl3_transition_bounds, bisection_tol=self.bisection_tol),
            support, p_hat, jnp.broadcast_to(visits[..., None], p_hat.shape).astype(dtype),
            jnp.broadcast_to(jnp.asarray(d, dtype), p_hat.shape))
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


ucrl2_agent = ucrl_variant(UCRL2Sets, "ucrl2")
"""The factory of ``"ucrl2"``: UCRL2 (:class:`UCRL2Sets`) with the family's options
(:class:`~jaxmdp.agents.ucrl.UCRLConfig`)."""

kl_ucrl_agent = ucrl_variant(KLUCRLSets, "kl_ucrl")
"""The factory of ``"kl_ucrl"``: KL-UCRL (:class:`KLUCRLSets`, option ``search_up_bug``)
with the family's options (:class:`~jaxmdp.agents.ucrl.UCRLConfig`)."""

ucrl2b_agent = ucrl_variant(UCRL2BSets, "ucrl2b", epsilon_rule="t",
                            ties="random_least_visited", warm_start=True)
"""The factory of ``"ucrl2b"``: UCRL2B (:class:`UCRL2BSets`, options ``c_sqrt``, ``c_lin``,
``delta_split``) with the family's options (:class:`~jaxmdp.agents.ucrl.UCRLConfig`),
defaults ``epsilon_rule="t"``, ``ties="random_least_visited"``, ``warm_start=True``."""

ucrl3_agent = ucrl_variant(UCRL3Sets, "ucrl3", epsilon_rule="t", max_evi_steps=1_000)
"""The factory of ``"ucrl3"``: UCRL3 (:class:`UCRL3Sets`, options ``lazy``, ``key_sums``,
``bisection_tol``) with the family's options (:class:`~jaxmdp.agents.ucrl.UCRLConfig`),
defaults ``epsilon_rule="t"``, ``max_evi_steps=1000`` and, from ``lazy``, ``ties`` and
``warm_start``."""

_UCRL_AGENTS = {"ucrl2": ucrl2_agent, "kl_ucrl": kl_ucrl_agent}


def ucrl_agent(name: str, **options) -> Agent:
    """UCRL2 (``"ucrl2"``, :func:`ucrl2_agent`) or KL-UCRL (``"kl_ucrl"``,
    :func:`kl_ucrl_agent`), configured by ``options``.

    Raises:
        ValueError: for an unknown name, or an option the agent does not have or of the
            wrong type or value.
    """
    if name not in _UCRL_AGENTS:
        raise ValueError(f"name must be one of {list(_UCRL_AGENTS)}, got {name!r}")
    return _UCRL_AGENTS[name](**options)
