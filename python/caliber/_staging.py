"""Private temporary folders of a run (docs/cluster.md, "Temporary files").

A `caliber run` child of a local batch gets CALIBER_BATCH_DIR; its temporary folders then lie in
that batch's `staging/` folder, which the batch removes when it ends, so that a child killed by a
signal (a crashing kernel, --timeout-per-op) leaves nothing behind in the system's temporary
folder. Outside a batch they are ordinary `tempfile.mkdtemp` folders, removed by their owner.
"""

import os
import tempfile

STAGING = "staging"  # the batch's folder (src/batch/batch.cpp removes it by this name)


def mkdtemp(prefix):
    """A new private folder: in the batch's staging folder under a batch, else in TMPDIR."""
    batch = os.environ.get("CALIBER_BATCH_DIR")
    parent = None
    if batch and os.path.isdir(batch):
        parent = os.path.join(batch, STAGING)
        os.makedirs(parent, exist_ok=True)
    return tempfile.mkdtemp(prefix=prefix, dir=parent)
