"""Transforms built by composing generated functions: ``jvp``, ``vjp``, ``jacobian``, ``hessian``.

Each compiles generated code once per function (cached on the function object) and calls it.
Conventions follow JAX: ``jvp(f, primals, tangents)`` takes a tuple of every positional
argument and one tangent per argument; ``vjp(f, *primals)`` returns the value and a pullback
that maps an output cotangent to one cotangent per argument. One difference: the pullback runs
the forward sweep again on each call (it holds no recorded values), so it can be called any
number of times.
"""

from __future__ import annotations

import copy
import functools
import sys
import threading
import types
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from . import messages
from .api import Wrt, compile_transform, grad, refuse_composite, resolve_wrt
from .errors import NoDerivativeError, UnsupportedSyntaxError
from .lower import is_array_code
from .source import closure_values, load_function

_CACHE: weakref.WeakKeyDictionary[Callable[..., Any], dict[tuple, Callable[..., Any]]] = (
    weakref.WeakKeyDictionary()
)


def _cached(fn: Callable[..., Any], kind: str, wrt: Wrt = None) -> Callable[..., Any]:
    """``compile_transform(fn, kind, wrt)``, compiled once per function, code and ``wrt``,
    and compiled again when what it was compiled against changed: the rules in force (a
    rule registered later, a ``rule_scope`` left) or a constant the function reads."""
    with _CACHE_LOCK:
        per_function = _CACHE.setdefault(fn, {})
        key = _cache_key(fn, kind, wrt)
        compiled = per_function.get(key)
    if compiled is None:  # (compiled outside the lock: threads compile side by side)
        compiled = compile_transform(fn, kind, wrt)
        # Compiling may load rule tables (NumPy's, on first use): the key after it is the
        # one the next call computes.
        after = _cache_key(fn, kind, wrt)
        with _CACHE_LOCK:
            per_function[key] = per_function[after] = compiled
            while len(per_function) > _VERSIONS_KEPT:  # the oldest first: dicts keep order
                del per_function[next(iter(per_function))]
    return compiled


# Threads (each with its own rule_scope, say) compile and evict versions side by side.
_CACHE_LOCK = threading.Lock()


# Compiled versions kept per function: a constant changed in every step of a training loop
# would otherwise keep one version per value, for good.
_VERSIONS_KEPT = 16


def _cache_key(fn: Callable[..., Any], kind: str, wrt: Wrt) -> tuple:
    """What a compiled transform depends on besides ``fn``'s code: see ``_cached``."""
    from .rules import registry

    return (
        kind,
        getattr(fn, "__code__", None),
        _hashable(wrt),
        registry.active_rules(),
        registry.REGISTRATIONS,
        _constants_read(fn),
    )


def _constants_read(fn: Callable[..., Any], visited: set[int] | None = None) -> tuple:
    """What ``fn``'s code reads from its module and closure, as it is now: numbers, tuples
    and strings (an einsum subscript) by value, arrays and everything else (the helper
    function a global names) by identity; and the same for each Python function it names,
    whose code the transforms inline (once each: helpers may call each other)."""
    code = getattr(fn, "__code__", None)
    visited = set() if visited is None else visited
    if code is None or id(code) in visited:
        return ()
    visited.add(id(code))
    names, stack = set(), [code]
    while stack:
        current = stack.pop()
        names.update(current.co_names)
        stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    module = getattr(fn, "__globals__", {})
    seen = [(name, module[name]) for name in sorted(names) if name in module]
    if isinstance(fn, types.FunctionType):
        seen += sorted(closure_values(fn).items())
    seen += _module_attributes(seen, names)
    own = tuple((name, _value_key(value)) for name, value in seen)
    helpers = tuple(
        (name, _constants_read(value, visited)) for name, value in seen if _is_helper(value)
    )
    return own + helpers


