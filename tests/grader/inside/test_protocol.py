"""The one protocol between the grader and student code (grader/inside/protocol.py): bounded, plain data only."""
import io
import json
import socket
import struct
import threading
import time
import zipfile

import pytest
import torch

from grader.inside import protocol
from grader.inside.protocol import HandleRef, WorkerSpec


def test_plain_data_and_handles_round_trip_with_strides_and_dtypes():
    message = {"op": "call", "target": HandleRef(3), "args": (torch.randn(3, 4).t(), [1, 2.5, None]),
               "kwargs": {"dim": -1, "dtype": torch.float64}}
    back = protocol.decode(protocol.encode(message), limit=1 << 20)
    assert back["target"] == HandleRef(3) and back["kwargs"] == {"dim": -1, "dtype": torch.float64}
    assert torch.equal(back["args"][0], message["args"][0]) and not back["args"][0].is_contiguous()
    assert back["args"][1] == [1, 2.5, None]


def _rezip(payload: bytes, compression: int) -> bytes:
    """The same archive with every entry stored with ``compression``."""
    source, out = zipfile.ZipFile(io.BytesIO(payload)), io.BytesIO()
    with zipfile.ZipFile(out, "w", compression) as target:
        for entry in source.infolist():
            target.writestr(entry.filename, source.read(entry))
    return out.getvalue()


def _deflated_archive() -> bytes:
    """torch.save's archive of a million zeros, its entries deflated: 1,000 times smaller than that."""
    plain = io.BytesIO()
    torch.save({"ok": True, "out": torch.zeros(1 << 20)}, plain)
    return _rezip(plain.getvalue(), zipfile.ZIP_DEFLATED)


def test_a_compressed_reply_is_refused_before_it_is_inflated():
    payload = _deflated_archive()
    assert len(payload) < 20_000
    with pytest.raises(protocol.MalformedMessage):
        protocol.decode(payload, limit=1 << 30)


def test_over_the_limit_or_not_plain_data_is_refused():
    with pytest.raises(protocol.MessageTooLarge):
        protocol.decode(protocol.encode({"out": torch.zeros(1000)}), limit=1000)
    with pytest.raises(protocol.MalformedMessage):
        protocol.decode(b"\x80\x04K\x01.", limit=1 << 20)  # a bare pickle, as the old wire format was
    with pytest.raises(protocol.MalformedMessage):
        protocol.decode(protocol.encode({"x": torch.ones(10)})[:-8], limit=1 << 20)  # bytes missing


def test_a_header_that_lies_about_a_tensors_size_is_refused_before_memory_is_taken():
    """A tensor declared as 2**40 elements with 4 bytes behind it: refused from the header alone."""
    payload = protocol.encode({"out": torch.ones(1)})
    (size,) = struct.unpack_from("!I", payload)
    header = json.loads(payload[4:4 + size])
    header["tensors"][0][1] = [1 << 40]
    forged = json.dumps(header).encode()
    with pytest.raises(protocol.MalformedMessage, match="do not match"):
        protocol.decode(struct.pack("!I", len(forged)) + forged + payload[4 + size:], limit=1 << 20)
    header["tensors"][0][2] = [0]  # stride 0: one element's bytes stand for any shape, but count in full
    forged = json.dumps(header).encode()
    with pytest.raises(protocol.MessageTooLarge):
        protocol.decode(struct.pack("!I", len(forged)) + forged + payload[4 + size:], limit=1 << 20)


def _forged(payload: bytes, entry) -> bytes:
    (size,) = struct.unpack_from("!I", payload)
    header = json.loads(payload[4:4 + size])
    header["tensors"][0] = entry
    forged = json.dumps(header).encode()
    return struct.pack("!I", len(forged)) + forged + payload[4 + size:]


@pytest.mark.parametrize("shape,strides", [([0, 1 << 63], [1, 1]), ([0, 1 << 49], [1, 1]), ([0, 3], [1 << 63, 1]),
                                           ([0] * 16, [1 << 62] * 16), ([0, 5], [0, 0])])
def test_any_header_torch_cannot_make_a_tensor_of_is_malformed_never_another_error(shape, strides):
    """Red team round 18: an empty tensor declared [0, 2**63] passed the header's checks and raised TypeError
    in torch, outside the decoder's refusals: the check became a grader error, left out of the score (and
    the notebook service printed full points for it). Every such header is the sender's fault now."""
    payload = protocol.encode({"ok": True, "out": torch.ones(0)})
    forged = _forged(payload, ["float32", shape, strides, "cpu", 0])
    try:
        back = protocol.decode(forged, limit=1 << 20)
    except protocol.MalformedMessage:
        return
    assert back["out"].numel() == 0  # or an empty tensor of that shape, which torch can make


def test_a_stride_0_reply_counts_at_its_full_size_and_a_small_expanded_one_still_arrives():
    """Issue 21: a [12000, 10000] float32 of zero strides is 4 bytes on the wire and 480 MB once
    converted; it is refused against the limit. An answer that returns ``expand()`` within it arrives
    as it was sent, strides and all."""
    giant = torch.zeros(1).expand(12000, 10000)
    assert len(protocol.encode({"out": giant})) < 200
    with pytest.raises(protocol.MessageTooLarge):
        protocol.decode(protocol.encode({"out": giant}), limit=64 << 20)
    overlapping = torch.arange(9999.0).as_strided((5000, 5000), (1, 1))  # 25 million entries over 9999
    with pytest.raises(protocol.MessageTooLarge):
        protocol.decode(protocol.encode({"out": overlapping}), limit=64 << 20)
    mask = torch.ones(1, 1, 6, 6, dtype=torch.bool).triu(1).expand(2, 4, 6, 6)
    back = protocol.decode(protocol.encode({"out": mask}), limit=1 << 20)["out"]
    assert torch.equal(back, mask) and back.stride() == mask.stride()


