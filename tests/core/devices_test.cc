#include "chorus/core/devices.h"

#include <cstdlib>
#include <string>

#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using namespace testing::test_names;

TEST(DevicesTest, TheCountComesFromTheEnvironmentAndABadOneIsNamed) {
  set_cpu_devices(0);
  ::setenv("CHORUS_CPU_DEVICES", "3", 1);
  EXPECT_EQ(list_devices().size(), 3u);
  for (const char* bad : {"0", "two", "5000"}) {
    ::setenv("CHORUS_CPU_DEVICES", bad, 1);
    EXPECT_THAT([] { list_devices(); },
                ThrowsMessage<ValueError>(HasSubstr(std::string("CHORUS_CPU_DEVICES: expected an integer from 1 to "
                                                                "4096, got '") +
                                                    bad + "'")));
  }
  ::unsetenv("CHORUS_CPU_DEVICES");
  ::setenv("CHORUS_CPU_CORES", "-1", 1);
  EXPECT_THAT([] { process_cores(); },
              ThrowsMessage<ValueError>(HasSubstr("CHORUS_CPU_CORES: expected an integer from 1 to 4096, got '-1'")));
  ::unsetenv("CHORUS_CPU_CORES");
  EXPECT_GE(list_devices().size(), 1u);
}

}  // namespace
}  // namespace chorus
