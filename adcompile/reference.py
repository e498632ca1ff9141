"""A high-precision numerical reference for gradients, independent of the compiler and SymPy.

``mp_function(fn)`` rebuilds ``fn`` from its own code object with a namespace in which the
``math`` module, functions imported from it (``from math import sin``), the builtin ``float``,
and every user function ``fn`` reaches (helpers, closures, mutually recursive functions) are
replaced by versions that compute with mpmath numbers. Control flow, loops, comprehensions and
calls run unchanged: the primal itself is the reference program, so nothing has to be
re-implemented or understood symbolically.

``reference_gradient_mp`` differentiates that program with ``mpmath.diff`` (a central
difference at several times the working precision, with a step far below any realistic
distance to a kink), and ``assert_grad_matches_mp`` compares ``adcompile.grad`` with it.

Limits: ``//`` and ``divmod`` on a perturbed value fail (mpmath's ``mpf`` has no floor
division); ``type(v) is float`` is false for the stand-in ``float`` (``isinstance`` works); a
``math`` function without an mpmath equivalent here refuses mpmath arguments (TypeError)
instead of silently rounding them.
"""

from __future__ import annotations

import functools
import inspect
import math
import operator
import sys
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import mpmath
from mpmath import libmp

from .report import CheckReport, CheckRow, agrees, as_tuple, require_point_list

Real = Any  # a float, an int or an mpmath number
Wrt = int | str | Sequence[int | str] | None

DEFAULT_DPS = 40

_MP_REALS = (mpmath.mpf, type(mpmath.pi))
_SCALARS = (int, float, *_MP_REALS)
_TAU = mpmath.mp.constant(
    lambda prec, rnd: libmp.mpf_shift(libmp.mpf_pi(prec, rnd), 1), "tau", "tau"
)


# --- the mpmath version of the math module -----------------------------------------------------


def _is_mp(value: object) -> bool:
    """True for mpmath real numbers (including lazy constants such as mpmath.pi)."""
    return isinstance(value, _MP_REALS)


