"""The NumPy answer the Adasum rank scripts compare with: Adasum's pairwise rule as Horovod
states it, and the tree hvd promises (docs/python.md)."""


def pair(left, right):
    """(1 - l.r / 2|l|^2) l + (1 - l.r / 2|r|^2) r; a squared norm below 1e-8 keeps coefficient 1."""
    dot, ll, rr = float(left @ right), float(left @ left), float(right @ right)
    a = 1 - dot / (2 * ll) if ll >= 1e-8 else 1.0
    b = 1 - dot / (2 * rr) if rr >= 1e-8 else 1.0
    return a * left + b * right


def tree(leaves):
    """The ranks' flat tensors (float64) combined: off a power of two the first pairs (2i,
    2i+1) first, then neighbours, level by level."""
    p = 1
    while p * 2 <= len(leaves):
        p *= 2
    extra = len(leaves) - p
    level = [pair(leaves[2 * i], leaves[2 * i + 1]) for i in range(extra)] + list(leaves[2 * extra:])
    while len(level) > 1:
        level = [pair(level[i], level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]
