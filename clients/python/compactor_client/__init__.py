"""Python client for the Compactor REST API (standard library only)."""

from . import types
from .client import Compactor, ContextFormat, Policy
from .errors import CompactorApiError

__all__ = ["Compactor", "CompactorApiError", "ContextFormat", "Policy", "types"]
