r"""The field's named environments and parameterised families; :func:`make`, :func:`batch`.

Every environment is a function returning a validated :class:`~jaxmdp.MDP` whose ``R``
holds the *mean* rewards (draw observed rewards around them with
:meth:`~jaxmdp.MDP.with_reward_law`). Each docstring gives the source and every number.
:func:`make` builds one by name (``jm.envs.make("riverswim-6")``), :func:`batch` stacks
several instances of a family into one :class:`~jaxmdp.MDP` with a leading batch axis
(``jm.envs.batch("garnet-10-2-3", seeds=range(100))``), :func:`names` lists the names and
:data:`ENVIRONMENTS` maps each name to a one-line description; :data:`PATTERNS` maps
the names that stand for a family (their capital letters are parameters) to an instance.
All of them read one registry, filled in this module; :func:`register_env` adds a user's
environment or family to it, so that every name-taking function (``make``, ``batch``,
``jaxmdp run --env``, ``jaxmdp bench --suite``) knows it.
One module per family: ``chains`` (paper-mdp, RiverSwim, SixArms), ``grids`` (grid
worlds, FrozenLake), ``deepsea``, ``garnet`` (GARNET and dense random MDPs) and
``papers`` (the SCAL / TUCRL toys, StatisticalRL's ThreeState and Nasty, Wei et al.'s);
``gym_adapters`` converts tabular gymnasium environments both ways
(:func:`from_gymnasium`, :func:`to_gymnasium`; the ``gym`` extra).

========================  ========  =  ================================================
name                      S         A  source
========================  ========  =  ================================================
``paper-mdp``             3         2  Cowan, Katehakis & Pirutinsky (2019), sec. 5
``riverswim-6``           6         2  StatisticalRL ``river-swim-6``
``riverswim-25``          25        2  StatisticalRL ``river-swim-25``
``riverswim-osband-6``    6         2  Osband, Russo & Van Roy (2013)
``riverswim-ergodic-6``   6         2  StatisticalRL ``ergo-river-swim-6``
``riverswim-ergodic-25``  25        2  StatisticalRL ``ergo-river-swim-25``
``grid-2-room``           55        4  StatisticalRL ``grid-2-room``
``grid-4-room``           20        4  StatisticalRL ``grid-4-room``
``sixarms``               7         6  Strehl & Littman (2008)
``toy3d-1``               3         2  rlexplorer ``Toy3D_1`` (SCAL)
``toy3d-2``               3         2  rlexplorer ``Toy3D_2`` (SCAL)
``toy3d-weak``            3         2  rlexplorer ``Toy3D_1(delta=0)``: weakly communicating
``threestate``            3         2  StatisticalRL ``three-state``
``nasty``                 7         2  StatisticalRL ``nasty``
``jumpriverswim-6``       6         2  Wei et al. (2020) ``JumpRiverSwimEnv``
``randommdp-wei``         6         2  Wei et al. (2020) ``RandomMDPEnv``, seed 3
``garnet-S-A-b``          S         A  GARNET, ``b`` next states per row (seeded)
``random-S-A``            S         A  dense Dirichlet(1) rows (seeded)
``riverswim-N``           N         2  StatisticalRL RiverSwim, any ``N >= 2``
``grid-R-C``              R*C       4  StatisticalRL GridWorld, open room, ``slip=``
``deepsea-N``             N(N+1)/2  2  Colosseum ``DeepSeaContinuous``
``frozenlake-N``          <= N*N    4  Colosseum ``FrozenLakeContinuous`` (seeded lake)
========================  ========  =  ================================================

**Start state.** Every simulation in jaxmdp starts in state 0, so each environment is
numbered so that its published start state is state 0 (the docstrings say where a
source starts elsewhere).

**Zero transition probabilities.** The paper's parameter space
:math:`\Theta = \{p : p_y > 0 \ \forall y\}` contains no law with a zero entry, but every
named environment except ``paper-mdp`` and ``random-S-A`` has them (RiverSwim moves at
most one state, a grid world at most one cell). What that changes:

* *Planning.* Some stationary policies are multichain (for example "always left" in
  every state of a grid world's left column is closed), so policy iteration must handle
  multichain evaluations; the MDPs themselves are communicating, so the optimal gain is
  the same from every state and :func:`~jaxmdp.solve_average_reward` applies.
* *The lower bound.* :math:`\mathbf{K}_{x,a}` is an infimum over :math:`q \in \Theta`
  and :math:`\Theta` is open, so with :math:`p^a_x \notin \Theta` it is the minimum over
  the closed simplex: the alternative ``q`` may put mass on states ``p`` never reaches
  (a law that moves mass to an unreachable high-value state is as plausible as any in
  :math:`\Theta`), and the minimiser may lie on the boundary (:func:`~jaxmdp.kinf`'s
  boundary case: ``q*`` puts mass only on ``supp(p)`` and the maximisers of ``v``).
  :func:`~jaxmdp.regret_lower_bound` computes exactly this. It is the bound for a
  learner that does *not* know which transitions are impossible, as the paper's agents do
  not; a learner told the support has a larger :math:`\mathbf{K}` (``q`` restricted to
  ``supp(p)``) and a smaller bound.
* *The agents.* Their estimates :math:`(N + 1)/(n + S)` and Dirichlet(N + 1) posterior
  draws are always in :math:`\Theta`, so the indices only ever see positive ``p``, and
  the estimated MDPs they plan on are unichain.

``random_mdp`` and ``garnet`` draw MDPs from an explicit ``jax.random`` key for scaling
studies; both are pure and work under ``jit``/``vmap`` over keys (with ``S``, ``A``,
``b`` static).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmdp._registry import Registry
from jaxmdp.envs._garnet import garnet, random_mdp
from jaxmdp.envs.chains import (
    paper_mdp,
    rigged_counts,
    riverswim,
    riverswim_ergodic,
    riverswim_osband,
    sixarms,
)
from jaxmdp.envs.deepsea import deep_sea
from jaxmdp.envs.grids import frozen_lake, grid_2_room, grid_4_room, grid_world, open_grid
from jaxmdp.envs.gym_adapters import from_gymnasium, to_gymnasium
from jaxmdp.envs.papers import (
    jump_riverswim,
    nasty,
    random_mdp_wei,
    three_state,
    toy3d_1,
    toy3d_2,
    toy3d_weak,
)
from jaxmdp.mdp import MDP

__all__ = [
    "ENVIRONMENTS",
    "PATTERNS",
    "batch",
    "deep_sea",
    "frozen_lake",
    "from_gymnasium",
    "garnet",
    "grid_2_room",
    "grid_4_room",
    "grid_world",
    "jump_riverswim",
    "make",
    "names",
    "nasty",
    "register_env",
    "open_grid",
    "paper_mdp",
    "random_mdp",
    "random_mdp_wei",
    "rigged_counts",
    "riverswim",
    "riverswim_ergodic",
    "riverswim_osband",
    "sixarms",
    "three_state",
    "to_gymnasium",
    "toy3d_1",
    "toy3d_2",
    "toy3d_weak",
]


# --------------------------------------------------------------------------------------
# The registry.


class _Entry(NamedTuple):
    description: str
    factory: Callable[..., MDP]
    seed: str | None  # for a family: how make's seed reaches the factory
    pattern: re.Pattern | None  # a family's names; None for a fixed name
    example: str | None  # a family's representative instance


# The one registry: name -> entry, in registration order (make tries the families in that
# order, after the fixed names). Filled below, in one place, and by register_env.
_REGISTRY: Registry[_Entry] = Registry("environment")

#: The values of :func:`register_env`'s ``seed``.
SEEDS = (None, "key", "int")


def _family_pattern(name: str) -> re.Pattern | None:
    """A family's names: each part of ``name`` that is one letter stands for an integer."""
    parts = name.split("-")
    if not any(len(part) == 1 and part.isalpha() for part in parts):
        return None
    return re.compile("-".join(r"(\d+)" if len(part) == 1 and part.isalpha()
                               else re.escape(part) for part in parts), re.IGNORECASE)


