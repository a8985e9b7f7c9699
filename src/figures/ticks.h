// Axis ticks and their labels: 1-2-5 steps on linear axes, decades on log axes, numbers written as people read
// them (0.5, 2000, 1.5×10⁴, 10⁵; a minus sign, not a hyphen).
#pragma once
#include <string>
#include <vector>

namespace vt::figures {

/// Tick values inside [lo, hi] at the 1-2-5 step that gives about `target` ticks.
std::vector<double> linear_ticks(double lo, double hi, int target = 6);

/// Labels of one axis's evenly spaced `ticks`, written alike: all as a×10ⁿ when the largest is 10⁵ or more or
/// under 10⁻² (10⁻⁴, 2×10⁻⁴, ...), else all with the decimals the step needs (0.5, 1.0, 1.5).
std::vector<std::string> tick_labels(const std::vector<double>& ticks);

/// 10^e as a label: "1", "10", "10²", "10⁻³".
std::string decade_label(int e);

/// `v` with a few significant digits for values written in a chart (cells, dots): "84.6", "0.0031", "2.5×10⁵".
std::string value_label(double v, int decimals);

}  // namespace vt::figures
