"""Rules for the elementary functions of the ``math`` module.

Where the derivative can be written through the primal's value, the rule reuses ``result``
instead of calling the function again (``exp``, ``tanh``, ``sqrt``, ``hypot``, ``tan``).
"""

import math

from .registry import rule


@rule(math.sin)
def sin(x, result, g):
    return g * math.cos(x)


@rule(math.cos)
def cos(x, result, g):
    return -g * math.sin(x)


@rule(math.tan)
def tan(x, result, g):
    return g * (1.0 + result * result)


@rule(math.asin)
def asin(x, result, g):
    # (1 - x)(1 + x), not 1 - x * x: that cancels near |x| = 1 (6 digits lost at 1 - 1e-8)
    return g / math.sqrt((1.0 - x) * (1.0 + x))


@rule(math.acos)
def acos(x, result, g):
    return -g / math.sqrt((1.0 - x) * (1.0 + x))  # as asin: no cancellation near |x| = 1


@rule(math.atan)
def atan(x, result, g):
    return g / (1.0 + x * x)


@rule(math.atan2)
def atan2(y, x, result, g):
    # Over r = hypot(x, y) twice: x * x + y * y underflows to 0 near 1e-160 and overflows
    # near 1e154, where the partials are still ordinary numbers.
    r = math.hypot(x, y)
    return g * (x / r) / r, -g * (y / r) / r


@rule(math.sinh)
def sinh(x, result, g):
    return g * math.cosh(x)


@rule(math.cosh)
def cosh(x, result, g):
    return g * math.sinh(x)


@rule(math.tanh)
def tanh(x, result, g):
    return g * (1.0 - result * result)


@rule(math.asinh)
def asinh(x, result, g):
    return g / math.hypot(x, 1.0)  # sqrt(x * x + 1), without overflow beyond 1e154


@rule(math.acosh)
def acosh(x, result, g):
    # sqrt(x * x - 1) without overflow beyond 1e154, and without cancellation near 1
    return g / (math.sqrt(x - 1.0) * math.sqrt(x + 1.0))


@rule(math.atanh)
def atanh(x, result, g):
    return g / ((1.0 - x) * (1.0 + x))  # as asin: no cancellation near |x| = 1


@rule(math.exp)
def exp(x, result, g):
    return g * result


@rule(math.expm1)
def expm1(x, result, g):
    # Not `result + 1.0`: for x below about -20 that cancels to 0 (expm1 is for precision).
    return g * math.exp(x)


@rule(math.log)
def log(x, result, g):
    return g / x


@rule(math.log)
def log_base(x, base, result, g):
    return g / (x * math.log(base)), -g * result / (base * math.log(base))


@rule(math.log1p)
def log1p(x, result, g):
    return g / (1.0 + x)


@rule(math.log2)
def log2(x, result, g):
    return g / (x * math.log(2.0))


@rule(math.log10)
def log10(x, result, g):
    return g / (x * math.log(10.0))


@rule(math.sqrt)
def sqrt(x, result, g):
    return g / (2.0 * result)


@rule(math.hypot)
def hypot(x, y, result, g):
    return g * (x / result), g * (y / result)  # x / result <= 1: no overflow


@rule(math.erf)
def erf(x, result, g):
    return g * (2.0 / math.sqrt(math.pi)) * math.exp(-x * x)


@rule(math.erfc)
def erfc(x, result, g):
    return -g * (2.0 / math.sqrt(math.pi)) * math.exp(-x * x)


@rule(math.radians)
def radians(x, result, g):
    return g * (math.pi / 180.0)  # the factor math.radians multiplies by


@rule(math.degrees)
def degrees(x, result, g):
    return g * (180.0 / math.pi)
