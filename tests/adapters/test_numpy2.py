"""Aesara 2.9.4 under numpy 2 (`aejax.adapters.numpy2`) behaves as under numpy 1.26, item by item.

Each row of the module's table is tested three ways. Under numpy 1.x its stand-in is compared with
numpy's own function or method over many inputs, good and bad (errors must be of the same type).
On either numpy the stand-in gives the values recorded here from numpy 1.26 (under numpy 1.x the
record is checked against numpy too). And the Aesara code that uses the item runs, on either stack,
compared with numpy computed directly: gradients, an int-to-float Elemwise, reductions over all
axes, draws and their broadcasting, Gemm on 0-d, hashes, axis errors, and the two silent changes
(a draw that does not update must not advance the shared generator; generators compare by state).
Under numpy 2 the rewriting itself is checked against Aesara's source; under numpy 1.x nothing may
be installed.
"""

import ast
import copy
import functools
import hashlib
import importlib
import inspect
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import NamedTuple

import aesara
import aesara.tensor as at
import numpy as np
import numpy.exceptions
import pytest
import scipy.linalg
import scipy.special
from aesara.compile.debugmode import DebugMode
from aesara.tensor.blas import gemm_inplace, gemm_no_inplace
from aesara.tensor.extra_ops import CumOp, diff
from aesara.tensor.random.type import RandomGeneratorType
from aesara.tensor.slinalg import expm
from aesara.tensor.special import LogSoftmax, Softmax, SoftmaxGrad, log_softmax, softmax
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from aejax.adapters import numpy2

NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"
numpy1_only = pytest.mark.skipif(NUMPY2, reason="compares with numpy 1.x's own function, which numpy 2 removed")
numpy2_only = pytest.mark.skipif(not NUMPY2, reason="Aesara is rewritten only under numpy 2")

AESARA = Path(aesara.__file__).parent
"""The installed Aesara package, whose source the rewriting is checked against."""


class Raises(NamedTuple):
    """The outcome of a call that raised: the exception's type."""

    error: type


def _outcome(function, *args):
    """What ``function(*args)`` gives: its value, or `Raises` of the type of what it raised."""
    try:
        return function(*args)
    except Exception as error:
        return Raises(type(error))


def _same(a, b):
    """Whether two outcomes are the same: equal values of one type (arrays: dtype, shape, elements; dicts: per key)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and _same_elements(a, b)
    return a == b


def _same_elements(a, b):
    """Whether two arrays of one dtype hold the same elements (floats: NaN too; others: bit for bit)."""
    if a.dtype.hasobject:
        return all(x is y or x == y or (x != x and y != y) for x, y in zip(a.ravel(), b.ravel()))
    if a.dtype.kind in "fc":
        return np.array_equal(a, b, equal_nan=True)  # a long double's padding bytes are not its value
    return a.tobytes() == b.tobytes()


def _state(rng):
    """The state of a numpy ``Generator`` or ``RandomState``, as a dict."""
    return rng.bit_generator.state if isinstance(rng, np.random.Generator) else rng.get_state(legacy=False)


class _Typed:
    """An object whose ``dtype`` attribute names a dtype, as Aesara's ``ScalarType`` and ``TensorType`` do."""

    def __init__(self, dtype):
        self.dtype = dtype

    def __repr__(self):
        return f"_Typed({self.dtype!r})"


class _OwnDtype:
    """An object whose ``dtype`` is itself: ``np.dtype`` of it recurses until it gives up."""

    @property
    def dtype(self):
        return self


ABSTRACT_TYPES = [
    np.generic,
    np.number,
    np.integer,
    np.signedinteger,
    np.unsignedinteger,
    np.inexact,
    np.floating,
    np.complexfloating,
    np.flexible,
    np.character,
]
SCALAR_TYPES = sorted({*np.sctypeDict.values(), *ABSTRACT_TYPES}, key=lambda scalar_type: scalar_type.__name__)
PYTHON_TYPES = [int, float, complex, bool, str, bytes, object, type, list, np.ndarray, np.dtype]
TYPE_NAMES = sorted(name for name in np.sctypeDict if isinstance(name, str)) + [
    "floatX",
    "Float64",
    "",
    ">f4",
    "S5",
    "U3",
    "M8[s]",
    "m8[D]",
    "i4,i4",
    "V8",
]
NOT_TYPES = st.one_of(
    st.none(),
    st.integers(),
    st.floats(),
    st.lists(st.integers(), max_size=2),
    st.tuples(st.just("i4"), st.integers(-(2**70), 2**70)),
    st.integers(-(2**70), 2**70).map(lambda offset: {"names": ["a"], "formats": ["i4"], "offsets": [offset]}),
    st.builds(_OwnDtype),
)
"""What names no type, or makes ``np.dtype`` raise something other than ``TypeError``."""
TYPE_LIKES = st.one_of(
    st.sampled_from(SCALAR_TYPES),
    st.sampled_from(PYTHON_TYPES),
    st.sampled_from(TYPE_NAMES),
    st.text(max_size=4),
    hnp.scalar_dtypes(),
    hnp.nested_dtypes(max_leaves=3),
    hnp.arrays(hnp.scalar_dtypes(), hnp.array_shapes(min_dims=0, max_dims=2, max_side=2)),
    st.builds(_Typed, st.one_of(st.sampled_from(TYPE_NAMES), st.sampled_from(PYTHON_TYPES), st.text(max_size=3))),
    NOT_TYPES,
)
"""What Aesara and its users give where numpy expects a type: types, dtypes, names, arrays, and what is none."""
BIT_GENERATORS = [np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937, np.random.Philox, np.random.SFC64]


def _random(legacy, bit_generator, seed, draws):
    """A ``RandomState`` (``legacy``) or ``Generator`` of ``bit_generator`` seeded with ``seed``, ``draws`` drawn."""
    rng = (np.random.RandomState if legacy else np.random.Generator)(bit_generator(seed))
    rng.random(draws)
    return rng


RANDOM = st.builds(
    _random, st.booleans(), st.sampled_from(BIT_GENERATORS), st.integers(0, 2**64 - 1), st.integers(0, 5)
)

# ---- obj2sctype ----

