"""jaxmdp: learning unknown average-reward MDPs with index policies, in JAX.

Implements the indices of Cowan, Katehakis & Pirutinsky (2019), "Accelerating the
Computation of UCB and Related Indices for Reinforcement Learning": MDP-UCB (``kl_ucb``),
MDP-DMED (``kinf``), OLP (``l1_ucb``) and MDP-PS, the average-reward planning they stand
on, a ``lax.scan`` simulator for regret experiments, and gradient-based sensitivity
analysis. Everything public is re-exported here; nothing else is public.
"""

# Each module adds its public names below, one import line per module, and to __all__.
from jaxmdp import envs, examples
from jaxmdp.agents import Agent, EnvSpec, Observation, agent_names, get_agent
from jaxmdp.analysis.hardness import Hardness, hardness
from jaxmdp.estimators import Estimate, estimate
from jaxmdp.evi import EVIResult, EVIStatus, evi
from jaxmdp.indices.gaussian import kinf_gaussian, kl_ucb_gaussian
from jaxmdp.indices.kl import (
    KLSolution,
    check_indices_inputs,
    kinf,
    kinf_solve,
    kl_ucb,
    kl_ucb_solve,
)
from jaxmdp.indices.l1 import l1_ucb
from jaxmdp.mdp import MDP
from jaxmdp.planning import (
    PlanningSolution,
    PlanningStatus,
    RegretLowerBound,
    gaps,
    policy_iteration,
    regret_lower_bound,
    solve_average_reward,
)
from jaxmdp.sensitivity import (
    GainSensitivity,
    IndexSensitivity,
    LowerBoundSensitivity,
    gain_sensitivity,
    index_sensitivity,
    lower_bound_sensitivity,
)
from jaxmdp.simulate import Trajectories, simulate

__all__ = [
    "KLSolution",
    "kinf",
    "kinf_solve",
    "kl_ucb",
    "kl_ucb_solve",
    "kinf_gaussian",
    "kl_ucb_gaussian",
    "l1_ucb",
    "check_indices_inputs",
    "MDP",
    "PlanningSolution",
    "PlanningStatus",
    "RegretLowerBound",
    "envs",
    "examples",
    "gaps",
    "policy_iteration",
    "regret_lower_bound",
    "solve_average_reward",
    "Agent",
    "EnvSpec",
    "Observation",
    "agent_names",
    "get_agent",
    "Estimate",
    "estimate",
    "EVIResult",
    "EVIStatus",
    "evi",
    "Hardness",
    "hardness",
    "Trajectories",
    "simulate",
    "GainSensitivity",
    "IndexSensitivity",
    "LowerBoundSensitivity",
    "gain_sensitivity",
    "index_sensitivity",
    "lower_bound_sensitivity",
]
