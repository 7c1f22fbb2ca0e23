r"""Extended value iteration over L1 (UCRL2), KL (KL-UCRL), box (UCRL2B) and other sets.

For a confidence set that is a product over the pairs :math:`(s, a)` of a ball around the
estimate :math:`\hat p(s, a)` and an optimistic reward :math:`\tilde r(s, a)`, extended
value iteration (Jaksch, Ortner & Auer 2010, section 3.1.2) is value iteration on the
*extended* MDP whose actions at :math:`s` are the pairs :math:`(a, q)` with
:math:`q \in \mathcal{B}(s, a)`:

.. math::

    u_{i+1}(s) = \max_{a \in A(s)} \Big[ \tilde r(s, a)
                 + \max_{q \in \mathcal{B}(s, a)} q \cdot u_i \Big],

stopped at the first :math:`i` with :math:`\mathrm{sp}(u_{i+1} - u_i) < \epsilon`. The
greedy policy for :math:`u_i` is then :math:`\epsilon`-optimal in the extended MDP, and
its gain there lies in :math:`[\min(u_{i+1} - u_i), \max(u_{i+1} - u_i)]` (Jaksch et al.
2010, Theorem 7; Puterman 1994, Theorem 8.5.5).

Four kinds of sets are supported, each solved exactly:

* ``"l1"`` (UCRL2): :math:`\{q : \|q - \hat p\|_1 \le d\}`. The maximiser (Jaksch et al.
  2010, Figure 2) moves :math:`\min(d/2, 1 - \hat p(s_1))` of mass onto a state
  :math:`s_1` of largest :math:`u`, taken from the states of lowest :math:`u` in increasing
  order. The order of the states depends on :math:`u` only, so it is sorted once per
  sweep and shared by all :math:`S A` pairs: one ``[S]`` sort, then one pass over the
  states in that order that updates the removed mass and the value of every pair (a
  ``lax.scan`` over ``[S, A]`` slices on CPU; a gather and a cumulative sum over
  ``[S, A, S]`` on accelerators), :math:`O(S \log S + S^2 A)` per sweep. The same value
  as :func:`jaxmdp.l1_ucb`.
* ``"kl"`` (KL-UCRL, Filippi, Cappé & Garivier 2010):
  :math:`\{q : \mathrm{KL}(\hat p \| q) \le \delta\}`, whose maximum is
  :func:`jaxmdp.kl_ucb` and whose maximiser is :func:`jaxmdp.kl_ucb_solve`'s ``q``
  (it may put mass on a state where :math:`\hat p` is zero, section 3.2 of Filippi et
  al.). :math:`S A` one-dimensional root finds of size :math:`S` per sweep.
* ``"kl_published"``: KL-UCRL's maximiser as the StatisticalRL code computes it, with
  its ``search_up`` bug (``nu = max u + 10^7``, so ``q`` is nearly ``p_hat``), for
  reproducing that code's numbers.
* ``"box"`` (UCRL2B): :math:`\{q : l \le q \le h, \sum q = 1\}` with per-next-state
  bounds (:class:`BoxBounds` as ``radius``); :func:`box_maximise` gives every state its
  lower bound and the remaining mass to the states of highest :math:`u`, up to their
  upper bounds (the linear programme's solution), one shared sort per sweep.
* any other set, passed as ``ball`` by value: an :class:`InnerMaximisation` (UCRL3's
  box restricted to a near-optimistic support recomputed at every sweep,
  :data:`jaxmdp.planning.UCRL3_BALL`, is one).

The iterates are shifted by their minimum after each sweep (relative value iteration).
Every :math:`q` in a ball sums to one, so the inner maxima commute with the shift and the
differences :math:`u_{i+1} - u_i`, the stopping rule, the greedy policies and the gain
estimate are those of the unshifted iteration; the shift only keeps the values bounded
(in float32 the unshifted values grow like :math:`i \cdot` gain and lose the digits the
stopping rule looks at).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from jaxmdp._order import platform, stable_argsort
from jaxmdp._registry import Registry
from jaxmdp.indices.kl import kl_ucb_solve
from jaxmdp.indices.l1 import l1_ball_maximiser
from jaxmdp.planning._core import HIGHEST, ModelChange, Planner, Solution, Status
from jaxmdp.planning._evi_kernel import KERNELS, l1_evi_loop

__all__ = ["BALLS", "BoxBounds", "ConfidenceSet", "InnerMaximisation",
           "box_maximise", "box_maximise_sorted", "evi", "evi_planner", "register_ball"]

DEFAULT_MAX_STEPS = 10_000

class ConfidenceSet(NamedTuple):
    """The model :func:`evi_planner` solves: a confidence set around an estimate.

    Attributes:
        p_hat: estimated transition laws, ``[S, A, S]``.
        rewards: optimistic rewards, ``[S, A]``.
        radius: the ball radius of every pair, ``[S, A]``.
        mask: admissible actions, bool ``[S, A]``.
        epsilon: the span stopping threshold, positive scalar.
        tie_noise: ``None`` (ties to the lowest action index) or uniform draws ``U_a`` on
            ``[0, 1)``, ``[A]``, fixed for the replication: a planner that breaks ties by
            a noise (:func:`~jaxmdp.planning.scopt_planner`) adds
            :func:`~jaxmdp.planning.scopt_noise` of them to each action's value when it
            picks the maximiser. :func:`evi_planner` does not read it.
    """

    p_hat: jax.Array
    rewards: jax.Array
    radius: jax.Array
    mask: jax.Array
    epsilon: jax.Array
    tie_noise: jax.Array | None = None


# -----------------------------------------------------------------------------------------
# Inner maxima: max over the ball of q . u for every pair, with a shared u.


def _kl_inner(p_hat: jax.Array, u: jax.Array, radius: jax.Array, with_q: bool):
    """``max {q . u : KL(p_hat[s, a] || q) <= radius[s, a]}`` for all pairs at once."""
    sol = kl_ucb_solve(p_hat, u, radius)
    return sol.value, (sol.q if with_q else None)


def box_maximise(lower: jax.Array, upper: jax.Array, u: jax.Array, with_q: bool):
    r"""``max {q . u : lower <= q <= upper, sum q = 1}`` for all pairs at once.

    The exact solution of this linear programme: every state gets its lower bound, then
    the remaining mass :math:`1 - \sum_y \text{lower}(y)` goes to the states in
    decreasing order of ``u``, each up to its upper bound. The order depends on ``u``
    only, so it is sorted once and shared by every pair. If the upper bounds cannot hold
    the remaining mass (``sum upper < 1``), the rest is dropped (``q`` sums to less than
    one); if the lower bounds exceed it, ``q = lower``.

    Args:
        lower: lower bounds, ``[..., S]``, in ``[0, 1]``.
        upper: upper bounds, ``[..., S]``, ``upper >= lower``.
        u: the values, ``[S]``.
        with_q: also return the maximisers (static).

    Returns:
        ``(values [...], q [..., S] or None)``.
    """
    increasing, rank = stable_argsort(u)
    order = increasing[::-1]  # decreasing u; ties: the higher index first
    rest = 1.0 - jnp.sum(lower, axis=-1, keepdims=True)
    values, q_sorted = box_maximise_sorted(jnp.take(lower, order, axis=-1),
                                           jnp.take(upper, order, axis=-1), u[order], rest)
    if not with_q:
        return values, None
    return values, jnp.take(q_sorted, u.shape[-1] - 1 - rank, axis=-1)


def box_maximise_sorted(lower: jax.Array, upper: jax.Array, u: jax.Array, rest: jax.Array):
    """:func:`box_maximise` with the states already in decreasing order of ``u``.

    Args:
        lower: lower bounds, ``[..., S]``, in that order.
        upper: upper bounds, ``[..., S]``, in that order.
        u: the values in that order, ``[S]``.
        rest: the mass above the lower bounds, ``1 - sum(lower)``, ``[..., 1]``.

    Returns:
        ``(values [...], q [..., S])``, ``q`` in that order.
    """
    room = jnp.maximum(upper - lower, 0.0)
    before = jnp.cumsum(room, axis=-1) - room
    add = jnp.clip(rest - before, 0.0, room)
    q_sorted = lower + add
    return jnp.einsum("...y,y->...", q_sorted, u, precision=HIGHEST), q_sorted


class BoxBounds(NamedTuple):
    """The ``radius`` of ``ball="box"`` (UCRL2B): per-next-state bounds.

    Attributes:
        lower: lower bounds of ``q(s, a, y)``, ``[S, A, S]``.
        upper: upper bounds of ``q(s, a, y)``, ``[S, A, S]``.
    """

    lower: jax.Array
    upper: jax.Array


def _box_inner(data, u, bounds: BoxBounds, with_q: bool):
    del data
    return box_maximise(bounds.lower, bounds.upper, u, with_q)


def _kl_published_inner(p_hat, u, radius, with_q: bool):
    """KL-UCRL's maximiser as the StatisticalRL code computes it (``KLUCRL.py`` lines
    67-172, 183-186), with its ``search_up`` bug: ``nu = max_support u + 10^7``.

    ``p_hat`` ``[S, A, S]`` (zeros for an untried pair), ``radius`` ``[S, A]``. While
    every ``u`` is below ``1e-6`` the maximiser is ``p_hat`` itself. Otherwise, with the
    support ``p_hat > 1e-8``: if a maximiser of ``u`` (``max u > 0``) lies outside it and
    ``f(max u) < radius``, mass ``r = 1 - exp(f(max u) - radius)`` goes uniformly to those
    maximisers and ``nu = max u`` (``f(nu) = sum p log(nu - u) + log sum p / (nu - u)``
    over the support, ``-10^10`` when ``nu`` equals a support value or the support is
    empty); else ``r = 0`` and ``nu = max_support u + 10^7`` (line 128). The support gets
    ``(1 - r) w / sum w``, ``w = p_hat / (nu - u)`` (``p_hat 10^10`` within ``1e-5`` of
    ``nu``).
    """
    support = p_hat > 1e-8
    top_value = jnp.max(u)
    outside_top = (u == top_value) & ~support
    d = top_value - u
    on_top = jnp.any(support & (d == 0), axis=-1)
    empty = ~jnp.any(support, axis=-1)
    safe_d = jnp.where(support & (d > 0), d, 1.0)
    f_top = (jnp.sum(jnp.where(support, p_hat * jnp.log(safe_d), 0.0), axis=-1)
             + jnp.log(jnp.maximum(jnp.sum(jnp.where(support, p_hat / safe_d, 0.0), axis=-1),
                                   1e-300)))
    f_top = jnp.where(on_top | empty, -1e10, f_top)
    boundary = jnp.any(outside_top, axis=-1) & (top_value > 0) & (f_top < radius)
    r = jnp.where(boundary, 1.0 - jnp.exp(f_top - radius), 0.0)
    v_support = jnp.max(jnp.where(support, u, -jnp.inf), axis=-1)
    nu = jnp.where(boundary, top_value, v_support + 1e7)
    gap = nu[..., None] - u
    w = jnp.where(jnp.abs(gap) < 1e-5, p_hat * 1e10,
                  p_hat / jnp.where(jnp.abs(gap) < 1e-5, 1.0, gap))
    w = jnp.where(support, w, 0.0)
    total = jnp.sum(w, axis=-1, keepdims=True)
    q = (1.0 - r)[..., None] * w / jnp.where(total > 0, total, 1.0)
    count = jnp.maximum(jnp.sum(outside_top, axis=-1, keepdims=True), 1)
    q = q + jnp.where(outside_top & boundary[..., None], r[..., None] / count, 0.0)
    q = jnp.where(jnp.all(u < 1e-6), p_hat, q)
    values = jnp.einsum("...y,y->...", q, u, precision=HIGHEST)
    return values, (q if with_q else None)


class InnerMaximisation(NamedTuple):
    """One kind of confidence ball for :func:`evi`: its inner maximisation.

    Attributes:
        solve: ``solve(data, u, radius, with_q) -> (values [S, A], q [S, A, S] or None)``:
            ``max {q . u : q in the ball of (s, a)}`` for every pair at once, with a
            shared ``u``, and the maximisers when ``with_q`` (static) is true.
        layout: ``layout(p_hat) -> data``: ``p_hat`` in the layout ``solve`` reads.
        q_in_loop: whether ``solve`` returns its maximisers at no extra cost (they are
            then carried through the loop; otherwise recomputed once at the end).
        bounds: the ``radius`` type of a set given by per-next-state bounds (a pytree
            such as :class:`BoxBounds`), or ``None`` for a radius array ``[S, A]``.
    """

    solve: Callable
    layout: Callable
    q_in_loop: bool
    bounds: type | None = None


def l1_ball() -> InnerMaximisation:
    """The L1 ball: :func:`jaxmdp.l1_ball_maximiser` over every pair with the shared ``u``.

    On CPU by its ``"scan"`` method, on ``p_hat`` laid out states-first ``[S', S, A]``
    once, outside the iteration (each step of the scan then reads a contiguous ``[S, A]``
    slice); on accelerators by its ``"sort"`` method on ``p_hat`` as it is.
    """
    method, axis = ("scan", 0) if platform() == "cpu" else ("sort", -1)

    def solve(data: jax.Array, u: jax.Array, radius: jax.Array, with_q: bool):
        if not with_q:
            return l1_ball_maximiser(data, u, radius, method=method, axis=axis), None
        values, q = l1_ball_maximiser(data, u, radius, with_q=True, method=method, axis=axis)
        return values, jnp.moveaxis(q, axis, -1)

    return InnerMaximisation(solve, lambda p_hat: jnp.moveaxis(p_hat, -1, axis), False)


def kl_ball() -> InnerMaximisation:
    """The KL ball (KL-UCRL): :func:`jaxmdp.kl_ucb_solve` for every pair."""
    return InnerMaximisation(_kl_inner, lambda p_hat: p_hat, True)


def kl_published_ball() -> InnerMaximisation:
    """KL-UCRL's maximiser as the StatisticalRL code computes it (``search_up`` bug)."""
    return InnerMaximisation(_kl_published_inner, lambda p_hat: p_hat, True)


def box_ball() -> InnerMaximisation:
    """The box of per-next-state bounds (UCRL2B): :func:`box_maximise`."""
    return InnerMaximisation(_box_inner, lambda p_hat: None, False, BoxBounds)


#: The confidence balls :func:`evi` and :func:`evi_planner` know by name (their ``ball``
#: argument): name -> a function returning its :class:`InnerMaximisation` (called at each
#: trace, so it is built for the default backend). A live view of the one registry of
#: balls, filled in :mod:`jaxmdp.planning` (``"l1"``, ``"kl"``, ``"kl_published"``,
#: ``"box"``, ``"ucrl3"``, ``"ucrl3_key_sums"``) and by :func:`register_ball`; any ball can
#: also be passed by value, as an :class:`InnerMaximisation`.
BALLS: Registry[Callable[[], InnerMaximisation]] = Registry("ball")


def register_ball(name: str, factory: Callable[[], InnerMaximisation], *,
                  replace: bool = False) -> None:
    """Makes ``ball=name`` of :func:`evi` and :func:`evi_planner` mean ``factory()``.

    Args:
        name: the ball's name (case-insensitive).
        factory: returns the ball's :class:`InnerMaximisation` (called at each trace).
        replace: allow replacing a registered name.

    Raises:
        ValueError: for a name already registered (without ``replace``), or a factory
            that is not callable.
    """
    if not callable(factory):
        raise ValueError(f"factory must be callable, got {factory!r}")
    BALLS.register(name, factory, replace=replace)


def _known(ball) -> bool:
    return isinstance(ball, InnerMaximisation) or ball in BALLS


def _maximisation(ball: str | InnerMaximisation) -> InnerMaximisation:
    """The inner maximisation of ``ball``, a name of :data:`BALLS` or the value itself."""
    return BALLS[ball]() if isinstance(ball, str) else ball


# -----------------------------------------------------------------------------------------
# The iteration.


class _Carry(NamedTuple):
    u: jax.Array  # the iterate the next sweep starts from (shifted by its minimum)
    previous: jax.Array  # the iterate the last sweep started from
    policy: jax.Array  # greedy for `previous`
    q: jax.Array  # the maximisers at `previous` (carried for "kl" only, else a placeholder)
    gain_estimate: jax.Array
    span: jax.Array
    step: jax.Array
    converged: jax.Array
    history: jax.Array  # the iterates before `previous`, most recent first ([0, S] if unused)


def _bits(x: jax.Array) -> jax.Array:
    """The bit patterns of a float array (exact comparison, ``-0.0 != 0.0``)."""
    return lax.bitcast_convert_type(x, jnp.dtype(f"int{8 * x.dtype.itemsize}"))


def _final_q(inner, data, u, radius, mask, p_hat):
    """The maximisers at ``u`` (``p_hat`` on inadmissible pairs)."""
    return jnp.where(mask[..., None], inner(data, u, radius, True)[1], p_hat)


@partial(jax.jit, static_argnames=("ball", "cycle_memory", "kernel"))
def _evi_core(p_hat, r_tilde, radius, mask, u0, epsilon, max_steps, *, ball,
              cycle_memory: int = 0, kernel: str = "xla"):
    maximisation = _maximisation(ball)
    inner, q_in_loop = maximisation.solve, maximisation.q_in_loop
    data = maximisation.layout(p_hat)
    # A state without admissible actions keeps all of them (planning's convention).
    mask = mask | ~jnp.any(mask, axis=-1, keepdims=True)
    if maximisation.bounds is None:
        radius = jnp.maximum(radius, 0)  # traced negative radii (an eager call raises)
    if kernel == "pallas":  # the loop as one kernel (the L1 ball, no cycle detection)
        previous, policy, gain, span, steps, converged = l1_evi_loop(
            p_hat, r_tilde, radius, mask, u0, epsilon, max_steps)
        status = jnp.where(converged, Status.CONVERGED, Status.MAX_STEPS)
        return Solution(gain, previous, policy, steps, status.astype(jnp.int32),
                        _final_q(inner, data, previous, radius, mask, p_hat), span)

    def cond(carry: _Carry) -> jax.Array:
        return ~carry.converged & (carry.step < max_steps)

    def body(carry: _Carry) -> _Carry:
        values, q = inner(data, carry.u, radius, q_in_loop)
        q_values = jnp.where(mask, r_tilde + values, -jnp.inf)
        policy = jnp.argmax(q_values, axis=-1).astype(jnp.int32)  # lowest index among ties
        u_next = jnp.max(q_values, axis=-1)
        diff = u_next - carry.u
        high, low = jnp.max(diff), jnp.min(diff)
        span = high - low
        u_next = u_next - jnp.min(u_next)
        step = carry.step + 1
        history = carry.history
        if cycle_memory:
            # recent[i] is the iterate i + 1 sweeps before u_next. A sweep reads only its
            # starting iterate, so u_next == recent[i] bit for bit repeats the sweeps of
            # the last period p = i + 1 for ever: every carry p * m sweeps later equals
            # this one, and if this sweep did not converge, none of those does (their
            # spans are those of the period, which the loop ran through). The step
            # counter then jumps by the whole periods that fit before max_steps.
            recent = jnp.concatenate([carry.u[None], history[:-1]])
            repeats = jnp.all(_bits(recent) == _bits(u_next), axis=-1)
            period = jnp.argmax(repeats) + 1
            cycling = jnp.any(repeats) & ~(span < epsilon)
            skip = jnp.where(cycling, period * ((max_steps - step) // period), 0)
            step = step + skip.astype(step.dtype)
            history = recent
        return _Carry(
            u=u_next,
            previous=carry.u,
            policy=policy,
            q=q if q_in_loop else carry.q,
            gain_estimate=(high + low) / 2,
            span=span,
            step=step,
            converged=span < epsilon,
            history=history,
        )

    dtype = p_hat.dtype
    init = _Carry(
        u=u0,
        previous=u0,
        policy=jnp.zeros(u0.shape, jnp.int32),
        q=p_hat if q_in_loop else jnp.zeros((), dtype),
        gain_estimate=jnp.zeros((), dtype),
        span=jnp.full((), jnp.inf, dtype),
        step=jnp.zeros((), jnp.int32),
        converged=jnp.zeros((), bool),
        # Empty slots hold +inf everywhere, which no shifted iterate is (its minimum
        # entry is 0, or NaN where the iterate is infinite).
        history=jnp.full((cycle_memory,) + u0.shape, jnp.inf, dtype),
    )
    final = lax.while_loop(cond, body, init)
    q_opt = (jnp.where(mask[..., None], final.q, p_hat) if q_in_loop
             else _final_q(inner, data, final.previous, radius, mask, p_hat))
    status = jnp.where(final.converged, Status.CONVERGED, Status.MAX_STEPS)
    return Solution(final.gain_estimate, final.previous, final.policy, final.step,
                    status.astype(jnp.int32), q_opt, final.span)


# -----------------------------------------------------------------------------------------
# Public API.


def _as_radius(radius, dtype):
    """The radius array, or each leaf of a bounds pytree, in ``dtype`` (bool leaves stay
    bool)."""

    def cast(leaf):
        return jnp.asarray(leaf, bool if jnp.asarray(leaf).dtype == bool else dtype)

    return jax.tree_util.tree_map(cast, radius)


def _is_traced(x) -> bool:
    return isinstance(x, jax.core.Tracer)


def _check_arguments(p_hat, r_tilde, radius, mask, u0, ball, epsilon, max_steps) -> None:
    if not _known(ball):
        raise ValueError(f"ball must be one of {list(BALLS)} or an "
                         f"InnerMaximisation, got {ball!r}")
    bounds = _maximisation(ball).bounds
    if not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1:
        raise ValueError(f"max_steps must be a positive Python int, got {max_steps!r}")
    P_shape, R_shape = jnp.shape(p_hat), jnp.shape(r_tilde)
    if len(P_shape) != 3 or P_shape[0] != P_shape[2] or P_shape[0] == 0 or P_shape[1] == 0:
        raise ValueError(f"p_hat must have shape [S, A, S] with S, A >= 1, got shape {P_shape}")
    if R_shape != P_shape[:2]:
        raise ValueError(f"r_tilde must have shape [S, A] = {P_shape[:2]}, got shape {R_shape}")
    if bounds is not None:
        if not isinstance(radius, bounds):
            raise ValueError(f"radius must be a {bounds.__name__} for "
                             f"ball={ball!r}, got {type(radius).__name__}")
        for field in ("lower", "upper"):
            shape = jnp.shape(getattr(radius, field))
            if shape != P_shape:
                raise ValueError(f"radius.{field} must have shape [S, A, S] = {P_shape}, "
                                 f"got shape {shape}")
    elif jnp.shape(radius) != P_shape[:2]:
        raise ValueError(
            f"radius must have shape [S, A] = {P_shape[:2]}, got shape {jnp.shape(radius)}"
        )
    if mask is not None and jnp.shape(mask) != P_shape[:2]:
        raise ValueError(
            f"mask must have shape [S, A] = {P_shape[:2]}, got shape {jnp.shape(mask)}"
        )
    if u0 is not None and jnp.shape(u0) != P_shape[:1]:
        raise ValueError(f"u0 must have shape [S] = {P_shape[:1]}, got shape {jnp.shape(u0)}")
    if jnp.ndim(epsilon) != 0:
        raise ValueError(f"epsilon must be a scalar, got shape {jnp.shape(epsilon)}")
    if not _is_traced(epsilon) and not float(epsilon) > 0:
        raise ValueError(f"epsilon must be positive, got {float(epsilon)!r}")
    if bounds is None and not _is_traced(radius):
        bad = np.asarray(radius) < 0
        if np.any(bad):
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ValueError(
                f"radius must be non-negative, got radius{list(where)} = "
                f"{float(np.asarray(radius)[where])!r}"
            )


def evi(
    p_hat: ArrayLike,
    r_tilde: ArrayLike,
    radius: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    ball: str | InnerMaximisation = "l1",
    epsilon: ArrayLike,
    max_steps: int = DEFAULT_MAX_STEPS,
    u0: ArrayLike | None = None,
    cycle_memory: int = 0,
    kernel: str = "xla",
) -> Solution:
    r"""Extended value iteration over a product of L1 or KL balls (UCRL2, KL-UCRL).

    Iterates, from :math:`u_0` (default 0, as in UCRL2),

    .. math::

        u_{i+1}(s) = \max_{a \in A(s)} \Big[ \tilde r(s, a)
                     + \max_{q \in \mathcal{B}(s, a)} q \cdot u_i \Big]

    until :math:`\mathrm{sp}(u_{i+1} - u_i) < \epsilon` (Jaksch, Ortner & Auer 2010,
    section 3.1.2), where :math:`\mathcal{B}(s, a)` is
    :math:`\{q : \|q - \hat p(s, a)\|_1 \le d(s, a)\}` for ``ball="l1"`` or
    :math:`\{q : \mathrm{KL}(\hat p(s, a) \| q) \le \delta(s, a)\}` for ``ball="kl"``
    (Filippi, Cappé & Garivier 2010), with :math:`q` on the simplex. Both inner maxima
    are exact: the L1 one by Jaksch et al.'s Figure 2 with one
    sort of :math:`u_i` per sweep shared by all pairs (:math:`O(S^2 A)` per sweep), the KL
    one by :func:`jaxmdp.kl_ucb_solve` (:math:`S A` solves of size :math:`S` per sweep).

    On return, ``policy`` is greedy for ``u`` (:math:`u_i`, the start of the last sweep)
    and ``q_opt`` holds the maximisers at ``u``; by Jaksch et al.'s Theorem 7 (Puterman
    1994, Theorem 8.5.5) the gain of ``policy`` in the optimistic MDP with rows
    ``q_opt[s, policy[s]]``, and the optimal gain of the extended MDP, both lie in
    :math:`[\min, \max]` of :math:`u_{i+1} - u_i`, so within ``span / 2`` of
    ``gain_estimate``. Convergence of the span needs the usual conditions (e.g. an
    aperiodic optimistic MDP; the ball's support on every state gives it for ``"kl"``
    and for ``"l1"`` with positive radii, UCRL2's Theorem 7 argument); otherwise the
    iteration stops at ``max_steps`` with status ``MAX_STEPS``.

    Where it does not converge, the iterates in floating point often enter a cycle (UCRL3's
    near-optimistic support, recomputed at every sweep, can alternate between two sets).
    With ``cycle_memory = H > 0`` each shifted iterate is compared bit for bit with the
    ``H`` before it; a repeat at distance ``p`` means every later sweep repeats the last
    ``p``, so the step counter jumps by the whole periods that fit before ``max_steps``
    and the loop runs only the remaining ``< p`` sweeps. The result (``num_steps``
    included) is that of the full iteration, bit for bit, in fewer sweeps.

    Written for one MDP and a ``lax.while_loop`` with a step counter; it works under
    ``jit`` and ``vmap`` (a batch runs until all of its members stop; the stopped ones
    keep their result). Not differentiable (the loop is not differentiated and no custom
    derivative is defined). The iterates are shifted by their minimum after every sweep,
    which changes none of the above.

    Args:
        p_hat: the centres :math:`\hat p(s, a)` of the balls, shape ``[S, A, S]``, rows of
            admissible pairs on the simplex (not checked). Zeros are allowed.
        r_tilde: optimistic rewards :math:`\tilde r(s, a)`, shape ``[S, A]``.
        radius: the radii, shape ``[S, A]``: L1 radius :math:`d` (UCRL2:
            :math:`\sqrt{14 S \ln(2 A t_k / \delta) / \max(1, N_k(s, a))}`) or KL radius.
            Non-negative; an eager call raises on negative entries, a traced one treats
            them as 0. For ``"box"`` a :class:`BoxBounds`, for a ``ball`` given by value its
            ``bounds`` type when it has one (``p_hat`` then only fills the
            ``q_opt`` rows of inadmissible pairs).
        mask: admissible actions, bool, shape ``[S, A]``; ``None`` means all. A state
            whose row is all False keeps every action (as in :func:`jaxmdp.policy_iteration`).
        ball: a name of :data:`BALLS` (``"l1"``, ``"kl"``,
            ``"kl_published"``, ``"box"``, ``"ucrl3"``, ``"ucrl3_key_sums"``) or an
            :class:`InnerMaximisation` (static).
        epsilon: the span tolerance, a positive scalar; may be traced (UCRL2 uses
            :math:`1/\sqrt{t_k}`). A traced ``epsilon <= 0`` runs to ``max_steps``.
        max_steps: the largest number of sweeps, a positive Python int.
        u0: the starting values :math:`u_0`, shape ``[S]`` (a warm start); default zeros.
        cycle_memory: how many earlier iterates a new one is compared with to detect a
            cycle (above); ``0`` (default) compares none. A non-negative Python int.
        kernel: the loop's implementation (:data:`KERNELS`, static): ``"xla"`` (default,
            a ``lax.while_loop``) or ``"pallas"``: the whole loop as one Pallas kernel, one
            program per problem under ``vmap`` (no host wait per sweep on a GPU;
            interpret mode elsewhere), for ``ball="l1"`` without ``cycle_memory``. The
            same policies and numbers of sweeps, values up to the order of additions
            (``jaxmdp.planning._evi_kernel``).

    Returns:
        A :class:`~jaxmdp.planning.Solution` ``(gain, bias, policy, num_steps, status,
        q_opt, span)``: ``bias`` is ``u`` and ``gain`` the gain estimate.

    Raises:
        ValueError: for an unknown ``ball`` or ``kernel``, ``kernel="pallas"`` with
            another ball than ``"l1"`` or with ``cycle_memory``, a non-positive
            ``epsilon`` or ``max_steps``, arrays of the wrong shapes, or (eagerly) a
            negative ``radius``; the message names the argument.

    Example:
        >>> import jax.numpy as jnp
        >>> import jaxmdp as jm
        >>> mdp = jm.envs.make("paper-mdp")
        >>> res = jm.evi(mdp.P, mdp.R, jnp.zeros(mdp.R.shape), mdp.mask, epsilon=1e-6)
        >>> int(res.status) == jm.planning.Status.CONVERGED, res.policy.tolist()
        (True, [0, 1, 0])

    References:
        Jaksch, Ortner & Auer, "Near-optimal Regret Bounds for Reinforcement Learning",
        JMLR 2010, section 3.1.2, Figure 2 and Theorem 7.
        Filippi, Cappé & Garivier, "Optimism in Reinforcement Learning and
        Kullback-Leibler Divergence", Allerton 2010, section 3.
        Puterman, "Markov Decision Processes", 1994, Theorem 8.5.5.
    """
    _check_arguments(p_hat, r_tilde, radius, mask, u0, ball, epsilon, max_steps)
    if (not isinstance(cycle_memory, int) or isinstance(cycle_memory, bool)
            or cycle_memory < 0):
        raise ValueError(f"cycle_memory must be a non-negative Python int, got "
                         f"{cycle_memory!r}")
    _check_kernel(kernel, ball, cycle_memory)
    dtype = jnp.result_type(p_hat, r_tilde, *([] if u0 is None else [u0]),
                            *([] if _maximisation(ball).bounds is not None else [radius]))
    if not jnp.issubdtype(dtype, jnp.floating):
        dtype = jnp.result_type(float)
    num_states = jnp.shape(p_hat)[0]
    if mask is None:
        mask = np.ones(jnp.shape(r_tilde), bool)
    if u0 is None:
        u0 = np.zeros(num_states, dtype)
    return _evi_core(
        jnp.asarray(p_hat, dtype),
        jnp.asarray(r_tilde, dtype),
        _as_radius(radius, dtype),
        jnp.asarray(mask, bool),
        jnp.asarray(u0, dtype),
        jnp.asarray(epsilon, dtype),
        jnp.asarray(max_steps, jnp.int32),
        ball=ball,
        cycle_memory=cycle_memory,
        kernel=kernel,
    )


def _check_kernel(kernel, ball, cycle_memory: int) -> None:
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {list(KERNELS)}, got {kernel!r}")
    if kernel == "pallas" and ball != "l1":
        raise ValueError(f"kernel='pallas' solves the 'l1' ball only, got ball={ball!r}")
    if kernel == "pallas" and cycle_memory:
        raise ValueError(f"kernel='pallas' has no cycle detection, got "
                         f"cycle_memory={cycle_memory!r}")


@functools.cache
def evi_planner(ball: str | InnerMaximisation = "l1", *, max_steps: int = DEFAULT_MAX_STEPS,
                warm_start: bool = False, cycle_memory: int = 0,
                kernel: str = "xla") -> Planner:
    """Extended value iteration behind :class:`~jaxmdp.planning.Planner`.

    ``update(state, change)`` runs :func:`evi` on the :class:`ConfidenceSet`
    ``change.model``. The state is the last solution's ``u`` (zeros at first): with
    ``warm_start`` the next update starts from it, otherwise from zeros (UCRL2's rule).

    Args:
        ball: a name of :data:`BALLS` or an :class:`InnerMaximisation`
            (static).
        max_steps: maximum number of sweeps per update, a positive int.
        warm_start: start each update from the previous ``u``.
        cycle_memory: :func:`evi`'s cycle detection (``0``: none).
        kernel: :func:`evi`'s loop, ``"xla"`` or ``"pallas"`` (the L1 ball only).

    Returns:
        A :class:`~jaxmdp.planning.Planner`; calls with equal arguments return the same
        object.

    Raises:
        ValueError: for an unknown ``ball`` or ``kernel``, or ``kernel="pallas"`` with
            another ball or with ``cycle_memory``.

    Example:
        >>> import jax.numpy as jnp
        >>> import jaxmdp as jm
        >>> from jaxmdp import planning
        >>> mdp = jm.envs.make("paper-mdp")
        >>> planner = planning.evi_planner("l1")
        >>> model = planning.ConfidenceSet(mdp.P, mdp.R, jnp.zeros(mdp.R.shape), mdp.mask,
        ...                                jnp.asarray(1e-8))
        >>> sol, _ = planner.update(planner.init(model), planning.ModelChange(model))
        >>> sol.policy.tolist()
        [0, 1, 0]
    """
    if not _known(ball):
        raise ValueError(f"ball must be one of {list(BALLS)} or an "
                         f"InnerMaximisation, got {ball!r}")
    _check_kernel(kernel, ball, cycle_memory)

    def init(model: ConfidenceSet):
        return jnp.zeros(jnp.shape(model.p_hat)[0], jnp.asarray(model.p_hat).dtype)

    def update(state, change: ModelChange):
        model = change.model
        solution = evi(model.p_hat, model.rewards, model.radius, model.mask, ball=ball,
                       epsilon=model.epsilon, max_steps=max_steps,
                       u0=state if warm_start else None, cycle_memory=cycle_memory,
                       kernel=kernel)
        return solution, solution.bias

    return Planner(init, update)
