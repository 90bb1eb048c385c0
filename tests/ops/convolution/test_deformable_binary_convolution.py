"""DeformableConvolution-1/-8 and BinaryConvolution-1 against OpenVINO's CPU plugin and the
per-element oracles of `oracles.deformable`.

DeformableConvolution: groups, deformable groups, strides, dilations, asymmetric pads, every
auto_pad, -8 with and without a mask and with both `bilinear_interpolation_pad` values; offsets
large enough to send taps outside the map, onto exact pixels and onto the map's edges; f32,
f16, bf16 (the CPU plugin at f32) and f64 (the oracle alone: the plugin computes f64 in f32).
Tolerance: 4 ulps plus 1e-5 (f32) or 2 ulps plus 1e-2 (16-bit types; sums that cancel), as
the plugin and the oracle add the taps in other orders. -8 without the pad moves a location in
(-1, 0) onto the first row or column, as its spec says; OpenVINO reads 0 there: the CPU cases
keep their locations out of that band, and the band has cases of its own, judged by the oracle.
In one compiled model the CPU plugin runs every DeformableConvolution layer of one set of shapes
with the bilinear_interpolation_pad of the first of them, so the padded cases are shaped apart.

BinaryConvolution: exact. The CPU plugin answers differently on two runs of the same inputs
(it reads memory it has not written) and the core reference cannot evaluate the op, so the
oracle judges. The filters are u1 Parameters here (the harness writes Const bytes unpacked);
`test_binary_convolution_packed_const` reads packed u1 weights from an IR file.
"""

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles.deformable import binary_convolution, deformable_convolution

import irscatter
from irscatter.ir.element_types import ElementType, encode

rng = np.random.default_rng(1608)

FLOATS = [np.float32, np.float16, ml_dtypes.bfloat16]
TOL = {"float32": (4, 1e-5), "float16": (2, 1e-2), "bfloat16": (2, 1e-2), "float64": (4, 1e-12)}
SAMPLING = {1: "clamp-reference", 8: "clamp-spec"}
BINARY_WHY = ("OpenVINO's CPU plugin answers differently on two runs of the same BinaryConvolution inputs, and "
              "its core reference has no evaluate for it")
BAND_WHY = ("-8 without the pad: the spec moves a location in (-1, 0) onto the map's first row or column; "
            "OpenVINO reads 0 there")


