"""ACLs and the authorizer: Kafka's StandardAuthorizer semantics over an in-memory ACL store.

Authorization is on when the broker config ``authorizer.class.name`` is non-empty (Kafka's switch,
e.g. ``org.apache.kafka.metadata.authorizer.StandardAuthorizer``); then:

- ``super.users`` (a ``;`` list of principals such as ``User:admin``) may do anything;
- an ACL applies to a resource when its type matches and it is LITERAL with the same name, LITERAL
  ``*`` (any name) or PREFIXED with a prefix of the name; to a principal when it names it or
  ``User:*``; to a host when it names the client's IP or ``*``;
- ALL matches every operation; an ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE, an
  ALLOW of ALTER_CONFIGS also allows DESCRIBE_CONFIGS (DENY ACLs imply nothing);
- any matching DENY wins over every ALLOW; with no matching ALLOW the answer is no, unless the
  resource has no ACLs at all and ``allow.everyone.if.no.acl.found`` is true.

The store answers CreateAcls / DescribeAcls / DeleteAcls with Kafka's validation (INVALID_REQUEST)
and filter semantics (ANY, MATCH, null name/principal/host match everything).  Plain synchronous
Python, no wire types.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from enum import IntEnum
from typing import Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.plain import FrozenSlotted

log = logging.getLogger("mockbroker.acls")

CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
NO_OPERATIONS = -(2**31)  # the schema default for "authorized operations" when not asked


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class PermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


Op = AclOperation
_IMPLIES_DESCRIBE = frozenset((Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER))
_IMPLIES_DESCRIBE_CONFIGS = frozenset((Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS))

# Kafka's AclEntry.supportedOperations: what "authorized operations" reports on, per resource type.
SUPPORTED_OPERATIONS: dict[int, tuple[Op, ...]] = {
    ResourceType.TOPIC: (Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE, Op.ALTER, Op.DESCRIBE_CONFIGS,
                         Op.ALTER_CONFIGS),
    ResourceType.GROUP: (Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    ResourceType.CLUSTER: (Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, Op.IDEMPOTENT_WRITE,
                           Op.ALTER, Op.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (Op.DESCRIBE, Op.WRITE),
    ResourceType.DELEGATION_TOKEN: (Op.DESCRIBE,),
    ResourceType.USER: (Op.CREATE_TOKENS, Op.DESCRIBE_TOKENS),
}


def _name(enum: type[IntEnum], code: int) -> str:
    try:
        return enum(code).name
    except ValueError:
        return str(code)


def operations_bitfield(operations: Iterable[int]) -> int:
    """Kafka's Utils.to32BitField: bit n set for operation code n."""
    bits = 0
    for op in operations:
        bits |= 1 << int(op)
    return bits


class AclBinding(FrozenSlotted):
    """One ACL: a resource pattern and an access control entry."""

    __slots__ = ("host", "operation", "pattern_type", "permission_type", "principal", "resource_name",
                 "resource_type")
    # the fields, for type checkers (annotations without values: the slot layout stays as above)
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    def __init__(self, resource_type: int, resource_name: str, pattern_type: int, principal: str, host: str,
                 operation: int, permission_type: int) -> None:
        for name, value in (("resource_type", resource_type), ("resource_name", resource_name),
                            ("pattern_type", pattern_type), ("principal", principal), ("host", host),
                            ("operation", operation), ("permission_type", permission_type)):
            object.__setattr__(self, name, value)

    def __str__(self) -> str:
        return (f"(pattern=ResourcePattern(resourceType={_name(ResourceType, self.resource_type)}, "
                f"name={self.resource_name}, patternType={_name(PatternType, self.pattern_type)}), "
                f"entry=(principal={self.principal}, host={self.host}, "
                f"operation={_name(AclOperation, self.operation)}, "
                f"permissionType={_name(PermissionType, self.permission_type)}))")


class AclFilter(FrozenSlotted):
    """An ACL binding filter: ANY codes and None strings match everything; pattern type MATCH
    matches every pattern that would apply to the named resource."""

    __slots__ = ("host", "operation", "pattern_type", "permission_type", "principal", "resource_name",
                 "resource_type")
    # the fields, for type checkers (annotations without values: the slot layout stays as above)
    resource_type: int
    resource_name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission_type: int

    def __init__(self, resource_type: int = ResourceType.ANY, resource_name: str | None = None,
                 pattern_type: int = PatternType.ANY, principal: str | None = None, host: str | None = None,
                 operation: int = Op.ANY, permission_type: int = PermissionType.ANY) -> None:
        for name, value in (("resource_type", resource_type), ("resource_name", resource_name),
                            ("pattern_type", pattern_type), ("principal", principal), ("host", host),
                            ("operation", operation), ("permission_type", permission_type)):
            object.__setattr__(self, name, value)

    def check(self) -> None:
        """INVALID_REQUEST for a filter with UNKNOWN (or undefined) codes, as Kafka's controller."""
        if not (_known(ResourceType, self.resource_type) and _known(PatternType, self.pattern_type)):
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Unknown patternFilter.")
        if not (_known(Op, self.operation) and _known(PermissionType, self.permission_type)):
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Unknown entryFilter.")

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        pattern = self.pattern_type
        if pattern not in (PatternType.ANY, PatternType.MATCH) and pattern != acl.pattern_type:
            return False
        if self.resource_name is not None:
            if pattern in (PatternType.ANY, acl.pattern_type):
                if self.resource_name != acl.resource_name:
                    return False
            elif acl.pattern_type == PatternType.LITERAL:  # MATCH
                if acl.resource_name not in (self.resource_name, WILDCARD):
                    return False
            elif not self.resource_name.startswith(acl.resource_name):  # MATCH against PREFIXED
                return False
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != Op.ANY and self.operation != acl.operation:
            return False
        return self.permission_type == PermissionType.ANY or self.permission_type == acl.permission_type


