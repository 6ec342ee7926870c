"""Aesara 2.9.4 under numpy 2: what numpy 2 removed from under Aesara, given back to Aesara alone.

Aesara 2.9.4 was released for numpy 1.x. Under numpy 2 its import stops at a removed name
(``np.obj2sctype`` in ``TensorType.__init__``), other functions fail when called, and some changes
are silent (wrong values, no error). `restore` puts numpy 1.26's behaviour back for Aesara's code only, applied once, before
Aesara is imported, and only under numpy 2; under numpy 1.x it does nothing. numpy's own namespace
is never touched: each Aesara module that uses a removed name is compiled from its source with that
use pointed at this module's stand-in (`RESTORED`, `METHODS`, `PYTHON_SCALARS`, `REPLACED_CALLS`). Each item, what numpy 2 changed and what is restored:

=============================================  ===================================================
numpy 1.26, as Aesara uses it                  numpy 2, and what this module gives Aesara
=============================================  ===================================================
``np.obj2sctype`` (``TensorType.__init__``,    removed; `obj2sctype`: the scalar type of a dtype
at import)                                     or type (or of an object's ``dtype``, as of
                                               Aesara's ``ScalarType``), else the default
``np.sctype2char`` (an int-to-float            removed; `sctype2char`: the type's character code
``Elemwise``'s ufunc signature)                (``KeyError`` for an abstract type)
``np.cast[dtype](x)`` (gradients of exp2,      removed; `cast`: ``asarray(x)`` as the scalar type
arccos, arcsin, arctan and the inverse         ``dtype`` names (``KeyError`` if none or abstract)
hyperbolics, ``batchnorm``'s epsilon)
``np.AxisError``, ``np.ComplexWarning``        moved to ``numpy.exceptions``
``np.MAXDIMS`` (the axis=None sentinel of      removed (its C value is now 64); `MAXDIMS` is 1.26's
softmax and cumulative ops)                    32
``numpy.core.*`` imports and attributes        deprecated aliases; the names are read from
(``normalize_axis_tuple``, ...)                ``numpy.lib.array_utils`` (others from ``np._core``)
``numpy.distutils.system_info`` (the default   removed on Python 3.12; `distutils` reports no vendor
of ``blas__ldflags``)                          BLAS, as 1.26 does on a machine without one
``ndarray.itemset`` (Gemm's ``perform`` on     removed; `itemset`: the same assignment
0-d), ``ndarray.tostring``                     removed; `tostring`: ``tobytes``
``copy(generator)`` (a non-inplace             silent: the copy shares the bit generator, so the
``RandomVariable.perform``)                    caller's state advanced; `copy_random_state` copies it
``Generator.__getstate__()``                   silent: returns None; `getstate` gives the bit
(``RandomGeneratorType.values_eq``)            generator's state, as 1.26 did
``x == cast`` of a Python scalar and a 0-d     silent (NEP 50): the Python scalar is cast to the
array (``NumpyAutocaster``, the dtype of a     array's dtype first, so every cast looked exact and
Python float's constant)                       ``0.9`` became a float32 constant (``1e40`` an infinite
                                               one); `numpy1_scalar` compares at the scalar's own
                                               precision, as 1.26 did
``int32_value & 0xFFFFFFFF`` (``MRG_Random``   ``OverflowError``: numpy 2 casts the Python int to
``Stream``'s draw, ``mrg_next_value``)         int32; `numpy1_scalar` gives the int64 1.26 used
``np.int8(300.7)`` of a Python scalar          ``OverflowError`` where 1.26 kept the low bits (44);
(``Cast.impl``, Aesara's reference of a cast)  `numpy1_cast` casts it as 1.26 did
``np.array(-1, dtype=uint8)`` (the rewrite of  ``OverflowError``, so the rewrite failed; `numpy1_array`
``-x`` to ``-1 * x``, of ``x * -y``)           keeps the low bits (255), as 1.26 did
``np.asarray(v, scalar_type)`` (gradients of   ``ValueError``: numpy 2 takes an object's ``dtype`` only
``deg2rad``, ``rad2deg``)                      if it is a numpy dtype; `numpy1_asarray` reads the name
``np.unique(x, return_inverse=True)``          silent: the inverse has ``x``'s shape, not the 1-d of
(``Unique.perform``, axis none)                ``Unique``'s type; `numpy1_unique` flattens it
=============================================  ===================================================

On the same stack, setuptools 80 and later deprecate ``find_executable``, with which Aesara's flags look for the
C++ compiler whenever Aesara is imported (a ``DeprecationWarning``, an error under ``-W error`` or a test suite's
``filterwarnings = error``): Aesara gets ``shutil.which``, which setuptools names in its place.

``numpy.lib.stride_tricks._broadcast_shape``, also removed, needs nothing: Aesara 2.9.4 imports it only where
``np.broadcast_shapes`` is missing, which numpy 2 has.

Aesara's C backend does not compile under numpy 2 (its C code uses the removed C API), so
`restore` also makes Aesara's default C++ compiler none (``cxx=""``): Aesara's reference runs its
Python implementations. A user who sets ``cxx`` in ``AESARA_FLAGS`` keeps it.
"""