def _real(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap an mpmath function so a complex result raises ValueError, as ``math`` does."""

    @functools.wraps(fn)
    def real_only(*args: Real) -> Any:
        result = fn(*args)
        if isinstance(result, mpmath.mpc):
            raise ValueError(f"math domain error (math.{name}{args!r} is not real)")
        return result

    real_only.__name__ = name
    return real_only


def _log(x: Real, base: Real | None = None) -> Any:
    """math.log with one or two arguments."""
    return mpmath.log(x) if base is None else mpmath.log(x, base)


def _log2(x: Real) -> Any:
    """math.log2."""
    return mpmath.log(x, 2)


def _hypot(*coordinates: Real) -> Any:
    """math.hypot with any number of coordinates."""
    return mpmath.sqrt(mpmath.fsum(mpmath.mpf(c) ** 2 for c in coordinates))


def _cbrt(x: Real) -> Any:
    """math.cbrt: the real cube root, also of negative numbers."""
    root = mpmath.cbrt(abs(x))
    return -root if x < 0 else root


def _exp2(x: Real) -> Any:
    """math.exp2."""
    return mpmath.power(2, x)


def _floor(x: Real) -> int:
    """math.floor: an int, as math returns."""
    return int(mpmath.floor(x))


def _ceil(x: Real) -> int:
    """math.ceil: an int, as math returns."""
    return int(mpmath.ceil(x))


def _trunc(x: Real) -> int:
    """math.trunc: an int, as math returns."""
    return int(x)


def _copysign(x: Real, y: Real) -> Any:
    """math.copysign (a float ``y`` keeps its signed zero)."""
    negative = math.copysign(1.0, y) < 0 if isinstance(y, float) else y < 0
    return -abs(x) if negative else abs(x)


def _prod(iterable: Iterable[Real], *, start: Real = 1) -> Any:
    """math.prod."""
    return functools.reduce(operator.mul, iterable, start)


def _isclose(a: Real, b: Real, *, rel_tol: float = 1e-09, abs_tol: float = 0.0) -> bool:
    """math.isclose on mpmath numbers."""
    return bool(abs(a - b) <= max(rel_tol * max(abs(a), abs(b)), abs_tol))


def _refuse_mp(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """A math function with no mpmath equivalent: fine on plain numbers, refuses mpmath ones."""

    @functools.wraps(fn)
    def plain_only(*args: Any, **kwargs: Any) -> Any:
        if any(_is_mp(a) for a in (*args, *kwargs.values())):
            raise TypeError(
                f"math.{name} has no mpmath equivalent in adcompile.reference; it would round "
                "its argument to a float and lose the derivative"
            )
        return fn(*args, **kwargs)

    return plain_only


MP_MATH: dict[str, object] = {
    "sin": mpmath.sin,
    "cos": mpmath.cos,
    "tan": mpmath.tan,
    "asin": _real("asin", mpmath.asin),
    "acos": _real("acos", mpmath.acos),
    "atan": mpmath.atan,
    "atan2": mpmath.atan2,
    "sinh": mpmath.sinh,
    "cosh": mpmath.cosh,
    "tanh": mpmath.tanh,
    "asinh": mpmath.asinh,
    "acosh": _real("acosh", mpmath.acosh),
    "atanh": _real("atanh", mpmath.atanh),
    "exp": mpmath.exp,
    "exp2": _exp2,
    "expm1": mpmath.expm1,
    "log": _real("log", _log),
    "log1p": _real("log1p", mpmath.log1p),
    "log2": _real("log2", _log2),
    "log10": _real("log10", mpmath.log10),
    "sqrt": _real("sqrt", mpmath.sqrt),
    "cbrt": _cbrt,
    "pow": _real("pow", mpmath.power),
    "hypot": _hypot,
    "fabs": mpmath.fabs,
    "erf": mpmath.erf,
    "erfc": mpmath.erfc,
    "gamma": mpmath.gamma,
    "lgamma": _real("lgamma", mpmath.loggamma),
    "degrees": mpmath.degrees,
    "radians": mpmath.radians,
    "fmod": mpmath.fmod,
    "fsum": mpmath.fsum,
    "prod": _prod,
    "floor": _floor,
    "ceil": _ceil,
    "trunc": _trunc,
    "copysign": _copysign,
    "isfinite": mpmath.isfinite,
    "isnan": mpmath.isnan,
    "isinf": mpmath.isinf,
    "isclose": _isclose,
    "pi": mpmath.pi,
    "e": mpmath.e,
    "tau": _TAU,
    "inf": mpmath.inf,
    "nan": mpmath.nan,
}


def _build_math_shim() -> types.ModuleType:
    """A module object standing in for ``math``: mpmath versions, the rest refusing mpf."""
    shim = types.ModuleType("math", "math on mpmath numbers (adcompile.reference)")
    for name in dir(math):
        if not name.startswith("_"):
            value = getattr(math, name)
            setattr(shim, name, _refuse_mp(name, value) if callable(value) else value)
    for name, value in MP_MATH.items():
        setattr(shim, name, value)
    return shim


MATH_SHIM = _build_math_shim()

# Objects of the math module (functions and constants such as math.pi, bound by `from math
# import ...`) recognised by identity, mapped to their stand-ins.
_MATH_OBJECTS: dict[int, tuple[object, object]] = {
    id(getattr(math, name)): (getattr(math, name), getattr(MATH_SHIM, name))
    for name in dir(math)
    if not name.startswith("_")
}


class _FloatMeta(type):
    """Makes ``isinstance(v, MpFloat)`` true for floats and mpmath reals alike."""

    def __instancecheck__(cls, instance: object) -> bool:
        return isinstance(instance, float) or _is_mp(instance)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, float | _MP_REALS[0] | _MP_REALS[1])


class MpFloat(metaclass=_FloatMeta):
    """Stands in for the builtin ``float``: mpmath numbers stay mpmath numbers.

    ``float(v)`` and ``isinstance(v, float)`` behave as in the float run; only an identity test
    such as ``type(v) is float`` can tell the difference.
    """

    def __new__(cls, x: object = 0.0) -> Any:  # type: ignore[misc]
        return mpmath.mpf(x) if _is_mp(x) else float(x)  # type: ignore[arg-type]


BUILTIN_SHIMS: dict[str, object] = {"float": MpFloat}


# --- rebuilding functions over the shims ---------------------------------------------------------


def _global_names(code: types.CodeType) -> set[str]:
    """Every global or attribute name a code object (and the code nested in it) refers to."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _is_user_module(module: types.ModuleType) -> bool:
    """A module whose functions may call ``math`` (not the standard library, not mpmath)."""
    root = module.__name__.partition(".")[0]
    return root not in sys.stdlib_module_names and root not in {"mpmath", "builtins"}


class _ModuleProxy(types.ModuleType):
    """A user module seen through the shims: its attributes are converted on access."""

    def __init__(self, original: types.ModuleType, shimmer: _Shimmer) -> None:
        super().__init__(original.__name__, original.__doc__)
        self.__dict__["_adcompile_original"] = original
        self.__dict__["_adcompile_shimmer"] = shimmer

    def __getattr__(self, name: str) -> object:
        value = getattr(self.__dict__["_adcompile_original"], name)
        converted = self.__dict__["_adcompile_shimmer"].value(value)
        self.__dict__[name] = converted
        return converted


@dataclass
class _Namespace:
    """The shimmed copy of one module's globals and the names already converted in it."""

    original: dict[str, object]
    shimmed: dict[str, object]
    converted: set[str] = field(default_factory=set)


class _Shimmer:
    """Converts functions (memoized, so recursion terminates) and the values they reach."""

    def __init__(self) -> None:
        self._functions: dict[int, tuple[types.FunctionType, types.FunctionType]] = {}
        self._namespaces: dict[int, _Namespace] = {}
        self._modules: dict[int, tuple[types.ModuleType, types.ModuleType]] = {}

    def value(self, value: object) -> object:
        """The stand-in for one value a shimmed function can see (often the value itself)."""
        known = _MATH_OBJECTS.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        if value is math:
            return MATH_SHIM
        if isinstance(value, types.FunctionType):
            return self.function(value)
        if isinstance(value, types.ModuleType) and _is_user_module(value):
            return self._module(value)
        return value

    def function(self, fn: types.FunctionType) -> types.FunctionType:
        """``fn`` rebuilt over shimmed globals and closure cells."""
        memo = self._functions.get(id(fn))
        if memo is not None and memo[0] is fn:
            return memo[1]
        namespace = self._namespace(fn.__globals__)
        cells = tuple(types.CellType() for _ in fn.__code__.co_freevars)
        defaults = None if fn.__defaults__ is None else tuple(map(self.value, fn.__defaults__))
        shimmed = types.FunctionType(
            fn.__code__, namespace.shimmed, fn.__name__, defaults, cells or None
        )
        shimmed.__qualname__ = fn.__qualname__
        shimmed.__module__ = fn.__module__
        if fn.__kwdefaults__ is not None:
            shimmed.__kwdefaults__ = {k: self.value(v) for k, v in fn.__kwdefaults__.items()}
        self._functions[id(fn)] = (fn, shimmed)
        # Filled only after memoizing: a helper reached from here may call fn back.
        for cell, original in zip(cells, fn.__closure__ or (), strict=True):
            try:
                contents = original.cell_contents
            except ValueError:  # an empty cell: the variable is not bound yet
                continue
            cell.cell_contents = self.value(contents)
        self._convert_names(namespace, _global_names(fn.__code__))
        return shimmed

    def _namespace(self, globals_: dict[str, object]) -> _Namespace:
        found = self._namespaces.get(id(globals_))
        if found is None or found.original is not globals_:
            found = _Namespace(globals_, dict(globals_))
            self._namespaces[id(globals_)] = found
        return found

    def _convert_names(self, namespace: _Namespace, names: set[str]) -> None:
        for name in sorted(names - namespace.converted):
            namespace.converted.add(name)
            if name in namespace.original:
                namespace.shimmed[name] = self.value(namespace.original[name])
            elif name in BUILTIN_SHIMS:
                namespace.shimmed[name] = BUILTIN_SHIMS[name]

    def _module(self, module: types.ModuleType) -> types.ModuleType:
        memo = self._modules.get(id(module))
        if memo is None or memo[0] is not module:
            memo = (module, _ModuleProxy(module, self))
            self._modules[id(module)] = memo
        return memo[1]


def mp_function(fn: Callable[..., Any]) -> types.FunctionType:
    """A version of the Python function ``fn`` that computes with mpmath numbers."""
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"mp_function needs a Python function (def or lambda), not {fn!r}")
    return _Shimmer().function(fn)


