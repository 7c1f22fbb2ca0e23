r"""Confidence bounds of UCRL2B and UCRL3, as the StatisticalRL ``learners`` code states them.

Every function works on arrays of any shape (``n`` the visits of a pair, ``p`` an
empirical transition probability, ``delta`` the per-bound confidence level) and runs under
``jit`` and ``vmap``. File and line numbers refer to StatisticalRL/learners,
``src/statisticalrl_learners/MDPs_discrete/``.

**UCRL2B** (Fruit, Pirotta & Lazaric 2020; ``UCRL2B.py`` lines 59-76), with
``n = max(1, N)``, ``delta' = delta / (split S A)`` (``split = 18``) and
``L = ln(n / delta')``: the transition box
``p +- (c_sqrt sqrt(p (1 - p) L / n) + c_lin L / n)`` clipped to ``[0, 1]`` and the reward
``min(1, r_hat + c_sqrt sqrt(var L / n) + c_lin L / n)`` (``c_sqrt = 2``, ``c_lin = 6``;
``var`` the population variance, ``+inf`` for an untried pair).

**UCRL3** (Bourel, Maillard & Talebi 2020; ``UCRL3.py`` lines 13, 74-169), with
``delta_SA = delta / (S A (3 + 3 S))`` and the peeling level
``l(n) = eta ln(ln(n eta) ln(n eta^2) / (ln(eta)^2 delta_SA)) / n``, ``eta = 1.12``:

* reward: ``min(1, r_hat + sqrt(2 var l) + 7 l / 3,
  r_hat + sqrt((1 + 1/n) ln(sqrt(n + 1) / delta_SA) / (2 n)))``, ``1`` when ``n = 0``;
* transition upper bound: the largest ``x >= p`` with ``x - p <= min(B(x), Gbar(x))``,
  ``B(x) = sqrt(2 x (1 - x) l) + l / 3`` and
  ``Gbar(x) = sqrt(2 gbar(x) (1 + 1/n) ln(2 sqrt(n + 1) / delta_SA) / n)``,
  ``gbar(x) = (1/2 - x) / ln(1/x - 1)`` below ``1/2`` (0 at 0), ``x (1 - x)`` above;
* transition lower bound: the smallest ``x <= p`` with ``p - x <= min(B(x), G(x))``,
  ``G`` with ``g(x) = (1/2 - x) / ln(1/x - 1)`` (``1/4`` at ``1/2``, 0 at 0 and 1),
  raised to ``0.5^(1/n)`` when ``p = 1``.

Each condition holds at ``x = p`` and on an interval from there (``x - p`` is linear,
the Bernstein bound concave; the tests check the end against a fine grid and against
``brentq`` on the first crossing), so the bounds are the ends of those intervals. They
are found here by (at most) 64 bisection steps on ``[p, 1]`` (``[0, p]``), which is machine
precision in float64: the exact roots. The published code stops its bisection at a width of ``1e-4``
and returns the inner end, up to ``1e-4`` less optimistic (``bisection_tol=1e-4``
reproduces it).

Example:
    >>> from jaxmdp.agents.confidence import ucrl3_transition_bounds
    >>> lo, up = ucrl3_transition_bounds(0.5, 100, 1e-3)
    >>> bool(0 < lo < 0.5 < up < 1)
    True
"""

from __future__ import annotations

import math

import jax.numpy as jnp
from jax import lax

__all__ = [
    "UCRL3_ETA",
    "ucrl2b_reward_upper",
    "ucrl2b_transition_box",
    "ucrl3_peeling",
    "ucrl3_reward_upper",
    "ucrl3_transition_bounds",
]

#: The peeling factor of UCRL3 (``UCRL3.py`` line 74).
UCRL3_ETA = 1.12

BISECTION_STEPS = 64


