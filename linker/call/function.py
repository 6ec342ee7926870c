"""The compiled function of the AEJAX mode: Aesara's `Function` with a direct call.

Aesara's `Function.__call__` serves every linker: it writes each argument into
a storage cell, checks for inputs that share memory (for in-place C code),
runs the VM, reads the outputs back, filters each update into its shared
variable and clears the cells again. Under AEJAX one jit program does all the
work and never writes to its inputs, so for the common call — every explicit
input given positionally, no keywords, no profiling — `AejaxFunction` filters
the arguments with `Type.filter` as Aesara does, runs the program on them and
the shared variables' values, and stores the decoded updates (each through
its variable's filter); once a call has run, arguments exactly like its own
take the `ExactCall`, which checks them and runs the program with nothing
else to do (`aejax.linker.call.direct_call`). Anything else (keywords, defaults, ``output_subset``)
goes through Aesara's own `Function.__call__`, and so does a direct call that
is given an argument its filter refuses: nothing has run, and Aesara's path
gives its usual behaviour and messages.

A call runs its program once: a direct call whose program fails (a failed
check, a host callback that raised) raises what Aesara's path would raise
for it (`DirectCall.failed`), without running it again. The program runs in
its own precision whichever path the call takes
(`aejax.linker.call.precision`).

Aesara finds this class through the mode's ``function_maker`` attribute
(`aesara.compile.function.types.orig_function` looks it up), so nothing of
Aesara's is changed.

`AejaxDeviceFunction` is the function of the device-I/O mode
``"AEJAX_DEVICE"``: its direct call (`aejax.linker.call.device_call`) takes
``jax.Array`` arguments as they are and returns ``jax.Array``s. A call with
a ``jax.Array`` argument that fails raises as it failed, without Aesara's
path, which would copy every ``jax.Array`` to the host and might succeed
where the device call did not (arrays on devices that cannot compute together).
"""

from __future__ import annotations

import copyreg
from typing import Any

from aesara.compile.function.types import Function, FunctionMaker

from aejax.adapters.resident import taking_storage
from aejax.linker.call.device_call import DeviceDirectCall
from aejax.linker.call.direct_call import NOT_EXACT, DirectCall, Returning
from aejax.linker.program.collection import collection_paused
from aejax.linker.rewrites import folding_in_python


class AejaxFunction(Function):
    """A compiled AEJAX function; see the module docstring for what its calls skip.

    ``x64`` is the precision of its program (`aejax.linker.call.precision`),
    which its calls keep whatever JAX's ``jax_enable_x64`` is.
    """

    direct_call = DirectCall
    """The class of its direct call."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._direct = self.direct_call.of(self)
        self.x64: bool | None = getattr(getattr(self.vm, "jit_fn", None), "x64", None)

    @property
    def cache_size(self) -> int:
        """How many compiled programs this function keeps (default `StaticInputProgram.cache_size`, 32).

        One program per value of its shape-deciding inputs and per shape of
        the others, least recently used out; set it to keep more or fewer.
        """
        return self.vm.jit_fn.cache_size

    @cache_size.setter
    def cache_size(self, size: int) -> None:
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"cache_size must be a positive integer, not {size!r}")
        self.vm.jit_fn.cache_size = size

    def __reduce__(self) -> Any:
        return copyreg.dispatch_table[Function](self)  # pickled as Aesara pickles its functions

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        direct = self._direct
        if direct is None or kwargs or self.profile:
            return super().__call__(*args, **kwargs)
        try:
            returned = direct.run_exact(args)
        except Exception:
            direct.failed(args)
        if returned is not NOT_EXACT:
            return returned
        if len(args) != direct.arity:
            return super().__call__(*args)
        try:
            values = direct.arguments(args, self.trust_input)
        except Exception as error:
            if direct.raises_refusal(error, args):
                raise
            return super().__call__(*args)  # nothing ran: Aesara's path refuses the argument with its own messages
        return direct(values, Returning.of(self))


class AejaxDeviceFunction(AejaxFunction):
    """A compiled function of mode ``"AEJAX_DEVICE"``: ``jax.Array`` arguments as they are, ``jax.Array`` outputs.

    Keywords, defaults and ``output_subset`` take Aesara's path, which
    filters every argument into numpy (a host copy of a ``jax.Array``); the
    outputs are ``jax.Array``s there too.
    """

    direct_call = DeviceDirectCall


class AejaxFunctionMaker(FunctionMaker):
    """Aesara's `FunctionMaker`, building `AejaxFunction`s.

    It rewrites the graph folding constants with Python code
    (`aejax.linker.rewrites.folding_in_python`: no C compilation) and with
    Python's garbage collection paused (`collection_paused`).

    Its functions take the storage of resident shared variables
    (`aejax.adapters.resident`) without synchronising it: they read the
    backend values it holds themselves.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("function_builder", AejaxFunction)
        with folding_in_python(), collection_paused():
            super().__init__(*args, **kwargs)

    def create(self, *args: Any, **kwargs: Any) -> Any:
        with taking_storage(), collection_paused():
            return super().create(*args, **kwargs)


class AejaxDeviceFunctionMaker(AejaxFunctionMaker):
    """`AejaxFunctionMaker` building `AejaxDeviceFunction`s."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("function_builder", AejaxDeviceFunction)
        super().__init__(*args, **kwargs)
