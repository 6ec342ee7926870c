"""Shared tensors whose value stays a backend array between calls.

Aesara keeps a shared variable's value in a one-element list (its
container's storage) that every function using the variable reads. A value
a JAX function returned would have to be copied into numpy for Aesara's other
backends, whose C code reads that list directly; `ResidentSharedVariable`
keeps it as it is where no such reader can see it:

- Its storage is a `ResidentStorage`: the list may hold the backend value
  (``hold``), and any read of it through Python (``storage[0]``, iterating,
  copying, pickling) works out the host value once, through the Type's codec
  (``decode``), and keeps that instead. Python code, including Aesara's
  Python implementations of Ops, only ever sees numpy arrays.
- Its container is a `ResidentContainer`: ``get_value()`` decodes a copy and
  leaves the backend value where it is; ``set_value`` takes a ``jax.Array``
  as it is (checked by the codec) and anything else through `Type.filter`.
- Code that takes the storage list itself, as Aesara does when it compiles a
  function of another mode, might read it from C, and Aesara's C VM wants a
  plain list. Such code gets one (`ResidentStorage.host_storage`), and from
  then on the storage is *synchronised*: the value lives in that list, as a
  host value (every value held later is decoded at once), so those readers
  find numpy arrays as they always do. Only code run inside `taking_storage`
  (aejax's own function maker) takes the `ResidentStorage` itself, and
  reads it there without decoding it.

`aesara.shared(jax_array)` makes one (`resident_shared`, registered on
Aesara's `shared_constructor` by ``import aejax.linker``); numpy values keep
making Aesara's own shared variables.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import jax
from aesara.link.basic import Container
from aesara.tensor.sharedvar import TensorSharedVariable
from aesara.tensor.type import TensorType

from aejax.adapters.registry import codec_for

BACKEND = "jax"
_LOCK = threading.RLock()
_UPDATE_HELD = threading.Condition(_LOCK)
"""Notified by each `ResidentStorage.hold`: a reader waits on it while the value it found is being donated."""
UPDATE_WAIT = 600.0
"""Seconds a reader waits for a call to store the update of a value that call was given to reuse."""
_TAKING = threading.local()


@contextmanager
def taking_storage() -> Iterator[None]:
    """Take resident storage lists inside this block without synchronising them (for a backend that reads them itself)."""
    depth = getattr(_TAKING, "depth", 0)
    _TAKING.depth = depth + 1
    try:
        yield
    finally:
        _TAKING.depth = depth


def _taking() -> bool:
    return getattr(_TAKING, "depth", 0) > 0


class ResidentStorage(list):
    """A shared variable's one-element storage that may hold a backend value; see the module docstring.

    ``storage[0]`` gives the host value (decoding a held backend value once);
    `held` gives what it holds, backend value or not, for a backend that
    reads its own values; `hold` stores a backend value. Once `host_storage`
    has handed out a plain list for other code, every access goes to that
    list, so all readers see one value.
    """

    def __init__(self, value: Any, type_: TensorType) -> None:
        super().__init__([value])
        self.type = type_
        self.host_list: list[Any] | None = None
        """The plain list other code reads, once it took the storage; then it holds the value."""
        self._backend_value: Any = None  # the value `hold` stored, while the list still holds it

    @property
    def synchronised(self) -> bool:
        """Whether other code took the storage: it holds host values only, in `host_list`."""
        return self.host_list is not None

    def __getitem__(self, index: Any) -> Any:
        host = self.host_list
        if host is not None:
            return host[index]
        if not _taking():  # aejax, building a function, reads what it holds as it is
            self._settle()
        return list.__getitem__(self, index)

    def __setitem__(self, index: Any, value: Any) -> None:
        with _LOCK:
            host = self.host_list
            if host is not None:
                host[index] = value
            else:
                list.__setitem__(self, index, value)
                self._backend_value = None  # a host value replaces it: its device buffer is not kept

    def __iter__(self) -> Iterator[Any]:
        return iter([self[0]])

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (ResidentStorage, (self.host_copy(), self.type))  # the value held stays where it is

    def __deepcopy__(self, memo: dict[int, Any]) -> ResidentStorage:
        return ResidentStorage(self.host_copy(), self.type)

    def __repr__(self) -> str:
        return f"ResidentStorage([{self.held()!r}])"

    def held(self) -> Any:
        """What the storage holds: the backend value it was given, or a host value."""
        host = self.host_list
        return list.__getitem__(self, 0) if host is None else host[0]

    def holds_backend_value(self) -> bool:
        """Whether the storage holds a backend value that has not been decoded."""
        value = list.__getitem__(self, 0)
        return self.host_list is None and value is not None and value is self._backend_value

    def hold(self, value: Any) -> None:
        """Store the backend value ``value`` (decoded at once if the storage is synchronised)."""
        with _LOCK:
            host = self.host_list
            if host is not None:
                host[0] = self.decode(value)
            else:
                list.__setitem__(self, 0, value)
                self._backend_value = value
            _UPDATE_HELD.notify_all()

    def host_copy(self) -> Any:
        """A host value of the current value that shares no memory with the storage's, leaving the storage as it is."""
        with _LOCK:
            decoded = self._decoded_backend_value()
            if decoded is not None:
                return decoded
            value = self.held()
        return copy.deepcopy(value)

    def host_storage(self) -> list[Any]:
        """The plain list, holding host values only, that code other than aejax reads (made on the first call)."""
        with _LOCK:
            if self.host_list is None:
                self._settle()
                self.host_list = [list.__getitem__(self, 0)]
                list.__setitem__(self, 0, None)
            return self.host_list

    def decode(self, value: Any) -> Any:
        """The host value of the backend value ``value``, through the Type's codec."""
        return codec_for(BACKEND, self.type).decode(value, self.type)

    def _wait_for_update(self) -> None:
        """Wait, if the value held was donated to a call that is running (another thread's), until it holds the update.

        JAX deletes a donated array when the call starts; the call holds the
        new value as soon as its program returns.
        """
        value = list.__getitem__(self, 0)
        if not (self.holds_backend_value() and value.is_deleted()):
            return
        if not _UPDATE_HELD.wait_for(lambda: list.__getitem__(self, 0) is not value, timeout=UPDATE_WAIT):
            raise RuntimeError(
                f"a shared variable of type {self.type} still holds the value a call was given to reuse "
                f"after {UPDATE_WAIT} s: the call failed after its program started; set a new value with set_value"
            )

    def _settle(self) -> None:
        if not self.holds_backend_value():
            return
        with _LOCK:
            decoded = self._decoded_backend_value()
            if decoded is not None:
                list.__setitem__(self, 0, decoded)
            self._backend_value = None

    def _decoded_backend_value(self) -> Any:
        """The host value of the backend value held (``None`` if it holds a host value), once no call reuses it.

        A call in another thread may donate the buffer between the check that
        it is not deleted and the copy (calls do not take the lock, to stay
        cheap): then the copy fails, and the reader waits for that call's update.
        """
        while True:
            self._wait_for_update()
            if not self.holds_backend_value():
                return None
            value = list.__getitem__(self, 0)
            try:
                return self.decode(value)
            except RuntimeError:
                if not value.is_deleted():
                    raise


