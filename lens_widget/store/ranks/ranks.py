"""lens_widget.load_ranks(dir): the saved logs of one distributed step, one per rank.

Each rank of a torch.distributed run saves its own log (``log.save(f"runs/step7/rank{r}")``);
this reads every subfolder of `dir` that holds a saved log, keyed and ordered by the rank
each log knows. Refused with a ValueError naming the folders: a log without a rank, two
logs of one rank, logs that disagree on the world's size. A rank of the world with no log
(a rank that crashed before saving, a copy not finished) is a warning, not an error: the
ranks that did save are what one looks at to see why.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from lens_widget.log.model_log import ModelLog
from lens_widget.store.format import JSON_FILE
from lens_widget.store.load import load


class MissingRanksWarning(UserWarning):
    """load_ranks found no log for some ranks of the world."""


def load_ranks(path: str | os.PathLike[str]) -> dict[int, ModelLog]:
    """Every per-rank log saved in the subfolders of `path`, as {rank: ModelLog} in rank order.

    Subfolders without a saved log (no log.json) are skipped; each log is loaded as
    `lens_widget.load` does (LogFormatError for a damaged one).
    """
    directory = Path(path)
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory} is not a directory of per-rank saved logs")
    folders = sorted(p for p in directory.iterdir() if (p / JSON_FILE).is_file())
    if not folders:
        raise FileNotFoundError(
            f"no saved log in the subfolders of {directory}: expected one folder per rank "
            "(rank0/, rank1/, ...), each written by log.save() on its rank"
        )
    by_rank: dict[int, tuple[Path, ModelLog]] = {}
    for folder in folders:
        log = load(folder)
        if log.rank is None:
            raise ValueError(
                f"{folder}: this log has no rank (it was not traced under torch.distributed); "
                f"{directory} should hold only the logs of one distributed step"
            )
        if log.rank in by_rank:
            raise ValueError(
                f"{by_rank[log.rank][0]} and {folder} are both logs of rank {log.rank}: "
                "logs of two runs or two steps in one folder?"
            )
        by_rank[log.rank] = (folder, log)
    sizes = {log.world_size for _, log in by_rank.values()}
    if len(sizes) > 1:
        listed = ", ".join(f"{f.name}: {log.world_size}" for f, log in by_rank.values())
        raise ValueError(f"the logs in {directory} disagree on the world size ({listed})")
    (world_size,) = sizes
    if world_size is not None:
        missing = sorted(set(range(world_size)) - set(by_rank))
        if missing:
            warnings.warn(
                f"{directory}: no log of rank(s) {missing} of a world of {world_size}; "
                f"showing ranks {sorted(by_rank)}",
                MissingRanksWarning,
                stacklevel=2,
            )
    return {rank: by_rank[rank][1] for rank in sorted(by_rank)}
