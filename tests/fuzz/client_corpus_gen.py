#!/usr/bin/env python3
"""Writes the fuzz_client seed corpus (run once; the files are committed).

  client_corpus_gen.py OUT_DIR

Each seed is a script in fuzz_client.cc's format: a member's shape, the
agent's HELLO_ACK and JOIN_ACK, then calls and the agent's frames, as a
well-behaved agent sends them (results of every chunk in order or not) and
as a bad or stale one does (ABORT, ERROR(busy), a refused HELLO, results
with a field corrupted, another call's chunk).
"""
import os
import sys

FILL = bytes(range(7, 7 + 64))  # what Script::fill reads (64 bytes when there are)

# Dtype and Op bytes as the script reads them (1 + b % 16, 1 + b % 12).
INT32, UINT8, FLOAT32, INT64 = 4, 1, 8, 6
SUM, MAX, BXOR = 0, 3, 9
NO_FAULT = 10  # Harness::result's corruption byte: none


def shape(size, rank):
    return bytes([(size - 1) | (rank << 2)])


def ack(window, slot_bytes):
    """HELLO_ACK or JOIN_ACK (event 2): window 1..6, slot bytes 1..96."""
    sb = slot_bytes - 1
    return bytes([2, window - 1, sb & 0xFF, sb >> 8]) + bytes(12)


def call(kind, dtype, op, total, extra=b""):
    return bytes([kind, dtype, op, total]) + extra + FILL


def result(rel, fault=NO_FAULT, payload=True):
    """A RESULT of chunk `rel` in flight (pick | 0x40: header only when it
    is this member's own forwarded piece); header-only ones read no payload."""
    return bytes([1, rel, fault]) + (FILL if payload else b"")


def refusal(abort=False, busy=True, chunk=0):
    b = (1 if abort else 0) | (0 if busy else 2)
    return bytes([11, b]) + (b"" if busy else bytes([18])) + bytes([chunk])


DEADLINE = bytes([15])


def MORE_INPUT(more):
    """Event 14 during a call with partial input: 1 + more % 32 more elements."""
    return bytes([14, more])


def waiting(b, count=1, rank=0):
    """A WAITING (event 13) for chunk base + b % 8 (b & 0x80: of the previous
    call; b & 0x20: another group; b & 0x40: no member missing, undecodable)."""
    return bytes([13, b]) + (b"" if b & 0x40 else bytes([count - 1])) + bytes([rank])


def connected(size=2, rank=0, window=2, slot_bytes=16):
    return shape(size, rank) + ack(window, slot_bytes) + ack(window, slot_bytes)