OBJ2SCTYPE = [
    ("float64", np.float64),
    ("float32", np.float32),
    ("int8", np.int8),
    ("uint64", np.uint64),
    ("complex64", np.complex64),
    ("bool", np.bool_),
    ("f2", np.float16),
    (">i4", np.int32),
    ("S5", np.bytes_),
    ("U3", np.str_),
    ("O", np.object_),
    ("M8[s]", np.datetime64),
    ("m8", np.timedelta64),
    ("i4,i4", np.void),
    (int, np.int64),
    (float, np.float64),
    (complex, np.complex128),
    (bool, np.bool_),
    (str, np.str_),
    (object, np.object_),
    (np.float32, np.float32),
    (np.floating, np.floating),
    (np.generic, np.generic),
    (np.zeros(2, "int16"), np.int16),
    (np.dtype("u1"), np.uint8),
    (aesara.scalar.float32, np.float32),
    (at.lvector().type, np.int64),
    (_Typed(_Typed("u2")), np.uint16),
    (None, np.float64),
    ("floatX", None),
    ("Float64", None),
    ("", None),
    (3, None),
    (2.5, None),
    ([1, 2], None),
    ({"names": ["a"], "formats": ["i4"], "offsets": [2**70]}, None),
    (_OwnDtype(), None),
]
"""``np.obj2sctype(rep)`` under numpy 1.26, recorded (on Linux, where ``int`` is ``int64``)."""


@numpy1_only
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@settings(max_examples=400, deadline=None)
@given(rep=TYPE_LIKES, default=st.sampled_from([None, float, "no type"]))
def test_obj2sctype_is_numpy_1_26s(rep, default):
    """`obj2sctype` gives what ``np.obj2sctype`` gives, for any type, dtype, name or array, and for what is none."""
    assert _same(_outcome(numpy2.obj2sctype, rep, default), _outcome(np.obj2sctype, rep, default))


@pytest.mark.parametrize(("rep", "scalar_type"), OBJ2SCTYPE)
def test_obj2sctype_gives_numpy_1_26s_recorded_types(rep, scalar_type):
    """`obj2sctype` gives the scalar type recorded from numpy 1.26 (under numpy 1.x, numpy's still)."""
    assert numpy2.obj2sctype(rep) is scalar_type
    assert NUMPY2 or np.obj2sctype(rep) is scalar_type


def test_obj2sctype_gives_the_default_for_what_names_no_type():
    """`obj2sctype` gives its ``default`` where the argument names no type, as numpy 1.26's did."""
    assert numpy2.obj2sctype("floatX", default=float) is float
    assert numpy2.obj2sctype("float64", default=float) is np.float64


# ---- sctype2char ----

SCTYPE2CHAR = [
    ("float64", "d"),
    ("float32", "f"),
    ("float16", "e"),
    ("int8", "b"),
    ("uint8", "B"),
    ("int64", "l"),
    ("complex128", "D"),
    ("bool", "?"),
    (int, "l"),
    (float, "d"),
    (str, "U"),
    (bytes, "S"),
    (object, "O"),
    (np.longlong, "q"),
    (np.longdouble, "g"),
    (np.zeros(2, "f4"), "f"),
    ("M8[s]", "M"),
    ("i4,i4", "V"),
    ("floatX", Raises(ValueError)),
    ("", Raises(ValueError)),
    (3, Raises(ValueError)),
    (np.floating, Raises(KeyError)),
    (np.integer, Raises(KeyError)),
    (np.generic, Raises(KeyError)),
]
"""``np.sctype2char(sctype)`` under numpy 1.26, recorded: its character code, or the type of its error."""


@numpy1_only
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@settings(max_examples=400, deadline=None)
@given(sctype=TYPE_LIKES)
def test_sctype2char_is_numpy_1_26s(sctype):
    """`sctype2char` gives ``np.sctype2char``'s character code, or raises its type of error."""
    assert _same(_outcome(numpy2.sctype2char, sctype), _outcome(np.sctype2char, sctype))


@pytest.mark.parametrize(("sctype", "char"), SCTYPE2CHAR)
def test_sctype2char_gives_numpy_1_26s_recorded_codes(sctype, char):
    """`sctype2char` gives the code or type of error recorded from numpy 1.26 (under numpy 1.x, numpy's still)."""
    assert _same(_outcome(numpy2.sctype2char, sctype), char)
    assert NUMPY2 or _same(_outcome(np.sctype2char, sctype), char)


# ---- cast ----

CAST = [
    ("float64", 2, np.array(2.0)),
    ("float32", [1, 2], np.array([1.0, 2.0], np.float32)),
    (np.float32, 0.1, np.array(0.1, np.float32)),
    (aesara.scalar.float32, 1, np.array(1.0, np.float32)),
    ("int8", 2.7, np.array(2, np.int8)),
    (int, [1.5], np.array([1])),
    (">f4", 1.5, np.array(1.5, np.float32)),
    ("S2", "hello", np.array(b"hello", "S5")),
    ("U1", 300, np.array("300", "U21")),
    ("M8[s]", None, np.array("NaT", "M8")),
    ("float64", "x", Raises(ValueError)),
    ("floatX", 1, Raises(KeyError)),
    (np.floating, 1, Raises(KeyError)),
]
"""``np.cast[dtype](value)`` under numpy 1.26, recorded: the array (of the scalar type ``dtype`` names) or error."""


def _cast(cast, dtype, value):
    return cast[dtype](value)


@numpy1_only
@pytest.mark.filterwarnings("ignore")
@settings(max_examples=400, deadline=None)
@given(
    dtype=st.one_of(
        st.sampled_from(SCALAR_TYPES), st.sampled_from(PYTHON_TYPES), st.sampled_from(TYPE_NAMES), st.text(max_size=3)
    ),
    value=st.one_of(
        st.integers(-300, 300),
        st.floats(),
        st.booleans(),
        st.complex_numbers(max_magnitude=1e3),
        st.text(max_size=3),
        st.lists(st.integers(-5, 5), max_size=3),
        st.none(),
        hnp.arrays(hnp.scalar_dtypes(), hnp.array_shapes(min_dims=0, max_dims=2, max_side=2)),
    ),
)
def test_cast_is_numpy_1_26s(dtype, value):
    """``RESTORED["cast"][dtype](value)`` gives ``np.cast[dtype](value)``'s array, or raises its type of error."""
    assert _same(_outcome(_cast, numpy2.RESTORED["cast"], dtype, value), _outcome(_cast, np.cast, dtype, value))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize(("dtype", "value", "expected"), CAST)
def test_cast_gives_numpy_1_26s_recorded_arrays(dtype, value, expected):
    """``RESTORED["cast"]`` gives the array or error recorded from numpy 1.26 (under numpy 1.x, numpy's still)."""
    assert _same(_outcome(_cast, numpy2.RESTORED["cast"], dtype, value), expected)
    assert NUMPY2 or _same(_outcome(_cast, np.cast, dtype, value), expected)