def register_env(name: str, factory: Callable[..., MDP], *, description: str,
                 example: str | None = None, seed: str | None = None,
                 replace: bool = False) -> None:
    """Registers an environment, or a family of them, under ``name`` for :func:`make`.

    A name whose dash-separated parts include single letters names a *family*: each such
    letter stands for an integer (``"garnet-S-A-b"`` for ``"garnet-100-4-10"``), and
    ``make("garnet-100-4-10", seed=..., dtype=..., **params)`` calls
    ``factory(100, 4, 10, dtype=dtype, **params)``, with the seed passed as ``seed``
    says. Any other name is one environment, built by ``factory(dtype=dtype)``. Names
    registered earlier take precedence: a fixed name over every family, and a family over
    those registered after it.

    Args:
        name: the name, e.g. ``"my-chain"`` or ``"my-chain-N"`` (names are
            case-insensitive, as every registry's: :class:`jaxmdp.Registry`).
        factory: returns the :class:`~jaxmdp.MDP` (keyword ``dtype``, default float).
        description: one line: sizes, what it is, its source (``"S=6, A=2: ..."``);
            listed by :data:`ENVIRONMENTS` and ``jaxmdp envs``.
        example: a family's representative instance (``"my-chain-10"``), listed by
            :data:`PATTERNS`; required for a family, ``None`` for a fixed name.
        seed: a family's randomness: ``None`` (deterministic; ``make``'s ``seed`` is
            ignored), ``"key"`` (``factory(jax.random.key(seed), *sizes, ...)``; ``seed``
            may also be a key) or ``"int"`` (``factory(*sizes, seed=seed, ...)``).
        replace: allow replacing a name already registered (default False).

    Raises:
        ValueError: for a name already registered (without ``replace=True``), an empty
            or non-string name or description, a factory that is not callable, an unknown
            ``seed``, or an ``example`` missing for a family, given for a fixed name or
            not matching the family.

    Example:
        >>> import numpy as np
        >>> import jaxmdp as jm
        >>> def two_states(*, dtype=None):
        ...     P = [[[0.9, 0.1], [0.2, 0.8]], [[0.5, 0.5], [0.1, 0.9]]]
        ...     return jm.MDP(np.asarray(P, dtype), np.asarray([[0.0, 0.1], [0.5, 1.0]], dtype))
        >>> jm.envs.register_env("two-states", two_states,
        ...                      description="S=2, A=2: a two-state example")
        >>> jm.envs.make("two-states").P.shape
        (2, 2, 2)
        >>> jm.envs.register_env("chain-N", lambda n, *, dtype=None: jm.envs.riverswim(n),
        ...                      description="S=N, A=2: a chain", example="chain-8")
        >>> jm.envs.make("chain-8").num_states, jm.envs.PATTERNS["chain-N"]
        (8, 'chain-8')
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    if name in _REGISTRY and not replace:
        raise ValueError(f"environment {name!r} is already registered; pass replace=True to "
                         f"replace it")
    if not callable(factory):
        raise ValueError(f"factory must be callable, got {factory!r}")
    if not isinstance(description, str) or not description:
        raise ValueError(f"description must be a non-empty string, got {description!r}")
    if seed not in SEEDS:
        raise ValueError(f"seed must be one of {list(SEEDS)}, got {seed!r}")
    pattern = _family_pattern(name)
    if pattern is None and example is not None:
        raise ValueError(f"example names an instance of a family; {name!r} is one "
                         f"environment, got example={example!r}")
    if pattern is not None and not (isinstance(example, str) and pattern.fullmatch(example)):
        raise ValueError(f"example must be an instance of the family {name!r} (its "
                         f"one-letter parts replaced by integers), got {example!r}")
    _REGISTRY.register(name, _Entry(description, factory, seed, pattern, example),
                       replace=replace)


#: Every name :func:`make` accepts, with a one-line description (S, A, source): a
#: read-only view of the registry. The names in :data:`PATTERNS` stand for families:
#: replace their one-letter parts by integers (``garnet-100-4-10``, ``riverswim-40``,
#: ``grid-5-8``).
ENVIRONMENTS: Mapping[str, str] = _REGISTRY.view(lambda entry: entry.description)

#: The names of :data:`ENVIRONMENTS` that stand for a family of instances, each mapped to
#: a representative instance (the one listings show; seed 0 where a seed is needed).
PATTERNS: Mapping[str, str] = _REGISTRY.view(lambda entry: entry.example,
                                             lambda entry: entry.pattern is not None)

# jaxmdp's environments, in the order they are listed.
for _name, _factory, _description, _example, _seed in (
    ("paper-mdp", paper_mdp, "S=3, A=2: the paper's example (Cowan, Katehakis & "
     "Pirutinsky 2019, section 5)", None, None),
    ("riverswim-6", functools.partial(riverswim, 6), "S=6, A=2: RiverSwim, r(5, right) = 1 "
     "(StatisticalRL river-swim-6)", None, None),
    ("riverswim-25", functools.partial(riverswim, 25, reward_right=0.99), "S=25, A=2: "
     "RiverSwim, r(24, right) = 0.99 (StatisticalRL river-swim-25)", None, None),
    ("riverswim-osband-6", functools.partial(riverswim_osband, 6), "S=6, A=2: RiverSwim of "
     "Osband, Russo & Van Roy (2013)", None, None),
    ("riverswim-ergodic-6", functools.partial(riverswim_ergodic, 6), "S=6, A=2: ergodic "
     "RiverSwim, leak 0.001 (StatisticalRL ergo-river-swim-6)", None, None),
    ("riverswim-ergodic-25", functools.partial(riverswim_ergodic, 25), "S=25, A=2: ergodic "
     "RiverSwim, leak 0.001 (StatisticalRL ergo-river-swim-25)", None, None),
    ("grid-2-room", grid_2_room, "S=55, A=4: two-room grid world, slip 0.1 (StatisticalRL "
     "grid-2-room)", None, None),
    ("grid-4-room", grid_4_room, "S=20, A=4: four-room grid world, slip 0.1 (StatisticalRL "
     "grid-4-room)", None, None),
    ("sixarms", sixarms, "S=7, A=6: SixArms, rewards / 6000 (Strehl & Littman 2008)", None,
     None),
    ("toy3d-1", toy3d_1, "S=3, A=2: SCAL's three-state toy, delta=0.99 (rlexplorer Toy3D_1)",
     None, None),
    ("toy3d-2", toy3d_2, "S=3, A=2: SCAL's sticky three-state toy, delta=0.005, "
     "epsilon=0.001 (rlexplorer Toy3D_2)", None, None),
    ("toy3d-weak", toy3d_weak, "S=3, A=2: weakly communicating, state 1 unreachable "
     "(rlexplorer Toy3D_1 with delta=0, the TUCRL runs)", None, None),
    ("threestate", three_state, "S=3, A=2: delta=0.005 (StatisticalRL three-state)", None,
     None),
    ("nasty", nasty, "S=7, A=2: two loops behind a hub, delta=0.005, epsilon=0.05 "
     "(StatisticalRL nasty)", None, None),
    ("jumpriverswim-6", jump_riverswim, "S=6, A=2: RiverSwim with jumps, rewards 1 - cost "
     "(Wei et al. 2020 JumpRiverSwimEnv)", None, None),
    ("randommdp-wei", random_mdp_wei, "S=6, A=2: random costs and rows, NumPy seed 3, rewards "
     "1 - cost (Wei et al. 2020 RandomMDPEnv)", None, None),
    ("garnet-S-A-b", garnet, "S, A: GARNET, b random next states per row, Dirichlet(1) "
     "weights, Uniform(0, 1) rewards (seed=)", "garnet-100-4-5", "key"),
    ("random-S-A", random_mdp, "S, A: dense Dirichlet(1) rows, Uniform(0, 1) rewards "
     "(seed=)", "random-10-4", "key"),
    ("riverswim-N", riverswim, "S=N, A=2: RiverSwim of any length N >= 2, r(N-1, right) = 1 "
     "(StatisticalRL RiverSwim)", "riverswim-12", None),
    ("grid-R-C", open_grid, "S=R*C, A=4: open R x C grid world, start top left, goal bottom "
     "right, slip 0.1 (slip=; StatisticalRL GridWorld)", "grid-5-5", None),
    ("deepsea-N", deep_sea, "S=N(N+1)/2, A=2: continuing DeepSea of size N >= 2 (Colosseum "
     "DeepSeaContinuous)", "deepsea-10", None),
    ("frozenlake-N", frozen_lake, "S<=N*N, A=4: continuing slippery N x N FrozenLake, random "
     "lake (seed=, p_frozen=0.8, slip=0.25; Colosseum FrozenLakeContinuous)",
     "frozenlake-4", "int"),
):
    register_env(_name, _factory, description=_description, example=_example, seed=_seed)
del _name, _factory, _description, _example, _seed


def names() -> list[str]:
    """The names :func:`make` accepts (the keys of :data:`ENVIRONMENTS`).

    The names in :data:`PATTERNS` (``garnet-S-A-b``, ``riverswim-N``, ...) stand for
    their instances (``garnet-100-4-10``, ``riverswim-40``).

    Example:
        >>> import jaxmdp as jm
        >>> "riverswim-6" in jm.envs.names(), "deepsea-N" in jm.envs.names()
        (True, True)
    """
    return list(_REGISTRY)


def _unknown(name) -> ValueError:
    return ValueError(f"unknown environment name {name!r}; known names: "
                      f"{', '.join(names())} (capital letters stand for integers)")


def _key(seed):
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return jax.random.key(int(seed))
    if isinstance(seed, jax.Array) and (jnp.issubdtype(seed.dtype, jax.dtypes.prng_key)
                                        or seed.shape == (2,)):
        return seed
    raise ValueError(f"seed must be an int or a jax.random key, got {seed!r}")


def _build_family(entry: _Entry, sizes: tuple[int, ...], seed, dtype, params) -> MDP:
    if entry.seed == "key":
        return entry.factory(_key(seed), *sizes, dtype=dtype, **params)
    if entry.seed == "int":
        return entry.factory(*sizes, seed=seed, dtype=dtype, **params)
    return entry.factory(*sizes, dtype=dtype, **params)

def make(name: str, *, seed=0, dtype=None, **params) -> MDP:
    """Builds the named environment.

    Args:
        name: one of :func:`names` (those of :func:`register_env` included): a fixed name
            (``"riverswim-6"``, ``"grid-4-room"``, ...) or an instance of a family of
            :data:`PATTERNS`: ``"garnet-S-A-b"`` (``"garnet-100-4-10"``), ``"random-S-A"``
            (``"random-10-4"``),
            ``"riverswim-N"`` (:func:`riverswim` with ``n = N``; the fixed name
            ``riverswim-25`` keeps its source's reward 0.99), ``"grid-R-C"``
            (:func:`open_grid`), ``"deepsea-N"`` (:func:`deep_sea`) or
            ``"frozenlake-N"`` (:func:`frozen_lake`).
        seed: for ``garnet`` and ``random``, an int seed or a ``jax.random`` key (default
            0; the MDP is ``garnet(jax.random.key(seed), S, A, b)`` or
            ``random_mdp(...)``); for ``frozenlake``, the int seed of the lake's map.
            Ignored by the other names.
        dtype: float dtype; default float (float64 under x64).
        **params: a family's other parameters, passed to its function (``slip=`` of
            ``grid-R-C`` and ``frozenlake-N``, ``p_frozen=``, ``reward_right=``, ...).
            Fixed names take none.

    Returns:
        The :class:`~jaxmdp.MDP`.

    Raises:
        ValueError: for an unknown name (the message lists the known ones), a family
            parameter out of range (the message names it) or an unknown parameter.

    Example:
        >>> import jaxmdp as jm
        >>> jm.envs.make("riverswim-6").P.shape
        (6, 2, 6)
        >>> jm.envs.make("garnet-20-3-4", seed=1).P.shape
        (20, 3, 20)
        >>> jm.envs.make("grid-3-5", slip=0.2).P.shape
        (15, 4, 15)
    """
    if not isinstance(name, str):
        raise _unknown(name)
    entry = _REGISTRY.get(name)
    if entry is not None and entry.pattern is None:
        if params:
            raise ValueError(f"environment {name!r} takes no parameters, got "
                             f"{sorted(params)}")
        return entry.factory(dtype=dtype)
    for entry in _REGISTRY.values():
        match = entry.pattern.fullmatch(name) if entry.pattern is not None else None
        if match:
            sizes = tuple(int(g) for g in match.groups())
            try:
                return _build_family(entry, sizes, seed, dtype, params)
            except TypeError as error:
                if params and "unexpected keyword argument" in str(error):
                    raise ValueError(f"unknown parameter for {name!r}: {error}") from None
                raise
    raise _unknown(name)


def _check_seeds(seeds) -> list:
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Iterable):
        raise ValueError(f"seeds must be a non-empty sequence of ints or keys, got {seeds!r}")
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds must be a non-empty sequence of ints or keys, got none")
    return seeds


def batch(name: str, seeds, *, dtype=None, **params) -> MDP:
    """Instances of a family, one per seed, stacked into one batched :class:`~jaxmdp.MDP`.

    Instance ``i`` is ``make(name, seed=seeds[i], dtype=dtype, **params)`` exactly; the
    result's leaves carry a leading batch axis of length ``len(seeds)`` (``P`` of shape
    ``[M, S, A, S]``), the layout :func:`jaxmdp.hardness` and ``jax.vmap`` take. Each
    instance is built (and, except for the key-drawn ``garnet`` and ``random``, valid
    by construction, validated) by its own call, so instance ``i`` equals ``make``'s
    bit for bit (a ``vmap``-ed draw can differ in the last bit of a row's
    normalisation); fixed names and deterministic families repeat the same MDP.

    Args:
        name: as for :func:`make`.
        seeds: a non-empty iterable of seeds (ints, or ``jax.random`` keys for
            ``garnet`` and ``random``), e.g. ``range(100)``.
        dtype: float dtype; default float (float64 under x64).
        **params: the family's parameters, as for :func:`make`.

    Returns:
        The batched :class:`~jaxmdp.MDP`.

    Raises:
        ValueError: as :func:`make`; for empty or non-iterable ``seeds``; if the
            instances differ in ``S`` or ``A`` (FrozenLake lakes of one size can differ
            in their number of reachable cells).

    Example:
        >>> import jaxmdp as jm
        >>> mdps = jm.envs.batch("garnet-10-2-3", seeds=range(100))
        >>> mdps.P.shape, mdps.num_states
        ((100, 10, 2, 10), 10)
    """
    seeds = _check_seeds(seeds)
    instances = [make(name, seed=seed, dtype=dtype, **params) for seed in seeds]
    shapes = [instance.P.shape for instance in instances]
    for seed, shape in zip(seeds, shapes, strict=True):
        if shape != shapes[0]:
            raise ValueError(f"seeds give MDPs of different sizes, which cannot be stacked: "
                             f"seed {seeds[0]!r} gives P of shape {shapes[0]}, seed "
                             f"{seed!r} gives {shape}")
    return jax.tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *instances)
