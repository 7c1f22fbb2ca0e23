"""Agents: the protocol (:mod:`jaxmdp.agents.protocol`) and the registered agents.

The paper's four agents (:mod:`.paper`) and the field's baselines (:mod:`.ucrl`,
:mod:`.psrl`, :mod:`.imed`, :mod:`.med`) register themselves on import.
"""

from jaxmdp.agents.protocol import (  # noqa: F401
    Agent,
    EnvSpec,
    InitFn,
    Observation,
    StepFn,
    agent_names,
    get_agent,
    register_agent,
)

__all__ = ["Agent", "EnvSpec", "Observation", "agent_names", "get_agent", "register_agent"]

from jaxmdp.agents import imed as imed  # noqa: E402
from jaxmdp.agents import med as med  # noqa: E402
from jaxmdp.agents import paper as paper  # noqa: E402
from jaxmdp.agents import psrl as psrl  # noqa: E402
from jaxmdp.agents import qlearning as qlearning  # noqa: E402
from jaxmdp.agents import ucrl as ucrl  # noqa: E402
