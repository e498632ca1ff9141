"""The smallest example: the derivative of x * x is 2x."""

from adcompile import grad


def square(x):
    return x * x


if __name__ == "__main__":
    d_square = grad(square)
    for x in (1.0, 2.5, -3.0):
        print(f"d/dx (x * x) at x = {x}: {d_square(x)}")
    print()
    print(d_square.source)
