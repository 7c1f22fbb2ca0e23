"""The finite MDP pytree: transitions ``P[s, a, s']``, rewards ``R[s, a]``, ``mask[s, a]``.

An :class:`MDP` is the quadruple ``(S, A, R, P)`` of section 2 of Cowan, Katehakis &
Pirutinsky (2019) with the admissible-action sets ``A(x)`` encoded as a boolean mask, and a
*reward law*: the reward observed after playing ``a`` in ``x`` is ``R[x, a]`` itself
(``"deterministic"``, the paper's setting), a Bernoulli draw with mean ``R[x, a]``
(``"bernoulli"``) or a Gaussian draw with mean ``R[x, a]`` and standard deviation
``reward_sigma`` (``"gaussian"``), independent of the next state. Constructing one
validates its arguments eagerly; :meth:`MDP.unchecked` skips validation for values
computed inside ``jit``/``scan`` (for example estimated MDPs).

Two helpers of the reward laws serve every layer above: :func:`bernoulli_joint`, the joint
law of (Bernoulli reward, next state) that learning agents and the lower bound use, and
:func:`check_unit_rewards`, the check that means lie in ``[0, 1]``.
"""

from __future__ import annotations

import dataclasses
import numbers
import os
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxmdp._files import write_atomic

__all__ = ["MDP", "REWARD_LAWS", "bernoulli_joint", "check_unit_rewards"]

#: The reward laws an :class:`MDP` can have (see :class:`MDP`).
REWARD_LAWS = ("deterministic", "bernoulli", "gaussian")

# The arrays of a file written by `MDP.save`.
_FILE_ARRAYS = ("P", "R", "mask", "reward_law", "reward_sigma")

# Absolute tolerance on the row sums of P (float64); see `_row_sum_tolerance`.
ROW_SUM_ATOL = 1e-6


def _row_sum_tolerance(dtype: np.dtype, num_states: int) -> float:
    """Row-sum tolerance: 1e-6, widened to ``S * eps`` for low precision dtypes.

    Summing ``S`` numbers that were normalised in float32 can be off by about ``S * eps``
    (1.2e-4 for S = 1000), so a float32 MDP built by ``x / x.sum()`` must still pass.
    """
    return max(ROW_SUM_ATOL, num_states * float(jnp.finfo(dtype).eps))


def _float_dtype(*arrays: jax.Array) -> np.dtype:
    dtype = jnp.result_type(*arrays)
    if jnp.issubdtype(dtype, jnp.complexfloating):
        raise ValueError(f"P and R must be real, got dtype {dtype}")
    if not jnp.issubdtype(dtype, jnp.floating):
        dtype = jnp.result_type(float)  # float64 under x64, float32 otherwise.
    if jnp.dtype(dtype) not in (jnp.dtype(jnp.float32), jnp.dtype(jnp.float64)):
        # Planning solves linear systems (LAPACK), which has no half-precision routines.
        raise ValueError(f"P and R must be float32 or float64 (or integers, converted to "
                         f"the default float), got dtype {jnp.dtype(dtype)}")
    return dtype


def _first_index(bad: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(bad)[0])


def _is_traced(*arrays: jax.Array) -> bool:
    return any(isinstance(x, jax.core.Tracer) for x in arrays)


def _check_shapes(P: jax.Array, R: jax.Array, mask: jax.Array) -> None:
    if P.ndim != 3:
        raise ValueError(f"P must have shape [S, A, S] (rank 3), got shape {P.shape}")
    S, A, S2 = P.shape
    if S != S2:
        raise ValueError(
            f"P must have shape [S, A, S] with equal first and last axes, got shape {P.shape}"
        )
    if S == 0 or A == 0:
        raise ValueError(f"P must have at least one state and one action, got shape {P.shape}")
    if R.ndim != 2:
        raise ValueError(f"R must have shape [S, A] (rank 2), got shape {R.shape}")
    if R.shape != (S, A):
        raise ValueError(
            f"R must have shape [S, A] = {(S, A)} to match P of shape {P.shape}, "
            f"got shape {R.shape}"
        )
    if mask.ndim != 2 or mask.shape != (S, A):
        raise ValueError(
            f"mask must have shape [S, A] = {(S, A)} to match P of shape {P.shape}, "
            f"got shape {mask.shape}"
        )


