// Parsing of command-line values shared by every subcommand. Each throws an input error that names
// the flag and the bad value.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace cclab {

// "8", "64K", "1M", "1G" (powers of 1024, nccl-tests convention); rejects negatives and garbage.
int64_t parse_size(std::string_view flag, std::string_view text);
int64_t parse_int(std::string_view flag, std::string_view text, int64_t min, int64_t max);
double parse_double(std::string_view flag, std::string_view text, double min, double max);
// "0,1,4,5" -> {0,1,4,5}; rejects duplicates and negatives.
std::vector<int> parse_int_list(std::string_view flag, std::string_view text);
// "M,K,N" (collective matmul shard shape) -> {M, K, N}, each 1..2^20 so that M*K*N and the byte counts
// derived from it stay far inside int64; repeated values are fine ("4096,4096,4096").
std::array<int64_t, 3> parse_shape(std::string_view flag, std::string_view text);

}  // namespace cclab
