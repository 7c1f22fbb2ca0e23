"""The agent protocol and the registry of named agents.

An agent is a name, two pure functions over its own state pytree and a hashable
configuration, in the style of gymnax's environments (``reset`` / ``step`` over an explicit
state with the parameters passed separately) and dm-acme's actors::

    state = agent.init(key, spec)                          # once per replication
    action, state = agent.step(key, state, observation, spec)   # once per round

* ``spec`` (:class:`EnvSpec`) is what an agent may know of the environment before it
  plays: sizes, admissible actions, the reward law's family and, for agents that are told
  them (``known_rewards=True``), the mean rewards.
* ``observation`` (:class:`Observation`) is what it sees at each round: the round ``t``,
  the current state and the statistics the simulator keeps for every agent (transition
  counts and reward sums, initial counts included).
* ``state`` is the agent's own pytree (policies, planner caches, episode bookkeeping).
  The simulator carries it through ``lax.scan``, ``vmap`` and ``shard_map`` and never
  looks inside.

The simulator (:func:`jaxmdp.simulate`) knows the environment, the shared statistics and
the regret bookkeeping and nothing of any agent's planning, so a new agent never touches
it. A minimal agent, playing uniformly at random among admissible actions::

    import jax, jax.numpy as jnp, jaxmdp as jm

    def init(key, spec, config):
        return ()                                           # no state

    def step(key, state, obs, spec, config):
        logits = jnp.where(spec.mask[obs.state], 0.0, -jnp.inf)
        return jax.random.categorical(key, logits).astype(jnp.int32), state

    uniform = jm.Agent("uniform", init, step)
    jm.simulate(jm.envs.make("riverswim-6"), uniform, horizon=1000, replications=8)

Named agents are configured by keyword options: ``get_agent("ucb", known_rewards=False)``
returns an :class:`Agent` whose ``config`` holds the options; two calls with the same
options return equal agents, so ``jit`` compiles once for both.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

import jax

from jaxmdp._registry import Registry
from jaxmdp.agents.options import Option, declared_options

__all__ = [
    "Agent",
    "EnvSpec",
    "Observation",
    "agent_factory",
    "agent_names",
    "agent_options",
    "env_spec",
    "get_agent",
    "register_agent",
]


class EnvSpec(NamedTuple):
    """What an agent may know of the environment before it plays.

    Attributes:
        num_states: ``S`` (Python int).
        num_actions: ``A`` (Python int).
        mask: admissible actions ``A(x)``, bool ``[S, A]``.
        rewards: the mean rewards ``R[x, a]``, ``[S, A]``. Agents configured with
            ``known_rewards=False`` must not read them (the paper's setting gives them to
            the agent; the field's baselines learn them).
        reward_law: the family of the observed rewards (``"deterministic"``,
            ``"bernoulli"`` or ``"gaussian"``; static), see :class:`jaxmdp.MDP`.
        reward_sigma: the Gaussian law's standard deviation (static; 0 otherwise).
        initial_round: the round ``t`` of the first played step (1 plus the number of
            initial transitions; static).
    """

    num_states: int
    num_actions: int
    mask: jax.Array
    rewards: jax.Array
    reward_law: str
    reward_sigma: float
    initial_round: int = 1


class Observation(NamedTuple):
    """What an agent sees at one round (a pytree; batched with the replications).

    Attributes:
        t: the round, int32 scalar, ``t >= 1``: the ``t`` of ``ln t``, counting initial
            transitions (``t = initial_round + step``).
        step: 0-based number of the round within this run, int32 scalar. The simulator
            derives both from the scan index, so they are *not* batched under ``vmap``: a
            ``lax.cond`` on them stays a real branch (e.g. a periodic refresh).
        state: the current state ``x``, int32 scalar.
        counts: transition counts ``N[x, a, y]`` so far, int32 ``[S, A, S]``.
        reward_sums: sums of the observed rewards of each pair ``(x, a)``, ``[S, A]``.
        previous_state: the state of the previous round of this run, int32 scalar
            (``-1`` at ``step == 0``: none).
        previous_action: the action of the previous round, int32 scalar (``-1`` at
            ``step == 0``).
        reward: the reward observed at the previous round, as drawn (0 at
            ``step == 0``), scalar of the rewards' dtype.
    """

    t: jax.Array
    step: jax.Array
    state: jax.Array
    counts: jax.Array
    reward_sums: jax.Array
    previous_state: jax.Array | int = -1
    previous_action: jax.Array | int = -1
    reward: jax.Array | float = 0.0


def env_spec(mdp, initial_round: int = 1) -> EnvSpec:
    """The :class:`EnvSpec` an agent is given for the :class:`~jaxmdp.MDP` ``mdp``, whose
    first played round is ``initial_round`` (1 plus the number of initial transitions),
    as :func:`jaxmdp.simulate` builds it.

    Example:
        >>> import jaxmdp as jm
        >>> jm.agents.env_spec(jm.envs.make("riverswim-6")).num_states
        6
    """
    return EnvSpec(num_states=mdp.num_states, num_actions=mdp.num_actions, mask=mdp.mask,
                   rewards=mdp.R, reward_law=mdp.reward_law, reward_sigma=mdp.reward_sigma,
                   initial_round=initial_round)


InitFn = Callable[[jax.Array, EnvSpec, Any], Any]
StepFn = Callable[[jax.Array, Any, Observation, EnvSpec, Any], tuple[jax.Array, Any]]


@dataclasses.dataclass(frozen=True)
class Agent:
    """A learning agent: a name, pure ``init``/``step`` functions and a configuration.

    ``init_fn(key, spec, config) -> state`` and
    ``step_fn(key, state, observation, spec, config) -> (action, state)`` must be
    traceable (they run inside ``lax.scan`` under ``vmap``); ``action`` is an int32 scalar
    in ``A(x)``. ``config`` is any hashable value (typically a ``NamedTuple`` of options);
    agents are hashable and compared by value, so that :func:`jaxmdp.simulate` can use
    them as static arguments of ``jit``.

    Attributes:
        name: short name, used in figures and tables.
        init_fn: builds the state of one replication.
        step_fn: chooses the action of one round and returns the next state.
        config: the agent's options (hashable).
        validate: optional ``validate(spec, config)`` run eagerly by the simulator before
            the run; raises ``ValueError`` when the agent cannot run on that environment.
        batch_options: optional ``batch_options(config, replications) -> config``: the
            configuration for a run of ``replications`` replications, with the options
            that follow that number fixed (the episodic agents' ``episode_chunk="auto"``);
            :func:`jaxmdp.simulate` and :func:`jaxmdp.sweep` apply it
            (:meth:`for_replications`).
    """

    name: str
    init_fn: InitFn
    step_fn: StepFn
    config: Hashable = None
    validate: Callable[[EnvSpec, Any], None] | None = None
    batch_options: Callable[[Any, int], Any] | None = None

    def init(self, key: jax.Array, spec: EnvSpec) -> Any:
        """The state of one replication before its first round."""
        return self.init_fn(key, spec, self.config)

    def step(self, key: jax.Array, state: Any, observation: Observation,
             spec: EnvSpec) -> tuple[jax.Array, Any]:
        """The action at this round and the state after it."""
        return self.step_fn(key, state, observation, spec, self.config)

    def check(self, spec: EnvSpec) -> None:
        """Runs ``validate`` (if any) on ``spec``; raises ``ValueError``."""
        if self.validate is not None:
            self.validate(spec, self.config)

    def for_replications(self, replications: int) -> Agent:
        """This agent for a run of ``replications`` replications: its configuration with
        the options that follow the number of replications fixed (``batch_options``);
        the agent itself where it has none. A replication's run depends on the others
        only through this number (never on how they are grouped into batches, MDPs,
        sweep points or devices)."""
        if self.batch_options is None:
            return self
        return dataclasses.replace(self, config=self.batch_options(self.config,
                                                                   replications))


#: The one registry of named agents: name -> ``factory(**options) -> Agent``, names
#: case-insensitive (a :class:`~jaxmdp.Registry`, read live). jaxmdp's own agents are
#: registered in one place, :mod:`jaxmdp.agents`; users add theirs with
#: :func:`register_agent`.
AGENTS: Registry[Callable[..., Agent]] = Registry("agent")


def register_agent(name: str, factory: Callable[..., Agent], *, replace: bool = False) -> None:
    """Registers an agent factory under ``name``, for :func:`get_agent` and every place
    that takes an agent name (:func:`jaxmdp.simulate`, ``jaxmdp run``, ``jaxmdp bench``).

    ``factory(**options)`` returns the configured :class:`Agent`; its keyword parameters
    are the agent's options (:func:`get_agent` checks a call's options against its
    signature) and all of them need defaults, so that ``factory()`` is the agent with its
    default options.

    Args:
        name: the agent's name (case-insensitive: ``"UCRL2"`` is ``"ucrl2"``).
        factory: ``factory(**options) -> Agent``.
        replace: allow replacing a name already registered (default False).

    Raises:
        ValueError: for a ``name`` that is not a non-empty string, a ``factory`` that is
            not callable, or a name already registered (without ``replace=True``).

    Example:
        >>> import jax, jax.numpy as jnp, jaxmdp as jm
        >>> def uniform_agent(*, seed_offset: int = 0):
        ...     def init(key, spec, config):
        ...         return ()
        ...     def step(key, state, obs, spec, config):
        ...         logits = jnp.where(spec.mask[obs.state], 0.0, -jnp.inf)
        ...         return jax.random.categorical(key, logits).astype(jnp.int32), state
        ...     return jm.Agent("uniform", init, step, config=seed_offset)
        >>> jm.register_agent("uniform", uniform_agent)
        >>> jm.get_agent("uniform").name
        'uniform'
        >>> jm.register_agent("uniform", uniform_agent)
        Traceback (most recent call last):
        ...
        ValueError: agent 'uniform' is already registered; pass replace=True to replace it
    """
    if not callable(factory):
        raise ValueError(f"factory must be callable, got {factory!r}")
    AGENTS.register(name, factory, replace=replace)


def agent_factory(name: str) -> Callable[..., Agent] | None:
    """The factory registered as ``name`` (case-insensitive), or ``None``."""
    return AGENTS.get(name)


def agent_options(name: str) -> dict[str, Option]:
    """The options of the agent registered as ``name``: its factory's keyword parameters,
    in order, each an :class:`~jaxmdp.agents.options.Option` with its default and its
    kind, ``"number"`` (a real parameter: traced, so :func:`jaxmdp.sweep` can batch it)
    or ``"structure"`` (part of the program). Iterating the result gives the names.

    Raises:
        ValueError: for an unknown name.

    Example:
        >>> import jaxmdp as jm
        >>> options = jm.agent_options("ucrl2b")
        >>> [name for name, o in options.items() if o.kind == "number"]
        ['c_sqrt', 'c_lin', 'delta_split', 'delta']
    """
    factory = AGENTS.lookup(name)
    parameters = [p for p in inspect.signature(factory).parameters.values()
                  if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
    declared = _declared(factory().config)
    return {p.name: declared[p.name]._replace(default=p.default) if p.name in declared
            else Option(p.name, p.default, "structure", None) for p in parameters}


def _declared(config) -> dict[str, Option]:
    """The declared options of a configuration and of the configurations in its fields,
    by name."""
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        return {}
    found = {opt.name: opt for opt in declared_options(type(config))}
    for field in dataclasses.fields(config):
        found.update(_declared(getattr(config, field.name)))
    return found


def agent_names() -> list[str]:
    """The names :func:`get_agent` knows, sorted."""
    return sorted(AGENTS)


def get_agent(agent: str | Agent, **options) -> Agent:
    """The agent called ``agent``, configured by keyword ``options``.

    The names are those of :func:`agent_names`: jaxmdp's agents (the table in
    :mod:`jaxmdp.agents`) and those added by :func:`register_agent`. An :class:`Agent` is
    returned unchanged (then ``options`` must be empty), so user-defined agents work
    wherever a name does.

    Args:
        agent: a name or an :class:`Agent`.
        **options: the agent's options, e.g. ``known_rewards=False``: the keyword
            parameters of its factory (:func:`agent_options`), which documents them.

    Returns:
        The configured :class:`Agent`.

    Raises:
        ValueError: for an unknown name (listing the known ones), options passed with an
            :class:`Agent` object, or an option the agent does not have or of the wrong
            type.

    Example:
        >>> import jaxmdp as jm
        >>> jm.get_agent("ucb", known_rewards=False).config.known_rewards
        False
    """
    if isinstance(agent, Agent):
        if options:
            raise ValueError(f"options can only configure a named agent, got options "
                             f"{sorted(options)} with the Agent object {agent.name!r}")
        return agent
    if agent in AGENTS:
        factory = AGENTS[agent]
        try:
            inspect.signature(factory).bind(**options)
        except TypeError:
            raise ValueError(f"agent {agent!r} takes the options {list(agent_options(agent))}, got "
                             f"options {sorted(options)}") from None
        return factory(**options)
    raise ValueError(f"agent must be an Agent or one of {agent_names()}, got {agent!r}")
