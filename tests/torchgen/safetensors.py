"""safetensors/: weights for core/io/safetensors.* and arrays for core/io/npy.*.

The `safetensors` package is not installed, so _safetensors_file writes the format by its spec:
an 8-byte little-endian header length, the JSON header padded with spaces to a multiple of 8 bytes,
then each tensor's little-endian bytes in order.
  encoder_{f32,f16,bf16,f64}.safetensors: the state_dict of a TransformerEncoderLayer (encoder_layer())
      in each dtype the engine reads.
  specials_{f32,f16,bf16,f64}.safetensors: edge values (zeros, subnormals, extremes, inf, NaN,
      signalling NaN, rounding ties, overflow and underflow to float32), a 0-d and an empty tensor.
  empty.safetensors: no tensors.
  *.npy: written by numpy.save ('<f4' and '<f8', 0-d to 2-d).
  expected.json: for each valid file, its tensors in the order of their data, each with its shape
      and the float32 bit patterns PyTorch's .float() gives.
  bad_*.safetensors, bad_*.npy and malformed.json: one broken file per rule of the formats, each
      with the substrings the engine's error message must contain.
"""
import io
import json
import pathlib
import struct

import numpy as np
import torch

DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64", torch.int64: "I64"}


def encoder_layer():
    """The module whose weights the fixtures hold (tests/torch_load_check.py loads ours into it)."""
    torch.manual_seed(0)
    return torch.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True)


def state_dict():
    return {k: v.contiguous() for k, v in encoder_layer().state_dict().items()}


def _bits(t):
    return [v & 0xFFFFFFFF for v in t.float().contiguous().view(torch.int32).reshape(-1).tolist()]


def _raw_bytes(t):
    # numpy has no bfloat16: take the bytes through int16.
    return (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()


def _safetensors_file(tensors, metadata=None):
    header = {"__metadata__": metadata} if metadata else {}
    data, offset = [], 0
    for name, t in tensors.items():
        data.append(_raw_bytes(t))
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data[-1])]}
        offset += len(data[-1])
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(data)


def _from_bits(patterns, int_dtype, dtype, width):
    signed = [p - (1 << width) if p >> (width - 1) else p for p in patterns]
    return torch.tensor(signed, dtype=int_dtype).view(dtype)


def _specials():
    f32 = _from_bits([0, 0x80000000, 0x00000001, 0x007FFFFF, 0x00800000, 0x3F800000, 0x7F7FFFFF,
                      0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC12345, 0x7FA00001],
                     torch.int32, torch.float32, 32)
    f16 = _from_bits([0x0000, 0x8000, 0x0001, 0x8001, 0x0200, 0x03FF, 0x0400, 0x3C00, 0x3555, 0x7BFF,
                      0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7D01, 0x7FFF], torch.int16, torch.float16, 16)
    bf16 = _from_bits([0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x3F80, 0x3EAB, 0x7F7F, 0xFF7F, 0x7F80,
                       0xFF80, 0x7FC0, 0x7F81, 0xFFFF], torch.int16, torch.bfloat16, 16)
    # Canonical NaN only: WebAssembly leaves the payload of other NaNs narrowed to float32 open.
    f64 = torch.tensor([0.0, -0.0, 1.0, 1 / 3, 1 + 2**-24, 1 + 3 * 2**-24, 1 + 2**-24 + 2**-52, 2**-149,
                        2**-150, 3 * 2**-150, 1e-50, -1e-50, 3.4028235677973362e38, 3.4028235677973366e38,
                        1e300, -1e300, float("inf"), float("-inf"), float("nan")], dtype=torch.float64)
    return {name: {"scalar": values[3].clone(), "empty": values[:0].reshape(0, 3), "values": values}
            for name, values in (("f32", f32), ("f16", f16), ("bf16", bf16), ("f64", f64))}


def _valid_files():
    files = {f"encoder_{suffix}.safetensors": ({k: v.to(dtype) for k, v in state_dict().items()}, {"format": "pt"})
             for suffix, dtype in (("f32", torch.float32), ("f16", torch.float16), ("bf16", torch.bfloat16),
                                   ("f64", torch.float64))}
    for suffix, tensors in _specials().items():
        files[f"specials_{suffix}.safetensors"] = (tensors, None)
    files["empty.safetensors"] = ({}, None)
    return files


