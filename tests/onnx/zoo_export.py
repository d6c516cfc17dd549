# SPDX-License-Identifier: MIT OR Apache-2.0
"""Model zoo for the ONNX importer: exports real PyTorch models and checks `rlx run` on them.

Dev tool (needs a recent torch / torchvision / onnx, optionally onnxruntime), driven by
scripts/onnx_zoo.sh; CI uses tests/onnx/export_models.py instead.

usage:
  zoo_export.py list
  zoo_export.py export OUT_DIR [--exporter dynamo|legacy|both] [--shapes static|dynamic|both]
                               [--only NAME,...] [--skip NAME,...] [--group G,...] [--force | --cached]
  zoo_export.py compare OUT_DIR CASE RLX_OUT_DIR     (one case; prints one JSON line)
  zoo_export.py table OUT_DIR RESULTS.jsonl [--markdown | --pivot]
      (RESULTS.jsonl: one {"case", "status", "rlx_s", "note"} line per case; status "ran" means
      `rlx run` wrote its outputs to OUT_DIR/CASE/rlx_out, which are compared here)

A case is MODEL.EXPORTER.SHAPES, e.g. resnet18.dynamo.static. For each case `export` writes into
OUT_DIR/CASE/: model.onnx (+ model.onnx.data for the dynamo exporter's external data), in_K.npy
(inputs, named in meta.json), torch_K.npy (torch's outputs), ort_K.npy (onnxruntime's, when it
runs) and meta.json (input / output names, opset, export time, errors). All weights are random
from fixed seeds (BatchNorm running statistics too). With dynamic shapes the batch (and sequence)
dims are symbolic and the saved inputs use other sizes than the export did.

Exporters: "dynamo" is torch.onnx.export's default in torch >= 2.9 (torch.export, opset 20 by
default, external data); "legacy" is the TorchScript exporter (dynamo=False, opset 17).
"""
import json
import math
import os
import shutil
import sys
import time
import traceback

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

LEGACY_OPSET = 17
TOL = 1e-4


# ----------------------------------------------------------------------------------------------
# Cases


class Case:
    """One model: `make()` builds it; `inputs(b, s)` gives the example inputs for batch b and
    sequence / spatial size s; `dyn` maps input index -> {dim: label} of the dims that are
    symbolic with dynamic shapes (label "b" follows b, "s" follows s); `tol` overrides the
    relative tolerance."""

    def __init__(self, name, make, inputs, dyn=None, tol=TOL, export_bs=(2, None), run_bs=(3, None),
                 group="nn"):
        self.name, self.make, self.inputs, self.dyn = name, make, inputs, dyn or {}
        self.tol, self.export_bs, self.run_bs, self.group = tol, export_bs, run_bs, group


CASES = []


def case(*a, **kw):
    CASES.append(Case(*a, **kw))


def gen(seed=4321):
    return torch.Generator().manual_seed(seed)


def randn(*shape, g=None, dtype=torch.float32):
    return torch.randn(*shape, generator=g or gen(), dtype=torch.float32).to(dtype)


# -- torchvision classification / segmentation --------------------------------------------------


def tv(name, **kw):
    def make():
        import torchvision
        return getattr(torchvision.models, name)(weights=None, **kw)
    return make


def tv_seg(name, **kw):
    def make():
        import torchvision
        m = getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None, **kw)
        return SegOut(m)
    return make


class SegOut(nn.Module):
    """Segmentation models return a dict; export its "out" tensor."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


def image_case(name, make, hw, group="vision"):
    case(name, make, lambda b, s, hw=hw: (randn(b, 3, hw, hw),), dyn={0: {0: "b"}}, export_bs=(2, None),
         run_bs=(1, None) if hw >= 224 else (3, None), group=group)


for _n in ["resnet18", "resnet50", "resnext50_32x4d", "wide_resnet50_2", "mobilenet_v2", "mobilenet_v3_large",
           "mobilenet_v3_small", "efficientnet_b0", "efficientnet_v2_s", "convnext_tiny", "regnet_y_400mf",
           "shufflenet_v2_x1_0", "densenet121", "mnasnet0_5", "squeezenet1_1"]:
    image_case(_n, tv(_n), 64)
# Their AdaptiveAvgPool2d output (6x6, 7x7) must divide the feature map for the legacy exporter.
image_case("alexnet", tv("alexnet"), 224)
image_case("vgg11_bn", tv("vgg11_bn"), 224)
image_case("googlenet", tv("googlenet", aux_logits=False, init_weights=True), 64)
image_case("inception_v3", tv("inception_v3", aux_logits=False, init_weights=True), 299)
image_case("vit_b_16", tv("vit_b_16", image_size=64), 64)
image_case("swin_t", tv("swin_t"), 64)
image_case("maxvit_t", tv("maxvit_t"), 224)
image_case("deeplabv3_mobilenet_v3_large", tv_seg("deeplabv3_mobilenet_v3_large"), 64)
image_case("lraspp_mobilenet_v3_large", tv_seg("lraspp_mobilenet_v3_large"), 64)
image_case("fcn_resnet50", tv_seg("fcn_resnet50"), 64)


# -- recurrent ----------------------------------------------------------------------------------


class RNNAll(nn.Module):
    """Returns every output of an nn.RNN / GRU / LSTM (output, h_n[, c_n])."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x):
        out, h = self.rnn(x)
        if isinstance(h, tuple):
            return (out,) + h
        return out, h


def rnn_case(name, cls, batch_first, **kw):
    def inputs(b, s):
        return (randn(b, s, 12) if batch_first else randn(s, b, 12),)
    dims = {0: "b", 1: "s"} if batch_first else {0: "s", 1: "b"}
    case(name, lambda: RNNAll(cls(12, 16, batch_first=batch_first, **kw)), inputs, dyn={0: dims},
         export_bs=(2, 5), run_bs=(3, 7), group="rnn")


rnn_case("lstm", nn.LSTM, True)
rnn_case("lstm_bi_2layer", nn.LSTM, False, num_layers=2, bidirectional=True)
rnn_case("lstm_proj", nn.LSTM, True, proj_size=8)
rnn_case("gru", nn.GRU, True)
rnn_case("gru_bi_2layer", nn.GRU, True, num_layers=2, bidirectional=True)
rnn_case("rnn_tanh", nn.RNN, False)
rnn_case("rnn_relu_bi_2layer", nn.RNN, True, num_layers=2, bidirectional=True, nonlinearity="relu")


