"""Regret experiments: whole trajectories in ``lax.scan``, batched over replications.

One simulator for every agent. A trajectory is a ``lax.scan`` whose body ``step`` does,
at round ``t`` in state ``x``:

1. estimate the MDP from the counts and re-solve it, warm-started from the previous
   step's policy (:func:`jaxmdp.estimate`);
2. ask the agent for an action (``agent.select_action``);
3. draw the next state from the true transition law, update the counts and accumulate
   the pseudo-regret ``Delta(x, a)`` and the realised regret ``gain* - r(x, a)``.

Replications are ``vmap``ped over independent keys (``jax.random.split(key, R)``). Long
runs are cut into chunks of scan steps (one jitted call each) driven from a Python loop
with a progress bar; only every ``record_every``-th cumulative value is kept, so memory
stays bounded for any horizon.

Per-step planning is incremental by default (:mod:`jaxmdp.incremental`): the estimated
MDP changes in one row per round, so each policy evaluation updates the previous inverse
of the evaluation matrix by Sherman–Morrison (``O(S^2)``) instead of factorising it again
(``O(S^3)``), with a full re-inversion every ``refresh_every`` rounds; ``planner="full"``
re-solves from scratch. With ``devices``, replications are split over a
:class:`~jax.sharding.Mesh` and run with ``jax.shard_map`` (:mod:`jaxmdp._sharding`);
results do not depend on the number of devices.
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmdp import _sharding
from jaxmdp._progress import Progress
from jaxmdp.agents import Agent, get_agent
from jaxmdp.estimators import estimate, estimated_mdp
from jaxmdp.incremental import default_refresh_every, incremental_estimate, init_evaluation
from jaxmdp.mdp import MDP
from jaxmdp.planning import gaps as _gaps
from jaxmdp.planning import solve_average_reward

#: Horizons up to this many rounds record every round by default.
MAX_DEFAULT_RECORDS = 100_000

#: Random bits inside the simulator come from JAX's original (non-partitionable) threefry
#: counter layout. Every replication draws a few numbers per step from its own key; on CPU
#: this layout costs about a quarter as much per draw as the partitionable one (JAX's
#: default), which was the largest single cost of an MDP-PS step. Replications stay
#: independent and results are reproducible: only the map from keys to bits differs.
PARTITIONABLE_THREEFRY = False

#: Per-step planners: incremental evaluation (default) or a full re-solve every round.
PLANNERS = ("incremental", "full")


class Trajectories(NamedTuple):
    """Result of :func:`simulate` (a pytree of arrays).

    Attributes:
        pseudo_regret: cumulative pseudo-regret ``sum_t Delta(x_t, a_t)`` of the true MDP,
            ``[replications, horizon // record_every]``.
        regret: cumulative realised regret ``k * gain* - sum_t r(x_t, a_t)`` over the
            ``k`` played rounds, same shape.
        times: the number of played rounds ``k`` at each record, int ``[horizon //
            record_every]`` (``record_every, 2 * record_every, ...``).
        counts: final transition counts ``N[x, a, y]`` (initial counts included),
            int32 ``[replications, S, A, S]``.
        state: final state of each replication, int32 ``[replications]``.
        policy: last estimated optimal policy of each replication, int32
            ``[replications, S]``.
    """

    pseudo_regret: jax.Array
    regret: jax.Array
    times: jax.Array
    counts: jax.Array
    state: jax.Array
    policy: jax.Array


class _Carry(NamedTuple):
    """State of one replication between scan steps."""

    key: jax.Array
    t: jax.Array  # round index used in ln t (initial transitions included)
    state: jax.Array
    counts: jax.Array
    policy: jax.Array
    pseudo_regret: jax.Array
    regret: jax.Array
    evaluation: tuple  # the incremental planner's EvaluationState; () for "full"


def _next_state(key, probabilities):
    """Draws ``y ~ probabilities`` by inverting the cumulative distribution."""
    cumulative = jnp.cumsum(probabilities)
    u = jax.random.uniform(key, dtype=probabilities.dtype) * cumulative[-1]
    # searchsorted(cumulative, u, side="right"), without a loop: states of zero
    # probability are never drawn.
    y = jnp.sum(cumulative <= u)
    return jnp.minimum(y, probabilities.shape[0] - 1).astype(jnp.int32)


def _make_step(agent: Agent, mdp: MDP, gain, delta, planner: str, refresh_every: int):
    """The scan body for one replication: one round of play (``index``: 0-based round
    number of the whole run, the same in every replication)."""

    def step(carry: _Carry, index):
        key, action_key, transition_key = jax.random.split(carry.key, 3)
        evaluation = carry.evaluation
        if planner == "incremental":
            est, evaluation = incremental_estimate(carry.counts, mdp, evaluation,
                                                   carry.policy, index % refresh_every == 0)
        else:
            est = estimate(carry.counts, mdp, init_policy=carry.policy)
        x = carry.state
        action = agent.select_action(action_key, carry.t, x, carry.counts, est)
        y = _next_state(transition_key, mdp.P[x, action])
        carry = _Carry(
            key=key,
            t=carry.t + 1,
            state=y,
            counts=carry.counts.at[x, action, y].add(1),
            policy=est.policy.astype(jnp.int32),
            pseudo_regret=carry.pseudo_regret + delta[x, action],
            regret=carry.regret + (gain - mdp.R[x, action]),
            evaluation=evaluation,
        )
        return carry, (carry.pseudo_regret, carry.regret)

    return step


@functools.partial(jax.jit, static_argnames=("agent", "num_records", "record_every",
                                             "planner", "refresh_every", "mesh"),
                   donate_argnums=0)
def _run_chunk(carry: _Carry, mdp: MDP, gain, delta, start, *, agent: Agent,
               num_records: int, record_every: int, planner: str = "incremental",
               refresh_every: int = 1, mesh=None):
    """``num_records * record_every`` rounds for every replication (vmapped), from round
    ``start`` (0-based, int32 scalar); with a ``mesh``, each device runs its block."""

    def chunk(carry, mdp, gain, delta, start):
        step = _make_step(agent, mdp, gain, delta, planner, refresh_every)
        # The round indices are not batched, so the refresh stays a real `cond` in vmap.
        first = start + record_every * jnp.arange(num_records, dtype=jnp.int32)

        def trajectory(carry):
            if record_every == 1:
                return lax.scan(step, carry, first)

            def record(carry, base):
                rounds = base + jnp.arange(record_every, dtype=jnp.int32)
                carry, _ = lax.scan(lambda c, i: (step(c, i)[0], None), carry, rounds)
                return carry, (carry.pseudo_regret, carry.regret)

            return lax.scan(record, carry, first)

        return jax.vmap(trajectory)(carry)

    if mesh is not None:
        chunk = _sharding.shard_map(chunk, mesh, batched=(True, False, False, False, False))
    return chunk(carry, mdp, gain, delta, start)


def _check_positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _check_counts(initial_counts, mdp: MDP):
    shape = tuple(np.shape(mdp.P))
    if initial_counts is None:
        return np.zeros(shape, dtype=np.int32)
    counts = np.asarray(initial_counts)
    if counts.shape != shape:
        raise ValueError(f"initial_counts must have shape {shape} (the MDP's P), "
                         f"got shape {counts.shape}")
    if counts.size and not np.all(np.isfinite(counts)):
        raise ValueError(f"initial_counts must be finite, got {counts!r}")
    if np.any(counts < 0):
        raise ValueError(f"initial_counts must be non-negative, got minimum {float(counts.min())}")
    if np.any(counts != np.round(counts)):
        raise ValueError(f"initial_counts must be whole numbers, got {counts!r}")
    inadmissible = ~np.asarray(mdp.mask, dtype=bool)
    if np.any(counts.sum(-1)[inadmissible] > 0):
        raise ValueError("initial_counts has transitions for inadmissible actions, got "
                         f"counts {counts.sum(-1)[inadmissible]!r} where mdp.mask is False")
    return counts.astype(np.int32)


def _prng_layout():
    """The threefry layout the simulator uses (see ``PARTITIONABLE_THREEFRY``)."""
    return jax.threefry_partitionable(PARTITIONABLE_THREEFRY)


def _keys(seed, replications):
    if isinstance(seed, (jax.Array, np.ndarray)) and not isinstance(seed, numbers.Integral):
        key = seed
        if not jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
            key = jax.random.wrap_key_data(jnp.asarray(key, dtype=jnp.uint32))
    elif isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        key = jax.random.key(int(seed))
    else:
        raise ValueError(f"seed must be an int or a PRNG key, got {seed!r}")
    return jax.random.split(key, replications)


def simulate(mdp: MDP, agent: str | Agent, horizon: int, replications: int, seed=0,
             initial_counts=None, *, record_every: int | None = None,
             chunk_size: int = 2000, progress: bool = True, planner: str = "incremental",
             refresh_every: int | None = None, devices=None) -> Trajectories:
    """Simulates ``replications`` independent runs of ``agent`` on ``mdp``.

    Every run starts in state 0 with counts ``initial_counts`` (zeros by default). With
    ``n`` initial transitions the first played round is ``t = n + 1`` (the ``t`` in
    ``ln t``), and regret counts only the ``horizon`` played rounds (the paper's
    robustness experiment, section 5.1). Each round re-solves the estimated MDP,
    warm-started from the previous round's policy. Ties go to the lowest action index.

    Args:
        mdp: the true MDP (``jaxmdp.MDP``); its float dtype is used throughout.
        agent: an :class:`~jaxmdp.agents.Agent` or a name: ``"ucb"``, ``"dmed"``,
            ``"olp"``, ``"ps"``.
        horizon: number of played rounds ``T`` (positive int).
        replications: number of independent runs (positive int).
        seed: int seed or PRNG key; replication ``i`` uses
            ``jax.random.split(key, replications)[i]``. Same seed, same result. Random
            bits are drawn with the non-partitionable threefry layout
            (``PARTITIONABLE_THREEFRY``), whatever the global JAX setting.
        initial_counts: optional int ``[S, A, S]`` transition counts to start from.
        record_every: keep every ``record_every``-th cumulative value (positive int).
            Defaults to 1 for ``horizon <= 10^5`` and to ``ceil(horizon / 10^5)`` above.
        chunk_size: rounds per jitted call (rounded to a multiple of ``record_every``);
            the progress bar advances once per chunk.
        progress: show a progress bar on stderr.
        planner: ``"incremental"`` (default): policy evaluations update the previous
            inverse of the evaluation matrix by Sherman–Morrison, ``O(S^2)`` per changed
            row (:mod:`jaxmdp.incremental`); ``"full"``: an LU re-solve every round,
            ``O(S^3)``. Both give the same policies (up to rounding at exact ties).
        refresh_every: rounds between full re-inversions of the incremental planner
            (positive int); default 4096 in float64, 1024 in float32.
        devices: where to run: ``None`` for every visible device (``jax.devices()``, all
            processes after ``jax.distributed.initialize()``), or a sequence of
            ``jax.Device``. With more than one device, replications are split over a
            one-axis ``Mesh`` and run with ``jax.shard_map``; the per-replication keys
            are drawn first, so results are identical whatever the number of devices.

    Returns:
        :class:`Trajectories` with ``pseudo_regret`` and ``regret`` of shape
        ``[replications, horizon // record_every]`` recorded after rounds
        ``record_every, 2 * record_every, ...``, and the final counts. Rounds after the
        last record (``horizon % record_every`` of them) are played but not recorded.

    Raises:
        ValueError: for a non-positive ``horizon``, ``replications``, ``record_every`` or
            ``chunk_size``, an unknown agent name or ``planner``, a non-positive
            ``refresh_every``, ``devices`` that are not distinct ``jax.Device`` objects,
            or ``initial_counts`` of the wrong shape, negative, fractional or on
            inadmissible actions.

    Example:
        >>> import jaxmdp as jm
        >>> traj = jm.simulate(jm.examples.paper_mdp(), "ucb", horizon=1000,
        ...                    replications=8, seed=0, progress=False)
        >>> traj.pseudo_regret.shape
        (8, 1000)
    """
    if not isinstance(mdp, MDP):
        raise ValueError(f"mdp must be a jaxmdp.MDP, got {type(mdp).__name__}")
    agent = get_agent(agent)
    horizon = _check_positive_int("horizon", horizon)
    replications = _check_positive_int("replications", replications)
    if record_every is None:
        record_every = max(1, math.ceil(horizon / MAX_DEFAULT_RECORDS))
    record_every = _check_positive_int("record_every", record_every)
    chunk_size = _check_positive_int("chunk_size", chunk_size)
    counts0 = _check_counts(initial_counts, mdp)
    if planner not in PLANNERS:
        raise ValueError(f"planner must be one of {list(PLANNERS)}, got {planner!r}")
    dtype = jnp.asarray(mdp.P).dtype
    if refresh_every is None:
        refresh_every = default_refresh_every(dtype)
    refresh_every = _check_positive_int("refresh_every", refresh_every)
    mesh = _sharding.replication_mesh(devices)

    gain, _, _ = solve_average_reward(mdp)
    delta = _gaps(mdp)
    num_states = counts0.shape[0]
    t0 = int(counts0.sum()) + 1
    # The first warm start: each state's lowest admissible action.
    first_admissible = jnp.argmax(jnp.asarray(mdp.mask, dtype=bool), axis=1).astype(jnp.int32)
    if t0 + horizon >= np.iinfo(np.int32).max:
        raise ValueError(f"horizon plus initial transitions must fit in int32, got "
                         f"horizon={horizon} with {t0 - 1} initial transitions")

    evaluation = ()
    if planner == "incremental":
        # Rebuilt exactly at round 0 (a refresh round); this gives it its shape.
        evaluation = init_evaluation(estimated_mdp(counts0, mdp).P, mdp.R, first_admissible)
        evaluation = jax.tree_util.tree_map(
            lambda leaf: jnp.broadcast_to(leaf, (replications,) + leaf.shape), evaluation)
    with _prng_layout():
        keys = _keys(seed, replications)
    carry = _Carry(
        key=keys,
        t=jnp.full((replications,), t0, dtype=jnp.int32),
        state=jnp.zeros((replications,), dtype=jnp.int32),
        counts=jnp.broadcast_to(jnp.asarray(counts0), (replications,) + counts0.shape),
        policy=jnp.broadcast_to(first_admissible, (replications, num_states)),
        pseudo_regret=jnp.zeros((replications,), dtype=dtype),
        regret=jnp.zeros((replications,), dtype=dtype),
        evaluation=evaluation,
    )
    carry = jax.tree_util.tree_map(jnp.array, carry)  # own buffers (they are donated)
    if mesh.size > 1 or jax.process_count() > 1:
        # Keys are drawn above, before sharding; padding repeats replications whose
        # results are dropped, so every replication computes the same on any mesh.
        padded = _sharding.padded_size(replications, mesh)
        carry = _sharding.shard(_sharding.pad_replications(carry, replications, padded), mesh)
        mdp, gain, delta = _sharding.replicate((mdp, gain, delta), mesh)
    else:
        mesh = None
        if devices is not None:
            carry, mdp, gain, delta = jax.device_put((carry, mdp, gain, delta),
                                                     list(devices)[0])
    options = dict(agent=agent, planner=planner, refresh_every=refresh_every, mesh=mesh)

    total_records = horizon // record_every
    records_per_chunk = max(1, chunk_size // record_every)
    pseudo, regret = [], []
    with Progress(horizon, f"simulate {agent.name}", enabled=progress) as bar, _prng_layout():
        done = 0
        while done < total_records:
            n = min(records_per_chunk, total_records - done)
            start = jnp.asarray(done * record_every, jnp.int32)
            carry, (p, r) = _run_chunk(carry, mdp, gain, delta, start, num_records=n,
                                       record_every=record_every, **options)
            pseudo.append(p)
            regret.append(r)
            done += n
            if progress:
                mean = float(jnp.mean(carry.pseudo_regret[:replications]))
                bar.update(n * record_every, info=f"mean pseudo-regret {mean:.2f}")
        remainder = horizon - total_records * record_every
        if remainder:
            start = jnp.asarray(total_records * record_every, jnp.int32)
            carry, _ = _run_chunk(carry, mdp, gain, delta, start, num_records=1,
                                  record_every=remainder, **options)
            bar.update(remainder)

    empty = jnp.zeros((replications, 0), dtype=dtype)
    pseudo, regret, carry = _sharding.gather((pseudo, regret, carry))
    return Trajectories(
        pseudo_regret=jnp.concatenate(pseudo, axis=1)[:replications] if pseudo else empty,
        regret=jnp.concatenate(regret, axis=1)[:replications] if regret else empty,
        times=jnp.arange(1, total_records + 1, dtype=jnp.int32) * record_every,
        counts=carry.counts[:replications],
        state=carry.state[:replications],
        policy=carry.policy[:replications],
    )