def _known(enum: type[IntEnum], code: int) -> bool:
    return code != 0 and code in enum._value2member_map_


def validate_new_acl(acl: AclBinding) -> None:
    """Kafka's checks on an ACL about to be created (broker, then controller), as INVALID_REQUEST."""
    if acl.resource_type == ResourceType.CLUSTER and acl.resource_name != CLUSTER_NAME:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if not acl.resource_name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Invalid empty resource name")
    if acl.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY) or not _known(ResourceType, acl.resource_type):
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Invalid resourceType {_name(ResourceType, acl.resource_type)}")
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Invalid patternType {_name(PatternType, acl.pattern_type)}")
    if acl.operation in (Op.UNKNOWN, Op.ANY) or not _known(Op, acl.operation):
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Invalid operation {_name(Op, acl.operation)}")
    if acl.permission_type not in (PermissionType.ALLOW, PermissionType.DENY):
        raise KafkaError(ErrorCode.INVALID_REQUEST,
                         f"Invalid permissionType {_name(PermissionType, acl.permission_type)}")
    kind, sep, name = acl.principal.partition(":")
    if not (kind and sep and name):
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Invalid principal {acl.principal!r}: expected a string "
                         "in format principalType:principalName")


def _applies(acl: AclBinding, operation: int, principal: str, host: str) -> int | None:
    """The permission an ACL (whose resource matches) gives the request, or None if it does not apply."""
    if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
        return None
    if acl.host != WILDCARD and acl.host != host:
        return None
    if acl.operation != Op.ALL:
        if acl.permission_type == PermissionType.ALLOW:
            if operation == Op.DESCRIBE:
                if acl.operation not in _IMPLIES_DESCRIBE:
                    return None
            elif operation == Op.DESCRIBE_CONFIGS:
                if acl.operation not in _IMPLIES_DESCRIBE_CONFIGS:
                    return None
            elif operation != acl.operation:
                return None
        elif operation != acl.operation:
            return None
    return acl.permission_type