def _check_values(P: jax.Array, R: jax.Array, mask: jax.Array) -> None:
    P_np = np.asarray(P, dtype=np.float64)
    R_np = np.asarray(R, dtype=np.float64)
    mask_np = np.asarray(mask)
    bad = ~np.isfinite(P_np)
    if bad.any():
        i = _first_index(bad)
        raise ValueError(f"P must be finite, got P[{i[0]}, {i[1]}, {i[2]}] = {float(P_np[i])}")
    bad = P_np < 0
    if bad.any():
        i = _first_index(bad)
        raise ValueError(
            f"P must be non-negative, got P[{i[0]}, {i[1]}, {i[2]}] = {float(P_np[i])}"
        )
    bad = ~np.isfinite(R_np)
    if bad.any():
        i = _first_index(bad)
        raise ValueError(f"R must be finite, got R[{i[0]}, {i[1]}] = {float(R_np[i])}")
    empty = ~mask_np.any(axis=1)
    if empty.any():
        s = int(np.argwhere(empty)[0, 0])
        raise ValueError(
            f"mask must allow at least one action in every state, got state {s} with "
            f"mask[{s}] = {mask_np[s].tolist()}"
        )
    tol = _row_sum_tolerance(P.dtype, P.shape[0])
    sums = P_np.sum(axis=-1)
    bad = (np.abs(sums - 1.0) > tol) & mask_np
    if bad.any():
        s, a = _first_index(bad)
        raise ValueError(
            f"P[s, a] must sum to 1 (within {tol:.1e}) for every admissible (s, a), "
            f"got sum(P[{s}, {a}]) = {float(sums[s, a])!r}"
        )


def _check_reward_law(reward_law, reward_sigma) -> tuple[str, float]:
    if not isinstance(reward_law, str) or reward_law not in REWARD_LAWS:
        raise ValueError(f"reward_law must be one of {list(REWARD_LAWS)}, got {reward_law!r}")
    if reward_law == "gaussian":
        if (isinstance(reward_sigma, bool) or not isinstance(reward_sigma, numbers.Real)
                or not np.isfinite(reward_sigma) or reward_sigma <= 0):
            raise ValueError("reward_sigma must be a positive finite number for the Gaussian "
                             f"reward law, got reward_sigma={reward_sigma!r}")
        return reward_law, float(reward_sigma)
    if reward_sigma is not None:
        raise ValueError(f"reward_sigma is only used by the Gaussian reward law, got "
                         f"reward_sigma={reward_sigma!r} with reward_law={reward_law!r}")
    return reward_law, 0.0


def _check_bernoulli_means(R: jax.Array, mask: jax.Array) -> None:
    R_np = np.asarray(R, dtype=np.float64)
    bad = ((R_np < 0) | (R_np > 1)) & np.asarray(mask)
    if bad.any():
        s, a = _first_index(bad)
        raise ValueError("R must lie in [0, 1] for the Bernoulli reward law (R is the mean), "
                         f"got R[{s}, {a}] = {float(R_np[s, a])}")


