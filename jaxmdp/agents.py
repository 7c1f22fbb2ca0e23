"""The paper's four learning agents as pure ``select_action`` functions.

Cowan, Katehakis & Pirutinsky (2019), section 3. Every agent sees the same
:class:`~jaxmdp.estimators.Estimate` (``p_hat``, good actions, gain and bias ``v_hat`` of
the estimated MDP) and differs only in how it turns it into an action in the current
state ``x`` at round ``t``:

* **MDP-UCB** (eq. 3): ``u_a = r(x, a) + kl_ucb(p_hat[x, a], v_hat, ln t / n[x, a])``.
* **OLP**: ``u_a = r(x, a) + l1_ucb(p_hat[x, a], v_hat, sqrt(2 ln t / n[x, a]))``.
* **MDP-DMED**: ``a* = argmax_a L(x, a, p_hat, v_hat)``; for ``a != a*`` the discrepancy
  ``D(a) = ln t / K~(x, a) - n[x, a]`` with
  ``K~(x, a) = kinf(p_hat[x, a], v_hat, L(x, a*) - r(x, a))``; play ``a*`` if every
  ``D(a) <= 0``, else ``argmax D``.
* **MDP-PS**: ``Q^a ~ Dirichlet(N[x, a] + 1)`` (uniform prior) for each action,
  ``W_a = r(x, a) + Q^a . v_hat``.

The argmax runs over all admissible actions ``A(x)`` (the good-action set only shapes the
estimated MDP). Conventions shared by all four: an admissible action never tried in ``x``
has an infinite index (the lowest-numbered untried action is played first), inadmissible
actions are never played, and ties go to the lowest action index.

Example:
    >>> import jaxmdp as jm
    >>> agent = jm.get_agent("ucb")
    >>> agent.name
    'ucb'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp

from jaxmdp.estimators import Estimate
from jaxmdp.indices.kl import kinf, kl_ucb
from jaxmdp.indices.l1 import l1_ucb

SelectAction = Callable[[jax.Array, jax.Array, jax.Array, jax.Array, Estimate], jax.Array]


@dataclasses.dataclass(frozen=True)
class Agent:
    """A learning agent: a name and a pure action-selection rule.

    ``select_action(key, t, x, counts, estimate) -> action`` takes a PRNG key, the round
    ``t`` (int scalar, ``t >= 1``, the value used in ``ln t``), the current state ``x``
    (int scalar), the counts ``N[x, a, y]`` ``[S, A, S]`` and the :class:`Estimate`, and
    returns an int scalar action. It must be traceable (it runs inside ``lax.scan``).
    Agents are hashable so that the simulator can use them as static arguments of ``jit``.

    Attributes:
        name: short name, used in figures and by :func:`get_agent`.
        select_action: the rule.
    """

    name: str
    select_action: SelectAction


def _current(t, x, counts, estimate):
    """Shared per-step quantities at the current state: rows, rewards, visits, ln t."""
    bias = estimate.bias
    p_hat = estimate.mdp.P[x]  # [A, S]
    rewards = estimate.mdp.R[x]  # [A]
    admissible = estimate.admissible[x]  # [A]
    visits = jnp.sum(counts[x], axis=-1)  # [A]
    log_t = jnp.log(jnp.asarray(t, dtype=bias.dtype))
    return p_hat, rewards, admissible, visits, log_t


def _finish(index, admissible, visits):
    """argmax of ``index`` over admissible actions; untried admissible actions first.

    Ties (including several untried actions) go to the lowest action index.
    """
    untried = admissible & (visits == 0)
    index = jnp.where(admissible, index, -jnp.inf)
    index = jnp.where(untried, jnp.inf, index)
    return jnp.argmax(index).astype(jnp.int32)


def _safe_radius_base(log_t, visits):
    """``ln t / n`` for tried actions; 0 where ``n == 0`` (those get an infinite index)."""
    n = visits.astype(log_t.dtype)
    return jnp.where(visits > 0, log_t / jnp.maximum(n, 1.0), 0.0)


def ucb_select_action(key, t, x, counts, estimate: Estimate):
    """MDP-UCB (Burnetas & Katehakis 1997; paper section 3.1, eq. 3).

    ``u_a = r(x, a) + sup{q . v_hat : KL(p_hat[x, a] || q) <= ln t / n[x, a]}``.

    Args:
        key: unused (the rule is deterministic).
        t: round, int scalar ``>= 1``.
        x: current state, int scalar.
        counts: ``N[x, a, y]``, ``[S, A, S]``.
        estimate: the shared :class:`Estimate`.

    Returns:
        int32 scalar action.
    """
    del key
    p_hat, rewards, admissible, visits, log_t = _current(t, x, counts, estimate)
    delta = _safe_radius_base(log_t, visits)
    index = rewards + jax.vmap(kl_ucb, in_axes=(0, None, 0))(p_hat, estimate.bias, delta)
    return _finish(index, admissible, visits)


def olp_select_action(key, t, x, counts, estimate: Estimate):
    """Optimistic linear programming (Tewari & Bartlett 2008; paper section 3.3).

    ``u_a = r(x, a) + sup{q . v_hat : ||q - p_hat[x, a]||_1 <= sqrt(2 ln t / n[x, a])}``.

    Args:
        key: unused (the rule is deterministic).
        t: round, int scalar ``>= 1``.
        x: current state, int scalar.
        counts: ``N[x, a, y]``, ``[S, A, S]``.
        estimate: the shared :class:`Estimate`.

    Returns:
        int32 scalar action.
    """
    del key
    p_hat, rewards, admissible, visits, log_t = _current(t, x, counts, estimate)
    radius = jnp.sqrt(2.0 * _safe_radius_base(log_t, visits))
    index = rewards + jax.vmap(l1_ucb, in_axes=(0, None, 0))(p_hat, estimate.bias, radius)
    return _finish(index, admissible, visits)


def dmed_select_action(key, t, x, counts, estimate: Estimate):
    """MDP-DMED (paper section 3.2), with ``K~`` computed by :func:`jaxmdp.kinf`.

    ``a* = argmax_{a in A(x)} r(x, a) + p_hat[x, a] . v_hat``; for ``a != a*``,
    ``D(a) = ln t / K~(a) - n[x, a]`` with
    ``K~(a) = inf{KL(p_hat[x, a] || q) : r(x, a) + q . v_hat >= L(x, a*)}``.
    Plays ``a*`` when ``max D <= 0``, else ``argmax D``. ``K~ = 0`` (an exact tie with
    ``a*``) gives ``D = +inf`` for ``t > 1``; ``K~ = +inf`` (unreachable) gives ``D = -n``.

    Args:
        key: unused (the rule is deterministic).
        t: round, int scalar ``>= 1``.
        x: current state, int scalar.
        counts: ``N[x, a, y]``, ``[S, A, S]``.
        estimate: the shared :class:`Estimate`.

    Returns:
        int32 scalar action.
    """
    del key
    p_hat, rewards, admissible, visits, log_t = _current(t, x, counts, estimate)
    values = rewards + p_hat @ estimate.bias  # L(x, a, p_hat, v_hat)
    best = jnp.argmax(jnp.where(admissible, values, -jnp.inf))
    level = values[best] - rewards  # q . v_hat needed for a to match a*
    divergence = jax.vmap(kinf, in_axes=(0, None, 0))(p_hat, estimate.bias, level)
    positive = divergence > 0
    rate = jnp.where(positive, log_t / jnp.where(positive, divergence, 1.0),
                     jnp.where(log_t > 0, jnp.inf, 0.0))
    discrepancy = rate - visits.astype(rate.dtype)
    actions = jnp.arange(values.shape[0])
    candidates = admissible & (actions != best)
    discrepancy = jnp.where(candidates, discrepancy, -jnp.inf)
    challenger = jnp.argmax(discrepancy)
    action = jnp.where(discrepancy[challenger] > 0, challenger, best)
    # An untried action has an infinite index (played first, lowest index first).
    index = jnp.where(actions == action, 1.0, 0.0)
    return _finish(index, admissible, visits)


def _gamma(key, shape_param):
    """Exact Gamma(``shape_param``, 1) draws for ``shape_param >= 1`` (Marsaglia & Tsang 2000).

    A rejection sampler whose acceptance probability is above 0.95 for every shape
    ``>= 1``; all elements are proposed together and the loop repeats only for the rejected
    ones. It compiles to a much smaller program than ``jax.random.gamma`` (which also
    handles shapes below 1 and carries a derivative rule), which matters inside ``scan``.
    """
    d = shape_param - 1.0 / 3.0
    c = 1.0 / jnp.sqrt(9.0 * d)

    def not_done(state):
        return ~jnp.all(state[1])

    def propose(state):
        key, accepted, value = state
        key, normal_key, uniform_key = jax.random.split(key, 3)
        z = jax.random.normal(normal_key, d.shape, d.dtype)
        u = jax.random.uniform(uniform_key, d.shape, d.dtype)
        cube = (1.0 + c * z) ** 3
        positive = cube > 0
        log_cube = jnp.log(jnp.where(positive, cube, 1.0))
        accept = positive & (jnp.log(u) < 0.5 * z * z + d - d * cube + d * log_cube)
        value = jnp.where(accepted, value, d * cube)
        return key, accepted | accept, value

    init = (key, jnp.zeros(d.shape, dtype=bool), jnp.ones_like(d))
    return jax.lax.while_loop(not_done, propose, init)[2]


def ps_select_action(key, t, x, counts, estimate: Estimate):
    """MDP-PS, posterior sampling (paper section 3.4) with a uniform Dirichlet prior.

    ``Q^a ~ Dirichlet(N[x, a] + 1)`` independently for each action,
    ``W_a = r(x, a) + Q^a . v_hat``; plays ``argmax W``. (The paper writes ``Dir(N)``,
    which is undefined at zero counts; ``N + 1`` is the posterior of its uniform prior.)

    Args:
        key: PRNG key for the Dirichlet draws.
        t: round (unused).
        x: current state, int scalar.
        counts: ``N[x, a, y]``, ``[S, A, S]``.
        estimate: the shared :class:`Estimate`.

    Returns:
        int32 scalar action.
    """
    p_hat, rewards, admissible, visits, _ = _current(t, x, counts, estimate)
    alpha = counts[x].astype(p_hat.dtype) + 1.0  # [A, S]
    weights = _gamma(key, alpha)  # Q^a = weights[a] / sum(weights[a]) ~ Dirichlet(alpha[a])
    index = rewards + (weights @ estimate.bias) / jnp.sum(weights, axis=-1)
    return _finish(index, admissible, visits)


UCB = Agent("ucb", ucb_select_action)
DMED = Agent("dmed", dmed_select_action)
OLP = Agent("olp", olp_select_action)
PS = Agent("ps", ps_select_action)

AGENTS: dict[str, Agent] = {agent.name: agent for agent in (UCB, DMED, OLP, PS)}


def get_agent(agent: str | Agent) -> Agent:
    """Returns the agent called ``agent`` (``"ucb"``, ``"dmed"``, ``"olp"``, ``"ps"``).

    An :class:`Agent` is returned unchanged, so user-defined agents work wherever a name
    does.

    Raises:
        ValueError: for an unknown name, listing the known ones.
    """
    if isinstance(agent, Agent):
        return agent
    if isinstance(agent, str) and agent.lower() in AGENTS:
        return AGENTS[agent.lower()]
    raise ValueError(f"agent must be an Agent or one of {sorted(AGENTS)}, got {agent!r}")