# ---- itemset ----

ITEMSET = [
    ((), (5.0,), None, 5.0),
    ((1, 1), (5.0,), None, [[5.0]]),
    ((3,), (5.0,), Raises(ValueError), [0.0, 1.0, 2.0]),
    ((0,), (5.0,), Raises(ValueError), []),
    ((3,), (), Raises(ValueError), [0.0, 1.0, 2.0]),
    ((2, 3), (4, 9.0), None, [[0.0, 1.0, 2.0], [3.0, 9.0, 5.0]]),
    ((2, 3), (-1, 9.0), None, [[0.0, 1.0, 2.0], [3.0, 4.0, 9.0]]),
    ((2, 3), (6, 9.0), Raises(IndexError), [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]),
    ((2, 3), ((1, 2), 9.0), None, [[0.0, 1.0, 2.0], [3.0, 4.0, 9.0]]),
    ((2, 3), ([1, 2], 9.0), Raises(TypeError), [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]),
    ((2, 3), (1, 2, 9.0), None, [[0.0, 1.0, 2.0], [3.0, 4.0, 9.0]]),
    ((2, 3), (-1, -3, 9.0), None, [[0.0, 1.0, 2.0], [9.0, 4.0, 5.0]]),
    ((2, 3), (1, 3, 9.0), Raises(IndexError), [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]),
    ((2, 3), (1, 2, 3, 9.0), Raises(ValueError), [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]),
    ((2, 3), ((1,), 9.0), None, [[0.0, 9.0, 2.0], [3.0, 4.0, 5.0]]),
    ((2, 3), ((), 9.0), Raises(ValueError), [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]),
    ((3,), (1.0, 9.0), Raises(TypeError), [0.0, 1.0, 2.0]),
    ((3,), (True, 9.0), Raises(TypeError), [0.0, 1.0, 2.0]),
    ((3,), (np.array([1]), 9.0), Raises(TypeError), [0.0, 1.0, 2.0]),
    ((3,), (np.array(1), 9.0), None, [0.0, 9.0, 2.0]),
    ((3,), (0, [1.0, 2.0]), Raises(ValueError), [0.0, 1.0, 2.0]),
    ((3,), (0, 1 + 2j), Raises(TypeError), [0.0, 1.0, 2.0]),
    ((3,), (0, "x"), Raises(ValueError), [0.0, 1.0, 2.0]),
]
"""``np.arange(size, dtype=float).reshape(shape).itemset(*args)`` under numpy 1.26, recorded: outcome, array after."""


def _filled(shape, dtype, writeable):
    array = np.arange(int(np.prod(shape))).astype(dtype).reshape(shape)
    array.flags.writeable = writeable
    return array


def _itemset(array, *args):
    return array.itemset(*args)


INDICES = st.one_of(
    st.integers(-8, 8),
    st.lists(st.integers(-3, 3), max_size=3).map(tuple),
    st.lists(st.integers(0, 2), max_size=2),
    st.floats(-3, 3),
    st.booleans(),
    st.none(),
    st.integers(-3, 3).map(np.intp),
    st.integers(-3, 3).map(np.array),
    st.just(np.array([1])),
    st.just(slice(None)),
    st.text(max_size=1),
)
"""Indices ``itemset`` takes (a flat index, a tuple, one per axis) and refuses."""
VALUES = st.one_of(
    st.integers(-100, 100),
    st.floats(-100, 100),
    st.booleans(),
    st.complex_numbers(max_magnitude=100),
    st.text(max_size=2),
    st.lists(st.integers(-3, 3), max_size=2),
    st.floats(-100, 100).map(np.float64),
    st.none(),
)
"""Values to write: within every dtype's range (numpy 2 also changed how an integer out of range converts)."""


@numpy1_only
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@settings(max_examples=500, deadline=None)
@given(
    shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
    dtype=st.sampled_from(["f8", "i4", "i1", "c16", "?", "O", "U2"]),
    writeable=st.booleans(),
    args=st.tuples(st.lists(INDICES, max_size=3), st.lists(VALUES, max_size=1)).map(
        lambda parts: (*parts[0], *parts[1])
    ),
)
def test_itemset_is_numpy_1_26s(shape, dtype, writeable, args):
    """`itemset` writes what ``ndarray.itemset`` writes, where it writes it, and raises its type of error."""
    mine, numpys = _filled(shape, dtype, writeable), _filled(shape, dtype, writeable)
    assert _same(_outcome(numpy2.itemset, mine, *args), _outcome(_itemset, numpys, *args))
    assert _same(mine, numpys)


@pytest.mark.parametrize(("shape", "args", "outcome", "after"), ITEMSET)
def test_itemset_gives_numpy_1_26s_recorded_writes(shape, args, outcome, after):
    """`itemset` writes and raises as recorded from numpy 1.26 (under numpy 1.x, as numpy's still does)."""
    array = _filled(shape, float, True)
    assert _same(_outcome(numpy2.itemset, array, *args), outcome)
    assert array.tolist() == after
    if not NUMPY2:
        array = _filled(shape, float, True)
        assert _same(_outcome(_itemset, array, *args), outcome)
        assert array.tolist() == after


# ---- tostring ----

TOSTRING = [
    ("C", False, b"\x00\x00\x01\x00\x02\x00\x03\x00\x04\x00\x05\x00"),
    ("C", True, b"\x00\x00\x03\x00\x01\x00\x04\x00\x02\x00\x05\x00"),
    ("F", False, b"\x00\x00\x03\x00\x01\x00\x04\x00\x02\x00\x05\x00"),
    ("F", True, b"\x00\x00\x01\x00\x02\x00\x03\x00\x04\x00\x05\x00"),
    ("A", True, b"\x00\x00\x01\x00\x02\x00\x03\x00\x04\x00\x05\x00"),
    ("K", True, b"\x00\x00\x03\x00\x01\x00\x04\x00\x02\x00\x05\x00"),
    ("X", False, Raises(ValueError)),
    (1, False, Raises(TypeError)),
]
"""``a.tostring(order)`` (``a.T`` where transposed) of ``a = np.arange(6, dtype="<i2").reshape(2, 3)``, numpy 1.26."""


def _view(array, view):
    """``array`` as it is, transposed, or every other element of its first axis."""
    return {"as is": array, "transposed": array.T, "strided": array[::2]}[view]


