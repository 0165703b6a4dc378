"""Rank side of test_torch.py's @record test: rank 1 raises inside a function decorated
with torch's record (which writes the exception to $TORCHELASTIC_ERROR_FILE); the others
wait to be stopped."""

import os
import time

from torch.distributed.elastic.multiprocessing.errors import record


def load_batch(step):
    raise ValueError(f"batch {step} has 3 columns, the model wants 4")


@record
def main():
    if os.environ["RANK"] == "1":
        load_batch(7)
    time.sleep(60)


if __name__ == "__main__":
    main()
