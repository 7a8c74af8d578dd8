"""Exceptions raised by epslap (each a subclass of the builtin a scipy user already catches), and
where its warnings point."""
import os
import sys

_PACKAGE = os.path.dirname(os.path.abspath(__file__))


class InfeasibleError(ValueError):
    """No complete assignment with finite cost exists."""


class GPUUnavailableError(RuntimeError):
    """The GPU backend was asked for but CuPy or a CUDA device is missing."""


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed from: another problem, a damaged or truncated file,
    contents that no solve writes (``epslap.checkpoint.check_contents``), or a format newer
    than this epslap reads."""


def unreadable(exc: Exception) -> str:
    """Why ``np.load`` refused a file, in one phrase: NumPy's advice to load pickled data
    (what it says of any file that is neither .npy nor .npz) becomes what the file is not."""
    text = str(exc)
    if isinstance(exc, EOFError):
        return "the file is empty or cut short"
    if "pickled" in text or "allow_pickle" in text:
        return "not a NumPy .npy or .npz file (files holding Python objects are not read)"
    return text


def user_stacklevel() -> int:
    """The ``stacklevel`` of a warning that names the caller's line, not epslap's."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def member_error(exc: Exception, k: int) -> Exception:
    """``exc`` as the error of problem ``k`` of the caller's batch: its index in the message and
    in ``problem`` (:func:`solved_groups` reports the batch's first bad problem by it)."""
    out = type(exc)(f"problem {k}: {exc}")
    out.problem = k
    return out


def solved_groups(groups: dict, solve):
    """``(key, idx, solve(key, idx))`` for each group of a batch list's members (``groups``: key
    -> member indices, in the order of each group's first member), solved apart; the error of
    the batch's first bad problem is raised after them (a later group may hold an earlier bad
    problem than an earlier group's), and a group wholly after a bad problem found is skipped."""
    failed = None  # (index, error) of the first bad problem found
    for key, idx in groups.items():
        if failed is not None and idx[0] > failed[0]:
            continue
        try:
            part = solve(key, idx)
        except (ValueError, ArithmeticError) as exc:
            k = getattr(exc, "problem", int(idx[0]))
            if failed is None or k < failed[0]:
                failed = (k, exc)
            continue
        yield key, idx, part
    if failed is not None:
        raise failed[1]
