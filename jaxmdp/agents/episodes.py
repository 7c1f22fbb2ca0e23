"""Episodes: the rules that end them, shared by the UCRL family, PSRL and TSDE.

* :func:`doubling`, UCRL2's rule (Jaksch, Ortner & Auer 2010, Figure 1), which the UCRL
  family (SCAL, SCAL+ and TUCRL included) and PSRL (StatisticalRL ``PSRL.py`` line 116)
  play: a new episode starts when, in the current state ``x``, the pair ``(x, a)`` the
  episode's policy would play has been played ``max(1, N_k(x, a))`` times within the
  episode, ``N_k`` its visits before the episode;
* :func:`tsde_ends`, TSDE's rule (Ouyang et al. 2017, Algorithm 1): the episode is one
  round longer than the previous one, or some pair's visits more than doubled;
* :func:`replay_episodes`, the doubling rule replayed on recorded paths (NumPy), for
  tests and analysis.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["doubling", "replay_episodes", "tsde_ends"]


def doubling(nu, episode_visits, x, action) -> jax.Array:
    """UCRL2's doubling rule for the pair ``(x, action)``: ``nu_k(x, a) >= max(1,
    N_k(x, a))``.

    Args:
        nu: the visits within the episode, int ``[S, A]``.
        episode_visits: ``N_k``, the visits before the episode, int ``[S, A]``.
        x: the state, int32 scalar.
        action: the action, int32 scalar.

    Returns:
        bool scalar: a new episode starts.
    """
    return nu[x, action] >= jnp.maximum(1, episode_visits[x, action])


def tsde_ends(t, visits, episode_start, previous_length, start_visits) -> jax.Array:
    """TSDE's stopping rule at round ``t``: ``t > t_k + T_{k-1}`` or ``N_t(s, a) > 2
    N_{t_k}(s, a)`` for some ``(s, a)``.

    Args:
        t: the round, int32 scalar.
        visits: ``N_t(s, a)``, visits before round ``t``, ``[S, A]``.
        episode_start: ``t_k``, the round the episode started, int32.
        previous_length: ``T_{k-1}``, the previous episode's length, int32.
        start_visits: ``N_{t_k}(s, a)``, the visits at the episode's start, ``[S, A]``.

    Returns:
        bool scalar: round ``t`` starts a new episode.
    """
    too_long = t > episode_start + previous_length
    return too_long | jnp.any(visits > 2 * start_visits)


def replay_episodes(states, actions, num_states: int, num_actions: int,
                    initial_counts=None):
    """Episode starts of the doubling rule, recovered from recorded paths (NumPy).

    Replays :func:`doubling` on the paths of ``simulate(..., record_path=True)``: round
    ``t`` starts an episode if it is the first one, or if the current state ``s`` was
    visited in the current episode with action ``a`` and the episode's visits of ``(s,
    a)`` reached ``max(1, N_k(s, a))``. (If ``s`` was not visited in the episode, ``nu(s,
    pi(s)) = 0`` and the rule cannot fire, so the path determines every start.)

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
