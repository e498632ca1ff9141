"""Module-level helpers called by ``tests.corpus.control_flow`` (a second module of the user's).

They use the math module in each spelling (``import math``, ``from math import ...``) so that
a compiler following the call has to resolve names in this module, not the caller's.
"""

import math
from math import exp, tanh

OFFSET = 0.25


def square(t):
    """t squared."""
    return t * t


def sum_of_squares(a, b):
    """A helper calling a helper."""
    return square(a) + square(b)


def smoothstep(t):
    """The cubic smoothstep polynomial (no clamping)."""
    return t * t * (3.0 - 2.0 * t)


def scaled_sin(t, scale=1.0):
    """A default parameter; callers pass it by keyword or not at all."""
    return scale * math.sin(t) + OFFSET


def poly(t, a, b=2.0, c=-1.0):
    """a t^2 + b t + c, with defaults for b and c."""
    return a * t * t + b * t + c


def soft_clip(t, limit):
    """Identity inside [-limit, limit], tanh-saturated outside (control flow in a helper)."""
    if t > limit:
        return limit + tanh(t - limit)
    if t < -limit:
        return -limit + tanh(t + limit)
    return t


def power_n(t, n):
    """t ** n by repeated multiplication; n is a non-differentiated int."""
    p = 1.0
    for _ in range(n):
        p = p * t
    return p


def horner(t, n):
    """Horner evaluation of sum_{i<=n} t^i / (i + 1)."""
    s = 0.0
    for i in range(n, -1, -1):
        s = s * t + 1.0 / (i + 1)
    return s


def gaussian(t, mu, sigma):
    """An unnormalised Gaussian, using ``from math import exp``."""
    z = (t - mu) / sigma
    return exp(-0.5 * z * z)


def relu_squared(t):
    """max(t, 0)^2 with an early return."""
    if t <= 0.0:
        return 0.0
    return t * t


def newton_sqrt(a, iterations):
    """Newton's iteration for sqrt(a), a fixed number of steps from a."""
    x = a
    for _ in range(iterations):
        x = 0.5 * (x + a / x)
    return x


def chain_inner(t):
    """The innermost of three chained helpers."""
    return math.log1p(t * t)


def chain_middle(t):
    """Calls chain_inner."""
    return math.sqrt(chain_inner(t) + 1.0) * t


def chain_outer(t):
    """Calls chain_middle, which calls chain_inner."""
    return math.sin(chain_middle(t)) + chain_inner(t)
