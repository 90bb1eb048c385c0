"""A corpus of real architectures with random weights, as OpenVINO IR (and ONNX where torch can
export it), for tools/bench_models.py.

Every model is built from a library's own definition (timm, transformers, diffusers) with
`pretrained=False` or a config object, so nothing is downloaded, and seeded so that a rebuild
writes the same weights. OpenVINO converts it (`openvino.convert_model`, saved without f16
compression, so that every engine reads f32 weights), and torch's TorchScript exporter writes
the ONNX file for onnxruntime. Each model gets a folder in the cache:

    <cache>/<name>/model.xml, model.bin   the IR
    <cache>/<name>/model.onnx             when the export worked
    <cache>/<name>/feeds.npz              seeded random inputs, keyed by the IR's input names
    <cache>/<name>/meta.json              the source, shapes, versions, what failed and why

Building needs torch and the model libraries; measuring reads only these files.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import io
import json
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DEFAULT_CACHE = Path.home() / ".cache" / "irscatter-bench" / "models"
BUILD_PACKAGES = {"torch": "torch", "timm": "timm", "transformers": "transformers", "diffusers": "diffusers",
                  "openvino": "openvino", "onnx": "onnx"}
SEED = 0


@dataclass(frozen=True)
class Spec:
    name: str
    source: str  # the library the definition comes from
    what: str  # what it stresses, for the table
    build: Callable[[], tuple[object, dict[str, object]]]  # (torch module, example inputs by name)


# --- definitions ---------------------------------------------------------------------------------


def _image(size: int = 224) -> dict[str, object]:
    import torch

    return {"x": torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(SEED))}


def timm_model(arch: str, size: int = 224, **kwargs) -> Callable[[], tuple[object, dict[str, object]]]:
    def build():  # (`_convert` has hidden a torchvision that does not load)
        import timm

        return timm.create_model(arch, pretrained=False, **kwargs), _image(size)
    return build


def _first_output(model, pick: int = 0):
    """A torch module returning one tensor of a library model that returns a tuple, so that
    every converter sees plain tensors in and out."""
    import torch

    class FirstOutput(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *args):
            return self.model(*args)[pick]
    return FirstOutput()


def _tokens(vocab: int, length: int) -> object:
    import torch

    return torch.randint(0, vocab, (1, length), generator=torch.Generator().manual_seed(SEED))


def bert_base():
    import torch
    from transformers import BertConfig, BertModel

    config = BertConfig(return_dict=False, attn_implementation="eager")
    model = _first_output(BertModel(config))
    return model, {"input_ids": _tokens(config.vocab_size, 128), "attention_mask": torch.ones(1, 128, dtype=torch.int64)}


def gpt2_small():
    from transformers import GPT2Config, GPT2Model

    config = GPT2Config(return_dict=False, use_cache=False, attn_implementation="eager")
    return _first_output(GPT2Model(config)), {"input_ids": _tokens(config.vocab_size, 64)}


def whisper_tiny_encoder():
    """Whisper-tiny's encoder shape (4 layers, width 384, 6 heads) over 10 s of audio
    (1000 mel frames) rather than 30 s, to keep a run short."""
    import torch
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    config = WhisperConfig(d_model=384, encoder_layers=4, encoder_attention_heads=6, encoder_ffn_dim=1536,
                           num_mel_bins=80, max_source_positions=500, return_dict=False, attn_implementation="eager")
    features = torch.randn(1, 80, 1000, generator=torch.Generator().manual_seed(SEED))
    return _first_output(WhisperEncoder(config)), {"input_features": features}


def wav2vec2_features():
    """wav2vec2's convolutional feature encoder (seven 1-D convolutions, group norm, GELU) over
    one second of 16 kHz audio."""
    import torch
    from transformers import Wav2Vec2Config
    from transformers.models.wav2vec2.modeling_wav2vec2 import Wav2Vec2FeatureEncoder

    audio = torch.randn(1, 16000, generator=torch.Generator().manual_seed(SEED))
    return Wav2Vec2FeatureEncoder(Wav2Vec2Config()), {"input_values": audio}


def unet_small():
    """A small UNet2DConditionModel: two resolutions, cross-attention to 77 text tokens of width
    64, on a 4x32x32 latent."""
    import torch
    from diffusers import UNet2DConditionModel

    unet = UNet2DConditionModel(sample_size=32, in_channels=4, out_channels=4, layers_per_block=1,
                                block_out_channels=(64, 128), down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                                up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=64,
                                attention_head_dim=8, norm_num_groups=32)
    g = torch.Generator().manual_seed(SEED)
    inputs = {"sample": torch.randn(1, 4, 32, 32, generator=g), "timestep": torch.tensor([10.0]),
              "encoder_hidden_states": torch.randn(1, 77, 64, generator=g)}

    class Denoise(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.unet = unet

        def forward(self, sample, timestep, encoder_hidden_states):
            return self.unet(sample, timestep, encoder_hidden_states, return_dict=False)[0]
    return Denoise(), inputs


CORPUS = [
    Spec("resnet50", "timm", "dense 3x3 and 1x1 convolutions, batch norm folded", timm_model("resnet50")),
    Spec("mobilenetv3", "timm", "depthwise convolutions, hard-swish, squeeze-excite",
         timm_model("mobilenetv3_large_100")),
    Spec("efficientnet_b0", "timm", "depthwise 3x3/5x5, SiLU, squeeze-excite", timm_model("efficientnet_b0")),
    Spec("convnext_tiny", "timm", "depthwise 7x7, LayerNorm over channels, GELU", timm_model("convnext_tiny")),
    Spec("vit_small", "timm", "attention over 197 tokens, MatMul, LayerNorm, GELU",
         timm_model("vit_small_patch16_224")),
    Spec("swin_tiny", "timm", "windowed attention, many Reshape/Transpose, roll",
         timm_model("swin_tiny_patch4_window7_224")),
    Spec("resmlp_12", "timm", "token- and channel-mixing MatMuls, affine layers", timm_model("resmlp_12_224")),
    Spec("poolformer_s12", "timm", "3x3 average pooling as token mixer, GroupNorm", timm_model("poolformer_s12")),
    Spec("convmixer_1024_20", "timm", "depthwise 9x9 on 1024 channels, GELU, batch norm",
         timm_model("convmixer_1024_20_ks9_p14")),
    Spec("densenet121", "timm", "Concat of growing feature maps, many small convolutions", timm_model("densenet121")),
    Spec("inception_v3", "timm", "parallel branches, 1x7/7x1 convolutions, pools, 299x299",
         timm_model("inception_v3", 299)),
    Spec("regnety_016", "timm", "grouped convolutions, squeeze-excite", timm_model("regnety_016")),
    Spec("bert_base", "transformers", "12-layer encoder, seq 128: MatMul, Softmax, LayerNorm", bert_base),
    Spec("gpt2_small", "transformers", "12-layer decoder, seq 64, one forward: causal mask, GELU", gpt2_small),
    Spec("whisper_tiny_encoder", "transformers", "1-D convolutions, then a 4-layer encoder over 500 frames",
         whisper_tiny_encoder),
    Spec("wav2vec2_features", "transformers", "1-D convolutions with long strides, GroupNorm, GELU",
         wav2vec2_features),
    Spec("unet2d_small", "diffusers", "ResNet blocks, GroupNorm, self- and cross-attention, Interpolate",
         unet_small),
]


# --- timm without torchvision --------------------------------------------------------------------


class _Placeholder(type):
    """A class standing for any torchvision name: its attributes are placeholders too, and it
    refuses to be instantiated, so a code path that really needs torchvision fails loudly."""

    def __getattr__(cls, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Placeholder(name, (), {})

    def __call__(cls, *args, **kwargs):
        raise RuntimeError(f"torchvision is not installed; {cls.__name__} needs it")


class _HollowTorchvision(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves `torchvision` and its submodules as modules of placeholders. timm imports
    torchvision at module level (data transforms, datasets, a frozen batch norm) for code that
    building an architecture never runs, and transformers and diffusers import it wherever its
    package is installed (for image processors), and there is no CPU build of torchvision for
    every torch version: PyPI's, which timm's install pulls in, may not load beside the torch
    installed."""

    def find_spec(self, name, path, target=None):
        if name == "torchvision" or name.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        def placeholder(name: str):
            if name.startswith("__"):
                raise AttributeError(name)
            return _Placeholder(name, (), {})
        module.__getattr__ = placeholder