SEEDS = {
    # 10 int32 in chunks of 4 through a window of 2: results in order.
    "allreduce_in_order": connected() + call(0, INT32, SUM, 10) +
    result(0) + result(1) + result(2),
    # The same, results out of order, in place, then a second call.
    "allreduce_in_place_out_of_order": connected() + call(1, FLOAT32, SUM, 10) +
    result(1) + result(0) + result(2) + call(0, UINT8, MAX, 40) + result(0) + result(1) +
    result(2),
    # Refused busy, then served.
    "busy_then_served": connected(window=3) + call(0, INT32, SUM, 12) + refusal() +
    call(0, INT32, SUM, 12) + result(0) + result(1) + result(2),
    # The agent aborts mid-call; its stale result after it.
    "abort_mid_call": connected() + call(1, INT64, SUM, 9) + result(0) +
    refusal(abort=True, busy=False) + result(1),
    # A corrupted result (another chunk, slot, count, dtype, op, flags).
    "corrupt_chunk": connected() + call(0, INT32, SUM, 10) + result(0, 0),
    "corrupt_slot": connected() + call(0, INT32, SUM, 10) + result(0, 1),
    "corrupt_count": connected() + call(0, INT32, SUM, 10) + result(0, 2),
    "corrupt_dtype": connected() + call(0, INT32, SUM, 10) + result(0, 3 + 48),
    "corrupt_flags": connected() + call(0, INT32, SUM, 10) + result(0, 5),
    "previous_call_chunk": connected() + call(0, INT32, SUM, 4) + result(0) +
    call(0, INT32, SUM, 4) + result(0, 9),
    # Routed calls: reduce to all, reduce-scatter (wanted bounds), forward
    # (allgather-like piece), reduce with output over the input.
    "routed_reduce": connected(size=3, rank=1) + call(2, INT32, BXOR, 10) +
    result(0) + result(1) + result(2),
    "routed_reduce_scatter": connected(size=3, rank=1) +
    call(2 | 8, INT32, SUM, 12, bytes([4, 4, 4])) + result(0, payload=False) + result(1) +
    result(2, payload=False),
    "routed_forward": connected(size=2, rank=1) + call(2 | 4, UINT8, SUM, 20, bytes([10, 10])) +
    result(0) + result(1 | 0x40, payload=False),
    "routed_in_place": connected(size=2, rank=0) + call(2 | 8 | 32, INT32, SUM, 8, bytes([4, 4])) +
    result(0) + result(1, payload=False),
    # The caller's deadline passes with chunks in flight.
    "deadline": connected() + call(0, INT32, SUM, 10) + result(0) + DEADLINE,
    # Keepalives: WAITING for chunks in flight while a member is late, then
    # served; stale ones (a chunk not sent yet, another group, a chunk
    # answered, the previous call's) ignored; an undecodable one.
    "waiting_then_served": connected() + call(0, INT32, SUM, 10) + waiting(0, 1, 1) +
    result(0) + result(1) + waiting(2, 2, 0) + result(2),
    "waiting_stale": connected() + call(0, INT32, SUM, 10) + waiting(5) + waiting(0x20) +
    result(0) + waiting(0) + result(1) + result(2) + call(0, INT32, SUM, 10) + waiting(0x80) +
    result(0) + result(1) + result(2),
    "waiting_malformed": connected() + call(0, INT32, SUM, 10) + waiting(0x40),
    # Striped calls (kind | 64, then the stripe byte: K = 1 + b % 4, k =
    # (b >> 2) % K, b & 0x40: weights follow): stripe 1 of 3 of 10 int32
    # ([4, 7), one chunk); stripe 1 of 2 weighted 1:3 of a reduce-scatter
    # of 12 (the stripe is [3, 12); rank 1 wants [4, 8): chunks 0 and 1
    # carry its part, chunk 2 only a header).
    "striped_allreduce": connected() + call(64, INT32, SUM, 10, bytes([6])) + result(0),
    "striped_weighted_reduce_scatter": connected(size=3, rank=1) +
    call(64 | 2 | 8, INT32, SUM, 12, bytes([0x45, 0, 2, 4, 4, 4])) + result(0) + result(1) +
    result(2, payload=False),
    # Partial input (kind | 128, the ready elements after the input): 5 of
    # 12 ready (chunk 0 only), its result ready early (resultsReady 4), then
    # the rest (event 14: 11 more) and the other results.
    "partial_input_results": connected() + call(128, INT32, SUM, 12) + bytes([5]) + result(0) +
    MORE_INPUT(10) + result(1) + result(2),
    # Both: stripe 1 of 3 of 20 ([7, 14)): 9 of the vector ready is 2 of
    # the stripe (no chunk), then 13 (chunk 0), then all.
    "striped_partial_input": connected() + call(64 | 128, INT32, SUM, 20, bytes([6])) + bytes([9]) +
    MORE_INPUT(3) + result(0) + MORE_INPUT(0) + result(1),
    # HELLO refused (bad token); JOIN_ACK for another size.
    "hello_refused": shape(2, 0) + bytes([1, 2, 0]),
    "join_ack_other_size": shape(2, 0) + ack(2, 16) + bytes([2, 250, 15, 0]) + bytes(12),
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
