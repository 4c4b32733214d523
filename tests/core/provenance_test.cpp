// The provenance record: its JSON round trip, records written before a field existed, the one
// check (each field's mismatch named in one message format, unknown values never a mismatch, only
// the fields asked for compared) and ProvenanceOf.
#include "kselect/provenance.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kselect/version.h"

namespace kselect {
namespace {

Provenance H200() {
  Provenance p;
  p.device_name = "NVIDIA H200";
  p.device_kind = "nvidia-h200";
  p.arch = "sm_90";
  p.sm_count = 132;
  p.driver_version = 13000;
  p.runtime_version = 13000;
  p.cublaslt_version = 130100;
  p.cudnn_version = 91000;
  p.nvrtc_version = 13000;
  p.tool_version = "0.1.0";
  p.model_fingerprint = "0123456789abcdef";
  return p;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ProvenanceTest, RoundTripsThroughJson) {
  const Provenance p = H200();
  const std::string text = ProvenanceToJson(p);
  for (const char* key :
       {"\"device_name\"", "\"device_kind\"", "\"arch\"", "\"sm_count\"", "\"driver_version\"",
        "\"runtime_version\"", "\"cublaslt_version\"", "\"cudnn_version\"", "\"nvrtc_version\"",
        "\"tool_version\"", "\"model_fingerprint\""}) {
    EXPECT_TRUE(Contains(text, key)) << key << " in " << text;
  }
  auto read = ProvenanceFromJson(text, "p.json");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, p);
}

TEST(ProvenanceTest, WritesOnlyTheFieldsAskedFor) {
  const Provenance p = H200();
  const std::string text =
      ProvenanceToJson(p, ProvenanceField::kDeviceName | ProvenanceField::kCublasLtVersion);
  EXPECT_TRUE(Contains(text, "\"device_name\""));
  EXPECT_TRUE(Contains(text, "\"cublaslt_version\""));
  EXPECT_FALSE(Contains(text, "\"sm_count\""));
  Provenance partial;
  partial.arch = "sm_90";
  partial.cublaslt_version = 130100;
  EXPECT_EQ(KnownFields(partial), ProvenanceField::kArch | ProvenanceField::kCublasLtVersion);
  EXPECT_EQ(KnownFields(H200()), ProvenanceFields::All());
}

TEST(ProvenanceTest, OldRecordsWithoutNewKeysReadAsUnknown) {
  // A solution library's identity as version 2 files wrote it before cuDNN, tool and model.
  auto read = ProvenanceFromJson(R"({"device_name": "NVIDIA H200", "device_kind": "nvidia-h200",
      "arch": "sm_90", "sm_count": 132, "driver_version": 13000, "runtime_version": 13000,
      "cublaslt_version": 130100, "nvrtc_version": 13000})",
                                 "old.json");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->cublaslt_version, 130100);
  EXPECT_EQ(read->cudnn_version, 0);
  EXPECT_EQ(read->tool_version, "");
  EXPECT_EQ(read->model_fingerprint, "");
  // Unknown is not a mismatch: the old record holds against a full one.
  EXPECT_TRUE(CheckProvenance(*read, H200(),
                              {.fields = ProvenanceFields::All(), .artifact = "old", .remedy = "x"})
                  .ok());
  auto empty = ProvenanceFromJson("{}", "empty.json");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, Provenance());
}

TEST(ProvenanceTest, RefusesBadRecords) {
  const std::pair<const char*, const char*> cases[] = {
      {"[1]", "not a JSON object"},
      {R"({"sm_count": "many"})", "sm_count"},
      {R"({"device_name": 7})", "device_name"},
      {R"({"cublaslt_version": 99999999999})", "out of range"},
      {R"({"devise_name": "NVIDIA H200"})", "devise_name"},
  };
  for (const auto& [text, expected] : cases) {
    auto read = ProvenanceFromJson(text, "bad.json");
    ASSERT_FALSE(read.ok()) << text;
    EXPECT_TRUE(Contains(read.status().message(), expected)) << read.status().message();
    EXPECT_TRUE(Contains(read.status().message(), "bad.json")) << read.status().message();
  }
}