def _out_dims(shape, kernel, strides, dilations, pads_begin, pads_end, auto_pad):
    out, pads = [], []
    for i in range(2):
        size, k, s, d = shape[2 + i], kernel[i], strides[i], dilations[i]
        if auto_pad in ("same_upper", "same_lower"):
            o = -(-size // s)
            total = max(0, (o - 1) * s + (k - 1) * d + 1 - size)
            b = total // 2 if auto_pad == "same_upper" else total - total // 2
        else:
            b, e = (pads_begin[i], pads_end[i]) if auto_pad == "explicit" else (0, 0)
            o = (size + b + e - ((k - 1) * d + 1)) // s + 1
        out.append(o)
        pads.append(b)
    return out, pads


def _out_of_band(offsets, shape, kernel, strides, dilations, pads, dg):
    """Offsets moved by -1 wherever their location falls in (-1, 0), where the spec and OpenVINO
    differ for -8 without the pad; True when any moved."""
    n, _, oh, ow = offsets.shape
    ky, kx = kernel
    off = offsets.astype(np.float32).reshape(n, dg, ky * kx, 2, oh, ow)
    base_y = (np.arange(oh) * strides[0] - pads[0])[None, :] + (np.arange(ky) * dilations[0])[:, None]
    base_x = (np.arange(ow) * strides[1] - pads[1])[None, :] + (np.arange(kx) * dilations[1])[:, None]
    pos_y = np.repeat(base_y, kx, axis=0)[:, :, None] + off[:, :, :, 0]
    pos_x = np.tile(base_x, (ky, 1))[:, None, :] + off[:, :, :, 1]
    band_y, band_x = (pos_y > -1) & (pos_y < 0), (pos_x > -1) & (pos_x < 0)
    off[:, :, :, 0] -= band_y
    off[:, :, :, 1] -= band_x
    return off.reshape(offsets.shape).astype(offsets.dtype), bool(band_y.any() or band_x.any())


def _deformable(cid, version, dtype, *, n=1, c=2, hw=(4, 5), o=2, kernel=(2, 2), strides=(1, 1), dilations=(1, 1),
                pads_begin=(0, 0), pads_end=(0, 0), auto_pad="explicit", group=1, dg=1, pad=None, mask=False,
                spread=1.5, band="avoid", edges=False, **kw):
    """One case; `band`: "avoid" keeps -8's unpadded locations out of (-1, 0), "force" puts some there."""
    if pad:
        # The CPU plugin shares one kernel between the layers of a model that differ only in
        # bilinear_interpolation_pad (the first compiled wins), so the padded cases get a
        # width of their own in the batch.
        hw = (hw[0], hw[1] + 7)
    shape = (n, c, *hw)
    out, pads = _out_dims(shape, kernel, strides, dilations, pads_begin, pads_end, auto_pad)
    taps = kernel[0] * kernel[1]
    x = harness.values(rng, shape, np.float32, low=-2, high=2, edges=edges).astype(dtype)
    offsets = rng.uniform(-spread, spread, (n, dg * taps * 2, *out)).astype(np.float32)
    whole = rng.random(offsets.shape) < 0.2  # some taps land exactly on pixels
    offsets = np.where(whole, np.round(offsets), offsets).astype(dtype)
    filters = harness.values(rng, (o, c // group, *kernel), np.float32, low=-1, high=1).astype(dtype)
    inputs = [Input("data", x), Input("offsets", offsets), Input("filters", filters, const=True)]
    attrs = {"strides": strides, "pads_begin": pads_begin, "pads_end": pads_end, "dilations": dilations,
             "auto_pad": auto_pad, "group": group, "deformable_group": dg}
    sampling = SAMPLING[version]
    if version == 8:
        attrs["bilinear_interpolation_pad"] = pad
        sampling = "pad" if pad else sampling
        if mask:
            m = rng.uniform(0, 1, (n, dg * taps, *out)).astype(dtype)
            inputs.append(Input("mask", m))
        if not pad:
            if band == "avoid":
                inputs[1].value, _ = _out_of_band(offsets, shape, kernel, strides, dilations, pads, dg)
            else:
                kw.update(openvino="none", why=BAND_WHY)
                inputs[1].value = np.where(rng.random(offsets.shape) < 0.5, np.float32(-0.5), offsets).astype(dtype)
    name = np.dtype(dtype).name
    if name == "float64":
        kw.setdefault("openvino", "none")
        kw.setdefault("why", "OpenVINO's CPU plugin computes f64 in f32")
    ulps, atol = TOL[name]

    def oracle(*arrays):
        return deformable_convolution(*arrays, strides=strides, pads_begin=pads_begin, pads_end=pads_end,
                                      dilations=dilations, auto_pad=auto_pad, group=group, deformable_group=dg,
                                      sampling=sampling)
    return Case(cid, "DeformableConvolution", f"opset{version}", inputs, attrs, oracle=oracle,
                **{"ulps": ulps, "atol": atol, **kw})


def _deformable_cases():
    out = []
    variants = [(1, None, False), (8, False, False), (8, True, False), (8, False, True), (8, True, True)]
    shapes = [  # keyword sets: channels, groups, kernel, strides, dilations, pads
        {},
        {"n": 2, "c": 4, "o": 4, "group": 2, "dg": 2, "kernel": (3, 2), "hw": (5, 6)},
        {"c": 4, "o": 2, "dg": 4, "strides": (2, 1), "dilations": (1, 2), "pads_begin": (1, 0), "pads_end": (0, 2),
         "hw": (5, 6)},
        {"c": 3, "o": 6, "group": 3, "kernel": (1, 3), "pads_begin": (2, 1), "pads_end": (1, 2), "spread": 3.0},
        {"hw": (1, 6), "kernel": (1, 2), "strides": (1, 3)},
    ]
    for version, pad, mask in variants:
        for dtype in FLOATS:
            for k, kw in enumerate(shapes):
                tag = f"deform{version}-{'pad' if pad else 'nopad'}{'-mask' if mask else ''}-{np.dtype(dtype).name}-{k}"
                out.append(_deformable(tag, version, dtype, pad=pad, mask=mask, **kw))
        for auto_pad in ("valid", "same_upper", "same_lower"):
            out.append(_deformable(f"deform{version}-{pad}-{mask}-{auto_pad}", version, np.float32, pad=pad, mask=mask,
                                   auto_pad=auto_pad, kernel=(3, 2), strides=(2, 2), dilations=(1, 2), hw=(5, 6),
                                   pads_begin=(9, 9), pads_end=(9, 9)))
        out.append(_deformable(f"deform{version}-{pad}-{mask}-f64", version, np.float64, pad=pad, mask=mask,
                               **shapes[1]))
        out.append(_deformable(f"deform{version}-{pad}-{mask}-edges", version, np.float32, pad=pad, mask=mask,
                               edges=True, hw=(4, 4)))
        out.append(_deformable(f"deform{version}-{pad}-{mask}-batch0", version, np.float32, pad=pad, mask=mask, n=0))
    for dtype in (np.float32, np.float16, np.float64):
        for mask in (False, True):
            out.append(_deformable(f"deform8-band-{np.dtype(dtype).name}-{mask}", 8, dtype, pad=False, mask=mask,
                                   band="force", c=2, dg=2, pads_begin=(1, 1), pads_end=(1, 1)))
    # offsets that reach past the map by more than a pixel, or are not numbers
    far = _deformable("deform8-far", 8, np.float32, pad=True, spread=40.0)
    out.append(far)
    odd = _deformable("deform1-nan-offsets", 1, np.float32)
    odd.inputs[1].value = odd.inputs[1].value.copy()
    odd.inputs[1].value.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
    out.append(odd)
    return out


def _deformable_errors():
    def err(cid, label, version=8, *, shapes=((1, 2, 4, 4), (1, 8, 3, 3), (2, 2, 2, 2)), mask=None,
            dtype=np.float32, **attrs):
        full = {"strides": (1, 1), "pads_begin": (0, 0), "pads_end": (0, 0), "dilations": (1, 1), **attrs}
        arrays = [np.zeros(s, dtype) for s in shapes] + ([np.zeros(mask, dtype)] if mask else [])
        names = ["data", "offsets", "filters", "mask"]
        return Case(cid, "DeformableConvolution", f"opset{version}",
                    [Input(names[k], a) for k, a in enumerate(arrays)], full, error=label)
    return [
        err("deform-err-rank", "deformable-rank", shapes=((1, 2, 4), (1, 8, 3, 3), (2, 2, 2, 2))),
        err("deform-err-filter-rank", "deformable-rank", 1, shapes=((1, 2, 4, 4), (1, 8, 3, 3), (2, 2, 2))),
        err("deform-err-group", "conv-channels", group=2, shapes=((1, 3, 4, 4), (1, 8, 3, 3), (2, 1, 2, 2))),
        err("deform-err-group-out", "conv-channels", group=2, shapes=((1, 2, 4, 4), (1, 8, 3, 3), (3, 1, 2, 2))),
        err("deform-err-channels", "conv-channels", shapes=((1, 2, 4, 4), (1, 8, 3, 3), (2, 3, 2, 2))),
        err("deform-err-dg", "deformable-group-channels", deformable_group=2,
            shapes=((1, 3, 4, 4), (1, 16, 3, 3), (2, 3, 2, 2))),
        err("deform-err-offsets-channels", "deformable-offsets-shape",
            shapes=((1, 2, 4, 4), (1, 6, 3, 3), (2, 2, 2, 2))),
        err("deform-err-offsets-batch", "deformable-offsets-shape", shapes=((1, 2, 4, 4), (2, 8, 3, 3), (2, 2, 2, 2))),
        err("deform-err-offsets-spatial", "deformable-offsets-shape", 1,
            shapes=((1, 2, 4, 4), (1, 8, 3, 2), (2, 2, 2, 2))),
        err("deform-err-mask-channels", "deformable-mask-shape", mask=(1, 8, 3, 3)),
        err("deform-err-mask-spatial", "deformable-mask-shape", mask=(1, 4, 2, 3)),
        err("deform-err-mask-rank", "deformable-rank", mask=(1, 4, 9)),
        err("deform-err-int", "float-type", dtype=np.int32),
        Case("deform-err-types", "DeformableConvolution", "opset1",
             [Input("data", np.zeros((1, 2, 4, 4), np.float32)), Input("offsets", np.zeros((1, 8, 3, 3), np.float16)),
              Input("filters", np.zeros((2, 2, 2, 2), np.float32))],
             {"strides": (1, 1), "pads_begin": (0, 0), "pads_end": (0, 0), "dilations": (1, 1)},
             error="same-element-type"),
        err("deform-err-strides-length", "conv-attribute-length", strides=(1,)),
        err("deform-err-dilation-zero", "conv-attribute-range", dilations=(0, 1)),
        err("deform-err-window", "conv-window", shapes=((1, 2, 1, 4), (1, 8, 3, 3), (2, 2, 2, 2))),
        err("deform-err-group-zero", "attributes", group=0),
        err("deform-err-auto-pad", "attributes", auto_pad="same"),
    ]


# --- BinaryConvolution --------------------------------------------------------------------------


def _binary(cid, dtype, *, n=1, c=2, hw=(4, 5), o=3, kernel=(2, 2), strides=(1, 1), dilations=(1, 1),
            pads_begin=(0, 0), pads_end=(0, 0), auto_pad="explicit", pad_value=0.0, odd=False, **kw):
    shape = (n, c, *hw)
    x = rng.integers(0, 2, shape).astype(dtype)
    if odd and x.size >= 6:  # values the spec leaves out: they match neither bit
        x.reshape(-1)[:6] = np.array([np.nan, 0.5, -0.0, np.inf, -1.0, 2.0]).astype(dtype)
    filters = rng.integers(0, 2, (o, c, *kernel)).astype(ml_dtypes.uint1)
    attrs = {"strides": strides, "pads_begin": pads_begin, "pads_end": pads_end, "dilations": dilations,
             "mode": "xnor-popcount", "pad_value": pad_value, "auto_pad": auto_pad}

    def oracle(data, bits):
        return binary_convolution(data, bits, strides=strides, pads_begin=pads_begin, pads_end=pads_end,
                                  dilations=dilations, pad_value=pad_value, auto_pad=auto_pad)
    return Case(cid, "BinaryConvolution", "opset1", [Input("data", x), Input("filters", filters)], attrs,
                oracle=oracle, openvino="none", why=BINARY_WHY, **kw)


def _binary_cases():
    out = []
    types = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int8, np.uint8, np.int32, np.int64]
    for dtype in types:
        name = np.dtype(dtype).name
        out.append(_binary(f"binary-{name}", dtype))
        out.append(_binary(f"binary-{name}-geometry", dtype, n=2, c=3, hw=(6, 7), o=4, kernel=(3, 2), strides=(2, 1),
                           dilations=(1, 2), pads_begin=(2, 0), pads_end=(1, 3), pad_value=1.0))
        for auto_pad in ("valid", "same_upper", "same_lower"):
            out.append(_binary(f"binary-{name}-{auto_pad}", dtype, kernel=(3, 3), strides=(2, 2), hw=(5, 6),
                               auto_pad=auto_pad, pads_begin=(7, 7), pads_end=(7, 7), pad_value=1.0))
    for dtype in (np.float32, np.float16, np.float64):
        for pv in (0.0, 1.0, -1.0, 0.5, float("nan"), -0.0):
            out.append(_binary(f"binary-odd-{np.dtype(dtype).name}-pad{pv}", dtype, odd=True, pad_value=pv,
                               pads_begin=(1, 2), pads_end=(2, 1)))
    for pv in (-1.0, 1.7, 300.0):  # the pad value truncated and wrapped into the integer type
        out.append(_binary(f"binary-int-pad{pv}", np.uint8, pad_value=pv, pads_begin=(1, 1), pads_end=(1, 1)))
    out.append(_binary("binary-batch0", np.float32, n=0))
    out.append(_binary("binary-channels0", np.float32, c=0))
    out.append(_binary("binary-wrap", np.int8, c=40, kernel=(2, 2), hw=(2, 2)))  # 160 bits: past i8's range
    out.append(_binary("binary-f16-many", np.float16, c=300, kernel=(3, 3), hw=(3, 3), o=1))  # 2700 bits
    return out


def _binary_errors():
    def err(cid, label, *, data=(1, 2, 4, 4), filters=(2, 2, 2, 2), dtype=np.float32, ftype=ml_dtypes.uint1,
            **attrs):
        full = {"strides": (1, 1), "pads_begin": (0, 0), "pads_end": (0, 0), "dilations": (1, 1),
                "mode": "xnor-popcount", "pad_value": 0.0, **attrs}
        return Case(cid, "BinaryConvolution", "opset1",
                    [Input("data", np.zeros(data, dtype)), Input("filters", np.zeros(filters, ftype))], full,
                    error=label)
    return [
        err("binary-err-filter-type", "binary-filter-type", ftype=np.float32),
        err("binary-err-data-rank", "data-rank", data=(1, 2, 4)),
        err("binary-err-filter-rank", "conv-filter-rank", filters=(2, 2, 2)),
        err("binary-err-channels", "conv-channels", filters=(2, 3, 2, 2)),
        err("binary-err-bool", "numeric-type", dtype=np.bool_),
        err("binary-err-window", "conv-window", data=(1, 2, 1, 4)),
        err("binary-err-pads-length", "conv-attribute-length", pads_begin=(0, 0, 0)),
        err("binary-err-stride-zero", "conv-attribute-range", strides=(0, 1)),
        err("binary-err-mode", "attributes", mode="xor"),
    ]


CASES = _deformable_cases() + _deformable_errors() + _binary_cases() + _binary_errors()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_deformable_binary_convolution(case):
    harness.check(case, CASES)


def test_binary_convolution_packed_const():
    """u1 filters as a model holds them: a Const packed eight to a byte, first element in the
    most significant bit, 13 bits here so the last byte is part padding."""
    x = rng.integers(0, 2, (1, 1, 3, 14)).astype(np.float32)
    bits = rng.integers(0, 2, (1, 1, 1, 13)).astype(np.uint8)
    data = encode(bits, ElementType.u1)
    xml = f"""<?xml version="1.0"?><net name="b" version="11"><layers>
<layer id="0" name="x" type="Parameter" version="opset1"><data shape="1,1,3,14" element_type="f32"/>
<output><port id="0" precision="FP32" names="x"><dim>1</dim><dim>1</dim><dim>3</dim><dim>14</dim></port>
</output></layer>
<layer id="1" name="w" type="Const" version="opset1">
<data element_type="u1" shape="1,1,1,13" offset="0" size="{len(data)}"/>
<output><port id="0" precision="BIN"><dim>1</dim><dim>1</dim><dim>1</dim><dim>13</dim></port></output></layer>
<layer id="2" name="b" type="BinaryConvolution" version="opset1"><data strides="1,1" pads_begin="0,0" pads_end="0,0"
 dilations="1,1" mode="xnor-popcount" pad_value="0"/><input>
<port id="0" precision="FP32"><dim>1</dim><dim>1</dim><dim>3</dim><dim>14</dim></port>
<port id="1" precision="BIN"><dim>1</dim><dim>1</dim><dim>1</dim><dim>13</dim></port></input>
<output><port id="2" precision="FP32"><dim>1</dim><dim>1</dim><dim>3</dim><dim>2</dim></port></output></layer>
<layer id="3" name="r" type="Result" version="opset1"><input><port id="0" precision="FP32">
<dim>1</dim><dim>1</dim><dim>3</dim><dim>2</dim></port></input></layer></layers>
<edges><edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>
<edge from-layer="1" from-port="0" to-layer="2" to-port="1"/>
<edge from-layer="2" from-port="2" to-layer="3" to-port="0"/></edges></net>"""
    got = list(irscatter.parse_model(xml, data).run({"x": x}).values())[0]
    want = binary_convolution(x, bits, strides=(1, 1), pads_begin=(0, 0), pads_end=(0, 0), dilations=(1, 1),
                              pad_value=0.0)
    harness.assert_close(got, want, what="packed u1 filters")