# -- attention / transformers -------------------------------------------------------------------


def seq_inputs(d):
    return lambda b, s: (randn(b, s, d),)


SEQ_DYN = {0: {0: "b", 1: "s"}}


def transformer_encoder(norm_first=False, activation="relu"):
    layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.1, batch_first=True,
                                       norm_first=norm_first, activation=activation)
    return nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)


case("transformer_encoder", transformer_encoder, seq_inputs(32), dyn=SEQ_DYN, export_bs=(2, 6), run_bs=(3, 5),
     group="attention")
case("transformer_encoder_prenorm_gelu", lambda: transformer_encoder(True, "gelu"), seq_inputs(32), dyn=SEQ_DYN,
     export_bs=(2, 6), run_bs=(3, 5), group="attention")


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerDecoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True)
        self.dec = nn.TransformerDecoder(layer, num_layers=2)

    def forward(self, tgt, memory):
        n = tgt.shape[1]
        mask = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
        return self.dec(tgt, memory, tgt_mask=mask, tgt_is_causal=True)


case("transformer_decoder", Decoder, lambda b, s: (randn(b, s, 32), randn(b, s + 2, 32, g=gen(7))),
     dyn={0: {0: "b", 1: "s"}, 1: {0: "b", 1: "s2"}}, export_bs=(2, 6), run_bs=(3, 5), group="attention")


class MHASelf(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(32, 4, batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x, need_weights=False)[0]


class MHACross(nn.Module):
    """Cross attention with different kdim / vdim, a key padding mask and averaged weights."""

    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(32, 4, kdim=16, vdim=24)

    def forward(self, q, k, v, pad):
        out, w = self.mha(q, k, v, key_padding_mask=pad)
        return out, w


def mha_cross_inputs(b, s):
    pad = torch.zeros(b, s + 1, dtype=torch.bool)
    pad[:, -1] = True
    return randn(s, b, 32), randn(s + 1, b, 16, g=gen(5)), randn(s + 1, b, 24, g=gen(6)), pad


case("mha_self", MHASelf, seq_inputs(32), dyn=SEQ_DYN, export_bs=(2, 6), run_bs=(3, 5), group="attention")
case("mha_cross_padmask", MHACross, mha_cross_inputs, export_bs=(2, 6), group="attention")


class SDPA(nn.Module):
    def __init__(self, mode):
        super().__init__()
        self.mode = mode

    def forward(self, q, k, v, mask=None):
        if self.mode == "causal":
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        if self.mode == "scale":
            return F.scaled_dot_product_attention(q, k, v, scale=0.3)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def sdpa_inputs(mode):
    def inputs(b, s):
        q, k, v = randn(b, 4, s, 8), randn(b, 4, s, 8, g=gen(1)), randn(b, 4, s, 8, g=gen(2))
        if mode == "additive":
            return q, k, v, randn(b, 1, s, s, g=gen(3))
        if mode == "bool":
            return q, k, v, torch.tril(torch.ones(s, s, dtype=torch.bool))
        return q, k, v
    return inputs


SDPA_DYN = {i: {0: "b", 2: "s"} for i in range(3)}
for _m in ["causal", "scale", "additive", "bool"]:
    _dyn = dict(SDPA_DYN)
    if _m == "additive":
        _dyn[3] = {0: "b", 2: "s", 3: "s"}
    if _m == "bool":
        _dyn[3] = {0: "s", 1: "s"}
    case(f"sdpa_{_m}", lambda m=_m: SDPA(m), sdpa_inputs(_m), dyn=_dyn, export_bs=(2, 6), run_bs=(3, 5),
         group="attention")


class GPT(nn.Module):
    """Tiny GPT: token + position embedding, pre-norm blocks with causal self-attention written
    out by hand (masked_fill with -inf), tanh-GELU MLP, final LayerNorm and a head tied to the
    token embedding."""

    def __init__(self, vocab=97, d=32, heads=4, layers=2, ctx=16):
        super().__init__()
        self.heads = heads
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict(dict(ln1=nn.LayerNorm(d), qkv=nn.Linear(d, 3 * d), proj=nn.Linear(d, d),
                                                  ln2=nn.LayerNorm(d), fc=nn.Linear(d, 4 * d),
                                                  fc2=nn.Linear(4 * d, d))))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight
        self.register_buffer("mask", torch.tril(torch.ones(ctx, ctx, dtype=torch.bool)))

    def forward(self, ids):
        b, t = ids.shape
        pos = torch.arange(t, device=ids.device)
        h = self.tok(ids) + self.pos(pos)
        for blk in self.blocks:
            a = blk["ln1"](h)
            q, k, v = blk["qkv"](a).split(a.shape[-1], dim=-1)
            q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
            att = att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(-1)
            y = (att @ v).transpose(1, 2).reshape(b, t, -1)
            h = h + blk["proj"](y)
            h = h + blk["fc2"](F.gelu(blk["fc"](blk["ln2"](h)), approximate="tanh"))
        return self.head(self.ln(h))


case("gpt_block", GPT, lambda b, s: (torch.randint(0, 97, (b, s), generator=gen()),), dyn={0: {0: "b", 1: "s"}},
     export_bs=(2, 8), run_bs=(3, 5), group="attention")


