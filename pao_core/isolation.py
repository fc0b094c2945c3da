"""Hook implementations isolated: one plugin's exception or wrong answer is recorded, never fatal.

What pao adds to pluggy happens once, when a plugin is registered: each implementation
is wrapped so that its exception is recorded (and it answers ``None``, which pluggy
skips), and what a collection hook returns is checked against the contract its spec
names (``hookspecs.RETURNS``); an object that is not one is recorded and dropped.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Iterable, Iterator, Mapping

import pluggy

from pao_core import hookspecs

Record = Callable[[BaseException], None]


class IsolatingManager(pluggy.PluginManager):
    """pluggy's manager, with each hook implementation's failure isolated and recorded."""

    def __init__(self, project_name: str, record: Callable[[str, str, BaseException], None]) -> None:
        super().__init__(project_name)
        self._record = record
        self._specified: set[object] = set()

    def add_hookspecs(self, module_or_class: Any) -> None:
        """Add the specifications of ``module_or_class`` once (``pao_addhooks`` runs again for a re-registered plugin)."""
        if module_or_class not in self._specified:
            super().add_hookspecs(module_or_class)
            self._specified.add(module_or_class)

    def register(self, plugin: object, name: str | None = None) -> str | None:
        registered = super().register(plugin, name)
        for caller in self.get_hookcallers(plugin) or ():
            for impl in caller.get_hookimpls():
                if impl.plugin is plugin:
                    record = functools.partial(self._record, impl.plugin_name, caller.name)
                    impl.function = _isolated(impl, caller.name, record)
        return registered


def _isolated(impl: pluggy.HookImpl, hook: str, record: Record) -> Callable[..., Any]:
    """``impl``'s function, recording its exception (answering ``None``) and checking what it returns
    (against the contract of ``hook``, looked up on the call: a plugin's hooks may be added after it registered)."""
    function = impl.function
    if impl.wrapper or impl.hookwrapper:
        return _isolated_wrapper(function, record)

    @functools.wraps(function)
    def call(*args: Any) -> Any:
        try:
            result = function(*args)
            contract = hookspecs.RETURNS.get(hook)
            return result if contract is None or result is None else checked(result, contract, record)
        except Exception as exc:  # a plugin's bug must not break the others
            record(exc)
            return None

    return call


def _isolated_wrapper(function: Callable[..., Iterator[Any]], record: Record) -> Callable[..., Any]:
    """A wrapper implementation whose failure, before or after its ``yield``, leaves the result as it was."""

    @functools.wraps(function)
    def wrapper(*args: Any) -> Iterator[Any]:
        try:
            generator = function(*args)
            next(generator)
        except Exception as exc:  # includes StopIteration: a wrapper that never yields
            record(exc)
            return (yield)
        try:
            result = yield
        except BaseException:  # the call itself was interrupted: nothing of the plugin's to record
            generator.close()
            raise
        try:
            generator.send(result)
        except StopIteration as stop:
            return stop.value
        except Exception as exc:
            record(exc)
            return result
        generator.close()
        record(RuntimeError("the wrapper yielded more than once"))
        return result

    return wrapper


def checked(result: Any, contract: type, record: Record) -> list[Any]:
    """What a collection hook returned, as a list of ``contract`` objects; anything else is recorded."""
    if isinstance(result, (str, bytes, Mapping)) or not isinstance(result, Iterable):
        raise TypeError(f"returned {type(result).__name__}, not a list of {contract.__name__}")
    objects = []
    for obj in result:
        if isinstance(obj, contract):
            objects.append(obj)
        else:
            record(TypeError(f"returned a {type(obj).__name__}, not a {contract.__module__}.{contract.__qualname__}"))
    return objects