@numpy1_only
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@settings(max_examples=300, deadline=None)
@given(
    array=hnp.arrays(hnp.scalar_dtypes(), hnp.array_shapes(min_dims=0, max_dims=3, max_side=3)),
    view=st.sampled_from(["as is", "transposed", "strided"]),
    order=st.sampled_from(["C", "F", "A", "K", None, "X", 1]),
)
def test_tostring_is_numpy_1_26s(array, view, order):
    """`tostring` gives ``ndarray.tostring``'s bytes, in each order, of any array or view, or its type of error."""
    array = _view(array, view) if array.ndim else array
    assert _same(_outcome(numpy2.tostring, array, order), _outcome(array.tostring, order))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize(("order", "transposed", "expected"), TOSTRING)
def test_tostring_gives_numpy_1_26s_recorded_bytes(order, transposed, expected):
    """`tostring` gives the bytes or error recorded from numpy 1.26 (under numpy 1.x, numpy's still)."""
    array = np.arange(6, dtype="<i2").reshape(2, 3)
    array = array.T if transposed else array
    assert _same(_outcome(numpy2.tostring, array, order), expected)
    assert NUMPY2 or _same(_outcome(array.tostring, order), expected)


# ---- getstate ----

PCG64_1234 = {
    "bit_generator": "PCG64",
    "state": {"state": 29299324949094424543410418505067287561, "inc": 107381791681050441119675421997145146149},
    "has_uint32": 0,
    "uinteger": 0,
}
"""``np.random.Generator(np.random.PCG64(1234)).__getstate__()`` under numpy 1.26."""


@numpy1_only
@settings(max_examples=200, deadline=None)
@given(rng=RANDOM)
def test_getstate_is_numpy_1_26s(rng):
    """`getstate` of a ``Generator`` or ``RandomState`` of any bit generator is its ``__getstate__()`` in numpy 1.26."""
    assert _same(numpy2.getstate(rng), rng.__getstate__())


@pytest.mark.parametrize("value", [object(), [1], {"a": 1}, np.random.PCG64(1)], ids=lambda value: type(value).__name__)
def test_getstate_of_anything_else_is_its_own(value):
    """`getstate` of what is no numpy generator is that object's own ``__getstate__()``."""
    assert _same(numpy2.getstate(value), value.__getstate__())


def test_getstate_gives_numpy_1_26s_recorded_states():
    """`getstate` of a seeded ``Generator`` is the state recorded from numpy 1.26, a ``RandomState``'s its own."""
    generator, legacy = np.random.Generator(np.random.PCG64(1234)), np.random.RandomState(1234)
    assert _same(numpy2.getstate(generator), PCG64_1234)
    assert NUMPY2 or _same(generator.__getstate__(), PCG64_1234)
    state = numpy2.getstate(legacy)
    assert (state["bit_generator"], state["state"]["pos"], state["state"]["key"][:3].tolist()) == (
        "MT19937",
        624,
        [1234, 3159640283, 4062961311],
    )


# ---- copy_random_state ----

DRAWS_AFTER_TWO = {
    np.random.default_rng: [-0.2741378553622176, -0.8905918387572742, -0.45467078517172255],
    np.random.RandomState: [0.0328201636785844, 0.40751628299650783, -0.7889230286257386],
}
"""Numpy 1.26: seeded 7, two standard normals drawn, then three from ``copy.copy`` of it and three from it."""


@numpy1_only
@settings(max_examples=200, deadline=None)
@given(rng=RANDOM)
def test_copy_random_state_is_numpy_1_26s_copy(rng):
    """`copy_random_state` gives what ``copy.copy`` gave: the same draws, and the original's state left alone."""
    before = _state(rng)
    mine, theirs = numpy2.copy_random_state(rng), copy.copy(rng)
    assert type(mine) is type(theirs)
    assert _same(mine.random(4), theirs.random(4))
    assert _same(_state(rng), before)


@pytest.mark.parametrize("make_rng", DRAWS_AFTER_TWO)
def test_a_copied_generator_draws_numpy_1_26s_recorded_draws(make_rng):
    """A `copy_random_state` copy draws what numpy 1.26's copy drew, and the original then draws the same."""
    rng = make_rng(7)
    rng.standard_normal(2)
    assert numpy2.copy_random_state(rng).standard_normal(3).tolist() == DRAWS_AFTER_TWO[make_rng]
    assert rng.standard_normal(3).tolist() == DRAWS_AFTER_TWO[make_rng]


@pytest.mark.parametrize(("value", "key"), [([1, [2]], 1), ({"a": [1]}, "a")], ids=["list", "dict"])
def test_copy_random_state_of_anything_else_is_a_shallow_copy(value, key):
    """`copy_random_state` of what is no numpy generator is ``copy.copy``: a new object holding the same items."""
    copied = numpy2.copy_random_state(value)
    assert copied == value and copied is not value
    assert copied[key] is value[key]


# ---- numpy1_scalar ----

COMPARED = [
    (0.9, "float32", False),
    (0.9, "float64", True),
    (0.5, "float32", True),
    (1e40, "float32", False),
    (1e40, "float16", False),
    (float("nan"), "float32", False),
    (float("inf"), "float32", True),
    (1, "float16", True),
    (0.1, "float16", False),
    (300, "int16", True),
    (300, "int8", False),
    (2**40, "int32", False),
    (2**70, "float64", True),
]
"""``np.all(value == np.asarray(value).astype(dtype))`` under numpy 1.26, recorded: Aesara's test of an exact cast."""
COMPARED_DTYPES = ["int8", "int16", "int64", "uint8", "uint64", "float16", "float32", "float64", "complex64"]


def _compared(left, array):
    return np.all(left == array)


@numpy1_only
@pytest.mark.filterwarnings("ignore")
@settings(max_examples=400, deadline=None)
@given(
    value=st.one_of(st.integers(-(2**70), 2**70), st.floats(), st.booleans(), st.sampled_from([np.float32(0.1), None])),
    array=hnp.arrays(st.sampled_from(COMPARED_DTYPES), ()),
    cast=st.booleans(),
)
def test_numpy1_scalar_compares_as_numpy_1_26(value, array, cast):
    """``numpy1_scalar(value) == array`` decides as numpy 1.26's ``value == array``, also for ``value`` in its dtype."""
    if cast:
        array = _outcome(np.asarray(value).astype, array.dtype)
        assume(not isinstance(array, Raises))
    assert _same(_outcome(_compared, numpy2.numpy1_scalar(value), array), _outcome(_compared, value, array))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize(("value", "dtype", "equal"), COMPARED)
