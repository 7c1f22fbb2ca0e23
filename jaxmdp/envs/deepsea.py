r"""DeepSea as a continuing (average-reward) MDP, following Colosseum's ``DeepSeaContinuous``.

Source: Colosseum (Conserva & Rauber, "Hardness in Markov decision processes: theory and
practice", NeurIPS 2022; files at commit 981b344), ``colosseum/mdp/deep_sea/base.py``:
the transitions of ``_get_next_nodes_parameters`` (lines 253-269), the rewards of
``_get_reward_distribution`` (lines 271-284) with the deterministic reward values of
lines 238-240, the start node of line 251; ``colosseum/mdp/deep_sea/infinite_horizon.py``
(``DeepSeaContinuous``) is the continuing version, in which the bottom row returns to the
start. The environment of Osband et al. ("Behaviour Suite for Reinforcement Learning",
2020) is the episodic original.
"""

from __future__ import annotations

import numpy as np

from jaxmdp.envs._common import as_mdp, check_int
from jaxmdp.mdp import MDP

__all__ = ["deep_sea"]

_LEFT, _RIGHT = 0, 1  # Colosseum's DeepSeaAction (base.py, lines 40-49)


def deep_sea(n: int = 10, *, dtype=None) -> MDP:
    r"""The continuing DeepSea-``n``: ``n (n + 1) / 2`` states, 2 actions.

    An ``n x n`` triangle of reachable cells ``(k, x)``: ``k = 0, ..., n - 1`` steps
    from the start (the depth; Colosseum's ``Y = n - 1 - k``) and column
    ``x = 0, ..., k`` (Colosseum's ``X``). State ``(k, x)`` has index
    ``k (k + 1) / 2 + x``, so the start ``(0, 0)`` is state 0. Actions ``0 = left``,
    ``1 = right``, deterministic:

    * for ``k < n - 1``: left moves to ``(k + 1, max(x - 1, 0))``, right to
      ``(k + 1, x + 1)``;
    * in the bottom row ``k = n - 1`` every action returns to the start ``(0, 0)``;
    * rewards: right in ``(n - 1, n - 1)`` pays 1, left pays :math:`1/n^2` in every
      state, everything else 0.

    The only way to the reward 1 is to play right ``n`` times in a row, so the optimal
    policy plays right on the diagonal ``x = k`` (and left off it), with gain
    :math:`1/n` against :math:`1/n^2` for "always left". Every policy's chain is
    periodic with period ``n``.

    Source: Colosseum, ``colosseum/mdp/deep_sea/base.py`` lines 251 (start node
    ``(X, Y) = (0, n - 1)``), 253-269 (moves; at ``Y == 0`` every action returns to
    the start, which makes the problem continuing, as Colosseum's ``DeepSeaContinuous``
    of ``infinite_horizon.py``), 271-284 (reward 1 for right at ``(n - 1, 0)``, the
    sub-optimal reward for left, 0 otherwise) and 238-240 (the deterministic values 1,
    :math:`1/n^2`, 0). Changes: states are only the cells reachable from the start (as
    in Colosseum, whose state graph is built from the start node), renumbered so that
    the start is state 0; the rewards are the means; Colosseum's optional random-action
    noise (``p_rand``) and stochastic rewards are not modelled.

    Args:
        n: the size, a Python int ``>= 2`` (Colosseum asserts ``size > 1``).
        dtype: float dtype; default float (float64 under x64).

    Returns:
        The :class:`~jaxmdp.MDP`, ``P`` of shape ``[n (n + 1) / 2, 2, n (n + 1) / 2]``.

    Raises:
        ValueError: if ``n`` is not an int ``>= 2``.

    Example:
        >>> import jaxmdp as jm
        >>> mdp = jm.envs.deep_sea(4)
        >>> mdp.P.shape, float(mdp.R[9, 1]), float(mdp.R[0, 0])
        ((10, 2, 10), 1.0, 0.0625)
    """
    n = check_int("n", n, 2)
    S = n * (n + 1) // 2

    def index(k, x):
        return k * (k + 1) // 2 + x

    P = np.zeros((S, 2, S))
    R = np.zeros((S, 2))
    for k in range(n):
        for x in range(k + 1):
            s = index(k, x)
            R[s, _LEFT] = 1.0 / n**2
            if k == n - 1:
                P[s, :, 0] = 1.0
                if x == n - 1:
                    R[s, _RIGHT] = 1.0
                continue
            P[s, _LEFT, index(k + 1, max(x - 1, 0))] = 1.0
            P[s, _RIGHT, index(k + 1, x + 1)] = 1.0
    return as_mdp(P, R, dtype)
