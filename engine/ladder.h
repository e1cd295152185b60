// The temperature ladder of replica exchange: K temperatures in increasing order, geometric
// between two ends by default (equal ratios between neighbours, which gives about equal exchange
// acceptance where the heat capacity is constant), or as listed in the config.
#pragma once

#include <string>
#include <vector>

namespace pairmd {

// T_k = t_min (t_max / t_min)^(k / (K - 1)), k = 0 .. K - 1; one temperature (t_min) for K = 1.
// Throws std::invalid_argument for K < 1 or ends that are not 0 < t_min < t_max (K > 1).
std::vector<double> geometric_ladder(double t_min, double t_max, int count);

// Why `temperatures` is no ladder ("" when it is one): every temperature finite and > 0,
// strictly increasing. Used for ladders that come from elsewhere than the config (checkpoints).
std::string ladder_problem(const std::vector<double>& temperatures);

}  // namespace pairmd
