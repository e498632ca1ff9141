"""``np.einsum``'s subscripts, read when the gradient is compiled, and those of its adjoints.

``np.einsum("ij,jk->ik", A, B)`` is linear in each operand, so each operand's adjoint is an
einsum too: of the incoming adjoint ``g`` (labelled like the output) and the other operands,
with the operand's own labels as the output: ``np.einsum("ik,jk->ij", g, B)`` for ``A``.
Three cases need more than that, and ``adjoint_subscripts`` says which with a *fill*:

- a label that only the operand has (``"ij->i"``: ``j`` is summed in ``A`` alone): nothing
  else has that axis, so ``np.ones_like(A)`` (labelled like ``A``) is added as an operand,
  and the adjoint is ``g`` spread along it;
- a label repeated in the operand (``"ii->"``, a trace; ``"ii->i"``, a diagonal): the
  adjoint lands on the diagonal only. Its repeats get fresh letters in the adjoint's output
  (``"ij"``) and ``diagonal_ones(A, "ii")`` (ones where the repeated labels agree, labelled
  ``"ij"``) is added as an operand;
- ``...`` in the other operands or the output but not in this operand: its axes are kept in
  front of the adjoint (``"...ij"``) and summed away by ``unbroadcast``.

Broadcasting (``...`` of different lengths, or an axis of length 1 against a longer one,
which NumPy's einsum allows for labels too) is undone by ``unbroadcast``, which the rule
applies to every adjoint of a call with several operands.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

ELLIPSIS = "..."
LETTERS = string.ascii_letters


class EinsumError(ValueError):
    """Subscripts that NumPy would refuse, or a form whose derivative is not supported."""


@dataclass(frozen=True)
class Subscripts:
    """Parsed subscripts: one label per axis of each operand (``...`` as one label)."""

    inputs: tuple[tuple[str, ...], ...]
    output: tuple[str, ...]


def parse_subscripts(text: str, operands: int) -> Subscripts:
    """Read einsum subscripts as NumPy does (spaces ignored; implicit output when no ``->``)."""
    compact = text.replace(" ", "")
    if compact.count("->") > 1:
        raise EinsumError(f"the subscripts {text!r} have more than one '->'")
    left, arrow, right = compact.partition("->")
    terms = left.split(",")
    if len(terms) != operands:
        raise EinsumError(
            f"the subscripts {text!r} name {len(terms)} operand(s), the call passes {operands}"
        )
    inputs = tuple(_labels(term, text) for term in terms)
    output = _labels(right, text) if arrow else _implicit_output(inputs)
    letters = {label for term in inputs for label in term}
    for label in output:
        if label != ELLIPSIS and label not in letters:
            raise EinsumError(f"the output label {label!r} of {text!r} is in no operand")
        if output.count(label) > 1:
            raise EinsumError(f"the output of {text!r} has the label {label!r} twice")
    return Subscripts(inputs, output)


def _labels(term: str, text: str) -> tuple[str, ...]:
    """The labels of one term: letters, and at most one ``...``."""
    head, dots, tail = term.partition(ELLIPSIS)
    if ELLIPSIS in tail:
        raise EinsumError(f"a term of {text!r} has '...' twice")
    for char in head + tail:
        if char not in LETTERS:
            raise EinsumError(f"{char!r} in {text!r} is not a label (labels are letters)")
    return (*head, *([ELLIPSIS] if dots else []), *tail)


def _implicit_output(inputs: tuple[tuple[str, ...], ...]) -> tuple[str, ...]:
    """NumPy's output without ``->``: ``...`` if any operand has it, then the letters used
    once, in alphabetical (ASCII) order."""
    labels = [label for term in inputs for label in term if label != ELLIPSIS]
    once = sorted(label for label in set(labels) if labels.count(label) == 1)
    ellipsis = any(ELLIPSIS in term for term in inputs)
    return (*([ELLIPSIS] if ellipsis else []), *once)


def _text(labels: tuple[str, ...] | list[str]) -> str:
    return "".join(labels)


def check_derivative_form(subscripts: Subscripts) -> None:
    """Raise for the forms whose adjoint is not supported: ``...`` after a label in an
    operand (``"i...,i...->..."``) when another operand has ``...`` too. Its adjoint would
    have to sum broadcast axes in the middle of the operand's axes."""
    with_ellipsis = [term for term in subscripts.inputs if ELLIPSIS in term]
    if len(with_ellipsis) < 2:
        return
    for term in with_ellipsis:
        if term[0] != ELLIPSIS:
            raise EinsumError(
                f"'...' after a label in the operand subscripts {_text(term)!r}, with '...' "
                "in another operand too, has no derivative here; put '...' first in each "
                "operand's subscripts (move the axes first, e.g. np.moveaxis(x, 0, -1) "
                "with '...i' for 'i...')"
            )


def _letters(subscripts: Subscripts) -> set[str]:
    return {label for term in (*subscripts.inputs, subscripts.output) for label in term}


def adjoint_subscripts(subscripts: Subscripts, k: int) -> tuple[str, bool | str | None]:
    """The subscripts of operand ``k``'s adjoint, whose operands are ``g``, the other
    operands in order and, where needed, a fill (see the module docstring): None for none,
    True for ``np.ones_like(operand)``, or the operand's subscripts (``"ii"``) for
    ``diagonal_ones(operand, "ii")``."""
    own = subscripts.inputs[k]
    others = [term for j, term in enumerate(subscripts.inputs) if j != k]
    terms = [subscripts.output, *others]
    used = _letters(subscripts)
    target: list[str] = []
    for label in own:  # a repeated label gets a fresh letter: the diagonal's other axis
        if label in target:
            fresh = _spare_letter(label, used)
            used.add(fresh)
            target.append(fresh)
        else:
            target.append(label)
    fill: bool | str | None = None
    if len(target) != len(set(own)):
        fill = _text(own)
        terms.append(tuple(target))
    elif not _covered(own, subscripts.output, others):
        fill = True
        terms.append(own)
    if ELLIPSIS not in own and any(ELLIPSIS in term for term in terms):
        target.insert(0, ELLIPSIS)  # summed away by unbroadcast
    return f"{','.join(_text(term) for term in terms)}->{_text(target)}", fill


def _spare_letter(label: str, used: set[str]) -> str:
    """A letter not in ``used``: the next ones after ``label`` first (``"ii"`` gives
    ``"ij"``, as one would write it by hand), then any other."""
    start = LETTERS.index(label)
    for letter in LETTERS[start + 1 :] + LETTERS[:start]:
        if letter not in used:
            return letter
    raise EinsumError("no letter is left for the adjoint's subscripts (52 are in use)")


def _covered(own: tuple[str, ...], output: tuple[str, ...], others: list[tuple[str, ...]]) -> bool:
    """True if ``g`` and the other operands have every axis of the operand. ``...`` counts
    only in the output: another operand's ``...`` may be shorter than this one's."""
    available = set(output).union(*others)
    return all(label in output if label == ELLIPSIS else label in available for label in own)