# --- the reference gradient ---------------------------------------------------------------------


def positional_params(fn: Callable[..., Any]) -> list[str]:
    """The names of ``fn``'s positional parameters, in order."""
    return [
        p.name
        for p in inspect.signature(fn).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]


def complete_point(fn: Callable[..., Any], point: Mapping[str, object]) -> dict[str, object]:
    """``point`` in parameter order, with defaults filled in; ValueError on unknown names."""
    params = inspect.signature(fn).parameters
    names = positional_params(fn)
    unknown = sorted(set(point) - set(names))
    if unknown:
        raise ValueError(f"the point {dict(point)} names unknown parameters {unknown}")
    full: dict[str, object] = {}
    for name in names:
        if name in point:
            full[name] = point[name]
        elif params[name].default is not inspect.Parameter.empty:
            full[name] = params[name].default
        else:
            raise ValueError(f"the point {dict(point)} gives no value for {name!r}")
    return full


def _check_perturbable(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, _SCALARS):
        raise TypeError(
            f"cannot differentiate with respect to {name}={value!r}: only real scalar "
            "parameters can be perturbed (leave tuples, flags and counts out of wrt)"
        )


def _partial(
    shimmed: types.FunctionType, args: dict[str, object], name: str
) -> Callable[[Any], Any]:
    """The shimmed primal as a function of the parameter ``name`` alone.

    The other float parameters become mpmath numbers too: held as floats, a path that picks
    one (``max(y, x)`` on a side of a tie) computes in float, and its rounding divided by
    mpmath's tiny step gave derivatives of 1e28. Where mpmath numbers cannot go (``//``),
    the floats stay as they were."""
    names = list(args)
    index = names.index(name)
    values = list(args.values())
    exact = [mpmath.mpf(v) if type(v) is float else v for v in values]
    converted = any(type(v) is float for i, v in enumerate(values) if i != index)

    def along(t: Any) -> Any:
        call = exact.copy()
        call[index] = t
        try:
            return shimmed(*call)
        except TypeError:
            if not converted:
                raise
        call = values.copy()
        call[index] = t
        return shimmed(*call)

    return along


