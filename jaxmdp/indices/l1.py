"""The OLP index: the largest mean of ``v`` within an L1 ball around ``p``."""

import jax
import jax.numpy as jnp

__all__ = ["l1_ucb"]


def _l1_ucb_single(p: jax.Array, v: jax.Array, d: jax.Array) -> jax.Array:
    """``l1_ucb`` for one ``p`` and ``v`` of shape ``[S]`` and a scalar ``d``."""
    order = jnp.argsort(v)
    v_sorted = v[order]
    p_sorted = p[order]
    v_max = jnp.max(v)
    # Mass taken from the states below x (in increasing order of v) before x is reached.
    mass_below = jnp.concatenate([jnp.zeros((1,), p.dtype), jnp.cumsum(p_sorted)[:-1]])
    # Half the L1 budget moves from the lowest-v states to an argmax-v state. Removals
    # that reach the argmax states themselves move mass at zero gain, so the cap
    # 1 - p_best of the move needs no separate term.
    removed = jnp.clip(d / 2 - mass_below, 0, p_sorted)
    mean_p = jnp.dot(p, v)
    value = mean_p + jnp.dot(removed, v_max - v_sorted)
    # Both branches are finite, so the gradient is finite at d = 2 as well.
    return jnp.where(d >= 2, v_max, jnp.minimum(value, v_max))


@jax.jit
def l1_ucb(p: jax.typing.ArrayLike, v: jax.typing.ArrayLike, d: jax.typing.ArrayLike) -> jax.Array:
    r"""The OLP index: the largest mean of ``v`` over an L1 ball around ``p``.

    Computes the function :math:`B` of the paper's OLP section (Cowan, Katehakis &
    Pirutinsky 2019, section 4, "OLP"), the optimistic value of the index of optimistic
    linear programming (Tewari & Bartlett 2008),

    .. math::

        B(p, v, d) = \sup_{q \in \Theta} \{ q^\top v : \|q - p\|_1 \le d \},

    where :math:`\Theta` is the probability simplex. The paper solves it as a linear
    program; it has an exact solution in :math:`O(S \log S)`: starting from
    :math:`q = p`, move :math:`M = \min(d/2, 1 - p_{x^*})` of mass onto a state
    :math:`x^* \in \arg\max_x v_x`, taking it from the states of lowest :math:`v` in
    increasing order of :math:`v`. So :math:`B = p^\top v` for :math:`d \le 0`,
    :math:`B = \max_x v_x` for :math:`d \ge 2`, and :math:`B` is non-decreasing,
    concave and piecewise linear in :math:`d`, with values in
    :math:`[p^\top v, \max_x v_x]`.

    It works under ``jit``, ``vmap`` and ``grad``. ``B`` is piecewise linear in
    ``(p, v, d)``; away from the kinks the gradients are exact (for example
    :math:`\partial B / \partial v = q^*`, the optimal ``q``), and at a kink they are
    a finite one-sided or averaged value, never NaN.

    Args:
        p: probabilities, shape ``[S]`` or ``[..., S]``, non-negative and summing to one
            along the last axis (not checked).
        v: values of the next state, shape ``[S]`` or ``[..., S]``, broadcastable with
            ``p``.
        d: L1 radius, scalar or shape ``[...]``, broadcastable with the batch shape of
            ``p`` and ``v``.

    Returns:
        :math:`B(p, v, d)`, shape: the broadcast batch shape of ``p``, ``v`` and ``d``,
        in the floating dtype of the inputs.

    Raises:
        ValueError: if ``p`` or ``v`` is a scalar or their last axes differ.

    Example:
        >>> import jax.numpy as jnp
        >>> import jaxmdp
        >>> p = jnp.array([0.5, 0.3, 0.2])
        >>> v = jnp.array([0.0, 1.0, 2.0])
        >>> print(jaxmdp.l1_ucb(p, v, 0.4))  # 0.2 of mass moves from v=0 to v=2
        1.1

    References:
        Cowan, Katehakis & Pirutinsky, "Accelerating the Computation of UCB and Related
        Indices for Reinforcement Learning", 2019, section 4 (OLP).
        Tewari & Bartlett, "Optimistic Linear Programming gives Logarithmic Regret for
        Irreducible MDPs", NeurIPS 2008.
    """
    dtype = jnp.result_type(p, v, d)
    if not jnp.issubdtype(dtype, jnp.floating):
        dtype = jnp.result_type(float)
    p = jnp.asarray(p, dtype)
    v = jnp.asarray(v, dtype)
    d = jnp.asarray(d, dtype)
    if p.ndim == 0 or v.ndim == 0:
        raise ValueError(
            f"p and v must have a last axis of states, got shapes {p.shape} and {v.shape}"
        )
    if p.shape[-1] != v.shape[-1]:
        raise ValueError(
            f"p and v must have the same number of states, got shapes {p.shape} and {v.shape}"
        )
    return jnp.vectorize(_l1_ucb_single, signature="(s),(s),()->()")(p, v, d)