import ast
import contextlib
import copy as copy_module
import importlib.abc
import importlib.machinery
import operator
import os
import shutil
import sys
import types

import numpy as np

NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"
"""Whether the installed numpy is 2.x: the only case where `restore` changes anything."""

NUMPY1_MAXDIMS = 32
"""numpy 1.26's ``np.MAXDIMS``, which Aesara uses as the axis of a reduction over all axes."""

STAND_IN = "__aejax_numpy1__"
"""The global name under which a rewritten Aesara module finds this module's stand-ins."""


def obj2sctype(rep, default=None):
    """numpy 1.26's ``np.obj2sctype``: the numpy scalar type of ``rep``, or ``default`` if it names none."""
    if isinstance(rep, type) and issubclass(rep, np.generic):
        return rep
    if isinstance(rep, np.ndarray):
        return rep.dtype.type
    try:
        return _dtype(rep).type
    except Exception:
        return default


def _dtype(rep):
    """numpy 1.26's ``np.dtype(rep)``, which also took an object whose ``dtype`` names one (Aesara's ``ScalarType``)."""
    try:
        return np.dtype(rep)
    except (TypeError, ValueError):
        named = getattr(rep, "dtype", None)
        if named is None or isinstance(named, np.dtype):
            raise
        return _dtype(named)


CONCRETE_TYPES = frozenset(np.dtype(code).type for code in np.typecodes["All"])
"""numpy's own scalar types that are no abstract class: those numpy 1.26's ``sctype2char`` and ``cast`` took."""


def sctype2char(sctype):
    """numpy 1.26's ``np.sctype2char``: a type's character code (``ValueError`` if none, ``KeyError`` if abstract)."""
    scalar_type = obj2sctype(sctype)
    if scalar_type is None:
        raise ValueError("unrecognized type")
    if scalar_type not in CONCRETE_TYPES:
        raise KeyError(scalar_type)
    return np.dtype(scalar_type).char


class _Cast:
    """numpy 1.26's ``np.cast``: ``cast[dtype](x)`` is ``x`` as an array of the scalar type ``dtype`` names."""

    def __getitem__(self, dtype):
        scalar_type = obj2sctype(dtype)
        if scalar_type not in CONCRETE_TYPES:
            raise KeyError(scalar_type)
        return lambda value: np.asarray(value).astype(scalar_type)


def itemset(array, *args):
    """numpy 1.26's ``array.itemset(*args)``: the last argument written at the index the others give.

    The index is none (an array of one element), a flat index, or one per axis, alone or as a tuple,
    checked as ``array.item`` checks it (numpy 1.26's ``itemset`` shared its checks).
    """
    if not args:
        raise ValueError("itemset must have at least one argument")
    if not array.flags.writeable:
        raise ValueError("assignment destination is read-only")
    *index, value = args
    array.item(*index)
    if len(index) == 1 and isinstance(index[0], tuple):
        index = list(index[0])
    if len(index) <= 1:
        index = np.unravel_index(operator.index(index[0]) % array.size if index else 0, array.shape)
    array[tuple(index)] = value


def tostring(array, order="C"):
    """numpy 1.26's ``array.tostring()``: its bytes."""
    return array.tobytes(order)


def getstate(value):
    """numpy 1.26's ``value.__getstate__()``: a numpy ``Generator``'s is its bit generator's state."""
    if isinstance(value, np.random.Generator):
        return value.bit_generator.state
    return value.__getstate__()


def numpy1_cast(scalar_type, value):
    """numpy 1.26's ``scalar_type(value)`` of a Python scalar: an integer type keeps the low bits of ``int(value)``."""
    if type(value) in (int, float) and issubclass(scalar_type, np.integer) and abs(value) < 2**63:
        return np.asarray(int(value)).astype(scalar_type)[()]
    return scalar_type(numpy1_scalar(value))


