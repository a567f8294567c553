"""Search batches side by side: ``workers`` threads each take the next batch and search it with
their share of torch's intra-op threads (Marian's ``--cpu-threads``).

On a few cores a search step's small matrix products and the many small operations between
them split poorly over intra-op threads; two workers with one thread each keep both cores busy
on whole batches instead. torch releases the GIL inside its operations, so the workers' Python
bookkeeping is all they contend for. A batch's hypotheses do not depend on which worker searched
it or when: each batch is searched as it would be alone, and the caller puts the results back
in input order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import torch

Item = TypeVar("Item")


# Measured on 2 cores (docs/speed.md): two workers of one thread each decode the test set 10-30 %
# faster than one worker with two threads, at beam 5 and greedy alike; more is not measured.
DEFAULT_WORKERS = 2


def default_workers(device: torch.device) -> int:
    """Workers when none are asked for: on the CPU :data:`DEFAULT_WORKERS`, but never more
    than this process's intra-op threads (one thread gets one worker); one on a GPU, whose
    batches queue on one stream anyway."""
    if device.type != "cpu":
        return 1
    return max(1, min(DEFAULT_WORKERS, torch.get_num_threads()))


def threads_per_worker(workers: int) -> int:
    """Each worker's intra-op threads: this process's threads shared out, one at least."""
    return max(1, torch.get_num_threads() // workers)


def run_side_by_side(items: Sequence[Item], work: Callable[[Item], None], *, workers: int) -> None:
    """Call ``work`` on every item: in this thread when ``workers`` is 1 or there is one item,
    else on ``workers`` threads at once, each with :func:`threads_per_worker` intra-op threads.

    ``work`` enters its own thread-local contexts (``torch.inference_mode``, autocast): a
    worker thread does not inherit the caller's. The first exception a worker raises is raised
    here once the running items have finished; the items not yet started are dropped, and so
    are they when the caller is interrupted (SIGINT reaches the calling thread).
    """
    if workers <= 1 or len(items) <= 1:
        for item in items:
            work(item)
        return
    threads, share = torch.get_num_threads(), threads_per_worker(workers)

    def work_in_share(item: Item) -> None:
        # Per thread under OpenMP (torch's CPU builds): the caller keeps its own count.
        torch.set_num_threads(share)
        work(item)

    pool = ThreadPoolExecutor(max_workers=min(workers, len(items)), thread_name_prefix="search")
    try:
        for future in [pool.submit(work_in_share, item) for item in items]:
            future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        torch.set_num_threads(threads)  # new threads take the last count set anywhere
