"""The packed postings' layout (readmodels/term_blocks.py): bucket counts by df, buckets by an id's last bytes,
rows in id order as big-endian records."""

from __future__ import annotations

import uuid

import numpy as np

from readmodels.term_blocks import BLOCK, RECORD, bucket_of, buckets, pack, unpack


def test_a_term_splits_into_the_least_power_of_two_buckets_within_a_block() -> None:
    assert [buckets(df) for df in (0, 1, BLOCK)] == [1, 1, 1]
    assert [buckets(df) for df in (BLOCK + 1, 2 * BLOCK, 2 * BLOCK + 1, 4 * BLOCK, 4 * BLOCK + 1)] == [2, 2, 4, 4, 8]
    assert buckets(50 * BLOCK) == 64


def test_an_ids_bucket_is_the_low_bits_of_its_last_four_bytes() -> None:
    ids = [uuid.UUID(int=(7 << 96) | 0x0000_0005), uuid.UUID(int=0xFFFF_FFFE), uuid.uuid4()]
    found = bucket_of(np.array([i.bytes for i in ids], dtype="V16"), 4)
    assert found.tolist() == [1, 2, ids[2].int & 3]
    assert bucket_of(np.array([i.bytes for i in ids], dtype="V16"), 1).tolist() == [0, 0, 0]


def test_a_row_is_its_records_in_id_order_big_endian() -> None:
    records = np.zeros(3, dtype=[("id", "V16"), ("tf", "<i4"), ("length", "<i4")])  # the machine's byte order
    ids = [uuid.UUID(int=3), uuid.UUID(int=1), uuid.UUID(int=2)]
    records["id"] = [i.bytes for i in ids]
    records["tf"], records["length"] = [3, 1, 2], [30, 10, 20]
    [(bucket, row)] = pack(records, 1)
    assert bucket == 0
    assert row[:24] == uuid.UUID(int=1).bytes + (1).to_bytes(4, "big") + (10).to_bytes(4, "big")
    back = unpack(row)
    assert back.dtype == RECORD
    assert back["tf"].tolist() == [1, 2, 3] and back["length"].tolist() == [10, 20, 30]


def test_a_terms_records_go_to_their_buckets_each_in_id_order() -> None:
    ids = [uuid.uuid4() for _ in range(40)]
    records = np.zeros(len(ids), dtype=RECORD)
    records["id"] = [i.bytes for i in ids]
    records["tf"] = 1
    rows = pack(records, 4)
    assert [bucket for bucket, _ in rows] == sorted({i.int & 3 for i in ids})
    for bucket, row in rows:
        held = [uuid.UUID(bytes=bytes(r)) for r in unpack(row)["id"]]
        assert held == sorted(i for i in ids if i.int & 3 == bucket)
