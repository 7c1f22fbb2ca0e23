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


def _untried_first(action, admissible, visits):
    """``action``, unless an admissible action is untried: then the lowest such one."""
    untried = admissible & (visits == 0)
    return jnp.where(jnp.any(untried), jnp.argmax(untried), action).astype(jnp.int32)


def _finish(index, admissible, visits):
    """argmax of ``index`` over admissible actions; untried admissible actions first.

    Ties go to the lowest action index (``jnp.argmax`` returns the first maximum).
    """
    action = jnp.argmax(jnp.where(admissible, index, -jnp.inf))
    return _untried_first(action, admissible, visits)


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
    return _untried_first(action, admissible, visits)


def _open_uniform(bits, dtype):
    """Uniform draws in the open interval (0, 1) from unsigned random words."""
    width = 8 * bits.dtype.itemsize
    mantissa = min(width, jnp.finfo(dtype).nmant + 1)
    return ((bits >> (width - mantissa)).astype(dtype) + 0.5) * (0.5 ** mantissa)


def _gamma(key, shape_param, *, proposals: int = 2):
    """Exact Gamma(``shape_param``, 1) draws for ``shape_param >= 1`` (Marsaglia & Tsang 2000).

    Rejection sampling with acceptance probability above 0.95 for every shape ``>= 1``
    (above 0.99 from shape 5 on). Each element gets ``proposals`` candidates at once from
    one call to the PRNG (normals by Box–Muller), and the first accepted one is kept;
    elements that reject all of them, rare, draw again in a loop. Inside ``vmap`` a
    ``while_loop`` runs until every element of the batch is done, so proposing several
    candidates up front avoids loop rounds over the whole batch; one PRNG call per round
    instead of a call per normal and per uniform matters on CPU, where generating the
    random bits dominates the cost. (``jax.random.gamma`` also handles shapes below 1 and
    carries a derivative rule; it costs about three times as much per step here.)

    Args:
        key: PRNG key.
        shape_param: shape parameters ``>= 1``, any array shape, float dtype.
        proposals: candidates per element per round (even, static).

    Returns:
        Independent Gamma draws, same shape and dtype as ``shape_param``.
    """
    dtype = shape_param.dtype
    word = jnp.uint64 if dtype == jnp.float64 else jnp.uint32
    d = shape_param - 1.0 / 3.0
    c = 1.0 / jnp.sqrt(9.0 * d)
    half = proposals // 2

    def propose(key):
        bits = jax.random.bits(key, (2, proposals) + d.shape, word)
        u = _open_uniform(bits, dtype)
        radius = jnp.sqrt(-2.0 * jnp.log(u[0, :half]))
        angle = (2.0 * jnp.pi) * u[0, half:]
        z = jnp.concatenate([radius * jnp.cos(angle), radius * jnp.sin(angle)])
        cube = (1.0 + c * z) ** 3
        positive = cube > 0
        log_cube = jnp.log(jnp.where(positive, cube, 1.0))
        accept = positive & (jnp.log(u[1]) < 0.5 * z * z + d - d * cube + d * log_cube)
        value, accepted = jnp.ones_like(d), jnp.zeros(d.shape, dtype=bool)
        for k in reversed(range(proposals)):  # the first accepted candidate wins
            value = jnp.where(accept[k], d * cube[k], value)
            accepted = accepted | accept[k]
        return accepted, value

    def not_done(state):
        return ~jnp.all(state[1])

    def again(state):
        round_, accepted, value = state
        new_accepted, new_value = propose(jax.random.fold_in(key, round_))
        value = jnp.where(accepted, value, new_value)
        return round_ + 1, accepted | new_accepted, value

    accepted, value = propose(jax.random.fold_in(key, 0))
    return jax.lax.while_loop(not_done, again, (jnp.int32(1), accepted, value))[2]


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
