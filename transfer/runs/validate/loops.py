"""Closed loops in the joint graph: the joints a validate attempt cannot drive alone (a four-bar's coupler)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["closed_loops", "loop_note"]


def closed_loops(edges: Sequence[tuple[str, str | None, str]], drivable: set[str]) -> dict[str, str | None]:
    """``{joint: driver}`` for every joint on a closed loop of the body graph.

    ``edges`` are ``(joint, parent, child)`` (``None``: the world), fixed joints included. A joint is on a loop when
    its two bodies stay connected without it; loops that share a joint are one loop (a four-bar's four joints), loops
    that share only a body are not. Each loop has one driver: of its ``drivable`` joints, the one whose parent is
    nearest a base (the world, or a body that is no joint's child), then by path; ``None`` when none is drivable.
    Driving every joint of a loop at once over-constrains it (a four-bar has one degree of freedom): the others follow
    the driver."""
    graph: dict[str, list[tuple[str, str]]] = {}
    for joint, parent, child in edges:
        graph.setdefault(parent or "", []).append((joint, child))
        graph.setdefault(child, []).append((joint, parent or ""))

    def search(start: str, without: str | None = None) -> dict[str, tuple[str, str] | None]:
        """Breadth-first from ``start``: each node reached, with the joint and node it was reached from."""
        came: dict[str, tuple[str, str] | None] = {start: None}
        queue = [start]
        for node in queue:
            for joint, other in graph[node]:
                if joint != without and other not in came:
                    came[other] = (joint, node)
                    queue.append(other)
        return came

    loops: dict[str, set[str]] = {}  # each loop joint's cycle: itself and the shortest way round without it
    for joint, parent, child in edges:
        came = search(parent or "", without=joint)
        if child in came:
            cycle, node = {joint}, child
            while (step := came[node]) is not None:
                cycle.add(step[0])
                node = step[1]
            loops[joint] = cycle
    group = {j: j for j in loops}  # union-find: cycles that share a joint are one loop

    def find(j: str) -> str:
        while group[j] != j:
            j = group[j]
        return j

    for cycle in loops.values():
        first, *others = sorted(cycle & set(loops))
        for other in others:
            group[find(other)] = find(first)
    children = {c for _, _, c in edges}
    depth: dict[str, int] = {}
    for base in sorted(n for n in graph if n == "" or n not in children):
        came = search(base)
        for node in came:
            hops, at = 0, node
            while (step := came[at]) is not None:
                hops, at = hops + 1, step[1]
            depth[node] = min(hops, depth.get(node, hops))
    parents = {j: p or "" for j, p, _ in edges}
    out: dict[str, str | None] = {}
    for root in sorted({find(j) for j in loops}):
        members = sorted(j for j in loops if find(j) == root)
        driven = sorted((depth.get(parents[j], len(graph)), j) for j in members if j in drivable)
        out.update(dict.fromkeys(members, driven[0][1] if driven else None))
    return out


def loop_note(loops: dict[str, str | None], held: set[str]) -> list[str]:
    drivers = sorted({d for d in loops.values() if d is not None})
    notes = []
    for driver in drivers:
        follow = sorted(p.rsplit("/", 1)[-1] for p, d in loops.items() if d == driver and p in held)
        if follow:
            notes.append(
                f"closed loop: {driver.rsplit('/', 1)[-1]} is driven first, {', '.join(follow)} follow it (driving "
                "every joint of a loop at once over-constrains it)"
            )
    return notes
