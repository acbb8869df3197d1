"""remd: long-term memory for LLM agents in one SQLite file."""

from remd.config import Config, load_config
from remd.errors import (
    ConfigError,
    Conflict,
    DatabaseLocked,
    InvalidInput,
    LLMError,
    NotFound,
    RemdError,
    RollbackRefused,
    SchemaVersionError,
    StoreError,
)
from remd.memory import Memory
from remd.models import Edge, EdgeType, Node, NodeKind, NodeStatus, Stats

__all__ = [
    "Config",
    "ConfigError",
    "Conflict",
    "DatabaseLocked",
    "Edge",
    "EdgeType",
    "InvalidInput",
    "LLMError",
    "Memory",
    "Node",
    "NodeKind",
    "NodeStatus",
    "NotFound",
    "RemdError",
    "RollbackRefused",
    "SchemaVersionError",
    "Stats",
    "StoreError",
    "load_config",
]
