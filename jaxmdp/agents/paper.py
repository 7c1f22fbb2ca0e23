r"""The paper's four agents: MDP-UCB, MDP-DMED, OLP and MDP-PS.

Cowan, Katehakis & Pirutinsky (2019), section 3. At every round each agent re-estimates
the MDP and re-solves it with the planner in its configuration (:mod:`jaxmdp.planning`),
which gives ``p_hat``, the good actions and the bias ``v_hat`` of the estimated MDP; the
agents differ only in how they turn that :class:`~jaxmdp.Estimate` into an action in the
current state ``x`` at round ``t``:

* **MDP-UCB** (eq. 3): ``u_a = r(x, a) + kl_ucb(p_hat[x, a], v_hat, ln t / n[x, a])``.
* **OLP** (Tewari & Bartlett 2008):
  ``u_a = r(x, a) + l1_ucb(p_hat[x, a], v_hat, sqrt(2 ln t / n[x, a]))``.
* **MDP-DMED** (section 3.2): ``a* = argmax_a L(x, a)``, ``L = r + p_hat . v_hat``; for
  ``a != a*`` the discrepancy ``D(a) = ln t / K~(x, a) - n[x, a]`` with
  ``K~(x, a) = kinf(p_hat[x, a], v_hat, L(x, a*) - r(x, a))``; play ``a*`` if every
  ``D(a) <= 0``, else ``argmax D``.
* **MDP-PS** (section 3.4): ``Q^a ~ Dirichlet(N[x, a] + 1)`` (uniform prior; the paper's
  ``Dir(N)`` is undefined at zero counts), ``W_a = r(x, a) + Q^a . v_hat``, argmax.

The argmax runs over the admissible actions ``A(x)`` (the good-action set only shapes the
estimated MDP); inadmissible actions are never played; ties go to the lowest action index.

**Zero counts.** The paper's MDP-UCB and OLP radii ``ln t / 0`` are infinite: the literal
supremum over an unbounded ball is ``r + max v_hat`` for every untried action (and
``0/0`` at ``t = 1``). jaxmdp's *convention* for these two: an admissible action never
tried in ``x`` has an infinite index, so untried actions are played first, lowest index
first. MDP-PS and MDP-DMED have no such rule in the paper and follow it literally: PS
explores through its Dirichlet(N + 1) draw, and DMED's discrepancy of an untried action is
``ln t / K~ - 0`` (in a state never visited all actions tie, ``K~ = 0`` and DMED plays the
lowest-index non-leader once ``t > 1``). The option ``force_untried=True`` applies the
untried-first rule to these two as well.

**Unknown rewards** (``known_rewards=False``; the paper's "future work"). The agent
observes rewards and keeps ``r_hat`` (:func:`jaxmdp.planning.reward_estimate`):
``(sum r + 1) / (n + 2)`` for rewards in ``[0, 1]`` (Bernoulli and deterministic laws),
``sum r / (n + 1)`` for Gaussian rewards of known ``sigma``. It plans with ``r_hat``, and
each index extends to the joint law of (reward, next state), whose KL divergence is the sum
of the two parts because the reward is drawn independently of the next state:

* rewards in ``[0, 1]``: the joint law of (Bernoulli reward, next state) on ``2S``
  outcomes, ``p_joint = ((1 - r_hat) p_hat, r_hat p_hat)`` with values
  ``w = (v_hat, 1 + v_hat)``. MDP-UCB's KL ball becomes
  ``kl_ucb(p_joint, w, ln t / n)`` (Burnetas & Katehakis 1997 with the reward in the
  observation), OLP's ``l1_ucb(p_joint, w, sqrt(2 ln t / n))``, MDP-DMED's
  ``K~ = kinf(p_joint, w, L(x, a*))``, and MDP-PS draws the reward mean from its
  Beta(1 + sum r, 1 + n - sum r) posterior. The Bernoulli KL bounds that of any ``[0, 1]``
  law with the same mean, so the rule stays optimistic for deterministic rewards too.
* Gaussian rewards: ``KL = KL(p_hat || q) + (mu - r_hat)^2 / (2 sigma^2)``; MDP-UCB uses
  :func:`jaxmdp.kl_ucb_gaussian`, MDP-DMED :func:`jaxmdp.kinf_gaussian`, OLP adds the
  Gaussian bonus ``sigma sqrt(2 ln t / n)`` to ``r_hat`` and keeps its L1 ball on
  ``p_hat``, and MDP-PS draws ``N(r_hat, sigma^2 / (n + 1))``.

Example:
    >>> import jaxmdp as jm
    >>> agent = jm.get_agent("ucb")
    >>> agent.name, agent.config.known_rewards
    ('ucb', True)
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp

from jaxmdp.agents.options import boolean, check_options, integer, option
from jaxmdp.agents.protocol import Agent, EnvSpec, Observation
from jaxmdp.agents.rounds import (
    EstimateState,
    check_planner_options,
    init_estimate,
    observe,
    played,
    solve_estimate,
)
from jaxmdp.agents.rules import (
    RULES,
    RewardInfo,
    dmed_select_action,
    olp_select_action,
    ps_select_action,
    ucb_select_action,
)
from jaxmdp.agents.validation import validate_learned_rewards
from jaxmdp.planning import Planner, incremental_planner, reward_estimate

__all__ = [
    "PaperConfig",
    "RewardInfo",
    "dmed_select_action",
    "olp_select_action",
    "paper_agent",
    "ps_select_action",
    "ucb_select_action",
]

PAPER_AGENTS = ("ucb", "dmed", "olp", "ps")


@dataclasses.dataclass(frozen=True)
class PaperConfig:
    """Options of the paper's agents (every field enters the agent's equality and hash).

    Attributes:
        known_rewards: the agent is told the mean rewards (the paper's setting, default)
            or learns them from observed rewards.
        force_untried: MDP-PS and MDP-DMED only: play untried admissible actions first
            (not in the paper; off by default). MDP-UCB and OLP always do (convention).
        planner: the :class:`~jaxmdp.planning.Planner` that solves the estimate each
            round (default :func:`~jaxmdp.planning.incremental_planner`).
        refresh_every: the incremental planner's re-inversion period (``None``: the
            dtype's default).
    """

    known_rewards: bool = option(True, boolean())
    force_untried: bool = option(False, boolean())
    planner: Planner = dataclasses.field(default_factory=incremental_planner)
    refresh_every: int | None = option(None, integer(), kind="structure")

    def __post_init__(self):
        check_options(self)


def _check_config(name: str, config: PaperConfig) -> None:
    if config.force_untried and name not in ("dmed", "ps"):
        raise ValueError(f"force_untried applies to 'dmed' and 'ps' ({name!r} always plays "
                         f"untried actions first), got force_untried=True for {name!r}")


def _planning_rewards(obs: Observation, visits, spec: EnvSpec, config: PaperConfig):
    if config.known_rewards:
        return jnp.asarray(spec.rewards), None
    r_hat = reward_estimate(obs.reward_sums, visits, spec.reward_law)
    return r_hat, RewardInfo(spec.reward_law, spec.reward_sigma, obs.reward_sums)


def _init(key, spec: EnvSpec, config: PaperConfig) -> EstimateState:
    del key
    dtype = jnp.asarray(spec.rewards).dtype
    counts = jnp.zeros((spec.num_states, spec.num_actions, spec.num_states), jnp.int32)
    rewards = jnp.asarray(spec.rewards) if config.known_rewards else jnp.full(
        (spec.num_states, spec.num_actions), 0.5, dtype)
    return init_estimate(counts, rewards, spec.mask, config.planner)


def _make_step(name: str):
    rule = RULES[name]

    def step(key, state: EstimateState, obs: Observation, spec: EnvSpec, config: PaperConfig):
        state = observe(state, obs.counts, obs.step, refresh_every=config.refresh_every)
        rewards, info = _planning_rewards(obs, state.visits, spec, config)
        est, state = solve_estimate(state, rewards, spec.mask, obs.step, config.planner,
                                    refresh_every=config.refresh_every)
        options = {"force_untried": config.force_untried} if name in ("dmed", "ps") else {}
        action = rule(key, obs.t, obs.state, obs.counts, est, info, **options)
        return action, played(state, obs.state, action)

    step.__name__ = f"{name}_step"
    return step


_STEPS = {name: _make_step(name) for name in PAPER_AGENTS}


def paper_agent(name: str, *, known_rewards: bool = True, force_untried: bool = False,
                planner: Planner | str = "incremental",
                refresh_every: int | None = None) -> Agent:
    """One of the paper's four agents, configured.

    Args:
        name: ``"ucb"``, ``"dmed"``, ``"olp"`` or ``"ps"``.
        known_rewards: plan with the environment's mean rewards (the paper's setting,
            default) or learn them (:mod:`jaxmdp.agents.paper`).
        force_untried: ``"dmed"`` and ``"ps"`` only; untried actions first (not the
            paper's rule; off by default).
        planner: a :class:`~jaxmdp.planning.Planner`, or ``"incremental"`` (default,
            :func:`~jaxmdp.planning.incremental_planner`) or ``"full"``
            (:func:`~jaxmdp.planning.exact_planner`).
        refresh_every: the incremental planner's re-inversion period; ``None`` for the
            dtype's default.

    Returns:
        The :class:`~jaxmdp.Agent`.

    Raises:
        ValueError: for an option of the wrong type or value.
    """
    if name not in PAPER_AGENTS:
        raise ValueError(f"name must be one of {list(PAPER_AGENTS)}, got {name!r}")
    planner = check_planner_options(planner, refresh_every)
    config = PaperConfig(known_rewards, force_untried, planner, refresh_every)
    _check_config(name, config)
    return Agent(name, _init, _STEPS[name], config, validate_learned_rewards)
