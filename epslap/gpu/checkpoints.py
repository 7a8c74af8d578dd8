"""Checkpoints of a GPU solve (``epslap.checkpoint``): what a pass loop on the device writes,
and the state a resume starts from, inside a pass included."""
from __future__ import annotations

import time

import numpy as np

from .. import checkpoint as ckpt
from .run import Run, source_rows


class DeviceCheckpoints:
    """Checkpoints of a GPU solve (``epslap.checkpoint``): the prices, the row order and the ε
    schedule's state; inside a pass (the kernel stopped between two augmentations at the host's
    request, :meth:`EpsPasses._watch`) also the pass's assignment (owner, cmatch), the kernel's
    loop record and its threads' partial sums, so that the resume goes on inside that pass.
    The ``passes`` its methods take are the solve's ``solver.EpsPasses``."""

    def __init__(self, run: Run, checkpoint, mode: str):
        self.r, self.c, self.mode, self.ckpt = run, checkpoint, mode, ckpt
        self.header: dict = {}
        self.print_ = None
        if checkpoint is not None and (checkpoint.path is not None
                                       or checkpoint.loaded is not None):
            rows = ckpt.fingerprint_rows(run.n1)
            self.print_ = ckpt.fingerprint(self._rows(rows), run.n1, run.n2, mode)
            if checkpoint.loaded is not None:
                ckpt.check_matches(checkpoint.loaded, checkpoint.resume_path, run.n1, run.n2,
                                   run.work, mode, self.print_, {"v": run.n2, "perm": run.n1})

    def _rows(self, rows) -> np.ndarray:
        """The canonical rows ``rows``, read where the passes read them."""
        cupy, r = self.r.cupy, self.r
        filler = (r.row_cache.rows if r.row_cache is not None else
                  source_rows(cupy, r.src_mod, r.src_args))
        out = cupy.empty((len(rows), r.n2), dtype=r.work)
        for k, i in enumerate(rows):
            filler.fill(int(i), out[k])
        return out.get()

    current = None      # (schedule state, ε) of the pass under way
    saved_stop = False  # a Ctrl-C's checkpoint was written inside the pass

    def due(self) -> bool:
        return self.c is not None and self.c.due()

    def active(self) -> bool:
        """Whether launches are watched for stops (checkpoints are written)."""
        return self.c is not None and self.c.path is not None

    def stopped(self, passes, why: str) -> None:
        """The kernel stopped between two augmentations at our request: save the pass under
        way; Ctrl-C then ends the solve."""
        sched, eps = self.current
        self.save(passes, dict(sched, in_pass=eps), why, in_pass=True)
        if why == "interrupted":
            self.saved_stop = True
            raise KeyboardInterrupt

    def save(self, passes, sched: dict, reason: str, in_pass: bool = False) -> None:
        if self.c is None or self.c.path is None:
            return
        st = self.r.state
        arrays = {"v": st.v.get(), "perm": st.perm.get()}
        rows = int(passes.rows_evaluated)
        if in_pass:  # the pass's assignment, its loop record and the threads' partial sums
            record = st.resume.get()
            arrays.update(owner=st.owner.get(), cmatch=st.cmatch.get(), record=record,
                          susp_d=st.susp_d.get())
            rows += int(np.frombuffer(record[11:12].tobytes(), np.float64)[0])  # R_ROWS
        self.ckpt.write(self.c.path, dict(
            self.header, fingerprint=self.print_, shape=[self.r.n1, self.r.n2],
            dtype=np.dtype(self.r.work).str, mode=self.mode, reason=reason, sched=sched,
            passes=passes.count, epsilons=passes.epsilons,
            rows_evaluated=rows, rows_evaluated_passes=int(passes.rows_evaluated)), arrays)
        self.c.written += 1
        self.c.last_write = time.monotonic()

    def restore(self, passes) -> tuple:
        """Load the checkpoint's prices, row order and counts; ``(eps_upper, eps_lower,
        start_absmax, sched)``."""
        state, cupy = self.c.loaded, self.r.cupy
        head = state["header"]
        self.r.state.v[:] = cupy.asarray(state["v"].astype(self.r.work))
        self.r.state.perm[:] = cupy.asarray(state["perm"].astype(np.int64))
        passes.count = int(head["passes"])
        passes.epsilons = [float(e) for e in head["epsilons"]]
        passes.rows_evaluated = int(head.get("rows_evaluated_passes", head["rows_evaluated"]))
        self.rows_before = int(head["rows_evaluated"])
        if head["sched"].get("in_pass") is not None:  # the pass under way, where it stopped
            st = self.r.state
            for name in ("owner", "cmatch"):
                if name not in state or state[name].shape != (self.r.n2,):
                    raise self.ckpt.CheckpointError(
                        f"checkpoint {self.c.resume_path!r} is damaged: {name} is missing")
            st.owner[:] = cupy.asarray(state["owner"])
            st.cmatch[:] = cupy.asarray(state["cmatch"].astype(self.r.work))
            st.resume[:] = cupy.asarray(state["record"])
            part = state["susp_d"]
            if part.shape == st.susp_d.shape:
                st.susp_d[:] = cupy.asarray(part)
            else:  # another grid: the pass's sum in one place (the schedule's next ε may
                st.susp_d.fill(0)  # differ in its last bits; the optimum does not)
                st.susp_d[0:1] = float(part.sum())
        self.header.update(eps_upper=head["eps_upper"], eps_lower=head["eps_lower"],
                           start_absmax=head["start_absmax"])
        return (float(head["eps_upper"]), float(head["eps_lower"]), float(head["start_absmax"]),
                dict(head["sched"]))

    def stats(self) -> dict:
        if self.print_ is None:
            return {}
        out = {"checkpoints_written": self.c.written}
        if self.c.loaded is not None:
            out.update(resumed_from=self.c.resume_path,
                       rows_evaluated_before_resume=self.rows_before)
        return out
