// Conv shape files: regimes, the parser's checks, the generated sets and the committed files.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "kselect/shapes.h"

namespace kselect {
namespace {

constexpr char kHeader[] =
    "n,c,k,g,di,hi,wi,z,y,x,stride_d,stride_h,stride_w,pad_d,pad_h,pad_w,dilation_d,dilation_h,"
    "dilation_w,regime,family\n";

ConvProblem Shape2d(int64_t n, int64_t c, int64_t k, int64_t g, int64_t hw, int64_t f,
                    int64_t stride = 1, int64_t pad = 0, int64_t dilation = 1) {
  ConvProblem p;
  p.n = n;
  p.c = c;
  p.k = k;
  p.g = g;
  p.hi = p.wi = hw;
  p.y = p.x = f;
  p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad;
  p.dilation_h = p.dilation_w = dilation;
  return p;
}

TEST(ConvShapesTest, RegimeNamesEveryPart) {
  EXPECT_EQ(ConvShapeRegime(Shape2d(1, 64, 64, 1, 56, 3, 1, 1)),
            "2d.sp_medium.ch_narrow.dense.f3.s1.dil1");  // 56x56 = 3136 pixels
  EXPECT_EQ(ConvShapeRegime(Shape2d(1, 64, 64, 1, 65, 3, 1, 1)),
            "2d.sp_large.ch_narrow.dense.f3.s1.dil1");
  EXPECT_EQ(ConvShapeRegime(Shape2d(1, 576, 576, 576, 14, 5, 2, 2)),
            "2d.sp_small.ch_wide.depthwise.f5.strided.dil1");
  EXPECT_EQ(ConvShapeRegime(Shape2d(1, 256, 256, 8, 64, 3, 1, 2, 2)),
            "2d.sp_medium.ch_mid.grouped.f3.s1.dilated");
  ConvProblem p3 = Shape2d(2, 32, 64, 1, 16, 7, 1, 3);
  p3.di = 8;
  p3.z = 1;
  EXPECT_EQ(ConvShapeRegime(p3), "3d.sp_medium.ch_narrow.dense.f7.s1.dil1");
  EXPECT_EQ(ConvShapeRegime(Shape2d(1, 2048, 512, 1, 7, 1)),
            "2d.sp_small.ch_wide.dense.f1.s1.dil1");
}

TEST(ConvShapesTest, ParsesRowsFillsRegimesAndKeepsColumnsInAnyOrder) {
  const std::string text = std::string("# a comment\n") + kHeader +
                           "8,64,128,1,1,56,56,1,3,3,1,1,1,0,1,1,1,1,1,,test.a\n"
                           "\n"
                           "1,32,32,32,1,112,112,1,3,3,1,2,2,0,1,1,1,1,1,"
                           "2d.sp_medium.ch_narrow.depthwise.f3.strided.dil1,test.dw\n";
  auto rows = ParseConvShapeCsv(text, "t.csv");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].shape.n, 8);
  EXPECT_EQ((*rows)[0].shape.Ho(), 56);
  EXPECT_EQ((*rows)[0].regime, "2d.sp_medium.ch_mid.dense.f3.s1.dil1");
  EXPECT_EQ((*rows)[1].shape.Ho(), 56);
  EXPECT_EQ((*rows)[1].family, "test.dw");
  // Columns in another order, without regime and family.
  auto reordered = ParseConvShapeCsv(
      "k,c,n,g,di,hi,wi,z,y,x,stride_d,stride_h,stride_w,pad_d,pad_h,pad_w,dilation_d,dilation_h,"
      "dilation_w\n128,64,8,1,1,56,56,1,3,3,1,1,1,0,1,1,1,1,1\n",
      "r.csv");
  ASSERT_TRUE(reordered.ok()) << reordered.status().ToString();
  EXPECT_EQ((*reordered)[0].shape, (*rows)[0].shape);
}

