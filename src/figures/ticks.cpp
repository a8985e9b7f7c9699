// Ticks and number labels (see the header).
#include "figures/ticks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace vt::figures {
namespace {

std::string superscript(int n) {
  static const char* digits[] = {"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"};
  std::string s = n < 0 ? "⁻" : "";
  for (char c : std::to_string(std::abs(n))) s += digits[c - '0'];
  return s;
}

// "−" (U+2212) in place of a leading hyphen.
std::string minus_sign(std::string s) {
  if (!s.empty() && s[0] == '-') s = "−" + s.substr(1);
  return s;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s = s.substr(1);  // "-0.0" → "0.0"
  return minus_sign(s);
}

std::string scientific(double v, int decimals) {
  const int e = static_cast<int>(std::floor(std::log10(std::fabs(v))));
  double mant = v / std::pow(10.0, e);
  if (std::fabs(std::fabs(mant) - 1) < 1e-9) return (v < 0 ? "−" : "") + decade_label(e);
  return fixed(mant, decimals) + "×" + decade_label(e);
}

}  // namespace

std::vector<double> linear_ticks(double lo, double hi, int target) {
  std::vector<double> out;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return out;
  const double raw = (hi - lo) / std::max(1, target - 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double r = raw / mag;
  const double step = (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * mag;
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step)
    out.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  return out;
}

std::vector<std::string> tick_labels(const std::vector<double>& ticks) {
  double top = 0;
  for (double t : ticks) top = std::max(top, std::fabs(t));
  const double step = ticks.size() > 1 ? std::fabs(ticks[1] - ticks[0]) : (top > 0 ? top : 1);
  const bool sci = top >= 1e5 || (top > 0 && top < 1e-2);
  std::vector<std::string> out;
  for (double t : ticks) {
    if (t == 0) out.push_back("0");
    else if (!sci)
      out.push_back(fixed(t, std::min(6, std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-9))))));
    else {
      const int e = static_cast<int>(std::floor(std::log10(std::fabs(t)) + 1e-9));
      out.push_back(scientific(t, std::min(3, std::max(0, static_cast<int>(std::ceil(e - std::log10(step) - 1e-9))))));
    }
  }
  return out;
}

std::string decade_label(int e) {
  if (e == 0) return "1";
  if (e == 1) return "10";
  return "10" + superscript(e);
}

std::string value_label(double v, int decimals) {
  if (!std::isfinite(v)) return "–";
  const double a = std::fabs(v);
  if (a != 0 && (a >= 1e5 || a < std::pow(10.0, -decimals))) return scientific(v, 1);
  return fixed(v, decimals);
}

}  // namespace vt::figures