class Llama(nn.Module):
    """LLaMA-style block stack: RMSNorm (pow / mean / rsqrt), rotary embeddings from arange and
    an outer product (rotate_half via slicing and cat), grouped-query attention (repeat_kv by
    expand + reshape), causal mask from triu(full(-inf)), SwiGLU MLP, untied head."""

    def __init__(self, vocab=101, d=32, heads=4, kv_heads=2, layers=2):
        super().__init__()
        self.h, self.kvh, self.hd = heads, kv_heads, d // heads
        self.emb = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList()
        for _ in range(layers):
            self.layers.append(nn.ModuleDict(dict(
                q=nn.Linear(d, d, bias=False), k=nn.Linear(d, kv_heads * self.hd, bias=False),
                v=nn.Linear(d, kv_heads * self.hd, bias=False), o=nn.Linear(d, d, bias=False),
                gate=nn.Linear(d, 64, bias=False), up=nn.Linear(d, 64, bias=False), down=nn.Linear(64, d, bias=False),
                n1=RMSNorm(d), n2=RMSNorm(d))))
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd)),
                             persistent=False)

    @staticmethod
    def rot(x):
        a, b = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return torch.cat((-b, a), dim=-1)

    def forward(self, ids):
        b, t = ids.shape
        h = self.emb(ids)
        freqs = torch.outer(torch.arange(t, dtype=torch.float32), self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        for L in self.layers:
            x = L["n1"](h)
            q = L["q"](x).view(b, t, self.h, self.hd).transpose(1, 2)
            k = L["k"](x).view(b, t, self.kvh, self.hd).transpose(1, 2)
            v = L["v"](x).view(b, t, self.kvh, self.hd).transpose(1, 2)
            q, k = q * cos + self.rot(q) * sin, k * cos + self.rot(k) * sin
            rep = self.h // self.kvh
            k = k[:, :, None].expand(b, self.kvh, rep, t, self.hd).reshape(b, self.h, t, self.hd)
            v = v[:, :, None].expand(b, self.kvh, rep, t, self.hd).reshape(b, self.h, t, self.hd)
            att = torch.softmax(q @ k.transpose(2, 3) / math.sqrt(self.hd) + mask, dim=-1, dtype=torch.float32)
            h = h + L["o"]((att @ v).transpose(1, 2).reshape(b, t, -1))
            x = L["n2"](h)
            h = h + L["down"](F.silu(L["gate"](x)) * L["up"](x))
        return self.head(self.norm(h))


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.w = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return self.w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


case("llama_block", Llama, lambda b, s: (torch.randint(0, 101, (b, s), generator=gen()),),
     dyn={0: {0: "b", 1: "s"}}, export_bs=(2, 8), run_bs=(3, 5), group="attention")


class Bert(nn.Module):
    """BERT-style encoder: word + position + token-type embeddings, LayerNorm, an int64 attention
    mask turned into an additive float mask with finfo.min, erf-GELU, tanh pooler."""

    def __init__(self, vocab=50, d=32, heads=4, layers=2):
        super().__init__()
        self.word, self.pos, self.typ = nn.Embedding(vocab, d), nn.Embedding(16, d), nn.Embedding(2, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.heads = heads
        self.layers = nn.ModuleList(nn.ModuleDict(dict(qkv=nn.Linear(d, 3 * d), o=nn.Linear(d, d), ln1=nn.LayerNorm(d),
                                                       fc1=nn.Linear(d, 64), fc2=nn.Linear(64, d),
                                                       ln2=nn.LayerNorm(d))) for _ in range(layers))
        self.pool = nn.Linear(d, d)

    def forward(self, ids, mask, types):
        b, t = ids.shape
        pos = torch.arange(t).unsqueeze(0).expand(b, t)
        h = self.ln(self.word(ids) + self.pos(pos) + self.typ(types))
        ext = (1.0 - mask[:, None, None, :].to(h.dtype)) * torch.finfo(h.dtype).min
        for L in self.layers:
            q, k, v = L["qkv"](h).chunk(3, dim=-1)
            q, k, v = (z.view(b, t, self.heads, -1).permute(0, 2, 1, 3) for z in (q, k, v))
            att = (q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + ext).softmax(-1)
            h = L["ln1"](h + L["o"]((att @ v).permute(0, 2, 1, 3).reshape(b, t, -1)))
            h = L["ln2"](h + L["fc2"](F.gelu(L["fc1"](h))))
        return h, torch.tanh(self.pool(h[:, 0]))


def bert_inputs(b, s):
    g = gen()
    ids = torch.randint(0, 50, (b, s), generator=g)
    mask = torch.ones(b, s, dtype=torch.long)
    mask[0, s - 2:] = 0
    types = (torch.arange(s) >= s // 2).long().expand(b, s).contiguous()
    return ids, mask, types


case("bert_like", Bert, bert_inputs, dyn={i: {0: "b", 1: "s"} for i in range(3)}, export_bs=(2, 8), run_bs=(3, 6),
     group="attention")


class T5RelPos(nn.Module):
    """T5 relative position buckets: int64 arithmetic, abs, log of a float ratio cast back to
    int64, min / where, then an embedding lookup added to attention scores."""

    def __init__(self, buckets=8, max_dist=20, heads=2):
        super().__init__()
        self.buckets, self.max_dist = buckets, max_dist
        self.bias = nn.Embedding(buckets, heads)

    def forward(self, scores):
        q, k = scores.shape[-2], scores.shape[-1]
        rel = torch.arange(k)[None, :] - torch.arange(q)[:, None]
        nb = self.buckets // 2
        ret = (rel > 0).to(torch.long) * nb
        n = torch.abs(rel)
        max_exact = nb // 2
        large = max_exact + (torch.log(n.float() / max_exact) / math.log(self.max_dist / max_exact)
                             * (nb - max_exact)).to(torch.long)
        large = torch.min(large, torch.full_like(large, nb - 1))
        ret = ret + torch.where(n < max_exact, n, large)
        return (scores + self.bias(ret).permute(2, 0, 1)[None]).softmax(-1)


case("t5_relpos_bias", T5RelPos, lambda b, s: (randn(b, 2, s, s),), dyn={0: {0: "b", 2: "s", 3: "s"}},
     export_bs=(2, 7), run_bs=(3, 9), group="attention")


# -- convolution, resampling, normalisation -----------------------------------------------------


def img(c, hw):
    return lambda b, s: (randn(b, c, hw, hw),)


IMG_DYN = {0: {0: "b"}}


class Seq(nn.Sequential):
    pass


case("conv_transpose2d", lambda: Seq(nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
                                     nn.ConvTranspose2d(6, 3, (2, 3), stride=(1, 2), dilation=2)),
     img(4, 9), dyn=IMG_DYN, group="conv")
case("conv_transpose1d", lambda: Seq(nn.ConvTranspose1d(4, 5, 4, stride=3, padding=2)),
     lambda b, s: (randn(b, 4, 11),), dyn=IMG_DYN, group="conv")
case("conv1d", lambda: Seq(nn.Conv1d(4, 8, 3, padding="same", dilation=2), nn.ReLU(), nn.Conv1d(8, 6, 5, stride=2)),
     lambda b, s: (randn(b, 4, 20),), dyn=IMG_DYN, group="conv")
case("conv3d", lambda: Seq(nn.Conv3d(3, 4, 3, padding=1, stride=(1, 2, 2)), nn.BatchNorm3d(4), nn.ReLU(),
                           nn.MaxPool3d(2), nn.AvgPool3d(2, ceil_mode=True)),
     lambda b, s: (randn(b, 3, 6, 10, 10),), dyn=IMG_DYN, group="conv")
case("conv2d_pad_modes", lambda: Seq(nn.Conv2d(3, 4, 3, padding=2, padding_mode="reflect"),
                                     nn.Conv2d(4, 4, 3, padding=1, padding_mode="replicate"),
                                     nn.Conv2d(4, 2, 3, padding=1, padding_mode="circular")),
     img(3, 8), dyn=IMG_DYN, group="conv")
case("pool_modes", lambda: Seq(nn.MaxPool2d(3, 2, ceil_mode=True), nn.AvgPool2d(3, 2, padding=1,
                                                                                count_include_pad=False),
                               nn.MaxPool2d(2, 1, padding=1, dilation=2), nn.AvgPool2d(2, ceil_mode=True)),
     img(3, 15), dyn=IMG_DYN, group="conv")
case("pixel_shuffle", lambda: Seq(nn.Conv2d(3, 16, 1), nn.PixelShuffle(2), nn.PixelUnshuffle(4)), img(3, 8),
     dyn=IMG_DYN, group="conv")


class Up(nn.Module):
    def forward(self, x):
        a = F.interpolate(x, scale_factor=2, mode="nearest")
        b = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
        c = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)
        d = F.interpolate(x, size=(7, 11), mode="bilinear", align_corners=False)
        e = F.interpolate(x, size=(7, 11), mode="nearest")
        f = F.interpolate(x, scale_factor=1.5, mode="bicubic", align_corners=False)
        return a, b, c, d, e, f


case("upsample", Up, img(3, 5), dyn=IMG_DYN, group="conv")
case("upsample_module", lambda: Seq(nn.Upsample(scale_factor=3, mode="nearest"),
                                    nn.Upsample(scale_factor=0.5, mode="bilinear", align_corners=True)),
     img(2, 6), dyn=IMG_DYN, group="conv")
case("instance_norm", lambda: Seq(nn.InstanceNorm2d(3, affine=True), nn.InstanceNorm2d(3)), img(3, 6), dyn=IMG_DYN,
     group="conv")
case("group_norm", lambda: Seq(nn.Conv2d(3, 8, 1), nn.GroupNorm(4, 8), nn.GroupNorm(1, 8, affine=False)),
     img(3, 6), dyn=IMG_DYN, group="conv")
case("layer_norm_batch_norm1d", lambda: Seq(nn.Linear(10, 12), nn.LayerNorm(12), nn.BatchNorm1d(5),
                                            nn.LayerNorm([5, 12], elementwise_affine=False)),
     lambda b, s: (randn(b, 5, 10),), dyn=IMG_DYN, group="conv")
case("adaptive_avg_pool", lambda: Seq(nn.AdaptiveAvgPool2d((3, 4)), nn.AdaptiveMaxPool2d((3, 2))), img(3, 12),
     dyn=IMG_DYN, group="conv")
# output sizes that do not divide the input: the legacy exporter refuses these
case("adaptive_pool_uneven", lambda: Seq(nn.AdaptiveAvgPool2d((3, 5)), nn.AdaptiveMaxPool2d(2)), img(3, 13),
     dyn=IMG_DYN, group="conv")
case("adaptive_avg_pool1d", lambda: Seq(nn.AdaptiveAvgPool1d(4), nn.AdaptiveMaxPool1d(2)),
     lambda b, s: (randn(b, 3, 12),), dyn=IMG_DYN, group="conv")


# -- activations --------------------------------------------------------------------------------


class Acts(nn.Module):
    def forward(self, x):
        return torch.stack([F.silu(x), F.hardswish(x), F.mish(x), F.elu(x, 0.7), F.leaky_relu(x, 0.03),
                            F.gelu(x), F.gelu(x, approximate="tanh"), F.hardsigmoid(x), F.softplus(x, beta=2.0),
                            F.selu(x), F.celu(x, 1.3), F.relu6(x), F.hardtanh(x, -0.5, 0.7), torch.sigmoid(x),
                            F.logsigmoid(x), F.softsign(x), F.tanhshrink(x), F.hardshrink(x, 0.3),
                            F.softshrink(x, 0.2), torch.erf(x), F.prelu(x, torch.tensor([0.2]))])


case("activations", Acts, lambda b, s: (randn(b, 7) * 3,), dyn=IMG_DYN, group="ops")


class Softmaxes(nn.Module):
    def forward(self, x):
        return (x.softmax(0), x.softmax(1), x.softmax(-1), x.log_softmax(1), x.log_softmax(-1),
                torch.logsumexp(x, dim=2))


case("softmax_dims", Softmaxes, lambda b, s: (randn(b, 4, 5) * 4,), dyn=IMG_DYN, group="ops")


# -- tensor ops ---------------------------------------------------------------------------------


class Einsum(nn.Module):
    def forward(self, a, b):
        return (torch.einsum("bij,bjk->bik", a, b), torch.einsum("bij->bj", a), torch.einsum("bij,bkj->bik", a, b.transpose(1, 2)))


case("einsum", Einsum, lambda b, s: (randn(b, 3, 4), randn(b, 4, 5, g=gen(9))), dyn={0: {0: "b"}, 1: {0: "b"}},
     group="ops")


class Cumsum(nn.Module):
    def forward(self, x):
        return x.cumsum(1), x.flip(1).cumsum(1).flip(1), x.cumsum(-1)


case("cumsum_flip", Cumsum, lambda b, s: (randn(b, 5, 6),), dyn=IMG_DYN, group="ops")


class TopK(nn.Module):
    def forward(self, x):
        v, i = x.topk(3, dim=-1)
        v2, i2 = x.topk(2, dim=1, largest=False)
        return v, i, v2, i2, x.argmax(-1), x.argmin(1, keepdim=True), x.max(dim=1).values


case("topk_argmax", TopK, lambda b, s: (randn(b, 5, 6),), dyn=IMG_DYN, group="ops")


class Sort(nn.Module):
    def forward(self, x):
        v, i = x.sort(dim=-1, descending=True)
        v2, _ = x.sort(dim=1)
        return v, i, v2, x.argsort(-1)


case("sort", Sort, lambda b, s: (randn(b, 5, 6),), dyn=IMG_DYN, group="ops")


class Masked(nn.Module):
    def forward(self, x, m):
        a = x.masked_fill(m, -1e4)
        b = torch.where(x > 0, x, x * 0.1)
        c = torch.where(m, x, torch.zeros_like(x))
        return a, b, c, (x > 0.5).float().sum(-1)


case("masked_fill_where", Masked, lambda b, s: (randn(b, 4, 6), randn(b, 4, 6, g=gen(8)) > 0),
     dyn={0: {0: "b"}, 1: {0: "b"}}, group="ops")


class Gather(nn.Module):
    def forward(self, x, idx):
        a = torch.gather(x, 2, idx)
        b = torch.index_select(x, 1, torch.tensor([2, 0, 3]))
        c = torch.zeros_like(x).scatter(2, idx, 1.0)
        d = torch.zeros_like(x).scatter_add(2, idx, x[:, :, :idx.shape[2]])
        e = x[:, [0, 2], 1:5:2]
        return a, b, c, d, e


case("gather_scatter", Gather, lambda b, s: (randn(b, 4, 6), torch.randint(0, 6, (b, 4, 3), generator=gen())),
     dyn={0: {0: "b"}, 1: {0: "b"}}, group="ops")


class Shapes(nn.Module):
    def forward(self, x):
        a, b, c = x.chunk(3, dim=-1)
        d, e = x.split([2, 4], dim=-1)
        f = x[:, :1].expand(-1, 3, -1)
        g = x.repeat(1, 2, 1)
        h = torch.cat([a, c], 1).flatten(1)
        return a * b + c, d.sum(-1), e.mean(1), f, g, h, x.permute(2, 0, 1).contiguous()


case("chunk_split_expand", Shapes, lambda b, s: (randn(b, 3, 6),), dyn=IMG_DYN, group="ops")


class Clamp(nn.Module):
    def forward(self, x, lo):
        return x.clamp(-0.5, 0.8), x.clamp(min=0.1), torch.clamp(x, min=lo), x.clamp(max=lo)


case("clamp", Clamp, lambda b, s: (randn(b, 6), randn(6, g=gen(3)) * 0.1), dyn=IMG_DYN, group="ops")


class IndexArith(nn.Module):
    """int64 index arithmetic: argmax, shifts, modulo, floor division, arange, comparisons."""

    def forward(self, x, ids):
        j = (x.argmax(-1) * 3 + ids) % x.shape[-1]
        k = torch.div(ids * 7, 2, rounding_mode="floor") - torch.arange(ids.shape[-1])
        m = (k > 2) & (ids != 0)
        g = torch.gather(x, 1, j.unsqueeze(-1) % x.shape[1]).squeeze(-1)
        return j, k, m.long().sum(-1), g, ids.max(dim=-1).values


case("int64_index_arith", IndexArith,
     lambda b, s: (randn(b, 5, 6), torch.randint(0, 9, (b, 5), generator=gen())), dyn={0: {0: "b"}, 1: {0: "b"}},
     group="ops")


class Reductions(nn.Module):
    def forward(self, x):
        return (x.sum((1, 2)), x.mean(-1, keepdim=True), x.amax(1), x.amin((0, 2)), x.prod(-1),
                x.std(-1), x.var(1, unbiased=False), x.norm(dim=-1), F.normalize(x, dim=1), x.abs().sqrt().sum(),
                torch.cosine_similarity(x[:, 0], x[:, 1], dim=-1))


case("reductions", Reductions, lambda b, s: (randn(b, 4, 5),), dyn=IMG_DYN, group="ops")


class Float16In(nn.Module):
    """float16 input, computed in float32."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, x):
        return self.lin(x.float()).relu()


class Float16All(nn.Module):
    """Whole model in float16 (checked with a float16 tolerance)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4).half()

    def forward(self, x):
        return (self.lin(x) * 0.5 + x[:, :4]).softmax(-1)


case("float16_input", Float16In, lambda b, s: (randn(b, 8, dtype=torch.float16),), dyn=IMG_DYN, group="ops")
case("float16_model", Float16All, lambda b, s: (randn(b, 8, dtype=torch.float16),), dyn=IMG_DYN, tol=2e-3,
     group="ops")


class Misc(nn.Module):
    def forward(self, x):
        y = F.pad(x, (1, 2), mode="constant", value=0.5)
        z = torch.tril(x[0]) + torch.triu(x[0], 1).t()
        w = x.unsqueeze(1) * x.unsqueeze(2)
        return (y, z, w.sum(1), torch.remainder(x * 5, 1.5), torch.div(x * 5, 2, rounding_mode="floor"),
                torch.div(x * 5, 2, rounding_mode="trunc"), x.round(), x.sign())


case("misc_ops", Misc, lambda b, s: (randn(b, 4, 4),), dyn=IMG_DYN, group="ops")


class EmbeddingBagLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 6, padding_idx=0)
        self.lin = nn.Linear(6, 3)

    def forward(self, ids):
        return self.lin(self.emb(ids).mean(1))