// Every impossible problem is refused with the file, the line and ConvProblem's reason.
TEST(ConvShapesTest, ImpossibleProblemsNameFileLineAndReason) {
  const std::pair<std::string, std::string> cases[] = {
      {"1,64,64,1,1,4,4,1,7,7,1,1,1,0,0,0,1,1,1,,x", "empty output"},
      {"1,64,64,3,1,8,8,1,3,3,1,1,1,0,1,1,1,1,1,,x", "divisible by G"},
      {"1,64,96,64,1,8,8,1,3,3,1,1,1,0,1,1,1,1,1,,x", "divisible by G"},
      {"1,64,64,1,1,8,8,1,3,3,1,1,1,0,-1,1,1,1,1,,x", "padding must not be negative"},
      {"1,64,64,1,1,8,8,1,3,3,1,1,1,0,1,1,1,0,1,,x", "dilation_h"},
      {"1,64,64,1,1,8,8,1,3,3,1,0,1,0,1,1,1,1,1,,x", "stride_h"},
      {"0,64,64,1,1,8,8,1,3,3,1,1,1,0,1,1,1,1,1,,x", "N"},
      {"1,64,64,1,1,8,8,1,3,3,2,1,1,0,1,1,1,1,1,,x", "stride_d = dilation_d = 1"},
      {"1,64,6a,1,1,8,8,1,3,3,1,1,1,0,1,1,1,1,1,,x", "k: '6a' is not an integer"},
      {"1,64,64,1,1,8,8,1,3,3,1,1,1,0,1,1,1,1,,x", "expected 21 fields, got 20"},
      {"1,64,64,1,1,8,8,1,3,3,1,1,1,0,1,1,1,1,1,2d.wrong,x", "does not match the sizes"},
  };
  for (const auto& [row, reason] : cases) {
    auto parsed = ParseConvShapeCsv(std::string("# c\n") + kHeader + row + "\n", "bad.csv");
    ASSERT_FALSE(parsed.ok()) << row;
    EXPECT_NE(parsed.status().message().find("bad.csv:3: "), std::string::npos)
        << parsed.status().message();
    EXPECT_NE(parsed.status().message().find(reason), std::string::npos)
        << row << " -> " << parsed.status().message();
  }
  EXPECT_NE(ParseConvShapeCsv("n,c,k\n1,2,3\n", "h.csv").status().message().find("lacks column"),
            std::string::npos);
  EXPECT_NE(ParseConvShapeCsv("n,c,k,q\n", "h.csv").status().message().find("unknown column 'q'"),
            std::string::npos);
  EXPECT_NE(ParseConvShapeCsv("n,n\n", "h.csv").status().message().find("repeats"),
            std::string::npos);
  EXPECT_NE(ParseConvShapeCsv("# only\n", "e.csv").status().message().find("no header"),
            std::string::npos);
}

TEST(ConvShapesTest, ShapeFileKindComesFromTheHeader) {
  EXPECT_EQ(DetectShapeFileKind("# c\nm,n,k\n1,1,1\n", "g").value(), ShapeFileKind::kGemm);
  EXPECT_EQ(DetectShapeFileKind(std::string("# c\n\n") + kHeader, "c").value(),
            ShapeFileKind::kConv);
  EXPECT_FALSE(DetectShapeFileKind("a,b\n", "x").ok());
  EXPECT_FALSE(DetectShapeFileKind("# nothing\n", "x").ok());
  EXPECT_FALSE(ShapeFileKindOf("/no/such/file.csv").ok());
}

TEST(ConvShapesTest, ConvShapeSetsTheRunsDirectionAndDtype) {
  ConvShapeRow row{Shape2d(4, 64, 64, 1, 28, 3, 1, 1), "", ""};
  const ConvProblem p = ConvShape(row, ConvDirection::kBackwardWeight, DataType::kF16);
  EXPECT_EQ(p.direction, ConvDirection::kBackwardWeight);
  EXPECT_EQ(p.dtype, DataType::kF16);
  EXPECT_EQ(p.layout, ConvLayout::kChannelsLast);
  EXPECT_EQ(p.n, 4);
  EXPECT_EQ(p.Flops(), row.shape.Flops());
}

// Both sets: valid, within the caps, distinct, deterministic and round-tripping through CSV.
TEST(ConvShapesTest, GeneratedSetsAreValidCappedDistinctAndDeterministic) {
  for (const std::string_view set : ConvShapeSetNames()) {
    auto rows = GenerateConvShapeSet(set);
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    EXPECT_EQ(*rows, GenerateConvShapeSet(set).value()) << set;
    std::set<std::string> keys;
    for (const ConvShapeRow& r : *rows) {
      const ConvProblem& p = r.shape;
      EXPECT_TRUE(p.Validate().ok()) << p.ToString();
      EXPECT_LE(p.Flops(), kConvShapeMaxFlops) << p.ToString();
      const double bytes =
          2.0 * std::max({static_cast<double>(p.n) * p.c * p.di * p.hi * p.wi,
                          static_cast<double>(p.n) * p.k * p.Do() * p.Ho() * p.Wo(),
                          static_cast<double>(p.k) * (p.c / p.g) * p.z * p.y * p.x});
      EXPECT_LE(bytes, kConvShapeMaxBytes) << p.ToString();
      EXPECT_EQ(r.regime, ConvShapeRegime(p));
      EXPECT_FALSE(r.family.empty());
      EXPECT_TRUE(keys.insert(p.ToString()).second) << "repeated: " << p.ToString();
    }
    EXPECT_EQ(ParseConvShapeCsv(ConvShapeCsv(*rows, {"test"}), "rt.csv").value(), *rows) << set;
  }
  EXPECT_FALSE(GenerateConvShapeSet("conv_nope").ok());
}

