"""The no-loss audit: idempotent and transactional producers under a seeded random fault schedule, then
a read-back that checks every acknowledged record is there exactly once and in order, and that
read_committed consumers see only committed records (``python -m bench.noloss``)."""

from mockbroker.audit.chaos import Chaos, ChaosPlan
from mockbroker.audit.driver import AuditOptions, run_audit
from mockbroker.audit.figures import AuditFigures

__all__ = ["AuditFigures", "AuditOptions", "Chaos", "ChaosPlan", "run_audit"]
