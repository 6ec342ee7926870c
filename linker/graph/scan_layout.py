"""Where each kind of input and output sits in a `Scan` node's argument lists."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from aesara.graph.basic import Variable
from aesara.scan.op import Scan


def split_by(values: Sequence[Any], sizes: Sequence[int]) -> list[list[Any]]:
    """Cut ``values`` into consecutive groups of the given sizes."""
    ends = list(accumulate(sizes))
    return [list(values[end - size : end]) for size, end in zip(sizes, ends)]


@dataclass(frozen=True)
class ScanLayout:
    """Where each kind of input and output sits in a Scan's argument lists."""

    n_seqs: int
    mit_mot_in: tuple[tuple[int, ...], ...]
    mit_mot_out: tuple[tuple[int, ...], ...]
    sot_taps: tuple[tuple[int, ...], ...]
    """The taps of the mit-sots, then of the sit-sots."""
    n_mit_sot: int
    n_nit_sot: int
    n_shared: int
    n_non_seqs: int
    as_while: bool

    @classmethod
    def of(cls, op: Scan) -> ScanLayout:
        info = op.info
        return cls(
            n_seqs=info.n_seqs,
            mit_mot_in=tuple(map(tuple, info.mit_mot_in_slices)),
            mit_mot_out=tuple(map(tuple, info.mit_mot_out_slices)),
            sot_taps=tuple(map(tuple, info.mit_sot_in_slices + info.sit_sot_in_slices)),
            n_mit_sot=info.n_mit_sot,
            n_nit_sot=info.n_nit_sot,
            n_shared=info.n_shared_outs,
            n_non_seqs=info.n_non_seqs,
            as_while=info.as_while,
        )

    @property
    def n_mit_mot(self) -> int:
        return len(self.mit_mot_in)

    @property
    def n_sot(self) -> int:
        return len(self.sot_taps)

    def outer_inputs(self, values: Sequence[Any]) -> list[list[Any]]:
        """[n_steps], seqs, mit-mot, sot, shared, nit-sot sizes, non-seqs."""
        sizes = [1, self.n_seqs, self.n_mit_mot, self.n_sot, self.n_shared, self.n_nit_sot, self.n_non_seqs]
        return split_by(values, sizes)

    def inner_inputs(self, values: Sequence[Any]) -> list[list[Any]]:
        """seqs, mit-mot taps (flat), sot taps (flat), shared, non-seqs."""
        n_mit_mot_taps = sum(map(len, self.mit_mot_in))
        n_sot_taps = sum(map(len, self.sot_taps))
        return split_by(values, [self.n_seqs, n_mit_mot_taps, n_sot_taps, self.n_shared, self.n_non_seqs])

    def inner_outputs(self, values: Sequence[Any]) -> list[list[Any]]:
        """mit-mot outs (flat), sot, nit-sot, shared, [until condition]."""
        n_mit_mot_outs = sum(map(len, self.mit_mot_out))
        sizes = [n_mit_mot_outs, self.n_sot, self.n_nit_sot, self.n_shared, int(self.as_while)]
        return split_by(values, sizes)

    def mit_mot_mintaps(self) -> list[int]:
        return [min(taps) for taps in self.mit_mot_in]

    def mit_mot_spans(self) -> list[int]:
        """For each mit-mot, how many consecutive rows one step reads or writes."""
        return [max(ins + outs) - min(ins) + 1 for ins, outs in zip(self.mit_mot_in, self.mit_mot_out)]

    def sot_windows(self) -> list[int]:
        return [-min(taps) for taps in self.sot_taps]

    def sot_name(self, k: int) -> str:
        """How messages name the k-th mit-sot/sit-sot, as Aesara numbers them (``"sit-sot 0"``)."""
        return f"mit-sot {k}" if k < self.n_mit_sot else f"sit-sot {k - self.n_mit_sot}"

    def sot_output_index(self, k: int) -> int:
        """Position of the k-th mit-sot/sit-sot among the node's outputs."""
        return self.n_mit_mot + k

    def sot_input_index(self, k: int) -> int:
        """Position of the k-th mit-sot/sit-sot buffer among the node's outer inputs."""
        return 1 + self.n_seqs + self.n_mit_mot + k

    def shared_input_positions(self) -> range:
        """Positions of the shared-variable states among the node's outer inputs."""
        start = 1 + self.n_seqs + self.n_mit_mot + self.n_sot
        return range(start, start + self.n_shared)

    def shared_input_of_output(self, index: int) -> int:
        """Position among the outer inputs of the state that the shared output ``index`` updates."""
        return self.shared_input_positions()[index - self.n_mit_mot - self.n_sot - self.n_nit_sot]

    def size_input_of_output(self, index: int) -> int | None:
        """Position among the outer inputs of what sets the length of output ``index``.

        A mit-mot/mit-sot/sit-sot output is laid out in its outer buffer (an
        array); a nit-sot's buffer has the length of its size input (a scalar);
        a shared output has neither (``None``).
        """
        n_buffers = self.n_mit_mot + self.n_sot
        if index < n_buffers:
            return 1 + self.n_seqs + index
        if index < n_buffers + self.n_nit_sot:
            return self.nit_sot_input_index(index - n_buffers)
        return None

    def nit_sot_output_index(self, k: int) -> int:
        """Position of the k-th nit-sot among the node's outputs."""
        return self.n_mit_mot + self.n_sot + k

    def nit_sot_input_index(self, k: int) -> int:
        """Position of the k-th nit-sot buffer length among the node's outer inputs."""
        return 1 + self.n_seqs + self.n_mit_mot + self.n_sot + self.n_shared + k


def scan_like(
    op: Scan, inner_inputs: Sequence[Variable], inner_outputs: Sequence[Variable], mode: Any = None, info: Any = None
) -> Scan:
    """A Scan with ``op``'s settings and the inner graph ``inner_inputs -> inner_outputs``.

    ``mode`` and ``info`` (Aesara's ``ScanInfo``) replace ``op``'s when given.
    """
    return Scan(
        list(inner_inputs),
        list(inner_outputs),
        op.info if info is None else info,
        mode=op.mode if mode is None else mode,
        truncate_gradient=op.truncate_gradient,
        name=op.name,
        profile=op.profile,
        allow_gc=op.allow_gc,
        strict=op.strict,
    )
