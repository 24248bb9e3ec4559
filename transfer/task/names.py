"""Joint names and patterns: expand values keyed by name or pattern for one asset; check a listed joint order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from transfer._patterns import PatternError, full_matches
from transfer.task._checks import TaskError, _is_pattern

__all__ = ["check_listed_order", "expand_joint_values"]


def expand_joint_values(
    values: Mapping[str, float],
    joint_names: Sequence[str],
    *,
    field: str,
    source: str | None = None,
    require_all: bool = True,
) -> dict[str, float]:
    """Per-joint values, in ``joint_names`` order, from values keyed by joint name or regular expression.

    A key that is exactly a joint's name names that joint; any other key is a regular expression full-matched
    against every joint name. Errors (one :class:`TaskError` listing them all): a key that names or matches no
    joint, a joint matched by two keys, an invalid pattern, and (``require_all``) a joint no key covers. An empty
    ``values`` gives ``{}`` (nothing specified: the asset's own values stand).
    """
    where = f"{field} (from {source})" if source else field
    names = list(joint_names)
    if not values:
        return {}
    exact = set(names)
    owner: dict[str, str] = {}
    out: dict[str, float] = {}
    problems: list[str] = []
    for key, value in values.items():
        if key in exact:
            matched = [key]
        else:
            try:
                matched = full_matches(key, names, where)
            except PatternError as exc:
                if exc.slow:
                    raise TaskError(str(exc)) from None
                problems.append(f"{key!r} is not a valid regular expression ({exc.reason})")
                continue
        if not matched:
            kind = "pattern matches" if _is_pattern(key) else "name is"
            problems.append(f"{key!r}: the {kind} no joint of the asset")
        for n in matched:
            if n in owner:
                problems.append(f"joint {n!r} is matched by both {owner[n]!r} and {key!r}")
            else:
                owner[n] = key
                out[n] = value
    if require_all:
        uncovered = [n for n in names if n not in owner]
        if uncovered:
            problems.append(f"no value for joints {uncovered} (add them, or a pattern matching them)")
    if problems:
        more = f"; and {len(problems) - 8} more" if len(problems) > 8 else ""
        shown = f"{list(names[:40])}" + (f" and {len(names) - 40} more" if len(names) > 40 else "")
        raise TaskError(f"{where}: " + "; ".join(problems[:8]) + f"{more}. Asset joints: {shown}")
    return {n: out[n] for n in names if n in out}


def check_listed_order(listed: Sequence[str], resolved: Sequence[str], source_desc: str) -> None:
    """Refuse when the joint order a file lists differs from the order resolved from the asset.

    ``listed``: the names a file (``source_desc`` says which, and which field) lists in the checkpoint's order;
    ``resolved``: the public joint order the articulation was opened with. Raises ``ValueError`` naming the
    names one side lacks, or the first positions where the orders differ.
    """
    listed, resolved = tuple(listed), tuple(resolved)
    if listed == resolved:
        return
    missing = [n for n in listed if n not in set(resolved)]
    extra = [n for n in resolved if n not in set(listed)]
    if missing or extra or len(listed) != len(resolved):
        raise ValueError(
            f"{source_desc} lists {len(listed)} joints, the asset resolves {len(resolved)}: listed but not on the "
            f"asset: {missing}; on the asset but not listed: {extra}. Is this the checkpoint's robot?"
        )
    diffs = [(i, a, b) for i, (a, b) in enumerate(zip(listed, resolved, strict=True)) if a != b]
    shown = "; ".join(f"[{i}] listed {a!r}, resolved {b!r}" for i, a, b in diffs[:3])
    raise ValueError(
        f"{source_desc} lists the joints in another order than the one resolved from the asset ({len(diffs)} of "
        f"{len(listed)} positions differ; first: {shown}). The checkpoint's joint vectors follow the listed order: "
        "open the articulation with the convention the checkpoint was trained on, or with the listed names as an "
        "explicit joint_ordering."
    )
