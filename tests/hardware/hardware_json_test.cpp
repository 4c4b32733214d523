#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "kselect/hardware.h"

namespace kselect {
namespace {

using Json = nlohmann::ordered_json;

// Every field set to a distinct, non-default value, so a field the codec drops shows up.
HardwareProfile H200Profile() {
  HardwareProfile p;
  p.vendor = "nvidia";
  p.device_name = "NVIDIA H200";
  p.device_kind = "nvidia-h200";
  p.arch = "sm_90";
  p.uuid = "GPU-0123abcd-4567-89ef-0123-456789abcdef";
  p.cc_major = 9;
  p.cc_minor = 0;
  p.sm_count = 132;
  p.sm_clock_mhz = 1980;
  p.mem_clock_mhz = 3201;
  p.mem_bus_width_bits = 6144;
  p.l2_bytes = 62914560;
  p.smem_per_sm_bytes = 233472;
  p.smem_per_block_optin_bytes = 232448;
  p.regs_per_sm = 65536;
  p.max_threads_per_sm = 2048;
  p.global_mem_bytes = 150109716480LL;
  p.peak_mem_bandwidth_gb_s = 4916.736;
  p.driver_version = 13000;
  p.runtime_version = 13000;
  p.cublaslt_version = 130100;
  p.cudnn_version = 91300;
  p.nvrtc_version = 13000;
  return p;
}

Json ProfileJson() {
  return Json::parse(HardwareProfileToJson(H200Profile()));
}

Status Parse(const Json& json) {
  return HardwareProfileFromJson(json.dump(), "profile.json").status();
}

TEST(HardwareJsonTest, RoundTripKeepsEveryField) {
  const HardwareProfile original = H200Profile();
  const std::string text = HardwareProfileToJson(original);
  const StatusOr<HardwareProfile> parsed = HardwareProfileFromJson(text, "mem");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, original);
  // Compact form too.
  const StatusOr<HardwareProfile> compact =
      HardwareProfileFromJson(HardwareProfileToJson(original, -1), "mem");
  ASSERT_TRUE(compact.ok()) << compact.status().ToString();
  EXPECT_EQ(*compact, original);
}

TEST(HardwareJsonTest, WritesFormatAndVersion) {
  const Json json = ProfileJson();
  EXPECT_EQ(json.at("format"), "kselect.hardware_profile");
  EXPECT_EQ(json.at("format_version"), 1);
  // 23 profile fields + format + format_version.
  EXPECT_EQ(json.size(), 25u);
}

TEST(HardwareJsonTest, EveryMissingFieldIsNamed) {
  const Json full = ProfileJson();
  for (const auto& [key, value] : full.items()) {
    Json json = full;
    json.erase(key);
    const Status status = Parse(json);
    EXPECT_EQ(status.code(), StatusCode::kParseError) << key << ": " << status.ToString();
    EXPECT_NE(status.message().find("\"" + key + "\""), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("profile.json"), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("missing"), std::string::npos) << status.message();
  }
}

TEST(HardwareJsonTest, WrongTypeIsNamed) {
  Json json = ProfileJson();
  json["sm_count"] = "132";
  Status status = Parse(json);
  EXPECT_EQ(status.code(), StatusCode::kParseError);
  EXPECT_NE(status.message().find("\"sm_count\""), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("integer"), std::string::npos) << status.message();

  json = ProfileJson();
  json["device_name"] = 7;
  status = Parse(json);
  EXPECT_EQ(status.code(), StatusCode::kParseError);
  EXPECT_NE(status.message().find("\"device_name\""), std::string::npos) << status.message();

  json = ProfileJson();
  json["peak_mem_bandwidth_gb_s"] = nullptr;
  status = Parse(json);
  EXPECT_EQ(status.code(), StatusCode::kParseError);
  EXPECT_NE(status.message().find("\"peak_mem_bandwidth_gb_s\""), std::string::npos);

  // A fraction where a count belongs, and an int32 field beyond its range.
  json = ProfileJson();
  json["cc_major"] = 9.5;
  EXPECT_EQ(Parse(json).code(), StatusCode::kParseError);
  json = ProfileJson();
  json["regs_per_sm"] = 1LL << 40;
  status = Parse(json);
  EXPECT_EQ(status.code(), StatusCode::kParseError);
  EXPECT_NE(status.message().find("out of range"), std::string::npos) << status.message();
}

// A profile file a user hands a command: zero or negative figures would make every estimate
// infinite or negative, so they are refused and named.
TEST(HardwareJsonTest, ImpossibleFiguresInAProfileFileAreNamed) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("kselect_hw_" + std::to_string(::getpid()) + ".json"))
                               .string();
  auto load = [&](const Json& json) {
    std::ofstream(path) << json.dump();
    return LoadHardwareProfile(path).status();
  };
  EXPECT_TRUE(load(ProfileJson()).ok());
  for (const char* key : {"sm_count", "sm_clock_mhz", "peak_mem_bandwidth_gb_s"}) {
    Json json = ProfileJson();
    json[key] = 0;
    const Status status = load(json);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << key;
    EXPECT_NE(status.message().find(key), std::string::npos) << status.ToString();
  }
  Json negative = ProfileJson();
  negative["l2_bytes"] = -1;
  const Status status = load(negative);
  EXPECT_NE(status.message().find("\"l2_bytes\": negative"), std::string::npos)
      << status.ToString();
  std::filesystem::remove(path);
}

