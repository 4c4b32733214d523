#include "core/json_codec.h"

#include "kselect/config_schema.h"

#include <array>
#include <cmath>
#include <limits>

namespace kselect::json_codec {

using nlohmann::json;

namespace {

std::string TypeName(const json& j) {
  return j.type_name();
}

// "got string \"x\"", "got null": the type, then the value where it says more than the type.
std::string Got(const json& j) {
  if (j.is_null()) return "got null";
  return "got " + TypeName(j) + " " + JsonExcerpt(j);
}

}  // namespace

ObjectReader::ObjectReader(const json& object, std::string path)
    : object_(object), path_(std::move(path)) {
  if (!object_.is_object()) {
    status_ = ParseError(path_ + ": expected a JSON object, got " + TypeName(object_));
  }
}

std::string ObjectReader::PathOf(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

bool ObjectReader::Has(std::string_view key) const {
  return object_.is_object() && object_.find(key) != object_.end();
}

const json* ObjectReader::Find(std::string_view key, bool required) {
  if (!status_.ok()) return nullptr;
  read_keys_.emplace(key);
  const auto it = object_.find(key);
  if (it == object_.end()) {
    if (required) Fail(ParseError(PathOf(key) + ": required field is missing"));
    return nullptr;
  }
  return &*it;
}

void ObjectReader::Fail(Status status) {
  if (status_.ok()) status_ = std::move(status);
}

int64_t ObjectReader::Int(std::string_view key) {
  const json* v = Find(key, true);
  if (!v) return 0;
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (std::floor(d) == d && std::fabs(d) < 9.0e18) return static_cast<int64_t>(d);
  }
  Fail(ParseError(PathOf(key) + ": expected an integer, " + Got(*v)));
  return 0;
}

int64_t ObjectReader::IntOr(std::string_view key, int64_t fallback) {
  return Has(key) ? Int(key) : (read_keys_.emplace(key), fallback);
}

double ObjectReader::Number(std::string_view key) {
  const json* v = Find(key, true);
  if (!v) return 0;
  if (v->is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (v->is_number()) return v->get<double>();
  Fail(ParseError(PathOf(key) + ": expected a number, " + Got(*v)));
  return 0;
}

double ObjectReader::NumberOr(std::string_view key, double fallback) {
  return Has(key) ? Number(key) : (read_keys_.emplace(key), fallback);
}

bool ObjectReader::Bool(std::string_view key) {
  const json* v = Find(key, true);
  if (!v) return false;
  if (v->is_boolean()) return v->get<bool>();
  Fail(ParseError(PathOf(key) + ": expected true or false, got " + TypeName(*v)));
  return false;
}

bool ObjectReader::BoolOr(std::string_view key, bool fallback) {
  return Has(key) ? Bool(key) : (read_keys_.emplace(key), fallback);
}

std::string ObjectReader::String(std::string_view key) {
  const json* v = Find(key, true);
  if (!v) return "";
  if (v->is_string()) return v->get<std::string>();
  Fail(ParseError(PathOf(key) + ": expected a string, got " + TypeName(*v)));
  return "";
}

std::string ObjectReader::StringOr(std::string_view key, std::string fallback) {
  return Has(key) ? String(key) : (read_keys_.emplace(key), fallback);
}

const json* ObjectReader::Child(std::string_view key, bool required) {
  return Find(key, required);
}

Status ObjectReader::Finish() {
  if (!status_.ok()) return status_;
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    if (!read_keys_.contains(it.key())) {
      return ParseError(PathOf(it.key()) + ": unknown field");
    }
  }
  return Status::Ok();
}

namespace {

// Parses an enum-valued string field through `parse`, recording errors with the field's path.
template <typename T, typename ParseFn>
T ParseField(ObjectReader& r, std::string_view key, ParseFn parse, T fallback) {
  if (!r.Has(key)) {
    r.StringOr(key, "");  // marks the key as read
    return fallback;
  }
  const std::string text = r.String(key);
  if (!r.ok()) return fallback;
  auto parsed = parse(text);
  if (!parsed.ok()) {
    r.Fail(ParseError(r.PathOf(key) + ": " + parsed.status().message()));
    return fallback;
  }
  return *parsed;
}

int32_t I32(ObjectReader& r, std::string_view key, int32_t fallback) {
  const int64_t v = r.IntOr(key, fallback);
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
    r.Fail(ParseError(r.PathOf(key) + ": " + std::to_string(v) + " does not fit in 32 bits"));
    return fallback;
  }
  return static_cast<int32_t>(v);
}

}  // namespace

