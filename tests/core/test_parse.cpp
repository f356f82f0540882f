#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/parse.hpp"

namespace cclab {

TEST(Parse, SizesUsePowersOf1024) {
  EXPECT_EQ(parse_size("-b", "8"), 8);
  EXPECT_EQ(parse_size("-b", "64K"), 65536);
  EXPECT_EQ(parse_size("-b", "1M"), 1 << 20);
  EXPECT_EQ(parse_size("-e", "1G"), int64_t(1) << 30);
}

TEST(Parse, BadSizesNameTheFlag) {
  for (const char* bad : {"", "x", "-1", "1Q", "1.5M", "K", "99999999999999999999"}) {
    try {
      parse_size("-b", bad);
      FAIL() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::input);
      EXPECT_NE(std::string(e.what()).find("-b"), std::string::npos) << e.what();
    }
  }
}

TEST(Parse, IntListRejectsDuplicates) {
  EXPECT_EQ(parse_int_list("--gpus", "0,1,4,5"), (std::vector<int>{0, 1, 4, 5}));
  EXPECT_THROW(parse_int_list("--gpus", "0,0"), Error);
  EXPECT_THROW(parse_int_list("--gpus", "0,,1"), Error);
  EXPECT_THROW(parse_int("-g", "0", 1, 10), Error);
}

}  // namespace cclab