def _as_real(name: str, derivative: object) -> float:
    if isinstance(derivative, mpmath.mpc):
        raise ValueError(f"the derivative with respect to {name} is not real: {derivative}")
    return float(derivative)  # type: ignore[arg-type]


def _shimmed_gradient(
    shimmed: types.FunctionType, args: dict[str, object], wrt: Sequence[str], dps: int
) -> dict[str, float]:
    result: dict[str, float] = {}
    with mpmath.workdps(dps):
        for name in wrt:
            if name not in args:
                raise ValueError(f"{name!r} is not a parameter; parameters are {list(args)}")
            _check_perturbable(name, args[name])
            try:
                at = mpmath.mpf(args[name])
                derivative = mpmath.diff(
                    _partial(shimmed, args, name), at, addprec=_extra_precision(at)
                )
            except Exception as exc:
                exc.add_note(f"(computing the mpmath reference d/d{name} at {args})")
                raise
            result[name] = _as_real(name, derivative)
    return result


def one_sided_partials(
    fn: Callable[..., Any], point: Mapping[str, object], name: str, dps: int = DEFAULT_DPS
) -> tuple[float, float]:
    """The left and the right derivative of ``fn`` along ``name`` at ``point`` (mpmath
    one-sided differences): on a kink, a tie of ``min``/``max`` or a branch boundary they
    differ, and the central difference of ``reference_gradient_mp`` is neither."""
    args = complete_point(fn, point)
    _check_perturbable(name, args[name])
    along = _partial(mp_function(fn), args, name)
    with mpmath.workdps(dps):
        at = mpmath.mpf(args[name])
        sides = [
            mpmath.diff(along, at, direction=side, addprec=_extra_precision(at)) for side in (-1, 1)
        ]
    left, right = (_as_real(name, side) for side in sides)
    return left, right


def reference_gradient_mp(
    fn: Callable[..., Any],
    point: Mapping[str, object],
    wrt: Sequence[str],
    dps: int = DEFAULT_DPS,
) -> dict[str, float]:
    """The partials of ``fn`` at ``point`` with respect to the names in ``wrt``, via mpmath.

    Each partial is ``mpmath.diff`` of the mpmath version of ``fn`` (``mp_function``) along one
    parameter, the others held at their values: ints stay ints, tuples stay tuples, floats
    become mpmath numbers (see ``_partial``). ``mpmath.diff`` evaluates at about
    ``2 * (dps + 6)`` digits with a step of about ``10 ** -(dps + 3)``, so points need only
    be farther than that from a kink (beyond 1 in size, with as many more digits as the
    point has before its point, and a smaller step).
    """
    args = complete_point(fn, point)
    return _shimmed_gradient(mp_function(fn), args, list(wrt), dps)