class ResidentContainer(Container):
    """The container of a `ResidentSharedVariable`: takes ``jax.Array`` values as they are, and synchronises its storage when code outside `taking_storage` takes it."""

    @property  # type: ignore[override]
    def storage(self) -> list[Any]:
        storage = self.__dict__["_storage"]
        return storage if _taking() else storage.host_storage()

    @storage.setter
    def storage(self, storage: ResidentStorage) -> None:
        self.__dict__["_storage"] = storage

    @property
    def resident_storage(self) -> ResidentStorage:
        """The storage list, taken without synchronising it."""
        return self.__dict__["_storage"]

    def _get(self) -> Any:
        return self.resident_storage[0]

    def _set(self, value: Any) -> None:
        if self.readonly:
            raise ValueError(f"shared variable {self.name!r} is read-only")
        storage = self.resident_storage
        if isinstance(value, jax.Array):
            codec_for(BACKEND, self.type).validate(value, self.type)
            storage.hold(value)
            return
        if value is not None:
            value = self.type.filter(value, strict=self.strict, allow_downcast=self.allow_downcast)
        storage[0] = value

    data = property(_get, _set)
    value = property(_get, _set)

    def __str__(self) -> str:
        return f"<{self.resident_storage.held()}>"

    def __repr__(self) -> str:
        return f"<{self.resident_storage.held()!r}>"

    def __deepcopy__(self, memo: dict[int, Any]) -> ResidentContainer:
        return type(self)(
            self.type,
            copy.deepcopy(self.resident_storage, memo),  # one copy, shared with a copied function's containers
            readonly=self.readonly,
            strict=self.strict,
            allow_downcast=self.allow_downcast,
            name=self.name,
        )


class ResidentSharedVariable(TensorSharedVariable):
    """A shared tensor whose value may stay a ``jax.Array`` between calls; see the module docstring."""

    def get_value(self, borrow: bool = False, return_internal_type: bool = False) -> Any:
        """The value: a numpy array (a copy unless ``borrow``), or with ``return_internal_type`` the ``jax.Array`` held.

        Without ``borrow`` the value held is decoded into a new array and
        stays held; with it the storage settles to the array returned, which
        the caller may change in place. The ``jax.Array`` itself (``borrow``
        and ``return_internal_type``) is the buffer the next call that updates
        the variable may reuse (donate): JAX deletes it then.
        """
        storage = self.container.resident_storage
        if return_internal_type and storage.holds_backend_value():
            return storage.held() if borrow else copy.deepcopy(storage.held())
        if borrow:
            return storage[0]
        return storage.host_copy()


def resident_shared(
    value: jax.Array,
    name: str | None = None,
    strict: bool = False,
    allow_downcast: bool | None = None,
    borrow: bool = False,
    shape: tuple[int | None, ...] | None = None,
) -> ResidentSharedVariable:
    """`aesara.shared` of a ``jax.Array``: a `ResidentSharedVariable` holding a copy of it on its device.

    With ``borrow`` it holds ``value`` itself, whose buffer the first call
    that updates the variable may then reuse (donate): JAX deletes ``value``.
    ``shape`` fixes dimensions of the Type, as for numpy values.
    """
    type_ = TensorType(str(value.dtype), shape=(None,) * value.ndim if shape is None else shape)
    codec_for(BACKEND, type_).validate(value, type_)
    storage = ResidentStorage(None, type_)
    container = ResidentContainer(type_, storage, strict=strict, allow_downcast=allow_downcast, name=name)
    storage.hold(value if borrow else copy.deepcopy(value))
    return ResidentSharedVariable(type=type_, value=None, strict=None, container=container, name=name)


def register_resident_shared() -> None:
    """Make ``aesara.shared(jax_array)`` build a `ResidentSharedVariable` (once; numpy values are unchanged)."""
    from aesara.compile.sharedvalue import shared_constructor

    if shared_constructor.dispatch(jax.Array) is not resident_shared:
        shared_constructor.register(jax.Array)(resident_shared)
