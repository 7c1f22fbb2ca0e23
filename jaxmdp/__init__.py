"""jaxmdp: learning unknown average-reward MDPs with index policies, in JAX.

Implements the indices of Cowan, Katehakis & Pirutinsky (2019), "Accelerating the
Computation of UCB and Related Indices for Reinforcement Learning": MDP-UCB (``kl_ucb``),
MDP-DMED (``kinf``), OLP (``l1_ucb``) and MDP-PS, the average-reward planning they stand
on, a ``lax.scan`` simulator for regret experiments, and gradient-based sensitivity
analysis. Everything public is re-exported here; nothing else is public.
"""

# Each module adds its public names below, one import line per module, and to __all__.
from jaxmdp import analysis, envs, planning
from jaxmdp._deprecations import DEPRECATIONS as _DEPRECATIONS  # noqa: F401 (the table, read)
from jaxmdp._deprecations import attribute as _deprecated_attribute
from jaxmdp._deprecations import install as _install_deprecations
from jaxmdp._registry import Registry
from jaxmdp._simulate import Trajectories, grid_points, simulate, sweep
from jaxmdp.agents import (
    Agent,
    EnvSpec,
    Observation,
    agent_names,
    agent_options,
    get_agent,
    register_agent,
)
from jaxmdp.analysis.hardness import Hardness, hardness
from jaxmdp.analysis.lower_bound import RegretLowerBound, regret_lower_bound
from jaxmdp.analysis.sensitivity import (
    GainSensitivity,
    IndexSensitivity,
    LowerBoundSensitivity,
    gain_sensitivity,
    index_sensitivity,
    lower_bound_sensitivity,
)
from jaxmdp.analysis.statistics import (
    ConfidenceInterval,
    PairedDifference,
    bootstrap_ci,
    interquartile_mean,
    mean_ci,
    normalised_regret,
    paired_difference,
    stratified_bootstrap_ci,
)
from jaxmdp.indices.gaussian import kinf_gaussian, kl_ucb_gaussian
from jaxmdp.indices.kl import (
    KLSolution,
    check_indices_inputs,
    kinf,
    kinf_solve,
    kl_ucb,
    kl_ucb_solve,
)
from jaxmdp.indices.l1 import l1_ball_maximiser, l1_ucb
from jaxmdp.mdp import MDP
from jaxmdp.planning import (
    Estimate,
    Planner,
    Solution,
    Status,
    estimate,
    evi,
    gaps,
    policy_iteration,
    solve_average_reward,
)

__all__ = [
    "KLSolution",
    "kinf",
    "kinf_solve",
    "kl_ucb",
    "kl_ucb_solve",
    "kinf_gaussian",
    "kl_ucb_gaussian",
    "l1_ucb",
    "l1_ball_maximiser",
    "check_indices_inputs",
    "MDP",
    "RegretLowerBound",
    "analysis",
    "envs",
    "planning",
    "Planner",
    "Solution",
    "Status",
    "gaps",
    "policy_iteration",
    "regret_lower_bound",
    "solve_average_reward",
    "Agent",
    "EnvSpec",
    "Observation",
    "agent_names",
    "agent_options",
    "get_agent",
    "register_agent",
    "Registry",
    "Estimate",
    "estimate",
    "evi",
    "Hardness",
    "hardness",
    "Trajectories",
    "grid_points",
    "simulate",
    "sweep",
    "GainSensitivity",
    "IndexSensitivity",
    "LowerBoundSensitivity",
    "gain_sensitivity",
    "index_sensitivity",
    "lower_bound_sensitivity",
    "mean_ci",
    "bootstrap_ci",
    "stratified_bootstrap_ci",
    "ConfidenceInterval",
    "paired_difference",
    "PairedDifference",
    "interquartile_mean",
    "normalised_regret",
]


# Names and modules removed from the public API, each kept for one release after the one
# that removed it: the one table is jaxmdp._deprecations.DEPRECATIONS (optax's pattern),
# imported above as _DEPRECATIONS.
_install_deprecations()


def __getattr__(name: str):
    """Serves the names of :data:`_DEPRECATIONS`, warning which version removes them."""
    return _deprecated_attribute(name)
