"""Deprecated alias of :mod:`jaxmdp.envs` (kept for one release).

``jm.examples.paper_mdp``, ``rigged_counts``, ``random_mdp`` and ``garnet`` are the same
functions as ``jm.envs.paper_mdp`` and so on; use :mod:`jaxmdp.envs` (and
:func:`jaxmdp.envs.make` for the named environments).
"""

from jaxmdp._deprecation import warn_deprecated
from jaxmdp.envs import garnet, paper_mdp, random_mdp, rigged_counts

__all__ = ["paper_mdp", "rigged_counts", "random_mdp", "garnet"]

warn_deprecated("jaxmdp.examples", "jaxmdp.envs")