case("embedding_mean", EmbeddingBagLike, lambda b, s: (torch.randint(0, 20, (b, s), generator=gen()),),
     dyn={0: {0: "b", 1: "s"}}, export_bs=(2, 5), run_bs=(3, 7), group="ops")


class Roll(nn.Module):
    def forward(self, x):
        return (torch.roll(x, 2, dims=-1), torch.roll(x, (1, -1), dims=(1, 2)), x.unfold(2, 3, 2),
                torch.repeat_interleave(x, 2, dim=1))


case("roll_unfold", Roll, lambda b, s: (randn(b, 3, 7),), dyn=IMG_DYN, group="ops")


class Im2Col(nn.Module):
    def __init__(self):
        super().__init__()
        self.unfold = nn.Unfold(kernel_size=2, stride=2)
        self.fold = nn.Fold(output_size=(6, 6), kernel_size=2, stride=2)

    def forward(self, x):
        cols = self.unfold(x)
        return cols, self.fold(cols * 2.0)


case("unfold_fold", Im2Col, img(3, 6), dyn=IMG_DYN, group="ops")


class MathOps(nn.Module):
    def forward(self, a, b):
        return (torch.atan2(a, b), torch.lerp(a, b, 0.3), torch.baddbmm(a[:, :, :3], a, b.transpose(1, 2)[:, :, :3]),
                torch.outer(a[0, 0], b[0, 0]), torch.cdist(a, b), torch.nan_to_num(torch.log(a), neginf=-5.0),
                torch.fmod(a * 4, 1.5), a.pow(2) + b.abs().pow(0.5), torch.rsqrt(b.abs() + 1))