// Issue 44, defect 17: a profile naming a device kselect knows must carry that device's figures;
// an H100's swapped into an H200 profile are refused naming the field. Other names load as they
// are.
TEST(HardwareJsonTest, AnotherDevicesFiguresUnderAKnownNameAreRefused) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("kselect_hw_known_" + std::to_string(::getpid()) + ".json"))
                               .string();
  auto load = [&](const Json& json) {
    std::ofstream(path, std::ios::trunc) << json.dump();
    return LoadHardwareProfile(path).status();
  };
  const struct {
    const char* key;
    Json h100_value;
  } swapped[] = {{"peak_mem_bandwidth_gb_s", 3352.32},
                 {"global_mem_bytes", 85017493504LL},
                 {"l2_bytes", 52428800},
                 {"sm_count", 114}};
  for (const auto& s : swapped) {
    Json json = ProfileJson();
    json[s.key] = s.h100_value;
    const Status status = load(json);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << s.key;
    EXPECT_NE(status.message().find(std::string("\"") + s.key + "\""), std::string::npos)
        << status.ToString();
    EXPECT_NE(status.message().find("is not an NVIDIA H200's"), std::string::npos)
        << status.ToString();
  }
  Json other = ProfileJson();
  other["device_name"] = "NVIDIA RTX 6000 Ada Generation";
  other["peak_mem_bandwidth_gb_s"] = 960.0;
  EXPECT_TRUE(load(other).ok());
  for (const char* shipped : {"nvidia-h200.json", "nvidia-h100-x1.json"}) {
    const std::string file = std::string(KSELECT_SOURCE_DIR) + "/data/hardware/" + shipped;
    EXPECT_TRUE(LoadHardwareProfile(file).ok()) << LoadHardwareProfile(file).status().ToString();
  }
  std::filesystem::remove(path);
}

TEST(HardwareJsonTest, WholeNumberIsAcceptedForBandwidth) {
  Json json = ProfileJson();
  json["peak_mem_bandwidth_gb_s"] = 4800;
  const StatusOr<HardwareProfile> parsed = HardwareProfileFromJson(json.dump(), "mem");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->peak_mem_bandwidth_gb_s, 4800.0);
}

TEST(HardwareJsonTest, UnknownFieldIsAnError) {
  Json json = ProfileJson();
  json["sm_cuont"] = 132;
  const Status status = Parse(json);
  EXPECT_EQ(status.code(), StatusCode::kParseError);
  EXPECT_NE(status.message().find("\"sm_cuont\""), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("unknown"), std::string::npos) << status.message();
}

TEST(HardwareJsonTest, OtherFormatVersionIsSchemaMismatch) {
  Json json = ProfileJson();
  json["format_version"] = 2;
  Status status = Parse(json);
  EXPECT_EQ(status.code(), StatusCode::kSchemaMismatch) << status.ToString();
  EXPECT_NE(status.message().find("format_version 2"), std::string::npos) << status.message();

  json = ProfileJson();
  json["format"] = "kselect.model";
  status = Parse(json);
  EXPECT_EQ(status.code(), StatusCode::kSchemaMismatch) << status.ToString();
  EXPECT_NE(status.message().find("kselect.model"), std::string::npos) << status.message();

  json = ProfileJson();
  json.erase("format");
  status = Parse(json);
  EXPECT_EQ(status.code(), StatusCode::kParseError) << status.ToString();
  EXPECT_NE(status.message().find("\"format\""), std::string::npos) << status.message();
}

TEST(HardwareJsonTest, TruncatedOrNonObjectJsonIsParseError) {
  const std::string text = HardwareProfileToJson(H200Profile());
  Status status = HardwareProfileFromJson(text.substr(0, text.size() / 2), "cut.json").status();
  EXPECT_EQ(status.code(), StatusCode::kParseError);
  EXPECT_NE(status.message().find("cut.json"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("parse error"), std::string::npos) << status.message();

  status = HardwareProfileFromJson("", "empty.json").status();
  EXPECT_EQ(status.code(), StatusCode::kParseError);

  status = HardwareProfileFromJson("[1, 2]", "array.json").status();
  EXPECT_EQ(status.code(), StatusCode::kParseError);
  EXPECT_NE(status.message().find("object"), std::string::npos) << status.message();
}

class HardwareFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kselect_hw_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(HardwareFileTest, SaveThenLoad) {
  const std::string path = (dir_ / "h200.json").string();
  ASSERT_TRUE(SaveHardwareProfile(H200Profile(), path).ok());
  const StatusOr<HardwareProfile> loaded = LoadHardwareProfile(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(*loaded, H200Profile());
  // Only the final file remains: the temporary one was renamed over it.
  int files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 1);
}

TEST_F(HardwareFileTest, LoadMissingFileIsNotFound) {
  const std::string path = (dir_ / "absent.json").string();
  const StatusOr<HardwareProfile> loaded = LoadHardwareProfile(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kNotFound) << loaded.status().ToString();
  EXPECT_NE(loaded.status().message().find("absent.json"), std::string::npos);
}

TEST(HardwareJsonTest, DeepNestingIsRefusedBeforeParsing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const StatusOr<HardwareProfile> parsed = HardwareProfileFromJson(deep, "deep.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("deep.json:1:"), std::string::npos);
  EXPECT_NE(parsed.status().message().find("nested deeper than"), std::string::npos);
}

}  // namespace
}  // namespace kselect
