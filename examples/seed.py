"""The seed example: why are the gradients 5, 5 and 1?

Run it with ``python examples/seed.py``; ``adcompile dump examples/seed.py:f`` shows the same code.
"""

from adcompile import grad


@grad
def f(x, y, z):
    q = x + y
    return q * z


if __name__ == "__main__":
    print("df/dx, df/dy, df/dz at (4, -3, 5):", f(4.0, -3.0, 5.0))
    print()
    print(f.source)
