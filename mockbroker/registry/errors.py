"""The Schema Registry's errors as Confluent's REST API answers them: an HTTP status and a JSON body
``{"error_code": 40401, "message": "Subject 'orders-value' not found."}``, the status being the code's
first three digits (or the code itself when it has three)."""

from __future__ import annotations

SUBJECT_NOT_FOUND = 40401
VERSION_NOT_FOUND = 40402
SCHEMA_NOT_FOUND = 40403
SUBJECT_SOFT_DELETED = 40404
SUBJECT_NOT_SOFT_DELETED = 40405
VERSION_SOFT_DELETED = 40406
VERSION_NOT_SOFT_DELETED = 40407
SUBJECT_CONFIG_NOT_FOUND = 40408
SUBJECT_MODE_NOT_FOUND = 40409
INCOMPATIBLE = 409
INVALID_SCHEMA = 42201
INVALID_VERSION = 42202
INVALID_COMPATIBILITY = 42203
INVALID_MODE = 42204
OPERATION_NOT_PERMITTED = 42205
REFERENCE_EXISTS = 42206
STORE_ERROR = 50001


class RegistryError(Exception):
    """One refusal: ``code`` is Confluent's error code, ``message`` its one-line text."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def status(self) -> int:
        return int(str(self.code)[:3])

    def body(self) -> dict[str, object]:
        return {"error_code": self.code, "message": self.message}
