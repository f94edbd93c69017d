import pytest

from stream_worker.connector.partitioner import murmur2, partition_for


# Kafka's own test vectors (clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java)
@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("21", -973932308),
        ("foobar", -790332482),
        ("a-little-bit-long-string", -985981536),
        ("a-little-bit-longer-string", -1486304829),
        ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        ("abc", 479470107),
    ],
)
def test_murmur2_is_kafkas(key, expected):
    assert murmur2(key.encode()) == expected


def test_partition_is_the_positive_hash_modulo_the_count():
    assert partition_for(b"foobar", 1) == 0
    assert partition_for(b"foobar", 7) == (-790332482 & 0x7FFFFFFF) % 7
    assert {partition_for(f"cam-{i}".encode(), 6) for i in range(100)} == set(range(6))


def test_a_topic_has_partitions():
    with pytest.raises(ValueError):
        partition_for(b"x", 0)
