"""Derivative rules: built-in templates by domain, and the table that holds them."""

from . import arithmetic, elementary  # noqa: F401 -- importing registers the rules
from .registry import BUILTIN_RULES, Rule, RuleError, RuleTable, active_rules, rule

__all__ = ["BUILTIN_RULES", "Rule", "RuleError", "RuleTable", "active_rules", "rule"]