case("math_ops", MathOps, lambda b, s: (randn(b, 3, 3), randn(b, 3, 3, g=gen(3))), dyn={0: {0: "b"}, 1: {0: "b"}},
     group="ops")


class LogicOps(nn.Module):
    def forward(self, x, ids):
        m = (x > 0) & ~(x > 1) | (x < -1.5)
        oh = F.one_hot(ids, 7)
        return (m, torch.logical_xor(x > 0, ids > 3), oh, oh.argmax(-1),
                torch.isnan(x.sqrt()), (ids * 3 // 2), ids.to(torch.int32) + 1, ids.float() / 3, (x * 10).long(),
                ids << 1)


case("logic_int_ops", LogicOps, lambda b, s: (randn(b, 4), torch.randint(0, 7, (b, 4), generator=gen())),
     dyn={0: {0: "b"}, 1: {0: "b"}}, group="ops")


class IndexPut(nn.Module):
    def forward(self, x, idx):
        y = x.clone()
        y[:, idx] = 0.0
        z = x.clone()
        z[:, 1:3] = x[:, :2] * 2
        w = x.index_add(1, idx, x[:, :idx.shape[0]])
        return y, z, w, x[:, idx]


case("index_put", IndexPut, lambda b, s: (randn(b, 5), torch.tensor([3, 0])), dyn={0: {0: "b"}}, group="ops")


class Creation(nn.Module):
    def forward(self, x):
        n = x.shape[1]
        ar = torch.arange(0, n, 2, dtype=torch.float32)
        ls = torch.linspace(0, 1, 5)
        gx, gy = torch.meshgrid(torch.arange(3), torch.arange(n), indexing="ij")
        return (x + ar.repeat_interleave(2)[:n], ls * x.sum(), gx * gy, torch.full_like(x, 2.5) * x,
                x.new_ones(2, n) + x[:2], torch.zeros(x.shape[0], 3).sum(-1) + x[:, 0], torch.eye(n) @ x.t())


case("creation_ops", Creation, lambda b, s: (randn(b, 6),), dyn=IMG_DYN, group="ops")


class Interp2(nn.Module):
    def forward(self, x):
        return (F.interpolate(x, size=(5, 7), mode="bicubic", align_corners=True),
                F.interpolate(x[:, :, 0], scale_factor=2, mode="linear", align_corners=False),
                F.interpolate(x.unsqueeze(2), scale_factor=(1, 2, 2), mode="trilinear"),
                F.avg_pool2d(x, 2), F.max_pool1d(x[:, :, 0], 2), F.adaptive_avg_pool2d(x, 1))


case("interpolate_more", Interp2, img(2, 8), dyn=IMG_DYN, group="conv")


class CumProd(nn.Module):
    def forward(self, x):
        return torch.cumprod(x, dim=1), torch.cummax(x, dim=1)[0], torch.logcumsumexp(x, dim=-1)


case("cumprod_cummax", CumProd, lambda b, s: (randn(b, 4, 5),), dyn=IMG_DYN, group="ops")


class NewerOps(nn.Module):
    """Ops the TorchScript exporter does not handle."""

    def forward(self, x, idx):
        return (torch.diff(x, dim=-1), torch.bitwise_and((x * 10).long(), 5),
                torch.take_along_dim(x, idx.view(1, 1, -1).expand(x.shape[0], x.shape[1], -1), dim=2),
                F.interpolate(x.unsqueeze(1), scale_factor=0.5, mode="bilinear", antialias=True))


case("newer_ops", NewerOps, lambda b, s: (randn(b, 4, 6), torch.tensor([5, 0, 2])), dyn={0: {0: "b"}}, group="ops")


def case_by_name(name):
    for c in CASES:
        if c.name == name:
            return c
    raise KeyError(name)


# ----------------------------------------------------------------------------------------------
# Export


def build(c):
    torch.manual_seed(1234)
    m = c.make().eval()
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, nn.modules.batchnorm._BatchNorm) and mod.running_mean is not None:
                mod.running_mean.uniform_(-0.2, 0.2)
                mod.running_var.uniform_(0.5, 1.5)
        # Constant parameters (norm weights 1 / biases 0, ViT's zero head, ConvNeXt's 1e-6 layer
        # scale) would hide mistakes: perturb them.
        for p in m.parameters():
            if p.numel() > 1 and p.is_floating_point() and bool((p == p.flatten()[0]).all()):
                v = float(p.flatten()[0])
                if abs(v) < 0.1:
                    p.uniform_(-0.2, 0.2).add_(v)
                else:
                    p.mul_(torch.empty_like(p).uniform_(0.5, 1.5))
    return m


