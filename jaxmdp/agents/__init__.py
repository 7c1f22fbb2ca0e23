"""Agents: the protocol (:mod:`jaxmdp.agents.protocol`) and the registry of named agents.

The paper's four agents (:mod:`.paper`) and the field's baselines (the UCRL family
:mod:`.ucrl` with SCAL, SCAL+ and TUCRL, :mod:`.psrl`, :mod:`.imed`, :mod:`.med`,
:mod:`.qlearning`) are registered here, in one table; a user adds an agent with
:func:`register_agent`.
"""

import functools

from jaxmdp.agents import imed, med, paper, psrl, qlearning, ucrl
from jaxmdp.agents.protocol import (
    AGENTS,
    Agent,
    EnvSpec,
    InitFn,
    Observation,
    StepFn,
    agent_factory,
    agent_names,
    agent_options,
    env_spec,
    get_agent,
    register_agent,
)

__all__ = ["AGENTS", "Agent", "EnvSpec", "InitFn", "Observation", "StepFn", "agent_factory",
           "agent_names", "agent_options", "env_spec", "get_agent", "register_agent"]

# jaxmdp's named agents, in one table: name -> factory(**options) -> Agent.
for _name, _factory in (
    *((name, functools.partial(paper.paper_agent, name)) for name in paper.PAPER_AGENTS),
    ("ucrl2", ucrl.ucrl2_agent),
    ("kl_ucrl", ucrl.kl_ucrl_agent),
    ("ucrl2b", ucrl.ucrl2b_agent),
    ("ucrl3", ucrl.ucrl3_agent),
    ("ucrl_rlexplorer", ucrl.ucrl_rlexplorer_agent),
    ("scal", ucrl.scal_agent),
    ("scal_plus", ucrl.scal_plus_agent),
    ("tucrl", ucrl.tucrl_agent),
    ("tsde", psrl.tsde_agent),
    ("psrl", psrl.psrl_agent),
    ("imed_rl", imed.imed_rl_agent),
    ("med_rl", med.med_rl_agent),
    ("optimistic_q", qlearning.optimistic_q_agent),
):
    register_agent(_name, _factory)
del _name, _factory