def ucrl2b_transition_box(p, n, log_term, c_sqrt=2.0, c_lin=6.0):
    """UCRL2B's bounds ``(lower, upper)`` of a transition probability ``p``.

    ``p +- (c_sqrt sqrt(p (1 - p) L / n) + c_lin L / n)`` clipped to ``[0, 1]``
    (``UCRL2B.py`` lines 59-67), ``L = log_term``, ``n >= 1``.
    """
    p = jnp.asarray(p)
    width = c_sqrt * jnp.sqrt(p * (1 - p) * log_term / n) + c_lin * log_term / n
    return jnp.maximum(p - width, 0.0), jnp.minimum(p + width, 1.0)


def ucrl2b_reward_upper(mean, var, n, log_term, c_sqrt=2.0, c_lin=6.0):
    """UCRL2B's optimistic reward ``min(1, mean + c_sqrt sqrt(var L / n) + c_lin L / n)``
    (``UCRL2B.py`` lines 69-72); ``var = +inf`` gives 1."""
    bonus = c_sqrt * jnp.sqrt(var * log_term / n) + c_lin * log_term / n
    return jnp.minimum(mean + bonus, 1.0)


def ucrl3_peeling(n, delta, eta=UCRL3_ETA):
    """``l(n) = eta ln(ln(n eta) ln(n eta^2) / (ln(eta)^2 delta)) / n`` (``UCRL3.py``
    lines 74-80), for ``n >= 1`` (``+inf`` at ``n = 0``)."""
    n = jnp.asarray(n, jnp.result_type(float))
    safe = jnp.maximum(n, 1.0)
    value = eta * jnp.log(jnp.log(safe * eta) * jnp.log(safe * eta * eta)
                          / (math.log(eta) ** 2 * delta)) / safe
    return jnp.where(n > 0, value, jnp.inf)


def ucrl3_reward_upper(mean, var, n, delta):
    """UCRL3's optimistic reward (``UCRL3.py`` lines 88-97, 150-152): ``min(1, mean +
    sqrt(2 var l) + 7 l / 3, mean + sqrt((1 + 1/n) ln(sqrt(n + 1) / delta) / (2 n)))``,
    ``1`` at ``n = 0``."""
    n = jnp.asarray(n, jnp.result_type(float))
    safe = jnp.maximum(n, 1.0)
    ell = ucrl3_peeling(safe, delta)
    bernstein = mean + jnp.sqrt(2 * jnp.maximum(var, 0.0) * ell) + 7 * ell / 3
    laplace = mean + jnp.sqrt((1 + 1 / safe) * jnp.log(jnp.sqrt(safe + 1) / delta) / (2 * safe))
    return jnp.where(n > 0, jnp.minimum(1.0, jnp.minimum(bernstein, laplace)), 1.0)


def _proxy_upper(x):
    # gbar (UCRL3.py lines 105-116): (1/2 - x) / ln(1/x - 1) below 1/2 (0 at 0), x(1 - x)
    # from 1/2 on.
    safe = jnp.where((x > 0) & (x < 0.5), x, 0.25)
    low = (0.5 - safe) / jnp.log(1 / safe - 1)
    return jnp.where(x <= 0, 0.0, jnp.where(x < 0.5, low, x * (1 - x)))


def _proxy_lower(x):
    # g (UCRL3.py lines 118-127): (1/2 - x) / ln(1/x - 1) on (0, 1), 1/4 at 1/2.
    safe = jnp.where((x > 0) & (x < 1) & (x != 0.5), x, 0.25)
    value = (0.5 - safe) / jnp.log(1 / safe - 1)
    return jnp.where((x > 0) & (x < 1), jnp.where(x == 0.5, 0.25, value), 0.0)