json GemmProblemToJson(const GemmProblem& p) {
  return json{{"kind", "gemm"},
              {"m", p.m},
              {"n", p.n},
              {"k", p.k},
              {"batch", p.batch},
              {"layout", p.layout.ToString()},
              {"dtype_a", DataTypeName(p.dtype_a)},
              {"dtype_b", DataTypeName(p.dtype_b)},
              {"dtype_c", DataTypeName(p.dtype_c)},
              {"compute", DataTypeName(p.compute)},
              {"alpha", p.alpha},
              {"beta", p.beta}};
}

json ConvProblemToJson(const ConvProblem& p) {
  return json{{"kind", "conv"},
              {"direction", ConvDirectionName(p.direction)},
              {"n", p.n},
              {"c", p.c},
              {"k", p.k},
              {"g", p.g},
              {"di", p.di},
              {"hi", p.hi},
              {"wi", p.wi},
              {"z", p.z},
              {"y", p.y},
              {"x", p.x},
              {"stride", {p.stride_d, p.stride_h, p.stride_w}},
              {"pad", {p.pad_d, p.pad_h, p.pad_w}},
              {"dilation", {p.dilation_d, p.dilation_h, p.dilation_w}},
              {"layout", ConvLayoutName(p.layout)},
              {"dtype", DataTypeName(p.dtype)},
              {"compute", DataTypeName(p.compute)}};
}

json ProblemToJson(const Problem& p) {
  if (const auto* g = std::get_if<GemmProblem>(&p)) return GemmProblemToJson(*g);
  return ConvProblemToJson(std::get<ConvProblem>(p));
}

namespace {

// Reads a [d, h, w] triple.
void ReadTriple(ObjectReader& r, std::string_view key, int64_t& d, int64_t& h, int64_t& w) {
  const json* v = r.Child(key, false);
  if (!v) return;
  if (!v->is_array() || v->size() != 3 || !(*v)[0].is_number_integer() ||
      !(*v)[1].is_number_integer() || !(*v)[2].is_number_integer()) {
    r.Fail(ParseError(r.PathOf(key) + ": expected [d, h, w] integers, got " + JsonExcerpt(*v)));
    return;
  }
  d = (*v)[0].get<int64_t>();
  h = (*v)[1].get<int64_t>();
  w = (*v)[2].get<int64_t>();
}

}  // namespace

StatusOr<Problem> ProblemFromJson(const json& j, const std::string& path) {
  ObjectReader r(j, path);
  const std::string kind = r.String("kind");
  if (!r.ok()) return r.Finish();
  if (kind == "gemm") {
    GemmProblem p;
    p.m = r.Int("m");
    p.n = r.Int("n");
    p.k = r.Int("k");
    p.batch = r.IntOr("batch", 1);
    p.layout = ParseField(r, "layout", ParseGemmLayout, p.layout);
    p.dtype_a = ParseField(r, "dtype_a", ParseDataType, p.dtype_a);
    p.dtype_b = ParseField(r, "dtype_b", ParseDataType, p.dtype_b);
    p.dtype_c = ParseField(r, "dtype_c", ParseDataType, p.dtype_c);
    p.compute = ParseField(r, "compute", ParseDataType, p.compute);
    p.alpha = r.NumberOr("alpha", 1.0);
    p.beta = r.NumberOr("beta", 0.0);
    KSELECT_RETURN_IF_ERROR(r.Finish());
    return Problem(p);
  }
  if (kind == "conv") {
    ConvProblem p;
    p.direction = ParseField(r, "direction", ParseConvDirection, p.direction);
    p.n = r.Int("n");
    p.c = r.Int("c");
    p.k = r.Int("k");
    p.g = r.IntOr("g", 1);
    p.di = r.IntOr("di", 1);
    p.hi = r.Int("hi");
    p.wi = r.Int("wi");
    p.z = r.IntOr("z", 1);
    p.y = r.Int("y");
    p.x = r.Int("x");
    ReadTriple(r, "stride", p.stride_d, p.stride_h, p.stride_w);
    ReadTriple(r, "pad", p.pad_d, p.pad_h, p.pad_w);
    ReadTriple(r, "dilation", p.dilation_d, p.dilation_h, p.dilation_w);
    p.layout = ParseField(r, "layout", ParseConvLayout, p.layout);
    p.dtype = ParseField(r, "dtype", ParseDataType, p.dtype);
    p.compute = ParseField(r, "compute", ParseDataType, p.compute);
    KSELECT_RETURN_IF_ERROR(r.Finish());
    return Problem(p);
  }
  return ParseError(r.PathOf("kind") + ": unknown problem kind '" + kind +
                    "' (expected gemm or conv)");
}

