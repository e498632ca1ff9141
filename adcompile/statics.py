"""Static arguments decided at compile time: ``g if axis is None else ...`` with ``axis=1``.

Array rules test their non-differentiable arguments in the template. When the call passes
literals, the test is evaluated here, so the generated code shows only the branch that applies.
"""

from __future__ import annotations

import ast
import operator

from .astutil import walk

# Tuples for isinstance, as astutil.BLOCK_STATEMENTS explains.
_NOT_NEG = (ast.Not, ast.USub)


def fold_static_tests(expr: ast.expr) -> ast.expr:
    """Choose the branch of each ``a if test else b`` whose test is made of literals only.

    Array rules test their static arguments (``g if axis is None else ...``); with literal
    arguments the generated code shows just the branch that applies.
    """
    if not any(node.__class__ is ast.IfExp for node in walk(expr)):
        return expr
    return _StaticTests().visit(expr)


class _StaticTests(ast.NodeTransformer):
    def visit_IfExp(self, node: ast.IfExp) -> ast.expr:
        node = self.generic_visit(node)
        node.test = _without_literal_operands(node.test)
        decided = literal_truth(node.test)
        if decided is None:
            return node
        return node.body if decided else node.orelse


def _without_literal_operands(test: ast.expr) -> ast.expr:
    """A test's ``and``/``or`` without the literal operands that cannot decide it.

    ``1 is None or keepdims`` (a literal axis, a computed keepdims) is ``keepdims`` as a
    test: only its truth counts, and a template's static arguments are pure reads. Left in,
    ``1 is None`` is also a SyntaxWarning when the generated code is compiled.
    """
    if not isinstance(test, ast.BoolOp):
        return test
    deciding = isinstance(test.op, ast.Or)  # the truth that decides the whole test
    kept = []
    for operand in test.values:
        truth = literal_truth(operand)
        if truth is None:
            kept.append(operand)
        elif truth is deciding:
            return ast.Constant(value=deciding)
    if not kept:
        return ast.Constant(value=not deciding)
    return kept[0] if len(kept) == 1 else ast.BoolOp(op=test.op, values=kept)


_UNDECIDED = object()


def _literal_value(node: ast.expr) -> object:
    """The value of a literal expression (constants, tuples, is/==, and/or/not), or _UNDECIDED."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Tuple):
        items = [_literal_value(e) for e in node.elts]
        return _UNDECIDED if _UNDECIDED in items else tuple(items)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, _NOT_NEG):
        value = _literal_value(node.operand)
        if value is _UNDECIDED:
            return _UNDECIDED
        return not value if isinstance(node.op, ast.Not) else -value
    if isinstance(node, ast.BoolOp):
        values = [_literal_value(v) for v in node.values]
        if _UNDECIDED in values:
            return _UNDECIDED
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = _literal_value(node.left), _literal_value(node.comparators[0])
        if _UNDECIDED in (left, right):
            return _UNDECIDED
        op = _COMPARISONS.get(type(node.ops[0]))
        if op is None or (op in _ORDERINGS and not (_is_number(left) and _is_number(right))):
            return _UNDECIDED
        return op(left, right)
    return _UNDECIDED


_COMPARISONS = {
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_ORDERINGS = (operator.lt, operator.le, operator.gt, operator.ge)


def _is_number(value: object) -> bool:
    return type(value) in (int, float)


def literal_truth(node: ast.expr) -> bool | None:
    """Whether a test made of literals only holds (``2.0 > 0``: True), or None if it reads
    anything else."""
    value = _literal_value(node)
    return None if value is _UNDECIDED else bool(value)


def drop_default_keywords(expr: ast.expr, defaults: dict[str, object]) -> ast.expr:
    """Leave out keyword arguments that pass a static's default: ``np.sum(g, axis=None)``.

    ``defaults`` maps each static parameter's name to its default; a keyword is dropped
    when it has that name and a literal value equal to the default.
    """
    for node in walk(expr):
        if node.__class__ is ast.Call and node.keywords:
            node.keywords = [k for k in node.keywords if not _passes_default(k, defaults)]
    return expr


def _passes_default(keyword: ast.keyword, defaults: dict[str, object]) -> bool:
    if keyword.arg not in defaults:
        return False
    value = _literal_value(keyword.value)
    default = defaults[keyword.arg]
    return value is not _UNDECIDED and type(value) is type(default) and value == default
