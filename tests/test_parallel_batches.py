"""Parallel review hands each worker one contiguous run of files of about equal size."""

from __future__ import annotations

from torchreview.engine.runner import _contiguous_batches


def _files(tmp_path, sizes):
    out = []
    for i, size in enumerate(sizes):
        path = tmp_path / f"m{i:02d}.py"
        path.write_text("x = 1\n" * size)
        out.append((str(path), path.name))
    return out


def test_one_contiguous_batch_per_worker_in_order(tmp_path):
    files = _files(tmp_path, [10] * 30)
    batches = _contiguous_batches(files, 2)
    assert len(batches) == 2
    assert [f for b in batches for f in b] == files  # every file once, in order
    assert abs(len(batches[0]) - len(batches[1])) <= 1


def test_batches_balance_bytes_not_file_counts(tmp_path):
    files = _files(tmp_path, [200, 200] + [10] * 40)
    batches = _contiguous_batches(files, 2)
    assert [f for b in batches for f in b] == files
    assert len(batches[0]) < len(batches[1])  # the two large files weigh as much as the many small ones


def test_fewer_files_than_workers_and_missing_files(tmp_path):
    files = _files(tmp_path, [5, 5]) + [(str(tmp_path / "gone.py"), "gone.py")]
    batches = _contiguous_batches(files, 8)
    assert [f for b in batches for f in b] == files
    assert all(batches) and len(batches) <= 3