def _arrays():
    weight = state_dict()["self_attn.in_proj_weight"].numpy()
    rng = np.random.default_rng(0)
    return {"weight_f4.npy": weight, "vector_f4.npy": weight[0].copy(), "scalar_f4.npy": np.array(weight[0, 0]),
            "empty_f4.npy": np.zeros((0, 3), "<f4"),
            # 14 axes: the header ends on a 64-byte boundary, where numpy pads a whole 64 bytes.
            "padded_f4.npy": np.arange(200, dtype="<f4").reshape((2,) + (1,) * 12 + (100,)), "values_f8.npy": rng.standard_normal((3, 4)),
            "ties_f8.npy": np.array([1 + 2**-24, 1 + 3 * 2**-24, 2**-150, 1e300, -0.0]),
            # PyTorch's token ids and masks as numpy saves them; read as floats (exact up to 2^24).
            "ids_i8.npy": np.array([[0, 5, 50256], [2**24, -3, 7]], "<i8"), "ids_i4.npy": np.arange(-3, 3, dtype="<i4"),
            "mask_b1.npy": np.tril(np.ones((3, 3), bool)), "bytes_u1.npy": np.array([0, 1, 255], "<u1")}


def _raw(header, data=b"", length=None):
    """A file from the header text as given (no padding), with a wrong length if asked."""
    header = header.encode() if isinstance(header, str) else header
    return struct.pack("<Q", len(header) if length is None else length) + header + data


W = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}  # a well-formed entry with 8 data bytes


def _entry(name="w", data=b"\0" * 8, **changes):
    """A file holding W changed as asked (a value of None removes the key)."""
    entry = {k: v for k, v in {**W, **changes}.items() if v is not None}
    return _raw(json.dumps({name: entry}), data)


def _tensors(header, data):
    return _raw(json.dumps(header), data)


def _malformed_safetensors():
    rule = "shape must be a list of non-negative integers"
    pair = {"dtype": "F32", "shape": [2]}
    unsupported = "is not supported for this engine"
    cases = {
        "short": (b"\x02\0\0\0\0", ["shorter than 8 bytes"]),
        "header_length_zero": (_raw("", b"{}"), ["header length is 0"]),
        "header_too_long": (_raw("{}", length=100_000_001), ["exceeds the limit of 100000000 bytes"]),
        "header_past_end": (_raw("{}", length=64), ["runs past the end of the file"]),
        "header_not_utf8": (_raw(b'{"w\xff":{}}'), ["header is not valid UTF-8"]),
        "header_not_json": (_raw('{"w": '), ["header is not valid JSON"]),
        "header_not_object": (_raw("[1, 2]"), ["header is not a JSON object"]),
        "entry_not_object": (_tensors({"w": [1]}, b""), ["tensor 'w'", "entry is not an object"]),
        "entry_missing_key": (_entry(data_offsets=None), ["tensor 'w'", "missing key 'data_offsets'"]),
        "entry_extra_key": (_entry(offset=0), ["tensor 'w'", "unexpected key 'offset'"]),
        "dtype_unknown": (_entry(dtype="F12"), ["tensor 'w'", "unknown dtype 'F12'"]),
        "dtype_not_string": (_entry(dtype=4), ["tensor 'w'", "dtype must be a string"]),
        "dtype_i64": (_entry(dtype="I64", shape=[1]), ["tensor 'w'", "dtype I64 " + unsupported]),
        "dtype_bool": (_entry(dtype="BOOL", shape=[8]), ["tensor 'w'", "dtype BOOL " + unsupported]),
        "dtype_f8": (_entry(dtype="F8_E4M3", shape=[8]), ["tensor 'w'", "dtype F8_E4M3 " + unsupported]),
        "shape_negative": (_entry(shape=[-1, 2]), ["tensor 'w'", rule]),
        "shape_float": (_entry(shape=[2.0]), ["tensor 'w'", rule]),
        "shape_not_list": (_entry(shape=2), ["tensor 'w'", rule]),
        # A number beyond a double's range: the JSON parser's out_of_range, not its parse_error.
        "shape_number_overflow": (_raw('{"w":{"dtype":"F32","shape":[11e309952],"data_offsets":[0,8]}}', b"\0" * 8),
                                  ["header is not valid JSON", "number overflow"]),
        "offsets_one": (_entry(data_offsets=[0]), ["tensor 'w'", "data_offsets must be two non-negative integers"]),
        "offsets_float": (_entry(data_offsets=[0, 8.0]), ["tensor 'w'", "data_offsets must be two non-negative"]),
        "offsets_reversed": (_entry(data_offsets=[8, 0]), ["tensor 'w'", "begin is past end"]),
        "byte_size_mismatch": (_entry(shape=[2, 3]), ["tensor 'w'", "byte size 24", "differs from data_offsets"]),
        "byte_size_overflow": (_entry(shape=[2**62, 8]), ["tensor 'w'", "overflows 64 bits"]),
        # Empty, but the strides before the zero (2**80 elements) overflow: found by fuzz_npy.
        "strides_overflow": (_entry(shape=[0, 2**40, 2**40], data_offsets=[0, 0], data=b""),
                             ["tensor 'w'", "too large to index"]),
        "out_of_bounds": (_entry(data=b"\0" * 4), ["tensor 'w'", "out of bounds"]),
        # Claims a 1 TB tensor in a tiny file: refused by the bounds check, before any allocation.
        "out_of_bounds_1tb": (_entry(shape=[250_000_000_000], data_offsets=[0, 10**12]), ["tensor 'w'", "out of bounds"]),
        "overlap": (_tensors({"a": {**pair, "data_offsets": [0, 8]}, "b": {**pair, "data_offsets": [4, 12]}},
                             b"\0" * 12), ["tensor 'b'", "overlap"]),
        "hole": (_tensors({"a": {**pair, "data_offsets": [0, 8]}, "b": {**pair, "data_offsets": [12, 20]}},
                          b"\0" * 20), ["tensor 'b'", "leave a hole after byte 8"]),
        "not_from_zero": (_entry(data_offsets=[8, 16], data=b"\0" * 16), ["tensor 'w'", "leave a hole after byte 0"]),
        "trailing_bytes": (_entry(data=b"\0" * 12), ["trailing bytes", "the data buffer is 12 bytes, the tensors cover 8"]),
        "trailing_bytes_no_tensors": (_raw("{}", b"\0"), ["trailing bytes", "the data buffer is 1 bytes"]),
        "duplicate_name": (_raw('{"w":' + json.dumps(W) + ',"w":' + json.dumps(W) + "}", b"\0" * 8),
                           ["duplicate tensor name 'w'"]),
        "duplicate_key": (_raw('{"w":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}}', b"\0" * 8),
                          ["tensor 'w'", "duplicate key 'dtype'"]),
        "metadata_not_object": (_tensors({"__metadata__": ["pt"]}, b""), ["__metadata__ must be an object of strings"]),
        "metadata_not_strings": (_tensors({"__metadata__": {"epoch": 3}}, b""),
                                 ["__metadata__ must be an object of strings"]),
    }
    return {f"bad_{name}.safetensors": case for name, case in cases.items()}