def test_numpy1_scalar_compares_as_recorded_from_numpy_1_26(value, dtype, equal):
    """``numpy1_scalar(value)`` equals ``value`` cast to ``dtype`` as recorded from numpy 1.26 (numpy 1.x: as ``==``)."""
    array = np.asarray(value).astype(dtype)
    assert _compared(numpy2.numpy1_scalar(value), array) == equal
    assert NUMPY2 or _compared(value, array) == equal


CAST = [
    (300.7, "int8", 44),
    (-1.7, "uint8", 255),
    (70000.5, "int8", 112),
    (1e10, "int8", 0),
    (300, "int8", 44),
    (-1, "uint16", 65535),
    (2.5, "int64", 2),
    (1e40, "float32", np.inf),
]
"""``np.dtype(dtype).type(value)`` of a Python scalar under numpy 1.26, recorded: Aesara's ``Cast.impl``."""


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize(("value", "dtype", "cast"), CAST)
def test_numpy1_cast_is_as_recorded_from_numpy_1_26(value, dtype, cast):
    """``numpy1_cast`` of ``value`` to a scalar type is what numpy 1.26 made of it (numpy 2 raised for some)."""
    scalar_type = np.dtype(dtype).type
    assert numpy2.numpy1_cast(scalar_type, value) == cast
    assert NUMPY2 or scalar_type(value) == cast


@numpy1_only
@pytest.mark.filterwarnings("ignore")
@settings(max_examples=300, deadline=None)
@given(
    value=st.one_of(st.integers(-(2**62), 2**62), st.floats(-1e18, 1e18)),
    dtype=st.sampled_from(["int8", "uint8", "int32", "uint64", "int64", "float16", "float32", "float64"]),
)
def test_numpy1_cast_is_numpy_1_26s(value, dtype):
    """``numpy1_cast(scalar_type, value)`` is numpy 1.26's ``scalar_type(value)``, or its error."""
    scalar_type = np.dtype(dtype).type
    assert _same(_outcome(numpy2.numpy1_cast, scalar_type, value), _outcome(scalar_type, value))


# ---- the moved names ----


def test_maxdims_is_numpy_1_26s():
    """``RESTORED["MAXDIMS"]`` is 32, numpy 1.26's ``np.MAXDIMS`` (numpy 2's C value is 64)."""
    assert numpy2.RESTORED["MAXDIMS"] == 32
    assert NUMPY2 or np.MAXDIMS == 32


def test_the_moved_exceptions_are_numpys():
    """``RESTORED``'s ``AxisError`` and ``ComplexWarning`` are numpy's own classes, wherever numpy keeps them."""
    assert numpy2.RESTORED["AxisError"] is numpy.exceptions.AxisError
    assert numpy2.RESTORED["ComplexWarning"] is numpy.exceptions.ComplexWarning
    assert NUMPY2 or (np.AxisError, np.ComplexWarning) == (numpy.exceptions.AxisError, numpy.exceptions.ComplexWarning)


@numpy1_only
def test_no_vendor_blas_is_what_numpy_1_26_reports_on_this_machine():
    """``RESTORED["distutils"]`` reports what numpy 1.26's ``system_info`` does on a machine without a vendor BLAS."""
    import numpy.distutils.system_info

    found = numpy.distutils.system_info.get_info("blas_opt")
    if found:
        pytest.skip("this machine has a vendor BLAS, so numpy 1.26 reports one")
    assert numpy2.RESTORED["distutils"].system_info.get_info("blas_opt") == found


@numpy2_only
def test_aesara_finds_no_vendor_blas_under_numpy_2():
    """Aesara's default BLAS flags come out empty, as numpy 1.26 gives them on a machine without a vendor BLAS."""
    from aesara.link.c.cmodule import default_blas_ldflags

    assert numpy2.RESTORED["distutils"].system_info.get_info("blas_opt") == {}
    assert default_blas_ldflags() == ""


# ---- Aesara's code that uses each item, on either stack ----

DERIVATIVES = {
    "exp2": (at.exp2, lambda x: np.exp2(x) * np.log(x.dtype.type(2)), 0.7),
    "arccos": (at.arccos, lambda x: -1 / np.sqrt(1 - x**2), 0.3),
    "arcsin": (at.arcsin, lambda x: 1 / np.sqrt(1 - x**2), 0.3),
    "arctan": (at.arctan, lambda x: 1 / (1 + x**2), 0.3),
    "arccosh": (at.arccosh, lambda x: 1 / np.sqrt(x**2 - 1), 1.7),
    "arcsinh": (at.arcsinh, lambda x: 1 / np.sqrt(x**2 + 1), 0.3),
    "arctanh": (at.arctanh, lambda x: 1 / (1 - x**2), 0.3),
}
"""Each function whose gradient casts a constant with ``np.cast``: its derivative in numpy, and a point."""


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", DERIVATIVES)
def test_gradients_that_cast_a_constant_evaluate(name, dtype):
    """``aesara.grad`` of exp2 and the inverse trigonometric functions gives their derivative, in the input's dtype."""
    function, derivative, point = DERIVATIVES[name]
    x = at.scalar(dtype=dtype)
    gradient = aesara.function([x], aesara.grad(function(x), x), mode="FAST_COMPILE")(np.asarray(point, dtype))
    assert gradient.dtype == dtype
    np.testing.assert_allclose(gradient, derivative(np.asarray(point, dtype)), rtol=8 * np.finfo(dtype).eps)


CONSTANTS = [
    (300, "int16"),
    (-129, "int16"),
    (2**40, "int64"),
    (0.9, "float64"),
    (0.5, "float32"),
    (1e40, "float64"),
    (1e-50, "float64"),
    (float("nan"), "float64"),
    (float("inf"), "float32"),
]
"""``at.constant(value).dtype`` under numpy 1.26 (Aesara's cast policy ``custom``, ``floatX`` float64), recorded."""


@pytest.mark.parametrize(("value", "dtype"), CONSTANTS)
def test_a_python_scalars_constant_has_numpy_1_26s_dtype(value, dtype):
    """A Python scalar's constant gets the narrowest dtype that holds it exactly (``numpy1_scalar``), as under numpy 1.26."""
    constant = at.constant(value)
    assert constant.dtype == dtype
    np.testing.assert_array_equal(constant.data, np.asarray(value))


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "int64"])
def test_an_elemwise_from_ints_to_floats_evaluates(dtype):
    """``at.exp`` of integers (its ufunc signature from ``sctype2char``) is numpy's exp in the output's float type."""
    x = at.vector(dtype=dtype)
    exp = at.exp(x)
    values = np.arange(6).astype(dtype)
    got = aesara.function([x], exp, mode="FAST_COMPILE")(values)
    assert got.dtype == exp.dtype
    np.testing.assert_array_equal(got, np.exp(values.astype(got.dtype)))


