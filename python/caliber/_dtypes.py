"""torch's dtype names and caliber's (f16, bf16, f32, ...), for the FlagGems plugin and the scripts
that read FlagGems' own records (standard library only: importable without torch, pytest or the
library, as scripts/flaggems-check imports it from the source tree). The library's table
(src/core/torch_dtypes.hpp, caliber_c_settings' "torch_dtypes") is the same: a test holds them
equal (tests/python/test_api.py)."""

DTYPES = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
          "complex64": "c64", "int32": "i32", "int64": "i64", "int16": "i16", "int8": "i8",
          "bool": "bool", "uint8": "u8"}


def dtype_name(d):
    """caliber's name of a torch dtype or its text ("torch.float16" -> f16), else torch's own."""
    text = str(d).replace("torch.", "")
    return DTYPES.get(text, text)


def torch_name(name):
    """torch's attribute name of caliber's dtype name (f16 -> "float16"); KeyError for one torch
    lacks."""
    for torch_text, ours in DTYPES.items():
        if ours == name:
            return torch_text
    raise KeyError(name)
