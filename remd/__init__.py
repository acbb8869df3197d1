"""remd: long-term memory for LLM agents in one SQLite file."""

from remd.async_memory import AsyncMemory
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
from remd.models import Edge, EdgeType, Node, NodeKind, NodeStatus, Stats, TriggerReason
from remd.query.feedback import FeedbackResult
from remd.query.pack import Pack, PackItem, ScoreParts
from remd.reembedding import Reembedded, reembed
from remd.sleep.rem import ClusterOutcome
from remd.sleep.remruns import RemRun, RunStatus
from remd.sleep.rollback import RollbackResult
from remd.sleep.triggers import TriggerCheck, TriggerReport
from remd.store import BackupReport, CheckReport, Copy, backup_file, check_backup

__all__ = [
    "AsyncMemory",
    "BackupReport",
    "CheckReport",
    "ClusterOutcome",
    "Config",
    "ConfigError",
    "Conflict",
    "Copy",
    "DatabaseLocked",
    "FeedbackResult",
    "Edge",
    "EdgeType",
    "InvalidInput",
    "LLMError",
    "Memory",
    "Node",
    "NodeKind",
    "NodeStatus",
    "NotFound",
    "Pack",
    "PackItem",
    "Reembedded",
    "RemRun",
    "RemdError",
    "RollbackRefused",
    "RollbackResult",
    "RunStatus",
    "SchemaVersionError",
    "ScoreParts",
    "Stats",
    "StoreError",
    "TriggerCheck",
    "TriggerReason",
    "TriggerReport",
    "backup_file",
    "check_backup",
    "load_config",
    "reembed",
]
