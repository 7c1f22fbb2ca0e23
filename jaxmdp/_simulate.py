"""Regret experiments: whole trajectories in ``lax.scan``, batched over replications.

One simulator for every agent. An agent is a name and pure ``init`` / ``step`` functions
over its own state (:mod:`jaxmdp.agents`); the simulator knows the environment, the
statistics it shares with every agent and the regret bookkeeping, and nothing of any
agent's planning. A trajectory is a ``lax.scan`` whose body ``step`` does, at round ``t``
in state ``x``:

1. hand the agent an :class:`~jaxmdp.agents.Observation` (``t``, ``x``, the transition
   counts ``N[x, a, y]`` and the reward sums) and take its action and new state;
2. draw the next state from the true transition law and the observed reward from the
   MDP's reward law, update the counts and reward sums, and accumulate the pseudo-regret
   ``Delta(x, a)`` and the realised regret ``gain* - r_t``.

Replications are ``vmap``ped over independent keys (``jax.random.split(key, R)``); a batch
of ``M`` MDPs adds its instances to that axis (``M * R`` runs, each reading its own MDP,
the runs of every instance with the keys of the ``R`` replications); within a
replication the draws of round ``t`` are functions of its key and ``t`` (counter-based,
see :func:`_round_words`), so no key is carried from round to round. Long
runs are cut into chunks of scan steps (one jitted call each) driven from a Python loop
with a progress bar; only every ``record_every``-th cumulative value is kept, so memory
stays bounded for any horizon. With ``devices``, replications are split over a
:class:`~jax.sharding.Mesh` and run with ``jax.shard_map`` (:mod:`jaxmdp._sharding`);
results do not depend on the number of devices. After ``jax.distributed.initialize()``
the mesh holds the devices of every process: each process builds and runs the
replications of its own devices, and the results are gathered to every process.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import numbers
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend.random import threefry_2x32

import jaxmdp._sharding as sharding
from jaxmdp._cache import enable_compilation_cache
from jaxmdp._progress import Progress
from jaxmdp.agents import Agent, Observation, env_spec, get_agent
from jaxmdp.agents.options import merge_numbers, split_numbers
from jaxmdp.mdp import MDP
from jaxmdp.planning import Status, solve_average_reward
from jaxmdp.planning.suboptimality import gains_and_gaps, gaps

#: Horizons up to this many rounds record every round by default.
MAX_DEFAULT_RECORDS = 100_000

#: Random bits the agents draw inside the simulator (from their round keys) come from
#: JAX's original (non-partitionable) threefry counter layout. On CPU this layout costs
#: about a quarter as much per draw as the partitionable one (JAX's default). Replications
#: stay independent and results are reproducible: only the map from keys to bits
#: differs. (The environment's own draws, :func:`_round_words`, call the threefry hash
#: directly and use no layout.)
PARTITIONABLE_THREEFRY = False

class Trajectories(NamedTuple):
    """Result of :func:`simulate` (a pytree of arrays).

    Attributes:
        pseudo_regret: cumulative pseudo-regret ``sum_t Delta(x_t, a_t)`` of the true MDP,
            ``[replications, horizon // record_every]`` (for a batch of ``M`` MDPs, every
            field but ``times`` has the leading axes ``[M, replications]``).
        regret: cumulative realised regret ``k * gain* - sum_t r_t`` over the ``k`` played
            rounds, with the observed (drawn) rewards ``r_t``; same shape.
        times: the number of played rounds ``k`` at each record, int ``[horizon //
            record_every]`` (``record_every, 2 * record_every, ...``).
        counts: final transition counts ``N[x, a, y]`` (initial counts included),
            int32 ``[replications, S, A, S]``.
        state: final state of each replication, int32 ``[replications]``.
        policy: the agent's last policy, int32 ``[replications, S]``, when its state has a
            ``policy`` field (the paper's agents: the last estimated optimal policy);
            ``None`` otherwise.
        reward_sums: final sums of observed rewards per pair, ``[replications, S, A]``.
        agent_state: the agent's final state, batched over replications.
        states: with ``record_path=True``, the state of every played round, int32
            ``[replications, horizon]``; else ``None``.
        actions: with ``record_path=True``, the action of every played round; else ``None``.
        unconverged: planning solves that did not converge, int32 ``[replications]``, when
            the agent's state counts them in an ``unconverged`` field or property (the
            paper's agents: rounds whose planner did not return ``CONVERGED``; the UCRL
            family: episode starts whose EVI stopped at ``max_evi_steps``); ``None``
            otherwise.
    """

    pseudo_regret: jax.Array
    regret: jax.Array
    times: jax.Array
    counts: jax.Array
    state: jax.Array
    policy: jax.Array | None = None
    reward_sums: jax.Array | None = None
    agent_state: Any = None
    states: jax.Array | None = None
    actions: jax.Array | None = None
    unconverged: jax.Array | None = None


class _Carry(NamedTuple):
    """State of one replication between scan steps."""

    key: jax.Array  # the agent's per-round keys are fold_in(key, round)
    bits_key: jax.Array  # uint32 [2]: the environment's threefry key (_round_words)
    state: jax.Array
    counts: jax.Array
    reward_sums: jax.Array
    agent_state: Any
    pseudo_regret: jax.Array
    regret: jax.Array
    previous: jax.Array  # int32 [2]: the previous round's state and action ((-1, -1): none)
    reward: jax.Array  # the previous round's observed reward (0: none)


def _uniform(words, dtype):
    """Uniform draws in ``[0, 1)`` from 32-bit random words, as ``jax.random.uniform``
    makes them: one word for float32 (23 random mantissa bits), two (``words[0]`` high,
    ``words[1]`` low) for float64 (52 bits)."""
    dtype = jnp.dtype(dtype)
    if dtype.itemsize == 8:
        bits = (words[0].astype(jnp.uint64) << 32) | words[1].astype(jnp.uint64)
        uint = jnp.uint64
    else:
        bits, uint = words[0], jnp.uint32
    width = 8 * jnp.dtype(uint).itemsize
    one = np.array(1.0, dtype).view(np.dtype(uint))
    mantissa = lax.shift_right_logical(bits.astype(uint), uint(width - jnp.finfo(dtype).nmant))
    return lax.bitcast_convert_type(mantissa | one, dtype) - jnp.asarray(1.0, dtype)


def _round_words(bits_key, index, count: int):
    """``count`` (2 or 4) random 32-bit words of one replication for round ``index``.

    Counter-based: the threefry-2x32 hash, under the replication's own 64-bit simulator
    key, of the blocks ``(index, 0)`` (and ``(index, 1)``), one block per call. Every
    round gets fresh, independent words without carrying a key from round to round, and
    with scalar blocks the hash vectorises across the replications of a ``vmap``: one
    hash per round costs about a seventh of the key splits, ``fold_in`` and two
    ``jax.random.uniform`` calls it replaces (0.0065 against 0.046 µs per
    replication-step at 1,000 replications on the development CPU).
    """
    counter = jnp.asarray(index).astype(jnp.uint32)
    words = []
    for block in range(count // 2):
        words.extend(threefry_2x32(bits_key, jnp.stack([counter, jnp.uint32(block)])))
    return words


def _next_state(u, probabilities):
    """Draws ``y ~ probabilities`` by inverting the cumulative distribution at the
    uniform ``u`` in ``[0, 1)``."""
    cumulative = jnp.cumsum(probabilities)
    u = u * cumulative[-1]
    # searchsorted(cumulative, u, side="right"), without a loop: states of zero
    # probability are never drawn.
    y = jnp.sum(cumulative <= u)
    return jnp.minimum(y, probabilities.shape[0] - 1).astype(jnp.int32)


def _observed_reward(u, mean, mdp: MDP):
    """The reward of one round under the MDP's reward law (``mean = R[x, a]``), from the
    uniform ``u`` in ``[0, 1)`` (a normal by inversion, as ``jax.random.normal``)."""
    if mdp.reward_law == "bernoulli":
        return (u < mean).astype(mean.dtype)
    if mdp.reward_law == "gaussian":
        dtype = mean.dtype
        low = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
        v = jnp.maximum(low, u * (1.0 - low) + low)  # uniform on [low, 1)
        return mean + mdp.reward_sigma * (np.sqrt(2.0).astype(dtype) * lax.erf_inv(v))
    return mean


def _with_numbers(agent: Agent, numbers: dict) -> Agent:
    """``agent`` with its number options (placeholders of its structure,
    :func:`jaxmdp.agents.options.split_numbers`) set to ``numbers`` (traced arrays)."""
    if not numbers:
        return agent
    return dataclasses.replace(agent, config=merge_numbers(agent.config, numbers))


def _split_agent(agent: Agent, dtype) -> tuple[Agent, dict]:
    """``(structure, numbers)``: ``agent`` with its number options replaced by
    placeholders (the static part of the program), and those numbers as arrays of
    ``dtype`` (its traced part)."""
    structure, numbers = split_numbers(agent.config)
    numbers = {path: jnp.asarray(value, dtype) for path, value in numbers.items()}
    return dataclasses.replace(agent, config=structure), numbers


def _make_step(agent: Agent, mdp: MDP, gain, delta, t0, record_path: bool,
               initial_round: int = 1):
    """The scan body for one replication: one round of play (``index``: 0-based round
    number of the whole run, the same in every replication, so ``Observation.t`` and
    ``Observation.step`` are unbatched under ``vmap``)."""
    spec = env_spec(mdp, initial_round)

    def step(carry: _Carry, index):
        x = carry.state
        # The agent's key for this round (computed only if the agent uses it) and the
        # environment's two uniforms: both are functions of the round, so no key is
        # carried from round to round.
        action_key = jax.random.fold_in(carry.key, index)
        dtype = mdp.P.dtype
        words = _round_words(carry.bits_key, index, 4 if dtype.itemsize == 8 else 2)
        half = len(words) // 2
        u_next, u_reward = _uniform(words[:half], dtype), _uniform(words[half:], dtype)
        observation = Observation(t=t0 + index, step=index, state=x, counts=carry.counts,
                                  reward_sums=carry.reward_sums,
                                  previous_state=carry.previous[0],
                                  previous_action=carry.previous[1], reward=carry.reward)
        action, agent_state = agent.step(action_key, carry.agent_state, observation, spec)
        y = _next_state(u_next, mdp.P[x, action])
        reward = _observed_reward(u_reward, mdp.R[x, action], mdp)
        carry = _Carry(
            key=carry.key,
            bits_key=carry.bits_key,
            state=y,
            counts=carry.counts.at[x, action, y].add(1),
            reward_sums=carry.reward_sums.at[x, action].add(reward),
            agent_state=agent_state,
            pseudo_regret=carry.pseudo_regret + delta[x, action],
            regret=carry.regret + (gain - reward),
            previous=jnp.stack([x, action]).astype(jnp.int32),
            reward=reward,
        )
        path = (x, action) if record_path else ()
        return carry, (carry.pseudo_regret, carry.regret, path)

    return step


def _blocked(batched_fn, carry, block, rows=None):
    """``batched_fn(carry, rows)`` run on blocks of ``block`` replications, one block after
    another; ``None`` runs all at once.

    ``batched_fn`` maps a carry with a leading replication axis (and ``rows``, read-only
    per-replication arrays with the same leading axis, or ``None``) to ``(carry,
    outputs)`` with the same leading axis. The blocks are sliced from and written back
    into the carry in place (a ``fori_loop`` of ``dynamic_update_slice``; ``rows`` is
    only sliced), and a last, smaller block takes the remainder, so no replication is
    padded or copied whole.
    """
    replications = jax.tree_util.tree_leaves(carry)[0].shape[0]
    if block is None or block >= replications:
        return batched_fn(carry, rows)
    tree_map = jax.tree_util.tree_map
    full = replications // block

    def part(tree, start, size):
        return tree_map(lambda leaf: lax.dynamic_slice_in_dim(leaf, start, size), tree)

    def put(tree, values, start):
        return tree_map(lambda leaf, v: lax.dynamic_update_slice_in_dim(leaf, v, start, 0),
                        tree, values)

    _, outputs = jax.eval_shape(batched_fn, part(carry, 0, block), part(rows, 0, block))
    outputs = tree_map(lambda s: jnp.zeros((replications,) + s.shape[1:], s.dtype), outputs)

    def body(i, state):
        start = i * block
        return put(state, batched_fn(part(state[0], start, block), part(rows, start, block)),
                   start)

    state = lax.fori_loop(0, full, body, (carry, outputs))
    if replications > full * block:
        start, size = full * block, replications - full * block
        state = put(state, batched_fn(part(state[0], start, size), part(rows, start, size)),
                    start)
    return state


#: Bytes of per-replication state (counts, agent state, ...) that one vmapped block may
#: hold on CPU; see :func:`replication_block`.
CPU_BLOCK_BYTES = 8 * 2**20


def replication_block(carry, replications: int, platform: str,
                      row_bytes: int = 0) -> int | None:
    """Replications per vmapped block: all of them, except on CPU when their state
    exceeds :data:`CPU_BLOCK_BYTES`.

    Each round of a vmapped block streams every replication's state (counts, estimate,
    evaluation inverse, ...) through a handful of memory passes. On a CPU, once a
    block's state no longer fits in the cache the passes run at memory bandwidth and the
    cost per replication-step grows with the number of replications (at S = 100, MDP-UCB
    took 43 µs per replication-step with 10 replications and 100-115 µs with 1,000, on a
    CPU with a few MB of cache). Blocks that fit keep the
    passes in cache; they run one after another within each chunk. GPUs want the
    widest batch, so there is one block. ``row_bytes`` adds the bytes each replication
    reads besides its carry (its own MDP, in a batch of MDPs).
    """
    if platform != "cpu":
        return None
    per_replication = sum(leaf.nbytes for leaf in jax.tree_util.tree_leaves(carry))
    per_replication = per_replication // max(1, replications) + row_bytes
    block = max(1, CPU_BLOCK_BYTES // max(1, per_replication))
    return None if block >= replications else block


@functools.partial(jax.jit, static_argnames=("agent", "num_records", "record_every",
                                             "record_path", "mesh", "block",
                                             "initial_round", "numbers_per_instance"),
                   donate_argnums=0)
def _run_chunk(carry: _Carry, instance, mdp: MDP, gain, delta, numbers, t0, start, *,
               agent: Agent, num_records: int, record_every: int, record_path: bool = False,
               mesh=None, block: int | None = None, initial_round: int = 1,
               numbers_per_instance: bool = False):
    """``num_records * record_every`` rounds for every replication (vmapped, in blocks of
    ``block`` replications), from round ``start`` (0-based, int32 scalar); with a
    ``mesh``, each device runs its share.

    ``instance`` is ``None`` (one MDP: ``mdp``, ``gain`` and ``delta`` are shared by
    every replication) or, for a batch of MDPs, int32 ``[replications]``: the index of
    each replication's MDP in the leading axis of ``mdp``, ``gain`` and ``delta``.
    ``agent`` is the agent's structure and ``numbers`` its number options (traced; with
    ``numbers_per_instance``, one row per instance, read like the MDP)."""

    def chunk(carry, instance, mdp, gain, delta, numbers, t0, start):
        # The round indices are not batched: conditions on them stay real `cond`s in vmap.
        first = start + record_every * jnp.arange(num_records, dtype=jnp.int32)

        def trajectory(carry, instance):
            env = (mdp, gain, delta)
            own = numbers
            if instance is not None:  # this replication's MDP, gathered once per chunk
                env = jax.tree_util.tree_map(lambda leaf: leaf[instance], env)
                if numbers_per_instance:
                    own = jax.tree_util.tree_map(lambda leaf: leaf[instance], numbers)
            step = _make_step(_with_numbers(agent, own), *env, t0, record_path,
                              initial_round)
            if record_every == 1:
                return lax.scan(step, carry, first)

            def record(carry, base):
                rounds = base + jnp.arange(record_every, dtype=jnp.int32)
                carry, (_, _, path) = lax.scan(step, carry, rounds)
                return carry, (carry.pseudo_regret, carry.regret, path)

            return lax.scan(record, carry, first)

        return _blocked(jax.vmap(trajectory), carry, block, instance)

    if mesh is not None:
        chunk = sharding.shard_map(chunk, mesh, batched=(True, True, False, False, False,
                                                          False, False, False))
    return chunk(carry, instance, mdp, gain, delta, numbers, t0, start)


def _records_per_chunk(total: int, most: int) -> int:
    """Records per chunk: ``most``, or the largest divisor of ``total`` from ``most / 2``
    to ``most``, so that every chunk has the same length and compiles once (a horizon of
    3,000 with chunks of 2,000 would compile a 2,000- and a 1,000-round program)."""
    if total <= most:
        return max(1, total)
    for size in range(most, (most + 1) // 2 - 1, -1):
        if total % size == 0:
            return size
    return most


@functools.partial(jax.jit, static_argnames=("agent", "initial_round"))
def _init_agents(keys, mdp: MDP, numbers, *, agent: Agent, initial_round: int = 1):
    spec = env_spec(mdp, initial_round)
    agent = _with_numbers(agent, numbers)
    return jax.vmap(lambda key: agent.init(key, spec))(keys)


@functools.partial(jax.jit, static_argnames=("agent", "initial_round",
                                             "numbers_per_instance", "flat"))
def _init_batch(keys, mdps: list[MDP], numbers, *, agent: Agent, initial_round: int = 1,
                numbers_per_instance: bool = False, flat: bool = False):
    """:func:`_init_agents` for every MDP of the list ``mdps`` (stacked here, in the same
    program): ``[M, replications, ...]``, or ``[M * replications, ...]`` with ``flat``."""
    stacked = jax.tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *mdps)
    state = jax.vmap(lambda mdp, numbers: _init_agents(keys, mdp, numbers, agent=agent,
                                                       initial_round=initial_round),
                     in_axes=(0, 0 if numbers_per_instance else None))(stacked, numbers)
    if flat:
        state = jax.tree_util.tree_map(lambda leaf: leaf.reshape((-1,) + leaf.shape[2:]),
                                       state)
    return state


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
    if jnp.shape(key) != ():
        raise ValueError(f"seed must be a single PRNG key, got a key array of shape "
                         f"{jnp.shape(key)}")
    if str(jax.random.key_impl(key)) != "threefry2x32":
        # Under vmap, the rbg implementations draw a batch's bits from one key, not from
        # each row's own (their rows are not independent streams): the replications get
        # threefry keys, from the first 64 random bits of the given key.
        key = jax.random.wrap_key_data(jax.random.bits(key, (2,), jnp.uint32),
                                       impl="threefry2x32")
    return jax.random.split(key, replications)


@jax.jit
def _stream_keys(keys):
    """Per replication ``i`` with key ``k_i``: the agent's ``init`` key ``fold_in(k_i, 1)``,
    the base of the agent's round keys ``fold_in(k_i, 3)``, and the environment's 64-bit
    threefry key, the bits of ``fold_in(k_i, 2)``."""
    init = jax.vmap(lambda k: jax.random.fold_in(k, 1))(keys)
    agent = jax.vmap(lambda k: jax.random.fold_in(k, 3))(keys)
    bits = jax.vmap(lambda k: jax.random.bits(jax.random.fold_in(k, 2), (2,), jnp.uint32))(keys)
    return init, agent, bits


def _check_reward_sums(initial_reward_sums, counts0: np.ndarray, mdp: MDP):
    shape = tuple(np.shape(mdp.R))
    if initial_reward_sums is None:
        # The mean reward of each initial transition (exact for deterministic rewards).
        return np.asarray(counts0.sum(-1) * np.asarray(mdp.R, np.float64))
    sums = np.asarray(initial_reward_sums, dtype=np.float64)
    if sums.shape != shape:
        raise ValueError(f"initial_reward_sums must have shape {shape} (the MDP's R), "
                         f"got shape {sums.shape}")
    if not np.all(np.isfinite(sums)):
        raise ValueError(f"initial_reward_sums must be finite, got {initial_reward_sums!r}")
    return sums


def simulate(mdp: MDP, agent: str | Agent, horizon: int, replications: int, seed=0,
             initial_counts=None, *, record_every: int | None = None,
             chunk_size: int = 2000, progress: bool = True, devices=None,
             initial_reward_sums=None, record_path: bool = False,
             optimum=None) -> Trajectories:
    """Simulates ``replications`` independent runs of ``agent`` on ``mdp``.

    Every run starts in state 0 with counts ``initial_counts`` (zeros by default). With
    ``n`` initial transitions the first played round is ``t = n + 1`` (the ``t`` in
    ``ln t``), and regret counts only the ``horizon`` played rounds (the paper's
    robustness experiment, section 5.1). Observed rewards follow ``mdp.reward_law``;
    pseudo-regret uses the true gaps, realised regret the drawn rewards.

    **A batch of MDPs** (an ``MDP`` whose leaves have a leading axis of ``M`` instances,
    e.g. from :func:`jaxmdp.envs.batch`, or a list of ``M`` MDPs of the same ``S``, ``A``,
    dtype and reward law) runs ``replications`` runs on every instance in one program:
    the ``M * replications`` runs are one ``vmap`` axis (split over ``devices`` like
    replications), each run reading its own instance's ``P``, ``R``, mask, optimal gain
    and gaps. Instance ``m``'s runs get the keys of a separate call ``simulate(mdp[m],
    agent, ..., seed)`` (the same for every instance: common random numbers), and the
    instances' gains and gaps come from the program of that call's
    :func:`~jaxmdp.solve_average_reward` and :func:`~jaxmdp.gaps`, vmapped over the
    instances, so the results equal the separate calls', instance by instance (bit for
    bit in the tests, on GARNET instances and for the paper's agents and the baselines).

    Args:
        mdp: the true MDP (``jaxmdp.MDP``; ``P`` ``[S, A, S]``), a batch (``P``
            ``[M, S, A, S]``, ``R`` and ``mask`` ``[M, S, A]``) or a list of MDPs (stacked
            into a batch); its float dtype is used throughout.
        agent: an :class:`~jaxmdp.Agent` (e.g. ``jm.get_agent("ucb",
            known_rewards=False)``) or a name with default options: ``"ucb"``,
            ``"dmed"``, ``"olp"``, ``"ps"`` (see :func:`jaxmdp.get_agent`). Its options
            that follow the number of replications (the episodic agents'
            ``episode_chunk="auto"``) are fixed by ``replications``
            (:meth:`~jaxmdp.Agent.for_replications`).
        horizon: number of played rounds ``T`` (positive int).
        replications: number of independent runs (positive int).
        seed: int seed or PRNG key; replication ``i`` uses
            ``jax.random.split(key, replications)[i]`` = ``k`` (a key of another
            implementation than threefry, e.g. ``rbg``, is first replaced by the threefry
            key made of its first 64 random bits: under ``vmap`` the rbg
            implementations draw a whole batch from one key, so their replications would
            not be independent streams): the agent's ``init``
            gets ``fold_in(k, 1)``, its ``step`` at round ``t`` (0-based)
            ``fold_in(fold_in(k, 3), t)``, and the environment's two uniforms of round
            ``t`` (next state, reward) are the threefry-2x32 hash of the block ``(t, 0)``
            (and ``(t, 1)`` in float64, for 52-bit uniforms) under the 64-bit key
            ``bits(fold_in(k, 2))``. Same seed, same result, on any number of devices
            of one machine. Across machines the last bits of the planners' linear solves
            can differ (on the CPU, jaxlib's LAPACK runs SciPy's OpenBLAS, whose kernels
            are chosen for the processor), and where they break an exact tie between
            actions the paths part. Agents' random bits are drawn with the
            non-partitionable threefry layout (``PARTITIONABLE_THREEFRY``), whatever the
            global JAX setting.
        initial_counts: optional int ``[S, A, S]`` transition counts to start from (the
            same for every instance of a batch).
        record_every: keep every ``record_every``-th cumulative value (positive int).
            Defaults to 1 for ``horizon <= 10^5`` and to ``ceil(horizon / 10^5)`` above.
        chunk_size: rounds per jitted call at most (rounded to a multiple of
            ``record_every``, and down to equal chunks when that costs at most half of
            it: each distinct chunk length is a compilation);
            the progress bar advances once per chunk.
        progress: show a progress bar (``tqdm.auto``: a terminal bar, or a widget in a
            notebook).
        devices: where to run: ``None`` for every visible device (``jax.devices()``, all
            processes after ``jax.distributed.initialize()``), or a sequence of
            ``jax.Device``. With more than one device, replications are split over a
            one-axis ``Mesh`` and run with ``jax.shard_map``; the per-replication keys
            are drawn first, so results are identical whatever the number of devices.
            Over several processes every process must call :func:`simulate` with the
            same arguments; each builds the replications its own devices hold, and
            every process gets the whole :class:`Trajectories` (gathered with
            ``multihost_utils.process_allgather``), equal bit for bit to a one-process
            run's. The progress bar is drawn by process 0, with the mean over its own
            replications.
        initial_reward_sums: optional ``[S, A]`` sums of the rewards of the initial
            transitions (the same for every instance of a batch); default
            ``n[x, a] * R[x, a]`` (their means, each instance's own ``R``).
        record_path: also return the state and action of every round
            (``Trajectories.states`` / ``actions``, int32 ``[replications, horizon]``).
        optimum: ``(gain, gaps)`` of ``mdp``, ``jm.solve_average_reward(mdp)[0]`` and
            ``jm.gaps(mdp)`` (for a batch, every instance's: ``[M]`` and ``[M, S, A]``),
            to solve the MDP once for several calls (``jaxmdp run`` does); default:
            computed here.

    Returns:
        :class:`Trajectories` with ``pseudo_regret`` and ``regret`` of shape
        ``[replications, horizon // record_every]`` recorded after rounds
        ``record_every, 2 * record_every, ...``, and the final counts, reward sums and
        agent state. Rounds after the last record (``horizon % record_every`` of them)
        are played but not recorded. For a batch of ``M`` MDPs every field but
        ``times`` has the leading axes ``[M, replications]`` (``pseudo_regret`` and
        ``regret`` ``[M, replications, horizon // record_every]``, ``counts`` ``[M,
        replications, S, A, S]``).

    Raises:
        ValueError: for a ``mdp`` that is not an MDP, a non-positive ``horizon``,
            ``replications``, ``record_every`` or ``chunk_size``, an unknown agent name
            or option, an agent that cannot run on this
            MDP (e.g. learned ``[0, 1]`` rewards with means outside ``[0, 1]``),
            ``devices`` that are not distinct ``jax.Device`` objects, or
            ``initial_counts`` / ``initial_reward_sums`` of the wrong shape, negative,
            fractional or on inadmissible actions; or an ``mdp`` whose optimal gain
            depends on the initial state (multichain, so regret is undefined; raised by
            :func:`jaxmdp.solve_average_reward`, naming the states and their gains).
            For a batch: an empty list, a list holding a non-MDP, MDPs of different
            ``S``, ``A``, dtype or reward law, a batch with more than one leading axis or
            inconsistent shapes (each naming ``mdp``), and any of the above for an
            instance (validated one by one, the message naming ``mdp[m]``).

    Example:
        >>> import jaxmdp as jm
        >>> traj = jm.simulate(jm.envs.make("paper-mdp"), "ucb", horizon=1000,
        ...                    replications=8, seed=0, progress=False)
        >>> traj.pseudo_regret.shape
        (8, 1000)

        A batch of 20 GARNET MDPs, 5 runs each, in one call; instance 3 equals its own
        call:

        >>> import numpy as np
        >>> mdps = jm.envs.batch("garnet-6-2-3", seeds=range(20))
        >>> batch = jm.simulate(mdps, "ucb", horizon=200, replications=5, seed=1,
        ...                     progress=False)
        >>> batch.pseudo_regret.shape
        (20, 5, 200)
        >>> one = jm.simulate(jm.envs.make("garnet-6-2-3", seed=3), "ucb", horizon=200,
        ...                   replications=5, seed=1, progress=False)
        >>> bool(np.array_equal(batch.regret[3], one.regret))
        True
    """
    enable_compilation_cache()  # on by default; a user's own configuration wins
    _check_positive_int("replications", replications)
    agent = get_agent(agent).for_replications(replications)
    mdp, instances = _instances(mdp)
    structure, numbers = _split_agent(agent, jnp.asarray(mdp.P).dtype)
    return _run(mdp, instances, structure, numbers, False, horizon, replications, seed,
                initial_counts, record_every=record_every, chunk_size=chunk_size,
                progress=progress, devices=devices, initial_reward_sums=initial_reward_sums,
                record_path=record_path, optimum=optimum, label=agent.name)


def _run(mdp: MDP, instances, agent: Agent, numbers, numbers_per_instance: bool, horizon,
         replications, seed, initial_counts, *, record_every, chunk_size, progress,
         devices, initial_reward_sums, record_path, optimum, label: str) -> Trajectories:
    """:func:`simulate` of the validated ``mdp`` (a batch where ``instances`` is a list),
    with the agent's structure ``agent`` and its number options ``numbers`` (one row per
    instance with ``numbers_per_instance``: a sweep)."""
    horizon, replications, record_every, chunk_size = _validate(
        horizon, replications, record_every, chunk_size, record_path)
    starts = [_validate_instance(m, _checked(agent, numbers, numbers_per_instance, i),
                                 horizon, initial_counts, initial_reward_sums,
                                 None if instances is None else i)
              for i, m in enumerate(instances or [mdp])]
    counts0 = starts[0][0]
    gain, delta = _check_optimum(optimum, mdp) if optimum is not None else \
        _solve_instances(mdp, instances)
    initial_round = int(counts0.sum()) + 1
    rows = replications * (1 if instances is None else len(instances))
    mesh, held = _layout(devices, rows)
    # The rows this process builds: all of them in order, or those its devices hold of the
    # padded axis, where padding row j repeats row j mod rows.
    source = None if held is None else held % rows
    carry = _initial_carry(instances or [mdp], agent, numbers, seed, replications, counts0,
                           [sums0 for _, sums0 in starts], initial_round, source,
                           numbers_per_instance)
    instance = (None if instances is None else
                jnp.repeat(jnp.arange(len(instances), dtype=jnp.int32), replications)
                if source is None else jnp.asarray(source // replications, jnp.int32))
    row_bytes = 0 if instances is None else sum(
        leaf.nbytes // len(instances) for leaf in jax.tree_util.tree_leaves((mdp, gain, delta)))
    (carry, instance), (mdp, gain, delta, numbers, t0), mesh, block = _place(
        (carry, instance), (mdp, gain, delta, numbers, jnp.asarray(initial_round, jnp.int32)),
        mesh, devices, held, row_bytes)
    options = dict(agent=agent, record_path=record_path, mesh=mesh, block=block,
                   initial_round=initial_round, numbers_per_instance=numbers_per_instance)
    carry, pseudo, regret, paths = _run_chunks(
        (carry, instance), (mdp, gain, delta, numbers, t0), horizon, rows, record_every,
        chunk_size, options, progress, label)
    traj = _assemble(carry, pseudo, regret, paths, rows, record_every, record_path,
                     horizon // record_every, mdp.P.dtype)
    if instances is None:
        return traj
    fields = {field: getattr(traj, field) for field in traj._fields if field != "times"}
    return traj._replace(**_split_rows(fields, (len(instances), replications)))


@functools.partial(jax.jit, static_argnums=1)
def _split_rows(tree, shape: tuple[int, ...]):
    """Every leaf of ``tree`` with its leading axis split into ``shape`` (one program, not
    one eager reshape per leaf)."""
    return jax.tree_util.tree_map(lambda leaf: leaf.reshape(shape + leaf.shape[1:]), tree)


def _checked(agent: Agent, numbers, per_instance: bool, index: int) -> Agent:
    """The agent that instance ``index`` runs, with concrete numbers (for its
    ``validate``)."""
    own = {path: (value[index] if per_instance else value) for path, value in numbers.items()}
    return _with_numbers(agent, {path: value.item() for path, value in own.items()})


def _instances(mdp):
    """``(mdp, instances)``: ``instances`` is ``None`` for one MDP; for a batch (an
    ``MDP`` whose leaves have one leading axis, or a list of MDPs, stacked here) it is
    the list of the validated instances, and ``mdp`` their stack."""
    if isinstance(mdp, (list, tuple)):
        if not mdp or not all(isinstance(m, MDP) for m in mdp):
            bad = next((m for m in mdp if not isinstance(m, MDP)), None)
            raise ValueError("mdp must be a jaxmdp.MDP or a non-empty list of them, got "
                             + ("an empty list" if not mdp else
                                f"a list holding a {type(bad).__name__}"))
        for i, m in enumerate(mdp):
            if m.P.ndim != 3:
                raise ValueError(f"mdp: a list of MDPs must hold single MDPs, got mdp[{i}] "
                                 f"with P of shape {m.P.shape}")
            if (m.P.shape, m.P.dtype) != (mdp[0].P.shape, mdp[0].P.dtype):
                raise ValueError(
                    f"mdp: MDPs of different sizes (S, A) or dtypes cannot be stacked into "
                    f"one batch: mdp[0] has P of shape {mdp[0].P.shape} ({mdp[0].P.dtype}), "
                    f"mdp[{i}] has {m.P.shape} ({m.P.dtype})")
            if (m.reward_law, m.reward_sigma) != (mdp[0].reward_law, mdp[0].reward_sigma):
                raise ValueError(
                    f"mdp: MDPs of a batch must share one reward law, got mdp[0] with "
                    f"{mdp[0].reward_law!r} (sigma {mdp[0].reward_sigma}) and mdp[{i}] with "
                    f"{m.reward_law!r} (sigma {m.reward_sigma})")
        mdp = jax.tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *mdp)
    if not isinstance(mdp, MDP):
        raise ValueError(f"mdp must be a jaxmdp.MDP, got {type(mdp).__name__}")
    if jnp.ndim(mdp.P) == 3:
        return mdp, None
    P, R, mask = (np.asarray(leaf) for leaf in (mdp.P, mdp.R, mdp.mask))
    if P.ndim != 4 or P.shape[-1] != P.shape[-3] or R.shape != P.shape[:-1] \
            or mask.shape != R.shape or P.shape[0] == 0:
        raise ValueError(f"mdp must be one MDP (P of shape [S, A, S]) or a batch with one "
                         f"leading axis (P [M, S, A, S], R and mask [M, S, A], M >= 1), got "
                         f"P, R, mask of shapes {P.shape}, {R.shape}, {mask.shape}")
    law = {"reward_law": mdp.reward_law}
    if mdp.reward_law == "gaussian":
        law["reward_sigma"] = mdp.reward_sigma
    instances = []
    for i in range(P.shape[0]):
        try:
            instances.append(MDP(P[i], R[i], mask[i], **law))
        except ValueError as error:
            raise ValueError(f"mdp[{i}] (instance {i} of the batch): {error}") from None
    return jax.tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *instances), instances


def optimum(mdp: MDP) -> tuple[jax.Array, jax.Array]:
    """The optimal gain and the gaps of ``mdp`` (:func:`jaxmdp.solve_average_reward`'s
    gain, :func:`jaxmdp.gaps`), or of every instance of a batch (shapes ``[M]`` and
    ``[M, S, A]``), as :func:`simulate` computes them: pass them to several
    :func:`simulate` calls on the same MDP (``optimum=``) to solve it once.

    Raises:
        ValueError: as :func:`simulate` for ``mdp`` (a multichain MDP or instance among
            them).
    """
    mdp, instances = _instances(mdp)
    return _solve_instances(mdp, instances)


def _check_optimum(optimum, mdp: MDP):
    """``optimum`` as arrays of the shapes of ``mdp``'s gain and gaps."""
    lead = jnp.shape(mdp.P)[:-3]
    try:
        gain, delta = (jnp.asarray(a) for a in optimum)
    except (TypeError, ValueError):
        raise ValueError(f"optimum must be a pair (gain, gaps), got {optimum!r}") from None
    if gain.shape != lead or delta.shape != lead + jnp.shape(mdp.R)[-2:]:
        raise ValueError(f"optimum must be (gain, gaps) of shapes {lead} and "
                         f"{lead + jnp.shape(mdp.R)[-2:]}, got {gain.shape} and "
                         f"{delta.shape}")
    return gain, delta


def _solve_instances(mdp: MDP, instances):
    """The optimal gain and the gaps of ``mdp``, or of every instance of a batch (the same
    program, vmapped: :func:`jaxmdp.planning.suboptimality.gains_and_gaps`)."""
    if instances is None:
        gain, _, _ = solve_average_reward(mdp)
        return gain, gaps(mdp)
    gain, delta, status = gains_and_gaps(mdp)
    for i in np.flatnonzero(np.asarray(status) == Status.MULTICHAIN):
        try:
            gaps(instances[i])  # raises, naming the states and their gains
        except ValueError as error:
            raise ValueError(f"mdp[{i}] (instance {i} of the batch): {error}") from None
    return gain, delta


def _validate(horizon, replications, record_every, chunk_size, record_path):
    """Checks :func:`simulate`'s arguments that concern no particular MDP instance;
    returns them normalised."""
    horizon = _check_positive_int("horizon", horizon)
    replications = _check_positive_int("replications", replications)
    if record_every is None:
        record_every = max(1, math.ceil(horizon / MAX_DEFAULT_RECORDS))
    record_every = _check_positive_int("record_every", record_every)
    chunk_size = _check_positive_int("chunk_size", chunk_size)
    if not isinstance(record_path, bool):
        raise ValueError(f"record_path must be a bool, got {record_path!r}")
    return horizon, replications, record_every, chunk_size


def _validate_instance(mdp: MDP, agent: Agent, horizon: int, initial_counts,
                       initial_reward_sums, index: int | None):
    """Checks the initial counts and reward sums and the agent against one MDP (instance
    ``index`` of a batch, named in the message, or the only one); returns the counts
    and sums as arrays."""
    try:
        counts0 = _check_counts(initial_counts, mdp)
        dtype = jnp.asarray(mdp.P).dtype
        sums0 = _check_reward_sums(initial_reward_sums, counts0, mdp).astype(dtype)
        t0 = int(counts0.sum()) + 1
        agent.check(env_spec(mdp, t0))
    except ValueError as error:
        if index is None:
            raise
        raise ValueError(f"mdp[{index}] (instance {index} of the batch): {error}") from None
    if t0 + horizon >= np.iinfo(np.int32).max:
        raise ValueError(f"horizon plus initial transitions must fit in int32, got "
                         f"horizon={horizon} with {t0 - 1} initial transitions")
    return counts0, sums0


def _initial_carry(mdps: list[MDP], agent: Agent, numbers, seed, replications: int,
                   counts0, sums0: list, initial_round: int, source=None,
                   numbers_per_instance: bool = False) -> _Carry:
    """Every replication's keys, initial statistics and initialised agent state, for each
    MDP of ``mdps`` in turn (its initial reward sums in ``sums0``): the replications of
    every MDP get the keys ``jax.random.split(key, replications)``, as for that MDP
    alone. With ``source`` (int ``[rows]``, indices into the ``len(mdps) * replications``
    runs, MDP after MDP), only those runs, in that order (row ``j`` is replication
    ``source[j] % replications`` of MDP ``source[j] // replications``)."""
    dtype = jnp.asarray(mdps[0].P).dtype
    with _prng_layout():
        init_keys, round_keys, bits_keys = _stream_keys(_keys(seed, replications))
        if source is None:
            if len(mdps) == 1:
                agent_state = _init_agents(init_keys, mdps[0], numbers, agent=agent,
                                           initial_round=initial_round)
            else:
                agent_state = _init_batch(init_keys, list(mdps), numbers, agent=agent,
                                          initial_round=initial_round,
                                          numbers_per_instance=numbers_per_instance,
                                          flat=True)
        else:
            which, replication = np.divmod(np.asarray(source), replications)
            if len(mdps) == 1:
                agent_state = _init_agents(init_keys[replication], mdps[0], numbers,
                                           agent=agent, initial_round=initial_round)
            else:
                # The batch's program over the MDPs these rows need (every key of each).
                needed, position = np.unique(which, return_inverse=True)
                own = (jax.tree_util.tree_map(lambda leaf: leaf[needed], numbers)
                       if numbers_per_instance else numbers)
                agent_state = jax.tree_util.tree_map(
                    lambda leaf: leaf[position, replication],
                    _init_batch(init_keys, [mdps[m] for m in needed], own, agent=agent,
                                initial_round=initial_round,
                                numbers_per_instance=numbers_per_instance))
    if source is None:
        rows = replications * len(mdps)

        def tiled(keys):
            return jnp.tile(keys, (len(mdps),) + (1,) * (keys.ndim - 1))

        round_keys = round_keys if len(mdps) == 1 else tiled(round_keys)
        bits_keys = bits_keys if len(mdps) == 1 else tiled(bits_keys)
        reward_sums = jnp.concatenate([
            jnp.broadcast_to(jnp.asarray(sums), (replications,) + sums.shape)
            for sums in sums0])
    else:
        rows = len(source)
        round_keys, bits_keys = round_keys[replication], bits_keys[replication]
        reward_sums = jnp.stack([jnp.asarray(sums) for sums in sums0])[which]

    carry = _Carry(
        key=round_keys,
        bits_key=bits_keys,
        state=jnp.zeros((rows,), dtype=jnp.int32),
        counts=jnp.broadcast_to(jnp.asarray(counts0), (rows,) + counts0.shape),
        reward_sums=reward_sums,
        agent_state=agent_state,
        pseudo_regret=jnp.zeros((rows,), dtype=dtype),
        regret=jnp.zeros((rows,), dtype=dtype),
        previous=jnp.full((rows, 2), -1, dtype=jnp.int32),
        reward=jnp.zeros((rows,), dtype=dtype),
    )
    return jax.tree_util.tree_map(jnp.array, carry)  # own buffers (they are donated)


def _layout(devices, rows: int):
    """``(mesh, held)``: the mesh the ``rows`` runs are split over and the rows of the
    padded replication axis this process's devices hold (:func:`jaxmdp._sharding.local_rows`),
    or ``(None, None)`` for one device of one process."""
    mesh = sharding.replication_mesh(devices)
    if mesh.size == 1 and jax.process_count() == 1:
        return None, None
    return mesh, sharding.local_rows(mesh, sharding.padded_size(rows, mesh))


def _place(batched, shared, mesh, devices, held, row_bytes: int = 0):
    """Puts the ``batched`` arrays (leading replication axis: the carry, and each
    replication's MDP index in a batch) and the ``shared`` arrays where they run: split
    over ``mesh`` (``batched`` holds this process's rows ``held`` of the padded axis,
    whose padding's results are dropped), or on the one device (``mesh`` is ``None``).
    Returns ``(batched, shared, mesh or None, block)`` with ``block`` the replications
    per vmapped call (``None``: all of them at once)."""
    if mesh is not None:
        batched = sharding.shard(batched, mesh, held)
        shared = sharding.replicate(shared, mesh)
    elif devices is not None:
        batched, shared = jax.device_put((batched, shared), list(devices)[0])
    carry = batched[0]
    local = -(-carry.state.shape[0] // (mesh.size if mesh is not None else 1))
    platform = (mesh.devices.flat[0] if mesh is not None
                else jax.tree_util.tree_leaves(carry)[0].devices().pop()).platform
    block = replication_block(carry, carry.state.shape[0], platform, row_bytes)
    block = None if block is None or block >= local else block
    return batched, shared, mesh, block


def _run_chunks(batched, shared, horizon: int, replications: int, record_every: int,
                chunk_size: int, options: dict, progress: bool, label: str):
    """Plays the ``horizon`` rounds in jitted chunks of equal length, with a progress bar.

    ``batched`` is ``(carry, instance)`` (see :func:`_run_chunk`). Returns the final
    carry and the per-chunk pseudo-regret, regret and path records."""
    carry, instance = batched
    total_records = horizon // record_every
    records_per_chunk = _records_per_chunk(total_records, max(1, chunk_size // record_every))
    pseudo, regret, paths = [], [], []
    progress = progress and jax.process_index() == 0  # one bar, drawn by process 0
    with Progress(horizon, f"simulate {label}", enabled=progress) as bar, _prng_layout():
        done = 0
        while done < total_records:
            n = min(records_per_chunk, total_records - done)
            start = jnp.asarray(done * record_every, jnp.int32)
            carry, (p, r, path) = _run_chunk(carry, instance, *shared, start, num_records=n,
                                             record_every=record_every, **options)
            pseudo.append(p)
            regret.append(r)
            paths.append(path)
            done += n
            if progress:
                # Of this process's replications: no communication between processes.
                mean = sharding.local_mean(carry.pseudo_regret, replications)
                bar.update(n * record_every, info=f"mean pseudo-regret {mean:.2f}")
        remainder = horizon - total_records * record_every
        if remainder:
            start = jnp.asarray(total_records * record_every, jnp.int32)
            carry, (_, _, path) = _run_chunk(carry, instance, *shared, start, num_records=1,
                                             record_every=remainder, **options)
            paths.append(path)
            bar.update(remainder)
    return carry, pseudo, regret, paths


def _assemble(carry: _Carry, pseudo, regret, paths, replications: int, record_every: int,
              record_path: bool, total_records: int, dtype) -> Trajectories:
    """Gathers the chunks' records into :class:`Trajectories`, dropping any padding."""
    empty = jnp.zeros((replications, 0), dtype=dtype)
    pseudo, regret, paths, carry = sharding.gather(
        (pseudo, regret, paths, carry._replace(key=None, bits_key=None)))
    states = actions = None
    if record_path:
        # Each chunk's path is [replications, records, record_every] (or [replications,
        # records] when record_every == 1): flatten to one column per round.
        states = jnp.concatenate([s.reshape(s.shape[0], -1) for s, _ in paths], axis=1)
        actions = jnp.concatenate([a.reshape(a.shape[0], -1) for _, a in paths], axis=1)
        states, actions = states[:replications], actions[:replications]
    agent_state = jax.tree_util.tree_map(lambda leaf: leaf[:replications], carry.agent_state)
    return Trajectories(
        pseudo_regret=jnp.concatenate(pseudo, axis=1)[:replications] if pseudo else empty,
        regret=jnp.concatenate(regret, axis=1)[:replications] if regret else empty,
        times=jnp.arange(1, total_records + 1, dtype=jnp.int32) * record_every,
        counts=carry.counts[:replications],
        state=carry.state[:replications],
        policy=getattr(agent_state, "policy", None),
        reward_sums=carry.reward_sums[:replications],
        agent_state=agent_state,
        states=states,
        actions=actions,
        unconverged=getattr(agent_state, "unconverged", None),
    )


# --------------------------------------------------------------------------------------
# Sweeps: the agent's number options as one more batch axis.


def grid_points(grid) -> list[dict]:
    """The points of a sweep's ``grid``: a mapping ``option -> values`` is the product of
    the values (the last option varying fastest), a sequence of ``{option: value}`` dicts
    is taken as it is.

    Raises:
        ValueError: for an empty grid, an option with no values, or a point that is not
            a dict.

    Example:
        >>> from jaxmdp import grid_points
        >>> grid_points({"delta": [0.01, 0.1], "c_lin": [3.0, 6.0]})[1]
        {'delta': 0.01, 'c_lin': 6.0}
    """
    if isinstance(grid, dict):
        if not grid:
            raise ValueError("grid must name at least one option, got {}")
        values = {}
        for name, v in grid.items():
            v = [v] if isinstance(v, str) or np.ndim(v) == 0 else list(v)
            if not v:
                raise ValueError(f"grid[{name!r}] must hold at least one value, got {v!r}")
            values[name] = v
        return [dict(zip(values, combination))
                for combination in itertools.product(*values.values())]
    points = list(grid) if isinstance(grid, (list, tuple)) else None
    if not points or not all(isinstance(point, dict) for point in points):
        raise ValueError(f"grid must be a dict of option values or a non-empty list of "
                         f"option dicts, got {grid!r}")
    return [dict(point) for point in points]


def _row_bytes(agent: Agent, numbers: dict, mdp: MDP) -> int:
    """Bytes of one run's carry: its statistics and its agent's state."""
    spec = env_spec(mdp)

    def init(key, numbers):
        return _with_numbers(agent, numbers).init(key, spec)

    one = {path: value[0] for path, value in numbers.items()}
    state = jax.eval_shape(init, jax.random.key(0), one)
    S, A = mdp.num_states, mdp.num_actions
    itemsize = jnp.asarray(mdp.P).dtype.itemsize
    statistics = S * A * S * 4 + S * A * itemsize + 8 * itemsize + 64
    return statistics + sum(leaf.size * leaf.dtype.itemsize
                            for leaf in jax.tree_util.tree_leaves(state))


def _available_bytes(devices) -> int | None:
    """Memory left on the first device (the host's available memory on a CPU), or
    ``None`` where it cannot be read."""
    device = (list(devices) if devices is not None else jax.devices())[0]
    if device.platform == "cpu":
        try:
            import os

            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            return None
    stats = device.memory_stats() or {}
    if "bytes_limit" not in stats:
        return None
    return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))


def sweep(mdp: MDP, agent: str, grid, horizon: int, replications: int, seed=0,
          initial_counts=None, *, options: dict | None = None,
          record_every: int | None = None, chunk_size: int = 2000, progress: bool = True,
          devices=None, initial_reward_sums=None, record_path: bool = False,
          memory_bytes: int | None = None) -> Trajectories:
    """Runs the agent ``agent`` at every point of ``grid`` in one compiled program.

    The agent's options split into structure (rules, tie-breaking, batching: part of the
    program) and numbers (confidence levels, radius constants, span bounds, ...: traced,
    :func:`jaxmdp.agents.agent_options` gives each option's kind). Every point of the grid
    must have the same structure; its numbers become one more batch axis beside the
    replications (and the MDPs of a batch), so the whole grid compiles once, whatever its
    size and its numbers. Point ``i`` gets the keys of a separate call (common random
    numbers): its runs equal ``simulate(mdp, get_agent(agent, **options, **points[i]),
    horizon, replications, seed)``'s.

    Args:
        mdp: one :class:`~jaxmdp.MDP` or a batch (as :func:`simulate`).
        agent: a registered agent's name.
        grid: ``{option: values}`` (their product, the last option varying fastest) or a
            list of ``{option: value}`` points (:func:`grid_points`).
        horizon, replications, seed, initial_counts, record_every, chunk_size, progress,
            devices, initial_reward_sums, record_path: as for :func:`simulate`.
        options: options shared by every point.
        memory_bytes: the memory the runs may hold; default what the first device has
            available (on a CPU, the host's available memory).

    Returns:
        :class:`Trajectories` with a leading axis of ``len(grid_points(grid))`` points
        (then the MDPs of a batch, then the replications): ``pseudo_regret`` of shape
        ``[G, replications, horizon // record_every]`` (``[G, M, replications, ...]``).

    Raises:
        ValueError: as :func:`simulate`; for an agent that is not a registered name, an
            unknown option, points whose structure differs (naming the option), or a
            grid whose runs need more memory than ``memory_bytes`` (naming the number of
            points that fit).

    Example:
        >>> import jaxmdp as jm
        >>> traj = jm.sweep(jm.envs.make("riverswim-6"), "ucrl2",
        ...                 {"delta": [0.01, 0.05, 0.2]}, horizon=200, replications=4,
        ...                 progress=False)
        >>> traj.pseudo_regret.shape
        (3, 4, 200)
    """
    enable_compilation_cache()
    if not isinstance(agent, str):
        raise ValueError(f"agent must be the name of a registered agent, got {agent!r}")
    options = dict(options or {})
    points = grid_points(grid)
    _check_positive_int("replications", replications)
    agents = [get_agent(agent, **options, **point).for_replications(replications)
              for point in points]
    mdp, instances = _instances(mdp)
    dtype = jnp.asarray(mdp.P).dtype
    split = [_split_agent(a, dtype) for a in agents]
    structure = split[0][0]
    for point, (other, _) in zip(points, split):
        if other != structure:
            changed = sorted(name for name in point
                             if any(p.get(name) != point[name] for p in points))
            raise ValueError(f"grid points must share the agent's structure (only number "
                             f"options can be swept, jaxmdp.agents.agent_options gives "
                             f"their kinds); the options {changed} change it between "
                             f"{points[0]} and {point}")
    G = len(points)
    M = 1 if instances is None else len(instances)
    # Built on the host: one transfer each, no eager device op (each would compile).
    numbers = {path: jnp.asarray(np.repeat(np.stack([np.asarray(n[path]) for _, n in split]),
                                           M))
               for path in split[0][1]}
    gain, delta = optimum(mdp)
    base = instances or [mdp]
    rows = G * M * replications
    needed = _row_bytes(structure, numbers, base[0]) * rows * 2
    available = _available_bytes(devices) if memory_bytes is None else memory_bytes
    if available is not None and needed > available:
        fits = max(0, int(available // (needed / G)))
        raise ValueError(f"grid: {G} points x {M * replications} runs need about "
                         f"{needed / 2**30:.2f} GiB, more than the {available / 2**30:.2f} "
                         f"GiB available; at most {fits} points of {M * replications} "
                         f"runs fit (sweep fewer points per call, or fewer replications)")
    stacked = jax.tree_util.tree_map(
        lambda *leaves: jnp.asarray(np.stack([np.asarray(leaf) for leaf in leaves])),
        *(base * G))
    gain, delta = np.asarray(gain), np.asarray(delta)
    solved = (jnp.asarray(np.tile(np.reshape(gain, (-1,)), G)),
              jnp.asarray(np.tile(np.reshape(delta, (-1,) + delta.shape[-2:]), (G, 1, 1))))
    traj = _run(stacked, base * G, structure, numbers, True, horizon, replications, seed,
                initial_counts, record_every=record_every, chunk_size=chunk_size,
                progress=progress, devices=devices, initial_reward_sums=initial_reward_sums,
                record_path=record_path, optimum=solved, label=f"sweep {agent} ({G} points)")
    if instances is None:  # [G, replications, ...] already
        return traj
    fields = {field: getattr(traj, field) for field in traj._fields if field != "times"}
    return traj._replace(**_split_rows(fields, (G, M)))  # [G * M, replications, ...]