def _module_attributes(seen: list[tuple[str, object]], names: set[str]) -> list[tuple[str, object]]:
    """The attributes code may read from the modules among ``seen`` (globals or closure
    values): ``helpers.K`` after ``import helpers``, and down through submodules,
    ``pkg.sub.K`` after ``import pkg.sub`` (``co_names`` holds each part's name)."""
    found: list[tuple[str, object]] = []
    pending = [(name, value) for name, value in seen if isinstance(value, types.ModuleType)]
    visited: set[int] = set()
    while pending:
        prefix, module = pending.pop(0)
        if id(module) in visited:
            continue
        visited.add(id(module))
        attributes = vars(module)
        for attr in sorted(names & attributes.keys()):
            value = attributes[attr]
            found.append((f"{prefix}.{attr}", value))
            if isinstance(value, types.ModuleType):
                pending.append((f"{prefix}.{attr}", value))
    return found


def _is_helper(value: object) -> bool:
    """A Python function of the user's that compiled code may inline (not NumPy's own)."""
    if not isinstance(value, types.FunctionType):
        return False
    package = (getattr(value, "__module__", None) or "").partition(".")[0]
    return package not in ("numpy", "adcompile")


def _value_key(value: object) -> object:
    """A key equal for equal data (repr: nan equals itself, 1 is not 1.0) and for the same
    object otherwise (an array's elements are read from the object itself when code runs)."""
    if isinstance(value, int | float | tuple | str):
        return repr(value)
    return _Identity(value)


class _Identity:
    """A key for the object itself: never its own ``__hash__`` or ``__eq__`` (a list has none,
    a user's class may raise), and it keeps the object alive, so that its id is not reused
    by another object while the key is in the cache."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Identity) and other.value is self.value


def _private(args: tuple) -> tuple:
    """Copies of the arguments for calling the user's own function, which may update a NumPy
    parameter in place (``x += w``): the caller's arrays are never changed."""
    return copy.deepcopy(args)


def _check_structure(primal: Any, tangent: Any, where: str) -> None:
    """A tangent has its primal's structure: the same dict keys, list and tuple lengths."""
    if isinstance(primal, dict):
        if not isinstance(tangent, dict) or set(tangent) != set(primal):
            got = sorted(tangent) if isinstance(tangent, dict) else type(tangent).__name__
            raise ValueError(
                f"jvp: the tangent of {where} has {got}; its primal has keys {sorted(primal)}"
            )
        for key in primal:
            _check_structure(primal[key], tangent[key], f"{where}[{key!r}]")
    elif isinstance(primal, list | tuple):
        if not isinstance(tangent, list | tuple) or len(tangent) != len(primal):
            raise ValueError(
                f"jvp: the tangent of {where} is {tangent!r}; its primal is a "
                f"{type(primal).__name__} of {len(primal)} items"
            )
        for i, (p, t) in enumerate(zip(primal, tangent, strict=True)):
            _check_structure(p, t, f"{where}[{i}]")
    elif _shape(tangent) != _shape(primal):
        raise ValueError(
            f"jvp: the tangent of {where} has shape {_shape(tangent)}; its primal has shape "
            f"{_shape(primal)} (a tangent has its primal's shape)"
        )


def _shape(value: Any) -> tuple:
    """A NumPy array's shape; () for a number."""
    return tuple(getattr(value, "shape", ()))


def _hashable(wrt: Wrt) -> object:
    return tuple(wrt) if isinstance(wrt, list) else wrt


def _completer(fn: Callable[..., Any]) -> Callable[[tuple], tuple]:
    """A function filling in the defaults of the parameters a call leaves out.

    The generated transforms take their extra parameters (tangents, cotangents) after all of
    the primal's, so a primal argument left to its default must be passed explicitly.
    """
    refuse_composite(fn)  # a Jacobian or Hessian function: said so, not its *args refused
    fs = load_function(fn)
    arguments = fs.node.args
    if arguments.vararg or arguments.kwarg or arguments.kwonlyargs:  # as compiling would say
        raise fs.error(UnsupportedSyntaxError, fs.node, messages.NON_POSITIONAL_PARAMS)
    params, defaults = fs.param_names(), tuple(fs.defaults)
    # A gradient's arguments are its primal's: a Hessian's errors name the primal.
    name = getattr(getattr(fn, "__wrapped__", fn), "__name__", "function")
    positional_only = params[: len(arguments.posonlyargs)]

    def complete(args: tuple, keywords: dict[str, Any] | None = None) -> tuple:
        if len(args) > len(params):
            raise TypeError(f"{name}() takes {len(params)} arguments but {len(args)} were given")
        if keywords:  # by name, as the primal's signature allows
            named = ", ".join(repr(key) for key in keywords if key in positional_only)
            if named:
                raise TypeError(
                    f"{name}() got some positional-only arguments passed as keyword "
                    f"arguments: {named}"
                )
            args = _by_position(name, params, defaults, args, keywords)
        missing = len(params) - len(args)
        if missing <= 0:
            return args
        if missing > len(defaults):
            absent = ", ".join(params[len(args) : len(params) - len(defaults)])
            raise TypeError(f"{name}() missing required positional argument(s): {absent}")
        return (*args, *defaults[len(defaults) - missing :])

    return complete


