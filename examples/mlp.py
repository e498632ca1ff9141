"""Train a tiny neural network with gradients that adcompile writes as plain NumPy code.

The model is a multi-layer perceptron (MLP) with one hidden layer of tanh units. It learns a
noisy 2-D function, y = sin(1.5 x0) cos(x1) + noise, by plain gradient descent: every step
asks ``loss_grad`` (generated once by ``adcompile.grad``) for the slope of the loss with
respect to each weight, then moves every weight a little downhill.

Run it from the repository root::

    python examples/mlp.py                  # train, print the loss and the generated code
    python examples/mlp.py --plot loss.png  # also save the loss curve (needs matplotlib)
"""

import argparse

import numpy as np

from adcompile import grad

NOISE = 0.1  # standard deviation of the noise added to the targets


def make_data(seed=0, n=200):
    """Inputs X (n, 2) in [-2, 2]^2 and noisy targets y (n,)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, size=(n, 2))
    y = np.sin(1.5 * X[:, 0]) * np.cos(X[:, 1]) + NOISE * rng.standard_normal(n)
    return X, y


def init_params(seed=1, hidden=16):
    """Random first-layer weights, a small output layer, zero biases."""
    rng = np.random.default_rng(seed)
    return {
        "W1": rng.standard_normal((2, hidden)),  # input -> hidden
        "b1": np.zeros(hidden),
        "W2": rng.standard_normal(hidden) / np.sqrt(hidden),  # hidden -> output
        "b2": np.zeros(1),
    }


def loss(params, X, y):
    # Forward pass: one row of X per example, so the batch is handled by matrix products.
    hidden = np.tanh(X @ params["W1"] + params["b1"])  # (n, hidden)
    prediction = hidden @ params["W2"] + params["b2"]  # (n,)
    # Mean squared error over the batch.
    return np.mean((prediction - y) ** 2)


# Differentiate with respect to argument 0 (params). The result is an ordinary Python
# function: loss_grad(params, X, y) returns a dict shaped like params, one gradient per weight.
loss_grad = grad(loss, wrt=0)


def train(params, X, y, steps, learning_rate, every):
    """Plain gradient descent; returns the final params and the loss before every step."""
    history = []
    for step in range(steps + 1):
        history.append(float(loss(params, X, y)))
        if step % every == 0:
            print(f"step {step:4d}: loss {history[-1]:.5f}")
        if step == steps:
            break
        gradients = loss_grad(params, X, y)
        # Move every weight against its gradient (downhill).
        params = {name: value - learning_rate * gradients[name] for name, value in params.items()}
    return params, history


def save_plot(history, path):
    """Save the loss curve as a PNG if matplotlib is installed (it is optional)."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # draw to a file, no window
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"matplotlib is not installed: no plot written to {path}")
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.semilogy(history)
    ax.set_xlabel("gradient descent step")
    ax.set_ylabel("mean squared error")
    ax.set_title("Tiny MLP trained with adcompile gradients")
    fig.savefig(path, dpi=100, bbox_inches="tight")
    print(f"loss curve saved to {path}")


def main():
    parser = argparse.ArgumentParser(description="Train a tiny MLP with adcompile.grad.")
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--lr", type=float, default=0.1, help="learning rate")
    parser.add_argument("--plot", metavar="PATH", help="save the loss curve to this PNG")
    args = parser.parse_args()

    X, y = make_data()
    print(f"{len(y)} examples; predicting the mean everywhere gives loss {np.var(y):.5f},")
    print(f"the noise alone gives about {NOISE**2:.5f}")
    params, history = train(init_params(), X, y, args.steps, args.lr, every=50)
    print(f"loss fell from {history[0]:.5f} to {history[-1]:.5f}")
    # A fair test of what it learnt: fresh examples it never trained on.
    X_new, y_new = make_data(seed=2)
    print(f"on {len(y_new)} new examples the loss is {loss(params, X_new, y_new):.5f}")

    # The gradient is generated code: print its main function (the module it comes from
    # also defines small NumPy helpers such as unbroadcast; see loss_grad.source for all).
    lines = loss_grad.source.splitlines()
    header = f"def {loss_grad.__name__}("
    start = next((i for i, line in enumerate(lines) if line.startswith(header)), 0)
    print(f"\nThe generated gradient, from line {start + 1} of {len(lines)}:\n")
    print("\n".join(lines[start:]))

    if args.plot:
        save_plot(history, args.plot)


if __name__ == "__main__":
    main()