@pytest.mark.parametrize(
    ("function", "reference"),
    [(softmax, scipy.special.softmax), (log_softmax, scipy.special.log_softmax)],
    ids=["softmax", "log_softmax"],
)
def test_softmax_over_all_axes_evaluates(function, reference):
    """``softmax`` and ``log_softmax`` with ``axis=None`` normalize over every element, as scipy's do."""
    x = at.dmatrix()
    values = np.arange(6.0).reshape(2, 3) / 7
    got = aesara.function([x], function(x, axis=None), mode="FAST_COMPILE")(values)
    np.testing.assert_allclose(got, reference(values, axis=None), rtol=1e-14)


def test_cumulative_ops_over_all_axes_evaluate():
    """``cumsum`` and ``cumprod`` with ``axis=None`` (their ``c_axis`` is ``MAXDIMS``) run over the flattened input."""
    x = at.dmatrix()
    values = np.arange(1.0, 7.0).reshape(2, 3) / 3
    cumsum, cumprod = aesara.function([x], [at.cumsum(x), at.cumprod(x)], mode="FAST_COMPILE")(values)
    np.testing.assert_array_equal(cumsum, np.cumsum(values))
    np.testing.assert_array_equal(cumprod, np.cumprod(values))


def test_the_all_axes_sentinel_is_numpy_1_26s_maxdims():
    """CumOp's ``c_axis`` and the softmax Ops' C code give ``axis=None`` as 32, numpy 1.26's ``NPY_MAXDIMS``."""
    x = at.dmatrix()
    assert CumOp(axis=None).c_axis == 32
    for op, inputs in [(Softmax(axis=None), [x]), (LogSoftmax(axis=None), [x]), (SoftmaxGrad(axis=None), [x, x])]:
        code = op.c_code(op.make_node(*inputs), "node", [f"in{i}" for i in range(len(inputs))], ["out"], {"fail": ""})
        assert "int axis = 32;" in code


@pytest.mark.parametrize("size", [None, (4, 2, 3)])
def test_random_draws_broadcast_their_parameters(size):
    """``normal`` of a column of means and a row of scales draws numpy's broadcast draws, with or without ``size``."""
    mean, scale = np.array([[0.0], [10.0]]), np.array([1.0, 2.0, 3.0])
    draw = at.random.normal(mean, scale, size=size, rng=aesara.shared(np.random.default_rng(3)))
    got = aesara.function([], draw, mode="FAST_COMPILE")()
    np.testing.assert_array_equal(got, np.random.default_rng(3).normal(mean, scale, size))


@pytest.mark.parametrize("op", [gemm_no_inplace, gemm_inplace], ids=["gemm_no_inplace", "gemm_inplace"])
def test_gemm_on_0d_writes_z_a_plus_b_x_dot_y(op):
    """Gemm's ``perform`` on a 0-d ``z`` (``itemset``) gives ``z * a + b * dot(x, y)``, into ``z`` only in place."""
    z, a, x, y, b = np.array(2.0), np.array(3.0), np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array(0.5)
    given_z, out = z.copy(), [None]
    op.perform(None, [given_z, a, x, y, b], [out], op.params_type.get_params(op))
    assert out[0].shape == ()
    assert out[0] == z * a + b * np.dot(x, y)
    assert (out[0] is given_z) == op.inplace
    assert given_z == (out[0] if op.inplace else z)


def test_debug_mode_writes_a_destroyed_0d_input_back():
    """DebugMode writes a destroyed 0-d input's new value into it (``itemset``), as a destructive run would."""
    x = at.dscalar()
    function = aesara.function([aesara.In(x, mutable=True)], at.exp(x), mode=DebugMode(check_c_code=False))
    value = np.array(2.0)
    assert function(value) == np.exp(2.0)
    assert value == np.exp(2.0)


@pytest.mark.parametrize(
    "array",
    [np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(2, 3).T, np.arange(10, dtype=np.int8)[::3]],
    ids=["contiguous", "transposed", "strided"],
)
def test_hex_digest_hashes_the_c_ordered_bytes(array):
    """``aesara.printing.hex_digest`` (``tostring``) hashes the array's bytes in C order, with strides and shape."""
    expected = hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()
    strides, shape = ",".join(map(str, array.strides)), ",".join(map(str, array.shape))
    assert aesara.printing.hex_digest(array) == f"{expected}|strides=[{strides}]|shape=[{shape}]"


@pytest.mark.parametrize("bit_generator", [np.random.PCG64, np.random.MT19937])
def test_generators_compare_by_state(bit_generator):
    """``RandomGeneratorType.values_eq`` (``__getstate__``) holds for two equal generators, not once one has drawn."""
    a, b = np.random.Generator(bit_generator(5)), np.random.Generator(bit_generator(5))
    assert RandomGeneratorType.values_eq(a, b)
    assert RandomGeneratorType.values_eq(a.bit_generator.state, b)
    b.random()
    assert not RandomGeneratorType.values_eq(a, b)


def test_a_generator_gives_its_state_to_aesaras_jax_backend():
    """Aesara's JAX backend reads a ``Generator``'s state (``__getstate__``): its first words are the PCG64 state's."""
    from aesara.link.jax.dispatch import jax_typify

    state = np.random.default_rng(1).bit_generator.state["state"]["state"]
    words = np.array([state & 0xFFFFFFFF, state >> 32 & 0xFFFFFFFF], np.uint32)
    np.testing.assert_array_equal(jax_typify(np.random.default_rng(1))["jax_state"], words)


@pytest.mark.parametrize("make_rng", [np.random.default_rng, np.random.RandomState])
def test_a_draw_that_does_not_update_leaves_the_shared_generator_alone(make_rng):
    """A draw with ``no_default_updates`` gives one value on every call, and the shared generator's state is unchanged.

    Numpy 2's ``copy`` of a generator shares its state, so without `copy_random_state` the two calls
    would draw two values and advance the shared generator: numpy 1.26 drew the same one twice.
    """
    shared = aesara.shared(make_rng(11))
    before = _state(shared.get_value(borrow=True))
    draw = aesara.function([], at.random.normal(rng=shared), no_default_updates=True, mode="FAST_COMPILE")
    assert draw() == draw() == make_rng(11).normal(0.0, 1.0)
    assert _same(_state(shared.get_value(borrow=True)), before)