TEST(ConvShapesTest, TrainingCoversTheRegimesAndTheIssuesRanges) {
  const auto rows = GenerateConvShapeSet("conv_train").value();
  EXPECT_GE(rows.size(), 290u);
  EXPECT_LE(rows.size(), 320u);
  std::set<std::string> parts;
  std::set<int64_t> groups, batches, filters;
  int64_t min_c = 1 << 30, max_c = 0, asymmetric = 0;
  for (const ConvShapeRow& r : rows) {
    size_t start = 0;
    while (start <= r.regime.size()) {
      const size_t dot = r.regime.find('.', start);
      parts.insert(r.regime.substr(start, dot == std::string::npos ? dot : dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    if (r.shape.g > 1 && r.shape.g != r.shape.c) groups.insert(r.shape.g);
    batches.insert(r.shape.n);
    filters.insert(std::max(r.shape.y, r.shape.x));
    if (r.shape.c >= 16) min_c = std::min(min_c, r.shape.c);
    max_c = std::max(max_c, std::max(r.shape.c, r.shape.k));
    asymmetric += r.shape.c != r.shape.k;
  }
  for (const char* part :
       {"2d", "3d", "sp_small", "sp_medium", "sp_large", "ch_narrow", "ch_mid", "ch_wide", "dense",
        "grouped", "depthwise", "f1", "f3", "f5", "f7", "s1", "strided", "dil1", "dilated"}) {
    EXPECT_TRUE(parts.contains(part)) << part;
  }
  for (const int64_t g : {2, 4, 8}) EXPECT_TRUE(groups.contains(g)) << g;
  for (const int64_t n : {1, 128}) EXPECT_TRUE(batches.contains(n)) << n;
  for (const int64_t f : {1, 3, 5, 7}) EXPECT_TRUE(filters.contains(f)) << f;
  EXPECT_EQ(min_c, 16);
  EXPECT_EQ(max_c, 2048);
  EXPECT_GE(asymmetric, 50);
}

// Validation rows are real network layers kept apart from training: no shape in both.
TEST(ConvShapesTest, ValidationSharesNoShapeWithTraining) {
  const auto train = GenerateConvShapeSet("conv_train").value();
  const auto validation = GenerateConvShapeSet("conv_validation").value();
  EXPECT_GE(validation.size(), 100u);
  EXPECT_LE(validation.size(), 200u);
  std::set<std::string> in_train;
  for (const ConvShapeRow& r : train) in_train.insert(r.shape.ToString());
  std::map<std::string, int> networks;
  for (const ConvShapeRow& r : validation) {
    EXPECT_FALSE(in_train.contains(r.shape.ToString())) << r.family << ": " << r.shape.ToString();
    ++networks[r.family.substr(0, r.family.find('.'))];
  }
  for (const char* net :
       {"resnet50", "resnext50_32x4d", "regnet_x_400mf", "mobilenet_v2", "efficientnet_b0",
        "convnext_tiny", "r2plus1d_18", "unet3d", "sd15_unet"}) {
    EXPECT_GT(networks[net], 0) << net;
  }
}

// The extra training draws repeat neither set, and a fifth of them leave the vector width.
TEST(ConvShapesTest, ExtraTrainingSharesNoShapeWithTheOtherSets) {
  const auto extra = GenerateConvShapeSet("conv_train_extra").value();
  EXPECT_EQ(extra.size(), 300u);
  std::set<std::string> others;
  for (const char* set : {"conv_train", "conv_validation"}) {
    // Held by name: a range-for over the temporary's value() would read a destroyed StatusOr.
    const std::vector<ConvShapeRow> rows = GenerateConvShapeSet(set).value();
    for (const ConvShapeRow& r : rows) others.insert(r.shape.ToString());
  }
  int odd = 0;
  for (const ConvShapeRow& r : extra) {
    EXPECT_FALSE(others.contains(r.shape.ToString())) << r.family << ": " << r.shape.ToString();
    if ((r.shape.c / r.shape.g) % 8 != 0 && r.shape.g != r.shape.c) ++odd;
  }
  EXPECT_GE(odd, 20);
}

// The other networks' training layers repeat no row of the other sets, and every network named
// in the file's sources brings layers, batch-1 ones among them.
TEST(ConvShapesTest, NetworkTrainingLayersShareNoShapeWithTheOtherSets) {
  const auto networks = GenerateConvShapeSet("conv_train_networks").value();
  std::set<std::string> others;
  for (const char* set : {"conv_train", "conv_train_extra", "conv_validation"}) {
    // Held by name: a range-for over the temporary's value() would read a destroyed StatusOr.
    const std::vector<ConvShapeRow> rows = GenerateConvShapeSet(set).value();
    for (const ConvShapeRow& r : rows) others.insert(r.shape.ToString());
  }
  std::map<std::string, int> layers, batch_one;
  for (const ConvShapeRow& r : networks) {
    EXPECT_FALSE(others.contains(r.shape.ToString())) << r.family << ": " << r.shape.ToString();
    const std::string net = r.family.substr(0, r.family.find('.'));
    ++layers[net];
    if (r.shape.n == 1) ++batch_one[net];
  }
  for (const char* net : {"vgg16", "resnet18", "densenet121", "inception_v3", "shufflenet_v2",
                          "mobilenet_v3_large", "squeezenet1_1", "sd_vae_decoder", "yolov5s",
                          "r3d_18"}) {
    EXPECT_GT(layers[net], 0) << net;
    EXPECT_GT(batch_one[net], 0) << net;
  }
  EXPECT_GE(networks.size(), 150u);
}

// The hard-regime training draws repeat no row of the other sets (conv_validation above all), fill
// every regime's quota, and stay within the generator's caps.
TEST(ConvShapesTest, HardTrainingSharesNoShapeWithTheOtherSets) {
  const auto hard = GenerateConvShapeSet("conv_train_hard").value();
  std::set<std::string> others;
  for (const char* set :
       {"conv_train", "conv_train_extra", "conv_train_networks", "conv_validation"}) {
    // Held by name: a range-for over the temporary's value() would read a destroyed StatusOr.
    const std::vector<ConvShapeRow> rows = GenerateConvShapeSet(set).value();
    for (const ConvShapeRow& r : rows) others.insert(r.shape.ToString());
  }
  std::map<std::string, int> families;
  int one_frame_3d = 0, odd = 0, few_channel_input = 0;
  for (const ConvShapeRow& r : hard) {
    EXPECT_FALSE(others.contains(r.shape.ToString())) << r.family << ": " << r.shape.ToString();
    EXPECT_LE(r.shape.Flops(), 0.5e12) << r.family << ": " << r.shape.ToString();
    ++families[r.family];
    if (r.shape.Is3d() && r.shape.z == 1) ++one_frame_3d;
    if (r.shape.g == 1 && (r.shape.c % 8 != 0 || r.shape.k % 8 != 0)) ++odd;
    if (r.shape.c <= 4) ++few_channel_input;
  }
  const std::map<std::string, int> quotas = {{"hard.stem2d", 24},       {"hard.stem3d", 10},
                                             {"hard.one_frame3d", 28},  {"hard.odd_channels", 28},
                                             {"hard.few_channels", 14}, {"hard.grouped3x3_s2", 18},
                                             {"hard.small_maps", 16},   {"hard.narrow_1x1_s2", 8}};
  EXPECT_EQ(families, quotas);
  EXPECT_GE(one_frame_3d, 20);
  EXPECT_GE(odd, 50);
  EXPECT_GE(few_channel_input, 30);
}

// The committed files are exactly what the generator writes (rows, not the comment lines).
TEST(ConvShapesTest, CommittedFilesMatchTheGenerator) {
  for (const std::string_view set : ConvShapeSetNames()) {
    SCOPED_TRACE(set);
    const std::string path =
        std::string(KSELECT_SOURCE_DIR) + "/shapes/" + std::string(set) + ".csv";
    auto committed = LoadConvShapeFile(path);
    ASSERT_TRUE(committed.ok()) << committed.status().ToString();
    EXPECT_EQ(*committed, GenerateConvShapeSet(set).value())
        << path << " drifted: run 'kselect shapes generate --set " << set << " -o " << path << "'";
  }
}

}  // namespace
}  // namespace kselect