def _by_position(
    name: str, params: list[str], defaults: tuple, args: tuple, keywords: dict[str, Any]
) -> tuple:
    """``args`` and ``keywords`` as positional arguments, up to the last one given; a parameter
    skipped before it takes its default, as Python binds ``f(1.0, z=5.0)``."""
    given = dict(zip(params, args, strict=False))
    for key, value in keywords.items():
        if key not in params:
            raise TypeError(f"{name}() got an unexpected keyword argument {key!r}")
        if key in given:
            raise TypeError(f"{name}() got multiple values for argument {key!r}")
        given[key] = value
    first_default = len(params) - len(defaults)
    for index, param in enumerate(params[first_default:]):
        given.setdefault(param, defaults[index])
    count = max(params.index(key) for key in given) + 1
    absent = [p for p in params[:count] if p not in given]
    if absent:
        raise TypeError(f"{name}() missing required argument(s): {', '.join(absent)}")
    return tuple(given[p] for p in params[:count])


def jvp(fn: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    """``(fn(*primals), J @ tangents)``: the value and its directional derivative."""
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(f"jvp got {len(primals)} primals but {len(tangents)} tangents")
    for index, (primal, tangent) in enumerate(zip(primals, tangents, strict=True)):
        _check_structure(primal, tangent, f"argument {index}")
    complete = _completer(fn)(primals)  # a TypeError for too many, as calling fn gives
    if not primals:  # every argument left to its default: none varies
        _compiled_for_every_parameter(fn, "jvp")  # what cannot be differentiated says so
        value = fn()
        return value, _zero_tangent(value)
    generated = _cached(fn, "jvp", list(range(len(primals))))
    arrays = list(_array_leaves(complete, sys.modules["numpy"])) if "numpy" in sys.modules else []
    if generated.adcompile_array_code and any(map(_is_complex, [*complete, *arrays])):
        raise TypeError(
            "jvp: only real arrays are differentiated here; an argument is complex (the "
            "derivative rules, np.abs's among them, are those of real values)"
        )
    value, tangent = generated(*complete, *tangents)
    return value, _not_sharing(tangent, (*complete, *tangents))


def _is_complex(value: Any) -> bool:
    return isinstance(value, complex) or getattr(getattr(value, "dtype", None), "kind", "") == "c"


def _zero_tangent(value: Any) -> Any:
    """A zero tangent of ``value``'s structure (the array helpers' own, where NumPy is in
    use: without it, ``value`` is a number or a tuple of numbers)."""
    if "numpy" in sys.modules:
        from .rules.array_helpers import _zeros_like

        return _zeros_like(value)
    return tuple(_zero_tangent(item) for item in value) if isinstance(value, tuple) else 0.0


def _refuse_arrays_in_number_code(
    fn: Callable[..., Any], generated: Callable[..., Any], args: tuple, what: str
) -> None:
    """Raise TypeError if reverse-mode code compiled for numbers gets arrays: it adds
    adjoints in place (``b_x += ...``, which would change the caller's cotangent) and never
    sums a broadcast adjoint back to its argument's shape."""
    if generated.adcompile_array_code or not _has_arrays(args):
        return
    name = getattr(fn, "__name__", "the function")
    raise TypeError(
        f"{what} of {name} was called with NumPy arrays, but {name} never mentions NumPy "
        "or array syntax, so adcompile compiled it for numbers; call it with numbers, use "
        f"jacobian(..., mode='forward'), or write {name} with NumPy (np.multiply(x, y), "
        "...) to differentiate it over arrays"
    )


def _has_arrays(args: tuple) -> bool:
    """Whether any argument is an array of one dimension or more."""
    return any(getattr(a, "ndim", 0) > 0 for a in args)


def _not_sharing(result: Any, inputs: tuple) -> Any:
    """``result`` with a copy of each array in it that shares memory with an input: the
    tangent of ``x + 1.0`` is the caller's tangent array itself, and the cotangent of ``x``
    in ``x + y`` the caller's cotangent, which the caller may then change in place (``grad``
    returns arrays of its own too). Two results sharing one input array get a copy each."""
    numpy = sys.modules.get("numpy")
    if numpy is None:  # no arrays anywhere
        return result
    arrays = list(_array_leaves(inputs, numpy))

    def own(value: Any) -> Any:
        if isinstance(value, numpy.ndarray):
            shared = any(numpy.shares_memory(value, array) for array in arrays)
            return value.copy() if shared else value
        if isinstance(value, tuple | list):
            return type(value)(own(item) for item in value)
        if isinstance(value, dict):
            return {key: own(item) for key, item in value.items()}
        return value

    return own(result) if arrays else result


def _array_leaves(value: Any, numpy: Any) -> Iterator[Any]:
    if isinstance(value, numpy.ndarray):
        yield value
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _array_leaves(item, numpy)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _array_leaves(item, numpy)


def vjp(fn: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[[Any], tuple]]:
    """``(fn(*primals), pullback)``; ``pullback(ct)`` is one cotangent per argument."""
    point = _private(_completer(fn)(primals))  # the point, even if the caller's arrays change
    given = len(primals)
    if given:
        generated = _cached(fn, "vjp", list(range(given)))
        _refuse_arrays_in_number_code(fn, generated, primals, "vjp")
    else:  # every argument left to its default: checked, but nothing to differentiate
        generated = _compiled_for_every_parameter(fn, "vjp")
    value = fn(*_private(primals))
    outputs = _output_count(generated, value)
    primals = point

    def pullback(cotangent: Any) -> tuple:
        """The cotangents of ``fn``'s arguments for the output cotangent ``cotangent``."""
        if outputs is None:
            cotangents = (_checked_cotangent(cotangent, value, "the output"),)
        else:
            cotangents = _checked_cotangents(cotangent, value, outputs)
        if not given:  # every argument left to its default: none to differentiate
            return ()
        return _not_sharing(generated(*primals, *cotangents), cotangents)

    return value, pullback


def _compiled_for_every_parameter(fn: Callable[..., Any], kind: str) -> Callable[..., Any] | None:
    """``kind`` compiled for every parameter (refusing what it cannot differentiate), or
    None for a function without parameters (nothing to compile)."""
    if not load_function(fn).param_names():
        return None
    return _cached(fn, kind, None)


def _output_count(generated: Callable[..., Any] | None, value: Any) -> int | None:
    """How many outputs a tuple output has (None: one output), from the compiled code."""
    if generated is not None:
        return generated.adcompile_outputs
    return len(value) if isinstance(value, tuple) else None


def _checked_cotangents(cotangent: Any, value: tuple, outputs: int) -> tuple:
    """A tuple output's cotangents, one per element, each checked as ``_checked_cotangent``."""
    if not isinstance(cotangent, tuple | list):
        raise TypeError(
            f"vjp: the output is a tuple of {outputs} elements; pass a tuple of {outputs} "
            f"cotangents, not a {type(cotangent).__name__}"
        )
    if len(cotangent) != outputs:
        raise ValueError(f"vjp: the output has {outputs} elements; got {len(cotangent)} cotangents")
    return tuple(
        _checked_cotangent(item, output, f"output element {k}")
        for k, (item, output) in enumerate(zip(cotangent, value, strict=True))
    )


def _checked_cotangent(cotangent: Any, output: Any, where: str) -> Any:
    """``cotangent`` if it is a number or an array of ``output``'s shape, else an error.

    A 0-d array comes back as a NumPy scalar: code compiled for numbers adds adjoints in
    place (``b_x += ...``), which would change the caller's array and every later read of it.
    """
    if cotangent is None or isinstance(cotangent, tuple | list | dict | str | bytes):
        what = "None" if cotangent is None else f"a {type(cotangent).__name__}"
        raise TypeError(
            f"vjp: the cotangent of {where} is {what}; it must be a number or an array of "
            f"{where}'s shape {_shape(output)}"
        )
    if _shape(cotangent) != _shape(output):
        raise ValueError(
            f"vjp: the cotangent of {where} has shape {_shape(cotangent)}; {where} has shape "
            f"{_shape(output)} (a cotangent has its output's shape)"
        )
    if getattr(cotangent, "ndim", None) == 0 and hasattr(cotangent, "item"):
        return cotangent[()]
    return cotangent


def jacobian(fn: Callable[..., Any], wrt: Wrt = None, mode: str = "reverse") -> Callable[..., Any]:
    """The Jacobian of ``fn`` (scalar or tuple output) as a function of ``fn``'s arguments.

    For a tuple output the result is one row per output element, each shaped like ``grad``'s
    result (a tuple over ``wrt``, or the bare partial); for a scalar output it is ``grad``'s.
    For a NumPy array output (reverse mode), each partial is an array of shape
    ``output.shape + input.shape``, as ``jax.jacrev`` gives. ``mode="reverse"`` runs one
    vector-Jacobian product per output element, ``"forward"`` one Jacobian-vector product
    per input.
    """
    if mode not in ("reverse", "forward"):
        raise ValueError(f"mode must be 'reverse' or 'forward', not {mode!r}")
    kind = "vjp" if mode == "reverse" else "jvp"
    fs = load_function(fn)
    generated = compile_transform(fn, kind, wrt)
    params = fs.param_names()
    arrays = is_array_code(fs)
    choice = resolve_wrt(params, wrt, getattr(fn, "__name__", "function"))
    outputs = generated.adcompile_outputs
    if mode == "reverse":
        rows = _reverse_rows(generated, outputs)
    else:
        rows = _forward_rows(generated, len(choice.names), outputs)
    complete = _completer(fn)

    def jacobian_of(*args: Any, **keywords: Any) -> Any:
        """The Jacobian at ``args``."""
        args = complete(args, keywords)
        if mode == "reverse":
            _refuse_arrays_in_number_code(fn, generated, args, "jacobian")
        # Code compiled for numbers, called with arrays, runs elementwise in forward mode:
        # its rows are array Jacobians too (one unit tangent per element, not per argument).
        if mode == "forward" and (arrays or _has_arrays(args)):
            partials = _array_jacobian_forward(generated, args, choice.names, params)
            if outputs is not None:  # one row per output element
                partials = [tuple(p[i] for p in partials) for i in range(outputs)]
                return tuple(row[0] if choice.bare else row for row in partials)
            return partials[0] if choice.bare else partials
        if mode == "reverse" and outputs is None:
            value = fn(*_private(args))
            if getattr(value, "ndim", 0) > 0:
                pullback = functools.partial(generated, *args)
                partials = _array_jacobian(pullback, args, value, choice.names, params)
                return partials[0] if choice.bare else partials
        table = None
        if mode == "reverse" and outputs is not None and arrays:
            table = _array_rows(generated, args, fn(*_private(args)), choice.names, params)
        table = table or rows(args)
        shaped = [row[0] if choice.bare else tuple(row) for row in table]
        return shaped[0] if outputs is None else tuple(shaped)

    jacobian_of.__name__ = f"{getattr(fn, '__name__', 'function')}_jacobian"
    jacobian_of.__qualname__ = f"{getattr(fn, '__qualname__', 'function')}_jacobian"
    jacobian_of.source = generated.source
    jacobian_of.adcompile_composite = "jacobian"
    jacobian_of.__wrapped__ = fn
    return jacobian_of


def _array_rows(
    generated: Callable[..., Any],
    args: tuple,
    values: tuple,
    wrt: tuple[str, ...],
    params: list[str],
) -> list[tuple] | None:
    """Reverse mode, a tuple output with NumPy array elements: each element's row by one
    vector-Jacobian product per entry (a unit cotangent there, zeros in the others). None if
    every element is a number (the usual rows then)."""
    if not any(getattr(value, "ndim", 0) > 0 for value in values):
        return None
    import numpy as np  # an output is a NumPy array: NumPy is loaded

    # The other elements' cotangents are zeros of their own shapes: the array rules read
    # an adjoint shaped like their result (np.cumsum reshapes it, np.diff pads it).
    zeros = [np.zeros_like(v, dtype=np.result_type(v, 1.0)) if np.ndim(v) else 0.0 for v in values]
    table = []
    for k, value in enumerate(values):

        def pullback(cotangent: Any, k: int = k) -> tuple:
            return generated(*args, *[cotangent if i == k else z for i, z in enumerate(zeros)])

        if getattr(value, "ndim", 0) > 0:
            table.append(_array_jacobian(pullback, args, value, wrt, params))
        else:
            table.append(tuple(pullback(1.0)))
    return table


def _array_jacobian(
    pullback: Callable[[Any], tuple],
    args: tuple,
    value: Any,
    wrt: tuple[str, ...],
    params: list[str],
) -> tuple[Any, ...]:
    """One vector-Jacobian product per element of an array output, stacked per input."""
    import numpy as np  # the output is a NumPy array: NumPy is loaded

    inputs = [args[params.index(name)] for name in wrt]
    for name, given in zip(wrt, inputs, strict=True):
        if isinstance(given, dict | list | tuple):
            raise TypeError(
                f"jacobian of an array output with respect to the structured parameter "
                f"{name!r} is not supported; pass its arrays as separate parameters"
            )
    columns: list[list[Any]] = [[] for _ in wrt]
    for i in range(value.size):
        cotangent = np.zeros(value.shape, dtype=np.result_type(value, 1.0))
        cotangent.flat[i] = 1.0
        for column, partial in zip(columns, pullback(cotangent), strict=True):
            column.append(partial)
    return tuple(
        np.reshape(
            np.stack(column) if column else np.zeros(0, np.result_type(given, 1.0)),
            value.shape + np.shape(given),
        )
        for column, given in zip(columns, inputs, strict=True)
    )


def _array_jacobian_forward(
    generated: Callable[..., Any],
    args: tuple,
    wrt: tuple[str, ...],
    params: list[str],
) -> tuple[Any, ...]:
    """One Jacobian-vector product per element of each input (``forward_jacobian``)."""
    from .rules.array_helpers import forward_jacobian

    _, partials = forward_jacobian(generated, args, [params.index(name) for name in wrt])
    return tuple(partials)


def _reverse_rows(generated: Callable[..., Any], outputs: int | None) -> Callable[..., list]:
    count = 1 if outputs is None else outputs

    def rows(args: tuple) -> list[tuple]:
        return [generated(*args, *_unit(count, i)) for i in range(count)]

    return rows


def _forward_rows(
    generated: Callable[..., Any], inputs: int, outputs: int | None
) -> Callable[..., list]:
    def rows(args: tuple) -> list[list]:
        columns = [generated(*args, *_unit(inputs, j))[1] for j in range(inputs)]
        if outputs is None:
            return [columns]
        return [[column[i] for column in columns] for i in range(outputs)]

    return rows


def _unit(size: int, index: int) -> tuple[float, ...]:
    return tuple(1.0 if i == index else 0.0 for i in range(size))


def hessian(fn: Callable[..., Any], wrt: Wrt = None) -> Callable[..., Any]:
    """The Hessian of a scalar ``fn``: forward mode over the generated reverse-mode gradient.

    ``H[i][j] = d2 fn / d wrt_i d wrt_j``; with a single ``wrt`` parameter, the bare second
    derivative. For NumPy code each block has the shape ``wrt_i.shape + wrt_j.shape``, as
    ``jax.hessian`` gives; it takes one pass of the gradient's tangent code per element of
    the ``wrt`` arrays.
    """
    if fn is None:  # grad(None) is grad used as a decorator factory: not meant here
        load_function(fn)  # the TypeError that names what adcompile differentiates
    gradient = grad(fn, wrt=wrt)
    recipe = gradient.adcompile_recipe
    if recipe.has_loops and is_array_code(load_function(fn)):
        second = _forward_over_forward(fn, wrt)
    else:
        second = jacobian(gradient, wrt=wrt, mode="forward")
    second.__name__ = f"{getattr(fn, '__name__', 'function')}_hessian"
    second.__qualname__ = f"{getattr(fn, '__qualname__', 'function')}_hessian"
    second.adcompile_composite = "hessian"
    second.__wrapped__ = fn
    return second


def _forward_over_forward(fn: Callable[..., Any], wrt: Wrt) -> Callable[..., Any]:
    """The Hessian of NumPy code with loops: tangents of the generated tangent (jvp) code.

    A reverse-mode gradient of a loop records values on list stacks, which the compiler does
    not read back; the jvp has plain loops. Its own jvp gives ``u @ H @ w`` for two
    directions, so the Hessian takes one pass per pair of elements (n squared passes).
    """
    params = load_function(fn).param_names()
    choice = resolve_wrt(params, wrt, getattr(fn, "__name__", "function"))
    indices = [params.index(name) for name in choice.names]
    try:
        first = _cached(fn, "jvp", list(range(len(params))) or None)
    except NoDerivativeError as error:
        rule = getattr(error, "user_rule", None)
        if rule is None:
            raise
        raise NoDerivativeError(
            messages.user_rule_in_looped_hessian(rule), error.location
        ) from None
    second = compile_transform(first, "jvp", indices)
    complete = _completer(fn)

    def hessian_of(*args: Any, **keywords: Any) -> Any:
        """The Hessian at ``args``."""
        from .rules.array_helpers import forward_jacobian

        args = complete(args, keywords)

        blocks = []
        for k in indices:
            rows = []  # one row of H per element of the direction's parameter
            for direction in _directions(args, k):
                _, partials = forward_jacobian(second, (*args, *direction), indices)
                rows.append([slope for _, slope in partials])
            blocks.append(
                [
                    _rows_stacked([row[j] for row in rows], args[k], args[m])
                    for j, m in enumerate(indices)
                ]
            )
        if choice.bare:
            return blocks[0][0]
        return tuple(tuple(row) for row in blocks)

    hessian_of.source = second.source
    return hessian_of


def _directions(args: tuple, k: int) -> Iterator[list[Any]]:
    """Tangents for every argument: zeros, but one element of (a leaf of) argument ``k`` 1."""
    from .rules.array_helpers import _basis, _zeros_like

    return _basis([_zeros_like(a) for a in args], k, args[k])


def _block(rows: list[Any], leaf: Any, other: Any) -> Any:
    """The Hessian block of two leaves from its rows (one per element of ``leaf``), in the
    float dtype of the two parameters: float32 stays float32, as a gradient has its
    parameter's dtype, whatever float64 constants the code mixes in."""
    import numpy as np  # only array code gets here

    shape = np.shape(leaf) + np.shape(other)
    block = np.stack([np.asarray(r) for r in rows]).reshape(shape) if rows else np.zeros(shape)
    floats = [p.dtype for p in (leaf, other) if getattr(p, "dtype", None) is not None]
    floats = [dtype for dtype in floats if dtype.kind == "f"]
    if not floats:
        return block
    dtype = np.result_type(*floats)
    return block if block.dtype == dtype else block.astype(dtype)


def _rows_stacked(rows: list[Any], arg: Any, other: Any) -> Any:
    """Rows of the Hessian, one per element of ``arg`` (each shaped like the parameter
    ``other``), as blocks shaped like ``arg``, each leaf's axes first."""
    import numpy as np  # only array code gets here

    from .rules.array_helpers import _leaves, _rebuilt

    blocks, start = [], 0
    for leaf in _leaves(arg):
        size = int(np.size(leaf))
        chunk = [_leaves(row) for row in rows[start : start + size]]
        start += size
        stacked = [
            _block([row[m] for row in chunk], leaf, other_leaf)
            for m, other_leaf in enumerate(_leaves(other))
        ]
        blocks.append(_rebuilt(other, iter(stacked)))
    return _rebuilt(arg, iter(blocks))
