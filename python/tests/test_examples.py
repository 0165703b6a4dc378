"""examples/python: the PyTorch tutorial program trains the same model under hvd on 4
ranks as on 1 rank with the same global batch, and as PyTorch's DDP; it resumes from its
checkpoint where it left off; its elastic version loses a rank and goes on from its last
commit."""

import json
import subprocess
import sys

import numpy as np

from conftest import SOURCE_DIR, clean_env, hvdrun_path

EXAMPLES = SOURCE_DIR / "examples" / "python"
# Float sums in a different order (per-rank means averaged vs one mean) drift a little
# over the steps; measured here: at most 4e-6 relative over 110 steps.
TOLERANCE = 1e-4


def train(tmp_path, np_, script, tag, *args):
    log = tmp_path / f"{tag}.json"
    command = [hvdrun_path(), "-np", str(np_), sys.executable, str(EXAMPLES / script), "--log-json", str(log), *args]
    completed = subprocess.run(command, capture_output=True, text=True, env=clean_env(), timeout=300)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return json.loads(log.read_text()), completed.stdout


def assert_same_curve(a, b, what):
    x, y = np.array(a["losses"]), np.array(b["losses"])
    assert x.shape == y.shape and len(x) > 0, what
    worst = float(np.max(np.abs(x - y) / np.abs(y)))
    assert worst < TOLERANCE, f"{what}: losses differ by up to {worst:.2e} relative"


def test_torch_digits_on_four_ranks_follows_one_rank_with_the_same_global_batch_and_ddp(tmp_path):
    four, out = train(tmp_path, 4, "torch_digits.py", "hvd4", "--epochs", "3")
    one, _ = train(tmp_path, 1, "torch_digits.py", "hvd1", "--epochs", "3", "--batch-size", "64", "--base-lr", "0.1")
    ddp, _ = train(tmp_path, 4, "torch_digits_ddp.py", "ddp4", "--epochs", "3")
    assert four["global_batch"] == one["global_batch"] == ddp["global_batch"] == 64
    assert_same_curve(four, one, "hvd on 4 ranks vs 1 rank")
    assert_same_curve(four, ddp, "hvd vs DistributedDataParallel (gloo)")
    assert four["losses"][-1] < 0.5 * four["losses"][0], "it did not learn"
    assert four["test_accuracy"] > 0.85
    assert "[0]<stdout>:epoch 3: train loss" in out


def test_torch_digits_with_adasum_on_four_ranks_learns_at_one_ranks_learning_rate(tmp_path):
    # Horovod's examples' --use-adasum: op=hvd.Adasum and the learning rate not scaled by size.
    adasum, out = train(tmp_path, 4, "torch_digits.py", "adasum", "--epochs", "3", "--use-adasum", "--base-lr", "0.05")
    assert adasum["losses"][-1] < 0.5 * adasum["losses"][0], "it did not learn"
    assert adasum["test_accuracy"] > 0.8
    assert "[0]<stdout>:epoch 3: train loss" in out


def test_torch_digits_resumes_from_rank_zeros_checkpoint_at_the_epoch_it_broadcasts(tmp_path):
    checkpoint = tmp_path / "model.pt"
    straight, _ = train(tmp_path, 2, "torch_digits.py", "straight", "--epochs", "3")
    first, _ = train(tmp_path, 2, "torch_digits.py", "first", "--epochs", "2", "--checkpoint", str(checkpoint))
    resumed, out = train(tmp_path, 2, "torch_digits.py", "resumed", "--epochs", "3", "--checkpoint", str(checkpoint))
    assert first["first_epoch"] == 0 and resumed["first_epoch"] == 2
    assert "epoch 1:" not in out and "[0]<stdout>:epoch 3:" in out
    steps = len(straight["losses"]) // 3
    assert_same_curve({"losses": first["losses"] + resumed["losses"]}, straight, "stopped and resumed vs straight")
    assert len(resumed["losses"]) == steps


def test_torch_digits_elastic_loses_a_rank_mid_epoch_and_does_every_remaining_sample_once_on_the_rest():
    command = [hvdrun_path(), "-np", "3", "--min-np", "2", sys.executable, str(EXAMPLES / "torch_digits_elastic.py"),
               "--epochs", "3", "--crash-rank", "1", "--crash-at-step", "40"]
    completed = subprocess.run(command, capture_output=True, text=True, env=clean_env(), timeout=300)
    out = completed.stdout + completed.stderr
    assert completed.returncode == 0, out
    assert "hvdrun: rank 1 was killed by SIGKILL; the other 2 rank(s) go on without it" in out, out
    final = [line for line in completed.stdout.splitlines() if line.startswith("[0]<stdout>:final test accuracy")]
    assert len(final) == 1, out
    # 1,437 training samples: 29 steps of 48 in epoch 1 on 3 ranks, 11 more in epoch 2 until
    # the crash (committed at step 40), then the epoch's other 909 samples in 28 steps of 32
    # on 2 ranks, and 44 in epoch 3. Resuming from any other point (the epoch's start: 117)
    # gives another count.
    assert final[0].endswith("on 2 rank(s), 112 steps"), out
    assert float(final[0].split()[3]) > 0.85, out