def numpy1_scalar(value):
    """A Python ``float`` or ``int`` (of 64 bits) as the numpy scalar numpy 1.26 compared and cast it as."""
    if type(value) is float:
        return np.float64(value)
    if type(value) is int and -(2**63) <= value < 2**63:
        return np.int64(value)
    return value


def numpy1_array(value, dtype=None, **options):
    """numpy 1.26's ``np.array(value, dtype)`` (`_numpy1_conversion`)."""
    return np.array(*_numpy1_conversion(value, dtype), **options)


def numpy1_asarray(value, dtype=None, **options):
    """numpy 1.26's ``np.asarray(value, dtype)`` (`_numpy1_conversion`)."""
    return np.asarray(*_numpy1_conversion(value, dtype), **options)


def _numpy1_conversion(value, dtype):
    """``value`` and ``dtype`` as numpy 1.26 converted them: ``dtype`` may be an object whose ``dtype`` names one
    (Aesara's ``ScalarType``), and a Python int of 64 bits outside an integer dtype's range keeps its low bits."""
    if dtype is None:
        return value, None
    dtype = _dtype(dtype)
    if type(value) is int and dtype.kind in "iu" and -(2**63) <= value < 2**63:
        limits = np.iinfo(dtype)
        if not limits.min <= value <= limits.max:
            return np.asarray(value).astype(dtype), dtype
    return value, dtype


def numpy1_unique(array, **options):
    """numpy 1.26's ``np.unique``: without an axis, the inverse indices are flat (numpy 2 shapes them as ``array``)."""
    found = np.unique(array, **options)
    if not options.get("return_inverse") or options.get("axis") is not None:
        return found
    inverse = 1 + bool(options.get("return_index"))
    return (*found[:inverse], found[inverse].reshape(-1), *found[inverse + 1 :])


def copy_random_state(value):
    """``copy.copy`` as numpy 1.26 made it: a numpy random generator's copy has a state of its own."""
    if isinstance(value, np.random.Generator | np.random.RandomState):
        return copy_module.deepcopy(value)
    return copy_module.copy(value)


def _no_vendor_blas(name):
    """numpy 1.26's ``numpy.distutils.system_info.get_info`` on a machine without a vendor BLAS."""
    return {}


def _numpy_exceptions():
    import numpy.exceptions

    return numpy.exceptions


RESTORED = {
    "obj2sctype": obj2sctype,
    "sctype2char": sctype2char,
    "cast": _Cast(),
    "AxisError": _numpy_exceptions().AxisError,
    "ComplexWarning": _numpy_exceptions().ComplexWarning,
    "MAXDIMS": NUMPY1_MAXDIMS,
    "distutils": types.SimpleNamespace(system_info=types.SimpleNamespace(get_info=_no_vendor_blas)),
}
"""The numpy attributes Aesara 2.9.4 reads that numpy 2 removed, as numpy 1.26 had them."""

METHODS = {"itemset": itemset, "tostring": tostring, "__getstate__": getstate}
"""The methods Aesara calls that numpy 2 removed or changed, as functions of the object."""

MOVED_IMPORTS = {
    ("numpy.core.multiarray", "normalize_axis_index"): ("numpy.lib.array_utils", "normalize_axis_index"),
    ("numpy.core.numeric", "normalize_axis_tuple"): ("numpy.lib.array_utils", "normalize_axis_tuple"),
}
"""``from numpy... import name`` statements of Aesara whose name now lives elsewhere."""

PYTHON_SCALARS = {
    "aesara.scalar.basic": {"NumpyAutocaster.__call__": ("operand", "x"), "Cast.impl": ("cast", "input")},
    "aesara.sandbox.rng_mrg": {"mrg_next_value": ("operand", "mask")},
}
"""Per module and function, the Python scalar that numpy 2 compares or combines with a numpy value (an operand:
read as `numpy1_scalar` gives it) or casts (``f(input)``: called as `numpy1_cast`) otherwise than 1.26 did."""

REPLACED_CALLS = {
    "aesara.tensor.random.op": {"copy": copy_random_state},
    "aesara.tensor.rewriting.math": {"np.array": numpy1_array, "np.asarray": numpy1_asarray},
    "aesara.scalar.basic": {"np.asarray": numpy1_asarray},
    "aesara.tensor.extra_ops": {"np.unique": numpy1_unique},
    "aesara.configdefaults": {"find_executable": shutil.which},
}
"""Per module, the functions whose calls are replaced: ``copy(rng)`` of a non-inplace ``RandomVariable.perform``,
the conversions of Python ints and of dtypes named by Aesara's types, ``Unique.perform``'s ``np.unique``, the
compiler lookup of Aesara's flags."""

