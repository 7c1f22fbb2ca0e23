"""Deprecated names and modules kept for one release: one warning, one lookup.

Every deprecated alias of jaxmdp goes through this module: an old module warns once when
it is imported (:func:`warn_deprecated`), and a module whose old names moved elsewhere
resolves them on first use, with a warning, through the ``__getattr__`` that
:func:`moved_names` builds.

Example:
    >>> import warnings
    >>> from jaxmdp._deprecation import moved_names
    >>> __getattr__ = moved_names("mypackage", {"old": ("math", "pi")})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     value = __getattr__("old")
    >>> round(value, 4), str(caught[0].message)
    (3.1416, 'mypackage is deprecated; use math.pi')
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping


def warn_deprecated(old: str, new: str, *, stacklevel: int = 2) -> None:
    """Warns that ``old`` is deprecated in favour of ``new`` (a ``DeprecationWarning``).

    The message is ``"<old> is deprecated; use <new>"``.

    Args:
        old: the deprecated module or name, e.g. ``"jaxmdp.estimators"``.
        new: what to use instead.
        stacklevel: as :func:`warnings.warn`'s, counted from the caller of this function.

    Example:
        >>> import warnings
        >>> from jaxmdp._deprecation import warn_deprecated
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     warn_deprecated("jaxmdp.old", "jaxmdp.new")
        >>> caught[0].category.__name__, str(caught[0].message)
        ('DeprecationWarning', 'jaxmdp.old is deprecated; use jaxmdp.new')
    """
    warnings.warn(f"{old} is deprecated; use {new}", DeprecationWarning,
                  stacklevel=stacklevel + 1)


def moved_names(module_name: str, moved: Mapping[str, tuple[str, str | None]], *,
                name_in_message: bool = False) -> Callable[[str], object]:
    """A module ``__getattr__`` that resolves names which moved to other modules.

    For ``name`` in ``moved``, with ``moved[name] = (module, attribute)``, the returned
    function warns (:func:`warn_deprecated`, pointing at the line that asked for the
    name) and returns ``module.attribute``, importing ``module`` on first use. With
    ``attribute`` None it returns the module ``module`` itself, without a warning of its
    own (a deprecated module warns when it is imported). Any other name raises
    ``AttributeError`` as a module does.

    Args:
        module_name: the module that defines the ``__getattr__``, e.g. ``"jaxmdp.evi"``.
        moved: old name -> ``(module, attribute)`` where it is now.
        name_in_message: the warning names ``"<module_name>.<name>"`` (default: the
            module alone).

    Returns:
        The function to assign to the module's ``__getattr__``.

    Example:
        >>> from jaxmdp._deprecation import moved_names
        >>> getattr_ = moved_names("mypackage", {"sqrt": ("math", "sqrt")})
        >>> getattr_("cos")
        Traceback (most recent call last):
        ...
        AttributeError: module 'mypackage' has no attribute 'cos'
    """

    def __getattr__(name):
        if name in moved:
            module, attribute = moved[name]
            if attribute is None:
                return importlib.import_module(module)
            old = f"{module_name}.{name}" if name_in_message else module_name
            warn_deprecated(old, f"{module}.{attribute}", stacklevel=2)
            return getattr(importlib.import_module(module), attribute)
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return __getattr__
