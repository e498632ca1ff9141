"""Second derivatives by composing transforms: Newton's method for a minimum.

``grad(f)`` and ``grad(grad(f))`` are both generated code; the second is the compiler run on
the first one's source. The Hessian of a two-parameter function comes from forward mode over
the reverse-mode gradient.
"""

import math

from adcompile import grad, hessian


def energy(x):
    return math.cosh(x - 1.0) + 0.5 * x * x


def bowl(x, y):
    return (x - 1.0) ** 2 + 3.0 * (y + 0.5) ** 2 + 0.5 * x * y


if __name__ == "__main__":
    slope, curvature = grad(energy), grad(grad(energy))
    x = 3.0
    for step in range(6):
        x -= slope(x) / curvature(x)
        print(f"step {step + 1}: x = {x:.12f}, energy'(x) = {slope(x):.3e}")
    print()
    print(hessian(bowl)(0.0, 0.0))
    print()
    print(grad(energy, mode="forward").source)