def reference_hessian_mp(
    fn: Callable[..., Any],
    point: Mapping[str, object],
    wrt: Sequence[str],
    dps: int = DEFAULT_DPS,
) -> list[list[float]]:
    """The second partials ``d2 fn / d a d b`` for ``a``, ``b`` in ``wrt``, via mpmath."""
    args = complete_point(fn, point)
    shimmed = mp_function(fn)
    names = list(args)
    hessian: list[list[float]] = []
    with mpmath.workdps(dps):
        for a in wrt:
            row = []
            for b in wrt:
                _check_perturbable(a, args[a])
                _check_perturbable(b, args[b])
                row.append(_as_real(f"{a},{b}", _second_partial(shimmed, args, names, a, b)))
            hessian.append(row)
    return hessian


def _second_partial(
    shimmed: types.FunctionType, args: dict[str, object], names: list[str], a: str, b: str
) -> Any:
    if a == b:
        at = mpmath.mpf(args[a])
        return mpmath.diff(_partial(shimmed, args, a), at, 2, addprec=_extra_precision(at))

    def along(u: Any, v: Any) -> Any:
        call = dict(args)
        call[a], call[b] = u, v
        return shimmed(*(call[n] for n in names))

    at = (mpmath.mpf(args[a]), mpmath.mpf(args[b]))
    return mpmath.diff(along, at, (1, 1), addprec=_extra_precision(*at))


def _extra_precision(*at: Any) -> int:
    """mpmath.diff's ``addprec`` (10 by default) raised by the point's magnitude: its step,
    2 ** -(precision + addprec), vanished beside a large x (x + h == x at 1e50, and the
    derivative with it); the working precision grows with addprec, so x + h is exact."""
    return 10 + max([0, *(int(mpmath.mag(v)) for v in at if v and mpmath.isfinite(v))])


# --- comparing a compiled gradient with the reference ------------------------------------------


def resolve_wrt(params: Sequence[str], wrt: Wrt, function_name: str) -> tuple[list[str], bool]:
    """``wrt`` as ``adcompile.grad`` reads it: (parameter names, whether the partial is bare)."""
    from .api import resolve_wrt as resolve  # the one reading of wrt (NumPy ints included)

    choice = resolve(list(params), wrt, function_name)
    return list(choice.names), choice.bare


def compare_with_mp(
    fn: Callable[..., Any],
    points: Iterable[Mapping[str, object]],
    wrt: Wrt = None,
    rtol: float = 1e-8,
    atol: float = 1e-10,
    *,
    gradient: Callable[..., Any] | None = None,
    dps: int = DEFAULT_DPS,
) -> CheckReport:
    """Compare ``gradient`` (default ``adcompile.grad(fn, wrt=wrt)``) with the mpmath reference."""
    require_point_list(points)
    names, bare = resolve_wrt(positional_params(fn), wrt, fn.__name__)
    if gradient is None:
        import adcompile  # looked up at call time: the reference never needs the compiler

        gradient = adcompile.grad(fn, wrt=wrt)
    shimmed = mp_function(fn)
    report = CheckReport(fn.__name__, rtol, atol, reference="the mpmath reference")
    for point in points:
        args = complete_point(fn, point)
        got = as_tuple(gradient(*args.values()), bare, len(names))
        expected = _shimmed_gradient(shimmed, args, names, dps)
        for name, value in zip(names, got, strict=True):
            ok = agrees(expected[name], value, rtol, atol)
            report.rows.append(CheckRow(name, dict(point), expected[name], value, ok))
    return report


def assert_grad_matches_mp(
    fn: Callable[..., Any],
    points: Iterable[Mapping[str, object]],
    wrt: Wrt = None,
    rtol: float = 1e-8,
    atol: float = 1e-10,
    *,
    gradient: Callable[..., Any] | None = None,
    dps: int = DEFAULT_DPS,
) -> CheckReport:
    """Raise AssertionError with a table unless the compiled gradient matches mpmath."""
    report = compare_with_mp(fn, points, wrt, rtol, atol, gradient=gradient, dps=dps)
    if not report.ok:
        raise AssertionError(report.table())
    return report