@dataclasses.dataclass(frozen=True, eq=False, init=False)
class MDP:
    r"""A finite average-reward MDP with known rewards (paper, section 2).

    Holds the transition law ``P[x, a, y]`` = :math:`p^a_{x,y}`, the expected rewards
    ``R[x, a]`` = :math:`r_{x,a}` and the admissible-action mask ``mask[x, a]``
    (:math:`a \in A(x)`). It is a pytree with the three arrays as leaves, so it passes
    through ``jit``, ``vmap`` and ``lax.scan``; a batch of MDPs is an ``MDP`` whose
    leaves carry leading batch axes.

    Construction validates eagerly and raises ``ValueError`` naming the argument and the
    bad value for: wrong ranks or mismatched shapes; NaN/inf in ``P`` or ``R``; negative
    entries of ``P``; a row ``P[x, a]`` of an admissible pair whose sum differs from 1 by
    more than ``max(1e-6, S * eps)`` (``eps`` of the dtype, so float32 rows normalised
    by division pass); a state with no admissible action; an unknown ``reward_law``; a
    Bernoulli law with an admissible ``R[x, a]`` outside ``[0, 1]``; a Gaussian law
    without a positive finite ``reward_sigma`` (or a ``reward_sigma`` for another law).
    Rewards may be negative (except under the Bernoulli law). Rows of inadmissible pairs
    must be finite and non-negative but need not sum to 1.
    Integer ``P``/``R`` are converted to the default float dtype; ``P`` and ``R`` share
    one dtype. When called on traced values (inside ``jit``) only the static shape checks
    run; use :meth:`unchecked` to skip validation explicitly.

    Args:
        P: transition probabilities, shape ``[S, A, S]``.
        R: expected rewards, shape ``[S, A]``.
        mask: admissible actions, bool, shape ``[S, A]``; ``None`` means all admissible.
        reward_law: how observed rewards are drawn around their means ``R``:
            ``"deterministic"`` (default; the observed reward is ``R[x, a]``),
            ``"bernoulli"`` (a 0/1 reward with mean ``R[x, a]`` in ``[0, 1]``) or
            ``"gaussian"`` (``R[x, a] + reward_sigma * N(0, 1)``). Static (pytree
            auxiliary data): it selects code, not values.
        reward_sigma: standard deviation of the Gaussian law (positive); ``None`` for the
            other laws.

    Example:
        >>> import jax.numpy as jnp
        >>> import jaxmdp as jm
        >>> mdp = jm.MDP(jnp.full((2, 1, 2), 0.5), jnp.array([[1.0], [0.0]]))
        >>> mdp.num_states, mdp.num_actions
        (2, 1)
    """

    P: jax.Array
    R: jax.Array
    mask: jax.Array
    reward_law: str = "deterministic"
    reward_sigma: float = 0.0

    def __init__(self, P: ArrayLike, R: ArrayLike, mask: ArrayLike | None = None, *,
                 reward_law: str = "deterministic", reward_sigma: float | None = None):
        reward_law, reward_sigma = _check_reward_law(reward_law, reward_sigma)
        P = jnp.asarray(P)
        R = jnp.asarray(R)
        dtype = _float_dtype(P, R)
        P = P.astype(dtype)
        R = R.astype(dtype)
        if mask is None:
            mask = jnp.ones(R.shape, dtype=bool)
        else:
            mask = jnp.asarray(mask)
            if mask.dtype != jnp.bool_:
                if not _is_traced(mask):
                    values = np.unique(np.asarray(mask))
                    if not np.isin(values, (0, 1)).all():
                        raise ValueError(
                            f"mask must be boolean (or 0/1), got values {values.tolist()}"
                        )
                mask = mask.astype(bool)
        _check_shapes(P, R, mask)
        if not _is_traced(P, R, mask):
            _check_values(P, R, mask)
            if reward_law == "bernoulli":
                _check_bernoulli_means(R, mask)
        object.__setattr__(self, "P", P)
        object.__setattr__(self, "R", R)
        object.__setattr__(self, "mask", mask)
        object.__setattr__(self, "reward_law", reward_law)
        object.__setattr__(self, "reward_sigma", reward_sigma)

    @classmethod
    def unchecked(cls, P: ArrayLike, R: ArrayLike, mask: ArrayLike | None = None, *,
                  reward_law: str = "deterministic", reward_sigma: float = 0.0) -> MDP:
        """Builds an ``MDP`` without any validation (for traced values inside ``jit``).

        The caller guarantees the invariants of :class:`MDP`. Arrays are stored as given
        (no dtype conversion), except that ``mask=None`` becomes all-True.

        Args:
            P: transition probabilities, shape ``[..., S, A, S]``.
            R: expected rewards, shape ``[..., S, A]``.
            mask: admissible actions, bool, shape ``[..., S, A]``, or ``None``.
            reward_law: one of ``REWARD_LAWS`` (not checked).
            reward_sigma: the Gaussian law's standard deviation (not checked).

        Returns:
            The ``MDP``.
        """
        R = jnp.asarray(R)
        mask = jnp.ones(R.shape, dtype=bool) if mask is None else mask
        return cls._from_leaves(jnp.asarray(P), R, mask, (reward_law, float(reward_sigma)))

    @classmethod
    def _from_leaves(cls, P, R, mask, law=("deterministic", 0.0)) -> MDP:
        obj = object.__new__(cls)
        object.__setattr__(obj, "P", P)
        object.__setattr__(obj, "R", R)
        object.__setattr__(obj, "mask", mask)
        object.__setattr__(obj, "reward_law", law[0])
        object.__setattr__(obj, "reward_sigma", law[1])
        return obj

    def with_reward_law(self, reward_law: str, reward_sigma: float | None = None) -> MDP:
        """The same MDP with another reward law (validated as in the constructor).

        Example:
            >>> import jaxmdp as jm
            >>> mdp = jm.envs.make("paper-mdp").with_reward_law("bernoulli")
            >>> mdp.reward_law
            'bernoulli'
        """
        return MDP(self.P, self.R, self.mask, reward_law=reward_law, reward_sigma=reward_sigma)

    def save(self, path: str | os.PathLike) -> Path:
        """Writes the MDP to an ``.npz`` file that :meth:`load` reads back bit for bit.

        The file holds the arrays ``P`` ``[S, A, S]`` and ``R`` ``[S, A]`` in their dtype
        (float32 or float64), ``mask`` ``[S, A]`` (bool), ``reward_law`` (a string) and
        ``reward_sigma`` (float64; 0 for the laws other than Gaussian), written with
        :func:`numpy.savez` (no pickled objects) to a temporary file that is then
        renamed, so ``path`` never holds a half-written file. The name is used as given
        (``.npz`` is not appended); ``jaxmdp run --env`` recognises files ending in
        ``.npz``.

        Args:
            path: the file to write; its folder is created if needed.

        Returns:
            ``path`` as a :class:`~pathlib.Path`.

        Raises:
            ValueError: if the MDP is a batch (``P`` of rank other than 3) or holds traced
                values (inside ``jit``).

        Example:
            >>> import os, tempfile
            >>> import jaxmdp as jm
            >>> mdp = jm.envs.make("riverswim-6")
            >>> with tempfile.TemporaryDirectory() as folder:
            ...     path = mdp.save(os.path.join(folder, "riverswim.npz"))
            ...     again = jm.MDP.load(path)
            >>> bool((again.P == mdp.P).all()), again.reward_law
            (True, 'deterministic')
        """
        if _is_traced(self.P, self.R, self.mask):
            raise ValueError("MDP.save needs concrete arrays, got traced values (inside jit)")
        if self.P.ndim != 3:
            raise ValueError(f"MDP.save writes one MDP, got a batch: P of shape {self.P.shape}")
        arrays = dict(P=np.asarray(self.P), R=np.asarray(self.R),
                      mask=np.asarray(self.mask, dtype=bool),
                      reward_law=np.asarray(self.reward_law),
                      reward_sigma=np.asarray(self.reward_sigma, dtype=np.float64))

        def write(tmp):
            with open(tmp, "wb") as f:
                np.savez(f, **arrays)
        return write_atomic(path, write)

    @classmethod
    def load(cls, path: str | os.PathLike) -> MDP:
        """Reads an MDP written by :meth:`save`, validated as by the constructor.

        The arrays keep the dtype they were saved in (float64 arrays become float32 when
        JAX runs without ``jax_enable_x64``). The file's arrays go through
        :class:`MDP`'s constructor, so a corrupt or hand-made file is checked like
        arrays passed to it.

        Args:
            path: an ``.npz`` file holding ``P``, ``R``, ``mask``, ``reward_law`` and
                ``reward_sigma`` (see :meth:`save`).

        Returns:
            The :class:`MDP`.

        Raises:
            FileNotFoundError: if ``path`` is not a file.
            ValueError: naming the file and the array when the file is not an ``.npz``
                archive, misses one of the arrays, or holds arrays the constructor
                rejects (for example a row of ``P`` not summing to 1, a negative entry
                of ``P``, mismatched shapes, an unknown ``reward_law``).

        Example:
            >>> import os, tempfile
            >>> import jax.numpy as jnp
            >>> import jaxmdp as jm
            >>> mdp = jm.MDP(jnp.full((2, 1, 2), 0.5), jnp.array([[0.25], [1.0]]),
            ...              reward_law="bernoulli")
            >>> with tempfile.TemporaryDirectory() as folder:
            ...     path = mdp.save(os.path.join(folder, "coin.npz"))
            ...     again = jm.MDP.load(path)
            >>> again.R.tolist(), again.reward_law
            ([[0.25], [1.0]], 'bernoulli')
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"path: no MDP file at {str(path)!r}")
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
        except (OSError, ValueError, EOFError) as error:
            raise ValueError(f"path: {str(path)!r} is not an .npz file written by "
                             f"MDP.save ({error})") from None
        missing = [k for k in _FILE_ARRAYS if k not in arrays]
        if missing:
            raise ValueError(f"{str(path)!r} misses the array(s) {missing}; an MDP file "
                             f"holds {list(_FILE_ARRAYS)}")
        law, sigma = arrays["reward_law"], arrays["reward_sigma"]
        if law.shape != () or law.dtype.kind != "U":
            raise ValueError(f"{str(path)!r}: reward_law must be a string, got an array of "
                             f"dtype {law.dtype} and shape {law.shape}")
        if sigma.shape != () or sigma.dtype.kind not in "fiu":
            raise ValueError(f"{str(path)!r}: reward_sigma must be a real number, got an "
                             f"array of dtype {sigma.dtype} and shape {sigma.shape}")
        law = str(law)
        try:
            return cls(arrays["P"], arrays["R"], arrays["mask"], reward_law=law,
                       reward_sigma=float(sigma) if law == "gaussian" or sigma != 0 else None)
        except ValueError as error:
            raise ValueError(f"{str(path)!r}: {error}") from None

    @property
    def num_states(self) -> int:
        """Number of states ``S`` (the last axis of ``P``)."""
        return self.P.shape[-1]

    @property
    def num_actions(self) -> int:
        """Number of actions ``A`` (the last axis of ``R``)."""
        return self.R.shape[-1]


def bernoulli_joint(P, R, values):
    r"""The joint law of (reward, next state) for Bernoulli rewards, and its values.

    A pair with next-state law ``p`` and reward mean ``r`` in ``[0, 1]`` observes
    ``(0, y)`` with probability ``(1 - r) p_y`` and ``(1, y)`` with ``r p_y``; a value
    ``v_y`` of the next state becomes ``v_y`` and ``1 + v_y`` on those ``2S`` outcomes,
    so that ``joint . joint_values = r + p . v``.

    Args:
        P: next-state laws, ``[..., S]``.
        R: reward means, ``[...]`` (broadcast against ``P[..., 0]``).
        values: next-state values, ``[..., S]``.

    Returns:
        ``(joint, joint_values)``, both ``[..., 2S]``.

    Example:
        >>> import jax.numpy as jnp
        >>> from jaxmdp.mdp import bernoulli_joint
        >>> joint, values = bernoulli_joint(jnp.array([0.5, 0.5]), jnp.array(0.25),
        ...                                 jnp.array([0.0, 2.0]))
        >>> joint.tolist(), values.tolist()
        ([0.375, 0.375, 0.125, 0.125], [0.0, 2.0, 1.0, 3.0])
    """
    R = jnp.asarray(R)
    joint = jnp.concatenate([(1 - R)[..., None] * P, R[..., None] * P], axis=-1)
    return joint, jnp.concatenate([values, 1 + values], axis=-1)


def check_unit_rewards(R, mask, message: str, hint: str = "") -> None:
    """Raises ``ValueError`` (``message``, then the first pair) if an admissible mean
    reward lies outside ``[0, 1]``.

    Args:
        R: mean rewards, ``[S, A]``.
        mask: admissible actions, bool ``[S, A]``.
        message: what needs rewards in ``[0, 1]``, the start of the error message.
        hint: appended to the error message (e.g. what to use instead).

    Raises:
        ValueError: ``"{message}, got R[s, a] = value{hint}"`` for the first such pair.

    Example:
        >>> import numpy as np
        >>> from jaxmdp.mdp import check_unit_rewards
        >>> check_unit_rewards(np.array([[0.0, 1.5]]), np.array([[True, True]]), "here")
        Traceback (most recent call last):
        ...
        ValueError: here, got R[0, 1] = 1.5
    """
    R = np.asarray(R, np.float64)
    bad = ((R < 0) | (R > 1)) & np.asarray(mask, bool)
    if bad.any():
        s, a = (int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{message}, got R[{s}, {a}] = {float(R[s, a])}{hint}")


def _flatten_with_keys(mdp: MDP):
    children = (
        (jax.tree_util.GetAttrKey("P"), mdp.P),
        (jax.tree_util.GetAttrKey("R"), mdp.R),
        (jax.tree_util.GetAttrKey("mask"), mdp.mask),
    )
    return children, (mdp.reward_law, mdp.reward_sigma)


def _flatten(mdp: MDP):
    return (mdp.P, mdp.R, mdp.mask), (mdp.reward_law, mdp.reward_sigma)


def _unflatten(law, children) -> MDP:
    # Bypasses __init__: pytree transformations put tracers and placeholders here.
    return MDP._from_leaves(*children, law)


jax.tree_util.register_pytree_with_keys(MDP, _flatten_with_keys, _unflatten, _flatten)
