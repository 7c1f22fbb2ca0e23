"""Checks an agent runs before a simulation: what its reward model needs of the environment.

Shared by the agents that learn rewards in ``[0, 1]`` (the paper's agents with
``known_rewards=False``, TSDE, PSRL, IMED-RL); each is an :class:`~jaxmdp.Agent`'s
``validate(spec, config)``.
"""

from __future__ import annotations

from jaxmdp.agents.protocol import EnvSpec
from jaxmdp.mdp import check_unit_rewards

__all__ = ["validate_learned_rewards", "validate_unit_rewards"]


def validate_learned_rewards(spec: EnvSpec, config) -> None:
    """Learned rewards in ``[0, 1]`` need means in ``[0, 1]`` (the Bernoulli model).

    Raises:
        ValueError: with ``config.known_rewards`` false and a non-Gaussian reward law, for
            the first admissible mean reward outside ``[0, 1]``.
    """
    if config.known_rewards or spec.reward_law == "gaussian":
        return
    check_unit_rewards(spec.rewards, spec.mask,
                       f"known_rewards=False with the {spec.reward_law!r} reward law models "
                       "rewards in [0, 1]",
                       " (use a Gaussian reward law, or known_rewards=True)")


def validate_unit_rewards(spec: EnvSpec, config) -> None:
    """Learned rewards (``config.known_rewards=False``) model rewards in ``[0, 1]``.

    Raises:
        ValueError: for the Gaussian reward law, or a mean reward outside ``[0, 1]``.
    """
    if not config.known_rewards and spec.reward_law == "gaussian":
        raise ValueError("known_rewards=False models rewards in [0, 1], got the 'gaussian' "
                         "reward law (use known_rewards=True)")
    validate_learned_rewards(spec, config)
