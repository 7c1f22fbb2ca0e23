"""The UCRL family's episodes, planning, ties and batching, for any variant's sets.

:class:`UCRLConfig` holds the family's options and the variant (its :class:`UCRLSets`);
:func:`ucrl_variant` turns a sets type into an agent factory whose options are the
variant's fields and the family's. The algorithm is described in :mod:`jaxmdp.agents.ucrl`.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxmdp.agents.batching import (
    CONDS,
    cond_compact,
    episode_cond,
    resolve_cond,
    resolve_episode_chunk,
)
from jaxmdp.agents.options import (
    boolean,
    check_options,
    choice,
    declared_options,
    integer,
    merge_numbers,
    option,
    real,
    split_numbers,
)
from jaxmdp.agents.protocol import Agent, EnvSpec, Observation
from jaxmdp.agents.ucrl._sets import EpisodeStats, EVISets, UCRLSets
from jaxmdp.mdp import check_unit_rewards
from jaxmdp.planning import KERNELS, ConfidenceSet, ModelChange, Planner, Status

__all__ = [
    "EPSILON_RULES",
    "RESAMPLED_TIES",
    "TIES",
    "UCRLConfig",
    "UCRLState",
    "tied_choices",
    "ucrl_family_agent",
    "ucrl_variant",
]

#: EVI's span tolerance at an episode start ``t_k``: ``1/sqrt(t_k)`` or ``1/t_k``.
EPSILON_RULES = ("sqrt", "t")
#: Tie rules of the episode's policy (see :class:`UCRLConfig`).
TIES = ("lowest", "random_least_visited", "random_most_visited", "noise")
#: The tie rules whose policy is a law over the tied maximisers, re-sampled at every step.
RESAMPLED_TIES = ("random_least_visited", "random_most_visited")


@dataclasses.dataclass(frozen=True)
class UCRLConfig:
    """Options of every agent of the UCRL family, and the variant's sets.

    Every field enters the agent's equality and hash (one compiled program per
    configuration). A variant's own options are the fields of its ``sets``.

    Attributes:
        sets: the variant (a :class:`~jaxmdp.agents.ucrl.UCRLSets`).
        known_rewards: plan with the environment's mean rewards (no reward radius) or
            learn them (default: these baselines learn rewards, in ``[0, 1]``).
        delta: the confidence parameter, in ``(0, 1)``.
        epsilon_rule: EVI's span tolerance: ``"sqrt"`` (``1/sqrt(t_k)``, Jaksch et al.)
            or ``"t"`` (``1/t_k``, the StatisticalRL code's rule).
        max_evi_steps: the most EVI sweeps per episode start.
        cond: how episode starts are batched (:data:`jaxmdp.agents.batching.CONDS`):
            ``"auto"`` (default: ``"chunked"`` on a CPU, ``"cond_any"`` on an
            accelerator, resolved when the agent is built,
            :func:`~jaxmdp.agents.batching.resolve_cond`), ``"chunked"`` (plan only the
            replications that start one, ``episode_chunk`` at a time), ``"compact"``
            (plan only those, gathered into one bucket-sized batch), ``"cond_any"`` (no
            planning in rounds where no replication starts one; the whole batch plans in
            the others, one masked pass) or ``"lax"`` (a plain ``lax.cond``: the whole
            batch plans every round).
        ties: ``"lowest"`` (the lowest action index among the exact maximisers of EVI's
            last sweep, fixed for the episode) or ``"random_least_visited"`` (the
            StatisticalRL ``learners`` rule, ``UCRL2.py`` lines 91-96 and 144: the exact
            maximisers, then the least visited of them by ``N_k``, stored as a uniform law
            and re-sampled at every step); ``"random_most_visited"`` keeps the most
            visited instead (``UCRL3_lazy``, ``UCRL3.py`` line 425); ``"noise"``
            (rlexplorer's solvers, RonanFR/UCRL ``ab64d14``: ``evi.pyx`` lines 131-137,
            180, ``scopt.pyx`` lines 157-166, 232, 330, 352): each replication draws
            ``U_a`` uniform on ``[0, 1)`` per action index once, at its start, and the
            planner picks ``argmax_a (c_a + 0.1 min(1e-6, epsilon_k) U_a)``, the value
            kept without the noise (:func:`jaxmdp.planning.scopt_noise`; the published
            code draws the ``U_a`` from ``numpy.random.RandomState(seed)``, jaxmdp from
            the replication's key: the same law, not the same numbers). The noise is
            ``1e-7 U_a``, below float32's resolution at values above about 1: run it in
            float64. The values a variant accepts are its
            :meth:`~jaxmdp.agents.ucrl.UCRLSets.tie_rules`.
        warm_start: start each episode's EVI from the previous episode's values (the
            StatisticalRL code, ``UCRL2.py`` line 78) instead of zeros (Jaksch et al.).
        episode_chunk: the replications whose episode starts plan together in one pass
            under ``cond="chunked"``: a positive integer (1: one at a time) or ``"auto"``
            (default: fixed by the number of replications of the run,
            :func:`~jaxmdp.agents.batching.episode_chunk_for`; see
            :mod:`jaxmdp.agents.ucrl`).
        evi_kernel: the planning loop's implementation (:data:`jaxmdp.planning.KERNELS`):
            ``"xla"`` (default, every variant) or ``"pallas"`` (EVI over the L1 ball as
            one kernel, UCRL2: :func:`jaxmdp.evi`'s ``kernel``). The values a variant
            accepts are its :meth:`~jaxmdp.agents.ucrl.UCRLSets.loop_kernels`.
    """

    sets: UCRLSets
    known_rewards: bool = option(False, boolean())
    delta: float = option(0.05, real(low=0.0, high=1.0, low_open=True, high_open=True))
    epsilon_rule: str = option("sqrt", choice(*EPSILON_RULES))
    max_evi_steps: int = option(10_000, integer())
    cond: str = option("auto", choice(*CONDS))
    ties: str = option("lowest", choice(*TIES))
    warm_start: bool = option(False, boolean())
    episode_chunk: int | str = option("auto", integer(auto=True))
    evi_kernel: str = option("xla", choice(*KERNELS))

    def __post_init__(self):
        if not isinstance(self.sets, UCRLSets):
            raise ValueError(f"sets must be a jaxmdp.agents.ucrl.UCRLSets, got "
                             f"{self.sets!r}")
        check_options(self)
        object.__setattr__(self, "cond", resolve_cond(self.cond))
        rules = self.sets.tie_rules()
        if self.ties not in rules:
            raise ValueError(f"ties must be one of {list(rules)} for "
                             f"{type(self.sets).__name__}, got {self.ties!r}")
        kernels = self.sets.loop_kernels()
        if self.evi_kernel not in kernels:
            raise ValueError(f"evi_kernel must be one of {list(kernels)} for "
                             f"{type(self.sets).__name__}, got {self.evi_kernel!r}")

    @property
    def ball(self):
        """The ball of :func:`jaxmdp.evi` of a variant planned by EVI
        (:class:`~jaxmdp.agents.ucrl.EVISets`), else None."""
        return self.sets.ball if isinstance(self.sets, EVISets) else None

    @property
    def planner(self) -> Planner:
        """The variant's planner with this configuration's cap and warm start."""
        return self.sets.planner(max_steps=self.max_evi_steps, warm_start=self.warm_start,
                                 kernel=self.evi_kernel)


class UCRLState(NamedTuple):
    """State of one replication (the same fields for every variant and option).

    Attributes:
        policy: ``pi_k``, int32 ``[S]``.
        episode_visits: ``N_k(s, a)``, the visits before the episode started, int32
            ``[S, A]``.
        nu: ``nu_k(s, a)``, the visits within the episode, int32 ``[S, A]``.
        t_k: the round the episode started, int32.
        episodes: episodes started so far, int32.
        evi_steps: EVI sweeps so far (all episodes), int32.
        evi_unconverged: episode starts whose EVI stopped at ``max_evi_steps``, int32.
        choices: the actions the episode's policy draws from in each state (the tied
            maximisers kept by ``ties``), bool ``[S, A]``; used only with the ties of
            :data:`RESAMPLED_TIES`.
        reward_squares: sums of squared observed rewards of each pair, ``[S, A]`` (the
            empirical variances of UCRL2B, UCRL3, SCAL and TUCRL; rewards of initial
            counts are not seen and do not enter).
        values: the last planner values (the next warm start with ``warm_start``), ``[S]``.
        mix_action: the other action of a mixing policy (``sets.mixes()``), int32 ``[S]``.
        mix_weight: the probability of playing ``mix_action`` instead of ``policy``,
            ``[S]`` (zeros for a deterministic policy).
        action_noise: the uniforms ``U_a`` of the tie noise, drawn once, ``[A]`` (zeros
            unless ``ties="noise"`` or ``sets.draws_action_noise()``).
    """

    policy: jax.Array
    episode_visits: jax.Array
    nu: jax.Array
    t_k: jax.Array
    episodes: jax.Array
    evi_steps: jax.Array
    evi_unconverged: jax.Array
    choices: jax.Array
    reward_squares: jax.Array
    values: jax.Array
    mix_action: jax.Array
    mix_weight: jax.Array
    action_noise: jax.Array

    @property
    def unconverged(self) -> jax.Array:
        """Planning solves that did not converge (``evi_unconverged``), int32."""
        return self.evi_unconverged


def _confidence(stats: EpisodeStats, spec: EnvSpec, config: UCRLConfig):
    """``(p_hat, r_tilde, radius, epsilon)`` of the episode of ``stats``."""
    epsilon = 1.0 / (jnp.sqrt(stats.t_k) if config.epsilon_rule == "sqrt" else stats.t_k)
    p_hat, r_tilde, radius = config.sets.confidence(stats, spec, config.delta)
    if config.known_rewards:
        r_tilde = jnp.asarray(spec.rewards, jnp.asarray(spec.rewards).dtype)
    return p_hat, r_tilde, radius, epsilon


def tied_choices(p_opt, r_tilde, u, mask, visits, ties: str):
    """The actions the episode's policy draws from: the exact maximisers of
    ``r_tilde + q_opt . u``, then the least (``"random_least_visited"``) or most
    (``"random_most_visited"``) visited of them (``UCRL2.py`` lines 91-96), bool
    ``[S, A]``."""
    q = jnp.where(mask, r_tilde + jnp.einsum("sax,x->sa", p_opt, u), -jnp.inf)
    tied = q == jnp.max(q, axis=-1, keepdims=True)
    v = visits if ties == "random_least_visited" else -visits
    v = jnp.where(tied, v, jnp.iinfo(jnp.int32).max)
    return tied & (v == jnp.min(v, axis=-1, keepdims=True))


def _new_episode(counts, reward_sums, t, x, state: UCRLState, spec: EnvSpec,
                 config: UCRLConfig) -> UCRLState:
    dtype = jnp.asarray(spec.rewards).dtype
    stats = EpisodeStats(counts, reward_sums, state.reward_squares,
                         jnp.asarray(t).astype(dtype), x, state.action_noise)
    p_hat, r_tilde, radius, epsilon = _confidence(stats, spec, config)
    mask = jnp.asarray(spec.mask, bool)
    tie_noise = state.action_noise if config.ties == "noise" else None
    model = ConfidenceSet(p_hat, r_tilde, radius, mask, epsilon, tie_noise)
    result, values = config.planner.update(state.values, ModelChange(model))
    visits = jnp.sum(counts, axis=-1).astype(jnp.int32)
    mix_action, mix_weight = state.mix_action, state.mix_weight
    if config.sets.mixes():
        mix_action, mix_weight = config.sets.mixture(model, result)
    if config.ties not in RESAMPLED_TIES:
        choices = state.choices
    else:
        mask = mask | ~jnp.any(mask, axis=-1, keepdims=True)
        choices = tied_choices(result.q_opt, r_tilde.astype(result.bias.dtype), result.bias,
                               mask, visits, config.ties)
    return state._replace(
        policy=result.policy,
        episode_visits=visits,
        nu=jnp.zeros_like(state.nu),
        t_k=jnp.asarray(t, jnp.int32),
        episodes=state.episodes + 1,
        evi_steps=state.evi_steps + result.num_steps,
        evi_unconverged=state.evi_unconverged
        + (result.status != Status.CONVERGED).astype(jnp.int32),
        choices=choices,
        values=values.astype(state.values.dtype),
        mix_action=mix_action.astype(jnp.int32),
        mix_weight=mix_weight.astype(state.mix_weight.dtype),
    )


def _keep(counts, reward_sums, t, x, state: UCRLState, mask, rewards, numbers) -> UCRLState:
    del counts, reward_sums, t, x, mask, rewards, numbers
    return state


def _init(key, spec: EnvSpec, config: UCRLConfig) -> UCRLState:
    S, A = spec.num_states, spec.num_actions
    zero = jnp.zeros((), jnp.int32)
    dtype = jnp.asarray(spec.rewards).dtype
    noise = jnp.zeros(A, dtype)
    if config.ties == "noise" or config.sets.draws_action_noise():
        noise = jax.random.uniform(key, (A,), dtype)
    return UCRLState(policy=jnp.zeros(S, jnp.int32),
                     episode_visits=jnp.zeros((S, A), jnp.int32),
                     nu=jnp.zeros((S, A), jnp.int32), t_k=zero, episodes=zero,
                     evi_steps=zero, evi_unconverged=zero,
                     choices=jnp.ones((S, A), bool),
                     reward_squares=jnp.zeros((S, A), dtype),
                     values=jnp.zeros(S, dtype),
                     mix_action=jnp.zeros(S, jnp.int32),
                     mix_weight=jnp.zeros(S, dtype),
                     action_noise=noise)


def _draw_keys(key, ties: str):
    """The keys of the round's two draws: ``split(key)`` with the ties of
    :data:`RESAMPLED_TIES`, else ``key`` twice."""
    return jax.random.split(key) if ties in RESAMPLED_TIES else (key, key)


def _categorical(key, which, choices):
    key = jax.random.split(key)[which]  # the key of _draw_keys(key, ties)[which]
    return jax.random.categorical(key, jnp.where(choices, 0.0, -jnp.inf)).astype(jnp.int32)


def _only_choice(key, which, choices):
    del key, which
    return jnp.argmax(choices).astype(jnp.int32)


def _draw(key, which: int, state: UCRLState, x, config, draw=True):
    """The action at ``x``: the policy's, or a uniform draw among the tied choices with the
    key ``_draw_keys(key, config.ties)[which]`` (with the ties of :data:`RESAMPLED_TIES`).

    A draw among one choice is that choice (the Gumbel draw of an action of logit
    ``-inf`` never wins), so the draw, and the split of ``key``, run only where ``draw``
    holds and ``x`` has two choices or more (:func:`~jaxmdp.agents.batching.cond_compact`:
    under ``vmap`` on the replications that need it, in the rounds where some do), with
    the same result bit for bit."""
    if config.ties not in RESAMPLED_TIES:
        return state.policy[x]
    choices = state.choices[x]
    return cond_compact(draw & (jnp.sum(choices, dtype=jnp.int32) > 1), _categorical,
                        _only_choice, key, jnp.int32(which), choices)


def _step(key, state: UCRLState, obs: Observation, spec: EnvSpec, config: UCRLConfig):
    x = obs.state
    # The reward of the previous round, squared into its pair's sum (none at step 0).
    px, pa = obs.previous_state, obs.previous_action
    state = state._replace(reward_squares=state.reward_squares.at[px, pa].add(
        jnp.where(obs.step > 0, obs.reward * obs.reward, 0.0)))
    action = _draw(key, 0, state, x, config)
    start = (obs.step == 0) | config.sets.ends_episode(state, obs, action)

    # The environment's arrays and the agent's number options are operands, not closed
    # over: they may be tracers, which the batching conditionals' custom_vmap cannot
    # close over.
    structure, numbers = split_numbers(config)

    def plan(counts, reward_sums, t, x, state, mask, rewards, numbers):
        return _new_episode(counts, reward_sums, t, x, state,
                            spec._replace(mask=mask, rewards=rewards),
                            merge_numbers(structure, numbers))

    state = episode_cond(config.cond, chunk=config.episode_chunk)(
        start, plan, _keep, obs.counts, obs.reward_sums, obs.t, x, state, spec.mask,
        spec.rewards, numbers)
    if config.sets.mixes():
        second = _draw_keys(key, config.ties)[1]
        other = jax.random.uniform(second, dtype=state.mix_weight.dtype) < state.mix_weight[x]
        action = jnp.where(other, state.mix_action[x], state.policy[x])
    elif config.ties not in RESAMPLED_TIES:
        action = state.policy[x]
    else:
        action = jnp.where(start, _draw(key, 1, state, x, config, draw=start), action)
    return action, state._replace(nu=state.nu.at[x, action].add(1))


def _validate(spec: EnvSpec, config: UCRLConfig) -> None:
    """Learned rewards need a law on ``[0, 1]``: means in ``[0, 1]``, not Gaussian."""
    if config.known_rewards:
        return
    if spec.reward_law == "gaussian":
        raise ValueError("known_rewards=False in the UCRL family assumes rewards in [0, 1], "
                         "got the 'gaussian' reward law (use known_rewards=True)")
    check_unit_rewards(spec.rewards, spec.mask,
                       "known_rewards=False in the UCRL family assumes rewards in [0, 1]",
                       " (use known_rewards=True)")


def ucrl_family_agent(name: str, sets: UCRLSets, **options) -> Agent:
    """An agent of the UCRL family with the confidence sets ``sets``.

    Args:
        name: the agent's name.
        sets: the variant, a :class:`~jaxmdp.agents.ucrl.UCRLSets` value (e.g.
            ``UCRL2Sets()``).
        **options: the family's options (the fields of :class:`UCRLConfig` other than
            ``sets``), default as there.

    Returns:
        The :class:`~jaxmdp.Agent`.

    Raises:
        ValueError: for an option the family does not have, or of the wrong type or
            value, naming it.

    Example:
        >>> from jaxmdp.agents.ucrl import UCRL2Sets, ucrl_family_agent
        >>> ucrl_family_agent("my_ucrl2", UCRL2Sets(), delta=0.1).config.ball
        'l1'
    """
    family = {opt.name for opt in declared_options(UCRLConfig)}
    unknown = sorted(set(options) - family)
    if unknown:
        raise ValueError(f"the UCRL family takes the options {sorted(family)}, got "
                         f"options {unknown}")
    return Agent(name, _init, _step, UCRLConfig(sets, **options), _validate,
                 resolve_episode_chunk)


def ucrl_variant(sets_type: type[UCRLSets], name: str, *, doc: str | None = None,
                 fixed: Mapping[str, Any] | None = None, **defaults) -> Callable[..., Agent]:
    """The agent factory of a UCRL variant: ``factory(**options) -> Agent``.

    The factory's keyword options are the variant's own (the fields of ``sets_type``
    declared with :func:`jaxmdp.agents.options.option`) followed by the family's (the
    fields of :class:`UCRLConfig`) except those ``fixed``; its signature lists them with
    their defaults, so :func:`jaxmdp.get_agent` and :func:`jaxmdp.agents.agent_options`
    know them. A family option whose default the variant computes from its own options
    (:meth:`~jaxmdp.agents.ucrl.UCRLSets.family_defaults`) has the default ``None``:
    "the variant's default".

    Args:
        sets_type: the variant's sets, a frozen dataclass deriving from
            :class:`~jaxmdp.agents.ucrl.UCRLSets`.
        name: the agent's name.
        doc: the factory's docstring; default: one naming the agent, its sets and every
            option with its default.
        fixed: family options the variant sets and does not offer.
        **defaults: the variant's defaults of the family's options.

    Returns:
        The factory; register it with :func:`jaxmdp.register_agent`.

    Raises:
        ValueError: for a default or fixed value of an option the family does not have.

    Example:
        >>> import jaxmdp as jm
        >>> from jaxmdp.agents.ucrl import UCRL2Sets, ucrl_variant
        >>> factory = ucrl_variant(UCRL2Sets, "ucrl2_sharp", epsilon_rule="t")
        >>> factory(delta=0.1).config.epsilon_rule
        't'
    """
    fixed = dict(fixed or {})
    family = declared_options(UCRLConfig)
    names = {opt.name for opt in family}
    for given in (defaults, fixed):
        if set(given) - names:
            raise ValueError(f"the UCRL family has the options {sorted(names)}, got "
                             f"{sorted(set(given) - names)}")
    own = declared_options(sets_type)
    dependent = set(sets_type().family_defaults())
    offered = [(opt.name, None if opt.name in dependent else defaults.get(opt.name,
                                                                          opt.default))
               for opt in family if opt.name not in fixed]
    parameters = [inspect.Parameter(opt.name, inspect.Parameter.KEYWORD_ONLY,
                                    default=opt.default) for opt in own]
    parameters += [inspect.Parameter(option_name, inspect.Parameter.KEYWORD_ONLY,
                                     default=default) for option_name, default in offered]
    signature = inspect.Signature(parameters, return_annotation=Agent)
    own_names = [opt.name for opt in own]

    def factory(**options) -> Agent:
        try:
            bound = signature.bind(**options)
        except TypeError:
            raise ValueError(f"agent {name!r} takes the options "
                             f"{list(signature.parameters)}, got options "
                             f"{sorted(options)}") from None
        bound.apply_defaults()
        values = dict(bound.arguments)
        sets = sets_type(**{key: values.pop(key) for key in own_names})
        resolved = dict(sets.family_defaults())
        for key, value in values.items():
            if value is not None or key not in dependent:
                resolved[key] = value
        return ucrl_family_agent(name, sets, **fixed, **resolved)

    factory.__signature__ = signature
    factory.__name__ = factory.__qualname__ = f"{name}_agent"
    listed = ", ".join(f"``{p.name}={p.default!r}``" for p in parameters)
    factory.__doc__ = doc or (
        f"The agent ``{name!r}``: the UCRL family with the sets "
        f":class:`~{sets_type.__module__}.{sets_type.__qualname__}`.\n\n"
        f"Options (the variant's, then the family's, :class:`UCRLConfig`; ``None``: the "
        f"variant's default): {listed}.")
    return factory

