// The only file compiled with tests/fixtures' absolute path: a path on every test file's command line
// would differ in each clone, and ccache would compile them all again (docs/building.md).
#include <string>

namespace attn::test {

std::string fixtures_dir() { return ATTN_FIXTURES_DIR; }

}  // namespace attn::test