def _bisect(holds, inside, outside, steps):
    """The end of ``{holds}`` between ``inside`` (where it holds) and ``outside``.

    ``steps`` bisection steps, stopped early once a step changes no bracket: a step is a
    function of the bracket, so every later one would change nothing either, and the
    result is that of all ``steps`` bit for bit (in float32 the brackets close after
    about 30 steps).
    """
    def cond(carry):
        _, _, step, changed = carry
        return changed & (step < steps)

    def body(carry):
        a, b, step, _ = carry
        mid = 0.5 * (a + b)
        ok = holds(mid)
        new_a, new_b = jnp.where(ok, mid, a), jnp.where(ok, b, mid)
        changed = jnp.any((new_a != a) | (new_b != b))
        return new_a, new_b, step + 1, changed

    a, b, _, _ = lax.while_loop(cond, body, (inside, outside, 0, jnp.asarray(True)))
    return a, b


def ucrl3_transition_bounds(p, n, delta, *, bisection_tol: float | None = None):
    """UCRL3's ``(lower, upper)`` bounds of a transition probability (module docstring).

    Args:
        p: empirical probabilities, any shape.
        n: visits of the pair (broadcast against ``p``); ``n = 0`` gives ``(0, 1)``.
        delta: the per-bound level ``delta / (S A (3 + 3 S))``.
        bisection_tol: ``None`` (default) for the exact ends (64 bisection steps,
            machine precision); a positive float reproduces the published bisection
            (``search_up`` / ``search_down``, ``utils.py`` lines 126-149), which stops
            at that width and returns the end where the condition holds.

    Returns:
        ``(lower, upper)``, each the shape of ``p`` broadcast against ``n``.
    """
    p = jnp.asarray(p, jnp.result_type(float))
    n = jnp.asarray(n, p.dtype)
    p, n = jnp.broadcast_arrays(p, n)
    safe = jnp.maximum(n, 1.0)
    ell = ucrl3_peeling(safe, delta)
    laplace = 2 * (1 + 1 / safe) * jnp.log(2 * jnp.sqrt(safe + 1) / delta) / safe

    def bernstein(x):
        return jnp.sqrt(2 * x * (1 - x) * ell) + ell / 3

    def holds_up(x):
        return x - p <= jnp.minimum(bernstein(x), jnp.sqrt(_proxy_upper(x) * laplace))

    def holds_lo(x):
        return p - x <= jnp.minimum(bernstein(x), jnp.sqrt(_proxy_lower(x) * laplace))

    one, zero = jnp.ones_like(p), jnp.zeros_like(p)
    if bisection_tol is None:
        up = jnp.where(holds_up(one), one, _bisect(holds_up, p, one, BISECTION_STEPS)[0])
        lo = jnp.where(holds_lo(zero), zero, _bisect(holds_lo, p, zero, BISECTION_STEPS)[0])
    else:
        steps = max(0, math.ceil(math.log2(1.0 / bisection_tol)))
        # search_up(f, 1, p): returns `up` if f(up) else `down` after halving to the tol.
        up = _published_search(holds_up, one, p, bisection_tol, steps, upward=True)
        lo = _published_search(holds_lo, p, zero, bisection_tol, steps, upward=False)
    lo = jnp.where((p >= 1) & (n >= 1), jnp.maximum(0.5 ** (1 / safe), lo), lo)
    return jnp.where(n > 0, lo, 0.0), jnp.where(n > 0, up, 1.0)


def _published_search(holds, up, down, tol, steps, *, upward):
    """``search_up`` / ``search_down`` of ``utils.py`` (lines 126-149), elementwise."""
    def body(_, bracket):
        up, down = bracket
        active = up - down > tol
        mid = 0.5 * (up + down)
        ok = holds(mid)
        if upward:  # f(mid) -> search_up(f, up, mid) else (f, mid, down)
            new_up, new_down = jnp.where(ok, up, mid), jnp.where(ok, mid, down)
        else:  # f(mid) -> search_down(f, mid, down) else (f, up, mid)
            new_up, new_down = jnp.where(ok, mid, up), jnp.where(ok, down, mid)
        return jnp.where(active, new_up, up), jnp.where(active, new_down, down)

    up, down = lax.fori_loop(0, steps + 2, body, (up, down))
    if upward:
        return jnp.where(holds(up), up, down)
    return jnp.where(holds(down), down, up)

