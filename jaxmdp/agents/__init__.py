"""Agents: the protocol (:mod:`jaxmdp.agents.protocol`) and the registry of named agents.

The paper's four agents (:mod:`.paper`) and the field's baselines (:mod:`.ucrl`,
:mod:`.scal`, :mod:`.tucrl`, :mod:`.psrl`, :mod:`.imed`, :mod:`.med`, :mod:`.qlearning`)
are registered here, in one table; a user adds an agent with :func:`register_agent`.
"""

import functools

from jaxmdp.agents import imed, med, paper, psrl, qlearning, scal, tucrl, ucrl
from jaxmdp.agents.protocol import (
    Agent,
    EnvSpec,
    InitFn,
    Observation,
    StepFn,
    agent_factory,
    agent_names,
    agent_options,
    get_agent,
    register_agent,
)

__all__ = ["AGENTS", "Agent", "EnvSpec", "InitFn", "Observation", "StepFn", "agent_factory",
           "agent_names", "agent_options", "get_agent", "register_agent"]

#: jaxmdp's named agents: name -> factory(**options) -> Agent.
AGENTS = {
    **{name: functools.partial(paper.paper_agent, name) for name in paper.PAPER_AGENTS},
    "ucrl2": functools.partial(ucrl.ucrl_agent, "ucrl2"),
    "kl_ucrl": functools.partial(ucrl.ucrl_agent, "kl_ucrl"),
    "ucrl2b": ucrl.ucrl2b_agent,
    "ucrl3": ucrl.ucrl3_agent,
    "scal": scal.scal_agent,
    "scal_plus": scal.scal_plus_agent,
    "tucrl": tucrl.tucrl_agent,
    "tsde": psrl.tsde_agent,
    "psrl": psrl.psrl_agent,
    "imed_rl": imed.imed_rl_agent,
    "med_rl": med.med_rl_agent,
    "optimistic_q": qlearning.optimistic_q_agent,
}
for _name, _factory in AGENTS.items():
    register_agent(_name, _factory)
del _name, _factory
