r"""Baselines for the timing study: the indices solved the way a user without the paper would.

Cowan, Katehakis & Pirutinsky (2019), section 4, compare their reductions of the MDP-UCB
index :math:`C`, the MDP-DMED rate :math:`D` and the OLP index :math:`B` with the
"q-formulations": the :math:`|S|`-dimensional optimisation problems over the simplex,
solved by a generic optimiser. This module provides those baselines, each a pure JAX
function that runs under ``jit`` and ``vmap`` and stops by its *own* stopping rule (a KKT
residual, a duality gap, constraint violations and step sizes) within ``tol`` of the
optimum, never by looking at the exact answer:

* :func:`kl_ucb_qform`: :math:`C(p, v, \delta) = \sup\{q^\top v : \mathrm{KL}(p\|q) \le
  \delta\}` over :math:`q`, by an augmented Lagrangian method in softmax coordinates with
  an optax inner optimiser (preconditioned ``optax.lbfgs`` by default);
* :func:`kinf_qform`: :math:`D(p, v, \rho) = \inf\{\mathrm{KL}(p\|q) : q^\top v \ge
  \rho\}` likewise;
* :func:`kl_ucb_pgd` and :func:`kinf_pgd`: the same two q-formulations by projected
  gradient on :math:`q` itself (an optax optimiser, then
  ``optax.projections.projection_simplex`` onto a floored simplex), the constraint
  handled by primal--dual updates of its multiplier, stopped by a duality-gap
  certificate;
* :func:`kl_ucb_2d`: :math:`C` by the paper's own reduction (Theorem 2) to two unknowns
  :math:`(\mu_q^*, \lambda)`, solved by a safeguarded 2-D Newton method;
* :func:`l1_ucb_lp`: :math:`B(p, v, d) = \sup\{q^\top v : \|q - p\|_1 \le d\}` as the
  paper's linear program, solved by diagonally preconditioned PDHG (Chambolle & Pock).

They are baselines, not part of the public API: import them from
``jaxmdp.indices.qform``. The exact and fast solvers are ``jaxmdp.kl_ucb``,
``jaxmdp.kinf`` and ``jaxmdp.l1_ucb``.

Why softmax (log) coordinates: a generic method run on the plain variables :math:`q`
from :math:`q = p` meets the boundary of the simplex, where :math:`\mathrm{KL}(p\|q)` is
infinite and its gradient blows up (scipy's SLSQP on plain :math:`q` can stop at wrong
points there). In log coordinates :math:`y = \ln q` the KL term becomes
:math:`\mathrm{KL}(p\|\mathrm{softmax}(y)) = \sum_x p_x \ln p_x - p^\top y +
\mathrm{logsumexp}(y)`, convex and smooth, :math:`q` stays strictly inside the simplex,
and every stationary point is the global optimum (softmax maps onto the interior of the
simplex, where the problems are convex).

All baselines assume ``p > 0`` componentwise (as for Dirichlet draws): a zero
:math:`p_x` starts at :math:`q_x \approx 0` and may stay there.

The default optimisers are the fastest reliable ones on random problems with :math:`|S|`
from 10 to :math:`10^4` (as in the timing study). For the augmented Lagrangian,
preconditioned ``optax.lbfgs`` takes about 10 times fewer iterations than the best Adam
(``optax.adam(0.1)``, about 300 to 500) and 3 to 5 times less time at :math:`|S| = 10^4`;
penalties from 10 to 1000 and memories from 3 to 10 are all reliable and within about 2x
of each other in time; Adam can circle the kink of the penalty at :math:`\lambda = 0`,
and RMSProp and SGD with momentum do not reach the tolerance in 20,000 steps (also
compared: NAdam, AdaBelief, AMSGrad, Adamax, Yogi). For projected gradient in the Fisher
metric, ``sgd(1.0)`` converges on all problems, Nesterov momentum 0.5 cuts the worst step
counts about 2x, momentum 0.7 or more overshoots into the floor and stalls, and
``adam(0.1)`` (which undoes the metric by normalising each coordinate) does not converge
in 20,000 steps at :math:`|S| = 100`; plain additive dual ascent
:math:`\mu \leftarrow \mu + (\delta - \mathrm{KL})` also converges, in up to 2x more
steps. Each projected-gradient step costs one projection, a sort of :math:`S` numbers
(about 4 ms at :math:`S = 10^4` on one CPU core): that, not the number of steps, is what
makes those baselines slow.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax import lax

ArrayLike = jax.typing.ArrayLike

__all__ = [
    "SolverInfo", "kinf_pgd", "kinf_qform", "kl_ucb_2d", "kl_ucb_pgd", "kl_ucb_qform",
    "l1_ucb_lp",
]


class SolverInfo(NamedTuple):
    """What a baseline did, returned beside the value when ``return_info=True``.

    Attributes:
        num_steps: iterations taken (int32 scalar).
        residual: the stopping measure at the last iterate, in units of the value
            (a KKT residual, a Newton step, or a duality-gap bound).
        converged: whether the stopping rule was met before ``max_steps``.
    """

    num_steps: jax.Array
    residual: jax.Array
    converged: jax.Array


def _as_float(*xs):
    dtype = jnp.result_type(*xs, float)
    return tuple(jnp.asarray(x, dtype) for x in xs)


def _check_single(name: str, p: jax.Array, v: jax.Array) -> None:
    if p.ndim != 1 or v.shape != p.shape:
        raise ValueError(
            f"{name}: p and v must both have shape [S] (batch with vmap), "
            f"got p.shape={p.shape} and v.shape={v.shape}"
        )


def _check_config(tol: float, max_steps: int) -> None:
    if not tol > 0:
        raise ValueError(f"tol must be positive, got {tol!r}")
    if int(max_steps) != max_steps or max_steps < 1:
        raise ValueError(f"max_steps must be a positive integer, got {max_steps!r}")


def _checked(name: str, p, v, level, tol: float, max_steps: int):
    """``(p, v, level)`` in one float dtype, after checking the shapes and the config."""
    p, v, level = _as_float(p, v, level)
    _check_single(name, p, v)
    _check_config(tol, max_steps)
    return p, v, level


def _augmented_lagrangian(
    objective: Callable[[jax.Array], jax.Array],
    constraint: Callable[[jax.Array], jax.Array],
    z0: jax.Array,
    grad_scale: jax.Array,
    *,
    tol: float,
    optimizer: optax.GradientTransformation,
    penalty: float,
    inner_factor: float,
    max_steps: int,
    max_inner: int,
) -> tuple[jax.Array, SolverInfo]:
    r"""Minimises ``objective(z)`` subject to ``constraint(z) <= 0``, one scalar constraint.

    The augmented Lagrangian (Nocedal & Wright 2006, section 17.4) for an inequality
    constraint :math:`g(z) \le 0` with multiplier :math:`\lambda \ge 0` and penalty
    :math:`c` is

    .. math:: L_c(z, \lambda) = f(z) + \frac{1}{2c}\big(\max(0, \lambda + c\,g(z))^2
        - \lambda^2\big).

    Its gradient is :math:`\nabla f + \hat\lambda \nabla g` with the first-order multiplier
    estimate :math:`\hat\lambda = \max(0, \lambda + c g)`, so each gradient evaluation
    gives the KKT residual of the original problem at :math:`(z, \hat\lambda)`:
    stationarity :math:`\|s \odot \nabla_z L_c\|_1` plus complementarity
    :math:`\hat\lambda\,|g(z)|`, where ``grad_scale`` :math:`s` maps the gradient back to
    softmax coordinates :math:`y` (there the 1-norm is a first-order bound on the
    objective gap, in units of the objective, and :math:`\hat\lambda|g|` prices the
    constraint's violation or slack by its multiplier).

    The outer ``lax.while_loop`` minimises :math:`L_c(\cdot, \lambda)` inexactly
    (:func:`_minimise_inner`) and updates :math:`\lambda \leftarrow \hat\lambda`. It stops
    when stationarity and complementarity are both at most ``tol``/2, or after
    ``max_steps`` steps (optimiser steps plus multiplier updates).

    Returns:
        The final ``z`` and a :class:`SolverInfo`.
    """
    dtype = z0.dtype
    penalty = jnp.asarray(penalty, dtype)
    half_tol = 0.5 * tol

    def measures(grad, g, lam):
        lam_hat = jnp.maximum(0.0, lam + penalty * g)
        return jnp.sum(jnp.abs(grad_scale * grad)), lam_hat * jnp.abs(g), lam_hat

    def outer_cond(carry):
        z, lam, step, residual, done = carry
        return (step < max_steps) & ~done

    def outer_body(carry):
        z, lam, step, _, _ = carry
        z, grad, g, step = _minimise_inner(
            objective, constraint, functools.partial(measures, lam=lam), z, lam, step,
            optimizer=optimizer, penalty=penalty, half_tol=half_tol,
            inner_factor=inner_factor, max_steps=max_steps, max_inner=max_inner)
        stationarity, complementarity, lam_hat = measures(grad, g, lam)
        done = (stationarity <= half_tol) & (complementarity <= half_tol)
        return z, lam_hat, step + 1, stationarity + complementarity, done

    carry = (
        z0,
        jnp.zeros((), dtype),
        jnp.zeros((), jnp.int32),
        jnp.asarray(jnp.inf, dtype),
        jnp.zeros((), bool),
    )
    z, _, step, residual, done = lax.while_loop(outer_cond, outer_body, carry)
    return z, SolverInfo(step, residual, done)


def _minimise_inner(objective, constraint, measures, z, lam, step, *, optimizer, penalty,
                    half_tol, inner_factor, max_steps, max_inner):
    r"""Optimiser steps on :math:`L_c(\cdot, \lambda)` from ``z`` for one outer iteration.

    A fresh optimiser state, then steps until the stationarity is at most
    :math:`\max(\mathrm{tol}/2,\ \kappa \times \text{complementarity})` (an inexact
    inner solve, :math:`\kappa` = ``inner_factor``), or ``max_inner`` steps, or the total
    ``step`` count reaches ``max_steps``. ``measures(grad, g)`` gives
    ``(stationarity, complementarity, lam_hat)``.

    Returns:
        ``(z, grad, g, step)``: the last iterate, its gradient and constraint value, and
        the total step count.
    """
    stores_value = optax.tree.get(optimizer.init(z), "value") is not None

    def value_fn(z):
        shifted = jnp.maximum(0.0, lam + penalty * constraint(z))
        return objective(z) + (shifted**2 - lam**2) / (2.0 * penalty)

    def cond(inner):
        z, _, _, grad, g, inner_step, step = inner
        stationarity, complementarity, _ = measures(grad, g)
        solved = stationarity <= jnp.maximum(half_tol, inner_factor * complementarity)
        return ~solved & (inner_step < max_inner) & (step < max_steps)

    def body(inner):
        z, opt_state, value, grad, _, inner_step, step = inner
        updates, opt_state = optimizer.update(
            grad, opt_state, z, value=value, grad=grad, value_fn=value_fn
        )
        z = optax.apply_updates(z, updates)
        if stores_value:
            value, grad = optax.value_and_grad_from_state(value_fn)(z, state=opt_state)
        else:
            value, grad = jax.value_and_grad(value_fn)(z)
        return z, opt_state, value, grad, constraint(z), inner_step + 1, step + 1

    value, grad = jax.value_and_grad(value_fn)(z)
    inner = (z, optimizer.init(z), value, grad, constraint(z), jnp.zeros((), jnp.int32), step)
    z, _, _, grad, g, _, step = lax.while_loop(cond, body, inner)
    return z, grad, g, step


def _log_coordinates(p: jax.Array, precondition: bool):
    """The map ``z -> y = ln p + z / s``, its scale ``s`` (``sqrt(p)`` or ones), ``p.ln p``."""
    p_safe = jnp.maximum(p, jnp.finfo(p.dtype).tiny)
    log_p = jnp.log(p_safe)
    p_log_p = jnp.sum(jnp.where(p > 0, p * log_p, 0.0))
    scale = jnp.sqrt(p_safe) if precondition else jnp.ones_like(p)

    def to_y(z):
        return log_p + z / scale

    return to_y, scale, p_log_p


def _named_level(solve, problem):
    """``solve`` named, documented and signed as ``problem``, whose third parameter names
    the level (``delta`` or ``rho``); it stays positional-only, as in ``solve``."""
    level = list(inspect.signature(problem).parameters)[2]
    signature = inspect.signature(solve)
    params = [param.replace(name=level) if param.name == "level" else param
              for param in signature.parameters.values()]
    solve.__signature__ = signature.replace(parameters=params)
    solve.__name__ = solve.__qualname__ = problem.__name__
    solve.__doc__ = problem.__doc__
    solve.__module__ = problem.__module__
    return solve


def _qform_baseline(problem):
    """Makes an augmented-Lagrangian baseline out of its problem in softmax coordinates.

    ``problem(p, v, level, to_y, p_log_p)`` returns ``(objective, constraint, value)``,
    functions of ``z`` (:func:`_log_coordinates`): minimise ``objective`` subject to
    ``constraint <= 0``, then report ``value(z)``. The baseline checks its arguments, runs
    :func:`_augmented_lagrangian` from :math:`q = p` and returns the value (and a
    :class:`SolverInfo` with ``return_info``).
    """

    def solve(p: ArrayLike, v: ArrayLike, level: ArrayLike, /, *, tol: float = 1e-4,
              penalty: float = 100.0, inner_factor: float = 0.3, precondition: bool = True,
              memory_size: int = 10, optimizer: optax.GradientTransformation | None = None,
              max_steps: int = 5_000, max_inner: int = 1_000, return_info: bool = False):
        p, v, level = _checked(problem.__name__, p, v, level, tol, max_steps)
        to_y, scale, p_log_p = _log_coordinates(p, precondition)
        objective, constraint, value = problem(p, v, level, to_y, p_log_p)
        if optimizer is None:
            optimizer = optax.lbfgs(memory_size=memory_size)
        z, info = _augmented_lagrangian(
            objective, constraint, jnp.zeros_like(p), scale, tol=tol, optimizer=optimizer,
            penalty=penalty, inner_factor=inner_factor, max_steps=max_steps,
            max_inner=max_inner,
        )
        return (value(z), info) if return_info else value(z)

    return jax.jit(_named_level(solve, problem), static_argnames=_QFORM_STATIC)


_QFORM_STATIC = (
    "tol", "penalty", "inner_factor", "precondition", "memory_size", "optimizer",
    "max_steps", "max_inner", "return_info",
)


@_qform_baseline
def kl_ucb_qform(p: jax.Array, v: jax.Array, delta: jax.Array, to_y, p_log_p):
    r"""The MDP-UCB index by its :math:`|S|`-dimensional q-formulation (a baseline).

    Solves the paper's q-formulation (Cowan, Katehakis & Pirutinsky 2019, section 4,
    "MDP-UCB")

    .. math:: C(p, v, \delta) = \sup_{q \in \Theta}\{q^\top v : \mathrm{KL}(p\|q) \le \delta\}

    in softmax coordinates :math:`q = \mathrm{softmax}(y)`, where
    :math:`\mathrm{KL}(p\|q) = \sum_x p_x\ln p_x - p^\top y + \mathrm{logsumexp}(y)`, by an
    augmented Lagrangian method for the constraint :math:`\mathrm{KL} - \delta \le 0`
    (penalty :math:`c` = ``penalty``), each inner problem solved by ``optax.lbfgs`` (zoom
    line search, ``memory_size`` pairs), warm-started at :math:`q = p`. With
    ``precondition`` the variables are :math:`z = \sqrt{p} \odot (y - \ln p)`: the Hessian
    of the KL term at :math:`q = p` is :math:`\mathrm{diag}(p) - pp^\top` (the Fisher
    information), so in :math:`z` the inner problems are well conditioned whatever the
    spread of :math:`p` (a natural-gradient scaling; it needs nothing from the paper).

    Stopping rule (see :func:`_augmented_lagrangian`): a KKT residual in units of the
    value, :math:`\|\nabla_y L\|_1 \le \mathrm{tol}/2` and
    :math:`\hat\lambda\,|\mathrm{KL}(p\|q) - \delta| \le \mathrm{tol}/2`. It returns
    :math:`q^\top v` at the last iterate.

    Args:
        p: probabilities, shape ``[S]``, positive and summing to one.
        v: values, shape ``[S]``.
        delta: KL radius, a positive scalar.
        tol: target absolute accuracy of the value (static).
        penalty: augmented-Lagrangian penalty :math:`c` (static).
        inner_factor: inexact inner solves: the inner loop stops when the stationarity is
            at most ``inner_factor`` times the complementarity (static).
        precondition: solve in :math:`z = \sqrt{p}\odot(y - \ln p)` (static).
        memory_size: L-BFGS memory (static).
        optimizer: an optax ``GradientTransformation`` to use instead of L-BFGS (static).
        max_steps: cap on optimiser steps plus multiplier updates (static).
        max_inner: cap on the optimiser steps between multiplier updates (static).
        return_info: also return a :class:`SolverInfo` (static).

    Returns:
        :math:`C(p, v, \delta)` to about ``tol``, a scalar; with ``return_info`` a pair
        ``(value, SolverInfo)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from jaxmdp.indices.qform import kl_ucb_qform
        >>> p, v = jnp.array([0.5, 0.3, 0.2]), jnp.array([0.0, 0.5, 1.0])
        >>> print(f"{kl_ucb_qform(p, v, 0.1):.3f}")
        0.535
    """

    def objective(z):
        return -jnp.dot(jax.nn.softmax(to_y(z)), v)

    def constraint(z):
        y = to_y(z)
        return p_log_p - jnp.dot(p, y) + jax.nn.logsumexp(y) - delta

    return objective, constraint, lambda z: -objective(z)


@_qform_baseline
def kinf_qform(p: jax.Array, v: jax.Array, rho: jax.Array, to_y, p_log_p):
    r"""The MDP-DMED rate by its :math:`|S|`-dimensional q-formulation (a baseline).

    Solves the paper's q-formulation (Cowan, Katehakis & Pirutinsky 2019, section 4,
    "MDP-DMED")

    .. math:: D(p, v, \rho) = \inf_{q \in \Theta}\{\mathrm{KL}(p\|q) : q^\top v \ge \rho\}

    in softmax coordinates by the same method as :func:`kl_ucb_qform`: an augmented
    Lagrangian for the constraint :math:`\rho - q^\top v \le 0`, inner problems by
    preconditioned ``optax.lbfgs``, warm start :math:`q = p`, chosen by the same tuning.
    Stopping rule: :math:`\|\nabla_y L\|_1 \le \mathrm{tol}/2` and
    :math:`\hat\lambda\,|\rho - q^\top v| \le \mathrm{tol}/2`. It returns
    :math:`\mathrm{KL}(p\|q)` at the last iterate. Meant for
    :math:`p^\top v < \rho < \max_x v_x` (at the ends :math:`D` is 0 or infinite).

    Args:
        p: probabilities, shape ``[S]``, positive and summing to one.
        v: values, shape ``[S]``.
        rho: the level, a scalar in :math:`(p^\top v, \max_x v_x)`.
        tol, penalty, inner_factor, precondition, memory_size, optimizer, max_steps,
            max_inner, return_info: keyword-only and static, as for :func:`kl_ucb_qform`.

    Returns:
        The scalar :math:`D(p, v, \rho)`, to about ``tol``, and its :class:`SolverInfo`
        if ``return_info``.

    Example:
        >>> import jax
        >>> import jax.numpy as jnp
        >>> from jaxmdp.indices.qform import kinf_qform
        >>> p, v = jnp.array([0.5, 0.3, 0.2]), jnp.array([0.0, 0.5, 1.0])
        >>> rates = jax.vmap(kinf_qform, in_axes=(None, None, 0))(p, v, jnp.array([0.5, 0.7]))
        >>> print([round(float(rate), 2) for rate in rates])  # D = 0.0664..., 0.3597...
        [0.07, 0.36]
    """

    def objective(z):
        y = to_y(z)
        return p_log_p - jnp.dot(p, y) + jax.nn.logsumexp(y)

    def constraint(z):
        return rho - jnp.dot(jax.nn.softmax(to_y(z)), v)

    return objective, constraint, objective


def _project_floored(y: jax.Array, floor: float) -> jax.Array:
    """Euclidean projection onto the floored simplex ``{q : q >= floor, sum(q) = 1}``."""
    floor_ = jnp.asarray(floor, y.dtype)
    scale = jnp.asarray(1.0 - y.shape[0] * floor, y.dtype)
    # Under x64, optax 0.2.8 returns float64 for float32 input (it divides by an integer
    # count), so cast back.
    return floor_ + optax.projections.projection_simplex(y - floor_, scale).astype(y.dtype)


def _kl(p: jax.Array, q: jax.Array) -> jax.Array:
    """``KL(p || q)`` for ``q > 0``; zero entries of ``p`` contribute nothing."""
    p_safe = jnp.where(p > 0, p, 1.0)
    return jnp.sum(jnp.where(p > 0, p * (jnp.log(p_safe) - jnp.log(q)), 0.0))


def _tilted_pgd(
    p: jax.Array,
    v: jax.Array,
    mu0: jax.Array,
    dual_update: Callable[[jax.Array, jax.Array], jax.Array],
    certificate: Callable[[jax.Array, jax.Array], tuple[jax.Array, jax.Array]],
    *,
    tol: float,
    optimizer: optax.GradientTransformation,
    precondition: bool,
    floor: float,
    max_steps: int,
    check_every: int,
) -> tuple[jax.Array, SolverInfo]:
    r"""Projected primal--dual gradient on :math:`q` for :math:`\mathrm{KL}(p\|q) - \mu q^\top v`.

    Both q-formulations have, for a multiplier :math:`\mu \ge 0`, the same partial
    Lagrangian in :math:`q` up to a positive factor and constants:
    :math:`\ell_\mu(q) = \mathrm{KL}(p\|q) - \mu\, q^\top v` (for :math:`C`,
    :math:`\mu = 1/\lambda` with :math:`\lambda` the multiplier of the KL constraint; for
    :math:`D`, :math:`\mu = \lambda`, that of :math:`q^\top v \ge \rho`). Each step is

    .. math::

        g = \nabla_q \ell_\mu(q) = -p/q - \mu v, \qquad
        d = \frac{q \odot (g - q^\top g)}{1 + \mu\, q^\top(v - \min v)}, \qquad
        q \leftarrow \Pi_\epsilon\big(q + \mathrm{optimizer}(d)\big), \qquad
        \mu \leftarrow \text{dual\_update}(q, \mu),

    where :math:`\Pi_\epsilon` is ``optax.projections.projection_simplex`` shifted to the
    floored simplex :math:`\{q \ge \epsilon, \sum q = 1\}`. With ``precondition`` the
    gradient is taken in the Fisher (Shahshahani) metric of the simplex,
    :math:`d = (q - p) - \mu\, q\odot(v - q^\top v)`, which sums to zero and makes the KL
    term equally well conditioned in every coordinate whatever the spread of :math:`p`;
    the divisor is a bound on the :math:`v` term's curvature in that metric, and with it
    a plain gradient step of size at most 1 keeps :math:`q \ge \text{step}\times p > 0`
    (so the projection only guards rounding and momentum). Without ``precondition``,
    :math:`d = g` (Euclidean projected gradient). Every ``check_every`` steps (and at the
    last) ``certificate(q, mu)`` returns the value of a *feasible* point and a bound on
    its distance from the optimum; the loop stops when that bound is at most ``tol``.

    Returns:
        The last certified value and a :class:`SolverInfo` (``residual`` is the bound).
    """
    dtype = p.dtype
    spread = v - jnp.min(v)

    def cond(carry):
        _, _, _, step, gap, _ = carry
        return (step < max_steps) & ~(gap <= tol)

    def body(carry):
        q, mu, opt_state, step, gap, value = carry
        grad = -p / q - mu * v
        if precondition:
            direction = q * (grad - jnp.dot(q, grad)) / (1.0 + mu * jnp.dot(q, spread))
        else:
            direction = grad
        updates, opt_state = optimizer.update(direction, opt_state, q)
        q = _project_floored(q + updates, floor)
        mu = dual_update(q, mu)
        step = step + 1
        check = (step % check_every == 0) | (step >= max_steps)
        value, gap = lax.cond(check, certificate, lambda *_: (value, gap), q, mu)
        return q, mu, opt_state, step, gap, value

    q0 = _project_floored(p, floor)
    inf = jnp.asarray(jnp.inf, dtype)
    nan = jnp.asarray(jnp.nan, dtype)
    carry = (q0, mu0, optimizer.init(q0), jnp.zeros((), jnp.int32), inf, nan)
    _, _, _, step, gap, value = lax.while_loop(cond, body, carry)
    return value, SolverInfo(step, gap, gap <= tol)


def _check_pgd_config(num_states: int, floor: float, check_every: int) -> None:
    if not 0 < floor * num_states < 1:
        raise ValueError(f"floor must be in (0, 1/S) = (0, {1 / num_states:g}), got {floor!r}")
    _check_every(check_every)


def _check_every(check_every: int) -> None:
    if int(check_every) != check_every or check_every < 1:
        raise ValueError(f"check_every must be a positive integer, got {check_every!r}")


_PGD_STATIC = (
    "tol", "precondition", "optimizer", "floor", "max_steps", "check_every", "return_info",
)


def _pgd_baseline(problem):
    """Makes a projected-gradient baseline out of its problem.

    ``problem(p, v, level)`` returns ``(mu0, dual_update, certificate, finish)``: the
    first three go to :func:`_tilted_pgd`, and ``finish(value, info)`` puts the paper's
    values of the degenerate cases in place. The baseline checks its arguments and
    returns the value (and a :class:`SolverInfo` with ``return_info``).
    """

    def solve(p: ArrayLike, v: ArrayLike, level: ArrayLike, /, *, tol: float = 1e-4,
              precondition: bool = True, optimizer: optax.GradientTransformation | None = None,
              floor: float = 1e-12, max_steps: int = 10_000, check_every: int = 5,
              return_info: bool = False):
        p, v, level = _checked(problem.__name__, p, v, level, tol, max_steps)
        _check_pgd_config(p.shape[0], floor, check_every)
        mu0, dual_update, certificate, finish = problem(p, v, level)
        if optimizer is None:
            optimizer = optax.sgd(1.0, momentum=0.5, nesterov=True)
        value, info = finish(*_tilted_pgd(
            p, v, mu0, dual_update, certificate, tol=tol, optimizer=optimizer,
            precondition=precondition, floor=floor, max_steps=max_steps,
            check_every=check_every,
        ))
        return (value, info) if return_info else value

    return jax.jit(_named_level(solve, problem), static_argnames=_PGD_STATIC)


@_pgd_baseline
def kl_ucb_pgd(p: jax.Array, v: jax.Array, delta: jax.Array):
    r"""The MDP-UCB index by projected gradient on its q-formulation (a baseline).

    Solves :math:`C(p, v, \delta) = \sup_{q \in \Theta}\{q^\top v : \mathrm{KL}(p\|q)
    \le \delta\}` (Cowan, Katehakis & Pirutinsky 2019, section 4) on :math:`q` itself:
    projected gradient steps (an optax optimiser, then
    ``optax.projections.projection_simplex`` onto :math:`\{q \ge \epsilon, \sum q = 1\}`,
    :math:`\epsilon` = ``floor``) on the Lagrangian
    :math:`-q^\top v + \lambda(\mathrm{KL}(p\|q) - \delta)`, written with
    :math:`\mu = 1/\lambda` as :math:`\mathrm{KL}(p\|q) - \mu q^\top v` (see
    :func:`_tilted_pgd`), from :math:`q = p` and :math:`\mu = 1/(\max v - \min v)`,
    interleaved with a multiplicative dual-ascent step on the multiplier after every
    primal step,

    .. math:: \mu \leftarrow \mu \cdot \mathrm{clip}\big(\delta/\mathrm{KL}(p\|q),\
        1/4,\ 4\big)^{1/2},

    that is, dual ascent on :math:`\ln\mu` with the step set by the scale of the problem
    (:math:`\mathrm{KL}(p\|q_\mu) \approx \mu^2 \mathrm{Var}_p(v)/2` for small
    :math:`\mu`), clipped so one step changes :math:`\mu` by at most 2x. Its fixed points
    are the KKT points; the default optimiser is ``optax.sgd(1.0, momentum=0.5,
    nesterov=True)`` in the Fisher metric (see the module docstring).

    Stopping rule, a duality-gap certificate that never looks at the exact value: with
    :math:`\lambda = 1/\mu`, convexity of the Lagrangian in :math:`q` (its linearisation at
    :math:`q` minimised over the *whole* simplex, a Frank--Wolfe bound) and weak duality
    give the upper bound

    .. math:: C \le U = \max_x\big(v_x + \lambda p_x/q_x\big) - \lambda
        - \lambda(\mathrm{KL}(p\|q) - \delta),

    and mixing :math:`q` with :math:`p` (:math:`\mathrm{KL}` is convex in :math:`q` and
    zero at :math:`p`), :math:`q_t = (1 - t)q + tp` with
    :math:`t = \max(0, 1 - \delta/\mathrm{KL}(p\|q))`, is feasible; its value
    :math:`L = q_t^\top v \le C` is returned, and the loop stops when :math:`U - L \le`
    ``tol``, so a converged result is within ``tol`` below :math:`C` (up to rounding).
    Both bounds hold on the whole simplex, so the floor costs no accuracy unless
    :math:`q^*_x < \epsilon` for some :math:`x` (then that coordinate is held at
    :math:`\epsilon`, moving the value by at most :math:`S\epsilon(\max v - \min v)`,
    :math:`10^{-7}` at :math:`S = 10^5`); it keeps :math:`\mathrm{KL}(p\|q) \le
    \ln(1/\epsilon) \approx 27.6` finite. Here :math:`q^*_x \ge p_x \lambda^*/(\eta -
    \min v) > 0` for :math:`p_x > 0`.

    Args:
        p: probabilities, shape ``[S]``, positive and summing to one.
        v: values, shape ``[S]``.
        delta: KL radius, a scalar; :math:`\delta \le 0` and constant ``v`` give the
            paper's Theorem 1 values (:math:`-\infty`, :math:`p^\top v`).
        tol: the duality-gap bound to stop at (static).
        precondition: step in the Fisher metric (static); ``False`` gives Euclidean
            projected gradient (choose an ``optimizer`` to match).
        optimizer: an optax ``GradientTransformation`` (static); default Nesterov SGD.
        floor: the simplex floor :math:`\epsilon`, in :math:`(0, 1/S)` (static).
        max_steps: cap on projected-gradient steps (static).
        check_every: steps between evaluations of the certificate (static).
        return_info: also return a :class:`SolverInfo` (static).

    Returns:
        The value of a feasible :math:`q`, within ``tol`` below :math:`C(p, v, \delta)`
        when converged, a scalar; with ``return_info`` a pair ``(value, SolverInfo)``.

    Example:
        >>> import jax.numpy as jnp
        >>> import jaxmdp
        >>> from jaxmdp.indices.qform import kl_ucb_pgd
        >>> p, v = jnp.array([0.5, 0.3, 0.2]), jnp.array([0.0, 0.5, 1.0])
        >>> print(f"{kl_ucb_pgd(p, v, 0.1):.3f} vs exact {jaxmdp.kl_ucb(p, v, 0.1):.3f}")
        0.535 vs exact 0.535
    """
    mean_p = jnp.dot(p, v)
    value_range = jnp.max(v) - jnp.min(v)
    degenerate = (delta <= 0) | (value_range <= 0)
    radius = jnp.where(degenerate, 1.0, delta)  # a safe stand-in inside the loop
    mu0 = 1.0 / jnp.where(value_range > 0, value_range, 1.0)

    def dual_update(q, mu):
        ratio = radius / _kl(p, q)  # +inf at q = p: clipped to 4
        return mu * jnp.sqrt(jnp.clip(ratio, 0.25, 4.0))

    def certificate(q, mu):
        lam = 1.0 / mu
        kl = _kl(p, q)
        mean_q = jnp.dot(q, v)
        upper = jnp.max(v + lam * p / q) - lam - lam * (kl - radius)
        t = jnp.where(kl > radius, 1.0 - radius / kl, 0.0)
        lower = mean_q - t * (mean_q - mean_p)
        return lower, upper - lower

    def finish(value, info):
        value = jnp.where(delta < 0, -jnp.inf, jnp.where(degenerate, mean_p, value))
        return value, info._replace(converged=info.converged | degenerate)

    return mu0, dual_update, certificate, finish


@_pgd_baseline
def kinf_pgd(p: jax.Array, v: jax.Array, rho: jax.Array):
    r"""The MDP-DMED rate by projected gradient on its q-formulation (a baseline).

    Solves :math:`D(p, v, \rho) = \inf_{q \in \Theta}\{\mathrm{KL}(p\|q) : q^\top v \ge
    \rho\}` (Cowan, Katehakis & Pirutinsky 2019, section 4) on :math:`q` itself by the
    method of :func:`kl_ucb_pgd`: projected gradient steps on the Lagrangian
    :math:`\mathrm{KL}(p\|q) - \mu\, q^\top v` (:math:`\mu = \lambda`, the multiplier of
    :math:`q^\top v \ge \rho`), from :math:`q = p`, :math:`\mu = 1/(\max v - \min v)`,
    each followed by the multiplicative dual-ascent step

    .. math:: \mu \leftarrow \mu \cdot \mathrm{clip}\Big(\frac{\rho - p^\top v}
        {q^\top v - p^\top v},\ 1/4,\ 4\Big)

    (dual ascent on :math:`\ln\mu`; :math:`q_\mu^\top v - p^\top v \approx
    \mu\,\mathrm{Var}_p(v)` for small :math:`\mu`; the ratio counts as 4 while
    :math:`q^\top v \le p^\top v`).

    Stopping rule, a duality-gap certificate: the Frank--Wolfe bound on the Lagrangian
    over the whole simplex and weak duality give

    .. math:: D \ge L = \max\Big(0,\ \mathrm{KL}(p\|q) + \lambda\rho + 1
        - \max_x\big(p_x/q_x + \lambda v_x\big)\Big),

    and :math:`q_t = (1 - t)q + t r` is feasible, where :math:`r = (1 - s)p + s e_{x^*}`
    (:math:`x^*` an argmax of :math:`v`, :math:`s` such that :math:`r^\top v = (\rho +
    \max v)/2`) and :math:`t = \max(0, (\rho - q^\top v)/(r^\top v - q^\top v))`; its
    :math:`U = \mathrm{KL}(p\|q_t) \ge D` is returned, and the loop stops when
    :math:`U - L \le` ``tol``, so a converged result is within ``tol`` above :math:`D`
    (up to rounding). The floor costs no accuracy unless :math:`q^*_x < \epsilon`
    (:math:`q^*_x = p_x/(1 + \lambda(\rho - v_x)) \ge p_x/(1 + \lambda(\rho - \min v))`).
    Meant for :math:`p^\top v < \rho < \max v`; outside it returns the paper's Theorem 3
    values (0, :math:`+\infty`).

    Args:
        p: probabilities, shape ``[S]``, positive and summing to one.
        v: values, shape ``[S]``.
        rho: the level, a scalar.
        tol, precondition, optimizer, floor, max_steps, check_every, return_info:
            keyword-only and static, as for :func:`kl_ucb_pgd`.

    Returns:
        :math:`\mathrm{KL}(p\|q)` of a feasible :math:`q`, within ``tol`` above
        :math:`D(p, v, \rho)` when converged, a scalar; with ``return_info`` a pair
        ``(value, SolverInfo)``.

    Example:
        >>> import jax.numpy as jnp
        >>> from jaxmdp.indices.qform import kinf_pgd
        >>> p, v = jnp.array([0.5, 0.3, 0.2]), jnp.array([0.0, 0.5, 1.0])
        >>> value, info = kinf_pgd(p, v, 0.5, return_info=True)
        >>> print(f"{value:.3f}", bool(info.converged))
        0.066 True
    """
    dtype = p.dtype
    mean_p = jnp.dot(p, v)
    v_max = jnp.max(v)
    value_range = v_max - jnp.min(v)
    inside = (rho > mean_p) & (rho < v_max)
    level = jnp.where(inside, rho, 0.5 * (mean_p + v_max))  # a safe stand-in
    mu0 = 1.0 / jnp.where(value_range > 0, value_range, 1.0)
    # A strictly feasible reference point with finite KL, for restoring feasibility.
    s = (0.5 * (level + v_max) - mean_p) / jnp.where(v_max > mean_p, v_max - mean_p, 1.0)
    reference = (1.0 - s) * p + s * jax.nn.one_hot(jnp.argmax(v), p.shape[0], dtype=dtype)
    reference_mean = jnp.dot(reference, v)

    def dual_update(q, mu):
        gain = jnp.dot(q, v) - mean_p
        ratio = jnp.where(gain > 0, (level - mean_p) / jnp.where(gain > 0, gain, 1.0), 4.0)
        return mu * jnp.clip(ratio, 0.25, 4.0)

    def certificate(q, lam):
        mean_q = jnp.dot(q, v)
        lower = _kl(p, q) + lam * level + 1.0 - jnp.max(p / q + lam * v)
        t = jnp.where(mean_q < level, (level - mean_q) / (reference_mean - mean_q), 0.0)
        upper = _kl(p, (1.0 - t) * q + t * reference)
        return upper, upper - jnp.maximum(lower, 0.0)

    def finish(value, info):
        value = jnp.where(inside, value, jnp.where(rho <= mean_p, 0.0, jnp.inf))
        return value, info._replace(converged=info.converged | ~inside)

    return mu0, dual_update, certificate, finish


def _theorem2_system(p, v, delta, mu, lam):
    """The residual ``(F_1, F_2)`` of the paper's Theorem 2 and its Jacobian in
    ``(mu, lam)`` (one pass over the states)."""
    t = lam + v - mu  # negative on the domain
    inv_t = 1.0 / t
    s1 = jnp.dot(p, inv_t)
    s2 = jnp.dot(p, inv_t * inv_t)
    f1 = jnp.dot(p, jnp.log(t / lam)) - delta
    f2 = lam * s1 - 1.0
    jac = jnp.array([[-s1, s1 - 1.0 / lam], [lam * s2, s1 - lam * s2]])
    return jnp.array([f1, f2]), jac


def _newton_2d_step(merit, f, jac, mu, lam, max_backtracks: int):
    """One Newton step on ``F(mu, lam) = 0``, halved until ``merit`` (``|F|^2`` inside the
    domain, ``+inf`` outside) decreases by Armijo's rule (factor ``1e-4``), at most
    ``max_backtracks`` times. Returns the new point, the full step's size, whether a point
    in the domain was found, and the merit before the step."""
    d_mu, d_lam = -jnp.linalg.solve(jac, f)
    m0 = jnp.sum(f * f)

    def bt_cond(bt):
        alpha, k = bt
        m = merit(mu + alpha * d_mu, lam + alpha * d_lam)
        return ~(m <= (1.0 - 1e-4 * alpha) * m0) & (k < max_backtracks)

    def bt_body(bt):
        alpha, k = bt
        return 0.5 * alpha, k + 1

    alpha, k = lax.while_loop(bt_cond, bt_body, (jnp.ones((), mu.dtype), 0))
    accepted = merit(mu + alpha * d_mu, lam + alpha * d_lam) < jnp.inf
    alpha = jnp.where(accepted, alpha, 0.0)
    mu, lam = mu + alpha * d_mu, lam + alpha * d_lam
    size = jnp.maximum(jnp.abs(d_mu), jnp.abs(d_lam) / jnp.maximum(1.0, jnp.abs(lam)))
    return mu, lam, size, accepted, m0


@functools.partial(jax.jit, static_argnames=("tol", "max_steps", "max_backtracks", "return_info"))
def kl_ucb_2d(p: ArrayLike, v: ArrayLike, delta: ArrayLike, *, tol: float = 1e-4,
              max_steps: int = 100, max_backtracks: int = 40, return_info: bool = False):
    r"""The MDP-UCB index by the paper's two-unknown system (Theorem 2), 2-D Newton.

    Cowan, Katehakis & Pirutinsky (2019), Theorem 2: for :math:`\delta > 0` and
    non-constant :math:`v`, :math:`C(p, v, \delta) = \mu_q^*`, where
    :math:`(\mu, \lambda) = (\mu_q^*, \lambda)` solves

    .. math::

        F_1 = \sum_x p_x \ln\Big(1 + \frac{v_x - \mu}{\lambda}\Big) - \delta = 0, \qquad
        F_2 = \sum_x p_x \frac{\lambda}{\lambda + v_x - \mu} - 1 = 0,

    with :math:`p^\top v < \mu < V = \max_x v_x` and :math:`\lambda < \mu - V`. This solves
    the system by Newton's method in :math:`(\mu, \lambda)` with the analytic
    :math:`2\times 2` Jacobian (one pass over the states per iteration), safeguarded by
    backtracking: the step is halved until the new point lies in the domain above and
    the merit :math:`\|F\|_2^2` decreases (Armijo, factor :math:`10^{-4}`). It starts at
    :math:`\mu_0 = (p^\top v + V)/2`, :math:`\lambda_0 = \mu_0 - V - (V - p^\top v)`, and
    stops once the Newton step is small, :math:`|\Delta\mu| \le` ``tol`` and
    :math:`|\Delta\lambda| \le` ``tol`` :math:`\max(1, |\lambda|)`, after taking it (near
    the root convergence is quadratic, so the error is then far below ``tol``), or when
    no step decreases the merit, or after ``max_steps`` iterations. On the timing study's
    problems it takes about 10 iterations; on extremely skewed :math:`p` (entries below
    :math:`10^{-20}`) with large :math:`\delta` it can slow to linear convergence.
    The degenerate cases of the paper's Theorem 1 (:math:`\delta \le 0`, constant
    :math:`v`) return :math:`-\infty` and :math:`p^\top v`.

    Args:
        p: probabilities, shape ``[S]``, summing to one.
        v: values, shape ``[S]``.
        delta: KL radius, a scalar.
        tol: step-size tolerance (static).
        max_steps: cap on Newton iterations (static).
        max_backtracks: cap on step halvings per iteration (static).
        return_info: also return a :class:`SolverInfo` (static).

    Returns:
        The scalar :math:`C(p, v, \delta)`, or ``(value, SolverInfo)`` with ``return_info``.

    Example:
        >>> import jax.numpy as jnp
        >>> from jaxmdp.indices.qform import kl_ucb_2d
        >>> p, v = jnp.array([0.5, 0.3, 0.2]), jnp.array([0.0, 0.5, 1.0])
        >>> print([round(float(kl_ucb_2d(p, v, d, tol=1e-12)), 6) for d in (0.0, 0.1, 1.0)])
        [0.35, 0.535241, 0.876181]
    """
    p, v, delta = _checked("kl_ucb_2d", p, v, delta, tol, max_steps)
    dtype = p.dtype
    mean_p = jnp.dot(p, v)
    v_max = jnp.max(v)
    spread = v_max - mean_p

    def merit(mu, lam):
        f, _ = _theorem2_system(p, v, delta, mu, lam)
        in_domain = (mu > mean_p) & (mu < v_max) & (lam < mu - v_max)
        return jnp.where(in_domain, jnp.sum(f * f), jnp.inf)

    def cond(carry):
        mu, lam, step, size, done = carry
        return (step < max_steps) & ~done

    def body(carry):
        mu, lam, step, _, _ = carry
        f, jac = _theorem2_system(p, v, delta, mu, lam)
        mu, lam, size, accepted, m0 = _newton_2d_step(merit, f, jac, mu, lam, max_backtracks)
        done = (size <= tol) | (m0 == 0) | ~accepted
        return mu, lam, step + 1, size, done

    mu0 = 0.5 * (mean_p + v_max)
    lam0 = mu0 - v_max - spread
    carry = (mu0, lam0, jnp.zeros((), jnp.int32), jnp.asarray(jnp.inf, dtype), jnp.zeros((), bool))
    mu, lam, step, size, done = lax.while_loop(cond, body, carry)
    value = jnp.where(delta < 0, -jnp.inf, jnp.where((delta == 0) | (spread <= 0), mean_p, mu))
    info = SolverInfo(step, size, done & (size <= tol))
    return (value, info) if return_info else value


class _LPSteps(NamedTuple):
    """Diagonally preconditioned PDHG step sizes: each column of ``K`` has three unit
    entries; rows 1 and 2 have ``2S``, and each of the ``S`` rows of ``q+ - q- <= p`` two."""

    tau: jax.Array
    sigma_sum: jax.Array
    sigma_pair: jax.Array


def _pdhg_step(p, v, d, steps: _LPSteps, state):
    """One PDHG iteration on the OLP linear program (primal, then extrapolated dual)."""
    plus, minus, y1, y2, y3 = state
    # Reduced costs c + K^T y of min v.q+ - v.q- under the three constraint blocks.
    new_plus = jnp.maximum(0.0, plus - steps.tau * (v + y1 - y2 + y3))
    new_minus = jnp.maximum(0.0, minus - steps.tau * (-v + y1 + y2 - y3))
    bar_plus, bar_minus = 2.0 * new_plus - plus, 2.0 * new_minus - minus
    y1 = jnp.maximum(0.0, y1 + steps.sigma_sum * (jnp.sum(bar_plus + bar_minus) - d))
    y2 = y2 + steps.sigma_sum * jnp.sum(bar_minus - bar_plus)
    y3 = jnp.maximum(0.0, y3 + steps.sigma_pair * (bar_plus - bar_minus - p))
    return new_plus, new_minus, y1, y2, y3


def _lp_certificate(p, v, d, mean_p, value_range, state):
    """The primal value ``P`` and the bound ``|P - U| + (max v - min v) e + d r`` on its
    distance from ``B`` (see :func:`l1_ucb_lp`)."""
    plus, minus, y1, y2, y3 = state
    primal = mean_p + jnp.dot(v, minus - plus)
    dual = mean_p + d * y1 + jnp.dot(p, y3)
    violation = (
        jnp.maximum(0.0, jnp.sum(plus + minus) - d)
        + jnp.abs(jnp.sum(minus - plus))
        + jnp.sum(jnp.maximum(0.0, plus - minus - p))
    )
    reduced_plus = v + y1 - y2 + y3
    reduced_minus = -v + y1 + y2 - y3
    dual_violation = jnp.maximum(
        jnp.max(jnp.maximum(0.0, -reduced_plus)), jnp.max(jnp.maximum(0.0, -reduced_minus))
    )
    bound = jnp.abs(primal - dual) + value_range * violation + d * dual_violation
    return primal, bound


@functools.partial(
    jax.jit, static_argnames=("tol", "step_ratio", "check_every", "max_steps", "return_info")
)
def l1_ucb_lp(p: ArrayLike, v: ArrayLike, d: ArrayLike, *, tol: float = 1e-4,
              step_ratio: float = 3.0, check_every: int = 16, max_steps: int = 200_000,
              return_info: bool = False):
    r"""The OLP index by the paper's linear program, solved by PDHG (a baseline).

    The paper (Cowan, Katehakis & Pirutinsky 2019, section 4, "OLP") writes
    :math:`B(p, v, d) = \sup\{q^\top v : \|q - p\|_1 \le d\}` as the linear program in
    :math:`(q^+, q^-) \in \mathbb{R}^{2S}_{\ge 0}`

    .. math::

        \max\ v^\top(q^- - q^+ + p) \ \text{ s.t. }\ \textstyle\sum_x (q^+_x + q^-_x) \le d,
        \ \sum_x (q^-_x - q^+_x) = 0,\ q^+_x - q^-_x \le p_x,

    and this solves it by the primal-dual hybrid gradient method (Chambolle & Pock 2011)
    with their diagonal preconditioning (step sizes :math:`\tau_j = 1/\sum_i |K_{ij}|`,
    :math:`\sigma_i = 1/\sum_j |K_{ij}|`, scaled by ``1/step_ratio`` and ``step_ratio``),
    the generic first-order LP method (as in PDLP), from :math:`q^\pm = 0` (that is,
    :math:`q = p`) and zero duals, in one ``lax.while_loop`` that checks every
    ``check_every`` iterations. Stopping rule, all in units of the value: with
    :math:`P` the primal objective, :math:`U = p^\top v + d\,y_1 + p^\top y_3` the dual one,
    :math:`e` the total primal constraint violation (in probability mass) and :math:`r`
    the largest dual constraint violation,

    .. math:: |P - U| + (\max v - \min v)\, e + d\, r \le \mathrm{tol},

    which bounds :math:`|P - B|` (weak duality, with the violations priced by their
    worst effect). It returns :math:`P`.

    Args:
        p: probabilities, shape ``[S]``, summing to one.
        v: values, shape ``[S]``.
        d: L1 radius, a scalar in :math:`(0, 2)`.
        tol: target absolute accuracy of the value (static).
        step_ratio: primal/dual step balance :math:`\omega` (static).
        check_every: iterations between evaluations of the stopping rule (static).
        max_steps: cap on PDHG iterations (static).
        return_info: also return a :class:`SolverInfo` (static).

    Returns:
        :math:`B(p, v, d)` to within ``tol`` (a scalar), and its :class:`SolverInfo` if
        ``return_info``.

    Example:
        >>> import jax.numpy as jnp
        >>> from jaxmdp.indices.qform import l1_ucb_lp
        >>> p, v = jnp.array([0.5, 0.3, 0.2]), jnp.array([0.0, 1.0, 2.0])
        >>> print(f"{l1_ucb_lp(p, v, 0.4):.3f}")  # B = 1.1: mass 0.2 moves to the top state
        1.100
    """
    p, v, d = _checked("l1_ucb_lp", p, v, d, tol, max_steps)
    _check_every(check_every)
    dtype = p.dtype
    steps = _LPSteps(jnp.asarray(1.0 / (3.0 * step_ratio), dtype),
                     jnp.asarray(step_ratio / (2.0 * p.shape[0]), dtype),
                     jnp.asarray(step_ratio / 2.0, dtype))
    pdhg_step = functools.partial(_pdhg_step, p, v, d, steps)
    certificate = functools.partial(_lp_certificate, p, v, d, jnp.dot(p, v),
                                    jnp.max(v) - jnp.min(v))

    def cond(carry):
        state, step, bound = carry
        return (step < max_steps) & (bound > tol)

    def body(carry):
        state, step, _ = carry
        state = lax.fori_loop(0, check_every, lambda _, s: pdhg_step(s), state)
        _, bound = certificate(state)
        return state, step + check_every, bound

    zeros = jnp.zeros_like(p)
    scalar = jnp.zeros((), dtype)
    state = (zeros, zeros, scalar, scalar, zeros)
    carry = (state, jnp.zeros((), jnp.int32), jnp.asarray(jnp.inf, dtype))
    state, step, bound = lax.while_loop(cond, body, carry)
    value, _ = certificate(state)
    info = SolverInfo(step, bound, bound <= tol)
    return (value, info) if return_info else value