FLAGS_MODULE = "aesara.configparser"
"""The Aesara module that reads ``AESARA_FLAGS`` when imported: under numpy 2 its ``cxx`` defaults to none."""

STAND_INS = types.SimpleNamespace(
    **RESTORED,
    **{function.__name__: function for function in METHODS.values()},
    **{function.__name__: function for calls in REPLACED_CALLS.values() for function in calls.values()},
    numpy1_scalar=numpy1_scalar,
    numpy1_cast=numpy1_cast,
)
"""What a rewritten Aesara module finds under the global name `STAND_IN`."""

CORE_NAMES = frozenset({"normalize_axis_index", "normalize_axis_tuple"})
"""Names Aesara reads as ``np.core.<module>.<name>``, which numpy 2 keeps public in ``np.lib.array_utils``; the
others it reads there (``_get_ndarray_c_version``, a key of C code) are read from ``np._core``, where numpy 2's
deprecated ``np.core`` sends them, without its warning."""

REMOVED_MODULES = frozenset({"numpy.distutils.system_info", "numpy.core.numeric"})
"""Modules Aesara imports by their full name that numpy 2 removed or deprecated; ``RESTORED`` reads them."""

REWRITTEN_MODULES = frozenset(
    {
        "aesara.compile.debugmode",
        "aesara.configdefaults",
        "aesara.link.c.basic",
        "aesara.link.c.cmodule",
        "aesara.link.jax.dispatch.random",
        "aesara.printing",
        "aesara.sandbox.rng_mrg",
        "aesara.scalar.basic",
        "aesara.tensor.basic",
        "aesara.tensor.blas",
        "aesara.tensor.elemwise",
        "aesara.tensor.extra_ops",
        "aesara.tensor.nnet.abstract_conv",
        "aesara.tensor.nnet.batchnorm",
        "aesara.tensor.nnet.conv",
        "aesara.tensor.random.op",
        "aesara.tensor.random.type",
        "aesara.tensor.rewriting.math",
        "aesara.tensor.slinalg",
        "aesara.tensor.special",
        "aesara.tensor.type",
    }
)
"""The modules of Aesara 2.9.4 that use what numpy 2 removed or changed (``tests/adapters/test_numpy2.py`` reads
them all)."""


class _PointAtStandIns(ast.NodeTransformer):
    """Points a module's uses of what numpy 2 removed or changed at this module's stand-ins (the tables above)."""

    def __init__(self, module):
        self.scalars = PYTHON_SCALARS.get(module, {})
        self.replaced = REPLACED_CALLS.get(module, {})
        self.scope = []

    def visit_ClassDef(self, node):
        return self._in_scope(node)

    def visit_FunctionDef(self, node):
        return self._in_scope(node)

    def _in_scope(self, node):
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        node.left = self._as_numpy1_scalar(node.left)
        node.comparators = [self._as_numpy1_scalar(operand) for operand in node.comparators]
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        node.left, node.right = self._as_numpy1_scalar(node.left), self._as_numpy1_scalar(node.right)
        return node

    def _names_scalar(self, node, use):
        """Whether ``node`` names this function's Python scalar, used so (`PYTHON_SCALARS`)."""
        return isinstance(node, ast.Name) and (use, node.id) == self.scalars.get(".".join(self.scope))

    def _as_numpy1_scalar(self, node):
        """``node``, read through `numpy1_scalar` if it names this function's Python scalar operand."""
        if not self._names_scalar(node, "operand"):
            return node
        return ast.copy_location(ast.Call(ast.Attribute(_stand_in(), "numpy1_scalar", ast.Load()), [node], []), node)

    def visit_Attribute(self, node):
        if _names_numpy(node.value) and node.attr in RESTORED:
            return ast.copy_location(ast.Attribute(_stand_in(), node.attr, node.ctx), node)
        if node.attr in CORE_NAMES and _names_numpy_core(node.value):
            array_utils = ast.Attribute(
                ast.Attribute(node.value.value.value, "lib", ast.Load()), "array_utils", ast.Load()
            )
            return ast.copy_location(ast.Attribute(array_utils, node.attr, node.ctx), node)
        if _names_numpy_core(node):
            core = ast.Attribute(node.value.value, "_core", ast.Load())
            return ast.copy_location(ast.Attribute(core, node.attr, node.ctx), node)
        self.generic_visit(node)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        replacement = self.replaced.get(_call_name(node.func))
        if replacement is not None:
            node.func = ast.copy_location(ast.Attribute(_stand_in(), replacement.__name__, ast.Load()), node.func)
        if len(node.args) == 1 and self._names_scalar(node.args[0], "cast"):
            cast = ast.Attribute(_stand_in(), "numpy1_cast", ast.Load())
            return ast.copy_location(ast.Call(cast, [node.func, node.args[0]], []), node)
        function = node.func
        if isinstance(function, ast.Attribute) and function.attr in METHODS and not _names_numpy(function.value):
            method = ast.Attribute(_stand_in(), METHODS[function.attr].__name__, ast.Load())
            return ast.copy_location(ast.Call(method, [function.value, *node.args], node.keywords), node)
        return node

    def visit_ImportFrom(self, node):
        moved = [(alias, MOVED_IMPORTS.get((node.module, alias.name))) for alias in node.names]
        if not any(target for _, target in moved):
            return node
        statements = [
            ast.ImportFrom(
                target[0] if target else node.module,
                [ast.alias(target[1] if target else alias.name, alias.asname or alias.name)],
                0,
            )
            for alias, target in moved
        ]
        return [ast.copy_location(statement, node) for statement in statements]

    def visit_Import(self, node):
        kept = [alias for alias in node.names if alias.name not in REMOVED_MODULES]
        if len(kept) == len(node.names):
            return node
        return ast.copy_location(ast.Import(kept) if kept else ast.Pass(), node)


