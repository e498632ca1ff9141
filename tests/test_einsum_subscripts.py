"""np.einsum's subscripts as the compiler reads them (``adcompile/einsum.py``), against NumPy.

The adjoints built from them are checked in ``test_array_rules.py`` (finite differences and
SymPy); here the reading itself: the implicit output NumPy gives, and refusing exactly the
subscripts NumPy refuses.
"""

from __future__ import annotations

import numpy as np
import pytest

from adcompile.einsum import (
    ELLIPSIS,
    Adjoint,
    EinsumError,
    adjoint_subscripts,
    parse_subscripts,
)

# Each label its own length, so that a result's shape tells the labels apart.
LENGTHS = {label: 2 + k for k, label in enumerate("ijklabBcA")}
STACK = (7,)  # the axes '...' stands for


def operands(spec: str) -> list[np.ndarray]:
    """Arrays whose shapes fit the input terms of ``spec``."""
    terms = spec.replace(" ", "").split("->")[0].split(",")
    shapes = []
    for term in terms:
        head, dots, tail = term.partition(ELLIPSIS)
        shapes.append(
            tuple(LENGTHS[c] for c in head)
            + (STACK if dots else ())
            + tuple(LENGTHS[c] for c in tail)
        )
    return [np.ones(shape) for shape in shapes]


def shape_of(labels: tuple[str, ...]) -> tuple[int, ...]:
    """The shape a tuple of labels stands for."""
    return sum((STACK if label == ELLIPSIS else (LENGTHS[label],) for label in labels), ())


IMPLICIT = ["ba", "aBc", "b...a", "ij,jk", "i,i", "...j,j", "ii", "iij", "ij,jk,kl", "Ab,bA"]


@pytest.mark.parametrize("spec", IMPLICIT)
def test_implicit_output_is_numpys(spec: str) -> None:
    arrays = operands(spec)
    parsed = parse_subscripts(spec, len(arrays))
    assert shape_of(parsed.output) == np.shape(np.einsum(spec, *arrays))


@pytest.mark.parametrize(
    ("spec", "count"),
    [
        ("ij->k", 1),  # an output label in no operand
        ("i->ii", 1),  # an output label twice
        ("i1", 1),  # not a letter
        ("i.->i", 1),
        ("i......", 1),  # '...' twice
        ("i->i->i", 1),
        ("ij,jk->ik", 1),  # two terms, one operand
        ("i", 2),
        ("...->", 1),  # the operands' '...' left out of the output
        ("...i->i", 1),
    ],
)
def test_refused_where_numpy_refuses(spec: str, count: int) -> None:
    arrays = [np.ones((2,) * max(1, len(spec.split(",")[0].split("-")[0]))) for _ in range(count)]
    with pytest.raises(ValueError):
        np.einsum(spec, *arrays)
    with pytest.raises(EinsumError):
        parse_subscripts(spec, count)


def test_spaces_are_ignored_as_numpy_does() -> None:
    parsed = parse_subscripts(" ij , jk -> ik ", 2)
    assert parsed.inputs == (("i", "j"), ("j", "k")) and parsed.output == ("i", "k")
    assert np.einsum(" ij , jk -> ik ", np.ones((2, 3)), np.ones((3, 4))).shape == (2, 4)


def test_a_diagonal_gets_the_next_letter() -> None:
    # What the generated code shows for a trace: g times the identity, as written by hand.
    assert adjoint_subscripts(parse_subscripts("ii->", 1), 0) == Adjoint(None, "ii", ",ij->ij")
    assert adjoint_subscripts(parse_subscripts("ij->j", 1), 0) == Adjoint(None, True, "j,ij->ij")
    assert adjoint_subscripts(parse_subscripts("ij,jk->ik", 2), 0) == Adjoint("ik,jk->ij")


def test_an_adjoint_has_no_more_operands_than_the_call() -> None:
    # The fill is spread over in an einsum of its own, so hessian needs no 4-operand rule.
    adjoint = adjoint_subscripts(parse_subscripts("ij,j,j->", 3), 0)
    assert adjoint == Adjoint(",j,j->j", True, "j,ij->ij")


def test_ellipsis_after_labels_is_moved_first_where_stacks_may_broadcast() -> None:
    # "i..." against another operand's "...": computed as "...i", then moved back.
    adjoint = adjoint_subscripts(parse_subscripts("i...j,...j->i...", 2), 0)
    assert adjoint == Adjoint("i...,...j->...ij", None, None, (0,), (-2,))
    # Only this operand has '...': g's stack is its own, nothing to move.
    assert adjoint_subscripts(parse_subscripts("i,j...->j...", 2), 1) == Adjoint("j...,i->j...")