def flat_outputs(y):
    if isinstance(y, torch.Tensor):
        return [y]
    out = []
    for t in y:
        out += flat_outputs(t)
    return out


def sizes(c, dynamic, run):
    b, s = c.export_bs
    if dynamic and run and c.dyn:
        b, s = c.run_bs
    return b, (s if s is not None else 6)


def export_one(c, exporter, dynamic, out_dir, force):
    name = f"{c.name}.{exporter}.{'dynamic' if dynamic else 'static'}"
    d = os.path.join(out_dir, name)
    meta_path = os.path.join(d, "meta.json")
    if not force and os.path.exists(meta_path):
        return name, json.load(open(meta_path))
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    meta = {"case": name, "model": c.name, "exporter": exporter, "shapes": "dynamic" if dynamic else "static",
            "tol": c.tol, "group": c.group}
    try:
        model = build(c)
        example = c.inputs(*sizes(c, dynamic, False))
        in_names = ["x"] if len(example) == 1 else [f"x{i}" for i in range(len(example))]
        # Gradients stay enabled: under no_grad nn.TransformerEncoderLayer takes a fused fast
        # path the exporters do not handle; reference and export both use the plain path.
        y = flat_outputs(model(*example))
        out_names = ["y"] if len(y) == 1 else [f"y{i}" for i in range(len(y))]
        path = os.path.join(d, "model.onnx")
        t0 = time.time()
        if exporter == "legacy":
            axes = None
            if dynamic and c.dyn:
                axes = {in_names[i]: {k: f"{v}" for k, v in dims.items()} for i, dims in c.dyn.items()}
            torch.onnx.export(model, example, path, dynamo=False, opset_version=LEGACY_OPSET, input_names=in_names,
                              output_names=out_names, dynamic_axes=axes, do_constant_folding=True)
        else:
            shapes = None
            if dynamic and c.dyn:
                # AUTO: dims torch.export has to specialize (an RNN's sequence length, which
                # it unrolls) stay static; the run below keeps their export size.
                shapes = tuple({k: torch.export.Dim.AUTO for k in c.dyn.get(i, {})} or None
                               for i in range(len(example)))
            torch.onnx.export(model, example, path, input_names=in_names, output_names=out_names,
                              dynamic_shapes=shapes)
        meta["export_s"] = round(time.time() - t0, 2)
        import onnx
        mp = onnx.load(path, load_external_data=False)
        meta["opset"] = next((o.version for o in mp.opset_import if o.domain in ("", "ai.onnx")), None)
        graph_in = [i.name for i in mp.graph.input]
        meta["inputs"] = graph_in
        meta["outputs"] = [o.name for o in mp.graph.output]
        # Run on other sizes than the export for the dims that the model keeps symbolic.
        run_b, run_s = sizes(c, dynamic, True)
        exp_b, exp_s = sizes(c, dynamic, False)
        static = set()
        for i, dims in c.dyn.items():
            if not dynamic or in_names[i] not in graph_in:
                continue
            shape = mp.graph.input[graph_in.index(in_names[i])].type.tensor_type.shape.dim
            for k, label in dims.items():
                if k < len(shape) and shape[k].HasField("dim_value"):
                    static.add(label)
        if static:
            meta["specialized_dims"] = sorted(static)
        run_in = c.inputs(exp_b if "b" in static else run_b, exp_s if "s" in static else run_s)
        y = flat_outputs(model(*run_in))
        # The exporters drop inputs the graph does not use; keep only the ones it lists.
        feed = {}
        for n, t in zip(in_names, run_in):
            if n in graph_in:
                np.save(os.path.join(d, f"in_{graph_in.index(n)}.npy"), t.numpy())
                feed[n] = t.numpy()
        for k, t in enumerate(y):
            np.save(os.path.join(d, f"torch_{k}.npy"), t.detach().numpy())
        if len(meta["outputs"]) != len(y):
            meta["export_error"] = f"ONNX graph has {len(meta['outputs'])} outputs, torch {len(y)}"
        try:
            import onnxruntime as ort
            so = ort.SessionOptions()
            so.intra_op_num_threads = 1
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            res = sess.run(None, feed)
            errs = []
            for k, (r, t) in enumerate(zip(res, y)):
                np.save(os.path.join(d, f"ort_{k}.npy"), r)
                errs.append(rel_err(r, t.detach().numpy()))
            meta["ort_rel"] = max(errs) if errs else 0.0
        except Exception as e:  # noqa: BLE001 - onnxruntime is only a cross-check
            meta["ort_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    except Exception as e:  # noqa: BLE001 - a failed export is a table row, not an abort
        # the dynamo exporter wraps the reason (torch.export's error) in a generic message
        root = e
        while root.__cause__ is not None:
            root = root.__cause__
        lines = [ln.strip() for ln in str(root).strip().splitlines() if ln.strip()]
        meta["export_error"] = f"{type(root).__name__}: {' '.join(lines[:2])[:300]}"
        traceback.print_exc()
    json.dump(meta, open(meta_path, "w"), indent=1)
    return name, meta


def rel_err(got, want):
    """max|got - want| / max|want| for floats (0 when equal); for ints and bools the fraction of
    differing elements (must be 0). inf for shape or dtype-class mismatches or non-finite values
    where torch has finite ones."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return float("inf")
    if want.dtype.kind in "biu" or got.dtype.kind in "biu":
        if got.dtype.kind != want.dtype.kind and not (got.dtype.kind in "iu" and want.dtype.kind in "iu"):
            return float("inf")
        return float(np.count_nonzero(got != want)) / max(1, want.size)
    g, w = got.astype(np.float64), want.astype(np.float64)
    fin = np.isfinite(w)
    if np.any(~np.isfinite(g) & fin) or np.any(g[~fin] != w[~fin]):
        return float("inf")
    if not np.any(fin):
        return 0.0
    scale = np.abs(w[fin]).max()
    diff = np.abs(g[fin] - w[fin]).max()
    return float(diff / scale) if scale > 0 else float(diff)


def compare(out_dir, name, rlx_dir):
    d = os.path.join(out_dir, name)
    meta = json.load(open(os.path.join(d, "meta.json")))
    errs, notes = [], []
    for k, oname in enumerate(meta["outputs"]):
        want = np.load(os.path.join(d, f"torch_{k}.npy"))
        p = os.path.join(rlx_dir, f"{oname}.npy")
        if not os.path.exists(p):
            notes.append(f"no output {oname}")
            errs.append(float("inf"))
            continue
        got = np.load(p)
        if got.dtype != want.dtype:
            notes.append(f"{oname}: dtype {got.dtype}, torch {want.dtype}")
        if got.shape != want.shape:
            notes.append(f"{oname}: shape {list(got.shape)}, torch {list(want.shape)}")
        errs.append(rel_err(got, want))
    worst = max(errs) if errs else 0.0
    if len(errs) > 1 and worst > meta["tol"]:
        notes.append(f"worst output {meta['outputs'][errs.index(worst)]}")
    ok = worst <= meta["tol"] and not any("dtype" in n for n in notes)
    return {"case": name, "status": "pass" if ok else "mismatch", "rel": worst, "note": "; ".join(notes)[:200]}


# ----------------------------------------------------------------------------------------------
# Table


def fmt_rel(r):
    if r is None:
        return ""
    return "inf" if r == float("inf") else f"{r:.1e}"


def print_pivot(lines):
    """One markdown row per model, one column per exporter / shapes variant; the cell is "pass"
    (with the worst relative error) or the failure, whose details follow the table."""
    cols = [("dynamo", "static"), ("dynamo", "dynamic"), ("legacy", "static"), ("legacy", "dynamic")]
    cells, order, notes = {}, [], []
    for l in lines:
        model, ex, shapes, opset, st, rel, detail = l[0], l[1], l[2], l[3], l[4], l[5], l[9]
        if model not in cells:
            cells[model] = {}
            order.append(model)
        if st == "pass":
            cells[model][(ex, shapes)] = f"pass {rel}"
        else:
            notes.append(f"{model} ({ex}, {shapes}): {st}" + (f" {rel}" if rel else "") + (f": {detail}" if detail else ""))
            cells[model][(ex, shapes)] = f"**{st}** [{len(notes)}]"
    print("| model | " + " | ".join(f"{e} {s}" for e, s in cols) + " |")
    print("|---|" + "---|" * len(cols))
    for m in order:
        print(f"| {m} | " + " | ".join(cells[m].get(c, "-") for c in cols) + " |")
    print()
    for i, n in enumerate(notes, 1):
        print(f"{i}. {n}")


def table(out_dir, results_path, markdown, pivot=False):
    rows = []
    for line in open(results_path):
        line = line.strip()
        if line:
            r = json.loads(line)
            if r["status"] == "ran":
                r.update(compare(out_dir, r["case"], os.path.join(out_dir, r["case"], "rlx_out")))
            rows.append(r)
    hdr = ["model", "exporter", "shapes", "opset", "status", "rel err", "ort rel", "export s", "rlx s", "detail"]
    lines = []
    counts = {}
    for r in rows:
        meta = json.load(open(os.path.join(out_dir, r["case"], "meta.json")))
        st = r["status"]
        if st == "error" and "ort_error" in meta:
            st = "error (ort too)"
        if st == "mismatch" and meta.get("ort_rel", 0) > meta["tol"]:
            st = "mismatch (ort too)"  # the exported file itself is wrong for these inputs
        counts[st] = counts.get(st, 0) + 1
        ort = fmt_rel(meta.get("ort_rel")) if "ort_rel" in meta else ("fails" if "ort_error" in meta else "")
        lines.append([meta["model"], meta["exporter"], meta["shapes"], str(meta.get("opset", "")), st,
                      fmt_rel(r.get("rel")), ort, str(meta.get("export_s", "")), str(r.get("rlx_s", "")),
                      (r.get("note") or "").replace("|", "/")[:160]])
    if pivot:
        print_pivot(lines)
    elif markdown:
        print("| " + " | ".join(hdr) + " |")
        print("|" + "---|" * len(hdr))
        for l in lines:
            print("| " + " | ".join(l) + " |")
    else:
        w = [max(len(h), *(len(l[i]) for l in lines)) if lines else len(h) for i, h in enumerate(hdr)]
        w[-1] = 0
        print("  ".join(h.ljust(w[i]) for i, h in enumerate(hdr)))
        for l in lines:
            print("  ".join(v.ljust(w[i]) for i, v in enumerate(l)))
    print("\n" + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) + f" (of {len(rows)})")


# ----------------------------------------------------------------------------------------------


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd = argv[1]
    if cmd == "list":
        for c in CASES:
            print(c.group, c.name)
        return 0
    if cmd == "compare":
        print(json.dumps(compare(argv[2], argv[3], argv[4])))
        return 0
    if cmd == "table":
        for path in argv[3:]:
            if not path.startswith("--"):
                table(argv[2], path, "--markdown" in argv, "--pivot" in argv)
        return 0
    if cmd != "export":
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = argv[2]
    opts = {"--exporter": "both", "--shapes": "both", "--only": "", "--skip": "", "--group": ""}
    force = "--force" in argv
    cached = "--cached" in argv
    i = 3
    while i < len(argv):
        if argv[i] in opts and i + 1 < len(argv):
            opts[argv[i]] = argv[i + 1]
            i += 2
        elif argv[i] in ("--force", "--cached"):
            i += 1
        else:
            print(f"unknown option {argv[i]}", file=sys.stderr)
            return 2
    exporters = ["dynamo", "legacy"] if opts["--exporter"] == "both" else [opts["--exporter"]]
    shapes = [False, True] if opts["--shapes"] == "both" else [opts["--shapes"] == "dynamic"]
    only = set(filter(None, opts["--only"].split(",")))
    skip = set(filter(None, opts["--skip"].split(",")))
    groups = set(filter(None, opts["--group"].split(",")))
    unknown = (only | skip) - {c.name for c in CASES}
    if unknown:
        print(f"unknown model(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    for c in CASES:
        if (only and c.name not in only) or c.name in skip or (groups and c.group not in groups):
            continue
        for ex in exporters:
            for dyn in shapes:
                if dyn and not c.dyn:
                    continue
                if cached and not os.path.exists(
                        os.path.join(out_dir, f"{c.name}.{ex}.{'dynamic' if dyn else 'static'}", "meta.json")):
                    continue
                name, meta = export_one(c, ex, dyn, out_dir, force)
                err = meta.get("export_error")
                print(f"{name}: " + (f"EXPORT FAILED {err}" if err else f"exported opset {meta.get('opset')} "
                                     f"in {meta.get('export_s')} s"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