@pytest.mark.parametrize(
    "build", [lambda x: at.squeeze(x, axis=2), lambda x: at.sum(x, axis=2)], ids=["squeeze", "sum"]
)
def test_an_axis_out_of_range_raises_numpys_axis_error(build):
    """Aesara's ``np.AxisError`` (``squeeze``, reductions) is numpy's ``AxisError``, which callers catch."""
    with pytest.raises(numpy.exceptions.AxisError):
        build(at.dvector())


def test_the_gradient_of_expm_evaluates_without_a_complex_warning():
    """The gradient of ``expm`` (which silences ``np.ComplexWarning``) warns of nothing and is the numeric one."""
    a = at.dmatrix()
    values, step = np.array([[0.1, 0.2], [0.3, 0.4]]), 1e-6
    with warnings.catch_warnings():
        warnings.simplefilter("error", numpy.exceptions.ComplexWarning)
        got = aesara.function([a], aesara.grad(expm(a).sum(), a), mode="FAST_COMPILE")(values)
    basis = np.eye(4).reshape(4, 2, 2)
    numeric = [
        (scipy.linalg.expm(values + step * e).sum() - scipy.linalg.expm(values - step * e).sum()) / (2 * step)
        for e in basis
    ]
    np.testing.assert_allclose(got, np.reshape(numeric, (2, 2)), rtol=1e-7)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_batch_normalization_casts_its_epsilon():
    """``batch_normalization_train`` (``np.cast`` of its epsilon) normalizes as numpy computes it."""
    from aesara.tensor.nnet.batchnorm import batch_normalization_train

    x, gamma, beta = at.dmatrix(), at.dvector(), at.dvector()
    values, scales, shifts = np.arange(6.0).reshape(3, 2) ** 2, np.array([1.0, 2.0]), np.array([0.5, -0.5])
    out, mean, _ = batch_normalization_train(x, gamma, beta, epsilon=1e-4)
    got, got_mean = aesara.function([x, gamma, beta], [out, mean], mode="FAST_COMPILE")(values, scales, shifts)
    expected = (values - values.mean(0)) / np.sqrt(values.var(0) + 1e-4) * scales + shifts
    np.testing.assert_allclose(got_mean, values.mean(0), rtol=1e-14)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_aesara_reads_the_moved_names_from_numpys_public_module():
    """Aesara's ``from numpy.core... import`` names are numpy's: ``numpy.lib.array_utils``'s under numpy 2."""
    home = importlib.import_module("numpy.lib.array_utils" if NUMPY2 else "numpy.core.numeric")
    for module, name in [
        ("aesara.tensor.basic", "normalize_axis_index"),
        ("aesara.tensor.basic", "normalize_axis_tuple"),
        ("aesara.tensor.extra_ops", "normalize_axis_index"),
    ]:
        assert getattr(importlib.import_module(module), name) is getattr(home, name)


def test_functions_that_normalize_a_negative_axis_evaluate():
    """``moveaxis``, ``take_along_axis`` and ``diff`` over a negative axis give numpy's results."""
    x, indices = at.dtensor3(), at.ltensor3()
    values = np.arange(24.0).reshape(2, 3, 4) ** 2
    order = np.argsort(-values, axis=-1)
    outputs = [at.moveaxis(x, 0, -1), at.take_along_axis(x, indices, axis=-1), diff(x, axis=-2)]
    got = aesara.function([x, indices], outputs, mode="FAST_COMPILE")(values, order)
    expected = [np.moveaxis(values, 0, -1), np.take_along_axis(values, order, axis=-1), np.diff(values, axis=-2)]
    for mine, numpys in zip(got, expected):
        np.testing.assert_array_equal(mine, numpys)


@numpy2_only
def test_building_graphs_reads_nothing_deprecated_from_numpy_core():
    """Building reductions, ``expand_dims`` and ``squeeze`` over axes warns of no ``numpy.core`` under numpy 2."""
    x = at.dtensor3()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="numpy.core", category=DeprecationWarning)
        at.sum(x, axis=-1)
        at.expand_dims(x, -1)
        at.squeeze(at.tensor(dtype="float64", shape=(2, 1, 3)), axis=-2)


# ---- the rewriting ----


def _aesara_modules():
    """Every module of the installed Aesara: its dotted name and its parsed source."""
    for path in sorted(AESARA.rglob("*.py")):
        parts = path.relative_to(AESARA.parent).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), ast.parse(path.read_bytes(), str(path))


def _numpy_name(node):
    return isinstance(node, ast.Name) and node.id in ("np", "numpy")


def _numpy_core_module(node):
    """Whether ``node`` is ``np.core.<module>``."""
    core = getattr(node, "value", None)
    return (
        isinstance(node, ast.Attribute)
        and isinstance(core, ast.Attribute)
        and core.attr == "core"
        and _numpy_name(core.value)
    )


def _method_of_its_own(node):
    """Whether a method called on ``node`` is surely no numpy object's: ``super()``'s, numpy's, the stand-ins'."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id == "super"
    return isinstance(node, ast.Name) and node.id in ("np", "numpy", numpy2.STAND_IN)


def _uses(tree):
    """What a module's source uses of the tables: ``np.`` names of RESTORED, METHODS, MOVED_IMPORTS, REMOVED_MODULES."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _numpy_name(node.value) and node.attr in numpy2.RESTORED:
            yield f"np.{node.attr}"
        elif isinstance(node, ast.Attribute) and node.attr in numpy2.CORE_NAMES and _numpy_core_module(node.value):
            yield f"np.core.{node.value.attr}.{node.attr}"
        elif _numpy_core_module(node):
            yield f"np.core.{node.attr}"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in numpy2.METHODS:
            if not _method_of_its_own(node.func.value):
                yield f".{node.func.attr}()"
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (node.module, alias.name) in numpy2.MOVED_IMPORTS or node.module in numpy2.REMOVED_MODULES:
                    yield f"from {node.module} import {alias.name}"
                elif node.module == "numpy" and alias.name in numpy2.RESTORED:
                    yield f"from numpy import {alias.name}"
        elif isinstance(node, ast.Import):
            yield from (f"import {alias.name}" for alias in node.names if alias.name in numpy2.REMOVED_MODULES)


def test_the_rewritten_modules_are_those_that_use_what_numpy_2_removed():
    """`REWRITTEN_MODULES` is exactly the Aesara modules whose source uses a name of the module's tables, or that
    `PYTHON_SCALARS` or `REPLACED_CALLS` names."""
    tables = {**numpy2.PYTHON_SCALARS, **numpy2.REPLACED_CALLS}
    using = {name: sorted(set(_uses(tree))) or name in tables for name, tree in _aesara_modules()}
    assert {name for name, uses in using.items() if uses} - numpy2.REWRITTEN_MODULES == set()
    assert {name for name in numpy2.REWRITTEN_MODULES if not using.get(name)} == set()


