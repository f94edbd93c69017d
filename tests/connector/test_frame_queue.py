import threading

from stream_worker.connector.frame_queue import DropOldestQueue


def test_a_full_queue_drops_its_oldest_and_counts_it():
    queue = DropOldestQueue[int](3)
    assert [queue.put(i) for i in range(5)] == [None, None, None, 0, 1]
    assert queue.dropped == 2
    assert queue.take(10) == [2, 3, 4]
    assert queue.take(10) == [] and len(queue) == 0


def test_take_returns_oldest_first_up_to_the_limit():
    queue = DropOldestQueue[int](10)
    for i in range(5):
        queue.put(i)
    assert queue.take(2) == [0, 1]
    assert len(queue) == 3


def test_a_fast_writer_and_a_slow_reader_lose_only_counted_frames():
    queue = DropOldestQueue[int](4)
    taken: list[int] = []
    done = threading.Event()

    def write() -> None:
        for i in range(20_000):
            queue.put(i)
        done.set()

    writer = threading.Thread(target=write)
    writer.start()
    while not done.is_set() or len(queue):
        taken += queue.take(2)
    writer.join()
    assert taken == sorted(taken)  # order kept
    assert len(taken) + queue.dropped == 20_000
    assert len(queue) <= 4


def test_capacity_at_least_one():
    import pytest

    with pytest.raises(ValueError):
        DropOldestQueue(0)