TEST(ProvenanceTest, EachFieldsMismatchIsNamedInOneFormat) {
  struct Case {
    ProvenanceField field;
    void (*change)(Provenance&);
    std::string expected;
  };
  const std::vector<Case> cases = {
      {ProvenanceField::kDeviceName, [](Provenance& p) { p.device_name = "NVIDIA H100"; },
       "made with device_name \"NVIDIA H200\", this host has \"NVIDIA H100\""},
      {ProvenanceField::kDeviceKind, [](Provenance& p) { p.device_kind = "nvidia-h100"; },
       "made with device_kind \"nvidia-h200\", this host has \"nvidia-h100\""},
      {ProvenanceField::kArch, [](Provenance& p) { p.arch = "sm_100"; },
       "made with arch \"sm_90\", this host has \"sm_100\""},
      {ProvenanceField::kSmCount, [](Provenance& p) { p.sm_count = 114; },
       "made with sm_count 132, this host has 114"},
      {ProvenanceField::kDriverVersion, [](Provenance& p) { p.driver_version = 12080; },
       "made with driver_version 13000, this host has 12080"},
      {ProvenanceField::kRuntimeVersion, [](Provenance& p) { p.runtime_version = 12080; },
       "made with runtime_version 13000, this host has 12080"},
      {ProvenanceField::kCublasLtVersion, [](Provenance& p) { p.cublaslt_version = 130200; },
       "made with cublaslt_version 130100, this host has 130200"},
      {ProvenanceField::kCudnnVersion, [](Provenance& p) { p.cudnn_version = 91100; },
       "made with cudnn_version 91000, this host has 91100"},
      {ProvenanceField::kNvrtcVersion, [](Provenance& p) { p.nvrtc_version = 13010; },
       "made with nvrtc_version 13000, this host has 13010"},
      {ProvenanceField::kToolVersion, [](Provenance& p) { p.tool_version = "0.2.0"; },
       "made with tool_version \"0.1.0\", this host has \"0.2.0\""},
      {ProvenanceField::kModelFingerprint,
       [](Provenance& p) { p.model_fingerprint = "fedcba9876543210"; },
       "made with model_fingerprint \"0123456789abcdef\", this host has \"fedcba9876543210\""},
  };
  for (const Case& c : cases) {
    Provenance here = H200();
    c.change(here);
    const Status status = CheckProvenance(
        H200(), here, {.fields = ProvenanceFields::All(), .artifact = "a.json", .remedy = "redo"});
    EXPECT_EQ(status.code(), StatusCode::kSchemaMismatch) << c.expected;
    EXPECT_EQ(status.message(), "a.json: " + c.expected + ": redo");
    // The field is compared only when asked for.
    ProvenanceFields others;
    for (const Case& other : cases) {
      if (other.field != c.field) others |= other.field;
    }
    EXPECT_TRUE(
        CheckProvenance(H200(), here, {.fields = others, .artifact = "a.json", .remedy = "redo"})
            .ok())
        << c.expected;
  }
}

TEST(ProvenanceTest, UnknownValuesAreNotAMismatch) {
  const ProvenanceCheck all = {.fields = ProvenanceFields::All(), .artifact = "a", .remedy = "b"};
  EXPECT_TRUE(CheckProvenance(H200(), Provenance(), all).ok());  // nothing known here
  EXPECT_TRUE(CheckProvenance(Provenance(), H200(), all).ok());  // nothing recorded
  Provenance no_gpu = H200();
  no_gpu.device_name.clear();
  no_gpu.sm_count = 0;
  no_gpu.cudnn_version = 0;
  EXPECT_TRUE(CheckProvenance(H200(), no_gpu, all).ok());
  EXPECT_TRUE(CheckProvenance(H200(), H200(), all).ok());
}

TEST(ProvenanceTest, ChecksFiguresBesideTheRecordAndNamesWhatItIsCheckedAgainst) {
  const ProvenanceFigure same[] = {{"sm_clock_mhz", 1980, 1980}, {"mem_bandwidth_gb_s", 0, 4800}};
  EXPECT_TRUE(CheckProvenance(H200(), H200(),
                              {.fields = ProvenanceFields::All(),
                               .artifact = "cache.json",
                               .remedy = "rebuild it",
                               .figures = same})
                  .ok());
  const ProvenanceFigure other[] = {{"sm_clock_mhz", 1980, 1980},
                                    {"mem_bandwidth_gb_s", 4800.5, 3352}};
  const Status status = CheckProvenance(H200(), H200(),
                                        {.fields = ProvenanceFields::All(),
                                         .artifact = "cache.json",
                                         .remedy = "rebuild it",
                                         .here = "this selector",
                                         .figures = other});
  EXPECT_EQ(status.code(), StatusCode::kSchemaMismatch);
  EXPECT_EQ(status.message(),
            "cache.json: made with mem_bandwidth_gb_s 4800.5, this selector has 3352: rebuild it");
}

TEST(ProvenanceTest, ProvenanceOfAProfileNamesThisTool) {
  HardwareProfile profile;
  profile.device_name = "NVIDIA H200";
  profile.device_kind = "nvidia-h200";
  profile.arch = "sm_90";
  profile.sm_count = 132;
  profile.sm_clock_mhz = 1980;  // not part of the record
  profile.driver_version = 13000;
  profile.runtime_version = 13000;
  profile.cublaslt_version = 130100;
  profile.cudnn_version = 91000;
  profile.nvrtc_version = 13000;
  Provenance expected = H200();
  expected.tool_version = ToolVersion();
  expected.model_fingerprint.clear();
  EXPECT_EQ(ProvenanceOf(profile), expected);
}

}  // namespace
}  // namespace kselect