def _npy_bytes(array):
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _malformed_npy():
    good = _npy_bytes(np.ones(4, "<f4"))
    no_shape = "{'descr': '<f4', 'fortran_order': False, }"
    # Each dimension fits 32 bits (WebAssembly's size_t), their product fits neither 32 nor 64.
    huge = "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4000000000, 4000000000, 4000000000), }"
    return {
        "bad_fortran.npy": (_npy_bytes(np.asfortranarray(np.ones((2, 3), "<f4"))), ["fortran_order is True"]),
        "bad_int16.npy": (_npy_bytes(np.arange(3, dtype="<i2")), ["dtype '<i2' is not supported"]),
        "bad_big_endian.npy": (_npy_bytes(np.ones(3, ">f4")), ["dtype '>f4' is not supported"]),
        "bad_magic.npy": (b"\x93NUMPZ" + good[6:], ["bad magic"]),
        "bad_version.npy": (good[:6] + b"\x04" + good[7:], ["format version 4 is not supported"]),
        "bad_truncated.npy": (good[:-4], ["needs 16 bytes of data, the file has 12 (truncated)"]),
        "bad_trailing.npy": (good + b"\0" * 4, ["the file has 20 (trailing bytes)"]),
        "bad_header_length.npy": (good[:8] + b"\xff\xff" + good[10:], ["truncated header"]),
        "bad_no_shape.npy": (b"\x93NUMPY\x01\x00" + struct.pack("<H", len(no_shape)) + no_shape.encode(),
                             ["malformed header", "are all required"]),
        # Empty, but the strides before the zero overflow (numpy refuses to make it; found by fuzz_npy).
        "bad_strides_overflow.npy": (b"\x93NUMPY\x01\x00" + struct.pack("<H", len(huge)) + huge.encode(),
                                     ["too large to index"]),
    }


def generate(out_dir: pathlib.Path) -> None:
    out = out_dir / "safetensors"
    out.mkdir(parents=True, exist_ok=True)
    expected = {"safetensors": {}, "npy": {}}
    for name, (tensors, metadata) in _valid_files().items():
        (out / name).write_bytes(_safetensors_file(tensors, metadata))
        expected["safetensors"][name] = [{"name": k, "shape": list(v.shape), "bits": _bits(v)}
                                         for k, v in tensors.items()]
    for name, array in _arrays().items():
        np.save(out / name, array)
        expected["npy"][name] = {"shape": list(array.shape), "bits": _bits(torch.from_numpy(array))}
    malformed = {"safetensors": [], "npy": []}
    for kind, cases in (("safetensors", _malformed_safetensors()), ("npy", _malformed_npy())):
        for name, (data, substrings) in cases.items():
            (out / name).write_bytes(data)
            malformed[kind].append({"file": name, "contains": substrings})
    (out / "expected.json").write_text(json.dumps(expected) + "\n")
    (out / "malformed.json").write_text(json.dumps(malformed, indent=1) + "\n")
