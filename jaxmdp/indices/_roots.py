"""The one safeguarded 1-D root finder of jaxmdp, with implicit differentiation.

Every scalar equation in jaxmdp (the KL indices ``kl_ucb`` and ``kinf``) is solved here:
a bracketed Newton method that falls back to bisection whenever a Newton step leaves the
current bracket or is not finite. It is a ``lax.while_loop`` with a step counter and
``max_steps``, so it runs under ``jit`` and ``vmap`` (batched problems iterate together
until the slowest has converged; finished ones stay fixed). There is no Python-level
branching on values.

For accelerators (``find_root``'s ``fixed_steps`` and ``exponential``): the first steps
can run as a loop of a fixed trip count, which reads nothing back from the device (on a
GPU each trip of a data-dependent loop copies its predicate to the host and waits), and
the steps can fit an exponential instead of Halley's hyperbola, exact on residuals that
behave like ``a + b exp(k x)``.

Derivatives of the root with respect to the equation's parameters come from the implicit
function theorem applied to the *optimality condition* ``f(x*, args) = 0``::

    dx*/dargs = -(df/dargs) / (df/dx)   at x = x*,

never from differentiating through the iterations (as in optimistix's ``ImplicitAdjoint``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

Array = jax.Array
# fn(x, args) -> (f(x), f'(x)), (f(x), f'(x), f''(x)) or (f(x), f'(x), f''(x), error of
# f(x)); f must be non-decreasing in x.
ResidualFn = Callable[[Array, Any], tuple[Array, ...]]


# Iteration cap of every index solve (a few Newton steps, tens of bisections at worst).
MAX_STEPS = 64


def newton_xtol(dtype) -> float:
    """Step tolerance for Newton's method: an accepted step below ``0.1 sqrt(eps)`` leaves
    an error of order ``eps`` after that step (quadratic convergence)."""
    return float(np.finfo(dtype).eps) ** 0.5 * 0.1


def halley_xtol(dtype) -> float:
    """Step tolerance for Halley's method: a step below ``0.1 eps^(1/3)`` leaves an error of
    order ``eps`` (cubic convergence)."""
    return float(np.finfo(dtype).eps) ** (1.0 / 3.0) * 0.1


class RootResult(NamedTuple):
    """Result of :func:`find_root`.

    Attributes:
        x: the root (scalar).
        num_steps: number of residual evaluations performed.
        converged: True if the stopping rule was met before ``max_steps``.
    """

    x: Array
    num_steps: Array
    converged: Array


class _State(NamedTuple):
    x: Array
    lo: Array
    hi: Array
    step: Array
    done: Array


def _iterate(fn: ResidualFn, x0: Array, lo: Array, hi: Array, args: Any, xtol: float,
             max_steps: int, active: Array, fixed_steps: int = 0,
             exponential: bool = False) -> RootResult:
    """Safeguarded Newton iteration on a non-decreasing residual (no derivatives); an
    inactive problem starts finished. ``fixed_steps`` (static) steps run first as a loop of
    that many trips (finished problems stay fixed), then the data-dependent loop;
    ``exponential`` (static) replaces Halley's step by the exponential fit's."""
    x0 = jnp.clip(x0, lo, hi)

    def cond(state: _State) -> Array:
        return (~state.done) & (state.step < max_steps)

    def body(state: _State) -> _State:
        x = state.x
        out = fn(x, args)
        f, df = out[0], out[1]
        # Non-decreasing residual: f < 0 means the root lies to the right of x.
        lo = jnp.where(f < 0, x, state.lo)
        hi = jnp.where(f > 0, x, state.hi)
        newton = x - f / df
        if len(out) >= 3 and exponential:
            # The root of the exponential a + b exp(k x) with the same f, f', f''
            # (k = f''/f'): x - (f/f') log1p(-y)/(-y), y = f f''/f'^2; Newton's step times
            # 1 + y/2 + y^2/3 + ..., of Halley's order, and exact on residuals of that
            # form (the KL indices' ln m in ln u at both ends, ln h at small levels).
            y = f * out[2] / (df * df)
            z = -y
            series = 1.0 - z * (0.5 - z * (1.0 / 3.0 - 0.25 * z))
            z_safe = jnp.where((y < 1.0) & (jnp.abs(z) >= 1e-3), z, 1.0)
            factor = jnp.where(jnp.abs(z) < 1e-3, series, jnp.log1p(z_safe) / z_safe)
            fit = x - (f / df) * factor
            newton = jnp.where(jnp.isfinite(fit) & (y < 1.0), fit, newton)
        elif len(out) >= 3:
            # Halley's correction when f'' is supplied; kept only while it is a moderate
            # change of the Newton step (otherwise plain Newton).
            ratio = f * out[2] / (2.0 * df * df)
            halley = x - (f / df) / (1.0 - ratio)
            newton = jnp.where(jnp.isfinite(halley) & (jnp.abs(ratio) < 0.5), halley, newton)
        # Closed bracket: at convergence the Newton step is below one ulp and lands on x,
        # which may just have become an end of the bracket.
        newton_ok = jnp.isfinite(newton) & (newton >= lo) & (newton <= hi)
        x_next = jnp.where(newton_ok, newton, 0.5 * (lo + hi))
        if len(out) < 4:
            x_next = jnp.where(f == 0, x, x_next)
        else:
            # A residual within its rounding error (fn's fourth output) is a root as far
            # as f can tell; an infinite error says that f resolves nothing from x towards
            # the root, which ends the iteration at the bracket's end on that side.
            within = jnp.abs(f) <= out[3]
            x_next = jnp.where(within, x, x_next)
            x_next = jnp.where(out[3] == jnp.inf, jnp.where(f < 0, hi, lo), x_next)
        scale = 1.0 + jnp.abs(x)
        done = (((f == 0) if len(out) < 4 else within)
                        | (newton_ok & (jnp.abs(x_next - x) <= xtol * scale))
                        | (hi - lo <= xtol * scale))
        return _State(x_next, lo, hi, state.step + 1, done)

    init = _State(x0, lo, hi, jnp.zeros((), jnp.int32), ~active)
    if fixed_steps:
        # A loop of a fixed number of trips: no predicate to read back between trips (on a
        # GPU, each trip of a data-dependent loop copies its predicate to the host). Each
        # problem takes exactly the steps of the loop below (the same step while it is
        # running, none once it has stopped), so the result does not depend on the split.
        def fixed(_, state: _State) -> _State:
            new = body(state)
            return jax.tree.map(lambda a, b: jnp.where(cond(state), a, b), new, state)

        init = lax.fori_loop(0, fixed_steps, fixed, init)
    final = lax.while_loop(cond, body, init)
    return RootResult(final.x, final.step, final.done)


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def _implicit(fn: ResidualFn, x: Array, args: Any) -> Array:
    """Identity on the root ``x``; its JVP is the implicit-function-theorem derivative."""
    del fn, args
    return x


@_implicit.defjvp
def _implicit_jvp(fn, primals, tangents):
    x, args = primals
    _, dargs = tangents
    f_of_args = lambda a: fn(x, a)[0]  # noqa: E731
    _, df_dargs = jax.jvp(f_of_args, (args,), (dargs,))
    df_dx = fn(x, args)[1]
    return x, -df_dargs / df_dx


def find_root(fn: ResidualFn, x0: jax.typing.ArrayLike, lo: jax.typing.ArrayLike,
                            hi: jax.typing.ArrayLike, args: Any = (), *, xtol: float,
                            max_steps: int = MAX_STEPS,
                            active: jax.typing.ArrayLike = True,
                            fixed_steps: int = 0, exponential: bool = False) -> RootResult:
    r"""Finds the root of a non-decreasing scalar function by safeguarded Newton.

    Iterates :math:`x \leftarrow x - f(x)/f'(x)` (Halley's cubically convergent correction
    :math:`x - (f/f')/(1 - f f''/(2 f'^2))` when ``fn`` also returns :math:`f''`) while
    keeping a bracket
    :math:`[lo, hi]` with :math:`f(lo) \le 0 \le f(hi)`; a step that leaves the bracket (or
    is not finite) is replaced by bisection. Stops when an accepted Newton step is smaller
    than ``xtol * (1 + |x|)`` (Newton then has converged quadratically, so the returned
    point, which includes that last step, is accurate to about ``xtol**2``), when the
    bracket is that narrow, when ``f(x) == 0``, or after ``max_steps`` evaluations.

    If the root lies outside ``[lo, hi]`` the iteration converges to the nearer end: callers
    use this to clamp roots to a representable range.

    Args:
        fn: ``fn(x, args) -> (f, df)``, ``(f, df, d2f)`` or ``(f, df, d2f, f_err)`` with
            ``f`` non-decreasing in ``x``, ``df = f'(x)`` and ``d2f = f''(x)``; ``f_err``,
            a bound on the rounding error of ``f``: ``|f| <= f_err`` stops at ``x`` (a
            root as far as ``f`` can tell), and ``f_err = inf`` (``f`` resolves nothing
            from ``x`` towards the root) stops at the bracket's end on that side.
            Scalar ``x``; batch with ``jax.vmap``.
        x0: initial guess, scalar (clipped into the bracket).
        lo: lower end of the bracket, scalar.
        hi: upper end of the bracket, scalar.
        args: pytree of parameters of ``fn``. The returned root is differentiable with respect
            to ``args`` by implicit differentiation of ``fn(x*, args) = 0``.
        xtol: relative step tolerance (keyword-only, static).
        max_steps: iteration cap (keyword-only, static).
        active: whether the root is needed, scalar bool (keyword-only, default True). An
            inactive problem is not iterated: it returns ``x0`` clipped into the bracket,
            0 steps and ``converged`` True. Under ``vmap`` the loop runs until the
            slowest *active* problem has converged, so a caller that discards some
            problems' roots (degenerate cases with a closed form) passes ``active=False``
            for those and the others' roots are unchanged, bit for bit.
        fixed_steps: steps run as a loop of that fixed number of trips before the
            data-dependent loop (keyword-only, static; default 0). The steps are those of
            the data-dependent loop (a problem that has stopped stays fixed), so the
            result and ``num_steps`` are the same; the loop that follows checks once and
            runs only if some problem has not stopped. On a GPU a fixed trip count reads
            nothing back from the device, while each trip of a data-dependent loop copies
            its predicate to the host and waits (the KL indices' accelerator path).
        exponential: with ``d2f``, step to the root of the exponential
            :math:`a + b e^{k x}` that matches :math:`f, f', f''` (:math:`k = f''/f'`):
            :math:`x - (f/f')\,\ln(1 - y)/(-y)` with :math:`y = f f''/f'^2`, a third-order
            step like Halley's (their factors on the Newton step agree to :math:`y^2`),
            exact on residuals of that form, where Halley's advances by at most twice
            Newton's (keyword-only, static; default False: Halley's).

    Returns:
        A :class:`RootResult` ``(x, num_steps, converged)``.

    Example:
        >>> fn = lambda x, a: (x**3 - a, 3 * x**2)
        >>> root = find_root(fn, 1.0, 0.0, 2.0, 2.0, xtol=1e-10).x  # cube root of 2
        >>> print(f"{float(root):.6f}")
        1.259921
    """
    x0, lo, hi = jnp.asarray(x0), jnp.asarray(lo), jnp.asarray(hi)
    dtype = jnp.result_type(x0, lo, hi, float)
    x0, lo, hi = (lax.stop_gradient(a.astype(dtype)) for a in (x0, lo, hi))
    active = lax.stop_gradient(jnp.asarray(active, bool))
    result = _iterate(fn, x0, lo, hi, lax.stop_gradient(args), xtol, max_steps, active,
                      fixed_steps, exponential)
    return result._replace(x=_implicit(fn, result.x, args))
