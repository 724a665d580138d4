// The library's version, compiled in (the macros come from CMakeLists.txt).
#include "lockstep/core/version.h"

namespace lockstep {

const char* version() { return LOCKSTEP_VERSION; }

}  // namespace lockstep
