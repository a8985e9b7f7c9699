#!/usr/bin/env python3
"""Reads a TensorBoard event file without TensorFlow, protobuf or vitrain code: the TFRecord framing (little-endian
u64 length, masked CRC-32C of the length, payload, masked CRC-32C of the payload; the CRC computed bit by bit
here) and the protobuf wire format of Event / Summary / SessionLog decoded by hand. Prints one JSON object:
{"file_version": ..., "purge_steps": [...], "scalars": {tag: [[step, value, wall_time], ...]}}. Exits 1 naming
the record on a bad length, a CRC mismatch or a malformed message.

Usage: read_tfevents.py EVENT_FILE
"""
import json
import struct
import sys


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(data: bytes) -> int:
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(buf: bytes, i: int):
    shift = value = 0
    while True:
        if i >= len(buf):
            raise ValueError("varint runs past the end")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def fields(buf: bytes):
    """Yields (field number, wire type, value) of one message; value is int, bytes, or raw fixed bytes."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(buf, i)
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 2:
            n, i = varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire} of field {field}")
        if i > len(buf):
            raise ValueError(f"field {field} runs past the end")
        yield field, wire, value


def records(data: bytes):
    i = n = 0
    while i < len(data):
        if i + 12 > len(data):
            raise ValueError(f"record {n}: truncated header")
        header = data[i:i + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[i + 8:i + 12])
        if masked(header) != length_crc:
            raise ValueError(f"record {n}: length CRC mismatch")
        payload = data[i + 12:i + 12 + length]
        if len(payload) != length or i + 16 + length > len(data):
            raise ValueError(f"record {n}: truncated payload")
        (payload_crc,) = struct.unpack("<I", data[i + 12 + length:i + 16 + length])
        if masked(payload) != payload_crc:
            raise ValueError(f"record {n}: payload CRC mismatch")
        yield payload
        i += 16 + length
        n += 1


def main() -> int:
    data = open(sys.argv[1], "rb").read()
    out = {"file_version": None, "purge_steps": [], "scalars": {}}
    try:
        for payload in records(data):
            wall, step, summary, session = None, 0, None, None
            for field, wire, value in fields(payload):
                if field == 1 and wire == 1:
                    (wall,) = struct.unpack("<d", value)
                elif field == 2 and wire == 0:
                    step = value
                elif field == 3 and wire == 2:
                    out["file_version"] = value.decode()
                elif field == 5 and wire == 2:
                    summary = value
                elif field == 6 and wire == 2:
                    session = value
            if session is not None:
                status = next((v for f, w, v in fields(session) if f == 1 and w == 0), None)
                if status == 1:  # SessionLog.START
                    out["purge_steps"].append(step)
            if summary is not None:
                for f, w, value_msg in fields(summary):
                    if f != 1 or w != 2:
                        continue
                    tag, simple = None, None
                    for vf, vw, v in fields(value_msg):
                        if vf == 1 and vw == 2:
                            tag = v.decode()
                        elif vf == 2 and vw == 5:
                            (simple,) = struct.unpack("<f", v)
                    if tag is None or simple is None:
                        raise ValueError(f"a summary value without tag or simple_value at step {step}")
                    out["scalars"].setdefault(tag, []).append([step, simple, wall])
    except ValueError as e:
        print(f"read_tfevents: {sys.argv[1]}: {e}", file=sys.stderr)
        return 1
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
