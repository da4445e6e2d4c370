"""A parent's ``status.conditions``, kept as Kubernetes keeps them.

The same rules as apimachinery's ``meta.SetStatusCondition`` and its siblings, which
Kubebuilder controllers use: a condition's ``lastTransitionTime`` moves only when its
status changes, its reason, message and ``observedGeneration`` are overwritten in place,
and the order of the list is kept. The plugin's answer is the whole status, so the list
starts from the observed parent's (:func:`from_status`); "now" is the request's
``request.now``, never the sandbox's clock.

    from kubewasm import conditions

    listed = conditions.from_status(parent.status)
    conditions.set(listed, type="Ready", status=ready, reason="Available" if ready else "Progressing",
                   message=f"{available} of {wanted} replicas available",
                   observed_generation=parent.generation, now=request.now)
    return Response(status={"conditions": listed})

Conditions are the dicts the API server keeps (``type``, ``status``, ``reason``,
``message``, ``observedGeneration``, ``lastTransitionTime``).
"""

from __future__ import annotations

import copy
import re
from datetime import datetime, timezone
from typing import Any

from .errors import PermanentError

__all__ = ["find", "from_status", "is_false", "is_true", "remove", "set"]

Condition = dict[str, Any]

# metav1.Condition's schema, as the API server enforces it.
_TYPE = re.compile(r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])")
_REASON = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")
_STATUSES = ("True", "False", "Unknown")
_MAX_TYPE, _MAX_REASON, _MAX_MESSAGE = 316, 1024, 32768


def from_status(status: Any) -> list[Condition]:
    """A copy of the conditions of an observed status (``parent.status``): empty when the
    status or its ``conditions`` is absent. Raises :class:`~kubewasm.PermanentError` when
    ``conditions`` is not a list of objects."""
    if status is None:
        return []
    if not isinstance(status, dict):
        raise PermanentError(f"status is not an object: {status!r}")
    listed = status.get("conditions")
    if listed is None:
        return []
    if not isinstance(listed, list):
        raise PermanentError(f"status.conditions is not a list: {listed!r}")
    for i, item in enumerate(listed):
        if not isinstance(item, dict):
            raise PermanentError(f"status.conditions[{i}] is not a condition: {item!r}")
    return copy.deepcopy(listed)


def find(conditions: list[Condition], type: str) -> Condition | None:
    """The first condition of ``type``, itself (changing it changes the list), or ``None``."""
    return next((c for c in conditions if c.get("type") == type), None)


def is_true(conditions: list[Condition], type: str) -> bool:
    """Whether the condition of ``type`` is present and ``True``."""
    found = find(conditions, type)
    return found is not None and found.get("status") == "True"


def is_false(conditions: list[Condition], type: str) -> bool:
    """Whether the condition of ``type`` is present and ``False`` (an absent one is neither)."""
    found = find(conditions, type)
    return found is not None and found.get("status") == "False"


def remove(conditions: list[Condition], type: str) -> bool:
    """Removes every condition of ``type`` in place, keeping the order of the rest; whether
    one was there."""
    before = len(conditions)
    conditions[:] = [c for c in conditions if c.get("type") != type]
    return len(conditions) != before


def set(
    conditions: list[Condition],
    *,
    type: str,
    status: bool | str,
    reason: str,
    message: str = "",
    observed_generation: int | None = None,
    last_transition_time: datetime | str | None = None,
    now: datetime | str,
) -> bool:
    """Sets the condition of ``type`` in place, and says whether the list changed.

    ``status`` is ``True``/``False`` or ``"True"``, ``"False"``, ``"Unknown"``. An absent
    type is appended with ``lastTransitionTime`` the given one or ``now``; a present one
    takes the new status (and that time) only when the status differs, and the new
    reason, message and ``observedGeneration`` always (``None`` clears it). Raises
    :class:`~kubewasm.PermanentError` naming the field when the API server would refuse the
    condition; the list is then unchanged.
    """
    status_text = _status(type, status)
    _check(type, reason, message)
    time = _rfc3339(last_transition_time if last_transition_time is not None else now)
    existing = find(conditions, type)
    if existing is None:
        condition: Condition = {"type": type, "status": status_text, "reason": reason, "message": message}
        if observed_generation is not None:
            condition["observedGeneration"] = observed_generation
        condition["lastTransitionTime"] = time
        conditions.append(condition)
        return True
    changed = False
    if existing.get("status") != status_text:
        existing["status"] = status_text
        existing["lastTransitionTime"] = time
        changed = True
    for key, value in (("reason", reason), ("message", message)):
        if existing.get(key) != value:
            existing[key] = value
            changed = True
    if existing.get("observedGeneration") != observed_generation:
        if observed_generation is None:
            del existing["observedGeneration"]
        else:
            existing["observedGeneration"] = observed_generation
        changed = True
    return changed


def _status(type: str, status: bool | str) -> str:
    if status is True or status is False:
        return "True" if status else "False"
    if status not in _STATUSES:
        raise PermanentError(f'condition {type}: status "{status}" must be True, False or Unknown')
    return status


def _check(type: str, reason: str, message: str) -> None:
    if not isinstance(type, str) or len(type) > _MAX_TYPE or not _TYPE.fullmatch(type):
        raise PermanentError(
            f'condition type "{type}" is not valid: a name of letters, digits, \'-\', \'_\' and \'.\' '
            "beginning and ending with a letter or digit, optionally prefixed by a lowercase DNS "
            f"subdomain and '/', at most {_MAX_TYPE} characters"
        )
    if not isinstance(reason, str) or len(reason) > _MAX_REASON or not _REASON.fullmatch(reason):
        raise PermanentError(
            f'condition {type}: reason "{reason}" is not valid: it must begin with a letter, hold only '
            "letters, digits, '_', ',' and ':', end with a letter, digit or '_', and be at most "
            f"{_MAX_REASON} characters"
        )
    if not isinstance(message, str) or len(message) > _MAX_MESSAGE:
        raise PermanentError(f"condition {type}: message is not text of at most {_MAX_MESSAGE} characters")


def _rfc3339(time: datetime | str) -> str:
    """``time`` as the API server writes a ``metav1.Time``: UTC, to the second."""
    if isinstance(time, str):
        return time
    if not isinstance(time, datetime):
        raise TypeError(f"conditions.set: now must be a datetime or RFC 3339 text (request.now), not {time!r}")
    if time.tzinfo is None:
        time = time.replace(tzinfo=timezone.utc)
    return time.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
