// Typed, strict reading of one TOML table of autoresearch.toml: values by
// key with range checks, and every key not read reported as unknown. Each
// failure is a ConfigError naming the full key ("offline.max_factor: ...").
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "proposers/config_error.h"

namespace ard {

/// A number as the error messages print it.
std::string show_number(double v);

class TableReader {
 public:
  TableReader(const toml::table& t, std::string prefix) : t_(t), prefix_(std::move(prefix)) {}

  std::string key_name(const std::string& key) const { return prefix_ + "." + key; }
  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    throw ConfigError(key_name(key) + ": " + why);
  }

  const toml::node* find(const std::string& key) {
    read_.insert(key);
    return t_.get(key);
  }

  std::optional<std::string> str(const std::string& key) {
    const toml::node* n = find(key);
    if (!n) return std::nullopt;
    if (!n->is_string()) fail(key, "expected a string");
    return n->as_string()->get();
  }

  std::optional<bool> boolean(const std::string& key) {
    const toml::node* n = find(key);
    if (!n) return std::nullopt;
    if (!n->is_boolean()) fail(key, "expected true or false");
    return n->as_boolean()->get();
  }

  std::optional<double> num(const std::string& key, double lo, double hi) {
    const toml::node* n = find(key);
    if (!n) return std::nullopt;
    double v;
    if (n->is_integer()) v = static_cast<double>(n->as_integer()->get());
    else if (n->is_floating_point()) v = n->as_floating_point()->get();
    else fail(key, "expected a number");
    if (!std::isfinite(v) || v < lo || v > hi)
      fail(key, "must be in [" + show_number(lo) + ", " + show_number(hi) + "], got " + show_number(v));
    return v;
  }

  std::optional<long> integer(const std::string& key, long lo, long hi) {
    const toml::node* n = find(key);
    if (!n) return std::nullopt;
    if (!n->is_integer()) fail(key, "expected an integer");
    int64_t v = n->as_integer()->get();
    if (v < lo || v > hi)
      fail(key, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(v));
    return static_cast<long>(v);
  }

  std::optional<std::vector<std::string>> strings(const std::string& key) {
    const toml::node* n = find(key);
    if (!n) return std::nullopt;
    const toml::array* a = n->as_array();
    if (!a) fail(key, "expected an array of strings");
    std::vector<std::string> out;
    for (const toml::node& e : *a) {
      if (!e.is_string() || e.as_string()->get().empty()) fail(key, "expected an array of non-empty strings");
      out.push_back(e.as_string()->get());
    }
    return out;
  }

  const toml::table* table(const std::string& key) {
    const toml::node* n = find(key);
    if (!n) return nullptr;
    if (!n->is_table()) fail(key, "expected a table");
    return n->as_table();
  }

  void reject_unknown() const {
    for (const auto& [k, v] : t_) {
      std::string key(k.str());
      if (!read_.count(key)) fail(key, "unknown key");
    }
  }

 private:
  const toml::table& t_;
  std::string prefix_;
  std::set<std::string> read_;
};

}  // namespace ard
