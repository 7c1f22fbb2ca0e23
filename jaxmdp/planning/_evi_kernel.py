r"""Extended value iteration over L1 balls as one Pallas kernel: the whole stopping loop
in one program per problem.

On a GPU every trip of a data-dependent ``lax.while_loop`` copies its predicate to the
host and waits for the device; UCRL2's EVI runs tens of sweeps per episode start, each a
handful of small kernels. Here one program holds the loop: it reads the problem once,
runs the sweeps of :func:`jaxmdp.evi` (``ball="l1"``) until :math:`\mathrm{sp}(u_{i+1} -
u_i) < \epsilon` or ``max_steps``, and writes the result; under ``vmap`` (replications)
the batch is the kernel's grid, one program per problem, each stopping by its own rule.

Each sweep needs, for every pair :math:`(s, a)`, the mass of :math:`\hat p(s, a)` on the
states before :math:`y` in the increasing order of :math:`u` (ties to the lower index,
as a stable sort): :math:`b(s, a, y) = \sum_z \hat p(s, a, z) [z \prec y]`. Pallas'
Triton lowering has no sort, so the order enters as the comparisons
:math:`[z \prec y]`, accumulated over :math:`z` in a loop of :math:`S` outer products. The
value of the pair is then Jaksch et al.'s Figure 2 in closed form,

.. math::

    \hat p \cdot u + \sum_y \mathrm{clip}(d/2 - b(y), 0, \hat p(y)) (\max u - u(y)),

the expression of :func:`jaxmdp.l1_ball_maximiser` (``"sort"``) with the cumulative sum
replaced by these sums: the same numbers up to the order of the additions (the tests
compare the kernel with the XLA loop in interpret mode: the same policies and numbers of
sweeps, values within 1e-12 in float64 and 1e-6 in float32). States and actions are
padded to powers of two (Triton's block shapes); padded states have no admissible
action and stay out of every maximum, minimum and span.

The kernel runs compiled on a GPU and in Pallas' interpret mode elsewhere (the CPU, in
the tests). The XLA loop of :func:`jaxmdp.evi` stays the default and the reference;
``kernel="pallas"`` selects this one.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from jaxmdp._order import platform

__all__ = ["KERNELS", "l1_evi_loop"]

#: The implementations of EVI's loop (:func:`jaxmdp.evi`'s ``kernel``): ``"xla"`` (a
#: ``lax.while_loop`` of XLA operations, every ball) and ``"pallas"`` (the whole loop as
#: one Pallas kernel, one program per problem; the L1 ball).
KERNELS = ("xla", "pallas")


def _power_of_two(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def _kernel(p_ref, r_ref, half_ref, admissible_ref, u0_ref, epsilon_ref, cap_ref,
            u_out, policy_out, real_out, int_out):
    """One problem: ``p_ref`` ``[A, S, S]`` (action-major), ``r_ref``, ``half_ref`` (the
    radii halved), ``admissible_ref`` (int32) ``[A, S]``, ``u0_ref`` ``[S]``, ``epsilon_ref``
    and ``cap_ref`` (``max_steps``) ``[1]``. Writes the last sweep's starting values and
    greedy policy ``[S]``, ``(gain, span)`` and ``(steps, converged)``."""
    num_actions, num_states = r_ref.shape
    dtype = u0_ref.dtype
    index = lax.broadcasted_iota(jnp.int32, (num_states,), 0)
    valid = jnp.max(admissible_ref[...], axis=0) > 0  # a padded state has no action
    epsilon = epsilon_ref[0]
    cap = cap_ref[0]
    inf = jnp.asarray(jnp.inf, dtype)

    def sweep(u):
        """``(max_a [r + max_q q . u], the lowest maximising action)`` per state."""
        top = jnp.max(jnp.where(valid, u, -inf))

        def mass_before(z, below):
            u_z = jnp.sum(jnp.where(index == z, u, 0))
            real = jnp.sum(jnp.where((index == z) & valid, 1, 0)) > 0
            before = real & ((u_z < u) | ((u_z == u) & (z < index)))  # z before y
            row = before.astype(dtype)[None, :]
            return tuple(b + p_ref[a, :, pl.ds(z, 1)] * row for a, b in enumerate(below))

        below = lax.fori_loop(0, num_states, mass_before,
                              tuple(jnp.zeros((num_states, num_states), dtype)
                                    for _ in range(num_actions)))
        best = policy = None
        for a in range(num_actions):
            p = p_ref[a]
            room = half_ref[a][:, None] - below[a]
            removed = jnp.where(room >= p, p, jnp.where(room > 0, room, 0))
            value = (jnp.sum(p * u[None, :], axis=1)
                     + jnp.sum(removed * (top - u)[None, :], axis=1))
            q = jnp.where(admissible_ref[a] > 0, r_ref[a] + value, -inf)
            if a == 0:
                best, policy = q, jnp.zeros((num_states,), jnp.int32)
            else:
                better = q > best  # ties keep the lower action
                best = jnp.where(better, q, best)
                policy = jnp.where(better, a, policy)
        return best, policy

    def cond(carry):
        *_, step, converged = carry
        return (converged == 0) & (step < cap)

    def body(carry):
        u, _, _, _, _, step, _ = carry
        best, policy = sweep(u)
        u_next = jnp.where(valid, best, 0)
        diff = u_next - u
        high = jnp.max(jnp.where(valid, diff, -inf))
        low = jnp.min(jnp.where(valid, diff, inf))
        span = high - low
        u_next = jnp.where(valid, u_next - jnp.min(jnp.where(valid, u_next, inf)), 0)
        return (u_next, u, policy, (high + low) / 2, span, step + 1,
                (span < epsilon).astype(jnp.int32))

    u0 = u0_ref[...]
    init = (u0, u0, jnp.zeros((num_states,), jnp.int32), jnp.zeros((), dtype), inf,
            jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32))
    _, previous, policy, gain, span, step, converged = lax.while_loop(cond, body, init)
    u_out[...] = previous
    policy_out[...] = policy
    pair = lax.broadcasted_iota(jnp.int32, (2,), 0)
    real_out[...] = jnp.where(pair == 0, gain, span)
    int_out[...] = jnp.where(pair == 0, step, converged)


def l1_evi_loop(p_hat: jax.Array, r_tilde: jax.Array, radius: jax.Array, mask: jax.Array,
                u0: jax.Array, epsilon: jax.Array, max_steps: jax.Array):
    """The stopping loop of :func:`jaxmdp.evi` with ``ball="l1"``, as one kernel.

    Args:
        p_hat: ``[S, A, S]``; r_tilde, radius (non-negative): ``[S, A]``; mask: bool
            ``[S, A]``, every state with an admissible action; u0: ``[S]``; epsilon: the
            span tolerance and max_steps (int32) the sweep cap, scalars.

    Returns:
        ``(previous [S], policy [S], gain, span, steps, converged)``: the iterate the last
        sweep started from, its greedy policy (lowest index among ties), the gain estimate,
        the span, the number of sweeps and whether ``span < epsilon``.
    """
    num_states, num_actions = r_tilde.shape
    dtype = p_hat.dtype
    S, A = _power_of_two(num_states), _power_of_two(num_actions)

    def padded(x, shape):
        return jnp.zeros(shape, x.dtype).at[tuple(slice(0, n) for n in x.shape)].set(x)

    args = (padded(jnp.moveaxis(p_hat, 1, 0), (A, S, S)),
            padded(r_tilde.T, (A, S)),
            padded(radius.T / 2, (A, S)),
            padded(mask.T.astype(jnp.int32), (A, S)),
            padded(u0, (S,)),
            jnp.reshape(epsilon, (1,)).astype(dtype),
            jnp.reshape(max_steps, (1,)).astype(jnp.int32))
    out_shape = (jax.ShapeDtypeStruct((S,), dtype), jax.ShapeDtypeStruct((S,), jnp.int32),
                 jax.ShapeDtypeStruct((2,), dtype), jax.ShapeDtypeStruct((2,), jnp.int32))
    previous, policy, reals, ints = pl.pallas_call(
        _kernel, out_shape=out_shape, interpret=platform() not in ("gpu", "cuda", "rocm"),
    )(*args)
    return (previous[:num_states], policy[:num_states], reals[0], reals[1], ints[0],
            ints[1] > 0)
