"""Rules for Python's arithmetic operators and the numeric builtins.

Each rule takes the primal's arguments, the primal's ``result`` and the incoming adjoint ``g``,
and returns the adjoint of each argument. Non-smooth points follow these conventions:
``abs`` has derivative 0 at 0 (like ``sympy.sign`` and PyTorch); ``min``/``max`` send the whole
adjoint to the argument Python returns, and half to each on a tie (as JAX and PyTorch do:
then ``max(x, c) + min(x, c)``, which is ``x + c``, has derivative 1, and ``max(a, a)``'s is
1; a nan goes the way Python's result does); ``//`` is piecewise constant,
so it passes no adjoint back; ``%`` uses ``a % b == a - b * (a // b)`` away from its jumps.
"""

import builtins
import math
import operator

from .registry import rule


@rule(operator.add)
def add(a, b, result, g):
    return g, g


@rule(operator.sub)
def sub(a, b, result, g):
    return g, -g


@rule(operator.mul)
def mul(a, b, result, g):
    return g * b, g * a


@rule(operator.truediv)
def truediv(a, b, result, g):
    # g / b first: g * result overflows where g and a / b are large and the partial is not
    # (this form overflows instead where g / b does, |b| < 1 with g near the float limit).
    return g / b, -(g / b) * result


@rule(operator.floordiv)
def floordiv(a, b, result, g):
    return None, None


@rule(operator.mod)
def mod(a, b, result, g):
    return g, -g * (a // b)


@rule(operator.neg)
def neg(a, result, g):
    return -g


@rule(operator.pos)
def pos(a, result, g):
    return g


@rule(operator.pow)
def power(a, b, result, g):
    # d(a**b)/da is 0 where b == 0 (a**0 is 1 for every a). The general formula gives that 0
    # wherever it can (b * a**-1), so that its derivative in b, the mixed partial 1/a, is kept;
    # only at a == b == 0, where it would raise (0.0 ** -1), is it the constant 0.0.
    # d(a**b)/db = a**b * log(a): 0 at a == 0 (from the right), undefined (nan) for a < 0:
    # `g * result * nan`, so that its derivatives (a Hessian's row) are nan too, as JAX gives,
    # not the 0 of a constant. But a zero g is 0: in forward mode g is b's tangent, zero
    # where b does not vary at run time (an int loop count, a constant branch).
    return (
        g * b * a ** (b - 1) if b != 0 or a != 0 else 0.0,
        g * result * math.log(a) if a > 0 else (0.0 if a == 0 or g == 0 else g * result * math.nan),
    )


rule(builtins.pow)(power)


@rule(math.pow)
def math_power(a, b, result, g):
    # As `**`, but with math.pow: for a negative base and a fractional exponent math.pow
    # raises ValueError (as the function does) where `**` gives a complex number.
    return (
        g * b * math.pow(a, b - 1) if b != 0 or a != 0 else 0.0,
        g * result * math.log(a) if a > 0 else (0.0 if a == 0 or g == 0 else g * result * math.nan),
    )


@rule(builtins.abs)
def absolute(x, result, g):
    return g if x > 0 else (-g if x < 0 else 0.0)


rule(math.fabs)(absolute)


@rule(builtins.max)
def maximum(a, b, result, g):
    # g is read once per partial, so that it is computed only where the partial is not 0.0:
    # max(x, 0.0) under a sqrt must not divide by zero for x < 0.
    return (0.0 if b > a else (0.5 if a == b else 1.0) * g), (
        (0.5 if a == b else 1.0) * g if b >= a else 0.0
    )


@rule(builtins.min)
def minimum(a, b, result, g):
    return (0.0 if b < a else (0.5 if a == b else 1.0) * g), (
        (0.5 if a == b else 1.0) * g if b <= a else 0.0
    )


@rule(builtins.float)
def to_float(x, result, g):
    return g