namespace {

// A group of consecutive fields sharing one JSON key: one array (or one scalar when alone).
std::span<const ConfigField> JsonGroup(std::span<const ConfigField> fields, size_t first) {
  size_t end = first + 1;
  while (end < fields.size() && fields[end].json_key == fields[first].json_key) ++end;
  return fields.subspan(first, end - first);
}

json FieldToJson(const ConfigField& field, const KernelConfig& config) {
  switch (field.type) {
    case FieldType::kInt:
      return field.get(config);
    case FieldType::kBool:
      return field.get(config) != 0;
    case FieldType::kEnum:
      return FieldText(field, config);
    case FieldType::kText:
      return field.get_text(config);
    case FieldType::kKnobList: {
      json knobs = json::array();
      for (const auto& [knob, value] : field.get_knobs(config)) knobs.push_back({knob, value});
      return knobs;
    }
  }
  return nullptr;
}

// The value of one integer or boolean JSON element for `field`; nullopt (and the reader failed)
// when it has the wrong type or does not fit.
std::optional<int64_t> IntegerOf(const ConfigField& field, const json& v) {
  if (field.type == FieldType::kBool) {
    if (!v.is_boolean()) return std::nullopt;
    return v.get<bool>() ? 1 : 0;
  }
  if (!v.is_number_integer()) return std::nullopt;
  const int64_t value = v.get<int64_t>();
  if (field.bits < 64) {
    const int64_t limit = int64_t{1} << (field.bits - 1);
    if (value < -limit || value >= limit) return std::nullopt;
  }
  return value;
}

void ReadScalar(ObjectReader& r, const ConfigSchema& schema, const ConfigField& field,
                KernelConfig& config) {
  const std::string_view key = field.json_key;
  switch (field.type) {
    case FieldType::kInt: {
      if (field.json_required) {
        field.set(config, r.Int(key));
        return;
      }
      const int64_t v = r.IntOr(key, field.get(config));
      if (field.bits < 64) {
        const int64_t limit = int64_t{1} << (field.bits - 1);
        if (v < -limit || v >= limit) {
          r.Fail(ParseError(r.PathOf(key) + ": " + std::to_string(v) + " does not fit in " +
                            std::to_string(field.bits) + " bits"));
          return;
        }
      }
      field.set(config, v);
      return;
    }
    case FieldType::kBool:
      field.set(config, r.BoolOr(key, field.get(config) != 0) ? 1 : 0);
      return;
    case FieldType::kEnum: {
      if (!r.Has(key)) return;
      const std::string text = r.String(key);
      if (!r.ok()) return;
      for (const EnumName& e : field.names) {
        if (e.name == text) {
          field.set(config, e.value);
          return;
        }
      }
      std::string expected;
      for (const EnumName& e : field.names) {
        expected += (expected.empty() ? "" : ", ") + std::string(e.name);
      }
      r.Fail(ParseError(r.PathOf(key) + ": unknown " + std::string(schema.name) + " " +
                        std::string(field.name) + " '" + text + "' (expected one of: " + expected +
                        ")"));
      return;
    }
    case FieldType::kText:
      field.set_text(config, r.StringOr(key, field.get_text(config)));
      return;
    case FieldType::kKnobList: {
      const json* knobs = r.Child(key, false);
      if (!knobs) return;
      if (!knobs->is_array()) {
        r.Fail(ParseError(r.PathOf(key) + ": expected an array of [knob, value] pairs"));
        return;
      }
      auto* list = field.knobs(config);
      for (const auto& pair : *knobs) {
        if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer() ||
            !pair[1].is_number_integer()) {
          r.Fail(ParseError(r.PathOf(key) + ": expected [knob, value] integer pairs, got " +
                            JsonExcerpt(pair)));
          return;
        }
        list->emplace_back(pair[0].get<int32_t>(), pair[1].get<int64_t>());
      }
      return;
    }
  }
}

