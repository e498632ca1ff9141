"""``np.einsum``'s subscripts, read when the gradient is compiled, and those of its adjoints.

``np.einsum("ij,jk->ik", A, B)`` is linear in each operand, so each operand's adjoint is an
einsum too: of the incoming adjoint ``g`` (labelled like the output) and the other operands,
with the operand's own labels as the output: ``np.einsum("ik,jk->ij", g, B)`` for ``A``.
Three cases need more than that, and ``adjoint_subscripts`` says which (``Adjoint``):

- a label that only the operand has (``"ij->i"``: ``j`` is summed in ``A`` alone): nothing
  else has that axis, so the einsum gives the adjoint without it (``"i"``), and a second
  einsum spreads that over ``np.ones_like(A)`` (``"i,ij->ij"``);
- a label repeated in the operand (``"ii->"``, a trace; ``"ii->i"``, a diagonal): the
  adjoint lands on the diagonal only. Its repeats get fresh letters in the adjoint's output
  (``"ij"``), and the second einsum multiplies by ``diagonal_ones(A, "ii")`` (ones where
  the repeated labels agree, labelled ``"ij"``). So an adjoint never has more operands
  than the call, and the same rules differentiate it again (hessian, and beyond);
- ``...`` in the other operands or the output but not in this operand: its axes are kept in
  front of the adjoint (``"...ij"``) and summed away by ``unbroadcast``. An operand with
  ``...`` after labels (``"i...j"``) while another operand has ``...`` too gets its adjoint
  with ``...`` first (``"...ij"``) likewise, moved back to its order by ``np.moveaxis``.

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
    if ELLIPSIS in letters and ELLIPSIS not in output:  # NumPy refuses it once '...' is an axis
        raise EinsumError(
            f"the output of {text!r} leaves out the '...' of its operands, which NumPy does "
            "not sum: write '...' in the output and sum the result"
        )
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


def _letters(subscripts: Subscripts) -> set[str]:
    return {label for term in (*subscripts.inputs, subscripts.output) for label in term}


@dataclass(frozen=True)
class Adjoint:
    """How operand ``k``'s adjoint is built (the rule's static arguments ``to_a``...).

    ``to``: the subscripts of an einsum of ``g`` and the other operands (None: ``g``
    itself). ``fill``: None, True for ``np.ones_like(operand)`` or the operand's subscripts
    for ``diagonal_ones(operand, "ii")``; with a fill, ``spread`` spreads the einsum's
    result over the fill's axes in a second einsum of two operands (so an adjoint never has
    more operands than the call, and hessian differentiates it with the same rules).
    ``front``/``back``: for ``...`` after labels (``"i..."``) with ``...`` in another
    operand, the adjoint is computed with ``...`` first (``"...i"``), so that
    ``unbroadcast`` sums leading axes; ``np.moveaxis`` moves the labels at ``back`` to
    ``front`` (the operand's own order) after it."""

    to: str | None
    fill: bool | str | None = None
    spread: str | None = None
    front: tuple[int, ...] | None = None
    back: tuple[int, ...] | None = None


def adjoint_subscripts(subscripts: Subscripts, k: int) -> Adjoint:
    """How operand ``k``'s adjoint is built (see ``Adjoint`` and the module docstring)."""
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
    broadcast = any(ELLIPSIS in term for term in terms)
    moved = ELLIPSIS in own and own[0] != ELLIPSIS and any(ELLIPSIS in t for t in others)
    front = back = None
    if moved:  # "i...j" as "...ij": unbroadcast sums the leading axes
        p = own.index(ELLIPSIS)
        q = len(own) - p - 1
        front, back = tuple(range(p)), tuple(range(-(p + q), -q))
    layout = _ellipsis_first if moved or (ELLIPSIS not in own and broadcast) else tuple
    inputs = ",".join(_text(term) for term in terms)
    fill: bool | str | None = None
    if len(target) != len(set(own)):
        fill = _text(own)
    elif not _covered(own, subscripts.output, others):
        fill = True
    if fill is None:
        return Adjoint(f"{inputs}->{_text(layout(target))}", None, None, front, back)
    # The labels of the operand that g and the others have, each once, in its order.
    present = set().union(*terms)
    kept = [label for label in dict.fromkeys(own) if label in present]
    if ELLIPSIS not in own and broadcast:
        kept.insert(0, ELLIPSIS)
    reduced = _text(kept)
    to = None if not others and reduced == _text(subscripts.output) else f"{inputs}->{reduced}"
    spread = f"{reduced},{_text(target)}->{_text(layout(target))}"
    return Adjoint(to, fill, spread, front, back)


def adjoint_statics(subscripts: Subscripts) -> dict[str, object]:
    """The static arguments of the operands' adjoints in np.einsum's rule: ``to_a``,
    ``fill_a``, ``spread_a``, ``front_a``, ``back_a`` for the first operand, and so on."""
    statics: dict[str, object] = {}
    for k, operand in enumerate("abc"[: len(subscripts.inputs)]):
        adjoint = adjoint_subscripts(subscripts, k)
        for field in ("to", "fill", "spread", "front", "back"):
            statics[f"{field}_{operand}"] = getattr(adjoint, field)
    return statics


def _ellipsis_first(labels: list[str]) -> tuple[str, ...]:
    return (ELLIPSIS, *(label for label in labels if label != ELLIPSIS))


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