def _stand_in():
    return ast.Name(STAND_IN, ast.Load())


def _call_name(function):
    """The name a call's ``function`` is written as: ``copy`` or ``np.unique`` (``numpy.`` read as ``np.``)."""
    if isinstance(function, ast.Name):
        return function.id
    if isinstance(function, ast.Attribute) and _names_numpy(function.value):
        return f"np.{function.attr}"
    return None


def _names_numpy(node):
    return isinstance(node, ast.Name) and node.id in ("np", "numpy")


def _names_numpy_core(node):
    """Whether ``node`` is ``np.core.<module>``."""
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "core"
        and (_names_numpy(node.value.value))
    )


def rewritten_code(source, path, module):
    """The code of Aesara's ``module`` from its ``source``, its uses of what numpy 2 removed pointed at the stand-ins."""
    tree = _PointAtStandIns(module).visit(ast.parse(source, path))
    return compile(ast.fix_missing_locations(tree), path, "exec", dont_inherit=True)


class _RewritingLoader(importlib.machinery.SourceFileLoader):
    """Loads an Aesara module from its source, rewritten; never from, nor into, its bytecode cache."""

    def get_code(self, fullname):
        path = self.get_filename(fullname)
        return rewritten_code(self.get_data(path), path, fullname)

    def exec_module(self, module):
        module.__dict__[STAND_IN] = STAND_INS
        with _compiling_no_c() if module.__name__ == FLAGS_MODULE else contextlib.nullcontext():
            super().exec_module(module)


class _RewritingFinder(importlib.abc.MetaPathFinder):
    """Finds the modules of `REWRITTEN_MODULES`, and `FLAGS_MODULE`, with a `_RewritingLoader`."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in REWRITTEN_MODULES | {FLAGS_MODULE}:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return spec
        spec.loader = _RewritingLoader(fullname, spec.origin)
        return spec


_FINDER = _RewritingFinder()


def restore():
    """Under numpy 2, before Aesara is imported: give Aesara what numpy 2 removed; under numpy 1.x nothing.

    Imports nothing: Aesara's modules are rewritten as they are imported. Raises ``ImportError`` if Aesara
    was imported first: its modules were then compiled without the stand-ins (import ``aejax.adapters`` or
    ``aejax.linker`` before ``aesara``).
    """
    if not NUMPY2 or _FINDER in sys.meta_path:
        return
    if any(name == "aesara" or name.startswith("aesara.") for name in sys.modules):
        raise ImportError(
            "aesara was imported before aejax under numpy 2: import aejax.linker (or aejax.adapters) first, "
            "so that aejax can give Aesara 2.9.4 what numpy 2 removed from under it"
        )
    sys.meta_path.insert(0, _FINDER)


@contextlib.contextmanager
def _compiling_no_c():
    """``AESARA_FLAGS`` with ``cxx=`` first unless it names a ``cxx``, while Aesara reads its flags."""
    flags = os.environ.get("AESARA_FLAGS")
    if flags is not None and any(flag.split("=")[0].strip() == "cxx" for flag in flags.split(",")):
        yield
        return
    os.environ["AESARA_FLAGS"] = ",".join(filter(None, ["cxx=", flags]))
    try:
        yield
    finally:
        if flags is None:
            del os.environ["AESARA_FLAGS"]
        else:
            os.environ["AESARA_FLAGS"] = flags