// An array of integers (or booleans) into the group's fields.
void ReadArray(ObjectReader& r, std::span<const ConfigField> group, KernelConfig& config) {
  const std::string_view key = group.front().json_key;
  const json* v = r.Child(key, false);
  if (!v) return;
  std::vector<int64_t> values;
  bool ok = v->is_array() && v->size() == group.size();
  for (size_t i = 0; ok && i < group.size(); ++i) {
    const std::optional<int64_t> value = IntegerOf(group[i], (*v)[i]);
    ok = value.has_value();
    if (ok) values.push_back(*value);
  }
  if (!ok) {
    const bool booleans = group.front().type == FieldType::kBool;
    r.Fail(ParseError(r.PathOf(key) + ": expected an array of " + std::to_string(group.size()) +
                      (booleans ? " booleans" : " integers") + ", got " + JsonExcerpt(*v)));
    return;
  }
  for (size_t i = 0; i < group.size(); ++i) group[i].set(config, values[i]);
}

}  // namespace

json KernelConfigToJson(const KernelConfig& config) {
  const ConfigSchema& schema = SchemaOf(config);
  json j{{"provider", schema.name}};
  const std::span<const ConfigField> fields = schema.fields;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].json_key.empty()) continue;
    const std::span<const ConfigField> group = JsonGroup(fields, i);
    if (group.size() == 1) {
      j[std::string(fields[i].json_key)] = FieldToJson(fields[i], config);
    } else {
      json values = json::array();
      for (const ConfigField& field : group) values.push_back(FieldToJson(field, config));
      j[std::string(fields[i].json_key)] = std::move(values);
    }
    i += group.size() - 1;
  }
  return j;
}

StatusOr<KernelConfig> KernelConfigFromJson(const json& j, const std::string& path) {
  ObjectReader r(j, path);
  const std::string provider_name = r.String("provider");
  if (!r.ok()) return r.Finish();
  auto provider = ParseProvider(provider_name);
  if (!provider.ok()) return ParseError(r.PathOf("provider") + ": " + provider.status().message());
  const ConfigSchema& schema = SchemaOf(*provider);
  KernelConfig config = schema.make_default();
  const std::span<const ConfigField> fields = schema.fields;
  for (size_t i = 0; i < fields.size() && r.ok(); ++i) {
    if (fields[i].json_key.empty()) continue;
    const std::span<const ConfigField> group = JsonGroup(fields, i);
    if (group.size() == 1) {
      ReadScalar(r, schema, fields[i], config);
    } else {
      ReadArray(r, group, config);
    }
    i += group.size() - 1;
  }
  KSELECT_RETURN_IF_ERROR(r.Finish());
  // A value no kernel can have (a 0x0x0 tile, a negative size or engine id): read, it would be
  // ranked and offered like any other config.
  for (const ConfigField& field : fields) {
    if (!field.IsInteger() || field.get == nullptr || field.json_key.empty()) continue;
    if (const int64_t value = field.get(config); value < field.least) {
      return ParseError(r.PathOf(field.json_key) + ": " + std::string(schema.name) + " " +
                        std::string(field.name) + " " + std::to_string(value) +
                        " is impossible (at least " + std::to_string(field.least) + ")");
    }
  }
  return config;
}

json MethodToJson(const MeasurementMethod& m) {
  return json{{"name", m.name},
              {"timer", m.timer},
              {"statistic", m.statistic},
              {"warmup_iters", m.warmup_iters},
              {"repeats", m.repeats},
              {"iters_per_repeat", m.iters_per_repeat},
              {"rotating_buffer_bytes", m.rotating_buffer_bytes},
              {"sm_clock_min_mhz", m.sm_clock_min_mhz},
              {"sm_clock_max_mhz", m.sm_clock_max_mhz},
              {"power_w", m.power_w},
              {"temperature_c", m.temperature_c}};
}

StatusOr<MeasurementMethod> MethodFromJson(const json& j, const std::string& path) {
  ObjectReader r(j, path);
  MeasurementMethod m;
  m.name = r.StringOr("name", "");
  m.timer = r.StringOr("timer", "");
  m.statistic = r.StringOr("statistic", "");
  m.warmup_iters = I32(r, "warmup_iters", 0);
  m.repeats = I32(r, "repeats", 0);
  m.iters_per_repeat = I32(r, "iters_per_repeat", 0);
  m.rotating_buffer_bytes = r.IntOr("rotating_buffer_bytes", 0);
  m.sm_clock_min_mhz = I32(r, "sm_clock_min_mhz", 0);
  m.sm_clock_max_mhz = I32(r, "sm_clock_max_mhz", 0);
  m.power_w = r.NumberOr("power_w", 0);
  if (!(m.power_w >= 0)) r.Fail(ParseError(r.PathOf("power_w") + ": must be a power >= 0 W"));
  m.temperature_c = I32(r, "temperature_c", 0);
  KSELECT_RETURN_IF_ERROR(r.Finish());
  return m;
}

}  // namespace kselect::json_codec
