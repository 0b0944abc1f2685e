// Ferry: what ran where and when — trace events, and Chrome Trace Event JSON for Perfetto.
// SPDX-License-Identifier: MIT
#pragma once

#include <fmt/core.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/error.hpp"

namespace ferry {

/// One op as it ran on one device. Times are nanoseconds since the router was made.
struct TraceEvent {
  enum class Phase : std::uint8_t { op, send, receive };
  std::size_t device = 0;
  Phase phase = Phase::op;
  std::string name;    ///< "add", "to_device", ...
  std::string detail;  ///< the op as the IR prints it
  std::int64_t start_ns = 0, end_ns = 0;
  std::uint64_t bytes = 0;  ///< bytes moved, for sends and receives
  std::uint64_t flow = 0;   ///< links a send to its receive (the moved tensor's new id)
  bool failed = false;
};

namespace detail {
inline void json_string(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += fmt::format("\\u{:04x}", static_cast<int>(c));
        else
          out += c;
    }
  }
  out += '"';
}
}  // namespace detail

/// Chrome Trace Event JSON (opens in Perfetto and chrome://tracing): one track (tid) per
/// device named after it, one complete event per op, and a flow arrow from each send to its
/// receive.
inline std::string chrome_trace_json(const std::vector<TraceEvent>& events,
                                     const std::vector<std::string>& device_names) {
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  for (std::size_t d = 0; d < device_names.size(); ++d) {
    sep();
    out += fmt::format(R"({{"ph":"M","name":"thread_name","pid":1,"tid":{},"args":{{"name":)", d);
    detail::json_string(out, device_names[d]);
    out += "}}";
  }
  for (const auto& e : events) {
    const double ts = static_cast<double>(e.start_ns) / 1000.0;
    const double dur = static_cast<double>(e.end_ns - e.start_ns) / 1000.0;
    sep();
    out += fmt::format(R"({{"ph":"X","pid":1,"tid":{},"ts":{:.3f},"dur":{:.3f},"cat":"{}","name":)",
                       e.device, ts, dur, e.phase == TraceEvent::Phase::op ? "op" : "transfer");
    detail::json_string(out, e.phase == TraceEvent::Phase::send      ? "send"
                             : e.phase == TraceEvent::Phase::receive ? "receive"
                                                                     : e.name);
    out += R"(,"args":{"op":)";
    detail::json_string(out, e.detail);
    out += fmt::format(R"(,"bytes":{},"failed":{}}}}})", e.bytes, e.failed ? "true" : "false");
    if (e.phase != TraceEvent::Phase::op && e.flow != 0) {
      // Flow arrows: start at the end of the send, finish at the start of the receive.
      const bool send = e.phase == TraceEvent::Phase::send;
      sep();
      out += fmt::format(
          R"({{"ph":"{}","pid":1,"tid":{},"ts":{:.3f},"id":{},"cat":"transfer","name":"to_device"{}}})",
          send ? "s" : "f", e.device, send ? ts + dur : ts, e.flow, send ? "" : R"(,"bp":"e")");
    }
  }
  out += "\n]}\n";
  return out;
}

/// Writes chrome_trace_json to `path`; throws ferry::Error when the file cannot be written.
inline void write_chrome_trace(const std::string& path, const std::vector<TraceEvent>& events,
                               const std::vector<std::string>& device_names) {
  std::ofstream f(path, std::ios::binary);
  if (!f) detail::raise<Error>("trace", "cannot open '{}' for writing", path);
  const auto json = chrome_trace_json(events, device_names);
  f.write(json.data(), static_cast<std::streamsize>(json.size()));
  if (!f) detail::raise<Error>("trace", "cannot write '{}'", path);
}

}  // namespace ferry
