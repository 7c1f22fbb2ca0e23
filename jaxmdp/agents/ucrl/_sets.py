"""The interface of a UCRL variant: :class:`UCRLSets`, every hook the family calls declared.

A variant of the UCRL family is a frozen dataclass deriving from :class:`UCRLSets` (or
from :class:`EVISets`, for variants planned by extended value iteration over a ball):
its fields are the variant's options (declared with :func:`jaxmdp.agents.options.option`,
so they enter the agent's equality and hash), its methods the hooks below. Abstract
methods must be implemented; the others have the family's default, which a variant
replaces by defining the method. Nothing is looked up by name: the family calls exactly
these methods (equinox's abstract-class pattern: declared interfaces, concrete variants
final).

=======================  ===============================================================
hook                     what the family does with it
=======================  ===============================================================
``confidence``           the episode's ``(p_hat, r_tilde, radius)`` from its
                         :class:`EpisodeStats` (abstract)
``planner``              the planner that solves the optimistic model (abstract;
                         :class:`EVISets`: extended value iteration over ``ball``)
``ends_episode``         whether a round starts a new episode (default: the doubling rule)
``mixes``                whether the episode's policy mixes two actions (default False)
``mixture``              the mixing policy ``(other_action, weight)`` (used where
                         ``mixes()``; default: the policy itself, weight 0)
``draws_action_noise``   whether each replication draws a fixed noise per action at its
                         start, passed to ``confidence`` (default False)
``tie_rules``            the values of the family's ``ties`` the variant accepts (default
                         those of EVI: ``"lowest"`` and the re-sampled ties)
``loop_kernels``         the values of the family's ``evi_kernel`` the variant accepts
                         (default ``"xla"``; :class:`EVISets` over the L1 ball: and
                         ``"pallas"``)
``family_defaults``      the family options' defaults that depend on the variant's own
                         options (default: none)
=======================  ===============================================================
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxmdp.agents.episodes import doubling
from jaxmdp.agents.options import check_options
from jaxmdp.agents.protocol import EnvSpec, Observation
from jaxmdp.planning import ConfidenceSet, InnerMaximisation, Planner, Solution, evi_planner

__all__ = ["EVISets", "EpisodeStats", "UCRLSets", "empirical", "uniform_centre"]


class EpisodeStats(NamedTuple):
    """What a variant's confidence sets are computed from, at an episode's start.

    Attributes:
        counts: transition counts ``N(s, a, y)`` so far (initial counts included), int32
            ``[S, A, S]``.
        reward_sums: sums of the observed rewards of each pair, ``[S, A]``.
        reward_squares: sums of the squared observed rewards of each pair (rewards of
            initial counts are not seen and do not enter), ``[S, A]``.
        t_k: the round ``t_k`` the episode starts, as a float of the rewards' dtype.
        state: the state the episode starts in, int32.
        action_noise: the replication's fixed noise per action, ``[A]`` (zeros unless
            the variant's ``draws_action_noise()``).
    """

    counts: jax.Array
    reward_sums: jax.Array
    reward_squares: jax.Array
    t_k: jax.Array
    state: jax.Array
    action_noise: jax.Array


class UCRLSets(abc.ABC):
    """The abstract base of a UCRL variant's confidence sets and planning (module
    docstring); concrete variants are frozen dataclasses, whose options are checked when
    they are built."""

    def __post_init__(self):
        check_options(self)

    @abc.abstractmethod
    def confidence(self, stats: EpisodeStats, spec: EnvSpec, delta: float):
        """``(p_hat, r_tilde, radius)`` of the episode: the centres ``[S, A, S]``, the
        optimistic rewards ``[S, A]`` and the sets' size in the form the planner reads
        (an ``[S, A]`` radius, or a pytree of bounds); ``delta`` is the agent's
        confidence level."""

    @abc.abstractmethod
    def planner(self, *, max_steps: int, warm_start: bool, kernel: str = "xla") -> Planner:
        """The :class:`~jaxmdp.planning.Planner` of the optimistic model (its state: the
        values the next episode's solve may start from, with ``warm_start``); ``kernel``
        is its loop's implementation, one of :meth:`loop_kernels`."""

    def loop_kernels(self) -> tuple[str, ...]:
        """The values of the family's ``evi_kernel`` option this variant accepts (of
        :data:`jaxmdp.planning.KERNELS`): by default ``"xla"`` only."""
        return ("xla",)

    def ends_episode(self, state, obs: Observation, action) -> jax.Array:
        """Whether the round of ``obs`` starts a new episode (after the first), with
        ``action`` the action the episode's policy would play: the doubling rule of
        Jaksch et al. (Figure 1) for that pair, ``nu_k(x, a) >= max(1, N_k(x, a))``."""
        return doubling(state.nu, state.episode_visits, obs.state, action)

    def mixes(self) -> bool:
        """Whether the episode's policy mixes two actions per state (:meth:`mixture`)."""
        return False

    def mixture(self, model: ConfidenceSet, solution: Solution):
        """``(other_action [S], weight [S])``: with probability ``weight[s]`` the policy
        plays ``other_action[s]`` instead of ``solution.policy[s]`` (read where
        :meth:`mixes`). By default the deterministic policy itself: ``solution.policy``
        with weight 0."""
        del model
        return solution.policy, jnp.zeros(solution.policy.shape, solution.bias.dtype)

    def draws_action_noise(self) -> bool:
        """Whether each replication draws a noise per action at its start
        (``EpisodeStats.action_noise``, uniform on ``[0, 1)``)."""
        return False

    def tie_rules(self) -> tuple[str, ...]:
        """The values of the family's ``ties`` option this variant accepts (of
        :data:`~jaxmdp.agents.ucrl.TIES`): by default the lowest index and the
        re-sampled ties, which read the planner's ``q_opt``; ``"noise"`` needs a planner
        that reads the model's ``tie_noise`` (ScOpt)."""
        return ("lowest", "random_least_visited", "random_most_visited")

    def family_defaults(self) -> Mapping[str, Any]:
        """Defaults of the family's options that depend on this variant's options
        (e.g. UCRL3's tie rule on ``lazy``)."""
        return {}


class EVISets(UCRLSets):
    """The abstract base of the variants planned by extended value iteration over a ball
    (:func:`jaxmdp.planning.evi_planner`), from zeros or, with ``warm_start``, from the
    previous episode's values."""

    @property
    @abc.abstractmethod
    def ball(self) -> str | InnerMaximisation:
        """The ball of :func:`jaxmdp.evi` (a name of :data:`jaxmdp.planning.BALLS`, or
        an :class:`~jaxmdp.planning.InnerMaximisation`)."""

    def planner(self, *, max_steps: int, warm_start: bool, kernel: str = "xla") -> Planner:
        """Extended value iteration over :attr:`ball`, its loop ``kernel``."""
        return evi_planner(self.ball, max_steps=max_steps, warm_start=warm_start,
                           kernel=kernel)

    def loop_kernels(self) -> tuple[str, ...]:
        """``"xla"``, and ``"pallas"`` over the L1 ball (:func:`jaxmdp.evi`'s kernels)."""
        return ("xla", "pallas") if self.ball == "l1" else ("xla",)


def uniform_centre(counts, num_states: int, dtype):
    """``(tried, n, p_hat)``: ``n = max(1, N_k)`` and ``p_hat`` uniform on untried pairs."""
    visits = jnp.sum(counts, axis=-1)
    tried = visits > 0
    n = jnp.maximum(visits, 1).astype(dtype)
    p_hat = jnp.where(tried[..., None], counts.astype(dtype) / n[..., None],
                      jnp.asarray(1.0 / num_states, dtype))
    return tried, n, p_hat


def empirical(stats: EpisodeStats, dtype, *, untried_var: float):
    """``(visits, n, p_hat, mean, var)``: the empirical laws (zero rows for untried
    pairs), the reward's mean and population variance (``untried_var`` for an untried
    pair), ``n = max(1, N_k)``."""
    visits = jnp.sum(stats.counts, axis=-1)
    n = jnp.maximum(visits, 1).astype(dtype)
    p_hat = stats.counts.astype(dtype) / n[..., None]
    mean = stats.reward_sums.astype(dtype) / n
    var = jnp.maximum(stats.reward_squares.astype(dtype) / n - mean * mean, 0.0)
    return visits, n, p_hat, mean, jnp.where(visits > 0, var, untried_var)
