// Shape sets: the problems kselect benches, each labelled with its regime and family, read from
// and written to CSV files under shapes/. Two kinds, told apart by their header's first column:
//
// GEMM: '#' lines are comments (the first says where the set came from); then the header
// "m,n,k,batch,regime,family"; then one row per shape. Dimensions are positive int64 element
// counts whose products m*k, k*n, m*n (times batch) fit in int64.
//
// Convolution: '#' comment lines, then the header
// "n,c,k,g,di,hi,wi,z,y,x,stride_d,stride_h,stride_w,pad_d,pad_h,pad_w,dilation_d,dilation_h,
// dilation_w,regime,family" (one line; columns in any order, regime and family optional); then one
// row per grouped convolution. c and k are total channels; 2D rows have di = z = 1, stride_d =
// dilation_d = 1, pad_d = 0. Direction, dtype and layout are not part of a shape: a bench run
// picks them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kselect/problem.h"
#include "kselect/status.h"

namespace kselect {

struct ShapeRow {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  std::string regime;  // ShapeRegime(m, n, k)
  std::string family;  // how the row was made: "llm.llama7b.qkv", "square", "prime", "edge.k1", ...
  bool operator==(const ShapeRow&) const = default;
};

// "m<bucket>.n<bucket>.k<bucket>" with m buckets 1, 2-16, 17-128, 129-2048, 2049+ (the issue's
// 1 / 2-16 / 32-128 / 256-2048 / 4096-20480 with the gaps closed), n buckets 1, 2-64 ("small"),
// 65+, and k buckets 1, 2-255 ("shallow"), 256-4096, 4097+ ("deep").
std::string ShapeRegime(int64_t m, int64_t n, int64_t k);

// Parses a shape CSV; errors name `source` and the line ("shapes/x.csv:12: k: 'abc' is not a
// positive integer"). Missing regime/family columns are filled in.
StatusOr<std::vector<ShapeRow>> ParseShapeCsv(std::string_view text, std::string_view source);
StatusOr<std::vector<ShapeRow>> LoadShapeFile(const std::string& path);

// The named generated sets: "wide" (~700 rows over every regime and family), "core" (a
// systematic ~1-in-4.5 sample of wide, ~155 rows), "fp8" (core plus another 1 in 9 of wide:
// cuBLASLt runs fp8 on fewer shapes), "edge" (degenerate and alignment-hostile shapes) and
// "holdout" (~170 linear layers of LLMs the wide set does not name, at token counts 1-4096, none
// of them a wide shape: a test set for models trained on wide-set data).
// "<set>_framework" (wide, core, fp8, holdout): the same rows in framework orientation, as
// PyTorch's nn.Linear reaches cuBLAS (TN): m = out features, n = tokens (m and n swapped).
// Deterministic: the same kselect writes the same rows.
StatusOr<std::vector<ShapeRow>> GenerateShapeSet(std::string_view set);
// The CSV text of `rows`, with `origin` as the first comment line.
std::string ShapeCsv(const std::vector<ShapeRow>& rows, std::string_view origin);

// ---------------------------------------------------------------------------- convolution shapes

// One grouped convolution of a conv shape set. `shape` holds the sizes only: its direction,
// layout and dtypes stay at their defaults (ConvShape() of a bench run sets them).
struct ConvShapeRow {
  ConvProblem shape;
  std::string regime;  // ConvShapeRegime(shape)
  std::string family;  // how the row was made: "train.dense3x3", "resnet50.layer2.0.conv2", ...
  bool operator==(const ConvShapeRow&) const = default;
};

// The problem a bench run times for `row`: its sizes with the run's direction and dtype, tensors
// channels-last, fp32 accumulation.
ConvProblem ConvShape(const ConvShapeRow& row, ConvDirection direction, DataType dtype);

// The regime of a convolution (seed 003's slices), seven dot-separated parts:
//   "2d" | "3d"
//   spatial by output pixels per image (Do*Ho*Wo): "sp_small" (<= 256, 16x16), "sp_medium"
//   (<= 4096, 64x64), "sp_large"
//   channels by max(C, K): "ch_narrow" (<= 64), "ch_mid" (<= 512), "ch_wide"
//   groups: "dense" (G = 1), "depthwise" (G = C), "grouped"
//   filter by its largest side: "f1", "f3" (2-3), "f5" (4-5), "f7" (6+)
//   "s1" | "strided" (any stride > 1)
//   "dil1" | "dilated" (any dilation > 1)
// e.g. "2d.sp_medium.ch_mid.depthwise.f3.strided.dil1".
std::string ConvShapeRegime(const ConvProblem& shape);

// Parses a conv shape CSV; errors name `source` and the line ("shapes/x.csv:12: hi: 'abc' is not
// an integer", "...:7: C and K must be divisible by G: ..."). Every row must pass
// ConvProblem::Validate (no empty output, G dividing C and K, no negative padding, strides and
// dilations >= 1). Missing regime/family columns are filled in; a regime that does not match the
// sizes is an error.
StatusOr<std::vector<ConvShapeRow>> ParseConvShapeCsv(std::string_view text,
                                                      std::string_view source);
StatusOr<std::vector<ConvShapeRow>> LoadConvShapeFile(const std::string& path);

// The named generated conv sets (deterministic):
//   "conv_train": ~300 2D and 3D training shapes over every regime (small to large spatial,
//     channels 16-2048, asymmetric C/K, batch 1-128, groups 2-64 and depthwise, stride 2,
//     dilation, 1x1 to 7x7 filters, 3D), none equal to a conv_validation row;
//   "conv_train_extra": 300 more random draws over the same regimes (a fifth with channel counts
//     3-512 off the vector width), none equal to a conv_train or conv_validation row;
//   "conv_train_networks": the layers of ten other well-known networks (VGG-16, ResNet-18,
//     DenseNet-121, Inception-v3, ShuffleNetV2, MobileNetV3-Large, SqueezeNet 1.1, the SD VAE
//     decoder, YOLOv5s, R3D-18) at two batch sizes each, none equal to a row of the sets above or
//     of conv_validation;
//   "conv_train_hard": ~140 seeded draws over the regimes the models rank worst (3-4 channel
//     stems, 3D with one-frame kernels, odd channel counts, grouped 3x3/2 on few channels, batch
//     1-8 on small maps), none equal to a row of the sets above or of conv_validation;
//   "conv_validation": the distinct conv layers of well-known networks (ResNet-50, ResNeXt-50,
//     RegNetX-400MF, MobileNetV2, EfficientNet-B0, ConvNeXt-T, R(2+1)D-18, a 3D U-Net, the
//     Stable Diffusion 1.5 UNet) at two batch sizes each, family "<network>.<layer>".
// Every shape is capped to at most kConvShapeMaxFlops per forward pass and kConvShapeMaxBytes per
// bf16 tensor, so a sweep of every engine config in three directions stays short.
StatusOr<std::vector<ConvShapeRow>> GenerateConvShapeSet(std::string_view set);
// The names GenerateConvShapeSet knows, and the comment lines a set's file starts with (how it
// was made; for conv_validation the papers and model definitions behind each network).
std::vector<std::string_view> ConvShapeSetNames();
std::vector<std::string> ConvShapeSetSources(std::string_view set);
inline constexpr double kConvShapeMaxFlops = 2.0e12;
inline constexpr double kConvShapeMaxBytes = 1024.0 * 1024 * 1024;

// The CSV text of `rows` (every column), with `origin_lines` as its leading comment lines.
std::string ConvShapeCsv(const std::vector<ConvShapeRow>& rows,
                         const std::vector<std::string>& origin_lines);

// What a shape file holds, from its first non-comment line: "m,..." is GEMM, "n,..." is conv.
enum class ShapeFileKind { kGemm, kConv };
StatusOr<ShapeFileKind> DetectShapeFileKind(std::string_view text, std::string_view source);
StatusOr<ShapeFileKind> ShapeFileKindOf(const std::string& path);

}  // namespace kselect