def test_an_object_of_the_senders_choosing_is_never_built_nor_sent():
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    buffer = io.BytesIO()
    torch.save({"out": Evil()}, buffer)
    with pytest.raises(protocol.MalformedMessage):
        protocol.decode(buffer.getvalue(), limit=1 << 20)
    with pytest.raises(TypeError):
        protocol.encode({"out": Evil()})


def test_a_peer_that_stops_reading_makes_a_send_time_out_not_hang():
    ours, theirs = socket.socketpair()
    started = time.monotonic()
    with pytest.raises(protocol.ChannelTimeout):
        protocol.send(ours, b"x" * (64 << 20), timeout=0.5)
    assert time.monotonic() - started < 3
    ours.close()
    theirs.close()


def test_a_frame_announcing_more_than_the_limit_is_refused_unread():
    ours, theirs = socket.socketpair()
    theirs.sendall((1 << 40).to_bytes(8, "big"))
    with pytest.raises(protocol.MessageTooLarge):
        protocol.recv(ours, limit=1 << 20, timeout=1)


def test_a_silent_peer_times_out_and_a_closed_one_is_closed():
    ours, theirs = socket.socketpair()
    with pytest.raises(protocol.ChannelTimeout):
        protocol.recv(ours, limit=100, timeout=0.2)
    threading.Timer(0.1, theirs.close).start()
    with pytest.raises(protocol.ChannelClosed):
        protocol.recv(ours, limit=100, timeout=5)


@pytest.mark.parametrize("size", [protocol.SMALL // 2, protocol.PREALLOCATED + (1 << 20)])
def test_a_frame_of_any_size_arrives_whole_and_each_tensor_owns_its_bytes(size):
    """A frame below SMALL is written in one piece, above it its length and payload apart; one up to
    PREALLOCATED is read into one buffer, a larger one as it arrives. Either way the tensors come back
    equal, strides kept, and writing into one changes neither the other nor the frame they came in."""
    ours, theirs = socket.socketpair()
    first = torch.arange(size // 16, dtype=torch.float64)
    second = torch.arange(12, dtype=torch.int32).reshape(3, 4).t()
    payload = protocol.encode({"out": [first, second]})
    sender = threading.Thread(target=protocol.send, args=(theirs, payload), kwargs={"timeout": 30})
    sender.start()
    frame = protocol.recv(ours, limit=1 << 30, timeout=30)
    sender.join()
    assert bytes(frame) == payload
    back = protocol.decode(frame, limit=1 << 30)["out"]
    assert torch.equal(back[0], first) and torch.equal(back[1], second) and back[1].stride() == second.stride()
    back[0].fill_(-1.0)
    back[1].fill_(-1)
    assert torch.equal(protocol.decode(frame, limit=1 << 30)["out"][1], second)
    ours.close()
    theirs.close()


def test_a_frame_announced_larger_than_any_buffer_and_never_sent_times_out():
    ours, theirs = socket.socketpair()
    theirs.sendall((protocol.PREALLOCATED * 4).to_bytes(8, "big") + b"x" * 100)
    with pytest.raises(protocol.ChannelTimeout):
        protocol.recv(ours, limit=1 << 40, timeout=0.3)
    ours.close()
    theirs.close()


def test_a_worker_spec_crosses_the_wire_as_plain_data():
    spec = WorkerSpec("m", "/grade/work/a/m.py", ("/grade/work/a",), "/grade/work/a", "/grade/work",
                      (("/grade/work/a", "a"),), "cpu", 1 << 30, 1 << 20, uid=2_000_000_001,
                      cgroups=("/grade/cgroup/0/s1/cgroup.procs",))
    assert WorkerSpec.from_wire(protocol.decode(protocol.encode(spec.to_wire()), limit=1 << 20)) == spec


def test_clip_marks_the_cut():
    assert protocol.clip("x" * 10, 4) == "xxxx ... (cut)" and protocol.clip("short") == "short"


def test_the_itemsizes_the_decoder_counts_with_are_torchs_own():
    """The decoder checks each tensor's bytes against its shape with a table of item sizes (no torch
    lookup per tensor): it must be torch's, for every dtype the protocol carries."""
    import torch

    from grader.inside.protocol import _DTYPES, _ITEMSIZES

    assert set(_ITEMSIZES) == set(_DTYPES)
    assert all(getattr(torch, name).itemsize == size for name, size in _ITEMSIZES.items())


@pytest.mark.parametrize("device", ["garbage", "cuda:-5", ""])
def test_a_device_name_torch_cannot_read_is_a_malformed_message(device):
    """Red team round 18, re-test: {"$device": "garbage"} let torch's RuntimeError out of the decoder."""
    payload = protocol.encode({"ok": True, "out": torch.device("cpu")})
    (size,) = struct.unpack_from("!I", payload)
    header = json.loads(payload[4:4 + size].decode().replace('"$device":"cpu"', f'"$device":"{device}"'))
    forged = json.dumps(header).encode()
    with pytest.raises(protocol.MalformedMessage, match="RuntimeError"):
        protocol.decode(struct.pack("!I", len(forged)) + forged + payload[4 + size:], limit=1 << 20)