class Authorizer:
    """The cluster's ACLs and the decisions made from them (see the module docstring)."""

    # what the C produce lane reads on every request are slots (native/lanes/member_sites.h); the rest stays in __dict__
    __slots__ = ("__dict__", "__weakref__", "_config", "_enabled", "_generation")

    def __init__(self, config: Any) -> None:
        self._config = config
        self._generation = -1
        self._enabled = False
        self._super_users: frozenset[str] = frozenset()
        self._allow_everyone = False
        # resource type -> ACLs in creation order (a dict as an ordered set), and the index decisions use:
        # (type, name) -> LITERAL ACLs, type -> PREFIXED ACLs
        self._acls: dict[int, dict[AclBinding, None]] = {}
        self._literal: dict[tuple[int, str], dict[AclBinding, None]] = {}
        self._prefixed: dict[int, dict[AclBinding, None]] = {}

    # -- settings -----------------------------------------------------------------------------
    def _refresh(self) -> None:
        cfg = self._config
        self._generation = cfg.generation
        self._enabled = bool(str(cfg.get("authorizer.class.name", "") or "").strip())
        self._super_users = frozenset(p.strip() for p in str(cfg.get("super.users", "") or "").split(";")
                                      if p.strip())
        self._allow_everyone = str(cfg.get("allow.everyone.if.no.acl.found", False)).strip().lower() == "true"

    @property
    def enabled(self) -> bool:
        """True when ``authorizer.class.name`` is set: ACL APIs work and requests are checked."""
        if self._generation != self._config.generation:
            self._refresh()
        return self._enabled

    # -- the store ------------------------------------------------------------------------------
    def all(self) -> list[AclBinding]:
        return [acl for acls in self._acls.values() for acl in acls]

    def add(self, acl: AclBinding) -> None:
        """Store one ACL (validated; storing it again changes nothing)."""
        validate_new_acl(acl)
        if acl in self._acls.get(acl.resource_type, ()):
            return
        self._acls.setdefault(acl.resource_type, {})[acl] = None
        self._index(acl).setdefault(self._key(acl), {})[acl] = None
        log.info("ACL created: %s", acl)

    def _index(self, acl: AclBinding) -> dict[Any, dict[AclBinding, None]]:
        return self._literal if acl.pattern_type == PatternType.LITERAL else self._prefixed

    @staticmethod
    def _key(acl: AclBinding) -> Any:
        return (acl.resource_type, acl.resource_name) if acl.pattern_type == PatternType.LITERAL else acl.resource_type

    def create(self, acls: list[AclBinding]) -> list[KafkaError | None]:
        """CreateAcls: each ACL stored, or the error that refused it."""
        results: list[KafkaError | None] = []
        for acl in acls:
            try:
                self.add(acl)
            except KafkaError as exc:
                log.warning("CreateAcls: %s refused: %s", acl, exc.message)
                results.append(exc)
            else:
                results.append(None)
        return results

    def describe(self, flt: AclFilter) -> list[AclBinding]:
        flt.check()
        return [acl for acl in self.all() if flt.matches(acl)]

    def delete(self, flt: AclFilter) -> list[AclBinding]:
        """DeleteAcls for one filter: the ACLs it matched, now gone."""
        flt.check()
        gone = [acl for acl in self.all() if flt.matches(acl)]
        for acl in gone:
            del self._acls[acl.resource_type][acl]
            index, key = self._index(acl), self._key(acl)
            del index[key][acl]
            if not index[key]:
                del index[key]
            log.info("ACL deleted: %s", acl)
        return gone

    # -- decisions ------------------------------------------------------------------------------
    def is_super_user(self, principal: str) -> bool:
        return principal in self._super_users

    def authorize(self, principal: str, host: str, operation: int, resource_type: int, name: str) -> bool:
        """May ``principal`` from ``host`` do ``operation`` on the resource (Kafka's StandardAuthorizer)?"""
        if self._generation != self._config.generation:
            self._refresh()
        if principal in self._super_users:
            return True
        found = allowed = False
        literal = self._literal
        candidates = [*literal.get((resource_type, name), ()), *(literal.get((resource_type, WILDCARD), ())
                                                                 if name != WILDCARD else ())]
        candidates += [acl for acl in self._prefixed.get(resource_type, ()) if name.startswith(acl.resource_name)]
        for acl in candidates:
            found = True
            result = _applies(acl, operation, principal, host)
            if result == PermissionType.DENY:
                return False
            if result == PermissionType.ALLOW:
                allowed = True
        return allowed or (not found and self._allow_everyone)

    def authorize_any(self, principal: str, host: str, operation: int, resource_type: int) -> bool:
        """May ``principal`` do ``operation`` on at least one resource of the type (Kafka's
        authorizeByResourceType, used for idempotent producers without IDEMPOTENT_WRITE)?"""
        if self.authorize(principal, host, operation, resource_type, "hardcode"):
            return True
        deny_literal: set[str] = set()
        deny_prefix: set[str] = set()
        allow: list[AclBinding] = []
        for acl in self._acls.get(resource_type, ()):
            if acl.host not in (host, WILDCARD) or acl.principal not in (principal, WILDCARD_PRINCIPAL):
                continue
            if acl.operation not in (operation, Op.ALL):
                continue
            if acl.permission_type == PermissionType.DENY:
                if acl.pattern_type == PatternType.LITERAL and acl.resource_name == WILDCARD:
                    return False
                (deny_literal if acl.pattern_type == PatternType.LITERAL else deny_prefix).add(acl.resource_name)
            elif acl.permission_type == PermissionType.ALLOW:
                if acl.pattern_type == PatternType.LITERAL and acl.resource_name == WILDCARD:
                    return True
                allow.append(acl)
        for acl in allow:
            if acl.pattern_type == PatternType.LITERAL and acl.resource_name in deny_literal:
                continue
            name = acl.resource_name
            if not any(name[:i] in deny_prefix for i in range(1, len(name) + 1)):
                return True
        return False

    def authorized_operations(self, principal: str, host: str, resource_type: int, name: str) -> int:
        """The operations allowed on the resource, as Kafka's 32-bit field (all supported ones when off)."""
        supported = SUPPORTED_OPERATIONS[resource_type]
        if not self.enabled:
            return operations_bitfield(supported)
        return operations_bitfield(op for op in supported if self.authorize(principal, host, op, resource_type, name))


def _code(enum: type[IntEnum], value: int | str) -> int:
    if isinstance(value, str):
        try:
            return int(enum[value.strip().upper()])
        except KeyError:
            raise ValueError(f"{value!r} is not one of {', '.join(enum.__members__)}") from None
    return int(value)


def acl(resource_type: int | str, name: str, principal: str = WILDCARD_PRINCIPAL, operation: int | str = "ALL",
        permission: int | str = "ALLOW", pattern_type: int | str = "LITERAL", host: str = WILDCARD) -> AclBinding:
    """An ACL from names or codes: ``acl("TOPIC", "orders", "User:alice", "WRITE")``."""
    return AclBinding(_code(ResourceType, resource_type), name, _code(PatternType, pattern_type), principal, host,
                      _code(AclOperation, operation), _code(PermissionType, permission))
