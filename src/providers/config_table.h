// The building blocks of the providers' config tables: a field row made from a member pointer,
// with its key label, JSON key, dataset column, feature and search move set by name, so each
// provider's <name>_config.cpp reads as one table, one line per field.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "kselect/config_schema.h"

namespace kselect::config_table {

template <auto Member>
struct MemberOf;
template <typename C, typename T, T C::*M>
struct MemberOf<M> {
  using Config = C;
  using Type = T;
};

template <auto Member>
int64_t GetInteger(const KernelConfig& config) {
  return static_cast<int64_t>(std::get<typename MemberOf<Member>::Config>(config).*Member);
}
template <auto Member>
void SetInteger(KernelConfig& config, int64_t value) {
  std::get<typename MemberOf<Member>::Config>(config).*Member =
      static_cast<typename MemberOf<Member>::Type>(value);
}
template <auto Member>
const std::string& GetText(const KernelConfig& config) {
  return std::get<typename MemberOf<Member>::Config>(config).*Member;
}
template <auto Member>
void SetText(KernelConfig& config, std::string value) {
  std::get<typename MemberOf<Member>::Config>(config).*Member = std::move(value);
}

// A ConfigField with chainable setters (constexpr, so tables are built at compile time).
struct FieldRow : ConfigField {
  constexpr FieldRow Key(std::string_view label) const {
    FieldRow f = *this;
    f.key_label = label;
    return f;
  }
  constexpr FieldRow Json(std::string_view key) const {
    FieldRow f = *this;
    f.json_key = key;
    return f;
  }
  constexpr FieldRow JsonRequired(std::string_view key) const {
    FieldRow f = Json(key);
    f.json_required = true;
    return f;
  }
  constexpr FieldRow Column(std::string_view column_name) const {
    FieldRow f = *this;
    f.column = column_name;
    return f;
  }
  constexpr FieldRow Feature(std::string_view feature_name, FeatureEncoding how) const {
    FieldRow f = *this;
    f.feature = feature_name;
    f.encoding = how;
    return f;
  }
  constexpr FieldRow Names(std::span<const EnumName> enum_names) const {
    FieldRow f = *this;
    f.names = enum_names;
    return f;
  }
  constexpr FieldRow Categories(std::span<const std::string_view> values) const {
    FieldRow f = *this;
    f.categories = values;
    return f;
  }
  constexpr FieldRow Search(SearchMove move, std::span<const int64_t> values = {}) const {
    FieldRow f = *this;
    f.search = move;
    f.neighbourhood = values;
    return f;
  }
  constexpr FieldRow AtLeast(int64_t value) const {
    FieldRow f = *this;
    f.least = value;
    return f;
  }
  constexpr FieldRow SearchGroup(std::string_view group) const {
    FieldRow f = *this;
    f.search_group = group;
    return f;
  }
};

// A field stored in `Member`: its type follows the member's (bool, enum, std::string, integer).
template <auto Member>
constexpr FieldRow Field(std::string_view name) {
  using Type = typename MemberOf<Member>::Type;
  FieldRow f;
  f.name = name;
  if constexpr (std::is_same_v<Type, std::string>) {
    f.type = FieldType::kText;
    f.get_text = &GetText<Member>;
    f.set_text = &SetText<Member>;
  } else {
    if constexpr (std::is_same_v<Type, bool>) {
      f.type = FieldType::kBool;
    } else if constexpr (std::is_enum_v<Type>) {
      f.type = FieldType::kEnum;
    } else {
      f.type = FieldType::kInt;
      f.bits = static_cast<int>(sizeof(Type) * 8);
    }
    f.get = &GetInteger<Member>;
    f.set = &SetInteger<Member>;
  }
  return f;
}

// A column derived from other fields, written for readers and never read back.
constexpr FieldRow DerivedColumn(std::string_view column_name, FieldType type,
                                 int64_t (*get)(const KernelConfig&)) {
  FieldRow f;
  f.name = column_name;
  f.type = type;
  f.column = column_name;
  f.write_only = true;
  f.get = get;
  return f;
}

// "AxBxC" of three values.
inline std::string Dims(int64_t a, int64_t b, int64_t c) {
  return std::to_string(a) + "x" + std::to_string(b) + "x" + std::to_string(c);
}

}  // namespace kselect::config_table