def _numpy_chains(tree):
    """The attributes Aesara reads from numpy in ``tree``: each ``np.a.b`` as its names ``("a", "b")``."""
    for node in ast.walk(tree):
        names = []
        while isinstance(node, ast.Attribute):
            names.insert(0, node.attr)
            node = node.value
        if names and _numpy_name(node):
            yield tuple(names)


UNREAD = {("aesara.link.c.cmodule", "np.__config__.get_info")}
"""What Aesara reads from numpy that numpy 2 lacks: ``get_info``, whose ``AttributeError`` Aesara catches to read
``numpy.distutils``."""


@numpy2_only
def test_aesara_reads_nothing_from_numpy_2_that_it_lacks_or_deprecates():
    """Every ``np.a.b`` that Aesara reads, rewritten, is numpy 2's without a warning (but for what is never read)."""
    unread = set()
    for name, tree in _aesara_modules():
        if name in numpy2.REWRITTEN_MODULES:
            tree = numpy2._PointAtStandIns(name).visit(tree)
        for chain in set(_numpy_chains(tree)):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                if isinstance(_outcome(functools.reduce, getattr, chain, np), Raises):
                    unread.add((name, "np." + ".".join(chain)))
    assert unread == UNREAD


@numpy2_only
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name", sorted(numpy2.REWRITTEN_MODULES))
def test_each_rewritten_module_was_loaded_rewritten(name):
    """Each module of `REWRITTEN_MODULES`, once imported, was compiled by the rewriting loader, with its stand-ins."""
    module = importlib.import_module(name)
    assert module.__dict__[numpy2.STAND_IN] is numpy2.STAND_INS
    assert isinstance(module.__spec__.loader, numpy2._RewritingLoader)


def test_the_rewriting_leaves_no_use_of_what_numpy_2_removed():
    """Each listed module, rewritten, uses none of the tables' names: every use now points at a stand-in."""
    for name, tree in _aesara_modules():
        if name in numpy2.REWRITTEN_MODULES:
            assert list(_uses(numpy2._PointAtStandIns(name).visit(tree))) == [], name


@numpy1_only
def test_under_numpy_1_nothing_is_installed():
    """Under numpy 1.x `restore` installs no finder, no Aesara module holds the stand-ins, Aesara copies as it did."""
    numpy2.restore()
    assert numpy2._FINDER not in sys.meta_path
    assert [name for name, module in sys.modules.items() if numpy2.STAND_IN in getattr(module, "__dict__", {})] == []
    assert aesara.tensor.random.op.copy is copy.copy


@numpy2_only
def test_under_numpy_2_the_generator_copy_is_restored():
    """Under numpy 2 Aesara's ``RandomVariable.perform`` copies with `copy_random_state`, and `restore` runs once."""
    numpy2.restore()
    assert sys.meta_path.count(numpy2._FINDER) == 1
    perform = inspect.getsource(aesara.tensor.random.op.RandomVariable.perform)
    assert "rng = copy(rng)" in perform  # Aesara's source, whose compiled code calls the stand-in:
    assert "copy_random_state" in aesara.tensor.random.op.RandomVariable.perform.__code__.co_names


# ---- in a new process: the compiler, the flags, the order of imports ----

READ_CONFIG = """
import json, os
{imports}
print(json.dumps({{"cxx": aesara.config.cxx, "flags": os.environ.get("AESARA_FLAGS")}}))
"""
"""Runs ``imports``, and prints Aesara's compiler and ``AESARA_FLAGS`` as they then are, on its last line."""


def _run(script, **environment):
    """A new Python process's result on ``script``, with these environment variables (None: unset)."""
    env = {**os.environ, **environment}
    env = {name: value for name, value in env.items() if value is not None}
    return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)


def _config(tmp_path, imports, flags):
    """Aesara's compiler and the flags after ``imports``, under ``AESARA_FLAGS=flags`` (None: unset).

    Aesara compiles into ``tmp_path`` (set in an ``AESARARC`` file, so that the flags can be unset).
    """
    rc = tmp_path / "aesararc"
    rc.write_text(f"[global]\nbase_compiledir = {tmp_path}\n")
    done = _run(READ_CONFIG.format(imports=imports), AESARA_FLAGS=flags, AESARARC=str(rc))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("flags", [None, "floatX=float64", "cxx=g++", "floatX=float32,cxx=g++", "cxx="])
def test_aesaras_compiler_is_none_under_numpy_2_unless_the_flags_name_one(tmp_path, flags):
    """Under numpy 2 Aesara's ``cxx`` is "" unless ``AESARA_FLAGS`` sets it; ``AESARA_FLAGS`` is left as it was.

    Under numpy 1.x ``cxx`` is what Aesara picks when imported alone.
    """
    config = _config(tmp_path, "import aejax.adapters, aesara", flags)
    assert config["flags"] == flags
    if flags and "cxx=" in flags:
        assert config["cxx"] == flags.split("cxx=")[1]
    elif NUMPY2:
        assert config["cxx"] == ""
    else:
        assert config["cxx"] == _config(tmp_path, "import aesara", flags)["cxx"]


@numpy2_only
def test_aejax_and_aesara_import_with_warnings_as_errors(tmp_path):
    """Under numpy 2, ``import aejax.linker`` warns nothing that ``-W error`` (a suite's ``filterwarnings = error``) would raise:
    under numpy 2, Aesara's compiler lookup uses ``shutil.which``, not setuptools' deprecated ``find_executable``."""
    done = _run(
        "import aejax.linker, aesara.tensor\n", AESARA_FLAGS=f"base_compiledir={tmp_path}", PYTHONWARNINGS="error"
    )
    assert done.returncode == 0, done.stderr[-3000:]


@numpy2_only
@pytest.mark.parametrize(
    "first",
    [
        "sys.modules['aesara'] = types.ModuleType('aesara')",
        "try:\n    import aesara\nexcept AttributeError:\n    pass",
    ],
    ids=["aesara imported", "aesara's import failed"],
)
def test_importing_aesara_first_fails_naming_the_order(first):
    """Under numpy 2, aejax after Aesara (or after Aesara's failed import) raises ``ImportError`` naming the order."""
    done = _run(f"import sys, types\n{first}\nimport aejax.adapters\n")
    assert done.returncode != 0
    assert "ImportError: aesara was imported before aejax under numpy 2" in done.stderr
    assert "import aejax.linker (or aejax.adapters) first" in done.stderr