def _allow_models_without_torchvision() -> None:
    try:
        import torchvision  # noqa: F401
    except Exception:  # absent, or a build whose compiled ops do not load beside this torch
        for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
            del sys.modules[name]
        if not any(isinstance(f, _HollowTorchvision) for f in sys.meta_path):
            sys.meta_path.insert(0, _HollowTorchvision())


# --- building --------------------------------------------------------------------------------------


def missing_packages() -> list[str]:
    return [pip for module, pip in BUILD_PACKAGES.items() if importlib.util.find_spec(module) is None]


def versions() -> dict[str, str]:
    _allow_models_without_torchvision()
    out = {}
    for module in BUILD_PACKAGES:
        try:
            out[module] = str(__import__(module).__version__)
        except Exception:  # noqa: BLE001 - a version we cannot read is left out
            pass
    return out


def _refill_zero_weights(model) -> int:
    """Give seeded random values to the weight tensors an initializer left all zero (a classifier
    head, a layer scale): a model whose output is all zeros would hide any disagreement between
    engines. The count is recorded with the model."""
    import torch

    generator = torch.Generator().manual_seed(SEED + 1)
    count = 0
    with torch.no_grad():
        for param in model.parameters():
            if param.is_floating_point() and param.numel() > 1 and not param.any():
                param.copy_(0.02 * torch.randn(param.shape, generator=generator))
                count += 1
    return count


