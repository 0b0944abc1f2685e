// Test helpers: match an exception's message.
#pragma once

#include <catch2/catch.hpp>

#include <exception>
#include <string>

namespace ferry_test {

/// Matches an exception whose what() contains `part`:
/// REQUIRE_THROWS_MATCHES(f(), ferry::ShapeError, Says("shapes [2] and [3]")).
class Says : public Catch::MatcherBase<std::exception> {
 public:
  explicit Says(std::string part) : part_(std::move(part)) {}
  bool match(const std::exception& e) const override {
    return std::string(e.what()).find(part_) != std::string::npos;
  }
  std::string describe() const override { return "has a message containing \"" + part_ + "\""; }

 private:
  std::string part_;
};

/// The same matcher under the name the kernel and quant tests use.
inline Says Contains(std::string part) { return Says(std::move(part)); }

}  // namespace ferry_test
