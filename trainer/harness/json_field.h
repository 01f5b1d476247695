// A small JSON reader for one job: take the string value of one top-level key
// from a JSON-lines record, checking that the whole line is valid JSON.
#pragma once

#include <string>
#include <string_view>

namespace harness {

enum class FieldResult { kFound, kMissing, kNotString };

/// Parses `line` as one JSON object. On kFound, `value` holds the field's
/// string decoded to UTF-8 (\u escapes and surrogate pairs included). Throws
/// std::invalid_argument with the cause and column on malformed JSON.
FieldResult json_string_field(std::string_view line, std::string_view field, std::string& value);

}  // namespace harness