def _save_onnx(model, inputs: dict[str, object], folder: Path) -> None:
    import torch

    buffer = io.BytesIO()
    torch.onnx.export(model, tuple(inputs.values()), buffer, input_names=list(inputs), dynamo=False,
                      opset_version=17)
    (folder / "model.onnx").write_bytes(buffer.getvalue())


def _convert(spec: Spec, folder: Path) -> dict:
    _allow_models_without_torchvision()
    import openvino as ov
    import torch

    torch.manual_seed(SEED)
    model, inputs = spec.build()
    model.eval()
    refilled = _refill_zero_weights(model)
    args = tuple(inputs.values())
    with torch.no_grad():
        try:  # tracing, OpenVINO's usual path
            ov_model, via = ov.convert_model(model, example_input=args), "trace"
        except Exception:  # noqa: BLE001 - some models trace only through torch.export
            ov_model, via = ov.convert_model(torch.export.export(model, args)), "torch.export"
    names = list(inputs)
    for port, name in zip(ov_model.inputs, names, strict=True):  # the feeds' names, whatever the tracer chose
        port.get_tensor().set_names({name})
    ov.save_model(ov_model, str(folder / "model.xml"), compress_to_fp16=False)
    feeds = {name: value.numpy() for name, value in zip(names, inputs.values(), strict=True)}
    np.savez(folder / "feeds.npz", **feeds)
    meta = {"name": spec.name, "source": spec.source, "what": spec.what,
            "inputs": {n: [list(v.shape), str(v.dtype)] for n, v in feeds.items()},
            "parameters": sum(p.numel() for p in model.parameters()), "converted_via": via,
            "zero_weights_refilled": refilled, "versions": versions()}
    try:
        with torch.no_grad():
            _save_onnx(model, dict(zip(names, inputs.values(), strict=True)), folder)
    except Exception as e:  # noqa: BLE001 - the IR alone is still measured
        meta["onnx_error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
    return meta


def build(spec: Spec, cache: Path, force: bool = False) -> dict:
    """The model's folder in `cache`, built unless it is there already; its meta.json as a dict,
    with `error` when the model could not be built or converted (such a model is tried again on
    the next build: the missing package may have been installed since)."""
    folder = cache / spec.name
    meta_file = folder / "meta.json"
    if meta_file.exists() and not force:
        meta = json.loads(meta_file.read_text())
        if "error" not in meta:
            return meta
    folder.mkdir(parents=True, exist_ok=True)
    try:
        meta = _convert(spec, folder)
    except Exception as e:  # noqa: BLE001 - recorded and reported; the rest of the corpus goes on
        last = traceback.format_exception_only(e)[-1].strip()
        meta = {"name": spec.name, "source": spec.source, "what": spec.what, "error": last[:400]}
    meta_file.write_text(json.dumps(meta, indent=2))
    return meta
